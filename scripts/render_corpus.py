#!/usr/bin/env python3
"""Record what kvplan prints for a broad set of command lines, and compare a later recording with it.

A refactoring of the renderers (report/, cli/render.py) must leave every byte of output as it was.
This records, in one process, the stdout, stderr and exit code of:

- every ``kvplan`` command embedded in README.md and docs/*.md (scripts/update_readme.py's blocks);
- a seeded sweep of simulate, vllm, inspect, fit, check, compare and explain-log over the bundled
  models, deployments files and logs (``--seed``, ``--n``);

each at 80 and 100 columns, piped, as a table and with ``--format json``; and with ``--tests``, every
command line the test files that run the CLI invoke (``CliRunner.invoke`` recorded while they run,
``-m "not slow"``; temporary paths written as ``<tmp>``).

    python scripts/render_corpus.py record before.json                # on the code before
    python scripts/render_corpus.py compare before.json               # on the code after: exit 1 on a difference

It runs the commands through the Typer app in this process (CliRunner: stdout is not a terminal, as
when piped), so a recording takes a minute, not one interpreter start per case.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WIDTHS = (80, 100)

BUDGETS = (["--kv-cache-memory", "40GiB"], ["--kv-cache-memory", "8GiB"], ["--gpu", "H100-80GB"],
           ["--gpu", "A100-40GB"], ["--kv-cache-memory", "200MiB"])
EXTRAS = (["--max-model-len", "131072"], ["--max-model-len", "8192"], ["--tensor-parallel-size", "2"],
          ["--pipeline-parallel-size", "2"], ["--data-parallel-size", "2"], ["--policy", "vllm==0.17.1"],
          ["--policy", "vllm==0.10.1"], ["--policy", "vllm-1.25"], ["--policy", "vllm==0.34.0"],
          ["--kv-cache-dtype", "fp8"], ["--max-num-seqs", "4"], ["--disable-hybrid-kv-cache-manager"],
          ["--kv-offloading-size", "64"], ["--num-gpu-blocks-override", "1000"], ["--block-size", "32"],
          ["--enable-prefix-caching"], ["--threshold", "1.3"])
LOOKS = ([], ["--summary"], ["--explain"])


def doc_commands() -> list[list[str]]:
    sys.path.insert(0, str(ROOT / "scripts"))
    import update_readme

    cmds = []
    for doc in update_readme.DOCS:
        for cmd, _code, _out in update_readme.blocks(doc.read_text()):
            if cmd != "python" and not cmd.endswith("--help"):
                cmds.append(shlex.split(cmd)[1:])
    return list(dict.fromkeys(map(tuple, cmds)))  # type: ignore[arg-type]


def sweep(seed: int, n: int) -> list[list[str]]:
    rng = random.Random(seed)
    index = json.loads((ROOT / "configs" / "INDEX.json").read_text())
    models = sorted({e["model_id"] for e in index if e.get("role", "target") == "target"})
    cases: list[list[str]] = []
    for model in models:  # every bundled model once, simulated and inspected
        cases.append(["simulate", model, *rng.choice(BUDGETS), *rng.choice(LOOKS)])
    cases.append(["inspect", rng.choice(models)])
    for _ in range(n):
        model = rng.choice(models)
        extra = [x for e in rng.sample(EXTRAS, rng.randint(0, 3)) for x in e]
        look = rng.choice(LOOKS)
        cases.append(["simulate", model, *rng.choice(BUDGETS), *extra, *look])
    for _ in range(max(4, n // 8)):
        model = rng.choice(models)
        cases.append(["fit", model, "--gpu", rng.choice(["H100-80GB", "A100-80GB", "L4"]),
                      *rng.choice([[], ["--max-model-len", "32768"], ["--summary"]])])
        cases.append(["compare", model, *rng.choice(BUDGETS[:3]), "--target-len", rng.choice(["8192", "131072"]),
                      "--target-concurrency", rng.choice(["1", "8"])])
        cases.append(["inspect", model, *rng.choice([[], ["--tensor-parallel-size", "2"]])])
    for f in sorted((ROOT / "configs" / "deployments").rglob("*.yaml")):
        cases.append(["check", str(f.relative_to(ROOT))])
        cases.append(["check", str(f.relative_to(ROOT)), "--summary"])
    for f in sorted((ROOT / "configs" / "logs").glob("*.log")) + sorted((ROOT / "tests" / "logs").glob("*.log")):
        cases.append(["explain-log", str(f.relative_to(ROOT))])
    for line in ("vllm serve openai/gpt-oss-20b --kv-cache-memory-bytes 40G --max-model-len 32k",
                 "vllm serve google/gemma-3-27b-it --gpu-memory-utilization 0.9 --tensor-parallel-size 2",
                 "vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --max-model-len 262144"):
        cases.append(["vllm", "--line", line, "--gpu", "H100-80GB"])
    cases += [["simulate", "--list-gpus"], ["models"], ["policies"],
              ["diff", "google/gemma-3-27b-it", "--from", "vllm==0.17.1", "--to", "vllm==0.34.0", "--gpu", "H100-80GB"],
              ["export", "openai/gpt-oss-20b", "--to", "blis", "--gpu", "H100-80GB"]]
    return cases


SECONDS = re.compile(r'("seconds": |seconds: )[0-9.e-]+')  # check's timings: the one field that varies


def normalized(outputs: dict, root: str) -> dict[str, dict]:
    """Timings and the checkout's path (a recording may come from another copy of the tree) made constant."""
    def norm(text: str) -> str:
        return SECONDS.sub(r"\1<s>", text.replace(root, "<root>"))

    return {norm(k): {f: norm(v) if isinstance(v, str) else v for f, v in o.items()}
            for k, o in outputs.items() if k != "__root__"}


