"""scripts/bench.py keeps running (it measures the start-up targets; no timing is asserted here,
only that each benchmark still drives the current code and reports a figure)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench.py"


def load():
    spec = importlib.util.spec_from_file_location("kvplan_bench", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_core_and_cli_cases_run():
    bench = load()
    core = bench.core_rate(0.0)  # one 100-simulation batch per case
    # 3 models x 2 policies, each measured at least once
    assert len(core) == 6 and all(r["simulations_per_s"] >= 1 for r in core)
    cli = bench.cold_cli(1, bench.CLI_CASES[:1])
    assert [r["case"] for r in cli] == ["kvplan --help [no cache]", "kvplan --help [warm cache]"]
