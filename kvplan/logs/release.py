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
def _unexcepted(text: str) -> str:
    """The text without an exception type before it ("ValueError: …")."""
    return _EXCEPTION.sub("", text) if ("Error: " in text or "Exception: " in text) else text


_PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-+ #0]*\d*(?:\.\d+)?[sdifrgx]|\{[^{}]*\}")


def _spans(text: str) -> frozenset[str]:
    out: set[str] = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(RELEASES[int(a):int(b or a) + 1])
    return frozenset(out)


def _literals_of(first: str) -> tuple[str, ...]:
    """The literal text of a format's first line, split at its placeholders (``%%`` printed as ``%``)."""
    return tuple(lit.replace("%%", "%") for lit in _PLACEHOLDER.split(first))


@dataclass(frozen=True)
class _Template:
    """A format as a matcher over the printed message: its literals in order, each placeholder any text
    between them; a multi-line message is matched on its first line. Matched by finding each literal
    at its leftmost place after the one before (``str.find``), which is linear in the message: a pattern
    of literals joined by lazy ``.*?`` backtracks polynomially (one memory-account line repeated ten
    times on one line took 10 s, issue 39). Leftmost placement is exact here: a placeholder takes any
    text, so the earliest place for a literal leaves the most room for the ones after it."""

    literals: tuple[str, ...]
    anchored_end: bool  # the format ends in literal text: only whitespace may follow it

    @classmethod
    def of(cls, fmt: str) -> "_Template":
        first, multi = fmt.split("\n", 1)[0], "\n" in fmt
        return cls(_literals_of(first), not (multi or first.endswith(("%s", "}"))))

    def match(self, text: str) -> bool:
        lits = self.literals
        if not text.startswith(lits[0]):
            return False
        if len(lits) == 1:
            return not self.anchored_end or not text[len(lits[0]):].strip()
        pos = len(lits[0])
        for lit in lits[1:-1]:
            at = text.find(lit, pos)
            if at < 0:
                return False
            pos = at + len(lit)
        last = lits[-1]
        if not self.anchored_end:
            return text.find(last, pos) >= 0
        # the last literal ends where only whitespace follows: at or after the end of the stripped text
        return text.find(last, max(pos, len(text.rstrip()) - len(last))) >= 0


@dataclass(frozen=True)
class _Wording:
    kind: str
    template: _Template
    literal: int  # characters of literal text (a specific wording beats a generic one)
    releases: frozenset[str]
    sites: dict
    first: str = ""  # the format's first line


# a placeholder that prints one word on a GPU, counted as that literal (so the wording is as specific as the
# releases that wrote the word out): 0.30-0.34's "%s KV cache size: %s tokens, Maximum concurrency …" names the
# pool "GPU" for CUDA (v1/core/kv_cache_utils.py _kv_cache_device_name, 0.34.0 l. 1150-1152), the same text
# 0.28-0.29 print as "GPU KV cache size: …"
_USUAL = (("%s KV cache size: ", "GPU"),)


@lru_cache(maxsize=1)
def _wordings() -> tuple[_Wording, ...]:
    out = []
    for kind, fmt, rels, sites in WORDINGS:
        # spaces do not count: 0.13.0's "… GiB). {estimated_msg} Try …" (v1/core/kv_cache_utils.py:710) and
        # 0.14-0.21's "… GiB). {estimated_msg}Try …" (kv_cache_utils.py:634 in 0.14.0, its estimated_msg ending in
        # ". ") print the same text, so neither is the more specific
        literal = len(re.sub(r"\s+", "", _PLACEHOLDER.sub("", fmt.split("\n", 1)[0])))
        if literal < 12:  # "%s" alone, or nearly: matches anything
            continue
        literal += sum(len(word) for start, word in _USUAL if fmt.startswith(start))
        out.append(_Wording(kind, _Template.of(fmt), literal, _spans(rels), {s: _spans(r) for s, r in sites.items()},
                            fmt.split("\n", 1)[0]))
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


_CUT_EVIDENCE = 40  # characters of a wording's literal text a cut line must show to count


@lru_cache(maxsize=None)
def _literals(fmt_first: str) -> tuple[str, ...]:
    return _literals_of(fmt_first)


@lru_cache(maxsize=None)
def _reach(fmt_first: str) -> tuple[int, ...]:
    """``_reach(f)[i]``: the literal text (spaces not counted) of the format's first ``i`` literals."""
    out = [0]
    for lit in _literals(fmt_first):
        out.append(out[-1] + len(re.sub(r"\s+", "", lit)))
    return tuple(out)


