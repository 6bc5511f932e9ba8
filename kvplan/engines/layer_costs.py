"""Per-layer memory costs in engine-neutral words, the input of every non-vLLM engine model.

vLLM's specs carry a block size and a page; SGLang, TensorRT-LLM and llama.cpp only need
what one token costs in a layer (K + V bytes), how many tokens the layer keeps (all of them,
or a window), and for recurrent layers the state one request holds. The numbers are per
tensor-parallel rank, as the specs are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan.errors import UnsupportedError
from kvplan.units import dtype_size_bytes
from kvplan.specs import (
    AttentionSpec,
    ChunkedLocalAttentionSpec,
    CrossAttentionSpec,
    FullAttentionSpec,
    LayerSpec,
    MambaSpec,
    SlidingWindowSpec,
)

FULL, WINDOW, STATE = "full", "window", "state"


@dataclass(frozen=True)
class LayerCost:
    name: str
    source: str  # "target" | "drafter"
    kind: str  # FULL: keeps every token; WINDOW: keeps window_tokens; STATE: a fixed state per request
    bytes_per_token: int = 0  # K + V bytes one token costs in this layer (attention layers)
    window_tokens: int | None = None  # sliding window W, or the chunk C of chunked local attention
    state_bytes: int = 0  # recurrent state of one request (STATE layers)
    window_kind: str | None = None  # "sliding" | "chunked" (WINDOW layers)
    # STATE layers, engine-neutral: elements of the conv state (without vLLM's speculative rows)
    # and of the temporal (SSM) state, and the conv dtype's bytes; engines choose their own SSM dtype
    state_conv_elements: int = 0
    state_temporal_elements: int = 0
    state_conv_dtype_bytes: int = 2


def layer_cost(ls: LayerSpec) -> LayerCost:
    s = ls.spec
    if isinstance(s, MambaSpec):
        # The raw state (vLLM pads it to the attention page; other engines do not).
        conv, temporal = _state_elements(s)
        return LayerCost(ls.name, ls.source, STATE, state_bytes=s.real_page_size_bytes, state_conv_elements=conv,
                         state_temporal_elements=temporal,
                         state_conv_dtype_bytes=dtype_size_bytes(s.dtypes[0]) if s.dtypes else 2)
    if isinstance(s, CrossAttentionSpec):
        raise UnsupportedError(
            f"compare does not model cross-attention layers ({ls.name}); use `kvplan simulate` for vLLM alone"
        )
    if not isinstance(s, AttentionSpec):  # pragma: no cover - every spec kind is handled above
        raise UnsupportedError(f"compare does not model {type(s).__name__} layers ({ls.name})")
    # real page (not padded) ÷ block size: the page is block_size · heads · (k + v) · bytes,
    # or block_size · 656 for fp8_ds_mla, so the division is exact.
    per_token = s.real_page_size_bytes // s.block_size
    if isinstance(s, SlidingWindowSpec):
        return LayerCost(ls.name, ls.source, WINDOW, per_token, s.sliding_window, window_kind="sliding")
    if isinstance(s, ChunkedLocalAttentionSpec):
        return LayerCost(ls.name, ls.source, WINDOW, per_token, s.attention_chunk_size, window_kind="chunked")
    if isinstance(s, FullAttentionSpec) and s.sliding_window:  # a converted window layer keeps its window
        return LayerCost(ls.name, ls.source, WINDOW, per_token, s.sliding_window, window_kind="sliding")
    if isinstance(s, FullAttentionSpec) and s.attention_chunk_size:
        return LayerCost(ls.name, ls.source, WINDOW, per_token, s.attention_chunk_size, window_kind="chunked")
    return LayerCost(ls.name, ls.source, FULL, per_token)


def _state_elements(s: MambaSpec) -> tuple[int, int]:
    """(conv, temporal) elements of one request's state. kvplan's families build ``shapes`` as
    (conv, temporal); Mamba2 and GDN conv states carry ``num_speculative_blocks`` extra rows in
    vLLM, which the other engines keep elsewhere."""
    if len(s.shapes) < 2:
        return (math.prod(s.shapes[0]) if s.shapes else 0), 0
    conv = s.shapes[0]
    rows = conv[0] - (s.num_speculative_blocks if s.mamba_type in ("mamba2", "gdn") else 0)
    return rows * math.prod(conv[1:]), sum(math.prod(x) for x in s.shapes[1:])


def layer_costs(layers) -> tuple[LayerCost, ...]:
    return tuple(layer_cost(ls) for ls in layers)


def state_bytes_per_request(costs) -> int:
    return sum(c.state_bytes for c in costs if c.kind == STATE)


def is_hybrid(costs) -> bool:
    """Both kinds of attention layer: something a split pool can save on."""
    kinds = {c.kind for c in costs}
    return FULL in kinds and WINDOW in kinds
