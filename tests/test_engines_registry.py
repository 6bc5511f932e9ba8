"""The registry of compare's engines (kvplan/engines/registry.py) and the records that name each engine: a new engine
is its module (its knob record, its advice and knob records, its rows) and one registry line, plus its flags in
kvplan/options.py; ``CompareInputs``, the advice, the versions and the published schemas take each engine's part
from the registry. ``test_a_new_engine_is_one_module_and_one_registry_line`` registers a throwaway engine in-process
and runs it through compare's library, its records, its table and its schema without touching another file."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from factories import script_module
from kvplan.engines import registry
from kvplan.engines.compare import EngineAnswer, EngineRow, EngineStages, Figure
from kvplan.engines.engine import CompareRun, EngineDefaults
from kvplan.engines.registry import ENGINES, compare_inputs, titles
from kvplan.errors import OptionError
from kvplan.options import COMPARE, ENGINES as ENGINE_PANEL, OPTIONS, resolve
from kvplan.units import GiB

DEFAULTS = resolve(COMPARE, {}).values


def test_names_are_unique_and_ordered_as_the_rows():
    names = [e.name for e in ENGINES]
    assert names == ["vllm", "sglang", "trtllm", "llamacpp"]  # vLLM's rows first, as compare's table shows them
    assert titles() == {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", "llamacpp": "llama.cpp",
                        "lower_bound": "lower bound"}


def test_every_engine_option_is_read_by_exactly_one_engine():
    panel = {o.name for o in OPTIONS.values() if o.panel == ENGINE_PANEL}
    read: list[str] = []
    for e in ENGINES:
        knobs = e.inputs(DEFAULTS)
        assert (knobs is None) == (e.inputs_type is None), e.name
        if knobs is not None:  # the knob record's fields that are options (the rest keep the engine's defaults)
            read += [f.name for f in dataclasses.fields(knobs) if f.name in OPTIONS]
        read += [e.version_option] if e.version_option else []
    assert sorted(read) == sorted(panel)  # each once: no option unread, none read by two engines


def test_the_defaults_of_each_knob_record_are_its_options_defaults():
    # CompareInputs without an engine's record runs it with the record's defaults: the same as compare's options
    for e in ENGINES:
        if e.inputs_type is not None:
            assert e.inputs(DEFAULTS) == e.inputs_type(), e.name


def test_compare_inputs_routes_each_knob_to_its_engine():
    i = compare_inputs(40 * GiB, 4096, target_concurrency=3, sglang_page_size=16, trtllm_max_batch_size=7,
                       llamacpp_n_ubatch=256)
    assert (i.target_concurrency, i.engines["sglang"].sglang_page_size, i.engines["trtllm"].trtllm_max_batch_size,
            i.engines["llamacpp"].llamacpp_n_ubatch) == (3, 16, 7, 256)
    with pytest.raises(TypeError, match="no engine reads nonsense"):
        compare_inputs(40 * GiB, 4096, nonsense=1)


def test_trtllm_reads_its_window_shares():
    trtllm = next(e for e in ENGINES if e.name == "trtllm")
    assert trtllm.inputs({**DEFAULTS, "trtllm_window_shares": "0.25, 0.75"}).trtllm_window_shares == (0.25, 0.75)
    assert trtllm.inputs(DEFAULTS).trtllm_window_shares is None  # equal shares, TensorRT-LLM's default
    with pytest.raises(OptionError, match="--trtllm-window-shares '1.5,2'"):
        trtllm.inputs({**DEFAULTS, "trtllm_window_shares": "1.5,2"})


# --- a throwaway engine, as a new engine's module would declare it --------------------------------------------

@dataclass(frozen=True)
class ToyInputs:
    toy_slots: int = 2  # the engine's one knob (its option would be --toy-slots)


@dataclass(frozen=True)
class ToyKnobs:
    slots: int


@dataclass(frozen=True)
class ToyDetails:
    stages: EngineStages  # the five figures every engine reports (kvplan.engines.compare)


@dataclass(frozen=True)
class ToyAdvice:
    slots: int
    reason: str


class Toy(EngineDefaults):
    """Every request of L tokens costs all layers' bytes per token for L tokens; the pool holds whole requests."""

    name = "toy"
    title = "Toy"
    version_option = None
    inputs_type = ToyInputs
    advice_type = ToyAdvice
    knobs_type = ToyKnobs

    def versions(self, given):
        return {"toy": "0.1"}

    def compared(self, run: CompareRun) -> EngineAnswer:
        i = run.inputs
        k = i.knobs("toy", ToyInputs())
        need = sum(c.bytes_per_token for c in run.costs) * i.target_len_tokens
        n = i.kv_cache_memory_bytes // need
        rule = "whole requests of L tokens in one pool"
        stages = EngineStages("toy", "0.1", Figure(n * i.target_len_tokens, rule), Figure(n * i.target_len_tokens, rule),
                              Figure(min(n, k.toy_slots), rule), Figure(float(n), rule), Figure(n >= 1, rule),
                              i.target_len_tokens)
        row = EngineRow(engine="toy", name="one pool", starts=n >= 1, kv_tokens=n * i.target_len_tokens,
                        max_concurrency=float(min(n, k.toy_slots)), reserved_per_request_bytes=need,
                        lower_bound_bytes=run.lower_bound.per_request_bytes, knobs=ToyKnobs(k.toy_slots),
                        details=ToyDetails(stages))
        return EngineAnswer((row,), ToyAdvice(int(n), f"{n} requests fit; -slots {n}"))

    def knobs_text(self, row: dict) -> str:
        return f"slots {row['knobs']['slots']}"

    def advice_cells(self, advice: dict):
        return f"-slots {advice['slots']}", str(advice["slots"]), None, advice["reason"]


