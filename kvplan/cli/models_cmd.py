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
        from kvplan.report.width import Col
        from kvplan.units import plural

        render_rows(
            f"Bundled catalog ({plural(len(d['models']), 'model')})",
            [Col("id"), Col("family", drop=3), Col("role", drop=2), Col("layer mix"), Col("provenance", drop=1)],
            [[m["id"], m.get("family"), m.get("role"), m.get("layer_mix"), m.get("provenance")] for m in d["models"]],
        )

    finish(models(), format.value, table)
