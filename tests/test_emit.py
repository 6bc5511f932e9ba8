"""`kvplan emit` (issue 37): every format kvplan writes is read back by kvplan's own intake
(`kvplan vllm --file` / `--line`) to the same plan, which starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import kvplan
from kvplan.errors import KvplanError
from kvplan.usecases.emit import FORMATS, emit

ROOT = Path(__file__).resolve().parent.parent


def plan_of(d) -> tuple:
    return (d["memory"]["num_blocks"], d["serving"]["block_size"], d["scheduler"]["max_model_len"],
            d["grouping"]["group_size"], d["memory"]["max_concurrency"], d["outcome"]["starts"])


DEPLOYMENTS = [
    # the acceptance deployment: gpt-oss-120b on one H100 at 131,072 tokens
    ("openai/gpt-oss-120b", dict(gpu="H100-80GB", max_model_len="131072", policy="vllm==0.34.0")),
    # flags of several kinds: a size, a length, a bool turned off, an integer, TP, an environment variable
    ("meta-llama/Llama-3.1-8B-Instruct", dict(kv_cache_memory="20GiB", max_model_len="32k", tensor_parallel_size="2",
                                              enable_prefix_caching=False, max_num_seqs="64",
                                              env=["VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"], policy="vllm==0.33.0")),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("model, options", DEPLOYMENTS, ids=["gpt-oss-120b", "llama-8b"])
def test_every_format_reads_back_to_the_same_plan(tmp_path, fmt, model, options):
    simulated = kvplan.simulate(model, **options)
    out = emit(model, as_=fmt, **options)
    assert out["num_blocks"] == simulated["memory"]["num_blocks"]
    kvplan_own = {k: v for k, v in options.items() if k in ("gpu", "policy")}
    if fmt == "serve":
        back = kvplan.vllm_serve(line=out["text"], **kvplan_own)
    else:
        f = tmp_path / f"{fmt}.yaml"
        f.write_text(out["text"])
        back = kvplan.vllm_serve(file=f, **kvplan_own)
    assert plan_of(back) == plan_of(simulated)
    assert back["serve"]["environment"] == {k: v for k, v in (e.split("=", 1) for e in options.get("env", []))}


def test_the_acceptance_k8s_manifest_on_the_command_line(tmp_path):
    f = tmp_path / "k8s.yaml"
    r = subprocess.run([sys.executable, "-m", "kvplan.cli", "emit", "openai/gpt-oss-120b", "--gpu", "H100-80GB",
                        "--max-model-len", "131072", "--as", "k8s"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    f.write_text(r.stdout)
    assert "read it back: kvplan vllm --gpu H100-80GB --file FILE" in r.stderr
    back = subprocess.run([sys.executable, "-m", "kvplan.cli", "vllm", "--gpu", "H100-80GB", "--file", str(f), "-f",
                           "json"], capture_output=True, text=True, cwd=ROOT)
    sim = subprocess.run([sys.executable, "-m", "kvplan.cli", "simulate", "openai/gpt-oss-120b", "--gpu", "H100-80GB",
                          "--max-model-len", "131072", "-f", "json"], capture_output=True, text=True, cwd=ROOT)
    assert back.returncode == sim.returncode == 0
    assert plan_of(json.loads(back.stdout)) == plan_of(json.loads(sim.stdout))


def test_nothing_is_written_for_a_deployment_that_does_not_start():
    with pytest.raises(KvplanError, match="kvplan writes only deployments that start"):
        emit("meta-llama/Llama-3.1-8B-Instruct", as_="k8s", kv_cache_memory="1GiB")


def test_the_release_spells_the_flag():
    # kvplan's --kv-cache-memory is vLLM's --kv-cache-memory-bytes (the release's parser has no other spelling)
    out = emit("meta-llama/Llama-3.1-8B-Instruct", as_="serve", kv_cache_memory="20GiB", policy="vllm==0.34.0")
    assert out["vllm_args"] == ["--kv-cache-memory-bytes", str(20 * 1024**3)]
    assert out["text"] == f"vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-memory-bytes {20 * 1024**3}\n"
