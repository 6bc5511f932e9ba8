"""SGLang's hybrid SWA pool on hand-built specs: the worked numbers of engines.md §3.2, and the
admission / steady-decode needs derived by hand from the sglang 0.5.23 wheel
(``model_executor/pool_configurator.py``, ``mem_cache/prefill_budget.py``,
``managers/schedule_batch.py``, ``environ.py``).

Budget 40 GiB = 42,949,672,960 B, bf16, L = 131072. One token costs a layer
``heads · 2 (K, V) · head_size · 2 B``: gpt-oss-20b 8 · 2 · 64 · 2 = 2048 B,
gemma-3-27b 16 · 2 · 128 · 2 = 8192 B.
"""

from __future__ import annotations

import pytest

from factories import full, gemma3_27b, gpt_oss_20b, layers, sw
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.sglang import NOT_ENOUGH_MEMORY, sglang_model
from kvplan.units import GiB

L128K = 131072
BUDGET = 40 * GiB
GPT_OSS = "GptOssForCausalLM"
GEMMA3 = "Gemma3ForConditionalGeneration"
GEMMA4 = "Gemma4ForConditionalGeneration"  # allowlisted: "gemma-3 as if SGLang enabled the split pool"


def model(ls, arch, r=0.8, **kw):
    """SGLang started with ``--context-length 262144`` (above the workload), so the 131,072-token
    prompt passes validate_input_length and the pools decide; see test_prompt_of_the_whole_context."""
    kw.setdefault("context_len_tokens", 2 * L128K)
    return sglang_model(layer_costs(ls), arch, BUDGET, L128K, swa_full_tokens_ratio=r, **kw)


def test_prompt_of_the_whole_context_is_refused():
    # tp_worker.py: max_req_input_len = min(context_len − 1, pool − 1) − 5 = 131,066; validate_input_length
    # refuses len >= 131,066, so the longest prompt is 131,065 and a 131,072-token prompt is refused
    r = model(gpt_oss_20b(), GPT_OSS, context_len_tokens=L128K)
    assert r.longest_prompt_tokens == 131_065 and r.max_concurrency == 0
    assert any("validate_input_length" in n for n in r.notes)
    assert model(gpt_oss_20b(), GPT_OSS, context_len_tokens=L128K, prompt_len_tokens=131_065).max_concurrency == 7


def test_gpt_oss_20b_default_ratio():
    # F = S = 12 layers · 2048 B = 24576 B; F + 0.8·S = 44,236.8 B (43.2 KiB per full token)
    # full = int(42,949,672,960 / 44,236.8) = int(970,903.7) = 970,903; swa = int(970,903 · 0.8) = 776,722
    r = model(gpt_oss_20b(), GPT_OSS)
    assert r.hybrid_swa_memory
    assert (r.full_bytes_per_token, r.swa_bytes_per_token) == (12 * 2048, 12 * 2048)
    assert (r.full_tokens, r.swa_tokens) == (970_903, 776_722)
    # steady decode (compute_swa_request_cap): a request holds W + SGLANG_SWA_EVICTION_INTERVAL + page + a
    # decode page = 128 + 128 + 1 + 1 = 258 SWA tokens; the overlap scheduler keeps 2 · 8192 + 1 = 16,385 more
    assert r.full_need_tokens == L128K and r.swa_need_tokens == 258 and r.swa_in_flight_tokens == 16_385
    # full pool binds: 970,903 / 131,072 = 7.41 (SWA: (776,722 − 16,385) / 258 = 2947)
    assert f"{float(r.steady_concurrency):.2f}" == "7.41"
    # admission: request n needs L < what the n − 1 before it left, each reserving 131,072 + 1 (page):
    # (970,903 − 131,072 − 1) // 131,073 + 1 = 7 whole requests
    assert r.admission_concurrency == 7 and r.max_concurrency == 7.0
    assert r.longest_prompt_tokens == 262_137  # min(context_len 262,144, pool 970,903) − 7 (validate_input_length)
    assert r.starts and r.prefill_fits


