"""Recurrent-state helpers the Mamba hybrids share: the ssm state dtype, ``mamba_chunk_size``, the Mamba2
state shape (``MambaStateShapeCalculator.mamba2_state_shape``) and the plain attention beside it."""

from __future__ import annotations

from kvplan.errors import ConfigError
from kvplan.model.families.base import (
    Context, attn_spec, check_attention_heads, generic_kv_heads, kv_heads_per_rank, split,
)
from kvplan.model.hfconfig import HFView
from kvplan.specs import KVCacheSpec, MambaSpec


def ssm_state_dtype(view: HFView, ctx: Context, default: str | None = None) -> str:
    """The recurrent-state dtype: ``mamba_ssm_cache_dtype`` (Nemotron-H; transformers
    default float32) or ``mamba_ssm_dtype`` (Qwen3.5) from the config, else ``default``,
    else the conv dtype (the model dtype: ``mamba_cache_dtype auto``)."""
    from kvplan.units import MODEL_DTYPES

    for key in ("mamba_ssm_cache_dtype", "mamba_ssm_dtype"):
        v = view.get(key, None)
        if v is not None and str(v) != "auto":
            name = MODEL_DTYPES.get(str(v).removeprefix("torch."))
            if name is None:
                raise ConfigError(view.path, view.field(key), f"unknown dtype {v!r}", "use float32, bfloat16 or float16")
            return name
    return default or ctx.model_dtype


def mamba_chunk_size(view: HFView) -> int | None:
    """``ModelConfig.get_mamba_chunk_size``: ``mamba_chunk_size``, else ``chunk_size``."""
    for key in ("mamba_chunk_size", "chunk_size"):
        v = view.opt_int(key)
        if v is not None:
            return v
    return None


def mamba2_spec(view: HFView, ctx: Context, *, heads: int, head_dim: int, n_groups: int, state: int, kernel: int,
                intermediate: int, ssm_dtype: str) -> MambaSpec:
    """``MambaStateShapeCalculator.mamba2_state_shape``: when ``n_groups % tp != 0`` vLLM adds
    ``tp - n_groups`` extra groups so every rank holds the groups its heads need
    (``extra_groups_for_head_shards``); conv ``(K - 1 + num_spec, (I + 2·g'·d_state)/tp)``,
    ssm ``(heads/tp, head_dim, d_state)``."""
    g = n_groups if n_groups % ctx.tp == 0 else n_groups + (ctx.tp - n_groups)
    conv = (kernel - 1 + ctx.num_spec, split(view, ctx, intermediate + 2 * g * state, "n_groups"))
    ssm = (split(view, ctx, heads, "mamba_num_heads"), head_dim, state)
    return MambaSpec(
        block_size=ctx.block_size, shapes=(conv, ssm), dtypes=(ctx.model_dtype, ssm_dtype),
        mamba_type="mamba2", num_speculative_blocks=ctx.num_spec,
    )


def mamba2_hf(view: HFView, ctx: Context, intermediate: int) -> MambaSpec:
    """A Mamba2 mixer read from the ``mamba_*`` keys (Falcon-H1, Granite-4.0-H)."""
    return mamba2_spec(view, ctx, heads=view.int("mamba_n_heads"), head_dim=view.int("mamba_d_head"),
                       n_groups=view.int("mamba_n_groups"), state=view.int("mamba_d_state"),
                       kernel=view.int("mamba_d_conv"), intermediate=intermediate,
                       ssm_dtype=ssm_state_dtype(view, ctx))


def plain_attention(view: HFView, ctx: Context, head_dim_key: str = "head_dim") -> KVCacheSpec:
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv_total, kv_key = generic_kv_heads(view, heads)
    kv = kv_heads_per_rank(view, ctx, kv_total, kv_key)
    hd = view.opt_int(head_dim_key) or view.int("hidden_size") // heads
    return attn_spec(ctx, num_kv_heads=kv, head_size=hd)
