"""vLLM's settings in its ``kvplan compare`` row (``knobs``) and its result details; the other engines' knob and
``details`` records are declared beside their models in kvplan/engines (a new knob is its option and its engine's module).
Serialised by ``kvplan.results.to_data``; the keys are each engine's own names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import PCT


@dataclass(frozen=True)
class NoKnobs:
    """A row with no engine settings (the exact windowed need)."""


@dataclass(frozen=True)
class VllmKnobs:
    policy: str  # vllm==<release> asked for, else the era's name
    threshold: float | None
    grouping: str
    max_model_len_tokens: int
    max_num_batched_tokens: int
    hybrid_kv_cache_manager: bool | None


@dataclass(frozen=True)
class VllmDetails:
    """The plan's grouping and pool (``kvplan.engines.vllm.plan.Plan``)."""

    grouping_path: str | None
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float = field(metadata=PCT)
    page_size_bytes: int
    num_blocks: int
    blocks_per_request: tuple[int, ...]
    kv_cache_size_tokens: int
