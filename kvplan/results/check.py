"""The result records of ``kvplan check`` (filled by ``kvplan.usecases.check.outputs``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from kvplan.results import Outcome


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
    plan: dict | None  # the key numbers (kvplan.usecases.check.evaluate.plan_numbers)
    cross_check: dict | None  # `cross_check: true`: the comparison with a real vLLM
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
