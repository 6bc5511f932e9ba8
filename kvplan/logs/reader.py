"""A tolerant reader for vLLM start-up logs as users paste them.

It takes ``vllm serve`` output, ``docker logs`` / ``docker compose logs`` output, logs with or
without the process prefixes vLLM's multiprocessing adds (``(EngineCore_DP0 pid=…)``,
``(APIServer pid=…)``, ``(VllmWorker rank=1 pid=…)``, ``(RayWorkerWrapper pid=…, ip=…)``),
with or without the level tag and timestamp (``INFO 10-03 16:22:17 [gpu_worker.py:298]``),
ANSI colours, partial logs, and lines that a terminal or a web page wrapped.

Each record keeps the message and the lines that followed it without a header of their own
(``continuation``): a wrapped line is only re-joined where a pattern asks for it
(``Record.candidates``), so a traceback line is never glued to a message by mistake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kvplan.errors import OptionError
from kvplan.logs.stored import plain_lines
from kvplan.progress import track

# ANSI colours: the escape itself, its caret form as some pastes show it ("^[[0;36m"), or a bare "[0;36m"
_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;]*[A-Za-z]|\[\d{1,2}(?:;\d{1,2})*m")
_BARE_ANSI = re.compile(r"\[\d{1,2}(?:;\d{1,2})*m")


def _has_ansi(line: str) -> bool:
    """Whether ``_ANSI`` has anything to remove: the escape or its caret form, else a bare "[0;36m" at
    one of the line's "[" (found with ``str.find``: searching the pattern costs ~10 µs a line)."""
    if "\x1b" in line or "^[" in line:
        return True
    at = line.find("[")
    while at >= 0:
        if _BARE_ANSI.match(line, at):
            return True
        at = line.find("[", at + 1)
    return False
# docker compose: "vllm-1  | ", "vllm_server_1 | "
_COMPOSE = re.compile(r"^[A-Za-z0-9][\w.-]*\s+\|\s?")
# docker logs -t / kubectl --timestamps: "2025-10-03T16:22:17.123456789Z "
_ISO = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+")
# a quoted paste: markdown's "> " (nested ">> "), a chat client's bar "▎ " (eugr/spark-vllm-docker#396), the
# backtick that opens inline code ("`(EngineCore_DP0 pid=1094) ValueError: …", vllm#34076; never a fence's ```)
_QUOTE = re.compile(r"^(?:[>▎▍▌│┃]+[ \t]*|`(?!`))+")
_QUOTE_START = frozenset(">▎▍▌│┃`")
# a host that logs the engine's stdout under its own log4j prefix: TorchServe's "[INFO ] W-9000-model_1.0-stdout
# MODEL_LOG - " after its timestamp (pytorch/serve#3315)
_LOG4J = re.compile(r"^\[(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR)\s*\]\s+\S+\s+MODEL_LOG\s+-\s+")
# vLLM's multiprocessing prefixes
# (the name bounded: an unbounded lazy run before "\s+pid=" backtracks quadratically on "(a" and spaces)
_PROC = re.compile(r"^\((?P<proc>[A-Za-z_][\w\- ]{0,64}?(?:\s+(?:rank|TP|PP|DP)[=\w]*)?\s+pid=\d+(?:,\s*ip=[\d.:a-f]+)?)\)\s*")
# vLLM's formatter: "INFO 10-03 16:22:17 [gpu_worker.py:298] ", older "INFO 02-20 00:01:02 kv_cache_utils.py:522] ",
# or a full date "WARNING 2025-10-03 16:22:17,123 ..."
_LEVEL = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?:(?:\d{4}-)?\d\d-\d\d\s+\d\d:\d\d:\d\d(?:[.,]\d+)?\s+)?"
    r"(?:\[?(?P<site>[\w./\\-]+\.py:\d+)\]\s*)?"
)
# a prefix cut to its source site: "[kv_cache_utils.py:1087] GPU KV cache size: …"
_SITE = re.compile(r"^\[?(?P<site>[\w.-]+\.py:\d+)\]\s+")
# Python's default logging format: "INFO:vllm.v1.core.kv_cache_utils:message"
_PYLOG = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?:vllm|__main__)[\w.]*:")

