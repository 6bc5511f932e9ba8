#!/usr/bin/env python3
"""Which fields of which golden cases differ between two vLLM releases.

Usage::

    python scripts/golden/compare_goldens.py OLD_RELEASE NEW_RELEASE [--old-dir D] [--new-dir D]

Reads ``<case>__<release>.json`` from the two directories (default ``tests/golden``) and
prints, per case present in both, every result field whose value differs (JSON paths such as
``workers[0].num_blocks`` or ``logs[2].message``), then the cases only one release has.
The inputs (``case``) are compared too, so a per-release Mamba alignment shows up. Exit
status 0 either way: the report is the product.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IGNORED = {"vllm_version"}


def flatten(value, path: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for k, v in value.items():
            if k in IGNORED:
                continue
            out.update(flatten(v, f"{path}.{k}" if path else k))
        return out
    if isinstance(value, list):
        out = {f"{path}.length": len(value)}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{path}[{i}]"))
        return out
    return {path: value}


def load(directory: Path, release: str) -> dict[str, dict]:
    suffix = f"__{release}.json"
    return {p.name[: -len(suffix)]: json.loads(p.read_text()) for p in directory.glob(f"*{suffix}")}


def compare(old: dict[str, dict], new: dict[str, dict]) -> list[str]:
    lines = []
    changed_cases = 0
    for case in sorted(set(old) & set(new)):
        a, b = flatten(old[case]), flatten(new[case])
        diffs = sorted(k for k in set(a) | set(b) if a.get(k, "<absent>") != b.get(k, "<absent>"))
        if not diffs:
            continue
        changed_cases += 1
        lines.append(f"{case}: {len(diffs)} field(s) changed")
        for k in diffs[:40]:
            x, y = a.get(k, "<absent>"), b.get(k, "<absent>")
            if isinstance(x, str) and isinstance(y, str):  # show where the two texts part
                i = next((j for j, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
                x, y = ("…" if i > 20 else "") + x[max(0, i - 20):], ("…" if i > 20 else "") + y[max(0, i - 20):]
            lines.append(f"  {k}: {_short(x)} -> {_short(y)}")
        if len(diffs) > 40:
            lines.append(f"  … {len(diffs) - 40} more")
    same = len(set(old) & set(new)) - changed_cases
    lines.append(f"{changed_cases} case(s) changed, {same} identical")
    for case in sorted(set(old) - set(new)):
        lines.append(f"only in the old release: {case}")
    for case in sorted(set(new) - set(old)):
        lines.append(f"only in the new release: {case}")
    return lines


def _short(v) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 110 else text[:107] + "..."


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--old-dir", type=Path, default=REPO / "tests" / "golden")
    ap.add_argument("--new-dir", type=Path, default=REPO / "tests" / "golden")
    args = ap.parse_args(argv)
    old, new = load(args.old_dir, args.old), load(args.new_dir, args.new)
    if not old or not new:
        print(f"Error: no goldens for {args.old if not old else args.new} "
              f"(run scripts/golden/make_goldens.py --releases ...)", file=sys.stderr)
        return 2
    print("\n".join(compare(old, new)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