def test_gpt_oss_20b_ratio_0_1():
    # F + 0.1·S = 27,033.6 B (26.4 KiB); full = int(1,588,751.5) = 1,588,751; swa = int(158,875.1) = 158,875
    r = model(gpt_oss_20b(), GPT_OSS, r=0.1)
    assert (r.full_tokens, r.swa_tokens) == (1_588_751, 158_875)
    assert f"{float(r.steady_concurrency):.1f}" == "12.1"  # 1,588,751 / 131,072
    # admission (1,588,751 − 131,073) // 131,073 + 1 = 12
    assert r.admission_concurrency == 12 and r.max_concurrency == 12.0


def test_gpt_oss_13_requests_need_a_ratio_of_0_0115():
    # 13 decoding requests need 13 · 258 + 16,385 = 19,739 SWA tokens (compute_swa_request_cap).
    # r 0.0115: full int(42,949,672,960 // 24,858.624) = 1,727,757, swa int(1,727,757 · 0.0115) = 19,869 → 13
    ok = model(gpt_oss_20b(), GPT_OSS, r=0.0115)
    assert (ok.full_tokens, ok.swa_tokens) == (1_727_757, 19_869) and ok.max_concurrency == 13.0
    # r 0.0114: swa 19,698 < 19,739: (19,698 − 16,385) / 258 = 12.84 requests decode at once
    short = model(gpt_oss_20b(), GPT_OSS, r=0.0114)
    assert short.swa_tokens == 19_698 and f"{short.max_concurrency:.2f}" == "12.84"
    # r 0.005 (kvplan's old advice): 8,694 SWA tokens, below the two chunks in flight
    assert model(gpt_oss_20b(), GPT_OSS, r=0.005).max_concurrency == 0


def test_overlap_and_eviction_interval():
    # --disable-overlap-schedule: one chunk in flight, 8192 + 1 tokens
    r = model(gpt_oss_20b(), GPT_OSS, r=0.0115, disable_overlap_schedule=True)
    assert r.swa_in_flight_tokens == 8_193
    # SGLANG_SWA_EVICTION_INTERVAL=1: 128 + 1 + 1 + 1 = 131 SWA tokens per request
    assert model(gpt_oss_20b(), GPT_OSS, swa_eviction_interval=1).swa_need_tokens == 131


def test_gemma3_runs_with_the_hybrid_pool_disabled():
    # Gemma 2/3 are forced to --disable-hybrid-swa-memory: 62 layers · 8192 B = 507,904 B (496 KiB) per token
    # tokens = 42,949,672,960 // 507,904 = 84,562; 84,562 / 131,072 = 0.65 requests: one does not fit
    r = model(gemma3_27b(), GEMMA3)
    assert not r.hybrid_swa_memory and "disable-hybrid-swa-memory" in r.reason
    assert r.full_bytes_per_token == 62 * 8192
    assert (r.full_tokens, r.swa_tokens) == (84_562, None)
    assert f"{float(r.steady_concurrency):.2f}" == "0.65"
    # the longest prompt is min(262,144, 84,562) − 7 = 84,555 tokens: a 131,072-token prompt is never admitted
    assert r.longest_prompt_tokens == 84_555 and r.admission_concurrency == 0 and r.max_concurrency == 0
    assert r.starts and any("caps the request length" in n for n in r.notes)
    # the ratio changes nothing when the split pool is off
    assert model(gemma3_27b(), GEMMA3, r=0.1).full_tokens == 84_562


@pytest.mark.parametrize("ratio, full_tokens, swa_tokens, steady, conc", [
    # F = 10 · 8192 = 81,920 B, S = 52 · 8192 = 425,984 B
    # r 0.8: F + 0.8·S = 422,707.2 B (412.8 KiB) → full int(101,606.4) = 101,606, swa int(81,284.8) = 81,284;
    # 101,606 < 131,072: no full-length request is admitted
    (0.8, 101_606, 81_284, "0.78", 0.0),
    # r 0.1: F + 0.1·S = 124,518.4 B (121.6 KiB) → full int(344,926.6) = 344,926, swa int(34,492.6) = 34,492;
    # steady 344,926 / 131,072 = 2.63, admission (344,926 − 131,073) // 131,073 + 1 = 2
    (0.1, 344_926, 34_492, "2.63", 2.0),
])
def test_gemma3_if_sglang_enabled_the_split_pool(ratio, full_tokens, swa_tokens, steady, conc):
    r = model(gemma3_27b(), GEMMA4, r=ratio)
    assert r.hybrid_swa_memory
    assert (r.full_tokens, r.swa_tokens) == (full_tokens, swa_tokens)
    assert f"{float(r.steady_concurrency):.2f}" == steady and r.max_concurrency == conc


