"""Parameter counts and weight bytes from the config alone (kvplan.budget), no torch.

Each count is written as the arithmetic of the model's shapes, then compared with the size
its publisher states; quantized bytes likewise. The meta-device cross-check is in
test_weights_meta.py (needs torch).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.errors import UnsupportedError
from kvplan.units import GiB
from kvplan.model.inventory import Weight, analytic_inventory, drafter_inventory
from kvplan.budget.quant_kernels import (
    MOE_GOLDEN_RELEASES, kept_expert_bytes, moe_backend, moe_layer_bytes,
)
from kvplan.budget.quantization import (
    NO_QUANTIZATION, Quantization, quantization_of, quantization_override, tensor_bytes,
)
from kvplan.budget.weights import layout_weight_memory, layout_weights, weight_memory
from kvplan.model import ServingOptions, build_model_layout

ROOT = Path(__file__).resolve().parent.parent


def cfg(model_id: str) -> dict:
    return json.loads((ROOT / "configs" / model_id / "config.json").read_text())


def count(model_id: str, **kw) -> int:
    return analytic_inventory(cfg(model_id), **kw).num_params()


# --- parameter counts against published sizes ------------------------------------------


def test_llama_3_1_8b_is_8_03b():
    # embed + lm_head 128256·4096 each; 32 layers of q,o 4096² + k,v 1024·4096 + gate,up,down
    # 3·4096·14336 + two norms 4096; final norm 4096. Published: 8.03 B.
    H, V, I, L = 4096, 128256, 14336, 32
    layer = 2 * H * H + 2 * 1024 * H + 3 * H * I + 2 * H
    expected = 2 * V * H + L * layer + H
    assert expected == 8_030_261_248
    assert count("meta-llama/Meta-Llama-3.1-8B") == expected


def test_llama_3_1_70b_is_70_6b():
    # 80 layers, H 8192, 64 q / 8 kv heads of 128, I 28672: published "70B" (70.6 B on the Hub).
    H, V, I, L = 8192, 128256, 28672, 80
    layer = 2 * H * H + 2 * 1024 * H + 3 * H * I + 2 * H
    assert count("meta-llama/Meta-Llama-3.1-70B") == 2 * V * H + L * layer + H == 70_553_706_496


def test_gpt_oss_20b_is_20_9b():
    # Per layer: q 4096·2880 + k,v 512·2880 each + o 2880·4096, with their biases (4096 + 2·512
    # + 2880) and 64 sinks; router 32·2880 + 32; 32 experts of gate_up 5760·2880 (+5760 bias)
    # and down 2880·2880 (+2880 bias); two norms. Published: 20.9 B ("21B", 3.6 B active).
    H, V = 2880, 201088
    attn = 4096 * H + 2 * 512 * H + H * 4096 + (4096 + 2 * 512 + H) + 64
    router = 32 * H + 32
    experts = 32 * (5760 * H + 5760 + H * 2880 + H)
    layer = attn + router + experts + 2 * H
    expected = 2 * V * H + 24 * layer + H
    assert expected == 20_914_757_184
    assert count("openai/gpt-oss-20b") == expected


def test_gpt_oss_120b_is_116_8b():
    # 36 layers, 128 experts, otherwise the 20b's shapes. Published: 116.8 B ("117B").
    H, V = 2880, 201088
    attn = 4096 * H + 2 * 512 * H + H * 4096 + (4096 + 2 * 512 + H) + 64
    layer = attn + (128 * H + 128) + 128 * (5760 * H + 5760 + H * 2880 + H) + 2 * H
    assert count("openai/gpt-oss-120b") == 2 * V * H + 36 * layer + H == 116_829_156_672


def _deepseek_v3_layer(moe: bool) -> int:
    H = 7168
    # MLA: q_a 1536·H, q_a norm 1536, q_b 128·192·1536, kv_a (512+64)·H, kv_a norm 512,
    # kv_b 128·(128+128)·512, o H·128·128.
    attn = 1536 * H + 1536 + 128 * 192 * 1536 + 576 * H + 512 + 128 * 256 * 512 + H * 128 * 128
    if moe:  # router 256·H (+256 correction bias), 256 experts + 1 shared of I 2048
        mlp = 256 * H + 256 + 256 * 3 * H * 2048 + 3 * H * 2048
    else:  # dense I 18432
        mlp = 3 * H * 18432
    return attn + mlp + 2 * H


def test_deepseek_v3_is_671b_plus_mtp_685b():
    # 3 dense + 58 MoE layers, embed and head 129280·7168, final norm: 671.03 B, the "671B"
    # DeepSeek states. transformers keeps the 58 router correction biases as buffers, so
    # its count (and the Hub's "671B") has 58·256 fewer.
    H, V = 7168, 129280
    main = 2 * V * H + 3 * _deepseek_v3_layer(False) + 58 * _deepseek_v3_layer(True) + H
    inv = analytic_inventory(cfg("deepseek-ai/DeepSeek-V3"))
    assert inv.num_params() == main
    assert inv.num_params(include_buffers=False) == main - 58 * 256 == 671_026_404_352
    # The MTP module (num_nextn_predict_layers 1): enorm, hnorm, eh_proj H·2H, one MoE layer,
    # shared_head.norm — plus, in the checkpoint, its own copies of embed and head. That is the
    # "14B MTP" that makes the Hub's 685 B total.
    mtp = 2 * H + 2 * H * H + _deepseek_v3_layer(True) + H
    with_mtp = analytic_inventory(cfg("deepseek-ai/DeepSeek-V3"), include_mtp=True)
    assert with_mtp.num_params() == main + mtp
    checkpoint_total = main + mtp + 2 * V * H
    assert round(checkpoint_total / 1e9) == 684 and abs(checkpoint_total - 685e9) / 685e9 < 0.001
    assert with_mtp.by_kind()["mtp"] == mtp


@pytest.mark.parametrize(
    "model_id, published, tolerance",
    [
        # (model, the size its publisher or the Hub states, relative tolerance of that rounding)
        ("Qwen/Qwen3-8B", 8.2e9, 0.01),  # Qwen: "8.2B" (tied: no; 151936 vocab)
        ("Qwen/Qwen3-32B", 32.8e9, 0.01),  # "32.8B"
        ("Qwen/Qwen2.5-7B", 7.61e9, 0.01),  # "7.61B"
        ("mistralai/Mistral-7B-v0.1", 7.24e9, 0.01),  # "7.24B"
        ("mistralai/Mixtral-8x7B-v0.1", 46.7e9, 0.01),  # "46.7B total"
        ("microsoft/Phi-3-mini-4k-instruct", 3.8e9, 0.01),  # "3.8B"
        ("moonshotai/Kimi-K2-Instruct", 1.04e12, 0.02),  # "1T total" (1.03 T on the Hub)
        ("MiniMaxAI/MiniMax-M2.5", 229e9, 0.01),  # "229B"
        ("XiaomiMiMo/MiMo-V2-Flash", 309e9, 0.01),  # "309B total"
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", 80e9, 0.01),  # "80B total"
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6e9, 0.01),  # "31.6B total"
        ("ai21labs/Jamba-v0.1", 52e9, 0.01),  # "52B total"
        ("google/gemma-2-9b", 9.24e9, 0.01),  # "9B" (9.24 B on the Hub)
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 108e9, 0.01),  # "109B total" incl. ~1 B vision
    ],
)
def test_published_sizes(model_id, published, tolerance):
    n = count(model_id)
    assert abs(n - published) / published < tolerance, f"{model_id}: {n:,} vs {published:,.0f}"


def test_multimodal_counts_the_text_decoder_and_says_so():
    inv = analytic_inventory(cfg("google/gemma-3-27b-it"))
    # Gemma 3 27B text decoder: per layer q, o 4096·5376 each + k, v 2048·5376 each (16 KV
    # heads of 128) + q/k norms 2·128 + MLP 3·5376·21504 + four norms 4·5376 = 412,898,560;
    # 62 layers + tied embedding 262208·5376 + final norm 5376 = 27,009,346,304
    # ("27B"; the 0.42 B vision tower is not counted).
    assert inv.num_params() == 62 * 412_898_560 + 262208 * 5376 + 5376 == 27_009_346_304
    assert any("vision tower" in n for n in inv.notes)
    assert not inv.by_kind().get("lm_head")  # tied


def test_unsupported_family_names_the_override():
    # Whisper's family has a layer rule and no weight rule (the config vLLM 0.34.0 built it from)
    golden = ROOT / "tests" / "golden" / "architectures" / "0.34.0" / "WhisperForConditionalGeneration.json"
    with pytest.raises(UnsupportedError, match="--weights-memory"):
        analytic_inventory(json.loads(golden.read_text())["config"])


def test_eagle3_head_shares_the_embedding_and_keeps_its_lm_head():
    # yuhuili EAGLE-3 for Llama-3.1-8B: one layer whose q/k/v read 2·4096 inputs, fc 3·4096 → 4096,
    # MLP 3·4096·14336, four norms (input, hidden, post-attention, final), lm_head 32000·4096.
    H = 4096
    layer = 2 * H * H + 2 * 2 * H * 1024 + H * H + 3 * H * 14336 + 3 * H
    expected = layer + 3 * H * H + H + 32000 * H
    inv = drafter_inventory(cfg("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"), "eagle3", cfg("meta-llama/Meta-Llama-3.1-8B"))
    assert inv.num_params() == expected == 424_689_664


# --- bytes: dtype, quantization, exclusions ------------------------------------------------


def test_quantization_schemes_from_configs():
    assert quantization_of(cfg("meta-llama/Meta-Llama-3.1-8B")).method == "none"
    q = quantization_of(cfg("openai/gpt-oss-20b"))
    assert (q.method, q.experts_only) == ("mxfp4", True)
    q = quantization_of(cfg("deepseek-ai/DeepSeek-V3"))
    assert (q.method, q.block) == ("fp8", (128, 128))
    q = quantization_of(cfg("MiniMaxAI/MiniMax-M2.5"))
    assert "gate" in q.exclude and "lm_head" in q.exclude
    with pytest.raises(UnsupportedError, match="--weights-memory"):
        quantization_of({"quantization_config": {"quant_method": "hqq"}})


def test_tensor_bytes_per_method():
    # mxfp4: 4 bits per value + one e8m0 byte per 32 values = 4.25 bits.
    assert tensor_bytes((32, 5760, 2880), Quantization("mxfp4", ""), True, 2) == 32 * 5760 * (2880 // 2 + 2880 // 32)
    # fp8 block 128×128: one byte per value + an fp32 scale per block (DeepSeek q_b_proj).
    fp8 = Quantization("fp8", "", block=(128, 128))
    assert tensor_bytes((24576, 1536), fp8, True, 2) == 24576 * 1536 + (24576 // 128) * (1536 // 128) * 4
    # ragged blocks round up: kv_a 576 rows → 5 row blocks
    assert tensor_bytes((576, 7168), fp8, True, 2) == 576 * 7168 + 5 * 56 * 4
    # nvfp4: 4 bits + an fp8 scale per 16 values (4.5 bits) + the fp32 weight global scale and input scale.
    assert tensor_bytes((4096, 4096), Quantization("nvfp4", ""), True, 2) == 4096 * (2048 + 256) + 8
    # bitsandbytes 4-bit: absmax fp32 per 64 values; double quant: a byte per 64 + fp32 per 256 blocks.
    n = 4096 * 4096
    assert tensor_bytes((4096, 4096), Quantization("bnb_4bit", ""), True, 2) == n // 2 + n // 64 * 4
    assert tensor_bytes((4096, 4096), Quantization("bnb_4bit", "", double_quant=True), True, 2) == \
        n // 2 + n // 64 + n // 64 // 256 * 4
    # gptq 4-bit group 128: packed values + fp16 scale + packed zero per (row, group) + the int32 g_idx per input
    # column an AutoGPTQ checkpoint stores.
    assert tensor_bytes((4096, 4096), Quantization("gptq", "", bits=4, group_size=128), True, 2) == \
        n // 2 + 4096 * 32 * 2 + 4096 * 32 // 2 + 4096 * 4
    # not converted: dtype bytes
    assert tensor_bytes((4096, 4096), NO_QUANTIZATION, False, 2) == 2 * n


def test_gpt_oss_20b_bytes_mxfp4_experts_bf16_rest():
    # Experts' weights 24·32·(5760·2880 + 2880·2880) values at 4.25 bits; everything else
    # (attention, router, biases, embed, head, norms) bf16. The checkpoint is 13.8 GB.
    inv = analytic_inventory(cfg("openai/gpt-oss-20b"))
    m = weight_memory([inv], "bfloat16", quant=quantization_of(cfg("openai/gpt-oss-20b")))
    expert_values = 24 * 32 * (5760 * 2880 + 2880 * 2880)
    rest = inv.num_params() - expert_values
    assert m.stages[0].weight_bytes == expert_values * 17 // 32 + 2 * rest == 13_761_264_768
    assert round(m.stages[0].weight_bytes / 1e9, 1) == 13.8


def test_deepseek_v3_fp8_keeps_router_embed_head_norms_in_bf16():
    c = cfg("deepseek-ai/DeepSeek-V3")
    inv = analytic_inventory(c)
    q = quantization_of(c)
    converted = [w for w in inv.weights if q.converts(w)]
    assert converted and all(w.kind in ("attention", "mlp", "experts") for w in converted)
    assert not any(w.kind in ("router", "embedding", "lm_head", "norm") for w in converted)
    main = weight_memory([inv], "bfloat16", quant=q).stages[0]
    # By hand, fp8(r, k) = r·k + 4·⌈r/128⌉·⌈k/128⌉ per converted matrix, bf16 (2 B) elsewhere; H 7168.
    #   attention: q_a fp8(1536, H) 11,012,736 + q_b fp8(24576, 1536) 37,757,952 + kv_a
    #     fp8(576, H) 4,129,888 + kv_b fp8(32768, 512) 16,781,312 + o fp8(H, 16384) 117,469,184
    #     + q_a/kv_a norms 2·(1536 + 512) = 4,096                               → 187,155,168
    #   dense MLP: gate, up fp8(18432, H) and down fp8(H, 18432), 132,152,832 each → 396,458,496
    #   MoE: router 2·256·H = 3,670,016 + correction bias 512; 256 experts of w13 fp8(4096, H)
    #     = 29,367,296 and w2 fp8(H, 2048) = 14,683,648; shared expert 3 · 14,683,648
    #                                                                            → 11,324,763,136
    #   each layer's two norms 2·2·H = 28,672
    #   3 dense layers 583,642,336 + 58 MoE layers 11,511,946,976 + embed and head 2·129280·H·2
    #   + final norm 14,336 = 673,150,582,112 B
    assert main.weight_bytes == 673_150_582_112
    # The Hub's checkpoint (688.6 GB of safetensors) adds the MTP layer in fp8 and its own
    # bf16 copies of embed and head (2 · 129280 · 7168 · 2 B).
    with_mtp = weight_memory([analytic_inventory(c, include_mtp=True)], "bfloat16", quant=q).stages[0]
    checkpoint = with_mtp.weight_bytes + 2 * 129280 * 7168 * 2
    assert abs(checkpoint - 688.6e9) / 688.6e9 < 0.001


def test_minimax_modules_to_not_convert_are_honoured():
    c = cfg("MiniMaxAI/MiniMax-M2.5")
    q = quantization_of(c)
    inv = analytic_inventory(c)
    gates = [w for w in inv.weights if w.name.endswith("mlp.gate.weight")]
    assert gates and not any(q.converts(w) for w in gates)


# --- per rank: tensor and pipeline parallelism ----------------------------------------------


def test_llama_8b_per_rank_matches_vllm_logs():
    # vLLM logged "model weights take 14.96GiB" (TP 1) and 7.48GiB (TP 2) for Llama-3-8B (PR #10511).
    inv = analytic_inventory(cfg("meta-llama/Meta-Llama-3.1-8B"))
    assert round(weight_memory([inv], "bfloat16").stages[0].weight_bytes / GiB, 2) == 14.96
    assert round(weight_memory([inv], "bfloat16", tp=2).stages[0].weight_bytes / GiB, 2) == 7.48


def test_kv_heads_replicate_past_tp():
    # 8 KV heads at tp 16: every rank keeps one head (vLLM's QKVParallelLinear), q splits 32 → 2.
    inv = analytic_inventory(cfg("meta-llama/Meta-Llama-3.1-8B"))
    k = next(w for w in inv.weights if w.name.endswith("layers.0.self_attn.k_proj.weight"))
    q = next(w for w in inv.weights if w.name.endswith("layers.0.self_attn.q_proj.weight"))
    assert k.rank_shape(16) == (128, 4096) and k.rank_shape(4) == (256, 4096)
    assert q.rank_shape(16) == (256, 4096)


def test_vocab_parallel_pads_to_64():
    # Phi-3's 32064 rows are already a multiple of 64; a 32001-row vocabulary pads to 32064.
    w = Weight("model.embed_tokens.weight", "embedding", (32001, 4096), vocab=True)
    assert w.rank_shape(1) == (32064, 4096) and w.rank_shape(2) == (16032, 4096)


def test_mla_low_rank_projections_replicate():
    inv = analytic_inventory(cfg("deepseek-ai/DeepSeek-V3"))
    qa = next(w for w in inv.weights if w.name.endswith("layers.0.self_attn.q_a_proj.weight"))
    qb = next(w for w in inv.weights if w.name.endswith("layers.0.self_attn.q_b_proj.weight"))
    assert qa.rank_shape(8) == qa.shape and qb.rank_shape(8) == (24576 // 8, 1536)


def test_pipeline_stages_hold_their_layers_and_the_ends():
    inv = analytic_inventory(cfg("meta-llama/Meta-Llama-3.1-8B"))
    m = weight_memory([inv], "bfloat16", pp=2)
    H, V = 4096, 128256
    layer = 2 * H * H + 2 * 1024 * H + 3 * H * 14336 + 2 * H
    s0, s1 = m.stages
    assert s0.num_params == V * H + 16 * layer  # embedding + layers 0-15
    assert s1.num_params == 16 * layer + H + V * H  # layers 16-31 + norm + lm_head
    assert s0.bytes_by_kind.get("lm_head") is None and s1.bytes_by_kind.get("embedding") is None


def test_tied_embedding_is_held_by_both_ends_under_pp():
    inv = analytic_inventory(cfg("google/gemma-2-9b"))
    one = weight_memory([inv], "bfloat16").stages[0].num_params
    s0, s1 = weight_memory([inv], "bfloat16", pp=2).stages
    assert s0.num_params + s1.num_params == one + 256000 * 3584  # the lm_head copy


def test_drafter_weights_sit_on_the_last_stage():
    t = analytic_inventory(cfg("meta-llama/Meta-Llama-3.1-8B"))
    d = drafter_inventory(cfg("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"), "eagle3", cfg("meta-llama/Meta-Llama-3.1-8B"))
    alone = weight_memory([t], "bfloat16", pp=2)
    both = weight_memory([t, d], "bfloat16", pp=2)
    assert both.stages[0].weight_bytes == alone.stages[0].weight_bytes
    # the EAGLE-3 head's 424,689,664 parameters (test above), bf16, all on stage 1
    assert both.stages[1].weight_bytes == alone.stages[1].weight_bytes + 2 * 424_689_664


def test_layout_weight_memory_takes_tp_from_the_layout():
    # Issue 10's bug: the layout's tensor-parallel size was read from a field ModelLayout did
    # not have, so a TP-2 layout was weighed at TP 1 (16,060,522,496 B per rank).
    # Llama-3.1-8B at TP 2, bf16, per rank, by hand:
    #   embed and lm_head: 128256 rows (already a multiple of 64) / 2 = 64128 · 4096 = 262,668,288 each
    #   per layer: q 2048·4096 = 8,388,608; k, v 4 of 8 KV heads · 128 · 4096 = 2,097,152 each;
    #              o 4096·2048 = 8,388,608; gate, up 7168·4096 and down 4096·7168 = 29,360,128 each;
    #              two norms 2·4096 = 8,192 (replicated)  → 109,060,096
    #   32 layers 3,489,923,072 + final norm 4,096
    #   = 2·262,668,288 + 3,489,923,072 + 4,096 = 4,015,263,744 parameters = 8,030,527,488 B
    # (vLLM logged 7.48 GiB for Llama-3-8B at TP 2, PR #10511: 8,030,527,488 / 2^30 = 7.479.)
    # Beside them every rank holds the llama3 rotary table (kvplan.budget.rotary): 131,072 rows
    # (max_position_embeddings) of the 128-wide head, bf16: 33,554,432 B (Llama-3-8B's 8,192 rows: 2 MiB, still 7.48).
    from kvplan.budget.weights import layout_weight_memory
    from kvplan.model import ServingOptions, build_model_layout

    layout = build_model_layout("meta-llama/Meta-Llama-3.1-8B", None, ServingOptions(tensor_parallel_size=2))
    m = layout_weight_memory(layout)
    assert m.tensor_parallel_size == 2
    assert m.stages[0].num_params == 4_015_263_744
    assert m.stages[0].weight_bytes == 8_030_527_488 + 33_554_432
    assert m.stages[0].bytes_by_kind["rotary"] == 33_554_432


def test_qwen3_next_mtp_weights_follow_the_model_layers_count():
    # Qwen3-Next's config has neither mtp_num_hidden_layers nor num_nextn_predict_layers: vLLM
    # builds one MTP layer (its default 1) and kvplan's KV side registers it; the weight count
    # used to read mtp_num_hidden_layers alone and counted none. One MTP layer, H 2048, by hand:
    #   pre_fc norms 2·2048 = 4,096; fc 2048·4096 = 8,388,608
    #   attention: q (16 heads · 256 · 2 for the output gate) 8192·2048 = 16,777,216; k, v 512·2048
    #     = 1,048,576 each; o 2048·4096 = 8,388,608; q_norm, k_norm 256 each → 27,263,488
    #   MoE: router 512·2048 = 1,048,576; 512 experts · (1024·2048 + 2048·512) = 1,610,612,736;
    #     shared expert 3·512·2048 = 3,145,728; its gate 2,048 → 1,614,809,088
    #   two layer norms 4,096; final mtp.norm 2,048
    #   = 4,096 + 8,388,608 + 27,263,488 + 1,614,809,088 + 4,096 + 2,048 = 1,650,471,424
    from kvplan.budget.weights import layout_weight_memory
    from kvplan.model import ServingOptions, build_model_layout

    layout = build_model_layout("Qwen/Qwen3-Next-80B-A3B-Thinking", None,
                                ServingOptions(speculative_method="mtp", num_speculative_tokens=1))
    assert [ls.name for ls in layout.layers if ls.source == "drafter"] == ["mtp.layers.0.self_attn.attn"]
    assert layout_weight_memory(layout).num_params_by_kind["mtp"] == 1_650_471_424


def test_one_family_registry_holds_every_weight_rule():
    # kvplan.model.families.FAMILIES is the only family table, derived from one module per family, and a family's
    # rules are one record: its layer rule and weight rules are the functions themselves (no name looked up). A
    # decoder rule takes (cfg, b), an MTP rule (cfg, b, k); every rule written in a family module is some family's,
    # and each family's rules live in its own module (qwen2 reuses llama's, as vLLM's Qwen2 is Llama-shaped).
    import inspect

    from kvplan.model.families import FAMILIES, MODULES

    decoder = {f.weights for f in FAMILIES.values() if f.weights}
    mtp = {f.mtp_weights for f in FAMILIES.values() if f.mtp_weights}
    assert all(list(inspect.signature(r).parameters) == ["cfg", "b"] for r in decoder)
    assert all(list(inspect.signature(r).parameters) == ["cfg", "b", "k"] for r in mtp)
    rules = {fn for m in MODULES for name, fn in vars(m).items()
             if inspect.isfunction(fn) and fn.__module__ == m.__name__ and not name.startswith("_")
             and list(inspect.signature(fn).parameters)[:2] == ["cfg", "b"]}
    assert decoder | mtp == rules
    assert {m.FAMILY.key: m.FAMILY.layers.__module__ for m in MODULES} == {m.FAMILY.key: m.__name__ for m in MODULES}
    # no weight count (the user passes --weights-memory): Whisper and the issue-23 and issue-35 rules
    # checked against vLLM's model classes for their KV layers only
    assert {k for k, f in FAMILIES.items() if f.weights is None} == {
        "whisper", "generic", "mamba", "mamba2", "falcon_h1", "granite_hybrid", "zamba2", "lfm",
        "kimi_linear", "beam", "hy_v4", "minicpm3", "zaya", "bagel"}
    assert {k for k, f in FAMILIES.items() if f.mtp} == {"deepseek", "gdn"}



# --- MXFP4 experts as vLLM's Marlin MoE backend allocates them (kvplan.budget.weights.padded_expert_shape) ---

def test_gpt_oss_20b_on_an_a100_counts_the_marlin_padding():
    """gpt-oss-20b on an A100 (compute capability 8.0: the Marlin MXFP4 MoE backend). vLLM 0.34.0
    fused_moe/oracle/mxfp4.py 850-855 pads the hidden size to 256 (2880 → 3072) and the intermediate
    size per rank to 128 (2880 → 2944). Per layer, 32 experts, 4-bit values + one e8m0 scale per 32:
      checkpoint: w13 32·5760·2880/2 + 32·5760·90 + w2 32·2880·2880/2 + 32·2880·90 = 423,014,400 B
      padded:     w13 32·5888·3072/2 + 32·5888·96 + w2 32·3072·2944/2 + 32·3072·92 = 461,242,368 B
      biases (bf16): w13 32·5760·2 → 32·5888·2 (+8,192 B), w2 32·2880·2 → 32·3072·2 (+12,288 B)
    24 layers: + 24 · (38,227,968 + 20,480) = 917,962,752 B on top of the unpadded count.
    Public logs of gpt-oss-20b on an A100 print "Model loading took 13.72 GiB" with the MXFP4/MARLIN
    backend (kvplan: 13.67 GiB, −0.36 %)."""
    from factories import budget_of
    from kvplan.engines.vllm import get_era

    layout = build_model_layout("openai/gpt-oss-20b")
    plain = layout_weight_memory(layout).stages[0].weight_bytes
    b = budget_of(layout, get_era("vllm==0.19.0"), gpu="A100-80GB", gpu_memory_utilization=0.65)
    assert b.weights_bytes - plain == 24 * (38_227_968 + 20_480)
    assert abs(b.weights_bytes / GiB / 13.72 - 1) < 0.02
    assert any("Marlin MoE backend" in n for n in b.weights.notes)
    # an H100 (9.0) takes Triton in 0.19.0 (test_gpt_oss_on_an_h100_follows_each_release_s_mxfp4_backend)
    assert not any("Marlin MoE backend" in n for n in budget_of(layout, get_era("vllm==0.19.0"), gpu="H100").weights.notes)


def test_gpt_oss_120b_tp4_on_a100_pads_the_rank_intermediate():
    # TP 4: intermediate per rank 2880 / 4 = 720 → 768 (scales 720/32 = 22.5 blocks is not even whole
    # before the padding); hidden 2880 → 3072. 36 layers, 128 experts per rank.
    from kvplan.budget.weights import MARLIN_MXFP4_PADDING

    layout = build_model_layout("openai/gpt-oss-120b", None, ServingOptions(tensor_parallel_size=4))
    plain = layout_weight_memory(layout).stages[0].weight_bytes
    padded = layout_weight_memory(layout, mxfp4_padding=MARLIN_MXFP4_PADDING).stages[0].weight_bytes
    # per layer, padded:   w13 128·1536·3072/2 + 128·1536·96 = 320,864,256; w2 128·3072·768/2 + 128·3072·24
    #                      = 160,432,128; biases 128·1536·2 + 128·3072·2 = 1,179,648 → 482,476,032
    #            unpadded: w13 128·1440·2880/2 + 128·1440·90 = 282,009,600; w2 128·2880·720/2 + 128·2880·23
    #                      = 141,189,120; biases 128·1440·2 + 128·2880·2 = 1,105,920 → 424,304,640
    assert padded - plain == 36 * (482_476_032 - 424_304_640)
    assert abs(padded / GiB / 17.22 - 1) < 0.02  # vLLM 0.10.1.1 logged 17.22 GiB per rank (issue 24)


def test_gpt_oss_120b_on_an_h100_under_vllm_0_10_1_pads_as_marlin():
    """vLLM 0.10.1 and 0.10.1.1 pin torch==2.7.1, and their Mxfp4MoEMethod._should_use_marlin
    (model_executor/layers/quantization/mxfp4.py:123-135) picks Marlin on any CUDA card but cc 10.0 while
    torch < 2.8.0: on an H100 the experts get Marlin's padding, as the H100 log of vllm issue #23278 shows
    (the Marlin FP4 warning, 'Model loading took 65.9651 GiB'). TP 1: intermediate 2880 → 2944 (128),
    hidden 2880 → 3072 (256); per layer, 128 experts:
      padded:   w13 128·5888·3072/2 + scales 128·5888·96 = 1,157,627,904 + 72,351,744
                w2  128·3072·2944/2 + scales 128·3072·92 =   578,813,952 + 36,175,872
                biases 128·5888·2 + 128·3072·2 = 2,293,760                      → 1,847,263,232
      unpadded: w13 128·5760·1440 + 128·5760·90 = 1,061,683,200 + 66,355,200
                w2  128·2880·1440 + 128·2880·90 =   530,841,600 + 33,177,600
                biases 128·5760·2 + 128·2880·2 = 2,211,840                      → 1,694,269,440
    36 layers × 152,993,792 = 5,507,776,512 bytes more than the checkpoint's layout."""
    from factories import budget_of
    from kvplan.budget.weights import mxfp4_padding_for, MARLIN_MXFP4_PADDING
    from kvplan.engines.vllm import get_era

    assert mxfp4_padding_for((9, 0), "cuda", "0.10.1.1") == MARLIN_MXFP4_PADDING
    assert mxfp4_padding_for((12, 0), "cuda", "0.10.1") == MARLIN_MXFP4_PADDING
    assert mxfp4_padding_for((10, 0), "cuda", "0.10.1.1") is None  # B200: not Marlin
    # Triton (vendored), scales kept; 0.17-0.21's swizzle pads the packed values to 64 B, the scale rows to 256
    assert mxfp4_padding_for((9, 0), "cuda", "0.19.0") == (64, 1, 4, 1, 64, 256, 2)
    assert mxfp4_padding_for((9, 0), "cuda", "0.14.1") == (64, 1, 4, 1, 1, 256, 2)  # scale rows only
    assert mxfp4_padding_for((9, 0), "cuda", "0.25.1") == (64, 1, 4, 0, 1, 256, 2)  # Triton, old scales deleted
    assert mxfp4_padding_for((9, 0), "cuda", "0.26.0") == (64, 1, 4, 0, 1, 256, 4)  # scale columns to 4 first
    assert mxfp4_padding_for((9, 0), "rocm", "0.10.1.1") is None
    layout = build_model_layout("openai/gpt-oss-120b")
    plain = layout_weight_memory(layout).stages[0].weight_bytes
    b = budget_of(layout, get_era("vllm==0.10.1.1"), gpu="H100-80GB")
    assert b.weights_bytes - plain == 36 * (1_847_263_232 - 1_694_269_440) == 5_507_776_512
    assert abs(b.weights_bytes / GiB / 65.9651 - 1) < 0.002  # the log: 65.9651 GiB (kvplan 65.897)


