"""See a ``config.json`` the way vLLM sees it (``kvplan.model.source`` reads it).

vLLM builds its layers from a transformers configuration object, not from the raw
JSON: the class fills defaults (``MistralConfig.sliding_window = 4096``) and derives
fields (``Gemma2Config.layer_types``, ``Qwen3NextConfig.layer_types`` from
``full_attention_interval``, ``Llama4TextConfig.no_rope_layers``). ``HFView`` gives
the family rules that view: the transformers object's attribute when it has one,
else the raw key, else a documented default.

transformers is imported lazily, here only for its configuration classes, and only when
a config is parsed (the meta-device count, ``kvplan.budget.meta``, imports its model
classes). It is never asked for remote code: the class comes from ``CONFIG_MAPPING`` by
``model_type``; a model type transformers does not know is read raw (with the
aliases vLLM registers itself, ``_CONFIG_REGISTRY``: ``kimi_k2`` and
``deepseek_v32`` → ``DeepseekV3Config``).
"""

from __future__ import annotations

import builtins
import copy
import json
import math
import os
import re
import warnings
from contextlib import contextmanager
from typing import Any

from kvplan.errors import ConfigError

_MISSING = object()

# vLLM's own config registry (vllm/transformers_utils/config.py ``_CONFIG_REGISTRY``)
# maps these model types to DeepseekV3Config before transformers is asked.
MODEL_TYPE_ALIASES = {"kimi_k2": "deepseek_v3", "deepseek_v32": "deepseek_v3"}
# Model types vLLM reads with its own configuration class (``_CONFIG_REGISTRY``) where transformers' class of the
# same name refuses what vLLM takes: kvplan reads them raw and the family rule applies vLLM's class's defaults.
# ``beam``: vLLM 0.34.0's BeamConfig (transformers_utils/configs/beam.py lines 19-92) takes ``head_dim`` null
# (hidden_size // num_attention_heads); transformers 5.25's BeamConfig rejects it. ``hy_v4``: vLLM's HYV4Config
# (transformers_utils/configs/hy_v4.py lines 114-160) keeps an absent ``layer_types`` null (every layer dense
# MLA); transformers 5.25's HYV4Config fills it with ``indexed_attention`` (every layer sparse).
VLLM_OWN_CONFIGS = frozenset({"beam", "hy_v4"})


