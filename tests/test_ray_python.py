"""Ray Serve LLM's LLMConfig in its Python form (issue 37): each `LLMConfig(...)` call of a script read with `ast`,
its keyword arguments as literals; nothing in the file is run. Ray's own docs examples in tests/data/manifests/
(each cited in its header)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import kvplan
from kvplan.errors import KvplanError
from kvplan.serve.manifests import read_manifests

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "manifests"


def read(name):
    return read_manifests((DATA / name).read_text(), name)


def test_ray_docs_examples_read_as_their_engines():
    [qwen] = read("ray-serve-llm-qwen-example.py")  # model_loading_config={...}, engine_kwargs TP 2, runtime_env
    assert qwen.name == "ray-serve-llm-qwen-example.py: LLMConfig(qwen-0.5b)" and qwen.line == 43
    assert qwen.serve.argv == ("Qwen/Qwen2.5-0.5B-Instruct", "--tensor-parallel-size", "2")
    assert qwen.serve.env == {"VLLM_USE_V1": "1"}
    [dp] = read("ray-serve-llm-dp-basic-example.py")  # model_id only; data_parallel_size 2
    assert dp.serve.argv == ("Qwen/Qwen2.5-0.5B-Instruct", "--data-parallel-size", "2", "--tensor-parallel-size", "1")
    [llama] = read("ray-serve-llm-llama-3.1-8b-sdk.py")  # dict(...) keywords; hf_token=os.environ["HF_TOKEN"]
    assert llama.serve.argv == ("meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192")
    assert llama.warnings == ("ray-serve-llm-llama-3.1-8b-sdk.py:67: engine_kwargs.hf_token = os.environ['HF_TOKEN'] "
                              "is not a literal: left out (kvplan reads the file, it runs nothing in it)",)


def test_the_python_form_plans_as_the_yaml_form():
    # the same deployment in Ray's YAML (serve_my_llama_3_1_8B.yaml) and Python (the SDK example): the same pool
    kw = dict(gpu="L4", policy="vllm==0.34.0")
    py = kvplan.vllm_serve(file=DATA / "ray-serve-llm-llama-3.1-8b-sdk.py", **kw)
    yml = kvplan.vllm_serve(file=DATA / "ray-serve-llm-llama-3.1-8b.yaml", **kw)
    assert py["outcome"]["starts"]
    assert py["memory"]["num_blocks"] == yml["memory"]["num_blocks"]
    assert py["scheduler"]["max_model_len"] == yml["scheduler"]["max_model_len"] == 8192


def test_stdin_python_is_recognised():
    r = subprocess.run([sys.executable, "-m", "kvplan.cli", "vllm", "--gpu", "L4", "--policy", "vllm==0.34.0", "--file", "-",
                        "-f", "json"], input=(DATA / "ray-serve-llm-llama-3.1-8b-sdk.py").read_text(),
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["scheduler"]["max_model_len"] == 8192


def test_nothing_in_the_file_runs(tmp_path):
    marker = tmp_path / "ran"
    f = tmp_path / "app.py"
    f.write_text(f"import os\nopen({str(marker)!r}, 'w').write('x')\n"
                 "from ray.serve.llm import LLMConfig\n"
                 "c = LLMConfig(model_loading_config=dict(model_id='meta-llama/Llama-3.1-8B-Instruct'),\n"
                 f"              engine_kwargs=dict(max_model_len=__import__('os').system('touch {marker}')))\n")
    [c] = read_manifests(f.read_text(), str(f))
    assert not marker.exists()
    assert c.serve.argv == ("meta-llama/Llama-3.1-8B-Instruct",)
    assert "engine_kwargs.max_model_len" in c.warnings[0] and "is not a literal: left out" in c.warnings[0]


@pytest.mark.parametrize("source, problem", [
    ("LLMConfig(model_loading_config=MODEL)", "line 1: model_loading_config is MODEL; write it as a literal"),
    ("LLMConfig(**cfg)", "line 1: LLMConfig(**cfg) unpacks a value kvplan does not evaluate"),
    ("LLMConfig(model_loading_config=dict(model_id=name))", "line 1: model_loading_config.model_id is name"),
    ("LLMConfig({'a': 1})", "line 1: LLMConfig takes keyword arguments only"),
])
def test_values_kvplan_does_not_evaluate_are_one_line_problems(source, problem):
    [c] = read_manifests(source + "\n", "app.py")
    assert c.serve is None and c.problem.startswith(problem) and "\n" not in c.problem


@pytest.mark.parametrize("text, message", [
    ("LLMConfig(\n", "app.py:1: not valid Python"),
    ("x = 1\n", "app.py: a Python file without an LLMConfig(...) call"),
    ("# " + "x" * (1 << 20) + "\n", "app.py: a Python file over 1 MiB is not read"),
    ("LLMConfig(model_loading_config=dict(model_id='m'), engine_kwargs=dict(x=" + "[" * 40 + "]" * 40 + "))\n",
     None),  # a literal nested deeper than kvplan reads: left out
    ("x = " + "(" * 5000 + ")" * 5000 + "\n", "app.py"),  # Python's own nesting limit: a one-line refusal
])
def test_bad_files_are_refused_in_one_line(text, message):
    if message is None:
        [c] = read_manifests(text, "app.py")
        assert c.serve.argv == ("m",)
        assert c.warnings == ("app.py:1: engine_kwargs.x = a literal nested deeper than kvplan reads is not a literal: "
                              "left out (kvplan reads the file, it runs nothing in it)",)
        return
    with pytest.raises(KvplanError) as e:
        read_manifests(text, "app.py")
    assert e.value.message.startswith(message) and "\n" not in e.value.message