def _shown(fmt_first: str, text: str, floor: int = 0) -> int:
    """How much of a wording's literal text (spaces not counted) a line cut short shows, when the
    line is the start of that wording's message; 0 when it is not. The literals are placed leftmost
    one after the other (as in ``_Template``); what follows the last one placed may be the start of
    the next. ``floor``: a count under it may be answered 0 (it cannot count as evidence)."""
    lits = _literals(fmt_first)
    if lits[0].startswith(text):
        return len(re.sub(r"\s+", "", text))
    if not text.startswith(lits[0]):
        return 0
    # place the literals leftmost in turn; what follows the last one placed may start the next
    i, pos = 1, len(lits[0])
    while i + 1 < len(lits):
        at = text.find(lits[i], pos)
        if at < 0:
            break
        pos, i = at + len(lits[i]), i + 1
    if len(lits) == 1:
        return 0
    reach = _reach(fmt_first)
    if reach[i + 1] < floor:  # even the whole next literal would not reach the floor
        return 0
    nxt, rest = lits[i], text[pos:]
    if floor > reach[i]:  # the line must end with at least the start of the next literal that reaches it
        need = _least_start(nxt, floor - reach[i])
        if rest.find(need, max(0, len(rest) - len(nxt))) < 0:
            return 0
    return len(re.sub(r"\s+", "", "".join(lits[:i]) + nxt[:_overlap(rest, nxt)]))


@lru_cache(maxsize=None)
def _least_start(literal: str, count: int) -> str:
    """The shortest start of ``literal`` that holds ``count`` characters other than spaces."""
    seen = 0
    for k, c in enumerate(literal, start=1):
        seen += not c.isspace()
        if seen >= count:
            return literal[:k]
    return literal


def _overlap(rest: str, nxt: str) -> int:
    """The length of the longest end of ``rest`` that is a start of ``nxt`` (tried only where ``rest``
    holds ``nxt``'s first character, longest first)."""
    if not rest or not nxt:
        return 0
    at = rest.find(nxt[0], max(0, len(rest) - len(nxt)))
    while at >= 0:
        k = len(rest) - at
        if nxt.startswith(rest[at:]):
            return k
        at = rest.find(nxt[0], at + 1)
    return 0


def _cut_hits(record: Record) -> list["_Wording"]:
    """The wordings a line cut short (the rest of the message lost, or wrapped onto the following
    lines) is the start of: those that account for the most of its literal text, at least
    ``_CUT_EVIDENCE`` characters of it (vllm#34076's error stops at "… for mo"). A whole line whose
    text leaves a wording inside a placeholder (which may hold any text) reads the same way: the
    admission error 0.33.0 prints with "(which also controls CPU memory on the CPU backend)"
    (v1/core/kv_cache_planning.py:77 of the unpacked 0.33.0 wheel) is not in fingerprints.py, whose
    0.33.0 entry has the plain wording, and counts by the 0.22-0.33 wording it starts like."""
    # a text shows at most its own length of literal text: one under _CUT_EVIDENCE cannot count
    texts = [t for t in map(_unexcepted, dict.fromkeys(record.candidates())) if len(t) >= _CUT_EVIDENCE]
    if not texts:
        return []
    # per wording, the texts it may start (its first literal starts the text, or the text it: else
    # _shown is 0); a wording holds a dict, so it is keyed by id
    tried: dict[int, tuple] = {}
    for t in texts:
        for w in _worded(t):
            first = w.template.literals[0]
            if t.startswith(first) or first.startswith(t):
                tried.setdefault(id(w), (w, []))[1].append(t)
    scored = []
    for w, ts in tried.values():
        n = max(_shown(w.first, t, _CUT_EVIDENCE) for t in ts)
        if n >= _CUT_EVIDENCE:
            scored.append((n, w))
    if not scored:
        return []
    top = max(n for n, _ in scored)
    return [w for n, w in scored if n == top]


_KEY = 4  # characters of a wording's first literal that index it


@lru_cache(maxsize=1)
def _index() -> tuple[dict, tuple]:
    """The wordings by the first ``_KEY`` characters of their first literal (a message a wording
    matches, or a cut line it is the start of, begins with them), and those whose first literal is
    shorter (always tried): a long log's lines are tried against a handful of wordings, not all."""
    by_key: dict = {}
    always = []
    for w in _wordings():
        first = w.template.literals[0]
        if len(first) >= _KEY:
            by_key.setdefault(first[:_KEY], []).append(w)
        else:
            always.append(w)
    return {k: (*v, *always) for k, v in by_key.items()}, tuple(always)


def _worded(text: str) -> tuple["_Wording", ...]:
    """The wordings that may match ``text`` (whole, or as its start)."""
    by_key, always = _index()
    if len(text) < _KEY:
        return _wordings()
    return by_key.get(text[:_KEY], always)


def _candidates(record: Record) -> tuple[frozenset[str], bool] | None:
    """The releases that print this record's message (at its site, when the prefix shows one),
    and whether the site counted; None when no release has the wording. A message no wording
    matches whole may be one cut short: the wordings it is the start of count."""
    message = _unexcepted(record.message)
    hits = [w for w in _worded(message) if w.template.match(message)]
    if hits:
        best = max(w.literal for w in hits)
        hits = [w for w in hits if w.literal == best]
    else:
        hits = _cut_hits(record)
    if not hits:
        return None
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
    # what a record says depends on its message, its site and the lines that may continue it: a long log
    # repeats them (a server restarted under load, periodic stats), so each distinct one is read once
    seen: dict = {}
    for r in records:
        key = (r.message, r.site, tuple(r.continuation[:4]))
        got = seen[key] if key in seen else seen.setdefault(key, _candidates(r))
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
