"""Terminal rendering of `kvplan check`'s result data (kvplan.usecases.check.check_result)."""

from __future__ import annotations

from rich.text import Text

from kvplan.report.tables import _console
from kvplan.report.width import Col, fill, fitted_table
from kvplan.results import shown, to_data
from kvplan.results.check import CheckBody, CheckSummary, DeploymentRow, ExpectationRow, PlanNumbers
from kvplan.results.envelope import Envelope
from kvplan.units import plural

_STATUS = {"pass": ("PASS", "bold green"), "fail": ("FAIL", "bold red"), "error": ("ERROR", "bold red")}


def failing_cell(e: ExpectationRow) -> str:
    """``max_groups 3 > 2``: the failing expectation, its measured value and its limit, in one cell."""
    from kvplan.usecases.check.outputs import format_limit

    # the limit and the measurement as the JSON shows them (plain values: a mapping for max_upgrade_loss)
    key, limit, measured = e.key, to_data(e.limit), to_data(e.measured)
    if key == "starts":
        return f"starts: {'starts' if measured else 'fails'}, expected {'start' if limit else 'failure'}"
    if key == "same_layout_as":
        return f"same_layout_as {limit}: {'differs' if measured is not None else 'not simulated'}"
    if key == "max_upgrade_loss":
        lost = f"{measured['loss_pct']:.2f}%" if measured else "not simulated"
        return f"max_upgrade_loss to {limit['to']}: {lost} lost > {limit['pct']:g}%"
    op = ">" if key.startswith("max_") else "<"
    return f"{key} {format_limit(key, measured)} {op} {format_limit(key, limit)}"


def _failing(dep: DeploymentRow) -> list[str]:
    """The failing expectations of a deployment, one a line (or why it could not be simulated)."""
    if dep.status == "error":
        return [f"error: {short_error(dep.outcome.error or '')}"]
    return [failing_cell(e) for e in dep.expectations if not e.passed]


def short_error(message: str) -> str:
    """The head of an error message for the table, whole (it wraps; the full message is printed below)."""
    return message.split(";")[0].split(" (")[0]


def _numbers(p: PlanNumbers | None) -> list[str]:
    """A deployment's key numbers (as the JSON shows them), blank when it was not simulated."""
    if p is None:
        return ["", "", "", "", ""]
    return [str(p.group_size), str(p.num_groups), f"{shown(p, 'padding_waste_pct'):.2f}",
            f"{shown(p, 'max_concurrency'):.2f} / {shown(p, 'steady_state_concurrency'):.2f}", f"{p.kv_tokens:,}"]


def _title(body: CheckBody) -> str:
    return (f"kvplan check: {plural(body.summary.num_deployments, 'deployment')} from "
            f"{plural(len(body.files), 'file')}")


def _verdict(s: CheckSummary) -> str:
    return (f"{s.num_passed} passed, {s.num_failed} failed"
            + (f", {s.num_errors} could not be simulated" if s.num_errors else ""))


def render_check(d: Envelope) -> None:
    """The summary table (one row per deployment: its failing expectations, one a line, and its
    key numbers), then why each failing deployment failed, in words."""
    from kvplan.usecases.check.outputs import failure_messages

    body: CheckBody = d.body
    c = _console()
    cols = [Col("deployment"), Col("result"), Col("failing: measured vs limit"), Col("group size", right=True),
            Col("groups", right=True, drop=2), Col("padding %", right=True, drop=1),
            Col("concurrency: vLLM's own / kvplan's steady", right=True), Col("KV tokens", right=True)]
    rows = []
    for dep in body.deployments:
        label, style = _STATUS[dep.status]
        rows.append([dep.name, Text(label, style=style), "\n".join(_failing(dep) or [""]), *_numbers(dep.plan)])
    c.print(fitted_table(_title(body), cols, rows))
    for dep in body.deployments:
        if dep.status != "pass":
            c.print(fill(f"{dep.name} ({dep.file}:{dep.line}):"), markup=False, soft_wrap=True)
            for line in failure_messages(to_data(dep)):
                c.print(fill(line, "  - ", "    "), markup=False, soft_wrap=True)
    c.print(Text(_verdict(body.summary) + ".", style="bold red" if not body.passed else "bold green"))


def _md_cell(text: str) -> str:
    """Text safe inside one Markdown table cell (pipes escaped, line breaks as <br>)."""
    return text.replace("|", "\\|").replace("\n", "<br>")


def markdown_summary(d: Envelope) -> str:
    """The report as GitHub-flavoured Markdown for a job summary (``$GITHUB_STEP_SUMMARY``): the
    verdict, then one row per deployment with its result, vLLM's num_blocks and max_concurrency,
    kvplan's steady-state concurrency and the expectations that failed."""
    body: CheckBody = d.body
    icon = {"pass": "✅ pass", "fail": "❌ fail", "error": "⚠️ error"}
    lines = [f"### {_title(body)}", "", f"**{_verdict(body.summary)}**", "",
             "| deployment | file | result | policy | num_blocks | max_concurrency (vLLM) "
             "| steady concurrency (kvplan) | failing |",
             "|---|---|---|---|---:|---:|---:|---|"]
    for dep in body.deployments:
        p = dep.plan
        cells = [dep.name, f"`{dep.file}:{dep.line}`", icon[dep.status], dep.policy or "",
                 f"{p.num_blocks:,}" if p else "", f"{shown(p, 'max_concurrency'):.2f}" if p else "",
                 f"{shown(p, 'steady_state_concurrency'):.2f}" if p else "", "<br>".join(_failing(dep))]
        lines.append("| " + " | ".join(_md_cell(str(c)) for c in cells) + " |")
    return "\n".join(lines) + "\n"
