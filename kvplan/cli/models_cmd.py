"""`kvplan models`: the bundled catalog."""

from __future__ import annotations

from kvplan.cli.app import app, handle_errors
from kvplan.cli.params import Format, OutputFormat
from kvplan.cli.render import finish


@app.command("models")
@handle_errors
def models_command(format: OutputFormat = Format.table) -> None:
    """List the bundled model configs (id, family, role, layer mix, provenance)."""
    from kvplan.api import models

    def table(d: dict) -> None:
        from kvplan.report.tables import render_rows

        render_rows(
            f"Bundled catalog ({len(d['models'])} models)",
            ["id", "family", "role", "layer mix", "provenance"],
            [[m["id"], m.get("family"), m.get("role"), m.get("layer_mix"), m.get("provenance")] for m in d["models"]],
        )

    finish(models(), format.value, table)
