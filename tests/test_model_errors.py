"""Every class of bad input → one KvplanError line that names the file and the field."""

from __future__ import annotations

import json

import pytest

from kvplan.errors import ConfigError, ModelNotFoundError, OptionError
from kvplan.model import ServingOptions, build_model_layout, load_model_info

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2,
         "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2}


def write(tmp_path, data) -> str:
    p = tmp_path / "config.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(p)


def config_error(path: str, **opts) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        build_model_layout(path, **opts)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(path)
    return e.value


def test_missing_file(tmp_path):
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        build_model_layout(str(tmp_path / "nope" / "config.json"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="config.json does not exist"):
        build_model_layout(str(tmp_path / "empty"))


def test_invalid_json_has_line_and_column(tmp_path):
    e = config_error(write(tmp_path, '{\n  "model_type": "llama",\n  "num_hidden_layers": ,\n}'))
    assert "invalid JSON at line 3, column 24" in str(e)


def test_not_an_object(tmp_path):
    assert "expected a JSON object, got list" in str(config_error(write(tmp_path, "[1, 2]")))


@pytest.mark.parametrize("key, value, problem", [
    ("num_hidden_layers", "32", 'expected an integer, got "32"'),
    ("num_key_value_heads", 2.5, "expected an integer, got 2.5"),
    ("num_hidden_layers", True, "expected an integer, got true"),
    ("num_hidden_layers", 0, "must be positive, got 0"),
    ("num_attention_heads", -8, "must be positive, got -8"),
    ("sliding_window", -1, "must be >= 0, got -1"),
])
def test_wrong_types_and_sizes(tmp_path, key, value, problem):
    e = config_error(write(tmp_path, {**LLAMA, key: value}))
    assert e.field == key and problem in str(e) and f"field '{key}'" in str(e)


def test_nested_text_config_field_is_named(tmp_path):
    data = json.load(open(load_model_info("google/gemma-3-27b-it").source.path))
    data["text_config"]["num_key_value_heads"] = "sixteen"
    e = config_error(write(tmp_path, data))
    assert e.field == "text_config.num_key_value_heads"


def test_required_key_missing_without_default(tmp_path):
    # a Nemotron-H config without its Mamba head count: NemotronHConfig has a default, but the
    # pattern's length must match num_hidden_layers; an unknown type read raw has no defaults.
    data = {"architectures": ["MiMoV2FlashForCausalLM"], "model_type": "mimo_v2_flash", "num_hidden_layers": 2,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64}
    e = config_error(write(tmp_path, data))
    assert e.field == "hybrid_layer_pattern"
    e = config_error(write(tmp_path, {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
                                      "num_hidden_layers": 4, "linear_num_key_heads": None}))
    assert e.field == "linear_num_key_heads"


def test_unknown_layer_types_value(tmp_path):
    data = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "num_hidden_layers": 2,
            "layer_types": ["sliding_attention", "fancy_attention"]}
    e = config_error(write(tmp_path, data))
    assert e.field == "layer_types" and "'fancy_attention' at index 1" in str(e)
    # a value transformers knows but the family does not build
    e = config_error(write(tmp_path, {**LLAMA, "layer_types": ["full_attention", "linear_attention"]}))
    assert e.field == "layer_types" and "'linear_attention' at index 1" in str(e)


def test_unknown_architecture_needing_remote_code(tmp_path):
    data = {"architectures": ["FooForCausalLM"], "model_type": "foo", "auto_map": {"AutoConfig": "configuration_foo.FooConfig"}}
    e = config_error(write(tmp_path, data))
    assert e.field == "architectures" and "remote code" in str(e) and "docs/architectures.md" in str(e)
    e = config_error(write(tmp_path, {"hidden_size": 8}))
    assert e.field == "architectures"


def test_bad_hybrid_pattern(tmp_path):
    data = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "num_hidden_layers": 2,
            "hybrid_override_pattern": "MX"}
    assert config_error(write(tmp_path, data)).field == "hybrid_override_pattern"


def test_qwen2_some_but_not_all_sliding(tmp_path):
    data = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_hidden_layers": 4, "hidden_size": 512,
            "num_attention_heads": 8, "num_key_value_heads": 2, "use_sliding_window": True, "sliding_window": 4096,
            "max_window_layers": 2}
    e = config_error(write(tmp_path, data))
    assert e.field == "max_window_layers" and "Sliding window for some but all layers is not supported" in str(e)
    data["max_window_layers"] = 0  # all sliding: accepted, model-wide window
    assert {l.spec.kind for l in build_model_layout(write(tmp_path, data)).layers} == {"sliding_window"}


@pytest.mark.parametrize("opts, match", [
    (dict(tensor_parallel_size=0), "--tensor-parallel-size must be a positive integer"),
    (dict(kv_cache_dtype="fp4"), "--kv-cache-dtype 'fp4' is not a KV cache dtype of vLLM newest"),
    (dict(dtype="int4"), "--dtype 'int4' is not a model dtype"),
    (dict(attention_backend="FLASHMLA"), "cannot serve a non-MLA model"),
    (dict(attention_backend="NOPE"), "is not known"),
    (dict(block_size=0), "--block-size must be a positive number"),
    (dict(speculative_method="medusa2"), "--speculative-method 'medusa2' is not known"),
    (dict(speculative_method="eagle3"), "needs --drafter"),
    (dict(num_speculative_tokens=0), "--num-speculative-tokens must be a positive integer"),
    (dict(kv_cache_dtype="fp8_ds_mla"), "fp8_ds_mla is DeepSeek-V3.2"),
])
def test_option_errors(opts, match):
    with pytest.raises(OptionError, match=match):
        build_model_layout("openai/gpt-oss-20b", options=ServingOptions(**opts))


def test_gemma_refuses_explicit_float16():
    with pytest.raises(OptionError, match="does not support float16"):
        build_model_layout("google/gemma-2-9b-it", options=ServingOptions(dtype="float16"))


def test_head_splits_are_recorded_for_the_engine():
    # Llama-3.1-8B over TP 6: the layout is built (max(1, 8 // 6) = 1 KV head per rank) and records
    # the counts vLLM splits; the engine's prechecks refuse 32 % 6 (tests/test_prechecks.py).
    L = build_model_layout("meta-llama/Meta-Llama-3.1-8B", options=ServingOptions(tensor_parallel_size=6))
    assert L.tp_checks == (("target", "heads", 32, "num_attention_heads"),
                           ("target", "kv_heads", 8, "num_key_value_heads"))
    assert L.layers[0].spec.num_kv_heads == 1
