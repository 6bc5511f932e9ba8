"""A long log reads in time linear in its size (issue 39: a 50 MB log took 14 s; measured figures
in the commit message). The log is a real start-up log repeated among the periodic lines a serving
vLLM prints (tests/log_shapes.py big_log); the test compares CPU times at two sizes (a quadratic
step would take 16 times as long at 4 times the size; linear takes 4), and checks that the patterns'
pre-filter never changes what the extractor finds."""

import time
from pathlib import Path

from kvplan.logs import extract, facts_of, read_records
from kvplan.logs.release import infer_release
from log_shapes import FORMATS, big_log

LOGS = Path(__file__).parent / "logs"
# no banner and no engine-config line: the release is read from the wordings, line by line
PLAIN = (LOGS / "19-vllm-50722-qwen3.5-35b-a3b-memory-account.log").read_text()


def _cpu_seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        records = read_records(text)
        facts_of(records)
        infer_release(records)
        best = min(best, time.process_time() - t)
    return best


def test_reading_scales_linearly():
    small, large = big_log(PLAIN, 512 * 1024), big_log(PLAIN, 2048 * 1024)
    ratio = _cpu_seconds(large) / _cpu_seconds(small)
    assert ratio < 10, ratio  # 4 when linear (4.0-5.0 measured on the shared 2-core machine); 16 when quadratic


def test_a_long_log_keeps_every_fact():
    text = big_log(PLAIN, 256 * 1024)
    copies = text.count(PLAIN.splitlines()[0])
    one = [(f.kind, f.values) for f in facts_of(read_records(PLAIN)).items]
    assert [(f.kind, f.values) for f in facts_of(read_records(text)).items] == one * copies


class _Everything:
    def allowed(self, record):
        return list(range(len(extract.PATTERNS)))


def test_the_prefilter_finds_what_every_pattern_finds(monkeypatch):
    for path in sorted(LOGS.glob("*.log")):
        plain = path.read_text()
        for text in [plain, *(shape(plain.splitlines()) for shape in FORMATS.values())]:
            records = read_records(text)
            gated = extract.extract(records)
            with monkeypatch.context() as m:
                m.setattr(extract, "_GATE", _Everything())
                assert extract.extract(records) == gated, path.name


def test_literal_starts_are_read_off_the_patterns():
    assert extract.literal_start(r"^Using max model len (?P<n>\d+)$") == "Using max model len "
    assert extract.literal_start(r"^Initializing an? (?:V[01] )?LLM") == "Initializing a"
    assert extract.literal_start(r"max seq len \((?P<l>\d+)\)") == "max seq len ("
    assert extract.literal_start(r"EngineCore failed|Engine core failed") == ""
    assert extract.literal_start(r"^#?\s*(?:GPU|cuda) blocks") == ""
