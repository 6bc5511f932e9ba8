"""`kvplan models`: the bundled catalog."""

from __future__ import annotations

from kvplan.cli import options as o
from kvplan.cli.app import app, handle_errors


@app.command("models")
@handle_errors
def models_command(format: o.OutputFormat = o.Format.table) -> None:
    """List the bundled model configs (id, family, role, layer mix, provenance)."""
    from kvplan import __version__
    from kvplan.model import list_catalog
    from kvplan.report import SCHEMA_VERSION
    from kvplan.report.output import emit

    entries = list_catalog()
    data = {"schema_version": SCHEMA_VERSION, "kvplan_version": __version__, "command": "models",
            "models": entries, "warnings": []}

    def table(d: dict) -> None:
        from kvplan.report.tables import render_rows

        render_rows(
            f"Bundled catalog ({len(d['models'])} models)",
            ["id", "family", "role", "layer mix", "provenance"],
            [[m["id"], m.get("family"), m.get("role"), m.get("layer_mix"), m.get("provenance")] for m in d["models"]],
        )

    emit(data, format.value, table)
