"""vLLM in ``kvplan compare``: each plan (the main policy's and every ``--policies`` era's) as a
comparison row, and the grouping-threshold advice, from one module (the use case,
``kvplan/usecases/compare.py``, calls it for both).

The grouping threshold is not a vLLM flag. The 1.5 is a literal in
``vllm/v1/core/kv_cache_utils.py`` (``_get_kv_cache_groups_uniform_page_size``, PR #36684), so
the advice is labelled a code change; kvplan's own ``--threshold`` simulates it. Only the
smallest and largest bucket counts matter, so two values cover every outcome: 1.0 and the first
hundredth above max/min. The use case simulates each (``vllm_thresholds``), as it runs every
simulation, and hands the plans back (``vllm_compared``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from kvplan.engines.compare import EngineAnswer, EngineRow, reaches, rounded
from kvplan.engines.engine import CompareRun, EngineDefaults
from kvplan.engines.lower_bound import LowerBound
from kvplan.engines.vllm.group_size import THRESHOLD
from kvplan.engines.vllm.plan import Plan
from kvplan.results.advice import VllmAdvice, VllmGrouping, VllmNoThreshold, VllmNotApplicable, VllmTried
from kvplan.results.engines import VllmDetails, VllmKnobs
from kvplan.units import plural

VllmAdviceAny = VllmNotApplicable | VllmNoThreshold | VllmAdvice

VLLM_THRESHOLD_SOURCE = ("vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size "
                         "(the literal 1.5 since PR #36684)")


def vllm_row(plan: Plan, lb: LowerBound) -> EngineRow:
    """A ``Plan`` (from ``simulate`` / ``run_scenario``) as a comparison row."""
    era = plan.era
    reserved, blocks = plan.request_bytes, plan.request_blocks
    d = plan.decision
    label = f"vllm=={era.release}" if era.release else era.name  # the release asked for, else the era
    knobs = VllmKnobs(
        policy=label,
        threshold=era.threshold,
        grouping=era.grouping,
        max_model_len_tokens=plan.max_model_len,
        max_num_batched_tokens=plan.options.max_num_batched_tokens,
        hybrid_kv_cache_manager=None if plan.hma is None else not plan.hma.disabled,
    )
    details = VllmDetails(
        grouping_path=d.path if d else None,
        group_size=plan.group_size,
        num_groups=plan.num_groups,
        num_padding_layers=plan.num_padding_layers,
        padding_waste_pct=plan.padding_waste_pct,
        page_size_bytes=plan.page_size_bytes,
        num_blocks=plan.num_blocks,
        blocks_per_request=tuple(blocks),
        kv_cache_size_tokens=plan.kv_cache_size_tokens,
    )
    notes = ["proposal, not shipped behaviour"] if era.is_proposal else []
    return EngineRow(
        engine="vllm", name=label, starts=plan.starts, kv_tokens=plan.kv_tokens,
        max_concurrency=plan.max_concurrency, reserved_per_request_bytes=reserved,
        lower_bound_bytes=lb.per_request_bytes, knobs=knobs, details=details,
        failure=(plan.failure.message or plan.failure.error_type) if plan.failure else None,
        is_proposal=era.is_proposal, notes=tuple(notes), steady_state_concurrency=plan.steady_state_concurrency,
        failure_stage=plan.failure.stage if plan.failure else None,
        failure_type=plan.failure.error_type if plan.failure else None,
    )


def threshold_candidates(min_count: int, max_count: int) -> list[float]:
    """1.0 (→ smallest bucket) and the first hundredth strictly above max/min (→ largest)."""
    above = Fraction(math.floor(Fraction(max_count, min_count) * 100) + 1, 100)
    return [1.0, float(above)]


def _not_consulted(plan) -> str | None:
    """Why the grouping threshold does not decide ``plan``'s grouping (None: it does)."""
    era, d = plan.era, plan.decision
    if era.grouping != THRESHOLD:
        return f"{era.name} chooses the group size by its own rule, not a threshold"
    if d is None or d.path != "uniform_page":
        return f"grouping path {d.path if d else 'none (the engine failed before grouping)'}: the threshold is not consulted"
    if d.min_count == d.max_count:
        return f"equal bucket counts ({d.min_count}): every threshold gives group size {d.min_count}"
    return None


def vllm_thresholds(plan) -> list[float]:
    """The thresholds ``advise_vllm`` compares: none where the threshold is not consulted, else 1.0
    and the first hundredth above the bucket ratio (the use case simulates each)."""
    if _not_consulted(plan) is not None:
        return []
    return threshold_candidates(plan.decision.min_count, plan.decision.max_count)


