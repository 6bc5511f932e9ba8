"""`inspect`: the per-layer KV specs vLLM would register, as a result dict."""

from __future__ import annotations

from kvplan.options import INSPECT, resolve
from kvplan.report.data import inspect_dict
from kvplan.report.envelope import envelope
from kvplan.results import outcome
from kvplan.usecases.scenario import build_layout, scenario_from, serving_of


def inspect(model: str, **options) -> dict:
    r = resolve(INSPECT, options)
    scenario = scenario_from(model, r.values)
    layout = build_layout(scenario)
    body = inspect_dict(layout, serving_of(scenario))
    return envelope("inspect", options=r.to_dict(), outcome=outcome(ok=True), body=body, model=layout.target,
                    drafter=layout.drafter)
