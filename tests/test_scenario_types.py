"""The Scenario's fields carry their options' types (no ``Any``), and what the parsers give matches them."""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path

import pytest

from kvplan.options import scenario_options
from kvplan.usecases.check.loader import load_deployments
from kvplan.usecases.scenario import KIND_TYPES, Scenario, scenario_from

DEPLOYMENTS = sorted(str(p) for p in (Path(__file__).resolve().parent.parent / "configs" / "deployments").rglob("*.yaml"))


def _accepts(tp, value) -> bool:
    if value is None:
        return type(None) in typing.get_args(tp)
    base = [a for a in typing.get_args(tp) if a is not type(None)] or [tp]
    base = [typing.get_origin(b) or b for b in base]
    if float in base and isinstance(value, int) and not isinstance(value, bool):
        return True  # an int where a float is typed (Python's numeric tower)
    return isinstance(value, tuple(base))


def test_no_scenario_field_is_any_and_every_kind_has_a_type():
    assert all(f.type is not typing.Any for f in fields(Scenario))
    assert {o.kind for o in scenario_options()} <= set(KIND_TYPES)


def test_defaults_and_typed_values_match_the_field_types():
    s = scenario_from("Qwen/Qwen3-8B", {"kv_cache_memory": "40GiB", "max_model_len": "128k", "gpu_memory": "80",
                                        "env": ["VLLM_USE_V2_MODEL_RUNNER=1"], "threshold": "1.25"})
    bad = [(f.name, getattr(s, f.name)) for f in fields(Scenario) if not _accepts(f.type, getattr(s, f.name))]
    assert bad == []
    assert _accepts(fields(Scenario)[1].type, "x") and not _accepts(int | None, "x")  # the check can fail


@pytest.mark.parametrize("path", DEPLOYMENTS)
def test_deployments_files_give_values_of_the_field_types(path):
    for d in load_deployments([path]):
        bad = [(f.name, getattr(d.scenario, f.name)) for f in fields(Scenario)
               if not _accepts(f.type, getattr(d.scenario, f.name))]
        assert bad == [], d.name
