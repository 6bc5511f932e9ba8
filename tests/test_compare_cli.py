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

GPT = ["openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5"]
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
    return as_json("compare", *GPT, *BUDGET, "--target-len", "131072", "--target-concurrency", "8",
                   "--trtllm-max-attention-window")


def test_schema(gpt):
    assert gpt["schema_version"] == 2 and gpt["command"] == "compare"
    assert isinstance(gpt["warnings"], list)
    assert gpt["workload"] == {"kv_cache_memory_bytes": 40 * 2**30, "target_len_tokens": 131072,
                               "target_concurrency": 8, "max_num_batched_tokens": 8192}
    names = [(r["engine"], r["name"]) for r in gpt["engines"]]
    assert names == [
        ("vllm", "vllm==0.34.0"), ("vllm", "pr56445-gcd"), ("vllm", "pr49472-cost"), ("vllm", "pr35062-drafter-group"),
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
    # golden gpt-oss-20b-peagle__40gib__0.34.0 (block 64): "GPU KV cache size: 1,163,569 tokens"
    assert row["kv_tokens"] == sim["memory"]["kv_tokens"] == 1_163_569
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
    # SGLang, drafter in the full term: 40 GiB // (16 · 2048 + 0.8 · 12 · 2048) = 819,200 on paper, 819,199
    # with SGLang's float divisor (see test_engines_sglang)
    assert rows["sglang"]["kv_tokens"] == 819_199
    # lower bound: 16 · 131072 · 2048 + 12 · 128 · 2048 = 4,298,113,024 B per request
    assert rows["lower_bound"]["reserved_per_request_bytes"] == 4_298_113_024
    for r in rows.values():
        assert r["reserved_per_request_bytes"] >= 4_298_113_024
    a = gpt["advice"]
    v = a["vllm"]
    # buckets: 12 sliding, 16 full (12 target + 4 P-EAGLE); 16/12 = 1.333…, so the least threshold (to 0.01)
    # that keeps the full bucket in one group is 1.34: group size 16, 2 groups, 16 + 16 - 28 = 4 padding
    # slots. At 1.0 the group size is the smallest bucket, 12: the full bucket takes 2 groups of 12,
    # 12 + 24 - 28 = 8 padding slots. The shipped 1.5 already gives the 1.34 grouping, so it starts;
    # its concurrency is vLLM 0.34.0's own figure (tests/golden/gpt-oss-20b-peagle__40gib__0.34.0.json:
    # 8.877329865626354 at its default block 64).
    assert (v["threshold"], v["group_size"], v["num_padding_layers"]) == (1.34, 16, 4)
    assert v["current"] == {"threshold": 1.5, "group_size": 16, "num_padding_layers": 4, "starts": True,
                            "max_concurrency": 8.87733}
    assert [(t["threshold"], t["group_size"], t["num_groups"], t["num_padding_layers"]) for t in v["tried"]] == [
        (1.0, 12, 3, 8), (1.34, 16, 2, 4)]
    assert "flag" not in (a["vllm"] or {})  # a grouping threshold is a vLLM code change, never a flag
    assert a["sglang"]["applicable"] and a["trtllm"]["applicable"]
    assert a["trtllm"]["env"].startswith("TRTLLM_WINDOW_SIZE_SHARES=")
    assert gpt["engine_versions"] == {"sglang": "0.5.23", "trtllm": "1.2.0rc2", "llamacpp": "0c1e57098",
                                      "trtllm_commit": "b35ac1b64368513d215c57d2ed01d62d910df8da"}


def test_gemma3_worked_numbers():
    d = as_json("compare", *GEMMA, *BUDGET, "--target-len", "131072", "--policies", "none",
                "--trtllm-max-attention-window")
    rows = {r["engine"]: r for r in d["engines"]}
    assert [r["name"] for r in d["engines"] if r["engine"] == "vllm"] == ["vllm==0.34.0"]
    # SGLang runs Gemma 3 with the hybrid pool off: 40 GiB // (62 · 8192 B) = 84,562 tokens, 0.65 requests
    assert rows["sglang"]["kv_tokens"] == 84_562 and rows["sglang"]["knobs"]["hybrid_swa_memory"] is False
    # TensorRT-LLM equal shares: the 1024 window pool holds 20 GiB / (52 · 8192 B) = 50,412 tokens, 1,576 blocks
    pools = rows["trtllm"]["details"]["pools"]
    assert (pools[0]["window_tokens"], pools[0]["capacity_tokens"], pools[0]["num_blocks"]) == (1024, 50_412, 1_576)
    # ... but a 131,072-token prompt needs 4,096 blocks there (addSequence): it cannot be prefilled
    st = rows["trtllm"]["details"]["stages"]
    assert st["longest_prompt_tokens"]["value"] == 50_432 and st["prefills_prompt"] is False
    assert st["admission_concurrency"]["value"] == 2 and rows["trtllm"]["max_concurrency"] == 0.0
    assert "getRemainingBlocksToCompletion" in st["admission_concurrency"]["rule"]
    # llama.cpp, llama-server's default (-np auto: 4 slots, unified) sharing n_ctx = 131072: 10 GiB base
    # + SWA pad256(min(131072, 4 · 1024 + 512)) = 4608 cells · 52 · 8192 B = 1.83 GiB
    k = rows["llamacpp"]["knobs"]
    assert (k["n_seq"], k["kv_unified"], k["n_ctx_tokens"]) == (4, True, 131072)
    assert rows["llamacpp"]["details"]["caches"]["total_bytes"] == 10 * 2**30 + 4608 * 52 * 8192
    # lower bound 10.41 GiB per request
    assert rows["lower_bound"]["reserved_per_request_bytes"] == 11_173_625_856
    assert d["advice"]["sglang"]["applicable"] is False


def test_engine_knobs_reach_the_models():
    d = as_json("compare", *GEMMA, *BUDGET, "--target-len", "131072", "--policies", "none",
                "--trtllm-window-shares", "0.1,0.9", "--trtllm-max-attention-window", "--llamacpp-n-seq", "2", "--swa-full",
                "--swa-full-tokens-ratio", "0.5", "--llamacpp-n-ubatch", "1024")
    rows = {r["engine"]: r for r in d["engines"]}
    assert rows["trtllm"]["knobs"]["window_shares"] == [0.1, 0.9] and rows["trtllm"]["knobs"]["window_shares_given"]
    k = rows["llamacpp"]["knobs"]
    assert (k["n_seq"], k["swa_full"], k["n_ubatch"], k["n_ctx_tokens"]) == (2, True, 1024, 2 * 131072)
    assert k["kv_unified"] is False  # an explicit -np keeps a stream per slot
    # --swa-full for 2 · 128k: 62 · 262,144 · 8192 B = 124 GiB > 40 GiB
    assert not rows["llamacpp"]["outcome"]["starts"]


def test_scheduler_and_version_options():
    d = as_json("compare", *GPT, *BUDGET, "--target-len", "131072", "--policies", "none",
                "--trtllm-scheduler-policy", "MAX_UTILIZATION", "--trtllm-max-num-tokens", "2048",
                "--sglang-disable-overlap-schedule", "--sglang-swa-eviction-interval", "32",
                "--llamacpp-n-seq", "2", "--llamacpp-kv-unified", "--sglang-version", "0.5.23")
    rows = {r["engine"]: r for r in d["engines"]}
    assert rows["trtllm"]["knobs"]["scheduler_policy"] == "MAX_UTILIZATION"
    assert rows["trtllm"]["details"]["max_num_tokens"] == 2048
    sg = rows["sglang"]["details"]
    # one chunk in flight: 8192 + 1; per request (compute_swa_request_cap, P-EAGLE's 5 speculative tokens:
    # 6 draft tokens) 128 + 32 · 6 + 1 + 6 (decode allocation, kvplan's spec-v1 approximation) = 327 SWA tokens
    assert sg["disable_overlap_schedule"] and sg["pools"][1]["in_flight_prefill_tokens"] == 8193
    assert sg["pools"][1]["per_request_tokens"] == 327
    assert rows["llamacpp"]["knobs"]["kv_unified"] is True


def test_yaml_and_table():
    r = invoke("compare", *GEMMA, *BUDGET, "--target-len", "32768", "--policies", "none", "--format", "yaml")
    assert r.exit_code == 0 and yaml.safe_load(r.stdout)["command"] == "compare"
    r = invoke("compare", *GPT, *BUDGET, "--target-len", "131072", "--target-concurrency", "4")
    assert r.exit_code == 0
    for text in ("Engines on the same inputs", "SGLang", "TensorRT-LLM", "llama.cpp", "[proposal]", "Advice for",
                 "Through each engine", "TensorRT-LLM 1.2.0rc2 (b35ac1b64): getRemainingBlocksToCompletion"):
        assert text in r.stdout
    # tables fit 100 columns
    assert max(len(line) for line in r.stdout.splitlines()) <= 100


def test_default_length_is_the_models():
    d = as_json("compare", *GEMMA, *BUDGET, "--policies", "none")
    assert d["workload"]["target_len_tokens"] == 131072


@pytest.mark.parametrize("args, message", [
    (["--target-len", "1000", "--max-model-len", "2000"], "differ"),
    (["--max-model-len", "auto"], "fixed length"),
    (["--target-len", "131072", "--trtllm-window-shares", "0.5,0.5"], "1 window size"),
    (["--target-len", "131072", "--trtllm-window-shares", "1.5,0.5"], "in [0, 1]"),
    (["--target-len", "1000", "--policies", "vllm-9"], "unknown policy"),
    (["--target-len", "1000", "-pp", "2"], "pipeline"),
    (["--target-len", "1000", "--sglang-version", "0.4.0"], "read from 0.5.23 only"),
    (["--target-len", "1000", "--trtllm-version", "0.21"], "read from 1.2.0rc2 only"),
    (["--target-len", "1000", "--llamacpp-build", "b6000"], "read from 0c1e57098 only"),
    (["--target-len", "1000", "--trtllm-scheduler-policy", "STATIC_BATCH"], "is not one of: GUARANTEED_NO_EVICT"),
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


def test_trtllm_mamba_hybrid_start_up_and_its_settings():
    """Qwen3-Next at 40 GiB / 262,144 (numbers derived in tests/test_engines_trtllm.py): the defaults fail
    MambaHybridCacheManager's block-reuse assert; block reuse off with max_batch_size 6 serves 6."""
    d = as_json("compare", "Qwen/Qwen3-Next-80B-A3B-Instruct", *BUDGET, "--policies", "none")
    t = {r["engine"]: r for r in d["engines"]}["trtllm"]
    assert t["outcome"]["error_type"] == "AssertionError" and not t["outcome"]["starts"]
    assert t["outcome"]["error"] == "mamba hybrid cache requires block reuse to be disabled in KV cache config"
    assert t["outcome"]["fix"].startswith("kv_cache_config.enable_block_reuse=false")
    assert t["knobs"]["max_batch_size"] == 2048 and t["knobs"]["enable_block_reuse"] is True
    assert d["advice"]["trtllm"]["settings"] == {"kv_cache_config.enable_block_reuse": False, "max_batch_size": 6}
    fixed = as_json("compare", "Qwen/Qwen3-Next-80B-A3B-Instruct", *BUDGET, "--policies", "none",
                    "--no-trtllm-enable-block-reuse", "--trtllm-max-batch-size", "6")
    t = {r["engine"]: r for r in fixed["engines"]}["trtllm"]
    assert t["outcome"]["starts"] and t["max_concurrency"] == 6.0 and t["details"]["state_bytes"] == 237_109_248
    r = invoke("compare", "Qwen/Qwen3-Next-80B-A3B-Instruct", *BUDGET, "--trtllm-max-batch-size", "0")
    assert r.exit_code != 0 and "--trtllm-max-batch-size" in r.output and len(r.output.strip().splitlines()) == 1


def test_a_policy_named_by_release_keeps_its_release():
    """--policies resolves each name once, at the edge: a release asked for (vllm==0.18.0) is that release's
    era in its row, as the main policy's is (vllm==0.34.0), and an era name stays the era's."""
    d = as_json("compare", *GEMMA, *BUDGET, "--target-len", "131072", "--policies", "vllm==0.18.0,vllm-0.33")
    assert [r["name"] for r in d["engines"] if r["engine"] == "vllm"] == ["vllm==0.34.0", "vllm==0.18.0", "vllm-0.33"]
    assert [r["knobs"]["policy"] for r in d["engines"] if r["engine"] == "vllm"][1] == "vllm==0.18.0"