class HFView:
    """One (text) config as vLLM reads it: transformers attribute, else raw key, else default.

    ``prefix`` names nested configs in error messages (``text_config.num_hidden_layers``).
    """

    def __init__(self, raw: dict, obj: Any = None, *, path: str, prefix: str = ""):
        self.raw = raw
        self.obj = obj
        self.path = path
        self.prefix = prefix

    def field(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def get(self, key: str, default: Any = None) -> Any:
        """The value vLLM's ``getattr(config, key, default)`` would see."""
        if self.obj is not None:
            try:
                if hasattr(self.obj, key):
                    value = getattr(self.obj, key)
                    if value is not None or key in self.raw:
                        return value
            except Exception:
                # transformers >= 5.2x refuses global reads of per-layer attributes (Gemma 4
                # head_dim); vLLM reads the global value, which is the raw key.
                pass
        if key in self.raw:
            return self.raw[key]
        return default

    def has(self, key: str) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    # ---- typed reads: each failure is a ConfigError naming the file and the field ----

    def int(self, key: str, default: Any = _MISSING, *, minimum: int = 1, fix: str | None = None) -> int:
        value = self.get(key, _MISSING)
        if value is _MISSING or value is None:
            if default is _MISSING:
                raise ConfigError(
                    self.path, self.field(key), "required key is missing and has no default",
                    fix or f"add '{key}' to the config",
                )
            return default
        return self.check_int(key, value, minimum=minimum)

    # builtins.int: in the class body, ``int`` is the method above
    def opt_int(self, key: str, *, minimum: builtins.int = 1) -> builtins.int | None:
        value = self.get(key, None)
        if value is None:
            return None
        return self.check_int(key, value, minimum=minimum)

    def check_int(self, key: str, value: Any, *, minimum: builtins.int = 1) -> builtins.int:
        if isinstance(value, float) and math.isfinite(value) and value == int(value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(
                self.path, self.field(key), f"expected an integer, got {json.dumps(value)}",
                f"write '{key}' as a whole number",
            )
        if value < minimum:
            what = "positive" if minimum == 1 else f">= {minimum}"
            raise ConfigError(self.path, self.field(key), f"must be {what}, got {value}", f"fix '{key}'")
        return value

    def str_list(self, key: str) -> list[str] | None:
        value = self.get(key, None)
        if value is None:
            return None
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ConfigError(self.path, self.field(key), "expected a list of strings", f"fix '{key}'")
        return list(value)


# Whether transformers was first loaded with torch hidden ("hidden") or with torch
# present ("visible"); fixed at the first load so transformers always sees the same world.
_TORCH_MODE: str | None = None


def torch_stays_hidden() -> bool:
    """Whether transformers reads configs with torch hidden (``_torch_hidden``): the choice made at its first
    load, or the one that load would make now (neither torch nor transformers imported yet)."""
    import sys

    if _TORCH_MODE is not None:
        return _TORCH_MODE == "hidden"
    return "torch" not in sys.modules and "transformers" not in sys.modules


class _torch_hidden:
    """Read configs through transformers without importing torch.

    transformers 5 imports torch from ``configuration_utils`` (RoPE helpers) whenever
    torch is installed, which costs seconds and breaks the promise that reading a
    config never loads torch. While this context is active ``sys.modules['torch']``
    is None, so ``importlib.util.find_spec('torch')`` reports it absent and
    transformers takes its torch-free path. The choice is made once, at the first
    load: if transformers was loaded without torch, torch stays hidden from it on
    every later parse even after something else imported torch (its lazily loaded
    config modules would otherwise mix the two worlds); if torch was already
    imported first (the exact-parameter path), nothing is hidden."""

    def __enter__(self):
        import sys

        global _TORCH_MODE
        if _TORCH_MODE is None:
            _TORCH_MODE = "hidden" if torch_stays_hidden() else "visible"
        self.active = _TORCH_MODE == "hidden"
        if self.active:
            self.saved = sys.modules.get("torch", _MISSING)
            sys.modules["torch"] = None  # type: ignore[assignment]
            self._clear_cache()
        return self

    def __exit__(self, *exc):
        import sys

        if self.active:
            if self.saved is _MISSING:
                sys.modules.pop("torch", None)
            else:
                sys.modules["torch"] = self.saved
            self._clear_cache()  # a deliberate torch user elsewhere sees torch again
        return False

    @staticmethod
    def _clear_cache() -> None:
        import sys

        utils = sys.modules.get("transformers.utils.import_utils")
        if utils is not None and hasattr(utils.is_torch_available, "cache_clear"):
            utils.is_torch_available.cache_clear()


# Size fields kvplan reads: checked before transformers sees them, so a bad value gets a
# one-line error naming the field (transformers' own validation messages span lines).
POSITIVE_INT_KEYS = (
    "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
    "global_head_dim", "num_global_key_value_heads", "kv_lora_rank", "qk_rope_head_dim", "index_head_dim",
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel",
    "mamba_d_state", "mamba_d_conv", "mamba_expand", "attn_layer_period", "attention_chunk_size",
    "swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim", "v_head_dim", "decoder_layers",
    "decoder_attention_heads", "d_model", "full_attention_interval", "sliding_window_pattern",
)
# layer_types values transformers accepts in the families kvplan models; each family then
# narrows this to the kinds it builds.
KNOWN_LAYER_TYPES = frozenset({
    "full_attention", "sliding_attention", "chunked_attention", "linear_attention", "indexed_attention",
    "compressed_sparse_attention", "heavily_compressed_attention", "mamba", "attention", "moe", "mlp",
    "hybrid", "conv",
})
NON_NEGATIVE_INT_KEYS = (
    "sliding_window", "sliding_window_size", "num_kv_shared_layers", "num_nextn_predict_layers",
    "mtp_num_hidden_layers", "max_window_layers", "attn_layer_offset",
)


def validate_sizes(raw: dict, path: str) -> None:
    """Type and sign of every size field present (top level and ``text_config``)."""
    views = [HFView(raw, None, path=path)]
    if isinstance(raw.get("text_config"), dict):
        views.append(HFView(raw["text_config"], None, path=path, prefix="text_config."))
    for v in views:
        for key in POSITIVE_INT_KEYS:
            if v.raw.get(key) is not None:
                v.check_int(key, v.raw[key], minimum=1)
        for key in NON_NEGATIVE_INT_KEYS:
            if v.raw.get(key) is not None:
                v.check_int(key, v.raw[key], minimum=0)
        lt = v.raw.get("layer_types")
        if lt is not None:
            if not isinstance(lt, list) or not all(isinstance(t, str) for t in lt):
                raise ConfigError(path, v.field("layer_types"), "expected a list of strings", "fix 'layer_types'")
            for i, t in enumerate(lt):
                if t not in KNOWN_LAYER_TYPES:
                    raise ConfigError(path, v.field("layer_types"), f"unknown value {t!r} at index {i}",
                                      f"use one of {', '.join(sorted(KNOWN_LAYER_TYPES))}")
        pattern = v.raw.get("hybrid_override_pattern")
        if pattern is not None:
            bad = sorted(set(pattern) - set("M*-E")) if isinstance(pattern, str) else ["(not a string)"]
            if bad:
                raise ConfigError(path, v.field("hybrid_override_pattern"), f"unknown block type {bad[0]!r}",
                                  "use M (Mamba2), * (attention), - (MLP), E (MoE), one per layer")


def config_class(model_type: str, *, vllm_aliases: bool = True):
    """transformers' configuration class for ``model_type``, or None when it has none.

    ``vllm_aliases``: read the model types vLLM maps itself first (``MODEL_TYPE_ALIASES``),
    as vLLM does; without, transformers' own class when it has one (DeepseekV32Config builds
    the indexer that the meta-device count must see)."""
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # no "PyTorch was not found" line
    try:
        # lazy: kvplan's only import of transformers' configuration classes (the model
        # classes of the meta-device count are kvplan.budget.meta's)
        from transformers import CONFIG_MAPPING
    except ImportError:  # pragma: no cover - transformers is a dependency
        return None
    if vllm_aliases:
        model_type = MODEL_TYPE_ALIASES.get(model_type, model_type)
    try:
        return CONFIG_MAPPING[model_type]
    except KeyError:
        return None


def without_remote_code(raw: dict) -> dict:
    """The keys we hand to the class: never ``auto_map`` (remote code), never the name fields."""
    return {k: v for k, v in raw.items() if k not in ("auto_map", "transformers_version", "_name_or_path")}


@contextmanager
def quiet_transformers():
    """transformers' logger at ERROR and Python warnings off, for the duration."""
    import logging  # here: only a config that transformers parses needs it

    tf_logger = logging.getLogger("transformers")
    old_level = tf_logger.level
    tf_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        tf_logger.setLevel(old_level)


def build_config_object(raw: dict, path: str) -> Any:
    """``CONFIG_MAPPING[model_type](**raw)``, quietly; None when transformers does not know the type or vLLM reads it
    with its own class (``VLLM_OWN_CONFIGS``).

    The object comes wrapped in a ``RecordedConfig`` that remembers its answers on disk
    (``config_cache``): the next run on the same config reads them without transformers. A config with no
    cache entry and no shipped view is answered from the configuration classes' table (``config_table``) when
    it covers the model type and vouches for the config; transformers then loads only for a read the table
    does not answer."""
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        return None
    validate_sizes(raw, path)
    if model_type in VLLM_OWN_CONFIGS:
        return None
    from kvplan.model import config_cache

    def real() -> Any:
        with _torch_hidden():
            return _build_config_object(raw, path, model_type)

    cache_path = config_cache.cache_file(raw)
    entry = config_cache.load(cache_path)
    if entry is None:
        entry = config_cache.shipped_entry(raw)  # a bundled config: its shipped resolved view
        if entry is None:  # a config never seen: transformers' answers from its classes' table, where proven
            from kvplan.model import config_table

            entry = config_table.entry_for(raw, MODEL_TYPE_ALIASES.get(model_type, model_type),
                                           torch_hidden=torch_stays_hidden())
        if entry is not None:
            config_cache.mark_dirty(cache_path, entry)
    if entry is not None:
        return config_cache.RecordedConfig(entry, entry, real, cache_path) if entry["class"] else None
    obj = real()
    if cache_path is None:
        return obj
    entry = config_cache.new_entry()
    entry["class"] = obj is not None
    config_cache.mark_dirty(cache_path, entry)
    if obj is None:
        return None
    rec = config_cache.RecordedConfig(entry, entry, lambda: obj, cache_path)
    return rec


def _build_config_object(raw: dict, path: str, model_type: str) -> Any:
    cls = config_class(model_type)
    if cls is None:
        return None
    try:
        with quiet_transformers():
            # a copy: transformers 5 writes its rope defaults into the nested rope_scaling dict it is
            # given, and the caller's config (hashed for the config cache, read by the budget) stays as read
            obj = cls(**copy.deepcopy(without_remote_code(raw)))
    except Exception as e:  # strict dataclass validation, bad shapes, ...
        text = " ".join(str(e).split()) or e.__class__.__name__
        m = re.search(r"field '([^']+)'", text)
        raise ConfigError(
            path, m.group(1) if m else None, f"transformers' {cls.__name__} rejects it ({text[:300]})",
            "fix the value it names",
        ) from None
    return obj


def text_view(raw: dict, obj: Any, path: str) -> HFView:
    """The text (decoder) config: ``text_config`` of a multimodal config, else the config itself.

    vLLM's ``get_hf_text_config`` returns ``config.get_text_config()``.
    """
    sub = raw.get("text_config")
    if sub is not None and not isinstance(sub, dict):
        raise ConfigError(path, "text_config", "expected a JSON object", "fix 'text_config'")
    text_obj = None
    if obj is not None:
        try:
            text_obj = obj.get_text_config()
        except Exception:
            text_obj = obj if sub is None else None
    if sub is not None:
        return HFView(sub, text_obj, path=path, prefix="text_config.")
    return HFView(raw, text_obj, path=path)


def shared_indexer_layers(view: HFView, num_hidden_layers: int) -> frozenset[int]:
    """The decoder layers of a sparse-MLA (DSA) model that own no indexer and reuse the top-k of
    the closest preceding indexer layer (IndexCache), as vLLM 0.34.0 decides it
    (``vllm/model_executor/models/utils.py`` ``compute_skip_topk_layers``, called from
    ``vllm/models/deepseek_v32/attention.py`` ``DeepseekV32Attention.__init__`` on CUDA):
    ``indexer_types`` (one ``"full"``/``"shared"`` per layer) when the config has it, else
    ``index_topk_pattern`` (``"S"`` marks a shared layer), else ``index_topk_freq`` (default 1)
    with ``index_skip_topk_offset`` (default 2): layer ``i`` shares when
    ``max(i - offset + 1, 0) % freq != 0``. MTP layers (``i >= num_hidden_layers``) always own one."""
    if view.get("index_topk", None) is None:
        return frozenset()
    types = view.get("indexer_types", None)
    if types is not None:
        if not isinstance(types, (list, tuple)) or len(types) != num_hidden_layers:
            n = len(types) if isinstance(types, (list, tuple)) else "not a list"
            raise ConfigError(view.path, view.field("indexer_types"),
                              f"vLLM needs one entry per hidden layer ({num_hidden_layers}), got {n}",
                              "give one 'full' or 'shared' per layer, or remove it")
        bad = sorted({str(t) for t in types} - {"full", "shared"})
        if bad:
            raise ConfigError(view.path, view.field("indexer_types"), f"unknown indexer type {bad[0]!r}",
                              "use 'full' or 'shared'")
        return frozenset(i for i, t in enumerate(types) if t == "shared")
    freq = view.get("index_topk_freq", 1)
    if isinstance(freq, bool) or not isinstance(freq, int) or freq <= 0:
        raise ConfigError(view.path, view.field("index_topk_freq"), f"must be a positive integer, got {freq!r}",
                          "set a positive integer (1: every layer owns an indexer)")
    pattern = view.get("index_topk_pattern", None)
    offset = view.get("index_skip_topk_offset", 2)
    if pattern is None:
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ConfigError(view.path, view.field("index_skip_topk_offset"), f"expected an integer, got {offset!r}",
                              "set an integer (vLLM's default is 2)")
        return frozenset(i for i in range(num_hidden_layers) if max(i - offset + 1, 0) % freq != 0)
    if not isinstance(pattern, (str, list, tuple)):
        raise ConfigError(view.path, view.field("index_topk_pattern"), "expected a string of F/S, one per layer",
                          "fix 'index_topk_pattern'")
    return frozenset(i for i in range(min(num_hidden_layers, len(pattern))) if pattern[i] == "S")
