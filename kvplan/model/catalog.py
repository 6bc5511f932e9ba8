"""The bundled catalog of Hugging Face configs (``configs/<org>/<name>/config.json`` + ``INDEX.json``).

Where it is looked for, first hit wins:

1. ``$KVPLAN_CONFIGS_DIR`` (tests, or a private catalog);
2. ``kvplan/configs`` inside the installed package (package data of a wheel);
3. ``configs/`` next to the ``kvplan`` package (a source checkout or an editable install).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # .../kvplan


def catalog_dir() -> Path | None:
    env = os.environ.get("KVPLAN_CONFIGS_DIR")
    candidates = [Path(env).expanduser()] if env else []
    candidates += [_PACKAGE_DIR / "configs", _PACKAGE_DIR.parent / "configs"]
    for c in candidates:
        if c.is_dir():
            return c
    return None


def catalog_config_path(model_id: str) -> Path | None:
    """``configs/<org>/<name>/config.json`` for a Hub id, if bundled."""
    root = catalog_dir()
    if root is None or ".." in model_id.split("/"):
        return None
    p = root / model_id / "config.json"
    return p if p.is_file() else None


def catalog_ids() -> list[str]:
    """Every bundled id (``<org>/<name>`` with a config.json), as spelled on disk."""
    root = catalog_dir()
    if root is None:
        return []
    return sorted(f"{c.parent.parent.name}/{c.parent.name}" for c in root.glob("*/*/config.json"))


@lru_cache(maxsize=4)
def _index(root: str) -> tuple[dict, ...]:
    p = Path(root) / "INDEX.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    if isinstance(data, dict):
        data = data.get("models", [])
    return tuple(e for e in data if isinstance(e, dict))


def index_entry(model_id: str) -> dict | None:
    root = catalog_dir()
    if root is None:
        return None
    for e in _index(str(root)):
        if (e.get("model_id") or e.get("id")) == model_id:
            return e
    return None


def list_catalog() -> list[dict]:
    """Every bundled config: ``id, family, role, provenance, path`` (plus ``target`` and
    ``layer_mix`` when INDEX.json has them), sorted by id. Configs present on disk but
    missing from INDEX.json are listed too, with ``provenance`` None."""
    root = catalog_dir()
    if root is None:
        return []
    rows: dict[str, dict] = {}
    for e in _index(str(root)):
        mid = e.get("model_id") or e.get("id")
        if not mid:
            continue
        path = root / (e.get("file") or f"{mid}/config.json")
        rows[mid] = {
            "id": mid,
            "family": e.get("family"),
            "role": e.get("role"),
            "provenance": e.get("provenance"),
            "path": str(path),
            "target": e.get("target"),
            "layer_mix": e.get("layer_mix"),
        }
    for cfg in sorted(root.glob("*/*/config.json")):
        mid = f"{cfg.parent.parent.name}/{cfg.parent.name}"
        rows.setdefault(
            mid,
            {"id": mid, "family": None, "role": None, "provenance": None, "path": str(cfg), "target": None, "layer_mix": None},
        )
    return [rows[k] for k in sorted(rows, key=str.lower)]
