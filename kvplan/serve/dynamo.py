"""NVIDIA Dynamo's ``DynamoGraphDeployment`` (``apiVersion: nvidia.com/v1alpha1``): its vLLM workers
as ``vllm serve`` lines.

A graph's ``spec.services.<Name>`` each run one pod; a vLLM worker's ``extraPodSpec.mainContainer``
runs ``python3 -m dynamo.vllm ARGS`` (ai-dynamo/dynamo ``examples/backends/vllm/deploy/agg.yaml`` at
c6fcf991, ``disagg.yaml`` at 7893f268). ``dynamo.vllm`` parses vLLM's own engine arguments beside
two groups of Dynamo's, which are not vLLM's and are dropped here (each named in a warning):

* the Dynamo runtime group, ``components/src/dynamo/common/configuration/groups/runtime_args.py``
  at c6b40e78 (``DynamoRuntimeArgGroup``): ``--namespace``, ``--endpoint``, ``--discovery-backend``,
  ``--request-plane``, ``--event-plane``, ``--connector`` (``nargs="*"``), ``--durable-kv-events``,
  ``--dyn-tool-call-parser``, ``--dyn-reasoning-parser``, ``--custom-jinja-template``,
  ``--endpoint-types``, ``--dump-config-to``, ``--multimodal-embedding-cache-capacity-gb``,
  ``--output-modalities`` (``nargs="*"``), ``--media-output-fs-url``, ``--media-output-http-url``;
* the Dynamo vLLM wrapper group, ``components/src/dynamo/vllm/backend_args.py`` at d195d280
  (``DynamoVllmArgGroup``): ``--disaggregation-mode``, ``--sleep-mode-level``, ``--mm-prompt-template``,
  ``--stage-configs-path``, ``--default-video-fps``, ``--omni-*`` values, ``--model-express-url`` and
  the booleans ``--is-prefill-worker``, ``--is-decode-worker``, ``--use-vllm-tokenizer``,
  ``--route-to-encoder``, ``--multimodal-*``, ``--enable-multimodal``, ``--frontend-decoding``,
  ``--omni``, ``--omni-enable-*``, ``--omni-vae-use-*``, ``--omni-enforce-eager``, ``--headless``
  (each with its ``--no-`` form).

The runtime image (``nvcr.io/nvidia/ai-dynamo/vllm-runtime:TAG``) is tagged with Dynamo's release,
not vLLM's: the vLLM release is kvplan's default or ``--policy``, and a warning says so.
"""

from __future__ import annotations

from typing import Any, Iterator

API = "nvidia.com/"
KIND = "DynamoGraphDeployment"

# Dynamo's own flags that take a value (one word; "*" for nargs="*": every word up to the next flag)
_VALUE_FLAGS = {
    "--namespace": 1, "--endpoint": 1, "--discovery-backend": 1, "--request-plane": 1, "--event-plane": 1,
    "--connector": "*", "--dyn-tool-call-parser": 1, "--dyn-reasoning-parser": 1, "--custom-jinja-template": 1,
    "--endpoint-types": 1, "--dyn-endpoint-types": 1, "--dump-config-to": 1,
    "--multimodal-embedding-cache-capacity-gb": 1, "--output-modalities": "*", "--media-output-fs-url": 1,
    "--media-output-http-url": 1,
    "--disaggregation-mode": 1, "--sleep-mode-level": 1, "--mm-prompt-template": 1, "--stage-configs-path": 1,
    "--default-video-fps": 1, "--omni-layerwise-num-gpu-layers": 1, "--omni-boundary-ratio": 1,
    "--omni-flow-shift": 1, "--omni-diffusion-cache-backend": 1, "--omni-diffusion-cache-config": 1,
    "--omni-ulysses-degree": 1, "--omni-ring-degree": 1, "--omni-cfg-parallel-size": 1, "--model-express-url": 1,
}
_BOOL_FLAGS = frozenset({
    "--durable-kv-events", "--is-prefill-worker", "--is-decode-worker", "--use-vllm-tokenizer", "--route-to-encoder",
    "--multimodal-encode-worker", "--multimodal-worker", "--multimodal-decode-worker", "--enable-multimodal",
    "--frontend-decoding", "--omni", "--omni-enable-layerwise-offload", "--omni-vae-use-slicing",
    "--omni-vae-use-tiling", "--omni-enable-cache-dit-summary", "--omni-enable-cpu-offload", "--omni-enforce-eager",
    "--headless",
})


def is_graph(doc: Any) -> bool:
    return isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(API) and doc.get("kind") == KIND


def _is_dynamo_vllm(words: list[str]) -> int | None:
    """The index just after ``-m dynamo.vllm`` (or a ``dynamo.vllm`` word), None when the words do not run it."""
    for i, w in enumerate(words):
        if w == "dynamo.vllm" or w.endswith("/dynamo/vllm/__main__.py"):
            return i + 1
    return None


def vllm_words(args: list[str]) -> tuple[list[str], list[str]]:
    """(the words vLLM reads, the Dynamo flags dropped)."""
    out: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(args):
        w = args[i]
        name = w.split("=", 1)[0]
        base = "--" + name[5:] if name.startswith("--no-") else name
        if name in _VALUE_FLAGS:
            dropped.append(name)
            if "=" in w:
                i += 1
                continue
            if _VALUE_FLAGS[name] == "*":
                i += 1
                while i < len(args) and not args[i].startswith("-"):
                    i += 1
                continue
            i += 2
            continue
        if base in _BOOL_FLAGS:
            dropped.append(name)
            i += 1
            continue
        out.append(w)
        i += 1
    return out, dropped


def workers(doc: dict) -> Iterator[tuple[str, int, list[str], Any, list[str]]]:
    """(service name, line, the ``vllm serve`` words, the container's env entries, warnings) of every
    service of the graph that runs ``dynamo.vllm``."""
    services = (doc.get("spec") or {}).get("services") if isinstance(doc.get("spec"), dict) else None
    if not isinstance(services, dict):
        return
    for name, svc in services.items():
        if not isinstance(svc, dict):
            continue
        pod = v if isinstance(v := svc.get("extraPodSpec"), dict) else {}
        main = v if isinstance(v := pod.get("mainContainer"), dict) else {}
        words = [str(w) for w in [*(main.get("command") or []), *(main.get("args") or [])]]
        if len(words) == 1 or (len(words) >= 3 and words[0] in ("sh", "bash", "/bin/sh", "/bin/bash")
                                and words[1] in ("-c", "-lc", "-ec")):
            import shlex

            words = shlex.split(words[-1])  # one string, or `sh -c "python3 -m dynamo.vllm ..."`
        start = _is_dynamo_vllm(words)
        if start is None:
            continue
        args, dropped = vllm_words(words[start:])
        warnings = []
        if dropped:
            warnings.append(f"{name}: Dynamo's own flags, not vLLM's, left out: {', '.join(dropped)}")
        image = main.get("image")
        if image:
            warnings.append(f"{name}: the image {image} is tagged with Dynamo's release, not vLLM's; the vLLM "
                            "release is kvplan's default or --policy")
        line = getattr(svc, "line", 0)
        yield name, line, ["vllm", "serve", *args], main.get("env"), warnings
