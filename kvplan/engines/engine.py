"""The interface every engine of ``kvplan compare`` answers behind (``Engine``), and what it answers from
(``CompareRun``). Each engine implements it in its own module (``sglang.py``, ``trtllm.py``, ``llamacpp.py``,
``vllm/compare.py``); ``registry.py`` lists them."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping, Protocol

from kvplan.engines.compare import CompareInputs, EngineAnswer
from kvplan.engines.layer_costs import LayerCost
from kvplan.engines.lower_bound import LowerBound


@dataclass(frozen=True)
class CompareRun:
    """What every engine answers from: the layers' costs (one tensor-parallel rank's share), the target's
    architecture, the workload and knobs, the floor, and vLLM's own plans (the main policy's first, run through the
    pipeline by the use case) with the main plan under each advised threshold (None: no vLLM advice)."""

    costs: tuple[LayerCost, ...]
    architecture: str | None
    inputs: CompareInputs
    lower_bound: LowerBound
    vllm_plans: tuple[Any, ...] = ()
    vllm_tried: dict[float, Any] | None = None
    has_mamba: bool = False  # the layout holds Mamba layers (an engine's rules may not cover that architecture)


class Engine(Protocol):
    """One engine of ``kvplan compare``, from its own module (``kvplan.engines.registry`` lists them): the name of its
    rows and its advice, the name its tables show, the releases its rules were read from, and its answer."""

    name: str  # the rows' ``engine`` and the advice's key (vllm | sglang | trtllm | llamacpp)
    title: str  # as the tables show it
    version_option: str | None  # the option that names the release asked for (None: vLLM's come from --policy)
    shows_notes: bool  # the report lists its rows' notes under the table (vLLM's are in its plan's own output)
    # the records it declares, for the published JSON Schemas (scripts/make_schemas.py reads them from the registry):
    # its knob record (None: no knobs), the type of its advice (a record or a union of records), its rows' knobs
    inputs_type: type | None
    advice_type: Any
    knobs_type: type

    def inputs(self, options: Mapping[str, Any]) -> Any:
        """Its knob record (``inputs_type``) from compare's resolved options, each read and checked here (the
        record's fields are the options of the same names); None without knobs."""
        ...

    def versions(self, given: str | None) -> dict[str, str]:
        """The release (and commit) kvplan's rules for it were read from (``EngineVersions``' fields), refusing any
        other ``given``."""
        ...

    def compared(self, run: CompareRun) -> EngineAnswer:
        """Its rows and its advice for ``run``."""
        ...

    def warnings(self, run: CompareRun) -> list[str]:
        """What its rows do not model for ``run``'s model."""
        ...

    def heading(self, row: dict) -> str:
        """The line above one of its rows' knobs and notes in the table output (``row``: the serialized row)."""
        ...

    def knobs_text(self, row: dict) -> str:
        """Its row's knobs in one line (``row``: the serialized row)."""
        ...

    def advice_cells(self, advice: dict) -> tuple[str, str, bool | None, str]:
        """Its advice as the advice table shows it: the knob, the max concurrency, whether it reaches the target,
        and why (``advice``: its serialized advice)."""
        ...


class EngineDefaults:
    """What most engines answer alike, for their classes to inherit: the knob record (``inputs_type``) filled from the
    options of its fields' names as they were resolved (a field no option sets keeps its default), no warnings, the
    title above the rows, the notes listed."""

    title: str
    inputs_type: type | None = None
    shows_notes: bool = True

    def inputs(self, options: Mapping[str, Any]) -> Any:
        if self.inputs_type is None:
            return None
        return self.inputs_type(**given(options, tuple(f.name for f in fields(self.inputs_type) if f.name in options)))

    def warnings(self, run: CompareRun) -> list[str]:
        return []

    def heading(self, row: dict) -> str:
        return self.title


def given(options: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The options ``names`` as they were resolved (an engine's knobs that need no more reading)."""
    return {name: options[name] for name in names}
