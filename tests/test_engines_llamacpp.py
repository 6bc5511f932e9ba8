"""llama.cpp's iSWA cache: the worked numbers of engines.md §3.4 (f16/bf16, n_ubatch 512), and the
rules of llama.cpp 0c1e57098 (n_ctx padding, per-stream caches without a unified KV cache,
llama-server's slot defaults). tests/test_engines_llamacpp_golden.py checks the same formulas
against that build's own numbers."""

from __future__ import annotations

from factories import gdn, gemma3_27b, gpt_oss_20b, layers, full
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.llamacpp import cache_sizes, llamacpp_model, pad256, server_slots
from kvplan.units import GiB, MiB

L128K = 131072


def test_pad256():
    assert (pad256(640), pad256(1536), pad256(1537), pad256(4608)) == (768, 1536, 1792, 4608)


def test_gemma3_27b_one_sequence():
    c = cache_sizes(layer_costs(gemma3_27b()), n_ctx=L128K)
    # base: 10 full layers · 131072 cells · 8192 B = 10 GiB
    assert (c.base_cells, c.base_bytes) == (L128K, 10 * GiB)
    # SWA: pad256(min(131072, 1024 · 1 + 512)) = 1536 cells; 52 · 1536 · 8192 B = 624 MiB
    assert (c.swa_cells, c.swa_bytes) == (1536, 624 * MiB)
    # 10,737,418,240 + 654,311,424 = 11,391,729,664 B ≈ 10.6 GiB
    assert c.total_bytes == 11_391_729_664 and f"{c.total_bytes / GiB:.1f}" == "10.6"


def test_gemma3_27b_swa_full():
    # --swa-full: every SWA layer keeps n_ctx cells: 62 · 131072 · 8192 B = 62 GiB
    c = cache_sizes(layer_costs(gemma3_27b()), n_ctx=L128K, swa_full=True)
    assert c.swa_cells == L128K and c.total_bytes == 62 * GiB


def test_gpt_oss_20b_one_sequence():
    c = cache_sizes(layer_costs(gpt_oss_20b()), n_ctx=L128K)
    # base 12 · 131072 · 2048 B = 3 GiB; SWA pad256(128 + 512) = 768 cells, 12 · 768 · 2048 B = 18 MiB
    assert (c.base_bytes, c.swa_cells, c.swa_bytes) == (3 * GiB, 768, 18 * MiB)
    assert f"{c.total_bytes / GiB:.2f}" == "3.02"


def test_unified_swa_cells_grow_with_sequences():
    # 4 sequences (unified KV): pad256(min(4 · 131072, 1024 · 4 + 512)) = pad256(4608) = 4608 cells
    c = cache_sizes(layer_costs(gemma3_27b()), n_ctx=4 * L128K, n_seq=4)
    assert (c.base_cells, c.swa_cells) == (4 * L128K, 4608)


def test_fit_at_40_gib():
    r = llamacpp_model(layer_costs(gemma3_27b()), 40 * GiB, L128K)
    assert r.starts and r.n_seq == 1
    # n_seq = 3: base 3 · 10 GiB + SWA pad256(3 · 1024 + 512) = 3584 cells · 425,984 B = 1.42 GiB → fits;
    # n_seq = 4: 40 GiB + SWA > 40 GiB → does not
    assert r.max_n_seq == 3
    # at n_seq 1: (40 GiB − 1536 · 425,984) // 81,920 = 516,300 cells, but llama.cpp pads n_ctx up to a
    # multiple of 256 (516,352 would overrun), so the largest n_ctx is 516,300 // 256 · 256 = 516,096
    assert (40 * GiB - 1536 * 425_984) // 81_920 == 516_300
    assert r.max_n_ctx_tokens == 516_096 and r.max_n_ctx_tokens % 256 == 0
    many = llamacpp_model(layer_costs(gemma3_27b()), 40 * GiB, L128K, n_seq=4)
    assert not many.starts and "failed to allocate buffer for kv cache" in many.failure


def test_recurrent_state_is_separate():
    # Qwen3-Next-like: GDN state (3 · 8192 + 32 · 128 · 128) elements, kept in f32 by llama.cpp whatever the
    # model dtype (recurrent_type_k/v = GGML_TYPE_F32): 548,864 · 4 B = 2,195,456 B per layer per sequence
    ls = layers([gdn()] * 3 + [full(2, 256)])
    c = cache_sizes(layer_costs(ls), n_ctx=2 * 4096, n_seq=2)
    assert c.recurrent_bytes == 2 * 3 * 2_195_456
    assert c.base_bytes == 2 * 4096 * 2 * 512 * 2 and c.swa_cells == 0


