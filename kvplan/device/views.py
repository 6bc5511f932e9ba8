"""View geometry, pure Python: the tensors and strided views vLLM builds over one worker.

``plan_views``: One worker of the plan (the PP stage this
device would be) is turned into tensors and per-layer views, as vLLM's model runner
views its raw ``int8`` memory (reference §4.5 and §11 item 5): one slot of
``page · num_blocks`` bytes per shared slot (a single uniform-type group: one per
layer), allocated as one tensor per slot up to 0.32 and as one buffer with the slots
end to end in 0.33 (``backing_of``); in each slot, each sharing layer's views
(``layer_parts``, ``view_style``):

- attention, 0.33: LBNHC, logical ``(num_blocks, num_kv_heads, block_size, head_size +
  head_size_v)`` in physical order block, token, head, content (K then V): a block's
  page is contiguous ("block_outer");
- attention, ≤ 0.32 FlashAttention: ``(2, num_blocks, block_size, num_kv_heads,
  head_size)``, K of every block first, then V ("kv_outer"). In a model with Mamba
  layers vLLM re-strides the same shape so that a block's K and V are adjacent
  (``_update_hybrid_attention_mamba_layout``), because a Mamba layer of the same slot
  uses the whole page of a block ("block_outer"); kvplan does the same when a page is
  padded, when MLA shares the pool with other attention, or when K and V have
  different widths (MiMo-V2: 192/128; then two views, key then value), see
  ``needs_block_outer``;
- MLA: ``(num_blocks, block_size, head_size)`` (0.33: with a head dimension of 1;
  ``fp8_ds_mla``: 656 bytes per token);
- Mamba: one view per state, ``(num_blocks, *shape)`` of its dtype, packed from the
  start of the (padded) page, block stride = the page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan.engines.vllm.sizing import is_single_uniform_type
from kvplan.errors import OptionError
from kvplan.specs import (
    AttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    UniformTypeKVCacheSpecs,
)
from kvplan.units import dtype_size_bytes, plural


@dataclass(frozen=True)
class ViewPart:
    """One strided view of a raw tensor, as the attention backend or Mamba layer sees it.

    ``stride`` and ``offset`` are in elements of ``dtype``; ``block_dim`` is the dimension
    that indexes blocks (1 for FlashAttention's ``(2, num_blocks, …)``, else 0)."""

    name: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: str
    block_dim: int

    @property
    def element_bytes(self) -> int:
        return dtype_size_bytes(self.dtype)

    @property
    def bytes_per_block(self) -> int:
        return math.prod(s for i, s in enumerate(self.shape) if i != self.block_dim) * self.element_bytes

    @property
    def end_byte(self) -> int:
        """One past the last byte the view can reach."""
        last = self.offset + sum((n - 1) * st for n, st in zip(self.shape, self.stride))
        return (last + 1) * self.element_bytes


@dataclass(frozen=True)
class LayerView:
    name: str
    group: int
    ordinal: int  # the layer's position in the worker (the pattern key)
    kind: str
    layout: str  # "kv_outer" | "block_outer"
    page_size_bytes: int  # the spec's page, padding included
    parts: tuple[ViewPart, ...]

    @property
    def real_bytes(self) -> int:
        """Bytes of one block that the layer uses (the page without its padding)."""
        return sum(p.bytes_per_block for p in self.parts)


@dataclass(frozen=True)
class TensorView:
    index: int
    size_bytes: int
    page_size_bytes: int
    num_blocks: int
    layers: tuple[LayerView, ...]

    @property
    def layout(self) -> str:
        kinds = {lv.layout for lv in self.layers}
        return kinds.pop() if len(kinds) == 1 else "mixed"


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


class _Geometry(Exception):
    pass


# How the attention backend views a layer's pages (``view_style``):
#   "lbnhc"          vLLM 0.33: logical [B, H, N, C] per layer, physical order B, N, H, C
#                    (``KVCacheLayout.LBNHC``, ``create_kv_cache_views``): a block's page is
#                    contiguous and C holds K then V of one token and head;
#   "kv_first"       vLLM ≤ 0.32 FlashAttention: (2, num_blocks, block_size, H, D), the K of
#                    every block, then the V;
#   "block_first"    the same shape re-strided so that a block's K and V are adjacent
#                    (``_update_hybrid_attention_mamba_layout``; see ``needs_block_outer``).
VIEW_STYLES = ("lbnhc", "kv_first", "block_first")


def layer_parts(spec: KVCacheSpec, num_blocks: int, page: int, style: str) -> tuple[str, tuple[ViewPart, ...]]:
    """The views of one layer inside a tensor of ``num_blocks`` pages of ``page`` bytes, and
    where a block's bytes lie: "kv_outer" (K half and V half apart) or "block_outer" (one
    contiguous page per block)."""
    nb = num_blocks
    if isinstance(spec, MambaSpec):
        # Each state packed from the start of the (padded) page, as the Mamba layers split it.
        parts, offset = [], 0
        for i, (shape, dt) in enumerate(zip(spec.shapes, spec.dtypes)):
            e = dtype_size_bytes(dt)
            if page % e or offset % e:
                raise _Geometry(f"state {i} ({dt}) is not aligned to its {e}-byte elements in a {page}-byte page")
            shape = tuple(shape)
            parts.append(ViewPart(f"state{i}", (nb, *shape), (page // e, *_contiguous_strides(shape)),
                                  offset // e, dt, 0))
            offset += math.prod(shape) * e
        return "block_outer", tuple(parts)
    if not isinstance(spec, AttentionSpec):
        raise _Geometry(f"kvplan has no view for a {type(spec).__name__}")
    e = dtype_size_bytes(spec.dtype)
    if page % e:
        raise _Geometry(f"a {page}-byte page is not a whole number of {spec.dtype} elements")
    bs, pe = spec.block_size, page // e
    if style == "lbnhc":
        # [B, H, N, C]: C = the content of one token and head (K then V; MLA: the latent,
        # 656 B for fp8_ds_mla), strides in physical order B, N, H, C.
        h = spec.num_kv_heads
        c = spec.real_page_size_bytes // (bs * h * e)
        return "block_outer", (ViewPart("kv", (nb, h, bs, c), (pe, c, h * c, 1), 0, spec.dtype, 0),)
    if isinstance(spec, MLAAttentionSpec):
        width = spec.real_page_size_bytes // (bs * e)  # head_size, or 656 bytes for fp8_ds_mla
        return "block_outer", (ViewPart("latent", (nb, bs, width), (pe, width, 1), 0, spec.dtype, 0),)
    h, hk, hv = spec.num_kv_heads, spec.head_size, spec.head_size_v
    if hk != hv:
        return "block_outer", (
            ViewPart("key", (nb, bs, h, hk), (pe, h * hk, hk, 1), 0, spec.dtype, 0),
            ViewPart("value", (nb, bs, h, hv), (pe, h * hv, hv, 1), bs * h * hk, spec.dtype, 0),
        )
    inner = bs * h * hk  # elements of K (or V) in one block
    if style == "block_first":
        return "block_outer", (ViewPart("kv", (2, nb, bs, h, hk), (inner, pe, h * hk, hk, 1), 0, spec.dtype, 1),)
    return "kv_outer", (ViewPart("kv", (2, nb, bs, h, hk), (nb * inner, inner, h * hk, hk, 1), 0, spec.dtype, 1),)


def is_vllm_033(era) -> bool:
    """vLLM 0.33 (``vllm-latest`` and the proposals built on it): one backing buffer per
    worker and LBNHC views (reference §11 item 5)."""
    return getattr(era, "kv_buffer_layout", None) == "lbnhc"


def backing_of(plan, worker) -> str:
    """How the tensors are allocated: vLLM 0.33 puts a worker's slots end to end in one
    buffer (``layer_stride = page · num_blocks``, reference §11 item 5); before, one tensor
    per slot. A single uniform-type group has one tensor per layer (kvplan keeps that for
    0.33 too)."""
    if is_single_uniform_type(list(worker.groups)):
        return "one tensor per layer"
    return "one buffer" if is_vllm_033(plan.era) else "one tensor per slot"


def view_style(era, specs: list[KVCacheSpec]) -> str:
    if is_vllm_033(era):
        return "lbnhc"
    return "block_first" if needs_block_outer(specs) else "kv_first"


def needs_block_outer(specs: list[KVCacheSpec]) -> bool:
    """Before 0.33: whether the attention layers of a worker use block-outer views (a block's
    K and V adjacent). vLLM does it for models with Mamba layers; kvplan also does it when any
    page is padded, when MLA and other attention share the pool, or when K and V have
    different widths, because then the pages of every layer of a slot must be whole
    blocks of the tensor for the slot to be shared at all."""
    attention = [s for s in specs if isinstance(s, AttentionSpec)]
    mla = [s for s in attention if isinstance(s, MLAAttentionSpec)]
    return (
        any(isinstance(s, MambaSpec) for s in specs)
        or any(s.page_size_bytes != s.real_page_size_bytes for s in attention)
        or (bool(mla) and len(mla) != len(attention))
        or any(s.head_size != s.head_size_v for s in attention if not isinstance(s, MLAAttentionSpec))
    )


def plan_views(plan, rank: int = 0):
    """``(worker, [TensorView], [failure])`` for one worker of ``plan``; no torch.

    A layer whose view cannot be built (page mismatch, misaligned state, out of bounds)
    is left out of its tensor and reported as a failure."""
    if not plan.workers:
        raise OptionError("the plan has no worker configuration (the engine would not start); nothing to allocate")
    if not 0 <= rank < len(plan.workers):
        raise OptionError(f"rank {rank} out of range: the plan has {plural(len(plan.workers), 'pipeline stage')}")
    worker = plan.workers[rank]
    groups = list(worker.groups)
    group_of: dict[str, int] = {}
    spec_of: dict[str, KVCacheSpec] = {}
    for gi, g in enumerate(groups):
        members = dict(g.spec.kv_cache_specs) if isinstance(g.spec, UniformTypeKVCacheSpecs) else {}
        for name in g.layer_names:
            group_of[name] = gi
            spec_of[name] = members.get(name) or plan.specs.get(name) or g.spec
    style = view_style(plan.era, list(spec_of.values()))
    ordinal = {name: i for i, name in enumerate(spec_of)}
    nb = worker.num_blocks
    tensors, failures = [], []
    for ti, kt in enumerate(worker.tensors):
        page = kt.size_bytes // nb if nb else 0
        layers = []
        for name in kt.shared_by:
            spec = spec_of[name]
            where = f"tensor {ti}, group {group_of[name]}, layer {name}"
            if spec.page_size_bytes != page:
                failures.append(f"{where}: page {spec.page_size_bytes:,} B differs from the tensor's {page:,} B")
                continue
            try:
                layout, parts = layer_parts(spec, nb, page, style)
            except _Geometry as e:
                failures.append(f"{where}: {e}")
                continue
            lv = LayerView(name, group_of[name], ordinal[name], spec.kind, layout, page, parts)
            over = [p.name for p in parts if p.end_byte > kt.size_bytes]
            if over or lv.real_bytes > page:
                failures.append(f"{where}: view {', '.join(over) or 'pages'} reaches past the tensor's "
                                f"{kt.size_bytes:,} B")
                continue
            layers.append(lv)
        tensors.append(TensorView(ti, kt.size_bytes, page, nb, tuple(layers)))
    return worker, tensors, failures


def request_block_order(blocks_per_request: list[int]) -> list[int]:
    """Group index of each block one max-length request takes, in the order it takes them.

    Each group gets its share (``blocks_per_request[g]``), spread evenly over the request:
    block k of group g sits at (k + ½) / n_g. Repeating this sequence over block ids
    1 … num_blocks − 1 hands every block id to one group, in the proportions a pool full
    of max-length requests would. Example: ``[3, 1]`` → ``[0, 0, 1, 0]``."""
    counts = [max(int(n), 0) for n in blocks_per_request] or [1]
    if not any(counts):
        counts = [1] * len(counts)
    items = sorted(((k + 0.5) / n, g) for g, n in enumerate(counts) for k in range(n))
    return [g for _, g in items]
