"""Qwen3-Next / Qwen3.5 and the Gated-DeltaNet hybrids (vLLM ``qwen3_next.py``, ``qwen3_5.py``,
``qwen3_next_mtp.py``): GDN state and gated full attention by ``layer_types``, MTP layers."""

from __future__ import annotations

from dataclasses import replace

from kvplan.model.families.base import (
    FULL, Built, Context, FamilyResult, attn_spec, check_attention_heads, head_size, kv_heads_per_rank,
    layer_prefix, layer_types, n_layers, split,
)
from kvplan.model.families.llama import qwen_moe_layers
from kvplan.model.families.mamba_state import mamba_chunk_size, ssm_state_dtype
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView
from kvplan.specs import MambaSpec


# the multimodal wrappers whose decoder vLLM builds under ``language_model``
LANGUAGE_MODEL_ARCHS = frozenset(("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"))


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
    n = n_layers(view)
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads"))
    hd = head_size(view)
    lt = layer_types(view, n, {"linear_attention", FULL})
    if lt is None:
        interval = view.int("full_attention_interval", 4)
        lt = [FULL if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    prefix = layer_prefix(ctx.architecture, LANGUAGE_MODEL_ARCHS)
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


def _gdn_mixer(cfg: WeightView, b: Builder, p: str, i: int, H: int) -> None:
    """Gated DeltaNet (Qwen3-Next fuses ``in_proj_qkvz``/``in_proj_ba``; Qwen3.5 splits them)."""
    kh, kd = cfg.int("linear_num_key_heads"), cfg.int("linear_key_head_dim")
    vh, vd = cfg.int("linear_num_value_heads"), cfg.int("linear_value_head_dim")
    K = cfg.int("linear_conv_kernel_dim", 4)
    key, value = kh * kd, vh * vd
    if cfg.text_model_type == "qwen3_next":
        b.linear(f"{p}.in_proj_qkvz", "mixer", 2 * key + 2 * value, H, i, split="col")
        b.linear(f"{p}.in_proj_ba", "mixer", 2 * vh, H, i, split="col")
    else:
        b.linear(f"{p}.in_proj_qkv", "mixer", 2 * key + value, H, i, split="col")
        b.linear(f"{p}.in_proj_z", "mixer", value, H, i, split="col")
        b.linear(f"{p}.in_proj_b", "mixer", vh, H, i, split="col")
        b.linear(f"{p}.in_proj_a", "mixer", vh, H, i, split="col")
    b.add(f"{p}.conv1d.weight", "mixer", (2 * key + value, 1, K), i, shard=0)
    b.vec(f"{p}.dt_bias", "mixer", vh, i, split=True)
    b.vec(f"{p}.A_log", "mixer", vh, i, split=True)
    b.norm(f"{p}.norm", vd, i)
    b.linear(f"{p}.out_proj", "mixer", H, value, i, split="row")


def _gdn_moe_or_mlp(cfg: WeightView, b: Builder, p: str, i: int, H: int, moe: bool) -> None:
    if moe:
        E = cfg.int("num_experts")
        b.linear(f"{p}.mlp.gate", "router", E, H, i, quantizable=False)
        b.experts(f"{p}.mlp.experts", E, cfg.int("moe_intermediate_size"), H, i)
        shared = cfg.opt_int("shared_expert_intermediate_size", minimum=0) or 0
        if shared:
            b.mlp(f"{p}.mlp.shared_expert", shared, H, i)
            b.linear(f"{p}.mlp.shared_expert_gate", "router", 1, H, i, quantizable=False)
    else:
        b.mlp(f"{p}.mlp", cfg.int("intermediate_size"), H, i)


def _gdn_full_attention(cfg: WeightView, b: Builder, p: str, i: int, H: int) -> None:
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.head_dim()
    gate = cfg.flag("attn_output_gate", True)
    b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=cfg.flag("attention_bias"), q_mult=2 if gate else 1)
    b.norm(f"{p}.self_attn.q_norm", hd, i)
    b.norm(f"{p}.self_attn.k_norm", hd, i)


def gdn(cfg: WeightView, b: Builder) -> None:
    """Qwen3-Next and Qwen3.5 (dense and MoE) text decoders: ``layer_types`` picks Gated
    DeltaNet or gated full attention (q doubled for the output gate); MoE layers as Qwen2-MoE."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    types = cfg.layer_types()
    if len(types) != n:
        interval = cfg.opt_int("full_attention_interval", minimum=0) or 4
        types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    moe: set[int] = qwen_moe_layers(cfg, n) if cfg.opt_int("num_experts", minimum=0) else set()
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        if types[i] == "linear_attention":
            _gdn_mixer(cfg, b, f"{p}.linear_attn", i, H)
        else:
            _gdn_full_attention(cfg, b, p, i, H)
        _gdn_moe_or_mlp(cfg, b, p, i, H, i in moe)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    b.final(cfg, V, H)


def gdn_mtp(cfg: WeightView, b: Builder, k: int) -> None:
    """Qwen3-Next / Qwen3.5 MTP (vLLM ``qwen3_next_mtp.py``): ``fc [H, 2H]`` after two input
    norms, ``k`` full-attention MoE/MLP layers (``families.mtp_count``: Qwen3.5's
    ``mtp_num_hidden_layers``, Qwen3-Next's ``num_nextn_predict_layers``, vLLM's default 1),
    a final norm; the embedding and lm_head are the target's (vLLM shares them)."""
    H = cfg.int("hidden_size")
    moe = bool(cfg.opt_int("num_experts", minimum=0))
    base = cfg.int("num_hidden_layers")
    sub = Builder()
    sub.norm("mtp.pre_fc_norm_embedding", H, base)
    sub.norm("mtp.pre_fc_norm_hidden", H, base)
    sub.linear("mtp.fc", "mtp", H, 2 * H, base, split="col", quantizable=False)
    for j in range(k):
        p = f"mtp.layers.{j}"
        _gdn_full_attention(cfg, sub, p, base, H)
        _gdn_moe_or_mlp(cfg, sub, p, base, H, moe)
        sub.norm(f"{p}.input_layernorm", H, base)
        sub.norm(f"{p}.post_attention_layernorm", H, base)
    sub.norm("mtp.norm", H, base)
    b.weights += [replace(w, kind="mtp", stage="last", layer=None) for w in sub.weights]


FAMILY = Family(
    "gdn", build_gdn,
    weights=gdn,
    mtp_weights=gdn_mtp,
    architectures=(
        "Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM", "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration", "MiniCPMV4_6ForConditionalGeneration",
        "MiniCPMV4_7ForConditionalGeneration", "OlmoHybridForCausalLM",
    ),
    model_types=("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"),
    config_keys=(
        "attention_bias", "attn_output_gate", "full_attention_interval", "hidden_size", "intermediate_size",
        "linear_conv_kernel_dim", "linear_key_head_dim", "linear_num_key_heads", "linear_num_value_heads",
        "linear_value_head_dim", "moe_intermediate_size", "num_attention_heads", "num_experts",
        "num_hidden_layers", "num_key_value_heads", "shared_expert_intermediate_size", "vocab_size",
    ),
    hybrid=True,
    language_model_archs=LANGUAGE_MODEL_ARCHS,
)
