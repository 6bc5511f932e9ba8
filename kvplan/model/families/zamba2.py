"""Zamba2 (vLLM ``zamba2.py``): Mamba2 mixers and shared-block attention layers."""

from __future__ import annotations

from kvplan.errors import ConfigError
from kvplan.model.families.base import (
    Built, Context, FamilyResult, attn_spec, check_attention_heads, kv_heads_per_rank, n_layers,
)
from kvplan.model.families.mamba_state import mamba2_spec, mamba_chunk_size, ssm_state_dtype
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView


def build_zamba2(view: HFView, ctx: Context) -> FamilyResult:
    """Zamba2 (zamba2.py): every layer has a Mamba2 mixer (``n_mamba_heads`` x ``mamba_headdim``,
    ``mamba_ngroups``, ``I = mamba_expand · hidden_size``); each ``hybrid`` entry of
    ``layers_block_type`` adds a shared-block attention layer (``num_key_value_heads`` x
    ``attention_head_dim``). vLLM registers the attention layers first (``model.attn.{k}``), then
    the mixers."""
    n = n_layers(view)
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


FAMILY = Family(
    "zamba2", build_zamba2,
    architectures=("Zamba2ForCausalLM",),
    config_keys=(
        "attention_head_dim", "hidden_size", "layers_block_type", "mamba_d_conv", "mamba_d_state", "mamba_expand",
        "mamba_headdim", "mamba_ngroups", "n_mamba_heads", "num_attention_heads", "num_key_value_heads",
    ),
    hybrid=True,
)
