"""Deployments → simulations → expectations measured (pass / fail / error)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from kvplan.errors import KvplanError
from kvplan.results import PCT_DIGITS, shown
from kvplan.results.check import LayoutSignature, PlanNumbers, SameLayoutMeasured
from kvplan.results.host_tier import tier_memory_bytes
from kvplan.results.records import CrossCheck
from kvplan.results.summary import PlanSummary
from kvplan.usecases.check.schema import ERROR, FAIL, PASS, Deployment, Expectation, Status
from kvplan.usecases.scenario import Scenario
from kvplan.units import format_bytes, plural

# ---------------------------------------------------------------------------
# Evaluation


@dataclass
class Outcome:
    """One expectation, measured."""

    key: str
    limit: Any
    measured: Any
    passed: bool
    message: str
    line: int | None


@dataclass
class DeploymentResult:
    deployment: Deployment
    status: Status
    outcomes: list[Outcome] = field(default_factory=list)
    error: str | None = None
    error_type: str | None = None
    plan: PlanNumbers | None = None  # the key numbers (see plan_numbers)
    cross_check: CrossCheck | None = None  # `cross_check: true`: the comparison with a real vLLM
    policy: str | None = None  # the policy simulated when it is not the entry's (cross-check: that vLLM's)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.passed]


def plan_numbers(plan, fix: str | None = None, *, data_parallel_size: int = 1) -> PlanNumbers:
    """The numbers `check` reports for one plan (raw values; rounding only to hide float noise); the host
    tier's, every data-parallel engine's."""
    failure = plan.failure
    tier = plan.host_tier if plan.host_tier is not None and plan.host_tier.sized else None
    s = PlanSummary.of(plan)
    return PlanNumbers(
        starts=s.starts, stage=failure.stage if failure else None,
        error_type=failure.error_type if failure else None, error=failure.message if failure else None,
        group_size=s.group_size, num_groups=s.num_groups, num_padding_layers=s.num_padding_layers,
        padding_waste_pct=s.padding_waste_pct, num_blocks=s.num_blocks, max_concurrency=s.max_concurrency,
        steady_state_concurrency=s.steady_state_concurrency, kv_tokens=s.kv_tokens,
        max_model_len=s.max_model_len, fix=fix,
        host_memory_bytes=None if (host := tier_memory_bytes(tier)) is None else host * data_parallel_size,
        host_kv_tokens=(tier.cpu_kv_cache_size_tokens or 0) * data_parallel_size if tier else None)


def layout_signature(plan) -> LayoutSignature:
    """What `same_layout_as` compares: group size, each group's layers in order, and padding."""
    return LayoutSignature(group_size=plan.group_size, num_groups=plan.num_groups,
                           groups=tuple(tuple(g.layer_names) for g in plan.groups),
                           num_padding_layers=plan.num_padding_layers,
                           # compared, not shown: rounded so float noise is no difference
                           padding_waste_pct=round(plan.padding_waste_pct, PCT_DIGITS))


def layout_differences(mine: LayoutSignature, theirs: LayoutSignature) -> list[str]:
    """Human phrases for what differs between two layout signatures ([] when the same)."""
    out = []
    if mine.group_size != theirs.group_size:
        out.append(f"group size {mine.group_size} vs {theirs.group_size}")
    if mine.num_groups != theirs.num_groups:
        out.append(f"{mine.num_groups} vs {plural(theirs.num_groups, 'group')}")
    elif mine.groups != theirs.groups:
        changed = [i for i, (a, b) in enumerate(zip(mine.groups, theirs.groups, strict=True)) if a != b]
        out.append(f"layers of group{'s' if len(changed) > 1 else ''} {', '.join(map(str, changed))} differ")
    if mine.num_padding_layers != theirs.num_padding_layers:
        out.append(f"{mine.num_padding_layers} vs {plural(theirs.num_padding_layers, 'padding layer')}")
    elif mine.padding_waste_pct != theirs.padding_waste_pct:
        out.append(f"padding {mine.padding_waste_pct:.2f}% vs {theirs.padding_waste_pct:.2f}%")
    return out


def _engine_outcome(numbers: PlanNumbers) -> str:
    if numbers.starts:
        return "the engine would start"
    return f"the engine would fail at start-up ({numbers.stage}): {numbers.error_type}: {numbers.error}"


