"""Bundled checkpoint metadata: what kvplan holds of each catalog model's own weight metadata.

``checkpoint_metadata.json`` (beside this module) has one entry per catalog model. An entry with
``total_size_bytes`` carries the compact form of a genuine ``model.safetensors.index.json`` (and,
where the headers were read, ``bytes_by_module``: bytes per tensor-name prefix and dtype) with its
provenance (repository, commit, path). An entry with ``missing`` says why none is bundled; the
weights then come from kvplan's formula, labelled so in every output.

``compact_form`` (``kvplan.budget.checkpoint``) builds the bundled form from an index and
headers: the same summary whether the headers come from a local file or HTTP range requests (``--download``:
``kvplan.budget.checkpoint_hub`` stores it beside the downloaded config, where a later offline run finds it).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from kvplan.budget import checkpoint_hub
from kvplan.budget.checkpoint import CheckpointError, compact_form, parse_index, read_header

_FILE = Path(__file__).with_name("checkpoint_metadata.json")
# the reason's start when --download could not read the headers (a warning too: the user asked for them)
DOWNLOAD_FAILED = "--download could not read the checkpoint's headers, the weights are kvplan's formula"


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
        from kvplan.errors import InputFileError
        from kvplan.readfile import loads_json, read_text

        try:
            doc = loads_json(read_text(index, "config", "", stdin=False))
        except InputFileError as e:
            raise CheckpointError(f"{index}: {e.problem}; {e.fix}") from None
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
        form.pop("bytes_by_tensor")
    form["provenance"] = {"local": str(d), "files": ["model.safetensors.index.json"] * index.is_file()
                          + (files if present else [])}
    return form


def checkpoint_metadata(source) -> tuple[dict | None, str]:
    """``(metadata, where)`` for a model source (``kvplan.model.source.ModelSource``), best first: the local
    checkpoint's own headers (a local directory, or a cache snapshot holding the shards); for a Hub snapshot, the
    index and headers a ``--download`` run read by range requests and stored (``checkpoint_hub``), fetched now
    when this run has ``--download`` and none is stored; a local index alone; the bundled entry of a catalog
    model. Else None and why (a failed download's one line: the weights stay kvplan's formula)."""
    kind = getattr(source, "kind", None)
    if kind in ("local", "hf-cache", "download"):
        local = local_metadata(source.path)
        if local is not None and "bytes_by_module" in local:
            return local, f"the local checkpoint {Path(source.path).parent}"
        hub, why = _hub_metadata(source) if kind != "local" else (None, "")
        if hub is not None:
            return hub, checkpoint_hub.label(hub)
        if local is not None:
            return local, f"the local checkpoint {Path(source.path).parent}"
        return None, why or "no safetensors index or file beside the local config.json"
    model_id = getattr(source, "model_id", None)
    if kind == "catalog" and model_id:
        meta = bundled_metadata(model_id)
        if meta:
            p = meta["provenance"]
            return meta, f"{p['repo']}@{p['commit'][:8]} {p['path']}"
        return None, "none bundled: " + missing_reason(model_id)
    return None, f"none read (a {kind} config)"


def _hub_metadata(source) -> tuple[dict | None, str]:
    """The downloaded metadata of a Hub snapshot: stored by an earlier ``--download`` run, else fetched now when
    this run has ``--download`` (``source.download``); else None and why."""
    stored = checkpoint_hub.stored_metadata(source.path)
    if stored is not None:
        return stored, ""
    if not getattr(source, "download", False) or not source.revision:
        return None, ("none read: the Hugging Face cache holds no safetensors index or headers of "
                      f"{source.model_id}; add --download to read them (range requests, no weights)")
    try:
        return checkpoint_hub.download_metadata(source.model_id, source.revision, source.path), ""
    except CheckpointError as e:
        return None, f"{DOWNLOAD_FAILED}: {e.message}"
