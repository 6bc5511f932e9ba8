"""Every bundled catalog model → the layers vLLM 0.33 registers (TP 1, PP 1, bf16, H100/H200 defaults).

Each expectation is derived by hand in its comment; pages are bytes per block:
attention ``block · kv_heads · (head + head_v) · 2`` (bf16), MLA ``block · 576 · 2``,
Mamba the raw state (``Σ prod(shape) · dtype bytes``; the engine pads it later).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from kvplan.errors import UnsupportedError
from kvplan.model import ServingOptions, build_model_layout, load_model_info
from kvplan.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)


def kinds(layout) -> Counter:
    return Counter(l.spec.kind for l in layout.layers)


def full(kv, head, head_v=None, bs=16, dtype="bfloat16"):
    return FullAttentionSpec(block_size=bs, num_kv_heads=kv, head_size=head, dtype=dtype,
                             head_size_v=head if head_v is None else head_v)


def sw(kv, head, window, head_v=None, bs=16, dtype="bfloat16"):
    return SlidingWindowSpec(block_size=bs, num_kv_heads=kv, head_size=head, dtype=dtype,
                             head_size_v=head if head_v is None else head_v, sliding_window=window)


def by_index(layout) -> dict[int, object]:
    return {l.index: l.spec for l in layout.layers}


# ------------------------------------------------------------------ gpt-oss

def test_gpt_oss_20b():
    # layer_idx % 2 == 0 → sliding(128); 24 layers → 0,2,…,22 sliding, 1,3,…,23 full; 8 KV × 64.
    # page: full 16·8·(64+64)·2 = 32768; sliding the same 32768 (one page formula, §12.2).
    L = build_model_layout("openai/gpt-oss-20b")
    specs = by_index(L)
    assert [i for i, s in specs.items() if s.kind == "sliding_window"] == list(range(0, 24, 2))
    assert specs[0] == sw(8, 64, 128) and specs[1] == full(8, 64)
    assert specs[0].page_size_bytes == 2 * 16 * 8 * 64 * 2 == 32768
    assert specs[1].page_size_bytes == 16 * 8 * 128 * 2 == 32768
    assert L.layers[0].name == "model.layers.0.attn.attn"
    # no torch_dtype in the config: vLLM assumes float32 and runs it as bfloat16 (§12.11)
    assert L.target.dtype == "bfloat16" and L.target.family == "gpt_oss"
    assert L.block_size == 16 and L.target.provenance == "genuine"


def test_gpt_oss_120b():
    # 36 layers: 18 sliding(128) + 18 full, 8 KV × 64.
    L = build_model_layout("openai/gpt-oss-120b")
    assert kinds(L) == {"sliding_window": 18, "full_attention": 18}


# ------------------------------------------------------------------ Llama family

@pytest.mark.parametrize("model, n", [
    ("meta-llama/Meta-Llama-3.1-8B", 32),
    ("meta-llama/Meta-Llama-3.1-70B", 80),
    ("meta-llama/Llama-3.3-70B-Instruct", 80),
    ("mistralai/Mixtral-8x7B-v0.1", 32),  # sliding_window null → all full
])
def test_llama_style_all_full(model, n):
    # 8 KV heads, head_dim implicit 4096/32 = 8192/64 = 128 → page 16·8·256·2 = 65536.
    L = build_model_layout(model)
    assert kinds(L) == {"full_attention": n}
    assert all(l.spec == full(8, 128) for l in L.layers)
    assert L.layers[0].spec.page_size_bytes == 16 * 8 * 256 * 2 == 65536


def test_minimax_m25():
    # 62 full layers, 8 KV × 128; no torch_dtype → bf16 (§12.11).
    L = build_model_layout("MiniMaxAI/MiniMax-M2.5")
    assert kinds(L) == {"full_attention": 62} and L.layers[0].spec == full(8, 128)
    assert L.target.dtype == "bfloat16"


def test_phi3_mini_all_sliding():
    # no layer_types, sliding_window 2047 → model-wide window on all 32 layers (§12.1);
    # 32 KV heads (MHA) × 3072/32 = 96 → page 16·32·192·2 = 196608.
    L = build_model_layout("microsoft/Phi-3-mini-4k-instruct")
    assert kinds(L) == {"sliding_window": 32}
    assert L.layers[0].spec == sw(32, 96, 2047)
    assert L.layers[0].spec.page_size_bytes == 16 * 32 * 192 * 2 == 196608


def test_mistral_7b_all_sliding():
    # reconstructed: sliding_window 4096, no layer_types → 32 × sliding(4096), 8 KV × 128.
    L = build_model_layout("mistralai/Mistral-7B-v0.1")
    assert kinds(L) == {"sliding_window": 32} and L.layers[0].spec == sw(8, 128, 4096)
    assert L.target.provenance == "reconstructed"


def test_mistral_without_window_key_defaults_to_4096(tmp_path):
    # MistralConfig's default sliding_window is 4096 (§12.11).
    p = tmp_path / "config.json"
    p.write_text('{"architectures": ["MistralForCausalLM"], "model_type": "mistral", "num_hidden_layers": 2,'
                 ' "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8}')
    L = build_model_layout(str(p))
    assert [l.spec for l in L.layers] == [sw(8, 128, 4096)] * 2


# ------------------------------------------------------------------ Qwen

@pytest.mark.parametrize("model, n, kv", [("Qwen/Qwen3-8B", 36, 8), ("Qwen/Qwen3-32B", 64, 8)])
def test_qwen3_all_full(model, n, kv):
    # use_sliding_window false → all full; head_dim 128 → page 16·8·256·2 = 65536.
    L = build_model_layout(model)
    assert kinds(L) == {"full_attention": n} and L.layers[0].spec == full(kv, 128)


def test_qwen25_head_size_from_hidden():
    # Qwen2: head size = hidden/heads = 3584/28 = 128 (config head_dim ignored, §12.8);
    # sliding_window 131072 but use_sliding_window false → full. 4 KV → page 16·4·256·2 = 32768.
    L = build_model_layout("Qwen/Qwen2.5-7B")
    assert kinds(L) == {"full_attention": 28} and L.layers[0].spec == full(4, 128)
    assert L.layers[0].spec.page_size_bytes == 32768


def test_qwen3_next_gdn():
    # full_attention_interval 4 → layers 3,7,…,47 full (12), the other 36 gated delta net.
    # GDN raw state: conv (4−1, 2·16·128 + 32·128 = 8192) bf16 = 49152 B;
    # ssm (32, 128, 128) bf16 = 1048576 B; total 1097728 (§8.5). Full: 2 KV × 256 → 16·2·512·2 = 32768.
    L = build_model_layout("Qwen/Qwen3-Next-80B-A3B-Thinking")
    specs = by_index(L)
    assert [i for i, s in specs.items() if s.kind == "full_attention"] == list(range(3, 48, 4))
    g = specs[0]
    assert isinstance(g, MambaSpec) and g.mamba_type == "gdn"
    assert g.shapes == ((3, 8192), (32, 128, 128)) and g.dtypes == ("bfloat16", "bfloat16")
    assert g.page_size_bytes == 3 * 8192 * 2 + 32 * 128 * 128 * 2 == 49152 + 1048576
    assert g.block_size == 16 and g.page_size_padded is None  # alignment is the engine's job
    assert specs[3] == full(2, 256)
    assert L.layers[0].name == "model.layers.0.linear_attn" and L.layers[3].name == "model.layers.3.self_attn.attn"
    assert L.target.is_hybrid_mamba


@pytest.mark.parametrize("model, n, kv, v_heads, conv_dim", [
    # conv dim 2·16·128 + v_heads·128; ssm (v_heads, 128, 128) float32 (mamba_ssm_dtype, §12.5)
    ("Qwen/Qwen3.5-27B", 64, 4, 48, 4096 + 48 * 128),
    ("Qwen/Qwen3.5-35B-A3B", 40, 2, 32, 4096 + 32 * 128),
    ("Qwen/Qwen3.5-397B-A17B", 60, 2, 64, 4096 + 64 * 128),
])
def test_qwen35(model, n, kv, v_heads, conv_dim):
    L = build_model_layout(model)
    assert kinds(L) == {"mamba": n * 3 // 4, "full_attention": n // 4}
    g = L.layers[0].spec
    assert g.shapes == ((3, conv_dim), (v_heads, 128, 128)) and g.dtypes == ("bfloat16", "float32")
    assert g.page_size_bytes == 3 * conv_dim * 2 + v_heads * 128 * 128 * 4
    assert L.layers[3].spec == full(kv, 256)
    assert L.layers[0].name == "language_model.model.layers.0.linear_attn"


# ------------------------------------------------------------------ Gemma

def test_gemma2_9b_it():
    # no layer_types: transformers makes even layers sliding(4096); 8 KV × 256 → page 16·8·512·2 = 131072.
    L = build_model_layout("google/gemma-2-9b-it")
    specs = by_index(L)
    assert [i for i, s in specs.items() if s.kind == "sliding_window"] == list(range(0, 42, 2))
    assert specs[0] == sw(8, 256, 4096) and specs[1] == full(8, 256)


@pytest.mark.parametrize("model, n_sw, n_full, kv, head, window", [
    ("google/gemma-3-1b-it", 22, 4, 1, 256, 512),
    ("google/gemma-3-4b-it", 29, 5, 4, 256, 1024),
    ("google/gemma-3-12b-it", 40, 8, 8, 256, 1024),
    ("google/gemma-3-27b-it", 52, 10, 16, 128, 1024),  # §8.2: page 16·16·256·2 = 131072
    ("google/gemma-2-9b", 21, 21, 8, 256, 4096),
])
def test_gemma_layer_types(model, n_sw, n_full, kv, head, window):
    # Gemma 3: layer i is full iff (i + 1) % 6 == 0.
    L = build_model_layout(model)
    assert kinds(L) == {"sliding_window": n_sw, "full_attention": n_full}
    s = [l.spec for l in L.layers if l.spec.kind == "sliding_window"][0]
    assert s == sw(kv, head, window)
    if "gemma-3" in model:
        assert [l.index for l in L.layers if l.spec.kind == "full_attention"] == [i for i in range(n_sw + n_full) if (i + 1) % 6 == 0]


def test_gemma4_26b():
    # §12.7: 25 sliding(1024) 8 KV × 256 → 16·8·512·2 = 131072; 5 full (5, 11, …, 29) with
    # attention_k_eq_v → num_global_key_value_heads 2 × global_head_dim 512 → 16·2·1024·2 = 65536.
    L = build_model_layout("google/gemma-4-26B-A4B")
    specs = by_index(L)
    assert [i for i, s in specs.items() if s.kind == "full_attention"] == [5, 11, 17, 23, 29]
    assert specs[0] == sw(8, 256, 1024) and specs[0].page_size_bytes == 131072
    assert specs[5] == full(2, 512) and specs[5].page_size_bytes == 65536
    assert L.layers[0].name == "language_model.model.layers.0.self_attn.attn"


def test_gemma4_defaults_and_kv_sharing(tmp_path):
    # Gemma4TextConfig defaults: window 512, global_head_dim 512; without attention_k_eq_v the
    # full layers keep num_key_value_heads; the last num_kv_shared_layers layers register nothing.
    p = tmp_path / "config.json"
    p.write_text('{"architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text", "num_hidden_layers": 6,'
                 ' "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,'
                 ' "num_global_key_value_heads": 1, "num_kv_shared_layers": 2}')
    L = build_model_layout(str(p))
    specs = by_index(L)
    assert sorted(specs) == [0, 1, 2, 3]
    assert specs[0] == sw(2, 128, 512)
    assert L.kv_sharing_layers == ("model.layers.4.self_attn.attn", "model.layers.5.self_attn.attn")


def test_gemma3n_kv_sharing(tmp_path):
    # Gemma3nTextConfig defaults (E4B): 35 layers, num_kv_shared_layers 15 → 20 with a cache;
    # pattern 4 sliding(512) : 1 full, 2 KV × 256.
    p = tmp_path / "config.json"
    p.write_text('{"architectures": ["Gemma3nForCausalLM"], "model_type": "gemma3n_text"}')
    L = build_model_layout(str(p))
    assert len(L.layers) == 20 and len(L.kv_sharing_layers) == 15
    assert kinds(L) == {"sliding_window": 16, "full_attention": 4}
    assert L.layers[0].spec == sw(2, 256, 512)


# ------------------------------------------------------------------ Llama 4

def test_llama4_scout():
    # no_rope_layers[i] == 0 (every 4th) → full (12); others chunked(8192) (36); 8 KV × 128 → 65536 (§8.3).
    L = build_model_layout("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert kinds(L) == {"chunked_local": 36, "full_attention": 12}
    c = L.layers[0].spec
    assert c == ChunkedLocalAttentionSpec(block_size=16, num_kv_heads=8, head_size=128, dtype="bfloat16",
                                          attention_chunk_size=8192)
    assert c.page_size_bytes == 2 * 16 * 8 * 128 * 2 == 65536
    assert L.layers[3].spec == full(8, 128)
    assert L.target.attention_chunk_size == 8192


# ------------------------------------------------------------------ Mamba hybrids

def test_nemotron_h_56b():
    # pattern: 54 M + 10 * (+54 MLP '-'); attention 8 KV × attention_head_dim/head_dim 128 → 65536.
    # Mamba2: I = 256·64 = 16384, n_groups 8, d_state 256, conv 4 →
    # conv (3, 16384 + 2·8·256 = 20480) bf16 = 122880; ssm (256, 64, 256) float32 (transformers default) = 16777216.
    L = build_model_layout("nvidia/Nemotron-H-56B-Base-8K")
    assert kinds(L) == {"mamba": 54, "full_attention": 10}
    m = L.layers[0].spec
    assert m.mamba_type == "mamba2" and m.shapes == ((3, 20480), (256, 64, 256))
    assert m.dtypes == ("bfloat16", "float32")
    assert m.page_size_bytes == 122880 + 16777216
    att = [l for l in L.layers if l.spec.kind == "full_attention"]
    assert att[0].name == "model.layers.7.mixer.attn" and att[0].spec == full(8, 128)
    assert L.layers[0].name == "model.layers.0.mixer"
    assert L.target.mamba_chunk_size == 128


def test_nemotron3_nano():
    # 23 M + 6 *; mamba 64 heads × 64, n_groups 8, state 128 → conv (3, 4096 + 2·8·128 = 6144),
    # ssm (64, 64, 128) float32 (mamba_ssm_cache_dtype); attention 2 KV × 128.
    L = build_model_layout("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    assert kinds(L) == {"mamba": 23, "full_attention": 6}
    m = L.layers[0].spec
    assert m.shapes == ((3, 6144), (64, 64, 128)) and m.page_size_bytes == 3 * 6144 * 2 + 64 * 64 * 128 * 4


def test_nemotron_h_head_dim_default(tmp_path):
    # no head_dim → transformers' NemotronHConfig default 128 (§12.11)
    p = tmp_path / "config.json"
    p.write_text('{"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "num_hidden_layers": 2,'
                 ' "hybrid_override_pattern": "M*", "hidden_size": 1024, "num_attention_heads": 16,'
                 ' "num_key_value_heads": 4, "mamba_num_heads": 32, "mamba_head_dim": 64, "n_groups": 1,'
                 ' "ssm_state_size": 128, "conv_kernel": 4}')
    L = build_model_layout(str(p))
    assert L.layers[1].spec == full(4, 128)
    assert L.layers[0].spec.dtypes == ("bfloat16", "float32")


def test_jamba():
    # attention iff i % 8 == 4 → layers 4, 12, 20, 28; Mamba1 I = 2·4096 = 8192, d_state 16, d_conv 4:
    # conv (3, 8192) + ssm (8192, 16), bf16 → (24576 + 131072)·2 = 311296.
    L = build_model_layout("ai21labs/Jamba-v0.1")
    assert [l.index for l in L.layers if l.spec.kind == "full_attention"] == [4, 12, 20, 28]
    m = L.layers[0].spec
    assert m.mamba_type == "mamba1" and m.shapes == ((3, 8192), (8192, 16))
    assert m.page_size_bytes == (3 * 8192 + 8192 * 16) * 2 == 311296
    assert L.layers[4].name == "model.layers.4.attn" and L.layers[0].name == "model.layers.0.mamba"


# ------------------------------------------------------------------ MLA

@pytest.mark.parametrize("model", ["deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1", "moonshotai/Kimi-K2-Instruct"])
def test_deepseek_mla(model):
    # 61 MLA layers: 1 KV head × (512 + 64 = 576), no V → page 16·576·2 = 18432 (§12 "unchanged").
    L = build_model_layout(model)
    assert kinds(L) == {"mla": 61}
    s = L.layers[0].spec
    assert s == MLAAttentionSpec(block_size=16, num_kv_heads=1, head_size=576, dtype="bfloat16", head_size_v=0,
                                 cache_dtype_str="auto")
    assert s.page_size_bytes == 16 * 576 * 2 == 18432


def test_deepseek_v32_indexer_before_latent():
    # §12.9: per layer the indexer k_cache (128 + 128/128·4 = 132 uint8 bytes, cache_dtype_str None)
    # then the 576 latent; default block 64 (FlashMLA-sparse) → pages 64·132 = 8448 and 64·576·2 = 73728.
    L = build_model_layout("deepseek-ai/DeepSeek-V3.2")
    assert L.block_size == 64 and len(L.layers) == 122
    idx, lat = L.layers[0], L.layers[1]
    assert idx.name == "model.layers.0.self_attn.indexer.k_cache" and lat.name == "model.layers.0.self_attn.attn"
    assert idx.spec == MLAAttentionSpec(block_size=64, num_kv_heads=1, head_size=132, dtype="uint8", head_size_v=0)
    assert idx.spec.page_size_bytes == 64 * 132 == 8448
    assert lat.spec.page_size_bytes == 64 * 576 * 2 == 73728
    # same type (MLA), different specs: what makes vLLM form one uniform-type group
    assert type(idx.spec) is type(lat.spec) and idx.spec != lat.spec


GLM53 = "tests/data/arch_configs/HawkBearPig/GLM-5.3-Int4-Int8Mix-RTN-g64"


def test_glm_dsa_index_sharing_layers_own_no_indexer():
    # vLLM 0.34.0 compute_skip_topk_layers (model_executor/models/utils.py; DeepseekV32Attention on CUDA):
    # indexer_types "shared" → no indexer. GLM-5.3's list is freq 4, offset 3: layer i owns one when
    # max(i - 2, 0) % 4 == 0 → 0, 1, 2, 6, 10, …, 74: 3 + 18 = 21 of 78 (the architecture golden holds the same 21).
    L = build_model_layout(GLM53)
    owners = sorted(int(l.name.split(".")[2]) for l in L.layers if "indexer" in l.name)
    assert owners == [0, 1, 2, *range(6, 78, 4)] and len(owners) == 21
    assert len(L.layers) == 78 + 21
    # with MTP the nextn layer (78) always owns one (is_mtp_layer)
    M = build_model_layout(GLM53, options=ServingOptions(speculative_method="mtp", num_speculative_tokens=1))
    assert any(l.name == "model.layers.78.self_attn.indexer.k_cache" and l.source == "drafter" for l in M.layers)


@pytest.mark.parametrize("field, value, problem", [
    ("indexer_types", ["full"] * 3, "one entry per hidden layer (78), got 3"),
    ("indexer_types", ["full"] * 77 + ["dense"], "unknown indexer type 'dense'"),
])
def test_glm_dsa_bad_indexer_types(tmp_path, field, value, problem):
    from kvplan.errors import ConfigError
    raw = json.loads((Path(GLM53) / "config.json").read_text())
    raw[field] = value
    (tmp_path / "config.json").write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=re.escape(problem)):
        build_model_layout(str(tmp_path))


def test_deepseek_v32_fp8_becomes_fp8_ds_mla():
    L = build_model_layout("deepseek-ai/DeepSeek-V3.2", options=ServingOptions(kv_cache_dtype="fp8"))
    lat = L.layers[1].spec
    assert lat.cache_dtype_str == "fp8_ds_mla" and lat.page_size_bytes == 64 * 656
    assert L.kv_cache_dtype == "fp8"


def test_mimo_v2_flash():
    # §12.6: pattern 1 = sliding(sliding_window_size 128), 8 KV (swa) × 192/128 → 16·8·320·2 = 81920;
    # 0 = full, 4 KV × 192/128 → 16·4·320·2 = 40960. attention_chunk_size dropped.
    L = build_model_layout("XiaomiMiMo/MiMo-V2-Flash")
    specs = by_index(L)
    assert kinds(L) == {"sliding_window": 39, "full_attention": 9}
    assert specs[0] == full(4, 192, 128) and specs[0].page_size_bytes == 40960
    assert specs[1] == sw(8, 192, 128, head_v=128) and specs[1].page_size_bytes == 81920
    assert L.target.attention_chunk_size is None


def test_deepseek_v4_flash_caches():
    # V4-Flash: 43 layers, compress_ratios [0, 0, 4, 128, 4, 128, ..., 4] (21 x 4, 20 x 128), head_dim 512,
    # index_head_dim 128, window 128. Pages (0.34.0 AttentionSpec: heads x block_size // tokens_per_state x
    # bytes a state, rounded up to 576):
    #   swa_cache    64 x 584 = 37,376 -> 37,440        C4 attn  256 // 4 x 584 = 37,376 -> 37,440
    #   C128 attn    256 // 128 x 584 = 1,168 -> 1,728   indexer  256 // 4 x (128 + 4) = 8,448 -> 8,640
    #   C4 compressor state   4 x (2 x 2 x 512) x 4 B = 32,768 -> 32,832
    #   C128 compressor state 8 x (2 x 512) x 4 B = 32,768 -> 32,832
    #   indexer compressor    4 x (2 x 2 x 128) x 4 B = 8,192 -> 8,640
    # (the same 167 caches as vLLM 0.34.0 builds: tests/golden/architectures/0.34.0/DeepseekV4ForCausalLM.json)
    L = build_model_layout("deepseek-ai/DeepSeek-V4-Flash")
    assert load_model_info("deepseek-ai/DeepSeek-V4-Flash").family == "deepseek_v4"
    assert len(L.layers) == 43 + 21 + 21 + 41 + 41
    by_name = {ls.name: ls.spec for ls in L.layers}
    assert [ls.name for ls in L.layers[:7]] == [
        "model.layers.0.attn.swa_cache", "model.layers.1.attn.swa_cache", "model.layers.2.attn.indexer.k_cache",
        "model.layers.2.attn.indexer.compressor.state_cache", "model.layers.2.attn.swa_cache", "model.layers.2.attn",
        "model.layers.2.attn.compressor.state_cache"]
    pages = {n: by_name[n].page_size_bytes for n in (
        "model.layers.0.attn.swa_cache", "model.layers.2.attn", "model.layers.3.attn",
        "model.layers.2.attn.indexer.k_cache", "model.layers.2.attn.compressor.state_cache",
        "model.layers.3.attn.compressor.state_cache", "model.layers.2.attn.indexer.compressor.state_cache")}
    assert list(pages.values()) == [37440, 37440, 1728, 8640, 32832, 32832, 8640]
    assert by_name["model.layers.3.attn"].tokens_per_state == 128
    assert by_name["model.layers.3.attn.compressor.state_cache"].block_size == 8
    assert by_name["model.layers.3.attn.compressor.state_cache"].sliding_window == 128


def test_deepseek_v4_refusals():
    from kvplan.api import simulate

    with pytest.raises(UnsupportedError, match="is modelled for vLLM 0.34.0"):
        simulate("deepseek-ai/DeepSeek-V4-Flash", kv_cache_memory="40GiB", policy="vllm==0.33.0")
    with pytest.raises(UnsupportedError, match="--block-size 64"):
        simulate("deepseek-ai/DeepSeek-V4-Flash", kv_cache_memory="40GiB", block_size=64)
    # dflash is one of vLLM 0.34.0's SpeculativeMethod values: refused as not modelled, never as unknown
    # (dspark is modelled for DeepSeek-V4: tests/test_deepseek_v4_drafters.py)
    with pytest.raises(UnsupportedError, match="dflash drafter is not modelled yet"):
        simulate("deepseek-ai/DeepSeek-V4-Flash", kv_cache_memory="40GiB", speculative_method="dflash")


def test_whisper_cross_attention(tmp_path):
    # WhisperConfig defaults: 4 decoder layers, 6 heads, d_model 384 → head 64; each layer a
    # self-attention (full) then a cross-attention cache.
    p = tmp_path / "config.json"
    p.write_text('{"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper", "torch_dtype": "float16"}')
    L = build_model_layout(str(p))
    assert [l.spec.kind for l in L.layers[:2]] == ["full_attention", "cross_attention"]
    assert len(L.layers) == 8 and L.layers[1].name == "model.decoder.layers.0.encoder_attn.attn"
    assert L.layers[0].spec == full(6, 64, dtype="float16")


# ------------------------------------------------------------------ options

def test_kv_cache_dtype_fp8_and_block_backend():
    L = build_model_layout("openai/gpt-oss-20b", options=ServingOptions(kv_cache_dtype="fp8", attention_backend="FLASHINFER"))
    assert L.layers[1].spec == full(8, 64, dtype="uint8") and L.layers[1].spec.page_size_bytes == 16 * 8 * 128
    L = build_model_layout("deepseek-ai/DeepSeek-V3", options=ServingOptions(attention_backend="CUTLASS_MLA"))
    assert L.block_size == 128
    L = build_model_layout("deepseek-ai/DeepSeek-V3", options=ServingOptions(attention_backend="FLASHINFER_MLA"))
    assert L.block_size == 32
    L = build_model_layout("deepseek-ai/DeepSeek-V3", options=ServingOptions(attention_backend="FLASHMLA", block_size=128))
    assert L.block_size == 128


def test_quantization_config_forces_fp8_on_auto(tmp_path):
    import json
    cfg = json.loads(open(build_model_layout("meta-llama/Meta-Llama-3.1-8B").target.source.path).read())
    cfg["quantization_config"] = {"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8, "type": "float"}}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    L = build_model_layout(str(p))
    assert L.layers[0].spec.dtype == "uint8" and L.kv_cache_dtype == "auto"
    cfg["quantization_config"] = {"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"}
    p.write_text(json.dumps(cfg))
    assert build_model_layout(str(p)).layers[0].spec.dtype == "uint8"


def test_dtype_rules(tmp_path):
    import json
    base = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 1,
            "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2}
    p = tmp_path / "config.json"
    # float32 checkpoints run as bfloat16 under --dtype auto (vLLM _resolve_auto_dtype)
    p.write_text(json.dumps({**base, "torch_dtype": "float32"}))
    assert build_model_layout(str(p)).layers[0].spec.dtype == "bfloat16"
    p.write_text(json.dumps({**base, "torch_dtype": "float16"}))
    assert build_model_layout(str(p)).layers[0].spec.dtype == "float16"
    assert build_model_layout(str(p), options=ServingOptions(dtype="float32")).layers[0].spec.dtype == "float32"
    # Gemma 2/3 never run in float16 under auto
    g = json.loads(open(build_model_layout("google/gemma-2-9b-it").target.source.path).read())
    g["torch_dtype"] = "float16"
    p.write_text(json.dumps(g))
    assert build_model_layout(str(p)).target.dtype == "bfloat16"


def test_disable_sliding_window():
    L = build_model_layout("openai/gpt-oss-20b", options=ServingOptions(disable_sliding_window=True))
    assert kinds(L) == {"full_attention": 24}
    L = build_model_layout("mistralai/Mistral-7B-v0.1", options=ServingOptions(disable_sliding_window=True))
    assert kinds(L) == {"full_attention": 32}
