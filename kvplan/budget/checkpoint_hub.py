"""``--download``: a Hub checkpoint's weight metadata without its weights, kept beside the downloaded config.

After ``config.json`` (``kvplan.model.source``), kvplan reads the checkpoint's index and headers from the
Hub's resolve URLs, ``{HF_ENDPOINT}/{repo}/resolve/{commit}/{file}``, as hf-mem does:
``model.safetensors.index.json`` (one range request of at most 64 MiB: the index is a small JSON file), then
each shard's first 8 bytes and its header (two range requests per shard, ``kvplan.budget.checkpoint``);
without an index (HTTP 404), ``model.safetensors``'s header. The weights are never transferred. The user's
Hugging Face token (``HF_TOKEN``, else the token file huggingface_hub keeps) goes to the Hub only: the
redirect to the Hub's CDN carries a signed URL and no Authorization header.

The compact form (``compact_form``: total_size, the headers' byte sum, bytes per module prefix and dtype) is
stored in the repository's cache folder, ``models--<org>--<name>/kvplan/<commit>.checkpoint.json``, beside
``snapshots/`` (huggingface_hub's cache scan reads only ``refs/`` and ``snapshots/``; deleting the repository
from the cache deletes it too). A later run on the cached config, offline, reads it from there
(``checkpoint_bundle.checkpoint_metadata``). A failure (no safetensors, 404, 401 for a gated repository, a
truncated header, no network) is one ``CheckpointError`` line naming the repository, the file and the fix;
the caller keeps the formula and says why.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from kvplan.budget.checkpoint import CheckpointError, compact_form, fetch_checkpoint
from kvplan.model.source import hub_endpoint

STORED_VERSION = 1


def hub_token() -> str | None:
    """The user's Hugging Face token as huggingface_hub finds it (``HF_TOKEN``, then its token file); only
    asked with ``--download``, where huggingface_hub is imported anyway."""
    try:
        from huggingface_hub import get_token  # lazy: only with --download
    except ImportError:  # pragma: no cover - --download already needed it for config.json
        get_token = None
    if get_token is not None:
        try:
            return get_token()
        except Exception:  # noqa: BLE001 - a broken token file or OIDC exchange: fall back to the variable
            pass
    return (os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or "").strip() or None


def stored_path(config_path) -> Path | None:
    """Where the downloaded metadata of the snapshot holding ``config_path`` is kept (None when the config is
    not in a Hugging Face cache snapshot, ``models--*/snapshots/<commit>/config.json``)."""
    p = Path(config_path)
    if len(p.parts) < 4 or p.parts[-3] != "snapshots" or not p.parts[-4].startswith("models--"):
        return None
    return p.parents[2] / "kvplan" / f"{p.parts[-2]}.checkpoint.json"


def stored_metadata(config_path) -> dict | None:
    """The compact form a ``--download`` run stored for this snapshot, or None (none stored, or a file this
    kvplan did not write: it is fetched again)."""
    path = stored_path(config_path)
    if path is None or not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    prov = doc.get("provenance") if isinstance(doc, dict) else None
    if (not isinstance(doc, dict) or doc.get("version") != STORED_VERSION
            or not isinstance(doc.get("total_size_bytes"), int) or doc["total_size_bytes"] < 0
            or not isinstance(prov, dict) or not all(isinstance(prov.get(k), str) for k in ("repo", "commit"))):
        return None
    return doc


def label(meta: dict) -> str:
    """How the figures are labelled: ``downloaded headers, <repo>@<commit>``."""
    p = meta["provenance"]
    return f"downloaded headers, {p['repo']}@{p['commit']}"


def download_metadata(repo: str, commit: str, config_path, *, endpoint: str | None = None) -> dict:
    """Fetch the index and headers of ``repo`` at ``commit`` (range requests, never the weights), store their
    compact form beside the snapshot holding ``config_path`` and return it."""
    form = _fetch(repo, commit, endpoint or hub_endpoint())
    path = stored_path(config_path)
    if path is not None and stored_metadata(config_path) != {"version": STORED_VERSION, **form}:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps({"version": STORED_VERSION, **form}, indent=1) + "\n", encoding="utf-8")
            tmp.replace(path)
        except OSError:  # a read-only cache: this run still uses the figures; the next one fetches again
            pass
    return json.loads(json.dumps(form))  # a copy: callers may not share it


@lru_cache(maxsize=16)
def _fetch(repo: str, commit: str, endpoint: str) -> dict:
    """Once per process and commit (a sweep asks for the weights many times); a failure is not cached."""
    base = f"{endpoint}/{repo}/resolve/{commit}/"
    token = hub_token()
    try:
        ck = fetch_checkpoint(base, headers={"Authorization": f"Bearer {token}"} if token else None)
    except CheckpointError as e:
        raise CheckpointError(f"{repo}@{commit}: {_relative(e.message, base)}"
                              + ("" if token or "HTTP 401" not in e.message else
                                 "; no token found: accept the model's licence on the Hub, then set HF_TOKEN "
                                 "or run 'hf auth login'")) from None
    form = compact_form(ck["total_size"], ck["headers"])
    form["provenance"] = {"repo": repo, "commit": commit, "endpoint": endpoint, "files": ck["files"],
                          "read": "index and safetensors headers by HTTP range requests (no weights)"}
    return form


def _relative(message: str, base: str) -> str:
    """A reader's message with the resolve URL's base dropped (the file name stays; the repository and commit
    lead the line)."""
    return message.replace(base, "")
