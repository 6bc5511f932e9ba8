"""Ray Serve LLM: ``LLMConfig`` (``ray.serve.llm``) in YAML → ``vllm serve`` lines.

Read in three forms: a Serve config file (``applications[].args.llm_configs[]``, the app built by
``import_path: ray.serve.llm:build_openai_app``: ray-project/ray
``doc/source/llm/doc_code/serve/llama3_8B/serve_my_llama_3_1_8B.yaml`` at 4a16cb95, ``.../qwen/
llm_config_example.yaml`` at c72afdcd), a KubeRay ``RayService`` whose ``spec.serveConfigV2`` holds
that file as a string, and one ``LLMConfig`` mapping on its own (``model_loading_config`` at the
top). Each LLMConfig becomes the engine Ray starts, as ``VLLMEngineConfig.get_initialization_kwargs``
builds it (``python/ray/llm/_internal/serve/engines/vllm/vllm_models.py`` at b4061b5e): the
``engine_kwargs`` are vLLM's engine arguments, with ``model`` = ``model_loading_config.model_source``
(else ``model_id``) and ``served_model_name`` = ``[model_id]``; ``runtime_env.env_vars`` are the
workers' environment. Each engine argument becomes its flag (``max_model_len: 8192`` →
``--max-model-len 8192``; ``true`` → the flag, ``false`` → its ``--no-`` form, a mapping or list →
JSON), then the serve-line reader judges it as the release does. An ``llm_configs`` entry that is a
path to another file is not followed (a problem names it).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

BUILDER = "ray.serve.llm:build_openai_app"


def _configs_of_app(app: Any) -> list:
    args = app.get("args") if isinstance(app, dict) and isinstance(app.get("args"), dict) else {}
    configs = args.get("llm_configs")
    return configs if isinstance(configs, list) else []


def is_ray(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    if doc.get("kind") == "RayService" and str(doc.get("apiVersion", "")).startswith("ray.io/"):
        return True
    if isinstance(doc.get("model_loading_config"), dict):
        return True
    apps = doc.get("applications")
    return isinstance(apps, list) and any(_configs_of_app(a) for a in apps)


def _flag(key: str, value: Any) -> list[str]:
    flag = "--" + str(key).replace("_", "-")
    if isinstance(value, bool):
        return [flag] if value else ["--no-" + flag[2:]]
    if isinstance(value, (dict, list)):
        return [flag, json.dumps(value)]
    return [flag, str(value)]


def llm_config_words(config: dict) -> tuple[list[str] | None, dict, str | None]:
    """(the ``vllm serve`` words, the env, a problem) of one LLMConfig mapping."""
    loading = config.get("model_loading_config")
    if not isinstance(loading, dict):
        return None, {}, "no model_loading_config (model_id, model_source)"
    source = loading.get("model_source")
    model = source if isinstance(source, str) and source else loading.get("model_id")
    if not isinstance(model, str) or not model:
        return None, {}, "model_loading_config has no model_id or model_source"
    engine = config.get("engine_kwargs") if isinstance(config.get("engine_kwargs"), dict) else {}
    if "model" in engine or "served_model_name" in engine:
        return None, {}, ("engine_kwargs sets model or served_model_name, which Ray refuses "
                          "(VLLMEngineConfig.get_initialization_kwargs); use model_loading_config")
    words = ["vllm", "serve", model]
    for key, value in engine.items():
        if value is None or key == "distributed_executor_backend":  # Ray sets "ray"; no effect on the KV cache
            continue
        words += _flag(key, value)
    runtime = config.get("runtime_env") if isinstance(config.get("runtime_env"), dict) else {}
    env = runtime.get("env_vars") if isinstance(runtime.get("env_vars"), dict) else {}
    return words, {str(k): str(v) for k, v in env.items()}, None


def _apps(doc: dict, path: str) -> list:
    if doc.get("kind") == "RayService":
        import yaml

        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        text = spec.get("serveConfigV2")
        if not isinstance(text, str):
            return []
        try:
            inner = yaml.safe_load(text)
        except yaml.YAMLError as e:
            from kvplan.errors import OptionError

            raise OptionError(f"{path}: RayService spec.serveConfigV2 is not valid YAML ({e})") from None
        return inner.get("applications", []) if isinstance(inner, dict) else []
    return doc.get("applications") or []


def engines(doc: dict, path: str) -> Iterator[tuple[str, int, list[str] | None, dict, str | None]]:
    """(name, line, words, env, problem) of every LLMConfig in the document."""
    if isinstance(doc.get("model_loading_config"), dict):
        words, env, problem = llm_config_words(doc)
        yield str(doc["model_loading_config"].get("model_id", "?")), getattr(doc, "line", 0), words, env, problem
        return
    for app in _apps(doc, path):
        if not isinstance(app, dict):
            continue
        name = app.get("name", "?")
        for config in _configs_of_app(app):
            line = getattr(config, "line", getattr(app, "line", 0))
            if isinstance(config, str):
                yield f"{name}: {config}", line, None, {}, (f"llm_configs entry {config!r} is a path to another file; "
                                                            "give that file to kvplan")
                continue
            if not isinstance(config, dict):
                continue
            loading = config.get("model_loading_config") if isinstance(config.get("model_loading_config"), dict) else {}
            words, env, problem = llm_config_words(config)
            yield f"{name}: {loading.get('model_id', '?')}", line, words, env, problem
