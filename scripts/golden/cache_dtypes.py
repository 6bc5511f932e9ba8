#!/usr/bin/env python3
"""Write ``kvplan/model/cache_dtypes.json``: the ``--kv-cache-dtype`` values each vLLM release
accepts, so kvplan can tell a value the release refuses (a typo, or a dtype of a later release) from one
it accepts but kvplan does not size yet. Nothing is typed by hand.

Usage::

    python scripts/golden/cache_dtypes.py RELEASE_SRC

Per release of kvplan's serve-flag lists (``kvplan/engines/vllm/serve_flags/<release>.json``):

* where ``RELEASE_SRC/<release>/vllm/config/cache.py`` exists (an unpacked wheel), the arguments of
  its ``CacheDType = Literal[...]``, read with ``ast`` (no vLLM import);
* else the ``choices`` of ``--kv-cache-dtype`` in the release's serve-flag list, which
  ``scripts/golden/serve_flags.py`` took from the release's own parser (``EngineArgs`` builds them
  from ``get_args(CacheDType)``). From 0.33 the parser validates against the mutable
  ``KV_CACHE_DTYPES`` list instead of ``choices``, so those releases need their source.

A release with neither is left out (kvplan then names the newest table it has).

``tensor_dtypes``: the newest source's ``STR_DTYPE_TO_TORCH_DTYPE`` (``vllm/utils/torch_utils.py``; the
torch dtype ``kv_cache_dtype_str_to_dtype`` gives a cache dtype), torch names without ``torch.``.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLAGS = REPO / "kvplan" / "engines" / "vllm" / "serve_flags"
OUT = REPO / "kvplan" / "model" / "cache_dtypes.json"


def literal_values(cache_py: Path) -> list[str]:
    """The string arguments of ``CacheDType = Literal[...]`` in ``vllm/config/cache.py``."""
    tree = ast.parse(cache_py.read_text())
    for node in ast.walk(tree):
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(target, ast.Name)
                and target.id == "CacheDType" and isinstance(node.value, ast.Subscript)):
            inner = node.value.slice
            elts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    raise SystemExit(f"{cache_py}: no CacheDType Literal")


def torch_dtypes(torch_utils_py: Path) -> dict[str, str]:
    """``STR_DTYPE_TO_TORCH_DTYPE`` as ``{name: torch dtype name}`` (``torch.half`` read as float16)."""
    alias = {"half": "float16", "float": "float32"}
    tree = ast.parse(torch_utils_py.read_text())
    for node in ast.walk(tree):
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(target, ast.Name)
                and target.id == "STR_DTYPE_TO_TORCH_DTYPE" and isinstance(node.value, ast.Dict)):
            return {k.value: alias.get(v.attr, v.attr) for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Attribute)}
    raise SystemExit(f"{torch_utils_py}: no STR_DTYPE_TO_TORCH_DTYPE dict")


def flag_choices(release: str) -> list[str] | None:
    doc = json.loads((FLAGS / f"{release}.json").read_text())
    for flag in doc["flags"]:
        if flag.get("dest") == "kv_cache_dtype":
            return flag.get("choices")
    return None


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in release.split("."))


def main(argv: list[str]) -> None:
    src = Path(argv[0]) if argv else None
    releases: dict[str, dict] = {}
    for path in sorted(FLAGS.glob("*.json"), key=lambda p: _key(p.stem)):
        release = path.stem
        cache_py = src / release / "vllm" / "config" / "cache.py" if src else None
        if cache_py is not None and cache_py.exists():
            releases[release] = {"from": "vllm/config/cache.py CacheDType", "values": literal_values(cache_py)}
        elif (choices := flag_choices(release)) is not None:
            releases[release] = {"from": f"serve_flags/{release}.json --kv-cache-dtype choices", "values": choices}
        else:
            print(f"  {release}: no source tree under {src} and no parser choices: left out", file=sys.stderr)
    newest = max((r for r in releases if releases[r]["from"].startswith("vllm/")), key=_key)
    tensors = torch_dtypes(src / newest / "vllm" / "utils" / "torch_utils.py")
    OUT.write_text(json.dumps({"generated_by": "scripts/golden/cache_dtypes.py", "releases": releases,
                               "tensor_dtypes": tensors, "tensor_dtypes_from": newest},
                              indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(REPO)} ({len(releases)} releases)")


if __name__ == "__main__":
    main(sys.argv[1:])
