"""Data parallelism (issue 36): each DP rank of vLLM is an engine core of its own, with its own scheduler
and KV pool (vLLM's data-parallel deployment: one EngineCore process per rank, docs
``serving/data_parallel_deployment``); tensor- and pipeline-parallel ranks serve one engine's pool. So a
deployment's capacity is one engine's, times its DP ranks: what DP 8 and TP 8 on eight GPUs compare by."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered

app = ensure_registered()
runner = CliRunner()
DSV3 = "deepseek-ai/DeepSeek-V3"


def run_json(*args: str) -> tuple[int, dict]:
    r = runner.invoke(app, [*args, "--format", "json"])
    return r.exit_code, json.loads(r.stdout)


def test_dense_model_dp_ranks_keep_one_gpus_pool_each():
    """A dense model's weights are the same on every DP rank, so one engine's pool is the single GPU's:
    DP 4 is four of them."""
    _, one = run_json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB", "--max-model-len", "32768")
    _, four = run_json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB", "--max-model-len", "32768",
                       "-dp", "4")
    assert one.get("totals") is None  # one GPU: nothing to add up
    assert four["memory"]["num_blocks"] == one["memory"]["num_blocks"]
    t = four["totals"]
    assert (t["data_parallel_size"], t["engines"], t["gpus_per_engine"], t["gpus"]) == (4, 4, 1, 4)
    assert t["kv_tokens"] == 4 * one["memory"]["kv_tokens"]
    assert t["max_concurrency"] == round(4 * one["memory"]["max_concurrency"], 2)


def test_dp8_against_tp8_for_an_mla_moe_model_on_h200():
    """DeepSeek-V3 on eight H200s. TP 8: one engine; every rank holds the whole MLA latent of every token
    (the cache is replicated over TP), so the eight GPUs hold one pool. DP 8: eight engines, each one GPU,
    with the experts split over the eight ranks (vLLM flattens TP x DP for MoE layers without expert
    parallelism) and the attention weights whole on each: a smaller pool per GPU, eight pools."""
    _, tp8 = run_json("simulate", DSV3, "--gpu", "H200", "-tp", "8", "--max-model-len", "32768")
    _, dp8 = run_json("simulate", DSV3, "--gpu", "H200", "-dp", "8", "--max-model-len", "32768")
    assert tp8["totals"]["engines"] == 1 and tp8["totals"]["gpus"] == 8
    assert tp8["totals"]["kv_tokens"] == tp8["memory"]["kv_tokens"]
    assert dp8["totals"]["engines"] == 8 and dp8["totals"]["gpus"] == 8
    assert dp8["memory"]["kv_tokens"] < tp8["memory"]["kv_tokens"]  # per engine: more weights per GPU
    assert dp8["totals"]["kv_tokens"] == 8 * dp8["memory"]["kv_tokens"]
    assert dp8["totals"]["kv_tokens"] > 5 * tp8["totals"]["kv_tokens"]


def test_fit_table_puts_dp_beside_tp():
    code, d = run_json("fit", DSV3, "--gpus", "H200", "--tp-sizes", "8", "--dp-sizes", "1,8",
                       "--max-model-len", "32768", "--concurrency", "100")
    assert code == 0
    g = d["gpus"]
    assert g["dp_sizes"] == [1, 8]
    rows = {(r["tensor_parallel_size"], r["data_parallel_size"]): r for r in g["rows"]}
    assert rows[(8, 8)]["num_gpus"] == 64
    for r in rows.values():
        assert r["total_kv_tokens"] == r["kv_tokens"] * r["data_parallel_size"]
    # "enough" reads the totals: TP 8 alone holds ~25 requests of 32k, TP 8 x DP 8 several hundred
    assert not rows[(8, 1)]["enough"] and rows[(8, 8)]["enough"]
    assert g["smallest_enough"]["data_parallel_size"] == 8


def test_dp_sizes_refuses_bad_lists():
    r = runner.invoke(app, ["fit", DSV3, "--gpus", "H200", "--dp-sizes", "8,x"])
    assert r.exit_code != 0 and "--dp-sizes must be a comma-separated list of integers" in r.output


def test_fit_table_shows_the_host_tier_of_every_engine():
    """--kv-offloading-size 64 on Llama-3.1-8B: each engine maps 64 GiB of host memory (8,192 chunks of one
    8 MiB block per GPU worker set, as tests/test_offload.py derives); DP 2 maps it twice."""
    code, d = run_json("fit", "meta-llama/Meta-Llama-3.1-8B", "--gpus", "H100-80GB", "--tp-sizes", "1",
                       "--dp-sizes", "1,2", "--kv-offloading-size", "64", "--max-model-len", "32768")
    assert code == 0
    rows = {r["data_parallel_size"]: r for r in d["gpus"]["rows"]}
    assert rows[1]["host_memory_bytes"] == 64 << 30 and rows[2]["host_memory_bytes"] == 128 << 30


def test_fit_says_dp_against_tp_on_the_same_cards():
    from kvplan.report.fit_tables import dp_versus_tp

    _, d = run_json("fit", DSV3, "--gpus", "H200", "--tp-sizes", "1,8", "--dp-sizes", "1,8", "--max-model-len", "32768")
    rows = d["gpus"]["rows"]
    dp8 = next(r for r in rows if (r["tensor_parallel_size"], r["data_parallel_size"]) == (1, 8))
    tp8 = next(r for r in rows if (r["tensor_parallel_size"], r["data_parallel_size"]) == (8, 1))
    # the renderer reads the result record (the same run through the library)
    r = kvplan.fit(DSV3, gpus="H200", tp_sizes="1,8", dp_sizes="1,8", max_model_len="32768")
    [line] = dp_versus_tp(r.body.gpus.rows)
    assert line.startswith(f"8 × H200-141GB: DP 8 holds {dp8['total_kv_tokens']:,} KV tokens in 8 engines, "
                           f"{dp8['total_kv_tokens'] / tp8['kv_tokens']:.1f}× TP 8's {tp8['kv_tokens']:,}")


def test_replicas_of_a_manifest_are_engines_too(tmp_path):
    """vLLM's docs' Kubernetes Deployment (tests/data/manifests/vllm-docs-k8s-deployment.yaml) run as 3 replicas:
    three engines, each with the pool one replica gets (its Mistral-7B-Instruct-v0.3 read through the catalog's
    Mistral-7B-v0.1, whose KV layers are the same: 32 layers of 8 KV heads of 128)."""
    import yaml

    src = Path("tests/data/manifests/vllm-docs-k8s-deployment.yaml")
    docs = list(yaml.safe_load_all(src.read_text()))
    dep = next(d for d in docs if isinstance(d, dict) and d.get("kind") == "Deployment")
    dep["spec"]["replicas"] = 3
    f = tmp_path / "three.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    args = ["vllm", "--format", "json", "--gpu", "H100-80GB", "--model-map",
            "mistralai/Mistral-7B-Instruct-v0.3=mistralai/Mistral-7B-v0.1", "--file"]
    one = json.loads(runner.invoke(app, [*args, str(src)]).stdout)
    three = json.loads(runner.invoke(app, [*args, str(f)]).stdout)
    assert one.get("totals") is None  # one replica of one GPU
    t = three["totals"]
    assert (t["replicas"], t["engines"], t["gpus"]) == (3, 3, 3)
    assert t["kv_tokens"] == 3 * one["memory"]["kv_tokens"]
