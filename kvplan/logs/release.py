"""Which vLLM release printed a log: the version banner when the log has one, else the releases
whose sources have every line of the log in that wording and, where the prefix shows it, at that
``file.py:line`` (``kvplan/logs/fingerprints.py``, generated from each release's wheel by
``scripts/golden/log_fingerprint.py``).

A line whose wording no release has (another engine's, a fork's) is no evidence; a line whose
site no release has at that wording (a development build) counts by its wording alone; a line
that contradicts the others is left out and said (``conflicts``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from kvplan.logs.fingerprints import RELEASES, WORDINGS
from kvplan.logs.reader import Record
from kvplan.results import Record as ResultRecord

_EXCEPTION = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception): ")
_PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-+ #0]*\d*(?:\.\d+)?[sdifrgx]|\{[^{}]*\}")


def _spans(text: str) -> frozenset[str]:
    out = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(RELEASES[int(a):int(b or a) + 1])
    return frozenset(out)


def _regex(fmt: str) -> re.Pattern:
    """A format string as a pattern over the printed message: each placeholder any text, the
    literals as written; a multi-line message is matched on its first line."""
    first, multi = fmt.split("\n", 1)[0], "\n" in fmt
    parts, pos = [], 0
    for m in _PLACEHOLDER.finditer(first):
        parts += [re.escape(first[pos:m.start()]), ".*?"]
        pos = m.end()
    parts.append(re.escape(first[pos:]))
    body = "".join(parts).replace("%%", "%")
    return re.compile(body + ("" if multi or first.endswith(("%s", "}")) else r"\s*$"))


@dataclass(frozen=True)
class _Wording:
    kind: str
    regex: re.Pattern
    literal: int  # characters of literal text (a specific wording beats a generic one)
    releases: frozenset[str]
    sites: dict


@lru_cache(maxsize=1)
def _wordings() -> tuple[_Wording, ...]:
    out = []
    for kind, fmt, rels, sites in WORDINGS:
        literal = len(_PLACEHOLDER.sub("", fmt.split("\n", 1)[0]))
        if literal < 12:  # "%s" alone, or nearly: matches anything
            continue
        out.append(_Wording(kind, _regex(fmt), literal, _spans(rels), {s: _spans(r) for s, r in sites.items()}))
    return tuple(out)


@dataclass
class ReleaseGuess(ResultRecord):
    """``releases``: the candidates, oldest first (empty: nothing in the log tells)."""

    releases: tuple[str, ...] = ()
    source: str = ""  # "the banner" | "N lines' wordings and source sites"
    lines: list[int] = field(default_factory=list)  # the log lines that narrowed it
    conflicts: list[int] = field(default_factory=list)  # lines no release shares with the others

    @property
    def text(self) -> str | None:
        if not self.releases:
            return None
        span = self.releases[0] if len(self.releases) == 1 else f"{self.releases[0]}–{self.releases[-1]}"
        return f"{span} (from {self.source})"

    @property
    def source_or_none(self) -> str | None:
        return self.source or None

    DATA = {"release": "text", "candidates": "releases", "source": "source_or_none", "lines": "lines",
            "conflicts": "conflicts"}


def _candidates(record: Record) -> tuple[frozenset[str], bool] | None:
    """The releases that print this record's message (at its site, when the prefix shows one),
    and whether the site counted; None when no release has the wording."""
    message = _EXCEPTION.sub("", record.message)
    hits = [w for w in _wordings() if w.regex.match(message)]
    if not hits:
        return None
    best = max(w.literal for w in hits)
    hits = [w for w in hits if w.literal == best]
    by_wording = frozenset().union(*(w.releases for w in hits))
    if record.site:
        at_site = frozenset().union(*(w.sites.get(record.site, frozenset()) for w in hits))
        if at_site:
            return at_site, True
    return by_wording, False


def infer_release(records: list[Record], banner: str | None = None) -> ReleaseGuess:
    """The release range the records show (``banner``: the version the log prints, if any)."""
    if banner:
        return ReleaseGuess((banner,), "the banner")
    current = frozenset(RELEASES)
    used: list[int] = []
    sited = 0
    conflicts: list[int] = []
    for r in records:
        got = _candidates(r)
        if got is None:
            continue
        rels, by_site = got
        narrowed = current & rels
        if not narrowed:
            conflicts.append(r.number)
            continue
        if narrowed != current or by_site:
            used.append(r.number)
        sited += by_site
        current = narrowed
    if current == frozenset(RELEASES):
        return ReleaseGuess(conflicts=conflicts)
    n = len(used)
    source = (f"{n} lines' wording" if n != 1 else "1 line's wording") + (
        f" and {sited} source site{'s' if sited != 1 else ''}" if sited else "")
    return ReleaseGuess(tuple(v for v in RELEASES if v in current), source, used, conflicts)
