"""Typer parameters generated from the option table (kvplan.options): one declaration per option.

Every value option is taken as text and parsed by its table entry (one parser for the
command line, deployments files and the library); booleans are flags (``--x/--no-x`` where
vLLM has both spellings). ``command_options(name)`` decorates a command function taking
``**options``: Typer sees one parameter per option of that command, the function receives
the ones given (``None`` for the others is dropped).
"""

from __future__ import annotations

import inspect
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from kvplan.options import BOOL, REPEATABLE, TRISTATE, Option, options_for


class Format(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


Model = Annotated[str, typer.Argument(help="Model id (bundled catalog or HF cache), a config.json, or a directory "
                                      "holding one.", show_default=False)]
OutputFormat = Annotated[Format, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)]


class EmitAs(str, Enum):
    serve = "serve"
    compose = "compose"
    k8s = "k8s"
    production_stack = "production-stack"
    kserve = "kserve"
    llm_d = "llm-d"
    dynamo = "dynamo"
    ray = "ray"


# `--emit FORMAT` on fit, simulate and vllm: the deployment (fit: the goal's) written as `kvplan emit --as` writes it
EmitOption = Annotated[Optional[EmitAs], typer.Option(
    "--emit", case_sensitive=False, show_default=False, metavar="FORMAT",
    help="Write the deployment (fit: the one that reaches --concurrency at --max-model-len) as kvplan emit --as "
    "FORMAT does, once it is simulated to start: the file on stdout, the plan on stderr.")]


def _help(opt: Option) -> str:
    text = opt.help
    if opt.default_doc:
        text += f" Default: {opt.default_doc}."
    return text


def _typer_param(opt: Option) -> inspect.Parameter:
    if opt.kind in (BOOL, TRISTATE):
        flags = (f"{opt.flag}/--no-{opt.flag[2:]}",) if opt.kind == TRISTATE else opt.flags
        show = opt.kind == BOOL or opt.default is not None
        info = typer.Option(*flags, *(opt.aliases if opt.kind == TRISTATE else ()), help=_help(opt),
                            rich_help_panel=opt.panel, show_default=show, hidden=opt.hidden)
        annotation: Any = Annotated[Optional[bool], info]
        default = opt.default if opt.kind == BOOL else None
    else:
        info = typer.Option(*opt.flags, help=_help(opt), rich_help_panel=opt.panel, metavar=opt.metavar,
                            show_default=opt.default is not None, hidden=opt.hidden)
        # --env VAR=VALUE, --model-map PATH=ID, --set KEY=VALUE are repeatable: Typer hands over the list
        annotation = Annotated[Optional[list[str]], info] if opt.kind in REPEATABLE else Annotated[Optional[str], info]
        default = None if opt.default is None else str(opt.default)
    return inspect.Parameter(opt.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def command_options(command: str):
    """Give ``fn(explicit..., **options)`` one Typer option per table option of ``command``.
    ``fn`` receives only the options whose value differs from "not given"."""
    table = options_for(command)

    def decorate(fn):
        sig = inspect.signature(fn, eval_str=True)
        explicit = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        names = {p.name for p in explicit}
        generated = [_typer_param(o) for o in table if o.name not in names]
        positional = [p for p in explicit if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        keyword = [p for p in explicit if p.kind is inspect.Parameter.KEYWORD_ONLY]
        ctx_param = inspect.Parameter("_ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
        params = positional + [ctx_param] + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in generated] + keyword
        generated_names = {p.name for p in generated}

        def wrapper(*args, _ctx: typer.Context, **kwargs):
            # given = set on the command line (or by an environment variable), not Typer's default
            given = {k: v for k, v in kwargs.items() if k in generated_names and v is not None
                     and getattr(_ctx.get_parameter_source(k), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")}
            rest = {k: v for k, v in kwargs.items() if k not in generated_names}
            return fn(*args, **rest, **given)

        wrapper.__name__, wrapper.__doc__, wrapper.__module__ = fn.__name__, fn.__doc__, fn.__module__
        wrapper.__signature__ = sig.replace(parameters=params)
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate
