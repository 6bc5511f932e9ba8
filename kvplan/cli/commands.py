"""The commands kvplan has: each one's module under ``kvplan.cli`` (imported only when it runs) and the
one-line help ``kvplan --help`` shows (``root_help``, which imports neither Typer nor any command module)."""

from __future__ import annotations

import sys

# name → (module under kvplan.cli, one-line help shown by `kvplan --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "models": ("models_cmd", "List the bundled model configs (id, family, role, layer mix, provenance)."),
    "inspect": ("inspect_cmd", "Show the per-layer KV-cache specs vLLM would register."),
    "simulate": ("simulate_cmd", "Group layers, size the KV cache and predict start-up, as a vLLM release would."),
    "vllm": ("vllm_cmd", "Put kvplan in front of a `vllm serve` line (or --line 'docker run ...'): simulate it."),
    "check": ("check_cmd", "Simulate every deployment of YAML files and check its expectations (a CI gate)."),
    "fit": ("fit_cmd", "What fits on a GPU: max_model_len, utilization for N requests, GPU x TP table."),
    "compare": ("compare_cmd", "Compare vLLM, SGLang, TensorRT-LLM and llama.cpp on one model and budget."),
    "explain-log": ("explain_log_cmd", "Read a vLLM start-up log: rebuild the layout, cross-check each figure, name the traps."),
    "export": ("export_cmd", "Hand the exact KV pool to a simulator or router: Dynamo Mocker, BLIS, llm-d-inference-sim, llm-d."),
    "emit": ("emit_cmd", "Write a deployment kvplan simulated to start: serve line, compose, k8s, KServe, llm-d, Dynamo, Ray."),
    "diff": ("diff_cmd", "What a vLLM upgrade changes in a deployment: every figure, the era decision behind it."),
    "policies": ("policies_cmd", "List the vLLM releases kvplan models, their eras and what changed at each boundary."),
}


def root_help() -> None:
    """The command list, wrapped to the terminal."""
    from kvplan.cli.help import entry_lines, wrap
    from kvplan.report.terminal import terminal_width
    from kvplan.version import __version__

    cols = terminal_width()
    lines = wrap(f"kvplan {__version__}: predict how vLLM lays out the KV cache of a model (plus a drafter), "
                 "offline, in seconds.", cols)
    lines += ["", *wrap("Usage: kvplan [--version] COMMAND [OPTIONS] ...", cols, "", "  "), "", "Commands:"]
    for n, (_m, h) in COMMANDS.items():
        lines += entry_lines(n, h, cols, column=max(len(c) for c in COMMANDS) + 4)
    lines += [""] + wrap("Run `kvplan COMMAND --help` for a command's options. Exit codes: 0 ok, 1 kvplan error, "
                         "2 usage error, 3 the engine would fail at start-up or a requested check failed.", cols)
    sys.stdout.write("\n".join(lines) + "\n")
