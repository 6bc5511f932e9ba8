"""Per-rank weights from the checkpoint's own tensors (kvplan/budget/weights.py split_by_checkpoint).

Each module's bytes are the checkpoint's (float tensors of unquantized modules at the model dtype), held per rank
as vLLM shards the module: vLLM 0.34.0 model_executor/layers/linear.py ColumnParallelLinear (l.439: output rows
/ tp), RowParallelLinear (l.1686: input columns / tp, bias whole), QKVParallelLinear (l.1057; l.1114-1119: K/V
heads replicated, ``num_kv_head_replicas = tp / total_num_kv_heads``, when tp ≥ their count), ReplicatedLinear
(l.332); vocab_parallel_embedding.py ``pad_vocab_size`` (l.100) to ``DEFAULT_VOCAB_PADDING_SIZE`` = 64 (l.39)
rows, then / tp; pipeline stages their own layers (the first the embedding, the last the final norm and
lm_head)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import safetensors_file, tiny_llama_config, tiny_llama_layer
from kvplan.model.inventory import analytic_inventory
from kvplan.budget.quantization import quantization_of, tensor_bytes
from kvplan.budget.weights import (MARLIN_MXFP4_PADDING, layout_weight_memory, memory_of, placements,
                                   split_by_checkpoint, tensor_group)
from kvplan.model import ServingOptions, build_model_layout
from kvplan.units import dtype_size_bytes

ROOT = Path(__file__).resolve().parent.parent

# A Llama of 4 layers, hidden 64, 4 query heads and 2 KV heads of 16, MLP 128, vocabulary 100, untied, bf16; its
# norms stored in fp32: vLLM copies them into bf16 parameters (2 B each on the GPU).
CONFIG = tiny_llama_config(4, 100)


def _layer(i: int) -> dict:
    return tiny_llama_layer(i, "F32")


TENSORS = {"model.embed_tokens.weight": ("BF16", [100, 64]), **{k: v for i in range(4) for k, v in _layer(i).items()},
           "model.norm.weight": ("F32", [64]), "lm_head.weight": ("BF16", [100, 64]),
           # dropped by vLLM before loading (AutoWeightsLoader.REMOVE_UNUSED_ROTARY_EMBEDS_MAPPER)
           "model.layers.0.self_attn.rotary_emb.inv_freq": ("F32", [8]),
           # a module kvplan has no rule for: whole on every rank (kvplan's assumption), 64·48·2 = 6,144 B
           "vision_tower.patch_embed.weight": ("BF16", [64, 48])}

# Per rank at tensor-parallel size t (bf16, 2 B):
#   embedding, lm_head: pad_vocab_size(100, 64) = 128 rows / t · 64 · 2 = 16,384 / t each
#   final norm: 64 · 2 = 128 (stored fp32, held bf16)
#   per layer: q, o 2 · 64·64·2 / t = 16,384 / t; gate, up, down 3 · 128·64·2 / t = 49,152 / t;
#              k, v: 2 KV heads of 16 rows, max(1, 2 / t) heads per rank: 2 · heads · 16 · 64 · 2
#              (t=1: 8,192; t=2 and t=4: 4,096, one head replicated); two norms 2 · 64 · 2 = 256
#     t=1: 65,536 + 8,192 + 256 = 73,984   t=2: 32,768 + 4,096 + 256 = 37,120   t=4: 16,384 + 4,096 + 256 = 20,736
#   rotary inv_freq: dropped; the vision tensor: 6,144 on every rank
#   t=1: 2 · 16,384 + 128 + 4 · 73,984 + 6,144 = 334,976
#   t=2: 2 · 8,192 + 128 + 4 · 37,120 + 6,144 = 171,136
#   t=4: 2 · 4,096 + 128 + 4 · 20,736 + 6,144 = 97,408
#   PP 2 (t=1, layers 0-1 | 2-3): stage 0 16,384 + 2 · 73,984 + 6,144 = 170,496;
#                                 stage 1 2 · 73,984 + 128 + 16,384 + 6,144 = 170,624
# and on every rank and stage the rotary table (kvplan.budget.rotary: max_position_embeddings 2,048 rows of the
# 16-wide head, bf16), not a checkpoint tensor:
ROTARY = 2_048 * 16 * 2


@pytest.fixture()
def tiny(tmp_path) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "model.safetensors").write_bytes(safetensors_file(TENSORS))
    return tmp_path


@pytest.mark.parametrize("tp, pp, stage_bytes", [
    (1, 1, [334_976 + ROTARY]), (2, 1, [171_136 + ROTARY]), (4, 1, [97_408 + ROTARY]),
    (1, 2, [170_496 + ROTARY, 170_624 + ROTARY]),
])
def test_a_local_checkpoint_split_per_rank_as_vllm_shards_it(tiny, tp, pp, stage_bytes):
    layout = build_model_layout(str(tiny), None, ServingOptions(tensor_parallel_size=tp, pipeline_parallel_size=pp))
    mem = layout_weight_memory(layout)
    assert [s.weight_bytes for s in mem.stages] == stage_bytes
    assert mem.basis == "from checkpoint metadata"
    assert "the 6,144 B of 1 module(s) kvplan does not model (vision_tower.patch_embed first)" in mem.basis_detail
    # the formula alone (the config without its checkpoint): the same split, without the vision tensor
    bare = tiny / "bare"
    bare.mkdir()
    (bare / "config.json").write_text(json.dumps(CONFIG))
    formula = layout_weight_memory(build_model_layout(str(bare), None, ServingOptions(
        tensor_parallel_size=tp, pipeline_parallel_size=pp)))
    assert [s.weight_bytes + 6_144 for s in formula.stages] == stage_bytes
    assert formula.basis == "kvplan's formula estimate"


def test_tensor_group_folds_experts_of_checkpoint_and_inventory_alike():
    assert tensor_group("model.layers.3.mlp.experts.17.up_proj.weight") == "model.layers.3.mlp.experts"
    assert tensor_group("model.layers.3.mlp.experts.*.up_proj.weight_scale_inv") == "model.layers.3.mlp.experts"
    assert tensor_group("model.layers.3.mlp.experts.gate_up_proj") == "model.layers.3.mlp.experts"
    assert tensor_group("model.layers.0.mlp.experts.gate_up_proj_blocks") == "model.layers.0.mlp.experts"
    assert tensor_group("model.layers.0.self_attn.q_proj.weight_scale_inv") == "model.layers.0.self_attn.q_proj"
    assert tensor_group("lm_head.weight") == "lm_head"


def _synthetic_form(config: dict, dtype: str) -> dict:
    """The compact form a checkpoint that stores exactly kvplan's own tensor list would have: converted
    (quantized) tensors as the method stores them (U8), the rest in the model dtype."""
    q = quantization_of(config)
    db = dtype_size_bytes(dtype)
    by = {}
    for w in analytic_inventory(config, include_mtp=True).weights:
        conv = q.converts(w)
        by[w.name] = {"U8" if conv else "BF16": tensor_bytes(w.shape, q, conv, db)}
    total = sum(b for d in by.values() for b in d.values())
    return {"total_size_bytes": total, "tensor_bytes": total, "bytes_by_tensor": by}


@pytest.mark.parametrize("model_id", ["meta-llama/Meta-Llama-3.1-8B", "Qwen/Qwen2.5-7B", "openai/gpt-oss-20b"])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_the_split_of_kvplans_own_tensor_list_is_the_formulas(model_id, tp):
    """Consistency: for the models whose formula equals the published total_size
    (tests/test_checkpoint_metadata.py), a compact form built from kvplan's own tensor list gives each rank
    the formula's bytes at TP 1/2/4/8 (and, for gpt-oss, with the Marlin MXFP4 padding of an A100)."""
    config = json.loads((ROOT / "configs" / model_id / "config.json").read_text())
    inv = analytic_inventory(config)
    q = quantization_of(config)
    meta = _synthetic_form(config, "bfloat16")
    for padding in ((None, MARLIN_MXFP4_PADDING) if q.method == "mxfp4" else (None,)):
        placed = placements([inv], "bfloat16", tp=tp, quant=q, mxfp4_padding=padding)
        mem = memory_of(placed, [inv], "bfloat16", tp=tp, pp=1, quant=q, drafter_quant=q)
        split, why = split_by_checkpoint(mem, meta, "synthetic", placed, analytic_inventory(config, include_mtp=True),
                                         "bfloat16", q)
        assert why == "" and split.basis == "from checkpoint metadata"
        assert [s.weight_bytes for s in split.stages] == [s.weight_bytes for s in mem.stages]


