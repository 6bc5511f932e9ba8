"""Snapshot tests: every command output embedded in README.md is what kvplan prints now.

Refresh with `python scripts/update_readme.py` after a deliberate change.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("update_readme", ROOT / "scripts" / "update_readme.py")
update_readme = importlib.util.module_from_spec(spec)
spec.loader.exec_module(update_readme)

BLOCKS = update_readme.blocks((ROOT / "README.md").read_text())


def test_readme_has_output_blocks():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("cmd, code, expected", BLOCKS, ids=[c[:80] for c, _, _ in BLOCKS])
def test_readme_output_is_current(cmd, code, expected):
    # python blocks (the library example) run as written, in a fresh interpreter
    assert update_readme.run(cmd, code) == expected, f"README block for `{cmd}` is stale: run scripts/update_readme.py"


def test_readme_runs_the_library_example():
    assert any(cmd == "python" and "import kvplan" in code for cmd, code, _ in BLOCKS)
