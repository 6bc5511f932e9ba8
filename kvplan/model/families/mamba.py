"""Mamba / Falcon-Mamba (vLLM ``mamba.py``): Mamba1 mixers only."""

from __future__ import annotations

from kvplan.model.families.base import Built, Context, FamilyResult, n_layers, split
from kvplan.model.families.mamba_state import ssm_state_dtype
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView
from kvplan.specs import MambaSpec


def _mamba1(view: HFView, ctx: Context, *, intermediate: int, state: int, kernel: int, key: str) -> MambaSpec:
    """``MambaStateShapeCalculator.mamba1_state_shape`` (vLLM 0.34.0 mamba_utils.py:179): conv
    ``(K - 1, I/tp)``, ssm ``(I/tp, d_state)``; no speculative rows."""
    per_rank = split(view, ctx, intermediate, key)
    return MambaSpec(block_size=ctx.block_size, shapes=((kernel - 1, per_rank), (per_rank, state)),
                     dtypes=(ctx.model_dtype, ssm_state_dtype(view, ctx)), mamba_type="mamba1",
                     num_speculative_blocks=ctx.num_spec)


def build_mamba(view: HFView, ctx: Context) -> FamilyResult:
    """MambaForCausalLM / FalconMambaForCausalLM (mamba.py): every layer a Mamba1 mixer of
    ``intermediate_size`` channels, ``state_size`` states, ``conv_kernel``; no attention."""
    n = n_layers(view)
    spec = _mamba1(view, ctx, intermediate=view.int("intermediate_size"), state=view.int("state_size"),
                   kernel=view.int("conv_kernel"), key="intermediate_size")
    layers = [Built(f"backbone.layers.{i}.mixer", spec, i) for i in range(n)]
    ctx.notes.append(f"{ctx.model_type}: {n} Mamba1 layers, no attention")
    return FamilyResult(layers, is_hybrid_mamba=False, num_hidden_layers=n)


FAMILY = Family(
    "mamba", build_mamba,
    architectures=("MambaForCausalLM", "FalconMambaForCausalLM"),
    config_keys=("conv_kernel", "intermediate_size", "state_size"),
)
