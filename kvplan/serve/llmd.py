"""llm-d model-service Helm values → the vLLM containers the chart renders.

Rendered as the ``llm-d-modelservice`` chart does (github.com/llm-d-incubation/llm-d-modelservice,
release llm-d-modelservice-v0.4.12, commit 3051935e; charts/llm-d-modelservice/):

* ``decode`` and ``prefill`` (each when ``create``, default true: values.yaml:254, 483): every
  ``containers[]`` entry is one vLLM container (templates/decode-deployment.yaml,
  prefill-deployment.yaml; the LeaderWorkerSet ones when ``multinode``);
* ``modelCommand`` (templates/_helpers.tpl:649-660; default ``custom``): ``vllmServe`` →
  ``vllm serve <model> --port P`` then ``--tensor-parallel-size T`` when T > 1, ``--data-parallel-size``
  / ``--data-parallel-size-local`` when > 1, ``--served-model-name <modelArtifacts.name>``, the
  tracing flags when ``tracing.enabled``, then the container's ``args`` (_helpers.tpl:565-594);
  ``imageDefault`` → the same as arguments of the image's entrypoint, with ``--model <model>``
  (_helpers.tpl:596-624); ``custom`` → the container's ``command`` + ``args`` (_helpers.tpl:626-640);
* the model (``argsByProtocol``, _helpers.tpl:532-563) from ``modelArtifacts.uri`` (default
  ``hf://{{ .Values.modelArtifacts.name }}``, rendered): ``hf://ID`` → ID, ``pvc://CLAIM/PATH`` →
  ``<mountPath>/PATH`` (mountPath default ``/model-cache``), ``pvc+hf://CLAIM/.../ORG/NAME`` →
  ``ORG/NAME``; ``oci://`` makes the chart fail;
* ``parallelism`` (_helpers.tpl:151-232): ``tensor`` (default 1); ``data``, else ``dataLocal`` ×
  ``workers``, else ``dataLocal``; ``dataLocal``, else ``data`` / ``workers``, else ``data``;
* ``replicas`` of each role (default 1): its Deployment's (or LeaderWorkerSet's) ``spec.replicas``
  (templates/decode-deployment.yaml line 13 at commit ab68329d, ``ternary .Values.decode.replicas 1 (hasKey
  .Values.decode "replicas")``; prefill-deployment.yaml the same for ``prefill``), each replica an engine;
* the port (_helpers.tpl:238-244): ``routing.servicePort`` (default 8000) for prefill or when
  ``routing.proxy.enabled`` is false, else ``routing.proxy.targetPort`` (default 8200).

The image tag (``ghcr.io/llm-d/llm-d-cuda:v0.3.1``) is llm-d's release, not vLLM's.
"""

from __future__ import annotations

import re
from typing import Any

from kvplan.serve.kserve import Problem

_NAME = re.compile(r"\{\{\s*\.Values\.modelArtifacts\.name\s*\}\}")


def is_values(doc: dict) -> bool:
    return isinstance(doc.get("modelArtifacts"), dict) and any(isinstance(doc.get(r), dict) for r in ("decode", "prefill"))


