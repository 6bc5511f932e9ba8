"""KServe LLMInferenceService (issue 37, issue 36's P/D and replicas) read as KServe renders it: its
LLMInferenceServiceConfig base refs merged in KServe's order, the well-known template's vllm serve line, the prefill
and decode pools as a P/D pair, replicas as engines; and llm-d model-service values' replicas. Real public examples
in tests/data/manifests/ (each cited in its header)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import kvplan
from kvplan.errors import KvplanError
from kvplan.serve.llmisvc import merge, well_known
from kvplan.serve.manifests import read_manifests

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "manifests"
# the samples serve Qwen2.5-7B-Instruct, read through the catalog's Qwen2.5-7B (the same layers: 28 full-attention
# layers of 4 KV heads of 128) and RedHatAI/gpt-oss-20b (a copy of OpenAI's checkpoint) through openai/gpt-oss-20b
QWEN = "Qwen/Qwen2.5-7B-Instruct=Qwen/Qwen2.5-7B"
GPT_OSS = "RedHatAI/gpt-oss-20b=openai/gpt-oss-20b"


def read(name):
    return read_manifests((DATA / name).read_text(), name)


def kvplan_cli(*args):
    return subprocess.run([sys.executable, "-m", "kvplan.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_one_pool_is_the_well_known_templates_line_with_its_replicas():
    # single-node-gpu/llm-inference-service-qwen2-7b-gpu.yaml: model hf://Qwen/Qwen2.5-7B-Instruct, replicas 3, no
    # command: kserve-config-llm-template's `vllm serve /mnt/models --served-model-name NAME --port 8000`
    [c] = read("kserve-llmisvc-qwen2-7b-gpu.yaml")
    assert c.name == "kserve-llmisvc-qwen2-7b-gpu.yaml: LLMInferenceService/qwen2-7b-instruct-single: main"
    assert c.serve.argv == ("Qwen/Qwen2.5-7B-Instruct", "--served-model-name", "Qwen/Qwen2.5-7B-Instruct", "--port",
                            "8000")
    assert c.replicas == 3
    one = kvplan.vllm_serve(["Qwen/Qwen2.5-7B-Instruct"], gpu="H100-80GB", policy="vllm==0.34.0", model_map=[QWEN])
    d = kvplan.vllm_serve(file=DATA / "kserve-llmisvc-qwen2-7b-gpu.yaml", gpu="H100-80GB", policy="vllm==0.34.0",
                          model_map=[QWEN])
    t = d["totals"]
    assert d["memory"]["num_blocks"] == one["memory"]["num_blocks"]
    assert (t["replicas"], t["engines"], t["gpus"]) == (3, 3, 3)
    assert t["kv_tokens"] == 3 * one["memory"]["kv_tokens"]


def test_prefill_and_decode_pools_are_a_pd_pair():
    # single-node-gpu/llm-inference-service-pd-qwen2-7b-gpu.yaml: VLLM_ADDITIONAL_ARGS carries each side's
    # --kv_transfer_config (NixlConnector, kv_producer / kv_consumer); prefill replicas 2, decode 1
    prefill, decode = read("kserve-llmisvc-pd-qwen2-7b-gpu.yaml")
    assert prefill.name.endswith(": prefill: main") and decode.name.endswith(": decode: main")
    assert (prefill.replicas, decode.replicas) == (2, 1)
    assert prefill.serve.argv[-2:] == ("--kv_transfer_config", '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}')
    assert decode.serve.argv[-1] == '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
    assert "VLLM_ADDITIONAL_ARGS" not in decode.serve.env  # the template's shell read it, vLLM never does
    r = kvplan_cli("vllm", "--gpu", "H100-80GB", "--policy", "vllm==0.34.0", "--model-map", QWEN, "--file",
                   str(DATA / "kserve-llmisvc-pd-qwen2-7b-gpu.yaml"), "--pd", "-f", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["outcome"]["starts"] and d["pair"]["kv_connector"] == "NixlConnector"
    assert all(rule["ok"] for rule in d["pair"]["rules"])


def test_base_refs_are_merged_in_kserves_order():
    # e2e-gpt-oss: llmisvc_config_pd_disagg.yaml (the config: image, env with VLLM_ADDITIONAL_ARGS, probes) and
    # inference_pd_disaggregation.yaml (the service: baseRefs [llmisvc-config-pd-disagg], main's resources only)
    prefill, decode = read("kserve-llmisvc-gpt-oss-pd-baseref.yaml")
    assert prefill.serve.image == decode.serve.image == "ghcr.io/llm-d/llm-d-cuda:v0.9.0"  # from the config
    assert prefill.serve.image_release is None  # llm-d's tag, not vLLM's
    assert prefill.serve.argv[:1] == ("RedHatAI/gpt-oss-20b",)  # pvc:// uri: model.name
    assert "kv_producer" in prefill.serve.argv[-1] and "kv_consumer" in decode.serve.argv[-1]
    assert (prefill.replicas, decode.replicas) == (2, 1)
    assert any("merged with LLMInferenceServiceConfig llmisvc-config-pd-disagg" in w for w in decode.warnings)
    r = kvplan_cli("vllm", "--gpu", "H100-80GB", "--policy", "vllm==0.34.0", "--model-map", GPT_OSS, "--file",
                   str(DATA / "kserve-llmisvc-gpt-oss-pd-baseref.yaml"), "--pd", "-f", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outcome"]["starts"]


def test_strategic_merge_rules():
    base = {"template": {"containers": [{"name": "main", "image": "a", "args": ["--x"],
                                         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]},
            "replicas": 1, "router": {"scheduler": {}}}
    patch = {"template": {"containers": [{"name": "main", "args": ["--y"], "env": [{"name": "B", "value": "3"}]},
                                         {"name": "side"}]}, "replicas": 2, "router": None}
    out = merge(base, patch)
    [main, side] = out["template"]["containers"]
    assert main == {"name": "main", "image": "a", "args": ["--y"],  # args replaced, env merged by name
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]}
    assert side == {"name": "side"} and out["replicas"] == 2 and "router" not in out  # null deletes
    # the pattern picks the well-known configs (config_merge.go combineBaseRefsConfig)
    assert well_known({}) == ["kserve-config-llm-template"]
    assert well_known({"prefill": {}}) == ["kserve-config-llm-prefill-template", "kserve-config-llm-decode-template"]
    assert well_known({"worker": {}, "parallelism": {"data": 8}}) == ["kserve-config-llm-worker-data-parallel"]


def test_a_missing_base_ref_is_one_line_naming_it(tmp_path):
    text = (DATA / "kserve-llmisvc-gpt-oss-pd-baseref.yaml").read_text().split("\n---\n", 2)[-1]
    f = tmp_path / "svc.yaml"
    f.write_text(text)
    found = read_manifests(text, str(f))[0]
    assert found.serve is None
    assert found.problem == (f"spec.baseRefs[0]: LLMInferenceServiceConfig 'llmisvc-config-pd-disagg' is not in {f}; "
                             "give it in the same file or stream (cat config.yaml service.yaml | kvplan vllm --file -)")
    r = kvplan_cli("vllm", "--gpu", "H100-80GB", "--file", str(f))
    assert r.returncode == 1 and "llmisvc-config-pd-disagg' is not in" in r.stderr and "Traceback" not in r.stderr
    # and on stdin, both documents together, as the sample's kustomization applies them
    r = subprocess.run([sys.executable, "-m", "kvplan.cli", "vllm", "--gpu", "H100-80GB", "--policy", "vllm==0.34.0",
                        "--model-map", GPT_OSS, "--file", "-", "--container", "decode", "-f", "json"],
                       input=(DATA / "kserve-llmisvc-gpt-oss-pd-baseref.yaml").read_text(), capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("spec, problem", [
    ({"model": {"uri": "pvc://x"}}, "spec.model: neither an hf:// uri nor a name"),
    ({"model": {"uri": "hf://m/n"}, "parallelism": {"pipeline": 2}}, "spec.parallelism.pipeline: KServe ships no"),
    ({"model": {"uri": "hf://m/n"}, "baseRefs": ["x"]}, "spec.baseRefs[0]: expected {name: CONFIG}"),
])
def test_bad_services_are_one_line(spec, problem):
    import yaml

    doc = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService", "metadata": {"name": "s"},
           "spec": spec}
    [found] = read_manifests(yaml.safe_dump(doc), "f.yaml")
    assert found.serve is None and found.problem.startswith(problem) and "\n" not in found.problem


def test_llm_d_values_replicas_are_engines():
    # llm-d's P/D guide (ms-pd/values.yaml): decode replicas 4 (TP 1), prefill replicas 1 (TP 4)
    decode, prefill = read("llm-d-guide-pd-disaggregation-ms-pd-values.yaml")
    assert (decode.replicas, prefill.replicas) == (4, 1)
    d = kvplan.vllm_serve(file=DATA / "llm-d-guide-pd-disaggregation-ms-pd-values.yaml", container="decode",
                          gpu="B200-180GB", policy="vllm==0.34.0",  # bf16 weights in place of FP8: a larger card
                          model_map=["RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic=meta-llama/Llama-3.3-70B-Instruct"])
    t = d["totals"]
    assert (t["replicas"], t["engines"]) == (4, 4) and t["kv_tokens"] == 4 * d["memory"]["kv_tokens"]


def test_base_refs_are_bounded():
    import yaml

    from kvplan.serve.llmisvc import MAX_BASE_REFS

    doc = {"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService", "metadata": {"name": "s"},
           "spec": {"model": {"uri": "hf://m/n"}, "baseRefs": [{"name": f"c{i}"} for i in range(MAX_BASE_REFS + 1)]}}
    [found] = read_manifests(yaml.safe_dump(doc), "f.yaml")
    assert found.problem == f"spec.baseRefs: {MAX_BASE_REFS + 1} configs, more than kvplan reads ({MAX_BASE_REFS}); merge some"
