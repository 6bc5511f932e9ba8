"""Every vLLM release kvplan accepts, the era each one maps to, and how a ``--policy`` is
resolved (a release, an era name, a proposal, the default).

The list is PyPI's (``pip index versions vllm``, read 2026-12-02) from 0.10.1, the first
release with gpt-oss, to 0.34.0. A release maps to the last era of ``eras.CHAIN`` whose
first release is not newer than it; the boundaries were pinned by reading each wheel
(``scripts/golden/fingerprint.py``) and confirmed by running the releases in
``GOLDEN_RELEASES`` on kvplan's golden cases (``tests/golden``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from kvplan.frozen import dataclass
from kvplan.engines.vllm.eras import CHAIN, DEFAULT_ERA, ERAS, LEGACY_NAMES, Era, decision_fields, era_name_of
from kvplan.engines.vllm.proposals import PROPOSALS
from kvplan.engines.vllm.versions import GOLDEN_RELEASES, NEWEST_CHECKED, VERSIONS, version_key
from kvplan.errors import OptionError

if TYPE_CHECKING:
    from kvplan.results.policies import PoliciesBody


@dataclass(frozen=True)
class Release:
    version: str
    era: str  # the era name (eras.CHAIN)


RELEASES: tuple[Release, ...] = tuple(Release(v, era_name_of(v)) for v in VERSIONS)
# the era of each release, read from the registry above (the chain's boundaries are looked up once, here)
ERA_OF_RELEASE: dict[str, str] = {r.version: r.era for r in RELEASES}

_VERSION_RE = re.compile(r"^\d{1,6}(\.\d{1,6}){1,3}$")  # a component of 7+ digits is no release's


def supported_range() -> str:
    return f"vllm=={VERSIONS[0]} to vllm=={NEWEST_CHECKED} ({len(VERSIONS)} releases; `kvplan policies` lists them)"


def era_of_release(version: str):
    """The era (with ``release`` set) of a release in the registry; OptionError otherwise."""

    if version not in ERA_OF_RELEASE:
        raise OptionError(f"unknown vLLM release {version!r}; kvplan supports {supported_range()}")
    return replace(ERAS[ERA_OF_RELEASE[version]], release=version)


def release_era(version: str, *, installed: bool = False):
    """``--policy vllm==X``: the era of X. A release newer than the newest checked one gets
    the newest rules and a one-line warning; an older or malformed version is an error that
    lists the supported range."""
    v = version.strip()
    clean = re.sub(r"(\.post\d+|\.dev\d+.*|\+.*|rc\d+)$", "", v[:200])
    if len(v) > 200 or not _VERSION_RE.match(clean):
        short = len(version) <= 60
        shown = repr(version) if short else f"{version[:40]!r}... ({len(version):,} characters)"
        raise OptionError(f"malformed vLLM version {shown} in --policy vllm=={version if short else 'X'}; "
                          f"kvplan supports {supported_range()}")
    note = "installed" if installed else ""
    if clean in VERSIONS:
        return replace(era_of_release(clean), release=v, release_note=note)
    if version_key(clean) > version_key(NEWEST_CHECKED):
        newest = era_of_release(NEWEST_CHECKED)
        warning = (f"vLLM {v} is newer than the newest release kvplan checked ({NEWEST_CHECKED}); "
                   f"using {NEWEST_CHECKED}'s rules ({newest.name})")
        return replace(newest, release=v, release_note=", ".join(x for x in (note, "unchecked") if x),
                       warning=warning)
    raise OptionError(f"unknown vLLM release {v!r}; kvplan supports {supported_range()}")


@lru_cache(maxsize=1)
def installed_vllm() -> str | None:
    """The vLLM release installed in this Python environment, read from its metadata
    (vLLM itself is never imported)."""
    from kvplan.installed import version

    return version("vllm")


def default_era():
    """The default policy: the installed vLLM release when there is one (marked
    ``installed``), else the newest checked release."""
    inst = installed_vllm()
    if inst is not None:
        try:
            return release_era(inst, installed=True)
        except OptionError:
            newest = era_of_release(NEWEST_CHECKED)
            return replace(newest, release=NEWEST_CHECKED, warning=(
                f"the installed vLLM {inst} is not a release kvplan knows ({supported_range()}); "
                f"using {NEWEST_CHECKED}'s rules"))
    return era_of_release(NEWEST_CHECKED)


def policies() -> PoliciesBody:
    """What ``kvplan policies --format json`` prints: releases, eras (with what changed at
    each boundary), legacy names and proposals."""
    from kvplan.results.policies import DefaultPolicy, EraRow, PoliciesBody, ProposalRow, ReleaseRow

    inst = installed_vllm()
    default = default_era()
    return PoliciesBody(
        default=DefaultPolicy(f"vllm=={default.release}", default.name, default.release_note.startswith("installed")),
        installed_vllm=inst,
        newest_checked=NEWEST_CHECKED,
        releases=tuple(ReleaseRow(r.version, r.era, r.version in GOLDEN_RELEASES) for r in RELEASES),
        eras=tuple(EraRow(name, first, tuple(ERAS[name].releases), desc, dict(changes), era_decisions(ERAS[name]))
                   for name, first, desc, changes in CHAIN),
        aliases={"vllm-latest": ERA_OF_RELEASE[NEWEST_CHECKED], **LEGACY_NAMES},
        proposals=tuple(ProposalRow(p.name, p.description, p.grouping) for p in PROPOSALS.values()),
    )


# The Era fields that are behaviour decisions (what docs/releases.md tabulates): all of them but the
# identity and provenance fields, read from the dataclass so a new decision cannot be left out.
DECISION_FIELDS: tuple[str, ...] = decision_fields()


def era_decisions(era) -> dict:
    return {f: getattr(era, f) for f in DECISION_FIELDS}


def releases_markdown() -> str:
    """docs/releases.md, generated from the registry (tests/test_releases.py keeps it in sync)."""

    lines = [
        "# vLLM releases and kvplan's eras",
        "",
        "Generated by `python -m kvplan.engines.vllm.releases > docs/releases.md` from",
        "`kvplan/engines/vllm/eras.py` (`CHAIN`) and `kvplan/engines/vllm/releases.py`; a test fails",
        "when this file and the registry differ. `--policy vllm==X` accepts every release below.",
        "",
        "## Eras: what changed at each boundary",
        "",
        "| era | first release | releases | what changed |",
        "|---|---|---|---|",
    ]
    for name, first, desc, _ in CHAIN:
        rels = ERAS[name].releases
        span = f"{rels[0]} … {rels[-1]}" if len(rels) > 1 else rels[0]
        lines.append(f"| `{name}` | {first} | {span} ({len(rels)}) | {desc} |")
    lines += ["", "## Decisions per era", "", "| decision | " + " | ".join(f"`{n}`" for n, *_ in CHAIN) + " |",
              "|---|" + "---|" * len(CHAIN)]
    for f in DECISION_FIELDS:
        lines.append(f"| {f} | " + " | ".join(_cell(getattr(ERAS[n], f)) for n, *_ in CHAIN) + " |")
    lines += ["", "## Releases", "", "| release | era | golden-tested |", "|---|---|---|"]
    for r in RELEASES:
        lines.append(f"| {r.version} | `{r.era}` | {'yes' if r.version in GOLDEN_RELEASES else ''} |")
    return "\n".join(lines) + "\n"


def _cell(value) -> str:
    return "–" if value is None else str(value)



def era_names() -> list[str]:
    return list(ERAS)


def get_era(name: str) -> Era:
    """Look up a policy: ``vllm-latest`` (the default: the installed vLLM release, else the
    newest checked), an era name, a legacy name (``vllm-1.5``), any release
    (``vllm==0.24.0``) or a proposal."""
    key = name.strip()
    if key == DEFAULT_ERA:
        return default_era()
    if key in ERAS:
        return ERAS[key]
    if key in LEGACY_NAMES:
        return ERAS[LEGACY_NAMES[key]]
    if key.startswith("vllm=="):
        return release_era(key[len("vllm=="):])
    if key in PROPOSALS:
        return PROPOSALS[key]
    choices = ", ".join([DEFAULT_ERA, *ERAS, *LEGACY_NAMES, *PROPOSALS])
    raise OptionError(f"unknown policy '{name}'; choose one of: {choices}, or a release: {supported_range()}")


if __name__ == "__main__":
    print(releases_markdown(), end="")
