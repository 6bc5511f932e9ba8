"""Every --kv-cache-dtype of vLLM 0.34.0 against the wheel's own classes (issue #35).

``tests/golden/kv_dtypes/0.34.0.json`` (``scripts/golden/make_goldens.py --kv-dtypes``) holds, per value
of 0.34.0's ``CacheDType`` and model (Llama-3.1-8B dense, DeepSeek-V3 MLA, gemma-3-1b sliding-window
hybrid), what the
release's selector picks on an H100, the layer specs after the backend's ``customize_spec``, the groups'
page sizes and num_blocks at 40 GiB, or vLLM's own error. kvplan must give the same figures, or the same
refusal (exit 3) with vLLM's text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan import simulate
from kvplan.engines.vllm.kv_packing import packing, turboquant_slot_bytes
from kvplan.model.cache_dtypes import accepted_cache_dtypes, every_cache_dtype

GOLDEN = json.loads((Path(__file__).parent / "golden" / "kv_dtypes" / "0.34.0.json").read_text())
CASES = GOLDEN["cases"]


def _run(case: dict):
    args = case["args"]
    kw = dict(kv_cache_dtype=args["kv_cache_dtype"], kv_cache_memory=40 << 30, gpu="H100-80GB", policy="vllm==0.34.0")
    if args.get("kv_cache_dtype_skip_layers"):
        kw["kv_cache_dtype_skip_layers"] = ",".join(args["kv_cache_dtype_skip_layers"])
    return simulate(case["model"], **kw)


@pytest.mark.parametrize("entry", CASES, ids=[c["case"]["case"] for c in CASES])
def test_kv_cache_dtype_matches_the_wheel(entry):
    case, gold = entry["case"], entry["result"]
    env = _run(case)
    outcome = env["outcome"]
    if gold["error"] is not None:
        # vLLM refuses: kvplan predicts the start-up failure with vLLM's text (pydantic wraps the config
        # checks: "1 validation error for VllmConfig / Value error, <text>")
        assert not outcome["starts"]
        assert outcome["error"] in gold["error"]["message"]
        return
    assert outcome["starts"], outcome
    # the backend of the layers in the requested dtype (the spec table's last row; the skipped layers' first)
    assert env["serving"]["attention_backend"] == gold["spec_table"][-1]["backend"]
    assert env["serving"]["block_size"] == gold["block_size"]
    assert [g["page_size_bytes"] for g in env["groups"]] == [g["spec"]["page_size_bytes"] for g in gold["groups"]]
    assert env["memory"]["num_blocks"] == gold["num_blocks"]


def test_every_cache_dtype_of_0_34_is_golden():
    """The golden covers every value of the release's CacheDType, on each model."""
    for model in ("meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-V3", "google/gemma-3-1b-it"):
        done = {c["case"]["args"]["kv_cache_dtype"] for c in GOLDEN["cases"]
                if c["case"]["model"] == model and "kv_cache_dtype_skip_layers" not in c["case"]["args"]}
        assert done == set(accepted_cache_dtypes("0.34.0"))


