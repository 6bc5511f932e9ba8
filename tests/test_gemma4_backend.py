"""Gemma 4's attention backend: vLLM's per-model hook ``Gemma4Config.verify_and_update_config``
(model_executor/models/config.py; 0.19.0 lines 84-125, 0.24.0 lines 210-257, 0.29.0 lines 209-258, 0.34.0 lines
532-598) sets the backend when the sliding layers' head size (256) and the full layers' (512) differ and the user
named none, and the selector refuses a user's FLASH_ATTN whose head sizes it cannot serve. The start-ups checked
are akamaslabs/vllm-benchmark's study 30 on one L40S with vLLM 0.29.0 (tests/logs/budget/68- and 96-)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kvplan import api

LOGS = Path(__file__).parent / "logs" / "budget"
MODEL = "google/gemma-4-26B-A4B-it"
BASE = {"quantization": "fp8", "max_model_len": 4096, "language_model_only": True, "kv_cache_memory": "10GiB"}


def _logged(name: str, pattern: str) -> str:
    """The message of the first line of a kept log that matches ``pattern`` (the prefix before it cut off)."""
    text = next(LOGS.glob(name)).read_text()
    return re.search(pattern, text).group(0)


def test_l40s_0_29_forces_triton_as_logged():
    """SM 8.9 has no FlashAttention 4 (flash_attn_interface.py _is_fa4_supported: 9.x, 10.x, 11.x), so the hook
    sets TRITON_ATTN and logs it; kvplan's line is the logged one, byte for byte."""
    d = api.simulate(MODEL, gpu="L40S-48GB", policy="vllm==0.29.0", **BASE)
    assert d["serving"]["attention_backend"] == "TRITON_ATTN"
    line = _logged("68-akamaslabs-*.log", r"Gemma4 model has heterogeneous head dimensions .*backend\.")
    assert line in d["logs"]


def test_user_flash_attn_on_l40s_is_refused_as_logged():
    """--attention-backend FLASH_ATTN skips the hook (the backend is set) and the selector validates it: FA2 on
    SM 8.9 serves heads up to 256, the full layers' 512 is refused (flash_attn.py 0.29.0 lines 167-175, cuda.py
    lines 414-430), while the model is built: probe A-fa's ValueError, verbatim."""
    d = api.simulate(MODEL, gpu="L40S-48GB", policy="vllm==0.29.0", attention_backend="FLASH_ATTN", **BASE)
    assert not d["outcome"]["starts"]
    logged = _logged("96-akamaslabs-*.log", r"Selected backend .*\]")
    assert logged == ("Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. "
                      "Reason: ['head_size not supported']")
    assert logged in d["outcome"]["error"]


@pytest.mark.parametrize("policy, gpu, backend, line", [
    # 0.19.0-0.23.0: TRITON_ATTN on every card once the larger head exceeds 256 (0.19.0 lines 113-125)
    ("vllm==0.19.0", "H100", "TRITON_ATTN", "Gemma4 model has heterogeneous head dimensions (head_dim=256, "
     "global_head_dim=512). Forcing TRITON_ATTN backend to prevent mixed-backend numerical divergence."),
    ("vllm==0.23.0", "A100-80GB", "TRITON_ATTN", "Gemma4 model has heterogeneous head dimensions (head_dim=256, "
     "global_head_dim=512). Forcing TRITON_ATTN backend to prevent mixed-backend numerical divergence."),
    # 0.24.0-0.28.0: FA4 where the card has it, else TRITON_ATTN, logged with head_dim / global_head_dim
    ("vllm==0.24.0", "L40S-48GB", "TRITON_ATTN", "Gemma4 model has heterogeneous head dimensions (head_dim=256, "
     "global_head_dim=512). FA4 not available, forcing TRITON_ATTN backend."),
    ("vllm==0.24.0", "H100", "FLASH_ATTN", None),
    # 0.29.0+: the per-layer-type dict in the line; FA4 on Hopper (the hook leaves the backend to the selector,
    # whose first choice on SM 9.x is FLASH_ATTN), not on consumer Blackwell (SM 12.x)
    ("vllm==0.34.0", "H100", "FLASH_ATTN", None),
    ("vllm==0.34.0", "RTX-5090", "TRITON_ATTN", "Gemma4 model has heterogeneous head dimensions {'sliding_attention': "
     "256, 'full_attention': 512}. FA4 not available, forcing TRITON_ATTN backend."),
    # ROCm: is_fa_version_supported(4) is False, the hook's last branch sets TRITON_ATTN
    ("vllm==0.34.0", "MI300X", "TRITON_ATTN", "Gemma4 model has heterogeneous head dimensions {'sliding_attention': "
     "256, 'full_attention': 512}. FA4 not available, forcing TRITON_ATTN backend."),
])
def test_the_hook_per_release_and_card(policy, gpu, backend, line):
    d = api.simulate(MODEL, gpu=gpu, policy=policy, **BASE)
    assert d["serving"]["attention_backend"] == backend
    forced = [x for x in d["logs"] if x.startswith("Gemma4 model")]
    assert forced == ([line] if line else [])


def test_flash_attn_with_fa4_serves_the_512_heads():
    """On an H100 FA4 serves heads up to 512 (flash_attn.py 0.29.0 line 174): the forced FLASH_ATTN starts."""
    d = api.simulate(MODEL, gpu="H100", policy="vllm==0.29.0", attention_backend="FLASH_ATTN", **BASE)
    assert d["outcome"]["starts"] and d["serving"]["attention_backend"] == "FLASH_ATTN"
