"""Labels results show for layers, specs and policies (the record types are in ``records``; the use
cases fill them, ``kvplan.usecases.records``).

Keys use vLLM's vocabulary (block_size, page_size_bytes, num_blocks, group_size,
shared_by, sliding_window, attention_chunk_size, max_concurrency), sizes are
integer bytes with ``_bytes`` names, token counts end in ``_tokens``.
"""

from __future__ import annotations

import re

from kvplan.specs import AttentionSpec, UniformTypeKVCacheSpecs, SpecRecord

_INDEX_RE = re.compile(r"layers\.(\d+)\.")


def layer_index(name: str) -> str:
    """A short label for a layer name: its decoder index, ``mtp0`` for MTP layers."""
    m = _INDEX_RE.search(name)
    if name.startswith("mtp.") or ".mtp." in name:
        return f"mtp{m.group(1) if m else ''}"
    if m:
        suffix = "i" if "indexer" in name else ""
        return m.group(1) + suffix
    return name


def kind_label(spec) -> str:
    """``sliding(128)``, ``chunked(8192)``, ``full``, ``mla``, ``mamba:gdn``…"""
    if isinstance(spec, UniformTypeKVCacheSpecs):
        return "uniform-type"
    d = SpecRecord.of(spec)
    if d.kind == "sliding_window":
        return f"sliding({d.sliding_window})"
    if d.kind == "chunked_local":
        return f"chunked({d.attention_chunk_size})"
    if d.kind == "mamba":
        return f"mamba:{d.mamba_type}"
    if d.kind == "full_attention":
        extra = ""
        if d.sliding_window:
            extra = f"[window {d.sliding_window}]"
        elif d.attention_chunk_size:
            extra = f"[chunk {d.attention_chunk_size}]"
        return "full" + extra
    if d.kind == "mla":
        return f"mla({d.head_size})"  # the latent (576) and V3.2's indexer cache (132) differ
    return d.kind.replace("_attention", "")


def bytes_per_token(spec) -> int | None:
    """KV bytes one token costs in this layer (None for state layers, which do not grow)."""
    if isinstance(spec, AttentionSpec):
        return spec.page_size_bytes // spec.block_size
    return None


def policy_label(p) -> str:
    """``vllm==0.24.0 (installed)`` for a release, else the era or proposal name (``p``: a ``PolicyRecord``
    or its data)."""
    if isinstance(p, dict):
        release, note, name = p.get("vllm_release"), p.get("release_note"), p["name"]
    else:
        release, note, name = p.vllm_release, p.release_note, p.name
    if release:
        return f"vllm=={release}" + (f" ({note})" if note else "")
    return name

