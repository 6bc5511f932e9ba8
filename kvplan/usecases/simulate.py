"""`simulate` and `sweep`: one deployment through a vLLM era (or many thresholds), as a result dict.

Pure over its inputs except ``allocate``/``budget_from_device``, which ask the device
(``kvplan.device``, torch imported there).
"""

from __future__ import annotations

from dataclasses import replace

from typing import TYPE_CHECKING

from kvplan.errors import OptionError
from kvplan.options import SIMULATE, resolve
from kvplan.results import outcome
from kvplan.usecases.envelope import plan_outcome
from kvplan.results.envelope import Envelope
from kvplan.results.records import SimulateBody
from kvplan.usecases.envelope import envelope
from kvplan.usecases.scenario import run_scenario, scenario_from

if TYPE_CHECKING:
    from kvplan.results.budget import DeviceBudget


def _device_budget(r, era) -> DeviceBudget | None:
    """``--budget-from-device``: the KV budget read from the device (exclusive with --kv-cache-memory)."""
    if not r["budget_from_device"]:
        return None
    if r["kv_cache_memory"] is not None:
        raise OptionError("--budget-from-device and --kv-cache-memory are exclusive; pass one of them")
    from kvplan.device import device_kv_budget

    # --gpu-memory-utilization defaults as for --gpu (1.0 with 0.34's extensible KV cache, else the era's)
    return device_kv_budget(r["device"], era, r["gpu_memory_utilization"], r["reserve"] or 0,
                            enable_extensible_kv_cache=r["enable_extensible_kv_cache"],
                            num_gpu_blocks_override=r["num_gpu_blocks_override"])


def _checks(r, plan) -> list[str]:
    """The --require-start / --fail-on-padding / --min-concurrency verdicts that failed."""
    out = []
    if r["require_start"] and not plan.starts:
        out.append(f"--require-start: the engine would fail ({plan.failure.message})")
    if r["fail_on_padding"] is not None and plan.padding_waste_pct > r["fail_on_padding"]:
        out.append(f"--fail-on-padding {r['fail_on_padding']:g}: padding waste {plan.padding_waste_pct:.2f}%")
    if r["min_concurrency"] is not None and plan.max_concurrency < r["min_concurrency"]:
        out.append(f"--min-concurrency {r['min_concurrency']:g}: max concurrency {plan.max_concurrency:.2f}")
    return out


def _prepare_cross_check(r, scenario):
    """--cross-check (implied by --vllm-python and --require-agreement): the vLLM to run, and the
    policy (that vLLM's release when --policy was not given)."""
    if not (r["cross_check"] or r["vllm_python"] is not None or r["require_agreement"]):
        return None
    from kvplan.verify.crosscheck import prepare

    return prepare(r["vllm_python"], scenario.policy, policy_given="policy" in r.given)


def simulate(model: str, **options) -> Envelope:
    """Group layers, size the KV cache and predict start-up as a vLLM era would.

    ``outcome.ok`` is False when the engine would fail, a requested check failed, or the
    allocation did not verify (the CLI exits 3 then)."""
    r = resolve(SIMULATE, options)
    if r["sweep_threshold"] is not None:
        raise OptionError("--sweep-threshold: call kvplan.sweep(model, thresholds, ...) for a threshold sweep")
    scenario = scenario_from(model, r.values)
    verify = _prepare_cross_check(r, scenario)
    if verify is not None:
        scenario = replace(scenario, policy=verify.policy)
    device_budget = _device_budget(r, scenario.era)
    if device_budget is not None:
        # the device budget already resolved the sizing mode
        scenario = replace(scenario, kv_cache_memory=device_budget.kv_cache_memory_bytes,
                           enable_extensible_kv_cache=None)
    result = run_scenario(scenario, explain=r["explain"])
    plan, planned = result.plan, result.body
    if device_budget is not None:
        planned = replace(planned, budget=device_budget)
    checks = _checks(r, plan)
    cross_check = None
    if verify is not None:
        cross_check = verify.run(plan, name=model, model=scenario.model, drafter=scenario.drafter)
        failed = None
        if r["require_agreement"]:
            from kvplan.verify.crosscheck import agreement_failure  # only with --cross-check: keep simulate light

            failed = agreement_failure(cross_check)
        if failed:
            checks.append(failed)
    ok = plan.starts and not checks
    allocation = None
    if r["allocate"]:
        f = plan.failure
        if f is not None:  # the engine would not start
            raise OptionError(f"--allocate: the engine would not start ({f.stage}: {f.error_type}: {f.message}); "
                              "nothing to allocate")
        from kvplan.device import allocate_and_verify

        allocation = allocate_and_verify(plan, r["device"])
        ok = ok and allocation.ok
    fixes = planned.fixes
    verdict = plan_outcome(plan, fixes[0].flag if fixes else None, ok=ok)
    body = SimulateBody(planned, cross_check, tuple(checks), allocation)
    return envelope("simulate", options=r, outcome=verdict, body=body, model=result.layout.target,
                    drafter=result.layout.drafter, era=plan.era,
                    warnings=[*(result.budget.warnings if result.budget is not None else ()), *result.warnings])


def sweep(model: str, thresholds: str, **options) -> Envelope:
    """The same deployment under each threshold of ``thresholds`` (``1.0:2.0:0.05`` or
    ``1.25,1.5``), and the thresholds where vLLM's group size flips."""
    from kvplan.engines.vllm.sweep import critical_thresholds, parse_thresholds
    from kvplan.results.sweep import SweepBody  # a sweep's record: not loaded by a simulation
    from kvplan.usecases.records import model_record, policy_record, sweep_row

    r = resolve(SIMULATE, {**options, "sweep_threshold": thresholds})
    values = parse_thresholds(thresholds)
    scenario = scenario_from(model, r.values)
    first = run_scenario(replace(scenario, threshold=values[0]))
    rows = [sweep_row(values[0], first.plan)]
    from kvplan.progress import track

    for t in track(values[1:], "sweep: thresholds"):
        rows.append(sweep_row(t, run_scenario(replace(scenario, threshold=t), layout=first.layout).plan))
    body = SweepBody(model_record(first.layout.target), model_record(first.layout.drafter),
                     policy_record(first.plan.era), tuple(rows), tuple(critical_thresholds(first.plan)))
    return envelope("sweep", options=r, outcome=outcome(ok=True), body=body, model=first.layout.target,
                    drafter=first.layout.drafter, era=scenario.policy_era, warnings=first.layout.warnings)
