"""Goal-seeking fit (issue 37): `kvplan fit MODEL --gpu CARD --concurrency N --max-model-len L` answers with the
flags that serve N requests of L tokens, as one deployment simulated to start at the budget band's pessimistic end
(kvplan/usecases/fit_goal.py), and `--emit FORMAT` writes it for `kvplan vllm --file` to read back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import kvplan

ROOT = Path(__file__).resolve().parent.parent


def kvplan_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvplan.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_the_acceptance_goal_takes_two_gpus_and_its_k8s_manifest_reads_back_to_the_same_plan(tmp_path):
    # gpt-oss-120b, 8 requests of 131,072 tokens on H100-80GB, vLLM 0.34.0
    fit = kvplan.fit("openai/gpt-oss-120b", gpu="H100-80GB", concurrency=8, max_model_len="131072")
    goal = fit["goal"]
    assert fit["outcome"]["ok"] and goal["reached"]
    # two GPUs, one flag: TP 2 and DP 2 (gpt-oss's experts sharded over the DP ranks too, vLLM's FusedMoE without
    # expert parallelism) both reach it; the tie goes to the plan holding more requests at the pessimistic end
    assert goal["num_gpus"] == 2 and len(goal["changes"]) == 1
    held = {}
    for opt in ("tensor_parallel_size", "data_parallel_size"):
        g = kvplan.fit("openai/gpt-oss-120b", gpu="H100-80GB", concurrency=8, max_model_len="131072",
                       **{opt: 2})["goal"]
        assert g["reached"] and g["changes"] == []
        held[opt] = g["total_steady_state_concurrency_low"]
    best = max(held, key=held.get)
    assert goal["changes"][0]["option"] == best and goal["total_steady_state_concurrency_low"] == held[best]
    tp, dp = (2, 1) if best == "tensor_parallel_size" else (1, 2)
    assert (goal["tensor_parallel_size"], goal["data_parallel_size"]) == (tp, dp)
    # one GPU cannot: even with every change the search makes there, the pessimistic end holds fewer than 8
    one = kvplan.simulate("openai/gpt-oss-120b", gpu="H100-80GB", max_model_len="131072", kv_cache_dtype="fp8",
                          max_num_batched_tokens="2048")
    assert one["budget"]["band"]["max_concurrency_low"] < 8
    r = kvplan_cli("fit", "openai/gpt-oss-120b", "--gpu", "H100-80GB", "--concurrency", "8", "--max-model-len",
                   "131072", "--emit", "k8s")
    assert r.returncode == 0, r.stderr
    assert "read it back: kvplan vllm --gpu H100-80GB --file FILE" in r.stderr
    f = tmp_path / "k8s.yaml"
    f.write_text(r.stdout)
    back = json.loads(kvplan_cli("vllm", "--gpu", "H100-80GB", "--file", str(f), "-f", "json").stdout)
    assert back["outcome"]["starts"]
    assert back["serving"]["tensor_parallel_size"] == tp and back["scheduler"]["max_model_len"] == 131072
    assert back["totals"]["data_parallel_size"] == dp and back["totals"]["gpus"] == 2
    band = back["budget"]["band"]
    # the same plan: the manifest's pessimistic end is the one the goal was proven at
    assert band["starts_at_low"] is True
    assert band["num_gpu_blocks_low"] == goal["num_gpu_blocks_low"]
    assert band["kv_cache_memory_low_bytes"] == goal["kv_cache_memory_low_bytes"]
    assert band["max_concurrency_low"] == goal["max_concurrency_low"]
    assert goal["total_steady_state_concurrency_low"] >= 8  # over the DP engines (reached: steady state × DP ≥ N)


def test_the_least_utilization_that_reaches_it_on_an_older_release():
    # vLLM 0.20.2 runs at 0.9 by default; Llama-3.1-8B with an fp8 KV cache, 7 requests of 131,072 tokens
    base = dict(gpu="H100-80GB", max_model_len="131072", policy="vllm==0.20.2", kv_cache_dtype="fp8")
    goal = kvplan.fit("meta-llama/Llama-3.1-8B-Instruct", concurrency=7, **base)["goal"]
    assert goal["reached"] and [c["option"] for c in goal["changes"]] == ["gpu_memory_utilization"]
    util = goal["changes"][0]["value"]
    assert goal["num_gpus"] == 1 and 0.9 < util < 1.0 and goal["changes"][0]["flag"] == f"--gpu-memory-utilization {util}"
    at = kvplan.simulate("meta-llama/Llama-3.1-8B-Instruct", gpu_memory_utilization=util, **base)["budget"]["band"]
    below = kvplan.simulate("meta-llama/Llama-3.1-8B-Instruct", gpu_memory_utilization=round(util - 0.01, 2),
                            **base)["budget"]["band"]
    # one full-attention group: steady state and vLLM's figure agree to the block; one point less falls short at the
    # low end (0.20.2 subtracts the CUDA graphs' calibrated estimate, its high end at the low end); 1.0 would leave
    # the start-up memory no headroom (the warm-up check): the search stops below it
    assert at["starts_at_low"] is True
    assert at["num_gpu_blocks_low"] == goal["num_gpu_blocks_low"] and at["max_concurrency_low"] >= 7
    assert below["max_concurrency_low"] < 7


def test_nothing_reaches_it_says_why_and_exits_3():
    r = kvplan_cli("fit", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-80GB", "--concurrency", "5000",
                   "--max-model-len", "131072", "-f", "json", "--emit", "k8s")
    assert r.returncode == 3
    d = json.loads(r.stdout)
    assert d["goal"]["reached"] is False and "apiVersion" not in r.stdout
    assert d["goal"]["reason"].startswith("no deployment on up to 8 × H100-80GB per pipeline stage")
    assert "as given: holds" in d["goal"]["reason"]


def test_emit_needs_the_goal_question():
    r = kvplan_cli("fit", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-80GB", "--emit", "serve")
    assert r.returncode == 2 and "--emit writes the deployment fit finds" in r.stderr


def test_simulate_and_vllm_emit_what_they_simulated(tmp_path):
    r = kvplan_cli("simulate", "meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-memory", "40GiB", "--policy",
                   "vllm==0.34.0", "--emit", "serve")
    assert r.returncode == 0 and r.stdout == "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-memory-bytes 42949672960\n"
    r = kvplan_cli("vllm", "--gpu", "H100-80GB", "--emit", "compose", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                   "-dp", "2", "--max-model-len", "32768")
    assert r.returncode == 0, r.stderr
    f = tmp_path / "compose.yaml"
    f.write_text(r.stdout)
    assert "count: 2" in r.stdout  # two data-parallel ranks: two GPUs
    back = kvplan.vllm_serve(file=f, gpu="H100-80GB")
    assert back["totals"]["data_parallel_size"] == 2 and back["totals"]["gpus"] == 2 and back["outcome"]["starts"]
    # a deployment that does not start is not written
    r = kvplan_cli("simulate", "meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-memory", "1GiB", "--emit", "k8s")
    assert r.returncode == 3 and "apiVersion" not in r.stdout and "nothing written" in r.stderr
