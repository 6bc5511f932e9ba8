"""The group size of the uniform-page path (reference §3.8), by the era's rule (``Era.grouping``):
vLLM's shipped threshold rule, and the rules proposed upstream but not shipped (their eras:
``proposals.py``; docs/compare.md has the long form).

``grouping.get_kv_cache_groups`` asks ``group_size_of`` for every era, shipped or proposed, and
nothing here calls back into grouping: the rules read the buckets as their layer names.

- ``threshold`` (shipped): ``group_size = min``, raised to ``max`` when ``max < min · threshold``
  (strict); threshold None (before vLLM PR #29303): always the smallest bucket.
- ``gcd`` (vllm PR #56445, open): group size = gcd of the bucket counts when that gcd is ≥ 2, so
  every bucket splits evenly and nothing is padded; when the counts are coprime (gcd 1, e.g.
  12 sliding + 13 full) the shipped rule decides.
- ``cost`` (vllm PR #49472, open): scan candidate group sizes and keep the one that minimises
  ``padding + padding_per_group · num_groups`` (``padding_per_group`` = 1.0), ties to fewer
  groups. The PR does not list its candidates; kvplan scans every size from 1 to the largest
  bucket, which contains every divisor and every bucket count.
- ``drafter_group`` (vllm PR #35062, open): drafter layers are taken out before the heuristic
  (``dedicated_layers``: grouping buckets them apart), which then runs (the shipped rule) on the
  target's buckets only; the drafter layers form their own group(s). kvplan's reading of the
  tensor layout: the group size is the larger of the target's choice and the drafter bucket, so
  the drafter never splits.
- ``skip_singletons`` (vllm PR #51742, open): one-layer buckets are left out of the minimum (a
  DFlash drafter's single full layer made the group size 1), then the shipped rule.
"""

from __future__ import annotations

import math

from kvplan.units import cdiv

THRESHOLD, GCD, COST, DRAFTER_GROUP, SKIP_SINGLETONS = "threshold", "gcd", "cost", "drafter_group", "skip_singletons"

# PR #49472's default: one padding layer is worth one group less.
PADDING_PER_GROUP = 1.0


def choose_group_size(counts: list[int], threshold: float | None) -> int:
    """The shipped rule: ``group_size = min``, raised to ``max`` when ``max < min · threshold`` (strict)."""
    m, big = min(counts), max(counts)
    if threshold is not None and big < m * threshold:
        return big
    return m


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


def drafter_group_size(buckets: list[tuple[str, ...]], drafter: frozenset[str], threshold: float | None) -> int:
    """#35062: the shipped rule on the target's buckets alone (the drafter's buckets when there is no
    target bucket), raised to the largest drafter bucket so the drafter never splits."""
    target = [len(b) for b in buckets if not set(b) & drafter]
    drafted = [len(b) for b in buckets if set(b) & drafter]
    size = choose_group_size(target, threshold) if target else max(drafted)
    return max([size, *drafted])


def dedicated_layers(rule: str, drafter_layers: frozenset[str]) -> frozenset[str]:
    """The layers ``rule`` keeps out of the target's buckets (buckets of their own): the drafter's
    under ``drafter_group``, none otherwise."""
    return drafter_layers if rule == DRAFTER_GROUP else frozenset()


def group_size_of(rule: str, buckets: list[tuple[str, ...]], threshold: float | None,
               drafter_layers: frozenset[str] = frozenset()) -> int:
    """The group size ``rule`` (``Era.grouping``) picks for ``buckets`` (each bucket's layer names)."""
    counts = [len(b) for b in buckets]
    if rule == THRESHOLD:
        return choose_group_size(counts, threshold)
    if rule == GCD:
        return gcd_group_size(counts, threshold)
    if rule == COST:
        return cost_group_size(counts)
    if rule == SKIP_SINGLETONS:
        return skip_singletons_group_size(counts, threshold)
    if rule == DRAFTER_GROUP:
        return drafter_group_size(buckets, drafter_layers, threshold)
    raise ValueError(f"unknown grouping rule {rule!r}")  # pragma: no cover
