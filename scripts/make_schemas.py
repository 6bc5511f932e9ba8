#!/usr/bin/env python3
"""Write the JSON Schemas of every command's output to docs/schema/<command>.json, generated from
the result records (kvplan.results): one envelope (``Envelope``) shared by all commands, then each
command's body record.

Every field of a record is a property, typed by its annotation and required (a field marked
``OMIT_NONE``, or typed ``X | Unset``, is a property the output may leave out):

    bool int float str      boolean integer number string
    X | None                X or null
    X | Unset               X, a key the output may leave out (kvplan.results.UNSET)
    tuple[X, ...]           an array of X
    dict[str, X] / dict     an object (of X values; a Mapping alike)
    Literal["a", "b"]       const / enum
    A | B (records)         anyOf
    a record                an object of its fields (a FLATTEN field's fields spread in place;
                            a key two fields may fill takes either's type);
                            closed (no other keys) where the record says SCHEMA_CLOSED
    Any / object            anything (an object another layer makes: see DETAIL)

A field whose type is data another layer assembles (``dict``, ``object``: fixes, the cross-check,
the engine rows) gets its published shape from ``DETAIL`` (the keys it always has);
every command's body is a record (``BODIES``). Bodies may grow keys (additionalProperties), the envelope and the outcome may not.
tests/test_api.py checks that the files are what this script writes, that every command's output
validates against them, and that they keep the published contract (tests/data/schema_published/).

    python scripts/make_schemas.py          # rewrite docs/schema/
    python scripts/make_schemas.py --check  # exit 1 if a file differs
"""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import sys
import types
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the kvplan of this checkout

from kvplan.results import Outcome, Unset  # noqa: E402
from kvplan.results.check import CheckBody  # noqa: E402
from kvplan.results.diff import DiffBody  # noqa: E402
from kvplan.results.emit import EmitBody  # noqa: E402
from kvplan.results.export import ExportBody  # noqa: E402
from kvplan.results.live import LiveBody  # noqa: E402
from kvplan.results.envelope import Envelope  # noqa: E402
from kvplan.results.records import InspectBody, SimulateBody  # noqa: E402
from kvplan.engines.registry import ENGINES  # noqa: E402
from kvplan.results.advice import Advice  # noqa: E402
from kvplan.results.compare import CompareBody, EngineRowRecord, EngineVersions  # noqa: E402
from kvplan.results.engines import NoKnobs  # noqa: E402
from kvplan.results.explain_log import ExplainLogBody, Rebuild  # noqa: E402
from kvplan.results.fit import FitBody  # noqa: E402
from kvplan.results.gpus import GpusBody  # noqa: E402
from kvplan.results.models import ModelsBody  # noqa: E402
from kvplan.results.policies import PoliciesBody  # noqa: E402
from kvplan.results.serve import ServeBody, ServeRecord  # noqa: E402
from kvplan.results.sweep import SweepBody  # noqa: E402
from kvplan.results.annotations import annotation_types  # noqa: E402

annotation_types()  # the body records' annotations name types loaded on demand

OUT = ROOT / "docs" / "schema"

