"""`kvplan policies`: vLLM releases, the era each maps to, what changed at each boundary,
and the proposals (the data is ``kvplan.engines.vllm.releases.policies()``)."""

from __future__ import annotations

from kvplan.cli.app import app, handle_errors
from kvplan.cli.params import Format, OutputFormat
from kvplan.cli.render import finish


@app.command("policies")
@handle_errors
def policies_command(format: OutputFormat = Format.table) -> None:
    """List the vLLM releases kvplan models (0.10.1 to the newest checked), their eras, what
    changed at each era boundary, and the proposals."""
    from kvplan.api import policies

    def table(d: dict) -> None:
        from kvplan.report.tables import render_rows

        default = d["default"]
        render_rows(
            f"vLLM eras (default {default['policy']}{' (installed)' if default['installed'] else ''}, "
            f"newest checked {d['newest_checked']})",
            ["era", "from", "releases", "what changed"],
            [[e["name"], e["first_release"], _span(e["releases"]), e["description"]] for e in d["eras"]],
        )
        render_rows(
            "Releases (--policy vllm==X; * = golden-tested)",
            ["release", "era"],
            [[r["version"] + (" *" if r["golden"] else ""), r["era"]] for r in d["releases"]],
        )
        render_rows(
            "Other names",
            ["policy", "means"],
            [[k, v] for k, v in d["aliases"].items()]
            + [[p["name"], p["description"]] for p in d["proposals"]],
        )

    finish(policies(), format.value, table)


def _span(releases: list[str]) -> str:
    return f"{releases[0]} to {releases[-1]} ({len(releases)})" if len(releases) > 1 else releases[0]
