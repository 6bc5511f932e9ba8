"""Granite-4.0-H (vLLM ``granitemoehybrid.py``): Mamba2 or attention by ``layer_types``."""

from __future__ import annotations

from kvplan.errors import ConfigError
from kvplan.model.families.base import FULL, Built, Context, FamilyResult, layer_types, n_layers
from kvplan.model.families.mamba_state import mamba2_hf, mamba_chunk_size, plain_attention
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView


_MAMBA_LAYER_TYPES = {"mamba", "linear_attention"}


def build_granite_hybrid(view: HFView, ctx: Context) -> FamilyResult:
    """Granite-4.0-H (granitemoehybrid.py): ``layer_types`` entry ``mamba`` (transformers 5 writes
    ``linear_attention``) → Mamba2 with ``I = mamba_expand · hidden_size``, ``attention`` → full."""
    n = n_layers(view)
    lt = layer_types(view, n, _MAMBA_LAYER_TYPES | {"attention", FULL})
    if lt is None:
        raise ConfigError(view.path, view.field("layer_types"), "required key is missing",
                          "give one entry per layer: mamba or attention")
    m = mamba2_hf(view, ctx, view.int("mamba_expand") * view.int("hidden_size"))
    a = plain_attention(view, ctx)
    layers = [Built(f"model.layers.{i}.mixer" if lt[i] in _MAMBA_LAYER_TYPES else f"model.layers.{i}.self_attn.attn",
                    m if lt[i] in _MAMBA_LAYER_TYPES else a, i) for i in range(n)]
    n_m = sum(1 for t in lt[:n] if t in _MAMBA_LAYER_TYPES)
    ctx.notes.append(f"granitemoehybrid: {n_m} Mamba2 + {n - n_m} attention layers")
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


FAMILY = Family(
    "granite_hybrid", build_granite_hybrid,
    architectures=("GraniteMoeHybridForCausalLM",),
    config_keys=("hidden_size", "mamba_expand"),
    hybrid=True,
)
