"""`compare` on hand-built specs: one row per engine, the same budget and length, and the
advice checked by evaluating each engine model at the advised knob and its neighbours."""

from __future__ import annotations

from dataclasses import replace


from factories import gemma3_27b, gpt_oss_20b
from kvplan.engines.compare import CompareInputs
from kvplan.engines.registry import compare_inputs
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.sglang import advise_sglang, sglang_result, sglang_score
from kvplan.engines.trtllm import advise_trtllm, trtllm_result, trtllm_score
from kvplan.engines.vllm.compare import advise_vllm, threshold_candidates, vllm_thresholds
from kvplan.engines.vllm import ModelFacts, SimulateOptions, get_era, simulate
from kvplan.results import to_data
from kvplan.units import GiB
from kvplan.usecases.compare import compare_engines as compare
from kvplan.usecases.records import engine_row

L128K = 131072
BUDGET = 40 * GiB
GPT_OSS, GEMMA3 = "GptOssForCausalLM", "Gemma3ForConditionalGeneration"


def Inputs(*args, **kw) -> CompareInputs:
    """SGLang started with --context-length 262144 (so a 131,072-token prompt passes validate_input_length)
    and TensorRT-LLM with kv_cache_config.max_attention_window set to the model's windows (VSWA)."""
    kw.setdefault("context_len_tokens", 2 * L128K)
    kw.setdefault("trtllm_max_attention_window", True)
    return compare_inputs(*args, **kw)
EAGLE = ModelFacts(L128K, speculative_method="eagle3")


def plan(ls, policy="vllm-latest", facts=None, threshold=None):
    era = get_era(policy)
    if threshold is not None:
        era = replace(era, threshold=threshold)
    return simulate(ls, (), facts or ModelFacts(L128K), era, SimulateOptions(kv_cache_memory_bytes=BUDGET,
                                                                                max_model_len=L128K))


def test_one_row_per_engine_same_inputs():
    ls = gpt_oss_20b()
    c = compare(layer_costs(ls), GPT_OSS, Inputs(BUDGET, L128K), [plan(ls), plan(ls, "pr49472-cost")])
    assert [r.engine for r in c.rows] == ["vllm", "vllm", "sglang", "trtllm", "llamacpp", "lower_bound"]
    v = c.row("vllm", "vllm==0.34.0")
    # vLLM 0.33: 109,226 blocks of 12 · 32768 B; per request 1033 + 8192 blocks → 9225 · 393,216 B
    assert v.reserved_per_request_bytes == 9225 * 12 * 32768
    assert v.kv_tokens == int(109_226 / 9225 * L128K) and v.starts
    # waste = 3,627,417,600 − 3,224,371,200 = 403,046,400 B, 11.1 % of the reservation
    assert v.waste_per_request_bytes == 403_046_400 and f"{v.waste_pct:.1f}" == "11.1"
    assert c.row("vllm", "pr49472-cost").is_proposal
    assert c.row("sglang").kv_tokens == 970_903  # engines.md §3.2
    assert c.row("trtllm").kv_tokens == 27_307 * 32  # the full-window pool's blocks · 32 (ceilDiv(873,813, 32))
    lb = c.row("lower_bound")
    assert lb.reserved_per_request_bytes == 3_224_371_200 and lb.waste_per_request_bytes == 0


def test_rows_serialise_with_integer_bytes():
    ls = gemma3_27b()
    c = compare(layer_costs(ls), GEMMA3, Inputs(BUDGET, L128K, target_concurrency=2), [plan(ls)])
    d = {"engines": [to_data(engine_row(r)) for r in c.rows]}
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
    c = compare(layer_costs(ls), GPT_OSS, Inputs(BUDGET, L128K), [plan(ls, "vllm-1.25", EAGLE)])
    v = c.row("vllm")
    assert not v.starts and v.failure == "All drafting layers should belong to the same kv cache group"
    assert v.reserved_per_request_bytes >= c.lower_bound.per_request_bytes


