#!/usr/bin/env python3
"""Refresh the command outputs embedded in README.md and the pages under docs/.

Each block that follows a line ``<!-- run: kvplan ARGS -->`` is replaced by the real
stdout of that command; a ``<!-- run: python -->`` line is followed by a ```` ```python ````
block (a library example, run as written) and the ```` ```text ```` block of its stdout (run in a fresh interpreter, piped, with COLUMNS=100: kvplan's width for
piped output, fixed here so the snapshots do not follow the caller's terminal).
``tests/test_readme_outputs.py`` checks that the README matches, so these blocks are
snapshot tests of the tables too.

    python scripts/update_readme.py          # rewrite README.md
    python scripts/update_readme.py --check  # exit 1 if a block is stale
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]  # every page that may hold <!-- run: --> blocks
BLOCK = re.compile(r"(<!-- run: (kvplan [^\n]*?|python) -->\n(?:```python\n(.*?)```\n)?```text\n)(.*?)(```)", re.S)


def run(cmd: str, code: str | None = None) -> str:
    argv = [sys.executable, "-c", code] if cmd == "python" else [sys.executable, "-m", "kvplan.cli", *shlex.split(cmd)[1:]]
    env = {**os.environ, "COLUMNS": "100"}  # the snapshots do not follow the caller's terminal
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env)
    out = "\n".join(line.rstrip() for line in proc.stdout.splitlines()) + "\n"
    return out + (f"[exit code {proc.returncode}]\n" if proc.returncode else "")


def blocks(text: str) -> list[tuple[str, str | None, str]]:
    """(command, python code or None, the output recorded in the file) for every block."""
    return [(m.group(2), m.group(3), m.group(4)) for m in BLOCK.finditer(text)]


def main() -> int:
    stale = []
    for doc in DOCS:
        text = doc.read_text()
        new = BLOCK.sub(lambda m: m.group(1) + run(m.group(2), m.group(3)) + m.group(5), text)
        if "--check" in sys.argv:
            stale += [f"{doc.name}: {cmd}" for (cmd, _, old), (_, _, fresh) in zip(blocks(text), blocks(new))
                      if old != fresh]
        else:
            doc.write_text(new)
    for cmd in stale:
        print(f"stale: {cmd}")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