def test_one_configuration_per_row():
    # llama-server's default (-np auto): 4 unified slots sharing n_ctx = L serve 1 request of L at once,
    # whatever the largest -np that would fit (the advice); --no-kv-unified does not change -np auto
    from kvplan.engines.llamacpp import server_slots

    r = llamacpp_model(layer_costs(gpt_oss_20b()), 40 * GiB, L128K, n_seq=4, kv_unified=True, n_ctx=L128K)
    assert r.starts and r.max_concurrency == 1.0 and r.max_n_seq > 4
    assert server_slots(None, False)[:2] == (4, True)
    # an explicit -np 3 per slot: n_ctx = 3 · L, 3 requests; -np 4 for gemma-3-27b does not allocate: 0
    assert llamacpp_model(layer_costs(gemma3_27b()), 40 * GiB, L128K, n_seq=3, kv_unified=False).max_concurrency == 3
    assert llamacpp_model(layer_costs(gemma3_27b()), 40 * GiB, L128K, n_seq=4, kv_unified=False).max_concurrency == 0


def test_n_ctx_is_padded_to_256():
    # 4000 → 4096 cells in the base cache
    c = cache_sizes(layer_costs(gpt_oss_20b()), n_ctx=4000)
    assert (c.n_ctx, c.base_cells) == (4096, 4096)


def test_non_unified_streams():
    # -np 4 without --kv-unified, n_ctx 4 · 131072: four streams of n_ctx_seq = pad256(524288 / 4) = 131072
    # base cells and pad256(min(131072, 1024 + 512)) = 1536 SWA cells each (the window once per stream)
    c = cache_sizes(layer_costs(gemma3_27b()), n_ctx=4 * L128K, n_seq=4, kv_unified=False)
    assert (c.n_stream, c.n_ctx_seq, c.base_cells, c.swa_cells) == (4, L128K, L128K, 1536)
    assert c.base_bytes == 4 * 10 * GiB and c.swa_bytes == 4 * 1536 * 52 * 8192
    # 16384 / 3 = 5461 → pad256 = 5632 cells per stream; n_ctx becomes 3 · 5632 = 16,896
    c3 = cache_sizes(layer_costs(gpt_oss_20b()), n_ctx=16384, n_seq=3, kv_unified=False)
    assert (c3.n_ctx_seq, c3.n_ctx) == (5632, 16_896)


def test_n_ubatch_is_capped_by_the_requested_n_ctx():
    # n_ctx 300: n_batch = min(300, 2048) = 300, n_ubatch = min(512, 300) = 300; n_ctx → 512 cells;
    # SWA pad256(min(512, 128 + 300)) = 512
    c = cache_sizes(layer_costs(gpt_oss_20b()), n_ctx=300)
    assert (c.n_ctx, c.n_ubatch, c.swa_cells) == (512, 300, 512)


def test_server_slot_defaults():
    # tools/server/server.cpp: -np auto → 4 slots, unified; explicit -np N → non-unified unless --kv-unified
    assert server_slots(None, None)[:2] == (4, True)
    assert server_slots(8, None)[:2] == (8, False)
    assert server_slots(8, True)[:2] == (8, True)


def test_gpt_oss_largest_n_ctx_is_a_multiple_of_256():
    # one sequence, 40 GiB: base 12 · 2048 = 24,576 B per cell, SWA 768 cells · 24,576 B = 18 MiB;
    # (40 GiB − 18 MiB) // 24,576 = 1,746,858 cells, not a multiple of 256: llama.cpp pads it to
    # 6824 · 256 = 1,746,944 and overruns by 2 MiB; the largest that fits is 6823 · 256 = 1,746,688
    r = llamacpp_model(layer_costs(gpt_oss_20b()), 40 * GiB, L128K)
    assert (40 * GiB - 768 * 24_576) // 24_576 == 1_746_858
    assert r.max_n_ctx_tokens == 1_746_688
    over = cache_sizes(layer_costs(gpt_oss_20b()), n_ctx=1_746_858)
    assert over.n_ctx == 1_746_944 and over.total_bytes - 40 * GiB == 2 * MiB
