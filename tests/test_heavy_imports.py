"""torch and transformers are imported only where the docs say, and only inside functions.

* transformers' configuration classes: ``kvplan/model/hfconfig.py`` (reading configs);
* transformers' model classes and torch for the meta-device count: ``kvplan/budget/meta.py``;
* torch for ``--allocate`` / ``--budget-from-device``: ``kvplan/device/probe.py``.

issue 10 found ``kvplan/weights.py`` importing both beside those places; this test reads the
source (AST), so a new import anywhere else fails it.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {
    "transformers": {"kvplan/model/hfconfig.py", "kvplan/budget/meta.py"},
    "torch": {"kvplan/budget/meta.py", "kvplan/device/probe.py"},
}
# Run by vLLM's own interpreter in a throw-away venv (the golden runner), never imported by kvplan.
EXEMPT = {"kvplan/verify/vllm_runner.py", "kvplan/verify/arch_runner.py"}


def _heavy_imports(path: Path):
    """``(package, line, at_module_level)`` for every import of torch or transformers."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inside = {id(x) for f in functions for x in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in ALLOWED:
                yield top, node.lineno, id(node) not in inside


def test_torch_and_transformers_only_in_their_modules_and_lazily():
    found = {}
    for path in sorted((ROOT / "kvplan").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in EXEMPT:
            continue
        for top, line, module_level in _heavy_imports(path):
            found.setdefault(top, set()).add(rel)
            assert rel in ALLOWED[top], f"{rel}:{line} imports {top}; only {sorted(ALLOWED[top])} may"
            assert not module_level, f"{rel}:{line} imports {top} at module level (must be inside a function)"
    assert found == ALLOWED  # each documented place still holds its import


def test_budget_and_device_modules_import_neither():
    modules = ["kvplan.model.inventory", "kvplan.model.families.weights", "kvplan.budget.quantization", "kvplan.budget.meta",
               "kvplan.budget.weights", "kvplan.budget.hardware", "kvplan.budget.estimate",
               "kvplan.device", "kvplan.device.probe", "kvplan.device.views", "kvplan.device.verify"]
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(sorted(k for k in ('torch', 'transformers') if k in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