def run_all(cases: list[list[str]]) -> dict[str, dict]:
    from typer.testing import CliRunner

    from kvplan.cli.app import app, ensure_registered

    ensure_registered()
    out: dict[str, dict] = {}
    for args in cases:
        for fmt in ([], ["--format", "json"]):
            for width in WIDTHS if not fmt else WIDTHS[:1]:  # JSON does not follow the width
                env = {"COLUMNS": str(width), "NO_COLOR": None, "FORCE_COLOR": None, "TERM": "dumb"}
                r = CliRunner().invoke(app, [*args, *fmt], env=env)
                key = f"{width} {shlex.join([*args, *fmt])}"
                crash = "" if r.exception is None or isinstance(r.exception, SystemExit) else repr(r.exception)
                out[key] = {"code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr, "crash": crash}
    return out


TEST_FILES = ("test_capacity", "test_check_cli", "test_check_simulate_flags", "test_cli", "test_compare_cli",
              "test_data_parallel", "test_disagg", "test_explain_log", "test_explain_log_real",
              "test_extensible_kv_cache", "test_failure_reports", "test_fit", "test_hardware", "test_manifests",
              "test_offload", "test_parallel_drafting", "test_pipeline_parallel", "test_prechecks", "test_serve",
              "test_verdict", "test_width")


def test_runs() -> dict[str, dict]:
    """Every ``CliRunner.invoke`` of the test files that render (outputs keyed by test, call and arguments)."""
    import pytest
    from typer.testing import CliRunner

    got: dict[str, dict] = {}
    # pytest's own temporary folders (under this machine's temporary directory), which differ run to run
    tmp = re.compile(re.escape(tempfile.gettempdir()) + r"/[^\s'\"]*?pytest-\d+/[^/\s'\"]+")
    state = {"test": "", "n": 0}

    class Capture:
        def pytest_runtest_setup(self, item):
            state.update(test=item.nodeid, n=0)

    real = CliRunner.invoke

    def invoke(self, app, args=None, *rest, **kw):
        r = real(self, app, args, *rest, **kw)
        state["n"] += 1
        argv = [str(x) for x in (args or [])] if not isinstance(args, str) else [args]
        key = tmp.sub("<tmp>", f"test {state['test']} #{state['n']} {shlex.join(argv)}")
        try:
            err = r.stderr
        except ValueError:
            err = ""
        got[key] = {"code": r.exit_code, "stdout": tmp.sub("<tmp>", r.stdout), "stderr": tmp.sub("<tmp>", err),
                    "crash": ""}
        return r

    CliRunner.invoke = invoke  # type: ignore[method-assign]
    try:
        pytest.main(["-q", "-m", "not slow", "-o", "addopts=", "-p", "no:cacheprovider", "-x",
                     *(f"tests/{f}.py" for f in TEST_FILES)], plugins=[Capture()])
    finally:
        CliRunner.invoke = real  # type: ignore[method-assign]
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("record", "compare"))
    ap.add_argument("file", type=Path)
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--n", type=int, default=120, help="random simulate cases (fit/compare/inspect: n/8 each)")
    ap.add_argument("--tests", action="store_true", help="also record the CLI runs of the test suite")
    a = ap.parse_args()
    os.chdir(ROOT)
    cases = doc_commands() + sweep(a.seed, a.n)
    got = run_all(cases)
    if a.tests:
        got.update(test_runs())
    crashes = [k for k, v in got.items() if v["crash"]]
    for k in crashes:
        print(f"crash: {k}: {got[k]['crash']}")
    if a.mode == "record":
        a.file.write_text(json.dumps({"__root__": str(ROOT), **got}, indent=0, ensure_ascii=False))
        codes = sorted({v["code"] for v in got.values()})
        print(f"recorded {len(got)} outputs of {len(cases)} command lines (exit codes {codes}) in {a.file}")
        return 1 if crashes else 0
    recorded = json.loads(a.file.read_text())
    before, got = normalized(recorded, recorded.get("__root__", str(ROOT))), normalized(got, str(ROOT))
    missing = [k for k in before if k not in got]
    differ = [k for k in before if k in got and before[k] != got[k]]
    for k in differ[:20]:
        print(f"differs: {k}")
    if differ:
        import difflib

        b, g = before[differ[0]], got[differ[0]]
        for f in b:
            if b[f] != g[f]:
                print("".join(difflib.unified_diff(str(b[f]).splitlines(True), str(g[f]).splitlines(True),
                                                   f"before {f}", f"now {f}", n=1))[:3000])
    for k in missing[:10]:
        print(f"not run now: {k}")
    new = len([k for k in got if k not in before])
    print(f"{len(before) - len(differ) - len(missing)} of {len(before)} outputs identical; {len(differ)} differ; "
          f"{len(missing)} not run now; {new} new")
    return 1 if differ or missing or crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
