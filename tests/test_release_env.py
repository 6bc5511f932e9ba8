"""scripts/golden/release_env.sh never pip-installs vllm into the shared base venv: a release whose
unpacked tree does not import (0.10.x asks for the whole ``vllm`` package) stops with a message."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "golden" / "release_env.sh"

# A stand-in base interpreter: torch and packaging import, no light package is missing, the import check
# of kvplan/verify/vllm_runner.py fails on a vllm module, and every pip call is written to a file.
FAKE_PYTHON = """#!/usr/bin/env bash
case "$1" in
  -c) exit 0 ;;
  -m) echo "$*" >> "$(dirname "$0")/pip_calls"; exit 0 ;;
  *light_reqs.py) exit 0 ;;
  *vllm_runner.py) echo "ModuleNotFoundError: No module named 'vllm.worker'"; exit 1 ;;
esac
exit 2
"""


def test_a_missing_vllm_module_is_an_error_not_an_install(tmp_path):
    base = tmp_path / "base"
    (base / "bin").mkdir(parents=True)
    py = base / "bin" / "python"
    py.write_text(FAKE_PYTHON)
    py.chmod(0o755)
    tree = tmp_path / "src" / "0.10.2"
    tree.mkdir(parents=True)
    (tree / ".done").touch()
    env = dict(os.environ, RELEASE_BASE=str(base), RELEASE_SRC=str(tmp_path / "src"),
               RELEASE_WHEELS=str(tmp_path / "wheels"))
    r = subprocess.run(["bash", str(SCRIPT), "0.10.2"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "never\n    pip-installs vllm into the shared base venv" in r.stderr
    assert r.stdout == ""  # no PYTHONPATH line
    calls = (base / "bin" / "pip_calls").read_text() if (base / "bin" / "pip_calls").exists() else ""
    assert "vllm" not in calls.replace("vllm_runner", "")
