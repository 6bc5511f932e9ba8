"""`compare` on hand-built specs: one row per engine, the same budget and length, and the
advice checked by evaluating each engine model at the advised knob and its neighbours."""

from __future__ import annotations

import pytest

from factories import gemma3_27b, gpt_oss_20b
from kvplan.engines.advice import (
    advise,
    advise_sglang,
    advise_trtllm,
    advise_vllm,
    sglang_concurrency,
    threshold_candidates,
    trtllm_concurrency,
)
from kvplan.engines.compare import CompareInputs, compare
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.vllm import ModelFacts, SimulateOptions, get_era, simulate
from kvplan.units import GiB

L128K = 131072
BUDGET = 40 * GiB
GPT_OSS, GEMMA3 = "GptOssForCausalLM", "Gemma3ForConditionalGeneration"
EAGLE = ModelFacts(L128K, speculative_method="eagle3")


def plan(ls, policy="vllm-latest", facts=None, threshold=None):
    era = get_era(policy)
    if threshold is not None:
        era = era.with_threshold(threshold)
    return simulate(ls, (), facts or ModelFacts(L128K), era, SimulateOptions(kv_cache_memory_bytes=BUDGET,
                                                                                max_model_len=L128K))


def test_one_row_per_engine_same_inputs():
    ls = gpt_oss_20b()
    c = compare(ls, GPT_OSS, CompareInputs(BUDGET, L128K), [plan(ls), plan(ls, "pr49472-cost")])
    assert [r.engine for r in c.rows] == ["vllm", "vllm", "sglang", "trtllm", "llamacpp", "lower_bound"]
    v = c.row("vllm", "vllm-latest")
    # vLLM 0.33: 109,226 blocks of 12 · 32768 B; per request 1033 + 8192 blocks → 9225 · 393,216 B
    assert v.reserved_per_request_bytes == 9225 * 12 * 32768
    assert v.kv_tokens == int(109_226 / 9225 * L128K) and v.starts
    # waste = 3,627,417,600 − 3,224,371,200 = 403,046,400 B, 11.1 % of the reservation
    assert v.waste_per_request_bytes == 403_046_400 and f"{v.waste_pct:.1f}" == "11.1"
    assert c.row("vllm", "pr49472-cost").is_proposal
    assert c.row("sglang").kv_tokens == 970_903  # engines.md §3.2
    assert c.row("trtllm").kv_tokens == 27_306 * 32  # the full-window pool's blocks · 32
    lb = c.row("lower_bound")
    assert lb.reserved_per_request_bytes == 3_224_371_200 and lb.waste_per_request_bytes == 0


def test_rows_serialise_with_integer_bytes():
    ls = gemma3_27b()
    d = compare(ls, GEMMA3, CompareInputs(BUDGET, L128K, target_concurrency=2), [plan(ls)]).to_dict()
    assert set(d) == {"workload", "lower_bound", "engines", "advice"}
    for row in d["engines"]:
        for key, value in row.items():
            if key.endswith("_bytes") and value is not None:
                assert isinstance(value, int), key
        assert isinstance(row["outcome"]["starts"], bool) and isinstance(row["notes"], list)
    llama = next(r for r in d["engines"] if r["engine"] == "llamacpp")
    assert llama["knobs"]["n_seq"] == 2 and llama["knobs"]["n_ctx_tokens"] == 2 * L128K


def test_failed_vllm_plan_still_has_a_row():
    # gpt-oss-20b + P-EAGLE at threshold 1.25: the drafter check fails after sizing
    ls = gpt_oss_20b(4)
    c = compare(ls, GPT_OSS, CompareInputs(BUDGET, L128K), [plan(ls, "vllm-1.25", EAGLE)])
    v = c.row("vllm")
    assert not v.starts and v.failure == "All drafting layers should belong to the same kv cache group"
    assert v.reserved_per_request_bytes >= c.lower_bound.per_request_bytes


# --- advice ------------------------------------------------------------------------------


def test_sglang_ratio_is_best_among_its_neighbours():
    costs, inputs = layer_costs(gpt_oss_20b()), CompareInputs(BUDGET, L128K, target_concurrency=8)
    a = advise_sglang(costs, GPT_OSS, inputs)
    r = a["swa_full_tokens_ratio"]
    best = sglang_concurrency(costs, GPT_OSS, inputs, r)
    assert best.starts and best.prefill_fits
    for n in (round(r - 0.001, 3), round(r + 0.001, 3)):
        other = sglang_concurrency(costs, GPT_OSS, inputs, n)
        if other.starts and other.prefill_fits:
            assert best.concurrency >= other.concurrency
    # the smallest ratio whose SWA pool holds a window plus an 8192-token prefill chunk (128 + 8192 + 1 = 8321):
    # r 0.005 → full int(42,949,672,960 / (24,576 · 1.005)) = 1,738,932, swa int(· 0.005) = 8694 ≥ 8321;
    # r 0.004 → swa 6962 < 8321. Concurrency 1,738,932 / 131,072 = 13.27 against 7.41 at the default 0.8
    # (ideal allocator: 13.32)
    assert r == 0.005 and (a["full_tokens"], a["swa_tokens"]) == (1_738_932, 8694)
    assert not sglang_concurrency(costs, GPT_OSS, inputs, 0.004).prefill_fits
    assert f"{a['max_concurrency']:.2f}" == "13.27" and f"{a['default_max_concurrency']:.2f}" == "7.41"
    assert a["reaches_target"] is True