def test_architecture_not_on_the_allowlist_pays_full():
    r = model(gpt_oss_20b(), "MistralForCausalLM")
    assert not r.hybrid_swa_memory and "allowlist" in r.reason
    assert r.full_tokens == BUDGET // (24 * 2048)  # 873,813: every layer holds every token


def test_drafter_layers_join_the_full_term():
    # gpt-oss-20b + 4 full drafter layers: F = 16 · 2048 = 32,768 B, S = 12 · 2048
    # full = int(42,949,672,960 // (32,768 + 0.8 · 24,576)): exactly 819,200 on paper, but SGLang divides by a
    # float (0.8 · 24,576 = 19,660.800000000003 in binary), so floor division gives 819,199
    r = model(gpt_oss_20b(4), GPT_OSS)
    assert (r.num_full_layers, r.num_swa_layers) == (16, 12)
    assert r.full_tokens == 819_199
    # a sliding drafter layer is counted in the full pool too
    ls = gpt_oss_20b() + layers([sw(128)], first_drafter=0, name="drafter.{i}")
    assert model(ls, GPT_OSS).num_full_layers == 13


def test_page_rounding():
    # page 64: full 970,903 → 970,880 (= 15,170 · 64); swa int(970,903 · 0.8) = 776,722 → 776,704
    r = model(gpt_oss_20b(), GPT_OSS, page_size=64)
    assert (r.full_tokens, r.swa_tokens) == (970_880, 776_704)
    # per request: cdiv(131072, 64) · 64 full tokens; 128 + 128 + 64 + 64 = 384 SWA tokens
    assert (r.full_need_tokens, r.swa_need_tokens) == (131_072, 384)


def test_too_small_swa_pool_fails_at_start_and_small_ratio_stalls_prefill():
    # r = 0.0001: swa = int(1,747,451 · 0.0001) = 174 tokens > 128 + 1: starts, but 174 < 128 + 8192 + 1:
    # SGLang shrinks the prefill chunks; below its own decode worst case nothing is counted as served
    r = model(gpt_oss_20b(), GPT_OSS, r=0.0001)
    assert r.swa_tokens == 174 and r.starts and r.prefill_fits is False and r.max_concurrency == 0
    # a 1 MiB budget: full = int(1,048,576 / 44,236.8) = 23, swa = 18 < 129 → the engine does not start
    tiny = sglang_model(layer_costs(gpt_oss_20b()), GPT_OSS, 1 << 20, L128K)
    assert (tiny.full_tokens, tiny.swa_tokens) == (23, 18)
    assert not tiny.starts and "SWA pool (18 tokens) cannot hold even one request" in tiny.failure
    # 1000 B: the SWA pool (0 tokens) is validated before MemoryPoolConfig's "Not enough memory" (as SGLang
    # 0.5.23 raises it, tests/golden/sglang); a one-pool model gets "Not enough memory"
    zero = sglang_model(layer_costs(gpt_oss_20b()), GPT_OSS, 1000, L128K)
    assert zero.failure.startswith("SWA pool (0 tokens) cannot hold even one request")
    assert sglang_model(layer_costs(layers([full()] * 4)), "LlamaForCausalLM", 1000, L128K).failure == NOT_ENOUGH_MEMORY


