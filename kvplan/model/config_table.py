"""Answer transformers' configuration classes' attribute reads for a config never seen, without importing
transformers (about 1.2 s of a first run), for the model types where kvplan can show it gives the same answers.

``kvplan/model/config_classes.json`` (written by ``scripts/config_classes.py`` against the installed
transformers, whose version it records) holds, per configuration class: its dataclass fields with their
declared types and defaults, ``attribute_map``, its sub-configs, the names of its ``__post_init__``, RoPE
converter and ``validate_*`` methods, and the attributes kvplan's rules read. This module turns a raw
``config.json`` into the config cache's entry (``kvplan.model.config_cache``: ``attrs``, ``missing``, ``text``)
that transformers' object would have produced, by these steps, each transformers 5.25.0's own order:

1. fields take the config's value, else the default (``configuration_utils.py`` 148-163,
   ``wrap_init_to_accept_kwargs``);
2. the class's ``__post_init__`` derives what it derives: a rule below per class (``POST_INIT``), each citing
   the lines it restates; a class whose ``__post_init__`` has no rule here is never answered from the table;
3. the base ``__post_init__`` (``configuration_utils.py`` 428-522): sub-configs built from their dicts, legacy
   keys popped (``rope_scaling``, ``rope_theta``, ``torch_dtype``, generation parameters; the RoPE dicts built by
   the class's converter, restated per converter in ``ROPE``), every other key set
   as an attribute, legacy layer-type names remapped (``remap_legacy_layer_types``, lines 102-136);
4. the class's validators (``@strict``'s field type checks, ``huggingface_hub/dataclasses.py`` 460-640, and the
   ``validate_*`` methods): a rule per validator (``VALIDATORS``) that says "surely accepted"; whatever a rule
   cannot vouch for (a value of another type, a key it does not know the meaning of, a validator without a rule)
   returns None, and transformers answers as before (it then gives its own error when it rejects the config).

The table is used only when the installed transformers is the version it was generated with
(``kvplan.installed.version``, a metadata read): any other version, or ``KVPLAN_NO_CONFIG_TABLE=1``, and
transformers parses the config as before. ``tests/test_config_table.py`` checks, for every config in the
repository and seeded perturbations of each, that every answer given here is transformers' answer and that
nothing transformers rejects is answered.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config_classes.json")
_TABLE: dict | None = None
_NO = object()  # "cannot vouch": the caller falls back to transformers

# Keys whose meaning the base __post_init__ handles beyond "set as an attribute" and that the rules below do
# not restate (labels, per-layer configs, attention implementation: configuration_utils.py 449-499): a config
# that carries one is left to transformers.
UNHANDLED_KEYS = frozenset({
    "num_labels", "id2label", "label2id", "problem_type", "per_layer_config", "output_attentions",
    "attn_implementation", "experts_implementation", "_attn_implementation", "_attn_implementation_internal",
    "_experts_implementation", "_experts_implementation_internal", "partial_rotary_factor", "_rope_type_labels",
})
# Popped by the base __post_init__ and never set as attributes (configuration_utils.py 440, 474-489; rope keys
# by RotaryEmbeddingConfigMixin.convert_rope_params_to_dict, modeling_rope_utils.py 793-803). The generation
# parameters it also pops are listed in the table (``generation_keys``).
POPPED_KEYS = frozenset({"torch_dtype", "rope_scaling", "rope_theta", "name_or_path", "_commit_hash"})


def table() -> dict:
    global _TABLE
    if _TABLE is None:
        from kvplan.model.config_cache import read_object

        _TABLE = read_object(TABLE)
    return _TABLE


def usable(torch_hidden: bool) -> bool:
    """The table matches the installed transformers (else its facts may not hold), transformers reads configs
    with torch hidden (``torch_hidden``, ``hfconfig.torch_stays_hidden``) as when the table was made (with torch,
    transformers 5 also turns ``dtype`` into a torch dtype and refuses a name torch lacks, configuration_utils.py
    443-448: the exact-parameter path), and the table is not turned off."""
    if os.environ.get("KVPLAN_NO_CONFIG_TABLE") or not torch_hidden:
        return False
    from kvplan.installed import version

    t = table()
    return bool(t) and t.get("transformers") is not None and version("transformers") == t.get("transformers")


def entry_for(raw: dict, model_type: str, *, torch_hidden: bool) -> dict | None:
    """The config cache's entry for ``raw`` as the class for ``model_type`` of the table's transformers release
    answers it, or None (the table does not cover the type, or cannot vouch that transformers accepts the config)."""
    if not usable(torch_hidden):
        return None
    t = table()
    cls = t.get("types", {}).get(model_type)
    if cls is None:
        return None
    kwargs = {k: v for k, v in raw.items() if k not in ("auto_map", "transformers_version", "_name_or_path")}
    try:
        done = _resolve(cls, kwargs, t)
    except Exception:  # a value of a shape no rule expected: transformers decides
        done = None
    if done is None:
        return None
    entry = {"version": 1, "class": True, "attrs": {}, "missing": [], "errors": [], "text": None}
    _answers(done, entry, t)
    text = done.text
    entry["text"] = "self" if text is done else _answers(text, {"attrs": {}, "missing": [], "errors": [],
                                                                "text": "self"}, t)
    return entry


class _Resolved:
    """One configuration object as the table rebuilds it: its class's table record and its attribute values."""

    def __init__(self, name: str, record: dict, values: dict):
        self.name = name
        self.record = record
        self.values = values
        self.text: _Resolved = self


