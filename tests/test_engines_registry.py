"""The registry of compare's engines (kvplan/engines/registry.py) and the records that name each engine: a new engine
is its module and one registry line, and these checks name what else it must declare (its options, its knob fields,
its advice and version fields of the published records) when it forgets one."""

from __future__ import annotations

import dataclasses

import pytest

from kvplan.engines.compare import CompareInputs
from kvplan.engines.registry import ENGINES, titles
from kvplan.errors import OptionError
from kvplan.options import COMPARE, ENGINES as ENGINE_PANEL, OPTIONS, resolve
from kvplan.results.advice import Advice
from kvplan.results.compare import EngineVersions

DEFAULTS = resolve(COMPARE, {}).values


def test_names_are_unique_and_ordered_as_the_rows():
    names = [e.name for e in ENGINES]
    assert names == ["vllm", "sglang", "trtllm", "llamacpp"]  # vLLM's rows first, as compare's table shows them
    assert titles() == {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", "llamacpp": "llama.cpp",
                        "lower_bound": "lower bound"}


def test_advice_has_one_field_per_engine_in_the_registry_order():
    # the published advice keys: the workload's two, then one per engine (compare_engines fills them by name)
    fields = [f.name for f in dataclasses.fields(Advice)]
    assert fields == ["target_len_tokens", "target_concurrency", *(e.name for e in ENGINES)]


def test_engine_versions_are_what_the_engines_answer():
    keys = [k for e in ENGINES for k in e.versions(None)]
    assert keys == [f.name for f in dataclasses.fields(EngineVersions)]


def test_every_engine_option_is_read_by_exactly_one_engine():
    panel = {o.name for o in OPTIONS.values() if o.panel == ENGINE_PANEL}
    read: list[str] = []
    for e in ENGINES:
        knobs = e.inputs(DEFAULTS)
        assert set(knobs) <= {f.name for f in dataclasses.fields(CompareInputs)}, e.name
        read += [*knobs, *([e.version_option] if e.version_option else [])]
    assert sorted(read) == sorted(panel)  # each once: no option unread, none read by two engines


def test_trtllm_reads_its_window_shares():
    trtllm = next(e for e in ENGINES if e.name == "trtllm")
    assert trtllm.inputs({**DEFAULTS, "trtllm_window_shares": "0.25, 0.75"})["trtllm_window_shares"] == (0.25, 0.75)
    assert trtllm.inputs(DEFAULTS)["trtllm_window_shares"] is None  # equal shares, TensorRT-LLM's default
    with pytest.raises(OptionError, match="--trtllm-window-shares '1.5,2'"):
        trtllm.inputs({**DEFAULTS, "trtllm_window_shares": "1.5,2"})
