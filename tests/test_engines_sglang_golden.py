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
