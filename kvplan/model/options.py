"""Serving options that change the per-layer specs, and vLLM's rules for resolving them:
model dtype (``--dtype``), cache dtype (``--kv-cache-dtype``) and the attention block size
(``--block-size`` / ``--attention-backend``). The numbers are vLLM 0.33.0's on an
H100/H200 (reference §7.3, §12.3)."""

from __future__ import annotations

from kvplan.frozen import dataclass
from kvplan.errors import ConfigError, OptionError, UnsupportedError
from kvplan.model.cache_dtypes import accepted_cache_dtypes, tensor_dtype
from kvplan.units import MODEL_DTYPES


@dataclass(frozen=True)
class AttentionFacts:
    """What an engine's block-size rule reads from the model (vLLM's ``AttentionSelectorConfig``):
    MLA, sparse MLA (DeepSeek-V3.2), the attention head size, attention sinks (gpt-oss), the KV
    cache dtype as resolved. Made by the model stage (``ModelDraft.attention``), read by
    ``kvplan.engines.vllm.block_size``."""

    use_mla: bool = False
    use_sparse: bool = False
    head_size: int | None = None
    has_sink: bool = False
    kv_cache_dtype: str = "auto"
    # what a backend's packing and vLLM's block alignment for skipped layers read (``kv_packing``,
    # ``block_size``): the model dtype, KV heads per rank and head sizes of the attention layers, and
    # whether some layers keep the model dtype (--kv-cache-dtype-skip-layers, TurboQuant's boundary layers)
    model_dtype: str = "bfloat16"
    num_kv_heads: int | None = None
    head_size_v: int | None = None
    has_skip_layers: bool = False
    release: str | None = None  # the vLLM release the options are read for (ServingOptions.release)
    # the torch dtype the quantized cache's tensor holds (STR_DTYPE_TO_TORCH_DTYPE of kv_cache_dtype; None: the
    # model dtype), worked out here so the engine reads it as a value
    kv_tensor_dtype: str | None = None
    # the architecture vLLM keys its per-model config hooks on (MODELS_CONFIG_MAP) and the distinct head sizes of
    # the attention layers where they differ (Gemma 4: head_dim, global_head_dim), which Gemma4Config reads
    architecture: str | None = None
    head_sizes: tuple[int, ...] = ()


@dataclass(frozen=True)
class ServingOptions:
    block_size: int | None = None  # --block-size; None = vLLM's per-backend default (§7.3, §12.3)
    attention_backend: str | None = None  # --attention-backend (FLASH_ATTN, FLASHMLA, ...)
    kv_cache_dtype: str = "auto"  # --kv-cache-dtype (a value of the release's CacheDType: cache_dtypes.py)
    # --kv-cache-dtype-skip-layers: layer indices (and attention-type names: "sliding_window") whose KV
    # stays in the model dtype
    kv_cache_dtype_skip_layers: tuple[str, ...] = ()
    # the vLLM release whose CacheDType decides which --kv-cache-dtype values are accepted (None: the newest)
    release: str | None = None
    dtype: str = "auto"  # --dtype; auto = the config's dtype, float32 checkpoints run as bfloat16
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    speculative_method: str | None = None  # eagle, eagle3, mtp, draft_model, ngram; inferred when None
    num_speculative_tokens: int | None = None
    disable_sliding_window: bool = False
    # Nemotron-H's ssm state when the config.json sets no mamba_ssm_cache_dtype: the vLLM
    # release's own rule (Era.nemotron_h_ssm_cache_dtype): "model" (the model dtype, <= 0.12),
    # "float16" (0.13 to 0.19), "float32" (0.20+). Never the installed transformers' default.
    nemotron_h_ssm_cache_dtype: str = "float32"
    # num_speculative_tokens of suffix decoding when none is given: the release's default
    # (Era.suffix_default_tokens: 24 up to 0.33, 8 from 0.34)
    suffix_default_tokens: int = 8
    # VLLM_PP_LAYER_PARTITION as given ("10,11,11"): the layers of each pipeline stage
    pp_layer_partition: str | None = None
    # Era.speculators_user_config: a served speculators checkpoint keeps the user's
    # num_speculative_tokens (0.33.0+), or its own replaces it (0.18.0)
    speculators_user_config: bool = True


# ---------------------------------------------------------------- model dtype

