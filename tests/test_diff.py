"""`kvplan diff` (issue 37): a deployment under two vLLM releases, every figure that changes and the era
decision behind each, the figures checked against the goldens (tests/golden/, recorded by running
each release's own planning functions), and `check`'s max_upgrade_loss expectation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.errors import KvplanError
from kvplan.usecases.diff import diff

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


def golden(case: str) -> dict:
    return json.loads((GOLDEN / f"{case}.json").read_text())["result"]


def changes(r) -> dict:
    return {c["figure"]: (c["from_value"], c["to_value"], tuple(c["because"])) for c in r["changes"]}


def test_llama_0_33_to_0_34_block_size_16_to_64_by_default_block_size():
    a, b = golden("llama-3.1-8b__40gib__0.33.0"), golden("llama-3.1-8b__40gib__0.34.0")
    r = diff("meta-llama/Meta-Llama-3.1-8B", from_release="vllm==0.33.0", to_release="vllm==0.34.0",
             kv_cache_memory="40GiB")
    c = changes(r)
    # the goldens: 0.33.0 block 16, 20480 blocks; 0.34.0 block 64, 5120 blocks; 327,680 tokens both
    assert c["serving.block_size"] == (a["block_size"], b["block_size"], ("default_block_size",)) == \
        (16, 64, ("default_block_size",))
    assert c["memory.num_blocks"] == (a["num_blocks"], b["num_blocks"], ("default_block_size",)) == \
        (20480, 5120, ("default_block_size",))
    # page = block_size x 8 heads x 128 x 2 (K, V) x 2 bytes: 65536 -> 262144
    assert c["memory.page_size_bytes"] == (65536, 262144, ("default_block_size",))
    assert "memory.kv_cache_size_tokens" not in c and "memory.max_concurrency" not in c
    cap = r["capacity"]
    assert (cap["from_kv_tokens"], cap["to_kv_tokens"], cap["loss_pct"]) == (327680, 327680, 0.0)
    assert a["max_concurrency"] == b["max_concurrency"] == cap["from_max_concurrency"] == 2.5
    era = {e["field"]: e for e in r["era_changes"]}
    assert (era["default_block_size"]["from_value"], era["default_block_size"]["to_value"],
            era["default_block_size"]["first_release"]) == (16, 64, "0.34.0")
    assert era["extensible_kv_cache"]["moves"] == []  # a given --kv-cache-memory: no budget to size
    assert r["outcome"]["ok"] is True


def test_gemma_3_27b_0_20_2_to_0_21_0_changes_no_figure():
    # the goldens agree: 32768 blocks of 16 tokens, 7 groups, 2.81x at 131,072 tokens in both releases
    a, b = golden("gemma-3-27b__40gib__0.20.2"), golden("gemma-3-27b__40gib__0.21.0")
    assert (a["num_blocks"], a["block_size"], a["max_concurrency"]) == (b["num_blocks"], b["block_size"],
                                                                         b["max_concurrency"])
    r = diff("google/gemma-3-27b-it", from_release="0.20.2", to_release="0.21.0", kv_cache_memory="40GiB")
    assert r["changes"] == []
    # the one decision between them (FLEX_ATTENTION's kernel blocks become multiples of 16) moves nothing here
    assert [(e["field"], e["from_value"], e["to_value"], e["moves"]) for e in r["era_changes"]] == \
        [("kernel_block_sizes", "0.18", "0.21", [])]
    assert r["capacity"]["from_kv_tokens"] == r["capacity"]["to_kv_tokens"] == int(a["max_concurrency"] * 131072)


def test_gemma_3_27b_0_25_1_to_0_26_0_loses_capacity_to_in_flight_batches():
    # goldens: 2.8117x -> 2.2252x at 131,072 tokens (sliding reservations x 2 batches in flight, 0.26.0)
    a, b = golden("gemma-3-27b__40gib__0.25.1"), golden("gemma-3-27b__40gib__0.26.0")
    r = diff("google/gemma-3-27b-it", from_release="0.25.1", to_release="0.26.0", kv_cache_memory="40GiB",
             max_loss=5)
    c = changes(r)
    assert c["scheduler.max_in_flight_tokens"] == (8192, 16384, ("in_flight_batches",))
    assert c["memory.max_concurrency"][:2] == (round(a["max_concurrency"], 6), round(b["max_concurrency"], 6))
    assert c["memory.max_concurrency"][2] == ("in_flight_batches",)
    cap = r["capacity"]
    assert (cap["from_kv_tokens"], cap["to_kv_tokens"]) == (int(a["max_concurrency"] * 131072),
                                                           int(b["max_concurrency"] * 131072)) == (368540, 291658)
    assert cap["loss_pct"] == round(100 * (368540 - 291658) / 368540, 4) == 20.8612
    assert r["outcome"]["ok"] is False and r["outcome"]["stage"] == "upgrade"


def test_a_change_two_decisions_make_together_names_the_pair():
    # with --gpu, 0.34.0's utilization default 1.0 needs the extensible KV cache on (both 0.34 decisions)
    r = diff("meta-llama/Llama-3.1-8B-Instruct", from_release="0.33.0", to_release="0.34.0", gpu="H100-80GB")
    c = {x["figure"]: x for x in r["changes"]}
    u = c["budget.gpu_memory_utilization"]
    assert (u["from_value"], u["to_value"]) == (0.92, 1.0)
    assert u["because"] == ["extensible_kv_cache + extensible_gpu_memory_utilization"]
    assert c["budget.kv_cache_sizing"]["because"] == ["extensible_kv_cache"]


def test_cli_exit_code_and_check_expectation(tmp_path):
    cmd = [sys.executable, "-m", "kvplan.cli", "diff", "google/gemma-3-27b-it", "--from", "vllm==0.25.1", "--to",
           "vllm==0.26.0", "--kv-cache-memory", "40GiB"]
    assert subprocess.run([*cmd, "--max-loss", "25"], capture_output=True, cwd=ROOT).returncode == 0
    r = subprocess.run([*cmd, "--max-loss", "5", "-f", "json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3
    assert json.loads(r.stdout)["capacity"]["loss_pct"] == 20.8612
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n  - name: gemma\n    model: google/gemma-3-27b-it\n    kv_cache_memory: 40GiB\n"
                 "    policy: vllm==0.25.1\n    expect:\n      max_upgrade_loss: {to: vllm==0.26.0, pct: 5}\n")
    r = subprocess.run([sys.executable, "-m", "kvplan.cli", "check", str(f), "-f", "json"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 3
    [dep] = json.loads(r.stdout)["deployments"]
    [e] = [e for e in dep["expectations"] if e["key"] == "max_upgrade_loss"]
    assert e["measured"] == {"from_kv_tokens": 368540, "to_kv_tokens": 291658, "loss_pct": 20.8612}
    assert e["passed"] is False
    # the same entry read by diff (--check)
    d = subprocess.run([sys.executable, "-m", "kvplan.cli", "diff", "--check", str(f), "--from", "0.25.1", "--to", "0.26.0",
                        "-f", "json"], capture_output=True, text=True, cwd=ROOT)
    assert d.returncode == 0 and json.loads(d.stdout)["deployment"] == "check entry"


def test_max_upgrade_loss_passes_and_fails():
    from kvplan.usecases.check import load_deployments_text, run_deployment

    text = ("deployments:\n"
            "  - {name: llama, model: meta-llama/Llama-3.1-8B-Instruct, kv_cache_memory: 40GiB, policy: vllm==0.33.0,\n"
            "     expect: {max_upgrade_loss: {to: vllm==0.34.0, pct: 0}}}\n"
            "  - {name: gemma, model: google/gemma-3-27b-it, kv_cache_memory: 40GiB, policy: vllm==0.25.1,\n"
            "     expect: {max_upgrade_loss: {to: vllm==0.26.0, pct: 20}}}\n")
    llama, gemma = (run_deployment(d) for d in load_deployments_text(text, "d.yaml"))
    [lo] = [o for o in llama.outcomes if o.key == "max_upgrade_loss"]
    [go] = [o for o in gemma.outcomes if o.key == "max_upgrade_loss"]
    # Llama keeps its 327,680 tokens (goldens, 0.33.0 and 0.34.0); gemma loses 20.86 % > 20 %
    assert (lo.passed, lo.measured) == (True, {"from_kv_tokens": 327680, "to_kv_tokens": 327680, "loss_pct": 0.0})
    assert (go.passed, go.measured["loss_pct"]) == (False, 20.8612)
    assert go.message == "KV tokens 368,540 -> 291,658 under vllm==0.26.0 (-20.86%), more than the 20% allowed"


def test_bad_expectation_is_a_file_error(tmp_path):
    from kvplan.usecases.check import load_deployments

    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n  - name: g\n    model: google/gemma-3-27b-it\n    kv_cache_memory: 40GiB\n"
                 "    expect:\n      max_upgrade_loss: {to: vllm-latest, pct: 5}\n")
    with pytest.raises(KvplanError, match=r"to: expected a release \(vllm==0.34.0\), got 'vllm-latest'"):
        load_deployments([str(f)])


def test_a_serve_line_is_read_by_each_release():
    r = diff(line="docker run vllm/vllm-openai:v0.33.0 meta-llama/Llama-3.1-8B-Instruct --kv-cache-memory-bytes 40GiB",
             from_release="0.33.0", to_release="0.34.0")
    assert r["deployment"] == "vllm serve"
    assert changes(r)["serving.block_size"] == (16, 64, ("default_block_size",))
