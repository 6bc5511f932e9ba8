#!/usr/bin/env python3
"""Prove the installed wheel works (run by .ci/run after the test suite).

An editable install reads the source tree, so it hides a module or a data file a wheel leaves
out. This script:

1. builds the wheel (``pip wheel --no-deps``) and checks that it holds every module under
   ``kvplan/`` and every file of the bundled catalog ``configs/`` (tracked by git when the
   checkout is a git work tree);
2. installs it into a fresh virtual environment (its dependencies from the package index), with
   nothing of the checkout on ``sys.path``;
3. runs, from ``/`` (outside the checkout), ``kvplan --version``, ``python -m kvplan.cli --help``
   (and checks that it imported neither torch nor transformers), ``kvplan models``, a
   ``simulate`` of a bundled model with a drafter, ``kvplan vllm --line``, ``kvplan explain-log``
   of a bundled log, ``kvplan check`` of the shipped deployments files, the README's Python API
   example, and the GitHub Action's two shell steps (install from the wheel, then check);
4. compares every JSON output with the same command run by the editable install (the catalog's
   location and check's wall-clock seconds aside), and prints each command's exit code.

    python scripts/wheel_check.py [--keep DIR]     # exit 0 if every step holds
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import update_readme  # noqa: E402  (the README's blocks, as its snapshot test reads them)

SIMULATE = ["simulate", "openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE",
            "--num-speculative-tokens", "5", "--kv-cache-memory", "40GiB", "--format", "json"]
VLLM_LINE = ("vllm serve openai/gpt-oss-20b --speculative-config "
             "'{\"method\":\"eagle3\",\"model\":\"amazon/GPT-OSS-20B-P-EAGLE\",\"num_speculative_tokens\":5}' "
             "--kv-cache-memory-bytes 40G")
LOG = "logs/gemma-3-27b-it-40gib-vllm-0.18.0.log"  # under the catalog (configs/ = kvplan/configs)
NO_HEAVY = ("import atexit, runpy, sys\n"
            "atexit.register(lambda: sys.__stderr__.write('HEAVY=' + ','.join(sorted(m for m in "
            "('torch', 'transformers') if m in sys.modules)) + '\\n'))\n"
            "sys.argv = ['kvplan', '--help']\nrunpy.run_module('kvplan.cli', run_name='__main__')\n")


def sh(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def source_files() -> tuple[list[str], list[str]]:
    """(every kvplan module as a wheel path, every catalog file as a wheel path)."""
    tracked = sh(["git", "ls-files", "kvplan", "configs"], cwd=ROOT)
    names = tracked.stdout.split() if tracked.returncode == 0 and tracked.stdout else [
        str(p.relative_to(ROOT)) for d in ("kvplan", "configs") for p in (ROOT / d).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts]
    modules = [n for n in names if n.startswith("kvplan/") and n.endswith(".py")]
    data = [n for n in names if n.startswith("kvplan/") and not n.endswith(".py")]
    catalog = ["kvplan/" + n for n in names if n.startswith("configs/")]
    return modules + data, catalog


def normalise(obj, roots: list[str]):
    """The JSON with the catalog's location replaced and wall-clock seconds dropped."""
    if isinstance(obj, dict):
        return {k: normalise(v, roots) for k, v in obj.items() if k != "seconds"}
    if isinstance(obj, list):
        return [normalise(v, roots) for v in obj]
    if isinstance(obj, str):
        for r in roots:
            obj = obj.replace(r, "<catalog>")
    return obj


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", metavar="DIR", help="build and install under DIR and keep it")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kvplan-wheel-"))
    work.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []

    def report(name: str, ok: bool, detail: str = "") -> None:
        print(f"wheel-check: {'ok  ' if ok else 'FAIL'} {name}" + (f" ({detail})" if detail else ""), flush=True)
        if not ok:
            failures.append(name)

    # 1. the wheel and what it holds
    dist = work / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    built = sh([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(ROOT)])
    wheels = sorted(dist.glob("kvplan_cli-*.whl"))
    if built.returncode or not wheels:
        print(built.stdout + built.stderr)
        report("pip wheel", False)
        return 1
    wheel = wheels[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    modules, catalog = source_files()
    missing = sorted(set(modules + catalog) - names)
    report(f"wheel holds {len(modules)} package files and {len(catalog)} catalog files", not missing,
           f"missing: {', '.join(missing[:8])}{' …' if len(missing) > 8 else ''}" if missing else wheel.name)
    # setuptools builds from build/lib, which keeps a module deleted from the source tree until build/ goes
    stale = sorted(n for n in names if n.startswith("kvplan/") and n.endswith(".py") and n not in set(modules))
    report("wheel holds no module the source tree lacks", not stale,
           f"stale: {', '.join(stale[:8])}; remove build/ and build again" if stale else "")

    # 2. a fresh venv, outside the checkout
    venv = work / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    sh([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    inst = sh([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)])
    report("pip install the wheel into a fresh venv", inst.returncode == 0,
           inst.stderr.strip()[-300:] if inst.returncode else f"{venv}")
    if inst.returncode:
        return 1
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "GITHUB_STEP_SUMMARY",
                                                           "GITHUB_OUTPUT", "GITHUB_ACTIONS")}
    env["COLUMNS"] = "100"
    where = sh([py, "-c", "import kvplan, pathlib; print(pathlib.Path(kvplan.__file__).parent)"], cwd="/", env=env)
    pkg = Path(where.stdout.strip())
    report("kvplan imports from the venv, not the checkout",
           where.returncode == 0 and pkg.is_absolute() and pkg.is_dir() and ROOT not in pkg.parents,
           str(pkg) if where.returncode == 0 else where.stderr.strip()[-300:])
    if where.returncode:
        return 1
    installed_catalog = pkg / "configs"
    kvplan_bin = str(venv / "bin" / "kvplan")

    # 3 + 4. the commands, from /, and the same through the editable install
    def both(name: str, argv: list[str], compare_json: bool = True, codes=(0,)) -> None:
        wheel_argv = [kvplan_bin, *[a.replace("<catalog>", str(installed_catalog)) for a in argv]]
        edit_argv = [sys.executable, "-m", "kvplan.cli", *[a.replace("<catalog>", str(ROOT / "configs")) for a in argv]]
        w = sh(wheel_argv, cwd="/", env=env)
        ok = w.returncode in codes
        detail = f"exit {w.returncode}"
        if ok and compare_json:
            e = sh(edit_argv, cwd=ROOT, env=env)
            roots = [str(installed_catalog), str(ROOT / "configs")]
            try:
                same = normalise(json.loads(w.stdout), roots) == normalise(json.loads(e.stdout), roots)
            except json.JSONDecodeError as err:
                same, detail = False, f"{detail}; not JSON: {err}"
            ok = same and e.returncode == w.returncode
            detail += "; same JSON as the editable install" if ok else "; JSON differs from the editable install"
        if not ok:
            print((w.stdout[-1500:] + w.stderr[-1500:]).rstrip())
        report("kvplan " + name, ok, detail)

    v = sh([kvplan_bin, "--version"], cwd="/", env=env)
    report("kvplan --version", v.returncode == 0 and v.stdout.startswith("kvplan "), f"exit {v.returncode}: {v.stdout.strip()}")
    h = sh([py, "-c", NO_HEAVY], cwd="/", env=env)
    heavy = [ln for ln in h.stderr.splitlines() if ln.startswith("HEAVY=")]
    report("python -m kvplan.cli --help", h.returncode == 0 and "Usage" in h.stdout and heavy == ["HEAVY="],
           f"exit {h.returncode}; torch/transformers imported: {(heavy[0][6:] or 'none') if heavy else '?'}")
    both("models --format json", ["models", "--format", "json"])
    both("simulate gpt-oss-20b + P-EAGLE --format json", SIMULATE)
    both("vllm --line '…' --format json", ["vllm", "--line", VLLM_LINE, "--format", "json"])
    both("explain-log <bundled log> --format json", ["explain-log", f"<catalog>/{LOG}", "--format", "json"])
    both("check <shipped deployments> --format json",
         ["check", *[f"<catalog>/deployments/{p.name}" for p in sorted((ROOT / "configs" / "deployments").glob("*.yaml"))],
          "--format", "json"])
    both("check <the failing example> (exit 3)",
         ["check", *[f"<catalog>/deployments/failing/{p.name}" for p in
                     sorted((ROOT / "configs" / "deployments" / "failing").glob("*.yaml"))], "--format", "json"],
         codes=(3,))

    # the README's library example, run by the wheel's Python, prints what the README says
    examples = [(code, out) for cmd, code, out in update_readme.blocks((ROOT / "README.md").read_text())
                if cmd == "python" and "import kvplan" in (code or "")]
    for code, expected in examples:
        r = sh([py, "-c", code], cwd="/", env=env)
        out = "\n".join(ln.rstrip() for ln in r.stdout.splitlines()) + "\n"
        report("README's Python API example", r.returncode == 0 and out == expected, f"exit {r.returncode}")
    if not examples:
        report("README's Python API example", False, "no ```python block with `import kvplan` in README.md")

    # the GitHub Action's shell steps, as the action runs them, against the wheel
    act_env = {**env, "PYTHON": py, "KVPLAN_VERSION": str(wheel), "KVPLAN_ACTION_PATH": str(ROOT)}
    a = sh(["bash", str(ROOT / "scripts" / "action" / "install.sh")], cwd="/", env=act_env)
    report("action step install.sh (from the wheel)", a.returncode == 0, f"exit {a.returncode}")
    summary, output = work / "summary.md", work / "github_output"
    for f in (summary, output):
        f.unlink(missing_ok=True)
    deps = " ".join(str(p) for p in sorted((installed_catalog / "deployments").glob("*.yaml")))
    c = sh(["bash", str(ROOT / "scripts" / "action" / "check.sh")], cwd=str(work), env={
        **act_env, "KVPLAN_DEPLOYMENTS": deps, "KVPLAN_JUNIT": str(work / "junit.xml"), "KVPLAN_ARGS": "",
        "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output)})
    ok = (c.returncode == 0 and (work / "junit.xml").is_file() and summary.is_file()
          and output.read_text() == "exit-code=0\n")
    report("action step check.sh (JUnit, job summary, exit-code output)", ok, f"exit {c.returncode}")

    print(f"wheel-check: {'ok' if not failures else 'FAILED: ' + '; '.join(failures)}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
