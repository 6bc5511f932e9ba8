"""DeepSeek-V2/V3/R1/V3.2, Kimi-K2, GLM-5 and the other MLA decoders of vLLM's ``deepseek_v2.py``: the latent
cache, V3.2's indexer (shared by ``indexer_types``), dense then routed layers, MTP layers."""

from __future__ import annotations

from dataclasses import replace

from kvplan.model.families.base import Built, Context, FamilyResult, check_attention_heads, layer_prefix, n_layers
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView, shared_indexer_layers
from kvplan.specs import MLAAttentionSpec


INDEXER_QUANT_BLOCK = 128  # fp8 indexer keys carry one 4-byte scale per 128 values


def is_v32(view: HFView, ctx: Context | None = None) -> bool:
    """vLLM's test: ``hasattr(hf_config, "index_topk")`` (the DSA indexer; its KV cache here,
    its weights in ``deepseek`` below)."""
    return view.get("index_topk", None) is not None


def mla_layer(view: HFView, ctx: Context, i: int, prefix: str, *, indexer: bool = True) -> list[Built]:
    """One DeepSeek decoder layer's caches: on V3.2 the indexer ``k_cache`` (MLA spec,
    ``index_head_dim + index_head_dim/128·4`` uint8 bytes per token, no cache_dtype_str) is
    registered before the latent cache (``kv_lora_rank + qk_rope_head_dim``, one KV head,
    no V, ``cache_dtype_str`` = the resolved --kv-cache-dtype). ``indexer`` False: a layer that
    shares the preceding indexer's top-k (``hfconfig.shared_indexer_layers``) registers none."""
    latent = view.int("kv_lora_rank") + view.int("qk_rope_head_dim")
    out = []
    if indexer and is_v32(view, ctx):
        ihd = view.int("index_head_dim")
        out.append(Built(
            f"{prefix}.layers.{i}.self_attn.indexer.k_cache",
            MLAAttentionSpec(block_size=ctx.block_size, num_kv_heads=1, head_size=ihd + ihd // INDEXER_QUANT_BLOCK * 4,
                             dtype="uint8", head_size_v=0, cache_dtype_str=None),
            i,
        ))
    out.append(Built(
        f"{prefix}.layers.{i}.self_attn.attn",
        MLAAttentionSpec(block_size=ctx.block_size, num_kv_heads=1, head_size=latent, dtype=ctx.cache_dtype,
                         head_size_v=0, cache_dtype_str=ctx.cache_dtype_str),
        i,
    ))
    return out


def build_deepseek(view: HFView, ctx: Context) -> FamilyResult:
    """DeepSeek-V2/V3/R1, Kimi-K2 (``kimi_k2`` → DeepseekV3Config, as vLLM registers it) and
    V3.2: every layer MLA (reference §7.2, §12.9)."""
    n = n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    prefix = layer_prefix(ctx.architecture)
    shared = shared_indexer_layers(view, n)
    layers = [b for i in range(n) for b in mla_layer(view, ctx, i, prefix, indexer=i not in shared)]
    latent = view.int("kv_lora_rank") + view.int("qk_rope_head_dim")
    if is_v32(view, ctx):
        owners = f"{n - len(shared)} of {n} layers" if shared else "per layer"
        ctx.notes.append(
            f"deepseek_v32: {owners} an indexer k_cache ({view.int('index_head_dim')} + 4 scale bytes, uint8) "
            f"registered before the MLA latent cache ({latent}); the two specs differ, so vLLM forms one "
            "uniform-type group"
            + (f"; {len(shared)} layers share the preceding indexer's top-k (indexer_types / index_topk_freq)"
               if shared else "")
        )
    else:
        ctx.notes.append(f"{ctx.model_type}: {n} MLA layers, latent {latent} = kv_lora_rank + qk_rope_head_dim, 1 KV head")
    return FamilyResult(layers, num_hidden_layers=n)


