"""Drafter merges, MTP, tensor- and pipeline-parallel splits."""

from __future__ import annotations

from collections import Counter

import pytest

from kvplan.errors import OptionError
from kvplan.model import ServingOptions, build_model_layout, get_pp_indices
from kvplan.specs import FullAttentionSpec, MambaSpec, SlidingWindowSpec


def kinds(layout) -> Counter:
    return Counter(l.spec.kind for l in layout.layers)


GPT_OSS_FULL = FullAttentionSpec(block_size=16, num_kv_heads=8, head_size=64, dtype="bfloat16")


def test_gpt_oss_20b_plus_eagle3():
    # 1-layer LlamaForCausalLMEagle3, 8 KV × 64, no layer_types; gpt-oss is interleaved so
    # cache_config.sliding_window is None → the draft layer is Full and equals the target's full
    # spec: 12 sliding / 13 full (§6, §8.1 table).
    L = build_model_layout("openai/gpt-oss-20b", "sgl-project/SpecForge--gpt-oss-20B-eagle3")
    assert L.speculative_method == "eagle3"
    assert kinds(L) == {"sliding_window": 12, "full_attention": 13}
    d = L.layers[-1]
    assert d.name == "model.layers.24.self_attn.attn" and d.source == "drafter" and d.index == 24
    assert d.spec == GPT_OSS_FULL == L.layers[1].spec
    assert L.drafter is not None and L.drafter.dtype == "bfloat16"


def test_gpt_oss_20b_plus_p_eagle():
    # amazon/GPT-OSS-20B-P-EAGLE: 4 Full layers → 12 sliding / 16 full (PR #36684, §8.1).
    L = build_model_layout("openai/gpt-oss-20b", "amazon/GPT-OSS-20B-P-EAGLE")
    assert kinds(L) == {"sliding_window": 12, "full_attention": 16}
    assert [l.name for l in L.layers[-4:]] == [f"model.layers.{i}.self_attn.attn" for i in range(24, 28)]
    assert all(l.spec == GPT_OSS_FULL for l in L.layers[-4:])


def test_gpt_oss_120b_plus_eagle3():
    # 18 sliding / 19 full (PR #29303)
    L = build_model_layout("openai/gpt-oss-120b", "nvidia/gpt-oss-120b-Eagle3")
    assert kinds(L) == {"sliding_window": 18, "full_attention": 19}


