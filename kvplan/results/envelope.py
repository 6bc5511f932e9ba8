"""The result envelope every command returns (and ``--format json`` prints), in this order:

1. ``schema_version``, ``kvplan_version``, ``command``;
2. ``inputs``: the model and drafter as resolved (id, where the config came from), the policy
   with the vLLM releases it stands for, and every option's value marked ``given`` or not;
3. ``outcome``: one shape for success and failure (``kvplan.results``);
4. the command's body; ``warnings`` last.

The envelope is a frozen record (``Envelope``) serialised by ``kvplan.results.to_data``; the
body carries only the command's own keys (no header to strip). The JSON Schemas in
docs/schema/ describe it (``scripts/make_schemas.py`` reads these records); tests validate
every command against them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import FLATTEN, SCHEMA_VERSION, Outcome, Record, to_data
from kvplan.results.data import PolicyRecord
from kvplan.version import __version__


@dataclass(frozen=True)
class Source:
    """Where a model's config came from (``kvplan.model`` ModelInfo's ``source``)."""

    id: str
    requested: str
    source: str
    path: str | None
    revision: str | None

    @classmethod
    def of(cls, info) -> "Source | None":
        if info is None:
            return None
        src = info.source
        return cls(src.model_id, src.requested, src.kind, src.path, src.revision)


@dataclass(frozen=True)
class Inputs:
    model: Source | None
    drafter: Source | None
    policy: dict | None  # PolicyRecord's INPUT_KEYS
    options: dict  # kvplan.options.Resolved.to_dict(): {name: {value, given}}


@dataclass(frozen=True, kw_only=True)
class Envelope(Record):
    schema_version: int = SCHEMA_VERSION
    kvplan_version: str = __version__
    command: str
    inputs: Inputs
    outcome: Outcome | dict
    body: dict = field(metadata=FLATTEN)
    warnings: tuple[str, ...] = ()


def source_dict(info) -> dict | None:
    """Where a model's config came from (``kvplan.model`` ModelInfo)."""
    return to_data(Source.of(info))


def policy_dict(era) -> dict | None:
    """The policy as the inputs show it: the era's one serialisation, cut to ``INPUT_KEYS``."""
    if era is None:
        return None
    full = to_data(PolicyRecord.of(era))
    return {k: full[k] for k in PolicyRecord.INPUT_KEYS}


def envelope(command: str, *, options: dict | None, outcome: dict, body: dict, model=None, drafter=None,
             era=None, warnings: list[str] | None = None) -> dict:
    """``options`` is ``kvplan.options.Resolved.to_dict()`` (``{name: {value, given}}``); the body's
    own ``warnings`` follow ``warnings``, each once."""
    body_warnings = body.get("warnings", [])
    seen: list[str] = []
    for w in [*(warnings or []), *body_warnings]:
        if w not in seen:
            seen.append(w)
    inputs = Inputs(Source.of(model), Source.of(drafter), policy_dict(era), options or {})
    return Envelope(command=command, inputs=inputs, outcome=outcome,
                    body={k: v for k, v in body.items() if k != "warnings"}, warnings=tuple(seen)).to_dict()
