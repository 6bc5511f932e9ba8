"""The engines of ``kvplan compare``, each from its own module behind one interface
(``kvplan.engines.engine.Engine``: its name, the releases its rules were read from, its knob record, its rows and
advice and the records they are, its warnings). A new engine is its module and one line here (and its flags in
``kvplan/options.py``): the use case (``kvplan/usecases/compare.py``) asks every engine listed, in this order (the
order of the rows), ``CompareInputs`` carries each engine's knob record by its name, the advice and the versions are
keyed by the names, and the JSON Schemas name each engine's keys from here (scripts/make_schemas.py)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from kvplan.engines.compare import CompareInputs
from kvplan.engines.engine import Engine
from kvplan.engines.llamacpp import ENGINE as LLAMACPP
from kvplan.engines.sglang import ENGINE as SGLANG
from kvplan.engines.trtllm import ENGINE as TRTLLM
from kvplan.engines.vllm.compare import ENGINE as VLLM

ENGINES: tuple[Engine, ...] = (VLLM, SGLANG, TRTLLM, LLAMACPP)


def compare_inputs(kv_cache_memory_bytes: int, target_len_tokens: int, **given: Any) -> CompareInputs:
    """``CompareInputs`` from flat keywords (the library's and the tests' way): the workload's by their field names,
    each engine's knobs by their option names, into that engine's knob record (the others keep their defaults)."""
    shared = {f.name for f in fields(CompareInputs)} - {"engines"}
    engines: dict[str, Any] = {}
    for e in ENGINES:
        if e.inputs_type is None:
            continue
        mine = {k: given.pop(k) for k in [f.name for f in fields(e.inputs_type)] if k in given}
        engines[e.name] = e.inputs_type(**mine)
    unknown = set(given) - shared
    if unknown:
        raise TypeError(f"no engine reads {', '.join(sorted(unknown))}")
    return CompareInputs(kv_cache_memory_bytes, target_len_tokens, engines=engines, **given)


def titles() -> dict[str, str]:
    """Each engine's name as the tables show it (the lower bound's too)."""
    return {**{e.name: e.title for e in ENGINES}, "lower_bound": "lower bound"}
