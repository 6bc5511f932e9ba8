"""DeepSeek-V4 (vLLM 0.34.0 ``models/deepseek_v4/``): sliding-window MLA, compressed latent and indexer
caches, compressor states."""

from __future__ import annotations

from kvplan.errors import ConfigError, UnsupportedError
from kvplan.model.families.base import Built, Context, FamilyResult
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView
from kvplan.specs import MLAAttentionSpec, SlidingWindowMLASpec
from kvplan.units import plural


# DeepSeek-V4's cache block: the DEEPSEEK_V4_INDEXER backend's only kernel block size (vLLM 0.34.0
# v1/attention/backends/mla/indexer.py lines 303-305: "Block sizes count uncompressed tokens: C4 indexer
# pages hold 64 rows"); the compressed latent and indexer caches take cache_config.block_size
DSV4_BLOCK_SIZE = 256


DSV4_SWA_BLOCK_SIZE = 64  # DeepseekV4SWACache's block_size default (v1/attention/backends/mla/sparse_swa.py line 85)


DSV4_PACKED_STATE_BYTES = 584  # fp8_ds_mla: 448 B NoPE + 128 B RoPE + 8 B scale (attention.py lines 837-839)


DSV4_FP8_DS_MLA_ALIGNMENT = 576  # the fp8_ds_mla page's padding multiple (attention.py line 834)


def deepseek_v4_swa_spec(view: HFView) -> SlidingWindowMLASpec:
    """``attn.swa_cache`` of a DeepSeek-V4 decoder layer (DeepseekV4SWACache.get_kv_cache_spec,
    v1/attention/backends/mla/sparse_swa.py 0.34.0 lines 120-147): block 64, ``sliding_window``, 584 B a
    token in fp8_ds_mla, pages padded to 576 B. The MTP and DSpark layers own only this cache."""
    return SlidingWindowMLASpec(block_size=DSV4_SWA_BLOCK_SIZE, num_kv_heads=1, head_size=view.int("head_dim"),
                                dtype="uint8", sliding_window=view.int("sliding_window"), cache_dtype_str="fp8_ds_mla",
                                state_content_bytes=DSV4_PACKED_STATE_BYTES, alignment=DSV4_FP8_DS_MLA_ALIGNMENT,
                                model_version="deepseek_v4")


def mtp_layers(view: HFView, count: int, target_layers: int, last_index: int) -> list[Built]:
    """DeepSeekV4MTP's layers: V4 decoder layers past ``num_hidden_layers``, so compress ratio 1 (attention.py
    0.34.0 lines 236-243): each its ``attn.swa_cache`` only, named ``model.layers.{N+i}.attn.swa_cache``
    (tests/golden/architectures/0.34.0/DeepSeekV4MTPModel.json)."""
    spec = deepseek_v4_swa_spec(view)
    return [Built(f"model.layers.{target_layers + i}.attn.swa_cache", spec, last_index) for i in range(count)]


# DSparkDeepseekV4Model's stage count without n_mtp_layers (models/deepseek_v4/nvidia/dspark.py 0.34.0 line 106)
DSV4_DSPARK_DEFAULT_LAYERS = 3


def dspark_layers(view: HFView, family: str, target_layers: int, last_index: int) -> list[Built]:
    """The DeepSeek-V4 DSpark drafter vLLM 0.34.0 builds from the target's own checkpoint
    (``DSparkSpeculatorConfig.adapt_draft_model_config``: the target config as ``DSparkDraftModel``):
    ``n_mtp_layers`` (else 3) DeepSeek-V4 decoder layers named ``model.layers.{N+i}``, each past
    ``num_hidden_layers`` so its compress ratio is 1 (attention.py lines 236-243): one ``attn.swa_cache``,
    the target's sliding-window spec (tests/golden/architectures/0.34.0/DSparkDraftModel.json)."""
    if family != "deepseek_v4":
        raise UnsupportedError(f"--speculative-method dspark: vLLM's DSpark drafters for the {family} family are not "
                               "modelled yet; kvplan models DeepSeek-V4's (its stages in the target checkpoint)")
    if view.get("dspark_target_layer_ids") is None:
        raise ConfigError(view.path, view.field("dspark_target_layer_ids"), "missing: vLLM's DeepSeek-V4 DSpark "
                          "drafter reads it (its stages ship in the target checkpoint)", "serve a checkpoint with DSpark "
                          "stages (DeepSeek-V4-Flash-DSpark), or use --speculative-method mtp")
    count = view.int("n_mtp_layers", 0, minimum=0) or DSV4_DSPARK_DEFAULT_LAYERS
    return mtp_layers(view, count, target_layers, last_index)