def test_sglang_advice_not_applicable_to_gemma3():
    a = advise_sglang(layer_costs(gemma3_27b()), GEMMA3, CompareInputs(BUDGET, L128K))
    assert not a["applicable"] and "disable-hybrid-swa-memory" in a["reason"]


@pytest.mark.parametrize("ls", [gemma3_27b(), gpt_oss_20b()], ids=["gemma-3-27b", "gpt-oss-20b"])
def test_trtllm_shares_are_best_among_their_neighbours(ls):
    costs, inputs = layer_costs(ls), CompareInputs(BUDGET, L128K)
    a = advise_trtllm(costs, inputs)
    shares = a["window_shares"]
    assert sum(shares) == 1.0  # TensorRT-LLM asserts the exact float sum
    best = trtllm_concurrency(costs, inputs, shares)
    for delta in (0.01, -0.01, 0.001, -0.001):
        near = [round(shares[0] + delta, 6), round(shares[1] - delta, 6)]
        if min(near) > 0 and sum(near) == 1.0:
            assert best >= trtllm_concurrency(costs, inputs, near)
    assert a["max_concurrency"] > a["equal_shares_max_concurrency"]


def test_trtllm_gemma3_advice_numbers():
    # proportional shares: window pool 33 blocks · 32 · 425,984 B, full pool 4096 · 32 · 81,920 B per request
    # → 0.0404 / 0.9596; concurrency 3.84 against 2.0 with equal shares (ideal: 3.84)
    a = advise_trtllm(layer_costs(gemma3_27b()), CompareInputs(BUDGET, L128K))
    assert a["window_shares"] == [0.0404, 0.9596] and a["env"] == "TRTLLM_WINDOW_SIZE_SHARES=0.0404,0.9596"
    assert f"{a['max_concurrency']:.2f}" == "3.84" and a["equal_shares_max_concurrency"] == 2.0


def test_vllm_threshold_avoids_the_peagle_failure():
    ls = gpt_oss_20b(4)
    p = plan(ls, "vllm-1.25", EAGLE)

    def at(t):
        return plan(ls, "vllm-1.25", EAGLE, threshold=t)

    # buckets 16 / 12 = 1.333…: 1.0 keeps group size 12 (fails), 1.34 is the first hundredth above
    assert threshold_candidates(12, 16) == [1.0, 1.34]
    a = advise_vllm(p, at, target_concurrency=8)
    assert a["threshold"] == 1.34 and a["group_size"] == 16 and "avoids the failure" in a["reason"]
    # neighbours: 1.33 still fails, 1.34 and 1.35 start with the same grouping
    assert not at(1.33).starts and at(1.34).starts and at(1.35).group_size == 16
    assert a["reaches_target"] is True  # 8.88 ≥ 8


def test_vllm_threshold_minimises_padding_for_gemma3():
    ls = gemma3_27b()
    a = advise_vllm(plan(ls), lambda t: plan(ls, threshold=t))
    # ≤ 5.2 → group size 10 (8 padding layers); above → 52 (42 padding layers, 0.72 requests)
    assert a["threshold"] == 1.0 and a["num_padding_layers"] == 8
    assert [t["num_padding_layers"] for t in a["tried"]] == [8, 42]


def test_vllm_threshold_not_applicable():
    ls = gpt_oss_20b()
    a = advise_vllm(plan(ls), lambda t: plan(ls, threshold=t))
    assert not a["applicable"] and "equal bucket counts" in a["reason"]
    assert not advise_vllm(plan(ls, "pr49472-cost"), None)["applicable"]


def test_advise_bundle():
    ls = gemma3_27b()
    a = advise(layer_costs(ls), GEMMA3, CompareInputs(BUDGET, L128K, target_concurrency=3))
    assert a["vllm"] is None  # no plan given
    # llama.cpp: 3 sequences of 128k fit in 40 GiB (see test_engines_llamacpp), none with --swa-full
    assert (a["llamacpp"]["n_seq"], a["llamacpp"]["n_seq_with_swa_full"]) == (3, 0)
    assert a["llamacpp"]["reaches_target"] is True
