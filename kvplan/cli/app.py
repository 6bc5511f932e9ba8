"""The Typer app, explicit command registration, and the one error → exit-code mapping.

Exit codes: 0 ok (the engine would start), 1 kvplan error (bad config, unknown policy, bad
option value), 2 usage error, 3 a predicted engine failure or a requested check failed.
Commands live in their own modules and are imported only when run (``kvplan --help`` imports
none of them); each is listed in COMMANDS, so a missing module is an error, not silence.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys

import typer
from typer.core import TyperCommand, TyperGroup

from kvplan.errors import DeploymentsFileError, KvplanError
from kvplan.report.output import one_line

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3

from kvplan.cli.commands import COMMANDS  # noqa: F401 - re-exported: the registry


def _version(value: bool) -> None:
    if value:
        from kvplan.version import __version__

        sys.stdout.write(f"kvplan {__version__}\n")
        raise typer.Exit(EXIT_OK)


def _click_errors() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(usage/click exceptions, abort exceptions): Typer's vendored click and/or click itself.
    Typer >= 0.26 vendors click, so click itself is looked at only when something already
    imported it (importing it costs 10 ms of every run)."""
    errors: list[type] = []
    aborts: list[type] = []
    for module in ("typer.exceptions", "click.exceptions"):
        if module == "click.exceptions" and "click" not in sys.modules:
            continue
        try:
            mod = importlib.import_module(module)
        except ImportError:  # pragma: no cover - one of the two is always there
            continue
        errors += [c for c in (getattr(mod, "TyperException", None), getattr(mod, "ClickException", None)) if c]
        aborts += [c for c in (getattr(mod, "Abort", None),) if c]
    return tuple(errors), tuple(aborts)


class _Group(TyperGroup):
    """Usage errors (unknown flag, missing value or argument) as one ``Error:`` line, exit 2,
    instead of click's usage block and a boxed message."""

    def get_params(self, ctx):
        from kvplan.cli.coercion import install

        return install(super().get_params(ctx))

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        errors, aborts = _click_errors()
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except aborts:
            sys.stderr.write("Error: aborted\n")
            sys.exit(EXIT_ERROR)
        except errors as e:  # click's ClickException and its usage errors
            message = " ".join(e.format_message().split()).rstrip(".")
            ctx = getattr(e, "ctx", None)
            hint = f"; see '{ctx.command_path} --help'" if ctx is not None and e.exit_code == EXIT_USAGE else ""
            sys.stderr.write(f"Error: {one_line(message)}{hint}\n")
            sys.exit(e.exit_code)
        sys.exit(rv if isinstance(rv, int) else EXIT_OK)


class HelpCommand(TyperCommand):
    """A Typer command whose ``--help`` is ``kvplan.cli.help.format_command_help`` and whose text, flag and
    choice parameters are coerced without pydantic (kvplan.cli.coercion)."""

    def get_params(self, ctx):
        from kvplan.cli.coercion import install

        return install(super().get_params(ctx))

    def format_help(self, ctx, formatter) -> None:
        from kvplan.cli.help import format_command_help

        formatter.write(format_command_help(self, ctx))


class _Typer(typer.Typer):
    """Every command's ``--help`` fits the terminal (kvplan.cli.help), whoever registers it."""

    def command(self, *args, cls=None, **kwargs):
        if cls is None:
            cls = HelpCommand
        return super().command(*args, cls=cls, **kwargs)


def _make_app() -> typer.Typer:
    return _Typer(
        name="kvplan",
        cls=_Group,
        help="Predict how vLLM lays out the KV cache of a model (plus a drafter), offline, in seconds.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    )


app = _make_app()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print kvplan's version and exit.", callback=_version,
                                 is_eager=True),
) -> None:
    """Predict how vLLM lays out the KV cache of a model (plus a drafter), offline, in seconds."""


def fail(message: str, code: int = EXIT_ERROR) -> "typer.Exit":
    sys.stderr.write(f"Error: {one_line(message)}\n")
    return typer.Exit(code)


def exit_for(error: BaseException) -> "typer.Exit":
    """The one mapping from an exception to an ``Error:`` line (or lines) and an exit code."""
    if isinstance(error, DeploymentsFileError):
        for issue in error.issues:
            sys.stderr.write(f"Error: {one_line(str(issue))}\n")
        if os.environ.get("GITHUB_ACTIONS") == "true":
            from kvplan.usecases.check import issue_annotations

            for line in issue_annotations(error.issues, os.environ.get("GITHUB_WORKSPACE") or None):
                sys.stderr.write(line + "\n")
        return typer.Exit(error.exit_code)
    if isinstance(error, KvplanError):
        return fail(error.message, error.exit_code)
    if isinstance(error, KeyboardInterrupt):
        return fail("interrupted", 130)
    if isinstance(error, BrokenPipeError):  # `kvplan ... | head`: the reader left; say nothing more
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return typer.Exit(EXIT_ERROR)
    return fail(f"internal error: {type(error).__name__}: {error} (set KVPLAN_DEBUG=1 for a traceback)")


def handle_errors(fn):
    """Run a command; kvplan's errors (and any stray exception) become ``exit_for``'s exit."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from kvplan.report.progress import on_terminal

        try:
            with on_terminal():  # Rich's bar on stderr for long work, only when stderr is a terminal
                return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except (KvplanError, KeyboardInterrupt) as e:
            raise exit_for(e) from None
        except Exception as e:  # a bug: one line unless KVPLAN_DEBUG asks for the traceback
            if os.environ.get("KVPLAN_DEBUG"):
                raise
            raise exit_for(e) from None

    return wrapper


def _register_all(target: typer.Typer) -> None:
    """Import every command module (each registers itself on ``app``). A module that is
    missing or fails to import raises: a command never vanishes without a word."""
    for name, (module, _help) in COMMANDS.items():
        importlib.import_module(f"kvplan.cli.{module}")
    registered = {c.name for c in target.registered_commands}
    missing = [n for n in COMMANDS if n not in registered]
    if missing:
        raise RuntimeError(f"commands not registered: {', '.join(missing)}")


_registered = False


def ensure_registered() -> typer.Typer:
    global _registered
    if not _registered:
        _register_all(app)
        _registered = True
    return app


def main(argv: list[str] | None = None) -> None:
    """Run a command line through the Typer app (``kvplan.cli.entry.main``, the ``kvplan`` script, answers
    ``kvplan --help`` before Typer is imported)."""
    from kvplan.options import normalize_argv

    argv = normalize_argv(list(sys.argv[1:] if argv is None else argv))
    if not argv or argv in (["-h"], ["--help"]):
        from kvplan.cli.commands import root_help

        root_help()
        return
    if argv[0] in COMMANDS:  # import only the command that runs
        importlib.import_module(f"kvplan.cli.{COMMANDS[argv[0]][0]}")
    else:
        ensure_registered()
    app(args=argv, prog_name="kvplan")
