"""Results as plain data, below the use cases and the renderers: the outcome shape (here), the
result dicts (``data``), the envelope every command returns (``envelope``) and the explanation
lines (``explain``).

The one shape of an outcome, for every command and every row that can fail.

``ok``: the command's question got the answer the user wants (the engine starts; a check
passed). ``starts``: whether the engine would start (None where no engine ran). ``stage``:
where it failed (vLLM's function or kvplan's stage). ``error_type`` and ``error``: the
exception and its text, as the engine would print them. ``fix``: the smallest change that
makes it start, when one is known.
"""

from __future__ import annotations

SCHEMA_VERSION = 2  # 2: the envelope (inputs, outcome) of kvplan.results.envelope


def outcome(*, ok: bool, starts: bool | None = None, stage: str | None = None, error_type: str | None = None,
            error: str | None = None, fix: str | None = None) -> dict:
    return {"ok": ok, "starts": starts, "stage": stage, "error_type": error_type, "error": error, "fix": fix}


def plan_outcome(plan, fix: str | None = None) -> dict:
    """A vLLM plan's start-up outcome (its ``failure`` holds the engine's stage, type and text)."""
    f = plan.failure
    if f is None:
        return outcome(ok=True, starts=True)
    return outcome(ok=False, starts=False, stage=f.stage, error_type=f.error_type, error=f.message, fix=fix)


def error_outcome(error: Exception, stage: str = "kvplan") -> dict:
    """kvplan could not answer (bad input, unsupported model): no engine ran."""
    return outcome(ok=False, stage=stage, error_type=type(error).__name__, error=getattr(error, "message", str(error)))
