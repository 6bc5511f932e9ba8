"""The ``cross_check`` object as text: one line when every field agrees (or why it could not run),
else a table of the fields that differ with both values, fitted to the terminal; then the scope."""

from __future__ import annotations

import json

from rich.text import Text

from kvplan.report import width
from kvplan.report.width import Col, fitted_table
from kvplan.units import compact_ranges


def _layers(names: list[str]) -> str:
    from kvplan.results.data import layer_index

    labels = [layer_index(n) + ("d" if n.startswith(("draft", "drafter")) else "") for n in names]
    ints = [int(x) for x in labels if x.isdigit()]
    rest = [x for x in labels if not x.isdigit()]
    return f"{len(names)} layers: " + ", ".join(filter(None, [compact_ranges(ints), ", ".join(rest)]))


def cell(value) -> str:
    """A compared value in a table cell: layer-name lists compacted, numbers with separators."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list) and value and all(isinstance(x, str) and "." in x for x in value):
        return _layers(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_layers(v) if k in ('layers', 'shared_by') and isinstance(v, list) else cell(v)}"
                         for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return json.dumps(value)
    return str(value)


def render_cross_check(cc: dict) -> None:
    from kvplan.verify.crosscheck import summary_line

    c = width.console()
    line = summary_line(cc)
    if not cc["ran"]:
        c.print(Text(line, style="yellow"))
        return
    if cc["agree"]:
        c.print(Text(line, style="green"))
    else:
        rows = [[d["field"], cell(d["kvplan"]), cell(d["vllm"])] for d in cc["differences"]]
        cols = [Col("field"), Col("kvplan (its prediction)"), Col(f"vLLM {cc['vllm_version']} (the engine's own)")]
        c.print(fitted_table(f"Cross-check: fields that differ ({len(rows)} of {cc['fields_compared']})", cols, rows))
        c.print(Text(line, style="red"))
    scope = cc["scope"]
    c.print(Text(f"verified: {scope['verified']}", style="dim"))
    c.print(Text(f"not verified: {scope['not_verified']}", style="dim"))
    for note in scope["notes"]:
        c.print(Text(f"note: {note}", style="dim"))
    how = "from the cache" if cc["cached"] else f"in {cc['seconds']:.1f} s"
    c.print(Text(f"(vLLM {cc['vllm_version']} at {cc['python']}, answered {how})", style="dim"))
