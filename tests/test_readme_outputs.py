"""Snapshot tests: every command output embedded in README.md and docs/*.md is what kvplan prints now.

Refresh with `python scripts/update_readme.py` after a deliberate change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import script_module

ROOT = Path(__file__).resolve().parent.parent
update_readme = script_module("scripts/update_readme.py")

BLOCKS = update_readme.blocks((ROOT / "README.md").read_text())
DOC_BLOCKS = [(doc.relative_to(ROOT).as_posix(), *b) for doc in update_readme.DOCS
              for b in update_readme.blocks(doc.read_text())]


def test_readme_has_output_blocks():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("doc, cmd, code, expected", DOC_BLOCKS, ids=[f"{d}: {c[:70]}" for d, c, _, _ in DOC_BLOCKS])
def test_readme_output_is_current(doc, cmd, code, expected):
    # python blocks (the library example) run as written, in a fresh interpreter
    assert update_readme.run(cmd, code) == expected, f"{doc} block for `{cmd}` is stale: run scripts/update_readme.py"


def test_every_docs_page_with_outputs_is_checked():
    # the generated pages: the CLI reference, the catalog, the policies
    pages = {d for d, *_ in DOC_BLOCKS}
    assert {"README.md", "docs/cli.md", "docs/catalog.md", "docs/policies.md"} <= pages
    cli = [c for d, c, _, _ in DOC_BLOCKS if d == "docs/cli.md"]
    from kvplan.cli.app import app

    assert {f"kvplan {c.name} --help" for c in app.registered_commands} <= set(cli)


def test_readme_is_a_front_door():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def test_readme_runs_the_library_example():
    assert any(cmd == "python" and "import kvplan" in code for cmd, code, _ in BLOCKS)