INT = {"type": "integer"}
NUM = {"type": "number"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
OBJ = {"type": "object"}
ARR = {"type": "array"}
ANY: dict = {}


def nullable(s: dict) -> dict:
    if "type" not in s:  # anything, or a const/enum/anyOf
        return s if not s else {"anyOf": [s, {"type": "null"}]}
    t = s["type"]
    return {**s, "type": [t, "null"] if isinstance(t, str) else [*t, "null"]}


def obj(required: dict, *, closed: bool = False) -> dict:
    return {"type": "object", "required": list(required), "properties": required, "additionalProperties": not closed}


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


# The published shape of the fields whose values other layers assemble as data (record, field)
DETAIL: dict[tuple[type, str], dict] = {
    (CompareBody, "workload"): OBJ,
    (CompareBody, "lower_bound"): OBJ,
    (ServeRecord, "flags"): arr(obj({"flag": STR, "value": {}, "dest": STR,
                                     "effect": {"enum": ["applied", "no effect", "estimate"]},
                                     "applied_as": nullable(STR), "note": nullable(STR), "from": STR})),
    (ExplainLogBody, "release"): OBJ,
    # kvplan.usecases.explain_log.rebuild.Deployment, spread into ``rebuild``
    (Rebuild, "deployment"): obj({"model": nullable(STR), "policy": nullable(STR), "options": OBJ,
                                  "budget": nullable(obj({"kv_cache_memory_bytes": INT, "low_bytes": INT,
                                                          "high_bytes": INT, "exact": BOOL, "source": STR})),
                                  "assumed": arr(STR), "ignored_args": arr(STR)}),
}

_SCALARS = {bool: BOOL, int: INT, float: NUM, str: STR}


def _resolve(s):
    """A DETAIL schema with the records it names ("Outcome") written out."""
    if s == "Outcome":
        return schema_of(Outcome)
    if isinstance(s, dict):
        return {k: _resolve(v) for k, v in s.items()}
    if isinstance(s, list):
        return [_resolve(v) for v in s]
    return s


def schema_of(tp) -> dict:
    """The schema of one annotated type (the table in the module's docstring)."""
    if tp in _SCALARS:
        return _SCALARS[tp]
    if tp is typing.Any or tp is object:
        return ANY
    if tp is dict:
        return OBJ
    if tp is tuple or tp is list:
        return ARR
    if dataclasses.is_dataclass(tp):
        return record(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if origin in (tuple, list):
        return arr(schema_of(args[0]))
    if origin in (dict, collections.abc.Mapping):
        value = schema_of(args[1])
        return {"type": "object", "additionalProperties": value} if value else OBJ
    if origin in (typing.Union, types.UnionType):
        args = tuple(a for a in args if a is not Unset)  # a key left out, not a value
        rest = [a for a in args if a is not type(None)]
        one = schema_of(rest[0]) if len(rest) == 1 else {"anyOf": [schema_of(a) for a in rest]}
        return nullable(one) if len(rest) < len(args) else one
    raise TypeError(f"no schema for {tp!r}")


def _either(a: dict, b: dict) -> dict:
    """The schema of a key two fields may fill (explain-log's ``max_model_len``)."""
    if a == b:
        return a
    if set(a) == set(b) == {"type"}:  # plain types: their union
        ts = [*(a["type"] if isinstance(a["type"], list) else [a["type"]]),
              *(b["type"] if isinstance(b["type"], list) else [b["type"]])]
        ts = list(dict.fromkeys(ts))
        return {"type": ts[0] if len(ts) == 1 else ts}
    return {"anyOf": [*(a.get("anyOf") or [a]), *(b.get("anyOf") or [b])]}


def _fields(cls) -> tuple[dict, list[str]]:
    """A record's properties (FLATTEN fields spread) and its required keys."""
    hints = typing.get_type_hints(cls)
    props: dict = {}
    required: list[str] = []

    def put(key: str, s: dict) -> None:
        props[key] = _either(props[key], s) if key in props else s

    for f in dataclasses.fields(cls):
        detail = DETAIL.get((cls, f.name))
        s = _resolve(detail) if detail is not None else schema_of(hints[f.name])
        if f.metadata.get("flatten"):
            for k, v in (s.get("properties") or {}).items():
                put(k, v)
            if not f.metadata.get("omit_none"):  # a record left out while None: none of its keys is required
                required += s.get("required", [])
            continue
        if f.metadata.get("omit_none"):  # present only when asked for: its value is never null
            t = s.get("type")
            if isinstance(t, list):
                s = {**s, "type": [x for x in t if x != "null"][0]}
            elif "anyOf" in s:
                s = {"anyOf": [x for x in s["anyOf"] if x != {"type": "null"}]}
            put(f.name, s)
            continue
        put(f.name, s)
        if Unset not in typing.get_args(hints[f.name]):  # an UNSET field's key may be left out
            required.append(f.name)
    return props, required


def record(cls) -> dict:
    """An object schema read from a result record: every field, typed by its annotation."""
    props, required = _fields(cls)
    return {"type": "object", "required": required, "properties": props,
            "additionalProperties": not getattr(cls, "SCHEMA_CLOSED", False)}


# What names each engine in compare's records, from the registry (kvplan/engines/registry.py: a new engine is its
# module and one line there): each engine's advice key and its records, its version keys, its rows' knob records
DETAIL[(Advice, "engines")] = obj({e.name: schema_of(e.advice_type) for e in ENGINES})
DETAIL[(EngineVersions, "engines")] = obj({k: STR for e in ENGINES for k in e.versions(None)})
DETAIL[(EngineRowRecord, "knobs")] = {"anyOf": [schema_of(t) for t in (NoKnobs, *(e.knobs_type for e in ENGINES))]}


# each command's body: its record
BODIES: dict[str, type] = {
    "inspect": InspectBody,
    "simulate": SimulateBody,
    "vllm": ServeBody,
    "sweep": SweepBody,
    "compare": CompareBody,
    "fit": FitBody,
    "gpus": GpusBody,
    "check": CheckBody,
    "models": ModelsBody,
    "policies": PoliciesBody,
    "explain-log": ExplainLogBody,
    "export": ExportBody,
    "diff": DiffBody,
    "emit": EmitBody,
    "check-live": LiveBody,
}


def envelope(command: str, body) -> dict:
    props, required = _fields(Envelope)  # the body's keys come in its place, warnings after them
    head = {k: v for k, v in props.items() if k != "warnings"}
    head["schema_version"] = {"const": Envelope.__dataclass_fields__["schema_version"].default}
    head["command"] = {"const": command}
    body_props, body_required = _fields(body)
    head_required = [k for k in required if k != "warnings"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://kvplan.dev/schema/{command}.json",
        "title": f"kvplan {command} --format json",
        "type": "object",
        "required": [*head_required, *body_required, "warnings"],
        "properties": {**head, **body_props, "warnings": props["warnings"]},
        "additionalProperties": True,
    }


def schemas() -> dict[str, str]:
    return {f"{c}.json": json.dumps(envelope(c, b), indent=2) + "\n" for c, b in BODIES.items()}


def main(argv: list[str]) -> int:
    files = schemas()
    if "--check" in argv:
        stale = [n for n, text in files.items() if not (OUT / n).exists() or (OUT / n).read_text() != text]
        if stale:
            print(f"docs/schema out of date: {', '.join(stale)} (run scripts/make_schemas.py)")
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (OUT / name).write_text(text)
    print(f"wrote {len(files)} schemas to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
