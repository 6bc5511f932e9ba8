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


# --- Mamba hybrids (MambaHybridCacheManager) --------------------------------------------------------------
# TensorRT-LLM 1.2.0rc2 (b35ac1b6) _torch/pyexecutor/_util.py: Qwen3-Next and Nemotron-H get MambaHybridCacheManager,
# whose __init__ first asserts `not kv_cache_config.enable_block_reuse` (on by default), then MambaCacheManager
# allocates conv_states [layers, max_batch_size, conv_dim, d_conv - 1] in the model dtype and ssm_states
# [layers, max_batch_size, nheads, head_dim, d_state] in mamba_ssm_cache_dtype ("auto": the model dtype, bf16),
# conv_dim = head_dim · nheads + 2 · n_groups · d_state; max_batch_size 2048 by default. The state is allocated
# before the KV pool, which gets the rest: tokens = int(rest / bytes per token), blocks = ceil(tokens / 32).
#
# Qwen3-Next-80B-A3B (config.json): d_state = linear_key_head_dim 128, d_conv = linear_conv_kernel_dim 4,
# nheads = linear_num_value_heads 32, n_groups = linear_num_key_heads 16, head_dim = linear_value_head_dim 128,
# 36 mamba layers (48 // 4 · 3). conv_dim = 128 · 32 + 2 · 16 · 128 = 8192: conv 8192 · 3 · 2 B = 49,152 B,
# ssm 32 · 128 · 128 · 2 B = 1,048,576 B, 1,097,728 B a layer, · 36 = 39,518,208 B per request.
# Attention: 12 full layers · 2 KV heads · 256 · 2 (K, V) · 2 B = 24,576 B per token; L = 262,144 = 8,192 blocks.
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"
L256K = 262_144


def qwen3_next(**kw):
    from kvplan.model.layout import build_model_layout

    return trtllm_model(layer_costs(build_model_layout(QWEN3_NEXT).layers), BUDGET, L256K, **kw)


def test_mamba_hybrid_defaults_fail_the_block_reuse_assert():
    r = qwen3_next()
    assert r.state_bytes_per_request == 39_518_208
    assert not r.starts and r.max_concurrency == 0 and r.admission_concurrency == 0
    assert r.failure == "mamba hybrid cache requires block reuse to be disabled in KV cache config"
    assert (r.failure_type, r.failure_stage) == ("AssertionError",
                                                 "KvCacheCreator.build_managers → MambaHybridCacheManager.__init__")
    # the fix is the engine's own knob; re-computed, the 2048-request state (below) still does not fit
    assert r.fix.startswith("kv_cache_config.enable_block_reuse=false") and "max_batch_size" in r.fix
    assert r.notes[0].startswith("fix: kv_cache_config.enable_block_reuse=false") and "still fails" in r.notes[0]
    assert r.details().max_batch_size == 2048 and r.details().enable_block_reuse is True


def test_mamba_state_sized_by_max_batch_size_runs_out_of_memory():
    # block reuse off: 2048 · 39,518,208 = 80,933,289,984 B of state, more than the 40 GiB (42,949,672,960 B) budget
    r = qwen3_next(enable_block_reuse=False)
    assert not r.starts and r.failure_type == "torch.OutOfMemoryError"
    assert r.state_bytes == 80_933_289_984 and "80,933,289,984 B" in r.failure and "42,949,672,960 B" in r.failure
    assert "max_batch_size" in r.fix and "enable_block_reuse" not in r.fix


def test_mamba_state_first_then_the_pool():
    # max_batch_size 256: state 256 · 39,518,208 = 10,116,661,248 B; pool 42,949,672,960 − 10,116,661,248 =
    # 32,833,011,712 B / 24,576 = 1,335,978.67 → 1,335,978 tokens, ceil(/32) = 41,750 blocks;
    # 41,750 // 8,192 = 5 requests admitted, steady 41,750 / 8,192 = 5.10
    r = qwen3_next(enable_block_reuse=False, max_batch_size=256)
    assert r.starts and r.state_bytes == 10_116_661_248
    assert [(p.bytes_per_token, p.capacity_tokens, p.num_blocks) for p in r.pools] == [(24_576, 1_335_978, 41_750)]
    assert r.admission_concurrency == 5 and f"{float(r.steady_concurrency):.2f}" == "5.10" and r.max_concurrency == 5
    assert r.kv_tokens == 1_336_000
    # max_batch_size 6: state 237,109,248 B; pool 42,712,563,712 B / 24,576 = 1,737,978 tokens, 54,312 blocks →
    # 6 requests; max_batch_size 7: 42,673,045,504 B → 1,736,370 tokens, 54,262 blocks → still 6 (and 7 > 6)
    assert qwen3_next(enable_block_reuse=False, max_batch_size=6).max_concurrency == 6
    seven = qwen3_next(enable_block_reuse=False, max_batch_size=7)
    assert seven.pools[0].num_blocks == 54_262 and seven.max_concurrency == 6
    # max_batch_size also caps the scheduler: 2 slots admit 2 requests
    assert qwen3_next(enable_block_reuse=False, max_batch_size=2).max_concurrency == 2


def test_mamba_advice_turns_block_reuse_off_and_sizes_max_batch_size():
    from kvplan.engines.trtllm import advise_trtllm
    from kvplan.results import to_data
    from kvplan.engines.compare import CompareInputs
    from kvplan.model.layout import build_model_layout

    costs = layer_costs(build_model_layout(QWEN3_NEXT).layers)
    a = to_data(advise_trtllm(costs, CompareInputs(BUDGET, L256K, target_concurrency=8)))
    assert a["settings"] == {"kv_cache_config.enable_block_reuse": False, "max_batch_size": 6}
    assert a["requests"] == 6 and a["default_requests"] == 0 and not a["reaches_target"]
    # Nemotron-H-56B (config.json): d_state 256, d_conv 4, nheads 256, n_groups 8, head_dim 64, 54 "M" layers:
    # conv_dim = 64 · 256 + 2 · 8 · 256 = 20,480; conv 20,480 · 3 · 2 = 122,880 B, ssm 256 · 64 · 256 · 2 =
    # 8,388,608 B; · 54 = 459,620,352 B per request. Attention 10 · 8 · 128 · 2 · 2 = 40,960 B/token, L = 8192
    # (256 blocks). max_batch_size 54: pool 42,949,672,960 − 24,819,499,008 = 18,130,173,952 B → 442,631 tokens,
    # 13,833 blocks → 54 requests; 55: 17,670,553,600 B → 431,410 tokens, 13,482 blocks → 52 < 55.
    nemo = layer_costs(build_model_layout("nvidia/Nemotron-H-56B-Base-8K").layers)
    n = to_data(advise_trtllm(nemo, CompareInputs(BUDGET, 8192)))
    assert n["settings"]["max_batch_size"] == 54 and n["requests"] == 54
    r = trtllm_model(nemo, BUDGET, 8192, enable_block_reuse=False, max_batch_size=54)
    assert r.state_bytes_per_request == 459_620_352 and r.pools[0].num_blocks == 13_833


def test_max_batch_size_caps_admission_and_is_checked():
    # create_py_executor_instance: the capacity scheduler holds max_batch_size requests (gpt-oss-20b admits 6 above)
    assert model(gpt_oss_20b(), max_batch_size=4).admission_concurrency == 4
    with pytest.raises(OptionError, match="max-batch-size"):
        model(gpt_oss_20b(), max_batch_size=0)
