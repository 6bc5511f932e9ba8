"""Deployment manifests → the vLLM containers they run, each as a ``ServeLine`` with its place.

Formats (a file may hold several YAML documents):

* docker-compose: ``services.<name>`` with ``image``, ``entrypoint``, ``command`` (a string or a
  list) and ``environment`` (a list of ``VAR=value`` or a mapping). Without ``entrypoint`` the
  image's own runs: vllm/vllm-openai's is ``vllm serve`` (older images: the API server module);
  both take ``--model``, so the words become ``vllm serve <command>``;
* Kubernetes: ``Deployment``, ``StatefulSet``, ``DaemonSet``, ``Job``, ``ReplicaSet``
  (``spec.template.spec``) and ``Pod`` (``spec``): every container and init container with
  ``command`` + ``args`` and ``env`` (``value`` only; ``valueFrom`` is read at run time). ``sh -c
  SCRIPT`` runs the script (``ray start ... & vllm serve ...``: the vLLM command is taken);
* vLLM production-stack Helm values: ``servingEngineSpec.modelSpec[]``, rendered as the chart's
  ``helm/templates/deployment-vllm-multi.yaml`` does (vllm-project/production-stack commit
  f1f98227): ``vllm serve <modelURL> --host 0.0.0.0 --port 8000``, ``enableLoRA`` →
  ``--enable-lora``, then ``vllmConfig``: ``enableChunkedPrefill`` (when set) → ``--enable-chunked-prefill``
  / ``--no-enable-chunked-prefill``; ``enablePrefixCaching`` → ``--enable-prefix-caching``, else
  ``--no-enable-prefix-caching`` (the chart always passes one); ``maxModelLen``, ``dtype``,
  ``tensorParallelSize``, ``maxNumSeqs``, ``gpuMemoryUtilization``, ``maxLoras`` → their flags;
  ``extraArgs`` appended; ``lmcacheConfig.enabled`` → ``--kv-transfer-config`` with
  ``LMCacheConnectorV1``; ``env`` as the container's. The image is ``repository:tag``;
* KServe (``apiVersion: serving.kserve.io/...``): ``InferenceService`` (custom containers, and a
  ``model`` run by its runtime, KServe's Hugging Face server included), ``ServingRuntime`` and
  ``ClusterServingRuntime`` (kvplan.serve.kserve says how each is read, with KServe's source);
* llm-d model-service Helm values (``modelArtifacts`` with ``decode`` / ``prefill``), rendered as
  the llm-d-modelservice chart does (kvplan.serve.llmd);
* NVIDIA Dynamo ``DynamoGraphDeployment``: each worker running ``python -m dynamo.vllm`` (kvplan.serve.dynamo);
* Ray Serve LLM: ``LLMConfig`` in a Serve config, a KubeRay ``RayService`` or on its own
  (kvplan.serve.rayserve).

A container runs vLLM when its image is a vLLM image (``vllm`` in its name) or its command is
``vllm serve`` / vLLM's API server; other containers (a web UI, a router) are skipped. Each
deployment is named after where it came from: ``file: kind/name: container`` (``file: service
name`` for compose, ``file: modelSpec name`` for Helm values, ``file: decode: container`` for llm-d
values, ``file: InferenceService/name: model (runtime)`` for a KServe model) and keeps its line.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, replace
from typing import Any

from kvplan.errors import KvplanError, OptionError
from kvplan.serve.line import ServeLine, _release_of_tag, parse_line

_WORKLOADS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"})
_SHELLS = frozenset({"sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/env bash"})


@dataclass(frozen=True)
class ManifestServe:
    """One vLLM container of a manifest: its name, the line it starts on, the line vLLM runs."""

    name: str
    path: str
    line: int
    serve: ServeLine | None  # None when its command could not be read (``problem`` says why)
    problem: str | None = None
    warnings: tuple[str, ...] = ()  # how the file was read where it differs from what it says
    # copies of it the manifest runs (a Deployment's spec.replicas, compose's deploy.replicas, a Dynamo
    # service's replicas; 1 where the object has none): each one an engine of its own
    replicas: int = 1


class _Map(dict):
    line = 0


def _load_documents(text: str, path: str) -> list[Any]:
    """The file's YAML documents, through kvplan's bounded safe loader (an alias bomb or a
    document nested past the limit is refused before it is expanded: kvplan/readfile.py)."""
    import yaml

    from kvplan.readfile import yaml_line, yaml_loader_class, yaml_problem

    # a subclass of kvplan's bounded SafeLoader, so the constructor added below is this reader's alone
    Loader: type[yaml.SafeLoader] = type("Loader", (yaml_loader_class(),), {})

    def mapping(loader, node):
        loader.flatten_mapping(node)
        out = _Map(loader.construct_pairs(node, deep=True))
        out.line = node.start_mark.line + 1
        return out

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return [d for d in yaml.load_all(text, Loader=Loader) if d is not None]  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as e:
        line = yaml_line(e)
        where = f"{path}:{line}" if line else path
        raise KvplanError(f"{where}: not valid YAML ({yaml_problem(e)}); fix the YAML") from None


def kind_of(doc: Any) -> str | None:
    """``compose``, ``kubernetes``, ``kserve``, ``helm-production-stack``, ``helm-llm-d`` or None
    (not a manifest kvplan reads)."""
    from kvplan.serve import dynamo, kserve, llmd, rayserve

    if not isinstance(doc, dict):
        return None
    if dynamo.is_graph(doc):
        return "dynamo"
    if rayserve.is_ray(doc):
        return "ray-serve"
    if isinstance(doc.get("services"), dict):
        return "compose"
    if isinstance(doc.get("apiVersion"), str) and isinstance(doc.get("kind"), str) and doc["kind"]:
        return "kserve" if str(doc["apiVersion"]).startswith(kserve.API) else "kubernetes"
    if isinstance(doc.get("servingEngineSpec"), dict):
        return "helm-production-stack"
    if llmd.is_values(doc):
        return "helm-llm-d"
    return None


def _words(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return shlex.split(value.replace("\\\n", " "))
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def _list(value: Any) -> list:
    """A field that should hold a list: the list, else nothing (the caller reports a wrong type
    where it matters)."""
    return value if isinstance(value, list) else []


def _kind(value: Any) -> str:
    from kvplan.options import type_name

    return type_name(value)


def _env(value: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(value, dict):
        out.update({str(k): "" if v is None else str(v) for k, v in value.items()})
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and "name" in item and "value" in item:  # Kubernetes
                out[str(item["name"])] = str(item["value"])
            elif isinstance(item, str) and "=" in item:  # compose
                k, _, v = item.partition("=")
                out[k] = v
    return out


def _is_vllm_words(words: list[str]) -> bool:
    """Whether the words run vLLM: the ``vllm`` program (a path ending in it) followed by ``serve``, or
    one of vLLM's entrypoint modules, as words (a model id holding "vllm" beside --served-model-name is
    neither: issue 39)."""
    for i, word in enumerate(words):
        if word.rsplit("/", 1)[-1] == "vllm" and words[i + 1:i + 2] == ["serve"]:
            return True
        if word.startswith("vllm.entrypoints."):
            return True
    return False


# docker compose's interpolation in a value: ${VAR}, ${VAR:-default}, ${VAR-default}, $VAR
_COMPOSE_VAR = re.compile(r"\$(?:\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?-)(?P<default>[^}]*))?\}"
                          r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


def _interpolate(value: str) -> tuple[str, list[str]]:
    """A compose value with its variables filled as docker compose fills them from the environment of
    the person running kvplan (``${VAR:-default}``: the default when unset or empty); the names left
    unset, which compose would read from ``.env`` or leave empty."""
    unset: list[str] = []

    def fill(m: re.Match) -> str:
        name = m.group("name") or m.group("bare")
        value = os.environ.get(name)
        if m.group("op") == ":-" and not value:
            return m.group("default")
        if m.group("op") == "-" and value is None:
            return m.group("default")
        if value is None:
            unset.append(name)
            return m.group(0)
        return value

    return _COMPOSE_VAR.sub(fill, value.replace("$$", "\0")).replace("\0", "$"), unset


def _serve_line(words: list[str], image: str | None, env: dict) -> ServeLine | None:
    """The words a container runs → a ServeLine (None: it does not run vLLM)."""
    if image is not None and not isinstance(image, str):
        from kvplan.options import type_name

        raise OptionError(f"image: expected the image's name as a string, got {type_name(image)}; quote it")
    script: str | None = None  # the shell script a `sh -c` container runs (its words are then the shell's)
    if len(words) >= 3 and words[0] in _SHELLS and words[1] in ("-c", "-lc", "-ec"):
        script = words[2]
    elif len(words) >= 2 and " ".join(words[:2]) in _SHELLS and words[2:3] in (["-c"], ["-lc"]):
        script = words[3] if len(words) > 3 else ""
    vllm_image = bool(image and "vllm" in image.rsplit("/", 1)[-1].split(":")[0])
    if script is not None:
        if "vllm" not in script:
            return None
        line = parse_line(script)
    else:
        if not words and not vllm_image:
            return None
        if not _is_vllm_words(words[:6]):
            if not vllm_image:
                return None
            words = ["vllm", "serve", *words]  # the image's entrypoint: vllm serve (or the API server)
        line = parse_line(shlex.join(words))
    tag = None
    if image and ":" in image.rsplit("/", 1)[-1]:
        tag = image.rpartition(":")[2]
    release = line.image_release
    if tag:  # another image's tag (llm-d's, KServe's, a company's) is not a vLLM release
        release = _release_of_tag(tag) if vllm_image else None
    # the line keeps its form (what the container runs); the result's `manifest` names where it came from
    return replace(line, image=image or line.image,
                   image_tag=tag or line.image_tag, image_release=release, env={**env, **line.env})


def _one(name: str, path: str, line: int, words: list[str], image: str | None, env: dict) -> ManifestServe | None:
    try:
        serve = _serve_line(words, image, env)
    except KvplanError as e:
        return ManifestServe(name, path, line, None, e.message.removeprefix("--line: "))
    if serve is None:
        return None
    return ManifestServe(name, path, line, serve)


def _compose(doc: dict, path: str, unset_images: list[str] | None = None) -> list[ManifestServe]:
    """The vLLM services of a compose file; ``unset_images`` collects, for the caller's error when no
    service runs vLLM, the images whose variables are unset here."""
    out = []
    for svc, spec in doc["services"].items():
        if not isinstance(spec, dict):
            continue
        image = spec.get("image")
        if isinstance(image, str) and "$" in image:
            image, unset = _interpolate(image)
            if unset:
                (unset_images if unset_images is not None else []).append(f"{path}: {svc}: image: {spec.get('image')} names {', '.join(unset)}, unset here (docker "
                              f"compose fills it from the environment or .env); set {unset[0]} (e.g. "
                              f"{unset[0]}=vllm/vllm-openai:v0.11.0) or write the image")
        words = [*_words(spec.get("entrypoint")), *_words(spec.get("command"))]
        if spec.get("entrypoint") is None and spec.get("command") is not None and not _is_vllm_words(words[:6]):
            words = _words(spec.get("command"))  # the image's entrypoint, below
        found = _one(f"{path}: {svc}", path, getattr(spec, "line", 0), words, image,
                     _env(spec.get("environment")))
        if found:
            out.append(replace(found, replicas=_replicas(spec.get("deploy"))))
    return out


def _pod_spec(doc: dict) -> dict | None:
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else None
    if spec is None:
        return None
    if doc.get("kind") == "Pod":
        return spec
    if doc.get("kind") in _WORKLOADS:
        tpl = spec.get("template")
        if doc.get("kind") == "Job" and not isinstance(tpl, dict):
            return None
        return tpl.get("spec") if isinstance(tpl, dict) and isinstance(tpl.get("spec"), dict) else None
    return None


def _kubernetes(doc: dict, path: str) -> list[ManifestServe]:
    pod = _pod_spec(doc)
    if pod is None:
        return []
    meta = v if isinstance(v := doc.get("metadata"), dict) else {}
    where = f"{doc['kind']}/{meta.get('name', '?')}"
    out = []
    out += [ManifestServe(f"{path}: {where}", path, getattr(pod, "line", 0), None,
                          f"{key}: expected a list of containers, got {_kind(pod[key])}")
            for key in ("initContainers", "containers") if pod.get(key) is not None and not isinstance(pod[key], list)]
    for c in [*_list(pod.get("initContainers")), *_list(pod.get("containers"))]:
        if not isinstance(c, dict):
            continue
        words = [*_words(c.get("command")), *_words(c.get("args"))]
        found = _one(f"{path}: {where}: {c.get('name', '?')}", path, getattr(c, "line", 0), words, c.get("image"),
                     _env(c.get("env")))
        if found:
            out.append(replace(found, replicas=_replicas(doc.get("spec"))))
    return out


def _replicas(spec: Any) -> int:
    """``replicas`` of a workload's spec (Deployment, StatefulSet, ReplicaSet, compose ``deploy``, a Dynamo
    service): a positive integer, else 1 (Kubernetes' default when the field is absent; a bad value is the
    manifest's own problem, read as one copy)."""
    n = spec.get("replicas") if isinstance(spec, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 1_000_000 else 1


# production-stack's vllmConfig keys → vllm serve flags (helm/templates/deployment-vllm-multi.yaml, f1f98227)
_HELM_FLAGS = (("maxModelLen", "--max-model-len"), ("dtype", "--dtype"), ("tensorParallelSize", "--tensor-parallel-size"),
               ("maxNumSeqs", "--max-num-seqs"), ("gpuMemoryUtilization", "--gpu_memory_utilization"),
               ("maxLoras", "--max_loras"))


def _helm(doc: dict, path: str) -> list[ManifestServe]:
    out = []
    specs = _list(doc["servingEngineSpec"].get("modelSpec"))
    for spec in specs if isinstance(specs, list) else []:
        if not isinstance(spec, dict):
            continue
        name = f"{path}: {spec.get('name', '?')}"
        line = getattr(spec, "line", 0)
        if "raySpec" in spec:
            out.append(ManifestServe(name, path, line, None, "a raySpec model spec (a Ray cluster) is not read by kvplan"))
            continue
        model = spec.get("modelURL")
        if not model:
            out.append(ManifestServe(name, path, line, None, "modelSpec has no modelURL"))
            continue
        words = ["vllm", "serve", str(model), "--host", "0.0.0.0", "--port", "8000"]
        if spec.get("enableLoRA"):
            words.append("--enable-lora")
        cfg = spec.get("vllmConfig") if isinstance(spec.get("vllmConfig"), dict) else None
        if cfg is not None:
            if "enableChunkedPrefill" in cfg:
                words.append("--enable-chunked-prefill" if cfg["enableChunkedPrefill"] else "--no-enable-chunked-prefill")
            words.append("--enable-prefix-caching" if cfg.get("enablePrefixCaching") else "--no-enable-prefix-caching")
            for key, flag in _HELM_FLAGS:
                if key in cfg:
                    words += [flag, str(cfg[key])]
            words += [str(a) for a in _list(cfg.get("extraArgs"))]
        lm = spec.get("lmcacheConfig")
        env = _env(spec.get("env"))
        if isinstance(lm, dict) and lm.get("enabled"):
            role = lm.get("kvRole") or "kv_both"
            words += ["--kv-transfer-config", f'{{"kv_connector":"LMCacheConnectorV1","kv_role":"{role}"}}']
            env = {**_lmcache_env(lm), **env}
        image = f"{spec.get('repository', 'vllm/vllm-openai')}:{spec.get('tag', 'latest')}"
        found = _one(name, path, line, words, image, env)
        if found:
            out.append(found)
    return out


def _lmcache_env(lm: dict) -> dict[str, str]:
    """The LMCache variables production-stack's chart sets from ``lmcacheConfig``
    (vllm-project/production-stack a6c01db05f65f556235413ba8dbcfb0c01132fff
    ``helm/templates/deployment-vllm-multi.yaml:336-347``): ``cpuOffloadingBufferSize`` > 0 →
    ``LMCACHE_LOCAL_CPU=True`` and ``LMCACHE_MAX_LOCAL_CPU_SIZE`` (GB, as written);
    ``diskOffloadingBufferSize`` → ``LMCACHE_MAX_LOCAL_DISK_SIZE``; ``enablePD`` → no local CPU tier
    (lines 297-301: ``LMCACHE_LOCAL_CPU=False``, ``LMCACHE_MAX_LOCAL_CPU_SIZE=0``)."""
    out: dict[str, str] = {}
    if lm.get("enablePD"):
        out.update(LMCACHE_LOCAL_CPU="False", LMCACHE_MAX_LOCAL_CPU_SIZE="0")
    size = lm.get("cpuOffloadingBufferSize")
    if size is not None:
        try:
            positive = int(float(str(size))) > 0
        except ValueError:
            positive = False
        if positive:
            out.update(LMCACHE_LOCAL_CPU="True", LMCACHE_MAX_LOCAL_CPU_SIZE=str(size))
    if lm.get("diskOffloadingBufferSize") is not None:
        out["LMCACHE_MAX_LOCAL_DISK_SIZE"] = str(lm["diskOffloadingBufferSize"])
    return out


def _kserve_one(path: str, name: str, c: dict, meta: dict | None, storage: str | None, line: int = 0,
                field: str = "", problem: str | None = None) -> ManifestServe | None:
    """One KServe container (a runtime's merged with its InferenceService's model, or a custom one)."""
    from kvplan.serve import kserve

    name = f"{path}: {name}"
    if problem is not None:
        return ManifestServe(name, path, line, None, problem)
    warnings: list[str] = []
    place = f"{path}:{line}"
    try:
        command = kserve.fill(_words(c.get("command")), meta, place, warnings)
        args = kserve.fill(_words(c.get("args")), meta, place, warnings)
        env = _env(c.get("env"))
        storage = storage or env.get("STORAGE_URI")
        image = str(c["image"]) if c.get("image") else None
        if kserve.is_hf_server(c):
            while command and command[0] != "huggingfaceserver":  # python3 -m huggingfaceserver
                command = command[1:]
            words = kserve.hf_server_words([*command[1:], *args], kserve.gpu_count(c.get("resources"), field),
                                           storage, warnings, field)
            tag, release = kserve.hf_server_release(image)
            if image is None:
                warnings.append("KServe's kserve-huggingfaceserver runtime: its image (kserve/huggingfaceserver:TAG) "
                                "is the installed KServe's; give --policy vllm==X for the vLLM it ships "
                                "(KServe v0.20.0: vLLM 0.24.0)")
            elif release is None:
                warnings.append(f"{image}: not a KServe release kvplan knows the vLLM of; give --policy vllm==X")
            serve = kserve.with_image(parse_line(shlex.join(["vllm", "serve", *words])), image, tag, release)
            serve = replace(serve, env={**env, **serve.env})
        else:
            words = [*command, *args]
            for i, w in enumerate(words):  # the model word: --model X, --model=X, or serve's positional
                if w.startswith("--model="):
                    words[i] = "--model=" + kserve.storage_model(w[8:], storage, warnings)
                elif i and words[i - 1] in ("--model", "serve"):
                    words[i] = kserve.storage_model(w, storage, warnings)
            serve = _serve_line(words, image, env)
            if serve is None:
                return None
    except kserve.Problem as e:
        return ManifestServe(name, path, line, None, str(e))
    except KvplanError as e:
        return ManifestServe(name, path, line, None, e.message.removeprefix("--line: "))
    return ManifestServe(name, path, line, serve, warnings=tuple(dict.fromkeys(warnings)))


def _kserve(doc: dict, path: str, runtimes: dict, used: set) -> list[ManifestServe]:
    from functools import partial

    from kvplan.serve import kserve

    if doc.get("kind") not in {"InferenceService", *kserve.RUNTIMES}:
        meta = v if isinstance(v := doc.get("metadata"), dict) else {}
        return [ManifestServe(f"{path}: {doc.get('kind')}/{meta.get('name', '?')}", path, getattr(doc, "line", 0),
                              None, f"kind: {doc.get('kind')} is not read by kvplan (it reads InferenceService, "
                                    "ServingRuntime, ClusterServingRuntime and LLMInferenceService)")]
    return kserve.read_kserve(doc, runtimes, used, partial(_kserve_one, path))


def _llmisvc(doc: dict, path: str, configs: dict) -> list[ManifestServe]:
    """A KServe LLMInferenceService's vLLM pools, its configs merged (kvplan.serve.llmisvc)."""
    from kvplan.serve import llmisvc

    if doc.get("kind") != "LLMInferenceService":
        return []  # an LLMInferenceServiceConfig: merged into the services that use it
    out = []
    for name, line, words, env, image, replicas, warnings, problem in llmisvc.engines(doc, configs, path):
        if words is None:
            out.append(ManifestServe(f"{path}: {name}", path, line, None, problem, warnings, replicas))
            continue
        found = _one(f"{path}: {name}", path, line, words, image, _env(env))
        if found is None or found.serve is None:
            out.append(found or ManifestServe(f"{path}: {name}", path, line, None, "its command does not run vLLM"))
            continue
        tag = found.serve.image_tag
        serve = found.serve if found.serve.image_release or not tag else replace(
            found.serve, image_tag=f"{tag} (not a vLLM image: its release is not vLLM's)")
        out.append(replace(found, serve=serve, warnings=(*found.warnings, *warnings), replicas=replicas))
    return out


def _llmd(doc: dict, path: str) -> list[ManifestServe]:
    from kvplan.serve import llmd

    out = []
    for role, c, words, problem, entry in llmd.containers(doc):
        name, line = f"{path}: {role}: {c.get('name') or 'vllm'}", getattr(c, "line", 0)
        if words is None:  # llmd.containers gives no words exactly when it gives the problem
            out.append(ManifestServe(name, path, line, None, problem))
            continue
        warnings = []
        if entry:
            words = ["vllm", "serve", *words]
            warnings.append(f"{path}:{line}: modelCommand imageDefault: the image's entrypoint is read as vllm serve")
        found = _one(name, path, line, words, str(c["image"]), _env(c.get("env")))
        if found is None or found.serve is None:
            out.append(found or ManifestServe(name, path, line, None, "its command does not run vLLM"))
            continue
        tag = found.serve.image_tag
        serve = replace(found.serve, image_tag=f"{tag} (llm-d's release, not vLLM's)" if tag else tag)
        # the role's Deployment (LeaderWorkerSet when multinode) has `replicas: {{ ternary .Values.decode.replicas 1
        # (hasKey .Values.decode "replicas") }}` (decode-deployment.yaml line 13 @ ab68329d, prefill-deployment.yaml)
        out.append(replace(found, serve=serve, warnings=tuple(warnings), replicas=_replicas(doc.get(role))))
    return out


def _dynamo(doc: dict, path: str) -> list[ManifestServe]:
    """A DynamoGraphDeployment's vLLM workers (kvplan.serve.dynamo)."""
    from kvplan.serve import dynamo

    meta = v if isinstance(v := doc.get("metadata"), dict) else {}
    out = []
    services = (doc.get("spec") or {}).get("services") if isinstance(doc.get("spec"), dict) else None
    for name, line, words, env, warnings in dynamo.workers(doc):
        found = _one(f"{path}: {dynamo.KIND}/{meta.get('name', '?')}: {name}", path, line, words, None, _env(env))
        if found:
            service = services.get(name) if isinstance(services, dict) else None
            out.append(replace(found, warnings=(*found.warnings, *warnings), replicas=_replicas(service)))
    return out


def _ray(doc: dict, path: str) -> list[ManifestServe]:
    """Ray Serve LLM's LLMConfigs (kvplan.serve.rayserve)."""
    from kvplan.serve import rayserve

    out = []
    for name, line, words, env, problem in rayserve.engines(doc, path):
        if words is None:
            out.append(ManifestServe(f"{path}: {name}", path, line, None, problem))
            continue
        found = _one(f"{path}: {name}", path, line, words, None, env)
        if found:
            out.append(found)
    return out


def _ray_python(text: str, path: str) -> list[ManifestServe]:
    """Ray Serve LLM's ``LLMConfig(...)`` calls of a Python file (kvplan.serve.rayserve.python_engines)."""
    from kvplan.serve import rayserve

    out = []
    for name, line, words, env, problem, warnings in rayserve.python_engines(text, path):
        if words is None:
            out.append(ManifestServe(f"{path}: {name}", path, line, None, problem, warnings))
            continue
        found = _one(f"{path}: {name}", path, line, words, None, env)
        if found:
            out.append(replace(found, warnings=(*found.warnings, *warnings)))
    return out


_READERS = {"dynamo": _dynamo, "ray-serve": _ray, "compose": _compose, "kubernetes": _kubernetes, "helm-production-stack": _helm, "helm-llm-d": _llmd}


def read_manifests(text: str, path: str) -> list[ManifestServe]:
    """Every vLLM container of the file's documents, in order; a file with none is an error."""
    from kvplan.serve import kserve

    from kvplan.serve import rayserve

    if rayserve.looks_like_python(text, path):  # Ray Serve LLM's LLMConfig(...) in a script, read with ast
        return _ray_python(text, path)
    docs = _load_documents(text, path)
    unset_images: list[str] = []
    out: list[ManifestServe] = []
    kinds = []
    runtimes = {str(d["metadata"].get("name")): d for d in docs if kind_of(d) == "kserve"
                and str(d.get("kind")) in kserve.RUNTIMES and isinstance(d.get("metadata"), dict)}
    used = kserve.used_runtimes(docs)
    configs = {str(d["metadata"].get("name")): d for d in docs if kind_of(d) == "kserve"
               and d.get("kind") == "LLMInferenceServiceConfig" and isinstance(d.get("metadata"), dict)}
    for i, doc in enumerate(docs, start=1):
        kind = kind_of(doc)
        if kind is None:
            continue
        kinds.append(kind)
        if kind == "kserve" and doc.get("kind") in ("LLMInferenceService", "LLMInferenceServiceConfig"):
            found = _llmisvc(doc, path, configs)
        elif kind == "kserve":
            found = _kserve(doc, path, runtimes, used)
        elif kind == "compose":
            found = _compose(doc, path, unset_images)
        else:
            found = _READERS[kind](doc, path)
        if len(docs) > 1:
            found = [replace(f, name=f.name.replace(f"{path}: ", f"{path}#{i}: ", 1)) for f in found]
        out += found
    if not kinds:
        raise OptionError(f"{path}: not a docker-compose file, a Kubernetes, KServe or Dynamo manifest, a Ray Serve "
                          "LLM config, production-stack or llm-d Helm values (no services:, apiVersion:/kind:, "
                          "applications: with llm_configs, servingEngineSpec: or modelArtifacts: with decode:/prefill:)")
    if not out and unset_images:  # the image that would run vLLM may be the one a variable names
        raise OptionError(unset_images[0])
    if not out:
        raise OptionError(f"{path}: no container runs vLLM (no vllm image, no `vllm serve` or API server command)")
    return out
