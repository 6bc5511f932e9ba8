"""Capacity as two named figures: vLLM's ``max_concurrency`` (its own formula and log line)
and kvplan's ``steady_state_concurrency`` (docs/capacity.md), derived by hand."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from factories import full, gemma3_27b, gpt_oss_20b, layers, sw
from kvplan.cli.app import ensure_registered

app = ensure_registered()
from kvplan.engines.vllm import ModelFacts, SimulateOptions, get_era, simulate
from kvplan.engines.vllm.sizing import steady_state

GiB = 1 << 30
runner = CliRunner()


def plan(ls, mem_gib, length, policy="vllm-latest", facts=None, **opts):
    return simulate(ls, (), facts or ModelFacts(length), get_era(policy),
                    SimulateOptions(kv_cache_memory_bytes=mem_gib * GiB, max_model_len=length, **opts))


def test_gemma_3_27b_20gib_32k_by_hand():
    # 52 sliding(1024) + 10 full layers, 16 KV heads × 128, bf16, block 16: page 2·16·16·128·2 = 131,072 B.
    # Buckets 52 / 10: 52 ≥ 10 × 1.5, so group size 10: 6 sliding groups + 1 full group, 10 slots.
    # num_blocks = 20 GiB // (10 × 131,072) = 16,384.
    p = plan(gemma3_27b(), 20, 32768)
    assert (p.group_size, p.num_groups, p.num_blocks) == (10, 7, 16384)
    # vLLM 0.33 (async scheduling, V2 runner, PP 1 → 2 batches in flight = 16,384 tokens):
    #   sliding: cdiv(min(1023 + 16384, 32768), 16) + 1 = 1088 + 1 = 1089 blocks per request and group
    #   full:    cdiv(32768, 16) = 2048
    #   max_concurrency = 16384 / (6 × 1089 + 2048) = 16384 / 8582
    assert p.blocks_per_request == [1089] * 6 + [2048]
    assert p.max_concurrency == 16384 / 8582  # 1.909
    assert "Maximum concurrency for 32,768 tokens per request: 1.91x" in p.logs[-1]
    # steady state: past prefill a request holds, per sliding group, cdiv(1023 + 1, 16) + 1 = 65 blocks
    # (the window, the decode step's token, one block of misalignment); per full group the whole
    # length, 2048. The in-flight prefill tokens (16,384) sit in the sliding groups once for the
    # pool: 6 × (1089 − 65) = 6 × 1024 = 6144 blocks. One block is vLLM's null block.
    #   steady_state_concurrency = (16384 − 1 − 6144) / (6 × 65 + 2048) = 10239 / 2438
    assert p.steady.blocks_per_request == (65,) * 6 + (2048,)
    assert p.steady.prefill_reserve_blocks == 6144
    assert p.steady.usable_blocks == 16383
    assert p.steady_state_concurrency == 10239 / 2438  # 4.1997


def test_gemma_3_27b_on_0_18_uses_one_batch():
    # 0.18 reserves window + max_num_batched_tokens: cdiv(1023 + 8192, 16) + 1 = 576 + 1 = 577.
    # 0.18's num_blocks is the same 16,384 (no null block in the check, same grouping).
    p = plan(gemma3_27b(), 20, 32768, policy="vllm-1.5")
    assert p.blocks_per_request == [577] * 6 + [2048]
    # reserve 6 × (577 − 65) = 3072; (16383 − 3072) / 2438
    assert p.steady.prefill_reserve_blocks == 3072
    assert p.steady_state_concurrency == (16383 - 3072) / 2438


def test_speculative_tokens_widen_the_decode_step():
    # gpt-oss-20b + 4 P-EAGLE layers (12 sliding(128) + 16 full, group size 16, page 32,768 B):
    # with 5 speculative tokens a decode step holds 1 + 5 tokens: sliding steady blocks
    # cdiv(127 + 6, 16) + 1 = 9 + 1 = 10 (instead of cdiv(128, 16) + 1 = 9 for one token).
    ls = gpt_oss_20b(num_draft=4)
    facts = ModelFacts(131072, speculative_method="eagle3", num_speculative_tokens=5)
    p = plan(ls, 40, 131072, facts=facts)
    assert p.num_blocks == 40 * GiB // (16 * 32768) == 81920
    assert p.steady.blocks_per_request == (10, 8192)
    # vLLM: cdiv(127 + 16384, 16) + 1 = 1032 + 1 = 1033; reserve 1033 − 10 = 1023
    assert p.blocks_per_request == [1033, 8192]
    assert p.steady.prefill_reserve_blocks == 1023
    assert p.steady_state_concurrency == (81919 - 1023) / 8202


def test_short_requests_cap_the_window_at_the_length():
    # L = 512 < window 1024: a sliding layer holds the whole request, like a full one.
    # vLLM: cdiv(min(1023 + 16384, 512), 16) + 1 = 33; steady: cdiv(min(1024, 512), 16) + 1 = 33; reserve 0.
    p = plan(gemma3_27b(), 20, 512)
    assert p.blocks_per_request == [33] * 6 + [32]
    assert p.steady.blocks_per_request == (33,) * 6 + (32,)
    assert p.steady.prefill_reserve_blocks == 0
    assert p.steady_state_concurrency == 16383 / 230


def test_full_only_model_steady_equals_vllm_less_the_null_block():
    # One full group: both figures count L per request; steady leaves out the null block.
    p = plan(layers([full()] * 32), 8, 32768)
    n = 8 * GiB // (32 * 32768)  # 8192 blocks of 32 pages
    assert p.num_blocks == n and p.blocks_per_request == [2048]
    assert p.max_concurrency == n / 2048 == 4.0
    assert p.steady_state_concurrency == (n - 1) / 2048


def test_steady_state_is_never_above_what_the_pool_holds():
    # no more requests than blocks allow, and no negative figure when the reserve exceeds the pool
    p = plan(layers([sw(4096)] * 20 + [full()] * 4), 1, 131072)
    s = steady_state(3, p.groups, p.workload)
    assert s.concurrency == 0.0
    assert p.steady_state_concurrency >= p.max_concurrency >= 0


def test_json_and_tables_carry_both_figures():
    r = runner.invoke(app, ["simulate", "google/gemma-3-27b-it", "--kv-cache-memory", "20GiB",
                            "--max-model-len", "32768", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    m = json.loads(r.stdout)["memory"]
    # the bundled config, on the default release (0.34.0: block 64, CacheConfig.DEFAULT_BLOCK_SIZE, kept by
    # FLASH_ATTN on the assumed H100; tests/golden/defaults/0.34.0.json): the hand derivation above at 64
    # tokens: page 2·64·16·128·2 = 524,288 B, num_blocks = 20 GiB // (10 × 524,288) = 4096; sliding
    # cdiv(min(1023 + 16384, 32768), 64) + 1 = 273, full 32768 / 64 = 512 → 6 × 273 + 512 = 2150 per request;
    # steady cdiv(1024, 64) + 1 = 17 → 6 × 17 + 512 = 614; reserve 6 × (273 − 17) = 1536;
    # steady_state_concurrency = (4096 − 1 − 1536) / 614 = 2559 / 614
    assert (m["num_blocks"], m["blocks_per_request"], m["steady_blocks_per_request"]) == (4096, 2150, 614)
    assert m["max_concurrency"] == round(4096 / 2150, 6)
    assert m["steady_state_concurrency"] == round(2559 / 614, 6)
    assert m["prefill_reserve_blocks"] == 1536
    r = runner.invoke(app, ["simulate", "google/gemma-3-27b-it", "--kv-cache-memory", "20GiB",
                            "--max-model-len", "32768"])
    assert "max_concurrency (vLLM's figure: worst case)" in r.stdout and "1.91" in r.stdout
    assert "steady_state_concurrency (kvplan's estimate)" in r.stdout and "4.17" in r.stdout


def test_compare_shows_both_for_vllm():
    r = runner.invoke(app, ["compare", "google/gemma-3-27b-it", "--kv-cache-memory", "20GiB",
                            "--target-len", "32768", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    rows = {(e["engine"], e["name"]): e for e in json.loads(r.stdout)["engines"]}
    v = rows[("vllm", "vllm==0.34.0")]  # the default policy: the newest checked release
    # block 64 on the default release (the derivation in test_json_and_tables_carry_both_figures)
    assert (v["max_concurrency"], v["steady_state_concurrency"]) == (round(4096 / 2150, 6), round(2559 / 614, 6))
    lb = rows[("lower_bound", "exact windowed need")]
    assert lb["steady_state_concurrency"] == lb["max_concurrency"]


@pytest.mark.parametrize("limit, passes", [(4.1, True), (4.3, False)])
def test_check_min_steady_concurrency(tmp_path, limit, passes):
    f = tmp_path / "d.yaml"
    f.write_text(
        "deployments:\n"
        "  - name: gemma\n"
        "    model: google/gemma-3-27b-it\n"
        "    kv_cache_memory: 20GiB\n"
        "    max_model_len: 32768\n"
        "    expect:\n"
        "      min_concurrency: 1.9\n"
        f"      min_steady_concurrency: {limit}\n"
    )
    r = runner.invoke(app, ["check", str(f), "--format", "json"])
    assert r.exit_code == (0 if passes else 3), r.stdout + r.stderr
    out = json.loads(r.stdout)
    [dep] = out["deployments"]
    by_key = {o["key"]: o for o in dep["expectations"]}
    assert by_key["min_concurrency"]["passed"] is True
    assert by_key["min_steady_concurrency"]["passed"] is passes
    assert by_key["min_steady_concurrency"]["measured"] == round(2559 / 614, 6)  # block 64, derived above
