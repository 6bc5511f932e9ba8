#!/usr/bin/env python3
"""Device check for `kvplan simulate --allocate` (run it through scripts/gpu_check.sh).

On one CUDA device: allocate and verify the gpt-oss-20b + P-EAGLE and gemma-3-27b layouts
at a 100 GiB budget (vllm-latest, default max_model_len; gpt-oss also with the vLLM 0.18
layout), show that the verification
catches three deliberate corruptions, that a layout larger than free memory is refused
without allocating, and (when typer is importable) run the CLI once with
--budget-from-device. Prints the figures; writes them to $OUT/gpu_check.json when OUT is
set. Exit 0 when every step came out as expected, 1 otherwise, 2 when it cannot run.

    scripts/gpu_check.sh                                      # on a GPU machine
    python scripts/gpu_check.py --device cpu --budget 1GiB --max-model-len 1024 --cli-reserve 20GiB  # dry run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# torch before anything parses a model config: transformers must see one torch throughout.
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvplan.device import DeviceDoesNotFitError, allocate_and_verify, budget_from_device
from kvplan.units import GiB, format_bytes, parse_bytes

# (label, model, drafter, policy): vllm-latest = 0.33 (one buffer, LBNHC views);
# vllm-1.5 = 0.18 (one tensor per slot, FlashAttention (2, num_blocks, ...) views).
GPT = ("gpt-oss-20b + P-EAGLE", "openai/gpt-oss-20b", "amazon/GPT-OSS-20B-P-EAGLE", "vllm-latest")
GEMMA = ("gemma-3-27b", "google/gemma-3-27b-it", None, "vllm-latest")
GPT_018 = ("gpt-oss-20b + P-EAGLE (vLLM 0.18 layout)", *GPT[1:3], "vllm-1.5")


def rate(n: float) -> str:
    return f"{n / 1e9:,.1f} GB/s"


def hand_built(model: str, policy: str, budget: int, max_model_len: int | None):
    """The same layers the catalog gives, written out (used when transformers is missing)."""
    from kvplan.engines.vllm import ModelFacts, SimulateOptions, get_era, simulate
    from kvplan.specs import FullAttentionSpec, LayerSpec, SlidingWindowSpec

    def full(heads, head):
        return FullAttentionSpec(block_size=16, num_kv_heads=heads, head_size=head, dtype="bfloat16")

    def sliding(window, heads, head):
        return SlidingWindowSpec(block_size=16, num_kv_heads=heads, head_size=head, dtype="bfloat16",
                                 sliding_window=window)

    if model == GPT[1]:
        # 24 layers, even = sliding(128), odd = full, 8 KV heads × 64; P-EAGLE: 4 full drafter layers
        layers = [LayerSpec(f"model.layers.{i}.attn.attn", sliding(128, 8, 64) if i % 2 == 0 else full(8, 64),
                            "target", i) for i in range(24)]
        layers += [LayerSpec(f"model.layers.{i}.self_attn.attn", full(8, 64), "drafter", i) for i in range(24, 28)]
        facts = ModelFacts(max_model_len=131072, speculative_method="eagle3", num_speculative_tokens=5)
    else:
        # 62 layers, full iff (i + 1) % 6 == 0, else sliding(1024); 16 KV heads × 128
        layers = [LayerSpec(f"language_model.model.layers.{i}.self_attn.attn",
                            full(16, 128) if (i + 1) % 6 == 0 else sliding(1024, 16, 128), "target", i)
                  for i in range(62)]
        facts = ModelFacts(max_model_len=131072)
    options = SimulateOptions(kv_cache_memory_bytes=budget, max_model_len=max_model_len)
    return simulate(tuple(layers), (), facts, get_era(policy), options)


def make_plan(case, budget: int, max_model_len: int | None):
    _, model, drafter, policy = case
    try:
        from kvplan.usecases.scenario import Scenario, run_scenario

        r = run_scenario(Scenario(model=model, drafter=drafter, num_speculative_tokens=5 if drafter else None,
                                  kv_cache_memory=budget, max_model_len=max_model_len, policy=policy))
        return r.plan, "catalog"
    except Exception as e:  # an old transformers, a missing package: the layers are known, go on
        print(f"  (catalog path failed: {type(e).__name__}: {e}; using hand-built layer specs)")
        return hand_built(model, policy, budget, max_model_len), "hand-built"


def show_plan(plan) -> str:
    w = plan.workers[0]
    sizes = sorted({t.size_bytes for t in w.tensors})
    return (f"{plan.num_groups} groups × {plan.group_size} slots, page {plan.page_size_bytes:,} B, "
            f"num_blocks {plan.num_blocks:,}, {len(w.tensors)} tensors of "
            f"{' / '.join(format_bytes(s) for s in sizes)}, max concurrency {plan.max_concurrency:.2f}")


def show_report(r: dict) -> list[str]:
    return [
        (f"allocated {format_bytes(r['allocated_bytes'])} = predicted {format_bytes(r['predicted_bytes'])} "
         f"({r['allocated_bytes']:,} B) in {r['allocate_seconds']:.3f} s; {r['backing']}, {r['view_style']} views"),
        (f"free: before {format_bytes(r['free_bytes_before'])}, while allocated "
         f"{format_bytes(r['free_bytes_allocated'])}, after {format_bytes(r['free_bytes_after'])}; "
         f"scratch {format_bytes(r['scratch_bytes'])}; leaked {r['leaked_bytes']:,} B"),
        (f"verify {r['verify_seconds']:.3f} s: write {format_bytes(r['bytes_written'])} in {r['write_seconds']:.3f} s "
         f"({rate(r['write_bandwidth_bytes_per_s'])}), read back {format_bytes(r['bytes_read'])} in "
         f"{r['read_seconds']:.3f} s ({rate(r['read_bandwidth_bytes_per_s'])}), scan "
         f"{format_bytes(r['bytes_scanned'])} in {r['scan_seconds']:.3f} s ({rate(r['scan_bandwidth_bytes_per_s'])})"),
        (f"{r['blocks_checked']:,} blocks, {r['pages_checked']:,} pages checked; ok={r['ok']}, "
         f"{r['num_failures']} failure(s)"),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget", default="100GiB")
    ap.add_argument("--max-model-len", type=int, default=None)
    ap.add_argument("--corrupt-budget", default="1GiB")
    ap.add_argument("--cli-reserve", default="30GiB", help="--reserve for the CLI step (141 GiB × 0.92 − 30 GiB ≈ 100 GiB)")
    ap.add_argument("--skip-cli", action="store_true")
    args = ap.parse_args()
    budget, small = parse_bytes(args.budget), parse_bytes(args.corrupt_budget)
    out: dict = {"torch_version": torch.__version__, "device": args.device, "budget_bytes": budget, "steps": []}
    problems: list[str] = []
    t_start = time.perf_counter()

    def step(name: str, ok: bool, **data) -> None:
        out["steps"].append({"name": name, "ok": ok, **data})
        print(f"  -> {'ok' if ok else 'NOT OK'}")
        if not ok:
            problems.append(name)

    if args.device.startswith("cuda"):
        if not torch.cuda.is_available():
            print("gpu_check: torch sees no CUDA device", file=sys.stderr)
            return 2
        free, total = torch.cuda.mem_get_info()
        out["device_name"] = torch.cuda.get_device_name()
        print(f"torch {torch.__version__}, {out['device_name']}: {format_bytes(free)} free of {format_bytes(total)}")

    print(f"\n== budget from device ({args.device}, utilization 0.92, no reserve)")
    b = budget_from_device(args.device, 0.92, 0)
    print(f"  {b:,} B ({format_bytes(b)})")
    step("budget_from_device", b > 0, budget_bytes=b)

    def full_layout(case) -> None:
        print(f"\n== {case[0]} @ {format_bytes(budget)}, policy {case[3]}")
        plan, source = make_plan(case, budget, args.max_model_len)
        if not plan.starts:
            print(f"  plan fails: {plan.failure.message}")
            step(case[0], False, source=source, failure=plan.failure.message)
            return
        print(f"  plan ({source}): {show_plan(plan)}")
        r = allocate_and_verify(plan, args.device).to_dict()  # the report as simulate's `allocation` JSON
        for line in show_report(r):
            print("  " + line)
        for f in r["failures"][:10]:
            print("  failure: " + f)
        good = r["ok"] and r["allocated_bytes"] == r["predicted_bytes"] and r["leaked_bytes"] == 0
        step(case[0], good, source=source, report={k: v for k, v in r.items() if k != "tensors"},
             tensors=r["tensors"])

    def corruptions() -> None:
        # 4096 tokens: a max-length request fits in the small budget
        print(f"\n== deliberate corruptions must be caught ({GPT[0]} @ {format_bytes(small)}, 4096 tokens)")
        for case in (GPT, GPT_018):
            plan, _ = make_plan(case, small, 4096)
            for corrupt in ("overlap", "pattern", "alias"):
                r = allocate_and_verify(plan, args.device, corrupt=corrupt).to_dict()
                print(f"  {case[3]} {corrupt}: ok={r['ok']}, {r['num_failures']} failure(s); "
                      f"first: {(r['failures'] or ['-'])[0]}")
                step(f"corrupt {corrupt} ({case[3]})", not r["ok"] and r["leaked_bytes"] == 0,
                     num_failures=r["num_failures"], first_failure=(r["failures"] or [None])[0])

    def refusal() -> None:
        print("\n== a layout larger than free memory is refused, nothing allocated")
        free_now = budget_from_device(args.device, 1.0, 0)
        plan, _ = make_plan(GPT, free_now + 8 * GiB, args.max_model_len)
        before = torch.cuda.memory_allocated() if args.device.startswith("cuda") else 0
        try:
            allocate_and_verify(plan, args.device)
            print("  NOT refused")
            step("refusal", False)
        except DeviceDoesNotFitError as e:
            after = torch.cuda.memory_allocated() if args.device.startswith("cuda") else 0
            print(f"  refused (exit {e.exit_code}): {e}")
            step("refusal", e.exit_code == 3 and after == before, message=str(e))

    steps = [(case[0], lambda case=case: full_layout(case)) for case in (GPT, GEMMA, GPT_018)]
    for name, fn in (*steps, ("corruptions", corruptions), ("refusal", refusal)):
        try:
            fn()
        except Exception as e:  # report and go on: the other steps still say something
            print(f"  error: {type(e).__name__}: {e}")
            step(name, False, error=f"{type(e).__name__}: {e}")

    if not args.skip_cli:
        try:
            import typer  # noqa: F401
        except ImportError:
            print("\n== CLI step skipped (typer not importable)")
        else:
            cmd = [sys.executable, "-m", "kvplan.cli", "simulate", GPT[1], "--drafter", GPT[2],
                   "--num-speculative-tokens", "5", "--budget-from-device", "--reserve", args.cli_reserve,
                   "--allocate", "--device", args.device, "--format", "json"]
            if args.max_model_len:
                cmd += ["--max-model-len", str(args.max_model_len)]
            print("\n== CLI: " + " ".join(cmd[3:]))
            t0 = time.perf_counter()
            p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=180, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
            wall = time.perf_counter() - t0
            try:
                a = json.loads(p.stdout)["allocation"]
                a.pop("tensors", None)
            except (ValueError, KeyError):
                a = None
            if a:
                for line in show_report(a):
                    print("  " + line)
            print(f"  exit {p.returncode} in {wall:.1f} s" + (f"; stderr: {p.stderr.strip()[-500:]}" if p.returncode else ""))
            step("cli --budget-from-device --allocate", p.returncode == 0 and bool(a and a["ok"]),
                 exit_code=p.returncode, wall_seconds=round(wall, 2), allocation=a)

    out["ok"] = not problems
    out["wall_seconds"] = round(time.perf_counter() - t_start, 2)
    print(f"\ngpu_check: {'all steps ok' if not problems else 'NOT OK: ' + ', '.join(problems)} "
          f"({out['wall_seconds']} s)")
    if os.environ.get("OUT"):
        path = Path(os.environ["OUT"]) / "gpu_check.json"
        path.write_text(json.dumps(out, indent=2))
        print(f"wrote {path}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
