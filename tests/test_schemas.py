"""The JSON Schemas in docs/schema/ are generated from the result records (scripts/make_schemas.py)
and keep the published contract: tests/data/schema_published/ holds the schemas as first published
(schema_version 2, hand-written); every key they require is still required, with the same type or
a narrower one, and a closed object stays closed with the same keys. A consumer that validated
kvplan's output against the published schema can validate it against the generated one.

(That docs/schema/ is what the script writes, and that every command's output validates against
it: tests/test_api.py.)"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from factories import script_module
from kvplan.results import UNSET, Unset

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "tests" / "data" / "schema_published"
CURRENT = ROOT / "docs" / "schema"


def _make_schemas():
    return script_module("scripts/make_schemas.py")


def _types(s: dict) -> set[str] | None:
    """The JSON types a schema allows (None: any)."""
    if "anyOf" in s:
        out: set[str] = set()
        for b in s["anyOf"]:
            t = _types(b)
            if t is None:
                return None
            out |= t
        return out
    if "const" in s:
        return {_json_type(s["const"])}
    if "enum" in s:
        return {_json_type(v) for v in s["enum"]}
    t = s.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


def _json_type(v) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}[type(v)]


def _values(s: dict) -> set | None:
    if "const" in s:
        return {s["const"]}
    if "enum" in s:
        return set(s["enum"])
    return None


def narrower(old: dict, new: dict, path: str = "$") -> list[str]:
    """What ``new`` allows that ``old`` did not, on the keys ``old`` specifies (empty: compatible)."""
    if not old:  # the published schema allowed anything here
        return []
    if "anyOf" in new:
        return [p for b in new["anyOf"] for p in narrower(old, b, path)]
    problems: list[str] = []
    old_t, new_t = _types(old), _types(new)
    if old_t is not None:
        widened = {"integer"} if "number" in old_t else set()
        if new_t is None or not new_t <= old_t | widened:
            problems.append(f"{path}: type {sorted(new_t or ['any'])} is not within {sorted(old_t)}")
    old_v, new_v = _values(old), _values(new)
    if old_v is not None and (new_v is None or not new_v <= old_v):
        problems.append(f"{path}: values {new_v} are not within {old_v}")
    if "items" in old:
        problems += narrower(old["items"], new.get("items", {}), path + "[]")
    if "properties" in old:
        new_props, new_req = new.get("properties", {}), set(new.get("required", []))
        for k in old.get("required", []):
            if k not in new_req:
                problems.append(f"{path}.{k}: required before, not now")
        for k, s in old["properties"].items():
            if k in new_props:
                problems += narrower(s, new_props[k], f"{path}.{k}")
            elif old.get("additionalProperties") is False or k in old.get("required", []):
                problems.append(f"{path}.{k}: no longer described")
        if old.get("additionalProperties") is False:
            if new.get("additionalProperties") is not False:
                problems.append(f"{path}: was closed, now open")
            extra = set(new_props) - set(old["properties"])
            if extra:
                problems.append(f"{path}: closed object gained {sorted(extra)}")
    if isinstance(old.get("additionalProperties"), dict):
        problems += narrower(old["additionalProperties"], new.get("additionalProperties") or {}, path + ".*")
    return problems


@pytest.mark.parametrize("name", sorted(p.name for p in PUBLISHED.glob("*.json")))
def test_generated_schemas_keep_the_published_contract(name):
    old = json.loads((PUBLISHED / name).read_text())
    new = json.loads((CURRENT / name).read_text())
    assert narrower(old, new) == []


def test_the_contract_check_finds_a_change():
    # guards the test itself: a dropped required key, a wider type and an opened object are found
    old = {"type": "object", "required": ["a", "b"], "additionalProperties": False,
           "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
    new = {"type": "object", "required": ["a"], "additionalProperties": True,
           "properties": {"a": {"type": ["integer", "null"]}, "b": {"type": "string"}, "c": {}}}
    found = narrower(old, new)
    assert any("$.b: required before" in p for p in found)
    assert any("$.a: type" in p for p in found)
    assert any("was closed, now open" in p for p in found)
    assert narrower(old, old) == []


@dataclass(frozen=True)
class _Inner:
    n_bytes: int
    SCHEMA_CLOSED = True


@dataclass(frozen=True)
class _Row:
    name: str
    share: float
    tags: tuple[str, ...]
    inner: _Inner | None
    kind: Literal["a", "b"]
    extra: dict[str, str]
    maybe: int | None = field(default=None, metadata={"omit_none": True})


def test_field_types_become_json_types():
    s = _make_schemas().record(_Row)
    assert s["required"] == ["name", "share", "tags", "inner", "kind", "extra"]
    p = s["properties"]
    assert p["name"] == {"type": "string"} and p["share"] == {"type": "number"}
    assert p["tags"] == {"type": "array", "items": {"type": "string"}}
    assert p["inner"]["type"] == ["object", "null"] and p["inner"]["additionalProperties"] is False
    assert p["inner"]["properties"] == {"n_bytes": {"type": "integer"}}
    assert p["kind"] == {"enum": ["a", "b"]}
    assert p["extra"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert p["maybe"] == {"type": "integer"}  # present only when set: never null, not required


@dataclass(frozen=True)
class _Config:
    limit: int | None | Unset = UNSET  # a line may print None, or not show the key
    name: str | None | Unset = UNSET


@dataclass(frozen=True)
class _Summary:
    head: str
    config: _Config | None = field(default=None, metadata={"flatten": True, "omit_none": True})
    limit: int | None = field(default=None, metadata={"omit_none": True})  # where the config has none


def test_unset_fields_an_optional_flattened_record_and_a_key_two_fields_fill():
    s = _make_schemas().record(_Summary)
    assert s["required"] == ["head"]  # an UNSET key, and the keys of a record that may be absent, are not
    assert list(s["properties"]) == ["head", "limit", "name"]  # the key keeps its first place
    assert s["properties"]["limit"] == {"type": ["integer", "null"]}  # either field's type
    assert s["properties"]["name"] == {"type": ["string", "null"]}
