"""DeepSeek-V4 (vLLM 0.34.0 ``models/deepseek_v4/``): sliding-window MLA, compressed latent and indexer
caches, compressor states."""

from __future__ import annotations

from kvplan.errors import ConfigError, UnsupportedError
from kvplan.model.families.base import Built, Context, FamilyResult
from kvplan.model.families.record import Family
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
        raise ConfigError(ctx.path, "compress_ratios", f"has {len(ratios)} entries for {n} layers",
                          "give one compress ratio per decoder layer")
    head_dim, index_head_dim = view.int("head_dim"), view.int("index_head_dim")
    window = view.int("sliding_window")
    align = DSV4_FP8_DS_MLA_ALIGNMENT
    block = DSV4_BLOCK_SIZE

    def state(bs: int, dim: int, w: int) -> SlidingWindowMLASpec:
        return SlidingWindowMLASpec(block_size=bs, num_kv_heads=1, head_size=dim, dtype="float32",
                                    sliding_window=w, alignment=align)

    swa = SlidingWindowMLASpec(block_size=DSV4_SWA_BLOCK_SIZE, num_kv_heads=1, head_size=head_dim, dtype="uint8",
                               sliding_window=window, cache_dtype_str="fp8_ds_mla",
                               state_content_bytes=DSV4_PACKED_STATE_BYTES, alignment=align,
                               model_version="deepseek_v4")
    indexer = MLAAttentionSpec(block_size=block, num_kv_heads=1, head_size=index_head_dim + 4, head_size_v=0,
                               dtype="uint8", tokens_per_state=4, alignment=align)
    memo: dict = {}
    layers: list[Built] = []
    for i in range(n):
        r = int(ratios[i])
        p = f"model.layers.{i}.attn"
        if r not in (0, 1, 4, 128):
            raise ConfigError(ctx.path, f"compress_ratios[{i}]", f"{r} is not a ratio vLLM's DeepSeek-V4 compressor "
                              "takes", "use 4 or 128 (1 or 0: no compression)")
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


FAMILY = Family(
    "deepseek_v4", build_deepseek_v4,
    architectures=("DeepseekV4ForCausalLM",),
    model_types=("deepseek_v4",),
    config_keys=(
        "architectures", "compress_ratios", "head_dim", "index_head_dim", "num_hidden_layers", "sliding_window",
    ),
)
