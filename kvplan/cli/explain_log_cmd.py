"""`kvplan explain-log FILE|-`: read a vLLM start-up log, rebuild the layout, cross-check each
figure with kvplan's, name the traps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from kvplan.cli.app import app, handle_errors
from kvplan.cli.params import Format, OutputFormat, command_options
from kvplan.cli.render import finish

if TYPE_CHECKING:
    from kvplan.results.envelope import Envelope

LogFile = Annotated[str, typer.Argument(help="A vLLM start-up log (vllm serve or docker logs output), or - for "
                                        "standard input.", show_default=False)]


@app.command("explain-log")
@handle_errors
@command_options("explain-log")
def explain_log_command(log: LogFile, *, format: OutputFormat = Format.table, **options) -> None:
    """Read a vLLM start-up log: recover the release, the arguments and every KV-cache line,
    re-simulate the deployment with that release, show each logged figure beside kvplan's with
    what the line means in that release, and name the traps (hybrid manager off, padding,
    sliding-window reservation, auto-fit, rounding, a failure and its smallest fix).

    The log decides the release, the model and the options; --policy, --model, --drafter and
    --model-runner override it (--policy vllm==X for a log that does not name its release).

    Exit codes: 0 the figures agree (or there was nothing to re-simulate); 3 a figure disagrees;
    1 kvplan error (unreadable file).
    """
    from kvplan.api import explain_log

    summary = options.pop("summary", False)

    def table(d: Envelope) -> None:
        from kvplan.report.explain_log_tables import render_explain_log

        if summary:
            from kvplan.report.verdict import render_short

            render_short(render_explain_log, d)
            return
        render_explain_log(d)

    finish(explain_log(log, **options), format.value, table)