def _weights_term(b):
    return next(t for t in b.profile_terms if t.term == "weights")


# The Triton path's extra bytes per layer and expert at TP 1 (kvplan.budget.weights.TRITON_MXFP4_PADDING):
# expert biases bf16 → float32, +2 B per element: w13 5760·2 + w2 2880·2 = 17,280; the checkpoint's block scales
# kept beside their swizzled copy (through 0.24): w13 5760·90 + w2 2880·90 = 777,600.
TRITON_BIASES, TRITON_KEPT_SCALES = 17_280, 777_600
# 0.19.0's Hopper swizzle at TP 1 (tests/golden/quant_weights/moe/triton_kernels/0.19.0.json): packed values
# 1440 B → 1472 B per row (w13 5760 rows, w2 2880: 8640·32 = 276,480), scale rows w13 5760 → 5888 and w2
# 2880 → 3072 (90 columns: 320·90 = 28,800)
TRITON_SWIZZLE_TP1 = 276_480 + 28_800
# from 0.26 (scale columns to 4, then rows to 256; the checkpoint's copy deleted from 0.25): w13 5888·92 − 5760·90 =
# 23,296, w2 3072·92 − 2880·90 = 23,424 (the triton_kernels goldens of 0.29.0 / 0.34.0)
TRITON_SWIZZLED_SCALES_0_26 = 23_296 + 23_424


