"""gpt-oss (vLLM ``gpt_oss.py``): alternating sliding/full attention, attention sinks, MXFP4 experts."""

from __future__ import annotations

from kvplan.model.families.base import (
    Built, Context, FamilyResult, attn_spec, check_attention_heads, kv_heads_per_rank, layer_prefix,
    model_wide_window, n_layers, window_value,
)
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView


def build_gpt_oss(view: HFView, ctx: Context) -> FamilyResult:
    """vllm/model_executor/models/gpt_oss.py: ``sliding_window = config.sliding_window if
    layer_idx % 2 == 0 else None``; ``layer_types`` is not read. head_dim from the config
    (GptOssConfig default 64); attention sinks do not change the spec."""
    n = n_layers(view)
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


def gpt_oss(cfg: WeightView, b: Builder) -> None:
    """gpt-oss: biased q/k/v/o, one attention sink per head, a biased router and 32/128
    biased experts with a fused ``gate_up`` (reference: transformers ``modeling_gpt_oss``)."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads, kv, hd = cfg.int("num_attention_heads"), cfg.int("num_key_value_heads"), cfg.head_dim()
    E, inter = cfg.int("num_local_experts"), cfg.int("intermediate_size")
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        b.vec(f"{p}.self_attn.sinks", "attention", heads, i, split=True)
        b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=True, o_bias=True)
        b.linear(f"{p}.mlp.router", "router", E, H, i, bias=True, quantizable=False)
        b.experts(f"{p}.mlp.experts", E, inter, H, i, bias=True)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    b.final(cfg, V, H)


FAMILY = Family(
    "gpt_oss", build_gpt_oss,
    weights=gpt_oss,
    architectures=("GptOssForCausalLM",),
    model_types=("gpt_oss",),
    config_keys=(
        "head_dim", "hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers",
        "num_key_value_heads", "num_local_experts", "vocab_size",
    ),
)
