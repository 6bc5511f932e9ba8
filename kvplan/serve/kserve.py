"""KServe manifests (``serving.kserve.io``) → the vLLM containers they run.

Read from KServe's own source (github.com/kserve/kserve, release v0.20.0, commit 1fb78105):

* ``InferenceService``: ``spec.predictor.containers[]`` (a custom container: its ``command`` +
  ``args``, ``env``) and ``spec.predictor.model`` (``modelFormat`` + ``runtime``; the older
  ``spec.predictor.huggingface`` is a ``huggingface`` model, pkg/apis/serving/v1beta1/predictor.go:52), whose container
  is its runtime's merged with the model's: the runtime's ``args`` then the model's
  (pkg/controller/v1beta1/inferenceservice/utils/utils.go:253-263, ``MergeRuntimeContainers``),
  the model's ``command``, ``image``, ``env`` (by name) and ``resources`` over the runtime's; then
  ``{{.Name}}`` / ``{{.Namespace}}`` filled from the InferenceService's metadata (utils.go:324-336,
  ``ReplacePlaceholders``: a Go template over its ObjectMeta). The runtime is the file's
  ``ServingRuntime`` / ``ClusterServingRuntime`` named by ``model.runtime`` or supporting
  ``modelFormat.name``, else KServe's own: ``kserve-huggingfaceserver`` (``huggingface``) and
  ``kserve-vllmserver`` (``vLLM``), as config/runtimes/kserve-huggingfaceserver.yaml and
  kserve-vllmserver.yaml define them;
* ``ServingRuntime`` / ``ClusterServingRuntime`` on their own: each container (a placeholder
  stays as written, with a warning: KServe fills it per InferenceService);
* ``storageUri`` (``spec.predictor.model.storageUri``, or ``STORAGE_URI`` in a container's env)
  is downloaded to ``/mnt/models``: an ``hf://ORG/NAME`` one is read as that model.

KServe's Hugging Face server (``python -m huggingfaceserver``, the image
``kserve/huggingfaceserver``) runs vLLM as its backend (``--backend`` ``auto``/``vllm``;
``huggingface`` is transformers, not vLLM). Its arguments (python/huggingfaceserver/
huggingfaceserver/__main__.py:80-165, and kserve/model_server.py's parser) become a ``vllm serve``
line: ``--model_id`` (else ``--model_dir``, default ``/mnt/models``; __main__.py:53-57, 233) is
the model; ``--model_revision`` → ``--revision``, ``--tokenizer_revision`` →
``--tokenizer-revision``, ``--max_length`` / ``--max_model_len`` → ``--max-model-len``,
``--trust_remote_code`` → ``--trust-remote-code``, ``--model_name`` → ``--served-model-name``;
KServe's server flags are dropped, every other word is vLLM's (``make_arg_parser``,
vllm/utils.py:58-67). With GPUs the server sets ``tensor_parallel_size`` to the GPUs the container
sees (vllm/vllm_model.py:106-107): ``--tensor-parallel-size`` is the container's
``nvidia.com/gpu`` limit. The image tag is KServe's release; the vLLM it ships is read from
python/huggingface_server.Dockerfile's ``ARG VLLM_VERSION`` at each release tag.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

API = "serving.kserve.io/"
RUNTIMES = frozenset({"ServingRuntime", "ClusterServingRuntime"})

# kserve/huggingfaceserver image tag → the vLLM release it ships (huggingface_server.Dockerfile
# ARG VLLM_VERSION; v0.15.x: python/huggingfaceserver/pyproject.toml's vllm pin)
HF_SERVER_VLLM = {"v0.15.0": "0.8.1", "v0.15.1": "0.8.5", "v0.15.2": "0.8.5", "v0.16.0": "0.9.2",
                  "v0.17.0": "0.15.1", "v0.17.1": "0.15.1", "v0.18.0": "0.19.0", "v0.18.1": "0.19.0",
                  "v0.19.0": "0.20.0", "v0.20.0": "0.24.0"}

# KServe's built-in runtimes (config/runtimes/*.yaml at v0.20.0); their images are set by the install
_BUILTIN: dict[str, dict[str, Any]] = {
    "kserve-huggingfaceserver": {"formats": ("huggingface",), "container": {
        "name": "kserve-container", "args": ["--model_name={{.Name}}"], "huggingfaceserver": True}},
    "kserve-vllmserver": {"formats": ("vllm",), "container": {
        "name": "kserve-container", "command": ["python", "-m", "vllm.entrypoints.openai.api_server"],
        "args": ["--port=8080", "--served-model-name={{.Name}}", "--model=/mnt/models"]}},
}

# huggingfaceserver's own flags and KServe's model server flags (value: takes a value)
_HF_VALUE = frozenset({"model_dir", "model_id", "model_revision", "tokenizer_revision", "max_length", "max_model_len",
                       "tensor_input_names", "backend", "http_port", "grpc_port", "workers", "max_threads",
                       "max_asyncio_workers", "enable_grpc", "enable_docs_url", "enable_latency_logging",
                       "configure_logging", "log_config_file", "access_log_format", "event_loop",
                       "timeout_keep_alive", "model_name", "predictor_host", "protocol", "predictor_protocol",
                       "predictor_use_ssl", "predictor_request_timeout_seconds", "grpc_max_send_message_length",
                       "grpc_max_receive_message_length", "predictor_request_retries"})
_HF_SWITCH = frozenset({"disable_lower_case", "disable_special_tokens", "trust_remote_code", "return_token_type_ids",
                        "return_offsets_mapping", "return_probabilities", "return_raw_logits", "disable_log_requests",
                        "enable_predictor_health_check"})
_HF_TO_VLLM = {"model_revision": "--revision", "tokenizer_revision": "--tokenizer-revision",
               "max_length": "--max-model-len", "max_model_len": "--max-model-len"}
_TP = ("--tensor-parallel-size", "--tensor_parallel_size", "-tp")
_PLACEHOLDER = re.compile(r"\{\{\s*\.(\w+)\s*\}\}")


def _has_template(word: str) -> bool:
    """Whether a word holds a ``{{ … }}`` template on one of its lines: the leftmost ``{{`` then a ``}}``
    after it (two ``find`` calls; the lazy pattern searched backtracks quadratically on a
    word of braces)."""
    for line in word.split("\n"):
        at = line.find("{{")
        if at >= 0 and line.find("}}", at + 2) >= 0:
            return True
    return False


class Problem(Exception):
    """A container kvplan cannot read: the message names the field and the fix."""


def _map(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _seq(value: Any) -> list:
    """A field that holds a list: the list, else none (a manifest may hold anything anywhere)."""
    return value if isinstance(value, list) else []


def fill(words: list[str], meta: dict | None, where: str, warnings: list[str]) -> list[str]:
    """``{{.Name}}``-style placeholders: filled from the InferenceService's metadata when there is one;
    otherwise (a runtime on its own) left as written, with a warning."""
    out = []
    for w in words:
        if meta is not None:
            w = _PLACEHOLDER.sub(lambda m: str(meta.get(m.group(1).lower(), m.group(0))), w)
        if _has_template(w):
            warnings.append(f"{where}: '{w}' holds a KServe template placeholder (filled per InferenceService "
                            "from its metadata); read as written")
        out.append(w)
    return out


def gpu_count(resources: Any, field: str = "") -> int | None:
    for key in ("limits", "requests"):
        n = _map(_map(resources).get(key)).get("nvidia.com/gpu")
        if n is not None:
            try:
                return int(str(n))
            except ValueError:
                raise Problem(f"{field}.resources.{key}.nvidia.com/gpu: '{n}' is not a number of GPUs") from None
    return None


def _split(word: str) -> tuple[str, str | None]:
    name, eq, value = word.partition("=")
    return name, (value if eq else None)


def hf_server_words(args: list[str], gpus: int | None, storage: str | None, warnings: list[str],
                    field: str = "") -> list[str]:
    """KServe huggingfaceserver's arguments → the words after ``vllm serve`` (``field``: where the
    container is, for the problems)."""
    model_id = model_dir = name = None
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        flag, value = _split(word)
        key = flag.lstrip("-").replace("-", "_") if flag.startswith("--") else None
        if key in _HF_VALUE:
            if value is None:
                if i + 1 >= len(args):
                    raise Problem(f"{field}.args: {flag} needs a value")
                value, i = args[i + 1], i + 1
            if key == "model_id":
                model_id = value
            elif key == "model_dir":
                model_dir = value
            elif key == "model_name":
                name = value
            elif key == "backend":
                if value == "huggingface":
                    raise Problem(f"{field}.args: --backend=huggingface runs the model with transformers, not vLLM "
                                  "(kvplan reads vLLM deployments; drop it or give --backend=vllm)")
                if value not in ("auto", "vllm"):
                    raise Problem(f"{field}.args: --backend={value}: KServe's backends are auto, huggingface and vllm")
            elif key in _HF_TO_VLLM:
                out += [_HF_TO_VLLM[key], value]
        elif key in _HF_SWITCH:
            if key == "trust_remote_code":
                out.append("--trust-remote-code")
        else:
            out.append(word)
        i += 1
    model = model_id or model_dir or "/mnt/models"
    if model_id is None:
        model = storage_model(model, storage, warnings)
    if name and not any(_split(w)[0] in ("--served-model-name", "--served_model_name") for w in out):
        out += ["--served-model-name", name]
    if gpus is not None and gpus > 0:
        given = [out[j + 1] if _split(w)[1] is None and j + 1 < len(out) else _split(w)[1]
                 for j, w in enumerate(out) if _split(w)[0] in _TP]
        if given and any(g != str(gpus) for g in given):
            warnings.append(f"--tensor-parallel-size {given[-1]} is replaced by {gpus}: KServe's Hugging Face "
                            f"server sets it to the GPUs the container sees (nvidia.com/gpu: {gpus})")
        out = _drop_flag(out, _TP) + ["--tensor-parallel-size", str(gpus)]
    return [model, *out]


def _drop_flag(words: list[str], flags: tuple[str, ...]) -> list[str]:
    out, skip = [], False
    for w in words:
        if skip:
            skip = False
            continue
        flag, value = _split(w)
        if flag in flags:
            skip = value is None
            continue
        out.append(w)
    return out


def storage_model(model: str, storage: str | None, warnings: list[str]) -> str:
    """``/mnt/models`` downloaded from ``hf://ORG/NAME[:REV]`` is that model's config."""
    if storage and storage.startswith("hf://") and model.rstrip("/") == "/mnt/models":
        repo = storage[len("hf://"):].split(":", 1)[0].strip("/")
        warnings.append(f"{model} is storageUri {storage} (KServe's storage initializer downloads it there): "
                        f"read as {repo}")
        return repo
    return model