def _answers(done: _Resolved, entry: dict, t: dict) -> dict:
    aliases = done.record.get("attribute_map", {})
    for key in t.get("reads", ()):
        target = aliases.get(key, key)
        if target in done.values:
            value = done.values[target]
        elif target in done.record.get("class_values", {}):
            value = done.record["class_values"][target]
        elif target in done.record.get("class_names", ()):
            continue  # a method or property: left to transformers
        else:
            entry["missing"].append(key)
            continue
        if isinstance(value, _Resolved):
            continue  # a sub-config object: served by transformers, never recorded
        entry["attrs"][key] = json.loads(json.dumps(value))
    return entry


def _resolve(name: str, kw: dict, t: dict) -> _Resolved | None:
    """What transformers' class ``name`` makes of the config ``kw``, in its order, or None where a step is not
    vouched for (transformers answers then)."""
    record = t.get("classes", {}).get(name)
    if record is None or record.get("status") != "table":
        return None
    fields = record["fields"]
    if any(k in UNHANDLED_KEYS for k in kw) or any(k in record.get("attribute_map", {}) for k in kw):
        return None  # an alias key is set after __post_init__'s derivations: left to transformers
    values = _field_values(kw, fields)
    if values is None:
        return None
    post_init = POST_INIT.get(record["post_init"])  # 2. the class's own derivations
    if post_init is None or post_init(values, kw) is _NO:
        return None
    if not (_sub_configs(values, record, t) and _dtype_and_rope(values, kw, record, t)
            and _other_keys(values, kw, record, t)):
        return None
    done = _Resolved(name, record, values)
    if not all(VALIDATORS.get(v) is not None and VALIDATORS[v](done, t) for v in record["validators"]):
        return None  # 4. the validators
    return _with_text_config(done, values)


def _field_values(kw: dict, fields: dict) -> dict[str, Any] | None:
    """1. Each field: the config's value (type-checked as @strict checks it at assignment), else the default."""
    values: dict[str, Any] = {}
    for field, spec in fields.items():
        if field in kw:
            if not (accepts(kw[field], spec["type"]) and _field_validators_accept(kw[field], spec)):
                return None
            values[field] = kw[field]
        elif "default" in spec:
            values[field] = json.loads(json.dumps(spec["default"]))
        else:
            return None  # a required field, or a default that is not plain data
    return values


def _sub_configs(values: dict, record: dict, t: dict) -> bool:
    """3a. The base __post_init__'s sub-configs, each resolved by its class (or its dict's model type)."""
    for key, spec in record.get("sub_configs", {}).items():
        sub = values.get(key)
        if sub is None and spec.get("optional"):
            continue
        if sub is None:
            sub = {}
        if not isinstance(sub, dict):
            return False
        sub_name = spec.get("class")
        if sub_name is None:  # resolved by model type (AutoConfig), the dict's own first
            sub_name = t.get("types", {}).get(sub.get("model_type", spec.get("model_type")))
        done = _resolve(sub_name, sub, t) if sub_name else None
        if done is None:
            return False
        values[key] = done
    return True


