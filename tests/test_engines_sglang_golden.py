"""kvplan's SGLang rules against SGLang's own code: ``HybridSWAPoolConfigurator``,
``compute_swa_request_cap`` and ``estimate_swa_kv_tokens`` from the sglang 0.5.23 wheel, run on
CPU by ``scripts/golden/sglang_runner.py`` (their source executed unchanged, the runtime context
and unrelated imports stubbed). CI only compares with ``tests/golden/sglang/pool_sizes.json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import full, layers, sw
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.sglang import SGLANG_VERSION, sglang_model, swa_admission_tokens, swa_per_request_tokens

DOC = json.loads((Path(__file__).parent / "golden" / "sglang" / "pool_sizes.json").read_text())
L128K = 131072


def test_golden_release():
    assert DOC["sglang_version"] == SGLANG_VERSION == "0.5.23"


def geometry_layers(c: dict):
    """Target: ``n_swa`` sliding and the model's full layers; layers beyond gpt-oss's 12 full ones are drafter
    layers (kvplan counts them in the full term, as the runner's geometry does)."""
    target_full = 12 if c["model"].startswith("gpt-oss") else c["n_full"]
    specs = [sw(c["window"], c["swa_heads"], c["swa_head_dim"])] * c["n_swa"]
    specs += [full(c["heads"], c["head_dim"])] * c["n_full"]
    return layers(specs, first_drafter=c["n_swa"] + target_full if c["n_full"] > target_full else None)


@pytest.mark.parametrize("c", DOC["pool_sizes"], ids=lambda c: f"{c['model']}-{c['budget_bytes']}-"
                                                            f"{c['swa_full_tokens_ratio']}-{c['page_size']}")
def test_pool_sizes(c):
    r = sglang_model(layer_costs(geometry_layers(c)), "GptOssForCausalLM", c["budget_bytes"], L128K,
                     swa_full_tokens_ratio=c["swa_full_tokens_ratio"], page_size=c["page_size"])
    got = c["result"]
    if "error" in got:
        assert not r.starts and got["error"] == f"ValueError: {r.failure}"
    else:
        assert r.starts and (r.full_tokens, r.swa_tokens) == (got["full_tokens"], got["swa_tokens"])


@pytest.mark.parametrize("c", DOC["swa_request_cap"], ids=lambda c: "-".join(str(v) for v in c.values()))
def test_swa_request_cap(c):
    # compute_swa_request_cap = per_request · N + chunks in flight · chunked_prefill_size + page
    page = c["page_size"]
    per_request = swa_per_request_tokens(c["window"], L128K, page, c["swa_eviction_interval"])
    chunks = 2 if c["overlap"] else 1
    assert per_request * c["max_running_requests"] + chunks * c["chunked_prefill_size"] + page == c["swa_tokens"]
    # and the same figures through the model's steady-decode fields
    r = sglang_model(layer_costs(layers([sw(c["window"]), full()])), "GptOssForCausalLM", 1 << 34, L128K,
                     page_size=page, chunked_prefill_size=c["chunked_prefill_size"],
                     disable_overlap_schedule=not c["overlap"], swa_eviction_interval=c["swa_eviction_interval"])
    assert r.swa_need_tokens * c["max_running_requests"] + r.swa_in_flight_tokens == c["swa_tokens"]


@pytest.mark.parametrize("c", DOC["swa_estimate"], ids=lambda c: "-".join(str(v) for v in c.values()))
def test_swa_admission_estimate(c):
    assert swa_admission_tokens(c["extend_input_len"], c["max_new_tokens"], c["window"], c["page_size"],
                                c["allocation_limit"]) == c["swa_tokens"]


# --- Mamba / GDN hybrids: KVCacheConfigurator._handle_max_mamba_cache, resolve_max_num_reqs ---------

MAMBA = json.loads((Path(__file__).parent / "golden" / "sglang" / "mamba.json").read_text())


def test_mamba_golden_release():
    from kvplan.engines.sglang import MAMBA_RUNNING_RATIO

    assert MAMBA["sglang_version"] == SGLANG_VERSION
    assert MAMBA["constants"]["MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO"] == MAMBA_RUNNING_RATIO


def _costs(model: str):
    from kvplan.model.layout import build_model_layout

    layout = build_model_layout(model)
    return layer_costs(layout.layers), layout.target


@pytest.mark.parametrize("c", MAMBA["cases"], ids=lambda c: f"{c['model'].split('/')[1]}-{c['budget_bytes'] >> 30}GiB-"
                                                           f"{c['mamba_full_memory_ratio']}-{c['sglang_mamba_ssm_dtype']}")
def test_mamba_hybrid_pools_and_running_cap(c):
    from kvplan.engines.sglang import mamba_state_per_request_bytes

    costs, target = _costs(c["model"])
    assert target.max_position_embeddings == c["context_len_tokens"]
    ssm = c["sglang_mamba_ssm_dtype"] or "float32"
    assert mamba_state_per_request_bytes(costs, ssm) == c["mamba_cache_per_req_bytes"]
    L = c["context_len_tokens"]
    r = sglang_model(costs, target.architecture, c["budget_bytes"], L, mamba_full_memory_ratio=c["mamba_full_memory_ratio"],
                     mamba_ssm_dtype=ssm, context_len_tokens=L, prompt_len_tokens=L // 2)
    assert r.max_mamba_cache_size == c["max_mamba_cache_size"]
    assert r.full_tokens == c["max_total_num_tokens"]
    assert r.full_bytes_per_token == c["cell_size_bytes"]
    if isinstance(c["max_running_requests"], str):  # SGLang's RuntimeError at start-up
        assert not r.starts and r.failure.split(".")[0] == c["max_running_requests"].removeprefix(
            "RuntimeError: ").split(".")[0]
        return
    assert r.starts and r.max_running_requests == c["max_running_requests"]
    assert r.longest_prompt_tokens == c["max_req_input_len"] - 1


def test_acceptance_rows():
    """The issue's two rows: Qwen3-Next-80B at 40 GiB holds 3 requests of its 262,144-token context
    (920,754 pool tokens // 262,144), Nemotron-H-56B 7 (its running cap, 21 state slots // 3)."""
    costs, target = _costs("Qwen/Qwen3-Next-80B-A3B-Instruct")
    r = sglang_model(costs, target.architecture, 40 << 30, 262144, context_len_tokens=262144,
                     prompt_len_tokens=262144 - 8)
    assert (r.full_tokens, r.max_running_requests, r.admission_concurrency, r.max_concurrency) == (920754, 87, 3, 3.0)
    # a prompt of the whole context is refused by validate_input_length
    assert sglang_model(costs, target.architecture, 40 << 30, 262144, context_len_tokens=262144).max_concurrency == 0
    costs, target = _costs("nvidia/Nemotron-H-56B-Base-8K")
    r = sglang_model(costs, target.architecture, 40 << 30, 8192, context_len_tokens=8192, prompt_len_tokens=4096)
    assert (r.max_mamba_cache_size, r.max_running_requests, r.max_concurrency) == (21, 7, 7.0)
