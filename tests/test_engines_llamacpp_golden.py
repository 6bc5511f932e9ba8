"""kvplan's llama.cpp cache sizes against llama.cpp's own, recorded from a real CPU build
(llama-cpp-python 0.3.36 = llama.cpp 0c1e57098) by ``scripts/golden/llamacpp_goldens.py``.

The goldens hold what llama.cpp logged when it created a context for tiny GGUF models with the
real layer patterns and windows (gemma-3: 5 sliding layers of window 1024 per full layer;
gpt-oss: alternating, window 128): ``n_ctx``, ``n_ctx_seq``, ``n_ubatch``, and per cache the
cells, layers, streams and MiB. The build is too slow for CI; this test only compares.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import full, layers, sw
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.llamacpp import cache_sizes

GOLDEN = Path(__file__).parent / "golden" / "llamacpp"
FILES = sorted(GOLDEN.glob("*.json"))


def tiny_layers(g: dict):
    """The GGUF's layers as kvplan specs: llama.cpp's swa pattern (gemma3 6, gpt-oss 2) marks layer i
    sliding unless i % pattern == pattern - 1. One token costs a layer 2 (K, V) · heads · head_dim · 2 B (f16)."""
    pattern = 6 if g["arch"] == "gemma3" else 2
    heads, dim = g["n_head_kv"], g["head_dim"]
    return layers([full(heads, dim) if i % pattern == pattern - 1 else sw(g["sliding_window"], heads, dim)
                   for i in range(g["n_layer"])])


def cases():
    for f in FILES:
        doc = json.loads(f.read_text())
        for c in doc["cases"]:
            q = c["request"]
            yield pytest.param(doc, c, id=f"{doc['model']}-{q['n_ctx']}-{q['n_seq_max']}-{q['n_ubatch']}"
                                         f"{'-swafull' if q['swa_full'] else ''}{'-unified' if q['kv_unified'] else ''}")


def test_goldens_exist():
    assert {f.stem for f in FILES} == {"gemma3-tiny", "gpt-oss-tiny"}


@pytest.mark.parametrize("doc, case", list(cases()))
def test_cache_sizes_match_llama_cpp(doc, case):
    g, q, got = doc["geometry"], case["request"], case["llama_cpp"]
    costs = layer_costs(tiny_layers(g))
    per_layer = 2 * g["n_head_kv"] * g["head_dim"] * 2
    c = cache_sizes(costs, n_ctx=q["n_ctx"], n_seq=q["n_seq_max"], n_ubatch=q["n_ubatch"], swa_full=q["swa_full"],
                    kv_unified=q["kv_unified"], n_batch=q["n_batch"])
    assert (c.n_ctx, c.n_ctx_seq, c.n_ubatch) == (got["n_ctx"], got["n_ctx_seq"], got["n_ubatch"])
    iswa = {x["cache"]: x["cells"] for x in got["iswa"]}
    assert (c.base_cells, c.swa_cells) == (iswa["non-SWA"], iswa["SWA"])
    base, swa = got["caches"]  # llama.cpp logs the base cache, then the SWA cache
    assert (base["cells"], swa["cells"]) == (c.base_cells, c.swa_cells)
    assert base["n_stream"] == swa["n_stream"] == c.n_stream
    n_full = sum(1 for x in costs if x.kind == "full")
    assert (base["layers"], swa["layers"]) == (n_full, len(costs) - n_full)
    # bytes: kvplan's exact figure, printed as llama.cpp prints it (%.2f MiB of K + V)
    assert c.base_bytes == c.base_cells * c.n_stream * n_full * per_layer
    assert c.swa_bytes == c.swa_cells * c.n_stream * (len(costs) - n_full) * per_layer
    assert (f"{c.base_bytes / 2**20:.2f}", f"{c.swa_bytes / 2**20:.2f}") == (base["size_mib"], swa["size_mib"])
