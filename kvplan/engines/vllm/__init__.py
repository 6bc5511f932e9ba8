"""vLLM's KV-cache layout decisions, reproduced era by era.

The names below are loaded on first use (PEP 562), so importing a pure-data module of this package
(``eras``, ``versions``) does not import the planner.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "DEFAULT_ERA": "eras", "ERAS": "eras", "Era": "eras", "get_era": "releases",
    "ModelFacts": "plan", "Plan": "plan", "SimulateOptions": "plan", "simulate": "plan",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
