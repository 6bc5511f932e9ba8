"""Manifests in, deployments out (issue 25): real docker-compose, Kubernetes, vLLM production-stack
Helm values, KServe (InferenceService, ClusterServingRuntime) and llm-d model-service values
(tests/data/manifests/, each cited in its header) read by `kvplan vllm --file` and `kvplan check`
(manifest: FILE), one deployment per vLLM container."""

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
    # 0.10.1 has no generated flag list: the nearest is 0.11.0's, whose --reasoning-parser choices name the
    # gpt-oss parser openai_gptoss; a neighbour's choices do not refuse the release's own value, they warn
    assert ("--reasoning-parser: 'GptOss' is not one of the choices of vllm serve 0.11.0 (the nearest list kvplan "
            "has for 0.10.1); read as given") in d["warnings"]
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
        ("kserve-hf: InferenceService/huggingface-llama3.1: model (kserve-huggingfaceserver)",
         "kserve-huggingfaceserver-readme-llama3.1.yaml", 11),
        ("kserve-custom: InferenceService/llama-2-7b: kserve-container", "kserve-website-vllm-llama-2-7b.yaml", 12),
        ("kserve-runtime: ClusterServingRuntime/kserve-vllmserver: kserve-container",
         "kserve-clusterservingruntime-vllmserver.yaml", 20),
        ("llm-d: decode: vllm", "llm-d-guide-pd-disaggregation-ms-pd-values.yaml", 32),
        ("llm-d: prefill: vllm", "llm-d-guide-pd-disaggregation-ms-pd-values.yaml", 121),
    ]
    r = kvplan.check([str(DATA / "deployments.yaml")])
    status = {d["name"]: d["status"] for d in r["deployments"]}
    assert status == {"stack-basic: llama3": "pass", "stack-two-models: llama3": "pass",
                      "stack-two-models: mistral": "error", "compose: vllm": "pass",
                      "k8s: Deployment/mistral-7b: mistral-7b": "error",  # two Mistral configs not bundled
                      "kserve-hf: InferenceService/huggingface-llama3.1: model (kserve-huggingfaceserver)": "pass",
                      "kserve-custom: InferenceService/llama-2-7b: kserve-container": "error",  # gs:// llama, no map
                      "kserve-runtime: ClusterServingRuntime/kserve-vllmserver: kserve-container": "pass",
                      "llm-d: decode: vllm": "error", "llm-d: prefill: vllm": "error"}  # the FP8 70B: not bundled
    errors = {d["name"]: d["outcome"]["error"] for d in r["deployments"] if d["status"] == "error"}
    assert errors["llm-d: prefill: vllm"].startswith("model 'RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic' not found")
    assert errors["kserve-custom: InferenceService/llama-2-7b: kserve-container"].startswith(
        "model path '/mnt/models' not found")
    assert ("deployment 'kserve-runtime: ClusterServingRuntime/kserve-vllmserver: kserve-container': "
            "kserve-clusterservingruntime-vllmserver.yaml:20: '--served-model-name={{.Name}}' holds a KServe template "
            "placeholder (filled per InferenceService from its metadata); read as written") in r["warnings"]


