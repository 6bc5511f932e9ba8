"""Logs as production stores them (issue 39): every real log of tests/logs/, wrapped in each store's
documented shape by tests/log_shapes.py, gives the same facts (kind, values, text and line) and the
same release as the plain log; and real samples of the shapes (tests/logs/formats/README.md)."""

from pathlib import Path

import pytest

from kvplan.logs import facts_of, read_records
from kvplan.logs.release import infer_release
from kvplan.logs.stored import plain_lines
from log_shapes import FORMATS

LOGS = Path(__file__).parent / "logs"
PLAIN = sorted(p.name for p in LOGS.glob("*.log"))
# a terminal-wrapped remainder is re-joined only where headers mark where records start; with every
# header elided, nothing marks it (the error line is read up to where the terminal cut it)
ELIDED_WRAPPED = {"06-intel-arc-b70-4-wrapped-admission.log"}


def _facts(text: str):
    records = read_records(text)
    return [(f.kind, f.values, f.text, f.line) for f in facts_of(records).items], infer_release(records)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("name", PLAIN)
def test_stored_log_gives_the_plain_logs_facts(name, fmt):
    if fmt == "prefix-elided" and name in ELIDED_WRAPPED:
        pytest.skip("a wrapped remainder without any header to mark records (see ELIDED_WRAPPED)")
    plain = (LOGS / name).read_text()
    want, want_release = _facts(plain)
    got, got_release = _facts(FORMATS[fmt](plain.splitlines()))
    assert got == want
    if fmt == "prefix-elided":  # the [file.py:N] sites are gone: the wordings alone narrow less or as much
        assert set(want_release.releases) <= set(got_release.releases)
    else:
        assert got_release.releases == want_release.releases


def test_every_real_log_has_facts_in_every_format():
    # the comparison above is not vacuous: the plain logs carry facts
    assert sum(len(_facts((LOGS / n).read_text())[0]) for n in PLAIN) > 100


def test_docker_splits_a_long_line_into_parts():
    # Docker's log copier cuts a long line (over its 16 KiB buffer) into partial messages; json-file
    # writes each with a "log" that has no final newline; the parts are one line again
    line = "INFO 10-03 16:22:17 [kv_cache_utils.py:1087] GPU KV cache size: 567,978 tokens"
    import json

    parts = [line[:30], line[30:60], line[60:] + "\n"]
    text = "".join(json.dumps({"log": p, "stream": "stdout", "time": "2025-10-03T16:22:17.1Z"}) + "\n" for p in parts)
    assert plain_lines(text) == [line]
    facts = facts_of(read_records(text)).items
    assert [(f.kind, f.values) for f in facts] == [("kv_cache_size", {"kv_cache_size_tokens": 567_978})]


def test_json_record_after_a_process_prefix_and_a_timestamp():
    # a worker's JSON record as vLLM's stdout prefixer and kubectl --timestamps print it
    text = ('2025-10-03T16:22:17.123456789Z (EngineCore_DP0 pid=12) {"asctime": "2025-10-03 16:22:17,123", '
            '"levelname": "INFO", "name": "vllm.v1.worker.gpu_worker", "processName": "EngineCore_DP0", '
            '"process": 12, "message": "Available KV cache memory: 24.54 GiB"}\n')
    facts = facts_of(read_records(text)).items
    assert [(f.kind, f.values, f.process) for f in facts] == [
        ("available_kv_memory", {"gib": 24.54}, "EngineCore_DP0 pid=12")]


def test_logfmt_line_of_the_issue():
    text = 'ts=2025-10-03T16:22:17Z level=INFO caller=gpu_worker.py:298 msg="Available KV cache memory: 24.54 GiB"\n'
    assert [(f.kind, f.values) for f in facts_of(read_records(text)).items] == [
        ("available_kv_memory", {"gib": 24.54})]
    assert read_records(text)[0].site == "gpu_worker.py:298"


def test_a_plain_line_that_looks_structured_is_kept():
    # non-default args end in "}" and hold "=" inside; neither is a JSON or logfmt record
    line = "(APIServer pid=1) INFO 10-03 16:22:17 [utils.py:253] non-default args: {'model': 'm', 'x': 'a=b'}"
    assert plain_lines(line + "\n") == [line]
    assert plain_lines('{"no": "line key"}\n') == ['{"no": "line key"}']


FORMATS_DIR = LOGS / "formats"


@pytest.mark.parametrize("sample", sorted(p.name for p in FORMATS_DIR.glob("*.jsonl")))
def test_vllm_json_formatter_sample_gives_the_plain_logs_facts(sample):
    # written by vLLM 0.34.0's own JSON logging from the plain log's messages (tests/logs/formats/README.md)
    plain = LOGS / (sample.split(".vllm-")[0] + ".log")
    want = [(f.kind, f.values) for f in facts_of(read_records(plain.read_text())).items]
    got = [(f.kind, f.values) for f in facts_of(read_records((FORMATS_DIR / sample).read_text())).items]
    assert got == want and want


def test_formats_readme_names_every_sample():
    readme = (FORMATS_DIR / "README.md").read_text()
    assert all(p.name in readme for p in FORMATS_DIR.iterdir() if p.name != "README.md")
