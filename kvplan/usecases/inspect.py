"""`inspect`: the per-layer KV specs vLLM would register, as a result dict."""

from __future__ import annotations

from kvplan.options import INSPECT, resolve
from kvplan.results import outcome
from kvplan.results.envelope import Envelope
from kvplan.usecases.records import inspect_body
from kvplan.usecases.envelope import envelope
from kvplan.usecases.pipeline import layout_of, serving_options
from kvplan.usecases.scenario import scenario_from


def layout_refusals(layout, era) -> list[str]:
    """What vLLM refuses at start-up that the layout alone shows: a speculative method without
    num_speculative_tokens. ``inspect`` runs none of vLLM's checks before the KV cache (simulate
    reports them as start-up failures), so it warns and shows the layout built with 0."""
    from kvplan.engines.vllm.prechecks import speculative_tokens_error

    text = speculative_tokens_error(layout.speculative_method, layout.num_speculative_tokens_missing, era)
    if not text:
        return []
    return [f"vLLM ({era.release or era.name}) refuses this speculative method without num_speculative_tokens at "
            f"start-up (ValidationError: {text}); pass --num-speculative-tokens. The layout shown is built with 0 "
            "(simulate reports the refusal, exit 3)"]


def inspect(model: str, **options) -> Envelope:
    r = resolve(INSPECT, options)
    scenario = scenario_from(model, r.values)
    d = scenario.deployment
    layout = layout_of(d)
    body = inspect_body(layout, serving_options(d.serving, d.era))
    return envelope("inspect", options=r, outcome=outcome(ok=True), body=body, model=layout.target,
                    drafter=layout.drafter, warnings=[*layout_refusals(layout, scenario.policy_era), *layout.warnings])
