"""scripts/bench.py keeps running (it measures the start-up targets; no timing is asserted here,
only that each benchmark still drives the current code and reports a figure)."""

from __future__ import annotations

from factories import script_module


def load():
    return script_module("scripts/bench.py", "kvplan_bench")


def test_bench_core_and_cli_cases_run():
    bench = load()
    core = bench.core_rate(0.0)  # one 100-simulation batch per case
    # 3 models x 2 policies, each measured at least once
    assert len(core) == 6 and all(r["simulations_per_s"] >= 1 for r in core)
    cli = bench.cold_cli(1, bench.CLI_CASES[:1])
    assert [r["case"] for r in cli] == ["kvplan --help [no cache]", "kvplan --help [warm cache]"]


def test_bench_measures_the_first_runs_floor():
    # the floor row: a fresh interpreter importing only transformers' configuration class, [no cache] only
    bench = load()
    rows = bench.cold_cli(1, [], floor=True)
    assert [r["case"] for r in rows] == [f"{bench.FLOOR_LABEL} [no cache]"] and rows[0]["median_s"] > 0
