"""KServe ``LLMInferenceService`` (``serving.kserve.io/v1alpha1``, ``v1alpha2``) → the vLLM engines it runs.

Read from KServe's own source (github.com/kserve/kserve at commit aaac4e294dae, 2026-08-21):

* the types (``pkg/apis/serving/v1alpha1/llm_inference_service_types.go``): ``LLMInferenceServiceSpec`` is
  ``model`` (``uri``, ``name``), an inline ``WorkloadSpec`` (``replicas``, ``parallelism`` {``tensor``,
  ``pipeline``, ``data``, ``dataLocal``}, ``template`` and ``worker``: PodSpecs), ``prefill`` (a second
  ``WorkloadSpec``: the prefill pool of a P/D pair) and ``baseRefs`` (names of ``LLMInferenceServiceConfig``
  objects, whose ``spec`` is the same type);
* the merge (``pkg/controller/v1alpha2/llmisvc/config_merge.go``, ``combineBaseRefsConfig`` lines 269-378 and
  ``mergeSpecs`` lines 861-909): the well-known configs the deployment pattern picks (``kserve-config-llm-template``
  for one pool; ``kserve-config-llm-prefill-template`` and ``kserve-config-llm-decode-template`` for P/D; the
  ``…-worker-data-parallel`` ones when ``worker`` is set with data parallelism), then the ``baseRefs`` in order,
  then the service's own spec, each a Kubernetes strategic merge patch over the result so far: maps merge key by
  key, ``containers`` / ``env`` / ``volumes`` lists merge by ``name`` (``ports`` by ``containerPort``,
  ``volumeMounts`` by ``mountPath``: the ``patchMergeKey`` tags of k8s.io/api core/v1 types.go), other lists
  (``command``, ``args``) are replaced, and a ``null`` deletes. kvplan reads the configs given in the same
  file or stream (``cat configs.yaml service.yaml | kvplan vllm --file -``); a ``baseRefs`` name that is not
  there is an error naming it; a well-known config that is not there is KServe's own (below).
* the vLLM command of the well-known templates (charts/kserve-runtime-configs/files/llmisvcconfigs/
  resources.yaml: ``kserve-config-llm-template`` lines 2497-2508, ``…-prefill-template`` 1083-1094,
  ``…-decode-template`` 161-172, ``…-worker-data-parallel`` 2863-2880): the ``main`` container runs
  ``vllm serve /mnt/models --served-model-name NAME --port 8000``, ``--tensor-parallel-size`` from
  ``parallelism.tensor``, with a ``worker`` and ``parallelism.data`` ``--data-parallel-size`` /
  ``--data-parallel-size-local``, then ``$VLLM_ADDITIONAL_ARGS`` (the container's env, split as the shell
  splits it) and the container's ``args``. ``/mnt/models`` is ``model.uri`` downloaded by the storage
  initializer: ``hf://ORG/NAME`` is read as ORG/NAME, any other URI as ``model.name``. A ``main`` container
  with its own ``vllm serve`` command runs that instead.
* ``replicas`` (default 1) of each pool: each replica an engine (``DeploymentTotals.replicas``).

Pipeline parallelism has no well-known config at that commit (the names are declared, "FIXME move those
presets to well-known"): such a pool is refused with that reason.
"""

from __future__ import annotations

import shlex
from typing import Any, Iterator

from kvplan.serve.kserve import Problem

KINDS = frozenset({"LLMInferenceService", "LLMInferenceServiceConfig"})
VERSIONS = ("serving.kserve.io/v1alpha1", "serving.kserve.io/v1alpha2")
MAIN = "main"  # the vLLM container's name in KServe's well-known templates
PREFIX = "kserve-"  # LLM_INFERENCE_SERVICE_CONFIG_PREFIX's default (config_merge.go line 77)
# list fields merged by a key (strategic merge patch; k8s.io/api core/v1 types.go patchMergeKey tags)
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "ports": "containerPort", "volumeMounts": "mountPath"}
MAX_BASE_REFS = 64  # a spec naming more configs than this is refused (KServe sets no limit; kvplan bounds its work)