def dspark_block_size(view: HFView) -> int | None:
    """vLLM's default num_speculative_tokens for dspark (``DSparkSpeculatorConfig.resolve_num_speculative_tokens``,
    v1/worker/gpu/spec_decode/dspark/config.py 0.34.0 lines 82-90): ``block_size``, else ``dspark_block_size``."""
    v = view.opt_int("block_size")
    return v if v is not None else view.opt_int("dspark_block_size")


def build_deepseek_v4(view: HFView, ctx: Context) -> FamilyResult:
    """DeepSeek-V4 as vLLM 0.34.0 registers its caches (vllm/models/deepseek_v4/attention.py,
    compressor.py, v1/attention/backends/mla/sparse_swa.py), per decoder layer ``i`` with
    ``r = compress_ratios[i]``:

    * r == 4: ``attn.indexer.k_cache`` (MLA, head ``index_head_dim`` + 4 scale bytes, uint8, one state
      per 4 tokens) and ``attn.indexer.compressor.state_cache`` (float32 window state of
      2 x 2 x ``index_head_dim``, block 4, window 8);
    * every layer: ``attn.swa_cache`` (sliding-window MLA, block 64, window ``sliding_window``, 584 bytes
      a token in fp8_ds_mla);
    * r > 1: ``attn`` (the compressed latent cache, MLA, one 584-byte state per r tokens) and
      ``attn.compressor.state_cache`` (float32 of 2 x coff x ``head_dim``, coff = 2 for r == 4 else 1;
      block 4 for r == 4, 8 for r == 128; window coff x r).

    Every page is padded to 576 bytes (fp8_ds_mla, the layout vLLM resolves any fp8 or auto cache dtype
    to: attention.py lines 95-130). The MTP layers past ``num_hidden_layers`` belong to the drafter."""
    arch = (view.raw.get("architectures") or ["DeepseekV4ForCausalLM"])[0]
    if ctx.cache_dtype_str not in ("auto", "fp8", "fp8_e4m3", "fp8_ds_mla"):
        raise UnsupportedError(f"{arch}: --kv-cache-dtype {ctx.cache_dtype_str} is not modelled for DeepSeek-V4 "
                               "(kvplan models its fp8_ds_mla layout: auto or fp8)")
    n = view.int("num_hidden_layers")
    ratios = list(view.get("compress_ratios") or [])
    if len(ratios) < n:
        raise ConfigError(ctx.path, view.field("compress_ratios"), f"{len(ratios)} entries for {n} layers",
                          "give one compress ratio per decoder layer")
    head_dim, index_head_dim = view.int("head_dim"), view.int("index_head_dim")
    window = view.int("sliding_window")
    align = DSV4_FP8_DS_MLA_ALIGNMENT
    block = DSV4_BLOCK_SIZE

    def state(bs: int, dim: int, w: int) -> SlidingWindowMLASpec:
        return SlidingWindowMLASpec(block_size=bs, num_kv_heads=1, head_size=dim, dtype="float32",
                                    sliding_window=w, alignment=align)

    swa = deepseek_v4_swa_spec(view)
    indexer = MLAAttentionSpec(block_size=block, num_kv_heads=1, head_size=index_head_dim + 4, head_size_v=0,
                               dtype="uint8", tokens_per_state=4, alignment=align)
    memo: dict = {}
    layers: list[Built] = []
    for i in range(n):
        r = ratios[i]
        p = f"model.layers.{i}.attn"
        if isinstance(r, bool) or r not in (0, 1, 4, 128):
            raise ConfigError(ctx.path, view.field(f"compress_ratios[{i}]"), f"{r!r} is not a ratio vLLM's "
                              "DeepSeek-V4 compressor takes", "use 4 or 128 (1 or 0: no compression)")
        r = int(r)
        if r == 4:
            layers.append(Built(f"{p}.indexer.k_cache", indexer, i))
            layers.append(Built(f"{p}.indexer.compressor.state_cache",
                                memo.setdefault(("ix", r), state(4, 2 * 2 * index_head_dim, 2 * r)), i))
        layers.append(Built(f"{p}.swa_cache", swa, i))
        if r > 1:
            coff = 2 if r == 4 else 1
            latent = memo.setdefault(("mla", r), MLAAttentionSpec(
                block_size=block, num_kv_heads=1, head_size=head_dim, head_size_v=0, dtype="uint8",
                cache_dtype_str="fp8_ds_mla", tokens_per_state=r, state_content_bytes=DSV4_PACKED_STATE_BYTES,
                alignment=align, model_version="deepseek_v4"))
            layers.append(Built(p, latent, i))
            layers.append(Built(f"{p}.compressor.state_cache",
                                memo.setdefault(("c", r), state(4 if r == 4 else 8, 2 * coff * head_dim, coff * r)), i))
    c4 = sum(1 for r in ratios[:n] if int(r) == 4)
    c128 = sum(1 for r in ratios[:n] if int(r) == 128)
    ctx.notes.append(f"deepseek_v4: {plural(n, 'layer')} with a {window}-token sliding-window cache; {c4} compress "
                     f"4 tokens a state (with an indexer), {c128} compress 128; fp8_ds_mla pages padded to {align} B")
    return FamilyResult(layers, num_hidden_layers=n)



