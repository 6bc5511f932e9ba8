"""``kvplan policies``'s records: the releases, their eras and the decisions that differ."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DefaultPolicy:
    policy: str  # vllm==X
    era: str
    installed: bool  # the installed vLLM picked it


@dataclass(frozen=True)
class ReleaseRow:
    version: str
    era: str
    golden: bool  # golden-tested


@dataclass(frozen=True)
class EraRow:
    name: str
    first_release: str
    releases: tuple[str, ...]
    description: str
    changes: dict  # the Era fields that changed at this boundary, with their new values
    decisions: dict  # every behaviour decision of the era (kvplan.engines.vllm.releases.DECISION_FIELDS)


@dataclass(frozen=True)
class ProposalRow:
    name: str
    description: str
    grouping: str  # the group-size rule (kvplan.engines.vllm.proposals)


@dataclass(frozen=True)
class PoliciesBody:
    """``kvplan policies``: releases, eras (with what changed at each boundary), legacy names, proposals."""

    default: DefaultPolicy
    installed_vllm: str | None
    newest_checked: str
    releases: tuple[ReleaseRow, ...]
    eras: tuple[EraRow, ...]
    aliases: dict[str, str]
    proposals: tuple[ProposalRow, ...]
