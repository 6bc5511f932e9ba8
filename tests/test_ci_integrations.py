"""The ways other repositories run kvplan in CI: the GitHub Action (action.yml and the shell steps
it runs, scripts/action/), the job summary kvplan check appends under GitHub Actions, and the
pre-commit hook (.pre-commit-hooks.yaml). The steps run here as the action runs them, with the
environment GitHub sets; .ci/run's wheel check runs them again from an installed wheel."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PASSING = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "configs" / "deployments").glob("*.yaml"))
FAILING = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "configs" / "deployments" / "failing").glob("*.yaml"))


def _deployments(files):
    return sum(len(yaml.safe_load((ROOT / f).read_text())["deployments"]) for f in files)


def run_check_step(tmp_path, deployments: str, junit: str = "junit.xml", args: str = ""):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(KVPLAN_DEPLOYMENTS=deployments, KVPLAN_JUNIT=str(tmp_path / junit) if junit else "",
               KVPLAN_ARGS=args, PYTHON=sys.executable, GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(ROOT),
               GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"), GITHUB_OUTPUT=str(tmp_path / "output"))
    return subprocess.run(["bash", str(ROOT / "scripts" / "action" / "check.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True)


def test_action_declares_its_inputs_and_runs_the_tested_scripts():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"deployments", "version", "junit", "args", "python-version"}
    assert action["inputs"]["deployments"]["required"] is True
    scripts = [s["run"] for s in action["runs"]["steps"] if "run" in s]
    assert scripts == ['bash "$GITHUB_ACTION_PATH/scripts/action/install.sh"',
                       'bash "$GITHUB_ACTION_PATH/scripts/action/check.sh"']
    for step in action["runs"]["steps"]:
        if "run" in step:
            script = ROOT / step["run"].split('"')[1].replace("$GITHUB_ACTION_PATH/", "")
            assert os.access(script, os.X_OK), script
            # every variable the action passes is one the script reads
            for var in step["env"]:
                assert f"{var}" in script.read_text(), (script.name, var)
    upload = [s for s in action["runs"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload and upload[0]["with"]["path"] == "${{ inputs.junit }}"


def test_the_repository_workflow_uses_the_action_on_its_deployments():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "kvplan-check.yml").read_text())
    steps = wf["jobs"]["deployments"]["steps"]
    assert {"uses": "./", "with": {"deployments": "configs/deployments/*.yaml"}} in steps


def test_check_step_passes_writes_junit_summary_and_output(tmp_path):
    r = run_check_step(tmp_path, "configs/deployments/*.yaml")
    assert r.returncode == 0, r.stderr
    assert "::error" not in r.stderr
    suites = ET.parse(tmp_path / "junit.xml").getroot()
    assert int(suites.get("tests")) == _deployments(PASSING) == 7
    assert suites.get("failures") == "0" and suites.get("errors") == "0"
    summary = (tmp_path / "summary.md").read_text()
    rows = [line for line in summary.splitlines() if line.startswith("| ") and "pass |" in line]
    assert len(rows) == 7 and "**7 passed, 0 failed**" in summary
    # gemma-3-27b-it on the default release: vLLM's num_blocks and max_concurrency, as simulate prints them
    assert "| gemma-3-27b-it | `configs/deployments/gemma-3-27b.yaml:11` | ✅ pass |" in summary
    assert (tmp_path / "output").read_text() == "exit-code=0\n"


def test_check_step_fails_with_annotations_and_a_failing_row(tmp_path):
    r = run_check_step(tmp_path, " ".join(FAILING))
    assert r.returncode == 3
    annotations = [line for line in r.stderr.splitlines() if line.startswith("::error ")]
    assert annotations and all("file=configs/deployments/failing/" in a for a in annotations)
    summary = (tmp_path / "summary.md").read_text()
    failing_rows = [line for line in summary.splitlines() if "❌ fail" in line]
    assert len(failing_rows) == 1 and "max_groups 3 > 2" in failing_rows[0]
    assert (tmp_path / "output").read_text() == "exit-code=3\n"


def test_check_step_without_a_matching_file_is_one_error(tmp_path):
    r = run_check_step(tmp_path, "configs/deployments/nothing-*.yaml")
    assert r.returncode == 1
    assert r.stdout.strip().splitlines() == [
        "::error title=kvplan check::no file matches 'configs/deployments/nothing-*.yaml' (input deployments)"]


def test_summary_appends_and_escapes_cells(tmp_path):
    # two runs in one job append two summaries (GitHub concatenates what steps append)
    run_check_step(tmp_path, PASSING[0], junit="")
    run_check_step(tmp_path, PASSING[0], junit="")
    text = (tmp_path / "summary.md").read_text()
    assert text.count("### kvplan check:") == 2
    from kvplan.report.check_tables import _md_cell

    assert _md_cell("a|b\nc") == "a\\|b<br>c"


def _hook():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["kvplan-check"]
    return hooks[0]


def _entry_argv(entry: str) -> list[str]:
    argv = shlex.split(entry)
    script = Path(sys.executable).with_name(argv[0])  # the console script installed beside this Python
    return ([str(script)] if script.exists() else [sys.executable, "-m", "kvplan.cli"]) + argv[1:]


def test_pre_commit_hook_selects_deployments_files():
    hook = _hook()
    files = re.compile(hook["files"])
    for f in PASSING + FAILING + ["deploy/deployments/prod.yml", "kv/serving.kvplan.yaml"]:
        assert files.search(f), f
    for f in [".github/workflows/kvplan-check.yml", "action.yml", ".pre-commit-hooks.yaml",
              "configs/openai/gpt-oss-20b/config.json", "deployments.md", "helm/values.yaml"]:
        assert not files.search(f), f
    assert hook["pass_filenames"] is True and hook["language"] == "python"


def test_pre_commit_hook_entry_passes_and_fails():
    hook = _hook()
    ok = subprocess.run(_entry_argv(hook["entry"]) + PASSING, cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(_entry_argv(hook["entry"]) + FAILING, cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 3
    assert "1 passed, 1 failed." in bad.stdout


def test_no_absolute_machine_path_in_the_repository():
    # real material quoted as it was published (tests/logs, tests/data) keeps its paths
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not files:  # not a git checkout (an sdist): every file under the root
        files = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]
    pattern = re.compile(r"(?<![\w.~])/(work|home/[A-Za-z]\w*|Users/[A-Za-z]\w*)/")
    offenders = []
    for f in files:
        if f.startswith(("tests/logs/", "tests/data/")) or not (ROOT / f).is_file():
            continue
        try:
            text = (ROOT / f).read_text()
        except UnicodeDecodeError:
            continue
        offenders += [f"{f}:{i}" for i, line in enumerate(text.splitlines(), 1) if pattern.search(line)]
    assert offenders == []
