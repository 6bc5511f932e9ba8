"""The tree shows the layers: no library module imports the CLI.

Every ``import`` in every kvplan module counts, module level and function bodies alike (a lazy
import is still a dependency). Read with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "kvplan"


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PKG.rglob("*.py") if "configs" not in p.parts}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (node.level - 1)]
                    base = ".".join(pkg + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                # the longest kvplan module the import names (a package, a module, or a name in one)
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != name and t.startswith("kvplan"):
                    edges[name].add(t)
    return edges


def test_nothing_outside_the_cli_imports_the_cli():
    # kvplan.__main__ (python -m kvplan) is the CLI's entry point, the one other edge allowed
    offenders = sorted(f"{m} imports {t}" for m, ts in graph().items()
                       if not m.startswith("kvplan.cli") and m != "kvplan.__main__"
                       for t in ts if t == "kvplan.cli" or t.startswith("kvplan.cli."))
    assert offenders == []


def test_the_graph_sees_lazy_imports():
    # guards the test itself: a function-level import (usecases.simulate -> kvplan.device) is an edge
    assert "kvplan.device" in graph()["kvplan.usecases.simulate"] or any(
        t.startswith("kvplan.device") for t in graph()["kvplan.usecases.simulate"])
