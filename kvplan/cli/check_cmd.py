"""`kvplan check`: run the deployments of one or more YAML files as a CI gate.

Exit codes: 0 every deployment passed; 3 one failed (an expectation does not hold, or
it could not be simulated); 1 a deployments file is malformed (nothing is run).
With GITHUB_ACTIONS=true, failures are also printed to stderr as ``::error`` workflow
commands (stdout stays the report, parseable with --format json). With GITHUB_STEP_SUMMARY set (as
in every GitHub Actions job), a Markdown summary is appended to that file, as GitHub's own actions do.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, List, Optional

import typer

from kvplan.cli.app import app, fail, handle_errors
from kvplan.cli.params import Format, OutputFormat
from kvplan.cli.render import finish

if TYPE_CHECKING:
    from kvplan.results.envelope import Envelope


@app.command("check")
@handle_errors
def check_command(
    files: Annotated[List[str], typer.Argument(metavar="FILE", help="Deployments files (YAML); see docs/check.md "
                                               "for the format.", show_default=False)],
    junit_xml: Annotated[Optional[str], typer.Option(
        "--junit-xml", metavar="PATH", help="Also write a JUnit XML report here (one test case per deployment).")] = None,
    summary: Annotated[bool, typer.Option("--summary", help="At most 20 lines: the verdict, then the report cut "
                                          "short. Table output only.")] = False,
    live: Annotated[Optional[List[str]], typer.Option(
        "--live", metavar="URL", help="Compare running vLLM servers (their /metrics) with kvplan's prediction for "
        "the deployment each serves (matched by model name), figure by figure, instead of the expectations. "
        "Repeatable.")] = None,
    tolerance: Annotated[float, typer.Option(
        "--tolerance", metavar="PCT", min=0.0, max=100.0, help="With --live: how far (in %) the pool figures "
        "(num_gpu_blocks, kv_cache_size_tokens, kv_cache_max_concurrency) may be from kvplan's.")] = 0.0,
    vllm_python: Annotated[Optional[str], typer.Option(
        "--vllm-python", metavar="PATH", help="The interpreter whose vLLM runs the cross-checks that deployments ask "
        "for (cross_check: true); default: the Python running kvplan. Only here: a file never names a program.")] = None,
    format: OutputFormat = Format.table,
) -> None:
    """Simulate every deployment of the files and check its expectations (a CI gate).

    Exit codes: 0 all deployments pass; 3 at least one fails (or a --live server disagrees); 1 a file
    is malformed or a server cannot be read.
    """
    from kvplan import api
    from kvplan.usecases import check as checks

    if live:
        from kvplan.usecases.live import live_check

        live_result = live_check(files, live, tolerance=tolerance)

        def live_table(d: dict) -> None:
            from kvplan.report.live_tables import render_live

            render_live(d)

        finish(live_result, format.value, live_table,
               hints=[] if live_result.outcome.ok else [f"kvplan check --live: {live_result.outcome.error}"])
        return

    result = api.check(files, reraise=bool(os.environ.get("KVPLAN_DEBUG")), vllm_python=vllm_python)
    data = result.to_dict()
    if junit_xml:
        try:
            with open(junit_xml, "w", encoding="utf-8") as f:
                f.write(checks.junit_xml(data))
        except OSError as e:
            raise fail(f"--junit-xml: cannot write {junit_xml} ({e.strerror or e})") from None
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in checks.github_annotations(data, os.environ.get("GITHUB_WORKSPACE") or None):
            sys.stderr.write(line + "\n")
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        from kvplan.report.check_tables import markdown_summary

        try:
            with open(summary_path, "a", encoding="utf-8") as f:
                f.write(markdown_summary(result) + "\n")
        except OSError as e:
            raise fail(f"GITHUB_STEP_SUMMARY: cannot append to {summary_path} ({e.strerror or e})") from None

    def table(d: Envelope) -> None:
        from kvplan.report.check_tables import render_check

        if summary:
            from kvplan.report.verdict import render_short

            render_short(render_check, d)
            return
        render_check(d)

    hints = [] if data["outcome"]["ok"] or format.value == "table" else [f"kvplan check: {data['outcome']['error']}"]
    finish(result, format.value, table, hints=hints)