# --- advice ------------------------------------------------------------------------------


def test_sglang_ratio_serves_the_most_requests_then_the_widest_margin():
    costs, inputs = layer_costs(gpt_oss_20b()), Inputs(BUDGET, L128K, target_concurrency=8)
    a = to_data(advise_sglang(costs, GPT_OSS, inputs))
    # r 0.012: full int(42,949,672,960 // 24,870.912) = 1,726,903, swa int(1,726,903 · 0.012) = 20,722.
    # 13 requests: full (1,726,903 − 131,073) // 131,073 + 1 = 13 admitted; SWA 13 · 258 + 16,385 = 19,739 ≤ 20,722.
    # margins: full 1,726,903 / (13 · 131,072) = 1.0135, SWA (20,722 − 16,385) / (13 · 258) = 1.2931
    assert a["swa_full_tokens_ratio"] == 0.012 and (a["full_tokens"], a["swa_tokens"]) == (1_726_903, 20_722)
    assert a["requests"] == 13 and a["pool_margins"] == {"full": 1.013479, "swa": 1.293083}
    assert a["flag"] == "--swa-full-tokens-ratio 0.012" and a["reaches_target"] is True
    assert a["default_max_concurrency"] == 7.0
    # neighbours: 0.011 (swa 19,014: (19,014 − 16,385) / 258 = 10.2) serves 10; 0.013 serves 13 with less
    # full-pool headroom
    assert sglang_score(sglang_result(costs, GPT_OSS, inputs, 0.011))[0] == 10
    assert sglang_score(sglang_result(costs, GPT_OSS, inputs, 0.013)) < (13, 1.013479)


def test_sglang_advice_not_applicable_to_gemma3():
    a = to_data(advise_sglang(layer_costs(gemma3_27b()), GEMMA3, Inputs(BUDGET, L128K)))
    assert not a["applicable"] and "disable-hybrid-swa-memory" in a["reason"]


def test_trtllm_gpt_oss_shares_best_among_their_neighbours():
    costs, inputs = layer_costs(gpt_oss_20b()), Inputs(BUDGET, L128K)
    a = to_data(advise_trtllm(costs, inputs))
    shares = a["window_shares"]
    assert sum(shares) == 1.0  # kvplan keeps them summing to 1 (1.2.0rc2 would normalise them anyway)
    # 0.077 / 0.923 (float32 0.07699999958 / 0.92299997807): window pool ceilDiv(int(share · 40 GiB / 24,576), 32)
    # = 4,206 blocks (12 · 260 = 3,120 admitted, a 4,096-block prompt fits); full pool 50,409 blocks ≥ 12 · 4096
    assert shares == [0.077, 0.923] and a["requests"] == 12 and a["max_concurrency"] == 12.0
    best = trtllm_score(trtllm_result(costs, inputs, shares))
    for delta in (0.01, -0.01, 0.001, -0.001, 0.0001, -0.0001):
        near = [round(shares[0] + delta, 6), round(shares[1] - delta, 6)]
        if min(near) > 0 and sum(near) == 1.0:
            assert best >= trtllm_score(trtllm_result(costs, inputs, near))
    assert a["equal_shares_max_concurrency"] == 6.0


def test_trtllm_gemma3_no_split_prefills_128k():
    # every pool must hold ceil(131072 / 32) = 4096 blocks for the prompt: the window pool alone needs
    # 4096 · 32 · 425,984 B = 52 GiB > 40 GiB. With shares proportional to bytes per token (425,984 : 81,920
    # → 0.8387 / 0.1613) both pools hold 84,561 / 84,567 tokens, ceilDiv → 2,643 blocks: the longest prompt is 84,576
    a = to_data(advise_trtllm(layer_costs(gemma3_27b()), Inputs(BUDGET, L128K)))
    assert a["window_shares"] is None and a["longest_prompt_tokens"] == 84_576
    assert "no split prefills a 131,072-token prompt" in a["reason"] and "0.8387,0.1613" in a["reason"]
    # at L = 65,536 a split serves requests again, and every pool keeps at least one request's need
    short = to_data(advise_trtllm(layer_costs(gemma3_27b()), Inputs(BUDGET, 65_536)))
    assert short["requests"] >= 1 and min(short["pool_margins"].values()) >= 1


