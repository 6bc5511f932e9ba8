"""The tree shows the layers: imports run down a declared order of layers (``LAYERS``), no
library module imports the CLI, and no module imports itself back through others (no cycles).

Every ``import`` in every kvplan module counts, module level and function bodies alike (a lazy
import is still a dependency). ``from package import submodule`` is an edge to the submodule
only (a package's ``__init__`` re-exporting its own modules is not a cycle). Read with ``ast``;
nothing is imported.
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
                subs = [f"{base}.{a.name}" for a in node.names]
                # `from pkg import mod` depends on mod; `from pkg import name` depends on pkg
                targets = subs if all(t in modules for t in subs) else [base] + subs
            for t in targets:
                # the longest kvplan module the import names (a package, a module, or a name in one)
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != name and t.startswith("kvplan"):
                    edges[name].add(t)
    return edges


# The declared order, lowest first (docs/ARCHITECTURE.md draws it). A module may import its own
# layer and the layers below it, never one above: function-level imports count the same.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("kvplan.errors", "kvplan.units", "kvplan.specs", "kvplan.tensors", "kvplan.bounds", "kvplan.version",
              "kvplan.frozen",
              "kvplan.installed", "kvplan.readfile", "kvplan.progress", "kvplan.results")),
    ("model", ("kvplan.model",)),
    ("budget", ("kvplan.budget",)),
    ("engines", ("kvplan.engines",)),
    ("adapters", ("kvplan.verify", "kvplan.device")),
    ("intake", ("kvplan.options", "kvplan.serve", "kvplan.logs")),
    ("usecases", ("kvplan.usecases",)),
    ("report", ("kvplan.report",)),
    ("api", ("kvplan.api", "kvplan")),  # the package's __init__ re-exports the api lazily
    ("cli", ("kvplan.cli",)),
]


def layer_of(module: str) -> int:
    """The index in LAYERS of the most specific prefix naming ``module``."""
    best = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    assert best is not None, f"{module} is in no layer: add it to LAYERS and docs/ARCHITECTURE.md"
    return best[0]


def direction_violations(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]})"
                  for m, ts in edges.items() for t in ts if layer_of(t) > layer_of(m))


def test_imports_run_down_the_layers():
    assert direction_violations(graph()) == []


def test_every_module_has_a_layer():
    for m in graph():
        layer_of(m)


def test_the_direction_check_finds_an_upward_import():
    # guards the test itself: the model layer importing a use case is against the order; a use
    # case importing the model is with it
    assert direction_violations({"kvplan.model.layout": {"kvplan.usecases.scenario"}}) == [
        "kvplan.model.layout (model) imports kvplan.usecases.scenario (usecases)"]
    assert direction_violations({"kvplan.usecases.scenario": {"kvplan.model.layout"}}) == []


def test_the_architecture_page_draws_the_declared_order():
    doc = (PKG.parent / "docs" / "ARCHITECTURE.md").read_text()
    block = doc.split("```")[1]  # the first drawing: one line per layer, the name one space in
    drawn = [line.split()[0] for line in block.splitlines() if line[:1] == " " and line[1:2].isalpha()]
    assert drawn == [name for name, _ in reversed(LAYERS)]


def test_nothing_outside_the_cli_imports_the_cli():
    # the module entry is the CLI's own (`python -m kvplan.cli`, kvplan/cli/__main__.py): no exception
    g = graph()
    offenders = sorted(f"{m} imports {t}" for m, ts in g.items()
                       if not m.startswith("kvplan.cli")
                       for t in ts if t == "kvplan.cli" or t.startswith("kvplan.cli."))
    assert offenders == []
    assert "kvplan.__main__" not in g


def test_the_graph_sees_lazy_imports():
    # guards the test itself: a function-level import (usecases.simulate -> kvplan.device) is an edge
    assert "kvplan.device" in graph()["kvplan.usecases.simulate"] or any(
        t.startswith("kvplan.device") for t in graph()["kvplan.usecases.simulate"])


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_cycles():
    # guards the test itself: a -> b -> c -> a is one cycle, d -> a is not part of it
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_one_version_string():
    from kvplan.version import __version__

    pyproject = (PKG.parent / "pyproject.toml").read_text()
    assert f'version = "{__version__}"' in pyproject


def test_architecture_names_every_module():
    # docs/ARCHITECTURE.md draws the tree: every package and module appears in it (a `*_cmd.py`
    # line covers the command modules; `__init__.py` files are their package)
    doc = (PKG.parent / "docs" / "ARCHITECTURE.md").read_text()
    missing = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if path.name == "__init__.py":
            name = f"{rel.parent.name}/" if rel.parent != Path(".") else "__init__.py"
        elif path.name.endswith("_cmd.py"):
            name = "*_cmd.py"
        else:
            name = path.name
        if name not in doc:
            missing.append(str(rel))
    assert missing == [], f"add these to docs/ARCHITECTURE.md: {missing}"