def _dtype_and_rope(values: dict, kw: dict, record: dict, t: dict) -> bool:
    """3b. ``torch_dtype`` read as ``dtype``; the RoPE keys converted by the class's converter."""
    fields = record["fields"]
    torch_dtype = kw.get("torch_dtype")
    if torch_dtype is not None and values.get("dtype") is None:
        if "dtype" not in fields or not accepts(torch_dtype, fields["dtype"]["type"]):
            return False
        values["dtype"] = torch_dtype
    rope = ROPE.get(record.get("rope_converter", ""))
    if record.get("has_rope_parameters"):
        return rope is not None and rope(values, kw, record, t) is not _NO
    # a class without a rope_parameters field converts these only in part (configuration_utils.py 472-479),
    # sets the rest as attributes, then validates them (validate_rope reads the attribute): left to transformers
    return not any(k in kw for k in ("rope_scaling", "rope_theta", "rope_parameters"))


def _other_keys(values: dict, kw: dict, record: dict, t: dict) -> bool:
    """3c. The keys that are not fields, set as attributes (popped ones dropped), and the legacy layer types."""
    fields = record["fields"]
    popped = POPPED_KEYS | set(t.get("generation_keys", ())) | ROPE_POPPED.get(record.get("rope_converter", ""), set())
    properties = set(record.get("properties", ()))
    for key, value in kw.items():
        if key in fields or key in popped:
            continue
        if key in properties:
            return False  # setting it runs the property's setter, or fails
        values[key] = value
    for key in ("layer_types", "mtp_layer_types"):
        if values.get(key) is not None:
            if not isinstance(values[key], list) or not all(isinstance(v, str) for v in values[key]):
                return False
            remap = t.get("legacy_layer_types", {})
            values[key] = [remap.get(v, v) for v in values[key]]
    return True


def _with_text_config(done: _Resolved, values: dict) -> _Resolved | None:
    """get_text_config() (configuration_utils.py 1525-1570, both ends searched as vLLM calls it): the one set
    attribute among these names, else the config itself; two set: transformers refuses."""
    named = [n for n in ("text_encoder", "decoder", "generator", "text_config") if values.get(n) is not None]
    if len(named) > 1 or (named and not isinstance(values[named[0]], _Resolved)):
        return None
    if named:
        done.text = values[named[0]]
    return done


# ---- @strict's type check, restated for JSON values (huggingface_hub/dataclasses.py 460-640) ----

def accepts(value: Any, spec: Any) -> bool:
    """True when @strict surely accepts ``value`` for a field declared ``spec`` (the generator's encoding of the
    annotation); False when it rejects it or the encoding cannot tell (an unknown class: never vouched for)."""
    if spec == "any":
        return True
    if spec == "null":
        return value is None
    if spec == "int":  # int, never bool (line 622)
        return isinstance(value, int) and not isinstance(value, bool)
    if spec == "float":  # isinstance(value, float): an integer is not a float (line 627)
        return isinstance(value, float)
    if spec == "bool":
        return isinstance(value, bool)
    if spec == "str":
        return isinstance(value, str)
    if not isinstance(spec, dict):
        return False
    if "any_of" in spec:  # a union: any member (lines 497-509)
        return any(accepts(value, s) for s in spec["any_of"])
    if "list" in spec:  # lines 524-539
        return isinstance(value, list) and all(accepts(v, spec["list"]) for v in value)
    if "dict" in spec:  # lines 542-557; JSON keys are strings
        if not isinstance(value, dict):
            return False
        if spec["dict"] is None:
            return True
        key_spec, value_spec = spec["dict"]
        return all(accepts(k, key_spec) and accepts(v, value_spec) for k, v in value.items())
    if "literal" in spec:  # lines 512-521: a bool matches a bool, an int an int
        allowed = spec["literal"]
        if isinstance(value, bool):
            return any(isinstance(a, bool) and a == value for a in allowed)
        if isinstance(value, int):
            return any(isinstance(a, int) and not isinstance(a, bool) and a == value for a in allowed)
        return value in allowed
    return False


def _field_validators_accept(value: Any, spec: dict) -> bool:
    """A field's own validators beyond its type; only ``interval`` (transformers/utils/type_validators.py
    162-207: min <= value <= max, either bound open when excluded) is restated."""
    for v in spec.get("validators", ()):
        if v.get("kind") != "interval" or not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        lo, hi = v["min"], v["max"]
        lo_ok = (lo < value) if v["exclude_min"] else (lo <= value)
        hi_ok = (value < hi) if v["exclude_max"] else (value <= hi)
        if not (lo_ok and hi_ok):
            return False
    return True


