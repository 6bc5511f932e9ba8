"""Falcon-H1 (vLLM ``falcon_h1.py``): attention and a Mamba2 mixer in every layer."""

from __future__ import annotations

from kvplan.model.families.base import Built, Context, FamilyResult, n_layers
from kvplan.model.families.mamba_state import mamba2_hf, mamba_chunk_size, plain_attention
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView


def build_falcon_h1(view: HFView, ctx: Context) -> FamilyResult:
    """Falcon-H1 (falcon_h1.py): every decoder layer runs attention and a Mamba2 mixer in
    parallel, both cached; Mamba2 ``I = mamba_d_ssm`` (else ``mamba_expand · hidden_size``)."""
    n = n_layers(view)
    inter = view.opt_int("mamba_d_ssm") or view.int("mamba_expand") * view.int("hidden_size")
    m = mamba2_hf(view, ctx, inter)
    a = plain_attention(view, ctx)
    layers = []
    for i in range(n):
        layers.append(Built(f"model.layers.{i}.self_attn.attn", a, i))
        layers.append(Built(f"model.layers.{i}.mamba", m, i))
    ctx.notes.append(f"falcon_h1: {n} layers, each an attention cache and a Mamba2 state")
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


FAMILY = Family(
    "falcon_h1", build_falcon_h1,
    architectures=("FalconH1ForCausalLM",),
    config_keys=("hidden_size", "mamba_d_ssm", "mamba_expand"),
    hybrid=True,
)
