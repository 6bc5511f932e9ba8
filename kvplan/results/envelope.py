"""The result envelope every command returns (and ``--format json`` prints), in this order:

1. ``schema_version``, ``kvplan_version``, ``command``;
2. ``inputs``: the model and drafter as resolved (id, where the config came from), the policy
   with the vLLM releases it stands for, and every option's value marked ``given`` or not;
3. ``outcome``: one shape for success and failure (``kvplan.results``);
4. the command's body; ``warnings`` last.

The JSON Schemas in docs/schema/ describe it; tests validate every command against them.
"""

from __future__ import annotations

from kvplan.results import SCHEMA_VERSION
from kvplan.version import __version__


def source_dict(info) -> dict | None:
    """Where a model's config came from (``kvplan.model`` ModelInfo)."""
    if info is None:
        return None
    src = info.source
    return {"id": src.model_id, "requested": src.requested, "source": src.kind, "path": src.path,
            "revision": src.revision}


def policy_dict(era) -> dict | None:
    if era is None:
        return None
    return {"name": era.name, "vllm_release": era.release or None, "release_note": era.release_note or None,
            "vllm_releases": list(era.releases), "threshold": era.threshold, "is_proposal": era.is_proposal}


def envelope(command: str, *, options: dict | None, outcome: dict, body: dict, model=None, drafter=None,
             era=None, warnings: list[str] | None = None) -> dict:
    """``options`` is ``kvplan.options.Resolved.to_dict()`` (``{name: {value, given}}``)."""
    body = dict(body)
    body_warnings = body.pop("warnings", [])
    for k in ("schema_version", "kvplan_version", "command", "outcome"):
        body.pop(k, None)
    out = {
        "schema_version": SCHEMA_VERSION,
        "kvplan_version": __version__,
        "command": command,
        "inputs": {
            "model": source_dict(model),
            "drafter": source_dict(drafter),
            "policy": policy_dict(era),
            "options": options or {},
        },
        "outcome": outcome,
        **body,
    }
    seen: list[str] = []
    for w in [*(warnings or []), *body_warnings]:
        if w not in seen:
            seen.append(w)
    out["warnings"] = seen
    return out