# ---- each class's __post_init__ (what it derives), restated ----

def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kv_heads_default(values: dict) -> Any:
    """``num_key_value_heads`` null means one KV head per attention head."""
    if values.get("num_key_value_heads") is None:
        values["num_key_value_heads"] = values["num_attention_heads"]
    return None


def _head_dim_default(values: dict) -> Any:
    """``head_dim`` null means ``hidden_size // num_attention_heads`` (a zero head count: transformers fails)."""
    if values.get("head_dim") is None:
        if not (_is_count(values["hidden_size"]) and _is_count(values["num_attention_heads"])) \
                or values["num_attention_heads"] == 0:
            return _NO
        values["head_dim"] = values["hidden_size"] // values["num_attention_heads"]
    return None


def _kv_heads_only(values: dict, kw: dict) -> Any:
    """MixtralConfig (models/mixtral/configuration_mixtral.py 88-92): num_key_value_heads when null."""
    return _kv_heads_default(values)


def _alternating(values: dict) -> Any:
    """Without ``layer_types``, odd layers (counting from 1) slide and even ones attend in full."""
    if values.get("layer_types") is None:
        n = values["num_hidden_layers"]
        if not _is_count(n):
            return _NO
        values["layer_types"] = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
    return None


def _gemma2(values: dict, kw: dict) -> Any:
    """Gemma2Config (models/gemma2/configuration_gemma2.py 93-99): alternating layer types when unset."""
    return _alternating(values)


# GptOssConfig's RoPE when the config sets none (models/gpt_oss/configuration_gpt_oss.py 89-97)
GPT_OSS_ROPE = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                "original_max_position_embeddings": 4096}


def _gpt_oss(values: dict, kw: dict) -> Any:
    """GptOssConfig (models/gpt_oss/configuration_gpt_oss.py 79-98): num_key_value_heads and head_dim when null,
    alternating layer types when unset, YaRN RoPE (``GPT_OSS_ROPE``) when rope_parameters is null."""
    _kv_heads_default(values)
    if _head_dim_default(values) is _NO or _alternating(values) is _NO:
        return _NO
    if values.get("rope_parameters") is None:
        values["rope_parameters"] = dict(GPT_OSS_ROPE)
    return None


def _nothing(values: dict, kw: dict) -> Any:
    """``PreTrainedConfig.__post_init__`` alone: the class derives nothing of its own."""
    return None


def _llama(values: dict, kw: dict) -> Any:
    """LlamaConfig (models/llama/configuration_llama.py 85-91), MistralConfig (models/mistral/configuration_mistral.py
    82-91, its layer_types warning aside): head_dim and num_key_value_heads when null."""
    if _head_dim_default(values) is _NO:
        return _NO
    return _kv_heads_default(values)


def _qwen(values: dict, kw: dict) -> Any:
    """Qwen2Config (models/qwen2/configuration_qwen2.py 82-95), Qwen3Config (models/qwen3/configuration_qwen3.py
    85-97): ``sliding_window`` becomes null unless ``use_sliding_window``; num_key_value_heads when null; without
    ``layer_types``, layer i slides when the window is set and i >= ``max_window_layers``, else full attention."""
    if not values["use_sliding_window"]:
        values["sliding_window"] = None
    _kv_heads_default(values)
    if values.get("layer_types") is None:
        n, window, first = values["num_hidden_layers"], values["sliding_window"], values["max_window_layers"]
        if not _is_count(n) or (window is not None and not _is_count(first)):
            return _NO
        values["layer_types"] = [
            "sliding_attention" if window is not None and i >= first else "full_attention" for i in range(n)
        ]
    return None


def _gemma3_text(values: dict, kw: dict) -> Any:
    """Gemma3TextConfig (models/gemma3/configuration_gemma3.py 100-113): with ``use_bidirectional_attention`` the
    window becomes ``sliding_window // 2 + 1``; without ``layer_types``, layer i is full attention when
    ``(i + 1)`` is a multiple of ``sliding_window_pattern`` (a key read from the config, default 6), else sliding."""
    if values["use_bidirectional_attention"]:
        if not _is_count(values["sliding_window"]):
            return _NO
        values["sliding_window"] = values["sliding_window"] // 2 + 1
    pattern = kw.get("sliding_window_pattern", 6)
    if values.get("layer_types") is None:
        n = values["num_hidden_layers"]
        if not _is_count(pattern) or pattern == 0 or not _is_count(n):
            return _NO
        values["layer_types"] = [
            "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)
        ]
    return None


