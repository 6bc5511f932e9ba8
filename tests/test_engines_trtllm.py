"""TensorRT-LLM's variable sliding window attention: the worked numbers of engines.md §3.3.

Budget 40 GiB, equal shares (one half per window), 32 tokens per block, L = 131072 (the full
layers' window is max_seq_len = L).
"""

from __future__ import annotations

import pytest

from factories import full, gemma3_27b, gpt_oss_20b, layers, sw
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.trtllm import adjust_window_sizes, parse_shares, trtllm_model
from kvplan.errors import OptionError
from kvplan.units import GiB

L128K = 131072
BUDGET = 40 * GiB


def model(ls, budget=BUDGET, **kw):
    return trtllm_model(layer_costs(ls), budget, L128K, **kw)


def test_gemma3_27b_equal_shares():
    r = model(gemma3_27b())
    swa, fullp = r.pools
    # window 1024: 52 layers · 8192 B = 425,984 B per token; 20 GiB / 425,984 = 50,412.3 → 50,412 tokens,
    # 50,412 // 32 = 1,575 blocks
    assert (swa.window_tokens, swa.num_layers, swa.bytes_per_token) == (1024, 52, 425_984)
    assert (swa.capacity_tokens, swa.num_blocks) == (50_412, 1_575)
    # full window (131072): 10 · 8192 = 81,920 B per token; 20 GiB / 81,920 = 262,144 tokens, 8,192 blocks
    assert (fullp.window_tokens, fullp.capacity_tokens, fullp.num_blocks) == (L128K, 262_144, 8_192)
    # per request: window pool cdiv(1024, 32) + 1 = 33 blocks; full pool 131072 / 32 = 4096 blocks
    assert (swa.blocks_per_request, fullp.blocks_per_request) == (33, 4096)
    # full pool binds: 8192 / 4096 = 2 requests of 128k (the window pool could serve 1575 / 33 = 47.7)
    assert r.max_concurrency == 2.0
    assert r.kv_tokens == 262_144


def test_gpt_oss_20b_equal_shares():
    # each pool: 12 layers · 2048 B = 24,576 B per token; 20 GiB / 24,576 = 873,813 tokens, 27,306 blocks
    r = model(gpt_oss_20b())
    assert [(p.window_tokens, p.capacity_tokens, p.num_blocks) for p in r.pools] == [
        (128, 873_813, 27_306), (L128K, 873_813, 27_306)]
    # 27,306 / 4096 = 6.67 requests of 128k; the 128-token pool holds 27,306 / 5 = 5461 windows
    assert f"{r.max_concurrency:.2f}" == "6.67"


def test_given_shares_in_ascending_window_order():
    # TRTLLM_WINDOW_SIZE_SHARES=0.1,0.9: window 1024 gets 4 GiB → 4 GiB / 425,984 = 10,082 tokens, 315 blocks;
    # full gets 36 GiB → 471,859 tokens, 14,745 blocks → 14,745 / 4096 = 3.6 requests
    r = model(gemma3_27b(), window_shares=(0.1, 0.9))
    assert [(p.capacity_tokens, p.num_blocks) for p in r.pools] == [(10_082, 315), (471_859, 14_745)]
    assert f"{r.max_concurrency:.2f}" == "3.60"
    assert r.shares_given


def test_share_errors_mirror_tensorrt_llm_asserts():
    with pytest.raises(OptionError, match="must match|2 window"):
        model(gemma3_27b(), window_shares=(1.0,))
    with pytest.raises(OptionError, match="sum to 1.0"):
        model(gemma3_27b(), window_shares=(0.2, 0.9))
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