# what any prefix above starts with (a necessary condition, one match instead of eight): a quote mark, a
# compose service and its bar, a timestamp's digit, "[" (log4j, a site), "(" (a process), a level, a site
_MAYBE_PREFIX = re.compile(r"[>▎▍▌│┃`\[(0-9]|DEBUG|INFO|WARN|ERROR|CRITICAL|[A-Za-z0-9][\w.-]*\s+\||\[?[\w.-]+\.py:\d")

# Lines that start something new even without a header (never a wrapped remainder).
_NEW_RECORD_START = re.compile(
    r"(?:Traceback \(most recent call last\)|File \"|\s+File \"|\w+(?:\.\w+)*(?:Error|Exception|Interrupt):"
    r"|During handling|The above exception|\$ |#|```)"
)
_VLLM_SERVE = re.compile(r"\bvllm serve\b")


def _new_record(message: str) -> bool:
    """A line that starts something new even without a header: a traceback's lines, a prompt, a comment,
    a fence, or a vllm serve command anywhere in it (substring tests first: a pattern searched from
    every position of every line is the reader's largest cost on a long log)."""
    return (_NEW_RECORD_START.match(message) is not None
            or ("vllm serve" in message and _VLLM_SERVE.search(message) is not None)
            or "vllm.entrypoints.openai.api_server" in message)


_EXCEPTION = re.compile(r"^\w+(?:\.\w+)*(?:Error|Exception):")


@dataclass
class Record:
    """One log record: ``number`` is the 1-based line of the input where it starts."""

    number: int
    message: str
    level: str | None = None
    process: str | None = None
    site: str | None = None  # "kv_cache_utils.py:1087": the source file and line of the logging call
    headed: bool = False  # it had a level tag or a process prefix
    continuation: list[str] = field(default_factory=list)
    continuation_lines: list[int] = field(default_factory=list)  # their 1-based line numbers

    def rest(self, consumed: int) -> "Record | None":
        """The header-less lines after the first ``consumed`` as a record of their own (a line
        glued to a message that did not need it may be a message itself)."""
        lines, numbers = self.continuation[consumed:], self.continuation_lines[consumed:]
        if not lines:
            return None
        return Record(numbers[0], lines[0], self.level, self.process, None, False, lines[1:], numbers[1:])

    def candidates(self, max_lines: int = 4) -> list[str]:
        """The message, then the message re-joined with its following header-less lines: a
        terminal cuts anywhere (joined without a space), a web page at a space (with one)."""
        out = [self.message]
        joined_tight, joined_spaced = self.message, self.message
        for line in self.continuation[:max_lines]:
            joined_tight = joined_tight + line.strip()
            joined_spaced = joined_spaced.rstrip() + " " + line.strip()
            out += [joined_tight, joined_spaced]
        return out


def _strip_header(line: str) -> tuple[str, str | None, str | None, bool, str | None]:
    """(message, level, process, had a header, source site)."""
    text = (_ANSI.sub("", line) if _has_ansi(line) else line).strip()
    level = process = site = None
    headed = False
    for _ in range(4):  # prefixes nest: quote, compose | timestamp [host prefix] (proc) LEVEL date [file]
        if not _MAYBE_PREFIX.match(text):
            break  # none of the prefixes below can start here
        before = text
        # (each pattern tried only where its first character can start it: a pattern call costs more)
        m = _QUOTE.match(text) if text[:1] in _QUOTE_START else None
        if m:
            text = text[m.end():]
        m = _COMPOSE.match(text) if "|" in text else None
        if m and not _LEVEL.match(text):
            text = text[m.end():]
        m = _ISO.match(text) if text[:1].isdigit() else None
        if m:
            text = text[m.end():]
        m = _LOG4J.match(text) if text[:1] == "[" else None
        if m:
            text = text[m.end():]
        m = _PROC.match(text) if text[:1] == "(" else None
        if m:
            process, headed, text = m.group("proc"), True, text[m.end():]
        m = (_LEVEL.match(text) or _PYLOG.match(text)) if text[:1] in "DIWEC" else None
        if m:
            level, headed, text = m.group("level"), True, text[m.end():]
            site = m.groupdict().get("site") or site
        m = _SITE.match(text) if ".py:" in text else None
        if m:
            site, headed, text = m.group("site").rsplit("/", 1)[-1], True, text[m.end():]
        if text == before:
            break
    if site:
        site = re.split(r"[/\\]", site)[-1]
    return text.strip(), level, process, headed, site


