#!/usr/bin/env python3
"""Fail (exit 1) when vulture finds an unused function, method, property or class in kvplan/.

    python scripts/vulture_check.py

vulture reads kvplan/ with scripts/ and tests/ (a function only a script or a test calls is used) and
``.ci/vulture_whitelist.py`` (names a framework calls: Typer commands, PEP 562 ``__getattr__``, …) at
``--min-confidence 60``; only findings in kvplan/ count. Unused imports, variables and attributes are
not checked (most are monkeypatched stand-ins in kvplan/verify/)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = re.compile(r"^kvplan/\S+: unused (function|method|property|class) ")


def findings() -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "vulture", "kvplan", "scripts", "tests", ".ci/vulture_whitelist.py",
                           "--min-confidence", "60"], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode not in (0, 3):  # 3: vulture found something
        sys.exit(f"vulture failed: {proc.stderr.strip()}")
    return [line for line in proc.stdout.splitlines() if KINDS.match(line)]


def main() -> int:
    found = findings()
    for line in found:
        print(line)
    print(f"vulture: {len(found)} unused functions, methods, properties or classes in kvplan/", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
