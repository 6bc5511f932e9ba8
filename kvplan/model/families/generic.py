"""The generic rule: decoders whose attention is vLLM's common ``Attention`` read the common way, for the
architectures whose vLLM 0.34.0 class registers exactly its layers (``GENERIC_ARCHS``)."""

from __future__ import annotations

from kvplan.model.families.base import (
    FULL, SLIDING, Built, Context, FamilyResult, attn_spec, check_attention_heads, generic_kv_heads, head_size,
    kv_heads_per_rank, layer_prefix, layer_types, model_wide_window, n_layers, window_value,
)
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView
from kvplan.specs import ChunkedLocalAttentionSpec, SlidingWindowSpec


GENERIC = "generic"


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


# layer_types entries the generic rule builds, as vLLM's common decoder layers read them
_GENERIC_ATTENTION_TYPES = {SLIDING: "sliding", FULL: "full", "attention": "full", "chunked_attention": "chunked"}


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
    n = n_layers(view)
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv_total, kv_key = generic_kv_heads(view, heads)
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


FAMILY = Family(
    "generic", build_generic,
    architectures=tuple(sorted(GENERIC_ARCHS)),
    config_keys=("attention_chunk_size", "num_attention_heads"),
)
