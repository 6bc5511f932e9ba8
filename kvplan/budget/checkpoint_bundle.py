"""Bundled checkpoint metadata: what kvplan holds of each catalog model's own weight metadata.

``checkpoint_metadata.json`` (beside this module) has one entry per catalog model. An entry with
``total_size_bytes`` carries the compact form of a genuine ``model.safetensors.index.json`` (and,
where the headers were read, ``bytes_by_module``: bytes per tensor-name prefix and dtype) with its
provenance (repository, commit, path). An entry with ``missing`` says why none is bundled; the
weights then come from kvplan's formula, labelled so in every output.

``compact_form`` builds the bundled form from an index and headers (``kvplan.budget.checkpoint``):
the same summary whether the headers come from a local file or HTTP range requests.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

_FILE = Path(__file__).with_name("checkpoint_metadata.json")
_LAYER = re.compile(r"\.\d+(\.|$)")


@lru_cache(maxsize=1)
def _bundle() -> dict:
    return json.loads(_FILE.read_text(encoding="utf-8"))


def bundled_entry(model_id: str) -> dict | None:
    """The bundled entry of a catalog model (None for a model the bundle does not list)."""
    return _bundle()["models"].get(model_id)


def bundled_metadata(model_id: str) -> dict | None:
    """The entry when it holds genuine metadata (``total_size_bytes``), else None."""
    e = bundled_entry(model_id)
    return e if e and "total_size_bytes" in e else None


def missing_reason(model_id: str) -> str:
    """Why kvplan has no checkpoint metadata for ``model_id`` (one line)."""
    e = bundled_entry(model_id)
    if e is None:
        return "not a catalog model: no checkpoint metadata bundled"
    return _bundle()["reasons"].get(e.get("missing", ""), e.get("missing", ""))


def module_prefix(tensor_name: str) -> str:
    """The module a tensor belongs to, layer indices dropped: ``model.layers.3.mlp.up_proj.weight`` →
    ``model.layers``; ``model.vision_tower.encoder.layers.0.mlp...`` → ``model.vision_tower.encoder.layers``;
    a name without a layer index keeps all but its last component (``lm_head.weight`` → ``lm_head``)."""
    m = _LAYER.search(tensor_name)
    if m:
        return tensor_name[: m.start()]
    return tensor_name.rsplit(".", 1)[0] if "." in tensor_name else tensor_name


def compact_form(total_size: int | None, headers) -> dict:
    """The bundled form of a checkpoint: the index's ``total_size``, the headers' byte sum and the bytes
    per module prefix and dtype (``{prefix: {dtype: bytes}}``, sorted)."""
    by: dict[str, dict[str, int]] = {}
    for h in headers:
        for t in h.tensors:
            d = by.setdefault(module_prefix(t.name), {})
            d[t.dtype] = d.get(t.dtype, 0) + t.nbytes
    tensor_bytes = sum(sum(d.values()) for d in by.values())
    return {"total_size_bytes": total_size if total_size is not None else tensor_bytes,
            "tensor_bytes": tensor_bytes,
            "bytes_by_module": {k: dict(sorted(v.items())) for k, v in sorted(by.items())}}
