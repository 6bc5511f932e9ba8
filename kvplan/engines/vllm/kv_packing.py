"""Which attention backend takes which ``--kv-cache-dtype``, and how each packs a quantized KV page.

vLLM 0.34.0 builds an attention layer's spec from the model (``FullAttentionSpec``/``SlidingWindowSpec``
with the cache tensor dtype and ``kv_quant_mode``), then lets the backend repack it
(``AttentionBackend.customize_spec``, applied by ``v1/worker/utils.py customize_attention_spec``, called
from ``v1/worker/gpu/attn_utils.py`` line 151). The page is then ``AttentionSpec.unpadded_page_size_bytes``
(``v1/kv_cache_interface.py`` 0.34.0 lines 548-566): ``num_heads * num_states * state_content_size_bytes``,
where ``num_heads`` is ``num_head_slots`` when the backend sets it (else the KV heads) and the content is
``state_content_bytes`` when set (else ``(head_size + head_size_v) * dtype size``). A per-token-head
fp8 page of Llama-3.1-8B at block 64 is 64 * 8 * (256 + 8) = 135168 bytes, 3 % above fp8's 131072.

Backends whose module kvplan models (``SUPPORTED_KV_CACHE_DTYPES``: each class's
``supported_kv_cache_dtypes``, 0.34.0) and their ``customize_spec``:

* TRITON_ATTN (triton_attn.py lines 308-320): per-token-head modes store one fp32 scale after each
  K and V head: ``(head_size_k + head_size_v) * dtype size + 2 * 4``; int4 halves the head sizes.
* FLASHINFER (flashinfer.py lines 560-572): NVFP4 stores K and V as separate head slots
  (``2 * num_kv_heads``) of ``nvfp4_kv_cache_full_dim(head_size)`` bytes (torch_utils.py line 562:
  ``head_size // 2`` packed fp4 values + ``head_size // 16`` fp8 block scales).
* TURBOQUANT (turboquant_attn.py lines 141-153): K and V in one slot per head of
  ``TurboQuantConfig.slot_size_aligned`` bytes (turboquant/config.py lines 20-41 presets, 128-176 sizes).

``tests/golden/kv_dtypes/0.34.0.json`` (``make_goldens.py --kv-dtypes``) holds what the release's own
classes give for every value of its ``CacheDType``; ``tests/test_kv_dtypes.py`` compares.
"""

from __future__ import annotations

import math

from kvplan.specs import KVPacking

# AttentionBackend.supported_kv_cache_dtypes of each backend, vLLM 0.34.0. FLASH_ATTN also needs FA3 for
# a quantized cache (flash_attn.py lines 438-445, flash_attn_supports_kv_cache_dtype); TURBOQUANT takes
# every turboquant_* value (turboquant_attn.py lines 184-188).
_FLOATS = ("auto", "float16", "bfloat16")
SUPPORTED_KV_CACHE_DTYPES: dict[str, tuple[str, ...]] = {
    "FLASH_ATTN": (*_FLOATS, "fp8", "fp8_e4m3"),  # flash_attn.py lines 290-296
    "FLASHINFER": (*_FLOATS, "fp8", "fp8_e4m3", "fp8_e5m2", "nvfp4", "nvfp4_4over6"),  # flashinfer.py 574-583
    "TRITON_ATTN": (*_FLOATS, "fp8", "fp8_e4m3", "fp8_e5m2", "int4_per_token_head", "int8_per_token_head",
                    "fp8_per_token_head"),  # triton_attn.py lines 325-335
    "FLEX_ATTENTION": _FLOATS,  # flex_attention.py lines 96-100
    "TURBOQUANT": ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc"),
    "FLASH_ATTN_MLA": _FLOATS,  # mla/flashattn_mla.py lines 42-46
    "FLASHMLA": (*_FLOATS, "fp8", "fp8_e4m3"),  # mla/flashmla.py lines 48-54
    "FLASHINFER_MLA": (*_FLOATS, "fp8", "fp8_e4m3"),  # mla/flashinfer_mla.py lines 195-201
    "TRITON_MLA": (*_FLOATS, "fp8", "fp8_e4m3"),  # mla/triton_mla.py lines 113-119
    "CUTLASS_MLA": (*_FLOATS, "fp8", "fp8_e4m3"),  # mla/cutlass_mla.py lines 40-46
    "FLASHMLA_SPARSE": ("auto", "bfloat16", "fp8_ds_mla", "fp8", "nvfp4_ds_mla"),  # mla/flashmla_sparse.py 156-162
    "FLASH_ATTN_MLA_SPARSE": _FLOATS,  # mla/flashattn_mla_sparse.py lines 43-47
    "FLASHINFER_MLA_SPARSE_SM90": ("auto", "bfloat16", "fp8", "fp8_e4m3"),  # mla/flashinfer_mla_sparse_sm90.py 148-153
}