# vllm/config/model.py ``_FLOAT16_NOT_SUPPORTED_MODELS`` (numerical instability): auto
# never picks float16 for them and an explicit float16 is refused.
FLOAT16_NOT_SUPPORTED = frozenset({"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"})

# CUDA ``supported_dtypes`` on a bf16-capable GPU (sm80+), in preference order.
_CUDA_SUPPORTED = ("bfloat16", "float16", "float32")


def _dtype_name(value) -> str | None:
    if value is None:
        return None
    text = str(value).removeprefix("torch.")
    return MODEL_DTYPES.get(text)


def config_dtype(top: dict, text: dict) -> str | None:
    """vLLM's ``_find_dtype``: the config's ``dtype``/``torch_dtype``, else the text config's,
    else None (vLLM then tries the safetensors header, offline kvplan cannot; both end at
    float32 → bfloat16 below, as for gpt-oss and MiniMax-M2, §12.11)."""
    for d in (top, text):
        for key in ("dtype", "torch_dtype"):
            name = _dtype_name(d.get(key))
            if name is not None:
                return name
    return None


def resolve_model_dtype(option: str, model_type: str, cfg_dtype: str | None) -> tuple[str, str]:
    """``(dtype, how)`` following vLLM's ``_get_and_verify_dtype`` / ``_resolve_auto_dtype``.

    auto: float32 (or a config without a dtype) → the preferred dtype, bfloat16 on a
    bf16-capable GPU; a config dtype the platform supports is kept; float16 on a
    Gemma-2/3 model → bfloat16. An explicit dtype is taken as given (float16 refused for
    Gemma-2/3 as vLLM does).
    """
    opt = (option or "auto").lower()
    if opt != "auto":
        name = MODEL_DTYPES.get(opt)
        if name is None:
            raise OptionError(f"--dtype {option!r} is not a model dtype; use auto, bfloat16, float16 or float32")
        if name == "float16" and model_type in FLOAT16_NOT_SUPPORTED:
            raise OptionError(
                f"The model type {model_type!r} does not support float16. Reason: Numerical instability. "
                "Please use bfloat16 or float32 instead."
            )
        return name, f"--dtype {option}"
    supported = [d for d in _CUDA_SUPPORTED if not (d == "float16" and model_type in FLOAT16_NOT_SUPPORTED)]
    preferred = supported[0]
    if cfg_dtype is None:
        return preferred, "config has no dtype: vLLM assumes float32 and runs it as bfloat16"
    if cfg_dtype == "float32":
        return preferred, "float32 checkpoint: vLLM's auto dtype downcasts it to bfloat16"
    if cfg_dtype in supported:
        return cfg_dtype, f"config dtype {cfg_dtype}"
    return preferred, f"{model_type} does not support {cfg_dtype}: auto picks {preferred}"


# ---------------------------------------------------------------- cache dtype

# vllm/utils/torch_utils.py ``MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP`` (0.33.0, 0.34.0; 0.18.0 has fp8 only)
MODELOPT_KV_CACHE_DTYPES = {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}
# ModelArchConfigConvertor._normalize_quantization_config: a ModelOpt quant_algo → quant_method
_MODELOPT_METHODS = {"FP8": "modelopt", "FP8_PER_CHANNEL_PER_TOKEN": "modelopt", "FP8_PB_WO": "modelopt",
                     "NVFP4": "modelopt_fp4", "MIXED_PRECISION": "modelopt_mixed"}


def normalize_quantization_config(quant: dict, path: str) -> dict:
    """vLLM's ``ModelArchConfigConvertor._normalize_quantization_config`` (model_arch_config_convertor.py,
    0.34.0 lines 241-283; the same rule in 0.18.0 and 0.33.0): a ModelOpt checkpoint (``producer.name``
    modelopt, as ``hf_quant_config.json`` writes it) gets ``quant_method`` modelopt / modelopt_fp4 /
    modelopt_mixed from ``quantization.quant_algo``; the method is lower-cased. vLLM does this in place
    on ``hf_config.quantization_config`` when the model config is built, before it resolves
    ``--kv-cache-dtype auto``, so the resolution below sees the normalised method."""
    q = dict(quant)
    inner = q.get("quantization", {})
    producer = q.get("producer", {})
    legacy = isinstance(inner, dict) and "modelopt_quant_config" in inner
    if ((isinstance(producer, dict) and producer.get("name") == "modelopt") or legacy) and isinstance(inner, dict) \
            and inner.get("quant_algo") is not None:
        algo = str(inner["quant_algo"]).upper()
        if algo not in _MODELOPT_METHODS:
            raise ConfigError(path, "quantization_config.quantization.quant_algo",
                              f"Unknown ModelOpt quant algo: {inner['quant_algo']} (vLLM refuses it)",
                              f"use one of {', '.join(_MODELOPT_METHODS)}")
        q["quant_method"] = _MODELOPT_METHODS[algo]
    q["quant_method"] = str(q.get("quant_method", "")).lower().replace("compressed_tensors", "compressed-tensors")
    return q


