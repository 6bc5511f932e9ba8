"""Issue 39's traps, each with its reproducer in tests/data/hostile/ (README there: what each is and
what main did before): nothing from the input is executed, every file is read bounded (FIFOs,
devices and directories refused by name, never waited on), YAML bombs and depth refused before
they are expanded, and every refusal is one ``Error:`` line naming the file, the field and the fix
(exit 1)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered

app = ensure_registered()
runner = CliRunner()
REPO = Path(__file__).resolve().parent.parent
HOSTILE = REPO / "tests" / "data" / "hostile"
MANIFESTS = REPO / "tests" / "data" / "manifests"
TIMEOUT_S = 60  # a subprocess that waits on a FIFO fails the test here instead of hanging it


def run(*args: str, input: bytes | str | None = None):
    return runner.invoke(app, list(args), input=input)


def kvplan_process(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m kvplan.cli ARGS`` in a fresh process (a FIFO opened for reading would block it)."""
    environ = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kvplan.cli", *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)


def one_error(r) -> str:
    assert r.exit_code == 1, (r.exit_code, r.stderr, r.stdout)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr
    return lines[0]


def evil_script(tmp_path: Path) -> tuple[Path, Path]:
    """An executable that writes a marker file when run (and prints a vLLM version)."""
    marker = tmp_path / "executed"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\necho 0.34.0\n")
    evil.chmod(evil.stat().st_mode | stat.S_IXUSR)
    return evil, marker


# --- nothing from the input is executed -------------------------------------------------------


@pytest.mark.parametrize("where", ["entry", "defaults", "top"])
def test_check_refuses_a_program_key_and_runs_nothing(tmp_path, where):
    evil, marker = evil_script(tmp_path)
    text = (HOSTILE / "check-vllm-python.yaml").read_text().replace("./evil.sh", str(evil))
    line = 6
    if where == "defaults":
        text = text.replace(f"    vllm_python: {evil}\n", "")
        text = f"defaults:\n  vllm_python: {evil}\n" + text
        line = 2
    elif where == "top":
        text = text.replace(f"    vllm_python: {evil}\n", "")
        text = f"vllm_python: {evil}\n" + text
        line = 1
    f = tmp_path / "d.yaml"
    f.write_text(text)
    entry = {"entry": "deployment 'evil': ", "defaults": "defaults: ", "top": ""}[where]
    assert one_error(run("check", str(f))) == (
        f"Error: {f}:{line}: {entry}key 'vllm_python': names a program for kvplan to run, and kvplan never runs a "
        "program named in a deployments file; remove the key and pass --vllm-python PATH on the command line instead")
    assert not marker.exists()


def test_check_refuses_a_program_key_in_a_fresh_process(tmp_path):
    # the acceptance case as a CI runner meets it: `kvplan check d.yaml` on a pull request's file
    evil, marker = evil_script(tmp_path)
    (tmp_path / "d.yaml").write_text((HOSTILE / "check-vllm-python.yaml").read_text())
    p = kvplan_process("check", "d.yaml", cwd=tmp_path)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.startswith("Error: d.yaml:6: deployment 'evil': key 'vllm_python': names a program")
    assert not marker.exists()


