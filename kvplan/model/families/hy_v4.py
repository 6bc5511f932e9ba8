"""HY V4 (vLLM 0.34.0 ``models/hy_v4/nvidia/model.py``, ``attention.py``): MLA decoder layers (the DeepSeek
latent cache), sparse with a lightning indexer on the layers ``layer_types`` marks sparse. vLLM reads the config
with its own HYV4Config, which keeps an absent ``layer_types`` null; so does kvplan (``hfconfig.VLLM_OWN_CONFIGS``)."""

from __future__ import annotations

from kvplan.errors import UnsupportedError
from kvplan.model.families.base import Built, Context, FamilyResult, check_attention_heads, n_layers
from kvplan.model.families.deepseek import mla_layer
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView

# attention.py lines 52-58: the layer_types entries that make a layer sparse (with index_topk set)
SPARSE_LAYER_TYPES = frozenset({"sparse_attention", "sparse", "indexed_attention", "deepseek_sparse_attention"})


def build_hy_v4(view: HFView, ctx: Context) -> FamilyResult:
    """``HYV4MLAAttention`` (attention.py lines 229-470): every decoder layer registers
    ``model.layers.{i}.self_attn.attn``, an MLA latent cache of ``kv_lora_rank + qk_rope_head_dim`` with one KV
    head (``num_attention_heads`` asserted divisible by TP). A layer is sparse only when the config has
    ``index_topk`` and ``layer_types[i]`` is a sparse type (``sparse_layer_ids``, lines 62-67); sparse layers
    add an indexer cache, checked against no golden yet: kvplan refuses them rather than approximating."""
    n = n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    lt = view.get("layer_types", None) or ()
    if view.get("index_topk", None) is not None and any(t in SPARSE_LAYER_TYPES for t in lt):
        raise UnsupportedError(f"{view.path}: HY V4 with sparse layers (layer_types naming sparse attention, "
                               "index_topk set) is not modelled yet; kvplan refuses rather than approximating it")
    layers = [b for i in range(n) for b in mla_layer(view, ctx, i, "model", indexer=False)]
    latent = view.int("kv_lora_rank") + view.int("qk_rope_head_dim")
    ctx.notes.append(f"hy_v4: {n} dense MLA layers, latent {latent} = kv_lora_rank + qk_rope_head_dim, 1 KV head")
    return FamilyResult(layers, num_hidden_layers=n)


FAMILY = Family(
    "hy_v4", build_hy_v4,
    architectures=("HYV4ForCausalLM",),
    model_types=("hy_v4",),
    config_keys=("index_topk", "kv_lora_rank", "layer_types", "num_attention_heads", "qk_rope_head_dim"),
)
