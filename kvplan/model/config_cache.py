"""Remember what transformers' configuration classes answered about a config, so that the
next run on the same ``config.json`` does not import transformers (about 1.2 s of a 1.8 s run).

An entry is keyed by the SHA-256 of the raw config and the installed transformers version,
and stored as JSON under ``$KVPLAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kvplan``, else
``~/.cache/kvplan``. ``KVPLAN_NO_CACHE=1`` turns it off. Only attribute reads are replayed,
each value as it round-trips through JSON (the first run returns the same round-tripped
values, so both runs see identical data); an attribute that was never read loads
transformers for real and is added to the entry.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
from typing import Any, Callable

_DIRTY: dict[str, dict] = {}
_VERSION = 1


def _transformers_version() -> str | None:
    from kvplan.installed import version

    return version("transformers")


def cache_root() -> str | None:
    """kvplan's cache directory (``$KVPLAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kvplan``, else
    ``~/.cache/kvplan``); None when ``KVPLAN_NO_CACHE`` turns caching off."""
    if os.environ.get("KVPLAN_NO_CACHE"):
        return None
    return os.environ.get("KVPLAN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kvplan"
    )


def config_key(raw: dict) -> str:
    return hashlib.sha256(json.dumps(raw, sort_keys=True).encode()).hexdigest()


def cache_file(raw: dict) -> str | None:
    base = cache_root()
    version = _transformers_version()
    if base is None or version is None:
        return None
    return os.path.join(base, f"transformers-{version}", f"{config_key(raw)}.json")


# The resolved views of the bundled catalog's configs, shipped with the package
# (``scripts/catalog_resolved.py`` records them): a bundled model's first run reads them instead
# of importing transformers. ``tests/test_config_cache.py`` checks each recorded answer against
# the installed transformers.
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog_resolved.json")
_SHIPPED: dict | None = None


def read_object(path: str) -> dict:
    """The JSON object in a file shipped with the package; {} when it is absent or not an object."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def shipped_entries() -> dict:
    global _SHIPPED
    if _SHIPPED is None:
        _SHIPPED = read_object(SHIPPED).get("entries", {})
    return _SHIPPED


def shipped_entry(raw: dict) -> dict | None:
    """A copy of the shipped entry for ``raw`` (a bundled config), or None (always None with
    ``KVPLAN_NO_SHIPPED_CONFIGS=1``: transformers answers, as for any other config)."""
    if os.environ.get("KVPLAN_NO_SHIPPED_CONFIGS"):
        return None
    entry = shipped_entries().get(config_key(raw))
    return json.loads(json.dumps(entry)) if isinstance(entry, dict) and entry.get("version") == _VERSION else None


def load(path: str | None) -> dict | None:
    """The entry at ``path``: the one this process is still filling (written at exit), else the file's."""
    if path is None:
        return None
    if path in _DIRTY:  # a config built twice in one run (the model stage, then the budget) shares one entry
        return _DIRTY[path]
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and entry.get("version") == _VERSION else None


def new_entry() -> dict:
    return {"version": _VERSION, "class": True, "attrs": {}, "missing": [], "errors": [], "text": None}


def mark_dirty(path: str | None, entry: dict) -> None:
    if path is not None:
        if not _DIRTY:
            atexit.register(flush)
        _DIRTY[path] = entry


def flush() -> None:
    """Write changed entries (atomically; a cache that cannot be written is skipped)."""
    for path, entry in list(_DIRTY.items()):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(entry, f)
            os.replace(tmp, path)
        except OSError:
            pass
        _DIRTY.pop(path, None)


class RecordedConfig:
    """Stands in for a transformers configuration object: answers attribute reads from the
    entry, and asks the real object (built on first need) for anything not recorded."""

    __slots__ = ("_entry", "_rec", "_real", "_load", "_path")

    def __init__(self, entry: dict, rec: dict, load: Callable[[], Any], path: str | None):
        object.__setattr__(self, "_entry", entry)  # the whole file (for marking it dirty)
        object.__setattr__(self, "_rec", rec)  # this config's part (top level or text config)
        object.__setattr__(self, "_real", None)
        object.__setattr__(self, "_load", load)
        object.__setattr__(self, "_path", path)

    def _real_obj(self):
        real = object.__getattribute__(self, "_real")
        if real is None:
            real = object.__getattribute__(self, "_load")()
            object.__setattr__(self, "_real", real)
        return real

    def _dirty(self) -> None:
        mark_dirty(object.__getattribute__(self, "_path"), object.__getattribute__(self, "_entry"))

    def __getattr__(self, key: str) -> Any:
        rec = object.__getattribute__(self, "_rec")
        if key in rec["attrs"]:
            return rec["attrs"][key]
        if key in rec["missing"]:
            raise AttributeError(key)
        if key in rec["errors"]:
            raise RuntimeError(f"transformers refuses to read {key!r} from this config")
        try:
            value = getattr(self._real_obj(), key)
        except AttributeError:
            rec["missing"].append(key)
            self._dirty()
            raise
        except Exception:
            rec["errors"].append(key)
            self._dirty()
            raise
        try:
            value = json.loads(json.dumps(value))
        except (TypeError, ValueError):
            return value  # not plain data (a sub-config object): served live, never recorded
        rec["attrs"][key] = value
        self._dirty()
        return value

    def get_text_config(self) -> Any:
        rec = object.__getattribute__(self, "_rec")
        if rec.get("text") == "self":
            return self
        if rec.get("text") is None:
            real_text = self._real_obj().get_text_config()
            if real_text is self._real_obj():
                rec["text"] = "self"
                self._dirty()
                return self
            rec["text"] = {"attrs": {}, "missing": [], "errors": [], "text": "self"}
            self._dirty()
        outer = self

        def load_text():
            return outer._real_obj().get_text_config()

        return RecordedConfig(object.__getattribute__(self, "_entry"), rec["text"], load_text,
                              object.__getattribute__(self, "_path"))
