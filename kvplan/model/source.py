"""Where a model argument's ``config.json`` comes from.

Order (first match wins):

1. ``local``: a path to a ``config.json``, or to a directory holding one.
2. ``catalog``: the bundled ``configs/<org>/<name>/config.json`` (ids exactly as on the Hub).
   Skipped when ``--revision`` is given: a bundled snapshot has no revisions.
3. ``hf-cache``: the local Hugging Face cache, offline:
   ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``;
   ``models--<org>--<name>/snapshots/<commit>/config.json`` where ``<commit>`` is
   ``refs/<revision or main>`` or the revision itself when it is a commit hash.
4. ``download``: ``huggingface_hub.hf_hub_download(repo, "config.json", revision=...)``,
   only with ``download=True`` (``--download``); it lands in the same cache.

Nothing else is ever fetched: no weights, no remote code.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from kvplan.errors import KvplanError, ModelNotFoundError
from kvplan.model import catalog

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
# "org/name", or a bare legacy name such as "gpt2"
_REPO_ID_RE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ModelSource:
    requested: str  # the argument as given
    kind: str  # "local" | "catalog" | "hf-cache" | "download"
    path: str  # the config.json that was read
    revision: str | None  # the commit of an HF-cache/download snapshot; None for local and catalog


def hf_hub_cache_dir() -> Path:
    """huggingface_hub's cache directory, resolved from the same environment variables."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):  # the legacy name huggingface_hub still honours
        return Path(os.environ["HUGGINGFACE_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def _local(model: str) -> str | None:
    p = Path(model).expanduser()
    if p.is_file():
        return str(p)
    if p.is_dir() and (p / "config.json").is_file():
        return str(p / "config.json")
    return None


def _looks_like_path(model: str) -> bool:
    return (
        model.endswith(".json")
        or model.startswith((".", "/", "~"))
        or model.count("/") > 1  # a repo id has at most one '/'
        or (os.sep != "/" and os.sep in model)
        or Path(model).expanduser().exists()
    )


def _hf_cache(model: str, revision: str | None) -> tuple[str, str] | None:
    """``(config_path, commit)`` from the local HF cache, or None."""
    repo_dir = hf_hub_cache_dir() / ("models--" + model.replace("/", "--"))
    if not repo_dir.is_dir():
        return None
    rev = revision or "main"
    commit = None
    ref = repo_dir / "refs" / rev
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8").strip()
    elif _COMMIT_RE.match(rev):
        commit = rev
    if commit is None:
        return None
    config = repo_dir / "snapshots" / commit / "config.json"
    if config.is_file():
        return str(config), commit
    return None


def _download(model: str, revision: str | None) -> tuple[str, str | None]:
    try:
        from huggingface_hub import hf_hub_download  # lazy: only with --download
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        raise KvplanError("--download needs the huggingface_hub package; pip install huggingface_hub") from None
    try:
        path = hf_hub_download(repo_id=model, filename="config.json", revision=revision)
    except Exception as e:  # network, gated repo, missing revision: one line, no traceback
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise KvplanError(
            f"could not download config.json of '{model}'"
            + (f" at revision '{revision}'" if revision else "")
            + f" from the Hugging Face Hub ({e.__class__.__name__}: {first}); "
            "check the id, the revision, your network and HF_TOKEN for gated repositories"
        ) from None
    parts = Path(path).parts
    commit = parts[-2] if len(parts) >= 2 and _COMMIT_RE.match(parts[-2]) else revision
    return path, commit


def resolve_model(model: str, *, revision: str | None = None, download: bool = False) -> ModelSource:
    """Find the ``config.json`` for a model argument (see the module docstring for the order)."""
    tried: list[str] = []
    local = _local(model)
    if local is not None:
        return ModelSource(model, "local", local, None)
    tried.append("local path")
    if _looks_like_path(model) and not _REPO_ID_RE.match(model):
        # A path that does not exist (or a directory without config.json): not a Hub id.
        p = Path(model).expanduser()
        where = f"{p}/config.json" if p.is_dir() else str(p)
        raise ModelNotFoundError(model, [f"local path ({where} does not exist)"])
    if _REPO_ID_RE.match(model):
        if revision is None:
            bundled = catalog.catalog_config_path(model)
            if bundled is not None:
                return ModelSource(model, "catalog", str(bundled), None)
            tried.append("bundled catalog")
        else:
            tried.append("bundled catalog (skipped: it has no revisions)")
        cached = _hf_cache(model, revision)
        if cached is not None:
            return ModelSource(model, "hf-cache", cached[0], cached[1])
        tried.append(f"Hugging Face cache {hf_hub_cache_dir()}" + (f" at revision '{revision}'" if revision else ""))
        if download:
            path, commit = _download(model, revision)
            return ModelSource(model, "download", path, commit)
        tried.append("the Hub (not asked: no --download)")
    raise ModelNotFoundError(model, tried)