def test_a_checkpoint_whose_names_do_not_match_keeps_total_size(tiny):
    """A checkpoint whose tensor names kvplan's inventory does not know (here every layer renamed) cannot be split
    per module: total_size over kvplan's per-rank split, and a note saying why."""
    renamed = {k.replace("model.layers.", "model.blocks."): v for k, v in TENSORS.items()}
    (tiny / "model.safetensors").write_bytes(safetensors_file(renamed))
    mem = layout_weight_memory(build_model_layout(str(tiny)))
    assert "total_size" in mem.basis_detail and "per-rank split uses total_size" in " ".join(mem.notes)
    assert any("no tensor of kvplan's module model.layers.0.self_attn.q_proj" in n for n in mem.notes)


def _fp8_layer(i: int) -> dict:
    """Layer ``i`` of the tiny Llama as a block-FP8 checkpoint stores it: e4m3 weights and one fp32 scale per
    128×128 block (weight_scale_inv; every matrix here fits one block), bf16 norms."""
    out = {}
    for name, (dtype, shape) in tiny_llama_layer(i).items():
        if name.endswith("layernorm.weight"):
            out[name] = (dtype, shape)
        else:
            out[name] = ("F8_E4M3", shape)
            out[name + "_scale_inv"] = ("F32", [1, 1])
    return out


