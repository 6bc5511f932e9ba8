"""`kvplan emit`: a deployment kvplan simulated to start, as a file to deploy (usecases.emit)."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.app import app, handle_errors
from kvplan.cli.intake_params import (
    Check, Container, Entry, File, FileOrRecord, Line, OptionalModel, intake_arguments,
)
from kvplan.cli.params import EmitAs, command_options
from kvplan.cli.render import finish, write_emitted


@app.command("emit")
@handle_errors
@command_options("simulate")
def emit_command(
    model: OptionalModel = None,
    *,
    as_: Annotated[EmitAs, typer.Option(
        "--as", case_sensitive=False, help="serve (the vllm serve line), compose, k8s (a Deployment), "
        "production-stack (Helm values), kserve (an InferenceService), llm-d (model-service values), dynamo (a DynamoGraphDeployment), ray (a Ray Serve LLM config).")],
    line: Line = None, file: File = None, container: Container = None, check: Check = None, entry: Entry = None,
    format: Annotated[FileOrRecord, typer.Option(
        "--format", "-f", case_sensitive=False, help="text: the file only on stdout; json/yaml: the record "
        "(the plan it starts with, how to read it back).")] = FileOrRecord.text,
    **options,
) -> None:
    """Write a deployment kvplan simulated to start, in a format you deploy with.

    kvplan's own intake reads every format back to the same deployment (the command is printed on
    stderr). Exit codes: 0 written; 1 kvplan error (the engine would not start: nothing is written).
    """
    from kvplan.usecases.emit import emit

    data = emit(as_=as_.value, **intake_arguments(model, line, file, container, check, entry, options))
    if format is not FileOrRecord.text:
        finish(data, format.value, lambda d: None)
        return
    write_emitted(data)
