"""Weights from the checkpoint's own metadata (kvplan/budget/checkpoint_bundle.py, weights.with_checkpoint).

kvplan's count of what a checkpoint stores (``stored_bytes``) is the figure its index's ``metadata.total_size``
gives; a checkpoint that holds more than kvplan models (a vision tower it has no rule for) adds the rest to
every rank, and the figure is labelled "from checkpoint metadata"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kvplan.budget.checkpoint import CheckpointError
from kvplan.budget.quantization import quantization_of
from kvplan.budget.weights import stored_bytes
from kvplan.model.inventory import analytic_inventory

ROOT = Path(__file__).resolve().parent.parent


def cfg(model_id: str) -> dict:
    return json.loads((ROOT / "configs" / model_id / "config.json").read_text())


@pytest.mark.parametrize("model_id, total", [
    # 128256·4096 embedding + lm_head (untied) + 32 · (2·4096² q/o + 2·1024·4096 k/v + 3·14336·4096 MLP
    # + 2·4096 norms) + 4096 final norm = 8,030,261,248 parameters; bf16: 16,060,522,496 B
    ("meta-llama/Meta-Llama-3.1-8B", 16_060_522_496),
    # 152064·3584 ·2 (untied) + 28 · (2·3584² + 2·512·3584 + 3584 + 2·512 biases + 3·18944·3584 + 2·3584)
    # + 3584 = 7,615,616,512 parameters; bf16: 15,231,233,024 B
    ("Qwen/Qwen2.5-7B", 15_231_233_024),
    # gpt-oss-20b stores its experts as MXFP4 blocks (U8, 16 B per 32 values) and scales (U8, one per 32):
    # 24 · 32 experts · (5760·2880 + 2880·2880) values · 17/32 B = 12,177,604,608 B, the rest in bf16
    # (attention, sinks, router, biases, embedding, untied lm_head): 1,583,660,160 B → 13,761,264,768 B
    ("openai/gpt-oss-20b", 13_761_264_768),
    # Quoted as the Hub's total_size in public files (a test keeping "verbatim hub output", a table of
    # "OFFICIAL_WEIGHT_BYTES"): Qwen3-8B 8,190,735,360 and Qwen3-32B 32,762,123,264 bf16 parameters (tied: no)
    ("Qwen/Qwen3-8B", 16_381_470_720),
    ("Qwen/Qwen3-32B", 65_524_246_528),
    # gpt-oss-120b: the tensors' byte sum of its headers as a public inventory test records it (the files are
    # 77,440 B larger: the headers): 36 · 128 experts of MXFP4 + bf16 rest
    ("openai/gpt-oss-120b", 65_248_815_744),
])
def test_kvplans_count_of_the_stored_tensors_is_the_index_total_size(model_id, total):
    """The published checkpoints' ``metadata.total_size`` (the values quoted for them in many public files;
    the derivation in the comments) equals kvplan's count of what the checkpoint stores."""
    c = cfg(model_id)
    assert stored_bytes(analytic_inventory(c, include_mtp=True), "bfloat16", quantization_of(c)) == total


