"""The one serializer of result records (kvplan.results.to_data) and the envelope built with it."""

from __future__ import annotations

import ast
import copy
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from kvplan.results import FLATTEN, UNSET, Outcome, Unset, outcome, to_data
from kvplan.results.envelope import Envelope, Inputs
from kvplan.results.annotations import annotation_types

annotation_types()  # every type the body records name, for get_type_hints


@dataclass(frozen=True)
class _Row:
    z_bytes: int
    a: tuple[str, ...]
    inner: Outcome | None = None


def test_to_data_keeps_field_order_lists_tuples_and_leaves_integers_alone():
    d = to_data(_Row(3 * 1024 ** 3, ("x", "y"), Outcome(ok=False, stage="admission")))
    assert list(d) == ["z_bytes", "a", "inner"]
    assert d == {"z_bytes": 3_221_225_472, "a": ["x", "y"],
                 "inner": {"ok": False, "starts": None, "stage": "admission", "error_type": None, "error": None,
                           "fix": None}}
    assert type(d["z_bytes"]) is int


def test_a_flattened_field_spreads_into_its_parent_in_place():
    @dataclass(frozen=True)
    class Wrap:
        head: int
        body: dict = field(metadata=FLATTEN)
        tail: int = 0

    assert list(to_data(Wrap(1, {"b": 2, "c": 3}, 4))) == ["head", "b", "c", "tail"]


def test_the_envelope_header_comes_from_the_record_not_from_the_body():
    env = Envelope(command="models", inputs=Inputs(None, None, None, {}), outcome=outcome(ok=True),
                   body={"models": []}, warnings=("w",)).to_dict()
    assert list(env) == ["schema_version", "kvplan_version", "command", "inputs", "outcome", "models", "warnings"]
    assert env["schema_version"] == 2 and env["warnings"] == ["w"]


def test_an_unset_field_is_left_out_and_a_none_is_kept():
    @dataclass(frozen=True)
    class Line:
        shown_none: int | None | Unset = UNSET
        not_shown: int | None | Unset = UNSET
        tail: int = 0

    assert to_data(Line(shown_none=None)) == {"shown_none": None, "tail": 0}
    assert repr(UNSET) == "UNSET" and not UNSET and Unset() is UNSET
    assert copy.deepcopy(UNSET) is UNSET and pickle.loads(pickle.dumps(UNSET)) is UNSET


# ---- no hand-written result dicts ----------------------------------------------------------------
#
# A result reaches --format json through the one serializer: a record's fields, in order. A dict
# built by hand can only enter through a field typed as free data (``dict``, ``object``, ``Any``).
# These are the fields allowed to be free, each with why it is not a record; a field added with such a
# type (an ``allocation: dict``, a ``tuple[dict, ...]`` of rows) fails here until it is a record or
# listed with its reason. The runtime check below walks real results: a mapping found anywhere else
# (a row built as a dict and put into a field typed as records) fails too.
FREE_FIELDS = {
    "Envelope.body": "the command's body record (each body is walked by its own type)",
    "OptionValue.value": "an option's value as the command received it (any option's type)",
    "Fix.value": "the option's value the fix sets (a number, a bool, None)",
    "CrossCheckDifference.kvplan": "a figure as kvplan computes it (any field's type)",
    "CrossCheckDifference.vllm": "the same figure as the checked vLLM computes it",
    "ServeFlagRow.value": "the flag's value as the line gives it (text, a switch's bool, a list)",
    "ExpectationRow.limit": "the deployments file's limit, of the expectation's type",
    "ExpectationRow.measured": "the measured value, of the expectation's type",
    "CompareBody.workload": "kvplan.engines.compare.CompareInputs, a Record serialised by its DATA view",
    "CompareBody.lower_bound": "kvplan.engines.lower_bound.LowerBound, a Record serialised by its DATA view",
    "EngineRowRecord.details": "each engine's own Details record, declared beside its model in kvplan/engines",
    "EngineRowRecord.knobs": "the engine's own knob record (Engine.knobs_type; the schema names them from the registry)",
    "Advice.engines": "each engine's advice record by its name (Engine.advice_type; the schema names them from the "
                      "registry)",
    "EraRow.changes": "the Era fields that change at a boundary, keyed by field name",
    "EraRow.decisions": "every Era decision field, keyed by field name",
    "ExplainLogBody.release": "kvplan.logs.release.ReleaseGuess, a Record serialised by its DATA view",
    "Recovered.non_default_args": "the log's own args dict (any vLLM argument)",
    "FactRow.values": "a fact's values, whose keys depend on its kind (kvplan.logs.extract)",
    "Rebuild.deployment": "kvplan.usecases.explain_log.rebuild.Deployment, a Record serialised by its DATA view",
    "FigureRow.logged": "the logged value: a number, an exception type, a line's presence",
    "FigureRow.kvplan": "kvplan's value of the same figure",
    "FigureRow.kvplan_range": "kvplan's value at both ends of the logged KV memory's rounding",
    "EraChange.from_value": "an Era decision's value under the first release (each field's own type)",
    "EraChange.to_value": "the same decision under the second release",
    "FigureChange.from_value": "a figure of simulate's JSON under the first release (any figure's type)",
    "FigureChange.to_value": "the same figure under the second release",
    "ExportBody.arguments": "the tool's own argument names and values (each tool's vocabulary)",
    "LiveFigure.predicted": "a cache_config_info figure as kvplan predicts it (a number, a bool, text)",
    "LiveFigure.served": "the same figure as the server's label gives it",
}