def is_hf_server(container: dict) -> bool:
    image = str(container.get("image") or "")
    words = [str(w) for w in _seq(container.get("command"))]
    return bool(container.get("huggingfaceserver")) or "huggingfaceserver" in image.rsplit("/", 1)[-1] \
        or "huggingfaceserver" in words


def hf_server_release(image: str | None) -> tuple[str | None, str | None]:
    """``(tag, vLLM release)`` of a kserve/huggingfaceserver image (release None: not one KServe kvplan knows)."""
    if not image or ":" not in image.rsplit("/", 1)[-1]:
        return None, None
    tag = image.rpartition(":")[2]
    return tag, HF_SERVER_VLLM.get(tag.removesuffix("-gpu"))


def _merge(runtime: dict, model: dict) -> dict:
    """MergeRuntimeContainers: the runtime's args then the model's; the model's other fields over the runtime's."""
    out = dict(runtime)
    for key in ("command", "image", "resources"):
        if model.get(key):
            out[key] = model[key]
    out["args"] = [*_seq(runtime.get("args")), *_seq(model.get("args"))]
    env = {str(e.get("name")): e for e in _seq(runtime.get("env")) if isinstance(e, dict)}
    env.update({str(e.get("name")): e for e in _seq(model.get("env")) if isinstance(e, dict)})
    out["env"] = list(env.values())
    return out


