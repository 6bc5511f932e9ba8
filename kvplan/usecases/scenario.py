"""One simulation described as the user states it (CLI flags or a `check` YAML entry), and the entry
that runs it: the deployment it states through the pipeline (``kvplan.usecases.pipeline``), then, for one
that fails, the fix search (``kvplan.usecases.fix_search``).

Field names are the long CLI flags with underscores, so `kvplan check` files use
the same words as `kvplan simulate`.
"""

from __future__ import annotations

from dataclasses import field, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from kvplan.engines.vllm.eras import Era
from kvplan.frozen import make_dataclass
from kvplan.model.layout import ModelLayout
from kvplan.options import ENV, OPTIONS, env_value, scenario_options
from kvplan.usecases.deployment import KIND_TYPES, Deployment, _field_type, deployment_of  # noqa: F401 (KIND_TYPES: re-exported)
from kvplan.usecases.pipeline import ScenarioResult, check_sizing


class _ScenarioMethods:
    def __post_init__(self) -> None:
        # Every value goes through its option's parser (idempotent on typed values), so
        # Scenario(model=..., kv_cache_memory="40GiB") and a flag or file key mean the same.
        for opt in scenario_options():
            raw = getattr(self, opt.name)
            if opt.kind == ENV:  # the VLLM_* variables given, plus those set in kvplan's environment
                object.__setattr__(self, opt.name, env_value(raw))
            elif raw is not None:
                object.__setattr__(self, opt.name, opt.parse(raw))

    # The typed deployment (its era resolved from ``policy``), made once per scenario at its first
    # use, so a bad policy is refused where it always was. The stages below take its parts, never
    # the scenario. ``replace(s, policy=...)`` makes a new scenario, with its own deployment.
    @cached_property
    def deployment(self) -> Deployment:
        """This scenario as a typed ``Deployment`` (``kvplan.usecases.deployment``)."""
        return deployment_of(self)

    @property
    def policy_era(self) -> Era:
        """The era ``policy`` names, with its own grouping threshold."""
        return self.deployment.policy_era

    @property
    def era(self) -> Era:
        """The era this deployment runs under: ``policy_era`` with ``--threshold`` when given."""
        return self.deployment.era

    def batch_sizes(self, max_model_len: int | None = None) -> tuple[int, int]:
        """``(max_num_batched_tokens, max_num_seqs)`` (``SchedulerInput.batch_sizes``)."""
        return self.deployment.scheduler.batch_sizes(max_model_len)

    def check_sizing(self) -> None:
        """Refuse --enable-extensible-kv-cache where vLLM refuses it (``check_sizing``)."""
        check_sizing(self.deployment)

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]  # type: ignore[arg-type]  # the generated Scenario is a dataclass


# One simulation as the user states it: `model` plus every scenario option of the option table
# (kvplan.options), with the table's defaults and its kinds' types. Values are typed
# (Option.parse). Generated, so an option is declared once.
if TYPE_CHECKING:
    class Scenario(_ScenarioMethods):
        """What a type checker sees of the generated dataclass: ``model``, and every option's value by name
        (``dataclasses.replace`` takes any of them)."""

        __dataclass_fields__: ClassVar[dict[str, Any]]
        model: str

        def __init__(self, model: str, **options: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...
else:
    Scenario = make_dataclass(
        "Scenario",
        [("model", str)] + [(o.name, _field_type(o), field(default=o.default)) for o in scenario_options()],
        bases=(_ScenarioMethods,),
        frozen=True,
    )
    Scenario.__module__ = __name__


def scenario_from(model: str, options: dict) -> Scenario:
    """A Scenario from raw option values (flags, file keys or library keywords), each parsed
    by its option in the table; options that are not scenario options are ignored here."""
    names = {o.name for o in scenario_options()}
    return Scenario(model=model, **{k: (v if v is not None else OPTIONS[k].default)
                                    for k, v in options.items() if k in names})


def run_deployment(d: Deployment, *, explain: bool = False, layout: ModelLayout | None = None,
                   fixes: bool = True) -> ScenarioResult:
    """``d`` through the pipeline (``kvplan.usecases.pipeline.run_deployment``: the layout unless given, the
    budget, the plan) and, unless ``fixes=False``, the fix search on a failing one (``fix_search.with_fixes``)."""
    from kvplan.usecases import pipeline
    from kvplan.usecases.fix_search import with_fixes

    r = pipeline.run_deployment(d, explain=explain, layout=layout)
    return with_fixes(r) if fixes else r


def run_scenario(s: Scenario, *, explain: bool = False, layout: ModelLayout | None = None,
                 fixes: bool = True) -> ScenarioResult:
    """``run_deployment`` for the deployment ``s`` states."""
    return run_deployment(s.deployment, explain=explain, layout=layout, fixes=fixes)
