"""The Typer app, command registration and error → exit-code mapping.

Exit codes: 0 ok (the engine would start), 1 kvplan error (bad config, unknown
policy), 2 usage error, 3 a predicted engine failure or a requested check failed.
"""

from __future__ import annotations

import functools
import os
import sys

import typer

from kvplan.errors import KvplanError

app = typer.Typer(
    name="kvplan",
    help="Predict how vLLM lays out the KV cache of a model (plus a drafter), offline, in seconds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3


def _version(value: bool) -> None:
    if value:
        from kvplan import __version__

        sys.stdout.write(f"kvplan {__version__}\n")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print kvplan's version and exit.", callback=_version,
                                 is_eager=True),
) -> None:
    """Predict how vLLM lays out the KV cache of a model (plus a drafter), offline, in seconds."""


def fail(message: str, code: int = EXIT_ERROR) -> "typer.Exit":
    sys.stderr.write(f"Error: {message}\n")
    return typer.Exit(code)


def handle_errors(fn):
    """Turn kvplan's errors (and any stray exception) into one ``Error:`` line and an exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except KvplanError as e:
            raise fail(e.message, e.exit_code) from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None
        except Exception as e:  # a bug: one line unless KVPLAN_DEBUG asks for the traceback
            if os.environ.get("KVPLAN_DEBUG"):
                raise
            raise fail(f"internal error: {type(e).__name__}: {e} (set KVPLAN_DEBUG=1 for a traceback)") from None

    return wrapper


def _register() -> None:
    # Each command lives in its own module and registers itself on `app`.
    from kvplan.cli import inspect_cmd, models_cmd, policies_cmd, simulate_cmd  # noqa: F401
    for optional in ("check_cmd", "fit_cmd", "compare_cmd"):
        try:
            __import__(f"kvplan.cli.{optional}")
        except ModuleNotFoundError as e:
            if e.name != f"kvplan.cli.{optional}":
                raise


_register()


def main() -> None:
    app()
