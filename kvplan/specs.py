"""Per-layer KV-cache specs, shaped after vLLM's ``vllm/v1/kv_cache_interface.py``.

Every spec is a frozen dataclass. Equality and hashing compare every field *and*
the exact class (dataclass ``__eq__`` checks ``other.__class__ is self.__class__``),
which is what vLLM's bucketing relies on: a drafter layer joins a target bucket
only when its spec is equal field for field.

The page formula follows vLLM 0.33.0 (reference §12.2): every attention spec
carries ``head_size_v`` and ``page = block_size · num_kv_heads · (head_size +
head_size_v) · dtype_bytes``; MLA has one KV head and ``head_size_v = 0``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import field, replace
from typing import Any, ClassVar, Sequence

from kvplan.frozen import dataclass
from kvplan.errors import EngineFailure, SpecMergeAssertion
from kvplan.results import to_data
from kvplan.units import cdiv, dtype_size_bytes

# Every spec has a short ``kind`` used as the JSON value and in tables.
FULL = "full_attention"
SLIDING = "sliding_window"
CHUNKED = "chunked_local"
MLA = "mla"
MAMBA = "mamba"
CROSS = "cross_attention"
UNIFORM_TYPE = "uniform_type"


@dataclass(frozen=True)
class Workload:
    """The scheduler numbers that a spec's worst-case reservation depends on.

    ``max_in_flight_tokens`` is what vLLM adds to a sliding window or a chunk
    when it reserves blocks for one request: ``max_num_batched_tokens`` up to
    0.20, ``2 · max_num_batched_tokens`` with async scheduling from 0.32
    (reference §11, item 2).
    """

    max_model_len: int
    max_in_flight_tokens: int
    mamba_cache_mode: str = "none"  # "none" | "align" | "all"
    max_num_encoder_input_tokens: int = 0
    cp_world_size: int = 1  # decode_context_parallel_size · prefill_context_parallel_size
    # 0.11 reserved cdiv(max_model_len, block_size) Mamba blocks whatever the mode (one block with
    # the default block = max_model_len), without the speculative blocks.
    mamba_legacy_reservation: bool = False


@dataclass(frozen=True)
class KVCacheSpec:
    """One layer's cache: ``block_size`` tokens per block."""

    kind: ClassVar[str] = ""
    block_size: int

    @property
    def page_size_bytes(self) -> int:
        # Specs are frozen and the grouping path asks for pages many times: compute once.
        page = self.__dict__.get("_page_size_bytes")
        if page is None:
            page = self._compute_page_size_bytes()
            object.__setattr__(self, "_page_size_bytes", page)
        return page

    def _compute_page_size_bytes(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def blocks_per_request(self, w: Workload) -> int:
        """Blocks one request of ``w.max_model_len`` tokens may hold at once."""
        raise NotImplementedError  # pragma: no cover - abstract

    def max_memory_usage_bytes(self, w: Workload) -> int:
        return self.blocks_per_request(w) * self.page_size_bytes

    def with_block_size(self, block_size: int) -> "KVCacheSpec":
        return replace(self, block_size=block_size)

    # --- merge rules (vLLM's ``KVCacheSpec.merge`` and ``UniformTypeKVCacheSpecs.is_uniform_type``) ----

    @classmethod
    def merge(cls, specs: list["KVCacheSpec"]) -> "KVCacheSpec":
        """The spec of a group of layers, as ``type(specs[0]).merge(specs)`` in vLLM: every spec
        must be equal. Raises SpecMergeAssertion where vLLM asserts."""
        if any(s != specs[0] for s in specs):
            raise SpecMergeAssertion("All layers in the same KV cache group must be the same.")
        return specs[0]

    def same_type(self, other: "KVCacheSpec") -> bool:
        """Whether ``other`` may share a uniform-type group with this spec (same layer type; the
        block sizes are compared by the caller). Types without a rule are not supported."""
        raise EngineFailure("NotImplementedError", f"Unsupported KV cache spec type: {type(self)}", "grouping")


@dataclass(frozen=True)
class AttentionSpec(KVCacheSpec):
    num_kv_heads: int
    head_size: int
    dtype: str  # torch dtype name of the cache: bfloat16, float16, float32, uint8
    head_size_v: int = -1  # -1 means "same as head_size" (filled in __post_init__)
    page_size_padded: int | None = None
    # A backend's packing of a quantized page (vLLM 0.34.0 AttentionSpec, kv_cache_interface.py lines
    # 517-566, set by the backend's customize_spec: kvplan.engines.vllm.kv_packing): head slots per
    # token when they are not the KV heads (NVFP4 keeps K and V apart: 2 per head), and the bytes per
    # (slot, token) when they are not (head_size + head_size_v) * dtype size (scales, packed nibbles).
    num_head_slots: int | None = None
    state_content_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.head_size_v == -1:
            object.__setattr__(self, "head_size_v", self.head_size)

    @property
    def real_page_size_bytes(self) -> int:
        """``unpadded_page_size_bytes``: block_size x head slots x bytes per (slot, token)."""
        slots = self.num_head_slots if self.num_head_slots is not None else self.num_kv_heads
        content = (self.state_content_bytes if self.state_content_bytes is not None
                   else (self.head_size + self.head_size_v) * dtype_size_bytes(self.dtype))
        return self.block_size * slots * content

    def _compute_page_size_bytes(self) -> int:
        real = self.real_page_size_bytes
        if self.page_size_padded is not None:
            # vLLM asserts the padded page is not smaller than the real one.
            assert self.page_size_padded >= real
            return self.page_size_padded
        return real

    def _full_blocks(self, w: Workload) -> int:
        tokens = cdiv(w.max_model_len, w.cp_world_size) if w.cp_world_size > 1 else w.max_model_len
        return cdiv(tokens, self.block_size)

    _MERGE_FIELDS: ClassVar[tuple[str, ...]] = ("block_size", "num_kv_heads", "head_size", "dtype", "page_size_padded",
                                                "num_head_slots", "state_content_bytes")

    @classmethod
    def _check_same_attention_fields(cls, specs: Sequence["AttentionSpec"]) -> None:
        first = specs[0]
        # layouts share one object per distinct spec: compare each distinct object once
        for s in {id(x): x for x in specs[1:] if x is not first}.values():
            if any(getattr(s, f) != getattr(first, f) for f in cls._MERGE_FIELDS):
                raise SpecMergeAssertion("All attention layers in the same KV cache group must have the same "
                                         "attention spec.")


@dataclass(frozen=True)
class FullAttentionSpec(AttentionSpec):
    """Global attention. ``sliding_window``/``attention_chunk_size`` are set only when
    the hybrid manager is off and a window layer was converted (reference §3.1); they
    never change the reservation."""

    kind: ClassVar[str] = FULL
    sliding_window: int | None = None
    attention_chunk_size: int | None = None

    def blocks_per_request(self, w: Workload) -> int:
        return self._full_blocks(w)

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        """Full layers merge with converted window layers (HMA off): one window or chunk size
        per group (ValueError otherwise), never both (assertion)."""
        fulls = [s for s in specs if isinstance(s, FullAttentionSpec)]
        if len(fulls) != len(specs):
            raise SpecMergeAssertion("All attention layers in the same KV cache group must be FullAttentionSpec.")
        if any(isinstance(s, MLAAttentionSpec) for s in fulls):
            raise SpecMergeAssertion("MLAAttentionSpec should be merged in MLAAttentionSpec.merge")
        windows = {s.sliding_window for s in fulls if s.sliding_window is not None}
        chunks = {s.attention_chunk_size for s in fulls if s.attention_chunk_size is not None}
        if len(windows) > 1 or len(chunks) > 1:
            raise EngineFailure("ValueError", "All attention layers in the same KV cache group must have the same "
                                "window size.", "grouping")
        cls._check_same_attention_fields(fulls)
        window, chunk = next(iter(windows), None), next(iter(chunks), None)
        if window is not None and chunk is not None:
            raise SpecMergeAssertion("Model with both sliding window layers and chunked local attention layers is "
                                     "not supported.")
        return replace(fulls[0], sliding_window=window, attention_chunk_size=chunk)

    def same_type(self, other: KVCacheSpec) -> bool:
        return isinstance(other, FullAttentionSpec)


@dataclass(frozen=True)
class MLAAttentionSpec(FullAttentionSpec):
    """Multi-head latent attention: one KV head, ``head_size = kv_lora_rank +
    qk_rope_head_dim``, no separate V (``head_size_v = 0``). ``fp8_ds_mla`` stores
    656 bytes per token (DeepSeek-V3.2 layout)."""

    kind: ClassVar[str] = MLA
    cache_dtype_str: str | None = None
    # DeepSeek-V4 (vLLM 0.34.0 kv_cache_interface.py AttentionSpec lines 580-583, MLAAttentionSpec lines
    # 741-759): tokens one stored state covers (4 or 128 for the compressed latent and indexer caches),
    # the bytes of one state when packed (fp8_ds_mla: 448 NoPE + 128 RoPE + 8 scale = 584), the page's
    # padding multiple (576 or 512) and the model version the V4 caches carry.
    tokens_per_state: int = 1  # (state_content_bytes: AttentionSpec's field)
    alignment: int | None = None
    model_version: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _apply_alignment_padding(self)

    @property
    def real_page_size_bytes(self) -> int:
        if self.cache_dtype_str == "fp8_ds_mla" and self.state_content_bytes is None:
            return self.block_size * 656
        return _state_page_bytes(self)

    @classmethod
    def merge(cls, specs: list[KVCacheSpec]) -> KVCacheSpec:
        mlas = [s for s in specs if isinstance(s, MLAAttentionSpec)]
        if len(mlas) != len(specs):
            raise SpecMergeAssertion("All attention layers in the same KV cache group must be MLAAttentionSpec.")
        if len({s.cache_dtype_str for s in mlas}) != 1:
            raise SpecMergeAssertion("All attention layers in the same KV cache group must use the same "
                                     "quantization method.")
        cls._check_same_attention_fields(mlas)
        return specs[0]


@dataclass(frozen=True)
class SlidingWindowSpec(AttentionSpec):
    kind: ClassVar[str] = SLIDING
    sliding_window: int = 0

    def blocks_per_request(self, w: Workload) -> int:
        # cdiv(min(W - 1 + in-flight tokens, L), block_size) + 1: the window, the
        # tokens scheduled in one step, and one block for misalignment.
        assert w.cp_world_size == 1, "DCP not support sliding window."
        tokens = min(self.sliding_window - 1 + w.max_in_flight_tokens, w.max_model_len)
        return cdiv(tokens, self.block_size) + 1

    def same_type(self, other: KVCacheSpec) -> bool:
        return isinstance(other, SlidingWindowSpec) and other.sliding_window == self.sliding_window


def _state_page_bytes(spec) -> int:
    """vLLM 0.34.0 ``AttentionSpec.unpadded_page_size_bytes`` (kv_cache_interface.py lines 592-613): heads x
    stored states (block_size // tokens_per_state) x bytes per state (``state_content_bytes``, else
    (head_size + head_size_v) x dtype size)."""
    content = (spec.state_content_bytes if spec.state_content_bytes is not None
               else (spec.head_size + spec.head_size_v) * dtype_size_bytes(spec.dtype))
    return spec.num_kv_heads * (spec.block_size // spec.tokens_per_state) * content


def _apply_alignment_padding(spec) -> None:
    """``_apply_alignment_padding`` (0.34.0 kv_cache_interface.py lines 731-738): the page rounded up to
    ``alignment``, recorded as ``page_size_padded`` when that changes it."""
    if spec.alignment is None:
        return
    real = spec.real_page_size_bytes
    padded = cdiv(real, spec.alignment) * spec.alignment
    if padded != real:
        object.__setattr__(spec, "page_size_padded", padded)


@dataclass(frozen=True)
class SlidingWindowMLASpec(SlidingWindowSpec):
    """vLLM 0.34.0 ``SlidingWindowMLASpec`` (kv_cache_interface.py lines 1022-1105): a windowed cache of
    one latent vector per state, no V. DeepSeek-V4's sliding-window KV cache and its compressor states."""

    kind: ClassVar[str] = "sliding_window_mla"
    head_size_v: int = 0
    cache_dtype_str: str | None = None
    tokens_per_state: int = 1  # (state_content_bytes: AttentionSpec's field)
    alignment: int | None = None
    model_version: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _apply_alignment_padding(self)

    @property
    def real_page_size_bytes(self) -> int:
        return _state_page_bytes(self)


@dataclass(frozen=True)
class ChunkedLocalAttentionSpec(AttentionSpec):
    kind: ClassVar[str] = CHUNKED
    attention_chunk_size: int = 0

    def blocks_per_request(self, w: Workload) -> int:
        tokens = min(self.attention_chunk_size + w.max_in_flight_tokens, w.max_model_len)
        return cdiv(tokens, self.block_size)

    def same_type(self, other: KVCacheSpec) -> bool:
        return isinstance(other, ChunkedLocalAttentionSpec) and other.attention_chunk_size == self.attention_chunk_size


@dataclass(frozen=True)
class CrossAttentionSpec(AttentionSpec):
    kind: ClassVar[str] = CROSS

    def blocks_per_request(self, w: Workload) -> int:
        return cdiv(w.max_num_encoder_input_tokens, self.block_size)

    def same_type(self, other: KVCacheSpec) -> bool:
        return isinstance(other, CrossAttentionSpec)


@dataclass(frozen=True)
class MambaSpec(KVCacheSpec):
    """Recurrent state (Mamba1/2, gated delta net, short conv, linear attention).

    The page is the state itself, independent of ``block_size``; vLLM pads it to
    the attention page (``page_size_padded``) so the pool has one page size.
    """

    kind: ClassVar[str] = MAMBA
    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    mamba_type: str = "mamba2"
    page_size_padded: int | None = None
    num_speculative_blocks: int = 0
    # 0.33, align mode: one more block per request where the layer exports prefill
    # checkpoints (Mamba2 mixers; Qwen GDN with FlashInfer prefill, the Hopper default).
    num_prefill_checkpoint_blocks: int = 0

    @property
    def real_page_size_bytes(self) -> int:
        return sum(math.prod(s) * dtype_size_bytes(d) for s, d in zip(self.shapes, self.dtypes))

    def _compute_page_size_bytes(self) -> int:
        real = self.real_page_size_bytes
        if self.page_size_padded is not None:
            assert self.page_size_padded >= real
            return self.page_size_padded
        return real

    def blocks_per_request(self, w: Workload) -> int:
        if w.mamba_legacy_reservation:
            return cdiv(w.max_model_len, self.block_size)
        if w.mamba_cache_mode == "all":
            return cdiv(w.max_model_len, self.block_size) + self.num_speculative_blocks
        if w.mamba_cache_mode == "align":
            return 2 + self.num_speculative_blocks + self.num_prefill_checkpoint_blocks
        return 1 + self.num_speculative_blocks

    def same_type(self, other: KVCacheSpec) -> bool:
        return (isinstance(other, MambaSpec) and other.num_speculative_blocks == self.num_speculative_blocks
                and other.num_prefill_checkpoint_blocks == self.num_prefill_checkpoint_blocks)


@dataclass(frozen=True)
class UniformTypeKVCacheSpecs(KVCacheSpec):
    """A group-level container: layers of one type but different shapes share one
    group, and each keeps its own page (reference §3.4)."""

    kind: ClassVar[str] = UNIFORM_TYPE
    kv_cache_specs: tuple[tuple[str, KVCacheSpec], ...] = field(default_factory=tuple)

    def _compute_page_size_bytes(self) -> int:
        return sum(s.page_size_bytes for _, s in self.kv_cache_specs)

    def blocks_per_request(self, w: Workload) -> int:
        return max(cdiv(s.max_memory_usage_bytes(w), s.page_size_bytes) for _, s in self.kv_cache_specs)


@dataclass(frozen=True)
class LayerSpec:
    """A named layer as the engine registers it: its spec plus where it came from."""

    name: str
    spec: KVCacheSpec
    source: str = "target"  # "target" | "drafter"
    index: int = 0  # position in registration order (0-based)



def _cached_hash(self) -> int:
    """Dataclass hash (class + every compared field), computed once per frozen spec:
    bucketing hashes every layer's spec on each simulation."""
    h = self.__dict__.get("_hash")
    if h is None:
        h = hash((type(self), *(getattr(self, f.name) for f in dataclasses.fields(self) if f.compare)))
        object.__setattr__(self, "_hash", h)
    return h


for _cls in (FullAttentionSpec, MLAAttentionSpec, SlidingWindowSpec, SlidingWindowMLASpec, ChunkedLocalAttentionSpec,
             CrossAttentionSpec, MambaSpec, UniformTypeKVCacheSpecs):
    setattr(_cls, "__hash__", _cached_hash)  # after @dataclass, which would set its own

_KINDS: dict[str, type[KVCacheSpec]] = {
    cls.kind: cls
    for cls in (
        FullAttentionSpec,
        MLAAttentionSpec,
        SlidingWindowSpec,
        SlidingWindowMLASpec,
        ChunkedLocalAttentionSpec,
        CrossAttentionSpec,
        MambaSpec,
    )
}

@dataclass(frozen=True)
class SpecRecord:
    """One spec as results show it: the engine's field names (None where the spec has none), then
    the derived page. Serialised by ``kvplan.results.to_data``; ``spec_from_dict`` reads it back."""

    kind: str
    block_size: int
    num_kv_heads: int | None
    head_size: int | None
    head_size_v: int | None
    dtype: str | None
    sliding_window: int | None
    attention_chunk_size: int | None
    cache_dtype_str: str | None
    page_size_padded: int | None
    num_head_slots: int | None
    state_content_bytes: int | None
    shapes: tuple[tuple[int, ...], ...] | None
    dtypes: tuple[str, ...] | None
    mamba_type: str | None
    num_speculative_blocks: int | None
    num_prefill_checkpoint_blocks: int | None
    tokens_per_state: int | None
    alignment: int | None
    model_version: str | None
    page_size_bytes: int

    @classmethod
    def of(cls, spec: KVCacheSpec) -> "SpecRecord":
        named: dict[str, Any] = {f.name: getattr(spec, f.name, None) for f in dataclasses.fields(cls)
                 if f.name not in ("kind", "shapes", "dtypes", "page_size_bytes")}
        if named["tokens_per_state"] == 1:
            named["tokens_per_state"] = None  # one token per state: every spec but DeepSeek-V4's compressed ones
        mamba = spec if isinstance(spec, MambaSpec) else None
        return cls(kind=spec.kind, shapes=mamba.shapes if mamba is not None else None,
                   dtypes=mamba.dtypes if mamba is not None else None,
                   page_size_bytes=spec.page_size_bytes, **named)


# JSON key order for one spec
SPEC_KEYS = tuple(f.name for f in dataclasses.fields(SpecRecord))


def spec_to_dict(spec: KVCacheSpec) -> dict:
    """A spec as plain JSON data (``SpecRecord``), every key of ``SPEC_KEYS``."""
    return to_data(SpecRecord.of(spec))


def spec_from_dict(data: dict) -> KVCacheSpec:
    """Inverse of ``spec_to_dict`` (``page_size_bytes`` is derived, so it is ignored)."""
    cls = _KINDS[data["kind"]]
    fields = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: v for k, v in data.items() if k in fields and v is not None}
    if cls is MambaSpec:
        kwargs["shapes"] = tuple(tuple(s) for s in data["shapes"])
        kwargs["dtypes"] = tuple(data["dtypes"])
    return cls(**kwargs)


# ---------------------------------------------------------------------------------------------------------
# What the engine decided about a quantized KV page, as values the model stage applies to its layers (the
# engine's ``block_size`` decision carries them: no model module calls back into an engine)


@dataclass(frozen=True)
class KVPacking:
    """A backend's packing of a quantized page (vLLM 0.34.0 ``customize_spec``; chosen by
    ``kvplan.engines.vllm.kv_packing.packing_rule``): ``rule`` is ``per_token_head`` (TRITON_ATTN: one fp32
    scale per K and V head; ``int4`` halves the head), ``nvfp4`` (FLASHINFER: K and V in separate head slots,
    4-bit values and an fp8 scale per 16) or ``turboquant`` (one packed slot per head)."""

    rule: str
    dtype_bytes: int
    int4: bool = False
    key_bits: int = 0
    value_bits: int = 0

    def of(self, num_kv_heads: int, head_size: int, head_size_v: int) -> tuple[int | None, int | None]:
        """``(num_head_slots, state_content_bytes)`` for one layer (None: the dense value)."""
        if self.rule == "per_token_head":
            hk, hv = (head_size // 2, head_size_v // 2) if self.int4 else (head_size, head_size_v)
            return None, (hk + hv) * self.dtype_bytes + 2 * 4
        if self.rule == "nvfp4":
            return 2 * num_kv_heads, (head_size // 2 + head_size // 16) * self.dtype_bytes
        if self.rule == "turboquant":
            key = head_size if self.key_bits == 8 else -(-head_size * self.key_bits // 8) + 2
            slot = key + -(-head_size * self.value_bits // 8) + 4
            return None, slot + slot % 2
        return None, None


@dataclass(frozen=True)
class SkippedLayerPage:
    """A skipped sliding-window layer's page (vLLM 0.34.0 ``Attention.get_kv_cache_spec`` with
    ``skip_page_size_padded``, ``_largest_kernel_block_within``): padded to the shared page, with the largest
    kernel block whose page fits (``multiple_of``: the backend takes any multiple of its sizes)."""

    shared_page: int
    kernel_block_sizes: tuple[int, ...]
    multiple_of: bool

    def block(self, per_token_bytes: int) -> tuple[int, int]:
        most = self.shared_page // per_token_bytes
        sizes = self.kernel_block_sizes
        candidates = [max(b, most // b * b) for b in sizes] if self.multiple_of else list(sizes)
        fitting = [b for b in candidates if b * per_token_bytes <= self.shared_page]
        return (max(fitting) if fitting else min(candidates)), self.shared_page
