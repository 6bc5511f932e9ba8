"""`kvplan compare` end to end on catalog models: JSON parsed from stdout, the vLLM row equal
to `simulate`, the engines.md §3 numbers, exit codes, and `simulate --policy <proposal>`."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered

app = ensure_registered()

runner = CliRunner()

GPT = ["openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE"]
GEMMA = ["google/gemma-3-27b-it"]
BUDGET = ["--kv-cache-memory", "40GiB", "--max-num-batched-tokens", "8192"]


def invoke(*args):
    return runner.invoke(app, list(args))


def as_json(*args):
    r = invoke(*args, "--format", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def gpt():
    return as_json("compare", *GPT, *BUDGET, "--target-len", "131072", "--target-concurrency", "8")


def test_schema(gpt):
    assert gpt["schema_version"] == 2 and gpt["command"] == "compare"
    assert isinstance(gpt["warnings"], list)
    assert gpt["workload"] == {"kv_cache_memory_bytes": 40 * 2**30, "target_len_tokens": 131072,
                               "target_concurrency": 8, "max_num_batched_tokens": 8192}
    names = [(r["engine"], r["name"]) for r in gpt["engines"]]
    assert names == [
        ("vllm", "vllm-latest"), ("vllm", "pr56445-gcd"), ("vllm", "pr49472-cost"), ("vllm", "pr35062-drafter-group"),
        ("vllm", "pr51742-skip-singletons"), ("sglang", "hybrid SWA pool"), ("trtllm", "VSWA"),
        ("llamacpp", "iSWA cache"), ("lower_bound", "exact windowed need"),
    ]
    for row in gpt["engines"]:
        assert row["is_proposal"] == row["name"].startswith("pr")
        for key in ("reserved_per_request_bytes", "waste_per_request_bytes", "kv_tokens"):
            assert row[key] is None or isinstance(row[key], int)


def test_vllm_row_matches_simulate(gpt):
    sim = as_json("simulate", *GPT, *BUDGET, "--max-model-len", "131072")
    row = gpt["engines"][0]
    assert row["kv_tokens"] == sim["memory"]["kv_tokens"] == 1_163_947
    assert row["max_concurrency"] == sim["memory"]["max_concurrency"]
    assert row["reserved_per_request_bytes"] == sim["memory"]["bytes_per_request"]
    assert row["details"]["group_size"] == sim["grouping"]["group_size"] == 16


def test_proposal_rows(gpt):
    rows = {r["name"]: r for r in gpt["engines"]}
    # gcd 4 stripes the 4 drafter layers over 4 full groups: vLLM's drafter check fails
    assert not rows["pr56445-gcd"]["outcome"]["starts"]
    assert rows["pr56445-gcd"]["outcome"]["error"] == "All drafting layers should belong to the same kv cache group"
    # the dedicated drafter group starts with group size 12 and 3 groups
    d = rows["pr35062-drafter-group"]
    assert d["outcome"]["starts"] and (d["details"]["group_size"], d["details"]["num_groups"]) == (12, 3)


def test_other_engines_and_advice(gpt):
    rows = {r["engine"]: r for r in gpt["engines"] if r["engine"] != "vllm"}
    # SGLang, drafter in the full term: full = int(40 GiB / (16 · 2048 + 0.8 · 12 · 2048)) = 819,200
    assert rows["sglang"]["kv_tokens"] == 819_200
    # lower bound: 16 · 131072 · 2048 + 12 · 128 · 2048 = 4,298,113,024 B per request
    assert rows["lower_bound"]["reserved_per_request_bytes"] == 4_298_113_024
    for r in rows.values():
        assert r["reserved_per_request_bytes"] >= 4_298_113_024
    a = gpt["advice"]
    assert a["vllm"]["threshold"] == 1.34 or a["vllm"]["current"]["starts"]
    assert a["sglang"]["applicable"] and a["trtllm"]["applicable"]
    assert a["trtllm"]["env"].startswith("TRTLLM_WINDOW_SIZE_SHARES=")


def test_gemma3_worked_numbers():
    d = as_json("compare", *GEMMA, *BUDGET, "--target-len", "131072", "--policies", "none")
    rows = {r["engine"]: r for r in d["engines"]}
    assert [r["name"] for r in d["engines"] if r["engine"] == "vllm"] == ["vllm-latest"]
    # SGLang runs Gemma 3 with the hybrid pool off: 40 GiB // (62 · 8192 B) = 84,562 tokens, 0.65 requests
    assert rows["sglang"]["kv_tokens"] == 84_562 and rows["sglang"]["knobs"]["hybrid_swa_memory"] is False
    # TensorRT-LLM equal shares: the 1024 window pool holds 20 GiB / (52 · 8192 B) = 50,412 tokens
    pools = rows["trtllm"]["details"]["pools"]
    assert (pools[0]["window_tokens"], pools[0]["capacity_tokens"], pools[0]["num_blocks"]) == (1024, 50_412, 1_575)
    assert rows["trtllm"]["max_concurrency"] == 2.0
    # llama.cpp one sequence: 10 GiB base + 624 MiB SWA = 11,391,729,664 B (10.6 GiB)
    assert rows["llamacpp"]["details"]["caches"]["total_bytes"] == 11_391_729_664
    # lower bound 10.41 GiB per request
    assert rows["lower_bound"]["reserved_per_request_bytes"] == 11_173_625_856
    assert d["advice"]["sglang"]["applicable"] is False


def test_engine_knobs_reach_the_models():
    d = as_json("compare", *GEMMA, *BUDGET, "--target-len", "131072", "--policies", "none",
                "--trtllm-window-shares", "0.1,0.9", "--llamacpp-n-seq", "2", "--swa-full",
                "--swa-full-tokens-ratio", "0.5", "--llamacpp-n-ubatch", "1024")
    rows = {r["engine"]: r for r in d["engines"]}
    assert rows["trtllm"]["knobs"]["window_shares"] == [0.1, 0.9] and rows["trtllm"]["knobs"]["window_shares_given"]
    k = rows["llamacpp"]["knobs"]
    assert (k["n_seq"], k["swa_full"], k["n_ubatch"], k["n_ctx_tokens"]) == (2, True, 1024, 2 * 131072)
    # --swa-full for 2 · 128k: 62 · 262,144 · 8192 B = 124 GiB > 40 GiB
    assert not rows["llamacpp"]["outcome"]["starts"]


def test_yaml_and_table():
    r = invoke("compare", *GEMMA, *BUDGET, "--target-len", "32768", "--policies", "none", "--format", "yaml")
    assert r.exit_code == 0 and yaml.safe_load(r.stdout)["command"] == "compare"
    r = invoke("compare", *GPT, *BUDGET, "--target-len", "131072", "--target-concurrency", "4")
    assert r.exit_code == 0
    for text in ("Engines on the same inputs", "SGLang", "TensorRT-LLM", "llama.cpp", "[proposal]", "Advice for"):
        assert text in r.stdout


def test_default_length_is_the_models():
    d = as_json("compare", *GEMMA, *BUDGET, "--policies", "none")
    assert d["workload"]["target_len_tokens"] == 131072


@pytest.mark.parametrize("args, message", [
    (["--target-len", "1000", "--max-model-len", "2000"], "differ"),
    (["--max-model-len", "auto"], "fixed length"),
    (["--target-len", "131072", "--trtllm-window-shares", "1.0"], "window size"),
    (["--target-len", "131072", "--trtllm-window-shares", "0.3,0.3"], "sum to 1.0"),
    (["--target-len", "1000", "--policies", "vllm-9"], "unknown policy"),
    (["--target-len", "1000", "-pp", "2"], "pipeline"),
])
def test_errors_exit_1(args, message):
    r = invoke("compare", *GEMMA, *BUDGET, *args)
    assert r.exit_code == 1 and message in r.stderr and r.stderr.startswith("Error: ")


def test_missing_budget():
    r = invoke("compare", *GEMMA, "--target-len", "1000")
    assert r.exit_code == 1 and "--kv-cache-memory" in r.stderr


def test_simulate_accepts_a_proposal():
    sim = as_json("simulate", *GPT, *BUDGET, "--max-model-len", "131072", "--policy", "pr35062-drafter-group")
    assert sim["policy"]["name"] == "pr35062-drafter-group" and sim["policy"]["is_proposal"] is True
    assert sim["outcome"]["starts"] and sim["grouping"]["group_size"] == 12
    assert [g["index"] for g in sim["groups"] if g["has_drafter_layers"]] == [2]
