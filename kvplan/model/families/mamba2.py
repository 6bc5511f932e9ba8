"""Mamba2 (vLLM ``mamba2.py``): Mamba2 mixers only."""

from __future__ import annotations

from kvplan.model.families.base import Built, Context, FamilyResult, n_layers
from kvplan.model.families.mamba_state import mamba2_spec, ssm_state_dtype
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView


def build_mamba2(view: HFView, ctx: Context) -> FamilyResult:
    """Mamba2ForCausalLM (mamba2.py): every layer a Mamba2 mixer, ``I = expand · hidden_size``."""
    n = n_layers(view)
    heads = view.int("num_heads")
    spec = mamba2_spec(view, ctx, heads=heads, head_dim=view.int("head_dim"), n_groups=view.int("n_groups"),
                       state=view.int("state_size"), kernel=view.int("conv_kernel"),
                       intermediate=view.int("expand") * view.int("hidden_size"), ssm_dtype=ssm_state_dtype(view, ctx))
    layers = [Built(f"backbone.layers.{i}.mixer", spec, i) for i in range(n)]
    ctx.notes.append(f"{ctx.model_type}: {n} Mamba2 layers, no attention")
    return FamilyResult(layers, is_hybrid_mamba=False, num_hidden_layers=n)


FAMILY = Family(
    "mamba2", build_mamba2,
    architectures=("Mamba2ForCausalLM",),
    config_keys=(
        "conv_kernel", "expand", "head_dim", "hidden_size", "n_groups", "num_heads", "state_size",
    ),
)