def _runtime_for(model: dict, runtimes: dict[str, dict]) -> tuple[str, dict]:
    """The runtime container an InferenceService's model runs in: ``(runtime name, container)``."""
    wanted = model.get("runtime")
    wanted = str(wanted) if wanted else None
    fmt = str(_map(model.get("modelFormat")).get("name") or "")
    if wanted:
        doc = runtimes.get(str(wanted))
        if doc is None and wanted not in _BUILTIN:
            raise Problem(f"spec.predictor.model.runtime: '{wanted}' is not in this file; add its ServingRuntime "
                          "as another document of the file (KServe's own: kserve-huggingfaceserver, kserve-vllmserver)")
    else:
        doc = next((d for d in runtimes.values()
                    if any(str(_map(f).get("name", "")).lower() == fmt.lower()
                           for f in _seq(_map(d.get("spec")).get("supportedModelFormats")))), None)
        wanted = str(_map(doc.get("metadata")).get("name")) if doc is not None else \
            next((n for n, b in _BUILTIN.items() if fmt.lower() in b["formats"]), None)
        if wanted is None:
            raise Problem(f"spec.predictor.model.modelFormat.name: '{fmt}' has no runtime in this file and is not "
                          "KServe's huggingface or vLLM; add its ServingRuntime as another document of the file")
    if doc is None:
        return wanted, dict(_BUILTIN[wanted]["container"])
    containers = [c for c in _seq(_map(doc.get("spec")).get("containers")) if isinstance(c, dict)]
    if not containers:
        raise Problem(f"runtime '{wanted}' has no spec.containers")
    first = next((c for c in containers if c.get("name") == "kserve-container"), containers[0])
    return wanted, first


