"""`kvplan diff`: a deployment under two vLLM releases (usecases.diff)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kvplan.cli.app import app, handle_errors
from kvplan.cli.intake_params import Check, Container, Entry, File, Line, OptionalModel, intake_arguments
from kvplan.cli.params import Format, OutputFormat, command_options
from kvplan.cli.render import finish


@app.command("diff")
@handle_errors
@command_options("simulate")
def diff_command(
    model: OptionalModel = None,
    *,
    from_release: Annotated[str, typer.Option("--from", metavar="vllm==X", help="The release running now.")],
    to_release: Annotated[str, typer.Option("--to", metavar="vllm==Y", help="The release to upgrade to.")],
    max_loss: Annotated[Optional[float], typer.Option(
        "--max-loss", metavar="PCT", min=0.0, help="Exit 3 when the KV tokens (of max_model_len requests) fall by "
        "more than PCT % from --from to --to, or the engine stops starting.")] = None,
    line: Line = None, file: File = None, container: Container = None, check: Check = None, entry: Entry = None,
    format: OutputFormat = Format.table,
    **options,
) -> None:
    """What a vLLM upgrade changes in a deployment: every figure, and the era decision behind each.

    Each differing era decision is tried alone on the --from deployment; a figure it moves names it.
    Exit codes: 0 ok; 3 capacity falls by more than --max-loss; 1 kvplan error.
    """
    from kvplan.usecases.diff import diff

    if "policy" in options:
        from kvplan.errors import OptionError

        raise OptionError("--policy: diff runs the deployment under --from and --to; drop --policy")
    data = diff(from_release=from_release, to_release=to_release, max_loss=max_loss,
                **intake_arguments(model, line, file, container, check, entry, options))

    def table(d: dict) -> None:
        from kvplan.report.diff_tables import render_diff

        render_diff(d)

    finish(data, format.value, table, hints=[data["outcome"]["error"]] if data["outcome"]["error"] else [])
