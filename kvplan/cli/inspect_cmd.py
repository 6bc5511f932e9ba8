"""`kvplan inspect`: the per-layer KV specs vLLM would register."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.cli.app import app, handle_errors
from kvplan.cli.params import Format, Model, OutputFormat, command_options
from kvplan.cli.render import finish

if TYPE_CHECKING:
    from kvplan.results.envelope import Envelope


@app.command("inspect")
@handle_errors
@command_options("inspect")
def inspect_command(model: Model, *, format: OutputFormat = Format.table, **options) -> None:
    """Show the per-layer KV-cache specs (kind, window, heads, head size, dtype, block, page bytes)."""
    from kvplan.api import inspect

    def table(d: Envelope) -> None:
        from kvplan.report.tables import render_inspect

        render_inspect(d)

    finish(inspect(model, **options), format.value, table)
