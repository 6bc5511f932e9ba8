"""MiMo-V2-Flash (vLLM ``mimo_v2_flash.py``): ``hybrid_layer_pattern`` of sliding and full layers of
different heads."""

from __future__ import annotations

from kvplan.errors import ConfigError
from kvplan.model.families.base import (
    Built, Context, FamilyResult, attn_spec, check_attention_heads, kv_heads_per_rank, layer_prefix, n_layers,
    window_value,
)
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView


def build_mimo_v2_flash(view: HFView, ctx: Context) -> FamilyResult:
    """MiMo-V2-Flash (reference §12.6): ``hybrid_layer_pattern[i] == 1`` → sliding with window
    ``sliding_window_size`` (128; transformers rewrites ``sliding_window`` to 129), heads
    ``swa_num_key_value_heads``, ``swa_head_dim``/``swa_v_head_dim``; ``0`` → full with
    ``num_key_value_heads``, ``head_dim``/``v_head_dim``. vLLM drops ``attention_chunk_size``."""
    n = n_layers(view)
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


def mimo_v2(cfg: WeightView, b: Builder) -> None:
    """MiMo-V2-Flash: sliding layers (``hybrid_layer_pattern`` 1) use the ``swa_*`` heads
    and sizes and carry attention sinks; ``moe_layer_freq`` 1 marks MoE layers (sigmoid
    router with a correction bias), 0 a dense MLP."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    raw = cfg.raw
    types = cfg.layer_types()
    if len(types) != n:
        pattern = raw.get("hybrid_layer_pattern") or [0] * n
        types = ["sliding_attention" if x == 1 else "full_attention" for x in pattern]
    freq = raw.get("moe_layer_freq")
    moe = [bool(x) for x in freq] if isinstance(freq, list) else [True] * n
    heads = int(raw["num_attention_heads"])
    bias = bool(raw.get("attention_bias", False))
    E = int(raw.get("n_routed_experts") or 0)
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        sw = types[i] == "sliding_attention"
        if sw:
            h = int(raw.get("swa_num_attention_heads") or heads)
            kv = int(raw.get("swa_num_key_value_heads") or raw["num_key_value_heads"])
            hd = int(raw.get("swa_head_dim") or raw["head_dim"])
            vd = int(raw.get("swa_v_head_dim") or raw.get("v_head_dim") or hd)
        else:
            h, kv = heads, int(raw["num_key_value_heads"])
            hd = int(raw["head_dim"])
            vd = int(raw.get("v_head_dim") or hd)
        b.attention(f"{p}.self_attn", H, h, kv, hd, i, v_head_dim=vd, qkv_bias=bias)
        if (sw and raw.get("add_swa_attention_sink_bias")) or (not sw and raw.get("add_full_attention_sink_bias")):
            b.vec(f"{p}.self_attn.sinks", "attention", h, i, split=True)
        if moe[i] and E:
            b.linear(f"{p}.mlp.gate", "router", E, H, i, quantizable=False)
            b.vec(f"{p}.mlp.gate.e_score_correction_bias", "router", E, i, hf_buffer=True)
            b.experts(f"{p}.mlp.experts", E, int(raw["moe_intermediate_size"]), H, i)
        else:
            b.mlp(f"{p}.mlp", int(raw["intermediate_size"]), H, i)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    b.final(cfg, V, H)


FAMILY = Family(
    "mimo_v2_flash", build_mimo_v2_flash,
    weights=mimo_v2,
    architectures=("MiMoV2FlashForCausalLM",),
    model_types=("mimo_v2_flash",),
    config_keys=(
        "add_full_attention_sink_bias", "add_swa_attention_sink_bias", "attention_bias", "head_dim", "hidden_size",
        "hybrid_layer_pattern", "intermediate_size", "moe_intermediate_size", "moe_layer_freq", "n_routed_experts",
        "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "swa_head_dim", "swa_num_attention_heads", "swa_num_key_value_heads",
        "swa_v_head_dim", "v_head_dim", "vocab_size",
    ),
)
