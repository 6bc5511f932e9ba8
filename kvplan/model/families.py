"""Per-family rules: a (text) config → the attention/Mamba layers vLLM registers, in order.

One builder per family, each the rule of vLLM 0.33.0's model file (reference §7.2 and
§12), reading the config as vLLM does (``HFView``: transformers object first). Every
builder returns ``Built`` layers in registration order with the decoder-layer index
each belongs to (for the PP partition) and the per-rank (TP-split) spec.

Layer names follow the module prefixes of vLLM's model files:

==========================  =============================================================
family                      registered names
==========================  =============================================================
Llama-style, Gemma, Qwen    ``model.layers.{i}.self_attn.attn``
gpt-oss                     ``model.layers.{i}.attn.attn`` (``TransformerBlock.attn`` = OAIAttention)
multimodal wrappers         ``language_model.model.layers.{i}...`` (Gemma 3/3n/4, Llama 4, Qwen3.5)
Qwen3-Next / Qwen3.5 GDN    ``model.layers.{i}.linear_attn`` (the GatedDeltaNet module)
Nemotron-H                  ``model.layers.{i}.mixer`` (Mamba2), ``model.layers.{i}.mixer.attn``
Jamba                       ``model.layers.{i}.mamba``, ``model.layers.{i}.attn``
DeepSeek V2/V3 (MLA)        ``model.layers.{i}.self_attn.attn``
DeepSeek-V3.2               ``model.layers.{i}.self_attn.indexer.k_cache`` then ``...self_attn.attn``
Whisper                     ``model.decoder.layers.{i}.self_attn.attn`` / ``.encoder_attn.attn``
==========================  =============================================================

A name only labels a layer; the grouping depends on the order and the specs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kvplan.errors import ConfigError, OptionError, UnsupportedError
from kvplan.model import weight_rules
from kvplan.model.hfconfig import HFView, build_config_object, shared_indexer_layers, text_view
from kvplan.specs import (
    ChunkedLocalAttentionSpec,
    CrossAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowMLASpec,
    SlidingWindowSpec,
)
from kvplan.units import plural

SLIDING = "sliding_attention"
FULL = "full_attention"

# Architecture (``architectures[0]``) → family rule. vLLM picks the model class by
# architecture, so this is the primary key; ``MODEL_TYPE_FAMILY`` is the fallback.
ARCH_FAMILY = {
    "GptOssForCausalLM": "gpt_oss",
    "Gemma2ForCausalLM": "layer_types",
    "Gemma3ForCausalLM": "layer_types",
    "Gemma3ForConditionalGeneration": "layer_types",
    "Gemma3nForCausalLM": "layer_types",
    "Gemma3nForConditionalGeneration": "layer_types",
    "Cohere2ForCausalLM": "layer_types",
    "Exaone4ForCausalLM": "layer_types",
    "Gemma4ForCausalLM": "gemma4",
    "Gemma4ForConditionalGeneration": "gemma4",
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "MixtralForCausalLM": "llama",
    "Phi3ForCausalLM": "llama",
    "MiniMaxM2ForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen2MoeForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen2",
    "Qwen3MoeForCausalLM": "qwen2",
    "Llama4ForCausalLM": "llama4",
    "Llama4ForConditionalGeneration": "llama4",
    "Qwen3NextForCausalLM": "gdn",
    "Qwen3_5ForCausalLM": "gdn",
    "Qwen3_5MoeForCausalLM": "gdn",
    "Qwen3_5ForConditionalGeneration": "gdn",
    "Qwen3_5MoeForConditionalGeneration": "gdn",
    "NemotronHForCausalLM": "nemotron_h",
    "JambaForCausalLM": "jamba",
    "DeepseekV2ForCausalLM": "deepseek",
    "DeepseekV3ForCausalLM": "deepseek",
    "DeepseekV32ForCausalLM": "deepseek",
    "MiMoV2FlashForCausalLM": "mimo_v2_flash",
    "WhisperForConditionalGeneration": "whisper",
    "DeepseekV4ForCausalLM": "deepseek_v4",
    "MambaForCausalLM": "mamba",
    "FalconMambaForCausalLM": "mamba",
    "Mamba2ForCausalLM": "mamba2",
    "FalconH1ForCausalLM": "falcon_h1",
    "GraniteMoeHybridForCausalLM": "granite_hybrid",
    "Zamba2ForCausalLM": "zamba2",
    "Lfm3ForCausalLM": "lfm",
    "Lfm3VlForConditionalGeneration": "lfm",
    "Lfm3AudioForConditionalGeneration": "lfm",
    # checked against the goldens (tests/golden/architectures/0.34.0/): the same rule as the family
    "AXK1ForCausalLM": "deepseek",
    "KimiK25ForConditionalGeneration": "deepseek",
    "GlmMoeDsaForCausalLM": "deepseek",  # GLM-5: DeepSeek-V3.2's sparse-MLA layout (index_topk)
    "Cohere2MoeForCausalLM": "layer_types",
    "Cohere2VisionForConditionalGeneration": "layer_types",
    "DiffusionGemmaForBlockDiffusion": "gemma4",
    "MiniCPMV4_6ForConditionalGeneration": "gdn",
    "MiniCPMV4_7ForConditionalGeneration": "gdn",
    "OlmoHybridForCausalLM": "gdn",  # gated delta net + attention (layer_types), the Qwen3-Next layout
    "Glm4MoeLiteForCausalLM": "deepseek",  # GLM-4.7-Flash: DeepSeek-V3's MLA (kv_lora_rank + qk_rope_head_dim)
    "Lfm2ForCausalLM": "lfm",  # LFM2: ShortConv + attention by full_attn_idxs / layer_types, as LFM3
    "Lfm2MoeForCausalLM": "lfm",
    "KimiLinearForCausalLM": "kimi_linear",
}
MODEL_TYPE_FAMILY = {
    "gpt_oss": "gpt_oss",
    "gemma2": "layer_types", "gemma3": "layer_types", "gemma3_text": "layer_types",
    "gemma3n": "layer_types", "gemma3n_text": "layer_types", "cohere2": "layer_types", "exaone4": "layer_types",
    "gemma4": "gemma4", "gemma4_text": "gemma4",
    "llama": "llama", "mistral": "llama", "mixtral": "llama", "phi3": "llama", "minimax_m2": "llama",
    "qwen2": "qwen2", "qwen2_moe": "qwen2", "qwen3": "qwen2", "qwen3_moe": "qwen2",
    "llama4": "llama4", "llama4_text": "llama4",
    "qwen3_next": "gdn", "qwen3_5": "gdn", "qwen3_5_text": "gdn", "qwen3_5_moe": "gdn", "qwen3_5_moe_text": "gdn",
    "nemotron_h": "nemotron_h", "jamba": "jamba",
    "deepseek_v2": "deepseek", "deepseek_v3": "deepseek", "deepseek_v32": "deepseek", "kimi_k2": "deepseek",
    "mimo_v2_flash": "mimo_v2_flash", "whisper": "whisper", "deepseek_v4": "deepseek_v4",
}
# EAGLE-style draft heads: Llama layers named after the target's (reference §6).
EAGLE3_ARCHS = frozenset({
    "LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "PEagleDraftModel", "PeagleLlamaForCausalLM",
    "Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3vlForCausalLM", "Eagle3Qwen3ForCausalLM",
})
EAGLE1_ARCHS = frozenset({"EagleLlamaForCausalLM", "LlamaForCausalLMEagle", "EagleLlama4ForCausalLM", "EagleMiniCPMForCausalLM"})
for _a in EAGLE3_ARCHS | EAGLE1_ARCHS:
    ARCH_FAMILY[_a] = "llama"


# Architectures the generic rule (``build_generic``) reproduces: each one's vLLM 0.34.0 model class,
# built on the meta device, registers exactly the generic rule's layers for the recorded config
# (tests/golden/architectures/0.34.0/, tests/test_architectures.py keeps this list equal to that set).
GENERIC_ARCHS: frozenset[str] = frozenset({
    "AfmoeForCausalLM",
    "Alpamayo2Super",
    "ApertusForCausalLM",
    "ArceeForCausalLM",
    "AudioFlamingo3ForConditionalGeneration",
    "Blip2ForConditionalGeneration",
    "BloomForCausalLM",
    "CohereForCausalLM",
    "Cosmos3EdgeForConditionalGeneration",
    "CwmForCausalLM",
    "DbrxForCausalLM",
    "DoryForCausalLM",
    "Ernie4_5ForCausalLM",
    "Ernie4_5_MoeForCausalLM",
    "Exaone4_5_ForConditionalGeneration",
    "ExaoneMoEForCausalLM",
    "ExaoneMoeForCausalLM",
    "FalconForCausalLM",
    "FlexOlmoForCausalLM",
    "GPT2LMHeadModel",
    "GPTBigCodeForCausalLM",
    "GPTJForCausalLM",
    "GPTNeoXForCausalLM",
    "GemmaForCausalLM",
    "Glm4ForCausalLM",
    "Glm4MoeForCausalLM",
    "Glm4vForConditionalGeneration",
    "Glm4vMoeForConditionalGeneration",
    "GlmAsrForConditionalGeneration",
    "GlmForCausalLM",
    "GlmOcrForConditionalGeneration",
    "GraniteForCausalLM",
    "GraniteMoeForCausalLM",
    "GraniteMoeSWAForCausalLM",
    "GraniteMoeSharedForCausalLM",
    "GraniteSWAForCausalLM",
    "GraniteSpeechForConditionalGeneration",
    "GraniteSpeechPlusForConditionalGeneration",
    "HrmTextForCausalLM",
    "HunYuanDenseV1ForCausalLM",
    "HunYuanMoEV1ForCausalLM",
    "HyperCLOVAXForCausalLM",
    "Idefics3ForConditionalGeneration",
    "InternVLForConditionalGeneration",
    "Jais2ForCausalLM",
    "Kolibri1ForCausalLM",
    "LLaMAForCausalLM",
    "LagunaForCausalLM",
    "LlavaForConditionalGeneration",
    "LlavaNextForConditionalGeneration",
    "LlavaNextVideoForConditionalGeneration",
    "LlavaOnevisionForConditionalGeneration",
    "MellumForCausalLM",
    "MiMoForCausalLM",
    "MiniMaxM3SparseForConditionalGeneration",
    "Ministral3ForCausalLM",
    "Mistral3ForConditionalGeneration",
    "MuseGlimmerForCausalLM",
    "MuseGlimmerForConditionalGeneration",
    "NemotronForCausalLM",
    "OPTForCausalLM",
    "Olmo2ForCausalLM",
    "Olmo3ForCausalLM",
    "OlmoForCausalLM",
    "OlmoeForCausalLM",
    "PaddleOCRVLForConditionalGeneration",
    "PaliGemmaForConditionalGeneration",
    "PhiForCausalLM",
    "PhiMoEForCausalLM",
    "Qwen2AudioForConditionalGeneration",
    "Qwen2VLForConditionalGeneration",
    "Qwen2_5OmniForConditionalGeneration",
    "Qwen2_5OmniModel",
    "Qwen2_5_VLForConditionalGeneration",
    "Qwen3VLForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "RicursiveForCausalLM",
    "SeedOssForCausalLM",
    "SmolLM3ForCausalLM",
    "SmolVLMForConditionalGeneration",
    "StableLmForCausalLM",
    "Starcoder2ForCausalLM",
    "VaultGemmaForCausalLM",
})

HYBRID_FAMILIES = frozenset({"gdn", "nemotron_h", "jamba", "falcon_h1", "granite_hybrid", "zamba2", "lfm",
                             "kimi_linear"})


def vllm_registry() -> dict:
    """vLLM's model registry as the architecture harness read it (``kvplan/model/vllm_registry.json``,
    written by ``scripts/golden/make_goldens.py --architectures`` from
    ``vllm/model_executor/models/registry.py``): the architectures of each category and the removed
    ones with the release that removed them."""
    import json
    from pathlib import Path

    try:
        return json.loads((Path(__file__).with_name("vllm_registry.json")).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # pragma: no cover - package data
        return {}


def refusal(arch: str, model_type: str | None, has_auto_map: bool) -> tuple[str, str]:
    """Why kvplan refuses an architecture it has no rule for, and the fix (one line each).
    ``auto_map`` (remote code) only matters when vLLM does not register the architecture."""
    reg = vllm_registry()
    release = reg.get("release", "?")
    value = arch or model_type
    docs = "docs/architectures.md lists every architecture vLLM registers and kvplan's status for it"
    if arch and arch in reg.get("removed", {}):
        return (f"{arch!r} was removed from vLLM in {reg['removed'][arch]} (vllm/model_executor/models/registry.py "
                "_PREVIOUSLY_SUPPORTED_MODELS); vLLM refuses it at start-up",
                "serve it with a release before that, or pick a supported model")
    registered = arch and any(arch in reg.get(k, ()) for k in ("text", "multimodal", "speculative", "transformers"))
    if registered:
        return (f"vLLM {release} registers {arch!r}, but kvplan has no layer rule checked against its model class",
                docs)
    if has_auto_map:
        return (f"{value!r} is not in vLLM {release}'s registry and the config names remote code in auto_map "
                "(vLLM needs --trust-remote-code for it; kvplan never runs remote code)", docs)
    return f"{value!r} is not an architecture vLLM {release} registers", docs


# Multimodal wrappers whose decoder is built under ``language_model``.
_LM_WRAPPED = frozenset({
    "Gemma3ForConditionalGeneration", "Gemma3nForConditionalGeneration", "Gemma4ForConditionalGeneration",
    "Llama4ForConditionalGeneration", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
})


@dataclass(frozen=True)
class Built:
    name: str
    spec: KVCacheSpec
    layer_index: int  # decoder-layer index (target numbering) for the PP partition


@dataclass
class Context:
    """What every builder needs besides the config."""

    path: str
    architecture: str
    model_type: str
    tp: int
    block_size: int
    cache_dtype: str  # cache tensor dtype (auto → model dtype; fp8 → uint8)
    cache_dtype_str: str  # resolved --kv-cache-dtype string (MLA's cache_dtype_str)
    model_dtype: str
    disable_sliding_window: bool = False
    num_spec: int = 0  # speculative tokens: Mamba num_speculative_blocks and conv growth
    nemotron_h_ssm_cache_dtype: str = "float32"  # ServingOptions.nemotron_h_ssm_cache_dtype
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # head counts vLLM splits over TP: ("heads" | "kv_heads", total, config field); the engine's
    # pre-KV-cache checks decide whether TP divides them (kvplan.engines.vllm.prechecks)
    tp_checks: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass
class FamilyResult:
    layers: list[Built]
    kv_sharing: list[str] = field(default_factory=list)
    model_window: int | None = None  # cache_config.sliding_window (what a drafter inherits)
    is_hybrid_mamba: bool = False
    mamba_chunk_size: int | None = None
    attention_chunk_size: int | None = None  # model_config.attention_chunk_size (HMA decision)
    num_hidden_layers: int = 0


def config_views(raw: dict, path: str) -> tuple[HFView, HFView]:
    """The config as the family rules read it (``HFView``): the whole of it and its text (decoder)
    part, each seen through transformers' configuration class when ``model_type`` names one."""
    obj = build_config_object(raw, path) if raw.get("model_type") else None
    return HFView(raw, obj, path=path), text_view(raw, obj, path)


