"""The deployment intake shared by `diff`, `emit` and `export` (usecases.intake): a model (with kvplan's
options), or one of --line, --file (with --container) and --check (with --entry)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from kvplan.errors import OptionError

OptionalModel = Annotated[Optional[str], typer.Argument(
    help="Model id (bundled catalog or HF cache), a config.json, or a directory holding one; or give the "
    "deployment with --line, --file or --check.", show_default=False)]


class FileOrRecord(str, Enum):
    """--format of the commands that write a file for another tool (emit, export): the file itself, or the record."""

    text = "text"
    json = "json"
    yaml = "yaml"


Line = Annotated[Optional[str], typer.Option(
    "--line", metavar="TEXT", help="The deployment as one pasted `vllm serve ...` / `docker run ...` line; '-' reads "
    "it from stdin.")]
File = Annotated[Optional[str], typer.Option(
    "--file", metavar="PATH", help="The deployment as a manifest: docker-compose, Kubernetes, KServe (InferenceService, "
    "LLMInferenceService with its configs), production-stack or llm-d Helm values, a Dynamo graph, a Ray Serve LLM "
    "config (YAML or a Python script's LLMConfig, read, never run); '-' reads stdin.")]
Container = Annotated[Optional[str], typer.Option(
    "--container", metavar="NAME", help="With --file: the vLLM container to read when there are several.")]
Check = Annotated[Optional[str], typer.Option(
    "--check", metavar="FILE", help="The deployment as an entry of a `kvplan check` deployments file.")]
Entry = Annotated[Optional[str], typer.Option(
    "--entry", metavar="NAME", help="With --check: the deployment's name when the file holds several.")]


def intake_arguments(model, line, file, container, check, entry, options: dict) -> dict:
    """The keyword arguments of usecases.intake.read_deployment; options that do not shape a
    deployment (simulate's checks, --allocate, --cross-check, ...) are refused by name."""
    import sys

    from kvplan.options import OPTIONS, scenario_options

    names = {o.name for o in scenario_options()}
    unused = [OPTIONS[k].flag for k in options if k not in names and k in OPTIONS]
    if unused:
        raise OptionError(f"{', '.join(unused)}: not an option of a deployment here; drop it")
    if line == "-":
        line = sys.stdin.read()
    return dict(model=model, line=line, file=file, container=container, check=check, entry=entry,
                **{k: v for k, v in options.items() if k in names})
