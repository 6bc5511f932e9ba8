"""MiniCPM3 (vLLM 0.34.0 ``model_executor/models/minicpm3.py``): MLA-style projections whose cache is plain
attention: every head keeps its own K and V of ``qk_nope_head_dim + qk_rope_head_dim``."""

from __future__ import annotations

from kvplan.model.families.base import (
    Built, Context, FamilyResult, attn_spec, check_attention_heads, kv_heads_per_rank, model_wide_window, n_layers,
)
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView


def build_minicpm3(view: HFView, ctx: Context) -> FamilyResult:
    """``MiniCPM3Attention`` (minicpm3.py lines 70-134): ``Attention(num_local_heads, qk_head_dim,
    num_kv_heads=num_local_heads)`` with ``qk_head_dim = qk_nope_head_dim + qk_rope_head_dim`` and
    ``num_local_heads = num_attention_heads / tp`` (asserted to divide); the cache holds K and V at ``qk_head_dim``
    (V is padded to it), not the latent. ``num_key_value_heads`` is not read. No per-layer window: the layer takes
    ``cache_config.sliding_window``."""
    n = n_layers(view)
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, heads, "num_attention_heads")
    hd = view.int("qk_nope_head_dim") + view.int("qk_rope_head_dim")
    window = model_wide_window(view, ctx)
    layers = [Built(f"model.layers.{i}.self_attn.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=window), i)
              for i in range(n)]
    ctx.notes.append(f"minicpm3: {n} attention layers of {kv} KV x {hd} (qk_nope_head_dim + qk_rope_head_dim) per "
                     "rank; K and V cached per head, not the MLA latent")
    return FamilyResult(layers, model_window=window, num_hidden_layers=n)


FAMILY = Family(
    "minicpm3", build_minicpm3,
    architectures=("MiniCPM3ForCausalLM",),
    model_types=("minicpm3",),
    config_keys=("num_attention_heads", "qk_nope_head_dim", "qk_rope_head_dim"),
)