def _map(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _seq(value: Any) -> list:
    return value if isinstance(value, list) else []


def merge(base: Any, patch: Any, key: str | None = None) -> Any:
    """``patch`` applied to ``base`` as a strategic merge patch (see the module docstring)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = merge(base.get(k), v, k) if k in base else v
        return out
    if isinstance(base, list) and isinstance(patch, list) and key in MERGE_KEYS:
        by = MERGE_KEYS[key]
        items = list(base)
        for item in patch:
            at = next((i for i, b in enumerate(items) if isinstance(b, dict) and isinstance(item, dict)
                       and by in item and b.get(by) == item.get(by)), None)
            if at is None:
                items.append(item)
            else:
                items[at] = merge(items[at], item)
        return items
    return patch


def _data_parallel(workload: dict) -> bool:
    data = _map(workload.get("parallelism")).get("data")
    return workload.get("worker") is not None and isinstance(data, int) and data > 0


def well_known(spec: dict) -> list[str]:
    """The well-known configs ``combineBaseRefsConfig`` picks for this spec's pattern (vLLM's pools only)."""
    if spec.get("prefill") is not None:
        prefill = _map(spec["prefill"])
        names = [PREFIX + ("config-llm-prefill-worker-data-parallel" if _data_parallel(prefill)
                           else "config-llm-prefill-template")]
        return names + [PREFIX + ("config-llm-decode-worker-data-parallel" if _data_parallel(spec)
                                  else "config-llm-decode-template")]
    return [PREFIX + ("config-llm-worker-data-parallel" if _data_parallel(spec) else "config-llm-template")]


def merged_spec(doc: dict, configs: dict[str, dict], path: str) -> tuple[dict, list[str]]:
    """The service's spec with its configs merged as KServe merges them, and which configs were applied."""
    spec = _map(doc.get("spec"))
    refs = _seq(spec.get("baseRefs"))
    if len(refs) > MAX_BASE_REFS:
        raise Problem(f"spec.baseRefs: {len(refs)} configs, more than kvplan reads ({MAX_BASE_REFS}); merge some")
    names = []
    for i, ref in enumerate(refs):
        name = _map(ref).get("name")
        if not isinstance(name, str) or not name:
            raise Problem(f"spec.baseRefs[{i}]: expected {{name: CONFIG}}, got {ref!r}; name an "
                          "LLMInferenceServiceConfig")
        if name not in configs:
            raise Problem(f"spec.baseRefs[{i}]: LLMInferenceServiceConfig '{name}' is not in {path}; give it in the "
                          f"same file or stream (cat config.yaml service.yaml | kvplan vllm --file -)")
        names.append(name)
    resolved = spec  # what the refs make of the spec decides the pattern (combineBaseRefsConfig lines 276-289)
    for n in names:
        resolved = merge(resolved, _map(configs[n].get("spec")))
    applied = [n for n in well_known(resolved) if n in configs] + names
    out: dict = {}
    for n in applied:
        out = merge(out, _map(configs[n].get("spec")))
    return merge(out, spec), applied


def model_of(spec: dict, warnings: list[str]) -> str:
    """The model ``/mnt/models`` holds: ``hf://ORG/NAME`` → ORG/NAME; another URI → ``model.name``."""
    model = _map(spec.get("model"))
    uri, name = model.get("uri"), model.get("name")
    if isinstance(uri, str) and uri.startswith("hf://"):
        return uri[len("hf://"):].split(":", 1)[0].strip("/")
    if isinstance(name, str) and name:
        if uri:
            warnings.append(f"spec.model.uri {uri} (downloaded to /mnt/models): read as spec.model.name {name}")
        return name
    raise Problem("spec.model: neither an hf:// uri nor a name; give spec.model.uri: hf://ORG/NAME")


