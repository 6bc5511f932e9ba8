"""The library API is the CLI: for every command, ``kvplan.X(...)`` returns exactly the dict
``kvplan X ... --format json`` prints, and every output validates against docs/schema/X.json."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered
from kvplan.options import BOOL, TRISTATE, OPTIONS

app = ensure_registered()
runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "docs" / "schema"

PEAGLE = {"drafter": "amazon/GPT-OSS-20B-P-EAGLE", "num_speculative_tokens": 5}

# (command, positional, library keywords); the CLI arguments are derived from the option table
CASES = [
    ("inspect", "openai/gpt-oss-20b", PEAGLE),
    ("inspect", "google/gemma-3-27b-it", {"tensor_parallel_size": 2}),
    ("inspect", "Qwen/Qwen3-Next-80B-A3B-Thinking", {"pipeline_parallel_size": 2}),
    ("simulate", "openai/gpt-oss-20b", {**PEAGLE, "kv_cache_memory": "40GiB", "policy": "vllm-1.5"}),
    ("simulate", "openai/gpt-oss-20b", {**PEAGLE, "kv_cache_memory": "40G", "threshold": 1.25}),
    ("simulate", "google/gemma-3-27b-it", {"gpu": "H100-80GB", "max_model_len": "32k"}),
    ("simulate", "meta-llama/Meta-Llama-3.1-8B", {"kv_cache_memory": "2GiB", "async_scheduling": False}),
    ("simulate", "Qwen/Qwen3-Next-80B-A3B-Thinking", {"kv_cache_memory": "20g", "enable_prefix_caching": False,
                                                      "explain": True}),
    ("compare", "openai/gpt-oss-20b", {"kv_cache_memory": "40GiB", "target_len": "32768"}),
    ("compare", "google/gemma-3-27b-it", {"kv_cache_memory": "20GiB", "max_model_len": "32k", "policies": "none"}),
    ("fit", "openai/gpt-oss-20b", {"gpu": "H100", "concurrency": 8, "context_len": 65536}),
    ("fit", "Qwen/Qwen3-8B", {"gpus": "H100-80GB,L4-24GB", "tp_sizes": "1,2"}),
]


def cli_args(command: str, positional: str, kwargs: dict) -> list[str]:
    args = [command, positional]
    for name, value in kwargs.items():
        opt = OPTIONS[name]
        if opt.kind in (BOOL, TRISTATE):
            args.append(opt.flag if value else f"--no-{opt.flag[2:]}")
        else:
            args += [opt.flag, str(value)]
    return args + ["--format", "json"]


def cli_json(args: list[str]) -> tuple[int, dict]:
    r = runner.invoke(app, args)
    assert r.stdout, r.stderr
    return r.exit_code, json.loads(r.stdout)


def _drop_timings(d):
    """check's per-deployment ``seconds`` is a wall-clock measurement, the one field two runs cannot share."""
    if isinstance(d, dict):
        return {k: _drop_timings(v) for k, v in d.items() if k != "seconds"}
    if isinstance(d, list):
        return [_drop_timings(v) for v in d]
    return d


def validate(data: dict) -> None:
    schema = json.loads((SCHEMAS / f"{data['command']}.json").read_text())
    jsonschema.validate(data, schema)


@pytest.mark.parametrize("command, positional, kwargs", CASES,
                         ids=[f"{c}-{p.split('/')[-1]}-{i}" for i, (c, p, _k) in enumerate(CASES)])
def test_library_equals_cli_json(command, positional, kwargs):
    code, from_cli = cli_json(cli_args(command, positional, kwargs))
    from_lib = getattr(kvplan, command)(positional, **kwargs)
    assert from_lib == from_cli
    validate(from_lib)
    # exit code follows the outcome: 0 when ok, 3 when the engine fails or a question has no answer
    assert code == (0 if from_lib["outcome"]["ok"] else 3)


def test_sweep_library_equals_cli():
    code, from_cli = cli_json(["simulate", "openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5",
                               "--kv-cache-memory", "40GiB", "--sweep-threshold", "1.2,1.3,1.5", "--policy",
                               "vllm==0.33.0", "--format", "json"])
    # 0.33.0: the last release with the single-group check on drafting layers (0.34 dropped it)
    from_lib = kvplan.sweep("openai/gpt-oss-20b", "1.2,1.3,1.5", **PEAGLE, kv_cache_memory="40GiB",
                            policy="vllm==0.33.0")
    assert code == 0 and from_lib == from_cli
    validate(from_lib)
    # 12 sliding + 16 full (12 target + 4 P-EAGLE): max/min = 16/12 = 1.333..., so the group size is
    # 12 at 1.2 and 1.3 (3 groups, 12/8/8: the drafter split, so it fails) and 16 at 1.5.
    assert [r["group_size"] for r in from_lib["rows"]] == [12, 12, 16]
    assert [r["outcome"]["starts"] for r in from_lib["rows"]] == [False, False, True]


def test_models_and_gpus_library_equals_cli():
    for command, args in (("models", ["models"]), ("gpus", ["fit", "--list-gpus"])):
        code, from_cli = cli_json([*args, "--format", "json"])
        from_lib = getattr(kvplan, command)()
        assert code == 0 and from_lib == from_cli
        validate(from_lib)


@pytest.mark.parametrize("path, ok", [
    ("configs/deployments/gpt-oss-20b-peagle.yaml", True),
    ("configs/deployments/failing/gpt-oss-20b-peagle-vllm-0.17.yaml", False),
])
def test_check_library_equals_cli(path, ok):
    code, from_cli = cli_json(["check", str(ROOT / path), "--format", "json"])
    from_lib = kvplan.check([str(ROOT / path)])
    assert _drop_timings(from_lib) == _drop_timings(from_cli)
    validate(from_lib)
    assert from_lib["outcome"]["ok"] is ok and code == (0 if ok else 3)