def evaluate(expectation: Expectation, numbers: PlanNumbers) -> Outcome:
    """One numeric or start-up expectation against a plan's numbers (same_layout_as: see run_deployment)."""
    key, limit = expectation.key, expectation.limit
    measured: bool | int | float  # of the expectation's kind
    if key == "starts":
        measured = numbers.starts
        passed = measured == limit
        want = "expected the engine to start" if limit else "expected a start-up failure"
        message = f"{want}; {_engine_outcome(numbers)}"
    elif key == "max_padding_waste_pct":
        measured = shown(numbers, "padding_waste_pct")
        passed = measured <= limit
        message = f"padding waste {measured:.2f}% ({plural(numbers.num_padding_layers, 'padding layer')}), limit {limit:g}%"
    elif key == "min_concurrency":
        measured = shown(numbers, "max_concurrency")
        passed = measured >= limit
        message = f"max concurrency {measured:.2f}, need at least {limit:g}"
    elif key == "min_steady_concurrency":
        measured = shown(numbers, "steady_state_concurrency")
        passed = measured >= limit
        message = f"steady-state concurrency {measured:.2f} (kvplan's estimate), need at least {limit:g}"
    elif key == "min_max_model_len":
        measured = numbers.max_model_len
        passed = measured >= limit
        message = f"max_model_len {measured:,} tokens, need at least {limit:,}"
    elif key == "min_kv_tokens":
        measured = numbers.kv_tokens
        passed = measured >= limit
        message = f"KV tokens {measured:,}, need at least {limit:,}"
    elif key in ("max_host_memory", "min_host_kv_tokens"):
        host = numbers.host_memory_bytes if key == "max_host_memory" else numbers.host_kv_tokens
        measured = host if host is not None else 0
        if key == "max_host_memory":
            passed = measured <= limit
            message = (f"host tier {format_bytes(measured)} of host memory, limit {format_bytes(limit)}" if host
                       is not None else "no sized host tier (no --kv-offloading-size with the native backend)")
        else:
            passed = host is not None and measured >= limit
            message = (f"host tier holds {measured:,} tokens, need at least {limit:,}" if host is not None
                       else "no sized host tier (no --kv-offloading-size with the native backend)")
    elif key == "max_groups":
        measured = numbers.num_groups
        passed = measured <= limit
        message = f"{measured} KV cache groups, limit {limit}"
    else:
        raise ValueError(f"not a per-plan expectation: {key}")
    return Outcome(key, limit, measured, passed, message, expectation.line)


Runner = Callable[..., Any]  # run_scenario(scenario, layout=None) -> object with .plan, .layout


def _same_layout(expectation: Expectation, scenario: Scenario, result, run: Runner) -> Outcome:
    ref = expectation.limit
    mine = layout_signature(result.plan)
    policy = scenario.policy if scenario.threshold is None else f"{scenario.policy} (threshold {scenario.threshold:g})"
    try:
        other = run(replace(scenario, policy=ref, threshold=None), layout=result.layout)
    except Exception as e:  # the reference run failing is this expectation failing
        msg = e.message if isinstance(e, KvplanError) else f"{type(e).__name__}: {e}"
        return Outcome(expectation.key, ref, None, False, f"could not simulate under {ref}: {msg}", expectation.line)
    theirs = layout_signature(other.plan)
    diffs = layout_differences(mine, theirs)
    measured = SameLayoutMeasured(policy=ref, group_size=theirs.group_size, num_groups=theirs.num_groups,
                                  num_padding_layers=theirs.num_padding_layers,
                                  padding_waste_pct=theirs.padding_waste_pct, differences=tuple(diffs))
    if diffs:
        message = f"layout under {policy} differs from {ref}: {'; '.join(diffs)}"
    else:
        message = f"same layout under {policy} and {ref} (group size {mine.group_size}, {plural(mine.num_groups, 'group')})"
    return Outcome(expectation.key, ref, measured, not diffs, message, expectation.line)


def _upgrade_loss(expectation: Expectation, scenario: Scenario, result, run: Runner) -> Outcome:
    """``max_upgrade_loss``: the deployment under the release ``to``, its KV tokens against these
    (kvplan.usecases.diff.capacity_change: the second release not starting is a 100 % loss)."""
    from kvplan.usecases.capacity import capacity_change

    to, pct = expectation.limit["to"], expectation.limit["pct"]
    try:
        other = run(replace(scenario, policy=to, threshold=None))
    except Exception as e:
        msg = e.message if isinstance(e, KvplanError) else f"{type(e).__name__}: {e}"
        return Outcome(expectation.key, expectation.limit, None, False, f"could not simulate under {to}: {msg}",
                       expectation.line)
    mine, theirs, loss = capacity_change(result, other)
    measured = {"from_kv_tokens": mine, "to_kv_tokens": theirs, "loss_pct": round(loss, 4)}
    passed = loss <= pct
    message = (f"KV tokens {mine:,} -> {theirs:,} under {to} ({-loss + 0.0:+.2f}%), "
               f"{'within' if passed else 'more than'} the {pct:g}% allowed")
    return Outcome(expectation.key, expectation.limit, measured, passed, message, expectation.line)


