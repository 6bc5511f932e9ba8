"""Kimi-Linear (vLLM ``kimi_k3/nvidia/model.py``): KDA state layers and MLA layers."""

from __future__ import annotations

from kvplan.errors import ConfigError, UnsupportedError
from kvplan.model.families.base import (
    Built, Context, FamilyResult, check_attention_heads, layer_prefix, n_layers, split,
)
from kvplan.model.families.mamba_state import mamba_chunk_size
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView
from kvplan.specs import MLAAttentionSpec, MambaSpec


def build_kimi_linear(view: HFView, ctx: Context) -> FamilyResult:
    """Kimi-Linear (vLLM 0.34.0 ``kimi_k3/nvidia/model.py``, ``KimiLinearConfig``): layer ``i`` is KDA
    when ``i + 1`` is in ``linear_attn_config.kda_layers`` (1-based), else MLA. KDA state
    (``MambaStateShapeCalculator.kda_state_shape``): conv ``(K - 1 + num_spec, 3·heads·head_dim/tp)``
    in the model dtype, recurrent ``(heads/tp, head_dim, head_dim)`` in float32
    (``kda_state_dtype``, ``mamba_ssm_cache_dtype`` auto); MLA: the latent cache
    ``kv_lora_rank + qk_rope_head_dim``, one KV head. Kimi-K3.1's DSA (``dsa_config``) and the
    full-rank-gate KDA (``use_full_rank_gate``) are other classes: refused."""
    n = n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    lac = view.get("linear_attn_config", None)
    if not isinstance(lac, dict) or not isinstance(lac.get("kda_layers"), list):
        raise ConfigError(view.path, view.field("linear_attn_config"), "required key is missing or not an object",
                          "give linear_attn_config with kda_layers, num_heads, head_dim, short_conv_kernel_size")
    if view.get("dsa_config", None) is not None or lac.get("use_full_rank_gate"):
        raise UnsupportedError(f"{view.path}: Kimi-Linear with dsa_config or use_full_rank_gate (Kimi-K3's layers) "
                               "is not modelled; kvplan refuses rather than approximating it")
    heads, hd, kernel = (int(lac[k]) for k in ("num_heads", "head_dim", "short_conv_kernel_size"))
    kda = MambaSpec(block_size=ctx.block_size,
                    shapes=((kernel - 1 + ctx.num_spec, split(view, ctx, 3 * heads * hd, "linear_attn_config")),
                            (split(view, ctx, heads, "linear_attn_config"), hd, hd)),
                    dtypes=(ctx.model_dtype, "float32"), mamba_type="gdn", num_speculative_blocks=ctx.num_spec)
    latent = view.int("kv_lora_rank") + view.int("qk_rope_head_dim")
    mla = MLAAttentionSpec(block_size=ctx.block_size, num_kv_heads=1, head_size=latent, dtype=ctx.cache_dtype,
                           head_size_v=0, cache_dtype_str=ctx.cache_dtype_str)
    kda_ids = {int(x) - 1 for x in lac["kda_layers"]}
    prefix = layer_prefix(ctx.architecture)
    layers = [Built(f"{prefix}.layers.{i}.self_attn", kda if i in kda_ids else mla, i) for i in range(n)]
    n_kda = sum(1 for i in range(n) if i in kda_ids)
    ctx.notes.append(f"kimi_linear: {n_kda} KDA (conv {ctx.model_dtype}, recurrent float32) + {n - n_kda} MLA "
                     f"(latent {latent})")
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


FAMILY = Family(
    "kimi_linear", build_kimi_linear,
    architectures=("KimiLinearForCausalLM",),
    config_keys=(
        "dsa_config", "kda_layers", "kv_lora_rank", "linear_attn_config", "num_attention_heads",
        "qk_rope_head_dim", "use_full_rank_gate",
    ),
    hybrid=True,
)