Reader = Callable[..., Any]  # (name, container, meta, storage, line=, field=, problem=) → ManifestServe | None


def read_kserve(doc: dict, runtimes: dict[str, dict], used: set[str], one: Reader) -> list:
    """The vLLM containers of one KServe document (``one`` reads a merged container)."""
    kind = str(doc.get("kind"))
    meta = _map(doc.get("metadata"))
    spec = _map(doc.get("spec"))
    where = f"{kind}/{meta.get('name', '?')}"
    out = []
    if kind in RUNTIMES:
        if str(meta.get("name")) in used:
            return []  # rendered through the InferenceService that uses it
        for n, c in enumerate(_seq(spec.get("containers"))):
            if isinstance(c, dict):
                out.append(one(f"{where}: {c.get('name', '?')}", c, None, None, line=getattr(c, "line", 0),
                               field=f"spec.containers[{n}]"))
        return [f for f in out if f]
    if kind != "InferenceService":
        return []
    pred = _map(spec.get("predictor"))
    for n, c in enumerate(_seq(pred.get("containers"))):
        if isinstance(c, dict):
            out.append(one(f"{where}: {c.get('name', '?')}", c, meta, None, line=getattr(c, "line", 0),
                           field=f"spec.predictor.containers[{n}]"))
    model = pred.get("model")
    field = "spec.predictor.model"
    if not isinstance(model, dict) and isinstance(pred.get("huggingface"), dict):  # predictor.go:52, the older form
        field = "spec.predictor.huggingface"
        model = type(pred["huggingface"])({**pred["huggingface"], "modelFormat": {"name": "huggingface"}})
        model.line = getattr(pred["huggingface"], "line", 0)
    if isinstance(model, dict):
        storage = model.get("storageUri")
        try:
            runtime, container = _runtime_for(model, runtimes)
        except Problem as e:
            out.append(one(f"{where}: model", model, meta, storage, line=getattr(model, "line", 0), problem=str(e)))
        else:
            found = one(f"{where}: model ({runtime})", _merge(container, model), meta, storage,
                        line=getattr(model, "line", 0), field=field)
            if found is not None and found.serve is not None and pred.get("workerSpec"):
                found = replace(found, warnings=(*found.warnings, "spec.predictor.workerSpec (KServe's multi-node "
                                                 "runtime) is not read: one node's container is simulated"))
            out.append(found)
    return [f for f in out if f]


def used_runtimes(docs: list) -> set[str]:
    """The runtimes an InferenceService of the file names (or picks by its model format)."""
    runtimes = {str(_map(d.get("metadata")).get("name")): d for d in docs
                if isinstance(d, dict) and str(d.get("apiVersion", "")).startswith(API) and str(d.get("kind")) in RUNTIMES}
    used = set()
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == "InferenceService":
            model = _map(_map(_map(d.get("spec")).get("predictor")).get("model"))
            if model:
                try:
                    used.add(_runtime_for(model, runtimes)[0])
                except Problem:
                    pass
    return used


def with_image(line, image: str | None, tag: str | None, release: str | None):
    """A ServeLine with KServe's image: its tag names KServe's release, not vLLM's."""
    shown = f"{tag} (KServe huggingfaceserver: vLLM {release})" if tag and release else tag
    return replace(line, image=image, image_tag=shown, image_release=release)