def test_a_new_engine_is_one_module_and_one_registry_line(monkeypatch, capsys):
    from kvplan.report.compare_tables import render_compare
    from kvplan.usecases.compare import compare

    monkeypatch.setattr(registry, "ENGINES", (*ENGINES, Toy()))  # the one registry line
    r = compare("openai/gpt-oss-20b", kv_cache_memory="40GiB", target_len="32768")
    toy = next(row for row in r["engines"] if row["engine"] == "toy")
    # gpt-oss-20b per token: 24 layers · 8 KV heads · 2 (K, V) · 64 · 2 B = 49,152 B; one 32,768-token request
    # 1,610,612,736 B; 40 GiB holds 26 of them (42,949,672,960 // 1,610,612,736), served 2 at a time (toy_slots)
    assert toy["reserved_per_request_bytes"] == 1_610_612_736 and toy["max_concurrency"] == 2.0
    assert toy["knobs"] == {"slots": 2}
    assert list(r["advice"])[-1] == "toy" and r["advice"]["toy"] == {"slots": 26, "reason": "26 requests fit; -slots 26"}
    assert list(r["engine_versions"]) == ["sglang", "trtllm", "trtllm_commit", "llamacpp", "toy"]
    # the table draws its row and its advice in its own words
    render_compare(r)
    out = capsys.readouterr().out
    assert "slots 2" in out and "-slots 26" in out
    # the published schema names its advice key, its records and its version from the registry
    schemas = script_module("scripts/make_schemas.py", "make_schemas_toy")
    compare_schema = schemas.envelope("compare", schemas.BODIES["compare"])
    assert compare_schema["properties"]["advice"]["properties"]["toy"]["required"] == ["slots", "reason"]
    assert "toy" in compare_schema["properties"]["engine_versions"]["required"]


def test_compare_inputs_without_an_engine_use_its_defaults():
    # a library caller that leaves an engine out (CompareInputs built by hand) runs it with its own defaults
    from kvplan.engines.sglang import SglangInputs, knobs_of

    i = compare_inputs(40 * GiB, 4096)
    assert knobs_of(dataclasses.replace(i, engines={})) == SglangInputs() == i.engines["sglang"]