def with_quant_config(raw: dict, path: str, beside: tuple[dict | None, str | None] = (None, None)
                      ) -> tuple[dict, str | None]:
    """``(config, source)``: the config with the ``quantization_config`` vLLM attaches, normalised.

    vLLM's ``get_config`` (transformers_utils/config.py, 0.34.0 lines 996-1007; 0.33.0 lines 951-962;
    0.18.0 lines 728-740): ``quantization_config`` from config.json (ModelOpt >= 0.31), else the
    ``hf_quant_config.json`` in the same directory (ModelOpt <= 0.29, e.g.
    nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4). ``source`` names the file when it was the latter.
    kvplan looks beside the config.json it read (a local directory, the bundled catalog, the HF cache;
    ``--download`` fetches it into the snapshot beside config.json): ``beside`` is that file as
    ``kvplan.model.source.quant_config_beside`` read it."""
    quant, source = beside if beside[1] is not None else (raw.get("quantization_config"), None)
    if not isinstance(quant, dict):
        return raw, None
    return {**raw, "quantization_config": normalize_quantization_config(quant, source or path)}, source


def kv_cache_dtype_from_quant(quant: dict | None) -> tuple[str | None, str | None]:
    """``(cache dtype, warning)``: what a checkpoint's quantization config makes of
    ``--kv-cache-dtype auto``.

    - ModelOpt (``quant_method`` modelopt*): vLLM's ``resolve_kv_cache_dtype_string`` →
      ``get_kv_cache_quant_algo_string`` (vllm/utils/torch_utils.py, 0.34.0 lines 463-536): the first
      of ``kv_cache_scheme`` / ``kv_cache_quant_algo`` (under ``quantization``, else top level);
      ``FP8`` → ``fp8_e4m3``, ``NVFP4`` → ``nvfp4`` (0.33.0+; 0.18.0 warns and keeps auto), a scheme
      dict ``{num_bits: 8, type: float, dynamic: false}`` → fp8; anything else: vLLM warns "Unknown
      kv_cache_quant_algo" and keeps ``auto``.
    - llm-compressor / compressed-tensors: a ``kv_cache_scheme`` makes the attention layer's quant
      method switch ``auto`` to ``fp8``.
    """
    if not isinstance(quant, dict):
        return None, None
    if str(quant.get("quant_method", "")).startswith("modelopt"):
        inner = quant.get("quantization", quant)
        inner = inner if isinstance(inner, dict) else quant
        algo = (inner.get("kv_cache_scheme") or quant.get("kv_cache_scheme") or inner.get("kv_cache_quant_algo")
                or quant.get("kv_cache_quant_algo"))
        if algo is None:
            return None, None
        if isinstance(algo, dict):
            if algo.get("dynamic") is False and algo.get("num_bits") == 8 and algo.get("type") == "float":
                algo = "fp8"
            elif algo.get("num_bits") == 4 and algo.get("type") == "float":
                algo = "nvfp4"
        resolved = MODELOPT_KV_CACHE_DTYPES.get(algo.lower()) if isinstance(algo, str) else None
        if resolved is None:
            return None, (f"vLLM warns \"Unknown kv_cache_quant_algo '{algo}' in model config\" and keeps "
                          "--kv-cache-dtype auto (the model dtype)")
        if tensor_dtype(resolved) is None:
            raise UnsupportedError(
                f"the checkpoint's kv_cache_quant_algo {algo!r} makes vLLM use a {resolved} KV cache, which kvplan "
                "does not model; pass --kv-cache-dtype explicitly (fp8, bfloat16, ...)"
            )
        return resolved, None
    if quant.get("kv_cache_scheme") is not None:
        return "fp8", None
    return None, None


