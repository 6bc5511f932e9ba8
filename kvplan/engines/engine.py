"""The interface every engine of ``kvplan compare`` answers behind (``Engine``), and what it answers from
(``CompareRun``). Each engine implements it in its own module (``sglang.py``, ``trtllm.py``, ``llamacpp.py``,
``vllm/compare.py``); ``registry.py`` lists them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

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

    name: str  # the rows' ``engine`` and the advice's field (vllm | sglang | trtllm | llamacpp)
    title: str  # as the tables show it
    version_option: str | None  # the option that names the release asked for (None: vLLM's come from --policy)

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
