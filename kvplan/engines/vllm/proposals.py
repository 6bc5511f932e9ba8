"""Grouping rules proposed upstream but not shipped: what-ifs, never the default.

Each proposal is an ``Era`` copied from ``vllm-latest`` (0.33.0) with ``is_proposal=True``
and ``grouping`` naming the rule below; only the group-size choice on the uniform-page path
(reference §3.8) changes, everything else (admission, sizing, logs) is 0.33's.
``plan.simulate`` calls ``group_size_rule(era, layers)`` and hands the returned callable,
``rule(buckets) -> group_size``, to ``grouping.get_kv_cache_groups``.

The rules and where they come from (docs/compare.md has the long form):

- ``pr56445-gcd`` (vllm PR #56445, open): group size = gcd of the bucket counts when that
  gcd is ≥ 2, so every bucket splits evenly and nothing is padded; when the counts are
  coprime (gcd 1, e.g. 12 sliding + 13 full) the shipped 1.5 rule decides.
- ``pr49472-cost`` (vllm PR #49472, open): scan candidate group sizes and keep the one that
  minimises ``padding + padding_per_group · num_groups`` (``padding_per_group`` = 1.0),
  ties to fewer groups. The PR does not list its candidates; kvplan scans every size from 1
  to the largest bucket, which contains every divisor and every bucket count.
- ``pr35062-drafter-group`` (vllm PR #35062, open): drafter layers are taken out before the
  heuristic, which then runs (1.5 rule) on the target's buckets only; the drafter layers
  form their own group(s). kvplan's reading of the tensor layout: the group size is the
  larger of the target's choice and the drafter bucket, so the drafter never splits.
- ``pr51742-skip-singletons`` (vllm PR #51742, open): one-layer buckets are left out of the
  minimum (a DFlash drafter's single full layer made the group size 1), then the 1.5 rule.
"""

from __future__ import annotations

import math
from dataclasses import replace

from kvplan.engines.vllm.eras import ERAS, Era
from kvplan.engines.vllm.grouping import Bucket, choose_group_size
from kvplan.units import cdiv

GCD, COST, DRAFTER_GROUP, SKIP_SINGLETONS = "gcd", "cost", "drafter_group", "skip_singletons"

# PR #49472's default: one padding layer is worth one group less.
PADDING_PER_GROUP = 1.0


def _proposal(name: str, grouping: str, description: str, threshold: float | None = 1.5) -> Era:
    return replace(
        ERAS["vllm-0.33"], name=name, description=description, grouping=grouping, is_proposal=True,
        releases=(), threshold=threshold,
    )


PROPOSALS: dict[str, Era] = {
    era.name: era
    for era in (
        _proposal(
            "pr56445-gcd", GCD,
            "proposal (vllm PR #56445, not shipped): group size = gcd of the bucket counts when >= 2 "
            "(no padding), else the 1.5 rule; 0.33.0 otherwise",
        ),
        _proposal(
            "pr49472-cost", COST,
            "proposal (vllm PR #49472, not shipped): the group size minimising padding layers + 1.0 x "
            "number of groups, ties to fewer groups (no threshold); 0.33.0 otherwise",
            threshold=None,
        ),
        _proposal(
            "pr35062-drafter-group", DRAFTER_GROUP,
            "proposal (vllm PR #35062, not shipped): drafter layers in a dedicated group, the 1.5 rule "
            "on the target's buckets only; 0.33.0 otherwise",
        ),
        _proposal(
            "pr51742-skip-singletons", SKIP_SINGLETONS,
            "proposal (vllm PR #51742, not shipped): one-layer buckets are left out of the minimum, "
            "then the 1.5 rule; 0.33.0 otherwise",
        ),
    )
}


def proposal_names() -> list[str]:
    return list(PROPOSALS)


# --- the rules on bucket counts ----------------------------------------------------------


def gcd_group_size(counts: list[int], threshold: float | None) -> int:
    """#56445. 20 full + 30 sliding: gcd 10 → 2 + 3 groups, no padding (the min rule
    would pad 10 sliding layers). 12 + 13: gcd 1 → the threshold rule (13)."""
    g = math.gcd(*counts)
    return g if g >= 2 else choose_group_size(counts, threshold)


def split_cost(counts: list[int], group_size: int) -> tuple[int, int]:
    """(padding layers, groups) when every bucket splits into cdiv(n, group_size) groups."""
    groups = sum(cdiv(n, group_size) for n in counts)
    return groups * group_size - sum(counts), groups


def cost_group_size(counts: list[int], padding_per_group: float = PADDING_PER_GROUP) -> int:
    """#49472: argmin over g of padding(g) + padding_per_group · groups(g), ties to fewer groups.

    gpt-oss-20b + 4-layer P-EAGLE (12 / 16): g = 16 costs 4 + 2 = 6, g = 4 costs 0 + 7,
    g = 12 costs 8 + 3, so 16 (the shipped 1.5 rule's answer too). gemma-3-27b (52 / 10):
    g = 13 costs 3 + 5 = 8 against 8 + 7 = 15 for the shipped 10."""
    best: tuple[float, int, int] | None = None
    for g in range(1, max(counts) + 1):
        padding, groups = split_cost(counts, g)
        key = (padding + padding_per_group * groups, groups, g)
        if best is None or key[:2] < best[:2]:
            best = key
    assert best is not None
    return best[2]


def skip_singletons_group_size(counts: list[int], threshold: float | None) -> int:
    """#51742: [30 mamba, 10 full, 5 sliding, 1 full] → min over [30, 10, 5] = 5; 30 ≥ 7.5 → 5."""
    return choose_group_size([c for c in counts if c > 1] or counts, threshold)


class _DrafterGroupRule:
    """#35062. ``dedicated_layers`` tells ``bucket_layers`` to keep these layers out of the
    target's buckets; the group size is then chosen on the target's buckets alone."""

    def __init__(self, drafter_names: frozenset[str], threshold: float | None):
        self.dedicated_layers = drafter_names
        self.threshold = threshold

    def __call__(self, buckets: list[Bucket]) -> int:
        target = [len(b.layer_names) for b in buckets if not set(b.layer_names) & self.dedicated_layers]
        drafter = [len(b.layer_names) for b in buckets if set(b.layer_names) & self.dedicated_layers]
        size = choose_group_size(target, self.threshold) if target else max(drafter)
        return max([size, *drafter])


def group_size_rule(era: Era, layers) -> object:
    """The callable ``rule(buckets) -> group_size`` for a proposal era."""
    threshold = era.threshold
    if era.grouping == GCD:
        return lambda buckets: gcd_group_size([len(b.layer_names) for b in buckets], threshold)
    if era.grouping == COST:
        return lambda buckets: cost_group_size([len(b.layer_names) for b in buckets])
    if era.grouping == SKIP_SINGLETONS:
        return lambda buckets: skip_singletons_group_size([len(b.layer_names) for b in buckets], threshold)
    if era.grouping == DRAFTER_GROUP:
        return _DrafterGroupRule(frozenset(ls.name for ls in layers if ls.source == "drafter"), threshold)
    raise ValueError(f"unknown grouping rule {era.grouping!r} in era {era.name}")  # pragma: no cover
