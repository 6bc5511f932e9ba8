"""`kvplan export` (issue 37): kvplan's pool in the Dynamo Mocker's, BLIS's, llm-d-inference-sim's and
the llm-d router's own input formats, equal to the figures vLLM's own planning functions give
(tests/golden/, recorded by scripts/golden from each release's wheel)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import kvplan
from kvplan.errors import KvplanError
from kvplan.usecases.export import export

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


def golden(case: str) -> dict:
    return json.loads((GOLDEN / f"{case}.json").read_text())["result"]


LLAMA = dict(kv_cache_memory="40GiB")  # the golden case llama-3.1-8b__40gib: available_memory_bytes = 40 GiB


@pytest.mark.parametrize("release", ["0.33.0", "0.34.0"])
def test_every_tool_gets_vllms_num_blocks_and_block_size(release):
    g = golden(f"llama-3.1-8b__40gib__{release}")
    # 0.33.0: 20480 blocks of 16 tokens; 0.34.0 (DEFAULT_BLOCK_SIZE 64): 5120 blocks of 64 tokens.
    # Both: 40 GiB / (32 layers x block_size x 8 heads x 128 x 2 (K, V) x 2 bytes) = 40 GiB / (block_size x 128 KiB)
    assert (g["num_blocks"], g["block_size"]) == {"0.33.0": (20480, 16), "0.34.0": (5120, 64)}[release]
    model = "meta-llama/Meta-Llama-3.1-8B"  # the golden's model
    mocker = export(model, to="mocker", policy=f"vllm=={release}", **LLAMA)
    args = json.loads(mocker["text"])
    assert (args["num_gpu_blocks"], args["block_size"]) == (g["num_blocks"], g["block_size"])
    assert (args["max_num_seqs"], args["max_num_batched_tokens"], args["dp_size"]) == (1024, 8192, 1)
    blis = shlex.split(export(model, to="blis", policy=f"vllm=={release}", **LLAMA)["text"])
    flags = dict(zip(blis[::2], blis[1::2]))
    assert int(flags["--total-kv-blocks"]) == g["num_blocks"]
    assert int(flags["--block-size-in-tokens"]) == g["block_size"]
    assert int(flags["--max-model-len"]) == g["max_model_len"] == 131072
    sim = yaml.safe_load(export(model, to="llmd-sim", policy=f"vllm=={release}", **LLAMA)["text"])
    assert (sim["kv-cache-size"], sim["block-size"], sim["enable-kvcache"]) == (g["num_blocks"], g["block_size"], True)
    router = yaml.safe_load(export(model, to="llmd-router", policy=f"vllm=={release}", **LLAMA)["text"])
    assert router["kind"] == "EndpointPickerConfig"
    [plugin] = router["plugins"]
    assert plugin["type"] == "prefix-cache-scorer"
    assert plugin["parameters"] == {"autoTune": False, "blockSizeTokens": g["block_size"],
                                    "lruCapacityPerServer": g["num_blocks"]}


def test_a_hybrid_model_is_handed_over_as_its_full_length_token_capacity():
    # gemma-3-27b, 40 GiB, 0.21.0 (golden): 7 groups (6 sliding x 9/8 layers, 1 full x 10) share 32768
    # blocks of 16 tokens; vLLM logs "GPU KV cache size: 368,540 tokens" = int(2.8117... x 131072).
    # A one-pool tool gets 368540 // 16 = 23033 blocks of 16 tokens, vLLM's 32768 beside it.
    g = golden("gemma-3-27b__40gib__0.21.0")
    assert (g["num_blocks"], g["block_size"], len(g["groups"])) == (32768, 16, 7)
    assert int(g["max_concurrency"] * g["max_model_len"]) == 368540
    r = export("google/gemma-3-27b-it", to="blis", kv_cache_memory="40GiB", policy="vllm==0.21.0")
    assert (r["num_blocks"], r["block_size"], r["vllm_num_gpu_blocks"], r["num_groups"]) == (23033, 16, 32768, 7)
    assert r["kv_cache_size_tokens"] == 368540
    assert "--total-kv-blocks 23033 --block-size-in-tokens 16" in r["text"]
    assert "7 KV cache groups share vLLM's 32,768 blocks" in r["mapping"]


def test_llmd_sim_refuses_a_block_size_the_simulator_refuses():
    # Qwen3-Next's attention block is raised to hold a Mamba page (576 tokens here); llm-d-inference-sim
    # accepts 8, 16, 32, 64, 128 (pkg/common/config.go lines 564-565)
    with pytest.raises(KvplanError, match=r"block size here is 576 tokens and llm-d-inference-sim .* accepts only "
                                          r"8, 16, 32, 64, 128"):
        export("Qwen/Qwen3-Next-80B-A3B-Instruct", to="llmd-sim", kv_cache_memory="40GiB", policy="vllm==0.34.0")


def test_a_deployment_that_does_not_start_has_nothing_to_export():
    with pytest.raises(KvplanError, match="the engine would not start"):
        export("meta-llama/Llama-3.1-8B-Instruct", to="mocker", kv_cache_memory="1GiB", policy="vllm==0.34.0")


def test_a_serve_line_and_a_check_entry_export_the_same_pool(tmp_path):
    line = export(to="blis", line="vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32k "
                  "--kv-cache-memory-bytes 40GiB", policy="vllm==0.34.0")
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n  - name: llama\n    model: meta-llama/Llama-3.1-8B-Instruct\n"
                 "    max_model_len: 32k\n    kv_cache_memory: 40GiB\n    policy: vllm==0.34.0\n")
    entry = export(to="blis", check=str(f))
    assert line["text"] == entry["text"]
    assert (line["num_blocks"], line["block_size"], line["deployment"], entry["deployment"]) == \
        (5120, 64, "vllm serve", "check entry")


def test_cli_prints_only_the_tools_text_on_stdout():
    r = subprocess.run([sys.executable, "-m", "kvplan.cli", "export", "meta-llama/Llama-3.1-8B-Instruct", "--to", "mocker",
                        "--kv-cache-memory", "40GiB", "--policy", "vllm==0.34.0"], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["num_gpu_blocks"] == 5120
    assert "5,120 blocks of 64 tokens" in r.stderr
    bad = subprocess.run([sys.executable, "-m", "kvplan.cli", "export", "meta-llama/Llama-3.1-8B-Instruct", "--to", "blis",
                          "--kv-cache-memory", "40GiB", "--allocate"], capture_output=True, text=True, cwd=ROOT)
    assert (bad.returncode, bad.stderr.strip()) == (1, "Error: --allocate: not an option of a deployment here; drop it")


def test_library_export_matches_the_api():
    assert kvplan.export("meta-llama/Llama-3.1-8B-Instruct", to="mocker", kv_cache_memory="40GiB",
                         policy="vllm==0.34.0")["num_blocks"] == 5120


def test_outputs_validate_against_their_schemas(tmp_path):
    import jsonschema

    from kvplan.usecases.diff import diff

    for data in (export("meta-llama/Llama-3.1-8B-Instruct", to="llmd-router", kv_cache_memory="40GiB"),
                 diff("google/gemma-3-27b-it", from_release="0.25.1", to_release="0.26.0", kv_cache_memory="40GiB")):
        schema = json.loads((ROOT / "docs" / "schema" / f"{data['command']}.json").read_text())
        jsonschema.validate(dict(data), schema)
