"""What `kvplan emit` writes is valid against the publishers' own schemas (issue 37), vendored in tests/data/schemas/
(SOURCES.txt; scripts/vendor_schemas.py): the Kubernetes Deployment (strict: an unknown field is an error), KServe's
InferenceService CRD (openAPIV3Schema; the API server prunes unknown fields, so each field written must be one the
schema names), the Compose specification and the llm-d-modelservice / production-stack charts' values schemas.
Dynamo's DynamoGraphDeployment is checked structurally against its Go API types (a schema written from their json
tags, tests/data/schemas/dynamo-graph-v1alpha1-structural.json; its containers are Kubernetes' own, strict); Ray's
Serve config publishes no schema and is read back by kvplan's intake only (tests/test_emit.py)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from kvplan.usecases.emit import emit

SCHEMAS = Path(__file__).resolve().parent / "data" / "schemas"
DEPLOYMENTS = [  # a plain deployment, and one with flags of several kinds and an environment variable
    ("openai/gpt-oss-120b", dict(gpu="H100-80GB", max_model_len="131072", tensor_parallel_size="2",
                                 policy="vllm==0.34.0")),
    ("meta-llama/Llama-3.1-8B-Instruct", dict(kv_cache_memory="20GiB", max_model_len="32k", enable_prefix_caching=False,
                                              env=["VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"], policy="vllm==0.33.0")),
]
FORMATS = {  # format → (schema file, CRD: fields must be named by the schema)
    "k8s": ("k8s-1.33-deployment-apps-v1-strict.json", False),
    "kserve": ("kserve-inferenceservice-v1beta1.json", True),
    "compose": ("compose-spec.json", False),
    "llm-d": ("llm-d-modelservice-values.json", False),
    "production-stack": ("production-stack-values.json", False),
    "dynamo": ("dynamo-graph-v1alpha1-structural.json", False),
}


def validator(name: str):
    schema = json.loads((SCHEMAS / name).read_text())
    # compose-spec.json names draft 7 without the trailing '#' jsonschema keys its validators by; CRDs name none
    # (OpenAPI v3's subset of draft 4, which draft 7 reads the same)
    draft = schema.get("$schema", "").rstrip("#")
    cls = jsonschema.Draft7Validator if draft.endswith("draft-07/schema") or not draft else \
        jsonschema.validators.validator_for(schema)
    if name.startswith("dynamo-"):  # its Kubernetes types are the vendored Kubernetes schema's
        k8s = json.loads((SCHEMAS / FORMATS["k8s"][0]).read_text())["$defs"]
        schema["$defs"] = {**k8s, **schema["$defs"]}
    cls.check_schema(schema)
    return cls(schema)


def unnamed_fields(doc, schema, path="") -> list[str]:
    """The fields of ``doc`` that a structural schema does not name (the API server would drop them)."""
    out = []
    if isinstance(doc, dict) and isinstance(schema, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for k, v in doc.items():
            if props is not None and k in props:
                out += unnamed_fields(v, props[k], f"{path}.{k}")
            elif isinstance(extra, dict):
                out += unnamed_fields(v, extra, f"{path}.{k}")
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
                out.append(f"{path}.{k}")
    elif isinstance(doc, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(doc):
            out += unnamed_fields(v, schema["items"], f"{path}[{i}]")
    return out


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("model, options", DEPLOYMENTS, ids=["gpt-oss-120b-tp2", "llama-8b"])
def test_emitted_files_are_valid_against_the_public_schema(fmt, model, options):
    name, crd = FORMATS[fmt]
    doc = yaml.safe_load(emit(model, as_=fmt, **options)["text"])
    v = validator(name)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(doc)]
    assert errors == []
    if crd:
        assert unnamed_fields(doc, v.schema) == []


@pytest.mark.parametrize("fmt, break_it, expected", [
    ("k8s", lambda d: d["spec"]["template"]["spec"]["containers"][0].update(arg=["x"]), "Additional properties"),
    ("k8s", lambda d: d["spec"].update(replicas="1"), "is not of type"),
    ("compose", lambda d: d["services"]["vllm"].update(ipcc="host"), "does not match any of the regexes: '^x-'"),
    ("kserve", lambda d: d["spec"]["predictor"]["containers"][0].update(name=1), "is not of type"),
    ("dynamo", lambda d: d["spec"]["services"]["VllmWorker"].update(replica=1), "Additional properties"),
    ("dynamo", lambda d: d["spec"]["services"]["VllmWorker"]["resources"]["limits"].update(gpu=1), "is not of type"),
    ("dynamo", lambda d: d["spec"]["services"]["VllmWorker"]["extraPodSpec"]["mainContainer"].update(arg=[]),
     "Additional properties"),
])
def test_the_schemas_catch_a_broken_file(fmt, break_it, expected):
    # each schema rejects what the API server / tool rejects: the validation above can fail
    doc = yaml.safe_load(emit(*DEPLOYMENTS[1][:1], as_=fmt, **DEPLOYMENTS[1][1])["text"])
    break_it(doc)
    assert any(expected in e.message for e in validator(FORMATS[fmt][0]).iter_errors(doc))


def test_a_field_the_crd_does_not_name_is_caught():
    doc = yaml.safe_load(emit(*DEPLOYMENTS[1][:1], as_="kserve", **DEPLOYMENTS[1][1])["text"])
    doc["spec"]["predictor"]["containers"][0]["argz"] = ["x"]
    assert unnamed_fields(doc, validator(FORMATS["kserve"][0]).schema) == [".spec.predictor.containers[0].argz"]


@pytest.mark.parametrize("model, options", DEPLOYMENTS, ids=["gpt-oss-120b-tp2", "llama-8b"])
def test_a_multi_gpu_k8s_pod_gets_a_memory_backed_dev_shm(model, options):
    # a container's /dev/shm is 64 MiB; vLLM's Kubernetes guide mounts a 2Gi memory emptyDir there for its GPU ranks
    pod = yaml.safe_load(emit(model, as_="k8s", **options)["text"])["spec"]["template"]["spec"]
    mounts = pod["containers"][0].get("volumeMounts", [])
    if options.get("tensor_parallel_size") == "2":
        assert mounts == [{"name": "shm", "mountPath": "/dev/shm"}]
        assert pod["volumes"] == [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]
    else:
        assert mounts == [] and "volumes" not in pod
