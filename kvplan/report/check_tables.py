"""Rich rendering of `kvplan check`'s report dict (kvplan.check.check_dict)."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from kvplan.report.tables import _console

_STATUS = {"pass": ("PASS", "bold green"), "fail": ("FAIL", "bold red"), "error": ("ERROR", "bold red")}


def failing_cell(e: dict) -> str:
    """``max_groups 3 > 2``: the failing expectation, its measured value and its limit, in one cell."""
    from kvplan.usecases.check.outputs import format_limit

    key, limit, measured = e["key"], e["limit"], e["measured"]
    if key == "starts":
        return f"starts: {'starts' if measured else 'fails'}, expected {'start' if limit else 'failure'}"
    if key == "same_layout_as":
        return f"same_layout_as {limit}: {'differs' if measured is not None else 'not simulated'}"
    op = ">" if key.startswith("max_") else "<"
    return f"{key} {format_limit(key, measured)} {op} {format_limit(key, limit)}"


def short_error(message: str) -> str:
    """The head of an error message for the table (the whole message is printed below it)."""
    head = message.split(";")[0].split(" (")[0]
    return head if len(head) <= 60 else head[:59] + "…"


def render_check(d: dict) -> None:
    """The summary table (one row per failing expectation, the key numbers on the deployment's
    first row), then why each failing deployment failed, in words."""
    from kvplan.usecases.check.outputs import failure_messages

    c = _console()
    s = d["summary"]
    t = Table(title=f"kvplan check: {s['num_deployments']} deployment(s) from {len(d['files'])} file(s)",
              box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("deployment", no_wrap=True)
    t.add_column("result", no_wrap=True)
    t.add_column("failing: measured vs limit", min_width=30, max_width=48, overflow="fold")
    for col in ("group\nsize", "groups", "padding\n%", "max\nconcurrency", "KV tokens"):
        t.add_column(col, justify="right")
    for dep in d["deployments"]:
        label, style = _STATUS[dep["status"]]
        p = dep["plan"] or {}
        numbers = [
            str(p.get("group_size", "")), str(p.get("num_groups", "")),
            f"{p['padding_waste_pct']:.2f}" if p else "",
            f"{p['max_concurrency']:.2f}" if p else "",
            f"{p['kv_tokens']:,}" if p else "",
        ]
        if dep["status"] == "error":
            cells = [f"error: {short_error(dep['outcome']['error'])}"]
        else:
            cells = [failing_cell(e) for e in dep["expectations"] if not e["passed"]] or [""]
        for i, cell in enumerate(cells):
            first = i == 0
            t.add_row(dep["name"] if first else "", Text(label, style=style) if first else "", cell,
                      *(numbers if first else [""] * len(numbers)))
    c.print(t)
    for dep in d["deployments"]:
        if dep["status"] != "pass":
            c.print(f"{dep['name']} ({dep['file']}:{dep['line']}):", markup=False, soft_wrap=True)
            for line in failure_messages(dep):
                c.print(f"  - {line}", markup=False, soft_wrap=True)
    summary = f"{s['num_passed']} passed, {s['num_failed']} failed"
    if s["num_errors"]:
        summary += f", {s['num_errors']} could not be simulated"
    c.print(Text(summary + ".", style="bold red" if not d["passed"] else "bold green"))
