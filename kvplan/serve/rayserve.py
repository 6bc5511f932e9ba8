"""Ray Serve LLM: ``LLMConfig`` (``ray.serve.llm``) in YAML or a Python script → ``vllm serve`` lines.

Read in four forms (the Python one, ``LLMConfig(...)`` calls read with ``ast``, at the end of this module): a Serve config file (``applications[].args.llm_configs[]``, the app built by
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
    args = a if isinstance(app, dict) and isinstance(a := app.get("args"), dict) else {}
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
    engine = v if isinstance(v := config.get("engine_kwargs"), dict) else {}
    if "model" in engine or "served_model_name" in engine:
        return None, {}, ("engine_kwargs sets model or served_model_name, which Ray refuses "
                          "(VLLMEngineConfig.get_initialization_kwargs); use model_loading_config")
    words = ["vllm", "serve", model]
    for key, value in engine.items():
        if value is None or key == "distributed_executor_backend":  # Ray sets "ray"; no effect on the KV cache
            continue
        words += _flag(key, value)
    runtime = v if isinstance(v := config.get("runtime_env"), dict) else {}
    env = v if isinstance(v := runtime.get("env_vars"), dict) else {}
    return words, {str(k): str(v) for k, v in env.items()}, None


def _apps(doc: dict, path: str) -> list:
    if doc.get("kind") == "RayService":
        import yaml

        spec = v if isinstance(v := doc.get("spec"), dict) else {}
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
            loading = v if isinstance(v := config.get("model_loading_config"), dict) else {}
            words, env, problem = llm_config_words(config)
            yield f"{name}: {loading.get('model_id', '?')}", line, words, env, problem


# --------------------------------------------------------------------------- the Python form
# Ray's docs build the app in Python: `llm_config = LLMConfig(model_loading_config=dict(...), engine_kwargs={...})`
# (ray-project/ray doc/source/llm/doc_code/serve/qwen/qwen_example.py @ 6b367cbf, multi_gpu/dp_basic_example.py @
# c52143c6, llama3_8B/test_serve_my_llama_3_1_8B_sdk.py @ f13ee68d). kvplan parses such a file with `ast` and reads
# the keyword arguments of each `LLMConfig(...)` call as literals: constants, {...}, [...], (...), dict(k=v, ...).
# Nothing in the file is imported, evaluated or run. An engine argument that is not a literal (os.environ[...]) is
# left out with a warning; a model_loading_config that is not one is a problem.

MAX_PYTHON_BYTES = 1 << 20  # a Ray Serve script is a few KiB; ast's tree of a larger file is not built
MAX_LITERAL_DEPTH = 32  # nesting of one literal (Ray's configs nest 3 deep)
MAX_PYTHON_NODES = 200_000  # syntax nodes walked in one file


class NotLiteral(Exception):
    """A value kvplan does not evaluate: ``str(e)`` is its source text (cut short)."""


def looks_like_python(text: str, path: str) -> bool:
    """A ``.py`` file, or text that imports and calls ``LLMConfig`` (standard input)."""
    import re

    return path.endswith(".py") or ("LLMConfig(" in text and re.search(r"^(from|import)\s", text, re.M) is not None)


def literal(node, depth: int = 0):
    """The value of a literal syntax node (see above); NotLiteral for anything else."""
    import ast

    if depth > MAX_LITERAL_DEPTH:
        raise NotLiteral("a literal nested deeper than kvplan reads")
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return -node.operand.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [literal(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                raise NotLiteral(_source(node))
            out[k.value] = v
        return {k: literal(v, depth + 1) for k, v in out.items()}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args \
            and all(k.arg is not None for k in node.keywords):
        return {k.arg: literal(k.value, depth + 1) for k in node.keywords}
    raise NotLiteral(_source(node))


def _source(node) -> str:
    import ast

    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):  # pragma: no cover - a node unparse cannot print
        text = type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _mapping(node, field: str, path: str, warnings: list[str], *, lenient: bool) -> dict:
    """A keyword's mapping (``dict(...)`` or ``{...}``), each entry a literal; with ``lenient`` an entry that is not
    is left out with a warning, else NotLiteral names the field."""
    import ast

    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        items = [(k.arg, k.value) for k in node.keywords]
    elif isinstance(node, ast.Dict) and len(keys := [k.value for k in node.keys if isinstance(k, ast.Constant)
                                                       and isinstance(k.value, str)]) == len(node.keys):
        items = list(zip(keys, node.values))
    else:
        raise NotLiteral(f"{field} is {_source(node)}")
    out = {}
    for key, value in items:
        if key is None:
            raise NotLiteral(f"{field} unpacks **{_source(value)}")
        try:
            out[key] = literal(value)
        except NotLiteral as e:
            if not lenient:
                raise NotLiteral(f"{field}.{key} is {e}") from None
            warnings.append(f"{path}:{value.lineno}: {field}.{key} = {e} is not a literal: left out (kvplan reads the "
                            "file, it runs nothing in it)")
    return out


def python_engines(text: str, path: str) -> list[tuple[str, int, list[str] | None, dict, str | None, tuple]]:
    """``(name, line, words, env, problem, warnings)`` of every ``LLMConfig(...)`` call in a Python file."""
    import ast

    from kvplan.errors import OptionError

    if len(text.encode("utf-8", "replace")) > MAX_PYTHON_BYTES:
        raise OptionError(f"{path}: a Python file over {MAX_PYTHON_BYTES >> 20} MiB is not read for LLMConfig calls; "
                          "give kvplan the LLMConfig as a Serve config YAML")
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as e:
        raise OptionError(f"{path}:{e.lineno or 0}: not valid Python ({e.msg}); fix the file") from None
    except (ValueError, RecursionError, MemoryError) as e:
        raise OptionError(f"{path}: not valid Python ({type(e).__name__}); fix the file") from None
    out: list[tuple[str, int, list[str] | None, dict, str | None, tuple]] = []
    for n, node in enumerate(ast.walk(tree)):
        if n > MAX_PYTHON_NODES:
            raise OptionError(f"{path}: more than {MAX_PYTHON_NODES:,} syntax nodes; kvplan reads small Serve scripts")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name != "LLMConfig":
            continue
        warnings: list[str] = []
        config: dict = {}
        problem = None
        try:
            if node.args:
                raise NotLiteral("LLMConfig takes keyword arguments only; positional ones are not read")
            for kw in node.keywords:
                if kw.arg is None:
                    raise NotLiteral(f"LLMConfig(**{_source(kw.value)}) unpacks a value kvplan does not evaluate")
                if kw.arg in ("model_loading_config", "runtime_env"):
                    config[kw.arg] = _mapping(kw.value, kw.arg, path, warnings, lenient=False)
                elif kw.arg == "engine_kwargs":
                    config[kw.arg] = _mapping(kw.value, kw.arg, path, warnings, lenient=True)
        except NotLiteral as e:
            problem = f"line {node.lineno}: {e}; write it as a literal (kvplan never runs the file)"
        model_id = _map_get(config.get("model_loading_config"), "model_id")
        label = f"LLMConfig({model_id})" if model_id else "LLMConfig"
        if problem is not None:
            out.append((label, node.lineno, None, {}, problem, tuple(warnings)))
            continue
        words, env, problem = llm_config_words(config)
        out.append((label, node.lineno, words, env, problem, tuple(warnings)))
    if not out:
        raise OptionError(f"{path}: a Python file without an LLMConfig(...) call; kvplan reads Ray Serve LLM's "
                          "LLMConfig keyword arguments from it")
    return out


def _map_get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None
