"""TensorRT-LLM's variable sliding window attention: pools (engines.md §3.3) and the
scheduler's admission, prefill and steady-decode needs, derived by hand from TensorRT-LLM
1.2.0rc2 (commit b35ac1b6) ``kvCacheManager.cpp`` and ``resource_manager.py``.

``BaseKVCacheManager::calculateMaxNumBlocks`` (blocks rounded up, float32 shares normalised).
Budget 40 GiB, equal shares (one half per window), 32 tokens per block, L = 131072 (the full
layers' window is max_seq_len = L), max_num_tokens 8192, prompt = L unless given.
"""

from __future__ import annotations

import pytest

from factories import full, gemma3_27b, gpt_oss_20b, layers, sw
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.trtllm import MAX_UTILIZATION, adjust_window_sizes, parse_shares, trtllm_model
from kvplan.errors import OptionError
from kvplan.units import GiB

L128K = 131072
BUDGET = 40 * GiB


def model(ls, budget=BUDGET, **kw):
    """VSWA: ``kv_cache_config.max_attention_window`` set to the model's windows (not the default;
    test_default_settings_one_pool covers the default)."""
    kw.setdefault("max_attention_window", True)
    return trtllm_model(layer_costs(ls), budget, L128K, **kw)


def test_default_settings_one_pool():
    """Llama-4-Scout at 40 GiB / 131,072 with 1.2.0rc2's defaults (max_attention_window unset): all 48
    layers attend max_seq_len, 48 · 2 · 8 · 128 · 2 B = 196,608 B per token; 42,949,672,960 / 196,608 =
    218,453.3 → 218,453 tokens, ceilDiv(218,453, 32) = 6,827 blocks; one request needs 4,096: 1 request."""
    from kvplan.model.layout import build_model_layout

    costs = layer_costs(build_model_layout("meta-llama/Llama-4-Scout-17B-16E-Instruct").layers)
    r = trtllm_model(costs, BUDGET, L128K)
    assert [(p.window_tokens, p.bytes_per_token, p.capacity_tokens, p.num_blocks) for p in r.pools] == [
        (L128K, 196_608, 218_453, 6_827)]
    assert r.admission_concurrency == 1 and r.max_concurrency == 1.0
    assert any("enable_chunked_prefill" in n for n in r.notes)
    assert any("max_attention_window unset" in n for n in r.notes)
    # with the model's windows (chunked attention 8192 on 36 layers) VSWA holds more
    assert trtllm_model(costs, BUDGET, L128K, max_attention_window=True).max_concurrency > 1


def test_gemma3_27b_equal_shares():
    r = model(gemma3_27b())
    swa, fullp = r.pools
    # window 1024: 52 layers · 8192 B = 425,984 B per token; 20 GiB / 425,984 = 50,412.3 → 50,412 tokens,
    # ceilDiv(50,412, 32) = 1,576 blocks (calculateMaxNumBlocks rounds up)
    assert (swa.window_tokens, swa.num_layers, swa.bytes_per_token) == (1024, 52, 425_984)
    assert (swa.capacity_tokens, swa.num_blocks) == (50_412, 1_576)
    # full window (131072): 10 · 8192 = 81,920 B per token; 20 GiB / 81,920 = 262,144 tokens, 8,192 blocks
    assert (fullp.window_tokens, fullp.capacity_tokens, fullp.num_blocks) == (L128K, 262_144, 8_192)
    # steady decode: window pool cdiv(1024, 32) + 1 = 33 blocks; full pool 131072 / 32 = 4096 blocks
    assert (swa.blocks_per_request, fullp.blocks_per_request) == (33, 4096)
    assert r.steady_concurrency == 2 and r.kv_tokens == 262_144
    # admission (getRemainingBlocksToCompletion): temp = min(8192, 131071 - 1024) = 8192 in the window pool,
    # ceil(min(131072, 1024 + 8192) / 32) = 288 blocks → 1576 // 288 = 5; full pool (temp 0) 4096 → 8192 // 4096 = 2
    assert (swa.temporary_window_tokens, fullp.temporary_window_tokens) == (8192, 0)
    assert (swa.admission_blocks, fullp.admission_blocks) == (288, 4096) and r.admission_concurrency == 2


def test_gemma3_27b_full_length_prompt_cannot_be_prefilled():
    # addSequence(prompt_len) allocates ceil(131072 / 32) = 4096 blocks in every pool (maxTokenNum =
    # max(W, max_seq_len)); the window pool has 1576: the longest prompt is 1576 · 32 = 50,432 tokens.
    r = model(gemma3_27b())
    swa, _ = r.pools
    assert swa.prefill_blocks == 4096 and r.longest_prompt_tokens == 50_432
    assert r.starts and r.max_concurrency == 0
    assert any("131,072-token prompt cannot be prefilled" in n and "1,576" in n for n in r.notes)
    assert r.stages.to_dict()["prefills_prompt"] is False
    # a 50,432-token prompt fits (1576 blocks) and then 2 requests run (the full pool); one token more does not
    assert model(gemma3_27b(), prompt_len_tokens=50_432).max_concurrency == 2.0
    assert model(gemma3_27b(), prompt_len_tokens=50_433).max_concurrency == 0


