#!/usr/bin/env python3
"""Type-check kvplan with mypy: 0 errors in the core layers, and elsewhere no file above its baseline.

    python scripts/mypy_baseline.py            # exit 1 when a core file has an error or a file grew
    python scripts/mypy_baseline.py --update   # write the lower counts to scripts/mypy_baseline.json
                                               # (the first run writes the baseline)

mypy runs with pyproject.toml's ``[tool.mypy]``. The core layers (``CORE``: specs, model, budget,
engines, results) must have no error at all. Every other file may have at most the errors
``scripts/mypy_baseline.json`` records for it (a file it does not name: none); the baseline may only go
down: ``--update`` writes the counts of the files that improved and refuses to raise one. Code that
predates the check (a branch merged after it) is taken in deliberately: delete the baseline file and run
``--update`` (the first run writes it; a core file must still be clean).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scripts" / "mypy_baseline.json"
CORE = ("kvplan/specs.py", "kvplan/model/", "kvplan/budget/", "kvplan/engines/", "kvplan/results/")
# Core files another branch of issue 38 rewrites (the family and weight-rule modules, split into one module
# per family, and the model stage's layout): their errors are fixed after that merge, and held to the
# baseline until then. Remove a file from here (and from the baseline) once it is clean or gone.
CORE_PENDING: tuple[str, ...] = ()  # core files not yet at 0 errors (none)
ERROR = re.compile(r"^(kvplan/[^:]+\.py):\d+(?::\d+)?: error: ")


def counts() -> Counter[str]:
    proc = subprocess.run([sys.executable, "-m", "mypy"], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode not in (0, 1) or "error: " not in proc.stdout and proc.returncode:
        sys.exit(f"mypy failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()}")
    return Counter(m.group(1) for line in proc.stdout.splitlines() if (m := ERROR.match(line)))


def layer(path: str) -> str:
    parts = path.split("/")
    return parts[1].removesuffix(".py") if len(parts) > 1 else path


def main(argv: list[str]) -> int:
    found = counts()
    baseline: dict[str, int] = json.loads(BASELINE.read_text())["errors"] if BASELINE.exists() else {}
    core_bad = {f: n for f, n in found.items() if f.startswith(CORE) and f not in CORE_PENDING}
    grown = {f: (n, baseline.get(f, 0)) for f, n in found.items()
             if not (f.startswith(CORE) and f not in CORE_PENDING) and n > baseline.get(f, 0)}
    shrunk = {f: (found.get(f, 0), n) for f, n in baseline.items() if found.get(f, 0) < n}
    by_layer = Counter()
    for f, n in found.items():
        by_layer[layer(f)] += n
    print("mypy errors by layer: " + ", ".join(f"{k} {v}" for k, v in sorted(by_layer.items())) +
          f" (total {sum(found.values())})", file=sys.stderr)
    for f, n in sorted(core_bad.items()):
        print(f"{f}: {n} mypy error(s) in a core layer (must be 0; run `mypy {f}`)")
    for f, (n, was) in sorted(grown.items()):
        print(f"{f}: {n} mypy error(s), the baseline allows {was} (run `mypy {f}`)")
    if "--update" in argv:
        if BASELINE.exists() and (core_bad or grown) or core_bad:
            print("not updating: the baseline may only go down", file=sys.stderr)
            return 1
        kept = {f: n for f, n in sorted(found.items()) if n}
        BASELINE.write_text(json.dumps({"note": "written by scripts/mypy_baseline.py --update: mypy errors per "
                                                "file outside the core layers (and in CORE_PENDING's); may only go down",
                                        "errors": kept}, indent=1) + "\n")
        print(f"wrote {BASELINE.relative_to(ROOT)}: {sum(kept.values())} errors in {len(kept)} files", file=sys.stderr)
        return 0
    if shrunk:
        print(f"{len(shrunk)} file(s) below the baseline: run `python scripts/mypy_baseline.py --update` to keep "
              "them there", file=sys.stderr)
    return 1 if core_bad or grown else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
