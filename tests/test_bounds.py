"""Bounded work: any config is answered within a second, or refused in one line above the
plausibility bounds of kvplan/bounds.py (docs/reference.md "Plausibility bounds")."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kvplan import bounds
from kvplan.cli.app import ensure_registered
from kvplan.model.catalog import catalog_dir

app = ensure_registered()
runner = CliRunner()
LLAMA = json.loads(Path(catalog_dir(), "meta-llama/Meta-Llama-3.1-8B/config.json").read_text())


def write(tmp: Path, name: str, cfg: dict) -> str:
    d = tmp / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


@pytest.fixture(scope="module", autouse=True)
def _warm(tmp_path_factory):
    """Import transformers (and its Llama/Mistral config classes) once, outside the timings."""
    d = tmp_path_factory.mktemp("warm")
    runner.invoke(app, ["inspect", write(d, "llama", LLAMA)])
    runner.invoke(app, ["inspect", write(d, "mistral", {**LLAMA, "model_type": "mistral",
                                                       "architectures": ["MistralForCausalLM"]})])


def timed(*args: str):
    t0, c0 = time.perf_counter(), time.process_time()
    r = runner.invoke(app, list(args))
    return r, time.perf_counter() - t0, time.process_time() - c0


def test_two_to_the_31_layers_is_refused_at_once(tmp_path):
    path = write(tmp_path, "huge", {**LLAMA, "num_hidden_layers": 2**31})
    for cmd in (["inspect", path], ["simulate", path, "--kv-cache-memory", "40GiB"]):
        r, wall, _cpu = timed(*cmd)
        assert r.exit_code == 1 and wall < 1.0
        assert r.stderr == (f"Error: {path}/config.json: field 'num_hidden_layers': 2,147,483,648 is above kvplan's "
                            "plausibility bound of 512 (layers); no released model comes near it (docs/reference.md: "
                            "Plausibility bounds); fix the value\n")


def test_bounds_on_flags_and_derived_values(tmp_path):
    gpt = "openai/gpt-oss-20b"
    r = runner.invoke(app, ["simulate", gpt, "-pp", "1000000", "--kv-cache-memory", "40GiB"])
    assert r.exit_code == 1 and r.stderr == "Error: --pipeline-parallel-size must be at most 512, got 1,000,000\n"
    r = runner.invoke(app, ["simulate", gpt, "--max-model-len", "2G", "--kv-cache-memory", "40GiB"])
    assert r.stderr == "Error: --max-model-len must be at most 1,073,741,824, got 2,147,483,648\n"
    r = runner.invoke(app, ["simulate", gpt, "--sweep-threshold", "0:1000:0.0001", "--kv-cache-memory", "40GiB"])
    assert r.stderr == ("Error: --sweep-threshold '0:1000:0.0001': 10,000,001 thresholds, more than kvplan sweeps "
                        "at once (1,000); take a larger step\n")
    # a config's own length above the bound needs --max-model-len, which then works
    path = write(tmp_path, "long", {**LLAMA, "max_position_embeddings": 2**40,
                                    "rope_scaling": None})
    r = runner.invoke(app, ["simulate", path, "--kv-cache-memory", "40GiB"])
    assert r.exit_code == 1 and r.stderr == ("Error: the model's max_model_len 1,099,511,627,776 (from its config) is "
                                             "above kvplan's plausibility bound of 1,073,741,824 tokens; pass "
                                             "--max-model-len\n")
    assert runner.invoke(app, ["simulate", path, "--kv-cache-memory", "40GiB", "--max-model-len", "8k"]).exit_code == 0
    # a head size derived from hidden_size // heads: 4,194,304 // 32 = 131,072 > 4,096
    path = write(tmp_path, "wide", {**{k: v for k, v in LLAMA.items() if k != "head_dim"},
                                    "hidden_size": bounds.MAX_HIDDEN})
    r = runner.invoke(app, ["inspect", path])
    assert r.exit_code == 1 and "head_size 131,072 is above kvplan's plausibility bound of 4,096" in r.stderr


FIELDS = {  # field → bound
    "num_hidden_layers": bounds.MAX_LAYERS, "num_key_value_heads": bounds.MAX_HEADS,
    "num_attention_heads": bounds.MAX_HEADS, "head_dim": bounds.MAX_HEAD_SIZE, "hidden_size": bounds.MAX_HIDDEN,
    "sliding_window": bounds.MAX_TOKENS, "max_position_embeddings": None,
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(sorted(FIELDS)), value=st.one_of(st.integers(1, 2**63), st.integers(1, 1024)),
       command=st.sampled_from(["inspect", "simulate"]))
def test_huge_values_answer_within_a_second(tmp_path_factory, field, value, command):
    cfg = dict(LLAMA)
    cfg[field] = value
    if field == "sliding_window":
        cfg["model_type"], cfg["architectures"] = "mistral", ["MistralForCausalLM"]
    path = write(tmp_path_factory.mktemp("cfg"), "m", cfg)
    args = [command, path] + (["--kv-cache-memory", "40GiB", "--max-model-len", "4096"] if command == "simulate" else [])
    r, _wall, cpu = timed(*args)
    # CPU time, not wall time: the test machine is shared; transformers' import is paid once
    assert cpu < 1.0, (field, value, cpu)
    assert "Traceback" not in r.output and "internal error" not in r.stderr, r.stderr
    if r.exit_code != 0:
        assert r.exit_code in (1, 3) and (r.exit_code == 3 or r.stderr.count("\n") == 1), r.stderr
    bound = FIELDS[field]
    if bound is not None and value > bound:
        assert r.exit_code == 1 and "plausibility bound" in r.stderr
