#!/usr/bin/env python3
"""Vendor the public schemas kvplan's emitted files are validated against (tests/test_emit_schemas.py).

Each is the publisher's own schema, cut to what validation needs: ``description`` texts removed (they carry no
constraint) and, for Kubernetes, only the definitions the Deployment schema reaches, inlined under ``$defs``.

    python scripts/vendor_schemas.py --k8s-wheel kubernetes_validate-1.37.0-py3-none-any.whl \\
        --kserve KSERVE_GIT_DIR --compose COMPOSE_SPEC_GIT_DIR --llmd LLM_D_MODELSERVICE_GIT_DIR \\
        --production-stack PRODUCTION_STACK_GIT_DIR

(each ``*_GIT_DIR`` a clone of the repository named below; ``pip download kubernetes-validate==1.37.0
--no-deps`` gives the wheel)

* Kubernetes ``Deployment`` (apps/v1), v1.33.0 ``-local-strict``: the kubernetes-validate 1.37.0 wheel (PyPI), which
  ships yannh/kubernetes-json-schema's schemas generated from Kubernetes' OpenAPI spec (strict: unknown fields are
  errors, as ``kubectl apply --validate=strict`` makes them);
* KServe ``InferenceService`` (serving.kserve.io/v1beta1): ``openAPIV3Schema`` of
  config/crd/full/serving.kserve.io_inferenceservices.yaml in github:kserve/kserve at the commit given;
* the Compose specification: schema/compose-spec.json of github:compose-spec/compose-spec, verbatim;
* the Helm charts' own values schemas: llm-d-modelservice's charts/llm-d-modelservice/values.schema.json and
  production-stack's helm/values.schema.json (descriptions removed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "schemas"
K8S_VERSION = "v1.33.0-local-strict"
REF = "/api/_definitions.json#/$defs/"


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description" or not isinstance(v, str)}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def k8s(wheel: str) -> dict:
    base = f"kubernetes_validate/kubernetes-json-schema/{K8S_VERSION}/"
    with zipfile.ZipFile(wheel) as z:
        root = json.loads(z.read(base + "deployment-apps-v1.json"))
        defs = json.loads(z.read(base + "_definitions.json"))["$defs"]
    found: dict = {}

    def walk(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith((REF, "#/$defs/")):
                name = ref.rsplit("/", 1)[1]
                node["$ref"] = "#/$defs/" + name
                if name not in found:
                    found[name] = defs[name]
                    walk(found[name])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(root)
    root["$defs"] = dict(sorted(found.items()))
    root["$comment"] = (f"kubernetes-validate 1.37.0 (PyPI) {base}deployment-apps-v1.json with the definitions it "
                        "reaches from _definitions.json inlined; descriptions removed (scripts/vendor_schemas.py)")
    return strip(root)


def git_show(repo: str, path: str) -> tuple[str, str]:
    commit = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    text = subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], capture_output=True, text=True,
                          check=True).stdout
    return commit, text


def crd(repo: str, path: str, version: str, source: str) -> dict:
    import yaml

    commit, text = git_show(repo, path)
    doc = yaml.safe_load(text)
    [v] = [v for v in doc["spec"]["versions"] if v["name"] == version]
    schema = strip(v["schema"]["openAPIV3Schema"])
    schema["$comment"] = f"{source} {path} @ {commit}, version {version}: openAPIV3Schema, descriptions removed"
    return schema


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--k8s-wheel", required=True)
    p.add_argument("--kserve", required=True)
    p.add_argument("--compose", required=True)
    p.add_argument("--llmd", required=True, help="a git directory of llm-d-incubation/llm-d-modelservice")
    p.add_argument("--production-stack", required=True, help="a git directory of vllm-project/production-stack")
    a = p.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "k8s-1.33-deployment-apps-v1-strict.json").write_text(json.dumps(k8s(a.k8s_wheel), separators=(",", ":")))
    isvc = crd(a.kserve, "config/crd/full/serving.kserve.io_inferenceservices.yaml", "v1beta1", "github:kserve/kserve")
    spec = isvc["properties"]["spec"]  # kvplan writes spec.predictor only: the explainer and transformer are cut
    spec["properties"] = {"predictor": spec["properties"]["predictor"]}
    isvc["$comment"] += "; spec's properties cut to predictor (the one kvplan writes)"
    (OUT / "kserve-inferenceservice-v1beta1.json").write_text(json.dumps(isvc, separators=(",", ":")))
    commit, text = git_show(a.compose, "schema/compose-spec.json")
    (OUT / "compose-spec.json").write_text(text)
    sources = []
    for repo, path, name, what in ((a.llmd, "charts/llm-d-modelservice/values.schema.json", "llm-d-modelservice-values.json",
                                    "github:llm-d-incubation/llm-d-modelservice"),
                                   (a.production_stack, "helm/values.schema.json", "production-stack-values.json",
                                    "github:vllm-project/production-stack")):
        c, text = git_show(repo, path)
        (OUT / name).write_text(json.dumps(strip(json.loads(text)), separators=(",", ":")))
        sources.append(f"{name}: {what} {path} @ {c}, descriptions removed\n")
    (OUT / "SOURCES.txt").write_text("".join(sources) +
        "k8s-1.33-deployment-apps-v1-strict.json: kubernetes-validate 1.37.0 (PyPI), kubernetes-json-schema/"
        f"{K8S_VERSION}/deployment-apps-v1.json + the _definitions.json entries it reaches (yannh/kubernetes-json-schema, "
        "from Kubernetes' OpenAPI spec); descriptions removed\n"
        "kserve-inferenceservice-v1beta1.json: " + json.loads((OUT / "kserve-inferenceservice-v1beta1.json").read_text())
        ["$comment"] + "\n"
        f"compose-spec.json: github:compose-spec/compose-spec schema/compose-spec.json @ {commit}, verbatim\n"
        "Regenerate: python scripts/vendor_schemas.py --help\n")


if __name__ == "__main__":
    main()
