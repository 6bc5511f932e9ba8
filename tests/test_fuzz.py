"""Fuzz: 1,020 generated bad configs, flag values and deployments files (a seeded generator,
so a failure replays). Every run must end with exit 0-3, never a traceback or kvplan's
"internal error" (an unexpected exception), every error as one ``Error:`` line, and none may
take long (the slowest case is reported)."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered
from kvplan.model.catalog import catalog_dir
from kvplan.options import options_for

app = ensure_registered()
runner = CliRunner()
SEED = 20261203
CASES = 340  # per kind: 3 × 340 = 1,020
SLOW_S = 5.0  # CPU seconds; a hang shows up as far more (bounded work answers within ~1 s)

BASES = ["meta-llama/Meta-Llama-3.1-8B", "google/gemma-3-27b-it", "openai/gpt-oss-20b",
         "Qwen/Qwen3-Next-80B-A3B-Thinking", "deepseek-ai/DeepSeek-V3", "nvidia/Nemotron-H-56B-Base-8K",
         "ai21labs/Jamba-v0.1", "mistralai/Mistral-7B-v0.1", "meta-llama/Llama-4-Scout-17B-16E-Instruct"]
# config fields the family rules read (kvplan/model/families.py, drafters.py)
READ_KEYS = """num_hidden_layers num_key_value_heads head_dim sliding_window layer_types max_position_embeddings
rope_scaling rope_parameters torch_dtype dtype quantization_config architectures model_type num_attention_heads
hidden_size qk_rope_head_dim num_nextn_predict_layers kv_lora_rank use_sliding_window num_global_key_value_heads
no_rope_layers mtp_num_hidden_layers max_window_layers mamba_ssm_cache_dtype index_topk hybrid_override_pattern
hybrid_layer_pattern global_head_dim eagle_config draft_vocab_size attention_k_eq_v attention_head_dim v_head_dim
swa_v_head_dim swa_num_key_value_heads swa_head_dim ssm_state_size sliding_window_pattern num_kv_shared_layers
no_rope_layer_interval n_groups mamba_num_heads mamba_head_dim mamba_expand mamba_d_state mamba_d_conv
linear_value_head_dim linear_num_value_heads linear_num_key_heads linear_key_head_dim linear_conv_kernel_dim
index_head_dim full_attention_interval decoder_layers attn_layer_period attn_layer_offset attention_chunk_size
text_config n_predict vocab_size intermediate_size num_experts""".split()
JUNK = [-1, 0, 1, 3, 2**31, 2**63, -2**63, 1.5, -0.5, float("nan"), float("inf"), "abc", "", [], [1, 2], [None], {},
        {"a": 1}, None, True, False, "1e309", 1e308, "full_attention", ["sliding_attention"] * 3, 10**30]
BAD_TEXT = ["", "{", "[]", "null", "42", '"x"', '{"architectures": }', "\x00\x01", "[" * 5000 + "]" * 5000,
            '{"architectures": ["LlamaForCausalLM"]}', '{"model_type": "llama"}', "{}", "\ufeff{}", "NaN"]
FLAG_JUNK = ["-1", "0", "1", "abc", "", " ", "1e309", "NaN", "inf", "-inf", "9" * 30, "1.5", "40GiB", "0.5", "auto",
             "1,2", "x" * 300, "1e9999999", "{", "[]", '{"a": 1}', "ü", "1:2:0", "0:1:-1", "1G", "1.5G", "40g",
             "-40GiB", "1e3", "H100", "vllm==9.9.9", "true", "2:1:0.1", "0x10", "1_000", "128k", "10**9"]
YAML_BAD = ["", "{", "deployments: 5", "deployments: [", "- a\n- b", ":::", "\t- x", "deployments:\n  - 1\n  - []",
            "a: &a [*a]", "deployments: {}", "deployments:\n  - name: x\n", "deployments: !!python/object:os.system {}",
            "x: " + "[" * 300 + "]" * 300, "deployments:\n  - &d {name: a, model: openai/gpt-oss-20b}\n  - *d"]
BASE_ARGS = {"simulate": ["openai/gpt-oss-20b", "--kv-cache-memory", "40GiB"],
             "inspect": ["openai/gpt-oss-20b"],
             "compare": ["openai/gpt-oss-20b", "--kv-cache-memory", "40GiB", "--target-len", "8192", "--policies", "none"],
             "fit": ["Qwen/Qwen3-8B", "--gpu", "H100"]}
# flags left out: they reach a device, the network, a file, or torch's meta-device count by design
NOT_FUZZED = {"allocate", "budget_from_device", "device", "download", "plot", "exact_params", "junit_xml"}


def _mutate(rng: random.Random, cfg: dict) -> dict:
    target = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) and rng.random() < 0.6 else cfg
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(list(target) + READ_KEYS)
        if rng.random() < 0.2:
            target.pop(key, None)
            continue
        value = rng.choice(JUNK)
        old = target.get(key)
        if isinstance(old, list) and old and rng.random() < 0.5:  # one bad entry in a good list
            value = list(old)
            value[rng.randrange(len(value))] = rng.choice(JUNK)
        elif isinstance(old, dict) and old and rng.random() < 0.5:  # one bad field in a good dict
            value = {**old, rng.choice(list(old)): rng.choice(JUNK)}
        target[key] = value
    return cfg


def config_case(rng: random.Random, tmp: Path, i: int) -> list[str]:
    d = tmp / f"c{i}"
    d.mkdir()
    if rng.random() < 0.15:
        text = rng.choice(BAD_TEXT)
    else:
        cfg = json.loads(Path(catalog_dir(), rng.choice(BASES), "config.json").read_text())
        text = json.dumps(_mutate(rng, cfg))
    (d / "config.json").write_text(text)
    if rng.random() < 0.6:
        return ["inspect", str(d)]
    return ["simulate", str(d), "--kv-cache-memory", "40GiB", "--max-model-len", "8192"]


def flag_case(rng: random.Random, tmp: Path, i: int) -> list[str]:
    cmd = rng.choice(sorted(BASE_ARGS))
    opts = [o for o in options_for(cmd) if o.name not in NOT_FUZZED]
    args = [cmd, *BASE_ARGS[cmd]]
    for _ in range(rng.randint(1, 2)):
        o = rng.choice(opts)
        flag = rng.choice([o.flag, *o.aliases])
        args += [flag] if o.kind == "bool" else [flag, rng.choice(FLAG_JUNK)]
    return args


def deployments_case(rng: random.Random, tmp: Path, i: int) -> list[str]:
    f = tmp / f"d{i}.yaml"
    if rng.random() < 0.25:
        f.write_text(rng.choice(YAML_BAD))
        return ["check", str(f)]
    dep = {"name": rng.choice(["a", "", "x" * 80, 5]), "model": rng.choice(["openai/gpt-oss-20b", "gpt-oss-20b",
                                                                          "nope/x", 3]),
           "kv_cache_memory": rng.choice(["40GiB", "-1", "abc", 0, 40])}
    keys = [o.name for o in options_for("check")] + ["expect", "bogus", "tp"]
    for _ in range(rng.randint(0, 3)):
        key = rng.choice(keys)
        if key == "expect":
            dep[key] = {rng.choice(["starts", "max_groups", "min_concurrency", "min_steady_concurrency",
                                    "max_padding_waste_pct", "same_layout_as", "bogus", "min_max_model_len"]):
                        rng.choice(JUNK[:20])}
        else:
            dep[key] = rng.choice(JUNK[:20] + FLAG_JUNK[:15])
    doc = rng.choice([{"deployments": [dep]}, {"deployments": [dep, dict(dep)]},
                      {"defaults": {"policy": rng.choice(FLAG_JUNK)}, "deployments": [dep]}, [dep]])
    f.write_text(yaml.safe_dump(doc, allow_unicode=True))
    return ["check", str(f)]


def problems(r, cpu: float) -> list[str]:
    out = []
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        out.append(f"exception {type(r.exception).__name__}: {r.exception}")
    if r.exit_code not in (0, 1, 2, 3):
        out.append(f"exit code {r.exit_code}")
    if "Traceback" in r.output or "internal error" in r.stderr:
        out.append(f"stderr {r.stderr[:300]!r}")
    if r.exit_code in (1, 2):  # each error one line (a deployments file: one line per problem)
        lines = r.stderr.splitlines()
        if not lines or not all(line.startswith(("Error: ", "Warning: ")) for line in lines):
            out.append(f"stderr {r.stderr[:300]!r}")
    if cpu > SLOW_S:
        out.append(f"took {cpu:.1f} s of CPU")
    return out


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """transformers' import (seconds, once) is not a fuzz case's time."""
    runner.invoke(app, ["inspect", "meta-llama/Meta-Llama-3.1-8B"])


@pytest.mark.parametrize("kind", [config_case, flag_case, deployments_case], ids=lambda f: f.__name__)
def test_fuzz(kind, tmp_path):
    rng = random.Random(f"{SEED}-{kind.__name__}")
    failures, codes, slowest = [], {}, 0.0
    for i in range(CASES):
        args = kind(rng, tmp_path, i)
        c0 = time.process_time()
        r = runner.invoke(app, args)
        cpu = time.process_time() - c0
        slowest = max(slowest, cpu)
        codes[r.exit_code] = codes.get(r.exit_code, 0) + 1
        failures += [f"case {i} {args[:6]}: {p}" for p in problems(r, cpu)]
    assert failures == []
    # the generator reaches both sides: runs that answer and runs refused with an error
    assert codes.get(1, 0) + codes.get(2, 0) >= 2 and codes.get(0, 0) + codes.get(3, 0) >= 2, codes