@dataclass(frozen=True)
class TextFacts:
    """What the model stage reads from a text config beside the layers (``layout.ModelInfo``'s fields)."""

    num_hidden_layers: int
    max_position_embeddings: int | None
    attention_chunk_size: int | None  # model_config.attention_chunk_size: vLLM's HMA decision reads it (§5)
    is_hybrid_mamba: bool  # has Mamba / GDN / linear-state layers
    mamba_chunk_size: int | None  # for vLLM's "all"-mode alignment


def text_facts(view: HFView, family: str, res: FamilyResult | None = None) -> TextFacts:
    """A model's ``TextFacts``: from its family rule's result ``res`` where it has one (the target),
    else read from the config (a drafter, ``load_model_info``). ``model_config.attention_chunk_size``
    is the text config's ``attention_chunk_size``; MiMo-V2-Flash's is dropped by vLLM (reference §12.6)."""
    n = res.num_hidden_layers if res else (
        view.int("decoder_layers") if family == "whisper" else view.int("num_hidden_layers")
    )
    hybrid = res.is_hybrid_mamba if res else family in HYBRID_FAMILIES
    return TextFacts(
        num_hidden_layers=n,
        max_position_embeddings=view.opt_int("max_position_embeddings"),
        attention_chunk_size=None if family == "mimo_v2_flash" else view.opt_int("attention_chunk_size"),
        is_hybrid_mamba=hybrid,
        mamba_chunk_size=(res.mamba_chunk_size if res else mamba_chunk_size(view)) if hybrid else None,
    )


# Model classes whose attention layers are built without the cache config, so vLLM's Attention takes the
# "auto" cache dtype (the model dtype) whatever --kv-cache-dtype says (model_executor/layers/attention/
# attention.py 0.34.0 lines 292-295): FalconAttention's rotary and ALiBi branches (falcon.py lines 173-196; the
# third branch, neither, never runs: FalconConfig.rotary is ``not alibi``). The only such calls among 0.34.0's
# decoder model files (tests/golden/architectures/0.34.0-kv-fp8/FalconForCausalLM.json: bfloat16 under fp8).
CACHE_CONFIG_NOT_PASSED = frozenset({"FalconForCausalLM"})


def draft_n_predict(view: HFView) -> int | None:
    """A draft config's ``n_predict``: vLLM's default ``num_speculative_tokens`` for a draft model
    (``SpeculativeConfig``, 0.18.0-0.34.0); None when the config has none."""
    return view.opt_int("n_predict")


def selector_head_size(view: HFView) -> int | None:
    """The attention head size vLLM's selector reads (model_config.get_head_size: head_dim, else
    hidden_size // num_attention_heads); None when neither is there (``head_size`` refuses that)."""
    head_dim = view.opt_int("head_dim")
    if head_dim:
        return head_dim
    hidden, heads = view.opt_int("hidden_size"), view.opt_int("num_attention_heads")
    return hidden // heads if hidden and heads else None


def kv_dtype_counts(view: HFView) -> tuple[int | None, int | None, int]:
    """``(MLA latent head or None, KV heads, decoder layers)``: what the KV cache dtype's rules read before the
    layers are built (the MLA selector's head size ``kv_lora_rank + qk_rope_head_dim``, 576 for DeepSeek-V3;
    the per-token page of a skipped layer; TurboQuant's boundary layers)."""
    rank = view.opt_int("kv_lora_rank")
    latent = rank + (view.opt_int("qk_rope_head_dim") or 0) if rank else None
    kv = view.opt_int("num_key_value_heads") or view.opt_int("num_attention_heads")
    return latent, kv, view.opt_int("num_hidden_layers") or 0


def family_of(architecture: str | None, model_type: str | None) -> str | None:
    if architecture and architecture in ARCH_FAMILY:
        return ARCH_FAMILY[architecture]
    if architecture and architecture in GENERIC_ARCHS:
        return GENERIC
    if model_type and model_type in MODEL_TYPE_FAMILY:
        return MODEL_TYPE_FAMILY[model_type]
    return None


def layer_prefix(architecture: str) -> str:
    return "language_model.model" if architecture in _LM_WRAPPED else "model"


# ----------------------------------------------------------------- shared helpers

def window_value(view: HFView, key: str = "sliding_window") -> int | None:
    """A window as vLLM uses it: None when absent, null or 0 (vLLM normalises 0 to None)."""
    w = view.get(key, None)
    if w is None:
        return None
    w = view.check_int(key, w, minimum=0)
    return w or None


def model_wide_window(view: HFView, ctx: Context) -> int | None:
    """``cache_config.sliding_window`` (reference §12.1): the config's window, set only when
    ``layer_types`` is missing or is all ``sliding_attention``; ``--disable-sliding-window``
    clears it."""
    if ctx.disable_sliding_window:
        return None
    lt = view.get("layer_types", None)
    if lt is not None and not (isinstance(lt, (list, tuple)) and all(t == SLIDING for t in lt)):
        return None
    return window_value(view)


def layer_types(view: HFView, n: int, allowed: set[str]) -> list[str] | None:
    lt = view.str_list("layer_types")
    if lt is None:
        return None
    if len(lt) < n:
        raise ConfigError(
            view.path, view.field("layer_types"), f"has {plural(len(lt), 'entry', 'entries')} for {plural(n, 'layer')}",
            "give one entry per layer (num_hidden_layers)",
        )
    for i, t in enumerate(lt[:n]):
        if t not in allowed:
            raise ConfigError(
                view.path, view.field("layer_types"), f"unknown value {t!r} at index {i}",
                f"use one of {', '.join(sorted(allowed))}",
            )
    return lt


def head_size(view: HFView) -> int:
    """``head_dim`` when set, else ``hidden_size // num_attention_heads`` (Llama's rule)."""
    hd = view.opt_int("head_dim")
    if hd is not None:
        return hd
    hidden = view.int("hidden_size")
    heads = view.int("num_attention_heads")
    return hidden // heads


