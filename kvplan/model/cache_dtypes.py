"""The ``--kv-cache-dtype`` values each vLLM release accepts, and the cache tensor dtype of each.

Generated data (``cache_dtypes.json`` beside this module, by ``scripts/golden/cache_dtypes.py``; never
edited by hand): per release the arguments of its ``CacheDType`` Literal (``vllm/config/cache.py``; the
serve parser's ``--kv-cache-dtype`` choices where kvplan read the parser instead), and the newest
source's ``STR_DTYPE_TO_TORCH_DTYPE`` (``vllm/utils/torch_utils.py``: the cache tensor's torch dtype,
as ``kv_cache_dtype_str_to_dtype`` gives it). A release without its own table reads the newest one not
newer than it (the oldest for a release before every table).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from kvplan.version import newest_at_or_before, version_key

_PATH = Path(__file__).resolve().with_name("cache_dtypes.json")


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(_PATH.read_text())


def table_release(release: str) -> str:
    """The release whose table answers for ``release``: its own, else the newest not newer than it."""
    have = sorted(_data()["releases"], key=version_key)
    if release in have:
        return release
    return newest_at_or_before(have, release) or have[0]


def accepted_cache_dtypes(release: str) -> tuple[str, ...]:
    """The values of ``CacheDType`` in ``release``."""
    return tuple(_data()["releases"][table_release(release)]["values"])


def every_cache_dtype() -> tuple[str, ...]:
    """Every value some release accepts, oldest release's first (the CLI's choices)."""
    seen: dict[str, None] = {}
    for release in sorted(_data()["releases"], key=version_key):
        seen.update(dict.fromkeys(_data()["releases"][release]["values"]))
    return tuple(seen)


def tensor_dtype(cache_dtype: str) -> str | None:
    """The cache tensor's torch dtype name (``STR_DTYPE_TO_TORCH_DTYPE``); None for ``auto`` (the model's)."""
    return _data()["tensor_dtypes"].get(cache_dtype)
