"""kvplan.cli.coercion: the same values as Typer's own (pydantic) coercion, without importing pydantic.

Each case runs one parameter of a real command through both coercions on the installed Typer; the
second test runs a warm ``simulate`` in a fresh interpreter and looks at what it imported.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer.main

from kvplan.cli import app as cli_app
from kvplan.cli import coercion

_typer_coercion = pytest.importorskip("typer._coercion")
BadParameter = pytest.importorskip("typer._click.exceptions").BadParameter


def _simulate_command():
    import kvplan.cli.simulate_cmd  # noqa: F401 - registers the command

    group = typer.main.get_command(cli_app.app)
    return group, group.commands["simulate"]


def _param(command, name):
    return next(p for p in command.params if p.name == name)


def _both(command, name, value):
    """(kvplan's coercion, Typer's) of ``value`` for parameter ``name``; an error as its message."""
    group = typer.main.get_command(cli_app.app)
    ctx = command.make_context("simulate", ["google/gemma-3-27b-it"], parent=group.make_context("kvplan", ["simulate"]))
    param = _param(command, name)
    results = []
    for runtime in (coercion.TextRuntimeParam(parameter_info=param.type_descriptor.parameter_info,
                                              annotation=param.type_descriptor.annotation,
                                              shape=coercion.shape(param.type_descriptor.annotation)),
                    _typer_coercion.build_runtime_param(param.type_descriptor)):
        try:
            results.append(runtime.coerce(value, param=param, ctx=ctx))
        except BadParameter as e:
            results.append(("error", e.format_message()))
    return results


@pytest.mark.parametrize("name, value, expected", [
    ("model", "google/gemma-3-27b-it", "google/gemma-3-27b-it"),     # the argument: text
    ("kv_cache_memory", "40GiB", "40GiB"),                           # a value option: text, parsed by kvplan
    ("kv_cache_memory", None, None),                                 # not given
    ("env", ("A=1", "B=2"), ["A=1", "B=2"]),                         # repeatable: Typer hands over a list
    ("env", None, ()),
    ("download", True, True),                                        # a flag
    ("enable_prefix_caching", None, None),                           # a --x/--no-x flag left unset
])
def test_same_value_as_typers_own_coercion(name, value, expected):
    _, command = _simulate_command()
    ours, typers = _both(command, name, value)
    assert ours == typers == expected


def test_choice_same_member_and_same_refusal():
    _, command = _simulate_command()
    ours, typers = _both(command, "format", "JSON")  # case-insensitive, as declared
    assert ours is typers and ours.value == "json"
    ours, typers = _both(command, "format", "bogus")
    # Typer's goes through pydantic, which puts "Value error, " before the helper's message
    head = "Invalid value for '--format' / '-f': "
    assert ours == ("error", head + "'bogus' is not one of 'table', 'json', 'yaml'.")
    assert typers == ("error", head + "Value error, 'bogus' is not one of 'table', 'json', 'yaml'.")


# numbers with a range keep Typer's coercion (its range check and messages): pydantic is imported for these two
TYPER_COERCED = {"check tolerance: <class 'float'>", "diff max_loss: <class 'float'>"}


def test_every_parameter_of_every_command_has_a_shape():
    """A new parameter of another shape would quietly bring pydantic back: say so here instead."""
    cli_app.ensure_registered()
    group = typer.main.get_command(cli_app.app)
    unshaped = [f"{name} {p.name}: {p.type_descriptor.annotation}" for name, cmd in group.commands.items()
                for p in cmd.params if coercion.shape(p.type_descriptor.annotation) is None]
    assert set(unshaped) == TYPER_COERCED


def test_a_warm_simulate_imports_no_pydantic():
    code = ("import sys, io, contextlib\n"
            "from kvplan.cli.entry import main\n"
            "sys.argv = ['kvplan', 'simulate', 'google/gemma-3-27b-it', '--kv-cache-memory', '40GiB', '--format', 'JSON']\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            "    try: main()\n"
            "    except SystemExit as e: code = e.code\n"
            "print(repr((code, 'pydantic' in sys.modules, out.getvalue()[:1])))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == repr((0, False, "{")), done.stderr[-2000:]
