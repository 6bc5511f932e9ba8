"""The result envelope every command returns (and ``--format json`` prints), in this order:

1. ``schema_version``, ``kvplan_version``, ``command``;
2. ``inputs``: the model and drafter as resolved (id, where the config came from), the policy
   with the vLLM releases it stands for, and every option's value marked ``given`` or not;
3. ``outcome``: one shape for success and failure (``kvplan.results``);
4. the command's body (its own record, spread into the envelope's keys); ``warnings`` last.

The envelope is a frozen record (``Envelope``) serialised by ``kvplan.results.to_data``; the
body carries only the command's own keys (no header to strip, no warnings to move). The library
returns it as it is: typed attributes (``r.outcome.starts``, ``r.body.memory.max_concurrency``),
and, being a dict too, the JSON data itself (``r["outcome"]["starts"]``, ``json.dumps(r)``).
The JSON Schemas in docs/schema/ are generated from these records (``scripts/make_schemas.py``).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from kvplan.frozen import dataclass
from kvplan.results import FLATTEN, SCHEMA_VERSION, Outcome, Record, to_data
from kvplan.version import __version__


@dataclass(frozen=True)
class Source:
    """Where a model's config came from (``kvplan.model`` ModelInfo's ``source``)."""

    id: str
    requested: str
    source: str
    path: str | None
    revision: str | None

    SCHEMA_CLOSED = True


@dataclass(frozen=True)
class OptionValue:
    """One option as the command received it: its typed value, and whether it was given."""

    value: Any
    given: bool

    SCHEMA_CLOSED = True


@dataclass(frozen=True)
class PolicyInputs:
    """The policy as the envelope's inputs show it: the plan's ``PolicyRecord`` (``kvplan.results.records``)
    cut to what was asked for."""

    name: str
    vllm_release: str | None
    release_note: str | None
    vllm_releases: tuple[str, ...]
    threshold: float | None
    is_proposal: bool


@dataclass(frozen=True)
class Inputs:
    model: Source | None
    drafter: Source | None
    policy: PolicyInputs | None
    options: dict[str, OptionValue]  # kvplan.options.Resolved.inputs, in the table's order

    SCHEMA_CLOSED = True


@dataclass(frozen=True, kw_only=True, eq=False)
class Envelope(Record, dict):
    """One command's result. ``body`` is the command's body record.

    The record is also the dict ``--format json`` prints (filled once, when it is made), so a caller
    that reads, compares or dumps it as JSON keeps doing so; ``to_dict()`` gives a fresh copy."""

    schema_version: int = SCHEMA_VERSION
    kvplan_version: str = __version__
    command: str
    inputs: Inputs
    outcome: Outcome
    body: Any = field(metadata=FLATTEN)
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        dict.update(self, to_data(self))

    def to_dict(self) -> dict:
        """The JSON data, a new dict each call (the caller may change it)."""
        return to_data(self)

    def __repr__(self) -> str:
        return f"Envelope(command={self.command!r}, outcome={self.outcome!r}, body={type(self.body).__name__})"


def unique(*lists) -> tuple[str, ...]:
    """The warnings of ``lists`` in order, each once."""
    seen: list[str] = []
    for items in lists:
        for w in items or ():
            if w not in seen:
                seen.append(w)
    return tuple(seen)