def _map(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _seq(value: Any) -> list:
    """A field that holds a list: the list, else none."""
    return value if isinstance(value, list) else []


def _int(value: Any, field: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise Problem(f"{field}: '{value}' is not a number") from None


def model_arg(values: dict) -> str:
    """``argsByProtocol``: the model word vLLM is given."""
    art = _map(values.get("modelArtifacts"))
    name = art.get("name")
    uri = str(art.get("uri") or "hf://{{ .Values.modelArtifacts.name }}")
    if _NAME.search(uri):
        if not name:
            raise Problem("modelArtifacts.name: missing (modelArtifacts.uri names it)")
        uri = _NAME.sub(str(name), uri)
    if "{{" in uri:
        raise Problem(f"modelArtifacts.uri: '{uri}' holds a template kvplan does not render; write the model in it")
    parts = uri.split("://")
    protocol, other = parts[0], parts[-1]
    if len(other) >= 2 and other[0] == other[-1] == '"':  # hf://"{{ ... }}": the chart writes a quoted YAML word
        other = other[1:-1]
    if protocol == "hf":
        return other
    if protocol == "pvc":
        return f"{art.get('mountPath') or '/model-cache'}/{other.split('/', 1)[-1]}"
    if protocol == "pvc+hf":
        parts = other.split("/")
        if len(parts) < 3:
            raise Problem(f"modelArtifacts.uri: '{uri}' is not pvc+hf://CLAIM/.../ORG/NAME")
        return f"{parts[-2]}/{parts[-1]}"
    if protocol == "oci":
        raise Problem("modelArtifacts.uri: oci:// makes the chart fail ('arguments for oci:// not implemented'); "
                      "use hf://, pvc:// or pvc+hf://")
    raise Problem(f"modelArtifacts.uri: '{uri}' is not hf://, pvc:// or pvc+hf:// (the chart renders no model for it)")


def _parallelism(p: dict, role: str) -> tuple[int, int, int]:
    """(tensor, data, dataLocal) as the chart's helpers compute them."""
    f = f"{role}.parallelism"
    tensor = _int(p["tensor"], f"{f}.tensor") if p.get("tensor") else 1
    data_, local, workers = (_int(p[k], f"{f}.{k}") if p.get(k) else None for k in ("data", "dataLocal", "workers"))
    data = data_ or (local * workers if local and workers else local) or 1
    if local is None and data_ and workers:
        if data_ % workers:
            raise Problem(f"{f}: data must be a multiple of workers (the chart fails)")
        local = data_ // workers
    return tensor, data, local or data_ or 1


def _port(values: dict, role: str) -> str:
    routing = _map(values.get("routing"))
    proxy = _map(routing.get("proxy"))
    if role == "prefill" or proxy.get("enabled", True) is False:
        return str(routing.get("servicePort", 8000))
    return str(proxy.get("targetPort", 8200))


def containers(values: dict) -> list[tuple[str, dict, list[str] | None, str | None, bool]]:
    """``(role, container, words, problem, image_entrypoint)`` for every container the chart renders;
    ``image_entrypoint``: the words are arguments of the image's own entrypoint (``imageDefault``)."""
    out: list[tuple[str, dict, list[str] | None, str | None, bool]] = []
    for role in ("decode", "prefill"):
        spec = _map(values.get(role))
        if not spec or spec.get("create", True) is False:
            continue
        for c in _seq(spec.get("containers")):
            if not isinstance(c, dict):
                continue
            try:
                words, entry = _words(values, role, spec, c)
            except Problem as e:
                out.append((role, c, None, str(e), False))
            else:
                out.append((role, c, words, None, entry))
    return out


def _words(values: dict, role: str, spec: dict, c: dict) -> tuple[list[str], bool]:
    if not c.get("image"):
        raise Problem(f"{role}.containers[].image: missing (the chart fails: 'image of container is required')")
    how = c.get("modelCommand") or "custom"
    args = [str(a) for a in _seq(c.get("args"))]
    if how == "custom":
        if not c.get("command"):
            raise Problem(f"{role}.containers[].command: missing; with modelCommand custom (the default) the chart "
                          "fails without one (or set modelCommand: vllmServe)")
        command = c["command"]
        return [*([command] if isinstance(command, str) else [str(w) for w in command]), *args], False
    if how not in ("vllmServe", "imageDefault"):
        raise Problem(f"{role}.containers[].modelCommand: '{how}' is not vllmServe, imageDefault or custom")
    tensor, data, local = _parallelism(_map(spec.get("parallelism")), role)
    words = ["--model", model_arg(values)] if how == "imageDefault" else ["vllm", "serve", model_arg(values)]
    words += ["--port", _port(values, role)]
    for flag, n in (("--tensor-parallel-size", tensor), ("--data-parallel-size", data),
                    ("--data-parallel-size-local", local)):
        if n > 1:
            words += [flag, str(n)]
    words += ["--served-model-name", str(_map(values.get("modelArtifacts")).get("name"))]
    tracing = _map(values.get("tracing"))
    if tracing.get("enabled"):
        words += ["--otlp-traces-endpoint", str(tracing.get("otlpEndpoint", "http://otel-collector:4317")),
                  "--collect-detailed-traces", str(_map(tracing.get("vllm")).get("collectDetailedTraces", "all"))]
    return [*words, *args], how == "imageDefault"