def _bare(line: str) -> str:
    """A line without the prefix a store or docker compose put before what the process printed."""
    if line[:1].isdigit():
        m = _ISO.match(line)
        if m:  # the one separator after the timestamp (the rest is the line's own indentation)
            return line[len(m.group().rstrip()) + 1:]
    m = _COMPOSE.match(line) if "|" in line else None
    return line[m.end():] if m and not _LEVEL.match(line) else line


# a long log's lines are read in steps of this many, each reported to a progress listener (kvplan.progress);
# a log of one step or less reports nothing (no bar flashing by on a short paste)
PROGRESS_STEP_LINES = 20_000


def _in_steps(lines: list[str]):
    if len(lines) <= PROGRESS_STEP_LINES:
        return [lines]
    steps = [lines[at:at + PROGRESS_STEP_LINES] for at in range(0, len(lines), PROGRESS_STEP_LINES)]
    return track(steps, f"log: {PROGRESS_STEP_LINES:,} lines a step")


def read_records(text: str) -> list[Record]:
    """The records of a log text (see the module docstring), stored in any of the shapes
    ``kvplan.logs.stored`` unwraps."""
    lines = plain_lines(text)
    stripped = [_strip_header(line) for step in _in_steps(lines) for line in step]
    # indentation and quote markers as the line shows them after a store's timestamp or compose prefix
    bare = [_bare(line) for line in lines]
    quoted = [_QUOTE.match(line) is not None for line in bare]
    any_headed = any(h for _m, _l, _p, h, _s in stripped)
    records: list[Record] = []
    for i, (message, level, process, headed, site) in enumerate(stripped, start=1):
        if not message:
            if records:
                records[-1].continuation.append("")  # a blank line ends what can be re-joined
                records[-1].continuation_lines.append(i)
            continue
        # a shell command continued with a trailing backslash goes on, headed or not; so does an
        # exception's text wrapped onto indented lines
        last = records[-1] if records else None
        # (in a quote block, whose marker hides the indentation, the lines after an exception's are its text)
        continued = last is not None and (
            (last.continuation or [last.message])[-1].endswith("\\")
            or (not headed and (bare[i - 1][:1].isspace() or (quoted[i - 1] and quoted[last.number - 1]))
                and _EXCEPTION.match(last.message) is not None
                and "" not in last.continuation and not _new_record(message)))
        wrapped = continued or (any_headed and not headed and records and records[-1].headed
                                and not _new_record(message) and "" not in records[-1].continuation)
        if wrapped:
            records[-1].continuation.append(message)
            records[-1].continuation_lines.append(i)
        else:
            records.append(Record(i, message, level, process, site, headed))
    for r in records:  # drop the blank markers after the last re-joinable line
        if "" in r.continuation:
            cut = r.continuation.index("")
            r.continuation, r.continuation_lines = r.continuation[:cut], r.continuation_lines[:cut]
    return records


def read_log(source: str) -> tuple[str, str]:
    """``(text, name)`` of a log: ``-`` is standard input, a path is read as a file, and any
    other string with a line break is the log text itself."""
    from kvplan.readfile import read_text

    if source == "-":  # bounded, like every file kvplan reads (kvplan/readfile.py)
        return read_text("-", "log", "log", errors="replace"), "-"
    if "\n" in source:
        return source, "<text>"
    path = Path(source).expanduser()
    try:
        missing = not path.exists()
    except (OSError, ValueError):  # a name the file system refuses
        missing = True
    if missing:
        raise OptionError(f"log file {source[:200]}: not found; pass a vLLM start-up log file, or - to read standard input")
    # a regular file only (a FIFO or /dev/urandom refused by name), at most LIMIT_BYTES["log"]
    return read_text(path, "log", "log file", errors="replace"), str(path)