def advise_vllm(plan, tried_plans: dict, target_concurrency: int | None = None) -> VllmAdviceAny:
    """The threshold advice for ``plan``; ``tried_plans``: the same inputs simulated under each of
    ``vllm_thresholds(plan)`` (threshold -> Plan)."""
    era, d = plan.era, plan.decision
    current = VllmGrouping(era.threshold, plan.group_size, plan.num_padding_layers, plan.starts,
                           rounded(plan.max_concurrency))
    why_not = _not_consulted(plan)
    if why_not is not None:
        return VllmNotApplicable(False, why_not, current)
    ratio = d.max_count / d.min_count
    tried = []
    for t in threshold_candidates(d.min_count, d.max_count):
        p = tried_plans[t]
        tried.append(VllmTried(t, p.group_size, p.num_groups, p.num_padding_layers, p.starts,
                               rounded(p.max_concurrency), p.failure.message if p.failure else None))
    starting = [t for t in tried if t.starts and t.max_concurrency >= 1]
    if not starting:
        return VllmNoThreshold(True, None, current, tuple(tried), "no threshold avoids the failure or serves one request")
    if not plan.starts:
        pick, why = min(starting, key=lambda t: t.threshold), "the smallest threshold that avoids the failure"
    else:
        pick = min(starting, key=lambda t: (t.num_padding_layers, t.threshold))
        why = "the smallest threshold with the fewest padding layers"
    same = (f"any threshold <= {ratio:.4g} gives the same grouping" if pick.threshold == 1.0
            else f"any threshold > {ratio:.4g} gives the same grouping")
    unchanged = plan.starts and (pick.group_size, pick.num_padding_layers) == (plan.group_size, plan.num_padding_layers)
    if unchanged:
        why = f"the shipped threshold {era.threshold:g} already gives this grouping"
    return VllmAdvice(
        applicable=True, threshold=pick.threshold,
        code_change=None if unchanged else
        f"set the grouping threshold to {pick.threshold:g} in {VLLM_THRESHOLD_SOURCE}: vLLM has no flag for it",
        kvplan_flag=f"--threshold {pick.threshold:g}",
        reason=f"{why}; {same} (largest/smallest bucket = {d.max_count}/{d.min_count})",
        group_size=pick.group_size, num_padding_layers=pick.num_padding_layers, max_concurrency=pick.max_concurrency,
        reaches_target=reaches(pick.max_concurrency, target_concurrency), current=current, tried=tuple(tried))


def vllm_compared(plans: list[Plan], tried: dict[float, Plan] | None, lb: LowerBound,
                  target_concurrency: int | None = None) -> EngineAnswer:
    """vLLM's answer to the workload: a row per plan (the first is the main policy's), and the threshold
    advice on the first plan from ``tried`` (its ``vllm_thresholds`` simulated; None: no advice asked)."""
    advice = None if tried is None or not plans else advise_vllm(plans[0], tried, target_concurrency)
    return EngineAnswer(tuple(vllm_row(p, lb) for p in plans), advice)


class VLLM(EngineDefaults):
    """vLLM in ``kvplan compare`` (``kvplan.engines.engine.Engine``): its plans come from the pipeline, run by the use
    case (``run.vllm_plans``), so its rows match ``simulate`` exactly."""

    name: str = "vllm"
    title: str = "vLLM"
    version_option: str | None = None
    shows_notes: bool = False
    # no knobs (inputs_type None): vLLM's settings are the deployment's own (its plans come from the pipeline)
    advice_type: Any = VllmNotApplicable | VllmNoThreshold | VllmAdvice | None
    knobs_type: type = VllmKnobs

    def versions(self, given: str | None) -> dict[str, str]:
        return {}  # the release is the policy's (the plans' era)

    def compared(self, run: CompareRun) -> EngineAnswer:
        return vllm_compared(list(run.vllm_plans), run.vllm_tried, run.lower_bound, run.inputs.target_concurrency)

    def heading(self, row: dict) -> str:
        return f"{self.title} {row['name']}"

    def knobs_text(self, row: dict) -> str:
        k, d = row["knobs"], row["details"]
        thr = "none" if k["threshold"] is None else f"{k['threshold']:g}"
        text = (f"threshold {thr}, group size {d['group_size']}, {plural(d['num_groups'], 'group')}, "
                f"{d['num_padding_layers']} padding")
        return text + (", HMA off" if k["hybrid_kv_cache_manager"] is False else "")

    def advice_cells(self, advice: dict) -> tuple[str, str, bool | None, str]:
        v = advice
        if not (v["applicable"] and v.get("threshold") is not None):
            return "(threshold)", "", None, v["reason"]
        if v.get("code_change"):
            knob, reason = f"code change: threshold {v['threshold']:g}", f"{v['reason']}; {v['code_change']}"
        else:
            knob, reason = f"no change (shipped {v['current']['threshold']:g})", v["reason"]
        return (knob, f"{v['max_concurrency']:.2f}", v["reaches_target"],
                f"{reason} (kvplan simulates it with {v['kvplan_flag']})")


ENGINE = VLLM()
