"""Write a generated docs page, or with ``--check`` say it is stale (exit 1): the shared ``main``
of the scripts that keep a docs page current (scripts/explain_log_validation.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable


def write_or_check(argv: list[str], doc: Path, text: Callable[[], str], root: Path, script: str) -> int:
    content = text()
    name = doc.relative_to(root)
    if "--check" in argv:
        if not doc.exists() or doc.read_text() != content:
            print(f"{name} is stale: run {script}", file=sys.stderr)
            return 1
        return 0
    doc.write_text(content)
    print(f"wrote {name}")
    return 0
