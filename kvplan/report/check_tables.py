"""Rich rendering of `kvplan check`'s report dict (kvplan.check.check_dict)."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from kvplan.report.tables import _console

_STATUS = {"pass": ("PASS", "bold green"), "fail": ("FAIL", "bold red"), "error": ("ERROR", "bold red")}


def render_check(d: dict) -> None:
    """The summary table (one row per deployment), then why each failing deployment failed."""
    from kvplan.check import failure_messages, format_limit

    c = _console()
    s = d["summary"]
    t = Table(title=f"kvplan check: {s['num_deployments']} deployment(s) from {len(d['files'])} file(s)",
              box=box.SIMPLE_HEAD)
    cols = ("deployment", "result", "expectation", "limit", "measured",
            "group size", "groups", "padding %", "concurrency", "KV tokens")
    right = {"group size", "groups", "padding %", "concurrency", "KV tokens"}
    for col in cols:
        t.add_column(col, justify="right" if col in right else "left",
                     no_wrap=col == "deployment", max_width=32 if col == "measured" else None)
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
            failing = [("error", "", dep["error"])]
        else:
            failing = [(e["key"], format_limit(e["key"], e["limit"]), format_limit(e["key"], e["measured"]))
                       for e in dep["expectations"] if not e["passed"]] or [("", "", "")]
        # one row per failing expectation; the deployment's name and numbers on the first
        for i, (key, limit, measured) in enumerate(failing):
            first = i == 0
            t.add_row(dep["name"] if first else "", Text(label, style=style) if first else "", key, limit, measured,
                      *(numbers if first else [""] * len(numbers)))
    c.print(t)
    for dep in d["deployments"]:
        if dep["status"] != "pass":
            c.print(f"{dep['name']} ({dep['file']}:{dep['line']}):", markup=False)
            for line in failure_messages(dep):
                c.print(f"  - {line}", markup=False)
    bad = s["num_failed"] + s["num_errors"]
    summary = f"{s['num_passed']} passed, {s['num_failed']} failed"
    if s["num_errors"]:
        summary += f", {s['num_errors']} could not be simulated"
    c.print(Text(summary + ".", style="bold red" if bad else "bold green"))
