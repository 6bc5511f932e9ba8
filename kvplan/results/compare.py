"""``kvplan compare``'s records: one row per engine, the engines' versions, the advice."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from kvplan.results import CONCURRENCY, FLATTEN, OMIT_NONE, PCT, Outcome, Record
from kvplan.results.budget import Budget
from kvplan.results.records import ModelRecord, Serving, Speculative

if TYPE_CHECKING:  # kvplan.results.annotations loads these, not every run
    from kvplan.results.advice import Advice


@dataclass(frozen=True)
class EngineVersions:
    """The releases each engine's rules were read from, as the engines answer them (``Engine.versions``, in the
    registry's order), spread into the keys; the schema names them from the registry (scripts/make_schemas.py)."""

    engines: Mapping[str, str] = field(metadata=FLATTEN)


@dataclass(frozen=True)
class EngineRowRecord:
    """One engine (or vLLM era) in ``compare``: its outcome, capacity and waste per request."""

    engine: str  # vllm, sglang, trtllm, llamacpp, lower_bound
    name: str
    is_proposal: bool
    outcome: Outcome
    kv_tokens: int | None
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)  # the admission figure where the engine has no other
    reserved_per_request_bytes: int | None
    waste_per_request_bytes: int | None  # reserved beyond the exact windowed need
    waste_pct: float | None = field(metadata=PCT)
    knobs: object  # the engine's own settings for this row (its Engine.knobs_type; NoKnobs for the lower bound)
    # the engine's result: vLLM's grouping (VllmDetails); SglangDetails, TrtllmDetails, LlamacppDetails and
    # the exact windowed need (LowerBound) are declared beside their models in kvplan/engines
    details: object
    notes: tuple[str, ...]


@dataclass(frozen=True)
class CompareBody:
    """``kvplan compare``: one model, budget and workload through every engine."""

    model: ModelRecord
    drafter: ModelRecord | None
    speculative: Speculative
    serving: Serving
    engine_versions: EngineVersions
    workload: object  # kvplan.engines.compare.CompareInputs (a Record: its DATA keys)
    lower_bound: object  # kvplan.engines.lower_bound.LowerBound
    engines: tuple[EngineRowRecord, ...]  # one per engine (and vLLM era)
    advice: Advice  # each engine's advice (kvplan.usecases.compare.compare_engines)
    budget: Budget | None  # the estimated budget (with --gpu), else None
