"""The analytic parameter count equals transformers' model built on the meta device.

For every bundled config whose model type transformers knows, ``AutoModelForCausalLM
.from_config`` on ``torch.device("meta")`` (no memory, no weights, no remote code) must count
exactly what ``kvplan.model.inventory.analytic_inventory`` counts for the text decoder, buffers
excluded (transformers keeps the routers' correction biases as buffers). Vision towers of
multimodal checkpoints are counted apart by the meta path and not at all by the analytic one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kvplan.model.inventory import KINDS, analytic_inventory  # noqa: E402
from kvplan.budget.meta import meta_param_counts  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
INDEX = json.loads((ROOT / "configs" / "INDEX.json").read_text())
# DeepSeek-V4: transformers' class is not vLLM's (kvplan's rule is held to vLLM 0.34.0's class built on the meta
# device instead: tests/test_weights.py test_deepseek_v4_weight_rule_names_every_parameter_of_vllms_class).
SKIP = {"deepseek-ai/DeepSeek-V4-Flash"}
# Speculators-format heads have no model_type: transformers builds nothing from them (vLLM builds the
# EAGLE-3 head from transformer_layer_config; kvplan counts it with drafter_inventory).
SPECULATORS = {e["model_id"] for e in INDEX
               if "speculators_model_type" in json.loads((ROOT / "configs" / e["file"]).read_text())}
MODELS = [e["model_id"] for e in INDEX if e["model_id"] not in SKIP | SPECULATORS]


def cfg(model_id: str) -> dict:
    return json.loads((ROOT / "configs" / model_id / "config.json").read_text())


@pytest.mark.parametrize("model_id", MODELS)
def test_analytic_count_equals_meta_device_count(model_id):
    c = cfg(model_id)
    meta = meta_param_counts(c)
    inv = analytic_inventory(c)
    analytic = inv.num_params(include_buffers=False, kinds=tuple(k for k in KINDS if k != "vision"))
    assert analytic == meta["text"], f"{model_id}: analytic {analytic:,} vs meta {meta['text']:,}"
    vision = inv.num_params(include_buffers=False, kinds=("vision",))
    assert vision in (0, meta["vision"]), f"{model_id}: analytic vision {vision:,} vs meta {meta['vision']:,}"


def test_gemma4_vision_tower_is_counted_as_vllm_loads_it():
    """vLLM builds Gemma 4's tower with AutoModel.from_config (gemma4_mm.py, 0.22.0 l.960) and its projector as a
    ReplicatedLinear(1152, 2816) (l.894): transformers' meta-device build counts 572,792,112 parameters for
    both (569,548,080 tower + 1152·2816 projector); the checkpoint adds the std_bias/std_scale buffers (2·1152).
    In bf16 that is 1,145,588,832 bytes, whole on each of 2 TP ranks and on both PP stages."""
    from kvplan.budget.weights import weight_memory

    c = cfg("google/gemma-4-26B-A4B")
    inv = analytic_inventory(c)
    assert meta_param_counts(c)["vision"] == inv.num_params(include_buffers=False, kinds=("vision",)) == 572_792_112
    assert 569_548_080 + 1152 * 2816 == 572_792_112
    assert inv.num_params(kinds=("vision",)) == 572_792_112 + 2 * 1152
    for tp, pp in ((2, 1), (1, 2)):
        mem = weight_memory([inv], "bfloat16", tp=tp, pp=pp)
        assert all(s.bytes_by_kind["vision"] == 1_145_588_832 for s in mem.stages)


def test_meta_counts_vision_towers_apart():
    # Gemma 3 4B: 3.88 B text + 0.42 B SigLIP tower and projector = the "4B" (4.3 B) checkpoint.
    m = meta_param_counts(cfg("google/gemma-3-4b-it"))
    assert m["text"] == 3_880_263_168 and m["vision"] == 419_816_304


def test_kimi_k2_is_built_through_the_deepseek_v3_alias():
    # kimi_k2 is not a transformers model type; vLLM (and kvplan) read it as DeepseekV3Config.
    m = meta_param_counts(cfg("moonshotai/Kimi-K2-Instruct"))
    assert m["text"] == 1_026_408_209_408  # + 60·384 correction-bias buffers = 1,026,408,232,448


def test_deepseek_v32_builds_its_indexer():
    # DeepseekV32ForCausalLM has the lightning indexer (wq_b, wk, k_norm, weights_proj) per layer:
    # 61 · (8192·1536 + 128·7168 + 2·128 + 64·7168) = 851,524,864 more than V3.
    v3 = meta_param_counts(cfg("deepseek-ai/DeepSeek-V3"))["text"]
    v32 = meta_param_counts(cfg("deepseek-ai/DeepSeek-V3.2"))["text"]
    assert v32 - v3 == 61 * (8192 * 1536 + 128 * 7168 + 2 * 128 + 64 * 7168) == 851_524_864


def test_exact_params_note_in_the_budget():
    from kvplan.engines.vllm import get_era
    from factories import budget_of
    from kvplan.model import build_model_layout

    layout = build_model_layout("meta-llama/Meta-Llama-3.1-8B")
    b = budget_of(layout, get_era("vllm-latest"), gpu="H100-80GB", exact_params=True)
    assert b.weights_source == "meta-device count"
    assert any("agrees with the analytic count" in n for n in b.weights.notes)
