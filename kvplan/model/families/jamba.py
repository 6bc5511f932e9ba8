"""Jamba (vLLM ``jamba.py``): attention every ``attn_layer_period``, Mamba1 elsewhere, MoE every
``expert_layer_period``."""

from __future__ import annotations

import math

from kvplan.model.families.base import (
    Built, Context, FamilyResult, attn_spec, check_attention_heads, kv_heads_per_rank, layer_prefix, n_layers,
    split,
)
from kvplan.model.families.mamba_state import mamba_chunk_size, ssm_state_dtype
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView
from kvplan.specs import MambaSpec


def build_jamba(view: HFView, ctx: Context) -> FamilyResult:
    """Jamba: layer ``i`` is attention iff ``i % attn_layer_period == attn_layer_offset``, else
    Mamba1: conv ``(d_conv - 1, I/tp)``, ssm ``(I/tp, d_state)`` with ``I = mamba_expand ·
    hidden_size`` (JambaConfig defaults: period 8, offset 4, expand 2, d_state 16, d_conv 4)."""
    n = n_layers(view)
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


def jamba(cfg: WeightView, b: Builder) -> None:
    """Jamba: attention every ``attn_layer_period`` (from ``attn_layer_offset``), Mamba1
    elsewhere; MoE feed-forward every ``expert_layer_period`` (from its offset)."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = H // heads
    a_per, a_off = cfg.int("attn_layer_period", 8), cfg.int("attn_layer_offset", 4, minimum=0)
    e_per, e_off = cfg.int("expert_layer_period", 2), cfg.int("expert_layer_offset", 1, minimum=0)
    E = cfg.int("num_experts", 16)
    inner = cfg.int("mamba_expand", 2) * H
    N, K = cfg.int("mamba_d_state", 16), cfg.int("mamba_d_conv", 4)
    dt_rank = cfg.get("mamba_dt_rank", "auto")
    dt_rank = math.ceil(H / 16) if dt_rank in (None, "auto") else int(dt_rank)
    proj_bias = cfg.flag("mamba_proj_bias")
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        if i % a_per == a_off:
            b.attention(f"{p}.self_attn", H, heads, kv, hd, i)
        else:
            m = f"{p}.mamba"
            b.linear(f"{m}.in_proj", "mixer", 2 * inner, H, i, split="col", bias=proj_bias)
            b.add(f"{m}.conv1d.weight", "mixer", (inner, 1, K), i, shard=0)
            if cfg.flag("mamba_conv_bias", True):
                b.vec(f"{m}.conv1d.bias", "mixer", inner, i, split=True)
            b.linear(f"{m}.x_proj", "mixer", dt_rank + 2 * N, inner, i, split="row")
            b.linear(f"{m}.dt_proj", "mixer", inner, dt_rank, i, split="col", bias=True)
            b.add(f"{m}.A_log", "mixer", (inner, N), i, shard=0)
            b.vec(f"{m}.D", "mixer", inner, i, split=True)
            b.linear(f"{m}.out_proj", "mixer", H, inner, i, split="row", bias=proj_bias)
            b.norm(f"{m}.dt_layernorm", dt_rank, i)
            b.norm(f"{m}.b_layernorm", N, i)
            b.norm(f"{m}.c_layernorm", N, i)
        if E > 1 and i % e_per == e_off:
            b.linear(f"{p}.feed_forward.router", "router", E, H, i, quantizable=False)
            b.experts(f"{p}.feed_forward.experts", E, cfg.int("intermediate_size"), H, i)
        else:
            b.mlp(f"{p}.feed_forward", cfg.int("intermediate_size"), H, i)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.pre_ff_layernorm", H, i)
    b.norm("model.final_layernorm", H, None, stage="last")
    if not cfg.tie():
        b.head("lm_head.weight", V, H)


FAMILY = Family(
    "jamba", build_jamba,
    weights=jamba,
    architectures=("JambaForCausalLM",),
    model_types=("jamba",),
    config_keys=(
        "attn_layer_offset", "attn_layer_period", "expert_layer_offset", "expert_layer_period", "hidden_size",
        "intermediate_size", "mamba_conv_bias", "mamba_d_conv", "mamba_d_state", "mamba_dt_rank", "mamba_expand",
        "mamba_proj_bias", "num_attention_heads", "num_experts", "num_hidden_layers", "num_key_value_heads",
        "vocab_size",
    ),
    hybrid=True,
)