def _deepseek_layer(cfg: WeightView, b: Builder, p: str, i: int, H: int, *, moe: bool, v32: bool) -> None:
    heads = cfg.int("num_attention_heads")
    q_lora = cfg.opt_int("q_lora_rank", minimum=0)
    kv_lora, rope = cfg.int("kv_lora_rank"), cfg.int("qk_rope_head_dim")
    nope, vd = cfg.int("qk_nope_head_dim"), cfg.int("v_head_dim")
    a = f"{p}.self_attn"
    if q_lora:
        b.linear(f"{a}.q_a_proj", "attention", q_lora, H, i)  # replicated (fused_qkv_a_proj)
        b.norm(f"{a}.q_a_layernorm", q_lora, i)
        b.linear(f"{a}.q_b_proj", "attention", heads * (nope + rope), q_lora, i, split="col")
    else:
        b.linear(f"{a}.q_proj", "attention", heads * (nope + rope), H, i, split="col")
    b.linear(f"{a}.kv_a_proj_with_mqa", "attention", kv_lora + rope, H, i)  # replicated
    b.norm(f"{a}.kv_a_layernorm", kv_lora, i)
    b.linear(f"{a}.kv_b_proj", "attention", heads * (nope + vd), kv_lora, i, split="col")
    b.linear(f"{a}.o_proj", "attention", H, heads * vd, i, split="row")
    if v32:  # the lightning indexer: replicated in vLLM, weights_proj never quantized
        ih, idim = cfg.int("index_n_heads"), cfg.int("index_head_dim")
        b.linear(f"{a}.indexer.wq_b", "attention", ih * idim, q_lora or H, i)
        b.linear(f"{a}.indexer.wk", "attention", idim, H, i)
        b.norm(f"{a}.indexer.k_norm", idim, i, bias=True)
        b.linear(f"{a}.indexer.weights_proj", "attention", ih, H, i, quantizable=False)
    if moe:
        E = cfg.int("n_routed_experts")
        b.linear(f"{p}.mlp.gate", "router", E, H, i, quantizable=False)
        if cfg.get("topk_method", None) == "noaux_tc":
            b.vec(f"{p}.mlp.gate.e_score_correction_bias", "router", E, i, hf_buffer=True)
        inter = cfg.int("moe_intermediate_size")
        b.experts(f"{p}.mlp.experts", E, inter, H, i)
        shared = cfg.opt_int("n_shared_experts", minimum=0) or 0
        if shared:
            b.mlp(f"{p}.mlp.shared_experts", inter * shared, H, i)
    else:
        b.mlp(f"{p}.mlp", cfg.int("intermediate_size"), H, i)
    b.norm(f"{p}.input_layernorm", H, i)
    b.norm(f"{p}.post_attention_layernorm", H, i)


def _deepseek_is_moe(cfg: WeightView, i: int) -> bool:
    first = cfg.opt_int("first_k_dense_replace", minimum=0) or 0
    freq = cfg.opt_int("moe_layer_freq", minimum=0) or 1
    return bool(cfg.opt_int("n_routed_experts", minimum=0)) and i >= first and i % freq == 0


def deepseek(cfg: WeightView, b: Builder) -> None:
    """DeepSeek-V2/V3/R1/V3.2 and Kimi-K2: MLA attention (low-rank q and kv projections),
    dense MLP for the first ``first_k_dense_replace`` layers, then routed + shared experts."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    v32 = cfg.v32()
    # a layer that shares the preceding indexer builds none; vLLM's load_weights drops its checkpoint weights
    shared = shared_indexer_layers(cfg, n) if v32 else frozenset()
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        _deepseek_layer(cfg, b, f"model.layers.{i}", i, H, moe=_deepseek_is_moe(cfg, i), v32=v32 and i not in shared)
    b.final(cfg, V, H)


def deepseek_mtp(cfg: WeightView, b: Builder, k: int) -> None:
    """DeepSeek MTP (``num_nextn_predict_layers``): per layer ``enorm``, ``hnorm``,
    ``eh_proj [H, 2H]`` (a plain nn.Linear in vLLM: replicated, unquantized), one decoder
    layer and ``shared_head.norm``; its embedding and head are the target's (vLLM shares
    them; the checkpoint stores copies, which the published 685B counts)."""
    H = cfg.int("hidden_size")
    n = cfg.int("num_hidden_layers")
    v32 = cfg.v32()
    sub = Builder()
    for j in range(k):
        i = n + j
        p = f"model.layers.{i}"
        sub.norm(f"{p}.enorm", H, i)
        sub.norm(f"{p}.hnorm", H, i)
        sub.linear(f"{p}.eh_proj", "mtp", H, 2 * H, i, quantizable=False)
        _deepseek_layer(cfg, sub, p, i, H, moe=_deepseek_is_moe(cfg, i), v32=v32)
        sub.norm(f"{p}.shared_head.norm", H, i)
    b.weights += [replace(w, kind="mtp", stage="last", layer=None) for w in sub.weights]


FAMILY = Family(
    "deepseek", build_deepseek,
    weights=deepseek,
    mtp_weights=deepseek_mtp,
    architectures=(
        "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "AXK1ForCausalLM",
        "KimiK25ForConditionalGeneration", "GlmMoeDsaForCausalLM", "Glm4MoeLiteForCausalLM",
    ),
    model_types=("deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2"),
    config_keys=(
        "first_k_dense_replace", "hidden_size", "index_head_dim", "index_n_heads", "index_topk",
        "intermediate_size", "kv_lora_rank", "moe_intermediate_size", "moe_layer_freq", "n_routed_experts",
        "n_shared_experts", "num_attention_heads", "num_hidden_layers", "q_lora_rank", "qk_nope_head_dim",
        "qk_rope_head_dim", "topk_method", "v_head_dim", "vocab_size",
    ),
)
