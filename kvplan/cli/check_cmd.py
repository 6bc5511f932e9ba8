"""`kvplan check`: run the deployments of one or more YAML files as a CI gate.

Exit codes: 0 every deployment passed; 3 one failed (an expectation does not hold, or
it could not be simulated); 1 a deployments file is malformed (nothing is run).
With GITHUB_ACTIONS=true, failures are also printed to stderr as ``::error`` workflow
commands (stdout stays the report, parseable with --format json).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, List, Optional

import typer

from kvplan.cli import options as o
from kvplan.cli.app import EXIT_ERROR, EXIT_FAILED, app, fail, handle_errors


@app.command("check")
@handle_errors
def check_command(
    files: Annotated[List[str], typer.Argument(metavar="FILE", help="Deployments files (YAML); see docs/check.md for the format.",
                                               show_default=False)],
    junit_xml: Annotated[Optional[str], typer.Option(
        "--junit-xml", metavar="PATH", help="Also write a JUnit XML report here (one test case per deployment).")] = None,
    format: o.OutputFormat = o.Format.table,
) -> None:
    """Simulate every deployment of the files and check its expectations (a CI gate).

    Exit codes: 0 all deployments pass; 3 at least one fails; 1 a file is malformed.
    """
    from kvplan import check
    from kvplan.report.output import emit, hint

    github = os.environ.get("GITHUB_ACTIONS") == "true"
    workspace = os.environ.get("GITHUB_WORKSPACE") or None
    try:
        deployments = check.load_deployments(files)
    except check.DeploymentsFileError as e:
        for issue in e.issues:
            sys.stderr.write(f"Error: {issue}\n")
        if github:
            for line in check.issue_annotations(e.issues, workspace):
                sys.stderr.write(line + "\n")
        raise typer.Exit(EXIT_ERROR) from None

    results = check.run_deployments(deployments, reraise=bool(os.environ.get("KVPLAN_DEBUG")))
    data = check.check_dict(files, results)

    def table(d: dict) -> None:
        from kvplan.report.check_tables import render_check

        render_check(d)

    emit(data, format.value, table)
    if junit_xml:
        try:
            with open(junit_xml, "w", encoding="utf-8") as f:
                f.write(check.junit_xml(data))
        except OSError as e:
            raise fail(f"--junit-xml: cannot write {junit_xml} ({e.strerror or e})") from None
    if github:
        for line in check.github_annotations(data, workspace):
            sys.stderr.write(line + "\n")
    if not data["passed"]:
        if format.value != "table":
            s = data["summary"]
            hint(f"kvplan check: {s['num_failed'] + s['num_errors']} of {s['num_deployments']} deployment(s) failed")
        raise typer.Exit(EXIT_FAILED)