@pytest.mark.parametrize("model,layers,experts,marlin_per_layer", [
    # Marlin per layer at TP 1 (intermediate 2880 → 2944, hidden 2880 → 3072): 20b 38,227,968 + 20,480 bias
    # bytes (test_gpt_oss_20b_on_an_a100_counts_the_marlin_padding), 120b 1,847,263,232 − 1,694,269,440
    # (test_gpt_oss_120b_on_an_h100_under_vllm_0_10_1_pads_as_marlin)
    ("openai/gpt-oss-20b", 24, 32, 38_227_968 + 20_480),
    ("openai/gpt-oss-120b", 36, 128, 1_847_263_232 - 1_694_269_440),
])
def test_gpt_oss_on_an_h100_follows_each_release_s_mxfp4_backend(model, layers, experts, marlin_per_layer):
    """H100 (cc 9.0), TP 1, release by release (kvplan.budget.weights.mxfp4_padding_for):
    - 0.11.0: get_mxfp4_backend (quantization/mxfp4.py:85-105) takes Marlin when triton_kernels is missing,
      as in a pip install (the wheel neither requires nor vendors it), Triton when it is installed: the value
      is Marlin's padded count, the weights band's low end Triton's (intermediate 2880 = 45·64 unpadded, biases
      float32, scales kept: 20b 24·32·794,880 = 610,467,840 B, 120b 36·128·794,880 = 3,662,807,040 B over the
      checkpoint's layout) less the 1 % band, WEIGHTS_BAND.
    - 0.19.0: triton_kernels is vendored (vllm/third_party/triton_kernels) and TRITON is the first backend of
      the priority list an SM90 card supports (fused_moe/oracle/mxfp4.py:174-183): Triton's count, no second
      path, the band ±1 % around it.
    - 0.34.0: Triton, the swizzled scales stored in the parameters (oracle/mxfp4.py:1454-1460): the biases and
      the swizzled scales' padding, 17,280 + 46,720 per layer and expert."""
    from factories import budget_of
    from kvplan.engines.vllm import get_era

    layout = build_model_layout(model)
    plain = layout_weight_memory(layout).stages[0].weight_bytes
    triton_kept = plain + layers * experts * (TRITON_BIASES + TRITON_KEPT_SCALES)
    b = budget_of(layout, get_era("vllm==0.11.0"), gpu="H100-80GB")
    assert b.weights_bytes - plain == layers * marlin_per_layer
    term = _weights_term(b)
    assert (term.low_bytes, term.high_bytes) == (round(triton_kept * 0.99), round(b.weights_bytes * 1.01))
    b = budget_of(layout, get_era("vllm==0.19.0"), gpu="H100-80GB")
    swizzled = triton_kept + layers * experts * TRITON_SWIZZLE_TP1
    assert b.weights_bytes == swizzled
    term = _weights_term(b)
    assert (term.low_bytes, term.high_bytes) == (round(swizzled * 0.99), round(swizzled * 1.01))
    assert any("Triton MoE backend" in n for n in b.weights.notes)
    b = budget_of(layout, get_era("vllm==0.34.0"), gpu="H100-80GB")
    assert b.weights_bytes == plain + layers * experts * (TRITON_BIASES + TRITON_SWIZZLED_SCALES_0_26)


