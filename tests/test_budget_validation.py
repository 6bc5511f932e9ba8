"""The memory-budget validation table (scripts/budget_validation.py → docs/budget-validation.md):
the page is current, and every bounded case stays within issue 24's bounds (weights 2 %, KV 5 %)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("budget_validation", ROOT / "scripts" / "budget_validation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_validation_page_is_current_and_bounded_rows_hold():
    v = _script()
    rows = v.rows()
    assert (ROOT / "docs" / "budget-validation.md").read_text() == v.render(rows), \
        "docs/budget-validation.md is stale: run scripts/budget_validation.py"
    bounded = [r for r in rows if r["case"]["bounded"]]
    assert len(bounded) >= 2
    for r in bounded:
        assert abs(r["error"]["weights_gib"]) <= v.WEIGHTS_BOUND, r["case"]["id"]
        assert abs(r["error"]["kv_gib"]) <= v.KV_BOUND, r["case"]["id"]
    # every log file is a case, every case's log exists, and each has a source
    folder = ROOT / "tests" / "logs" / "budget"
    files = {r["case"]["file"] for r in rows if r["case"]["file"]}
    assert files == {p.name for p in folder.glob("*.log")}
    index = (folder / "INDEX.md").read_text()
    assert all(f in index for f in files) and all(r["case"]["source"] for r in rows)
    # the unbounded rows say why
    assert all(r["case"].get("why_not") for r in rows if not r["case"]["bounded"])