def full_attention_spec(view: HFView, ctx: Context) -> KVCacheSpec:
    """A full-attention layer of the config's ``num_key_value_heads`` (split over TP, recorded for the
    engine's check) and ``head_size``: the MTP decoder layers of Qwen3-Next/3.5 and MiMo."""
    return attn_spec(ctx, num_kv_heads=kv_heads_per_rank(view, ctx, view.int("num_key_value_heads")),
                     head_size=head_size(view))


def check_attention_heads(view: HFView, ctx: Context, heads: int, key: str = "num_attention_heads") -> None:
    """Record the heads ``ModelConfig.verify_with_parallel_config`` divides by TP (the engine's
    ``prechecks.check_attention_heads`` reports vLLM's refusal as a start-up failure)."""
    ctx.tp_checks.append(("heads", heads, view.field(key)))


def kv_heads_per_rank(view: HFView, ctx: Context, total: int, key: str = "num_key_value_heads") -> int:
    """``max(1, total // tp)``; the divisibility the attention layer asserts (split evenly when
    ``total >= tp``, else replicated, ``tp % total == 0``) is recorded for the engine's
    ``prechecks.check_kv_heads``."""
    ctx.tp_checks.append(("kv_heads", total, view.field(key)))
    return max(1, total // ctx.tp)


def split(view: HFView, ctx: Context, value: int, key: str) -> int:
    """vLLM's ``divide(value, tp)``: an assertion there, an OptionError here."""
    if value % ctx.tp != 0:
        raise OptionError(
            f"{view.path}: '{view.field(key)}' = {value} is not divisible by tensor_parallel_size {ctx.tp}; "
            "pick a --tensor-parallel-size that divides it"
        )
    return value // ctx.tp


def attn_spec(
    ctx: Context, *, num_kv_heads: int, head_size: int, head_size_v: int | None = None,
    window: int | None = None, chunk: int | None = None, dtype: str | None = None,
) -> KVCacheSpec:
    """The generic ``Attention.get_kv_cache_spec``: a window → SlidingWindowSpec, a chunk →
    ChunkedLocalAttentionSpec, else FullAttentionSpec; ``head_size_v`` defaults to ``head_size``."""
    kw = dict(
        block_size=ctx.block_size, num_kv_heads=num_kv_heads, head_size=head_size,
        dtype=dtype or ctx.cache_dtype, head_size_v=head_size if head_size_v is None else head_size_v,
    )
    if window is not None:
        return SlidingWindowSpec(**kw, sliding_window=window)
    if chunk is not None:
        return ChunkedLocalAttentionSpec(**kw, attention_chunk_size=chunk)
    return FullAttentionSpec(**kw)


def _n_layers(view: HFView) -> int:
    return view.int("num_hidden_layers")


# ----------------------------------------------------------------- gpt-oss

def build_gpt_oss(view: HFView, ctx: Context) -> FamilyResult:
    """vllm/model_executor/models/gpt_oss.py: ``sliding_window = config.sliding_window if
    layer_idx % 2 == 0 else None``; ``layer_types`` is not read. head_dim from the config
    (GptOssConfig default 64); attention sinks do not change the spec."""
    n = _n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads"))
    hd = view.int("head_dim")
    w = None if ctx.disable_sliding_window else window_value(view)
    prefix = layer_prefix(ctx.architecture)
    layers = [
        Built(f"{prefix}.layers.{i}.attn.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=w if i % 2 == 0 else None), i)
        for i in range(n)
    ]
    ctx.notes.append(f"gpt-oss: even layers sliding (window {w}), odd layers full; layer_types is not read")
    return FamilyResult(layers, model_window=model_wide_window(view, ctx), num_hidden_layers=n)


# ----------------------------------------------------------------- Gemma-style layer_types

def _default_layer_types(ctx: Context, view: HFView, n: int) -> list[str]:
    """transformers' derivation when the class is unavailable: Gemma 2 (and Cohere2 style)
    even index = sliding; Gemma 3 ``(i + 1) % sliding_window_pattern != 0`` = sliding."""
    if ctx.model_type.startswith("gemma2"):
        return [SLIDING if i % 2 == 0 else FULL for i in range(n)]
    pattern = view.int("sliding_window_pattern", 6)
    return [SLIDING if (i + 1) % pattern else FULL for i in range(n)]


def _kv_shared_from(view: HFView, n: int) -> int:
    """First KV-sharing layer: ``num_hidden_layers - num_kv_shared_layers`` (Gemma 3n/4)."""
    shared = view.int("num_kv_shared_layers", 0, minimum=0)
    if shared > n:
        raise ConfigError(view.path, view.field("num_kv_shared_layers"), f"{shared} > num_hidden_layers {n}", "fix it")
    return n - shared


def build_layer_types(view: HFView, ctx: Context) -> FamilyResult:
    """Gemma 2/3/3n, Cohere2, Exaone4: ``layer_types[i] == "sliding_attention"`` → window
    ``sliding_window``; transformers derives ``layer_types`` when the config omits it.
    Gemma 3n's last ``num_kv_shared_layers`` layers share KV and register no spec."""
    n = _n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", view.int("num_attention_heads")))
    hd = head_size(view)
    lt = layer_types(view, n, {SLIDING, FULL}) or _default_layer_types(ctx, view, n)
    w = None if ctx.disable_sliding_window else window_value(view)
    if w is not None and ctx.model_type.startswith("cohere2"):
        # commandr.py (vLLM 0.33.0 and 0.34.0, line 244): a Cohere2 sliding layer sees
        # [pos - sliding_window, pos], so vLLM passes sliding_window + 1
        w += 1
    layers, shared = _gemma_layers(
        view, ctx, n, lambda i: attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=w if lt[i] == SLIDING else None)
    )
    n_sw = sum(1 for t in lt[:n] if t == SLIDING)
    ctx.notes.append(f"{ctx.model_type}: layer_types gives {n_sw} sliding (window {w}) + {n - n_sw} full")
    if shared:
        ctx.notes.append(f"{len(shared)} KV-sharing layers (num_kv_shared_layers) register no KV cache")
    return FamilyResult(layers, shared, model_window=model_wide_window(view, ctx), num_hidden_layers=n)


def _gemma_layers(view: HFView, ctx: Context, n: int, spec_of) -> tuple[list, list[str]]:
    """Layers ``0..n-1`` with ``spec_of(i)``; the last ``num_kv_shared_layers`` share another
    layer's KV (Gemma 3n/4) and register no spec: they come back as names only."""
    first_shared = _kv_shared_from(view, n)
    prefix = layer_prefix(ctx.architecture)
    names = [f"{prefix}.layers.{i}.self_attn.attn" for i in range(n)]
    layers = [Built(names[i], spec_of(i), i) for i in range(min(first_shared, n))]
    return layers, names[first_shared:]


def build_gemma4(view: HFView, ctx: Context) -> FamilyResult:
    """Gemma 4 (reference §12.7): sliding layers use ``head_dim``/``num_key_value_heads`` and
    ``sliding_window`` (default 512); full layers use ``global_head_dim`` (default 512) and,
    only with ``attention_k_eq_v``, ``num_global_key_value_heads``; K and V are both cached."""
    n = _n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    total_kv = view.int("num_key_value_heads")
    kv_sw = kv_heads_per_rank(view, ctx, total_kv)
    hd = view.int("head_dim", 256)
    # transformers pops these two into per_layer_config, so read them raw.
    g_hd = view.check_int("global_head_dim", view.raw.get("global_head_dim", 512))
    g_kv_total = total_kv
    g_key = "num_key_value_heads"
    if view.get("attention_k_eq_v", False) and view.raw.get("num_global_key_value_heads") is not None:
        g_kv_total = view.check_int("num_global_key_value_heads", view.raw["num_global_key_value_heads"])
        g_key = "num_global_key_value_heads"
    kv_full = kv_heads_per_rank(view, ctx, g_kv_total, g_key)
    lt = layer_types(view, n, {SLIDING, FULL}) or [SLIDING if (i + 1) % 6 else FULL for i in range(n)]
    w = None if ctx.disable_sliding_window else window_value(view)
    if w is None and not ctx.disable_sliding_window and "sliding_window" not in view.raw:
        w = 512
    layers, shared = _gemma_layers(
        view, ctx, n,
        lambda i: attn_spec(ctx, num_kv_heads=kv_sw, head_size=hd, window=w) if lt[i] == SLIDING
        else attn_spec(ctx, num_kv_heads=kv_full, head_size=g_hd),
    )
    n_sw = sum(1 for t in lt[:n] if t == SLIDING)
    ctx.notes.append(
        f"gemma4: {n_sw} sliding ({kv_sw} KV x {hd}, window {w}) + {n - n_sw} full "
        f"({kv_full} KV x global_head_dim {g_hd}, from {g_key})"
    )
    return FamilyResult(layers, shared, model_window=model_wide_window(view, ctx), num_hidden_layers=n)


# ----------------------------------------------------------------- Llama / Mistral / Phi-3 / drafters

def llama_layers(
    view: HFView, ctx: Context, *, start: int = 0, inherited_window: int | None = None,
    prefix: str | None = None, layer_index_base: int | None = None,
) -> tuple[list[Built], int | None]:
    """vllm/model_executor/models/llama.py: with ``layer_types``, entry
    ``[layer_idx - start]`` decides (``sliding_attention`` → the config's ``sliding_window``);
    otherwise the layer falls back to ``cache_config.sliding_window``. Drafter layers are
    numbered from ``start`` (the target's layer count)."""
    n = _n_layers(view)
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", heads))
    hd = head_size(view)
    lt = layer_types(view, n, {SLIDING, FULL})
    own_w = None if ctx.disable_sliding_window else window_value(view)
    prefix = prefix or layer_prefix(ctx.architecture)
    out = []
    for i in range(n):
        per_layer = own_w if (lt is not None and lt[i] == SLIDING) else None
        w = per_layer if per_layer is not None else inherited_window
        idx = start + i
        out.append(Built(f"{prefix}.layers.{idx}.self_attn.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=w),
                         idx if layer_index_base is None else layer_index_base))
    return out, own_w


def build_llama(view: HFView, ctx: Context) -> FamilyResult:
    n = _n_layers(view)
    window = model_wide_window(view, ctx)
    layers, _ = llama_layers(view, ctx, inherited_window=window)
    n_sw = sum(1 for b in layers if isinstance(b.spec, SlidingWindowSpec))
    if window is not None:
        ctx.notes.append(f"{ctx.model_type}: no per-layer layer_types, model-wide sliding_window {window} on every layer")
    elif n_sw:
        ctx.notes.append(f"{ctx.model_type}: layer_types gives {n_sw} sliding + {n - n_sw} full")
    else:
        ctx.notes.append(f"{ctx.model_type}: no sliding window, {plural(n, 'full layer')}")
    return FamilyResult(layers, model_window=window, num_hidden_layers=n)


# ----------------------------------------------------------------- Qwen2 / Qwen3

QWEN2_SOME_BUT_NOT_ALL = (
    "Sliding window for some but all layers is not supported. This model uses sliding window but "
    "`max_window_layers` = {} is less than `num_hidden_layers` = {}. Please open an issue to discuss this feature."
)


def build_qwen2(view: HFView, ctx: Context) -> FamilyResult:
    """Qwen2/Qwen3 (+MoE): transformers keeps ``sliding_window`` only with
    ``use_sliding_window`` and types layers ``i >= max_window_layers`` as sliding; vLLM asserts
    the result is not interleaved unless ``max_window_layers == num_hidden_layers`` (reference
    §7.2, §12.8). Qwen2 head size is ``hidden_size // num_attention_heads`` (``head_dim`` is
    ignored); Qwen3 uses ``head_dim``."""
    n = _n_layers(view)
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", heads))
    is_qwen2 = ctx.model_type.startswith("qwen2")
    hd = view.int("hidden_size") // heads if is_qwen2 else head_size(view)
    use_sw = bool(view.get("use_sliding_window", False))
    w = window_value(view) if use_sw else None  # Qwen2Config: sliding_window = None unless use_sliding_window
    lt = layer_types(view, n, {SLIDING, FULL})
    if lt is None:  # Qwen2Config's derivation
        mwl = view.int("max_window_layers", n, minimum=0)
        lt = [SLIDING if (w is not None and i >= mwl) else FULL for i in range(n)]
    if len(set(lt[:n])) > 1:
        mwl = view.get("max_window_layers", None)
        if mwl != n:
            raise ConfigError(
                view.path, view.field("max_window_layers"), QWEN2_SOME_BUT_NOT_ALL.format(mwl, n),
                "vLLM refuses it; set use_sliding_window false (or max_window_layers 0 for all layers sliding)",
            )
    if ctx.disable_sliding_window:
        w = None
    window = w if all(t == SLIDING for t in lt[:n]) else None  # cache_config.sliding_window (§12.1)
    prefix = layer_prefix(ctx.architecture)
    layers = []
    for i in range(n):
        per_layer = w if lt[i] == SLIDING else None
        win = per_layer if per_layer is not None else window
        layers.append(Built(f"{prefix}.layers.{i}.self_attn.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=win), i))
    n_sw = sum(1 for b in layers if isinstance(b.spec, SlidingWindowSpec))
    ctx.notes.append(
        f"{ctx.model_type}: head size {hd}"
        + (" (hidden_size / num_attention_heads; Qwen2 ignores head_dim)" if is_qwen2 else "")
        + f"; {n_sw} sliding + {n - n_sw} full (use_sliding_window={use_sw})"
    )
    return FamilyResult(layers, model_window=window, num_hidden_layers=n)


# ----------------------------------------------------------------- Llama 4

def build_llama4(view: HFView, ctx: Context) -> FamilyResult:
    """vllm/model_executor/models/llama4.py: ``no_rope_layers[i] == 0`` → NoPE global layer →
    Full; other layers → ChunkedLocal(``attention_chunk_size``) when it is set, else Full.
    transformers derives ``no_rope_layers`` from ``no_rope_layer_interval`` (4) when absent."""
    n = _n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads"))
    hd = head_size(view)
    chunk = view.opt_int("attention_chunk_size")
    nope = view.get("no_rope_layers", None)
    if nope is None:
        interval = view.int("no_rope_layer_interval", 4)
        nope = [int((i + 1) % interval != 0) for i in range(n)]
    if not isinstance(nope, (list, tuple)) or len(nope) < n or any(v not in (0, 1) for v in nope[:n]):
        raise ConfigError(view.path, view.field("no_rope_layers"), "expected one 0/1 entry per layer", "fix it")
    prefix = layer_prefix(ctx.architecture)
    layers = [
        Built(f"{prefix}.layers.{i}.self_attn.attn",
              attn_spec(ctx, num_kv_heads=kv, head_size=hd, chunk=chunk if nope[i] != 0 else None), i)
        for i in range(n)
    ]
    n_full = sum(1 for v in nope[:n] if v == 0)
    ctx.notes.append(f"llama4: {n - n_full} chunked-local (chunk {chunk}) + {n_full} full (NoPE layers)")
    return FamilyResult(layers, attention_chunk_size=chunk, num_hidden_layers=n)


# ----------------------------------------------------------------- Mamba state helpers

def ssm_state_dtype(view: HFView, ctx: Context, default: str | None = None) -> str:
    """The recurrent-state dtype: ``mamba_ssm_cache_dtype`` (Nemotron-H; transformers
    default float32) or ``mamba_ssm_dtype`` (Qwen3.5) from the config, else ``default``,
    else the conv dtype (the model dtype: ``mamba_cache_dtype auto``)."""
    from kvplan.units import MODEL_DTYPES

    for key in ("mamba_ssm_cache_dtype", "mamba_ssm_dtype"):
        v = view.get(key, None)
        if v is not None and str(v) != "auto":
            name = MODEL_DTYPES.get(str(v).removeprefix("torch."))
            if name is None:
                raise ConfigError(view.path, view.field(key), f"unknown dtype {v!r}", "use float32, bfloat16 or float16")
            return name
    return default or ctx.model_dtype


def nemotron_h_ssm_dtype(view: HFView, ctx: Context) -> str:
    """Nemotron-H's ssm state dtype as the vLLM release resolves it (``ctx.nemotron_h_ssm_cache_dtype``):
    before 0.13 no config hook ran and the state took the model dtype; from 0.13
    ``NemotronHForCausalLMConfig`` takes the config.json's ``mamba_ssm_cache_dtype``, else its
    own default (float16 up to 0.19, float32 from 0.20). Only the config.json's own key is
    read, so the installed transformers' class default never decides."""
    rule = ctx.nemotron_h_ssm_cache_dtype
    if rule == "model":
        return ctx.model_dtype
    raw = view.raw.get("mamba_ssm_cache_dtype")
    if raw is not None and str(raw) != "auto":
        from kvplan.units import MODEL_DTYPES

        name = MODEL_DTYPES.get(str(raw).removeprefix("torch."))
        if name is None:
            raise ConfigError(view.path, view.field("mamba_ssm_cache_dtype"), f"unknown dtype {raw!r}",
                              "use float32, bfloat16 or float16")
        return name
    return rule


def mamba_chunk_size(view: HFView) -> int | None:
    """``ModelConfig.get_mamba_chunk_size``: ``mamba_chunk_size``, else ``chunk_size``."""
    for key in ("mamba_chunk_size", "chunk_size"):
        v = view.opt_int(key)
        if v is not None:
            return v
    return None


# ----------------------------------------------------------------- Qwen3-Next / Qwen3.5

def gdn_spec(view: HFView, ctx: Context) -> MambaSpec:
    """Gated DeltaNet state (reference §7.7): conv ``(K - 1 + num_spec, (2·k_heads·k_dim +
    v_heads·v_dim)/tp)``, ssm ``(v_heads/tp, v_dim, k_dim)``; conv in the model dtype, ssm in
    ``mamba_ssm_dtype`` when the config sets it (Qwen3.5: float32, §12.5)."""
    k_heads = view.int("linear_num_key_heads")
    v_heads = view.int("linear_num_value_heads")
    k_dim = view.int("linear_key_head_dim")
    v_dim = view.int("linear_value_head_dim")
    kernel = view.int("linear_conv_kernel_dim")
    split(view, ctx, k_heads, "linear_num_key_heads")
    conv_dim = split(view, ctx, 2 * k_heads * k_dim + v_heads * v_dim, "linear_num_key_heads")
    conv = (kernel - 1 + ctx.num_spec, conv_dim)
    ssm = (split(view, ctx, v_heads, "linear_num_value_heads"), v_dim, k_dim)
    return MambaSpec(
        block_size=ctx.block_size, shapes=(conv, ssm), dtypes=(ctx.model_dtype, ssm_state_dtype(view, ctx)),
        mamba_type="gdn", num_speculative_blocks=ctx.num_spec,
    )


def build_gdn(view: HFView, ctx: Context) -> FamilyResult:
    """Qwen3-Next / Qwen3.5: ``layer_types`` (transformers derives it from
    ``full_attention_interval``): ``linear_attention`` → GDN MambaSpec, ``full_attention`` → Full."""
    n = _n_layers(view)
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads"))
    hd = head_size(view)
    lt = layer_types(view, n, {"linear_attention", FULL})
    if lt is None:
        interval = view.int("full_attention_interval", 4)
        lt = [FULL if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    prefix = layer_prefix(ctx.architecture)
    layers = []
    for i in range(n):
        if lt[i] == "linear_attention":
            layers.append(Built(f"{prefix}.layers.{i}.linear_attn", gdn_spec(view, ctx), i))
        else:
            layers.append(Built(f"{prefix}.layers.{i}.self_attn.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd), i))
    n_lin = sum(1 for t in lt[:n] if t == "linear_attention")
    ssm_dtype = ssm_state_dtype(view, ctx)
    ctx.notes.append(
        f"{ctx.model_type}: {n_lin} gated-delta-net (conv {ctx.model_dtype}, ssm {ssm_dtype}) + {n - n_lin} full "
        f"({kv} KV x {hd} per rank)"
    )
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


def build_kimi_linear(view: HFView, ctx: Context) -> FamilyResult:
    """Kimi-Linear (vLLM 0.34.0 ``kimi_k3/nvidia/model.py``, ``KimiLinearConfig``): layer ``i`` is KDA
    when ``i + 1`` is in ``linear_attn_config.kda_layers`` (1-based), else MLA. KDA state
    (``MambaStateShapeCalculator.kda_state_shape``): conv ``(K - 1 + num_spec, 3·heads·head_dim/tp)``
    in the model dtype, recurrent ``(heads/tp, head_dim, head_dim)`` in float32
    (``kda_state_dtype``, ``mamba_ssm_cache_dtype`` auto); MLA: the latent cache
    ``kv_lora_rank + qk_rope_head_dim``, one KV head. Kimi-K3.1's DSA (``dsa_config``) and the
    full-rank-gate KDA (``use_full_rank_gate``) are other classes: refused."""
    n = _n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    lac = view.get("linear_attn_config", None)
    if not isinstance(lac, dict) or not isinstance(lac.get("kda_layers"), list):
        raise ConfigError(view.path, view.field("linear_attn_config"), "required key is missing or not an object",
                          "give linear_attn_config with kda_layers, num_heads, head_dim, short_conv_kernel_size")
    if view.get("dsa_config", None) is not None or lac.get("use_full_rank_gate"):
        raise UnsupportedError(f"{view.path}: Kimi-Linear with dsa_config or use_full_rank_gate (Kimi-K3's layers) "
                               "is not modelled; kvplan refuses rather than approximating it")
    heads, hd, kernel = (int(lac[k]) for k in ("num_heads", "head_dim", "short_conv_kernel_size"))
    kda = MambaSpec(block_size=ctx.block_size,
                    shapes=((kernel - 1 + ctx.num_spec, split(view, ctx, 3 * heads * hd, "linear_attn_config")),
                            (split(view, ctx, heads, "linear_attn_config"), hd, hd)),
                    dtypes=(ctx.model_dtype, "float32"), mamba_type="gdn", num_speculative_blocks=ctx.num_spec)
    latent = view.int("kv_lora_rank") + view.int("qk_rope_head_dim")
    mla = MLAAttentionSpec(block_size=ctx.block_size, num_kv_heads=1, head_size=latent, dtype=ctx.cache_dtype,
                           head_size_v=0, cache_dtype_str=ctx.cache_dtype_str)
    kda_ids = {int(x) - 1 for x in lac["kda_layers"]}
    prefix = layer_prefix(ctx.architecture)
    layers = [Built(f"{prefix}.layers.{i}.self_attn", kda if i in kda_ids else mla, i) for i in range(n)]
    n_kda = sum(1 for i in range(n) if i in kda_ids)
    ctx.notes.append(f"kimi_linear: {n_kda} KDA (conv {ctx.model_dtype}, recurrent float32) + {n - n_kda} MLA "
                     f"(latent {latent})")
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


# ----------------------------------------------------------------- Nemotron-H, Jamba

def mamba2_spec(view: HFView, ctx: Context, *, heads: int, head_dim: int, n_groups: int, state: int, kernel: int,
                intermediate: int, ssm_dtype: str) -> MambaSpec:
    """``MambaStateShapeCalculator.mamba2_state_shape``: when ``n_groups % tp != 0`` vLLM adds
    ``tp - n_groups`` extra groups so every rank holds the groups its heads need
    (``extra_groups_for_head_shards``); conv ``(K - 1 + num_spec, (I + 2·g'·d_state)/tp)``,
    ssm ``(heads/tp, head_dim, d_state)``."""
    g = n_groups if n_groups % ctx.tp == 0 else n_groups + (ctx.tp - n_groups)
    conv = (kernel - 1 + ctx.num_spec, split(view, ctx, intermediate + 2 * g * state, "n_groups"))
    ssm = (split(view, ctx, heads, "mamba_num_heads"), head_dim, state)
    return MambaSpec(
        block_size=ctx.block_size, shapes=(conv, ssm), dtypes=(ctx.model_dtype, ssm_dtype),
        mamba_type="mamba2", num_speculative_blocks=ctx.num_spec,
    )


def build_nemotron_h(view: HFView, ctx: Context) -> FamilyResult:
    """Nemotron-H: ``hybrid_override_pattern`` ``M`` = Mamba2, ``*`` = attention, ``-`` = MLP,
    ``E`` = MoE (no cache). Attention ``head_dim`` defaults to 128 (transformers; §12.11);
    the ssm state is ``mamba_ssm_cache_dtype``, float32 by transformers' default (§12.5)."""
    n = _n_layers(view)
    pattern = view.raw.get("hybrid_override_pattern")
    if pattern is None and view.obj is not None:
        try:
            pattern = view.obj.hybrid_override_pattern
        except Exception:
            pattern = None
    if not isinstance(pattern, str):
        raise ConfigError(view.path, view.field("hybrid_override_pattern"), "required key is missing or not a string",
                          "give one character per layer: M (Mamba2), * (attention), - (MLP), E (MoE)")
    if len(pattern) != n:
        raise ConfigError(view.path, view.field("hybrid_override_pattern"),
                          f"has {len(pattern)} characters for num_hidden_layers {n}", "give one character per layer")
    bad = sorted(set(pattern) - set("M*-E"))
    if bad:
        raise ConfigError(view.path, view.field("hybrid_override_pattern"), f"unknown block type {bad[0]!r}",
                          "use M (Mamba2), * (attention), - (MLP), E (MoE)")
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads"))
    hd = view.opt_int("head_dim")
    if hd is None:
        hd = 128
    ahd = view.raw.get("attention_head_dim")
    if ahd is not None and ahd != hd:
        ctx.warnings.append(f"{view.path}: attention_head_dim {ahd} differs from head_dim {hd}; vLLM uses head_dim")
    m_heads = view.int("mamba_num_heads")
    m_hd = view.int("mamba_head_dim")
    ssm_dtype = nemotron_h_ssm_dtype(view, ctx)
    spec = None
    prefix = layer_prefix(ctx.architecture)
    layers = []
    for i, c in enumerate(pattern):
        if c == "M":
            spec = spec or mamba2_spec(
                view, ctx, heads=m_heads, head_dim=m_hd, n_groups=view.int("n_groups"), state=view.int("ssm_state_size"),
                kernel=view.int("conv_kernel"), intermediate=m_heads * m_hd, ssm_dtype=ssm_dtype,
            )
            layers.append(Built(f"{prefix}.layers.{i}.mixer", spec, i))
        elif c == "*":
            layers.append(Built(f"{prefix}.layers.{i}.mixer.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd), i))
    ctx.notes.append(
        f"nemotron_h: {pattern.count('M')} Mamba2 (ssm {ssm_dtype}) + {pattern.count('*')} attention "
        f"({kv} KV x {hd}); {pattern.count('-') + pattern.count('E')} MLP/MoE blocks have no cache"
    )
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


def build_jamba(view: HFView, ctx: Context) -> FamilyResult:
    """Jamba: layer ``i`` is attention iff ``i % attn_layer_period == attn_layer_offset``, else
    Mamba1: conv ``(d_conv - 1, I/tp)``, ssm ``(I/tp, d_state)`` with ``I = mamba_expand ·
    hidden_size`` (JambaConfig defaults: period 8, offset 4, expand 2, d_state 16, d_conv 4)."""
    n = _n_layers(view)
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", heads))
    hd = view.int("hidden_size") // heads
    period = view.int("attn_layer_period", 8)
    offset = view.int("attn_layer_offset", 4, minimum=0)
    inter = view.int("mamba_expand", 2) * view.int("hidden_size")
    per_rank = split(view, ctx, inter, "mamba_expand")
    spec = MambaSpec(
        block_size=ctx.block_size,
        shapes=((view.int("mamba_d_conv", 4) - 1, per_rank), (per_rank, view.int("mamba_d_state", 16))),
        dtypes=(ctx.model_dtype, ssm_state_dtype(view, ctx)), mamba_type="mamba1", num_speculative_blocks=ctx.num_spec,
    )
    prefix = layer_prefix(ctx.architecture)
    layers = []
    for i in range(n):
        if i % period == offset:
            layers.append(Built(f"{prefix}.layers.{i}.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd), i))
        else:
            layers.append(Built(f"{prefix}.layers.{i}.mamba", spec, i))
    n_attn = sum(1 for i in range(n) if i % period == offset)
    ctx.notes.append(f"jamba: {n_attn} attention (period {period}, offset {offset}) + {n - n_attn} Mamba1")
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


# ----------------------------------------------------------------- DeepSeek MLA

INDEXER_QUANT_BLOCK = 128  # fp8 indexer keys carry one 4-byte scale per 128 values


def is_v32(view: HFView, ctx: Context | None = None) -> bool:
    """vLLM's test: ``hasattr(hf_config, "index_topk")`` (the DSA indexer; its KV cache here,
    its weights in ``kvplan.model.weight_rules``)."""
    return view.get("index_topk", None) is not None


def mla_layer(view: HFView, ctx: Context, i: int, prefix: str, *, indexer: bool = True) -> list[Built]:
    """One DeepSeek decoder layer's caches: on V3.2 the indexer ``k_cache`` (MLA spec,
    ``index_head_dim + index_head_dim/128·4`` uint8 bytes per token, no cache_dtype_str) is
    registered before the latent cache (``kv_lora_rank + qk_rope_head_dim``, one KV head,
    no V, ``cache_dtype_str`` = the resolved --kv-cache-dtype). ``indexer`` False: a layer that
    shares the preceding indexer's top-k (``hfconfig.shared_indexer_layers``) registers none."""
    latent = view.int("kv_lora_rank") + view.int("qk_rope_head_dim")
    out = []
    if indexer and is_v32(view, ctx):
        ihd = view.int("index_head_dim")
        out.append(Built(
            f"{prefix}.layers.{i}.self_attn.indexer.k_cache",
            MLAAttentionSpec(block_size=ctx.block_size, num_kv_heads=1, head_size=ihd + ihd // INDEXER_QUANT_BLOCK * 4,
                             dtype="uint8", head_size_v=0, cache_dtype_str=None),
            i,
        ))
    out.append(Built(
        f"{prefix}.layers.{i}.self_attn.attn",
        MLAAttentionSpec(block_size=ctx.block_size, num_kv_heads=1, head_size=latent, dtype=ctx.cache_dtype,
                         head_size_v=0, cache_dtype_str=ctx.cache_dtype_str),
        i,
    ))
    return out


def build_deepseek(view: HFView, ctx: Context) -> FamilyResult:
    """DeepSeek-V2/V3/R1, Kimi-K2 (``kimi_k2`` → DeepseekV3Config, as vLLM registers it) and
    V3.2: every layer MLA (reference §7.2, §12.9)."""
    n = _n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    prefix = layer_prefix(ctx.architecture)
    shared = shared_indexer_layers(view, n)
    layers = [b for i in range(n) for b in mla_layer(view, ctx, i, prefix, indexer=i not in shared)]
    latent = view.int("kv_lora_rank") + view.int("qk_rope_head_dim")
    if is_v32(view, ctx):
        owners = f"{n - len(shared)} of {n} layers" if shared else "per layer"
        ctx.notes.append(
            f"deepseek_v32: {owners} an indexer k_cache ({view.int('index_head_dim')} + 4 scale bytes, uint8) "
            f"registered before the MLA latent cache ({latent}); the two specs differ, so vLLM forms one "
            "uniform-type group"
            + (f"; {len(shared)} layers share the preceding indexer's top-k (indexer_types / index_topk_freq)"
               if shared else "")
        )
    else:
        ctx.notes.append(f"{ctx.model_type}: {n} MLA layers, latent {latent} = kv_lora_rank + qk_rope_head_dim, 1 KV head")
    return FamilyResult(layers, num_hidden_layers=n)


# ----------------------------------------------------------------- MiMo-V2-Flash

def build_mimo_v2_flash(view: HFView, ctx: Context) -> FamilyResult:
    """MiMo-V2-Flash (reference §12.6): ``hybrid_layer_pattern[i] == 1`` → sliding with window
    ``sliding_window_size`` (128; transformers rewrites ``sliding_window`` to 129), heads
    ``swa_num_key_value_heads``, ``swa_head_dim``/``swa_v_head_dim``; ``0`` → full with
    ``num_key_value_heads``, ``head_dim``/``v_head_dim``. vLLM drops ``attention_chunk_size``."""
    n = _n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    pattern = view.raw.get("hybrid_layer_pattern")
    if not isinstance(pattern, list) or len(pattern) < n or any(p not in (0, 1) for p in pattern[:n]):
        raise ConfigError(view.path, view.field("hybrid_layer_pattern"), "expected one 0 (full) / 1 (sliding) entry per layer",
                          "fix it")
    kv_full = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads"))
    kv_sw = kv_heads_per_rank(view, ctx, view.int("swa_num_key_value_heads", view.int("num_key_value_heads")),
                              "swa_num_key_value_heads")
    hd, hv = view.int("head_dim"), view.int("v_head_dim", view.int("head_dim"))
    swa_hd = view.int("swa_head_dim", hd)
    swa_hv = view.int("swa_v_head_dim", hv)
    w = None if ctx.disable_sliding_window else window_value(view, "sliding_window_size")
    if w is None and not ctx.disable_sliding_window:
        w = window_value(view)
    prefix = layer_prefix(ctx.architecture)
    layers = []
    for i in range(n):
        if pattern[i] == 1 and w is not None:
            spec = attn_spec(ctx, num_kv_heads=kv_sw, head_size=swa_hd, head_size_v=swa_hv, window=w)
        else:
            spec = attn_spec(ctx, num_kv_heads=kv_full, head_size=hd, head_size_v=hv)
        layers.append(Built(f"{prefix}.layers.{i}.self_attn.attn", spec, i))
    n_sw = sum(pattern[:n])
    ctx.notes.append(
        f"mimo_v2_flash: {n_sw} sliding (window {w}, {kv_sw} KV x {swa_hd}/{swa_hv}) + {n - n_sw} full "
        f"({kv_full} KV x {hd}/{hv}); attention_chunk_size is ignored as vLLM does"
    )
    return FamilyResult(layers, num_hidden_layers=n)


# ----------------------------------------------------------------- Whisper

def build_whisper(view: HFView, ctx: Context) -> FamilyResult:
    """Whisper: encoder self-attention registers no cache (encoder-only); each decoder layer
    registers its self-attention (Full) then its cross-attention (CrossAttentionSpec), both
    ``decoder_attention_heads`` heads of ``d_model / decoder_attention_heads``."""
    n = view.int("decoder_layers")
    heads = view.int("decoder_attention_heads")
    check_attention_heads(view, ctx, heads, "decoder_attention_heads")
    kv = kv_heads_per_rank(view, ctx, heads, "decoder_attention_heads")
    hd = view.int("d_model") // heads
    layers = []
    for i in range(n):
        layers.append(Built(f"model.decoder.layers.{i}.self_attn.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd), i))
        layers.append(Built(
            f"model.decoder.layers.{i}.encoder_attn.attn",
            CrossAttentionSpec(block_size=ctx.block_size, num_kv_heads=kv, head_size=hd, dtype=ctx.cache_dtype), i,
        ))
    ctx.notes.append(f"whisper: {plural(n, 'decoder layer')}, each a self-attention (full) and a cross-attention cache")
    return FamilyResult(layers, num_hidden_layers=n)


# DeepSeek-V4's cache block: the DEEPSEEK_V4_INDEXER backend's only kernel block size (vLLM 0.34.0
# v1/attention/backends/mla/indexer.py lines 303-305: "Block sizes count uncompressed tokens: C4 indexer
# pages hold 64 rows"); the compressed latent and indexer caches take cache_config.block_size
DSV4_BLOCK_SIZE = 256
DSV4_SWA_BLOCK_SIZE = 64  # DeepseekV4SWACache's block_size default (v1/attention/backends/mla/sparse_swa.py line 85)
DSV4_PACKED_STATE_BYTES = 584  # fp8_ds_mla: 448 B NoPE + 128 B RoPE + 8 B scale (attention.py lines 837-839)
DSV4_FP8_DS_MLA_ALIGNMENT = 576  # the fp8_ds_mla page's padding multiple (attention.py line 834)


def deepseek_v4_swa_spec(view: HFView) -> SlidingWindowMLASpec:
    """``attn.swa_cache`` of a DeepSeek-V4 decoder layer (DeepseekV4SWACache.get_kv_cache_spec,
    v1/attention/backends/mla/sparse_swa.py 0.34.0 lines 120-147): block 64, ``sliding_window``, 584 B a
    token in fp8_ds_mla, pages padded to 576 B. The MTP and DSpark layers own only this cache."""
    return SlidingWindowMLASpec(block_size=DSV4_SWA_BLOCK_SIZE, num_kv_heads=1, head_size=view.int("head_dim"),
                                dtype="uint8", sliding_window=view.int("sliding_window"), cache_dtype_str="fp8_ds_mla",
                                state_content_bytes=DSV4_PACKED_STATE_BYTES, alignment=DSV4_FP8_DS_MLA_ALIGNMENT,
                                model_version="deepseek_v4")


# DSparkDeepseekV4Model's stage count without n_mtp_layers (models/deepseek_v4/nvidia/dspark.py 0.34.0 line 106)
DSV4_DSPARK_DEFAULT_LAYERS = 3


def dspark_layers(view: HFView, family: str, target_layers: int, last_index: int) -> list[Built]:
    """The DeepSeek-V4 DSpark drafter vLLM 0.34.0 builds from the target's own checkpoint
    (``DSparkSpeculatorConfig.adapt_draft_model_config``: the target config as ``DSparkDraftModel``):
    ``n_mtp_layers`` (else 3) DeepSeek-V4 decoder layers named ``model.layers.{N+i}``, each past
    ``num_hidden_layers`` so its compress ratio is 1 (attention.py lines 236-243): one ``attn.swa_cache``,
    the target's sliding-window spec (tests/golden/architectures/0.34.0/DSparkDraftModel.json)."""
    if family != "deepseek_v4":
        raise UnsupportedError(f"--speculative-method dspark: vLLM's DSpark drafters for the {family} family are not "
                               "modelled yet; kvplan models DeepSeek-V4's (its stages in the target checkpoint)")
    if view.get("dspark_target_layer_ids") is None:
        raise ConfigError(view.path, view.field("dspark_target_layer_ids"), "missing: vLLM's DeepSeek-V4 DSpark "
                          "drafter reads it (its stages ship in the target checkpoint)", "serve a checkpoint with DSpark "
                          "stages (DeepSeek-V4-Flash-DSpark), or use --speculative-method mtp")
    count = view.int("n_mtp_layers", 0, minimum=0) or DSV4_DSPARK_DEFAULT_LAYERS
    spec = deepseek_v4_swa_spec(view)
    return [Built(f"model.layers.{target_layers + i}.attn.swa_cache", spec, last_index) for i in range(count)]


def dspark_block_size(view: HFView) -> int | None:
    """vLLM's default num_speculative_tokens for dspark (``DSparkSpeculatorConfig.resolve_num_speculative_tokens``,
    v1/worker/gpu/spec_decode/dspark/config.py 0.34.0 lines 82-90): ``block_size``, else ``dspark_block_size``."""
    v = view.opt_int("block_size")
    return v if v is not None else view.opt_int("dspark_block_size")


def build_deepseek_v4(view: HFView, ctx: Context) -> FamilyResult:
    """DeepSeek-V4 as vLLM 0.34.0 registers its caches (vllm/models/deepseek_v4/attention.py,
    compressor.py, v1/attention/backends/mla/sparse_swa.py), per decoder layer ``i`` with
    ``r = compress_ratios[i]``:

    * r == 4: ``attn.indexer.k_cache`` (MLA, head ``index_head_dim`` + 4 scale bytes, uint8, one state
      per 4 tokens) and ``attn.indexer.compressor.state_cache`` (float32 window state of
      2 x 2 x ``index_head_dim``, block 4, window 8);
    * every layer: ``attn.swa_cache`` (sliding-window MLA, block 64, window ``sliding_window``, 584 bytes
      a token in fp8_ds_mla);
    * r > 1: ``attn`` (the compressed latent cache, MLA, one 584-byte state per r tokens) and
      ``attn.compressor.state_cache`` (float32 of 2 x coff x ``head_dim``, coff = 2 for r == 4 else 1;
      block 4 for r == 4, 8 for r == 128; window coff x r).

    Every page is padded to 576 bytes (fp8_ds_mla, the layout vLLM resolves any fp8 or auto cache dtype
    to: attention.py lines 95-130). The MTP layers past ``num_hidden_layers`` belong to the drafter."""
    arch = (view.raw.get("architectures") or ["DeepseekV4ForCausalLM"])[0]
    if ctx.cache_dtype_str not in ("auto", "fp8", "fp8_e4m3", "fp8_ds_mla"):
        raise UnsupportedError(f"{arch}: --kv-cache-dtype {ctx.cache_dtype_str} is not modelled for DeepSeek-V4 "
                               "(kvplan models its fp8_ds_mla layout: auto or fp8)")
    n = view.int("num_hidden_layers")
    ratios = list(view.get("compress_ratios") or [])
    if len(ratios) < n:
        raise ConfigError(ctx.path, view.field("compress_ratios"), f"{len(ratios)} entries for {n} layers",
                          "give one compress ratio per decoder layer")
    head_dim, index_head_dim = view.int("head_dim"), view.int("index_head_dim")
    window = view.int("sliding_window")
    align = DSV4_FP8_DS_MLA_ALIGNMENT
    block = DSV4_BLOCK_SIZE

    def state(bs: int, dim: int, w: int) -> SlidingWindowMLASpec:
        return SlidingWindowMLASpec(block_size=bs, num_kv_heads=1, head_size=dim, dtype="float32",
                                    sliding_window=w, alignment=align)

    swa = deepseek_v4_swa_spec(view)
    indexer = MLAAttentionSpec(block_size=block, num_kv_heads=1, head_size=index_head_dim + 4, head_size_v=0,
                               dtype="uint8", tokens_per_state=4, alignment=align)
    memo: dict = {}
    layers: list[Built] = []
    for i in range(n):
        r = ratios[i]
        p = f"model.layers.{i}.attn"
        if isinstance(r, bool) or r not in (0, 1, 4, 128):
            raise ConfigError(ctx.path, view.field(f"compress_ratios[{i}]"), f"{r!r} is not a ratio vLLM's "
                              "DeepSeek-V4 compressor takes", "use 4 or 128 (1 or 0: no compression)")
        r = int(r)
        if r == 4:
            layers.append(Built(f"{p}.indexer.k_cache", indexer, i))
            layers.append(Built(f"{p}.indexer.compressor.state_cache",
                                memo.setdefault(("ix", r), state(4, 2 * 2 * index_head_dim, 2 * r)), i))
        layers.append(Built(f"{p}.swa_cache", swa, i))
        if r > 1:
            coff = 2 if r == 4 else 1
            latent = memo.setdefault(("mla", r), MLAAttentionSpec(
                block_size=block, num_kv_heads=1, head_size=head_dim, head_size_v=0, dtype="uint8",
                cache_dtype_str="fp8_ds_mla", tokens_per_state=r, state_content_bytes=DSV4_PACKED_STATE_BYTES,
                alignment=align, model_version="deepseek_v4"))
            layers.append(Built(p, latent, i))
            layers.append(Built(f"{p}.compressor.state_cache",
                                memo.setdefault(("c", r), state(4 if r == 4 else 8, 2 * coff * head_dim, coff * r)), i))
    c4 = sum(1 for r in ratios[:n] if int(r) == 4)
    c128 = sum(1 for r in ratios[:n] if int(r) == 128)
    ctx.notes.append(f"deepseek_v4: {plural(n, 'layer')} with a {window}-token sliding-window cache; {c4} compress "
                     f"4 tokens a state (with an indexer), {c128} compress 128; fp8_ds_mla pages padded to {align} B")
    return FamilyResult(layers, num_hidden_layers=n)


# ----------------------------------------------------------------- the generic rule

GENERIC = "generic"
# layer_types entries the generic rule builds, as vLLM's common decoder layers read them
_GENERIC_ATTENTION_TYPES = {SLIDING: "sliding", FULL: "full", "attention": "full", "chunked_attention": "chunked"}


def _generic_kv_heads(view: HFView, heads: int) -> tuple[int, str]:
    """``num_key_value_heads``; without it one head for a multi-query config (``multi_query``),
    else every attention head (multi-head attention), as vLLM's common attention layers read it."""
    kv = view.opt_int("num_key_value_heads")
    if kv is not None:
        return kv, "num_key_value_heads"
    if view.get("multi_query", False) and not view.get("new_decoder_architecture", False):
        return 1, "multi_query"
    return heads, "num_attention_heads"


def build_generic(view: HFView, ctx: Context) -> FamilyResult:
    """The one generic rule, for decoders whose attention layers are vLLM's common ``Attention``
    read the common way: ``num_hidden_layers`` layers of ``num_key_value_heads`` KV heads (else
    ``num_attention_heads``) of ``head_dim`` (else ``hidden_size // num_attention_heads``);
    ``layer_types`` entry ``sliding_attention`` → ``sliding_window``, ``chunked_attention`` →
    ``attention_chunk_size``, ``full_attention``/``attention`` → full; without ``layer_types`` the
    model-wide ``sliding_window`` (``cache_config.sliding_window``, §12.1) on every layer.

    kvplan applies it only to the architectures listed in ``GENERIC_ARCHS``: those whose vLLM
    model class, built on the meta device, registers exactly these layers
    (``tests/golden/architectures/``, checked by ``tests/test_architectures.py``)."""
    n = _n_layers(view)
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv_total, kv_key = _generic_kv_heads(view, heads)
    kv = kv_heads_per_rank(view, ctx, kv_total, kv_key)
    hd = head_size(view)
    w = None if ctx.disable_sliding_window else window_value(view)
    chunk = view.opt_int("attention_chunk_size")
    lt = layer_types(view, n, set(_GENERIC_ATTENTION_TYPES))
    model_window = model_wide_window(view, ctx)
    prefix = layer_prefix(ctx.architecture)
    layers = []
    for i in range(n):
        kind = _GENERIC_ATTENTION_TYPES[lt[i]] if lt is not None else None
        if kind == "sliding":
            spec = attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=w if w is not None else model_window)
        elif kind == "chunked":
            spec = attn_spec(ctx, num_kv_heads=kv, head_size=hd, chunk=chunk)
        elif kind == "full":
            spec = attn_spec(ctx, num_kv_heads=kv, head_size=hd)
        else:
            spec = attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=model_window)
        layers.append(Built(f"{prefix}.layers.{i}.self_attn.attn", spec, i))
    n_sw = sum(1 for b in layers if isinstance(b.spec, SlidingWindowSpec))
    n_ch = sum(1 for b in layers if isinstance(b.spec, ChunkedLocalAttentionSpec))
    ctx.notes.append(
        f"{ctx.architecture}: generic rule (checked against vLLM's model class): {n} attention layers, "
        f"{kv} KV x {hd} per rank" + (f"; {n_sw} sliding (window {w or model_window})" if n_sw else "")
        + (f"; {n_ch} chunked-local (chunk {chunk})" if n_ch else "")
    )
    return FamilyResult(layers, model_window=model_window, attention_chunk_size=chunk if n_ch else None,
                        num_hidden_layers=n)


# ----------------------------------------------------------------- Mamba-only and Mamba2 hybrids

def _mamba1(view: HFView, ctx: Context, *, intermediate: int, state: int, kernel: int, key: str) -> MambaSpec:
    """``MambaStateShapeCalculator.mamba1_state_shape`` (vLLM 0.34.0 mamba_utils.py:179): conv
    ``(K - 1, I/tp)``, ssm ``(I/tp, d_state)``; no speculative rows."""
    per_rank = split(view, ctx, intermediate, key)
    return MambaSpec(block_size=ctx.block_size, shapes=((kernel - 1, per_rank), (per_rank, state)),
                     dtypes=(ctx.model_dtype, ssm_state_dtype(view, ctx)), mamba_type="mamba1",
                     num_speculative_blocks=ctx.num_spec)


def build_mamba(view: HFView, ctx: Context) -> FamilyResult:
    """MambaForCausalLM / FalconMambaForCausalLM (mamba.py): every layer a Mamba1 mixer of
    ``intermediate_size`` channels, ``state_size`` states, ``conv_kernel``; no attention."""
    n = _n_layers(view)
    spec = _mamba1(view, ctx, intermediate=view.int("intermediate_size"), state=view.int("state_size"),
                   kernel=view.int("conv_kernel"), key="intermediate_size")
    layers = [Built(f"backbone.layers.{i}.mixer", spec, i) for i in range(n)]
    ctx.notes.append(f"{ctx.model_type}: {n} Mamba1 layers, no attention")
    return FamilyResult(layers, is_hybrid_mamba=False, num_hidden_layers=n)


def build_mamba2(view: HFView, ctx: Context) -> FamilyResult:
    """Mamba2ForCausalLM (mamba2.py): every layer a Mamba2 mixer, ``I = expand · hidden_size``."""
    n = _n_layers(view)
    heads = view.int("num_heads")
    spec = mamba2_spec(view, ctx, heads=heads, head_dim=view.int("head_dim"), n_groups=view.int("n_groups"),
                       state=view.int("state_size"), kernel=view.int("conv_kernel"),
                       intermediate=view.int("expand") * view.int("hidden_size"), ssm_dtype=ssm_state_dtype(view, ctx))
    layers = [Built(f"backbone.layers.{i}.mixer", spec, i) for i in range(n)]
    ctx.notes.append(f"{ctx.model_type}: {n} Mamba2 layers, no attention")
    return FamilyResult(layers, is_hybrid_mamba=False, num_hidden_layers=n)


def _mamba2_hf(view: HFView, ctx: Context, intermediate: int) -> MambaSpec:
    """A Mamba2 mixer read from the ``mamba_*`` keys (Falcon-H1, Granite-4.0-H)."""
    return mamba2_spec(view, ctx, heads=view.int("mamba_n_heads"), head_dim=view.int("mamba_d_head"),
                       n_groups=view.int("mamba_n_groups"), state=view.int("mamba_d_state"),
                       kernel=view.int("mamba_d_conv"), intermediate=intermediate,
                       ssm_dtype=ssm_state_dtype(view, ctx))


def _plain_attention(view: HFView, ctx: Context, head_dim_key: str = "head_dim") -> KVCacheSpec:
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv_total, kv_key = _generic_kv_heads(view, heads)
    kv = kv_heads_per_rank(view, ctx, kv_total, kv_key)
    hd = view.opt_int(head_dim_key) or view.int("hidden_size") // heads
    return attn_spec(ctx, num_kv_heads=kv, head_size=hd)


def build_falcon_h1(view: HFView, ctx: Context) -> FamilyResult:
    """Falcon-H1 (falcon_h1.py): every decoder layer runs attention and a Mamba2 mixer in
    parallel, both cached; Mamba2 ``I = mamba_d_ssm`` (else ``mamba_expand · hidden_size``)."""
    n = _n_layers(view)
    inter = view.opt_int("mamba_d_ssm") or view.int("mamba_expand") * view.int("hidden_size")
    m = _mamba2_hf(view, ctx, inter)
    a = _plain_attention(view, ctx)
    layers = []
    for i in range(n):
        layers.append(Built(f"model.layers.{i}.self_attn.attn", a, i))
        layers.append(Built(f"model.layers.{i}.mamba", m, i))
    ctx.notes.append(f"falcon_h1: {n} layers, each an attention cache and a Mamba2 state")
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


_MAMBA_LAYER_TYPES = {"mamba", "linear_attention"}


def build_granite_hybrid(view: HFView, ctx: Context) -> FamilyResult:
    """Granite-4.0-H (granitemoehybrid.py): ``layer_types`` entry ``mamba`` (transformers 5 writes
    ``linear_attention``) → Mamba2 with ``I = mamba_expand · hidden_size``, ``attention`` → full."""
    n = _n_layers(view)
    lt = layer_types(view, n, _MAMBA_LAYER_TYPES | {"attention", FULL})
    if lt is None:
        raise ConfigError(view.path, view.field("layer_types"), "required key is missing",
                          "give one entry per layer: mamba or attention")
    m = _mamba2_hf(view, ctx, view.int("mamba_expand") * view.int("hidden_size"))
    a = _plain_attention(view, ctx)
    layers = [Built(f"model.layers.{i}.mixer" if lt[i] in _MAMBA_LAYER_TYPES else f"model.layers.{i}.self_attn.attn",
                    m if lt[i] in _MAMBA_LAYER_TYPES else a, i) for i in range(n)]
    n_m = sum(1 for t in lt[:n] if t in _MAMBA_LAYER_TYPES)
    ctx.notes.append(f"granitemoehybrid: {n_m} Mamba2 + {n - n_m} attention layers")
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


def build_zamba2(view: HFView, ctx: Context) -> FamilyResult:
    """Zamba2 (zamba2.py): every layer has a Mamba2 mixer (``n_mamba_heads`` x ``mamba_headdim``,
    ``mamba_ngroups``, ``I = mamba_expand · hidden_size``); each ``hybrid`` entry of
    ``layers_block_type`` adds a shared-block attention layer (``num_key_value_heads`` x
    ``attention_head_dim``). vLLM registers the attention layers first (``model.attn.{k}``), then
    the mixers."""
    n = _n_layers(view)
    types = view.get("layers_block_type", None)
    if not isinstance(types, (list, tuple)) or len(types) < n:
        raise ConfigError(view.path, view.field("layers_block_type"), "expected one entry per layer",
                          "give mamba / hybrid per layer")
    n_attn = sum(1 for t in types[:n] if t == "hybrid")
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", heads))
    a = attn_spec(ctx, num_kv_heads=kv, head_size=view.int("attention_head_dim"))
    m = mamba2_spec(view, ctx, heads=view.int("n_mamba_heads"), head_dim=view.int("mamba_headdim"),
                    n_groups=view.int("mamba_ngroups"), state=view.int("mamba_d_state"), kernel=view.int("mamba_d_conv"),
                    intermediate=view.int("mamba_expand") * view.int("hidden_size"), ssm_dtype=ssm_state_dtype(view, ctx))
    hybrid_ids = [i for i, t in enumerate(types[:n]) if t == "hybrid"]
    layers = [Built(f"model.attn.{k}", a, hybrid_ids[k]) for k in range(n_attn)]
    layers += [Built(f"model.layers.{i}.mamba", m, i) for i in range(n)]
    ctx.notes.append(f"zamba2: {n} Mamba2 mixers + {n_attn} shared-block attention layers ({kv} KV x "
                     f"{view.int('attention_head_dim')})")
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


def build_lfm(view: HFView, ctx: Context) -> FamilyResult:
    """LFM2 / LFM2-MoE / LFM3 (lfm2.py, lfm2_moe.py, lfm3.py; LFM2's ``full_attn_idxs`` become
    ``layer_types`` in transformers' ``Lfm2Config``): ``layer_types`` entry ``conv`` → a ShortConv
    state, ``MambaStateShapeCalculator.short_conv_state_shape``: one conv state
    ``(conv_L_cache - 1 + num_spec, hidden_size/tp)`` in the model dtype; ``full_attention`` → full,
    ``sliding_attention`` → ``sliding_window``."""
    n = _n_layers(view)
    lt = layer_types(view, n, {"conv", FULL, SLIDING})
    if lt is None:
        raise ConfigError(view.path, view.field("layer_types"), "required key is missing",
                          "give one entry per layer: conv, full_attention or sliding_attention")
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", heads))
    hd = head_size(view)
    w = None if ctx.disable_sliding_window else window_value(view)
    conv = MambaSpec(block_size=ctx.block_size,
                     shapes=((view.int("conv_L_cache") - 1 + ctx.num_spec, split(view, ctx, view.int("hidden_size"),
                                                                                  "hidden_size")),),
                     dtypes=(ctx.model_dtype,), mamba_type="short_conv", num_speculative_blocks=ctx.num_spec)
    prefix = layer_prefix(ctx.architecture)
    layers = []
    for i in range(n):
        if lt[i] == "conv":
            layers.append(Built(f"{prefix}.layers.{i}.short_conv", conv, i))
        else:
            layers.append(Built(f"{prefix}.layers.{i}.self_attn.attn",
                                attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=w if lt[i] == SLIDING else None), i))
    n_conv = sum(1 for t in lt[:n] if t == "conv")
    n_sw = sum(1 for t in lt[:n] if t == SLIDING)
    ctx.notes.append(f"{ctx.model_type}: {n_conv} short-conv + {n_sw} sliding (window {w}) + {n - n_conv - n_sw} full")
    return FamilyResult(layers, model_window=model_wide_window(view, ctx), is_hybrid_mamba=True,
                        mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


# MTP heads that are more decoder layers of the target's own full attention, numbered after its layers:
# vLLM's mimo_mtp.py builds ``num_nextn_predict_layers`` Qwen2 decoder layers from ``num_hidden_layers`` on
# (checked: tests/golden/architectures/0.34.0/MiMoMTPModel.json).
MTP_DECODER_ARCHS = frozenset({"MiMoForCausalLM"})


def mtp_count(view: HFView, family: str, architecture: str | None = None) -> int:
    """How many MTP layers vLLM builds: DeepSeek and MiMo ``num_nextn_predict_layers``; Qwen3-Next
    ``num_nextn_predict_layers`` (vLLM's default 1); Qwen3.5 ``mtp_num_hidden_layers``."""
    if family in ("deepseek", "deepseek_v4") or architecture in MTP_DECODER_ARCHS:
        return view.int("num_nextn_predict_layers", 0, minimum=0)
    if family == "gdn":
        v = view.get("mtp_num_hidden_layers", None)
        if v is not None:
            return view.check_int("mtp_num_hidden_layers", v, minimum=0)
        return view.int("num_nextn_predict_layers", 1, minimum=0)
    return 0


def eagle_layers(draft_view: HFView, ctx: Context, *, target_layers: int, target_window: int | None,
                 last_index: int) -> list[Built]:
    """EAGLE/EAGLE-3/P-EAGLE Llama layers, named ``model.layers.{N+i}.self_attn.attn``
    (``start_layer_id = N``, the target's layer count). Sliding only when the drafter's own
    ``layer_types`` says so (window from the drafter config), else the target's model-wide
    window (``cache_config.sliding_window``: an all-sliding target such as Mistral-7B-v0.1)."""
    layers, _ = llama_layers(
        draft_view, ctx, start=target_layers, inherited_window=target_window, prefix="model",
        layer_index_base=last_index,
    )
    return layers


def draft_model_layers(draft_view: HFView, dctx: Context, family: str, last_index: int) -> FamilyResult:
    """A separate draft model: its own family rules and its own window, the target's block
    size and cache dtype. vLLM builds it as its own module tree; kvplan prefixes its names
    with ``draft_model.`` so they cannot collide with the target's (the exact prefix vLLM
    uses here is not verified)."""
    res = FAMILIES[family].layers(draft_view, dctx)
    res.layers = [Built(f"draft_model.{b.name}", b.spec, last_index) for b in res.layers]
    res.kv_sharing = [f"draft_model.{n}" for n in res.kv_sharing]
    return res


def mtp_layers(view: HFView, ctx: Context, family: str, target_layers: int, last_index: int,
               architecture: str | None = None) -> list[Built]:
    """MTP layers are target-architecture layers (reference §6):
    DeepSeek: an MLA decoder layer identical to the target's (V3.2: with its indexer), named
    ``model.layers.{N+i}...``; Qwen3-Next/3.5: a ``full_attention`` decoder layer with the
    target's full-attention heads, named ``mtp.layers.{i}.self_attn.attn``; MiMo: the same
    attention named ``model.layers.{N+i}.self_attn.attn``. The target's family rules build them, as vLLM builds
    them from the target's config."""
    count = mtp_count(view, family, architecture)
    out: list[Built] = []
    if architecture in MTP_DECODER_ARCHS:
        spec = full_attention_spec(view, ctx)
        for i in range(count):
            out.append(Built(f"model.layers.{target_layers + i}.self_attn.attn", spec, last_index))
    elif family == "deepseek":
        for i in range(count):
            out += [replace(b, layer_index=last_index) for b in mla_layer(view, ctx, target_layers + i, "model")]
    elif family == "gdn":
        spec = full_attention_spec(view, ctx)
        for i in range(count):
            out.append(Built(f"mtp.layers.{i}.self_attn.attn", spec, last_index))
    elif family == "deepseek_v4":  # DeepSeekV4MTP: a V4 decoder layer past num_hidden_layers, compress ratio 1
        spec = deepseek_v4_swa_spec(view)  # (attention.py 0.34.0 lines 236-243): its swa_cache only
        for i in range(count):
            out.append(Built(f"model.layers.{target_layers + i}.attn.swa_cache", spec, last_index))
    return out


@dataclass(frozen=True)
class Family:
    """One family rule, the one record every layer asks (``family_of`` gives the key): its rules, each
    the function itself.

    ``layers``: the KV layers vLLM registers (this module). ``weights`` / ``mtp_weights``: the weight
    rules (``kvplan.model.weight_rules``) for the decoder and for the MTP layers (None: kvplan has no
    weight count). ``mtp``: the family has MTP layers (``mtp_count`` says how many)."""

    key: str
    layers: Callable[[HFView, Context], FamilyResult]
    weights: Callable[[weight_rules.WeightView, weight_rules.Builder], None] | None = None
    mtp_weights: Callable[[weight_rules.WeightView, weight_rules.Builder, int], None] | None = None

    @property
    def mtp(self) -> bool:
        return self.mtp_weights is not None


FAMILIES: dict[str, Family] = {f.key: f for f in (
    Family("gpt_oss", build_gpt_oss, weight_rules.gpt_oss),
    Family("layer_types", build_layer_types, weight_rules.gemma),
    Family("gemma4", build_gemma4, weight_rules.gemma4),
    Family("llama", build_llama, weight_rules.llama_like),
    Family("qwen2", build_qwen2, weight_rules.llama_like),
    Family("llama4", build_llama4, weight_rules.llama4),
    Family("gdn", build_gdn, weight_rules.gdn, mtp_weights=weight_rules.gdn_mtp),
    Family("nemotron_h", build_nemotron_h, weight_rules.nemotron_h),
    Family("jamba", build_jamba, weight_rules.jamba),
    Family("deepseek", build_deepseek, weight_rules.deepseek, mtp_weights=weight_rules.deepseek_mtp),
    Family("mimo_v2_flash", build_mimo_v2_flash, weight_rules.mimo_v2),
    Family("whisper", build_whisper),
    Family("deepseek_v4", build_deepseek_v4),
    Family(GENERIC, build_generic),
    Family("mamba", build_mamba),
    Family("mamba2", build_mamba2),
    Family("falcon_h1", build_falcon_h1),
    Family("granite_hybrid", build_granite_hybrid),
    Family("zamba2", build_zamba2),
    Family("lfm", build_lfm),
    Family("kimi_linear", build_kimi_linear),
)}
