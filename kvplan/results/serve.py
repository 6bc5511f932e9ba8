"""``kvplan vllm``'s records: the serve line as read, flag by flag, and its simulation."""

from __future__ import annotations

from dataclasses import dataclass, field

from typing import Literal

from kvplan.results import FLATTEN, OMIT_NONE, Record
from kvplan.results.records import Fix, SimulateBody


@dataclass(frozen=True)
class FlagList:
    """The ``vllm serve`` flag list a line was read with (a release's own, or its nearest)."""

    release: str
    source: str
    note: str | None


@dataclass(frozen=True)
class ServeFlagRow(Record):
    """One flag of a serve line and what kvplan did with it (``kvplan.serve.read_serve``). The
    key ``from`` (a Python keyword) reads ``origin``."""

    flag: str  # as the line spells it (--max-model, -tp)
    value: object  # as given: text, a bool for a switch, a list, None
    dest: str  # vLLM's argument name
    effect: str  # applied, no effect, estimate, not modelled (kvplan.serve.effects)
    applied_as: str | None  # the kvplan option it set
    note: str | None
    origin: str  # line, config file, dotted (kvplan.serve.args.Given.origin)

    DATA = {"flag": "flag", "value": "value", "dest": "dest", "effect": "effect", "applied_as": "applied_as",
            "note": "note", "from": "origin"}


@dataclass(frozen=True)
class ServeRecord:
    """``kvplan vllm``'s ``serve`` section: the line, the release it is read with and why, and what
    kvplan did with every flag and environment variable."""

    form: Literal["vllm serve", "api_server", "docker"]
    line: str | None
    image: str | None
    manifest: str | None  # --file: the manifest's file and line
    model: str
    release: str
    release_source: str
    flag_list: FlagList
    flags: tuple[ServeFlagRow, ...]  # kvplan.serve.read_serve
    environment: dict[str, str]  # the VLLM_* variables the line sets
    environment_applied: bool
    environment_ignored: tuple[str, ...]


@dataclass(frozen=True)
class ServeBody:
    """``kvplan vllm``: simulate's body, then the ``serve`` section."""

    simulate: SimulateBody = field(metadata=FLATTEN)
    serve: ServeRecord
