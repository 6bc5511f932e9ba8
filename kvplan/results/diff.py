"""The result record of ``kvplan diff``: a deployment under two vLLM releases, every figure that
changes and the era decisions behind each change (filled by ``kvplan.usecases.diff``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EraChange:
    """One era decision that differs between the two releases (``kvplan policies`` names them)."""

    field: str
    from_value: Any
    to_value: Any
    first_release: str  # the release whose era took ``to_value`` on the way from one release to the other
    moves: tuple[str, ...]  # the figures this decision alone changes on this deployment ([]: none)


@dataclass(frozen=True)
class FigureChange:
    """One figure of the plan (a dotted path into simulate's JSON) under each release, and the era
    decisions that each, changed alone, reproduce the change (``because``; empty when only the
    decisions together or the release's own data do: ``note`` says which)."""

    figure: str
    from_value: Any
    to_value: Any
    because: tuple[str, ...]
    note: str | None


@dataclass(frozen=True)
class Capacity:
    """What the upgrade does to capacity: the tokens of max_model_len requests that fit
    (``memory.kv_cache_size_tokens`` in vLLM's concurrency meaning) and the concurrency."""

    from_kv_tokens: int
    to_kv_tokens: int
    from_max_concurrency: float
    to_max_concurrency: float
    loss_pct: float  # the fall in KV tokens, in % of the first release's (negative: a gain; 100: no start)
    max_loss_pct: float | None  # --max-loss / max_upgrade_loss's limit
    passed: bool


@dataclass(frozen=True)
class DiffBody:
    deployment: str  # model, vllm serve, manifest, check entry
    where: str | None
    model: str
    from_release: str
    to_release: str
    from_era: str
    to_era: str
    from_starts: bool
    to_starts: bool
    changes: tuple[FigureChange, ...]
    era_changes: tuple[EraChange, ...]
    capacity: Capacity
