"""``--download``: a Hub checkpoint's weight metadata without its weights, kept beside the downloaded config.

After ``config.json`` (``kvplan.model.source``), kvplan reads the checkpoint's index and headers through
huggingface_hub, the Hub client every HF tool uses (its endpoint ``HF_ENDPOINT``, its token ``HF_TOKEN`` or
token file, its offline switch ``HF_HUB_OFFLINE``, its redirects: the Hub's CDN gets a signed URL and never the
token): ``model.safetensors.index.json`` with ``hf_hub_download``, then each shard's header with
``HfApi.parse_safetensors_file_metadata`` (a range request of the file's first 100,000 bytes, and a second one
for a longer header); without an index (404), ``model.safetensors``'s header. The weights are never
transferred beyond that first read.

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

from kvplan.budget.checkpoint import CheckpointError, Header, compact_form, parse_header, parse_index
from kvplan.model.source import hub_endpoint

STORED_VERSION = 1


def hub_token() -> str | None:
    """The user's Hugging Face token as huggingface_hub finds it (``HF_TOKEN``, then its token file); only
    asked with ``--download``, where huggingface_hub is imported anyway."""
    try:
        from huggingface_hub import get_token  # lazy: only with --download
    except ImportError:  # pragma: no cover - --download already needed it for config.json
        pass
    else:
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
    """Fetch the index and headers of ``repo`` at ``commit`` (huggingface_hub, never the weights), store their
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
    token = hub_token()
    try:
        total, headers, files = _read_hub(repo, commit, endpoint, token)
    except CheckpointError as e:
        raise CheckpointError(f"{repo}@{commit}: {e.message}"
                              + ("" if token or "HTTP 401" not in e.message else
                                 "; no token found: accept the model's licence on the Hub, then set HF_TOKEN "
                                 "or run 'hf auth login'")) from None
    form = compact_form(total, headers)
    form["provenance"] = {"repo": repo, "commit": commit, "endpoint": endpoint, "files": files,
                          "read": "index and safetensors headers through huggingface_hub (range requests, no weights)"}
    return form


def _read_hub(repo: str, commit: str, endpoint: str, token: str | None) -> tuple[int | None, list[Header], list[str]]:
    """``(index total_size or None, every shard's header, the files read)`` through huggingface_hub: the index by
    ``hf_hub_download`` into a temporary cache (it must not land in the user's snapshot, where it would read as a
    local checkpoint), each header by ``HfApi.parse_safetensors_file_metadata`` (a range request of the file's
    first 100,000 bytes, a second one for a longer header); without an index, ``model.safetensors``'s header."""
    import tempfile

    from huggingface_hub import HfApi, hf_hub_download  # lazy: only with --download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    api = HfApi(endpoint=endpoint, token=token)
    file = INDEX
    try:
        with _quiet_progress():
            try:
                with tempfile.TemporaryDirectory(prefix="kvplan-index-") as tmp:
                    path = hf_hub_download(repo, INDEX, revision=commit, cache_dir=tmp, endpoint=endpoint,
                                           token=token)
                    doc = _read_index(path)
                total, weight_map = parse_index(doc, INDEX)
                files, indexed = sorted(set(weight_map.values())), True
            except EntryNotFoundError as e:
                if isinstance(e, LocalEntryNotFoundError):  # the Hub did not answer (not a 404)
                    raise
                total, files, indexed = None, [SINGLE], False
            headers = []
            for file in files:
                try:
                    meta = api.parse_safetensors_file_metadata(repo, file, revision=commit, token=token)
                except EntryNotFoundError:
                    if indexed:
                        raise
                    raise CheckpointError(f"{INDEX}, {SINGLE}: neither is there (HTTP 404), no safetensors headers "
                                          "to read (a GGUF or .bin-only repository?); pass a local safetensors "
                                          "checkpoint for exact weights") from None
                headers.append(_header(meta, file))
    except CheckpointError:
        raise
    except Exception as e:  # noqa: BLE001 - huggingface_hub's and the network's errors, each one line
        raise CheckpointError(f"{file}: {_why(e)}") from None
    return total, headers, [INDEX] * indexed + files


INDEX, SINGLE = "model.safetensors.index.json", "model.safetensors"


def _read_index(path: str):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CheckpointError(f"{INDEX}: not JSON ({e.__class__.__name__}: {e})") from None


def _header(meta, file: str) -> Header:
    """huggingface_hub's parsed header, checked by kvplan's own reader (known dtypes, offsets that match the
    shapes)."""
    doc = {name: {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": list(t.data_offsets)}
           for name, t in meta.tensors.items()}
    if meta.metadata:
        doc["__metadata__"] = meta.metadata
    return parse_header(json.dumps(doc).encode(), file)


def _why(e: BaseException) -> str:
    """One line for an error of huggingface_hub or the network."""
    from huggingface_hub.errors import (HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled,
                                        SafetensorsParsingError)

    if isinstance(e, LocalEntryNotFoundError) and e.__cause__ is not None:  # hf_hub_download's wrap of the cause
        e = e.__cause__
    if isinstance(e, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set; unset it or drop --download"
    if isinstance(e, SafetensorsParsingError):
        reason = str(e).split("): ", 1)[-1].split(". ")[0].rstrip(".")
        return f"{reason} (huggingface_hub SafetensorsParsingError); a truncated or malformed safetensors file"
    response = getattr(e, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(e, HfHubHTTPError) and status is not None:
        phrase = getattr(response, "reason_phrase", "") or ""
        return (f"HTTP {status} {phrase}".rstrip() + f" ({e.__class__.__name__}); check the id, the revision and "
                "HF_TOKEN for gated repositories")
    first = str(e).strip().splitlines()[0] if str(e).strip() else e.__class__.__name__
    return f"cannot connect ({e.__class__.__name__}: {first}); check the network or drop --download"


class _quiet_progress:
    """huggingface_hub's progress bars off unless stderr is a terminal (kvplan's piped stderr stays lines)."""

    def __enter__(self):
        import sys

        from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars

        self.restore = not are_progress_bars_disabled() and not sys.stderr.isatty()
        if self.restore:
            disable_progress_bars()

    def __exit__(self, *exc):
        if self.restore:
            from huggingface_hub.utils import enable_progress_bars

            enable_progress_bars()
