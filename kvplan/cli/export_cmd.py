"""`kvplan export`: the deployment's KV pool as a simulator's or router's input (usecases.export)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from kvplan.cli.app import app, handle_errors
from kvplan.cli.intake_params import (
    Check, Container, Entry, File, FileOrRecord, Line, OptionalModel, intake_arguments,
)
from kvplan.cli.params import command_options
from kvplan.cli.render import finish


class Tool(str, Enum):
    mocker = "mocker"
    blis = "blis"
    llmd_sim = "llmd-sim"
    llmd_router = "llmd-router"


@app.command("export")
@handle_errors
@command_options("simulate")
def export_command(
    model: OptionalModel = None,
    *,
    to: Annotated[Tool, typer.Option(
        "--to", case_sensitive=False, help="The tool: mocker (Dynamo Mocker's engine-args JSON), blis (BLIS "
        "arguments), llmd-sim (llm-d-inference-sim --config YAML), llmd-router (the prefix-cache scorer's "
        "EndpointPickerConfig).")],
    line: Line = None, file: File = None, container: Container = None, check: Check = None, entry: Entry = None,
    format: Annotated[FileOrRecord, typer.Option(
        "--format", "-f", case_sensitive=False, help="text: the tool's file or arguments, nothing else on stdout; "
        "json/yaml: the record (figures, mapping, source).")] = FileOrRecord.text,
    **options,
) -> None:
    """Hand the exact KV pool (num_blocks, block size) to a planner, simulator or router.

    The text format prints the file or argument line for the tool on stdout (how vLLM's pool
    maps to the tool's single pool on stderr); json/yaml print the record. Exit codes: 0 written;
    1 kvplan error (the engine would not start: no pool to export).
    """
    from kvplan.usecases.export import export

    data = export(to=to.value, **intake_arguments(model, line, file, container, check, entry, options))

    if format is not FileOrRecord.text:
        finish(data, format.value, lambda d: None)
        return
    import sys

    from kvplan.report.output import hint, warn

    sys.stdout.write(data["text"])
    hint(f"kvplan: {data['tool_name']}: {data['num_blocks']:,} blocks of {data['block_size']} tokens "
         f"(vLLM {data['vllm_release']}: {data['mapping']})")
    for w in data.get("warnings", []):
        warn(w)
