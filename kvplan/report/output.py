"""The one output sink: data to stdout as table, JSON or YAML; warnings to stderr."""

from __future__ import annotations

import json
import sys
from typing import Callable

FORMATS = ("table", "json", "yaml")


def to_json(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def to_yaml(data: dict) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)


def emit(data: dict, fmt: str, render_table: Callable[[dict], None]) -> None:
    """Print ``data`` in ``fmt``. Tables are drawn by ``render_table`` (Rich, imported there)."""
    if fmt == "json":
        sys.stdout.write(to_json(data) + "\n")
    elif fmt == "yaml":
        sys.stdout.write(to_yaml(data))
    else:
        from kvplan.report.verdict import verdict_text

        first = verdict_text(data)
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

    lines = textwrap.wrap(f"Warning: {message}", width=terminal_width(), subsequent_indent=" " * 9,
                          break_long_words=False, break_on_hyphens=False)
    sys.stderr.write("\n".join(lines or ["Warning:"]) + "\n")


def hint(message: str) -> None:
    sys.stderr.write(f"{message}\n")