def test_vllm_threshold_avoids_the_peagle_failure():
    ls = gpt_oss_20b(4)
    p = plan(ls, "vllm-1.25", EAGLE)

    def at(t):
        return plan(ls, "vllm-1.25", EAGLE, threshold=t)

    # buckets 16 / 12 = 1.333…: 1.0 keeps group size 12 (fails), 1.34 is the first hundredth above
    assert threshold_candidates(12, 16) == [1.0, 1.34]
    a = to_data(advise_vllm(p, {t: at(t) for t in vllm_thresholds(p)}, target_concurrency=8))
    assert a["threshold"] == 1.34 and a["group_size"] == 16 and "avoids the failure" in a["reason"]
    # vLLM has no flag for it: the advice is a code change, kvplan's --threshold simulates it
    assert "flag" not in a and "vllm/v1/core/kv_cache_utils.py" in a["code_change"]
    assert "vLLM has no flag" in a["code_change"] and a["kvplan_flag"] == "--threshold 1.34"
    # neighbours: 1.33 still fails, 1.34 and 1.35 start with the same grouping
    assert not at(1.33).starts and at(1.34).starts and at(1.35).group_size == 16
    assert a["reaches_target"] is True  # 8.88 ≥ 8


def test_vllm_threshold_minimises_padding_for_gemma3():
    ls = gemma3_27b()
    a = to_data(advise_vllm(plan(ls), {t: plan(ls, threshold=t) for t in vllm_thresholds(plan(ls))}))
    # ≤ 5.2 → group size 10 (8 padding layers); above → 52 (42 padding layers, 0.72 requests)
    assert a["threshold"] == 1.0 and a["num_padding_layers"] == 8
    assert [t["num_padding_layers"] for t in a["tried"]] == [8, 42]


def test_vllm_threshold_not_applicable():
    ls = gpt_oss_20b()
    a = to_data(advise_vllm(plan(ls), {t: plan(ls, threshold=t) for t in vllm_thresholds(plan(ls))}))
    assert not a["applicable"] and "equal bucket counts" in a["reason"]
    assert not to_data(advise_vllm(plan(ls, "pr49472-cost"), {}))["applicable"]


def test_advise_bundle():
    ls = gemma3_27b()
    a = to_data(compare(layer_costs(ls), GEMMA3, Inputs(BUDGET, L128K, target_concurrency=3)).advice)
    assert a["vllm"] is None  # no plan given
    # llama.cpp: 3 sequences of 128k fit in 40 GiB (see test_engines_llamacpp), none with --swa-full;
    # unified: SWA pad256(3 · 1024 + 512) = 3584 cells; non-unified 3 · 1536 = 4608: unified wins the tie
    lc = a["llamacpp"]
    assert (lc["n_seq"], lc["n_seq_with_swa_full"], lc["kv_unified"]) == (3, 0, True)
    # the row already runs -np 3 (the target concurrency) per slot, which serves 3: no change to offer
    assert lc["flags"] is None and lc["default_requests"] == 3 and lc["reaches_target"] is True
    # from llama-server's default (-np auto: 1 request of 128k) the advice gains 2
    auto = to_data(compare(layer_costs(ls), GEMMA3, Inputs(BUDGET, L128K)).advice)["llamacpp"]
    assert auto["flags"] == "-c 393216 -np 3 --kv-unified" and (auto["default_requests"], auto["gain_requests"]) == (1, 2)
