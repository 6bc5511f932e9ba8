"""Long work reports its steps (kvplan.progress) to a listener only when one listens; the CLI's
listener is Rich's bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import io
import sys

import kvplan
from kvplan.progress import listening, track
from kvplan.report.progress import on_terminal


def _recorder(seen):
    def listener(items, what, total):
        for x in items:
            seen.append((what, total, x))
            yield x
    return listener


def test_nobody_listening_returns_the_items_themselves():
    items = [1, 2, 3]
    assert track(items, "x") is items


def test_a_sweep_reports_each_threshold_after_the_first():
    # 1.0:1.5:0.25 is 1.0, 1.25, 1.5; the first is simulated before the loop (its layout is reused)
    seen = []
    with listening(_recorder(seen)):
        d = kvplan.sweep("google/gemma-3-27b-it", "1.0:1.5:0.25", kv_cache_memory="20GiB")
    assert [r["threshold"] for r in d["rows"]] == [1.0, 1.25, 1.5]
    assert seen == [("sweep: thresholds", 2, 1.25), ("sweep: thresholds", 2, 1.5)]


def test_check_reports_each_deployment():
    seen = []
    with listening(_recorder(seen)):
        kvplan.check(["configs/deployments/gemma-3-27b.yaml"])
    assert seen and {(w, t) for w, t, _ in seen} == {("check: deployments", len(seen))}


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_the_bar_is_drawn_on_a_terminal_stderr_only(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    for stream, drawn in ((io.StringIO(), False), (_Tty(), True)):
        monkeypatch.setattr(sys, "stderr", stream)
        with on_terminal():
            assert list(track([1, 2, 3], "fit: tensor-parallel sizes")) == [1, 2, 3]
        assert ("fit: tensor-parallel sizes" in stream.getvalue()) is drawn
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setattr(sys, "stderr", _Tty())
    with on_terminal():
        list(track([1], "x"))
    assert sys.stderr.getvalue() == ""


def test_a_long_log_reports_its_steps_and_a_short_one_none():
    from kvplan.logs.reader import PROGRESS_STEP_LINES, read_records

    line = "INFO 10-03 16:22:17 [gpu_worker.py:298] Available KV cache memory: 30.5 GiB\n"
    seen = []
    with listening(_recorder(seen)):
        short = read_records(line * 10)
    assert seen == [] and len(short) == 10
    with listening(_recorder(seen)):
        long = read_records(line * (2 * PROGRESS_STEP_LINES + 1))  # 40,001 lines: steps of 20,000, 20,000 and 1
    assert [(w, t) for w, t, _ in seen] == [("log: 20,000 lines a step", 3)] * 3
    assert len(long) == 2 * PROGRESS_STEP_LINES + 1 and long[-1].number == 2 * PROGRESS_STEP_LINES + 1
