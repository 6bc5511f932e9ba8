#!/usr/bin/env python3
"""Benchmarks: cold CLI wall time and simulations per second of the core.

    python scripts/bench.py            # all
    python scripts/bench.py --runs 7   # more CLI runs (median reported)
    python scripts/bench.py --cases simulate --no-core   # only the CLI cases whose label holds "simulate"

Cold CLI: a fresh interpreter per run (`python -m kvplan.cli …`), so imports count ("no cache":
no config cache, bytecode as the environment has it; "warm cache": the config and bytecode caches
filled by a first, discarded run, as on a user's second run); wall time and
the child's CPU time (user + system) are both reported, the latter being what to compare when the
machine is shared. Targets (issue 38, the installed wheel): `kvplan --help` ≤ 0.15 s, a warm simulate
of a bundled model ≤ 0.30 s, the first run on a config never seen (a copy of a bundled config.json at
a path of its own: transformers parses it) ≤ 1.2 s.
The floor of a first run on a config never seen: a fresh interpreter that only imports transformers'
configuration class for that config (torch hidden, as kvplan reads configs), [no cache] only.
Core: `simulate()` on prepared layer specs, no CLI, no config parsing, one core.
Figures go to stdout as a table and, with --json, as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CLI_CASES = [
    ("kvplan --help", ["--help"]),
    ("inspect gpt-oss-20b + P-EAGLE (json)",
     ["inspect", "openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5",
      "--format", "json"]),
    ("simulate gpt-oss-20b + P-EAGLE 40GiB (json)",
     ["simulate", "openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5",
      "--kv-cache-memory", "40GiB", "--max-model-len", "131072", "--format", "json"]),
    ("simulate gemma-3-27b 40GiB (table)",
     ["simulate", "google/gemma-3-27b-it", "--kv-cache-memory", "40GiB", "--max-model-len", "131072"]),
    ("simulate gpt-oss-20b on an H100 (json)",  # the budget's weight rules read the config too
     ["simulate", "openai/gpt-oss-20b", "--gpu", "H100-80GB", "--format", "json"]),
    # a config.json at a path of its own (no bundled resolved view): [no cache] is a first run on it
    ("simulate a config never seen (gemma-3-27b's, edited; json)",
     ["simulate", "{unseen}", "--kv-cache-memory", "40GiB", "--format", "json"]),
]


# What a first run on a config never seen cannot go below: transformers' import and the configuration class
# (gemma-3-27b's, as in the case above), torch hidden as kvplan.model.hfconfig hides it; no kvplan code.
FLOOR_LABEL = "floor: transformers' Gemma3Config import alone (torch hidden)"
FLOOR_CODE = ("import sys; sys.modules['torch'] = None; from transformers import CONFIG_MAPPING; "
              "CONFIG_MAPPING['gemma3']")


def unseen_config(model: str = "google/gemma-3-27b-it") -> str:
    """A bundled config.json (gemma-3-27b-it's unless ``--unseen-model`` names another) with one key more,
    ``_name_or_path`` (which no layout reads), set to the folder's name: neither kvplan's shipped resolved views
    nor its cache (keyed by the SHA-256 of the parsed config) know it, so its model type's configuration-class
    table (``kvplan.model.config_table``) answers it, else transformers parses it; in a temporary folder of its own."""
    import json
    import tempfile
    from pathlib import Path

    from kvplan.model.catalog import catalog_config_path

    folder = Path(tempfile.mkdtemp(prefix="kvplan-bench-config-"))
    doc = json.loads(Path(catalog_config_path(model)).read_text(encoding="utf-8"))
    doc["_name_or_path"] = folder.name
    (folder / "config.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return str(folder / "config.json")


def cold_cli(runs: int, cases=CLI_CASES, *, floor: bool = False, unseen_model: str | None = None) -> list[dict]:
    """Fresh interpreters; each case without the config cache (first run on a config) and with
    a warm one (every later run: transformers is not imported). ``floor``: the first run's floor
    (``FLOOR_CODE``) too, as a [no cache] row."""
    import os
    import tempfile

    rows = []
    unseen = unseen_config(unseen_model or "google/gemma-3-27b-it") if any("{unseen}" in args for _, args in cases) \
        else None
    cases = [(label.replace("gemma-3-27b's", f"{unseen_model}'s") if unseen_model and "{unseen}" in args else label,
              [unseen if a == "{unseen}" else a for a in args]) for label, args in cases]
    cache_dir = tempfile.mkdtemp(prefix="kvplan-bench-cache-")
    # Warm = what a user's second run gets: kvplan's config cache and Python's bytecode cache both
    # filled by the first (discarded) run. Where PYTHONDONTWRITEBYTECODE is set (some sandboxes
    # and containers) every run would compile kvplan from source, which an installed kvplan
    # never does; the warm runs then keep their bytecode under a temporary prefix.
    pyc = {"PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="kvplan-bench-pyc-")} \
        if os.environ.get("PYTHONDONTWRITEBYTECODE") else {}
    for mode, extra in (("no cache", {"KVPLAN_NO_CACHE": "1"}), ("warm cache", {"KVPLAN_CACHE_DIR": cache_dir, **pyc})):
        env = {**os.environ, **extra}
        if mode == "warm cache":
            env.pop("KVPLAN_NO_CACHE", None)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        runs_of = [(label, [sys.executable, "-m", "kvplan.cli", *args]) for label, args in cases]
        if floor and mode == "no cache":
            runs_of.append((FLOOR_LABEL, [sys.executable, "-c", FLOOR_CODE]))
        for label, command in runs_of:
            times, cpu = [], []
            for i in range(runs + (1 if mode == "warm cache" else 0)):
                c0 = _children_cpu()
                t0 = time.perf_counter()
                proc = subprocess.run(command, capture_output=True, env=env)
                if not (mode == "warm cache" and i == 0):  # the first run fills the cache
                    times.append(time.perf_counter() - t0)
                    cpu.append(_children_cpu() - c0)
                if proc.returncode != 0:  # each case is one that starts: a failure adds the fix's re-simulation
                    raise SystemExit(f"{label} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
            rows.append({"case": f"{label} [{mode}]", "runs": runs, "median_s": round(statistics.median(times), 3),
                         "min_s": round(min(times), 3), "median_cpu_s": round(statistics.median(cpu), 3)})
    return rows


def _children_cpu() -> float:
    """User + system CPU seconds of finished child processes: unlike wall time, it does not
    grow when other processes share the cores (figures taken on a busy machine stay comparable)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def core_rate(seconds: float) -> list[dict]:
    """simulate() on layouts built once by the model layer (what every command then runs)."""
    from kvplan.usecases.pipeline import model_facts
    from kvplan.engines.vllm import SimulateOptions, get_era, simulate
    from kvplan.model import ServingOptions, build_model_layout

    rows = []
    opts = SimulateOptions(kv_cache_memory_bytes=40 << 30, max_model_len=131072)
    for label, model, drafter in [
        ("gpt-oss-20b + P-EAGLE (28 layers)", "openai/gpt-oss-20b", "amazon/GPT-OSS-20B-P-EAGLE"),
        ("gemma-3-27b (62 layers)", "google/gemma-3-27b-it", None),
        ("Qwen3-Next (48 layers, Mamba alignment)", "Qwen/Qwen3-Next-80B-A3B-Thinking", None),
    ]:
        layout = build_model_layout(model, drafter, ServingOptions(num_speculative_tokens=1 if drafter else None))
        for era_name in ("vllm-1.25", "vllm-latest"):
            era = get_era(era_name)
            facts = model_facts(layout, era)
            best = 0.0
            deadline = time.perf_counter() + seconds
            while True:  # best of several 100-run batches, at least one
                t0 = time.perf_counter()
                for _ in range(100):
                    simulate(layout.layers, layout.ranks, facts, era, opts)
                best = max(best, 100 / (time.perf_counter() - t0))
                if time.perf_counter() >= deadline:
                    break
            rows.append({"case": f"{label}, {era_name}", "simulations_per_s": int(best)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="cold CLI runs per case (median reported)")
    ap.add_argument("--seconds", type=float, default=2.0, help="time per core case")
    ap.add_argument("--json", action="store_true", help="print JSON instead of text")
    ap.add_argument("--cases", help="only the CLI cases whose label contains this text (case-insensitive)")
    ap.add_argument("--no-floor", action="store_true", help="leave out the first run's floor (transformers alone)")
    ap.add_argument("--no-core", action="store_true", help="leave out the core rates")
    ap.add_argument("--unseen-model", help="the bundled model whose config, edited, is the config never seen "
                    "(default google/gemma-3-27b-it)")
    a = ap.parse_args()
    cases = [c for c in CLI_CASES if a.cases is None or a.cases.lower() in c[0].lower()]
    rows = cold_cli(a.runs, cases, floor=not a.no_floor, unseen_model=a.unseen_model)
    result = {"python": sys.version.split()[0], "cli": rows,
              "core": [] if a.no_core else core_rate(a.seconds)}
    if a.json:
        print(json.dumps(result, indent=2))
        return
    for r in result["cli"]:
        print(f"cold  {r['case']:<62} median {r['median_s']:.3f} s (min {r['min_s']:.3f}, "
              f"cpu {r['median_cpu_s']:.3f} s, {r['runs']} runs)")
    for r in result["core"]:
        print(f"core  {r['case']:<48} {r['simulations_per_s']:>8,} simulations/s")


if __name__ == "__main__":
    main()
