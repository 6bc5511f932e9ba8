"""`kvplan fit`: what fits on a GPU (max_model_len, utilization for N requests, which GPU)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from kvplan.cli.app import EXIT_USAGE, app, fail, handle_errors
from kvplan.cli.params import EmitOption, Format, OutputFormat, command_options
from kvplan.cli.render import finish, write_emitted

if TYPE_CHECKING:
    from kvplan.results.envelope import Envelope


@app.command("fit")
@handle_errors
@command_options("fit")
def fit_command(
    model: Annotated[Optional[str], typer.Argument(help="Model id (bundled catalog or HF cache), a config.json, or "
                                                   "a directory holding one.", show_default=False)] = None,
    *,
    list_gpus: Annotated[bool, typer.Option("--list-gpus", help="List the GPU presets with their memory and its "
                                            "source, then exit.")] = False,
    format: OutputFormat = Format.table,
    emit: EmitOption = None,
    **options,
) -> None:
    """What fits on a GPU: the largest max_model_len, the smallest --gpu-memory-utilization
    for N requests of L tokens, and max concurrency per GPU preset and TP size.

    Each answer is found by simulating vLLM itself (auto-fit, admission check, grouping) on
    an estimated KV budget (weights exact from the config; activation, non-torch and
    CUDA-graph memory estimated, each with an override). Exit codes: 0 answered; 3 the
    engine would not start on --gpu at any length, or no utilization <= 1 reaches
    --concurrency, or no deployment reaches the goal below; 1 kvplan error; 2 usage error.

    With --gpu, --concurrency N and --max-model-len L, fit searches the flags that serve N
    requests of L tokens (--kv-cache-dtype fp8, --gpu-memory-utilization,
    --max-num-batched-tokens, TP / DP) and answers with one deployment, simulated to start at
    the budget band's pessimistic end; --emit FORMAT writes it (kvplan emit's formats).
    """
    from kvplan import api

    if list_gpus:
        def gpu_table(d: dict) -> None:
            from kvplan.report.fit_tables import render_gpu_presets

            render_gpu_presets(d)

        finish(api.gpus(), format.value, gpu_table)
        return
    if model is None:
        raise fail("Missing argument 'MODEL' (or pass --list-gpus)", EXIT_USAGE)

    summary = options.pop("summary", False)

    def table(d: Envelope) -> None:
        from kvplan.report.fit_tables import render_fit

        if summary:
            from kvplan.report.verdict import render_short

            render_short(render_fit, d)
            return
        render_fit(d)

    data = api.fit(model, **options)
    if emit is not None:
        goal = data.get("goal")
        if goal is None:
            raise fail("--emit writes the deployment fit finds for --concurrency N at --max-model-len L on --gpu: "
                       "give all three (without --context-len)", EXIT_USAGE)
        if goal["reached"]:
            from kvplan.options import options_for
            from kvplan.usecases.fit_goal import goal_options

            mine = {o.name for o in options_for("simulate")}
            given = {k: v for k, v in options.items() if k in mine}
            emitted = api.emit(model, as_=emit.value, **{**given, **goal_options(goal)})
            changes = ", ".join(c["flag"] for c in goal["changes"]) or "none"
            write_emitted(emitted, (
                f"kvplan fit: {goal['concurrency']:g} requests of {goal['max_model_len']:,} tokens on "
                f"{goal['num_gpus']} x {goal['gpu']}: {goal['total_steady_state_concurrency_low']:.2f} held at the "
                f"budget band's pessimistic end; changed: {changes}",))
            return
    hints = [] if data["outcome"]["ok"] else [f"Not achievable: {e}" for e in data["outcome"]["error"].split("; ")]
    finish(data, format.value, table, hints=hints)