def _free(tp) -> bool:
    """Free data: a bare dict, object or Any, a map of them, or a union with one."""
    if tp in (dict, object, Any):
        return True
    origin, args = get_origin(tp), get_args(tp)
    if origin is dict:
        return args[1] in (object, Any)
    if origin in (Union, UnionType):
        return any(_free(a) for a in args)
    return False


def _members(tp) -> tuple:
    return get_args(tp) if get_origin(tp) in (Union, UnionType) else (tp,)


def free_fields(roots) -> set[str]:
    """Every field of the records reachable from ``roots`` whose type holds free data."""
    seen: set = set()
    out: set[str] = set()

    def walk(tp) -> None:
        for a in get_args(tp):
            walk(a)
        if not is_dataclass(tp) or tp in seen:
            return
        seen.add(tp)
        hints = get_type_hints(tp)
        for f in fields(tp):
            stack = [hints[f.name]]
            while stack:
                x = stack.pop()
                if _free(x):
                    out.add(f"{tp.__name__}.{f.name}")
                    break
                stack += get_args(x)
            walk(hints[f.name])

    for r in roots:
        walk(r)
    return out


def test_every_free_field_of_the_result_tree_is_declared():
    from factories import script_module

    bodies = script_module("scripts/make_schemas.py").BODIES
    assert free_fields([Envelope, *bodies.values()]) == set(FREE_FIELDS)


def test_the_free_field_check_finds_a_dict_typed_field():
    @dataclass(frozen=True)
    class Body:
        ok: bool
        report: dict | None = None
        rows: tuple[dict, ...] = ()

    assert free_fields([Body]) == {"Body.report", "Body.rows"}


def hand_written_dicts(value, hint, path: str = "$") -> list[str]:
    """Where a mapping sits in ``value`` (annotated ``hint``) that no field declares: a dict built by
    hand in place of a record."""
    if hint is None or _free(hint):
        return []
    if is_dataclass(value) and not isinstance(value, type):
        hints = get_type_hints(type(value))
        return [p for f in fields(value) for p in hand_written_dicts(getattr(value, f.name), hints[f.name],
                                                                     f"{path}.{f.name}")]
    if isinstance(value, Mapping):
        typed = next((get_args(m)[1] for m in _members(hint) if get_origin(m) in (dict, Mapping) and get_args(m)),
                     None)
        if typed is None:
            return [path]
        return [p for k, v in value.items() for p in hand_written_dicts(v, typed, f"{path}[{k!r}]")]
    if isinstance(value, (list, tuple)):
        item = next((get_args(m)[0] for m in _members(hint) if get_origin(m) in (tuple, list) and get_args(m)),
                    None)
        return [p for i, v in enumerate(value) for p in hand_written_dicts(v, item if item is not None else Unset,
                                                                           f"{path}[{i}]")]
    return []


