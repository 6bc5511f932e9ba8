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

from kvplan.budget.checkpoint import CheckpointError, parse_index, read_header

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


def local_metadata(config_path) -> dict | None:
    """``_local_metadata`` once per directory and index/shard modification times (a sweep simulates often)."""
    d = Path(config_path).parent
    stamp = tuple((p.name, p.stat().st_mtime_ns) for p in sorted(d.glob("*.safetensors*")) if p.is_file())
    meta = _local_metadata(str(d), stamp)
    return None if meta is None else json.loads(json.dumps(meta))  # a copy: callers may not share it


@lru_cache(maxsize=16)
def _local_metadata(directory: str, stamp: tuple) -> dict | None:
    """The compact form of the checkpoint beside a local ``config.json`` (a model directory or a Hugging Face
    cache snapshot): the index and every shard's header, read from disk (no weights, no network). None when the
    directory holds no safetensors; the index alone (shards absent) gives ``total_size_bytes`` only."""
    d = Path(directory)
    index = d / "model.safetensors.index.json"
    if index.is_file():
        try:
            doc = json.loads(index.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise CheckpointError(f"{index}: not a readable JSON index ({e.__class__.__name__}: {e})") from None
        total, weight_map = parse_index(doc, str(index))
        files = sorted(set(weight_map.values()))
    elif (d / "model.safetensors").is_file():
        total, files = None, ["model.safetensors"]
    else:
        return None
    present = all((d / f).is_file() for f in files)
    if not present and total is None:
        return None
    form = compact_form(total, [read_header(d / f) for f in files] if present else [])
    if not present:
        form.pop("tensor_bytes")
        form.pop("bytes_by_module")
    form["provenance"] = {"local": str(d), "files": ["model.safetensors.index.json"] * index.is_file()
                          + (files if present else [])}
    return form


def checkpoint_metadata(source) -> tuple[dict | None, str]:
    """``(metadata, where)`` for a model source (``kvplan.model.source.ModelSource``): the local checkpoint's own
    index and headers for a local directory or cache snapshot, the bundled entry for a catalog model; else None
    and why."""
    kind = getattr(source, "kind", None)
    if kind in ("local", "hf-cache"):
        meta = local_metadata(source.path)
        return (meta, f"the local checkpoint {Path(source.path).parent}") if meta else (
            None, "no safetensors index or file beside the local config.json")
    model_id = getattr(source, "model_id", None)
    if kind == "catalog" and model_id:
        meta = bundled_metadata(model_id)
        if meta:
            p = meta["provenance"]
            return meta, f"{p['repo']}@{p['commit'][:8]} {p['path']}"
        return None, "none bundled: " + missing_reason(model_id)
    return None, "none read (a downloaded config: the index and headers are not fetched yet)"
