"""vLLM grouping proposals (not shipped): each rule on the cases its PR names, and end to end
through ``simulate``. 40 GiB, L = 131072, bf16, block 16; vllm-latest everywhere else
(async scheduling: sliding groups reserve cdiv(min(W − 1 + 2 · 8192, L), 16) + 1 blocks)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from factories import full, gemma3_27b, gpt_oss_20b, layers, sw
from kvplan.engines.vllm import ERAS, ModelFacts, SimulateOptions, get_era, simulate
from kvplan.engines.vllm.grouping import bucket_layers
from kvplan.engines.vllm.group_size import cost_group_size, gcd_group_size, skip_singletons_group_size, split_cost
from kvplan.engines.vllm.proposals import PROPOSALS
from kvplan.units import GiB

L128K = 131072
EAGLE = ModelFacts(L128K, speculative_method="eagle3")


def run(ls, policy, facts=None, mem=40 * GiB):
    return simulate(ls, (), facts or ModelFacts(L128K), get_era(policy),
                    SimulateOptions(kv_cache_memory_bytes=mem, max_model_len=L128K))


def test_registry_marks_proposals():
    assert set(PROPOSALS) == {"pr56445-gcd", "pr49472-cost", "pr35062-drafter-group", "pr51742-skip-singletons"}
    for name, era in PROPOSALS.items():
        assert get_era(name) is era and era.is_proposal and era.releases == () and era.grouping != "threshold"
        assert "not shipped" in era.description
    assert not any(e.is_proposal for e in ERAS.values())


# --- #56445: gcd --------------------------------------------------------------------------


@pytest.mark.parametrize("counts, size", [
    ([20, 30], 10),   # the PR's case: 2 + 3 groups, no padding (the shipped rule: 20 → 10 padding layers)
    ([10, 16], 2),    # 10 full + 16 sw (DFlash): 5 + 8 groups, no padding (shipped: 4 padding layers)
    ([52, 10], 2),    # gemma-3-27b: 26 + 5 groups
    ([12, 13], 13),   # coprime: the 1.5 rule (13 < 18)
    ([12, 16], 4),    # gpt-oss-20b + P-EAGLE
])
def test_gcd_rule(counts, size):
    assert gcd_group_size(counts, 1.5) == size


def test_gcd_peagle_stripes_the_drafter_and_fails():
    # 12 sliding / 16 full, gcd 4: full bucket → 4 groups [i::4]; drafter layers 24..27 sit at positions
    # 12..15 of the bucket, one in each group → vLLM's drafter check fails
    p = run(gpt_oss_20b(4), "pr56445-gcd", EAGLE)
    assert (p.group_size, p.num_groups, p.num_padding_layers) == (4, 7, 0)
    assert p.drafter_groups() == [3, 4, 5, 6]
    assert p.failure.message == "All drafting layers should belong to the same kv cache group"


def test_gcd_gemma3():
    # 26 sliding groups + 5 full groups of 2: 40 GiB // 131072 // 2 = 163,840 blocks;
    # per request 26 · (cdiv(1023 + 16384, 16) + 1) + 5 · 8192 = 26 · 1089 + 40960 = 69,274
    p = run(gemma3_27b(), "pr56445-gcd")
    assert (p.group_size, p.num_groups, p.num_padding_layers, p.num_blocks) == (2, 31, 0, 163_840)
    assert sum(p.blocks_per_request) == 26 * 1089 + 5 * 8192
    assert p.starts


# --- #49472: cost -------------------------------------------------------------------------


def test_split_cost():
    assert split_cost([52, 10], 10) == (8, 7)   # 6 sliding groups (60 slots) + 1 full
    assert split_cost([52, 10], 13) == (3, 5)   # 4 sliding groups + 1 full group of 13 slots


@pytest.mark.parametrize("counts, size", [
    ([12, 13], 13),    # gpt-oss-20b + EAGLE3: 1 + 2 = 3 beats 12's 11 + 3
    ([12, 16], 16),    # + P-EAGLE: 4 + 2 = 6 beats 4's 0 + 7 and 12's 8 + 3
    ([50, 10], 10),    # clean 5:1: 0 + 6
    ([52, 10], 13),    # gemma-3-27b: 3 + 5 = 8 beats the shipped 10's 8 + 7 = 15
    ([30, 10, 5, 1], 5),   # the #51742 mix: 4 padding + 10 groups = 14; g = 10 costs 14 + 6 = 20
    ([1, 12, 12, 12, 36], 12),  # 1Cat-vLLM's [1, 12, 12, 12, 36]: 11 + 7 = 18
])
def test_cost_rule(counts, size):
    assert cost_group_size(counts) == size
    padding, groups = split_cost(counts, size)
    for g in range(1, max(counts) + 1):  # nothing is cheaper, and a tie keeps fewer groups
        p, n = split_cost(counts, g)
        assert (padding + groups, groups) <= (p + n, n)


def test_cost_gemma3_end_to_end():
    p = run(gemma3_27b(), "pr49472-cost")
    assert (p.group_size, p.num_groups, p.num_padding_layers) == (13, 5, 3)
    assert "Add 3 padding layers, may waste at most 30.00% KV cache memory" in p.logs


# --- #51742: skip singletons --------------------------------------------------------------


def test_skip_singletons_rule():
    assert skip_singletons_group_size([30, 10, 5, 1], 1.5) == 5
    assert skip_singletons_group_size([1, 1], 1.5) == 1


def test_skip_singletons_end_to_end():
    # the PR's shape with attention layers: 30 sliding(128) + 10 full + 5 sliding(4096) + 1 full of another
    # geometry (4 heads × 128: same 32768 B page, its own bucket). Shipped: min 1 → 46 groups of 1.
    # Proposal: min over [30, 10, 5] = 5, 30 ≥ 7.5 → 5: 6 + 2 + 1 + 1 = 10 groups.
    ls = layers([sw(128)] * 30 + [full()] * 10 + [sw(4096)] * 5 + [full(4, 128)])
    assert run(ls, "vllm-latest").num_groups == 46
    p = run(ls, "pr51742-skip-singletons")
    assert (p.group_size, p.num_groups, p.num_padding_layers) == (5, 10, 4)


# --- #35062: drafter-dedicated group ------------------------------------------------------


def test_bucket_layers_dedicated():
    ls = gpt_oss_20b(4)
    specs = {x.name: x.spec for x in ls}
    assert [len(b.layer_names) for b in bucket_layers(specs)] == [12, 16]
    drafter = frozenset(x.name for x in ls if x.source == "drafter")
    assert [len(b.layer_names) for b in bucket_layers(specs, drafter)] == [12, 12, 4]


def test_drafter_group_peagle():
    # target 12 / 12 → group size 12; the 4 drafter layers form their own group (8 padding slots)
    p = run(gpt_oss_20b(4), "pr35062-drafter-group", EAGLE)
    assert (p.group_size, p.num_groups, p.num_padding_layers) == (12, 3, 8)
    assert p.drafter_groups() == [2] and p.starts
    # 40 GiB // 32768 // 12 = 109,226 blocks; per request 1033 + 8192 + 8192 = 17,417 → 6.27
    assert p.num_blocks == 109_226 and p.blocks_per_request == [1033, 8192, 8192]
    assert f"{p.max_concurrency:.2f}" == "6.27"


def test_drafter_group_larger_than_the_target_group():
    # 2 sliding + 2 full target layers, 3 drafter layers: group size max(2, 3) = 3, the drafter never splits
    ls = layers([sw(128), full(), sw(128), full()] + [full()] * 3, first_drafter=4)
    p = run(ls, "pr35062-drafter-group", EAGLE)
    assert p.group_size == 3 and p.drafter_groups() == [2] and p.starts


def test_without_a_drafter_the_drafter_rule_is_the_shipped_rule():
    for ls in (gpt_oss_20b(), gemma3_27b()):
        a, b = run(ls, "vllm-latest"), run(ls, "pr35062-drafter-group")
        assert (a.group_size, a.num_groups, a.num_blocks) == (b.group_size, b.num_groups, b.num_blocks)


def test_threshold_override_reaches_the_fallback():
    era = replace(get_era("pr56445-gcd"), threshold=1.25)
    assert era.is_proposal and era.grouping == "gcd" and era.threshold == 1.25