def run_deployment(d: Deployment, run: Runner | None = None, *, reraise: bool = False,
                   deferred: list | None = None) -> DeploymentResult:
    """Simulate one deployment and check its expectations. Errors become an ``error`` result
    (unless ``reraise``, for debugging), so one broken deployment never stops the others.
    With ``deferred`` (a list), a cross-check is appended there instead of run, for
    ``finish_cross_checks`` to run them all with one vLLM import per interpreter."""
    if run is None:
        from kvplan.usecases.scenario import run_scenario

        run = run_scenario
    start = time.perf_counter()
    cc = None
    try:
        scenario, verify = _prepare_cross_check(d.scenario)
        result = run(scenario)
        body = getattr(result, "body", None)
        fixes = body.fixes if body is not None else ()
        numbers = plan_numbers(result.plan, fixes[0].flag if fixes else None,  # simulate's first verified fix
                               data_parallel_size=scenario.data_parallel_size)
        special = {"same_layout_as": _same_layout, "max_upgrade_loss": _upgrade_loss}
        outcomes = [special[e.key](e, scenario, result, run) if e.key in special else evaluate(e, numbers)
                    for e in d.expectations]
        job = None
        if verify is not None:
            job = verify.job(result.plan, name=d.name, model=scenario.model, drafter=scenario.drafter)
            if deferred is None:
                from kvplan.verify.crosscheck import cross_check_many

                cc = cross_check_many([job])[0]
                outcomes.append(_cross_check_outcome(scenario, cc))
    except Exception as e:
        if reraise and not isinstance(e, KvplanError):
            raise
        msg = e.message if isinstance(e, KvplanError) else f"internal error: {type(e).__name__}: {e}"
        return DeploymentResult(d, ERROR, error=msg, error_type=type(e).__name__,
                                seconds=time.perf_counter() - start)
    status: Status = PASS if all(o.passed for o in outcomes) else FAIL
    warnings = [*d.notes, *(getattr(result.layout, "warnings", ()) or ())]
    r = DeploymentResult(d, status, outcomes, plan=numbers, cross_check=cc, policy=scenario.policy,
                         warnings=warnings, seconds=time.perf_counter() - start)
    if job is not None and deferred is not None:
        deferred.append((r, job, scenario))
    return r


def finish_cross_checks(deferred: list) -> None:
    """Run the deferred cross-checks together and add each one's outcome to its deployment."""
    if not deferred:
        return
    from kvplan.verify.crosscheck import cross_check_many

    start = time.perf_counter()
    reports = cross_check_many([job for _, job, _ in deferred])
    share = (time.perf_counter() - start) / len(deferred)
    for (r, _, scenario), cc in zip(deferred, reports):
        r.cross_check = cc
        r.outcomes.append(_cross_check_outcome(scenario, cc))
        r.status = PASS if all(o.passed for o in r.outcomes) else FAIL
        r.seconds += share


def _prepare_cross_check(scenario: Scenario):
    """``cross_check: true`` (or ``vllm_python`` / ``require_agreement``): the vLLM to compare with,
    and the scenario under that vLLM's release when the entry names no policy."""
    if not (scenario.cross_check or scenario.vllm_python is not None or scenario.require_agreement):
        return scenario, None
    from kvplan.options import OPTIONS
    from kvplan.verify.crosscheck import prepare

    verify = prepare(scenario.vllm_python, scenario.policy, policy_given=scenario.policy != OPTIONS["policy"].default)
    return replace(scenario, policy=verify.policy), verify


def _cross_check_outcome(scenario: Scenario, cc: CrossCheck) -> Outcome:
    """The cross-check as an expectation: it fails only with ``require_agreement`` (as
    ``--require-agreement`` does for simulate)."""
    from kvplan.verify.crosscheck import agreement_failure, summary_line

    failure = agreement_failure(cc) if scenario.require_agreement else None
    measured = [x.field for x in cc.differences] if cc.ran else cc.reason
    return Outcome("cross_check", bool(scenario.require_agreement), measured, failure is None,
                   failure or summary_line(cc), None)


def run_deployments(deployments: list[Deployment], run: Runner | None = None, *, reraise: bool = False,
                    progress: Callable[[DeploymentResult], None] | None = None) -> list[DeploymentResult]:
    from kvplan.progress import track

    out: list[DeploymentResult] = []
    deferred: list = []  # (result, job, scenario) of each cross-check, run after the simulations
    for d in track(deployments, "check: deployments"):
        r = run_deployment(d, run, reraise=reraise, deferred=deferred)
        if progress and not any(r is x for x, _, _ in deferred):
            progress(r)
        out.append(r)
    finish_cross_checks(deferred)
    if progress:
        for r, _, _ in deferred:
            progress(r)
    return out