def test_cli_reads_kserve_and_llm_d_files():
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    app = ensure_registered()
    r = CliRunner().invoke(app, ["vllm", "--file", str(DATA / "kserve-huggingfaceserver-readme-llama3.1.yaml"),
                                 "--gpu", "H100-80GB", "--summary"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == ("OK starts: 7,352 blocks (6,890-7,561), 3.59 (3.36-3.69) × 131,072 tokens "
                                        "(vLLM 0.34.0, H100-80GB)")
    path = DATA / "llm-d-guide-pd-disaggregation-ms-pd-values.yaml"
    r = CliRunner().invoke(app, ["vllm", "--file", str(path), "--gpu", "H100-80GB"])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "runs vLLM in 2 containers: 'decode: vllm' (line 32), 'prefill: vllm' (line 121); pick one with " \
        "--container NAME" in " ".join(r.output.split())


def test_a_file_that_is_not_a_manifest(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("foo: 1\n")
    with pytest.raises(KvplanError) as e:
        kvplan.vllm_serve(file=f)
    assert e.value.message == (f"{f}: not a docker-compose file, a Kubernetes, KServe or Dynamo manifest, a Ray Serve "
                               "LLM config, production-stack or llm-d Helm values (no services:, apiVersion:/kind:, "
                               "applications: with llm_configs, servingEngineSpec: or modelArtifacts: with "
                               "decode:/prefill:)")


# ---------------------------------------------------------------- KServe (kserve v0.20.0's source, cited in
# kvplan/serve/kserve.py)

def test_kserve_huggingface_model_runs_vllm_with_kserves_arguments_and_simulates():
    # python/huggingfaceserver/README.md's llama3.1 InferenceService: --model_id is the model, --model_name the
    # served name; no nvidia.com/gpu, so KServe leaves tensor_parallel_size as vLLM's default
    [c] = read("kserve-huggingfaceserver-readme-llama3.1.yaml")
    assert (c.name, c.line) == ("kserve-huggingfaceserver-readme-llama3.1.yaml: InferenceService/huggingface-llama3.1: "
                                "model (kserve-huggingfaceserver)", 11)
    assert c.serve.argv == ("meta-llama/Meta-Llama-3.1-8B-Instruct", "--served-model-name", "llama3.1")
    assert c.serve.image is None and "kserve-huggingfaceserver runtime" in c.warnings[0]
    d = kvplan.vllm_serve(file=DATA / "kserve-huggingfaceserver-readme-llama3.1.yaml", gpu="H100-80GB")
    assert d["serve"]["manifest"].endswith("kserve-huggingfaceserver-readme-llama3.1.yaml:11")
    assert [(f["flag"], f["dest"], f["value"]) for f in d["serve"]["flags"]] == [
        ("--served-model-name", "served_model_name", ["llama3.1"])]
    assert d["model"]["id"] == "meta-llama/Llama-3.1-8B-Instruct"  # the Hub's rename, with a warning
    assert any("kserve-huggingfaceserver runtime" in w for w in d["warnings"])
    # the engine's numbers (golden-backed), the same as simulating the model itself
    plain = kvplan.simulate("meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB")
    assert d["outcome"]["starts"] is True and d["scheduler"]["max_model_len"] == 131072
    # vLLM 0.34.0 pages Llama-3.1-8B in blocks of 64 (DEFAULT_BLOCK_SIZE; FLASH_ATTN keeps it): one block is
    # 32 layers x 2 (K, V) x 8 heads x 128 x 2 B x 64 = 8 MiB, so the 57.44 GiB kvplan estimates an H100 leaves
    # (0.34.0's derived V2 sampler pass and what its runner keeps on the card, the calibrated non-torch term of one
    # GPU under a release whose profile takes the free memory's drop (0.27.0+), the CUDA cards' calibrated CUDA
    # graphs, the weights with their 32 MiB rotary table) hold 7,352 blocks (470,528 tokens):
    # 57.4421 GiB / 8 MiB = 7,352.59
    assert d["memory"]["num_blocks"] == plain["memory"]["num_blocks"] == 7352
    assert d["memory"]["max_concurrency"] == plain["memory"]["max_concurrency"]
    assert round(d["memory"]["max_concurrency"], 2) == 3.59


def test_kserve_huggingface_model_with_a_gpu_limit_sets_the_tensor_parallel_size():
    # KServe's docs (vllm_runtime.yaml): nvidia.com/gpu "1" → the server's tensor_parallel_size = 1 GPU seen
    [c] = read("kserve-website-huggingface-vllm-runtime-llama2.yaml")
    assert (c.name, c.line) == ("kserve-website-huggingface-vllm-runtime-llama2.yaml: InferenceService/"
                                "huggingface-llama2: model (kserve-huggingfaceserver)", 11)
    assert c.serve.argv == ("meta-llama/Llama-2-7b-chat-hf", "--served-model-name", "llama2",
                            "--tensor-parallel-size", "1")


def test_kserve_huggingface_server_arguments_map_onto_vllm_serve(tmp_path):
    # the README's InferenceService with KServe's own flags added: the image tag names KServe's release (v0.20.0
    # ships vLLM 0.24.0), --max_model_len and --trust_remote_code become vLLM's, KServe's --http_port is dropped,
    # and the GPU limit is the tensor-parallel size (vllm_model.py:106-107 sets it to the GPUs it sees)
    text = (DATA / "kserve-huggingfaceserver-readme-llama3.1.yaml").read_text()
    text = text.replace("      - --model_id=meta-llama/Meta-Llama-3.1-8B-Instruct\n",
                        "      - --model_id=meta-llama/Meta-Llama-3.1-8B-Instruct\n      - --max_model_len=8192\n"
                        "      - --http_port=8080\n      - --trust_remote_code\n      - --tensor-parallel-size=1\n"
                        "      - --gpu-memory-utilization\n      - '0.85'\n"
                        "      runtime: kserve-huggingfaceserver\n      image: kserve/huggingfaceserver:v0.20.0-gpu\n")
    text = text.replace('          cpu: "16"\n          memory: 32Gi\n        requests:',
                        '          cpu: "16"\n          memory: 32Gi\n          nvidia.com/gpu: "2"\n        requests:')
    f = tmp_path / "isvc.yaml"
    f.write_text(text)
    [c] = read_manifests(text, "isvc.yaml")
    assert c.serve.argv == ("meta-llama/Meta-Llama-3.1-8B-Instruct", "--max-model-len", "8192", "--trust-remote-code",
                            "--gpu-memory-utilization", "0.85", "--served-model-name", "llama3.1",
                            "--tensor-parallel-size", "2")
    assert c.serve.image_release == "0.24.0" and "--tensor-parallel-size 1 is replaced by 2" in c.warnings[0]
    d = kvplan.vllm_serve(file=f, gpu="H100-80GB")
    assert d["serve"]["release"] == "0.24.0"
    assert d["serve"]["release_source"] == "image tag v0.20.0-gpu (KServe huggingfaceserver: vLLM 0.24.0)"
    opts = d["inputs"]["options"]
    assert (opts["tensor_parallel_size"]["value"], opts["max_model_len"]["value"]) == (2, 8192)
    assert opts["gpu_memory_utilization"]["value"] == 0.85


def test_kserve_model_in_a_runtime_of_the_same_file_fills_the_placeholders(tmp_path):
    # KServe's own kserve-vllmserver ClusterServingRuntime and an InferenceService using it: the runtime's args
    # then the model's (MergeRuntimeContainers), {{.Name}} = the InferenceService's name, hf:// storage = its model
    runtime = (DATA / "kserve-clusterservingruntime-vllmserver.yaml").read_text()
    isvc = ("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: qwen\nspec:\n"
            "  predictor:\n    model:\n      modelFormat:\n        name: vLLM\n"
            "      storageUri: hf://Qwen/Qwen3-8B\n      args: [--max-model-len=16384]\n")
    found = read_manifests(runtime + "---\n" + isvc, "both.yaml")
    assert [c.name for c in found] == ["both.yaml#2: InferenceService/qwen: model (kserve-vllmserver)"]
    assert found[0].serve.argv == ("--port=8080", "--served-model-name=qwen", "--model=Qwen/Qwen3-8B",
                                   "--max-model-len=16384")
    assert found[0].warnings == ("/mnt/models is storageUri hf://Qwen/Qwen3-8B (KServe's storage initializer "
                                 "downloads it there): read as Qwen/Qwen3-8B",)


def test_kserve_runtimes_alone_keep_their_placeholders_with_a_warning():
    [c] = read("kserve-clusterservingruntime-vllmserver.yaml")
    assert (c.name, c.line) == ("kserve-clusterservingruntime-vllmserver.yaml: ClusterServingRuntime/"
                                "kserve-vllmserver: kserve-container", 20)
    assert c.serve.argv == ("--port=8080", "--served-model-name={{.Name}}", "--model=/mnt/models")
    assert "'--served-model-name={{.Name}}' holds a KServe template placeholder" in c.warnings[0]
    [h] = read("kserve-clusterservingruntime-huggingfaceserver.yaml")  # huggingfaceserver: vLLM as its backend
    assert h.serve.argv == ("/mnt/models", "--served-model-name", "{{.Name}}")
    d = kvplan.vllm_serve(file=DATA / "kserve-clusterservingruntime-vllmserver.yaml", gpu="H100-80GB",
                          model_map={"/mnt/models": "Qwen/Qwen3-8B"})
    assert d["outcome"]["starts"] is True and any("placeholder" in w for w in d["warnings"])
    assert d["memory"]["num_blocks"] == kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB")["memory"]["num_blocks"]


def test_kserve_custom_container_reads_the_storage_uri_env():
    [c] = read("kserve-website-vllm-llama-2-7b.yaml")
    assert (c.name, c.line) == ("kserve-website-vllm-llama-2-7b.yaml: InferenceService/llama-2-7b: kserve-container",
                                12)
    assert (c.serve.argv, c.serve.image) == (("--port", "8080", "--model", "/mnt/models"), "kserve/vllmserver:latest")
    assert c.serve.env == {"STORAGE_URI": "gs://kfserving-examples/models/huggingface/llama"}


def test_kserve_problems_name_the_file_line_and_field(tmp_path):
    base = (DATA / "kserve-huggingfaceserver-readme-llama3.1.yaml").read_text()
    cases = [
        (base.replace("      - --model_name=llama3.1\n", "      - --model_name=llama3.1\n      - --backend=huggingface\n"),
         "spec.predictor.model.args: --backend=huggingface runs the model with transformers, not vLLM"),
        (base.replace("name: huggingface\n", "name: sklearn\n"),
         "spec.predictor.model.modelFormat.name: 'sklearn' has no runtime in this file"),
        (base.replace("      modelFormat:", "      runtime: my-runtime\n      modelFormat:"),
         "spec.predictor.model.runtime: 'my-runtime' is not in this file"),
    ]
    for text, problem in cases:
        f = tmp_path / "isvc.yaml"
        f.write_text(text)
        with pytest.raises(KvplanError) as e:
            kvplan.vllm_serve(file=f, gpu="H100-80GB")
        assert e.value.message.startswith(f"{f}:") and problem in e.value.message, e.value.message


# ---------------------------------------------------------------- llm-d model-service values (llm-d-modelservice
# v0.4.12's templates, cited in kvplan/serve/llmd.py)

def test_llm_d_values_render_as_the_charts_own_output():
    # examples/values-pd.yaml beside the chart authors' rendering of it (examples/output-pd.yaml): kvplan's
    # rendering of the values gives the words of the rendered Deployments, container by container
    values = read("llm-d-modelservice-values-pd.yaml")
    rendered = read("llm-d-modelservice-output-pd.yaml")
    assert [(c.name, c.line) for c in values] == [("llm-d-modelservice-values-pd.yaml: decode: vllm", 34),
                                                  ("llm-d-modelservice-values-pd.yaml: prefill: vllm", 73)]
    assert [c.name for c in rendered] == [
        "llm-d-modelservice-output-pd.yaml#2: Deployment/pd-llm-d-modelservice-decode: vllm",
        "llm-d-modelservice-output-pd.yaml#3: Deployment/pd-llm-d-modelservice-prefill: vllm"]
    for mine, chart in zip(values, rendered):
        assert mine.serve.argv == chart.serve.argv
        assert mine.serve.image == chart.serve.image == "ghcr.io/llm-d/llm-d-cuda:latest"
    assert values[0].serve.argv == ("facebook/opt-125m", "--port", "8200", "--served-model-name", "facebook/opt-125m",
                                    "--enforce-eager", "--kv-transfer-config",
                                    '{"kv_connector":"NixlConnector", "kv_role":"kv_both"}')


def test_llm_d_guide_values_parallelism_and_release():
    # llm-d's P/D guide: prefill parallelism.tensor 4 (the chart adds --tensor-parallel-size 4 before the
    # container's own args), decode behind the routing proxy (port 8200); the image tag is llm-d's release
    decode, prefill = read("llm-d-guide-pd-disaggregation-ms-pd-values.yaml")
    assert (decode.name, decode.line) == ("llm-d-guide-pd-disaggregation-ms-pd-values.yaml: decode: vllm", 32)
    assert (prefill.name, prefill.line) == ("llm-d-guide-pd-disaggregation-ms-pd-values.yaml: prefill: vllm", 121)
    assert prefill.serve.argv[:5] == ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "--port", "8000",
                                      "--tensor-parallel-size", "4")
    assert decode.serve.argv[:3] == ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "--port", "8200")
    assert prefill.serve.image_release is None and prefill.serve.env == {"VLLM_LOGGING_LEVEL": "DEBUG"}
    path = DATA / "llm-d-guide-pd-disaggregation-ms-pd-values.yaml"
    with pytest.raises(KvplanError) as e:
        kvplan.vllm_serve(file=path, container="prefill", gpu="H100-80GB")
    assert e.value.message.startswith(f"{path}:121: model 'RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic' not found")
    d = kvplan.vllm_serve(file=path, container="prefill", gpu="H100-80GB",
                          model_map={"RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic": "meta-llama/Llama-3.3-70B-Instruct"})
    flags = [(f["flag"], f["dest"], f["value"]) for f in d["serve"]["flags"]]
    assert ("--tensor-parallel-size", "tensor_parallel_size", "4") in flags
    assert ("--block-size", "block_size", "128") in flags and ("--max-model-len", "max_model_len", "32000") in flags
    assert d["inputs"]["options"]["tensor_parallel_size"]["value"] == 4
    assert d["serve"]["release_source"].startswith("image tag v0.3.1 (llm-d's release, not vLLM's)")


def test_llm_d_problems_name_the_field(tmp_path):
    text = (DATA / "llm-d-modelservice-values-pd.yaml").read_text()
    f = tmp_path / "values.yaml"
    f.write_text(text.replace('uri: hf://"{{ .Values.modelArtifacts.name }}"', "uri: oci://registry/model"))
    with pytest.raises(KvplanError) as e:
        kvplan.vllm_serve(file=f, container="decode", gpu="H100-80GB")
    assert e.value.message.startswith(f"{f}:34: {f}: decode: vllm: modelArtifacts.uri: oci:// makes the chart fail")
    f.write_text(text.replace("    modelCommand: vllmServe\n", "", 1))
    with pytest.raises(KvplanError) as e:
        kvplan.vllm_serve(file=f, container="decode", gpu="H100-80GB")
    assert "decode.containers[].command: missing; with modelCommand custom (the default)" in e.value.message
