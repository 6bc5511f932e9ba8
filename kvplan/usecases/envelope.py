"""A command's envelope (``kvplan.results.envelope``) filled from what the use case holds: the
model and drafter as resolved, the policy asked for, the options as received, and the outcome a
plan gives. The body beside it comes from ``kvplan.usecases.records``.
"""

from __future__ import annotations

from kvplan.results import Outcome
from kvplan.results.envelope import Envelope, Inputs, PolicyInputs, Source, unique


def source_record(info) -> Source | None:
    """Where a model's config came from (the envelope's ``inputs.model``): the model layer's ``ModelInfo``."""
    if info is None:
        return None
    src = info.source
    return Source(src.model_id, src.requested, src.kind, src.path, src.revision)


def policy_inputs(era) -> PolicyInputs | None:
    """The policy as the envelope's inputs show it: the era cut to what was asked for (``PolicyRecord``'s
    fields of the same names)."""
    if era is None:
        return None
    return PolicyInputs(era.name, era.release or None, era.release_note or None, tuple(era.releases), era.threshold,
                        era.is_proposal)


def plan_outcome(plan, fix: str | None = None, *, ok: bool | None = None) -> Outcome:
    """A vLLM plan's start-up outcome (its ``failure`` holds the engine's stage, type and text);
    ``ok`` when the command's answer is more than the start (simulate's checks, the allocation)."""
    f = plan.failure
    if f is None:
        return Outcome(ok=True if ok is None else ok, starts=True)
    if fix is None:
        fix = unverified_fix(plan)
    return Outcome(ok=False if ok is None else ok, starts=False, stage=f.stage, error_type=f.error_type,
                   error=f.message, fix=fix)


def unverified_fix(plan) -> str | None:
    """The fix of a failure no re-simulation with other engine options can verify (it changes the layout):
    a model (or, up to 0.29.0, a drafter) whose class lacks SupportsPP at --pipeline-parallel-size > 1
    (``prechecks.pp_support_fix``, ``prechecks.drafter_pp_support_fix``)."""
    from kvplan.engines.vllm import prechecks

    f, o = plan.failure, plan.options
    if f.stage == prechecks.STAGE_DRAFTER_PP_SUPPORT:
        return prechecks.drafter_pp_support_fix(plan.facts, plan.era.stands_for)
    if f.stage != prechecks.STAGE_PP_SUPPORT or not plan.facts.architecture:
        return None
    return prechecks.pp_support_fix(plan.facts.architecture, plan.era.stands_for, o.tensor_parallel_size,
                                    o.pipeline_parallel_size)


def envelope(command: str, *, options=None, outcome: Outcome, body, model=None, drafter=None, era=None,
             warnings=()) -> Envelope:
    """A command's result: ``options`` the ``kvplan.options.Resolved`` it received (None: a command
    without options), ``model``/``drafter`` the layout's ``ModelInfo``, ``era`` the policy asked for."""
    inputs = Inputs(source_record(model), source_record(drafter), policy_inputs(era),
                    options.inputs if options is not None else {})
    return Envelope(command=command, inputs=inputs, outcome=outcome, body=body, warnings=unique(warnings))