# The dtypes whose page kvplan sizes in every release: the float caches and the one-byte fp8 family
# (per-tensor scales live outside the page), and DeepSeek-V3.2's fp8_ds_mla. The others are packed by
# the backend (per-token-head scales, nvfp4 nibbles, TurboQuant slots) as read in 0.34.0 only
# (Era.kv_cache_packing), or run on backends kvplan does not model (octave_*, ultraquant_4bit: ROCm).
PLAIN_CACHE_DTYPES = frozenset({"auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
                                "fp8_ds_mla"})
PER_TOKEN_HEAD = frozenset({"int4_per_token_head", "int8_per_token_head", "fp8_per_token_head"})

# TurboQuantConfig presets (turboquant/config.py 0.34.0 lines 20-41): (key bits, value bits)
TURBOQUANT_BITS = {"turboquant_k8v4": (8, 4), "turboquant_4bit_nc": (4, 4), "turboquant_k3v4_nc": (3, 4),
                   "turboquant_3bit_nc": (3, 3)}


def backend_takes(backend: str, cache_dtype: str) -> bool:
    """``supports_kv_cache_dtype`` of a modelled backend (True for a backend kvplan has no list for)."""
    listed = SUPPORTED_KV_CACHE_DTYPES.get(backend)
    return listed is None or cache_dtype in listed


def turboquant_slot_bytes(cache_dtype: str, head_size: int) -> int:
    """``TurboQuantConfig.slot_size_aligned``: packed key (fp8: one byte a value; else the MSE indices and an
    fp16 norm) + packed value (the quantized values and fp16 scale and zero), rounded up to even.
    Llama's head 128 in turboquant_k8v4: 128 + (64 + 4) = 196."""
    rule = packing_rule("TURBOQUANT", cache_dtype, dtype_bytes=1)
    if rule is None:
        raise ValueError(f"{cache_dtype!r} is not a TurboQuant cache dtype")
    slot_bytes = rule.of(1, head_size, head_size)[1]
    assert slot_bytes is not None, "a TurboQuant rule gives the slot's bytes"
    return slot_bytes


def packing_rule(backend: str, cache_dtype: str, *, dtype_bytes: int) -> KVPacking | None:
    """The packing the backend's ``customize_spec`` applies to ``cache_dtype`` (None: the dense page)."""
    if backend == "TRITON_ATTN" and cache_dtype in PER_TOKEN_HEAD:
        return KVPacking("per_token_head", dtype_bytes, int4=cache_dtype == "int4_per_token_head")
    if backend == "FLASHINFER" and cache_dtype.startswith("nvfp4") and cache_dtype != "nvfp4_ds_mla":
        return KVPacking("nvfp4", dtype_bytes)
    if backend == "TURBOQUANT" and cache_dtype in TURBOQUANT_BITS:
        key_bits, value_bits = TURBOQUANT_BITS[cache_dtype]
        return KVPacking("turboquant", dtype_bytes, key_bits=key_bits, value_bits=value_bits)
    return None


def packing(backend: str, cache_dtype: str, *, num_kv_heads: int, head_size: int, head_size_v: int,
            dtype_bytes: int) -> tuple[int | None, int | None]:
    """``(num_head_slots, state_content_bytes)`` the backend's ``customize_spec`` sets for a layer in
    ``cache_dtype`` (None, None: the dense page)."""
    rule = packing_rule(backend, cache_dtype, dtype_bytes=dtype_bytes)
    return rule.of(num_kv_heads, head_size, head_size_v) if rule is not None else (None, None)


def selector_refusal(reasons: list[tuple[str, list[str]]], *, head_size: int | None, model_dtype: str,
                     cache_dtype: str, block_size: int | None, use_mla: bool, has_sink: bool, use_sparse: bool,
                     has_sliding_window: bool = False, platform: str = "cuda") -> str:
    """vLLM's error when no backend takes the layer (``CudaPlatform.get_attn_backend_cls``, cuda.py
    0.34.0 lines 498-505): the selector config as ``AttentionSelectorConfig.__repr__`` prints it
    (v1/attention/selector.py) and each backend's reasons."""
    def b(x: bool) -> str:
        return "True" if x else "False"

    config = (f"AttentionSelectorConfig(head_size={head_size}, dtype=torch.{model_dtype}, "
              f"kv_cache_dtype={cache_dtype}, block_size={block_size}, use_mla={b(use_mla)}, has_sink={b(has_sink)}, "
              f"use_sparse={b(use_sparse)}, use_mm_prefix=False, use_per_head_quant_scales=False, attn_type=decoder, "
              f"has_sliding_window={b(has_sliding_window)}, use_non_causal=False, use_batch_invariant=False, "
              "use_kv_connector=False, use_adaptive_verification=False, use_pcp=False, use_dcp=False, use_rswa=False)")
    listed = ", ".join(f"{name}: [{', '.join(why)}]" for name, why in reasons)
    return f"No valid attention backend found for {platform} with {config}. Reasons: {{{listed}}}."