def test_envelope_order_and_given_options():
    d = kvplan.simulate("openai/gpt-oss-20b", kv_cache_memory="40G", max_model_len="128k")
    assert list(d)[:5] == ["schema_version", "kvplan_version", "command", "inputs", "outcome"]
    assert list(d)[-1] == "warnings"
    opts = d["inputs"]["options"]
    # vLLM's human_readable_int: G is binary, k decimal (vllm/utils/argparse_utils.py, 0.34.0)
    assert opts["kv_cache_memory"] == {"value": 40 * 2**30, "given": True}
    assert opts["max_model_len"] == {"value": 128_000, "given": True}
    assert opts["tensor_parallel_size"] == {"value": 1, "given": False}
    assert d["memory"]["available_bytes"] == 42_949_672_960 and d["scheduler"]["max_model_len"] == 128_000
    assert d["inputs"]["model"]["id"] == "openai/gpt-oss-20b" and d["inputs"]["model"]["source"] == "catalog"


def test_schema_files_are_generated():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_schemas.py"), "--check"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout


def test_schema_rejects_a_broken_outcome():
    d = kvplan.inspect("openai/gpt-oss-20b")
    validate(d)
    d["outcome"] = {"starts": True}  # the old shape: no ok/stage/error_type/error/fix
    with pytest.raises(jsonschema.ValidationError):
        validate(d)


def test_unknown_keyword_is_refused_with_the_known_ones():
    with pytest.raises(kvplan.errors.OptionError, match=r"simulate: unknown option\(s\) kv_cache_memory_gb; known: "):
        kvplan.simulate("openai/gpt-oss-20b", kv_cache_memory_gb=40)


@pytest.mark.parametrize("args, line, kwargs", [
    (["openai/gpt-oss-20b", "--speculative-config",
      '{"method":"eagle3","model":"amazon/GPT-OSS-20B-P-EAGLE","num_speculative_tokens":5}'], None,
     {"gpu": "H100-80GB"}),
    (None, "docker run --gpus all vllm/vllm-openai:v0.18.0 --model openai/gpt-oss-20b --kv-cache-memory-bytes 40G",
     {}),
])
def test_vllm_serve_library_equals_cli(args, line, kwargs):
    cli = ["vllm", "--format", "json"]
    for name, value in kwargs.items():
        cli += [OPTIONS[name].flag, str(value)]
    cli += ["--line", line] if line is not None else ["serve", *args]
    code, from_cli = cli_json(cli)
    from_lib = kvplan.vllm_serve(args, line=line, **kwargs)
    assert from_lib == from_cli and code == 0
    validate(from_lib)


def test_explain_log_library_equals_cli(tmp_path):
    """kvplan.explain_log(path) == `kvplan explain-log PATH --format json` (a vLLM golden's log)."""
    from golden_logs import GOLDEN_DIR, golden_log

    golden = json.loads((GOLDEN_DIR / "gpt-oss-20b__2gib__0.34.0.json").read_text())
    log = tmp_path / "vllm.log"
    log.write_text(golden_log(golden))
    code, from_cli = cli_json(["explain-log", str(log), "--format", "json"])
    from_lib = kvplan.explain_log(str(log))
    assert from_lib == from_cli
    validate(from_lib)
    # 0.34.0 fails the admission check on 2 GiB (vLLM's own error in the golden) and kvplan agrees
    assert code == 0 and from_lib["outcome"]["starts"] is False and from_lib["outcome"]["ok"] is True
    # the golden's estimate at 0.34.0's block 64: "the estimated maximum model length is 70720"
    assert from_lib["outcome"]["fix"] == "--max-model-len 70720"


def test_a_configuration_refusal_needs_no_budget():
    # vLLM 0.34.0 refuses max_model_len 200,000 on Llama-3.1-8B (max_position_embeddings 131,072)
    # in ModelConfig, before any memory is measured: without --gpu or --kv-cache-memory kvplan
    # still predicts the refusal (exit 3), says that only the configuration checks ran, and
    # offers no fix (a fix is verified by simulating it, which needs a budget)
    from kvplan.usecases.pipeline import NO_BUDGET_REFUSAL

    code, from_cli = cli_json(["vllm", "--format", "json", "serve", "meta-llama/Meta-Llama-3.1-8B",
                               "--max-model-len", "200000"])
    from_lib = kvplan.vllm_serve(["meta-llama/Meta-Llama-3.1-8B", "--max-model-len", "200000"])
    assert from_lib == from_cli and code == 3
    validate(from_lib)
    o = from_lib["outcome"]
    assert (o["starts"], o["stage"], o["error_type"], o["fix"]) == (False, "config.max_model_len", "ValidationError",
                                                                    None)
    assert o["error"].startswith("User-specified max_model_len (200000) is greater than the derived max_model_len "
                                 "(max_position_embeddings=131072.0")
    assert NO_BUDGET_REFUSAL in from_lib["warnings"]
    # with a budget the same refusal validates too (scheduler.async_scheduling is null: vLLM
    # stopped before choosing; the schema said boolean until this test)
    validate(kvplan.simulate("meta-llama/Meta-Llama-3.1-8B", max_model_len=200_000, kv_cache_memory="60G"))
    # a deployment the configuration checks accept still needs the budget (one line, exit 1)
    r = runner.invoke(app, ["vllm", "serve", "meta-llama/Meta-Llama-3.1-8B", "--max-model-len", "100000"])
    assert r.exit_code == 1
    assert r.stderr == "Error: no KV-cache budget: pass --kv-cache-memory (e.g. 40GiB) or --gpu (e.g. H100-80GB)\n"
