"""The block size, attention backend and engine defaults kvplan resolves with options unset match what vLLM
itself resolves (tests/golden/defaults/<release>.json, ``make_goldens.py --defaults``: EngineArgs ->
create_engine_config on the CUDA platform for each GPU class, the selector's backend and
update_block_size_for_backend, run from the release's own code), and the backends' kernel and preferred
block sizes kvplan reads match each release's classes. The config-defaults diff the tracker saved
(tests/golden/config_defaults/) names every CacheConfig.DEFAULT_BLOCK_SIZE change kvplan's eras carry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvplan import api
from kvplan.engines.vllm.block_size import (
    AttentionFacts,
    Device,
    _cuda_candidates,
    kernel_block_sizes,
    preferred_block_size,
)
from kvplan.engines.vllm.releases import era_of_release
from kvplan.engines.vllm.versions import GOLDEN_RELEASES

GOLDEN = Path(__file__).parent / "golden" / "defaults"
RELEASES = sorted(p.stem for p in GOLDEN.glob("*.json"))


def _golden(release: str) -> dict:
    return json.loads((GOLDEN / f"{release}.json").read_text())


def _cases(kind: str):
    for release in RELEASES:
        for c in _golden(release)["cases"]:
            if c["case"]["kind"] == kind:
                yield pytest.param(release, c["case"], c["result"], id=f"{release}:{c['case']['case']}")


def test_goldens_present():
    """One engine-defaults golden for every golden release (the layout goldens' releases)."""
    assert set(RELEASES) == set(GOLDEN_RELEASES)


# kvplan's backend tables follow each release (eras kernel_block_sizes, preferred_block_size_hook,
# rocm_aiter_unified_prefers_64, mla_sm100_order); the backend is read per GPU from 0.33.0 (eras
# backend_by_device); before, kvplan assumes an H100's backend (FLASH_ATTN, as every engine-defaults golden
# of 0.11.0-0.32.0 picks on A100, L4 and H100).
def _backend_cases():
    for p in _cases("block_size_backends"):
        release, _, result = p.values
        if "error" in result and result["error"]:  # 0.11.0: no AttentionBackendEnum registry to read
            yield pytest.param(*p.values, id=p.id, marks=pytest.mark.skip(reason=result["error"]["message"]))
        else:
            yield p


@pytest.mark.parametrize("release, case, result", list(_backend_cases()))
def test_backend_block_sizes(release, case, result):
    era = era_of_release(release)
    if all(g.get("kernel_block_sizes") is None for g in result["backends"].values()):
        pytest.skip(f"{release}'s backends have no get_supported_kernel_block_sizes (0.12.0+)")
    assert result["default_block_size"] == era.default_block_size
    checked = 0
    for name, got in result["backends"].items():
        if "error" in got:  # the module does not import on CPU (FlashInfer, CUTLASS): read from source
            continue
        bases = tuple(x["multiple_of"] if isinstance(x, dict) else x for x in got["kernel_block_sizes"])
        assert kernel_block_sizes(era, name) == bases, name
        # no model config is current in the probe: no FlashAttention head-size rule applies; None before
        # 0.18.0 (no get_preferred_block_size)
        assert preferred_block_size(era, name, Device(platform="rocm" if name.startswith("ROCM") else "cuda"),
                                    AttentionFacts()) == got["preferred_block_size"], name
        checked += 1
    assert checked >= 9


@pytest.mark.parametrize("release, case, result", list(_backend_cases()))
def test_cuda_priorities_follow_the_release(release, case, result):
    """kvplan's candidates are the release's priority list, in its order (those kvplan models)."""
    for p in result["cuda_priorities"]:
        facts = AttentionFacts(use_mla=p["use_mla"], head_size=128)
        mine = [b for b, _ in _cuda_candidates(era_of_release(release), Device(capability=tuple(p["capability"])),
                                               facts)]
        order = p["order"]
        assert all(b in order for b in mine), (p, mine)
        assert [order.index(b) for b in mine] == sorted(order.index(b) for b in mine), (p, mine)


@pytest.mark.parametrize("release, case, result", list(_cases("engine_defaults")))
def test_defaults_as_vllm_resolves_them(release, case, result):
    assert result["error"] is None
    args = case["args"]
    d = api.simulate(case["model"], gpu=case["gpu"], policy=f"vllm=={release}", kv_cache_memory="40GiB",
                     block_size=args.get("block_size"))
    assert d["serving"]["attention_backend"] == result["attention_backend"]
    engine = result["engine_config"]
    al = d["mamba_alignment"]
    # before 0.20 HybridAttentionMambaModelConfig aligns a hybrid's block size inside create_engine_config
    # (0.19.1 vllm/config/vllm.py line 1613), so the engine config carries the aligned size; from 0.20 the
    # executor's update_block_size_for_backend aligns it after, and the engine config has the size before
    in_config = result.get("hybrid_alignment_in") == "create_engine_config"
    assert (al["attention_block_size"] if al is not None and in_config
            else d["serving"]["block_size"]) == engine["cache_config.block_size"]
    if result["mamba_page_size_padded"] is not None:
        if in_config and "block_size" not in case["args"] and result["block_size"] != engine["cache_config.block_size"]:
            # 0.18.0-0.19.1: the executor's update_block_size_for_backend puts a hybrid's unset block size back
            # to DEFAULT_BLOCK_SIZE (0.18.0 vllm/platforms/interface.py lines 442-444, "their block_size is
            # managed by HybridAttentionMambaModelConfig"); the attention layers' pages are then unified with
            # the padded Mamba page (kv_cache_utils), which scales the attention group back to the aligned size
            assert result["block_size"] == era_of_release(release).default_block_size == d["serving"]["block_size"]
        else:
            assert al["attention_block_size"] == result["block_size"]
        assert al["attention_page_bytes"] == result["mamba_page_size_padded"]
        # 0.11.0 leaves cache_config.mamba_block_size unset: its Mamba layers take max_model_len as their block
        # (0.11.0 vllm/v1/worker/gpu_model_runner.py line 4133)
        assert al["mamba_block_size"] == (result["mamba_block_size"] or engine["model_config.max_model_len"])
    else:
        assert al is None and {g["block_size"] for g in d["groups"]} == {result["block_size"]}
    lines = [x["message"] for x in result["logs"]]
    assert [x for x in d["logs"] if x.startswith(("Setting ", "Padding mamba"))] == lines
    sched = d["scheduler"]
    assert sched["max_num_batched_tokens"] == engine["scheduler_config.max_num_batched_tokens"]
    assert sched["max_num_seqs"] == engine["scheduler_config.max_num_seqs"]
    assert sched["async_scheduling"] == engine["scheduler_config.async_scheduling"]
    # prefix caching: on by default for the dense models; for the hybrids from 0.28.0 (off, Mamba mode
    # "none", in 0.11.0-0.27.1: the eras' hybrid_prefix_caching_default)
    if al is None:
        assert engine["cache_config.enable_prefix_caching"] is True
    else:
        # no CacheConfig.mamba_cache_mode before 0.15 (--mamba-cache-mode, eras vllm-0.15): Mamba states are
        # not cached, which kvplan names "none"
        assert al["mamba_cache_mode"] == engine.get("cache_config.mamba_cache_mode", "none")
        assert al["mamba_cache_mode"] == ("align" if engine["cache_config.enable_prefix_caching"] else "none")


@pytest.mark.parametrize("release, case, result", list(_cases("engine_defaults")))
def test_model_runner_as_vllm_resolves_it(release, case, result):
    assert result["error"] is None
    engine = result["engine_config"]
    if "use_v2_model_runner" not in engine and era_of_release(release).default_model_runner == "v2_only":
        pytest.skip(f"{release} has no V1 runner to choose instead (VllmConfig.use_v2_model_runner removed)")
    d = api.simulate(case["model"], gpu=case["gpu"], policy=f"vllm=={release}", kv_cache_memory="40GiB",
                     block_size=case["args"].get("block_size"))
    # no VllmConfig.use_v2_model_runner before 0.22: the V1 runner unless VLLM_USE_V2_MODEL_RUNNER is set
    # (0.18.0 vllm/envs.py: default 0; no V2 runner at all before it)
    assert (d["scheduler"]["model_runner"] == "v2") == engine.get("use_v2_model_runner", False)


def test_llama_acceptance_0_34():
    """Llama-3.1-8B at 40 GiB, 0.34.0 defaults on an H100 (the golden's backend and block: FLASH_ATTN keeps
    DEFAULT_BLOCK_SIZE 64, no 'Setting kv cache block size' line): 40 GiB // (64 tokens x 32 layers x
    8 heads x 128 x 2 (K, V) x 2 bytes = 8 MiB) = 5120 blocks; 0.33.0 keeps 16 (20480 blocks)."""
    golden = {c["case"]["case"]: c["result"] for c in _golden("0.34.0")["cases"]}
    assert golden["meta-llama/Meta-Llama-3.1-8B@H100-80GB"]["block_size"] == 64
    d = api.simulate("meta-llama/Meta-Llama-3.1-8B", kv_cache_memory="40GiB")
    assert (d["serving"]["block_size"], d["memory"]["num_blocks"]) == (64, 5120)
    assert d["serving"]["attention_backend"] == "FLASH_ATTN" and d["serving"]["attention_backend_note"]
    d = api.simulate("meta-llama/Meta-Llama-3.1-8B", kv_cache_memory="40GiB", policy="vllm==0.33.0")
    assert (d["serving"]["block_size"], d["memory"]["num_blocks"]) == (16, 20480)


def test_backend_preferences_by_gpu():
    """Derivations from the release code (cuda.py _get_backend_priorities, the backends' supports_* and
    kernel sizes; 0.34.0 DEFAULT_BLOCK_SIZE 64): gpt-oss (sinks) on an A100 runs TRITON_ATTN (FA2 has no
    sinks, FlashInfer's need trtllm-gen on SM100), DeepSeek-V3 (MLA) on a B200 FLASHINFER_MLA (kernel
    sizes 32, 64: keeps 64), on an H100 FLASH_ATTN_MLA (multiple of 16: 64); MI300X runs ROCM_ATTN, which
    asks for 16 in 0.34.0 (rocm_attn.py line 167) and logs the change."""
    d = api.simulate("openai/gpt-oss-20b", gpu="A100-80GB")
    assert (d["serving"]["attention_backend"], d["serving"]["block_size"]) == ("TRITON_ATTN", 64)
    d = api.simulate("deepseek-ai/DeepSeek-V3", gpu="B200-180GB", kv_cache_memory="40GiB")
    assert (d["serving"]["attention_backend"], d["serving"]["block_size"]) == ("FLASHINFER_MLA", 64)
    d = api.simulate("deepseek-ai/DeepSeek-V3", gpu="H100-80GB", kv_cache_memory="40GiB")
    assert (d["serving"]["attention_backend"], d["serving"]["block_size"]) == ("FLASH_ATTN_MLA", 64)
    d = api.simulate("meta-llama/Meta-Llama-3.1-8B", gpu="MI300X-192GB")
    assert (d["serving"]["attention_backend"], d["serving"]["block_size"]) == ("ROCM_ATTN", 16)
    assert "Setting kv cache block size to 16 for ROCM_ATTN backend(s)." in d["logs"]
    d = api.simulate("deepseek-ai/DeepSeek-V3", kv_cache_memory="40GiB", attention_backend="CUTLASS_MLA")
    assert d["serving"]["block_size"] == 128  # kernel size 128 only: 64 is not a multiple
    assert "Setting kv cache block size to 128 for CUTLASS_MLA backend(s)." in d["logs"]


def test_tracker_names_the_default_block_size_change():
    text = (Path(__file__).parent / "golden" / "config_defaults" / "0.33.0__0.34.0.txt").read_text()
    m = re.search(r"CacheConfig\.DEFAULT_BLOCK_SIZE \(ClassVar\): (\d+) -> (\d+)", text)
    assert m is not None
    assert (int(m[1]), int(m[2])) == (era_of_release("0.33.0").default_block_size,
                                      era_of_release("0.34.0").default_block_size)