@pytest.mark.parametrize("model,layers,experts", [("openai/gpt-oss-20b", 24, 32), ("openai/gpt-oss-120b", 36, 128)])
def test_gpt_oss_tp2_on_an_h100_pads_the_rank_intermediate_to_64_under_triton(model, layers, experts):
    """TP 2 on an H100 under Triton (fused_moe/oracle/mxfp4.py
    mxfp4_round_up_hidden_size_and_intermediate_size: 0.19.0 lines 398-399, 0.34.0 lines 900-901, the
    intermediate rounded up to 64, the hidden size kept): per rank 2880 / 2 = 1440 → 1472. Per layer and expert,
    4-bit values + one e8m0 scale per 32:
      w13 [2·1440, 2880] → [2·1472, 2880]: values 64·2880/2 = 92,160, scales 64·90 = 5,760
      w2  [2880, 1440]   → [2880, 1472]:   values 2880·32/2 = 46,080, scales 2880·1 = 2,880
      w13 bias (bf16) 2·1440 → 2·1472: 64·2 = 128;  w2 bias [2880] unchanged
    = 147,008 B of padding; biases in float32: +2·(2944 + 2880) = 11,648 B (0.34.0: 158,656 per expert);
    0.19.0 also keeps the padded scales: w13 2944·90 + w2 2880·46 = 397,440 B (556,096 per expert), and its
    Hopper swizzle pads (TRITON_MXFP4_PADDING_VALUES_PADDED; the triton_kernels golden's i1440 case): w13's packed
    rows 1440 → 1472 B (2944·32 = 94,208), its scale rows 2944 → 3072 (128·90 = 11,520), w2's packed rows
    736 → 768 B (2880·32 = 92,160), its scale rows 2880 → 3072 (192·46 = 8,832): 206,720 (762,816 per expert);
    0.34.0's swizzled scales (columns to 4, rows to 256): w13 3072·92 − 2944·90 = 17,664, w2 3072·48 − 2880·46 =
    14,976: 32,640 (191,296 per expert)."""
    from factories import budget_of
    from kvplan.engines.vllm import get_era

    layout = build_model_layout(model, None, ServingOptions(tensor_parallel_size=2))
    plain = layout_weight_memory(layout).stages[0].weight_bytes
    for release, per_expert in (("0.19.0", 556_096 + 206_720), ("0.34.0", 158_656 + 32_640)):
        b = budget_of(layout, get_era(f"vllm=={release}"), gpu="H100-80GB")
        assert b.weights_bytes - plain == layers * experts * per_expert