POST_INIT: dict[str, Callable[[dict, dict], Any]] = {
    "PreTrainedConfig.__post_init__": _nothing,
    "LlamaConfig.__post_init__": _llama,
    "MistralConfig.__post_init__": _llama,
    "Qwen2Config.__post_init__": _qwen,
    "Qwen3Config.__post_init__": _qwen,
    "Gemma3TextConfig.__post_init__": _gemma3_text,
    "MixtralConfig.__post_init__": _kv_heads_only,
    "Gemma2Config.__post_init__": _gemma2,
    "GptOssConfig.__post_init__": _gpt_oss,
}


# ---- RoPE: what convert_rope_params_to_dict builds and validate_rope checks ----

def _rope_dict_accepted(d: Any, record: dict, t: dict) -> bool:
    """One (per layer type, or flat) RoPE dict ``validate_rope`` surely accepts (modeling_rope_utils.py 885-933,
    1150-1174): its type has a validation function whose required keys, beside those the standardisation adds
    (``rope_type``, ``rope_theta``, lines 823-884), the dict holds; every other
    value a positive number, so no comparison or division in the validation fails."""
    if d is None:
        return True
    if not isinstance(d, dict):
        return False
    rope_type = d.get("rope_type", d.get("type", "default"))
    if rope_type not in VOUCHED_ROPE_TYPES or rope_type not in t.get("rope_required_keys", {}):
        return False
    if rope_type == "default" and record.get("default_rope_type", "default") != "default":
        return False
    # original_max_position_embeddings, when absent, would come from max_position_embeddings (line 857), which
    # YaRN then divides by: not vouched for, the dict must hold it
    added = {"rope_type", "rope_theta"}
    if not set(t["rope_required_keys"][rope_type]) - added <= set(d):
        return False
    for key, value in d.items():
        if key in ("rope_type", "type"):
            if not isinstance(value, str):
                return False
        elif key == "truncate":  # YaRN's flag, never compared (lines 979-1031)
            if not isinstance(value, bool):
                return False
        elif not _is_positive(value):  # YaRN divides by original_max_position_embeddings (line 1021)
            return False
    return True


# The RoPE types whose validation (modeling_rope_utils.py 936-1031, 1076-1147) only warns beyond the required keys,
# given positive numbers: longrope reads head_dim, which may be null (line 1043), and the others are left to
# transformers.
VOUCHED_ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_positive(value: Any) -> bool:
    return _is_number(value) and 0 < value < float("inf")


def _rope_flat(values: dict, kw: dict, record: dict, t: dict) -> Any:
    """RotaryEmbeddingConfigMixin.convert_rope_params_to_dict (modeling_rope_utils.py 792-821): ``rope_scaling`` if
    set, else ``rope_parameters``; only a flat dict (not nested under layer types) is vouched for."""
    if "rope_theta" in kw and not _is_number(kw["rope_theta"]):
        return _NO
    params = kw.get("rope_scaling") or values.get("rope_parameters")
    if not params:
        return None
    if not isinstance(params, dict):
        return _NO
    if any(k in t["allowed_attn_layer_types"] for k in params):
        return _NO  # nested by layer type: which keys count as nested depends on layer_types when it runs
    return None if _rope_dict_accepted(params, record, t) else _NO


def _rope_gemma3(values: dict, kw: dict, record: dict, t: dict) -> Any:
    """Gemma3TextConfig.convert_rope_params_to_dict (models/gemma3/configuration_gemma3.py 130-157): without
    ``rope_parameters``, one dict per layer type, ``rope_scaling`` merged into the full-attention one (a config that
    also sets ``rope_parameters`` is left to transformers)."""
    if values.get("rope_parameters") is not None:
        return _NO
    if not {"sliding_attention", "full_attention"} <= set(values.get("layer_types") or ()):
        return _NO  # the two dicts count as nested only under layer types the config declares (lines 781-790)
    if any(k in kw and not _is_number(kw[k]) for k in ("rope_theta", "rope_local_base_freq")):
        return _NO
    scaling = kw.get("rope_scaling")
    if scaling is not None and not isinstance(scaling, dict):
        return _NO
    full = {"rope_type": "default", **(scaling or {})}
    ok = _rope_dict_accepted(full, record, t) and _rope_dict_accepted({"rope_type": "default"}, record, t)
    return None if ok else _NO


