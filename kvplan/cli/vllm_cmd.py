"""`kvplan vllm [kvplan options] serve MODEL [vllm serve flags]` and `kvplan vllm --line 'TEXT'`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, List, Optional, TypedDict

import typer

from kvplan.cli.app import EXIT_USAGE, app, fail, handle_errors
from kvplan.cli.params import EmitOption, Format, OutputFormat, command_options
from kvplan.cli.render import finish, write_emitted

if TYPE_CHECKING:
    from kvplan.results.envelope import Envelope


class _Given(TypedDict, total=False):
    """What names the deployment (one of: the manifest and its container, the pasted line, the serve words),
    handed to --emit as it was to the simulation."""

    file: str
    container: str | None
    line: str
    args: list[str]


_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False}


@app.command("vllm", context_settings=_SETTINGS)
@handle_errors
@command_options("vllm")
def vllm_command(
    serve: Annotated[Optional[List[str]], typer.Argument(
        metavar="serve MODEL [VLLM FLAGS]...", show_default=False,
        help="The words of your `vllm serve` command, from `serve` on. kvplan's own options go before `serve`.")] = None,
    *,
    line: Annotated[Optional[str], typer.Option(
        "--line", metavar="TEXT", help="One pasted command: `vllm serve ...`, `python -m "
        "vllm.entrypoints.openai.api_server ...` or `docker run ... vllm/vllm-openai:TAG ...`, with VAR=value "
        "prefixes and -e VAR=value; '-' reads it from stdin (backslash-continued lines are joined).")] = None,
    decode_line: Annotated[Optional[str], typer.Option(
        "--decode-line", metavar="TEXT", help="With --line (the prefill side): the decode side of a prefill/decode "
        "pair, both with --kv-transfer-config; each side is simulated, then what the KV connector requires of "
        "the pair (NixlConnector, MooncakeConnector, MoRIIOConnector of vLLM 0.34.0).")] = None,
    decode_gpu: Annotated[Optional[str], typer.Option(
        "--decode-gpu", metavar="NAME", help="With --decode-line or --pd: the decode side's GPU when it is not the "
        "prefill side's (--gpu is the prefill side's, and both sides' when this is not given).")] = None,
    file: Annotated[Optional[str], typer.Option(
        "--file", metavar="PATH", help="A docker-compose file, a Kubernetes or KServe manifest (InferenceService, "
        "LLMInferenceService with its LLMInferenceServiceConfigs), vLLM production-stack / llm-d Helm values, a "
        "Dynamo graph or a Ray Serve LLM config (YAML, or a Python script's LLMConfig(...) read with ast, never "
        "run); '-' reads stdin: its vLLM container's command, image tag and environment are the serve line.")] = None,
    container: Annotated[Optional[str], typer.Option(
        "--container", metavar="NAME", help="With --file: the vLLM container to read when there are several "
        "(a part of its name).")] = None,
    pd: Annotated[bool, typer.Option(
        "--pd", help="With --file: the manifest's prefill and decode workers (a vLLM container named for each "
        "role: llm-d P/D values, a Dynamo graph, a KServe LLMInferenceService's prefill and decode pools) as a "
        "prefill/decode pair, as --decode-line checks one.")] = False,
    format: OutputFormat = Format.table,
    emit: EmitOption = None,
    **options,
) -> None:
    """Put kvplan in front of a `vllm serve` line: read every flag as that vLLM release does, and
    simulate it (same result as `kvplan simulate`, plus how each flag was treated).

    Example: kvplan vllm --gpu H100-80GB serve openai/gpt-oss-20b --max-model-len 128k.
    The docker image's tag names the release (v0.18.0 -> vllm==0.18.0). Exit codes: 0 the engine
    would start; 3 it would fail; 1 kvplan error (an unknown or unmodelled flag); 2 usage error.
    --emit FORMAT writes the deployment (kvplan emit's formats) when it starts: a line as a manifest.
    """
    from kvplan.api import vllm_serve

    summary = options.pop("summary", False)
    words = list(serve or [])
    if "--summary" in words[1:]:  # kvplan's option anywhere on the line (vllm serve has no --summary)
        words = [w for w in words if w != "--summary"]
        summary = True
    if emit is not None and (decode_line is not None or pd):
        raise fail("--emit writes one deployment; a prefill/decode pair (--decode-line, --pd) is not written",
                   EXIT_USAGE)
    if decode_line is not None:
        if line is None or words or file is not None:
            raise fail("--decode-line goes with --line (the prefill side), and nothing else", EXIT_USAGE)
        from kvplan.api import pd_pair
        from kvplan.report.pd_tables import render_pd

        data = pd_pair(_line_text(line), decode_line, decode_gpu=decode_gpu, **options)
        finish(data, format.value, render_pd)
        return
    if pd:
        if file is None or words or line is not None or container is not None:
            raise fail("--pd goes with --file (a manifest with a prefill and a decode worker), and nothing else",
                       EXIT_USAGE)
        from kvplan.api import pd_pair_from_file
        from kvplan.report.pd_tables import render_pd

        finish(pd_pair_from_file(file, decode_gpu=decode_gpu, **options), format.value, render_pd)
        return
    if decode_gpu is not None:
        raise fail("--decode-gpu goes with --decode-line or --pd (the decode side of a prefill/decode pair)",
                   EXIT_USAGE)
    given: _Given
    if file is not None:
        if words or line is not None:
            raise fail("give one of --file, --line or the serve words", EXIT_USAGE)
        given = {"file": file, "container": container}
        data = vllm_serve(file=file, container=container, **options)
    elif line is not None:
        if words:
            raise fail("give either --line or the serve words, not both", EXIT_USAGE)
        text = _line_text(line)
        given = {"line": text}
        data = vllm_serve(line=text, **options)
    else:
        if not words or words[0] != "serve":
            if words and words[0].startswith("-"):
                from kvplan.serve.args import before_serve_hint

                raise fail(before_serve_hint(words[0]), EXIT_USAGE)
            got = f" (got {words[0]!r})" if words else ""
            raise fail(f"expected `kvplan vllm [kvplan options] serve MODEL [flags]` or --line 'TEXT'{got}",
                       EXIT_USAGE)
        given = {"args": words[1:]}
        data = vllm_serve(words[1:], **options)
    if emit is not None and data["outcome"]["starts"] and not data.get("checks_failed"):
        from kvplan.api import emit as emit_deployment

        write_emitted(emit_deployment(as_=emit.value, **given, **options))
        return

    def table(d: Envelope) -> None:
        from kvplan.report.serve_tables import render_serve
        from kvplan.report.tables import render_budget, render_plan, render_summary

        if summary:
            from kvplan.report.verdict import render_short

            render_short(render_summary, d)
            return
        render_serve(d)
        render_plan(d)
        if d.get("budget"):
            render_budget(d["budget"])

    hints = [f"Check failed: {c}" for c in data.get("checks_failed", [])]
    if emit is not None:
        hints.append(f"--emit {emit.value}: nothing written (kvplan writes only deployments that start)")
    finish(data, format.value, table, hints=hints)


def _line_text(line: str) -> str:
    """``--line TEXT``, or ``--line -``: standard input, read bounded (kvplan/readfile.py)."""
    if line != "-":
        return line
    from kvplan.readfile import read_text

    return read_text("-", "line", "--line")