def test_mistral_all_sliding_target_drafter_inherits_window():
    # Mistral-7B-v0.1 is all-sliding (not interleaved) → cache_config.sliding_window = 4096, so an
    # EAGLE-3 drafter without layer_types becomes SlidingWindow(4096) (§6, §12.10). The yuhuili
    # head is a LlamaForCausalLM with draft_vocab_size → eagle3; 8 KV × 4096/32 = 128.
    L = build_model_layout("mistralai/Mistral-7B-v0.1", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    assert L.speculative_method == "eagle3"
    d = L.layers[-1]
    assert d.name == "model.layers.32.self_attn.attn"
    # the drafter config says float16, but auto follows the target's bfloat16
    assert d.spec == SlidingWindowSpec(block_size=16, num_kv_heads=8, head_size=128, dtype="bfloat16", sliding_window=4096)
    assert kinds(L) == {"sliding_window": 33}


def test_drafter_with_own_layer_types(tmp_path):
    # A drafter whose own layer_types says sliding uses its own window, even on an all-full target.
    p = tmp_path / "config.json"
    p.write_text('{"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "num_hidden_layers": 2,'
                 ' "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,'
                 ' "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 512}')
    L = build_model_layout("meta-llama/Meta-Llama-3.1-8B", str(p))
    assert [l.spec.kind for l in L.layers[-2:]] == ["sliding_window", "full_attention"]
    assert L.layers[-2].spec.sliding_window == 512


def test_draft_model_method():
    # An ordinary causal LM as drafter → draft_model: its own family rules, same block size / cache dtype.
    L = build_model_layout("meta-llama/Meta-Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-8B")
    assert L.speculative_method == "draft_model"
    assert len(L.layers) == 80 + 32
    assert L.layers[-1].name == "draft_model.model.layers.31.self_attn.attn" and L.layers[-1].source == "drafter"


def test_peagle_qwen_template_on_qwen3():
    # SpecForge P-EAGLE template: PEagleDraftModel, 4 layers, 8 KV × 128 → equal to Qwen3-8B's full spec.
    L = build_model_layout("Qwen/Qwen3-8B", "sgl-project/SpecForge--qwen3-8b-peagle")
    assert L.speculative_method == "eagle3" and kinds(L) == {"full_attention": 40}
    assert L.layers[-1].spec == L.layers[0].spec


def test_qwen3_next_mtp():
    # MTP: one full_attention decoder layer (num_nextn_predict_layers absent → vLLM's default 1),
    # named mtp.layers.0.self_attn.attn, equal to the target's full layers (2 KV × 256).
    # num_speculative_tokens 2 → conv (3 + 2, 8192), num_speculative_blocks 2 (§8.5).
    L = build_model_layout("Qwen/Qwen3-Next-80B-A3B-Thinking", options=ServingOptions(num_speculative_tokens=2))
    assert L.speculative_method == "mtp" and L.num_speculative_tokens == 2
    assert kinds(L) == {"mamba": 36, "full_attention": 13}
    m = L.layers[-1]
    assert m.name == "mtp.layers.0.self_attn.attn" and m.source == "drafter" and m.spec == L.layers[3].spec
    g = L.layers[0].spec
    assert isinstance(g, MambaSpec) and g.shapes[0] == (5, 8192) and g.num_speculative_blocks == 2
    assert g.page_size_bytes == 5 * 8192 * 2 + 32 * 128 * 128 * 2 == 1130496


def test_qwen35_mtp_needs_num_tokens():
    # MTP gets no default: vLLM builds the draft config (whose n_predict = mtp_num_hidden_layers) only
    # once num_speculative_tokens is given (0.34.0 config/speculative.py lines 1386-1389), so
    # SpeculativeConfig._verify_args refuses it (run for DeepSeek-V3 in 0.18.0, 0.33.0 and 0.34.0:
    # tests/data/prechecks_vllm.json deepseek-v3-mtp-no-num-tokens). The layout is marked and built with 0.
    L = build_model_layout("Qwen/Qwen3.5-27B", options=ServingOptions(speculative_method="mtp"))
    assert L.num_speculative_tokens_missing and L.num_speculative_tokens == 0
    assert L.layers[0].spec.shapes[0][0] == 3 + 0  # conv kernel 4 - 1, no speculative rows
    # given: mtp_num_hidden_layers 1 layer, the conv state grows by the tokens
    L = build_model_layout("Qwen/Qwen3.5-27B", options=ServingOptions(speculative_method="mtp", num_speculative_tokens=1))
    assert not L.num_speculative_tokens_missing and L.layers[0].spec.shapes[0][0] == 3 + 1
    assert L.layers[-1].name == "mtp.layers.0.self_attn.attn"


def test_deepseek_mtp():
    # num_nextn_predict_layers 1 → model.layers.61.self_attn.attn, identical MLA spec.
    L = build_model_layout("deepseek-ai/DeepSeek-V3", options=ServingOptions(speculative_method="mtp"))
    assert len(L.layers) == 62 and L.layers[-1].name == "model.layers.61.self_attn.attn"
    assert L.layers[-1].spec == L.layers[0].spec and L.drafter is None


def test_mtp_refused_without_mtp_layers():
    with pytest.raises(OptionError, match="needs MTP layers"):
        build_model_layout("moonshotai/Kimi-K2-Instruct", options=ServingOptions(speculative_method="mtp"))
    with pytest.raises(OptionError, match="needs a --drafter"):
        build_model_layout("openai/gpt-oss-20b", options=ServingOptions(num_speculative_tokens=3))


def test_mamba_hybrid_drafter_needs_num_tokens(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "num_hidden_layers": 1,'
                 ' "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256}')
    # no num_speculative_tokens and no n_predict: the layout is built with 0 and marked; vLLM's
    # SpeculativeConfig refuses it at start-up (0.34.0 text; tests/test_prechecks.py)
    L = build_model_layout("Qwen/Qwen3-Next-80B-A3B-Thinking", str(p))
    assert L.num_speculative_tokens_missing and L.layers[0].spec.num_speculative_blocks == 0
    import kvplan

    r = kvplan.simulate("Qwen/Qwen3-Next-80B-A3B-Thinking", drafter=str(p), kv_cache_memory="40GiB")
    assert (r["outcome"]["stage"], r["outcome"]["error"]) == (
        "config.speculative", "A speculative model was provided, but `num_speculative_tokens` was not provided")
    L = build_model_layout("Qwen/Qwen3-Next-80B-A3B-Thinking", str(p), ServingOptions(num_speculative_tokens=3))
    assert L.layers[0].spec.num_speculative_blocks == 3 and L.layers[-1].name == "model.layers.48.self_attn.attn"


# ------------------------------------------------------------------ TP / PP

def test_tp2_splits_heads():
    # gpt-oss: 8 KV heads / 2 = 4 per rank → page 16·4·128·2 = 16384.
    L = build_model_layout("openai/gpt-oss-20b", options=ServingOptions(tensor_parallel_size=2))
    assert L.layers[1].spec.num_kv_heads == 4 and L.layers[1].spec.page_size_bytes == 16384
    # Qwen3-Next GDN: conv (3, 8192/2), ssm (32/2, 128, 128); full 2 KV / 2 = 1.
    L = build_model_layout("Qwen/Qwen3-Next-80B-A3B-Thinking", options=ServingOptions(tensor_parallel_size=2))
    assert L.layers[0].spec.shapes == ((3, 4096), (16, 128, 128)) and L.layers[3].spec.num_kv_heads == 1


def test_tp_replicates_few_kv_heads_and_mla():
    # 2 KV heads over TP 8 → max(1, 2 // 8) = 1 (replicated); MLA always 1 KV head.
    L = build_model_layout("Qwen/Qwen3-Next-80B-A3B-Thinking", options=ServingOptions(tensor_parallel_size=8))
    assert L.layers[3].spec.num_kv_heads == 1
    L = build_model_layout("deepseek-ai/DeepSeek-V3", options=ServingOptions(tensor_parallel_size=8))
    assert L.layers[0].spec.num_kv_heads == 1


def test_nemotron_groups_padded_for_tp():
    # n_groups 8 over TP 16: 8 % 16 != 0 → g' = 8 + (16 - 8) = 16; conv (3, (16384 + 2·16·256)/16 = 1536).
    L = build_model_layout("nvidia/Nemotron-H-56B-Base-8K", options=ServingOptions(tensor_parallel_size=16))
    assert L.layers[0].spec.shapes == ((3, 1536), (16, 64, 256))


def test_tp_must_divide_heads():
    # vLLM's ModelConfig.verify_with_parallel_config: a start-up failure (exit 3), not a layout error
    import kvplan

    r = kvplan.simulate("openai/gpt-oss-20b", tensor_parallel_size=3, kv_cache_memory="40GiB")
    assert r["outcome"]["error"] == "Total number of attention heads (64) must be divisible by tensor parallel size (3)."


def test_pp_indices_match_vllm():
    # vLLM get_pp_indices: remainder to the partitions before the last.
    assert [get_pp_indices(24, r, 2) for r in range(2)] == [(0, 12), (12, 24)]
    assert [get_pp_indices(61, r, 4) for r in range(4)] == [(0, 15), (15, 30), (30, 46), (46, 61)]
    assert [get_pp_indices(10, r, 4) for r in range(4)] == [(0, 2), (2, 5), (5, 8), (8, 10)]  # 2 each, +1 to the 2nd and 3rd


def test_pp2_partition_with_drafter():
    L = build_model_layout("openai/gpt-oss-20b", "amazon/GPT-OSS-20B-P-EAGLE",
                           ServingOptions(pipeline_parallel_size=2))
    assert len(L.ranks) == 2
    assert L.ranks[0] == tuple(f"model.layers.{i}.attn.attn" for i in range(12))
    assert L.ranks[1][:12] == tuple(f"model.layers.{i}.attn.attn" for i in range(12, 24))
    assert L.ranks[1][12:] == tuple(f"model.layers.{i}.self_attn.attn" for i in range(24, 28))


def test_pp_v32_keeps_indexer_with_its_layer():
    L = build_model_layout("deepseek-ai/DeepSeek-V3.2", options=ServingOptions(pipeline_parallel_size=2))
    # 61 layers over 2: [31, 30] (the extra layer goes to the first)
    assert len(L.ranks[0]) == 2 * 31 and L.ranks[1][0] == "model.layers.31.self_attn.indexer.k_cache"
