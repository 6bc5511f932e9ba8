"""`kvplan simulate`: vLLM's grouping, padding, memory and start-up outcome (and --sweep-threshold)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.cli.app import app, handle_errors
from kvplan.cli.params import EmitOption, Format, Model, OutputFormat, command_options
from kvplan.cli.render import finish, write_emitted

if TYPE_CHECKING:
    from kvplan.results.envelope import Envelope


@app.command("simulate")
@handle_errors
@command_options("simulate")
def simulate_command(model: Model, *, format: OutputFormat = Format.table, emit: EmitOption = None,
                     **options) -> None:
    """Group layers, size the KV cache and predict start-up, as a vLLM release would.

    --emit FORMAT writes the deployment (kvplan emit's formats) when it starts. Exit codes: 0 the
    engine would start; 3 it would fail (or a check failed); 1 kvplan error.
    """
    if options.get("sweep_threshold") is not None:
        _sweep(model, format.value, **options)
        return
    from kvplan.api import simulate

    summary = options.pop("summary", False)

    def table(d: Envelope) -> None:
        from kvplan.report.tables import render_allocation, render_budget, render_plan, render_summary

        if summary:
            render_summary(d)
            return
        render_plan(d)
        if d.get("allocation"):
            render_allocation(d["allocation"])
        if d.get("budget"):
            render_budget(d["budget"])
        if d.get("cross_check"):
            from kvplan.report.cross_check import render_cross_check

            render_cross_check(d["cross_check"])

    data = simulate(model, **options)
    if emit is not None and data["outcome"]["starts"] and not data.get("checks_failed"):
        from kvplan.api import emit as emit_deployment

        write_emitted(emit_deployment(model, as_=emit.value, **options))
        return
    hints = [f"Check failed: {c}" for c in data.get("checks_failed", [])]
    if emit is not None:
        hints.append(f"--emit {emit.value}: nothing written (kvplan writes only deployments that start)")
    finish(data, format.value, table, hints=hints)


def _sweep(model: str, fmt: str, *, sweep_threshold: str, plot: str | None = None, **options) -> None:
    from kvplan.api import sweep
    from kvplan.errors import OptionError

    data = sweep(model, sweep_threshold, **options).to_dict()
    plot_error = None
    if plot:
        from kvplan.report.plot import plot_sweep

        try:
            plot_sweep(data, plot)
            data["plot"] = plot
        except OptionError as e:  # matplotlib missing: keep the computed sweep, say how to get plots
            plot_error = e

    def table(d: dict) -> None:
        from kvplan.report.tables import render_sweep

        render_sweep(d)

    if plot_error is not None:  # the sweep still prints (whatever its outcome), then the hint, exit 1
        from kvplan.cli.app import exit_for
        from kvplan.report.output import emit

        emit(data, fmt, table)
        raise exit_for(plot_error)
    finish(data, fmt, table)
