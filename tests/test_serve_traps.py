"""Pasted lines and manifests that kvplan misread (issue 39), each from its reproducer in
tests/data/traps/ (README.md there says where each comes from)."""

from pathlib import Path

import pytest

from kvplan.api import vllm_serve
from kvplan.errors import OptionError
from kvplan.serve import parse_line
from kvplan.serve.line import read_text
from kvplan.serve.manifests import read_manifests

TRAPS = Path(__file__).parent / "data" / "traps"


def _text(name: str) -> str:
    return (TRAPS / name).read_text()


def _line(name: str, **options):
    return vllm_serve(line=_text(name), **{"gpu": "H100-80GB", **options})


def _error(name: str, **options) -> str:
    with pytest.raises(OptionError) as e:
        _line(name, **options)
    return e.value.message


def test_readme_names_every_reproducer():
    readme = _text("README.md")
    assert all(p.name in readme for p in TRAPS.iterdir() if p.name != "README.md")


def test_model_id_holding_vllm_beside_served_model_name():
    # "vllm" in the model id and "serve" in --served-model-name made the words look like a vllm serve command
    (found,) = read_manifests(_text("compose-model-id-with-vllm.yaml"), "c.yaml")
    assert found.serve.argv == ("--model", "RedHatAI/Llama-3.1-8B-Instruct-FP8-dynamic-vllm", "--served-model-name", "llama")
    assert found.serve.image_release == "0.8.5"


def test_unset_image_variable_is_named(monkeypatch):
    monkeypatch.delenv("VLLM_IMAGE", raising=False)
    with pytest.raises(OptionError) as e:
        read_manifests(_text("compose-image-variable.yaml"), "c.yaml")
    assert "image: ${VLLM_IMAGE} names VLLM_IMAGE, unset here" in e.value.message
    monkeypatch.setenv("VLLM_IMAGE", "vllm/vllm-openai:v0.11.0")
    (found,) = read_manifests(_text("compose-image-variable.yaml"), "c.yaml")
    assert (found.serve.image, found.serve.image_release) == ("vllm/vllm-openai:v0.11.0", "0.11.0")


def test_tpu_image_is_not_a_gpu_deployment():
    with pytest.raises(OptionError) as e:
        vllm_serve(file=TRAPS / "compose-vllm-tpu.yaml", gpu="H100-80GB")
    assert "vllm/vllm-tpu:latest is vLLM's TPU image: not a GPU deployment" in e.value.message


@pytest.mark.parametrize("name", ["trailing-backslash.sh", "powershell-backtick.ps1", "cmd-caret.cmd",
                                  "prompt-with-path-ps2.txt"])
def test_continued_lines_are_joined(name):
    line = parse_line(_text(name))
    assert line.argv == ("Qwen/Qwen3-8B", "--max-model-len", "4096")


def test_export_continued_over_a_comment_line():
    # bash ends a comment at its newline even after a backslash: `vllm serve` runs, VLLM_USE_V1 is exported
    # (checked with bash 5: `export A=1 \\` / `# x \\` / `echo $A` prints 1)
    line = parse_line(_text("export-over-comment.sh"))
    assert line.argv == ("Qwen/Qwen3-8B", "--max-model-len", "4096") and line.env == {"VLLM_USE_V1": "1"}
    assert "VLLM_ATTENTION_BACKEND" not in read_text(_text("export-over-comment.sh")).split("#")[0]


def test_demo_api_server_is_not_the_openai_server():
    message = _error("demo-api-server.sh")
    assert "vLLM's demo server, not its OpenAI-compatible server" in message
    assert "vLLM 0.10.1 has it; its engine takes the same engine flags" in message  # the image's tag: 0.10.1
    line = "python -m vllm.entrypoints.api_server --model Qwen/Qwen2.5-7B"
    with pytest.raises(OptionError) as e:  # 0.34.0 has no vllm/entrypoints/api_server.py: the process exits
        vllm_serve(line=line, gpu="H100-80GB", policy="vllm==0.34.0")
    assert "vLLM 0.34.0 has no such module" in e.value.message
    with pytest.raises(OptionError) as e:  # no image, no --policy: which vLLM runs it is not known
        vllm_serve(line=line, gpu="H100-80GB")
    assert "with a newer vLLM it exits at start" in e.value.message


def test_kvplan_gpu_after_serve_is_vllms_gpu_memory_utilization():
    # vLLM 0.34.0's own parser (allow_abbrev) reads --gpu as --gpu-memory-utilization and fails on H100-80GB
    with pytest.raises(OptionError) as e:
        vllm_serve(line=_text("kvplan-gpu-after-serve.sh"))
    message = e.value.message
    assert message.startswith("--gpu after `serve` is vLLM's --gpu-memory-utilization")
    assert "put kvplan's --gpu before `serve`" in message
    # a number is what vLLM takes: read as vLLM reads it, with a warning
    got = vllm_serve(line="vllm serve Qwen/Qwen3-8B --gpu 0.5 --max-model-len 4096", gpu="H100-80GB")
    assert any(w.startswith("--gpu 0.5 after `serve` is vLLM's --gpu-memory-utilization") for w in got["warnings"])


def test_no_effect_flag_of_an_old_image_has_no_wrong_suggestion():
    message = _error("old-image-no-effect-flag.sh")
    assert "did you mean" not in message and "--tokenizer-pool-size: not in any flag list kvplan has" in message


def test_revision_does_not_hide_the_model_map_target():
    got = _line("revision-with-model-map.sh", model_map={"/models/qwen3-8b": "Qwen/Qwen3-8B"})
    assert got["inputs"]["model"]["id"] == "Qwen/Qwen3-8B"
    assert any("--revision 0123456789abcdef0123456789abcdef01234567 is the revision of '/models/qwen3-8b'" in w
               for w in got["warnings"])


def test_line_after_serve_and_a_kvplan_command_on_stdin():
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]

    def run(*args: str, stdin: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kvplan.cli", "vllm", *args], input=_text(stdin), text=True,
                              capture_output=True, cwd=root, timeout=120)

    after = run("--gpu", "H100-80GB", "serve", "--line", "-", stdin="line-stdin-after-serve.txt")
    assert after.returncode == 1 and "--line after `serve` is vLLM's --linear-backend" in after.stderr
    before = run("--gpu", "H100-80GB", "--line", "-", stdin="line-stdin-after-serve.txt")
    assert before.returncode == 0, before.stderr
    wrapped = run("--gpu", "H100-80GB", "--line", "-", stdin="line-stdin-kvplan-command.txt")
    assert wrapped.returncode == 1 and "the text is a kvplan command" in wrapped.stderr


@pytest.mark.parametrize("line", ["kvplan simulate openai/gpt-oss-20b", "python -m kvplan.cli simulate openai/gpt-oss-20b",
                                  "python3 -m kvplan simulate openai/gpt-oss-20b"])
def test_a_kvplan_command_is_not_a_serve_line(line):
    # kvplan's own command line, in any of its forms (the script, the module entry, the old package entry)
    with pytest.raises(OptionError, match="the text is a kvplan command"):
        parse_line(line)