def _local_checkpoint(tmp_path, model_id: str, total: int) -> Path:
    d = tmp_path / model_id.split("/")[1]
    d.mkdir()
    shutil.copy(ROOT / "configs" / model_id / "config.json", d / "config.json")
    (d / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": {"lm_head.weight": "model-00001-of-00002.safetensors"}}))
    return d


def test_a_local_checkpoints_total_size_counts_the_vision_tower_kvplan_does_not_model(tmp_path):
    """Gemma 3 4B: kvplan's family rule models the text decoder (3,880,263,168 parameters, bf16 7,760,526,336 B);
    the checkpoint also holds the SigLIP tower and projector (419,816,304 parameters by transformers' meta build:
    tests/test_weights_meta.py), 839,632,608 B, which vLLM loads. An index whose total_size says so (the
    shards absent: the index alone is read) puts them on the rank, labelled; without one, kvplan's tower rule
    (kvplan/budget/encoder.py gemma3_tower_params) counts the same 419,816,304 parameters. Beside the checkpoint's
    tensors every rank holds the decoder's two rotary tables (kvplan.budget.rotary; vLLM 0.19.0's build:
    tests/golden/profile_terms/weights/0.19.0.json): (131,072 × 8 + 131,072) rows of 256, bf16 = 603,979,776 B."""
    from kvplan.api import simulate

    text = 2 * 3_880_263_168
    rotary = (131_072 * 8 + 131_072) * 256 * 2
    d = _local_checkpoint(tmp_path, "google/gemma-3-4b-it", text + 2 * 419_816_304)
    with_meta = simulate(str(d), gpu="H100-80GB")["budget"]
    formula = simulate("google/gemma-3-4b-it", gpu="H100-80GB")["budget"]
    assert formula["weights_bytes"] == with_meta["weights_bytes"] == text + 839_632_608 + rotary
    assert with_meta["weights_source"] == "checkpoint metadata"
    term = with_meta["profile_terms"][0]
    assert term["basis"] == "from checkpoint metadata" and "839,632,608 B whole on every rank" in term["source"]
    assert not any(w.startswith("text decoder only") for w in with_meta["warnings"] + formula["warnings"])
    # --language-model-only (0.19.0 builds no tower then): the checkpoint's extra bytes are not loaded
    lm = simulate(str(d), gpu="H100-80GB", policy="vllm==0.19.0", language_model_only=True)["budget"]
    assert lm["weights_bytes"] == text + rotary


def test_a_total_size_below_kvplans_count_keeps_the_formula(tmp_path):
    from kvplan.api import simulate

    d = _local_checkpoint(tmp_path, "meta-llama/Meta-Llama-3.1-8B", 16_060_522_496 - 1024)
    b = simulate(str(d), gpu="H100-80GB")["budget"]
    # the formula, and the llama3 rotary table beside it: 131,072 rows of 128, bf16 (kvplan.budget.rotary)
    assert b["weights_bytes"] == 16_060_522_496 + 131_072 * 128 * 2 and b["profile_terms"][0]["basis"] == "kvplan's formula estimate"
    assert "1,024 B below kvplan's count" in b["profile_terms"][0]["source"]


def test_a_bad_local_index_is_one_line(tmp_path):
    from kvplan.api import simulate

    d = _local_checkpoint(tmp_path, "meta-llama/Meta-Llama-3.1-8B", 1)
    (d / "model.safetensors.index.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not a readable JSON index"):
        simulate(str(d), gpu="H100-80GB")


def test_a_local_single_file_checkpoint_is_read_from_its_header(tmp_path):
    """Without an index, the model.safetensors header is the metadata (its tensors' byte sum; the file's
    weights are never read: this one has none after its header). Gemma 3 1B stores 999,885,952 bf16
    parameters (1,999,771,904 B, kvplan's count); the header declares them as one tensor plus a 1,000-element
    bf16 tensor kvplan does not model (2,000 B), which lands on the rank; beside them the two rotary tables (global
    and sliding, 32,768 rows of 256 each, bf16: 33,554,432 B, kvplan.budget.rotary)."""
    import struct

    from kvplan.api import simulate
    from kvplan.budget.checkpoint_bundle import local_metadata

    d = tmp_path / "gemma-3-1b-it"
    d.mkdir()
    shutil.copy(ROOT / "configs" / "google" / "gemma-3-1b-it" / "config.json", d / "config.json")
    text = 999_885_952 * 2
    header = json.dumps({"model.layers.0.all": {"dtype": "BF16", "shape": [999_885_952], "data_offsets": [0, text]},
                         "model.extra.w": {"dtype": "BF16", "shape": [1000], "data_offsets": [text, text + 2000]}})
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header.encode())
    meta = local_metadata(d / "config.json")
    assert meta["total_size_bytes"] == meta["tensor_bytes"] == text + 2000
    assert meta["bytes_by_module"] == {"model.extra": {"BF16": 2000}, "model.layers": {"BF16": text}}
    b = simulate(str(d), gpu="H100-80GB")["budget"]
    assert b["weights_bytes"] == text + 2000 + 2 * 32_768 * 256 * 2 and b["weights_source"] == "checkpoint metadata"


@pytest.mark.parametrize("model_id", ["mistralai/Mistral-7B-v0.1", "google/gemma-2-9b-it"])
def test_bundled_indexes_are_the_kept_copies_and_kvplans_count(model_id):
    """The bundled entries come from verbatim copies of the Hub repositories' indexes in public GitHub repositories
    (provenance in kvplan/budget/checkpoint_metadata.json; the files kept under tests/logs/budget/checkpoints/):
    their total_size is the bundled figure and kvplan's count of the stored tensors — Mistral-7B-v0.1:
    32000·4096 · 2 (untied) + 32 · (2·4096² + 2·1024·4096 + 3·14336·4096 + 2·4096) + 4096 = 7,241,732,096
    bf16 parameters = 14,483,464,192 B; gemma-2-9b-it: 256000·3584 (tied) + 42 · (2·4096·3584 + 2·2048·3584
    + 3·14336·3584 + 4·3584) + 3584 = 9,241,705,984 = 18,483,411,968 B — and a simulation labels its weights so,
    with the rotary table beside them (kvplan.budget.rotary: Mistral 32,768 rows of 128, gemma-2 8,192 of 256;
    bf16)."""
    from kvplan.api import simulate
    from kvplan.budget.checkpoint import parse_index
    from kvplan.budget.checkpoint_bundle import bundled_metadata

    meta = bundled_metadata(model_id)
    copy = ROOT / meta["provenance"]["copy"]
    total, weight_map = parse_index(json.loads(copy.read_text()), str(copy))
    assert total == meta["total_size_bytes"] == stored_bytes(analytic_inventory(cfg(model_id), include_mtp=True), "bfloat16",
                                                              quantization_of(cfg(model_id)))
    assert not any(k.endswith(("SCB", "weight_format", "qweight", "weight_scale", "weight_scale_inv")) for k in weight_map)
    b = simulate(model_id, gpu="H100-80GB")["budget"]
    rotary = {"mistralai/Mistral-7B-v0.1": 32_768 * 128 * 2, "google/gemma-2-9b-it": 8_192 * 256 * 2}[model_id]
    assert b["weights_bytes"] == total + rotary and b["weights_source"] == "checkpoint metadata"
    assert meta["provenance"]["repo"] in b["profile_terms"][0]["source"]
