"""Manifests in, deployments out (issue 25): real docker-compose, Kubernetes and vLLM
production-stack Helm values (tests/data/manifests/, each cited in its header) read by
`kvplan vllm --file` and `kvplan check` (manifest: FILE), one deployment per vLLM container."""

from __future__ import annotations

from pathlib import Path

import pytest

import kvplan
from kvplan.errors import KvplanError
from kvplan.serve.manifests import read_manifests
from kvplan.usecases.check import load_deployments

DATA = Path(__file__).resolve().parent / "data" / "manifests"


def read(name):
    return read_manifests((DATA / name).read_text(), name)


def test_production_stack_values_render_as_the_chart_does():
    # helm/templates/deployment-vllm-multi.yaml (production-stack f1f98227): modelURL, host, port, then
    # vllmConfig: enableChunkedPrefill false -> --no-enable-chunked-prefill, enablePrefixCaching false ->
    # --no-enable-prefix-caching, maxModelLen, dtype, then extraArgs
    [c] = read("production-stack-values-02-basic-config.yaml")
    assert (c.name, c.line) == ("production-stack-values-02-basic-config.yaml: llama3", 6)
    assert c.serve.image == "vllm/vllm-openai:latest"
    assert c.serve.argv == ("meta-llama/Llama-3.1-8B-Instruct", "--host", "0.0.0.0", "--port", "8000",
                            "--no-enable-chunked-prefill", "--no-enable-prefix-caching", "--max-model-len", "4096",
                            "--dtype", "bfloat16", "--disable-log-requests", "--gpu-memory-utilization", "0.8")
    two = read("production-stack-values-04-multiple-models.yaml")
    assert [(c.name.split(": ")[1], c.line) for c in two] == [("llama3", 6), ("mistral", 20)]


def test_kubernetes_sh_c_script_and_documents():
    [c] = read("vllm-docs-k8s-deployment.yaml")  # the Service document runs nothing
    assert (c.name, c.line) == ("vllm-docs-k8s-deployment.yaml#1: Deployment/mistral-7b: mistral-7b", 30)
    assert c.serve.argv == ("mistralai/Mistral-7B-Instruct-v0.3", "--trust-remote-code", "--enable-chunked-prefill",
                            "--max_num_batched_tokens", "1024")
    assert c.serve.env == {}  # valueFrom (a secret) is read at run time


def test_compose_command_without_entrypoint_runs_the_images_vllm_serve():
    [c] = read("compose-gpt-oss-issue-35991.yaml")  # open-webui is not a vLLM container
    assert (c.name, c.line, c.serve.image_release) == ("compose-gpt-oss-issue-35991.yaml: vllm", 11, "0.10.1")
    assert c.serve.argv[:2] == ("--model", "/models")
    assert c.serve.env == {"NVIDIA_VISIBLE_DEVICES": "all", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}


def test_vllm_file_runs_the_container_under_its_images_release():
    d = kvplan.vllm_serve(file=DATA / "compose-gpt-oss-issue-35991.yaml", gpu="H100-80GB",
                          model_map={"/models": "openai/gpt-oss-20b"})
    assert d["serve"]["release"] == "0.10.1" and d["serve"]["release_source"] == "image tag v0.10.1"
    assert d["serve"]["manifest"].endswith("compose-gpt-oss-issue-35991.yaml:11")
    assert d["model"]["id"] == "openai/gpt-oss-20b" and d["scheduler"]["max_model_len"] == 4096
    assert d["outcome"]["starts"] is True
    d = kvplan.vllm_serve(file=DATA / "production-stack-values-04-multiple-models.yaml", container="llama3",
                          gpu="H100-80GB")
    assert d["inputs"]["options"]["enable_prefix_caching"]["value"] is False  # the chart's --no-enable-prefix-caching


def test_vllm_file_errors_name_the_file_and_line():
    with pytest.raises(KvplanError) as e:
        kvplan.vllm_serve(file=DATA / "vllm-docs-k8s-deployment.yaml", gpu="H100-80GB")
    assert e.value.message.startswith(f"{DATA / 'vllm-docs-k8s-deployment.yaml'}:30: model "
                                      "'mistralai/Mistral-7B-Instruct-v0.3' not found")
    with pytest.raises(KvplanError) as e:
        kvplan.vllm_serve(file=DATA / "production-stack-values-04-multiple-models.yaml", gpu="H100-80GB")
    assert "runs vLLM in 2 containers: 'llama3' (line 6), 'mistral' (line 20); pick one with --container" \
        in e.value.message


def test_check_reads_every_container_of_every_manifest():
    ds = load_deployments([str(DATA / "deployments.yaml")])
    assert [(d.name, Path(d.file).name, d.line) for d in ds] == [
        ("stack-basic: llama3", "production-stack-values-02-basic-config.yaml", 6),
        ("stack-two-models: llama3", "production-stack-values-04-multiple-models.yaml", 6),
        ("stack-two-models: mistral", "production-stack-values-04-multiple-models.yaml", 20),
        ("compose: vllm", "compose-gpt-oss-issue-35991.yaml", 11),
        ("k8s: Deployment/mistral-7b: mistral-7b", "vllm-docs-k8s-deployment.yaml", 30),
    ]
    r = kvplan.check([str(DATA / "deployments.yaml")])
    status = {d["name"]: d["status"] for d in r["deployments"]}
    assert status == {"stack-basic: llama3": "pass", "stack-two-models: llama3": "pass",
                      "stack-two-models: mistral": "error", "compose: vllm": "pass",
                      "k8s: Deployment/mistral-7b: mistral-7b": "error"}  # two Mistral configs not bundled


def test_a_file_that_is_not_a_manifest(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("foo: 1\n")
    with pytest.raises(KvplanError) as e:
        kvplan.vllm_serve(file=f)
    assert e.value.message == (f"{f}: not a docker-compose file, a Kubernetes manifest or production-stack Helm "
                               "values (no services:, apiVersion:/kind: or servingEngineSpec:)")
