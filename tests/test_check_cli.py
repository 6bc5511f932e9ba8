"""`kvplan check` end to end: the shipped examples, exit codes (0 / 3 / 1), JSON and YAML on
stdout, the JUnit file, GitHub annotations on stderr, and scripts/ci-smoke.sh."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered

from factories import script_module

app = ensure_registered()

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "configs" / "deployments"
PASSING = sorted(str(p) for p in EXAMPLES.glob("*.yaml"))
FAILING = sorted(str(p) for p in (EXAMPLES / "failing").glob("*.yaml"))
runner = CliRunner()


def invoke(*args, env=None):
    env = {"GITHUB_ACTIONS": "", "GITHUB_WORKSPACE": "", **(env or {})}
    return runner.invoke(app, ["check", *args], env=env)


def as_json(*args, env=None):
    r = invoke(*args, "--format", "json", env=env)
    return r, json.loads(r.stdout)


def write(tmp_path, text, name="deploy.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def by_name(d):
    return {x["name"]: x for x in d["deployments"]}


GPT_OSS = """\
    defaults:
      model: openai/gpt-oss-20b
      drafter: amazon/GPT-OSS-20B-P-EAGLE
      num_speculative_tokens: 5
      kv_cache_memory: 80GiB
      policy: vllm==0.33.0  # 0.34 dropped the single-group check on drafting layers
    deployments:
      - name: threshold-1.5
        threshold: 1.5
      - name: threshold-1.25
        threshold: 1.25
    """


# --- the shipped examples ------------------------------------------------------------


def test_examples_exist():
    names = {Path(p).name for p in PASSING}
    assert {"gpt-oss-20b-peagle.yaml", "gemma-3-27b.yaml", "qwen3-next.yaml"} <= names
    assert FAILING, "configs/deployments/failing/ holds the deliberately failing example"


def test_passing_examples_pass():
    r, d = as_json(*PASSING)
    assert r.exit_code == 0, r.stderr
    assert d["passed"] is True and d["summary"]["num_passed"] == d["summary"]["num_deployments"] >= 3
    dep = by_name(d)
    # gpt-oss-20b + P-EAGLE, threshold 1.5: 12 sliding + 16 full → group size 16, 2 groups,
    # 4 padding slots on the 12 sliding layers (4/12 = 33.33%)
    p = dep["gpt-oss-20b-peagle-vllm-0.18"]["plan"]
    assert (p["group_size"], p["num_groups"], p["num_padding_layers"], p["padding_waste_pct"]) == (16, 2, 4, 33.3333)
    assert p["starts"] is True
    # the known-bad pair under threshold 1.25 passes because it says it expects the failure
    bad = dep["gpt-oss-20b-peagle-vllm-0.17-known-bad"]
    assert bad["status"] == "pass" and bad["plan"]["starts"] is False and bad["plan"]["num_groups"] == 3
    # gemma-3-27b: 52 sliding + 10 full → group size 10, 8 padding slots (8/52 = 15.38%) under the ceiling
    g = dep["gemma-3-27b-it"]
    ceiling = next(e for e in g["expectations"] if e["key"] == "max_padding_waste_pct")
    assert g["plan"]["padding_waste_pct"] == 15.3846 and ceiling["passed"] and ceiling["limit"] >= 15.3846
    q = dep["qwen3-next-80b-tp4"]["plan"]
    assert (q["group_size"], q["num_groups"], q["num_padding_layers"]) == (12, 4, 0)


def test_threshold_1_5_passes_and_1_25_fails(tmp_path):
    r, d = as_json(write(tmp_path, GPT_OSS))
    assert r.exit_code == 3
    ok, bad = d["deployments"]
    assert ok["status"] == "pass" and (ok["plan"]["group_size"], ok["plan"]["num_groups"]) == (16, 2)
    assert bad["status"] == "fail" and (bad["plan"]["group_size"], bad["plan"]["num_groups"]) == (12, 3)
    assert bad["failed_expectations"] == ["starts"]  # `starts: true` is implied
    assert bad["plan"]["error"] == "All drafting layers should belong to the same kv cache group"


def test_failing_example_exits_3_and_the_other_deployment_still_runs():
    r, d = as_json(*FAILING)
    assert r.exit_code == 3
    dep = by_name(d)
    bad = dep["gpt-oss-20b-peagle-vllm-0.17"]
    assert bad["failed_expectations"] == ["starts", "max_padding_waste_pct", "max_groups", "same_layout_as"]
    layout = next(e for e in bad["expectations"] if e["key"] == "same_layout_as")
    assert layout["measured"]["differences"] == ["group size 12 vs 16", "3 vs 2 groups", "8 vs 4 padding layers"]
    assert dep["gpt-oss-20b-peagle-vllm-0.18"]["status"] == "pass"
    assert "1 of 2 deployments failed" in r.stderr


def test_unknown_model_fails_that_deployment_only(tmp_path):
    path = write(tmp_path, """\
        defaults:
          kv_cache_memory: 40GiB
        deployments:
          - name: typo
            model: google/gemma-3-27b-itt
          - name: gemma
            model: google/gemma-3-27b-it
        """)
    r, d = as_json(path)
    assert r.exit_code == 3
    typo, gemma = d["deployments"]
    assert typo["status"] == "error" and typo["outcome"]["error"].startswith("model 'google/gemma-3-27b-itt' not found")
    assert typo["plan"] is None and typo["expectations"] == []
    assert gemma["status"] == "pass" and gemma["plan"]["group_size"] == 10
    assert d["summary"] == {"num_deployments": 2, "num_passed": 1, "num_failed": 0, "num_errors": 1}


# --- exit 1: bad files, nothing run ---------------------------------------------------


def test_bad_file_exits_1_with_file_entry_key_and_line(tmp_path):
    path = write(tmp_path, """\
        deployments:
          - name: gpt
            model: openai/gpt-oss-20b
            kv_cache_memory: 80GiB
            tensor_parallel: 2
            block_size: sixteen
        """)
    r = invoke(path, "--format", "json")
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"Error: {path}:5: deployment 'gpt': key 'tensor_parallel': unknown key; did you mean 'tensor_parallel_size'?",
        f"Error: {path}:6: deployment 'gpt': key 'block_size': expected an integer (8192, 8k), got a string ('sixteen')",
    ]


def test_yaml_syntax_error_exits_1_with_line(tmp_path):
    path = write(tmp_path, "deployments:\n  - name: a\n    model: 'open\n")
    r = invoke(path)
    assert r.exit_code == 1
    assert r.stderr.startswith(f"Error: {path}:4: invalid YAML: ")


def test_one_bad_file_stops_the_run(tmp_path):
    good = write(tmp_path, GPT_OSS, "good.yaml")
    bad = write(tmp_path, "deployments: 3\n", "bad.yaml")
    r = invoke(good, bad, "--junit-xml", str(tmp_path / "j.xml"))
    assert r.exit_code == 1 and "bad.yaml:1: key 'deployments': expected a list" in r.stderr
    assert r.stdout == "" and not (tmp_path / "j.xml").exists()


def test_missing_file_and_usage_errors(tmp_path):
    r = invoke(str(tmp_path / "nope.yaml"))
    assert r.exit_code == 1 and r.stderr == f"Error: {tmp_path / 'nope.yaml'}: not found; check the path\n"
    assert invoke().exit_code == 2  # no FILE
    assert invoke(PASSING[0], "--format", "xml").exit_code == 2


# --- outputs --------------------------------------------------------------------------


def test_yaml_output_matches_json(tmp_path):
    path = write(tmp_path, GPT_OSS)
    _, j = as_json(path)
    r = invoke(path, "--format", "yaml")
    y = yaml.safe_load(r.stdout)
    for d in (j, y):
        for dep in d["deployments"]:
            dep.pop("seconds")
    assert r.exit_code == 3 and y == j


def test_table_output(tmp_path):
    r = invoke(write(tmp_path, GPT_OSS), env={"COLUMNS": "120"})  # wide enough for every cell on one line
    assert r.exit_code == 3
    out = r.stdout
    assert "threshold-1.5" in out and "PASS" in out and "FAIL" in out
    assert "starts: fails, expected start" in out  # failing expectation, measured vs limit
    assert "2,327,895" in out  # KV tokens of the passing deployment (vllm-latest)
    words = " ".join(out.split())  # messages under the table wrap at the width
    assert "threshold-1.25 (" in out and "All drafting layers should belong to the same kv cache group" in words
    assert "1 passed, 1 failed." in out


def test_junit_xml_file(tmp_path):
    junit = tmp_path / "reports" / "kvplan.xml"
    junit.parent.mkdir()
    r = invoke(*FAILING, "--junit-xml", str(junit), "--format", "json")
    assert r.exit_code == 3
    root = ET.parse(junit).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    failure = cases["gpt-oss-20b-peagle-vllm-0.17"].find("failure")
    assert failure.get("message").startswith("starts: expected the engine to start; the engine would fail")
    assert "same_layout_as: layout under vllm-1.25 differs from vllm-1.5" in failure.text
    assert cases["gpt-oss-20b-peagle-vllm-0.18"].find("failure") is None


def test_junit_xml_unwritable_is_an_error(tmp_path):
    r = invoke(PASSING[0], "--junit-xml", str(tmp_path / "no" / "such" / "dir.xml"), "--format", "json")
    assert r.exit_code == 1 and "--junit-xml: cannot write" in r.stderr


def test_github_annotations_on_stderr_when_github_actions(tmp_path):
    path = write(tmp_path, GPT_OSS)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(tmp_path)}
    r, d = as_json(path, env=env)  # stdout stays parseable JSON
    assert r.exit_code == 3 and d["passed"] is False
    notes = [line for line in r.stderr.splitlines() if line.startswith("::")]
    # the implied `starts: true` points at the deployment's entry (line 9: "- name: threshold-1.25")
    assert notes == [
        "::error file=deploy.yaml,line=10,title=kvplan check%3A threshold-1.25 (starts)::expected the engine to start; "
        "the engine would fail at start-up (drafter): AssertionError: All drafting layers should belong to the same "
        "kv cache group",
    ]
    r, _ = as_json(path)  # not in GitHub Actions: no workflow commands
    assert "::error" not in r.stderr and "::error" not in r.stdout


def test_github_annotations_for_a_bad_file(tmp_path):
    path = write(tmp_path, "deployments:\n  - name: a\n    model: m\n    kv_cache_memory: 1GiB\n    tp: 2\n")
    r = invoke(path, env={"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(tmp_path)})
    assert r.exit_code == 1
    assert any(line.startswith("::error file=deploy.yaml,line=5,title=kvplan check%3A bad deployments file::"
                               "deployment 'a': key 'tp': unknown key") for line in r.stderr.splitlines())


def test_check_has_help():
    r = runner.invoke(app, ["check", "--help"])
    assert r.exit_code == 0 and "--junit-xml" in r.stdout and "Exit codes" in r.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_ci_smoke_script(tmp_path):
    script = ROOT / "scripts" / "ci-smoke.sh"
    assert os.access(script, os.X_OK), "scripts/ci-smoke.sh must be executable (.ci/run calls it directly)"
    env = {**os.environ, "PYTHON": sys.executable, "GITHUB_ACTIONS": ""}
    # from another directory: the script moves to the repository root itself
    r = subprocess.run([str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ci-smoke: ok" in r.stdout


# --- docs/check.md (the README's "kvplan check" and "Use in CI" text) stays true -------------


def test_docs_name_every_key_and_expectation():
    from kvplan.usecases.check.schema import EXPECTATIONS, OPTIONS

    doc = (ROOT / "docs" / "check.md").read_text()
    assert "# `kvplan check`" in doc and "## Use in CI" in doc
    for key in [*OPTIONS, *EXPECTATIONS, "defaults", "deployments", "expect", "name"]:
        assert f"`{key}" in doc, f"docs/check.md does not mention `{key}`"
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |"):
        assert code in doc


def test_docs_embedded_output_is_current():
    update_readme = script_module("scripts/update_readme.py")
    blocks = update_readme.blocks((ROOT / "docs" / "check.md").read_text())
    assert blocks
    for cmd, code, expected in blocks:
        assert update_readme.run(cmd, code) == expected, f"docs/check.md block for `{cmd}` is stale"
