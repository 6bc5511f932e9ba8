"""The typed deployment (kvplan.usecases.deployment) and the stages that take its parts.

Every scenario option lands in exactly one part, under its own name and with the type its
option kind parses to; no stage entry point takes the Scenario bag, an ``Any`` or a dict (the
budget stage returns a ``Budget`` record, which the engine stage takes); the era is resolved once,
into an ``Era`` object."""

import inspect
from dataclasses import fields

from kvplan.engines.vllm.eras import Era
from kvplan.usecases import pipeline as sc
from kvplan.usecases.deployment import DERIVED_FIELDS, PARTS, Deployment, deployment_of
from kvplan.usecases.scenario import Scenario

LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def test_every_scenario_option_is_in_one_part_with_its_type():
    scenario_types = {f.name: f.type for f in fields(Scenario)}
    seen: dict[str, str] = {}
    for part in PARTS:
        for f in fields(part):
            if f.name in DERIVED_FIELDS:
                continue
            assert f.name not in seen, f"{f.name} is in {seen.get(f.name)} and {part.__name__}"
            seen[f.name] = part.__name__
            assert f.name in scenario_types, f"{part.__name__}.{f.name} is not an option"
            assert f.type == scenario_types[f.name], (part.__name__, f.name, f.type, scenario_types[f.name])
    assert set(seen) == set(scenario_types)  # nothing dropped, nothing invented


def test_parts_keep_the_scenario_defaults():
    d = deployment_of(Scenario(model=LLAMA))
    defaults = {f.name: f.default for f in fields(Scenario) if f.name != "model"}
    for part in PARTS:
        for f in fields(part):
            if f.name in defaults:
                assert f.default == defaults[f.name], (part.__name__, f.name)
    assert d.source.model == LLAMA


STAGES = {
    "model_stage": ("ModelInput", "ServingInput", "Era"),
    "budget_stage": ("ModelLayout", "BudgetInput", "SchedulerInput", "ServingInput", "Era"),
    "engine_stage": ("ModelLayout", "SchedulerInput", "ServingInput", "Era", "Budget | None"),
}


def test_stage_entry_points_take_typed_parts_never_the_bag():
    for name, wanted in STAGES.items():
        params = inspect.signature(getattr(sc, name)).parameters.values()
        notes = {p.name: str(p.annotation) for p in params}
        for p, note in notes.items():
            assert note != str(inspect.Parameter.empty), f"{name}({p}) has no annotation"
            assert "Scenario" not in note and "Any" not in note and "Deployment" not in note, f"{name}({p}: {note})"
            assert "dict" not in note and "Mapping" not in note, f"{name}({p}: {note})"
        for w in wanted:
            assert w in notes.values(), f"{name} takes no {w}: {notes}"


def test_the_budget_stage_returns_a_budget_record():
    assert inspect.signature(sc.budget_stage).return_annotation == "Budget"


def test_the_era_is_resolved_once_into_an_era_object():
    s = Scenario(model=LLAMA, policy="vllm==0.18.0", threshold=1.25)
    d = s.deployment
    assert isinstance(d, Deployment) and isinstance(d.era, Era) and isinstance(d.policy_era, Era)
    assert s.deployment is d and s.era is d.era  # made once per scenario
    assert d.era.threshold == 1.25 and d.policy_era.threshold == 1.5  # 0.18.0's own threshold: 1.5 (eras.py chain)
    assert d.era.name == d.policy_era.name


def test_card_batch_defaults_are_read_at_the_edge():
    # vllm_batch_defaults: >= 160 GiB cards 16384/1024 from the large tier on; H100 8192/1024; L4 2048/256
    assert Scenario(model=LLAMA, gpu="B200-180GB").deployment.scheduler.card_batch_defaults == (16384, 1024)
    assert Scenario(model=LLAMA, gpu="H100-80GB").deployment.scheduler.card_batch_defaults == (8192, 1024)
    assert Scenario(model=LLAMA, gpu="L4-24GB").deployment.scheduler.card_batch_defaults == (2048, 256)


def test_the_model_map_is_read_at_the_edge():
    s = Scenario(model="org/private", drafter="org/draft", model_map={"org/private": LLAMA})
    src = s.deployment.source
    assert (src.model, src.model_read, src.drafter_read) == ("org/private", LLAMA, "org/draft")
    from kvplan.usecases.deployment import ModelInput

    assert ModelInput(model=LLAMA).model_read == LLAMA  # no map: read as given
