#!/usr/bin/env python3
"""The walk: what a reader follows from ``usecases/scenario.py:run_scenario`` to the rendered
result, measured on the calls one deployment really makes (issue 21).

Runs ``kvplan ARGS`` in this interpreter (default: ``simulate openai/gpt-oss-20b --gpu H100-80GB
--format json``, output discarded) with a profile hook, and counts, from the first call of
``run_scenario`` to the end of the command:

- ``files``: kvplan files whose functions ran (the files a reader enters);
- ``steps``: distinct caller-file → callee-file pairs (each is one "open the other file");
- ``climbs``: steps whose callee sits in a higher layer than its caller (the declared order of
  ``tests/test_layering.py::LAYERS``): a lower module calling back up, through a callback, a
  lambda or a method of an object made above it. Imports never climb (the layering test); calls
  can, and each one sends the reader back up the tree;
- ``re_entries``: steps into a file already entered through another step (Σ over files of the
  distinct caller files − 1): the places a reader arrives at again from somewhere else;
- ``re_entries_outside_core``: the same, with the shared core modules (``SHARED``: ``kvplan.specs``,
  ``kvplan.tensors``, ``kvplan.units``, ``kvplan.errors``) left out as callees. Every layer uses those: the
  KV-spec and weight-tensor records, the unit helpers and the error types are vocabulary, read like a glossary, not a place
  the walk goes back to; a file re-entered from several layers *outside* them (the budget layer
  calling the model layer after the use case did) is a real bounce a reader feels. Both figures
  are printed; the second is the one to reduce.

- ``stage_re_entries``: files (outside the shared core and the composing layers: use cases, CLI, options)
  entered under two stages. A stage is what one call of a use case into a lower layer runs (the model stage
  under ``model.layout``, the budget under ``budget.estimate``, the engine under ``engines.vllm.plan``, ...),
  named by the module that call entered; a file entered under two of them is one the walk comes back to after
  it has left it for another stage (the budget stage calling the model layer after the model stage ended).

Fewer of each is a shorter walk. Calls within one file are not steps. Nor is running a module's
body when a function-level import loads it for the first time (``<module>`` frames, and what a module
body calls while it loads): that is when the import happens to run, not a call the reader follows
(imports are the layering test's; tests/test_layering.py checks their direction). The figures depend on the
deployment (a budget from --gpu walks through budget/, a failing one through fixes), so compare
like with like:

    python scripts/walk.py                       # the default deployment
    python scripts/walk.py --list                # and the steps, with their layers
    python scripts/walk.py -- simulate Qwen/Qwen3-8B --kv-cache-memory 20GiB --format json
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the kvplan of this checkout

DEFAULT = ["simulate", "openai/gpt-oss-20b", "--gpu", "H100-80GB", "--format", "json"]
PKG = ROOT / "kvplan"
# core modules every layer uses as vocabulary: calls into them are not counted by re_entries_outside_core
# (results/summary.py: PlanSummary.of, the one reading of a plan's headline figures, for every record that shows them;
# version.py: version_key, the one parser of release strings)
SHARED = frozenset({"kvplan.specs", "kvplan.tensors", "kvplan.units", "kvplan.errors", "kvplan.results.summary",
                    "kvplan.version"})


def _layering():
    spec = importlib.util.spec_from_file_location("_layering", ROOT / "tests" / "test_layering.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# packages the walk reads as one file: the family rules (one module per family and their shared parts,
# kvplan/model/families/), which the model stage enters for a family's layers and for its weights; calls
# between a family's module and the shared base, weights and registry modules are not steps
UNITS = ("kvplan.model.families",)


def module_of(filename: str) -> str | None:
    """``kvplan.usecases.scenario`` for a kvplan file (a module of ``UNITS``: its package); None outside the
    package."""
    path = Path(filename)
    if not path.is_absolute():  # <frozen os>, <string>
        return None
    try:
        rel = path.resolve().relative_to(PKG)
    except ValueError:
        return None
    rel = Path("kvplan") / rel
    parts = rel.with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    if name in METHODS_OF_THE_CALLEE:
        return None
    return next((u for u in UNITS if name.startswith(u + ".")), name)


# modules whose functions are the methods of another module's records: kvplan.frozen's shared __eq__, __hash__ and
# __repr__ stand in for the ones dataclasses would compile into each class (code in ``<string>``, never a step)
METHODS_OF_THE_CALLEE = frozenset({"kvplan.frozen"})


# the layers that compose the stages: a call from one of them into a lower layer starts a stage
COMPOSERS = ("kvplan.usecases", "kvplan.cli", "kvplan.options")


def _composer(module: str | None) -> bool:
    return module is not None and module.startswith(COMPOSERS)


def trace(argv: list[str]) -> list[tuple[str, str, str | None]]:
    """The cross-file calls (caller module, callee module, stage) from run_scenario's first call on. The stage
    of a call is the module the use case (or the CLI) called to start the stage it runs under (the model
    stage's ``kvplan.model.layout``, the budget's ``kvplan.budget.estimate``, ...); None for the calls the
    use cases make among themselves."""
    from kvplan.cli.app import main

    calls: list[tuple[str, str]] = []
    on = False
    cache: dict[str, str | None] = {}

    def mod(code) -> str | None:
        f = code.co_filename
        if f not in cache:
            cache[f] = module_of(f)
        return cache[f]

    def hook(frame, event, _arg):
        nonlocal on
        if event != "call":
            return
        code = frame.f_code
        callee = mod(code)
        if callee is None or code.co_name == "<module>":
            return
        if not on:
            if code.co_name == "run_scenario" and callee == "kvplan.usecases.scenario":
                on = True
            else:
                return
        back = frame.f_back
        while back is not None and mod(back.f_code) is None:  # through the stdlib (dataclasses, functools)
            back = back.f_back
        caller = mod(back.f_code) if back is not None else None
        if back is not None and back.f_code.co_name == "<module>":  # a module body loading
            return
        if caller is not None and caller != callee:
            calls.append((caller, callee, stage_of(frame)))

    def stage_of(frame) -> str | None:
        """The module the outermost call below a composer entered: the stage ``frame`` runs in."""
        stage = None
        f = frame
        while f is not None:
            m = mod(f.f_code)
            if m is not None:
                if _composer(m):
                    return stage
                stage = m
            f = f.f_back
        return stage

    out = io.StringIO()
    sys.setprofile(hook)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            main(argv)
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
    if not calls:
        raise SystemExit(f"run_scenario never ran for: kvplan {' '.join(argv)}")
    return calls


def measure(calls: list[tuple[str, str, str | None]]) -> dict:
    layering = _layering()
    steps = sorted({(a, b) for a, b, _ in calls})
    # the stages each file is entered under; a file outside the shared core entered under stages of two layers
    # is one the walk comes back to after it moved on (the budget stage calling into the model layer)
    stages: dict[str, set[str]] = {}
    for _, b, stage in calls:
        if stage is not None and b not in SHARED and not _composer(b):
            stages.setdefault(b, set()).add(stage)
    layer = lambda m: layering.LAYERS[layering.layer_of(m)][0]  # noqa: E731
    back = {b: sorted(v) for b, v in stages.items() if len(v) > 1}
    files = {"kvplan.usecases.scenario", *(c for _, c in steps), *(a for a, _ in steps)}
    callers: dict[str, set[str]] = {}
    for a, b in steps:
        callers.setdefault(b, set()).add(a)
    climbs = [(a, b) for a, b in steps if layering.layer_of(b) > layering.layer_of(a)]
    return {
        "files": len(files),
        "steps": len(steps),
        "climbs": len(climbs),
        "re_entries": sum(len(v) - 1 for v in callers.values()),
        "re_entries_outside_core": sum(len(v) - 1 for b, v in callers.items() if b not in SHARED),
        "stage_re_entries": len(back),
        "calls": len(calls),
        "_steps": steps,
        "_climbs": climbs,
        "_back": back,
        "_layer": layer,
    }


def main(argv: list[str]) -> int:
    show = "--list" in argv
    rest = argv[argv.index("--") + 1:] if "--" in argv else DEFAULT
    m = measure(trace(rest))
    print(f"kvplan {' '.join(rest)}")
    print(f"files {m['files']}  steps {m['steps']}  climbs {m['climbs']}  re_entries {m['re_entries']}  "
          f"re_entries_outside_core {m['re_entries_outside_core']}  stage_re_entries {m['stage_re_entries']}  "
          f"(cross-file calls {m['calls']})")
    if show:
        callers: dict[str, list[str]] = {}
        for a, b in m["_steps"]:
            callers.setdefault(b, []).append(a)
        for b, v in sorted(callers.items()):
            if len(v) > 1:
                print(f"  re-entered{' (shared core)' if b in SHARED else ''}: {b} from {', '.join(v)}")
        for b, v in sorted(m["_back"].items()):
            print(f"  re-entered after its stage: {b} under {', '.join(v)}")
    if show:
        layer = m["_layer"]
        for a, b in m["_steps"]:
            mark = "  CLIMB" if (a, b) in m["_climbs"] else ""
            print(f"  {a} ({layer(a)}) -> {b} ({layer(b)}){mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
