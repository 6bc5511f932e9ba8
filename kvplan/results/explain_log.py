"""``kvplan explain-log``'s records: what the log says, its rebuild, the figures side by side, the traps."""

from __future__ import annotations

from dataclasses import dataclass, field

from typing import TYPE_CHECKING, Literal

from kvplan.results import CONCURRENCY, FLATTEN, OMIT_NONE, PCT
from kvplan.results.records import (
    Fix, Grouping, HybridKVCacheManager, Memory, ModelRecord, PlanBody, PlanSpeculative, PolicyRecord, Scheduler,
    Serving,
)

if TYPE_CHECKING:  # kvplan.results.annotations loads these, not every run
    from kvplan.results.recovered import Recovered


@dataclass(frozen=True)
class LogSummary:
    source: str  # the file, or "-" for standard input
    lines: int
    records: int
    facts: int


@dataclass(frozen=True)
class Rebuild:
    """The deployment rebuilt from the log, and how its simulation went."""

    deployment: object = field(metadata=FLATTEN)  # kvplan.usecases.explain_log.rebuild.Deployment
    policy_used: str | None = None
    status: str = ""  # simulated, layout only, not simulated
    detail: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SimulationSummary:
    """The re-simulation's plan, the parts explain-log shows."""

    policy: PolicyRecord
    model: ModelRecord
    drafter: ModelRecord | None
    speculative: PlanSpeculative
    serving: Serving
    scheduler: Scheduler
    hybrid_kv_cache_manager: HybridKVCacheManager
    grouping: Grouping | None
    memory: Memory
    logs: tuple[str, ...]
    fixes: tuple[Fix, ...]

    @classmethod
    def of(cls, p: PlanBody) -> "SimulationSummary":
        return cls(p.policy, p.model, p.drafter, p.speculative, p.serving, p.scheduler, p.hybrid_kv_cache_manager,
                   p.grouping, p.memory, p.logs, p.fixes)


@dataclass(frozen=True)
class FactRow:
    """One fact read from a log line: its kind, the line, the values read (spread in place; their
    keys depend on the kind, kvplan.logs.extract) and the line's text."""

    kind: str
    line: int
    values: dict = field(metadata=FLATTEN)
    text: str = ""


@dataclass(frozen=True)
class FigureRow:
    """One figure the log shows beside kvplan's (``kvplan.logs.compare.figures``): the logged value,
    kvplan's from its own predicted lines, the range at both ends of the logged KV memory's rounding,
    what the line means in that release, and the verdict."""

    figure: str
    kind: str  # the fact kind (kvplan.logs.extract), or "outcome"
    key: str | None  # the value read (None: the line's presence is the figure)
    line: int | None
    logged: object  # a number, an exception type, True (a line's presence) or the logged start
    count: int  # lines that show the same value (every worker prints it)
    kvplan: object
    kvplan_range: tuple[object, ...] | None  # [low, high]
    meaning: str | None
    agrees: bool | None  # None: not compared
    verdict: str


@dataclass(frozen=True)
class HmaCost:
    """The same memory with the hybrid KV cache manager off and on (kvplan's simulations)."""

    max_concurrency_off: float = field(metadata=CONCURRENCY)
    max_concurrency_on: float = field(metadata=CONCURRENCY)
    num_blocks_off: int
    num_blocks_on: int
    kv_tokens_off: int
    kv_tokens_on: int


@dataclass(frozen=True)
class HmaOffTrap:
    trap: Literal["hybrid_manager_off"]
    reasons: tuple[str, ...]
    cost: HmaCost | None
    detail: str


@dataclass(frozen=True)
class PaddingTrap:
    trap: Literal["padding_waste"]
    padding_waste_bytes: int
    padding_waste_pct_of_pool: float = field(metadata=PCT)
    num_padding_layers: int
    detail: str


@dataclass(frozen=True)
class SlidingTrap:
    trap: Literal["sliding_window_reservation"]
    max_concurrency: float = field(metadata=CONCURRENCY)
    logged_max_concurrency: float | None
    steady_state_concurrency: float = field(metadata=CONCURRENCY)
    prefill_reserve_blocks: int
    detail: str


@dataclass(frozen=True)
class AutofitTrap:
    trap: Literal["autofit_reduced"]
    original_max_model_len: int
    max_model_len: int
    line: int | None  # the log's auto-fit line (None: kvplan's own auto-fit)
    detail: str


@dataclass(frozen=True)
class RoundingTrap:
    trap: Literal["rounding_unused"]
    unused_bytes: int
    available_bytes: int
    rank: int
    bytes_per_block: int
    detail: str


@dataclass(frozen=True)
class StageUnusedTrap:
    trap: Literal["stage_unused"]
    unused_bytes: int
    available_bytes: int
    rank: int
    own_num_blocks: int
    num_blocks: int
    detail: str


@dataclass(frozen=True)
class StartupFailureTrap:
    trap: Literal["startup_failure"]
    stage: str | None
    error_type: str | None
    error: str
    fix: Fix | None  # simulate's first verified fix
    detail: str


Trap = HmaOffTrap | PaddingTrap | SlidingTrap | AutofitTrap | RoundingTrap | StageUnusedTrap | StartupFailureTrap


@dataclass(frozen=True)
class ExplainLogBody:
    """``kvplan explain-log``: a start-up log read, rebuilt, re-simulated and set beside kvplan's figures."""

    log: LogSummary
    release: object  # kvplan.logs.release.ReleaseGuess
    recovered: Recovered
    facts: tuple[FactRow, ...]
    missing: tuple[str, ...]
    rebuild: Rebuild
    figures: tuple[FigureRow, ...]  # kvplan.logs.compare.figures
    verdict: str
    traps: tuple[Trap, ...]
    simulation: SimulationSummary | None
