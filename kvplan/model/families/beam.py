"""Beam (vLLM 0.34.0 ``models/beam/nvidia/model.py``, ``attention.py``): GQA layers whose ``layer_types`` entry
picks a sliding window (RoPE) or full attention (NoPE); the model clears ``cache_config.sliding_window``.

vLLM reads the config with its own ``BeamConfig`` (``transformers_utils/configs/beam.py`` lines 19-92, registered
in ``_CONFIG_REGISTRY``), which takes ``head_dim`` null and derives ``layer_types`` (all sliding) when absent;
kvplan reads the raw config (``hfconfig.VLLM_OWN_CONFIGS``) with that class's defaults."""

from __future__ import annotations

from kvplan.model.families.base import (
    FULL, SLIDING, Built, Context, FamilyResult, attn_spec, check_attention_heads, kv_heads_per_rank, layer_types,
)
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView


def build_beam(view: HFView, ctx: Context) -> FamilyResult:
    """``BeamAttention`` (attention.py lines 60-141): ``num_key_value_heads`` KV heads split over TP (asserted to
    divide or be divided by it), ``head_dim or hidden_size // num_attention_heads``; layer ``i`` passes
    ``per_layer_sliding_window = sliding_window`` when ``layer_types[i] == "sliding_attention"``, else None, and
    ``BeamModel.__init__`` (model.py lines 235-240) sets ``cache_config.sliding_window = None`` so full layers
    stay full. BeamConfig's defaults: 24 layers, 32 heads, 4 KV heads, hidden 2048, window 4096."""
    n = view.int("num_hidden_layers", 24)
    heads = view.int("num_attention_heads", 32)
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", 4))
    hd = view.opt_int("head_dim") or view.int("hidden_size", 2048) // heads
    lt = layer_types(view, n, {SLIDING, FULL}) or [SLIDING] * n
    w = None if ctx.disable_sliding_window else view.int("sliding_window", 4096, minimum=1)
    layers = [Built(f"model.layers.{i}.self_attn.attn",
                    attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=w if lt[i] == SLIDING else None), i)
              for i in range(n)]
    n_sw = sum(1 for t in lt[:n] if t == SLIDING)
    ctx.notes.append(f"beam: {n_sw} sliding (window {w}) + {n - n_sw} full (NoPE) layers, {kv} KV x {hd} per rank; "
                     "cache_config.sliding_window cleared by the model")
    return FamilyResult(layers, model_window=None, num_hidden_layers=n)


FAMILY = Family(
    "beam", build_beam,
    architectures=("BeamForCausalLM",),
    model_types=("beam",),
    config_keys=("head_dim", "hidden_size", "num_attention_heads", "num_hidden_layers", "num_key_value_heads",
                 "sliding_window"),
)
