"""Whisper (vLLM ``whisper.py``): decoder self-attention and cross-attention caches."""

from __future__ import annotations

from kvplan.model.families.base import Built, Context, FamilyResult, attn_spec, check_attention_heads, kv_heads_per_rank
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView
from kvplan.specs import CrossAttentionSpec
from kvplan.units import plural


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


FAMILY = Family(
    "whisper", build_whisper,
    architectures=("WhisperForConditionalGeneration",),
    model_types=("whisper",),
    config_keys=("d_model", "decoder_attention_heads", "decoder_layers"),
)
