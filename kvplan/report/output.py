"""The one output sink: data to stdout as table, JSON or YAML; warnings to stderr."""

from __future__ import annotations

import json
import re
import sys
from typing import Callable

FORMATS = ("table", "json", "yaml")
# characters that would break a message's one line or rewrite the terminal: controls (a newline, a
# carriage return, an escape sequence), line separators, bidirectional overrides
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
MESSAGE_CHARS = 4000  # the longest message printed: a value pasted into it cannot flood the terminal


def one_line(message: str) -> str:
    """A message as one printable line: control characters written as escapes (``\\n``), cut at
    MESSAGE_CHARS (input quoted in an error is the user's, and may be anything)."""
    text = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), message)
    return text if len(text) <= MESSAGE_CHARS else f"{text[:MESSAGE_CHARS]}... ({len(text):,} characters)"


def to_json(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def to_yaml(data: dict) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)


def emit(data: dict, fmt: str, render_table: Callable[[dict], None], record: dict | None = None) -> None:
    """Print ``data`` in ``fmt``. Tables are drawn by ``render_table`` (Rich, imported there), after the
    verdict of ``record`` (the result record, an ``Envelope``, whose typed body the verdict reads; else ``data``)."""
    if fmt == "json":
        sys.stdout.write(to_json(data) + "\n")
    elif fmt == "yaml":
        sys.stdout.write(to_yaml(data))
    else:
        from kvplan.report.verdict import verdict_text

        first = verdict_text(data if record is None else record)
        if first is not None:
            sys.stdout.write(first + "\n")
            sys.stdout.flush()
        render_table(data)
    for w in data.get("warnings", []):
        warn(w)


def warn(message: str) -> None:
    """``Warning: …`` on stderr, wrapped to the terminal's width (continuation lines indented under
    the message; words, numbers and flags are never broken)."""
    import textwrap

    from kvplan.report.terminal import terminal_width

    lines = textwrap.wrap(f"Warning: {one_line(message)}", width=terminal_width(), subsequent_indent=" " * 9,
                          break_long_words=False, break_on_hyphens=False)
    sys.stderr.write("\n".join(lines or ["Warning:"]) + "\n")


def hint(message: str) -> None:
    sys.stderr.write(f"{message}\n")
