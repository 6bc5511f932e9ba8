"""The KV cache block size as a vLLM release decides it (``Platform.update_block_size_for_backend``).

vLLM 0.33.0 and 0.34.0 (``vllm/platforms/interface.py`` 0.34.0 lines 760-802, 0.33.0 lines 750-794,
the same code) start from ``CacheConfig.DEFAULT_BLOCK_SIZE`` (``vllm/config/cache.py`` line 185: 16 in
0.33.0, 64 in 0.34.0) and, unless the user set ``--block-size``, ask the attention backend for its
preferred size (``AttentionBackend.get_preferred_block_size``, ``vllm/v1/attention/backend.py`` 0.34.0
lines 158-166: the default when the backend's kernels support it, else the smallest supported size),
logging ``Setting kv cache block size to N for BACKEND backend(s).`` when that differs from the
default. Hybrid Mamba models are then aligned (``hybrid.align_hybrid_mamba``) with the backend's
smallest kernel block, at least the cache block.

The backend is the one vLLM's selector picks for the GPU (``vllm/platforms/cuda.py``
``_get_backend_priorities`` lines 81-178 and ``get_attn_backend_cls``: the first valid backend in
priority order; ``vllm/platforms/rocm.py`` lines 536-577), modelled here for the cases kvplan's GPU
presets reach. ``tests/golden/block_size/<release>.json`` (``make_goldens.py --block-size``) records
what each release's own classes return; ``tests/test_block_size.py`` compares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.frozen import dataclass
from kvplan.engines.vllm import kv_packing
from kvplan.engines.vllm.eras import Era
from kvplan.errors import OptionError, UnsupportedError
from kvplan.model.options import AttentionFacts
from kvplan.specs import KVPacking, SkippedLayerPage
from kvplan.units import cdiv, dtype_size_bytes
from kvplan.version import version_key

if TYPE_CHECKING:
    from kvplan.budget.hardware import GpuCard, GpuPreset

# Each backend's kernel block sizes (``get_supported_kernel_block_sizes()`` with no KV cache spec and no
# current config; a ``MultipleOf(n)`` as its base n). ``AttentionBackend.supports_block_size`` (backend.py
# 0.34.0 lines 125-141, the same in 0.33.0) accepts any multiple of any of them ("hybrid blocks": a cache
# block may hold several kernel blocks), and ``get_preferred_block_size`` falls back to the smallest.
# Recorded by tests/golden/block_size/<release>.json where the backend's module imports on CPU; the
# others (FLASHINFER*, CUTLASS_MLA, FLASH_ATTN_MLA, ROCM_AITER_UNIFIED_ATTN) are read from the source.
KERNEL_BLOCK_SIZES: dict[str, tuple[int, ...]] = {
    "FLASH_ATTN": (16,),  # flash_attn.py 0.34.0 line 357 (MultipleOf(16); XPU 64)
    "FLASHINFER": (16, 32, 64),  # flashinfer.py 0.34.0 line 587 (128+ only with trtllm-gen on SM100)
    "TRITON_ATTN": (16,),  # triton_attn.py 0.34.0 line 339
    "FLEX_ATTENTION": (16,),  # flex_attention.py 0.34.0 line 153
    "TURBOQUANT": (16, 32, 64, 128),  # turboquant_attn.py 0.34.0 line 164
    "ROCM_ATTN": (16,),  # rocm_attn.py 0.34.0 line 153
    "ROCM_AITER_FA": (16, 32),  # rocm_aiter_fa.py 0.34.0 line 873
    "ROCM_AITER_UNIFIED_ATTN": (16,),  # rocm_aiter_unified_attn.py 0.34.0 line 74
    "FLASH_ATTN_MLA": (16,),  # mla/flashattn_mla.py 0.34.0 line 49
    "TRITON_MLA": (16,),  # mla/triton_mla.py 0.34.0 line 126
    "ROCM_AITER_MLA": (1,),  # mla/rocm_aiter_mla.py 0.34.0 line 734
    "FLASHMLA": (64,),  # mla/flashmla.py 0.34.0 line 57
    "FLASHMLA_SPARSE": (64,),  # mla/flashmla_sparse.py 0.34.0 line 165 (bf16 KV)
    "CUTLASS_MLA": (128,),  # mla/cutlass_mla.py 0.34.0 line 49
    "FLASHINFER_MLA": (32, 64),  # mla/flashinfer_mla.py 0.34.0 line 204
}
# The releases before 0.21.0, where their kernel block sizes differ from the table above (era
# kernel_block_sizes names the table; tests/golden/defaults/<release>.json "block_size_backends" records
# each release's classes, tests/test_block_size.py compares). A backend without its own
# get_supported_kernel_block_sizes inherits AttentionBackend's [MultipleOf(1)] (0.12.0
# vllm/attention/backends/abstract.py lines 51-52): FLEX_ATTENTION to 0.20.2, TRITON_MLA, ROCM_ATTN and
# ROCM_AITER_UNIFIED_ATTN (a ROCM_ATTN subclass) to 0.13.0.
_INHERITED = (1,)
_ROCM_PAGED = (16, 32, 544)  # rocm_attn.py 0.14.0 lines 166-179 ("16 and 32", 544 through the Triton path)
KERNEL_BLOCK_SIZES_BEFORE: dict[str, dict[str, tuple[int, ...]]] = {
    "0.12": {"FLEX_ATTENTION": _INHERITED, "TRITON_MLA": _INHERITED, "ROCM_ATTN": _INHERITED,
             "ROCM_AITER_UNIFIED_ATTN": _INHERITED,
             "ROCM_AITER_FA": (16,)},  # rocm_aiter_fa.py 0.12.0 line 523: MultipleOf(16)
    "0.14": {"FLEX_ATTENTION": _INHERITED, "TRITON_MLA": _INHERITED, "ROCM_ATTN": _ROCM_PAGED,
             "ROCM_AITER_UNIFIED_ATTN": _ROCM_PAGED, "ROCM_AITER_FA": (16,)},  # 0.15.1 line 686
    # rocm_aiter_fa.py 0.16.0 line 684: [16, 32], as KERNEL_BLOCK_SIZES
    "0.16": {"FLEX_ATTENTION": _INHERITED, "TRITON_MLA": _INHERITED, "ROCM_ATTN": _ROCM_PAGED,
             "ROCM_AITER_UNIFIED_ATTN": _ROCM_PAGED},
    # 0.18.0: triton_mla.py line 45, rocm_attn.py line 177, rocm_aiter_unified_attn.py line 30 (MultipleOf(16))
    "0.18": {"FLEX_ATTENTION": _INHERITED},
    "0.21": {},  # flex_attention.py 0.21.0 line 144: MultipleOf(16)
}
# backends that take no sliding window (the selector then refuses a windowed layer in their cache dtype)
NO_SLIDING_WINDOW_BACKENDS = frozenset({"TURBOQUANT"})
MLA_BACKENDS = frozenset({"FLASH_ATTN_MLA", "TRITON_MLA", "ROCM_AITER_MLA", "FLASHMLA", "FLASHMLA_SPARSE",
                          "CUTLASS_MLA", "FLASHINFER_MLA"})
SPARSE_MLA_BACKENDS = frozenset({"FLASHMLA_SPARSE"})

# The GPU assumed without --gpu: the H100 (SM 9.0, CUDA), the card kvplan's goldens describe.
ASSUMED_CAPABILITY = (9, 0)
ASSUMED_PLATFORM = "cuda"


@dataclass(frozen=True)
class Device:
    capability: tuple[int, int] = ASSUMED_CAPABILITY
    platform: str = ASSUMED_PLATFORM
    name: str | None = None  # the --gpu preset; None = assumed


@dataclass(frozen=True)
class BlockSizeDecision:
    block_size: int
    attention_backend: str
    how: str  # for the notes: why this size
    kernel_block_size: int  # the backend's smallest kernel block (the hybrid Mamba alignment's floor)
    user_specified: bool
    log_lines: tuple[str, ...] = ()  # "Setting kv cache block size to N for X backend(s)."
    note: str | None = None  # the GPU assumed without --gpu
    # the selector's error for a sliding-window layer in the cache dtype (TURBOQUANT takes no window), which
    # the layout adopts as ``refusal`` when such a layer keeps the quantized dtype
    sliding_refusal: str | None = None
    # vLLM's selector error when no backend takes the layer's --kv-cache-dtype (the engine fails while it
    # builds the model: prechecks.check_attention_backend); None when a backend serves it
    refusal: str | None = None
    # the backend's customize_spec for a quantized page, as values (kv_packing.packing_rule; the model stage
    # applies it to each layer: KVPacking.of -> (num_head_slots, state_content_bytes)); None: the dense page
    packing: KVPacking | None = None
    # a skipped (model-dtype) sliding-window layer's page when layers keep the model dtype beside a smaller
    # quantized page (cache_config.skip_page_size_padded): SkippedLayerPage.block -> (block_size, padded)
    skipped_sliding: SkippedLayerPage | None = None


def kernel_block_sizes(era: Era, backend: str) -> tuple[int, ...]:
    """The backend's kernel block sizes in the era's release (a ``MultipleOf(n)`` as n)."""
    return KERNEL_BLOCK_SIZES_BEFORE[era.kernel_block_sizes].get(backend, KERNEL_BLOCK_SIZES[backend])


def supports_block_size(era: Era, backend: str, block_size: int) -> bool:
    """``AttentionBackend.supports_block_size``: a multiple of one of the kernel block sizes."""
    return any(block_size % k == 0 for k in kernel_block_sizes(era, backend))


def smallest_kernel_block(era: Era, backend: str) -> int:
    return min(kernel_block_sizes(era, backend))


def _fa_version(device: Device, head_size: int | None) -> int:
    """``get_flash_attn_version`` (fa_utils.py 0.34.0 lines 74-160) on a CUDA build that ships FA3 (SM90)
    and FA4 (SM100): 3 on Hopper (4 for head sizes over 256), 4 on SM100, else 2."""
    major = device.capability[0]
    if major == 9:
        return 4 if head_size is not None and head_size > 256 else 3
    if major == 10:
        return 4
    return 2


def preferred_block_size(era: Era, backend: str, device: Device, facts: AttentionFacts) -> int | None:
    """``get_preferred_block_size(DEFAULT_BLOCK_SIZE)`` of the backend for this model and GPU (None before
    0.18.0, which has no such method: era preferred_block_size_hook)."""
    if not era.preferred_block_size_hook:
        return None
    default = era.default_block_size
    if backend == "FLASH_ATTN" and device.platform == "cuda":
        fa = _fa_version(device, facts.head_size)
        # flash_attn.py 0.34.0 lines 300-326: SM90, fp8 KV, head 512 on FA4 -> a 64-token page
        if device.capability[0] == 9 and facts.kv_cache_dtype in ("fp8", "fp8_e4m3") and facts.head_size == 512 \
                and fa == 4:
            return max(default, 64)
        # lines 329-354 and fa_utils.py line 14: FA4's head-256 kernel pages 128 tokens
        if facts.head_size == 256 and fa == 4:
            return max(default, 128)
    if backend == "ROCM_AITER_UNIFIED_ATTN" and era.rocm_aiter_unified_prefers_64:
        return 64  # rocm_aiter_unified_attn.py 0.33.0 line 77, 0.34.0 line 78
    if backend == "ROCM_ATTN" and era.rocm_attn_prefers_16:
        return 16  # rocm_attn.py 0.34.0 line 167: keep the native paged-attention kernel
    return _fitted_block_size(era, backend)


def _fitted_block_size(era: Era, backend: str) -> int:
    """The default when the backend's kernels take it, else its smallest kernel block
    (``get_preferred_block_size``'s fallback, 0.34.0 backend.py lines 158-166)."""
    if supports_block_size(era, backend, era.default_block_size):
        return era.default_block_size
    return smallest_kernel_block(era, backend)


def _is_quantized(kv_cache_dtype: str) -> bool:
    return kv_cache_dtype not in ("auto", "bfloat16", "float16", "float32")


def _cuda_candidates(era: Era, device: Device, facts: AttentionFacts, sliding: bool = False
                     ) -> list[tuple[str, str | None]]:
    """(backend, why it is not valid or None) in ``_get_backend_priorities`` order (cuda.py 0.34.0 lines
    81-178, the same in 0.33.0; SM 10.x MLA by era mla_sm100_order), with the validity checks of each
    backend's ``validate_configuration``."""
    major = device.capability[0]
    if facts.use_mla:
        if facts.use_sparse:
            # lines 95-152: SM100 bf16 with more than 16 heads prefers FLASHMLA_SPARSE; SM90 FLASHMLA_SPARSE
            # after FLASH_ATTN_MLA_SPARSE (not modelled: kvplan's sparse-MLA layouts are FlashMLA's)
            return [("FLASHMLA_SPARSE", None if major in (9, 10) else "compute capability not supported")]
        sm100 = ["FLASHINFER_MLA", "CUTLASS_MLA"] if era.mla_sm100_order == "flashinfer_first" \
            else ["CUTLASS_MLA", "FLASHINFER_MLA"]
        order = {10: [*sm100, "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA"],
                 12: ["TRITON_MLA"]}.get(major, ["FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA"])
        # supports_compute_capability: FLASH_ATTN_MLA major 9 (flashattn_mla.py line 69), FLASHMLA 9/10
        # (flashmla.py line 73), FLASHINFER_MLA/CUTLASS_MLA major 10 (flashinfer_mla.py line 220)
        cc = {"FLASH_ATTN_MLA": (9,), "FLASHMLA": (9, 10), "FLASHINFER_MLA": (10,), "CUTLASS_MLA": (10,)}
        out: list[tuple[str, str | None]] = []
        for b in order:
            # validate_configuration's order: the KV dtype (kv_packing lists), then the compute capability
            reasons = [r for r, bad in (("kv_cache_dtype not supported",
                                         not kv_packing.backend_takes(b, facts.kv_cache_dtype)),
                                        ("compute capability not supported", b in cc and major not in cc[b])) if bad]
            out.append((b, ", ".join(reasons) or None))
        if major == 9 and era.kv_cache_packing:
            out += _sm90_sparse_tail(facts)
        return out
    fa = _fa_version(device, facts.head_size)
    # cuda.py 0.34.0 lines 155-178: FLEX_ATTENTION and TURBOQUANT close both lists
    order = ["FLASHINFER", "FLASH_ATTN", "TRITON_ATTN"] if major == 10 else ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN"]
    if era.kv_cache_packing:
        order += ["FLEX_ATTENTION", "TURBOQUANT"]
    dtype = facts.kv_cache_dtype
    out = []
    for b in order:
        why: str | None = None
        if b in ("FLASH_ATTN", "FLASHINFER") and device.capability < (8, 0):
            why = "compute capability not supported"
        elif era.kv_cache_packing and not _takes_kv_cache_dtype(b, dtype, major, fa):
            why = "kv_cache_dtype not supported"
        elif b == "FLASH_ATTN" and facts.has_sink and fa not in (3, 4):
            why = "attention sinks not supported"  # fa_utils.py line 319: FA3/FA4 only
        elif b == "FLASH_ATTN" and _is_quantized(dtype) and fa != 3:
            why = "kv_cache_dtype not supported"  # flash_attn_supports_kv_cache_dtype: FA3's fp8
        elif b == "FLASHINFER" and facts.has_sink and major != 10:
            # flashinfer.py lines 709-727: sinks through trtllm-gen kernels (SM100; SM90/SM120 only when
            # forced), so not on a default Hopper/Ampere/consumer-Blackwell run
            why = "attention sinks not supported"
        elif b == "FLASHINFER" and dtype.startswith("nvfp4") and major in (8, 9, 12) and facts.head_size == 64:
            why = "fa2 prefill misreads an NVFP4 KV cache at head_size 64"  # flashinfer.py lines 681-690
        elif b == "TURBOQUANT" and sliding:
            why = "sliding window not supported"  # AttentionBackend.supports_sliding_window (backend.py line 193)
        out.append((b, why))
    return out


def _sm90_sparse_tail(facts: AttentionFacts) -> list[tuple[str, str]]:
    """The sparse-MLA backends that close SM 9.x's MLA list (cuda.py 0.34.0 lines 141-152; FlashInfer's first
    for a 512 head), as a dense MLA model meets them: each refuses it (``validate_configuration``'s
    reasons in order: the KV dtype, "non-sparse not supported", then ``supports_combination``'s)."""
    dtype = facts.kv_cache_dtype

    def reasons(backend: str, *combination: str) -> str:
        listed = ["kv_cache_dtype not supported"] if not kv_packing.backend_takes(backend, dtype) else []
        return ", ".join([*listed, "non-sparse not supported", *combination])

    fa_sparse = () if dtype in ("auto", "float16", "bfloat16") else \
        ("FlashAttention MLA Sparse currently supports only FP16/BF16 KV cache",)  # flashattn_mla_sparse.py 98-101
    # flashmla_sparse.py lines 257-261 (the head-512 NoPE rules before it are not modelled)
    flashmla = ("FLASHMLA_SPARSE only supports the nvfp4_ds_mla kv-cache dtype on SM100 (Blackwell)",) \
        if dtype == "nvfp4_ds_mla" else ()
    tail = [("FLASH_ATTN_MLA_SPARSE", reasons("FLASH_ATTN_MLA_SPARSE", *fa_sparse)),
            ("FLASHMLA_SPARSE", reasons("FLASHMLA_SPARSE", *flashmla))]
    # flashinfer_mla_sparse_sm90.py line 212
    flashinfer = ("FLASHINFER_MLA_SPARSE_SM90",
                  reasons("FLASHINFER_MLA_SPARSE_SM90", "FLASHINFER_MLA_SPARSE_SM90 requires sparse MLA"))
    return [flashinfer, *tail] if facts.head_size == 512 else [*tail, flashinfer]


def _takes_kv_cache_dtype(backend: str, dtype: str, major: int, fa: int) -> bool:
    """``supports_kv_cache_dtype`` of a backend in 0.34.0: its list (``kv_packing``); FLASH_ATTN also needs
    FA3 for a quantized cache; FLASHINFER takes NVFP4 on SM 8.x/9.x/12.x only as plain ``nvfp4`` (its FA2
    path, flashinfer.py lines 656-666) and on SM 10.x through trtllm-gen (both variants: kvplan assumes its
    cubins can be fetched, ``has_nvidia_artifactory``)."""
    if not kv_packing.backend_takes(backend, dtype):
        return False
    if backend == "FLASHINFER" and dtype.startswith("nvfp4"):
        return dtype == "nvfp4" if major in (8, 9, 12) else major == 10
    return True


def _rocm_candidates(facts: AttentionFacts) -> list[tuple[str, str | None]]:
    """rocm.py 0.34.0 lines 536-577 with AITER off (VLLM_ROCM_USE_AITER's default)."""
    if facts.use_mla:
        return [("TRITON_MLA", None)]
    # rocm_attn.py line 180: no sinks on the native kernel
    return [("ROCM_ATTN", "attention sinks not supported" if facts.has_sink else None), ("TRITON_ATTN", None)]


def select_backend(era: Era, device: Device, facts: AttentionFacts, block_size: int | None = None,
                   sliding: bool = False) -> tuple[str, str | None]:
    """``(backend, refusal)``: the first valid backend in priority order (for a sliding-window layer with
    ``sliding``); when none is valid and only the KV cache dtype (or, with it, the window) stands in the
    way, the first backend and vLLM's own selector error (the engine fails while it builds the model),
    else an OptionError (no backend of the release serves the model here)."""
    candidates = _rocm_candidates(facts) if device.platform == "rocm" else \
        _cuda_candidates(era, device, facts, sliding)
    for backend, why in candidates:
        if why is None:
            return backend, None
    refused = [(b, why) for b, why in candidates if why is not None]  # all of them: none was valid
    if era.kv_cache_packing and device.platform == "cuda" and facts.kv_cache_dtype not in ("auto",) \
            and any("kv_cache_dtype" in why for _, why in refused):
        refusal = kv_packing.selector_refusal(
            [(b, why.split(", ")) for b, why in refused], head_size=facts.head_size, model_dtype=facts.model_dtype,
            cache_dtype=facts.kv_cache_dtype, block_size=block_size, use_mla=facts.use_mla,
            has_sink=facts.has_sink, use_sparse=facts.use_sparse, has_sliding_window=sliding)
        return candidates[0][0], refusal
    reasons = "; ".join(f"{b}: {why}" for b, why in candidates)
    raise OptionError(f"no attention backend of this vLLM release serves the model on SM "
                      f"{'.'.join(map(str, device.capability))} ({reasons}); pick another --gpu")


def _check_modelled(era: Era, device: Device, cache_dtype: str, release: str) -> None:
    """A --kv-cache-dtype the release accepts but kvplan does not size there: refused, never approximated."""
    if cache_dtype in kv_packing.PLAIN_CACHE_DTYPES:
        return
    if not era.kv_cache_packing:
        raise UnsupportedError(f"--kv-cache-dtype {cache_dtype} is not modelled yet for vLLM {release}: kvplan reads "
                               "the backends' packed KV pages from vLLM 0.34.0 only (use --policy vllm==0.34.0)")
    if device.platform != "cuda":
        raise UnsupportedError(f"--kv-cache-dtype {cache_dtype} is not modelled yet on {device.platform}: kvplan "
                               "reads which CUDA backends take it (vLLM 0.34.0)")


def check_backend(backend_given: str, facts: AttentionFacts) -> str:
    backend = backend_given.upper()
    if backend not in KERNEL_BLOCK_SIZES:
        raise OptionError(f"--attention-backend {backend_given!r} is not known; use one of "
                          + ", ".join(sorted(KERNEL_BLOCK_SIZES)))
    if facts.use_mla != (backend in MLA_BACKENDS):
        kind = "an MLA" if facts.use_mla else "a non-MLA"
        raise OptionError(f"--attention-backend {backend} cannot serve {kind} model")
    if facts.use_mla and facts.use_sparse != (backend in SPARSE_MLA_BACKENDS):
        want = "a sparse-MLA backend (FLASHMLA_SPARSE)" if facts.use_sparse else "a dense MLA backend"
        raise OptionError(f"--attention-backend {backend}: this model needs {want}")
    return backend


def deepseek_v4_block_size(decision: BlockSizeDecision, era: Era) -> BlockSizeDecision:
    """DeepSeek-V4's cache block (0.34.0): 256, the only kernel block size of its indexer's backend
    (DEEPSEEK_V4_INDEXER, v1/attention/backends/mla/indexer.py lines 303-305), which phase 1 of
    ``update_block_size_for_backend`` (platforms/interface.py lines 776-789) picks as the size every backend
    of the model supports; the attention itself runs FLASHMLA_SPARSE_DSV4 on NVIDIA
    (models/deepseek_v4/sparse_mla.py line 295). A --block-size other than 256 is not modelled."""
    from kvplan.errors import UnsupportedError

    if not era.packed_kv_groups:
        raise UnsupportedError(f"DeepSeek-V4 is modelled for vLLM 0.34.0 only (its packed KV cache groups), not for "
                               f"{era.name}; use --policy vllm==0.34.0")
    if decision.user_specified and decision.block_size != 256:
        raise UnsupportedError(f"--block-size {decision.block_size}: kvplan models DeepSeek-V4 with vLLM's block "
                               "size 256 only (its indexer's only kernel block size); drop --block-size")
    return BlockSizeDecision(256, "FLASHMLA_SPARSE_DSV4", "DEEPSEEK_V4_INDEXER's only kernel block size", 256,
                             decision.user_specified, (), decision.note)


# vLLM's per-model config hook for Gemma 4 (model_executor/models/config.py ``Gemma4Config``, registered in
# MODELS_CONFIG_MAP for these architectures: 0.19.0 lines 724-725, 0.29.0 lines 1010-1012, 0.34.0 lines 1557-1559)
GEMMA4_ARCHS = frozenset(("Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
                          "Gemma4UnifiedForConditionalGeneration"))
# FA4's devices (vllm_flash_attn/flash_attn_interface.py ``_is_fa4_supported``, 0.24.0-0.34.0 lines 72-86: compute
# capability 9.x, 10.x or 11.x, its CuTe-DSL kernels installed: nvidia-cutlass-dsl is a Requires-Dist from 0.24.0)
FA4_MAJORS = (9, 10, 11)


def _fa4(device: Device) -> bool:
    return device.platform == "cuda" and device.capability[0] in FA4_MAJORS


def _release_key(facts: AttentionFacts) -> tuple[int, ...]:
    """The release the facts are read for, sortable; none given sorts as the newest."""
    return version_key(facts.release) if facts.release else (99,)


def gemma4_backend(facts: AttentionFacts, device: Device) -> tuple[str, str] | None:
    """``(backend, vLLM's log line)`` where ``Gemma4Config.verify_and_update_config`` sets the attention backend
    for a Gemma 4 model whose sliding and full layers differ in head size (none given by the user), else None:
    0.19.0-0.23.0 force TRITON_ATTN on every card when the larger head exceeds 256 (FlashAttention's limit then);
    from 0.24.0 a card with FA4 (``FA4_MAJORS``) keeps the selector's choice (the hook sets flash_attn_version 4,
    which serves heads up to 512), any other card gets TRITON_ATTN (0.24.0 config.py lines 210-257, 0.29.0 lines
    209-258, 0.34.0 lines 532-598; the XPU branch of 0.31.0+ is not a kvplan platform)."""
    if facts.architecture not in GEMMA4_ARCHS or len(facts.head_sizes) < 2:
        return None
    small, big = min(facts.head_sizes), max(facts.head_sizes)
    key = _release_key(facts)
    if key < (0, 24, 0):
        if big <= 256:
            return None
        return "TRITON_ATTN", (f"Gemma4 model has heterogeneous head dimensions (head_dim={small}, "
                               f"global_head_dim={big}). Forcing TRITON_ATTN backend to prevent mixed-backend "
                               "numerical divergence.")
    if _fa4(device) and big <= 512:
        return None
    dims = (f"{{'sliding_attention': {small}, 'full_attention': {big}}}" if key >= (0, 29, 0)
            else f"(head_dim={small}, global_head_dim={big})")  # the log's form: 0.29.0 prints the per-layer dict
    return "TRITON_ATTN", (f"Gemma4 model has heterogeneous head dimensions {dims}. FA4 not available, forcing "
                           "TRITON_ATTN backend.")


def forced_backend_refusal(backend: str, facts: AttentionFacts, device: Device) -> str | None:
    """vLLM's selector error for a user's ``--attention-backend FLASH_ATTN`` that some attention layer's head size
    rules out (``get_attn_backend_cls`` validates the selected backend and raises: cuda.py 0.29.0 lines 414-430,
    0.34.0 lines 470-487; ``FlashAttentionBackend.supports_head_size``: a multiple of 8, up to 256, up to 512 with
    FA4, flash_attn.py 0.29.0 lines 167-175). Only the head sizes of Gemma 4's two layer kinds are read here."""
    if backend != "FLASH_ATTN" or not facts.head_sizes:
        return None
    limit = 512 if _fa4(device) and _release_key(facts) >= (0, 24, 0) else 256
    if all(h % 8 == 0 and h <= limit for h in facts.head_sizes):
        return None
    return ("Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. Reason: "
            "['head_size not supported']")


def decide_block_size(era: Era, facts: AttentionFacts, *, device: Device | None, block_size: int | None,
                      attention_backend: str | None) -> BlockSizeDecision:
    """The block size before any hybrid alignment: --block-size, else the backend's preference."""
    note = None
    if device is None:
        device = Device()
        note = ("no --gpu: the attention backend and block size assume an H100 (SM 9.0, CUDA); "
                "pass --gpu for another card")
    _check_modelled(era, device, facts.kv_cache_dtype, facts.release or era.name)
    refusal = None
    forced = None if attention_backend is not None else gemma4_backend(facts, device)
    if attention_backend is not None:
        backend = check_backend(attention_backend, facts)
        refusal = forced_backend_refusal(backend, facts, device)
    elif forced is not None:
        backend = forced[0]
    elif era.backend_by_device:
        backend, refusal = select_backend(era, device, facts, block_size)
    else:
        # before 0.33.0 kvplan keeps the H100 defaults it was checked with (not read per device)
        backend = "FLASHMLA_SPARSE" if facts.use_sparse else "FLASH_ATTN_MLA" if facts.use_mla else "FLASH_ATTN"
    kernel = smallest_kernel_block(era, backend)
    forced_lines = (forced[1],) if forced is not None else ()  # vLLM logs Gemma4Config's choice
    if block_size is not None:
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
            raise OptionError(f"--block-size must be a positive number of tokens, got {block_size!r}")
        return _with_kv_dtype(era, device, facts, BlockSizeDecision(block_size, backend, "--block-size", kernel, True,
                                                                    forced_lines, note, refusal=refusal))
    preferred = preferred_block_size(era, backend, device, facts)
    if preferred is None:
        # before 0.18.0 (no get_preferred_block_size) platforms/cuda.py check_and_update_config fits the block
        # to the MLA kernels (FlashMLA 64, CUTLASS_MLA 128: 0.17.1 vllm/platforms/cuda.py lines 179-279) and
        # keeps the default otherwise
        preferred = _fitted_block_size(era, backend)
    lines: tuple[str, ...] = forced_lines
    if preferred != era.default_block_size:
        lines += (f"Setting kv cache block size to {preferred} for {backend} backend(s).",)
        how = f"{backend}'s preferred block size (CacheConfig.DEFAULT_BLOCK_SIZE {era.default_block_size})"
    else:
        how = f"CacheConfig.DEFAULT_BLOCK_SIZE, kept by {backend}"
    return _with_kv_dtype(era, device, facts, BlockSizeDecision(preferred, backend, how, kernel, False, lines, note,
                                                                refusal=refusal))


def _with_kv_dtype(era: Era, device: Device, facts: AttentionFacts, d: BlockSizeDecision) -> BlockSizeDecision:
    """The decision with the backend's packing of the cache dtype and, when some layers keep the model
    dtype, ``_align_heterogeneous_kv_block_size`` (platforms/interface.py 0.34.0 lines 820-943): the
    primary block grows in steps of max(smallest kernel block, block) until its page covers a
    model-dtype page of the smallest kernel block ("Setting attention block size to N tokens so the
    quantized primary KV page covers the higher-precision padded-spec page.")."""
    if not era.kv_cache_packing or d.refusal is not None or facts.kv_cache_dtype == "auto" or facts.use_mla:
        return d
    from dataclasses import replace

    if d.attention_backend in NO_SLIDING_WINDOW_BACKENDS:
        d = replace(d, sliding_refusal=select_backend(era, device, facts, d.block_size if d.user_specified else None,
                                                      sliding=True)[1])

    dtype, backend = facts.kv_cache_dtype, d.attention_backend
    heads, hs = facts.num_kv_heads, facts.head_size
    if heads is None or hs is None:
        return d
    hs_v = facts.head_size_v if facts.head_size_v is not None else hs
    tensor_bytes = dtype_size_bytes(facts.kv_tensor_dtype or facts.model_dtype)

    d = replace(d, packing=kv_packing.packing_rule(backend, dtype, dtype_bytes=tensor_bytes))
    if not facts.has_skip_layers:
        return d
    slots, content = kv_packing.packing(backend, dtype, num_kv_heads=heads, head_size=hs, head_size_v=hs_v,
                                        dtype_bytes=tensor_bytes)
    primary = (slots or heads) * (content if content is not None else (hs + hs_v) * tensor_bytes)
    padded = heads * (hs + hs_v) * dtype_size_bytes(facts.model_dtype)  # the skipped layers' per-token page
    if padded <= primary:
        return d
    smallest = smallest_kernel_block(era, backend)
    alignment = max(smallest, d.block_size)
    grown = alignment * cdiv(padded * smallest, alignment * primary)
    d = replace(d, skipped_sliding=_skipped_sliding(era, device, facts, primary * max(d.block_size, grown)))
    if d.block_size >= grown:
        return d
    line = (f"Setting attention block size to {grown} tokens so the quantized primary KV page covers the "
            "higher-precision padded-spec page.")
    return replace(d, block_size=grown, how=f"{d.how}; grown to {grown} so the {dtype} page covers a "
                   f"{facts.model_dtype} page of {smallest} tokens (skipped layers)", log_lines=(*d.log_lines, line))


# kernel block sizes declared as MultipleOf(n) (the comments of KERNEL_BLOCK_SIZES), the others exact
MULTIPLE_OF_BACKENDS = frozenset({"FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION", "ROCM_ATTN",
                                  "ROCM_AITER_UNIFIED_ATTN", "FLASH_ATTN_MLA", "TRITON_MLA"})


def _skipped_sliding(era: Era, device: Device, facts: AttentionFacts, shared_page: int) -> SkippedLayerPage:
    """A skipped sliding-window layer (the model dtype, on the backend the selector picks for ``auto``)
    pads its page to the shared page and takes the largest kernel block whose page fits in it
    (``Attention.get_kv_cache_spec`` with ``skip_page_size_padded``, attention.py 0.34.0 lines 657-705, and
    ``_largest_kernel_block_within`` lines 101-144): the rule as values, which the model stage applies."""
    from dataclasses import replace

    backend = select_backend(era, device, replace(facts, kv_cache_dtype="auto"), sliding=True)[0]
    return SkippedLayerPage(shared_page, tuple(kernel_block_sizes(era, backend)), backend in MULTIPLE_OF_BACKENDS)


def device_of(preset: GpuPreset | GpuCard | None) -> Device | None:
    """The --gpu preset's compute capability and platform, as values (None without --gpu: the H100 is assumed);
    a deployment's ``GpuCard`` carries the preset's (None with --gpu-memory alone: no preset named)."""
    if preset is None or preset.name is None:
        return None
    if preset.compute_capability is None:
        return Device(platform=preset.platform, name=preset.name)
    return Device(capability=preset.compute_capability, platform=preset.platform, name=preset.name)
