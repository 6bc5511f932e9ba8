"""CLI tests: JSON parsed from stdout, exit codes, one-line errors, the acceptance numbers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered
from factories import heavy_modules_after_cli

app = ensure_registered()

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()

GPT = ["openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5"]
BUDGET = ["--kv-cache-memory", "40GiB", "--max-model-len", "131072", "--max-num-batched-tokens", "8192"]


def invoke(*args):
    return runner.invoke(app, list(args))


def as_json(*args):
    r = invoke(*args, "--format", "json")
    return r, json.loads(r.stdout)


def test_inspect_gpt_oss_peagle_json():
    r, d = as_json("inspect", *GPT)
    assert r.exit_code == 0
    kinds = [(x["source"], x["kind"]) for x in d["layers"]]
    # 12 sliding + 12 full target layers, then 4 full drafter layers
    assert kinds.count(("target", "sliding_window")) == 12
    assert kinds.count(("target", "full_attention")) + kinds.count(("drafter", "full_attention")) == 16
    assert d["layers"][0]["page_size_bytes"] == 2 * 64 * 8 * 64 * 2  # 131072: block 64 (0.34.0, FLASH_ATTN on H100)
    assert d["layers"][24]["name"] == "model.layers.24.self_attn.attn"
    assert d["schema_version"] == 2 and isinstance(d["warnings"], list)
    assert d["model"]["source"] == "catalog"
    # total KV per token: 28 layers · 8 heads · 2 (K, V) · 64 · 2 B = 57344
    assert d["kv_bytes_per_token"] == 28 * 8 * 2 * 64 * 2


def test_simulate_acceptance_threshold_1_25_fails():
    # 16 full < 12 × 1.25 = 15 is false → group size 12, 3 groups, 8 padding layers (50%), drafter split.
    r, d = as_json("simulate", *GPT, *BUDGET, "--policy", "vllm-1.5", "--threshold", "1.25")
    assert r.exit_code == 3
    g = d["grouping"]
    assert (g["group_size"], g["num_groups"], g["num_padding_layers"]) == (12, 3, 8)
    assert "Add 8 padding layers, may waste at most 50.00% KV cache memory" in d["logs"]
    assert d["outcome"] == {"ok": False, "starts": False, "stage": "drafter", "error_type": "AssertionError",
                            "error": "All drafting layers should belong to the same kv cache group", "fix": None}


def test_simulate_acceptance_threshold_1_5_starts():
    # 16 < 18 → group size 16, 2 groups, 4 sliding padding layers (4/12 = 33.33%);
    # num_blocks 40 GiB // 32768 // 16 = 81920; concurrency 81920 / (521 + 8192) = 9.40 (vLLM 0.18.0).
    r, d = as_json("simulate", *GPT, *BUDGET, "--policy", "vllm-1.5")
    assert r.exit_code == 0
    g, m = d["grouping"], d["memory"]
    assert (g["group_size"], g["num_groups"], g["num_padding_layers"], g["padding_waste_pct"]) == (16, 2, 4, 33.3333)
    assert m["num_blocks"] == 81920 and f"{m['max_concurrency']:.2f}" == "9.40"
    assert [len(t["shared_by"]) for t in d["tensors"]] == [2] * 12 + [1] * 4
    assert d["outcome"]["starts"] is True


def test_simulate_release_alias_and_default_era():
    _, d = as_json("simulate", *GPT, *BUDGET, "--policy", "vllm==0.17.1")
    assert (d["policy"]["name"], d["policy"]["vllm_release"]) == ("vllm-0.17", "0.17.1")
    assert d["grouping"]["group_size"] == 12
    # default: the newest checked release (0.34.0, no vLLM installed here), async scheduling → 8.88
    _, d = as_json("simulate", *GPT, *BUDGET)
    assert (d["policy"]["vllm_release"], d["policy"]["release_note"]) == ("0.34.0", None)
    assert f"{d['memory']['max_concurrency']:.2f}" == "8.88"
    # golden gpt-oss-20b-peagle__40gib__0.34.0 (block 64): "GPU KV cache size: 1,163,569 tokens" (1,163,947
    # at 0.33.0's block 16)
    assert d["memory"]["kv_cache_size_tokens"] == 1163569


def test_simulate_gemma3_27b():
    # 52 sliding + 10 full → group size 10, 7 groups, sliding groups 9,9,9,9,8,8, 8 padding (15.38%),
    # 40 GiB // (16·16·128·2·2 = 131072) // 10 = 32768 blocks.
    r, d = as_json("simulate", "google/gemma-3-27b-it", *BUDGET, "--policy", "vllm-1.5")
    assert r.exit_code == 0
    assert [g["num_layers"] for g in d["groups"]] == [9, 9, 9, 9, 8, 8, 10]
    g = d["grouping"]
    assert (g["group_size"], g["num_groups"], g["num_padding_layers"], round(g["padding_waste_pct"], 2)) == (10, 7, 8, 15.38)
    assert d["memory"]["num_blocks"] == 32768


def test_unknown_policy_lists_choices():
    r = invoke("simulate", *GPT, *BUDGET, "--policy", "vllm-9")
    assert r.exit_code == 1
    assert r.stderr.startswith("Error: unknown policy 'vllm-9'; choose one of: vllm-latest, vllm-0.10, vllm-0.11.1, vllm-0.12")
    assert r.stderr.rstrip().endswith("or a release: vllm==0.10.1 to vllm==0.34.0 (39 releases; `kvplan policies` lists them)")
    assert r.stderr.count("\n") == 1


def test_missing_budget_is_an_error():
    r = invoke("simulate", "openai/gpt-oss-20b")
    assert r.exit_code == 1 and "pass --kv-cache-memory" in r.stderr


def test_bad_size_and_max_model_len():
    r = invoke("simulate", "openai/gpt-oss-20b", "--kv-cache-memory", "40 gigs")
    assert r.exit_code == 1 and r.stderr.startswith("Error: --kv-cache-memory: cannot read '40 gigs'")
    r = invoke("simulate", "openai/gpt-oss-20b", "--kv-cache-memory", "40GiB", "--max-model-len", "-5")
    assert r.exit_code == 1 and "--max-model-len" in r.stderr


def test_usage_error_exits_2():
    r = invoke("simulate", "openai/gpt-oss-20b", "--no-such-flag")
    assert r.exit_code == 2


def test_not_enough_memory_exit_3_with_engine_text():
    r, d = as_json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory", "2GiB", "--max-model-len", "131072",
                   "--policy", "vllm-1.5")
    # 32 layers · 8 KV · 128 · 2 · 2 B = 128 KiB per token; 131072 tokens need 16 GiB; 2 GiB fit 2 GiB // 2 MiB
    # = 1024 blocks of 16 tokens = 16384 tokens.
    assert r.exit_code == 3 and d["outcome"]["stage"] == "admission"
    assert d["outcome"]["error"].startswith(
        "To serve at least one request with the models's max seq len (131072), (16.0 GiB KV cache is needed")
    assert "the estimated maximum model length is 16384." in d["outcome"]["error"]


def test_max_model_len_auto():
    r, d = as_json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory", "2GiB", "--max-model-len", "auto",
                   "--policy", "vllm-1.5")
    assert r.exit_code == 0 and d["scheduler"]["max_model_len"] == 16384
    assert d["scheduler"]["original_max_model_len"] == 131072  # Llama 3.1: llama3 rope keeps 131072


def test_check_flags_on_simulate():
    r = invoke("simulate", *GPT, *BUDGET, "--policy", "vllm-1.5", "--fail-on-padding", "30", "--format", "json")
    assert r.exit_code == 3 and "--fail-on-padding 30: padding waste 33.33%" in r.stderr
    r = invoke("simulate", *GPT, *BUDGET, "--policy", "vllm-1.5", "--fail-on-padding", "40", "--min-concurrency", "9",
               "--format", "json")
    assert r.exit_code == 0
    r = invoke("simulate", *GPT, *BUDGET, "--policy", "vllm-1.5", "--min-concurrency", "10", "--format", "json")
    assert r.exit_code == 3


def test_sweep_threshold_and_critical_ratio():
    r, d = as_json("simulate", *GPT, *BUDGET, "--policy", "vllm-1.5", "--sweep-threshold", "1.25,1.3,1.35,1.5")
    assert r.exit_code == 0
    assert [row["group_size"] for row in d["rows"]] == [12, 12, 16, 16]
    assert [row["outcome"]["starts"] for row in d["rows"]] == [False, False, True, True]
    # the decision flips just above 16/12 = 1.333333
    assert d["critical_thresholds"] == [{"threshold": 1.333333, "ratio": "16/12", "group_size_at_or_below": 12,
                                         "group_size_above": 16}]
    r, d = as_json("simulate", *GPT, *BUDGET, "--sweep-threshold", "1.0:2.0:0.05")
    assert len(d["rows"]) == 21 and d["rows"][-1]["threshold"] == 2.0


def test_sweep_plot(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "sweep.png"
    r = invoke("simulate", *GPT, *BUDGET, "--sweep-threshold", "1.0:2.0:0.25", "--plot", str(out), "--format", "json")
    assert r.exit_code == 0 and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_plot_without_matplotlib_keeps_the_sweep(tmp_path, monkeypatch):

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    out = tmp_path / "sweep.png"
    args = ("simulate", *GPT, *BUDGET, "--sweep-threshold", "1.0:2.0:0.5", "--plot", str(out))
    r = invoke(*args)
    # the table of every threshold, then one line saying how to get plots, exit 1, no file
    assert r.exit_code == 1 and not out.exists()
    assert "Threshold sweep" in r.stdout and "Critical threshold 1.33333" in r.stdout
    assert r.stderr.splitlines()[-1] == "Error: --plot needs matplotlib: pip install 'kvplan[plot]'"
    assert "Traceback" not in r.stderr
    r = invoke(*args, "--format", "json")
    assert r.exit_code == 1 and [row["threshold"] for row in json.loads(r.stdout)["rows"]] == [1.0, 1.5, 2.0]


def test_yaml_output_matches_json():
    import yaml

    _, d = as_json("simulate", *GPT, *BUDGET)
    r = invoke("simulate", *GPT, *BUDGET, "--format", "yaml")
    assert yaml.safe_load(r.stdout) == d


def test_explain_mentions_the_decision():
    _, d = as_json("simulate", *GPT, *BUDGET, "--policy", "vllm-1.5", "--explain")
    assert "16 (largest) vs 12 (smallest): 16 < 12 × 1.5 = 18, so group size 16." in d["explain"]


def test_models_lists_catalog():
    r, d = as_json("models")
    ids = {m["id"] for m in d["models"]}
    assert {"openai/gpt-oss-20b", "amazon/GPT-OSS-20B-P-EAGLE", "google/gemma-3-27b-it"} <= ids


# --- bad input: one line, exit 1, file and field named --------------------------------


def write(tmp_path, text, name="config.json"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 8, "hidden_size": 1024, "torch_dtype": "bfloat16",
        "max_position_embeddings": 4096}


@pytest.mark.parametrize(
    "content, expect",
    [
        ("{not json", "invalid JSON at line 1"),
        (json.dumps({**BASE, "num_hidden_layers": "two"}), "num_hidden_layers"),
        # a key with no default anywhere (MiMo's per-layer pattern; transformers does not know MiMo)
        (json.dumps({k: v for k, v in json.loads((ROOT / "configs/XiaomiMiMo/MiMo-V2-Flash/config.json").read_text())
                     .items() if k != "hybrid_layer_pattern"}), "hybrid_layer_pattern"),
        (json.dumps({**BASE, "num_key_value_heads": 0}), "num_key_value_heads"),
        (json.dumps({**BASE, "num_hidden_layers": -3}), "num_hidden_layers"),
        (json.dumps({**BASE, "layer_types": ["full_attention", "banana"]}), "layer_types"),
        (json.dumps({**BASE, "architectures": ["FrobnicatorForCausalLM"], "model_type": "frobnicator"}), "architectures"),
        (json.dumps({**BASE, "architectures": ["MyModel"], "model_type": "my_model",
                     "auto_map": {"AutoConfig": "configuration_my.MyConfig"}}), "remote code"),
    ],
)
def test_bad_config_one_line_error(tmp_path, content, expect):
    path = write(tmp_path, content)
    r = invoke("inspect", path)
    assert r.exit_code == 1, r.stdout
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1
    assert expect in r.stderr and "config.json" in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_model():
    r = invoke("inspect", "no-such-org/no-such-model")
    assert r.exit_code == 1 and r.stderr.startswith("Error: model 'no-such-org/no-such-model' not found")


# --- speed and imports: a fresh interpreter ------------------------------------------


def _modules_after(args):
    rc, mods = heavy_modules_after_cli(args, ROOT)
    assert rc == 0, f"kvplan {' '.join(args)} exited {rc}"
    return mods


def test_help_imports_neither_torch_nor_transformers():
    mods = _modules_after(["--help"])
    assert not [m for m in mods if m.startswith("torch")]
    assert not [m for m in mods if m.startswith("transformers")]


def test_root_help_imports_no_typer_rich_or_pydantic():
    # `kvplan --help` is the command list (kvplan/cli/entry.py); Typer (and, from 0.29, pydantic) is
    # imported for a command, Rich only to draw a table
    rc, mods = heavy_modules_after_cli(["--help"], ROOT, packages=("typer", "rich", "pydantic", "click"))
    assert rc == 0 and mods == []
    rc, mods = heavy_modules_after_cli(["simulate", *GPT, *BUDGET, "--format", "json"], ROOT, packages=("rich",))
    assert rc == 0 and mods == []


def test_inspect_and_simulate_do_not_import_torch():
    assert not [m for m in _modules_after(["inspect", *GPT, "--format", "json"]) if m.split(".")[0] == "torch"]
    assert not [m for m in _modules_after(["simulate", *GPT, *BUDGET, "--format", "json"]) if m.split(".")[0] == "torch"]


# --- docs stay in sync ---------------------------------------------------------------


def test_every_command_has_help_and_a_readme_section():
    readme = (ROOT / "README.md").read_text()
    names = [c.name for c in app.registered_commands]
    assert {"inspect", "simulate", "models"} <= set(names)
    for name in names:
        r = invoke(name, "--help")
        assert r.exit_code == 0 and "Usage" in r.stdout
        assert f"## `kvplan {name}`" in readme, f"README has no section for kvplan {name}"


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    cmd = next(line.strip() for line in readme.splitlines() if "pytest" in line and line.strip().startswith("pip install"))
    assert cmd in ci


def test_missing_config_file_names_the_path(tmp_path):
    r = invoke("inspect", str(tmp_path / "nope" / "config.json"))
    assert r.exit_code == 1 and r.stderr.count("\n") == 1
    assert "nope/config.json does not exist" in r.stderr


def test_disable_sliding_window():
    # Mistral-7B: 32 sliding(4096) layers. --disable-sliding-window makes them full and caps
    # max_model_len at the window (32768 → 4096). Block 64 (0.34.0's default, FLASH_ATTN on the assumed H100;
    # tests/golden/defaults/0.34.0.json, Mistral-7B): page 64 · 8 · 128 · 2 · 2 = 262,144 B,
    # 40 GiB // (32 · 262,144 B) = 5120 blocks; a 4096-token request holds 64 blocks → 80.0 concurrent requests.
    r, d = as_json("simulate", "mistralai/Mistral-7B-v0.1", "--kv-cache-memory", "40GiB", "--disable-sliding-window")
    assert r.exit_code == 0
    assert d["scheduler"]["max_model_len"] == 4096
    assert [g["kind"] for g in d["groups"]] == ["full_attention"]
    assert d["memory"]["num_blocks"] == 5120 and d["memory"]["max_concurrency"] == 80.0
    r, d = as_json("inspect", "mistralai/Mistral-7B-v0.1", "--disable-sliding-window")
    assert {x["kind"] for x in d["layers"]} == {"full_attention"}


def test_version():
    from kvplan import __version__

    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout == f"kvplan {__version__}\n"
