"""The rotary cos/sin tables vLLM keeps among the weights (kvplan.budget.rotary), against the release's own build.

Golden: ``tests/golden/profile_terms/weights/0.19.0.json`` (``scripts/golden/profile_terms.py --weights-all``: the model
class built on the meta device as vLLM 0.19.0 builds it per TP rank, ``process_weights_after_loading`` run, every
allocation that stays live counted; parameters and buffers listed)."""

import json
from pathlib import Path

import pytest

from kvplan.budget.rotary import rotary_cache
from kvplan.model.limits import text_config

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = json.loads((ROOT / "tests/golden/profile_terms/weights/0.19.0.json").read_text())["weights"]
GIB = 1 << 30


def _text_tables(rec: dict) -> int:
    """The text decoder's cos/sin buffers in the golden (one per distinct get_rope instance: named_buffers lists a
    shared module once)."""
    return sum(b[3] for b in rec["buffers"] if b[0].startswith("language_model.") and b[0].endswith("cos_sin_cache"))


@pytest.mark.parametrize("key", sorted(GOLDEN))
def test_rotary_tables_equal_the_releases_buffers(key):
    rec = GOLDEN[key]
    assert rec["derived"], rec.get("why")
    cfg = text_config(json.loads((ROOT / rec["model"]).read_text()))
    got = rotary_cache(cfg, 2, (0, 19, 0))
    assert got.bytes == _text_tables(rec)
    assert not got.not_derived


def test_rotary_tables_by_hand():
    # Gemma 3: the full-attention layers' linear table, 131,072 × 8 rows of 256 (gemma3.py: rope_scaling linear 8),
    # and the sliding layers' default table (rope_local_base_freq), 131,072 rows; bf16
    cfg = text_config(json.loads((ROOT / "configs/google/gemma-3-4b-it/config.json").read_text()))
    assert rotary_cache(cfg, 2).tables == ((1_048_576, 256), (131_072, 256))
    assert rotary_cache(cfg, 2).bytes == (1_048_576 + 131_072) * 256 * 2 == 603_979_776
    # Llama 3.1: llama3 scaling keeps max_position_embeddings rows: 131,072 × 128 × 2 = 32 MiB
    cfg = json.loads((ROOT / "configs/meta-llama/Llama-3.1-8B-Instruct/config.json").read_text())
    assert rotary_cache(cfg, 2).bytes == 131_072 * 128 * 2
    # Qwen3.5: mrope (4 × 262,144 rows) of a quarter of the 256-wide head; from 0.32 the factor is a model's
    # parameter: not derived there
    cfg = text_config(json.loads((ROOT / "configs/Qwen/Qwen3.5-27B/config.json").read_text()))
    assert rotary_cache(cfg, 2, (0, 19, 0)).bytes == 262_144 * 4 * 64 * 2
    later = rotary_cache(cfg, 2, (0, 34, 0))
    assert later.bytes == 0 and "default" in later.not_derived
    # an MLA decoder: not counted, and said
    assert rotary_cache({"kv_lora_rank": 512, "rope_theta": 1e4, "max_position_embeddings": 4096}, 2).not_derived
    # no RoPE parameters (ALiBi, learned positions): nothing
    assert rotary_cache({"max_position_embeddings": 2048, "hidden_size": 64, "num_attention_heads": 4}, 2).bytes == 0


CASES = {  # validation-corpus deployments (tests/logs/budget/cases.json) and their golden rank
    "gemma-3-4b-it@tp1": ("google/gemma-3-4b-it", {}, 0),
    "gemma-3-12b-it@tp1": ("google/gemma-3-12b-it", {}, 0),
    # kvplan's per-rank parameters of Llama-4-Scout at TP 4 are 1,241,856 B above the release's build (the vision
    # tower's per-rank split: 427,140,480 B on the rank in the golden), Qwen3.5-27B's 1,152 B below: the formula's
    # residuals, not the rotary tables'
    "Llama-4-Scout-17B-16E-Instruct@tp4": ("meta-llama/Llama-4-Scout-17B-16E-Instruct", {"tensor_parallel_size": 4},
                                           1_241_856),
    "Qwen3.5-27B@tp4": ("Qwen/Qwen3.5-27B", {"tensor_parallel_size": 4, "gpu": "RTX-3090-24GB"}, -1_152),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_weights_term_is_the_parameters_and_tables_of_the_release(key):
    from kvplan.api import simulate

    model, opts, residual = CASES[key]
    rec = GOLDEN[key]
    d = simulate(model, policy="vllm==0.19.0", **{"gpu": "H100-80GB", "max_model_len": 8192, **opts})
    assert d["budget"]["weights_bytes"] == rec["parameter_bytes"] + _text_tables(rec) + residual
    # what the golden holds beyond: the towers' own tables and position ids and the attention layers' scalar
    # scales (under 1 MiB), not counted
    assert 0 < rec["live_bytes"] - d["budget"]["weights_bytes"] + residual < 1 << 20