def test_reserved_per_request_is_pool_over_concurrency():
    # non-hybrid, 4 full layers of 2048 B: 42,949,672,960 // 8192 = 5,242,880 tokens; steady 40 requests,
    # admission (5,242,880 − 131,073) // 131,073 + 1 = 39 (each reserves L + a page): 39 whole requests,
    # so one request costs the pool's bytes / 39
    ls = layers([full()] * 4)
    r = sglang_model(layer_costs(ls), "LlamaForCausalLM", BUDGET, L128K, context_len_tokens=2 * L128K)
    assert (r.full_tokens, r.steady_concurrency, r.admission_concurrency) == (5_242_880, 40, 39)
    assert r.reserved_per_request_bytes == -(-(5_242_880 * 8192) // 39)


def test_max_total_tokens_caps_the_pools():
    # --max-total-tokens (sglang 0.5.23 arg_groups/fields/schedule.py l.39): config_from_budget
    # (mem_cache/kv_cache_configurator.py l.3192-3227) takes _apply_token_constraints (l.3090-3105),
    # min(profiled full pool, cap); when that changes the count, HybridSWAPoolConfigurator solves again from it
    # (_solve_pool_sizes, model_executor/pool_configurator.py l.859-893): full = align(cap), swa = align(int(full · r)).
    # gpt-oss-20b, r 0.8, cap 500,000, page 1: the profiled 970,903 / 776,722 become 500,000 / int(400,000.0) = 400,000
    r = model(gpt_oss_20b(), GPT_OSS, max_total_tokens=500_000)
    assert (r.full_tokens, r.swa_tokens) == (500_000, 400_000)
    # the full pool binds: 500,000 / 131,072 = 3.81; admission (500,000 − 131,072 − 1) // 131,073 + 1 = 2 + 1 = 3
    assert f"{float(r.steady_concurrency):.2f}" == "3.81" and r.admission_concurrency == 3 and r.max_concurrency == 3
    assert r.pool_bytes == 500_000 * 24_576 + 400_000 * 24_576
    assert "--max-total-tokens 500,000 caps the full pool at 500,000 tokens (_apply_token_constraints), " \
           "the SWA pool at 400,000" in r.notes
    # page 16, r 0.33, cap 100,007: full = 100,007 − 100,007 % 16 (7) = 100,000;
    # swa = int(100,000 · 0.33) = 33,000, aligned down: 33,000 − 33,000 % 16 (8) = 32,992
    r = model(gpt_oss_20b(), GPT_OSS, r=0.33, page_size=16, max_total_tokens=100_007)
    assert (r.full_tokens, r.swa_tokens) == (100_000, 32_992)
    # a cap above the profiled pool changes nothing (SGLang warns and keeps the profiled value)
    r = model(gpt_oss_20b(), GPT_OSS, max_total_tokens=2_000_000)
    assert (r.full_tokens, r.swa_tokens) == (970_903, 776_722) and not any("--max-total-tokens" in n for n in r.notes)
    # cap 150: swa = int(150 · 0.8) = 120 ≤ W + page = 128 + 1: validate_swa_pool_size refuses to start
    r = model(gpt_oss_20b(), GPT_OSS, max_total_tokens=150)
    assert not r.starts and r.failure.startswith("SWA pool (120 tokens) cannot hold even one request")
    # one pool (Gemma 3, hybrid SWA forced off; DefaultPoolConfigurator l.649-653): profiled 84,562, capped 50,000
    r = model(gemma3_27b(), GEMMA3, max_total_tokens=50_000)
    assert (r.full_tokens, r.swa_tokens) == (50_000, None)


def test_max_total_tokens_in_compare():
    from kvplan.engines.lower_bound import lower_bound
    from kvplan.engines.registry import compare_inputs
    from kvplan.engines.sglang import ENGINE, sglang_row
    from kvplan.results import to_data

    costs = layer_costs(gpt_oss_20b())
    inputs = compare_inputs(BUDGET, L128K, sglang_max_total_tokens=500_000)
    row = sglang_row(costs, GPT_OSS, inputs, lower_bound(costs, L128K, BUDGET))
    assert row.kv_tokens == 500_000 and row.knobs.max_total_tokens == 500_000
    assert ENGINE.knobs_text(to_data(row)) == "--swa-full-tokens-ratio 0.8, page 1, --max-total-tokens 500,000"
