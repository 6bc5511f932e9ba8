"""The rotary cos/sin tables vLLM keeps among the weights (kvplan.budget.rotary), against the release's own build.

Goldens: ``tests/golden/profile_terms/weights/<release>.json`` (``scripts/golden/profile_terms.py --weights-all``: the
model class built on the meta device as that vLLM release builds it per TP rank, ``process_weights_after_loading``
run, every allocation that stays live counted; parameters and buffers listed): 0.19.0, and 0.29.0 with
gemma-4-26B-A4B-it (its full-attention layers' proportional RoPE table)."""

import json
from pathlib import Path

import pytest

from kvplan.budget.rotary import rotary_cache
from kvplan.model.limits import text_config
from kvplan.version import version_key

ROOT = Path(__file__).resolve().parents[1]
GOLDENS = {f.stem: json.loads(f.read_text())["weights"]
           for f in sorted((ROOT / "tests/golden/profile_terms/weights").glob("*.json"))}
GOLDEN = GOLDENS["0.19.0"]
GIB = 1 << 30


def _text_tables(rec: dict) -> int:
    """The text decoder's cos/sin buffers in the golden (one per distinct get_rope instance: named_buffers lists a
    shared module once)."""
    return sum(b[3] for b in rec["buffers"] if b[0].startswith("language_model.") and b[0].endswith("cos_sin_cache"))


@pytest.mark.parametrize("release,key", [(r, k) for r in sorted(GOLDENS) for k in sorted(GOLDENS[r])])
def test_rotary_tables_equal_the_releases_buffers(release, key):
    rec = GOLDENS[release][key]
    assert rec["derived"], rec.get("why")
    cfg = text_config(json.loads((ROOT / rec["model"]).read_text()))
    got = rotary_cache(cfg, 2, version_key(release))
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
    # Gemma 4 26B-A4B: the sliding layers' default table, 262,144 rows of the 256-wide head, and the full-attention
    # layers' proportional one over the whole 512-wide global head (partial_rotary_factor 0.25 only zeroes the
    # frequencies past a quarter: gemma4_rope.py hands the base class head_size as the rotary dim); bf16
    cfg = text_config(json.loads((ROOT / "configs/google/gemma-4-26B-A4B-it/config.json").read_text()))
    assert sorted(rotary_cache(cfg, 2, (0, 29, 0)).tables) == [(262_144, 256), (262_144, 512)]
    assert rotary_cache(cfg, 2, (0, 29, 0)).bytes == 262_144 * (256 + 512) * 2 == 402_653_184
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


def test_gemma4_language_model_weights_against_the_0_29_build():
    """gemma-4-26B-A4B-it served with --language-model-only on 0.29.0: kvplan's weights are the golden's language
    model (parameters and buffers, both RoPE tables among them) less the V slots vLLM allocates in the full-attention
    layers' fused QKV though attention_k_eq_v loads K into them (gemma4.py 0.29.0 lines 415-425: 5 layers × 2816 ×
    2 KV heads × 512 × 2 B = 28,835,840 B, not in the checkpoint kvplan counts from) and the attention layers' scalar
    scales (under 1 KiB)."""
    from kvplan.api import simulate

    rec = GOLDENS["0.29.0"]["gemma-4-26B-A4B-it@tp1"]
    d = simulate("google/gemma-4-26B-A4B-it", policy="vllm==0.29.0", gpu="H100-80GB", max_model_len=4096,
                 language_model_only=True)
    gap = rec["by_module"]["language_model"] - d["budget"]["weights_bytes"]
    assert 5 * 2816 * 2 * 512 * 2 == 28_835_840 <= gap < 28_835_840 + 1024
