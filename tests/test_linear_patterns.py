"""Patterns applied to input text run in linear time (issue 39): each pattern that backtracked
super-linearly gets the input that showed it, at a size where the old form took seconds or
minutes and the linear one takes milliseconds (measured before/after in the commit message); the
bound, 1 s, is ten times the linear time on a loaded machine, so the test cannot flake, and a
quadratic form would need well over it."""

import time
from pathlib import Path

import pytest

from kvplan.logs import facts_of, read_records
from kvplan.logs.extract import _literal_dict, _namespace
from kvplan.logs.reader import _PROC
from kvplan.logs.release import infer_release
from kvplan.serve.kserve import _has_template
from kvplan.usecases.explain_log.rebuild import _speculative

LOGS = Path(__file__).parent / "logs"
# the 542-character memory-account line of tests/logs/19 (vllm#50722): twelve copies on one line took 31 s
# in the release reader (one wording's lazy ".*?" per placeholder, 17 placeholders), sixteen over a minute
MEMORY_ACCOUNT = next(line for line in (LOGS / "19-vllm-50722-qwen3.5-35b-a3b-memory-account.log").read_text()
                      .splitlines() if len(line) == 542)


def _seconds(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def test_repeated_memory_account_line_reads_in_linear_time():
    records = read_records(MEMORY_ACCOUNT * 100)  # 54,200 characters on one line
    assert _seconds(infer_release, records) < 1.0
    assert _seconds(facts_of, records) < 1.0


def test_the_release_reader_still_reads_the_line_once():
    # the same line alone names 0.2x's wording at gpu_worker.py:857 (the sites in fingerprints.py)
    guess = infer_release(read_records(MEMORY_ACCOUNT))
    assert guess.lines == [1] and guess.releases


@pytest.mark.parametrize("text", [
    "(a" + " " * 60_000,                      # reader._PROC: a lazy name before "\s+pid=" (was 10 s at 48k)
    "█" * 60_000,                             # extract's logo pattern searched from every block character
    "non-default args: {" + "'a': [" * 10_000,  # _literal_dict's fallback: a list never closed
    "args: Namespace(" + "1" * 60_000,         # _namespace: "(\w+)=" tried from every digit
    "args: Namespace(" + "a=[" * 20_000,
])
def test_log_patterns_are_linear(text):
    assert _seconds(lambda: facts_of(read_records(text))) < 1.0
    assert _seconds(lambda: infer_release(read_records(text))) < 1.0


def test_fallback_parsers_are_linear():
    assert _seconds(_literal_dict, "{" + "'a': [" * 10_000) < 1.0
    assert _seconds(_namespace, "1" * 60_000) < 1.0
    assert _PROC.match("(a" + " " * 60_000) is None


def test_speculative_config_text_is_linear():
    from kvplan.usecases.explain_log.rebuild import Deployment

    dep = Deployment()
    assert _seconds(_speculative, dep, "SpeculativeConfig(" + "1" * 60_000 + ")", "log") < 1.0


def test_kserve_template_check_is_linear():
    assert _seconds(_has_template, "{" * 60_000) < 1.0
    assert _has_template("--served-model-name={{.Name}}") and not _has_template("{{ no close")
    assert not _has_template("{{\n}}")  # a template is on one line, as "\{\{.*?\}\}" read it