@dataclass(frozen=True)
class _N:
    n: int


@dataclass(frozen=True)
class _Rows:
    rows: tuple[_N, ...]
    env: dict[str, str]


def test_the_runtime_check_finds_a_dict_in_a_record_field():
    from kvplan.results.records import SimulateBody

    assert hand_written_dicts(_Rows((_N(1), {"n": 2}), {"A": "b"}), _Rows) == ["$.rows[1]"]
    body = SimulateBody.__new__(SimulateBody)
    object.__setattr__(body, "plan", None)
    object.__setattr__(body, "cross_check", None)
    object.__setattr__(body, "checks_failed", ())
    object.__setattr__(body, "allocation", {"ok": True})  # the dict it was before the record
    assert hand_written_dicts(body, SimulateBody) == ["$.allocation"]


def _results():
    import kvplan

    root = Path(__file__).resolve().parent.parent
    yield "simulate", kvplan.simulate("openai/gpt-oss-20b", drafter="amazon/GPT-OSS-20B-P-EAGLE",
                                      num_speculative_tokens=5, kv_cache_memory="64MiB", max_model_len=512)
    yield "simulate (fails)", kvplan.simulate("google/gemma-3-27b-it", kv_cache_memory="1GiB")
    yield "inspect", kvplan.inspect("Qwen/Qwen3-Next-80B-A3B-Thinking")
    yield "vllm", kvplan.vllm_serve(line="vllm serve openai/gpt-oss-20b -tp 2 --max-model-len 8k "
                                         "--gpu-memory-utilization 0.9", gpu="H100-80GB")
    yield "fit", kvplan.fit("openai/gpt-oss-20b", gpu="H100-80GB")
    yield "compare", kvplan.compare("google/gemma-3-27b-it", kv_cache_memory="8GiB", max_model_len=8192)
    yield "check", kvplan.check([str(root / "configs" / "deployments" / "gpt-oss-20b-peagle.yaml")])
    yield "models", kvplan.models()
    yield "policies", kvplan.policies()
    for log in sorted((root / "configs" / "logs").glob("*.log")):
        yield f"explain-log {log.name}", kvplan.explain_log(str(log))
    yield "explain-log (many facts)", kvplan.explain_log(str(root / "tests" / "logs" / "19-vllm-50722-qwen3.5-35b-a3b-memory-account.log"))


def test_no_result_holds_a_hand_written_dict():
    found = {}
    for name, env in _results():
        where = hand_written_dicts(env.inputs, Inputs, "$.inputs") + hand_written_dicts(env.outcome, Outcome)
        where += hand_written_dicts(env.body, type(env.body))
        if where:
            found[name] = where
    assert found == {}


# ---- one serializer: no *_dict builders ----------------------------------------------------------

# functions named to_dict / *_dict in kvplan/ that are not result builders: (module, function) → why
NOT_RESULT_BUILDERS = {
    ("kvplan/specs.py", "spec_to_dict"): "a spec as the vLLM runner's case file holds it (spec_from_dict's inverse)",
    ("kvplan/specs.py", "spec_from_dict"): "reads a spec back from a runner case",
    ("kvplan/verify/arch_runner.py", "_spec_dict"): "runs in vLLM's interpreter: its answer to kvplan, not a result",
    ("kvplan/logs/extract.py", "_literal_dict"): "parses a log's 'non-default args: {...}' line",
}


def test_every_to_dict_is_the_one_serializer():
    """A ``to_dict`` (or ``*_dict``) in kvplan/ returns ``to_data(self)`` (the one serializer), or is one of
    the few that do not build results (NOT_RESULT_BUILDERS)."""
    root = Path(__file__).resolve().parent.parent
    bad = []
    for path in sorted((root / "kvplan").rglob("*.py")):
        rel = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if not isinstance(node, ast.FunctionDef) or not (node.name == "to_dict" or node.name.endswith("_dict")):
                continue
            if (rel, node.name) in NOT_RESULT_BUILDERS:
                continue
            body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            delegates = (len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call)
                         and ast.unparse(body[0].value) == "to_data(self)")
            if not delegates:
                bad.append(f"{rel}:{node.lineno} {node.name}")
    assert bad == []
