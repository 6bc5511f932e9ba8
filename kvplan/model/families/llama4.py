"""Llama 4 (vLLM ``llama4.py``): chunked-local attention with NoPE global layers; MoE every
``interleave_moe_layer_step``."""

from __future__ import annotations

from kvplan.errors import ConfigError
from kvplan.model.families.base import (
    Built, Context, FamilyResult, attn_spec, check_attention_heads, head_size, kv_heads_per_rank, layer_prefix,
    n_layers,
)
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView


# the multimodal wrappers whose decoder vLLM builds under ``language_model``
LANGUAGE_MODEL_ARCHS = frozenset(("Llama4ForConditionalGeneration",))


def build_llama4(view: HFView, ctx: Context) -> FamilyResult:
    """vllm/model_executor/models/llama4.py: ``no_rope_layers[i] == 0`` → NoPE global layer →
    Full; other layers → ChunkedLocal(``attention_chunk_size``) when it is set, else Full.
    transformers derives ``no_rope_layers`` from ``no_rope_layer_interval`` (4) when absent."""
    n = n_layers(view)
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
    prefix = layer_prefix(ctx.architecture, LANGUAGE_MODEL_ARCHS)
    layers = [
        Built(f"{prefix}.layers.{i}.self_attn.attn",
              attn_spec(ctx, num_kv_heads=kv, head_size=hd, chunk=chunk if nope[i] != 0 else None), i)
        for i in range(n)
    ]
    n_full = sum(1 for v in nope[:n] if v == 0)
    ctx.notes.append(f"llama4: {n - n_full} chunked-local (chunk {chunk}) + {n_full} full (NoPE layers)")
    return FamilyResult(layers, attention_chunk_size=chunk, num_hidden_layers=n)


def llama4(cfg: WeightView, b: Builder) -> None:
    """Llama 4 text decoder: MoE layers every ``interleave_moe_layer_step`` (experts of
    ``intermediate_size`` plus one shared expert), dense layers of ``intermediate_size_mlp``;
    the q/k norm is a weightless L2 norm."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.head_dim()
    bias = cfg.flag("attention_bias")
    E = cfg.int("num_local_experts")
    step = cfg.opt_int("interleave_moe_layer_step", minimum=0) or 1
    moe_layers = cfg.get("moe_layers", None)
    moe = set(moe_layers) if moe_layers is not None else {i for i in range(n) if (i + 1) % step == 0}
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=bias, o_bias=bias)
        if i in moe:
            b.linear(f"{p}.feed_forward.router", "router", E, H, i, quantizable=False)
            b.experts(f"{p}.feed_forward.experts", E, cfg.int("intermediate_size"), H, i)
            b.mlp(f"{p}.feed_forward.shared_expert", cfg.int("intermediate_size"), H, i)
        else:
            b.mlp(f"{p}.feed_forward", cfg.int("intermediate_size_mlp"), H, i)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    b.final(cfg, V, H)


FAMILY = Family(
    "llama4", build_llama4,
    weights=llama4,
    architectures=("Llama4ForCausalLM", "Llama4ForConditionalGeneration"),
    model_types=("llama4", "llama4_text"),
    config_keys=(
        "attention_bias", "attention_chunk_size", "hidden_size", "interleave_moe_layer_step", "intermediate_size",
        "intermediate_size_mlp", "moe_layers", "no_rope_layer_interval", "no_rope_layers", "num_attention_heads",
        "num_hidden_layers", "num_key_value_heads", "num_local_experts", "vocab_size",
    ),
    language_model_archs=LANGUAGE_MODEL_ARCHS,
)