def test_the_command_line_still_names_the_interpreter(tmp_path, monkeypatch):
    # the person running kvplan may: `kvplan check --vllm-python PATH` runs the cross-checks the
    # file asks for in that interpreter (here a script that says "0.34.0" and runs no runner: the
    # cross-check says so, and the deployment passes, as cross_check without require_agreement does)
    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n  - name: a\n    model: openai/gpt-oss-20b\n    kv_cache_memory: 40GiB\n"
                 "    cross_check: true\n")
    evil, marker = evil_script(tmp_path)
    r = run("check", str(f), "--vllm-python", str(evil), "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert marker.exists()  # the command line's program ran: the user named it
    import json

    [d] = json.loads(r.stdout)["deployments"]
    assert (d["cross_check"]["ran"], d["cross_check"]["reason"]) == (
        False, "could not cross-check: vLLM 0.34.0's runner printed no result (no output)")


# --- special files: refused by name, never waited on ------------------------------------------


def _fifo(tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    os.mkfifo(p)
    return p


def test_fifo_for_file_config_check_and_manifest(tmp_path):
    _fifo(tmp_path, "fifo.yaml")
    (tmp_path / "d.yaml").write_text("deployments:\n  - name: m\n    manifest: fifo.yaml\n    gpu: H100-80GB\n")
    fix = "not a regular file; pass a regular file"
    cases = [
        (["vllm", "--file", "fifo.yaml"], f"Error: fifo.yaml: --file: is a FIFO (named pipe), {fix}, or - to read "
                                          "standard input"),
        (["vllm", "--line", "vllm serve openai/gpt-oss-20b --config fifo.yaml", "--gpu", "H100-80GB"],
         f"Error: fifo.yaml: --config: is a FIFO (named pipe), {fix}"),
        (["check", "fifo.yaml"], f"Error: fifo.yaml: is a FIFO (named pipe), {fix}, or - to read standard input"),
        (["check", "d.yaml"], f"Error: d.yaml:3: deployment 'm': key 'manifest': fifo.yaml: is a FIFO (named pipe), "
                              f"{fix}"),
        (["inspect", "fifo.yaml"], f"Error: fifo.yaml: is a FIFO (named pipe), {fix}"),
        (["explain-log", "fifo.yaml"], f"Error: fifo.yaml: log file: is a FIFO (named pipe), {fix}, or - to read "
                                       "standard input"),
    ]
    for args, error in cases:
        p = kvplan_process(*args, cwd=tmp_path)  # a blocking open would time out: the test fails, never hangs
        assert (p.returncode, p.stderr.strip()) == (1, error), args


def test_symlink_to_urandom_is_refused_not_read(tmp_path):
    (tmp_path / "rnd.yaml").symlink_to("/dev/urandom")
    p = kvplan_process("vllm", "--file", "rnd.yaml", cwd=tmp_path)
    assert (p.returncode, p.stderr.strip()) == (1, "Error: rnd.yaml: --file: is a character device (the link "
                                                   "resolves to /dev/urandom), not a regular file; pass a regular "
                                                   "file, or - to read standard input")
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").symlink_to("/dev/urandom")
    r = run("inspect", str(d))
    assert one_error(r) == (f"Error: {d / 'config.json'}: is a character device (the link resolves to /dev/urandom), "
                            "not a regular file; pass a regular file")


def test_directory_and_size_cap(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:  # sparse: 65 MiB on paper
        f.truncate(65 << 20)
    assert one_error(run("vllm", "--file", str(big))) == (
        f"Error: {big}: --file: is 65 MiB, more than kvplan reads for a manifest (64 MiB); pass the part "
        "that matters (a smaller file)")
    assert one_error(run("check", str(tmp_path))) == (
        f"Error: {tmp_path}: is a directory, not a regular file; pass a regular file, or - to read standard input")


# --- encodings --------------------------------------------------------------------------------


def test_undecodable_files_to_vllm_file():
    f = HOSTILE / "compose-utf16.yaml"
    assert one_error(run("vllm", "--file", str(f))) == (
        f"Error: {f}: --file: is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8 "
        "(iconv -f UTF-16 -t UTF-8)")
    f = HOSTILE / "binary.bin"
    assert one_error(run("vllm", "--file", str(f))) == (
        f"Error: {f}: --file: is binary or UTF-16 (a NUL byte at offset 0); pass a UTF-8 text file")


def test_file_dash_reads_standard_input():
    # `helm template … | kvplan vllm --file -`: the manifest on standard input reads as the file does
    text = (MANIFESTS / "kserve-huggingfaceserver-readme-llama3.1.yaml").read_text()
    from_file = run("vllm", "--file", str(MANIFESTS / "kserve-huggingfaceserver-readme-llama3.1.yaml"),
                    "--gpu", "H100-80GB", "--format", "json")
    from_stdin = run("vllm", "--file", "-", "--gpu", "H100-80GB", "--format", "json", input=text)
    assert from_stdin.exit_code == from_file.exit_code == 0, from_stdin.stderr
    import json

    a, b = json.loads(from_file.stdout), json.loads(from_stdin.stdout)
    same = ("outcome", "policy", "model", "serving", "groups", "tensors", "memory", "warnings")
    assert {k: a[k] for k in same} == {k: b[k] for k in same}


# --- YAML: bombs and depth refused while composing --------------------------------------------


def test_alias_bomb_as_compose_command_is_refused_in_milliseconds():
    f = HOSTILE / "compose-alias-bomb-command.yaml"
    run("vllm", "--file", str(HOSTILE / "compose-image-7.yaml"))  # the manifest readers' imports are not the YAML's time
    start = time.perf_counter()
    r = run("vllm", "--file", str(f))
    elapsed = time.perf_counter() - start
    assert one_error(r) == (f"Error: {f}:9: not valid YAML (aliases expand to more than 100,000 nodes (a YAML alias "
                            "bomb?)); fix the YAML")
    assert elapsed < 1.0, elapsed  # 9 levels of 9 aliases: 387,420,489 words if expanded (main: over a minute)


def test_yaml_nested_1000_deep():
    f = HOSTILE / "compose-nested-1000.yaml"
    run("vllm", "--file", str(HOSTILE / "compose-image-7.yaml"))  # the manifest readers' imports are not the YAML's time
    start = time.perf_counter()
    r = run("vllm", "--file", str(f))
    elapsed = time.perf_counter() - start
    assert one_error(r) == f"Error: {f}:4: not valid YAML (it nests more than 100 levels deep); fix the YAML"
    assert elapsed < 1.0, elapsed  # refused in the scanner at the 101st bracket (1.7 s when left to the composer)


def test_bomb_and_depth_in_a_deployments_file(tmp_path):
    f = tmp_path / "d.yaml"
    bomb = (HOSTILE / "compose-alias-bomb-command.yaml").read_text().split("    command:")[0]
    f.write_text(bomb.replace("services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.1\n", "").replace("    x-", "x-")
                 + "deployments: *j\n")
    assert one_error(run("check", str(f))) == (
        f"Error: {f}:6: invalid YAML: aliases expand to more than 100,000 nodes (a YAML alias bomb?)")


# --- wrong types and huge values --------------------------------------------------------------


def test_image_7_and_containers_true():
    f = HOSTILE / "compose-image-7.yaml"
    assert one_error(run("vllm", "--file", str(f))) == (
        f"Error: {f}:3: {f}: vllm: image: expected the image's name as a string, got an integer (7); quote it")
    f = HOSTILE / "k8s-containers-true.yaml"
    assert one_error(run("vllm", "--file", str(f))) == (
        f"Error: {f}:8: {f}: Deployment/vllm: containers: expected a list of containers, got a boolean (true)")


def test_model_name_of_5000_characters():
    line = (HOSTILE / "serve-model-5000-chars.txt").read_text()
    assert one_error(run("vllm", "--line", line)) == (
        "Error: model 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'...: the name has 5,000 characters, more than any path "
        "or Hugging Face id (4,096); check the model argument")


def test_json_flag_nested_5000_deep():
    line = (HOSTILE / "serve-json-5000-deep.txt").read_text()
    assert one_error(run("vllm", "--line", line)) == (
        "Error: --speculative-config: its JSON nests more than 100 levels deep; give a flat JSON object")


def test_kv_cache_memory_bytes_of_400_digits():
    line = (HOSTILE / "serve-kv-cache-memory-bytes-400-digits.txt").read_text()
    assert one_error(run("vllm", "--line", line)) == (
        "Error: --kv-cache-memory-bytes: must be at most 9,223,372,036,854,775,807 (2**63 - 1), got an integer of "
        "400 digits")


@pytest.mark.parametrize("policy", [(HOSTILE / "policy-5000-digits.txt").read_text().strip(),
                                    "vllm==0.34." + "1" * 5000])
def test_version_of_5000_digits(policy):
    r = run("simulate", "openai/gpt-oss-20b", "--kv-cache-memory", "40GiB", "--policy", policy)
    shown = policy.removeprefix("vllm==")
    assert one_error(r) == (
        f"Error: malformed vLLM version {shown[:40]!r}... ({len(shown):,} characters) in --policy vllm==X; "
        "kvplan supports vllm==0.10.1 to vllm==0.34.0 (39 releases; `kvplan policies` lists them)")


@pytest.mark.parametrize("name", ["log-admission-truncated.log", "log-admission-5000-digits.log",
                                  "log-admission-needed-5000-digits.log"])
def test_admission_errors_cut_short_or_past_any_number(name):
    # the cut one is read as far as it goes; a figure of thousands of digits is not read as a fact
    # (main: ValueError / OverflowError); the rest of the log still answers
    import json

    r = run("explain-log", str(HOSTILE / name), "--format", "json")
    assert r.exit_code == 0 and r.stderr == "", r.stderr
    data = json.loads(r.stdout)
    err = (data.get("recovered") or {}).get("admission_error")
    if name == "log-admission-truncated.log":
        # "... (24.0 GiB KV cache is needed, which is larger than the avail": the max seq len and the need
        assert err == {"max_model_len": 262144, "needed_gib": 24.0}
    else:
        assert err is None


def test_control_characters_never_break_the_error_line():
    r = run("vllm", "--policy", "a\nb\x1b[2J", "--line", "vllm serve openai/gpt-oss-20b")
    assert one_error(r).startswith("Error: unknown policy 'a\\nb\\x1b[2J'")


def test_a_log_line_past_the_parser_stack_is_skipped():
    # `non-default args: {'a': - - - … 1}` (100,000 signs): literal_eval runs out of parser stack
    # (main: internal error: MemoryError); the key is skipped, the rest of the line is read
    text = "INFO 01-01 00:00:00 [utils.py:1] non-default args: {'model': 'x', 'a': " + "-" * 100_000 + "1, 'b': <X>}\n"
    r = run("explain-log", text, "--format", "json")
    assert r.exit_code == 0 and r.stderr == "", r.stderr


def test_deployments_file_on_standard_input():
    text = "deployments:\n  - name: a\n    model: openai/gpt-oss-20b\n    kv_cache_memory: 40GiB\n"
    r = run("check", "-", "--format", "json", input=text)
    assert r.exit_code == 0, r.stderr
    import json

    assert [d["name"] for d in json.loads(r.stdout)["deployments"]] == ["a"]


# --- the bounded reader's own rules (kvplan/readfile.py) --------------------------------------


def test_yaml_aliases_and_merge_keys_below_the_limits_still_read():
    from kvplan.readfile import load_yaml

    # compose files share settings with anchors and merge keys: read as PyYAML reads them
    assert load_yaml("x: &x {image: vllm/vllm-openai, env: [A=1]}\na:\n  <<: *x\n  command: [--a]\nb: *x\n") == {
        "x": {"image": "vllm/vllm-openai", "env": ["A=1"]},
        "a": {"image": "vllm/vllm-openai", "env": ["A=1"], "command": ["--a"]},
        "b": {"image": "vllm/vllm-openai", "env": ["A=1"]}}
    nested = "a: " + "[" * 100 + "]" * 100  # exactly 100 levels below the root mapping's 1: 101 in all
    import yaml

    with pytest.raises(yaml.YAMLError, match="nests more than 100 levels deep"):
        load_yaml(nested)
    assert load_yaml("a: " + "[" * 99 + "]" * 99) is not None


def test_json_depth_ignores_brackets_inside_strings():
    from kvplan.readfile import JsonLimitError, loads_json

    assert loads_json('{"a": "' + "[" * 500 + '", "b": [[1]]}') == {"a": "[" * 500, "b": [[1]]}
    assert loads_json("[" * 100 + "]" * 100) is not None
    with pytest.raises(JsonLimitError, match="nests more than 100 levels deep"):
        loads_json("[" * 101 + "]" * 101)
    with pytest.raises(JsonLimitError, match="an integer of 101 digits"):
        loads_json("[" + "9" * 101 + "]")
