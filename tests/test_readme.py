"""The README's install and test lines can be copied as they stand: no placeholder of a repository
that does not exist, the wheel's file name as pyproject.toml builds it, the test command that CI
runs (.ci/run) and whose summary line shows, the local pre-commit hook of docs/check.md the same as
.pre-commit-hooks.yaml."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# A repository URL or action reference with a placeholder owner (paths such as configs/<org>/<name>/
# and models--<org>--<name> are templates of files, not lines to copy)
PLACEHOLDER = re.compile(r"github\.com/<|uses: *<|repo: *<|<org>/kvplan|<url>")


def _block_after(heading: str) -> str:
    """The first ```bash block after the line that starts with ``heading``."""
    rest = README[README.index(heading):]
    return re.search(r"```bash\n(.*?)```", rest, re.S).group(1).strip()


def test_no_placeholder_in_what_users_copy():
    files = [ROOT / "README.md", ROOT / "action.yml", ROOT / ".pre-commit-hooks.yaml",
             *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "scripts" / "action").glob("*.sh"))]
    hits = [f"{f.relative_to(ROOT)}:{n}: {line.strip()}" for f in files
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if PLACEHOLDER.search(line)]
    assert hits == []


def test_the_distribution_is_not_kvplan_and_the_wheel_line_names_its_file():
    name, version = PYPROJECT["project"]["name"], PYPROJECT["project"]["version"]
    assert name != "kvplan"  # pypi.org/project/kvplan is another project
    assert PYPROJECT["project"]["scripts"] == {"kvplan": "kvplan.cli.entry:main"}  # the command stays kvplan
    wheel = f"{re.sub(r'[-_.]+', '_', name)}-{version}-py3-none-any.whl"  # the wheel's file name (PEP 427)
    assert f"pip install dist/{wheel}" in README
    for line in ("`pip install .`", "`pipx install .`", "`uv tool install .`"):
        assert line in README


def test_the_test_command_is_what_ci_runs_and_shows_the_summary():
    command = _block_after("Set up and run the tests")
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    pytest_args = shlex.split(command.split("python -m pytest", 1)[1])
    addopts = shlex.split(PYPROJECT["tool"]["pytest"]["ini_options"].get("addopts", ""))
    quiet = sum(a.count("q") for a in pytest_args + addopts if re.fullmatch(r"-q+", a))
    quiet += sum(1 for a in pytest_args + addopts if a == "--quiet")
    assert quiet <= 1  # -qq hides pytest's summary line ("N passed in S s")


def test_the_inner_loop_leaves_out_the_slow_tests_only():
    assert 'python -m pytest -m "not slow"' in README
    markers = PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]
    assert [m.split(":")[0] for m in markers] == ["slow"]


def test_the_local_pre_commit_hook_is_the_published_one():
    hook = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))[0]
    doc = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(# \.pre-commit-config\.yaml.*?)```", doc, re.S).group(1)
    local = yaml.safe_load(block)["repos"][0]
    assert local["repo"] == "local"
    mine = local["hooks"][0]
    for key in ("id", "name", "entry", "files", "types", "require_serial"):
        assert mine[key] == hook[key], key


def test_every_slow_name_is_a_test():
    from conftest import SLOW

    for file, names in SLOW.items():
        text = (ROOT / "tests" / file).read_text(encoding="utf-8")
        for name in names:
            assert re.search(rf"^def {re.escape(name.split('[')[0])}\(", text, re.M), f"{file}::{name}"
