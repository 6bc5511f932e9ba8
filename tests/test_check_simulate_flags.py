"""The one-off CI checks on `kvplan simulate`: --require-start, --fail-on-padding PCT,
--min-concurrency N (exit 3 when violated, one `Check failed:` line each on stderr,
the list in JSON's `checks_failed`)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered

app = ensure_registered()

runner = CliRunner()

GPT = ["openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5"]
# 40 GiB at threshold 1.5 (vllm-1.5): group size 16, padding 4/12 = 33.33%, max concurrency 9.40
STARTS = [*GPT, "--kv-cache-memory", "40GiB", "--max-model-len", "131072", "--policy", "vllm-1.5"]
# threshold 1.25: group size 12, drafter split across groups → start-up failure, padding 8/16 = 50%
FAILS = [*STARTS, "--threshold", "1.25"]


def simulate(*args):
    r = runner.invoke(app, ["simulate", *args, "--format", "json"])
    data = json.loads(r.stdout) if r.stdout.strip() else None
    return r, data


def checks(r):
    return [line for line in r.stderr.splitlines() if line.startswith("Check failed: ")]


def test_no_flags_exit_follows_start_up():
    r, d = simulate(*STARTS)
    assert r.exit_code == 0 and d["checks_failed"] == [] and checks(r) == []
    r, d = simulate(*FAILS)
    assert r.exit_code == 3 and d["outcome"]["starts"] is False and d["checks_failed"] == []


def test_require_start_passes_when_the_engine_starts():
    r, d = simulate(*STARTS, "--require-start")
    assert r.exit_code == 0 and d["checks_failed"] == []


def test_require_start_fails_with_the_engine_message():
    r, d = simulate(*FAILS, "--require-start")
    assert r.exit_code == 3
    msg = "--require-start: the engine would fail (All drafting layers should belong to the same kv cache group)"
    assert d["checks_failed"] == [msg]
    assert checks(r) == [f"Check failed: {msg}"]


@pytest.mark.parametrize("limit, code", [("30", 3), ("33.33", 3), ("33.34", 0), ("40", 0)])
def test_fail_on_padding(limit, code):
    # vLLM's figure: 4 padding slots / 12 sliding layers = 33.333…%; the limit is inclusive
    r, d = simulate(*STARTS, "--fail-on-padding", limit)
    assert r.exit_code == code
    if code:
        assert d["checks_failed"] == [f"--fail-on-padding {float(limit):g}: padding waste 33.33%"]
    else:
        assert d["checks_failed"] == []


@pytest.mark.parametrize("limit, code", [("9", 0), ("9.4", 0), ("9.5", 3), ("100", 3)])
def test_min_concurrency(limit, code):
    r, d = simulate(*STARTS, "--min-concurrency", limit)
    assert r.exit_code == code
    assert 9.4 <= d["memory"]["max_concurrency"] < 9.5
    if code:
        assert d["checks_failed"] == [f"--min-concurrency {float(limit):g}: max concurrency 9.40"]


def test_every_violated_check_is_reported():
    r, d = simulate(*FAILS, "--require-start", "--fail-on-padding", "10", "--min-concurrency", "100")
    assert r.exit_code == 3
    assert [c.split(":")[0] for c in d["checks_failed"]] == ["--require-start", "--fail-on-padding 10",
                                                             "--min-concurrency 100"]
    assert len(checks(r)) == 3


def test_all_checks_passing_exits_0():
    r, d = simulate(*STARTS, "--require-start", "--fail-on-padding", "34", "--min-concurrency", "9")
    assert r.exit_code == 0 and d["checks_failed"] == []


@pytest.mark.parametrize("flag", ["--fail-on-padding", "--min-concurrency"])
def test_negative_limits_are_option_errors(flag):
    # a bad option value is kvplan's exit 1 with one line naming the flag (the option table's bounds)
    r = runner.invoke(app, ["simulate", *STARTS, flag, "-1"])
    assert r.exit_code == 1
    assert r.stderr == f"Error: {flag} must be at least 0, got -1\n"


def test_table_format_reports_checks_on_stderr():
    r = runner.invoke(app, ["simulate", *STARTS, "--fail-on-padding", "30"])
    assert r.exit_code == 3
    assert "Check failed: --fail-on-padding 30: padding waste 33.33%" in r.stderr
    assert "Check failed" not in r.stdout
