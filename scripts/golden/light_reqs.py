#!/usr/bin/env python3
"""Print the light requirements of the vLLM visible to this interpreter (its own
Requires-Dist specifiers, for the distribution names given as arguments), one per line;
with --missing, only those the environment does not satisfy. Used by setup_venvs.sh and
release_env.sh."""

import importlib.metadata as md
import re
import sys

from packaging.requirements import Requirement


def main(argv: list[str]) -> None:
    missing_only = "--missing" in argv
    light = {re.sub(r"[-_.]+", "-", n).lower() for a in argv if a != "--missing" for n in a.split()}
    for r in md.requires("vllm") or []:
        req = Requirement(r)
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name not in light or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        if missing_only:
            try:
                if md.version(req.name) in req.specifier:
                    continue
            except md.PackageNotFoundError:
                pass
        print(f"{req.name}{req.specifier}")


if __name__ == "__main__":
    main(sys.argv[1:])
