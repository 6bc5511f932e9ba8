"""ZAYA1 (vLLM 0.34.0 ``model_executor/models/zaya.py``): every decoder layer a compressed-convolutional attention
(CCA) whose q/k history and delayed value are kept as a Mamba-style state, beside a replicated attention cache."""

from __future__ import annotations

from kvplan.errors import UnsupportedError
from kvplan.model.families.base import Built, Context, FamilyResult, attn_spec, layer_types, n_layers
from kvplan.model.families.mamba_state import mamba_chunk_size
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView
from kvplan.specs import MambaSpec


def build_zaya(view: HFView, ctx: Context) -> FamilyResult:
    """``ZayaAttention`` (zaya.py lines 269-310) registers, per layer ``i``:

    * ``model.layers.{i}.self_attn.qkv_proj``: ``ZayaCCA``, a ``MambaBase`` state of two tensors
      (``_cca_state_shapes``, lines 42-47): the raw q/k history ``((heads + kv_heads)·head_dim, cca_time0 +
      cca_time1 - 2)`` and the previous token's delayed value ``(kv_heads·head_dim / 2,)``, both in the model
      dtype (``short_conv_state_dtype``, lines 50-54), ShortConv's backend, replicated over TP (its projections
      are ``ReplicatedLinear``);
    * ``model.layers.{i}.self_attn.attn``: ``Attention(num_attention_heads, head_dim, num_key_value_heads)`` with
      the config's totals (nothing is split over TP), ``sliding_window`` when ``layer_types[i]`` is
      ``hybrid_sliding``, else full.

    vLLM refuses speculative decoding for it (``ZayaForCausalLM.__init__``, line 555)."""
    if ctx.num_spec:
        raise UnsupportedError(f"{view.path}: ZAYA1 does not support speculative decoding (vLLM's "
                               "ZayaForCausalLM raises NotImplementedError)")
    n = n_layers(view)
    heads, kv, hd = view.int("num_attention_heads"), view.int("num_key_value_heads"), view.int("head_dim")
    history = view.int("cca_time0") + view.int("cca_time1") - 2
    lt = layer_types(view, n, {"hybrid", "hybrid_sliding"}) or ["hybrid"] * n
    w = None if ctx.disable_sliding_window else view.opt_int("sliding_window")
    cca = MambaSpec(block_size=ctx.block_size, shapes=(((heads + kv) * hd, history), (kv * hd // 2,)),
                    dtypes=(ctx.model_dtype, ctx.model_dtype), mamba_type="short_conv", num_speculative_blocks=0)
    layers: list[Built] = []
    for i in range(n):
        layers.append(Built(f"model.layers.{i}.self_attn.qkv_proj", cca, i))
        layers.append(Built(f"model.layers.{i}.self_attn.attn",
                            attn_spec(ctx, num_kv_heads=kv, head_size=hd,
                                      window=w if lt[i] == "hybrid_sliding" else None), i))
    n_sw = sum(1 for t in lt[:n] if t == "hybrid_sliding")
    ctx.notes.append(f"zaya: {n} CCA states (history {history}) + {n} attention layers ({n_sw} sliding), {kv} KV x "
                     f"{hd}, replicated over TP")
    return FamilyResult(layers, is_hybrid_mamba=True, mamba_chunk_size=mamba_chunk_size(view), num_hidden_layers=n)


FAMILY = Family(
    "zaya", build_zaya,
    architectures=("ZayaForCausalLM",),
    model_types=("zaya",),
    config_keys=("cca_time0", "cca_time1", "head_dim", "num_attention_heads", "num_key_value_heads",
                 "sliding_window"),
    hybrid=True,
)