# Keys a class's RoPE converter pops beside POPPED_KEYS (never attributes): Gemma 3's local base frequency
# (configuration_gemma3.py 153-155).
ROPE_POPPED = {"Gemma3TextConfig.convert_rope_params_to_dict": frozenset({"rope_local_base_freq"})}
ROPE: dict[str, Callable[[dict, dict, dict, dict], Any]] = {
    "RotaryEmbeddingConfigMixin.convert_rope_params_to_dict": _rope_flat,
    "Gemma3TextConfig.convert_rope_params_to_dict": _rope_gemma3,
}


# ---- validate_* methods ----

def _rotary_even(done: _Resolved, t: dict) -> bool:
    """validate_rope's even-dimension check (modeling_rope_utils.py 916-933): a fully rotated head_dim above 4
    must be even (partial rotary factors are left to transformers, ``UNHANDLED_KEYS``)."""
    if not done.record.get("has_rope_parameters"):
        return True
    head_dim = done.values.get("head_dim")
    if head_dim is None:
        return True
    return _is_count(head_dim) and not (head_dim > 4 and head_dim % 2)


def _embed_dim(done: _Resolved, t: dict) -> bool:
    """PreTrainedConfig.validate_architecture (configuration_utils.py 676-691): head_dim * num_heads must equal
    embed_dim when all three are attributes."""
    v = done.values
    if all(k in v for k in ("head_dim", "num_heads", "embed_dim")):
        try:
            return v["head_dim"] * v["num_heads"] == v["embed_dim"]
        except TypeError:
            return False
    return True


def _heads_divide_hidden(done: _Resolved, t: dict) -> bool:
    """The validate_architecture of LlamaConfig (configuration_llama.py 93-99), Gemma2Config (configuration_gemma2.py
    101-107) and Gemma3TextConfig (configuration_gemma3.py 115-121): hidden_size a multiple of num_attention_heads."""
    v = done.values
    heads: Any = v.get("num_attention_heads")
    hidden: Any = v.get("hidden_size")
    if not (_is_count(heads) and _is_count(hidden)) or heads == 0:
        return False
    return bool(hidden % heads == 0)


def _layer_types(done: _Resolved, t: dict) -> bool:
    """PreTrainedConfig.validate_layer_type (configuration_utils.py 709-724): layer_types (then mlp_layer_types)
    from the allowed names, one per hidden layer; the check stops at the first that is unset."""
    v = done.values
    for key, allowed in (("layer_types", t["allowed_attn_layer_types"]),
                         ("mlp_layer_types", t["allowed_mlp_layer_types"])):
        layers = v.get(key)
        if layers is None or "num_hidden_layers" not in v:
            return True
        if not isinstance(layers, list) or not all(isinstance(x, str) for x in layers):
            return False
        if not all(x in allowed for x in layers):
            return False
        if v["num_hidden_layers"] is not None and v["num_hidden_layers"] != len(layers):
            return False
    return True


def _warns_only(done: _Resolved, t: dict) -> bool:
    """validate_token_ids (configuration_utils.py 693-707) only logs; validate_output_attentions (669-674) needs
    ``output_attentions``, which the table leaves to transformers (``UNHANDLED_KEYS``)."""
    return True


VALIDATORS: dict[str, Callable[[_Resolved, dict], bool]] = {
    "PreTrainedConfig.validate_architecture": _embed_dim,
    "LlamaConfig.validate_architecture": _heads_divide_hidden,
    "Gemma3TextConfig.validate_architecture": _heads_divide_hidden,
    "Gemma2Config.validate_architecture": _heads_divide_hidden,
    "PreTrainedConfig.validate_layer_type": _layer_types,
    "PreTrainedConfig.validate_output_attentions": _warns_only,
    "PreTrainedConfig.validate_token_ids": _warns_only,
    "RotaryEmbeddingConfigMixin.validate_rope": _rotary_even,
}