# --- the model stage counts the weights when a budget will read them (ModelLayout.inventory) ---

def _deployment(model: str, **options):
    from kvplan.usecases.scenario import scenario_from

    return scenario_from(model, options).deployment


@pytest.mark.parametrize("options,counted", [
    ({"gpu": "H100-80GB"}, True),  # a budget estimated from the card: weights and activation from the inventory
    ({"gpu": "H100-80GB", "weights_memory": 15 * GiB}, True),  # the activation estimate still reads the inventory
    ({"gpu": "H100-80GB", "weights_memory": 15 * GiB, "activation_memory": GiB}, False),  # both given
    ({"gpu": "H100-80GB", "kv_cache_memory": 40 * GiB}, False),  # a KV size given: no budget is estimated
    ({"kv_cache_memory": 40 * GiB}, False),
])
def test_the_model_stage_counts_the_weights_only_for_a_budget(options, counted):
    from kvplan.usecases.scenario import run_deployment

    d = _deployment("openai/gpt-oss-20b", **options)
    assert d.budget.counts_weights is counted
    layout = run_deployment(d, fixes=False).layout
    assert (layout.inventory is not None) is counted
    if counted:
        # the same count as the model layer's own entry for the config (what kv_budget falls back on)
        assert layout.inventory.target == analytic_inventory(cfg("openai/gpt-oss-20b"), family="gpt_oss",
                                                             path=layout.target.source.path)
        assert layout.inventory.stored is layout.inventory.target and layout.inventory.drafter is None


def test_the_model_stage_counts_mtp_and_drafter_weights():
    from kvplan.model.inventory import layout_inventory
    from kvplan.usecases.scenario import run_deployment

    # DeepSeek-V3 without MTP: vLLM loads no MTP layer, the checkpoint stores one (num_nextn_predict_layers 1)
    layout = run_deployment(_deployment("deepseek-ai/DeepSeek-V3", gpu="H200", tensor_parallel_size=8),
                            fixes=False).layout
    inv = layout.inventory
    assert inv.target.num_params(kinds=("mtp",)) == 0 < inv.stored.num_params(kinds=("mtp",))
    assert inv == layout_inventory(layout)  # the library's count of a layout built without one agrees
    # an EAGLE-3 head: its own weights, the fc over the target's hidden states (3 x 4096 -> 4096)
    layout = run_deployment(_deployment("meta-llama/Meta-Llama-3.1-8B", gpu="H100-80GB",
                                        drafter="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"), fixes=False).layout
    fc = next(w for w in layout.inventory.drafter.weights if w.name == "model.fc.weight")
    assert fc.shape == (4096, 3 * 4096)
    assert layout.inventory == layout_inventory(layout)


# --- DeepSeek-V4 (issues 35/36): the weight rule against vLLM 0.34.0's class built on the meta device ---

def _dsv4_parameters() -> list:
    import json

    path = Path(__file__).parent / "golden" / "architectures" / "0.34.0-params" / "DeepseekV4ForCausalLM.json"
    return json.loads(path.read_text())["parameters"]


def test_deepseek_v4_weight_rule_names_every_parameter_of_vllms_class():
    # tests/golden/architectures/0.34.0-params/DeepseekV4ForCausalLM.json: the harness
    # (make_goldens.py --architectures --parameters --only DeepseekV4ForCausalLM) built
    # vllm.models.deepseek_v4.nvidia.model.DeepseekV4ForCausalLM on the meta device from the catalog's V4-Flash
    # config and listed named_parameters(): 1,137 tensors, 284,334,567,511 values
    import json
    import math

    from kvplan.model.inventory import analytic_inventory

    config = json.loads((ROOT / "configs" / "deepseek-ai" / "DeepSeek-V4-Flash" / "config.json").read_text())
    inv = analytic_inventory(config)
    assert {w.name: list(w.shape) for w in inv.weights} == {n: s for n, s, _ in _dsv4_parameters()}
    assert len(inv.weights) == 1_137
    assert sum(math.prod(w.shape) for w in inv.weights) == 284_334_567_511
    # the harness's one dtype it fixes (its float32 is the meta build's default dtype): the hash-routing tables
    assert {w.name for w in inv.weights if w.dtype == "int32"} == {n for n, _, t in _dsv4_parameters() if t == "int32"}


