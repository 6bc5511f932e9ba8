"""The walk (scripts/walk.py, issue 21): a deployment from ``run_scenario`` to the rendered result
runs downhill, with at most 3 calls back up the declared layers (tests/test_layering.py::LAYERS).
Calls up are callbacks a lower module runs for a higher one; what is left is the model layer's
block-size rule. The searches of the engines and the use cases drive ``units.Bisection`` themselves,
so no core search and no engine search calls a predicate of a layer above."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import script_module

ROOT = Path(__file__).resolve().parent.parent


def _walk():
    return script_module("scripts/walk.py")


@pytest.mark.parametrize("argv", [
    None,  # the script's default: simulate openai/gpt-oss-20b --gpu H100-80GB
    ["compare", "openai/gpt-oss-20b", "--kv-cache-memory", "40GiB", "--target-len", "131072", "--format", "json"],
    # a deployment that fails and searches for its fixes
    ["simulate", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100-80GB", "--tensor-parallel-size", "2",
     "--format", "json"],
    # a deployment whose fix is a larger --gpu-memory-utilization, searched by the use case
    ["simulate", "google/gemma-3-27b-it", "--gpu", "H100-80GB", "--gpu-memory-utilization", "0.5", "--format", "json"],
    # vLLM's threshold advice simulates two thresholds: a search the use case drives
    ["compare", "google/gemma-3-27b-it", "--kv-cache-memory", "40GiB", "--target-len", "131072",
     "--target-concurrency", "3", "--format", "json"],
], ids=["default", "compare", "fixes", "utilization-fix", "compare-vllm-advice"])
def test_the_walk_runs_downhill(argv):
    walk = _walk()
    m = walk.measure(walk.trace(argv or walk.DEFAULT))
    assert m["climbs"] == 0, m["_climbs"]  # the model stage no longer calls the engine for the block size
    # the serializer and the result records never call into the engines or the model
    assert not [(a, b) for a, b in m["_climbs"] if a.startswith("kvplan.results")]
    # searches pass no predicate down: the core never calls up, nothing calls back into the use cases
    assert not [(a, b) for a, b in m["_climbs"] if a == "kvplan.units" or b.startswith("kvplan.usecases")]
    assert m["re_entries_outside_core"] <= m["re_entries"]


@pytest.mark.parametrize("argv", [
    None,  # simulate openai/gpt-oss-20b --gpu H100-80GB
    ["simulate", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100-80GB", "--tensor-parallel-size", "2",
     "--format", "json"],
    ["simulate", "google/gemma-3-27b-it", "--gpu", "H100-80GB", "--gpu-memory-utilization", "0.5", "--format", "json"],
    # MTP weights and DeepSeek-V3.2-style decisions come from the model stage as values
    ["simulate", "deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--tensor-parallel-size", "8", "--speculative-method",
     "mtp", "--num-speculative-tokens", "1", "--format", "json"],
], ids=["default", "hybrid-tp2", "utilization-fix", "deepseek-mtp"])
def test_each_budget_file_is_entered_from_one_file(argv):
    # the card is resolved once at the edge and its values handed down; estimate enters weights, and weights
    # alone enters the inventory, the quantization and the checkpoint metadata
    walk = _walk()
    m = walk.measure(walk.trace(argv or walk.DEFAULT))
    callers: dict[str, set[str]] = {}
    for a, b in m["_steps"]:
        callers.setdefault(b, set()).add(a)
    assert not {b: v for b, v in callers.items() if b.startswith("kvplan.budget") and len(v) > 1}
    # the budget reads the model stage's values (ModelInfo's decisions, ModelLayout.inventory: the weights the
    # family rules counted) and calls nothing in the model layer
    assert {b for a, b in m["_steps"] if a.startswith("kvplan.budget") and b.startswith("kvplan.model")} == set()


# What a simulation's walk still re-enters (outside the shared core): the family rules (kvplan/model/families/,
# one module per family, read by the walk as one file: scripts/walk.py UNITS), which hold both halves of a
# family's rules: the model stage enters them for the layers (model/layout.py) and for the weights
# (model/inventory.py, the inventory the budget stage then reads as ModelLayout.inventory). The config view
# (model/hfconfig.py) is entered from the family rules alone. MTP layers are the target family's own rule
# (families.mtp_layers); the load fixes' fp8 candidate is judged by its own simulation, not by asking the budget's
# quantization reader first.
CONFIG_VIEW = {"kvplan.model.families": {"kvplan.model.layout", "kvplan.model.inventory"}}


@pytest.mark.parametrize("argv,expected", [
    (None, CONFIG_VIEW),
    (["simulate", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100-80GB", "--tensor-parallel-size", "2",
      "--format", "json"], CONFIG_VIEW),
    (["simulate", "google/gemma-3-27b-it", "--gpu", "H100-80GB", "--gpu-memory-utilization", "0.5", "--format",
      "json"], CONFIG_VIEW),
    (["simulate", "deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--tensor-parallel-size", "8", "--speculative-method",
      "mtp", "--num-speculative-tokens", "1", "--format", "json"], CONFIG_VIEW),
    # a load failure: each candidate (tensor / pipeline parallel, fp8, a larger card, CPU offload) is the
    # typed deployment changed (deployment.changed), not the options parsed again
    (["simulate", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100-80GB", "--format", "json"], CONFIG_VIEW),
    # drafters: their layers are the family rules' (families.eagle_layers, draft_model_layers), their weights the
    # weight rules', the draft config's n_predict read by the family rules' module
    (["simulate", "openai/gpt-oss-20b", "--gpu", "A100-80GB", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--format",
      "json"], CONFIG_VIEW),
    (["simulate", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "H100-80GB", "--tensor-parallel-size", "2",
      "--drafter", "meta-llama/Llama-3.1-8B-Instruct", "--speculative-method", "draft_model",
      "--num-speculative-tokens", "3", "--format", "json"], CONFIG_VIEW),
], ids=["default", "hybrid-tp2", "utilization-fix", "deepseek-mtp", "load-fixes", "p-eagle", "draft-model"])
def test_a_simulation_re_enters_only_the_config_view(argv, expected):
    walk = _walk()
    m = walk.measure(walk.trace(argv or walk.DEFAULT))
    callers: dict[str, set[str]] = {}
    for a, b in m["_steps"]:
        callers.setdefault(b, set()).add(a)
    # the use cases compose (walk.COMPOSERS): simulate reads the pipeline's result, scenario runs the pipeline and
    # the fix search; the files counted are the stages' (model, budget, engines) and the core's
    assert {b: v for b, v in callers.items()
            if len(v) > 1 and b not in walk.SHARED and not walk._composer(b)} == expected
    # no file is entered again once the walk has left its stage: each stage's files are the stage's own
    assert m["stage_re_entries"] == 0, m["_back"]


# What a compare's walk re-enters (outside the shared core): the engines' shared vocabulary (engines/compare.py:
# the workload and knobs, the row, the stage figures, how advice is scored), which each engine fills from its own
# module the way every layer fills the specs. The use case asks each engine once for its row and its advice, and
# only the scenario use case makes deployments and plan bodies; the era registry, the release versions and the
# group-size rules are each entered from one file.
ENGINE_VOCABULARY = {"kvplan.engines.compare": {"kvplan.engines.llamacpp", "kvplan.engines.lower_bound",
                                                "kvplan.engines.sglang", "kvplan.engines.trtllm",
                                                "kvplan.engines.vllm.compare"}}
ENGINES = ("kvplan.engines.sglang", "kvplan.engines.trtllm", "kvplan.engines.llamacpp", "kvplan.engines.lower_bound",
           "kvplan.engines.vllm.compare")


@pytest.mark.parametrize("argv", [
    ["compare", "openai/gpt-oss-20b", "--kv-cache-memory", "40GiB", "--target-len", "131072", "--format", "json"],
    # vLLM's threshold advice: two more deployments, made by the scenario use case
    ["compare", "google/gemma-3-27b-it", "--kv-cache-memory", "40GiB", "--target-len", "131072",
     "--target-concurrency", "3", "--format", "json"],
], ids=["gpt-oss-20b", "gemma-3-27b-advice"])
def test_a_compare_re_enters_only_the_engines_vocabulary(argv):
    walk = _walk()
    m = walk.measure(walk.trace(argv))
    callers: dict[str, set[str]] = {}
    for a, b in m["_steps"]:
        callers.setdefault(b, set()).add(a)
    assert {b: v for b, v in callers.items()
            if len(v) > 1 and b not in walk.SHARED and not walk._composer(b)} == ENGINE_VOCABULARY
    # and it is the one file entered under two stages (each engine's answer is a stage of its own)
    assert set(m["_back"]) == set(ENGINE_VOCABULARY), m["_back"]
    # one entry per engine (its row and its advice), called by the use case alone
    assert {b: callers[b] for b in ENGINES} == {b: {"kvplan.usecases.compare"} for b in ENGINES}
    # compare hands its policies' deployments to the scenario use case
    assert callers["kvplan.usecases.deployment"] <= {"kvplan.usecases.scenario", "kvplan.usecases.pipeline"}
