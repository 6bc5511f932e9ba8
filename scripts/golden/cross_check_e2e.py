#!/usr/bin/env python3
"""End-to-end ``kvplan simulate --cross-check`` against real vLLM releases, one venv each.

For every venv (default: ``$KVPLAN_VLLM_VENVS/vllm-*``, ``<repo>/.golden-venvs`` when unset) and every
scenario below it runs, with a fresh cache so vLLM's functions really run::

    kvplan simulate MODEL [...] --cross-check --vllm-python VENV/bin/python --format json

then the same command again (answered from the cache), and prints one row per run: the release
vLLM reported, the policy kvplan simulated, whether the engine starts, the fields compared and
agreeing (and the ones that differ), and the seconds of both runs (the whole command).

Usage::

    python scripts/golden/cross_check_e2e.py                      # every venv, every scenario
    python scripts/golden/cross_check_e2e.py --venvs .golden-venvs/vllm-0.34.0 --only gpt-oss
    python scripts/golden/cross_check_e2e.py --json out.json

Exit status 1 when a run fails (exit other than 0/3, no ``cross_check`` object, or it could not run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# (label, model, extra flags): the acceptance scenario, then hybrid, MLA, Mamba and other shapes
SCENARIOS = [
    ("gpt-oss-20b + P-EAGLE (acceptance)", "openai/gpt-oss-20b",
     ["--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--kv-cache-memory", "40GiB"]),
    ("gemma-3-27b (sliding 5:1)", "google/gemma-3-27b-it", ["--kv-cache-memory", "40GiB"]),
    ("Llama-4-Scout (chunked local)", "meta-llama/Llama-4-Scout-17B-16E-Instruct", ["--kv-cache-memory", "40GiB"]),
    ("DeepSeek-V3 (MLA)", "deepseek-ai/DeepSeek-V3", ["--kv-cache-memory", "40GiB"]),
    ("Qwen3-Next (GDN hybrid)", "Qwen/Qwen3-Next-80B-A3B-Thinking", ["--kv-cache-memory", "40GiB"]),
    ("Nemotron-3-Nano (Mamba2 hybrid)", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", ["--kv-cache-memory", "40GiB"]),
    ("Qwen3-Next at 2 GiB (fails)", "Qwen/Qwen3-Next-80B-A3B-Thinking", ["--kv-cache-memory", "2GiB"]),
    ("Llama-3.1-8B auto-fit 4 GiB", "meta-llama/Meta-Llama-3.1-8B", ["--kv-cache-memory", "4GiB",
                                                                     "--max-model-len", "auto"]),
    ("gpt-oss-120b PP 2", "openai/gpt-oss-120b", ["--kv-cache-memory", "40GiB", "-pp", "2"]),
]


def run(model: str, flags: list[str], python: Path, cache: str) -> tuple[dict | None, int, float, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "KVPLAN_CACHE_DIR": cache}
    env.pop("KVPLAN_NO_CACHE", None)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kvplan.cli", "simulate", model, *flags, "--cross-check",
                           "--vllm-python", str(python), "--format", "json"],
                          capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    try:
        return json.loads(proc.stdout), proc.returncode, seconds, proc.stderr
    except json.JSONDecodeError:
        return None, proc.returncode, seconds, proc.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = Path(os.environ.get("KVPLAN_VLLM_VENVS", REPO / ".golden-venvs"))
    ap.add_argument("--venvs", nargs="*", type=Path, default=None, help=f"venv directories (default: {root}/vllm-*)")
    ap.add_argument("--only", default=None, help="scenarios whose label or model contains this")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    venvs = args.venvs or sorted(root.glob("vllm-*"), key=lambda p: [int(x) for x in p.name[5:].split(".")])
    rows, failed = [], 0
    print("| vLLM | policy simulated | scenario | starts | fields agree | differ | cold s | cached s |")
    print("|---|---|---|---|---|---|---|---|")
    for venv in venvs:
        python = venv / "bin" / "python"
        with tempfile.TemporaryDirectory() as cache:
            for label, model, flags in SCENARIOS:
                if args.only and args.only not in label and args.only not in model:
                    continue
                d, rc, cold, err = run(model, flags, python, cache)
                _, _, warm, _ = run(model, flags, python, cache)
                cc = (d or {}).get("cross_check")
                ok = cc is not None and cc["ran"] and rc in (0, 3)
                failed += not ok
                row = {"venv": str(venv), "scenario": label, "exit": rc, "seconds_cold": round(cold, 1),
                       "seconds_cached": round(warm, 1), "cross_check": cc,
                       "policy": ((d or {}).get("inputs") or {}).get("policy", {}) and d["inputs"]["policy"]["name"],
                       "starts": (d or {}).get("outcome", {}).get("starts"),
                       "error": None if ok else (cc or {}).get("reason") or err.strip().splitlines()[-1:]}
                rows.append(row)
                if cc and cc["ran"]:
                    diff = ", ".join(x["field"] for x in cc["differences"]) or "—"
                    print(f"| {cc['vllm_version']} | {row['policy']} | {label} | {row['starts']} | "
                          f"{cc['fields_agree']}/{cc['fields_compared']} | {diff} | {cold:.1f} | {warm:.1f} |",
                          flush=True)
                else:
                    print(f"| {venv.name} | — | {label} | — | — | {row['error']} | {cold:.1f} | {warm:.1f} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
