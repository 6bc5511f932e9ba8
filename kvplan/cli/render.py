"""What every command does after the library call: print the result, map the outcome to an exit code."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import typer

from kvplan.cli.app import EXIT_FAILED


def finish(result, fmt: str, table: Callable[[Any], None], *, hints: Sequence[str] = ()) -> None:
    """Print ``result`` (a command's result record, or its data) as ``fmt`` (tables through
    ``table``, given the record itself when it is an ``Envelope``, else the data), then the hints, then exit 3 when the outcome is not ok (the engine would fail, a
    check failed, a question has no answer)."""
    from kvplan.report.output import emit, hint

    if isinstance(result, dict):  # an Envelope holds its own JSON data (filled when it was made)
        data = dict(result)  # as a plain dict: YAML's safe dumper refuses a dict subclass
    else:
        from kvplan.results import to_data

        data = to_data(result)

    # the tables read the record itself (an Envelope: typed records, and the same keys as ``data``)
    emit(data, fmt, (lambda _data: table(result)) if isinstance(result, dict) else table,
         record=result if isinstance(result, dict) else None)
    for h in hints:
        hint(h)
    if not data["outcome"]["ok"]:
        raise typer.Exit(EXIT_FAILED)


def write_emitted(data: dict, lead: tuple[str, ...] = ()) -> None:
    """An emit envelope as `kvplan emit` prints it: the file on stdout; ``lead``, the plan and the warnings on stderr."""
    import sys

    from kvplan.report.output import hint, warn

    sys.stdout.write(data["text"])
    for line in lead:
        hint(line)
    hint(f"kvplan: starts with {data['num_blocks']:,} blocks of {data['block_size']} tokens, max_model_len "
         f"{data['max_model_len']:,} (vLLM {data['vllm_release']}); read it back: {data['read_back']}")
    for w in data.get("warnings", []):
        warn(w)
