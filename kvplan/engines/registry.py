"""The engines of ``kvplan compare``, each from its own module behind one interface
(``kvplan.engines.engine.Engine``: its name, the releases its rules were read from, its rows and advice, its
warnings). A new engine is its module and one line here; the use case (``kvplan/usecases/compare.py``) asks every
engine listed, in this order (the order of the rows)."""

from __future__ import annotations

from kvplan.engines.engine import Engine
from kvplan.engines.llamacpp import ENGINE as LLAMACPP
from kvplan.engines.sglang import ENGINE as SGLANG
from kvplan.engines.trtllm import ENGINE as TRTLLM
from kvplan.engines.vllm.compare import ENGINE as VLLM

ENGINES: tuple[Engine, ...] = (VLLM, SGLANG, TRTLLM, LLAMACPP)


def titles() -> dict[str, str]:
    """Each engine's name as the tables show it (the lower bound's too)."""
    return {**{e.name: e.title for e in ENGINES}, "lower_bound": "lower bound"}
