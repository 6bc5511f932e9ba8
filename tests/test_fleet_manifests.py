"""Dynamo DynamoGraphDeployment and Ray Serve LLM configs (issue 37) read as the vLLM engines they start,
from real public examples (tests/data/manifests/, each cited in its header)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.errors import KvplanError
from kvplan.serve.manifests import read_manifests

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "manifests"


def read(name):
    return read_manifests((DATA / name).read_text(), name)


def test_dynamo_aggregated_worker_is_its_vllm_engine():
    # agg.yaml: Frontend (no dynamo.vllm: skipped) and VllmDecodeWorker: `python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B`
    [c] = read("dynamo-vllm-agg.yaml")
    assert (c.name, c.line) == ("dynamo-vllm-agg.yaml: DynamoGraphDeployment/vllm-agg: VllmDecodeWorker", 20)
    assert c.serve.argv == ("--model", "Qwen/Qwen3-0.6B")
    assert c.serve.image is None and c.serve.image_release is None  # the runtime's tag (0.7.1) is Dynamo's
    assert any("tagged with Dynamo's release" in w for w in c.warnings)


def test_dynamo_disaggregated_workers_drop_dynamos_own_flags():
    # disagg.yaml: prefill and decode workers; --disaggregation-mode is DynamoVllmArgGroup's, not vLLM's
    decode, prefill = read("dynamo-vllm-disagg.yaml")
    assert [decode.name.rsplit(": ", 1)[1], prefill.name.rsplit(": ", 1)[1]] == ["VllmDecodeWorker", "VllmPrefillWorker"]
    assert decode.serve.argv == prefill.serve.argv == ("--model", "Qwen/Qwen3-0.6B")
    assert "VllmDecodeWorker: Dynamo's own flags, not vLLM's, left out: --disaggregation-mode" in decode.warnings


def test_dynamo_value_and_nargs_flags_are_consumed():
    from kvplan.serve.dynamo import vllm_words

    words, dropped = vllm_words(["--model", "m", "--connector", "nixl", "lmcache", "--max-model-len", "8k",
                                 "--is-prefill-worker", "--namespace=ns", "--no-headless"])
    assert words == ["--model", "m", "--max-model-len", "8k"]
    assert dropped == ["--connector", "--is-prefill-worker", "--namespace", "--no-headless"]


def test_ray_serve_llama_config_simulates_on_its_card():
    # serve_my_llama_3_1_8B.yaml: model_source meta-llama/Llama-3.1-8B-Instruct, engine_kwargs max_model_len 8192
    [c] = read("ray-serve-llm-llama-3.1-8b.yaml")
    assert c.name == "ray-serve-llm-llama-3.1-8b.yaml: my-small-llm-app: my-llama-3.1-8B"
    assert c.serve.argv == ("meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--hf-token",
                            "<YOUR-TOKEN-HERE>")
    r = subprocess.run([sys.executable, "-m", "kvplan.cli", "vllm", "--file", str(DATA / "ray-serve-llm-llama-3.1-8b.yaml"),
                        "--gpu", "L4", "--policy", "vllm==0.34.0", "-f", "json"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    # the file's max_model_len; 0.34.0's DEFAULT_BLOCK_SIZE 64; page 64 x 8 heads x 128 x 2 x 2 bytes
    assert (d["serving"]["block_size"], d["scheduler"]["max_model_len"], d["memory"]["page_size_bytes"]) == \
        (64, 8192, 64 * 8 * 128 * 2 * 2)
    assert d["outcome"]["starts"] is True and d["serve"]["manifest"].endswith("ray-serve-llm-llama-3.1-8b.yaml:10")


def test_ray_serve_two_models_and_their_env():
    a, b = read("ray-serve-llm-qwen-two-models.yaml")
    assert (a.serve.argv, b.serve.argv) == (("Qwen/Qwen2.5-0.5B-Instruct",), ("Qwen/Qwen2.5-1.5B-Instruct",))
    assert a.serve.env == {"VLLM_USE_V1": "1"}


def test_ray_serve_refuses_what_ray_refuses():
    text = ("applications:\n- import_path: ray.serve.llm:build_openai_app\n  args:\n    llm_configs:\n"
            "    - model_loading_config: {model_id: m}\n      engine_kwargs: {model: other}\n    - models/q.yaml\n")
    bad, path = read_manifests(text, "x.yaml")
    assert bad.serve is None and "Ray refuses" in bad.problem
    assert path.serve is None and "path to another file" in path.problem
    with pytest.raises(KvplanError, match="RayService spec.serveConfigV2 is not valid YAML"):
        read_manifests("apiVersion: ray.io/v1\nkind: RayService\nspec:\n  serveConfigV2: '[: :'\n", "r.yaml")
