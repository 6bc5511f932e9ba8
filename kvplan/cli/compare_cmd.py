"""`kvplan compare`: the same model, budget and workload through vLLM (eras and proposals),
SGLang, TensorRT-LLM, llama.cpp and the exact windowed need, plus knob advice."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.cli.app import app, handle_errors
from kvplan.cli.params import Format, Model, OutputFormat, command_options
from kvplan.cli.render import finish

if TYPE_CHECKING:
    from kvplan.results.envelope import Envelope


@app.command("compare")
@handle_errors
@command_options("compare")
def compare_command(model: Model, *, format: OutputFormat = Format.table, **options) -> None:
    """Compare vLLM, SGLang, TensorRT-LLM and llama.cpp on one model, budget and workload.

    One row per engine: KV tokens, max concurrency at the target length, memory per request,
    waste against the exact windowed need, whether it starts, and the knobs used; then the
    knobs that maximise concurrency for the workload. Exit code 0 unless kvplan itself fails.
    """
    from kvplan.api import compare

    def table(d: Envelope) -> None:
        from kvplan.report.compare_tables import render_compare

        render_compare(d)

    finish(compare(model, **options), format.value, table)
