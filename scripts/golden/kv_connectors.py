#!/usr/bin/env python3
"""Write ``kvplan/engines/vllm/kv_connectors.json``: the KV connectors each vLLM release registers
(``KVConnectorFactory.register_connector`` in ``vllm/distributed/kv_transfer/kv_connector/factory.py``)
and whether each one's class subclasses ``SupportsHMA`` (so that the hybrid KV-cache manager stays on
with it, from 0.22), read from the unpacked wheels with ``ast`` (no vLLM import).

Usage::

    python scripts/golden/kv_connectors.py RELEASE_SRC VERSION...

A class's bases are followed through its module and the modules it imports names from, so a connector
that inherits ``SupportsHMA`` from a base class counts, and an alias (``NixlConnector = NixlPullConnector``)
is followed. A registered name bound by a call rather
than a class (0.34's ``LMCacheMPConnector = _resolve_lmcache_mp_connector()``, which prefers the lmcache
package's class when that is installed) is resolved to the fallback class the function returns last.
"""

from __future__ import annotations

import ast
import json
import sys
from functools import lru_cache
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "kvplan" / "engines" / "vllm" / "kv_connectors.json"
FACTORY = Path("vllm/distributed/kv_transfer/kv_connector/factory.py")


def registrations(root: Path) -> list[tuple[str, str, str]]:
    tree = ast.parse((root / FACTORY).read_text())
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "register_connector" and len(node.args) == 3
                and all(isinstance(a, ast.Constant) for a in node.args)):
            out.append(tuple(a.value for a in node.args))
    return out


def _module_file(root: Path, module: str) -> Path | None:
    base = root / Path(*module.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.exists():
            return p
    return None


@lru_cache(maxsize=None)
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _base_names(node: ast.ClassDef) -> list[str]:
    names = []
    for b in node.bases:
        if isinstance(b, ast.Name):
            names.append(b.id)
        elif isinstance(b, ast.Attribute):
            names.append(b.attr)
    return names


def supports_hma(root: Path, module: str, name: str, seen: frozenset = frozenset()) -> bool | None:
    """Whether ``module.name`` is a class with ``SupportsHMA`` among its ancestors; None when the class
    is not found in the wheel (an optional package's)."""
    key = (module, name)
    if key in seen:
        return False
    seen = seen | {key}
    path = _module_file(root, module)
    if path is None:
        return None
    tree = _parsed(path)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            for base in _base_names(node):
                if base == "SupportsHMA":
                    return True
                found = _follow(root, module, tree, base, seen)
                if found:
                    return True
            return False
    for node in tree.body:  # name = OtherClass (an alias: 0.24+'s NixlConnector = NixlPullConnector)
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and isinstance(node.value, ast.Name)):
            return _follow(root, module, tree, node.value.id, seen)
    for node in tree.body:  # name = function(): the class the function falls back to
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)):
            fn = next((f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == node.value.func.id), None)
            returns = [r.value.id for r in ast.walk(fn) if isinstance(r, ast.Return) and isinstance(r.value, ast.Name)] \
                if fn else []
            if returns:
                return _follow(root, module, tree, returns[-1], seen)
    return _follow(root, module, tree, name, seen, same_module=False)


def _follow(root: Path, module: str, tree: ast.Module, name: str, seen: frozenset, same_module: bool = True):
    if same_module and any(isinstance(n, ast.ClassDef) and n.name == name for n in tree.body):
        return supports_hma(root, module, name, seen)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and any(a.asname == name or a.name == name
                                                                     for a in node.names):
            alias = next(a for a in node.names if a.asname == name or a.name == name)
            return supports_hma(root, node.module, alias.name, seen)
    return None


def table(root: Path) -> dict:
    out = {}
    for name, module, cls in registrations(root):
        out[name] = {"class": cls, "module": module, "supports_hma": supports_hma(root, module, cls)}
    return out


def main(argv: list[str]) -> None:
    src, versions = Path(argv[0]), argv[1:]
    data = json.loads(OUT.read_text()) if OUT.exists() else {}
    for v in versions:
        data[v] = table(src / v)
        print(f"{v}: {len(data[v])} connectors, SupportsHMA: "
              f"{sorted(k for k, x in data[v].items() if x['supports_hma'])}", file=sys.stderr)
    data = dict(sorted(data.items(), key=lambda kv: tuple(int(p) for p in kv[0].split("."))))
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