def _template_words(spec: dict, workload: dict, c: dict, model: str, field: str) -> list[str]:
    """The well-known template's `vllm serve` line for ``c`` (the module docstring)."""
    p = _map(workload.get("parallelism"))
    if p.get("pipeline"):
        raise Problem(f"{field}.parallelism.pipeline: KServe ships no well-known pipeline-parallel config at the "
                      "commit read; give the main container its own vllm serve command")
    name = _map(spec.get("model")).get("name") or model
    words = ["vllm", "serve", model, "--served-model-name", str(name), "--port", "8000"]
    if p.get("tensor"):
        words += ["--tensor-parallel-size", str(p["tensor"])]
    if _data_parallel(workload):
        words += ["--data-parallel-size", str(p.get("data") or 1), "--data-parallel-size-local",
                  str(p.get("dataLocal") or 1)]
    env = {str(e.get("name")): e.get("value") for e in _seq(c.get("env")) if isinstance(e, dict)}
    extra = env.get("VLLM_ADDITIONAL_ARGS")
    if isinstance(extra, str) and extra.strip():
        try:
            words += shlex.split(extra)
        except ValueError as e:
            raise Problem(f"{field}: env VLLM_ADDITIONAL_ARGS is not shell words ({e}); fix its quoting") from None
    return words + [str(a) for a in _seq(c.get("args"))]


def _own_command(c: dict) -> bool:
    """Whether the container runs a command of its own (not the well-known template's script)."""
    command = [str(w) for w in _seq(c.get("command"))]
    return bool(command) and not any("VLLM_ADDITIONAL_ARGS" in w for w in command)


def engines(doc: dict, configs: dict[str, dict], path: str) -> Iterator[tuple]:
    """``(name, line, words | None, env, image, replicas, warnings, problem)`` for each vLLM pool of the service:
    ``decode`` and ``prefill`` for a P/D pair, else the one pool."""
    meta = _map(doc.get("metadata"))
    where = f"LLMInferenceService/{meta.get('name', '?')}"
    line = getattr(doc, "line", 0)
    try:
        spec, applied = merged_spec(doc, configs, path)
        warnings: list[str] = []
        model = model_of(spec, warnings)
    except Problem as e:
        yield where, line, None, {}, None, 1, (), str(e)
        return
    if applied:
        warnings.append(f"{where}: merged with LLMInferenceServiceConfig {', '.join(applied)} (KServe's order)")
    pools = [("prefill", _map(spec.get("prefill")), "spec.prefill"), ("decode", spec, "spec")] \
        if spec.get("prefill") is not None else [(None, spec, "spec")]
    for role, workload, field in pools:
        name = f"{where}: {role}: {MAIN}" if role else f"{where}: {MAIN}"
        containers = [c for c in _seq(_map(workload.get("template")).get("containers")) if isinstance(c, dict)]
        c = next((c for c in containers if c.get("name") == MAIN), containers[0] if containers else {})
        replicas = workload.get("replicas", 1)
        replicas = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 1 else 1
        env = {str(e.get("name")): str(e.get("value")) for e in _seq(c.get("env"))
               if isinstance(e, dict) and isinstance(e.get("value"), (str, int, float))}
        mine = list(warnings)
        try:
            if _own_command(c):
                words = [*[str(w) for w in _seq(c.get("command"))], *[str(w) for w in _seq(c.get("args"))]]
            else:
                words = _template_words(spec, workload, c, model, field)
                env.pop("VLLM_ADDITIONAL_ARGS", None)  # the template's shell consumed it: vLLM never reads it
                mine.append(f"{name}: KServe's well-known template runs vllm serve /mnt/models (its vLLM flags: "
                            "parallelism, VLLM_ADDITIONAL_ARGS, args); /mnt/models read as " + model)
        except Problem as e:
            yield name, line, None, env, None, replicas, tuple(mine), str(e)
            continue
        if workload.get("worker") is not None and not _data_parallel(workload):
            mine.append(f"{name}: {field}.worker without parallelism.data: one node's engine is simulated")
        image = c.get("image") if isinstance(c.get("image"), str) else None
        if image is None:
            mine.append(f"{name}: no image in the service or its configs (KServe's default is llm-d's image): give "
                        "--policy vllm==X for the release it runs")
        yield name, line, words, env, image, replicas, tuple(mine), None
