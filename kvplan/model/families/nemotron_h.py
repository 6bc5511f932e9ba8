"""Nemotron-H (vLLM ``nemotron_h.py``): ``hybrid_override_pattern`` of Mamba2, attention, MLP and MoE blocks."""

from __future__ import annotations

from kvplan.errors import ConfigError
from kvplan.model.families.base import (
    Built, Context, FamilyResult, attn_spec, check_attention_heads, kv_heads_per_rank, layer_prefix, n_layers,
)
from kvplan.model.families.mamba_state import mamba2_spec, mamba_chunk_size
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView


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


def build_nemotron_h(view: HFView, ctx: Context) -> FamilyResult:
    """Nemotron-H: ``hybrid_override_pattern`` ``M`` = Mamba2, ``*`` = attention, ``-`` = MLP,
    ``E`` = MoE (no cache). Attention ``head_dim`` defaults to 128 (transformers; §12.11);
    the ssm state is ``mamba_ssm_cache_dtype``, float32 by transformers' default (§12.5)."""
    n = n_layers(view)
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


def nemotron_h(cfg: WeightView, b: Builder) -> None:
    """Nemotron-H: ``hybrid_override_pattern`` ``M`` Mamba2, ``*`` attention, ``-`` MLP
    (squared ReLU, no gate), ``E`` MoE; one norm per block, ``norm_f`` at the end."""
    H, V = cfg.int("hidden_size"), cfg.int("vocab_size")
    pattern = str(cfg.get("hybrid_override_pattern", ""))
    n = len(pattern)
    if n == 0:
        raise ConfigError(cfg.path, "hybrid_override_pattern", "required key is missing", "add it to the config")
    nh, hdim = cfg.int("mamba_num_heads"), cfg.int("mamba_head_dim")
    inner = nh * hdim
    G, N = cfg.int("n_groups"), cfg.int("ssm_state_size")
    K = cfg.int("conv_kernel", 4)
    conv_dim = inner + 2 * G * N
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.opt_int("head_dim", minimum=0) or H // heads
    b.embed("model.embeddings.weight", V, H)
    for i, c in enumerate(pattern):
        p = f"model.layers.{i}"
        b.norm(f"{p}.norm", H, i)
        m = f"{p}.mixer"
        if c == "M":
            b.linear(f"{m}.in_proj", "mixer", 2 * inner + 2 * G * N + nh, H, i, split="col",
                     bias=cfg.flag("use_bias"))
            b.add(f"{m}.conv1d.weight", "mixer", (conv_dim, 1, K), i, shard=0)
            if cfg.flag("use_conv_bias", True):
                b.vec(f"{m}.conv1d.bias", "mixer", conv_dim, i, split=True)
            for nm in ("dt_bias", "A_log", "D"):
                b.vec(f"{m}.{nm}", "mixer", nh, i, split=True)
            b.vec(f"{m}.norm.weight", "mixer", inner, i, split=True)
            b.linear(f"{m}.out_proj", "mixer", H, inner, i, split="row", bias=cfg.flag("use_bias"))
        elif c == "*":
            bias = cfg.flag("attention_bias")
            b.attention(m, H, heads, kv, hd, i, qkv_bias=bias, o_bias=bias)
        elif c == "-":
            b.mlp(m, cfg.int("intermediate_size"), H, i, gated=False, bias=cfg.flag("mlp_bias"))
        elif c == "E":
            E = cfg.int("n_routed_experts")
            b.linear(f"{m}.gate", "router", E, H, i, quantizable=False)
            b.vec(f"{m}.gate.e_score_correction_bias", "router", E, i, hf_buffer=True)
            b.experts(f"{m}.experts", E, cfg.int("moe_intermediate_size"), H, i, gated=False)
            shared = ((cfg.opt_int("moe_shared_expert_intermediate_size", minimum=0) or 0)
                      * (cfg.opt_int("n_shared_experts", minimum=0) or 1))
            if shared:
                b.mlp(f"{m}.shared_experts", shared, H, i, gated=False)
        else:
            raise ConfigError(cfg.path, "hybrid_override_pattern", f"unknown block {c!r}", "use M, *, - or E")
    b.norm("model.norm_f", H, None, stage="last")
    if not cfg.tie():
        b.head("lm_head.weight", V, H)


FAMILY = Family(
    "nemotron_h", build_nemotron_h,
    weights=nemotron_h,
    architectures=("NemotronHForCausalLM",),
    model_types=("nemotron_h",),
    config_keys=(
        "attention_bias", "attention_head_dim", "conv_kernel", "head_dim", "hidden_size",
        "hybrid_override_pattern", "intermediate_size", "mamba_head_dim", "mamba_num_heads",
        "mamba_ssm_cache_dtype", "mlp_bias", "moe_intermediate_size", "moe_shared_expert_intermediate_size",
        "n_groups", "n_routed_experts", "n_shared_experts", "num_attention_heads", "num_key_value_heads",
        "ssm_state_size", "use_bias", "use_conv_bias", "vocab_size",
    ),
    hybrid=True,
)