def test_deepseek_v4_flash_weight_bytes_as_vllm_loads_its_fp8_and_mxfp4_checkpoint():
    # V4-Flash's quantization_config is fp8 with 128x128 blocks and expert_dtype fp4: vLLM 0.34.0 serves it with
    # DeepseekV4FP8Config (models/deepseek_v4/quant_config.py): the routed experts by Mxfp4MoEMethod (4-bit values
    # + an e8m0 scale per 32: k/2 + k/32 bytes a row), the quantized linears in fp8 with one e8m0 byte per
    # 128x128 block (is_scale_e8m0); the unquantized ones (embedding, lm_head, gate, norms, weights_proj,
    # compressors' fused_wkv_wgate) in bf16; the hyper-connection, sink, ape and correction-bias parameters
    # float32, tid2eid int32 (model.py, attention.py, compressor.py). Re-derived here from the harness's list:
    import math

    from kvplan.budget.weights import layout_weight_memory
    from kvplan.model import ServingOptions, build_model_layout

    fp8 = (".fused_wqa_wkv.weight", ".attn.wq_b.weight", ".wo_a.weight", ".wo_b.weight", ".indexer.wq_b.weight",
           ".shared_experts.gate_up_proj.weight", ".shared_experts.down_proj.weight")
    fp32 = ("hc_", ".attn_sink", ".ape", "e_score_correction_bias")
    # tp: wq_b, wo_a, the shared experts' gate_up (rows) and wo_b, down (columns), the sinks and every routed
    # expert's intermediate size (w13 rows, w2 columns) split tp ways, the vocab-parallel embedding and lm_head by
    # rows (129,280 = 2,020·64: no padding); the rest replicated
    rows_split = (".attn.wq_b.weight", ".wo_a.weight", ".shared_experts.gate_up_proj.weight")
    cols_split = (".wo_b.weight", ".shared_experts.down_proj.weight")

    def derived(tp: int) -> int:
        total = 0
        for name, shape, dtype in _dsv4_parameters():
            if name.endswith("w13_weight"):
                e, rows, k = shape
                total += e * (rows // tp) * (k // 2 + k // 32)
            elif name.endswith("w2_weight"):
                e, rows, k = shape
                total += e * rows * (k // tp // 2 + k // tp // 32)
            elif name.endswith(fp8):
                rows, k = shape
                rows, k = (rows // tp, k) if name.endswith(rows_split) else (rows, k // tp) if name.endswith(
                    cols_split) else (rows, k)
                total += rows * k + math.ceil(rows / 128) * math.ceil(k / 128)
            elif name.endswith(".attn_sink"):
                total += 4 * shape[0] // tp
            elif name in ("model.embed_tokens.weight", "lm_head.weight"):
                total += 2 * shape[0] // tp * shape[1]
            elif any(x in name for x in fp32) or dtype == "int32":
                total += 4 * math.prod(shape)
            else:
                total += 2 * math.prod(shape)
        return total

    assert derived(1) == 156_006_389_980  # 145.29 GiB on one GPU
    assert derived(8) == 20_644_891_260  # 19.23 GiB a GPU at tp 8
    for tp in (1, 8):
        memory = layout_weight_memory(build_model_layout("deepseek-ai/DeepSeek-V4-Flash", None,
                                                         ServingOptions(tensor_parallel_size=tp)))
        assert [s.weight_bytes for s in memory.stages] == [derived(tp)]


# --- quantized linears as each release keeps them on a card (issue 34: kvplan.budget.quant_kernels) ---

QUANT_GOLDENS = Path(__file__).parent / "golden" / "quant_weights"
# The schemes whose kept bytes kvplan models per card (the goldens' other schemes: ModelOpt per-tensor fp8 and
# compressed-tensors fp8 block keep their stored bytes but for scalar scales, not asserted here)
KEPT_SCHEMES = ("gptq-int4-g128", "gptq-int4-g128-actorder", "gptq-int8-g128", "awq-int4-g128", "ct-w4a16-g128",
                "modelopt-w4a16-nvfp4",
                "ct-w8a8-int8", "fp8-block", "ct-nvfp4", "modelopt-nvfp4")
# NVFP4's scalar parameters (alpha, the inverse global scales, a bf16 copy of the global scale: at most 4 fp32 and
# one bf16 per linear, the goldens' ``kept``) are not counted by the rule
NVFP4_SCALARS_BYTES = 18


def _kept_cases():
    for path in sorted(QUANT_GOLDENS.glob("*.json")):
        doc = json.loads(path.read_text())
        release = path.stem
        for cc, cases in doc["by_capability"].items():
            for c in cases:
                if c["scheme"] in KEPT_SCHEMES and c.get("kept_bytes") is not None:
                    yield release, tuple(int(x) for x in cc.split(".")), doc["schemes"][c["scheme"]], c


def test_quant_goldens_cover_the_releases_and_cards():
    # tests/golden/quant_weights/<release>.json: make_goldens.py --weights (scripts/golden/quant_weights.py),
    # 0.11.0, 0.19.0 and 0.34.0 at capabilities 7.5, 8.0, 8.9, 9.0, 10.0, 12.0
    found = {(r, cc) for r, cc, _, _ in _kept_cases()}
    assert {r for r, _ in found} == {"0.11.0", "0.19.0", "0.34.0"}
    assert {cc for _, cc in found} == {(7, 5), (8, 0), (8, 9), (9, 0), (10, 0), (12, 0)}
    assert sum(1 for _ in _kept_cases()) > 300


def test_quantized_linears_keep_the_bytes_each_release_keeps_on_each_card():
    """Every recorded linear (GPTQ 4/8-bit, act-order, AWQ, compressed-tensors W4A16 / W8A8 int8, fp8 block,
    NVFP4) at every capability of the goldens: kvplan's stored form plus ``kept_delta`` equals the bytes the
    release's layer and kernel hold after ``process_weights_after_loading`` (132 SMs in the harness: Marlin's
    workspace 528 B in 0.11 / 0.19), and kvplan's kernel is the release's."""
    from kvplan.budget.quant_kernels import kept_linear_bytes, linear_kernel

    checked = 0
    for release, cc, cfg, c in _kept_cases():
        q = quantization_of({"quantization_config": cfg})
        got = kept_linear_bytes(c["out"], c["in"], q, cc, release, sms=132)
        want = c["kept_bytes"]
        where = f"{release} sm{cc} {c['case']} ({c.get('kernel') or c.get('linear_method')})"
        if q.method == "nvfp4":
            assert 0 <= want - got <= NVFP4_SCALARS_BYTES or 0 <= got - want <= 4, where
        else:
            assert got == want, where
        golden_kernel = c.get("kernel") or c.get("linear_method")
        ours = linear_kernel(q, cc, release, c["out"], c["in"])
        if golden_kernel in ("MarlinLinearKernel", "MacheteLinearKernel", "GPTQLinearMethod", "AWQLinearMethod",
                             "MarlinFP8ScaledMMLinearKernel", "MarlinNvFp4LinearKernel", "CutlassNvFp4LinearKernel"):
            assert ours == golden_kernel, where
        checked += 1
    assert checked > 300


def _quantized_llama(tmp_path, quant: dict):
    """Llama-3.1-8B's catalog config with ``quant`` as its quantization_config (the keys of the public GPTQ / W8A8
    checkpoints of this model)."""
    c = {**cfg("meta-llama/Llama-3.1-8B-Instruct"), "quantization_config": quant}
    (tmp_path / "config.json").write_text(json.dumps(c))
    return build_model_layout(str(tmp_path))


GPTQ_INT4 = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


def test_gptq_on_an_a100_frees_what_marlin_drops_and_an_h100_keeps_it(tmp_path):
    """vLLM 0.19.0 serves a symmetric GPTQ-Int4 checkpoint with GPTQMarlinLinearMethod: Machete on an H100 keeps every
    loaded tensor; Marlin on an A100 replaces the packed zero points and (no act-order) g_idx by empty tensors
    (quant_kernels.kept_delta; the goldens of test_quantized_linears_keep_the_bytes_each_release_keeps_on_each_card).
    Per Llama-3.1-8B layer, rows·k over q, k, v, o, gate, up, down = 4096·4096·2 + 1024·4096·2 + 14336·4096·3
    = 218,103,808: zeros rows·(k/128)·4 bits = 218,103,808 / 256 = 851,968 B; g_idx 4·k = 4·(4096·6 + 14336) =
    155,648 B; 32 layers: 32 · 1,007,616 = 32,243,712 B freed on the A100."""
    from factories import budget_of
    from kvplan.engines.vllm import get_era

    layout = _quantized_llama(tmp_path, GPTQ_INT4)
    stored = layout_weight_memory(layout).stages[0].weight_bytes
    era = get_era("vllm==0.19.0")
    h100 = budget_of(layout, era, gpu="H100-80GB").weights_bytes
    a100 = budget_of(layout, era, gpu="A100-80GB").weights_bytes
    assert h100 == stored
    assert stored - a100 == 32 * (851_968 + 155_648) == 32_243_712
    assert any("MarlinLinearKernel" in n for n in budget_of(layout, era, gpu="A100-80GB").weights.notes)
    # 0.34.0 (AutoGPTQ): no g_idx registered on either card, the zeros kept: 32 · 155,648 below the stored form
    era = get_era("vllm==0.34.0")
    assert stored - budget_of(layout, era, gpu="A100-80GB").weights_bytes == 32 * 155_648
    assert stored - budget_of(layout, era, gpu="H100-80GB").weights_bytes == 32 * 155_648


def test_awq_zero_points_become_bf16_under_machete(tmp_path):
    """AWQ (zero_point) on an H100 in 0.34.0: Machete turns the packed int32 zero points into params-dtype values
    (machete.py process_weights_after_loading): per linear rows·(k/128)·(2 − 4/8) B more; on an A100 Marlin keeps
    them packed. Over a Llama-3.1-8B layer: 218,103,808 / 128 · 1.5 = 2,555,904 B; 32 layers 81,788,928 B."""
    from factories import budget_of
    from kvplan.engines.vllm import get_era

    layout = _quantized_llama(tmp_path, {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
                                         "version": "gemm"})
    stored = layout_weight_memory(layout).stages[0].weight_bytes
    era = get_era("vllm==0.34.0")
    assert budget_of(layout, era, gpu="A100-80GB").weights_bytes == stored
    assert budget_of(layout, era, gpu="H100-80GB").weights_bytes - stored == 32 * 2_555_904 == 81_788_928


def test_compressed_tensors_and_modelopt_schemes_are_read():
    w4a16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                                           "group_size": 128}}}, "ignore": ["lm_head"]}
    q = quantization_of({"quantization_config": w4a16})
    assert (q.method, q.bits, q.group_size, q.zero_point, q.act_order) == ("wna16", 4, 128, False, False)
    # packed values + bf16 scale per (row, group) + the int64 weight_shape pair
    assert tensor_bytes((4096, 4096), q, True, 2) == 4096 * 4096 // 2 + 4096 * 32 * 2 + 16
    w8a8 = {"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel"}}}}
    q = quantization_of({"quantization_config": w8a8})
    assert (q.method, q.strategy) == ("int8", "channel")
    assert tensor_bytes((4096, 4096), q, True, 2) == 4096 * 4096 + 4096 * 4  # int8 + fp32 scale per row
    block = {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "block",
                                           "block_structure": [128, 128]}}}}
    assert quantization_of({"quantization_config": block}).block == (128, 128)
    q = quantization_of({"quantization_config": {"quant_method": "modelopt", "quantization": {
        "quant_algo": "W4A16_NVFP4", "group_size": 16}}})
    assert (q.method, q.strategy) == ("nvfp4", "a16")


def test_modelopt_mixed_precision_quantizes_each_listed_module_by_its_own_algorithm():
    """nvidia/Qwen3.6-35B-A3B-NVFP4 (the genuine config beside the corpus logs): MIXED_PRECISION with
    quantized_layers naming FP8 for the attention / linear-attention projections and W4A16_NVFP4 for the experts,
    shared experts and the lm_head; routers, embeddings and norms are not listed (bf16). Checkpoint names
    (model.language_model.layers.N) are kvplan's model.layers.N.
      experts, per layer: gate_up [256, 1024, 2048] and down [256, 2048, 512] at 4-bit + fp8 scale per 16, + 8 B
      (two fp32 global scales) per expert matrix: 256·1024·(1024 + 128) + 256·2048·(256 + 32) + 2·256·8
      = 301,989,888 + 150,994,944 + 4,096 = 452,988,928; 40 layers: 18,119,557,120 B
      lm_head [248320, 2048]: 248320·(1024 + 128) + 8 = 286,064,648 B (NVFP4, not bf16's 1,017,118,720)
      embedding [248320, 2048] bf16: 1,017,118,720 B"""
    path = ROOT / "tests" / "logs" / "budget" / "configs" / "nvidia" / "Qwen3.6-35B-A3B-NVFP4"
    layout = build_model_layout(str(path))
    q = quantization_of(json.loads((path / "config.json").read_text()))
    assert q.method == "mixed" and len(q.per_module) == 291
    w = layout_weight_memory(layout).stages[0].bytes_by_kind
    assert w["experts"] == 40 * 452_988_928 == 18_119_557_120
    assert w["lm_head"] == 286_064_648
    assert w["embedding"] == 1_017_118_720
    # q_proj [8192, 2048] of a full-attention layer: fp8 + one fp32 scale (per-tensor)
    inv = layout_weights(layout).target
    qp = next(x for x in inv.weights if x.name == "model.layers.3.self_attn.q_proj.weight")
    assert q.converts(qp) and q.resolve(qp).method == "fp8"
    router = next(x for x in inv.weights if x.name == "model.layers.3.mlp.gate.weight")
    assert not q.converts(router)


