"""The explain-log validation table (scripts/explain_log_validation.py → docs/explain-log-validation.md,
issue 26): the page is current; every line of a real log that states a KV figure is recovered; a
release is inferred for every log that shows one; no re-simulated log disagrees."""

from __future__ import annotations

from pathlib import Path

from scripts import explain_log_validation as v

ROOT = Path(__file__).resolve().parent.parent


def test_validation_page_is_current_and_every_stated_figure_is_recovered():
    rows = v.rows()
    assert (ROOT / "docs" / "explain-log-validation.md").read_text() == v.render(rows), \
        "docs/explain-log-validation.md is stale: run scripts/explain_log_validation.py"
    # issue 26: the project's own 18 logs plus at least 20 collected for it
    assert len(rows) >= 38
    for r in rows:
        assert r["recovered"] == r["stated"], (r["name"], sorted(set(r["stated"]) - set(r["recovered"])))
        assert not r["disagree"], (r["name"], r["disagree"])
    # a release for every log but the one older than the fingerprinted releases whose only dated line is cut
    # ("# GPU bloc") and whose engine config line predates the version in it
    assert [r["name"] for r in rows if not r["release"]] == ["44-xinference-1115-v0-engine-config-no-version.log"]
    # the gpt-oss-120b log of vllm#27508 agrees under the inferred release, without --policy
    first = rows[0]
    assert first["name"].startswith("01-vllm-27508") and not first["options"]
    assert first["policy"] == "vllm==0.11.0" and first["verdict"] == "agrees on the 1 figure"


def test_stated_lines_are_counted_apart_from_the_reader():
    """A figure line is 'stated' by its wording and number, whatever the reader does: a line cut
    before its number states nothing; one with its number does, prefixes or not."""
    assert v.STATED.search("(EngineCore pid=1) INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 2.5 GiB")
    assert v.STATED.search("▎ GPU KV cache size: 1,024 tokens")
    assert not v.STATED.search("INFO 03-11 02:56:57 llm_engine.py:322] # GPU bloc")
    assert not v.STATED.search("(Worker_PP3 pid=2729460) INFO 09-25 00:15:")
