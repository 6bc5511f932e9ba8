"""Versions of installed distributions, read from their ``*.dist-info`` directories.

``importlib.metadata`` answers the same question but costs about 15 ms to import (email
parsing, zip readers), paid on every run because the default policy is the installed vLLM
release and the config cache is keyed by the transformers version. This follows the same
lookup for the common case: the first ``sys.path`` entry holding ``NAME-VERSION.dist-info``
(or ``.egg-info``) wins, the version being the ``Version:`` field of its ``METADATA``
(``PKG-INFO``) file; names compare as PEP 503 normalizes them.
"""

from __future__ import annotations

import os
import re
import sys

_SEPARATORS = re.compile(r"[-_.]+")


def _normalized(name: str) -> str:
    return _SEPARATORS.sub("_", name).lower()


def _metadata_version(path: str) -> str | None:
    for leaf in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(path, leaf), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():  # the headers end at the first blank line
                        break
        except OSError:
            continue
    return None


def version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None when it is not installed."""
    want = _normalized(name)
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for leaf in names:
            stem, dot, suffix = leaf.rpartition(".")
            if suffix not in ("dist-info", "egg-info") or not dot:
                continue
            dist = stem.split("-", 1)[0]
            if _normalized(dist) == want:
                found = _metadata_version(os.path.join(entry or ".", leaf))
                if found is not None:
                    return found
    return None