@pytest.mark.parametrize("tp, total", [(1, 181_488), (2, 91_376)])
def test_a_quantized_checkpoint_keeps_its_stored_dtypes(tmp_path, tp, total):
    """Block FP8 (quant_method fp8, weight_block_size [128, 128]): the e4m3 weights and their fp32 scales are held as
    stored (not cast to the model dtype), sharded like their linears; per rank:
      TP 1: per layer q, o 64·64 + 4 = 4,100 each; k, v 32·64 + 4 = 2,052 each; gate, up, down 128·64 + 4 = 8,196
            each; norms 256 → 37,148; 4 layers 148,592 + embedding and lm_head 2 · 128·64·2 = 32,768 + norm 128
            = 181,488
      TP 2: q [32, 64] 2,048 + 4; o [64, 32] 2,048 + 4; k, v one head [16, 64] 1,024 + 4 each; gate, up [64, 64]
            and down [64, 64] 4,096 + 4 each; norms 256 → 18,716; 4 layers 74,864 + 2 · 64·64·2 = 16,384 + 128
            = 91,376
    (the scales per rank: ⌈rows/128⌉·⌈cols/128⌉ = 1, 4 B each) — the formula's figures, from the checkpoint."""
    config = {**CONFIG, "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    tensors = {"model.embed_tokens.weight": ("BF16", [100, 64]), **{k: v for i in range(4) for k, v in
                                                                      _fp8_layer(i).items()},
               "model.norm.weight": ("BF16", [64]), "lm_head.weight": ("BF16", [100, 64])}
    (tmp_path / "model.safetensors").write_bytes(safetensors_file(tensors))
    mem = layout_weight_memory(build_model_layout(str(tmp_path), None, ServingOptions(tensor_parallel_size=tp)))
    assert mem.basis == "from checkpoint metadata" and "differ" not in mem.basis_detail
    assert [s.weight_bytes for s in mem.stages] == [total + ROTARY]
