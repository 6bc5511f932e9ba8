"""Results as one tree of records, below the use cases and the renderers: the outcome shape
(here), the body records (``records``, ``check``, ``fit``, ``budget``; ``allocation`` for
``--allocate``, ``recovered`` for explain-log's summary), the envelope every command returns
(``envelope``), labels (``data``) and the explanation lines (``explain``).

Result records are frozen dataclasses; ``to_data`` is the one serializer that turns them into
what ``--format json`` prints: keys in field order, tuples as lists, sizes left as the integer
bytes they are, a field marked ``FLATTEN`` spread into its parent (the envelope's body), one
marked ``OMIT_NONE`` left out while None and one holding ``UNSET`` left out (a key a source may
show with the value None, and may not show at all), a float marked ``rounded(digits)`` (``PCT``,
``CONCURRENCY``) rounded: the records keep the exact figures and only their data is rounded. No record
writes its own dict. ``scripts/make_schemas.py`` reads the same fields and their types for the JSON Schemas in docs/schema/.

The one shape of an outcome, for every command and every row that can fail.

``ok``: the command's question got the answer the user wants (the engine starts; a check
passed). ``starts``: whether the engine would start (None where no engine ran). ``stage``:
where it failed (vLLM's function or kvplan's stage). ``error_type`` and ``error``: the
exception and its text, as the engine would print them. ``fix``: the smallest change that
makes it start, when one is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import ClassVar

from kvplan.frozen import dataclass

SCHEMA_VERSION = 2  # 2: the envelope (inputs, outcome) of kvplan.results.envelope

# dataclass field metadata: the field's mapping is spread into its parent's keys (the envelope's body)
FLATTEN = {"flatten": True}
# dataclass field metadata: the key is left out while the value is None (a key present only when asked
# for: simulate's ``budget``, ``cross_check``, ``allocation``); the schemas do not require it
OMIT_NONE = {"omit_none": True}


def rounded(digits: int, **more: bool) -> dict:
    """Dataclass field metadata: the float is shown rounded to ``digits`` (the record keeps the exact figure;
    ``to_data`` rounds it); ``more`` adds other marks (``omit_none=True``)."""
    return {"digits": digits, **more}


# the digits a plan's figures are shown with: a share in percent, a concurrency (requests)
PCT_DIGITS = 4
CONCURRENCY_DIGITS = 6
PCT = rounded(PCT_DIGITS)
CONCURRENCY = rounded(CONCURRENCY_DIGITS)


class Unset:
    """The type of ``UNSET``: a field holding it is left out of the data (its key is absent), where
    None is a value the source showed (explain-log's engine config line prints ``quantization=None``).
    Annotate such a field ``X | None | Unset``; the schemas do not require it."""

    _one: "Unset | None" = None

    def __new__(cls) -> "Unset":
        if cls._one is None:
            cls._one = super().__new__(cls)
        return cls._one

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET = Unset()


@dataclass(frozen=True)
class Attr:
    """One key of a record's ``DATA`` view: the attribute (field or property; dotted for an
    attribute's attribute) it reads, a float rounded to ``digits``."""

    name: str
    digits: int | None = None


class Record:
    """A result object whose keys are not its fields: ``DATA`` maps each key, in order, to the
    attribute it reads (a name, or an ``Attr`` with rounding). ``to_data`` serialises it; no
    record writes its own dict."""

    DATA: ClassVar[dict] = {}

    def to_dict(self) -> dict:
        return to_data(self)


def _read(obj, attr):
    a = attr if isinstance(attr, Attr) else Attr(attr)
    v = obj
    for part in a.name.split("."):
        v = getattr(v, part)
    return round(v, a.digits) if a.digits is not None and isinstance(v, float) else v


def view(obj, data: dict) -> dict | None:
    """``obj`` (an object of a layer above, which cannot be a ``Record``) by a ``DATA`` view."""
    return None if obj is None else {k: to_data(_read(obj, a)) for k, a in data.items()}


def shown(record, name: str):
    """The field ``name`` of the dataclass ``record`` as the serializer shows it (a float marked
    ``rounded`` rounded): what a check compares with a limit the user read from the JSON."""
    raw = getattr(record, name)
    digits = record.__dataclass_fields__[name].metadata.get("digits")
    return round(raw, digits) if digits is not None and isinstance(raw, float) else raw


def to_data(value):
    """The plain data of a result: a ``Record`` by its ``DATA`` view, other dataclasses as dicts in
    field order (``FLATTEN`` fields spread in place, ``OMIT_NONE`` ones left out while None,
    ``UNSET`` ones left out, a float marked ``rounded(digits)`` rounded: records keep exact figures), tuples
    and lists as lists, mappings with their values converted; everything else as it is (integers stay integers)."""
    if isinstance(value, Record) and type(value).DATA:
        return view(value, type(value).DATA)
    if is_dataclass(value) and not isinstance(value, type):
        out: dict = {}
        for f in fields(value):
            raw = getattr(value, f.name)
            if raw is UNSET or (raw is None and f.metadata.get("omit_none")):
                continue
            digits = f.metadata.get("digits")
            v = round(raw, digits) if digits is not None and isinstance(raw, float) else to_data(raw)
            if f.metadata.get("flatten"):
                out.update(v)
            else:
                out[f.name] = v
        return out
    if isinstance(value, Mapping):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    return value


@dataclass(frozen=True)
class Outcome:
    ok: bool
    starts: bool | None = None
    stage: str | None = None
    error_type: str | None = None
    error: str | None = None
    fix: str | None = None

    SCHEMA_CLOSED = True  # the schemas allow no other key


def outcome(*, ok: bool, starts: bool | None = None, stage: str | None = None, error_type: str | None = None,
            error: str | None = None, fix: str | None = None) -> Outcome:
    return Outcome(ok, starts, stage, error_type, error, fix)