def deepseek_v4(cfg: WeightView, b: Builder) -> None:
    """DeepSeek-V4's weights as vLLM 0.34.0 builds them (``models/deepseek_v4/nvidia/model.py``, ``attention.py``,
    ``compressor.py``; names and shapes held equal to the class built on the meta device,
    ``tests/golden/architectures/0.34.0-params/``). Per decoder layer ``i`` with ``r = compress_ratios[i]``:

    * hyper-connections (model.py lines 617-667): ``hc_{attn,ffn}_fn [(2+m)·m, m·H]``, ``_base [(2+m)·m]``,
      ``_scale [3]`` with ``m = hc_mult``, float32, replicated; ``attn_norm``/``ffn_norm [H]``;
    * attention (attention.py lines 245-330): ``attn_sink [heads]`` float32; ``fused_wqa_wkv
      [q_lora + head_dim, H]`` replicated; ``q_norm``, ``wq_b [heads·head_dim, q_lora]`` column-split; ``kv_norm``;
      ``wo_a [o_groups·o_lora, heads·head_dim/o_groups]`` (grouped, column-split), ``wo_b [H, o_groups·o_lora]``
      row-split; all fp8-quantizable;
    * r == 4: the indexer (``wq_b [index_heads·index_head_dim, q_lora]`` replicated, quantizable;
      ``weights_proj [index_heads, H]`` unquantized) and its compressor (coff 2, ``index_head_dim``);
    * r > 1: the compressor (compressor.py lines 266-295): ``ape [r, coff·head_dim]`` float32,
      ``fused_wkv_wgate [2·coff·head_dim, H]`` unquantized, replicated; ``norm [head_dim]``; coff = 2 when r == 4;
    * the MoE (model.py lines 251-335): ``gate [E, H]`` (GateLinear, the model dtype), on the first
      ``num_hash_layers`` a ``tid2eid [vocab, top-k]`` int32 table, else ``e_score_correction_bias [E]`` float32;
      shared experts (gated, ``moe_intermediate_size · n_shared_experts``) and the routed experts.

    Beside: ``embed_tokens``, ``hc_head_{fn [m, m·H], base [m], scale [1]}`` float32, ``norm``, ``lm_head``. The
    MTP layers are the drafter's. Not counted: the per-rank padding of ``attn_sink`` to the sparse backend's
    head count (``get_padded_num_q_heads``, at most 4 bytes a head) and the shared experts' rounding of
    ``moe_intermediate_size`` to 128·tp (none while tp divides its 128-blocks: 16 on V4-Flash)."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads, hd = cfg.int("num_attention_heads"), cfg.int("head_dim")
    q_lora, o_lora, groups = cfg.int("q_lora_rank"), cfg.int("o_lora_rank"), cfg.int("o_groups")
    m, E = cfg.int("hc_mult"), cfg.int("n_routed_experts")
    ratios = list(cfg.get("compress_ratios") or [])
    hash_layers = cfg.int("num_hash_layers", 0, minimum=0)
    topk = cfg.int("num_experts_per_tok")
    inter = cfg.int("moe_intermediate_size")
    shared = inter * (cfg.opt_int("n_shared_experts", minimum=0) or 0)

    def fp32(name: str, shape: tuple[int, ...], layer: int | None, *, stage: str = "layer") -> None:
        b.add(name, "other", shape, layer, stage=stage, dtype="float32")

    def compressor(p: str, i: int, r: int, dim: int) -> None:
        coff = 2 if r == 4 else 1
        fp32(f"{p}.ape", (r, coff * dim), i)
        b.linear(f"{p}.fused_wkv_wgate", "attention", 2 * coff * dim, H, i, quantizable=False)
        b.norm(f"{p}.norm", dim, i)

    b.embed("model.embed_tokens.weight", V, H)
    fp32("model.hc_head_fn", (m, m * H), None, stage="last")
    fp32("model.hc_head_base", (m,), None, stage="last")
    fp32("model.hc_head_scale", (1,), None, stage="last")
    for i in range(n):
        p = f"model.layers.{i}"
        r = int(ratios[i]) if i < len(ratios) else 0
        for part in ("attn", "ffn"):
            fp32(f"{p}.hc_{part}_fn", ((2 + m) * m, m * H), i)
            fp32(f"{p}.hc_{part}_base", ((2 + m) * m,), i)
            fp32(f"{p}.hc_{part}_scale", (3,), i)
        a = f"{p}.attn"
        b.add(f"{a}.attn_sink", "attention", (heads,), i, shard=0, dtype="float32")
        b.linear(f"{a}.fused_wqa_wkv", "attention", q_lora + hd, H, i)
        b.norm(f"{a}.q_norm", q_lora, i)
        b.linear(f"{a}.wq_b", "attention", heads * hd, q_lora, i, split="col")
        b.norm(f"{a}.kv_norm", hd, i)
        b.linear(f"{a}.wo_a", "attention", groups * o_lora, heads * hd // groups, i, split="col")
        b.linear(f"{a}.wo_b", "attention", H, groups * o_lora, i, split="row")
        if r == 4:
            ih, idim = cfg.int("index_n_heads"), cfg.int("index_head_dim")
            b.linear(f"{a}.indexer.wq_b", "attention", ih * idim, q_lora, i)
            b.linear(f"{a}.indexer.weights_proj", "attention", ih, H, i, quantizable=False)
            compressor(f"{a}.indexer.compressor", i, r, idim)
        if r > 1:
            compressor(f"{a}.compressor", i, r, hd)
        f = f"{p}.ffn"
        b.linear(f"{f}.gate", "router", E, H, i, quantizable=False)
        if i < hash_layers:
            b.add(f"{f}.gate.tid2eid", "router", (V, topk), i, dtype="int32")
        else:
            b.add(f"{f}.gate.e_score_correction_bias", "router", (E,), i, dtype="float32")
        if shared:
            b.linear(f"{f}.shared_experts.gate_up_proj", "mlp", 2 * shared, H, i, split="col")
            b.linear(f"{f}.shared_experts.down_proj", "mlp", H, shared, i, split="row")
        b.add(f"{f}.experts.routed_experts.w13_weight", "experts", (E, 2 * inter, H), i, shard=1, linear=True,
              expert=True)
        b.add(f"{f}.experts.routed_experts.w2_weight", "experts", (E, H, inter), i, shard=2, linear=True,
              expert=True)
        b.norm(f"{p}.attn_norm", H, i)
        b.norm(f"{p}.ffn_norm", H, i)
    b.final(cfg, V, H)


FAMILY = Family(
    "deepseek_v4", build_deepseek_v4,
    weights=deepseek_v4,
    architectures=("DeepseekV4ForCausalLM",),
    model_types=("deepseek_v4",),
    config_keys=(
        "architectures", "block_size", "compress_ratios", "dspark_block_size", "dspark_target_layer_ids", "hc_mult",
        "head_dim", "hidden_size", "index_head_dim", "index_n_heads", "moe_intermediate_size", "n_mtp_layers",
        "n_routed_experts", "n_shared_experts", "num_attention_heads", "num_experts_per_tok", "num_hash_layers",
        "num_hidden_layers", "o_groups", "o_lora_rank", "q_lora_rank", "sliding_window", "vocab_size",
    ),
)
