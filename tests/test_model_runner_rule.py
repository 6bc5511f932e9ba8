"""0.22.0-0.28.0 give the V2 model runner by model: kvplan's rule (runner.v2_by_model, the eras'
v2_runner_by_model and v2_runner_architectures) answers as each release's own
``VllmConfig._is_default_v2_model_runner_model`` did (tests/golden/v2_runner/, written by
scripts/golden/v2_runner_rule.py from the wheels' sources), and the traits kvplan reads of a model are
vLLM's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan import api
from kvplan.engines.vllm import runner
from kvplan.engines.vllm.releases import era_of_release
from kvplan.engines.vllm.versions import VERSIONS, version_key
from kvplan.model.traits import ModelTraits, num_experts

GOLDEN = Path(__file__).parent / "golden" / "v2_runner"
RELEASES = sorted((p.stem for p in GOLDEN.glob("*.json")), key=version_key)


def test_every_release_with_the_rule_is_recorded():
    # the method exists from 0.22.0 (0.22.0 vllm/config/vllm.py:518) to 0.28.0 (0.29.0 makes V2 the default)
    span = [v for v in VERSIONS if version_key("0.22.0") <= version_key(v) <= version_key("0.28.0")]
    assert RELEASES == span
    assert all(era_of_release(v).v2_runner_by_model is None for v in VERSIONS if v not in RELEASES)


@pytest.mark.parametrize("release", RELEASES)
def test_rule_as_the_release_answers(release):
    g = json.loads((GOLDEN / f"{release}.json").read_text())
    era = era_of_release(release)
    assert runner.V2_RUNNER_ARCHITECTURES[era.v2_runner_architectures] == set(g["default_v2_model_runner_architectures"])
    wrong = [c for c in g["cases"] if runner.v2_by_model(era, ModelTraits(
        architectures=(c["architecture"],), is_moe=c["is_moe"], is_quantized=c["is_quantized"],
        is_hybrid=c["is_hybrid"], is_attention_free=c["is_attention_free"])) != c["v2"]]
    assert wrong == []


def test_num_experts_reads_the_keys_vllm_reads():
    # get_num_experts: num_experts, moe_num_experts, n_routed_experts, num_local_experts (the first present),
    # a list's first entry, else the largest "moe" block of block_configs
    assert num_experts({"num_local_experts": 8}) == 8
    assert num_experts({"n_routed_experts": 256, "num_experts": None, "block_configs": None}) == 0
    assert num_experts({"text_config": {"num_experts": [64, 64]}}) == 64
    assert num_experts({"block_configs": [{"block_type": "moe", "n_routed_experts": 32},
                                          {"block_type": "attention"}]}) == 32
    assert num_experts({"hidden_size": 4096}) == 0


@pytest.mark.parametrize("model, release, want", [
    # Llama: listed from 0.23.0 (0.23.0 vllm/config/vllm.py:71), dense from 0.25.0 on; not on 0.22's list
    ("meta-llama/Meta-Llama-3.1-8B", "0.22.1", "v1"),
    ("meta-llama/Meta-Llama-3.1-8B", "0.23.0", "v2"),
    ("meta-llama/Meta-Llama-3.1-8B", "0.28.0", "v2"),
    # Qwen3ForCausalLM: the one architecture of 0.22.0 (line 69), not MoE, not quantized
    ("Qwen/Qwen3-8B", "0.22.0", "v2"),
    # Mixtral: MoE (num_local_experts 8) and on no list: V1 throughout
    ("mistralai/Mixtral-8x7B-v0.1", "0.25.1", "v1"),
    # Nemotron-H: a hybrid on no list: V1 (0.27.0 line 651)
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "0.27.1", "v1"),
    ("meta-llama/Meta-Llama-3.1-8B", "0.21.0", "v1"),  # no rule before 0.22.0
])
def test_bundled_models_get_the_release_runner(model, release, want):
    d = api.simulate(model, policy=f"vllm=={release}", kv_cache_memory="40GiB")
    assert d["scheduler"]["model_runner"] == want


def test_unsupported_features_fall_back_to_v1_with_the_release_warning():
    # 0.23.0 vllm/config/vllm.py:529-536: V2 for Llama, but its speculator has no n-gram drafting
    # (_get_v2_model_runner_unsupported_features, line 2010): V1 with the warning of line 536
    era = era_of_release("0.23.0")
    llama = ModelTraits(("LlamaForCausalLM",), False, False, False, False)
    logs: list[str] = []
    got = runner.resolve_model_runner(era, None, None, pp=1, speculative_method="ngram", parallel_drafting=False,
                                      logs=logs, model=llama)
    assert got.runner == "v1"
    assert logs == ["Model Runner V2 does not yet support ngram/ngram_gpu speculative decoding; using the V1 "
                    "model runner instead."]
    # EAGLE-3 drafts on V2 unless pipeline parallel (line 2022: "EAGLE3 with pipeline parallelism")
    assert runner.resolve_model_runner(era, None, None, pp=1, speculative_method="eagle3", parallel_drafting=False,
                                       logs=[], model=llama).runner == "v2"
    assert runner.resolve_model_runner(era, None, None, pp=2, speculative_method="eagle3", parallel_drafting=False,
                                       logs=[], model=llama).runner == "v1"
    # VLLM_USE_V2_MODEL_RUNNER given wins over the rule (line 520-522)
    assert runner.resolve_model_runner(era, False, None, pp=1, speculative_method=None, parallel_drafting=False,
                                       logs=[], model=llama).runner == "v1"