@pytest.mark.parametrize("model,layers,experts", [("openai/gpt-oss-20b", 24, 32), ("openai/gpt-oss-120b", 36, 128)])
def test_gpt_oss_on_a_b200_follows_each_release_s_flashinfer_backend(model, layers, experts):
    """B200 (cc 10.0), TP 1 (kvplan.budget.weights.mxfp4_padding_for; hidden 2880 → 3072 in every case):
    - 0.34.0 (from 0.27.1): FlashInfer TRTLLM MXFP4 BF16, intermediate 2880 → 2944 (128) — Marlin's allocation
      (per layer: 20b 38,227,968 + 20,480 bias bytes, 120b 1,847,263,232 − 1,694,269,440 = 152,993,792) — and the
      expert biases in float32: +2 B per element of w13 [2·2944] and w2 [3072] = 2·(5888 + 3072) = 17,920 B an expert;
    - 0.19.0 (0.12-0.26): intermediate 2880 → 3072 (256). Per expert, 4-bit values + one e8m0 scale per 32:
      w13 [6144, 3072]: 6144·(1536 + 96) = 10,027,008; w2 [3072, 3072]: 3072·1632 = 5,013,504; bf16 biases
      (6144 + 3072)·2 = 18,432 → 15,058,944, against the checkpoint's 5760·(1440 + 90) + 2880·(1440 + 90) + 8640·2 =
      13,236,480: +1,822,464, and the float32 biases +18,432: 1,840,896 an expert;
    - 0.11.0: a pip install has neither FlashInfer (an extra) nor triton_kernels: Marlin, the value; the band's high
      end FlashInfer SM100 BF16's (256) count."""
    from factories import budget_of
    from kvplan.engines.vllm import get_era

    layout = build_model_layout(model)
    plain = layout_weight_memory(layout).stages[0].weight_bytes
    marlin = {24: 38_227_968 + 20_480, 36: 1_847_263_232 - 1_694_269_440}[layers]
    b = budget_of(layout, get_era("vllm==0.34.0"), gpu="B200")
    assert b.weights_bytes - plain == layers * marlin + layers * experts * 17_920
    assert any("FlashInfer SM100 MoE backend" in n for n in b.weights.notes)
    b = budget_of(layout, get_era("vllm==0.19.0"), gpu="B200")
    assert b.weights_bytes - plain == layers * experts * 1_840_896
    b = budget_of(layout, get_era("vllm==0.11.0"), gpu="B200")
    assert b.weights_bytes - plain == layers * marlin
    term = _weights_term(b)
    assert term.high_bytes == round((plain + layers * experts * 1_840_896) * 1.01)


# --- quantized MoE experts as each release keeps them on a card (issue 34: quant_kernels.kept_expert_bytes) ---

MOE_GOLDENS = QUANT_GOLDENS / "moe"


def _golden_moe_backend(c: dict) -> str:
    """The backend a golden's MoE method chose, in vLLM's words: its backend enum (``fp8_backend``,
    ``nvfp4_backend``, ``mxfp4_backend``), else (0.11's booleans and method classes) MARLIN / CUTLASS / TRITON, and
    WNA16 for the Triton WNA16 methods (``MoeWNA16Method``, ``CompressedTensorsWNA16MoEMethod``)."""
    method, chosen = c.get("linear_method", ""), c.get("moe_backend") or {}
    named = [v for v in chosen.values() if isinstance(v, str)]
    wna16 = method in ("MoeWNA16Method", "CompressedTensorsWNA16MoEMethod")
    if named:
        return "WNA16" if wna16 and named[0] == "TRITON" else named[0]
    if wna16:
        return "WNA16"
    if chosen.get("use_marlin") or "Marlin" in method or method == "AWQMoEMethod":  # 0.11 awq_marlin's MoE class
        return "MARLIN"
    if chosen.get("use_cutlass") or "nvfp4" in c["scheme"]:
        return "CUTLASS"
    return "TRITON"


def _moe_quant(cfg: dict):
    if cfg.get("online"):  # --quantization fp8 on an unquantized checkpoint
        return quantization_override({}, "fp8")
    return quantization_of({"quantization_config": cfg})


def _moe_cases():
    for path in sorted(MOE_GOLDENS.glob("*.json")):
        doc = json.loads(path.read_text())
        for cc, cases in doc["by_capability"].items():
            for c in cases:
                yield path.stem, tuple(int(x) for x in cc.split(".")), doc["schemes"][c["scheme"]], c


def test_quantized_moe_goldens_cover_the_releases_and_cards():
    # tests/golden/quant_weights/moe/<release>.json: make_goldens.py --weights --moe (quant_weights.py --moe)
    found = {(r, cc) for r, cc, _, _ in _moe_cases()}
    assert {r for r, _ in found} == set(MOE_GOLDEN_RELEASES)
    assert {cc for _, cc in found} == {(7, 5), (8, 0), (8, 9), (9, 0), (10, 0), (12, 0)}


def test_quantized_moe_layers_keep_the_bytes_each_release_keeps():
    """Every recorded FusedMoE layer (fp8 block / channel / tensor / online, NVFP4 compressed-tensors and ModelOpt,
    GPTQ / AWQ / compressed-tensors W4A16, MXFP4) at every capability of the goldens: kvplan's backend is the one
    the release chose, and w13 + w2 + the layer's own buffers (132 SMs in the harness: Marlin's workspace
    4 × 132 int32) equal the bytes the release's layer, method and kernel hold after
    ``process_weights_after_loading``, exactly. A case the release refused (or whose backend needs FlashInfer's
    compiled package to load) is one kvplan's backend names REFUSED / NOT_RUN."""
    checked = refused = 0
    for release, cc, cfg, c in _moe_cases():
        q = _moe_quant(cfg)
        e, h, i = c["experts"], c["hidden"], c["intermediate"]
        where = f"{release} sm{cc} {c['case']}"
        ours = moe_backend(q, cc, release, h, i)
        if "kept" not in c:
            # NOT_RUN: a FlashInfer function the backend's loading calls (an inert name here; triton_kernels, which
            # needs libcuda); REFUSED: the release's own refusal
            error = c.get("error") or c.get("kept_error")
            inert = any(w in error for w in ("_CudaOnlyName", "libcuda", "result of a FlashInfer function"))
            assert ours == ("NOT_RUN" if inert else "REFUSED"), (where, ours, error)
            refused += 1
            continue
        assert ours == _golden_moe_backend(c), (where, ours)
        got = (kept_expert_bytes(e, 2 * i, h, q, ours, release, w13=True)
               + kept_expert_bytes(e, h, i, q, ours, release, w13=False) + moe_layer_bytes(q, ours, release, sms=132))
        assert got == c["kept_bytes"], (where, ours, got, c["kept_bytes"])
        checked += 1
    assert checked > 600 and refused < checked


W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
         "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None,
                                       "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                   "strategy": "group", "group_size": 128}}}}


def test_w4a16_experts_of_gemma_4_keep_what_the_triton_wna16_method_keeps(tmp_path):
    """gemma-4-26B-A4B's experts (128 of hidden 2816, intermediate 704) under compressed-tensors W4A16 in vLLM 0.19.0
    on an A100: 704 is not a multiple of 128, so Marlin MoE does not fit (check_moe_marlin_supports_layer) and the
    Triton WNA16 method keeps the values, scales [E, k // 128, rows] (floor), g_idx and its sort indices (int32 per
    input column) and weight_shape [E, 2]. Per layer, against the stored form (values + scales [rows, ⌈k/128⌉] +
    16 B a matrix):
    w13 [128, 1408, 2816]: kept scales 128·22·1408·2 = 7,929,856, indices 128·2816·8 = 2,883,584, shape 1,024;
    stored scales 7,929,856 + 2,048: +2,882,560;
    w2 [128, 2816, 704]: kept scales 128·5·2816·2 = 3,604,480, indices 128·704·8 = 720,896, shape 1,024 = 4,326,400;
    stored 128·2816·6·2 + 2,048 = 4,327,424: −1,024. 30 layers: 30 · 2,881,536 = 86,446,080 B."""
    c = {**cfg("google/gemma-4-26B-A4B-it"), "quantization_config": W4A16}
    (tmp_path / "config.json").write_text(json.dumps(c))
    layout = build_model_layout(str(tmp_path))
    stored = layout_weight_memory(layout).stages[0].bytes_by_kind["experts"]
    mem = layout_weight_memory(layout, loaded_on=((8, 0), "0.19.0"))
    assert mem.stages[0].bytes_by_kind["experts"] - stored == 30 * 2_881_536 == 86_446_080
    assert any("quantized MoE experts as vLLM 0.19.0 keeps them on SM 8.0: WNA16" in n for n in mem.notes)


