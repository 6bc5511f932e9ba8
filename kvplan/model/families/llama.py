"""Llama, Mistral, Mixtral, Phi-3, MiniMax-M2 and the EAGLE heads (vLLM ``llama.py``, ``llama_eagle*.py``)."""

from __future__ import annotations

from kvplan.model.families.base import (
    FULL, SLIDING, Built, Context, FamilyResult, attn_spec, check_attention_heads, head_size, kv_heads_per_rank,
    layer_prefix, layer_types, model_wide_window, n_layers, window_value,
)
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView
from kvplan.specs import SlidingWindowSpec
from kvplan.units import plural


# EAGLE-style draft heads: Llama layers named after the target's (reference §6).
EAGLE3_ARCHS = frozenset({
    "LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "PEagleDraftModel", "PeagleLlamaForCausalLM",
    "Eagle3Qwen2_5vlForCausalLM", "Eagle3Qwen3vlForCausalLM", "Eagle3Qwen3ForCausalLM",
})
EAGLE1_ARCHS = frozenset({"EagleLlamaForCausalLM", "LlamaForCausalLMEagle", "EagleLlama4ForCausalLM",
                          "EagleMiniCPMForCausalLM"})


def llama_layers(
    view: HFView, ctx: Context, *, start: int = 0, inherited_window: int | None = None,
    prefix: str | None = None, layer_index_base: int | None = None,
) -> tuple[list[Built], int | None]:
    """vllm/model_executor/models/llama.py: with ``layer_types``, entry
    ``[layer_idx - start]`` decides (``sliding_attention`` → the config's ``sliding_window``);
    otherwise the layer falls back to ``cache_config.sliding_window``. Drafter layers are
    numbered from ``start`` (the target's layer count)."""
    n = n_layers(view)
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
    n = n_layers(view)
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


def qwen_moe_layers(cfg: WeightView, n: int) -> set[int]:
    E = cfg.opt_int("num_experts", minimum=0) or 0
    if not E:
        return set()
    step = cfg.opt_int("decoder_sparse_step", minimum=0) or 1
    only_mlp = set(cfg.get("mlp_only_layers", None) or [])
    return {i for i in range(n) if i not in only_mlp and (i + 1) % step == 0}


def llama_like(cfg: WeightView, b: Builder) -> None:
    """Llama, Mistral, Mixtral, Phi-3, MiniMax-M2, Qwen2/Qwen3 (+MoE) and EAGLE-free Llama
    drafters used as draft models: ``q/k/v/o`` attention (optional biases and q/k norms),
    a gated MLP or routed experts, two RMSNorms per layer."""
    mt = cfg.text_model_type
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.head_dim()
    qkv_bias = mt in ("qwen2", "qwen2_moe") or cfg.flag("attention_bias")
    o_bias = cfg.flag("attention_bias") and mt not in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe")
    mlp_bias = cfg.flag("mlp_bias")
    b.embed("model.embed_tokens.weight", V, H)
    moe_layers: set[int] = set()
    E = 0
    if mt in ("mixtral", "minimax_m2"):
        E = cfg.int("num_local_experts")
        moe_layers = set(range(n))
    elif mt in ("qwen2_moe", "qwen3_moe"):
        E = cfg.int("num_experts")
        moe_layers = qwen_moe_layers(cfg, n)
    for i in range(n):
        p = f"model.layers.{i}"
        b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=qkv_bias, o_bias=o_bias)
        if mt in ("qwen3", "qwen3_moe"):
            b.norm(f"{p}.self_attn.q_norm", hd, i)
            b.norm(f"{p}.self_attn.k_norm", hd, i)
        if mt == "minimax_m2" and cfg.flag("use_qk_norm"):
            b.norm(f"{p}.self_attn.q_norm", heads * hd, i)
            b.norm(f"{p}.self_attn.k_norm", kv * hd, i)
        if i in moe_layers:
            b.linear(f"{p}.mlp.gate", "router", E, H, i, quantizable=False)
            if mt == "minimax_m2" and cfg.flag("use_routing_bias"):
                b.vec(f"{p}.mlp.e_score_correction_bias", "router", E, i, hf_buffer=True)
            inter = cfg.int("moe_intermediate_size") if mt in ("qwen2_moe", "qwen3_moe") else cfg.int("intermediate_size")
            b.experts(f"{p}.mlp.experts", E, inter, H, i)
            shared = cfg.opt_int("shared_expert_intermediate_size", minimum=0) or 0
            if shared:
                b.mlp(f"{p}.mlp.shared_expert", shared, H, i)
                b.linear(f"{p}.mlp.shared_expert_gate", "router", 1, H, i, quantizable=False)
        else:
            b.mlp(f"{p}.mlp", cfg.int("intermediate_size"), H, i, bias=mlp_bias)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    b.final(cfg, V, H)


FAMILY = Family(
    "llama", build_llama,
    weights=llama_like,
    architectures=(
        "LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Phi3ForCausalLM", "MiniMaxM2ForCausalLM",
    ) + tuple(sorted(EAGLE3_ARCHS | EAGLE1_ARCHS)),
    model_types=("llama", "mistral", "mixtral", "phi3", "minimax_m2"),
    config_keys=(
        "attention_bias", "decoder_sparse_step", "hidden_size", "intermediate_size", "mlp_bias", "mlp_only_layers",
        "moe_intermediate_size", "num_attention_heads", "num_experts", "num_hidden_layers", "num_key_value_heads",
        "num_local_experts", "shared_expert_intermediate_size", "use_qk_norm", "use_routing_bias", "vocab_size",
    ),
)