def resolve_cache_dtype(option: str, model_dtype: str, quant: dict | None,
                        release: str | None = None) -> tuple[str, str, str | None]:
    """``(cache_dtype_str, tensor dtype, note)``: the resolved ``--kv-cache-dtype`` string
    (what MLA's ``cache_dtype_str`` records) and the cache tensor's torch dtype
    (``kv_cache_dtype_str_to_dtype``: ``STR_DTYPE_TO_TORCH_DTYPE``, the model dtype for auto).
    A value outside ``release``'s ``CacheDType`` is refused as vLLM's parser refuses it."""
    opt = (option or "auto").lower()
    accepted = accepted_cache_dtypes(release or "999")
    if opt not in accepted:
        raise OptionError(f"--kv-cache-dtype {option!r} is not a KV cache dtype of vLLM {release or 'newest'}; "
                          f"use one of {', '.join(accepted)}")
    note = None
    if opt == "auto":
        forced, warning = kv_cache_dtype_from_quant(quant)
        if forced is not None:
            opt = forced
            note = f"--kv-cache-dtype auto resolves to {forced} from the checkpoint's quantization_config"
        elif warning is not None:
            note = warning
    tensor = tensor_dtype(opt) or model_dtype
    return opt, tensor, note


# ---------------------------------------------------------------- block size

# The preferred block size of each attention backend in vLLM 0.33 (``update_block_size_for_backend``):
# 16 when the backend supports 16, else its smallest supported size.
BACKEND_BLOCK_SIZE = {
    "FLASH_ATTN": 16,
    "FLASHINFER": 16,
    "TRITON_ATTN": 16,
    "FLEX_ATTENTION": 16,
    "TREE_ATTN": 16,
    "ROCM_ATTN": 16,
    "ROCM_AITER_FA": 16,
    "ROCM_AITER_UNIFIED_ATTN": 16,
    "CPU_ATTN": 16,
    "FLASH_ATTN_MLA": 16,
    "TRITON_MLA": 16,
    "ROCM_AITER_MLA": 16,
    "FLASHMLA": 64,
    "FLASHMLA_SPARSE": 64,
    "CUTLASS_MLA": 128,
    "FLASHINFER_MLA": 32,
}
MLA_BACKENDS = frozenset(
    {"FLASH_ATTN_MLA", "TRITON_MLA", "ROCM_AITER_MLA", "FLASHMLA", "FLASHMLA_SPARSE", "CUTLASS_MLA", "FLASHINFER_MLA"}
)
SPARSE_MLA_BACKENDS = frozenset({"FLASHMLA_SPARSE"})


def resolve_block_size(options: ServingOptions, *, use_mla: bool, sparse_mla: bool) -> tuple[int, str]:
    """``(block_size, how)``: --block-size, else the backend's preferred size, else the default
    backend's on H100/H200: 16 (FlashAttention / FlashAttention-MLA), 64 for DeepSeek-V3.2
    (FlashMLA-sparse)."""
    backend = options.attention_backend.upper() if options.attention_backend else None
    if backend is not None:
        if backend not in BACKEND_BLOCK_SIZE:
            raise OptionError(
                f"--attention-backend {options.attention_backend!r} is not known; use one of "
                + ", ".join(sorted(BACKEND_BLOCK_SIZE))
            )
        if use_mla != (backend in MLA_BACKENDS):
            kind = "an MLA" if use_mla else "a non-MLA"
            raise OptionError(f"--attention-backend {backend} cannot serve {kind} model")
        if sparse_mla != (backend in SPARSE_MLA_BACKENDS) and use_mla:
            want = "a sparse-MLA backend (FLASHMLA_SPARSE)" if sparse_mla else "a dense MLA backend"
            raise OptionError(f"--attention-backend {backend}: this model needs {want}")
    if options.block_size is not None:
        if isinstance(options.block_size, bool) or not isinstance(options.block_size, int) or options.block_size <= 0:
            raise OptionError(f"--block-size must be a positive number of tokens, got {options.block_size!r}")
        return options.block_size, "--block-size"
    if backend is not None:
        return BACKEND_BLOCK_SIZE[backend], f"{backend}'s preferred block size"
    if sparse_mla:
        return 64, "DeepSeek-V3.2 default backend FLASHMLA_SPARSE supports only 64"
    if use_mla:
        return 16, "MLA on H100/H200 defaults to FlashAttention-MLA (16)"
    return 16, "default backend (FlashAttention) prefers 16"
