"""``kvplan simulate --sweep-threshold``'s records: one row per threshold, where the group size flips."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import CONCURRENCY, PCT, Outcome
from kvplan.results.records import ModelRecord, PolicyRecord


@dataclass(frozen=True)
class SweepRow:
    """One threshold of ``simulate --sweep-threshold``."""

    threshold: float
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float = field(metadata=PCT)
    num_blocks: int
    kv_tokens: int
    max_concurrency: float = field(metadata=CONCURRENCY)
    outcome: Outcome


@dataclass(frozen=True)
class CriticalThreshold:
    """Where the group size flips: the ratio max/min of the bucket counts (at exactly that value the
    strict ``<`` fails, so the smaller size still wins)."""

    threshold: float
    ratio: str  # "max_count/min_count"
    group_size_at_or_below: int
    group_size_above: int


@dataclass(frozen=True)
class SweepBody:
    model: ModelRecord
    drafter: ModelRecord | None
    policy: PolicyRecord
    rows: tuple[SweepRow, ...]
    # where the group size flips (kvplan.engines.vllm.sweep.critical_thresholds)
    critical_thresholds: tuple[CriticalThreshold, ...]