def test_gpt_oss_20b_equal_shares():
    # each pool: 12 layers · 2048 B = 24,576 B per token; 20 GiB / 24,576 = 873,813 tokens,
    # ceilDiv(873,813, 32) = 27,307 blocks
    r = model(gpt_oss_20b())
    assert [(p.window_tokens, p.capacity_tokens, p.num_blocks) for p in r.pools] == [
        (128, 873_813, 27_307), (L128K, 873_813, 27_307)]
    # steady: 27,307 / 4096 = 6.67 requests of 128k
    assert f"{float(r.steady_concurrency):.2f}" == "6.67"
    # admission: window pool ceil(min(131072, 128 + 8192) / 32) = 260 blocks (27,307 // 260 = 105),
    # full pool 4096 (27,307 // 4096 = 6): GUARANTEED_NO_EVICT admits 6 whole requests
    assert [p.admission_blocks for p in r.pools] == [260, 4096]
    assert r.admission_concurrency == 6 and r.max_concurrency == 6.0
    # every prompt up to L prefills: 27,307 · 32 = 873,824 ≥ 131,072
    assert r.longest_prompt_tokens == L128K


def test_admission_extra_block_when_decode_crosses_the_window():
    # prompt 100,000 + 31,072 new tokens: window-128 pool total ceil(8320 / 32) = 260, plus one because the
    # request is longer than the window, ceil(131072/32) = 4096 > ceil(100000/32) = 3125 (crosses a block)
    # and 4096 > 260 (crosses the window): 261. The full pool is not sliding: 4096.
    r = model(gpt_oss_20b(), prompt_len_tokens=100_000)
    assert [p.admission_blocks for p in r.pools] == [261, 4096]


def test_max_num_tokens_sets_the_temporary_window():
    # max_num_tokens 2048: temp = min(2048, 131071 - 1024) = 2048 → ceil(3072 / 32) = 96 blocks
    r = model(gemma3_27b(), max_num_tokens=2048)
    assert r.pools[0].admission_blocks == 96


def test_max_utilization_admits_one_step_and_keeps_the_steady_count():
    # getNeededBlocksOneStep, first context chunk, max_new = 0: window pool ceil(min(131072, 128 + 0) / 32) = 4,
    # full pool 4096; MAX_UTILIZATION serves what stays resident: 27,307 / 4096 = 6.67
    r = model(gpt_oss_20b(), scheduler_policy=MAX_UTILIZATION)
    assert [p.admission_blocks for p in r.pools] == [4, 4096] and r.admission_concurrency == 6
    assert f"{r.max_concurrency:.2f}" == "6.67"
    with pytest.raises(OptionError, match="GUARANTEED_NO_EVICT"):
        model(gpt_oss_20b(), scheduler_policy="FIRST_COME")


def test_given_shares_in_ascending_window_order():
    # TRTLLM_WINDOW_SIZE_SHARES=0.1,0.9 (float32 0.1 = 0.100000001, 0.9 = 0.899999976, sum 1.0f): window 1024
    # gets 4 GiB → 4 GiB / 425,984 = 10,082 tokens, ceilDiv → 316 blocks; full gets 36 GiB → 471,859 tokens,
    # 14,746 blocks → 14,746 / 4096 = 3.6 requests
    r = model(gemma3_27b(), window_shares=(0.1, 0.9))
    assert [(p.capacity_tokens, p.num_blocks) for p in r.pools] == [(10_082, 316), (471_859, 14_746)]
    # steady 14,746 / 4096 = 3.60; admission min(316 // 288, 14,746 // 4096) = 1; a 131,072-token prompt needs
    # 4096 blocks in the 316-block window pool: longest prompt 316 · 32 = 10,112
    assert f"{float(r.steady_concurrency):.2f}" == "3.60" and r.admission_concurrency == 1
    assert r.longest_prompt_tokens == 10_112 and r.max_concurrency == 0
    assert r.shares_given


def test_share_errors_mirror_tensorrt_llm_asserts():
    with pytest.raises(OptionError, match="must match|2 window"):
        model(gemma3_27b(), window_shares=(1.0,))
    # 1.2.0rc2 normalises the shares (no sum == 1.0 assert): 0.2,0.9 is 0.2/1.1, 0.9/1.1
    r = model(gemma3_27b(), window_shares=(0.2, 0.9))
    assert [round(p.share, 6) for p in r.pools] == [0.181818, 0.818182]
    assert model(gemma3_27b(), window_shares=(0.4, 0.4)).pools[0].share == 0.5
    with pytest.raises(OptionError, match=r"\[0, 1\]"):
        parse_shares("1.5,0.5")
    with pytest.raises(OptionError):
        parse_shares("0,0")
    with pytest.raises(OptionError):
        parse_shares("a,b")
    assert parse_shares("0.25, 0.75") == (0.25, 0.75)


def test_window_at_least_the_length_joins_the_full_pool():
    # a 200k window at L = 131072 is a full window: one pool
    r = model(layers([sw(200_000), full()]))
    assert [p.window_tokens for p in r.pools] == [L128K]


def test_adjust_window_sizes_when_one_sequence_does_not_fit():
    # gemma-3-27b at 4 GiB: one sequence needs 1024 · 425,984 + 131,072 · 81,920 B > 4 GiB.
    # Window 1024 filled with all 62 layers (507,904 B/token): 1024 tokens, 520,093,696 B;
    # 3,774,873,600 B left for the 10 full layers: 3,774,873,600 // 81,920 = 46,080 more → 47,104.
    windows = {1024: (52, 425_984), L128K: (10, 81_920)}
    assert adjust_window_sizes(windows, 4 * GiB) == [(L128K, 47_104)]
    assert adjust_window_sizes(windows, BUDGET) == []
    r = model(gemma3_27b(), budget=4 * GiB)
    assert r.starts and r.adjusted_windows == ((L128K, 47_104),) and r.max_concurrency < 1