def test_per_token_head_differs_from_fp8_as_the_spec_does():
    """fp8_per_token_head on Llama-3.1-8B: TRITON_ATTN stores one fp32 scale after each K and V head, so a
    (head, token) cell is 128 + 128 + 2 * 4 = 264 bytes against fp8's 256; at block 64 and 8 KV heads the page
    is 64 * 8 * 264 = 135168 (fp8: 131072) and 40 GiB hold 42949672960 // (135168 * 32) = 9929 blocks
    (fp8: 10240), 3.0 % fewer tokens (vllm#40388 measured 22 % on 0.26, an older layout)."""
    fp8 = simulate("meta-llama/Llama-3.1-8B-Instruct", kv_cache_dtype="fp8", kv_cache_memory=40 << 30)
    pth = simulate("meta-llama/Llama-3.1-8B-Instruct", kv_cache_dtype="fp8_per_token_head", kv_cache_memory=40 << 30)
    assert fp8["groups"][0]["page_size_bytes"] == 64 * 8 * 256
    assert pth["groups"][0]["page_size_bytes"] == 64 * 8 * (256 + 2 * 4)
    assert (fp8["memory"]["num_blocks"], pth["memory"]["num_blocks"]) == (10240, (40 << 30) // (135168 * 32))


def test_packing_arithmetic():
    # nvfp4: K and V in separate slots of 128 // 2 packed values + 128 // 16 fp8 scales = 72 bytes
    assert packing("FLASHINFER", "nvfp4", num_kv_heads=8, head_size=128, head_size_v=128, dtype_bytes=1) == (16, 72)
    # int4 per-token-head: (64 + 64) nibble bytes + two fp32 scales
    assert packing("TRITON_ATTN", "int4_per_token_head", num_kv_heads=8, head_size=128, head_size_v=128,
                   dtype_bytes=1) == (None, 136)
    # TurboQuant head 128: k8v4 128 + (64 + 4); 4bit_nc (64 + 2) + 68; k3v4_nc (48 + 2) + 68; 3bit_nc 50 + (48 + 4)
    assert [turboquant_slot_bytes(d, 128) for d in ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc",
                                                    "turboquant_3bit_nc")] == [196, 134, 118, 102]
    # the same backend does not repack another dtype
    assert packing("FLASHINFER", "fp8", num_kv_heads=8, head_size=128, head_size_v=128, dtype_bytes=1) == (None, None)


def test_accepted_values_come_from_each_release():
    assert "nvfp4" not in accepted_cache_dtypes("0.19.0")
    assert "nvfp4" in accepted_cache_dtypes("0.20.0")
    assert "ultraquant_4bit" in accepted_cache_dtypes("0.32.0")
    assert set(accepted_cache_dtypes("0.34.0")) <= set(every_cache_dtype())


def test_a_value_of_a_later_release_is_refused_as_vllm_refuses_it():
    from kvplan.errors import OptionError

    with pytest.raises(OptionError, match="'nvfp4' is not a KV cache dtype of vLLM 0.19.1"):
        simulate("meta-llama/Llama-3.1-8B-Instruct", kv_cache_dtype="nvfp4", policy="vllm==0.19.1")


def test_a_packed_dtype_of_an_older_release_is_not_modelled_yet():
    from kvplan.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="fp8_per_token_head is not modelled yet for vLLM 0.26.0"):
        simulate("meta-llama/Llama-3.1-8B-Instruct", kv_cache_dtype="fp8_per_token_head", policy="vllm==0.26.0")


# ---------------------------------------------------------------- configs written by transformers 5.x

T5 = Path(__file__).parent / "data" / "transformers5_configs"


def test_transformers5_special_floats_are_read_back():
    """transformers 5.x writes ``time_step_limit`` (0.0, inf) as [0.0, {"__float__": "Infinity"}]; kvplan's
    reader turns it back into inf as ``PreTrainedConfig._decode_special_floats`` does (tests/data README)."""
    import math

    from kvplan.model.source import decode_special_floats, read_config_json

    for name in ("falcon_h1", "granitemoehybrid"):
        raw = json.loads((T5 / name / "config.json").read_text())
        assert raw["time_step_limit"] == [0.0, {"__float__": "Infinity"}]
        assert read_config_json(str(T5 / name / "config.json"))["time_step_limit"] == [0.0, math.inf]
    assert math.isnan(decode_special_floats({"__float__": "NaN"}))
    assert decode_special_floats({"a": [{"__float__": "-Infinity"}]}) == {"a": [-math.inf]}
    # an unknown tag, or a tag beside other keys, stays as written (as transformers leaves it)
    assert decode_special_floats({"__float__": "Huge"}) == {"__float__": "Huge"}
    assert decode_special_floats({"__float__": "NaN", "x": 1}) == {"__float__": "NaN", "x": 1}


@pytest.mark.parametrize("name", ["falcon_h1", "granitemoehybrid"])
def test_transformers5_hybrid_configs_simulate(name):
    env = simulate(str(T5 / name), kv_cache_memory=40 << 30)
    assert env["outcome"]["starts"]
    assert any(g["kind"] == "mamba" for g in env["groups"])
