"""LFM2 / LFM2-MoE / LFM3 (vLLM ``lfm2.py``, ``lfm2_moe.py``, ``lfm3.py``): ShortConv state and attention by
``layer_types``."""

from __future__ import annotations

from kvplan.errors import ConfigError
from kvplan.model.families.base import (
    FULL, SLIDING, Built, Context, FamilyResult, attn_spec, check_attention_heads, head_size, kv_heads_per_rank,
    layer_prefix, layer_types, model_wide_window, n_layers, split, window_value,
)
from kvplan.model.families.mamba_state import mamba_chunk_size
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView
from kvplan.specs import MambaSpec


def build_lfm(view: HFView, ctx: Context) -> FamilyResult:
    """LFM2 / LFM2-MoE / LFM3 (lfm2.py, lfm2_moe.py, lfm3.py; LFM2's ``full_attn_idxs`` become
    ``layer_types`` in transformers' ``Lfm2Config``): ``layer_types`` entry ``conv`` → a ShortConv
    state, ``MambaStateShapeCalculator.short_conv_state_shape``: one conv state
    ``(conv_L_cache - 1 + num_spec, hidden_size/tp)`` in the model dtype; ``full_attention`` → full,
    ``sliding_attention`` → ``sliding_window``."""
    n = n_layers(view)
    lt = layer_types(view, n, {"conv", FULL, SLIDING})
    if lt is None:
        raise ConfigError(view.path, view.field("layer_types"), "required key is missing",
                          "give one entry per layer: conv, full_attention or sliding_attention")
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", heads))
    hd = head_size(view)
    w = None if ctx.disable_sliding_window else window_value(view)
    conv = MambaSpec(block_size=ctx.block_size,
                     shapes=((view.int("conv_L_cache") - 1 + ctx.num_spec, split(view, ctx, view.int("hidden_size"),
                                                                                  "hidden_size")),),
                     dtypes=(ctx.model_dtype,), mamba_type="short_conv", num_speculative_blocks=ctx.num_spec)
    prefix = layer_prefix(ctx.architecture)
    layers = []
    for i in range(n):
        if lt[i] == "conv":
            layers.append(Built(f"{prefix}.layers.{i}.short_conv", conv, i))
        else:
            layers.append(Built(f"{prefix}.layers.{i}.self_attn.attn",
                                attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=w if lt[i] == SLIDING else None), i))
    n_conv = sum(1 for t in lt[:n] if t == "conv")
    n_sw = sum(1 for t in lt[:n] if t == SLIDING)
    ctx.notes.append(f"{ctx.model_type}: {n_conv} short-conv + {n_sw} sliding (window {w}) + {n - n_conv - n_sw} full")
    return FamilyResult(layers, model_window=model_wide_window(view, ctx), is_hybrid_mamba=True,
                        mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


FAMILY = Family(
    "lfm", build_lfm,
    architectures=(
        "Lfm3ForCausalLM", "Lfm3VlForConditionalGeneration", "Lfm3AudioForConditionalGeneration",
        "Lfm2ForCausalLM", "Lfm2MoeForCausalLM",
    ),
    config_keys=("conv_L_cache", "hidden_size", "num_attention_heads", "num_key_value_heads"),
    hybrid=True,
)
