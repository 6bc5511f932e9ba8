"""The result records of ``kvplan check`` (filled by ``kvplan.usecases.check.outputs``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kvplan.results import CONCURRENCY, OMIT_NONE, PCT, Outcome
from kvplan.results.records import CrossCheck


@dataclass(frozen=True)
class ExpectationRow:
    """One expectation, measured: the limit the file sets and the value the simulation gave."""

    key: str
    limit: Any
    measured: Any
    passed: bool
    message: str
    line: int | None  # the line of the file that sets the limit


@dataclass(frozen=True)
class PlanNumbers:
    """The numbers ``check`` reports for one plan (raw values; rounding only to hide float noise),
    and simulate's first verified fix."""

    starts: bool
    stage: str | None
    error_type: str | None
    error: str | None
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float = field(metadata=PCT)
    num_blocks: int
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)
    kv_tokens: int
    max_model_len: int
    fix: str | None
    # the host tier of a KV offloading connector, every data-parallel engine's (None without a sized tier)
    host_memory_bytes: int | None = field(default=None, metadata=OMIT_NONE)
    host_kv_tokens: int | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class LayoutSignature:
    """What ``same_layout_as`` compares: group size, each group's layers in order, and padding."""

    group_size: int
    num_groups: int
    groups: tuple[tuple[str, ...], ...]
    num_padding_layers: int
    padding_waste_pct: float


@dataclass(frozen=True)
class SameLayoutMeasured:
    """``same_layout_as``'s measured value: the reference policy's layout and what differs."""

    policy: str
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float
    differences: tuple[str, ...]


@dataclass(frozen=True)
class DeploymentRow:
    name: str
    file: str
    line: int
    model: str | None
    drafter: str | None
    policy: str | None  # the policy simulated (a cross-check's vLLM when it is not the entry's)
    threshold: float | None
    status: Literal["pass", "fail", "error"]
    passed: bool
    failed_expectations: tuple[str, ...]
    outcome: Outcome
    expectations: tuple[ExpectationRow, ...]
    plan: PlanNumbers | None  # the key numbers (kvplan.usecases.check.evaluate.plan_numbers)
    cross_check: CrossCheck | None  # `cross_check: true`: the comparison with a real vLLM
    seconds: float


@dataclass(frozen=True)
class CheckSummary:
    num_deployments: int
    num_passed: int
    num_failed: int
    num_errors: int


@dataclass(frozen=True)
class CheckBody:
    files: tuple[str, ...]
    passed: bool
    summary: CheckSummary
    deployments: tuple[DeploymentRow, ...]
