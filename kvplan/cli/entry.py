"""The ``kvplan`` command's entry point. ``kvplan`` and ``kvplan --help`` print the command list without
importing Typer or any command module (0.06 s less than through the app); any other command line goes to
the Typer app (``kvplan.cli.app.main``)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args in (["-h"], ["--help"]):
        from kvplan.cli.commands import root_help

        root_help()
        return
    from kvplan.cli.app import main as run

    run(args)