@pytest.mark.parametrize("release", ["0.19.0", "0.29.0", "0.34.0"])
def test_triton_mxfp4_experts_keep_the_swizzled_bytes_each_release_keeps(release):
    """gpt-oss-20b's experts (8 of them, hidden 2880) at TP 1 / 2 / 4 on an H100 with the release's vendored
    triton_kernels (``scripts/golden/quant_weights.py --moe --triton-kernels``: the release's MXFP4 MoE method, its
    oracle choosing TRITON, and triton_kernels' Hopper layouts run on the CPU): every kept tensor, summed, equals
    kvplan's rule: the intermediate size per rank rounded up to 64, the checkpoint's values and scales, the scales'
    second copy (kept through 0.24), the biases as float32 and the swizzle's padding
    (``quant_kernels.triton_mxfp4_swizzle_extra`` with the release's alignments, ``weights.mxfp4_padding_for``)."""
    from kvplan.budget.quant_kernels import triton_mxfp4_swizzle_extra
    from kvplan.budget.weights import mxfp4_padding_for

    doc = json.loads((Path(__file__).parent / "golden" / "quant_weights" / "moe" / "triton_kernels" / f"{release}.json")
                     .read_text())
    _, _, bias_bytes, copies, *aligns = mxfp4_padding_for((9, 0), "cuda", release)
    cases = doc["by_capability"]["9.0"]
    assert [c["intermediate"] for c in cases] == [2880, 1440, 720]
    for c in cases:
        assert c["moe_backend"] == {"mxfp4_backend": "TRITON"}
        e, h, i = c["experts"], c["hidden"], -(-c["intermediate"] // 64) * 64
        per_expert = 0
        for rows, k in ((2 * i, h), (h, i)):  # w13 [2I, H], w2 [H, I]
            per_expert += (rows * k // 2 + (1 + copies) * rows * (k // 32)
                           + triton_mxfp4_swizzle_extra(rows, k, *aligns) + rows * bias_bytes)
        assert c["kept_bytes"] == e * per_expert, c["case"]


def test_triton_mxfp4_tp1_bytes_by_hand():
    """The goldens' TP 1 case per expert, by hand (values 2880·2880·3/2 = 12,441,600; biases float32
    (5760 + 2880)·4 = 34,560):
    - 0.19.0: scales kept twice 2·(5760 + 2880)·90 = 1,555,200; packed rows 1440 → 1472 B (8640·32 = 276,480);
      scale rows w13 5760 → 5888, w2 2880 → 3072 (320·90 = 28,800): 14,336,640;
    - 0.34.0: the checkpoint's scales deleted; the swizzled ones 5888·92 + 3072·92 = 824,320 (columns 90 → 92):
      13,300,480."""
    root = Path(__file__).parent / "golden" / "quant_weights" / "moe" / "triton_kernels"
    for release, per_expert in (("0.19.0", 14_336_640), ("0.34.0", 13_300_480)):
        tp1 = json.loads((root / f"{release}.json").read_text())["by_capability"]["9.0"][0]
        assert tp1["kept_bytes"] == 8 * per_expert


@pytest.mark.parametrize("release,card,default,marlin", [
    # (release, card, padding without the variable, with VLLM_MXFP4_USE_MARLIN=1): 0.10.1 reads it first on every
    # card; 0.11.0's MoE method does not read it; 0.11.2-0.18 in the Hopper fallback only (a B200 takes FlashInfer
    # first); 0.19-0.23 before the priority list on every card; 0.24+ not at all (kvplan.budget.weights._env_marlin)
    ("0.10.1.1", (10, 0), None, "marlin"),
    ("0.11.0", (9, 0), "marlin", "marlin"),
    ("0.11.2", (9, 0), "marlin", "marlin"),
    ("0.14.1", (9, 0), "triton", "marlin"),
    ("0.14.1", (10, 0), "fi", "fi"),
    ("0.19.0", (9, 0), "triton", "marlin"),
    ("0.19.0", (10, 0), "fi", "marlin"),
    ("0.29.0", (9, 0), "triton", "triton"),
])
def test_vllm_mxfp4_use_marlin_moves_the_experts_where_the_release_reads_it(release, card, default, marlin):
    from kvplan.budget.weights import MARLIN_MXFP4_PADDING, mxfp4_padding_for

    def kind(pad):
        if pad is None or pad == MARLIN_MXFP4_PADDING:
            return pad and "marlin"
        return "triton" if pad[1] == 1 else "fi"

    assert kind(mxfp4_padding_for(card, "cuda", release)) == default
    assert kind(mxfp4_padding_for(card, "cuda", release, use_marlin=True)) == marlin


def test_triton_kernels_stated_settles_0_11_hopper_and_its_band():
    """vLLM 0.11 on an H100: the wheel neither requires nor vendors triton_kernels, so kvplan keeps Marlin (a pip
    install) as the value and Triton as the band's low end; --triton-kernels says which: Triton's layout as the
    value (0.11.0: torch 2.8.0, StridedLayout: no swizzle padding), no other backend; --no-triton-kernels: Marlin,
    no other. VLLM_MXFP4_USE_MARLIN=1 is not read by 0.11.0's MoE method; 0.11.2's fallback reads it."""
    from kvplan.budget.weights import (
        MARLIN_MXFP4_PADDING, TRITON_MXFP4_PADDING_KEPT_SCALES, TRITON_MXFP4_PADDING_STRIDED, mxfp4_other_padding_for,
        mxfp4_padding_for,
    )

    h100 = (9, 0)
    assert mxfp4_other_padding_for(h100, "cuda", "0.11.0") == TRITON_MXFP4_PADDING_STRIDED
    assert mxfp4_padding_for(h100, "cuda", "0.11.0", triton_kernels=True) == TRITON_MXFP4_PADDING_STRIDED
    assert mxfp4_other_padding_for(h100, "cuda", "0.11.0", triton_kernels=True) is None
    assert mxfp4_padding_for(h100, "cuda", "0.11.0", triton_kernels=False) == MARLIN_MXFP4_PADDING
    assert mxfp4_other_padding_for(h100, "cuda", "0.11.0", triton_kernels=False) is None
    assert mxfp4_padding_for(h100, "cuda", "0.11.2", triton_kernels=True) == TRITON_MXFP4_PADDING_KEPT_SCALES
    assert mxfp4_padding_for(h100, "cuda", "0.11.2", triton_kernels=True, use_marlin=True) == MARLIN_MXFP4_PADDING
    assert mxfp4_other_padding_for(h100, "cuda", "0.11.2", use_marlin=True) is None


def test_triton_kernels_option_reaches_the_weights():
    """--triton-kernels on gpt-oss-20b, vLLM 0.11.0, H100: the weights are Triton's (the checkpoint's layout, biases
    in float32, the block scales kept twice: 24·32·(17,280 + 777,600) over the checkpoint, TRITON_BIASES /
    TRITON_KEPT_SCALES), the band ±1 % around them; --no-triton-kernels: Marlin's, ±1 %."""
    from factories import budget_of
    from kvplan.engines.vllm import get_era

    layout = build_model_layout("openai/gpt-oss-20b")
    plain = layout_weight_memory(layout).stages[0].weight_bytes
    era = get_era("vllm==0.11.0")
    b = budget_of(layout, era, gpu="H100-80GB", triton_kernels=True)
    triton = plain + 24 * 32 * (TRITON_BIASES + TRITON_KEPT_SCALES)
    assert b.weights_bytes == triton
    term = _weights_term(b)
    assert (term.low_bytes, term.high_bytes) == (round(triton * 0.99), round(triton * 1.01))
    b = budget_of(layout, era, gpu="H100-80GB", triton_kernels=False)
    assert b.weights_bytes == plain + 24 * (38_227_968 + 20_480)  # Marlin (the 0.11.0 H100 test above)


@pytest.mark.parametrize("model", ["openai/gpt-oss-20b", "openai/gpt-oss-120b"])
def test_gpt_oss_rank_beside_the_experts_is_what_vllm_builds(model):
    """One rank of gpt-oss at TP 1, 2 and 4 as vLLM 0.19.0 constructs GptOssForCausalLM on the meta device
    (``scripts/golden/quant_weights.py --model-config``: the tensor-parallel world size answered 4, 2, 1):
    every parameter and buffer but the MoE experts (their kept bytes are the triton_kernels goldens') sums to what
    kvplan counts beside the experts: the vocab-parallel embedding and lm_head, the column/row-parallel q/k/v/o with
    their biases (o_proj's whole on every rank), the sinks per rank's heads, the replicated router and norms, and
    the float32 rotary cache every rank holds (``kvplan.budget.rotary``, ``FLOAT32_TABLES``). Left out of both: the attention layer's
    four float32 scalars per layer (``_k_scale`` ... 16 B each layer), which kvplan does not count."""
    from kvplan.model.options import ServingOptions

    doc = json.loads((Path(__file__).parent / "golden" / "quant_weights" / "models" / "0.19.0"
                      / f"{model.split('/')[-1]}.json").read_text())
    assert [c["tp"] for c in doc["cases"]] == [1, 2, 4]
    for case in doc["cases"]:
        tensors = case["tensors"]
        vllm = sum(b for n, (_, _, b) in tensors.items() if ".experts." not in n and "attn.attn._" not in n)
        scalars = sum(b for n, (_, _, b) in tensors.items() if "attn.attn._" in n)
        assert scalars == 16 * len({n.split(".attn.")[0] for n in tensors if "attn.attn._" in n})
        assert tensors["model.layers.0.attn.rotary_emb.cos_sin_cache"] == [[131072, 64], "float32", 33_554_432]
        tp = case["tp"]
        layout = build_model_layout(model, None, ServingOptions(tensor_parallel_size=tp))
        kinds = layout_weight_memory(layout, tp=tp).stages[0].bytes_by_kind
        assert vllm == sum(v for k, v in kinds.items() if k != "experts"), (model, tp)
