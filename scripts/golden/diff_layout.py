#!/usr/bin/env python3
"""Diff the KV-layout modules of two unpacked vLLM releases, by file and by function.

Usage::

    python scripts/golden/diff_layout.py OLD_TREE NEW_TREE [--json]

A tree is a directory holding ``vllm/`` (``release_env.sh`` unpacks each wheel's sources
under ``<RELEASE_SRC>/<version>``). Functions and methods are compared on their syntax tree
with docstrings removed (``ast.unparse``), so comments, docstrings and formatting do not
count as changes. Prints one line per changed file, then the added, removed and changed
functions (``Class.method`` for methods). No vLLM import: this runs anywhere.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

# The modules whose code decides the layout, the admission check, the capacity log, the
# hybrid-manager switch, the Mamba alignment and the serve defaults kvplan models.
LAYOUT_MODULES = (
    "vllm/v1/core/kv_cache_utils.py",
    "vllm/v1/core/kv_cache_planning.py",
    "vllm/v1/kv_cache_interface.py",
    "vllm/v1/engine/core.py",
    "vllm/v1/spec_decode/eagle.py",
    "vllm/config/cache.py",
    "vllm/config/vllm.py",
    "vllm/config/scheduler.py",
    "vllm/config/model.py",
    "vllm/config/mamba.py",
    "vllm/engine/arg_utils.py",
    "vllm/model_executor/models/config.py",
    "vllm/distributed/kv_transfer/kv_connector/factory.py",
)


def _strip_docstring(node: ast.AST) -> None:
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        node.body = body[1:] or [ast.Pass()]


def functions(source: str) -> dict[str, str]:
    """``{qualified name: normalised source}`` of every function and method; the module's
    other top-level statements are gathered under ``<module>``."""
    tree = ast.parse(source)
    out: dict[str, str] = {}
    rest: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in node.body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(child):
                    _strip_docstring(sub)
                out[prefix + child.name] = ast.unparse(child)
            elif isinstance(child, ast.ClassDef):
                _strip_docstring(child)
                visit(child, prefix + child.name + ".")
                fields = [ast.unparse(c) for c in child.body
                          if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
                out[prefix + child.name] = "\n".join([ast.unparse(b) for b in child.bases] + fields)
            elif node is tree and not isinstance(child, (ast.Import, ast.ImportFrom)):
                rest.append(ast.unparse(child))

    visit(tree, "")
    if rest:
        out["<module>"] = "\n".join(rest)
    return out


def diff_trees(old: Path, new: Path) -> list[dict]:
    """One entry per layout module that differs: ``{file, status, added, removed, changed}``."""
    report = []
    for rel in LAYOUT_MODULES:
        a, b = old / rel, new / rel
        if not a.exists() and not b.exists():
            continue
        if not a.exists() or not b.exists():
            report.append({"file": rel, "status": "added" if b.exists() else "removed",
                           "added": [], "removed": [], "changed": []})
            continue
        fa, fb = functions(a.read_text()), functions(b.read_text())
        if fa == fb:
            continue
        report.append({
            "file": rel, "status": "changed",
            "added": sorted(set(fb) - set(fa)),
            "removed": sorted(set(fa) - set(fb)),
            "changed": sorted(n for n in set(fa) & set(fb) if fa[n] != fb[n]),
        })
    return report


def format_report(report: list[dict]) -> str:
    if not report:
        return "KV-layout modules: no code change (comments/docstrings aside)"
    lines = []
    for r in report:
        if r["status"] != "changed":
            lines.append(f"{r['file']}: {r['status']}")
            continue
        lines.append(f"{r['file']}: {len(r['changed'])} changed, {len(r['added'])} added, "
                     f"{len(r['removed'])} removed")
        for key, mark in (("changed", "~"), ("added", "+"), ("removed", "-")):
            lines.extend(f"  {mark} {name}" for name in r[key])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    for tree in (args.old, args.new):
        if not (tree / "vllm").is_dir():
            print(f"Error: {tree} has no vllm/ directory (unpack a wheel there first)", file=sys.stderr)
            return 2
    report = diff_trees(args.old, args.new)
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
