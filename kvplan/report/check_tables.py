"""Terminal rendering of `kvplan check`'s result data (kvplan.usecases.check.check_result)."""

from __future__ import annotations

from rich.text import Text

from kvplan.report.tables import _console
from kvplan.report.width import Col, fill, fitted_table
from kvplan.units import plural

_STATUS = {"pass": ("PASS", "bold green"), "fail": ("FAIL", "bold red"), "error": ("ERROR", "bold red")}


def failing_cell(e: dict) -> str:
    """``max_groups 3 > 2``: the failing expectation, its measured value and its limit, in one cell."""
    from kvplan.usecases.check.outputs import format_limit

    key, limit, measured = e["key"], e["limit"], e["measured"]
    if key == "starts":
        return f"starts: {'starts' if measured else 'fails'}, expected {'start' if limit else 'failure'}"
    if key == "same_layout_as":
        return f"same_layout_as {limit}: {'differs' if measured is not None else 'not simulated'}"
    if key == "max_upgrade_loss":
        lost = f"{measured['loss_pct']:.2f}%" if measured else "not simulated"
        return f"max_upgrade_loss to {limit['to']}: {lost} lost > {limit['pct']:g}%"
    op = ">" if key.startswith("max_") else "<"
    return f"{key} {format_limit(key, measured)} {op} {format_limit(key, limit)}"


def short_error(message: str) -> str:
    """The head of an error message for the table, whole (it wraps; the full message is printed below)."""
    return message.split(";")[0].split(" (")[0]


def render_check(d: dict) -> None:
    """The summary table (one row per deployment: its failing expectations, one a line, and its
    key numbers), then why each failing deployment failed, in words."""
    from kvplan.usecases.check.outputs import failure_messages

    c = _console()
    s = d["summary"]
    cols = [Col("deployment"), Col("result"), Col("failing: measured vs limit"), Col("group size", right=True),
            Col("groups", right=True, drop=2), Col("padding %", right=True, drop=1),
            Col("concurrency: vLLM's own / kvplan's steady", right=True), Col("KV tokens", right=True)]
    rows = []
    for dep in d["deployments"]:
        label, style = _STATUS[dep["status"]]
        p = dep["plan"] or {}
        numbers = [
            str(p.get("group_size", "")), str(p.get("num_groups", "")),
            f"{p['padding_waste_pct']:.2f}" if p else "",
            f"{p['max_concurrency']:.2f} / {p.get('steady_state_concurrency', 0.0):.2f}" if p else "",
            f"{p['kv_tokens']:,}" if p else "",
        ]
        if dep["status"] == "error":
            cells = [f"error: {short_error(dep['outcome']['error'])}"]
        else:
            cells = [failing_cell(e) for e in dep["expectations"] if not e["passed"]] or [""]
        rows.append([dep["name"], Text(label, style=style), "\n".join(cells), *numbers])
    title = (f"kvplan check: {plural(s['num_deployments'], 'deployment')} from "
             f"{plural(len(d['files']), 'file')}")
    c.print(fitted_table(title, cols, rows))
    for dep in d["deployments"]:
        if dep["status"] != "pass":
            c.print(fill(f"{dep['name']} ({dep['file']}:{dep['line']}):"), markup=False, soft_wrap=True)
            for line in failure_messages(dep):
                c.print(fill(line, "  - ", "    "), markup=False, soft_wrap=True)
    summary = f"{s['num_passed']} passed, {s['num_failed']} failed"
    if s["num_errors"]:
        summary += f", {s['num_errors']} could not be simulated"
    c.print(Text(summary + ".", style="bold red" if not d["passed"] else "bold green"))


def _md_cell(text: str) -> str:
    """Text safe inside one Markdown table cell (pipes escaped, line breaks as <br>)."""
    return text.replace("|", "\\|").replace("\n", "<br>")


def markdown_summary(d: dict) -> str:
    """The report as GitHub-flavoured Markdown for a job summary (``$GITHUB_STEP_SUMMARY``): the
    verdict, then one row per deployment with its result, vLLM's num_blocks and max_concurrency,
    kvplan's steady-state concurrency and the expectations that failed."""
    s = d["summary"]
    icon = {"pass": "✅ pass", "fail": "❌ fail", "error": "⚠️ error"}
    verdict = (f"**{s['num_passed']} passed, {s['num_failed']} failed"
               + (f", {s['num_errors']} could not be simulated" if s["num_errors"] else "") + "**")
    lines = [f"### kvplan check: {plural(s['num_deployments'], 'deployment')} from "
             f"{plural(len(d['files']), 'file')}", "", verdict, "",
             "| deployment | file | result | policy | num_blocks | max_concurrency (vLLM) "
             "| steady concurrency (kvplan) | failing |",
             "|---|---|---|---|---:|---:|---:|---|"]
    for dep in d["deployments"]:
        p = dep["plan"] or {}
        if dep["status"] == "error":
            failing = f"error: {short_error(dep['outcome']['error'] or '')}"
        else:
            failing = "<br>".join(failing_cell(e) for e in dep["expectations"] if not e["passed"])
        cells = [dep["name"], f"`{dep['file']}:{dep['line']}`", icon[dep["status"]], dep["policy"] or "",
                 f"{p['num_blocks']:,}" if "num_blocks" in p else "",
                 f"{p['max_concurrency']:.2f}" if p else "",
                 f"{p['steady_state_concurrency']:.2f}" if p else "", failing]
        lines.append("| " + " | ".join(_md_cell(str(c)) for c in cells) + " |")
    return "\n".join(lines) + "\n"
