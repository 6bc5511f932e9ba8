#!/usr/bin/env python3
"""Random differential: kvplan against a vLLM release's own layout functions on random
hybrid layouts with drafters and tight budgets (no goldens written).

Usage::

    python scripts/golden/differential.py --releases 0.19.0 0.25.0 --n 300 [--seed 1]
           [--rules 0.34.0] [--json out.json] [--unset]

For each release it builds ``--n`` random cases (sliding/full, chunked/full, Mamba2 or GDN
hybrids, all-full; 0-4 drafter layers, sometimes with other heads; PP 1 or 2 with the drafter
on the last stage; budgets between 0.5x and 3x of what one request needs), simulates each under
the release's era and writes it as a runner case (``kvplan.verify.case.runner_case``: hybrid
ones aligned by kvplan, as ``--cross-check`` sends them), runs them all through
``kvplan/verify/vllm_runner.py`` in the release's environment, and compares every field with
kvplan's engine under the release's own era (``kvplan.verify.compare.mismatches``). ``--rules R`` also
scores the same vLLM answers against release R's era (e.g. what the default rules would say
to a user of an older release). Prints agreement counts per release.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts" / "golden"))

from make_goldens import run_release  # noqa: E402

from kvplan.engines.vllm import ModelFacts, SimulateOptions, simulate  # noqa: E402
from kvplan.engines.vllm.releases import era_of_release  # noqa: E402
from kvplan.specs import LayerSpec, spec_from_dict  # noqa: E402
from kvplan.verify.case import runner_case  # noqa: E402
from kvplan.verify.compare import mismatches  # noqa: E402


def _attn(kind: str, heads: int, head: int, **kw) -> dict:
    d = {"kind": kind, "block_size": 16, "num_kv_heads": heads, "head_size": head, "head_size_v": head,
         "dtype": "bfloat16", "sliding_window": None, "attention_chunk_size": None, "cache_dtype_str": None,
         "page_size_padded": None, "shapes": None, "dtypes": None, "mamba_type": None,
         "num_speculative_blocks": None}
    d.update(kw)
    return d


def _mamba(rng: random.Random, gdn: bool, spec_blocks: int) -> dict:
    if gdn:  # Qwen3-Next-like GDN state per rank
        kh, vh, kd, vd = rng.choice([(16, 32, 128, 128), (8, 16, 128, 128), (16, 48, 128, 128)])
        conv = (3 + spec_blocks, 2 * kh * kd + vh * vd)
        ssm = (vh, vd, kd)
        mtype = "gdn"
    else:  # Mamba2 (Nemotron-H-like)
        heads, hd, groups, state = rng.choice([(64, 64, 8, 128), (128, 64, 8, 128), (256, 64, 8, 256)])
        conv = (3 + spec_blocks, heads * hd + 2 * groups * state)
        ssm = (heads, hd, state)
        mtype = "mamba2"
    d = _attn("mamba", 0, 0)
    d.update(num_kv_heads=None, head_size=None, head_size_v=None, dtype=None, shapes=[list(conv), list(ssm)],
             dtypes=["bfloat16", rng.choice(["bfloat16", "float32"])], mamba_type=mtype,
             num_speculative_blocks=spec_blocks)
    return d


def random_case(rng: random.Random, i: int, unset: bool = False) -> tuple[dict, list[dict], list[list[int]]]:
    """(case settings, layers, per-rank positions). ``unset``: the options a user leaves out stay unset
    (see ``--unset``)."""
    n = rng.randint(6, 40)
    family = rng.choice(["swa", "swa", "chunked", "mamba", "mamba", "full"])
    heads, head = rng.choice([(2, 64), (4, 128), (8, 64), (8, 128), (16, 128), (4, 256)])
    layers: list[dict] = []
    if family == "swa":
        window = rng.choice([128, 512, 1024, 4096])
        every = rng.choice([2, 3, 4, 6])
        layers = [_attn("full_attention", heads, head) if (j + 1) % every == 0
                  else _attn("sliding_window", heads, head, sliding_window=window) for j in range(n)]
    elif family == "chunked":
        every = rng.choice([2, 4])
        layers = [_attn("full_attention", heads, head) if (j + 1) % every == 0
                  else _attn("chunked_local", heads, head, attention_chunk_size=8192) for j in range(n)]
    elif family == "mamba":
        gdn = rng.random() < 0.5
        every = rng.choice([2, 4, 8])
        spec_blocks = rng.choice([0, 0, 2])
        m = _mamba(rng, gdn, spec_blocks)
        layers = [_attn("full_attention", heads, head) if (j + 1) % every == 0 or j == n - 1 else dict(m)
                  for j in range(n)]  # at least one attention layer: a hybrid model
    else:
        layers = [_attn("full_attention", heads, head) for _ in range(n)]
    for j, layer in enumerate(layers):
        layer["name"] = f"model.layers.{j}.attn"
        layer["source"] = "target"
    nd = rng.choice([0, 1, 1, 3, 4])
    dheads, dhead = (heads, head) if rng.random() < 0.75 else rng.choice([(8, 128), (4, 128), (8, 64)])
    sliding_drafter = family == "swa" and rng.random() < 0.3
    for j in range(nd):
        d = (_attn("sliding_window", dheads, dhead, sliding_window=layers[0].get("sliding_window") or 128)
             if sliding_drafter and j % 2 == 0 else _attn("full_attention", dheads, dhead))
        d["name"] = f"draft_model.layers.{j}.attn"
        d["source"] = "drafter"
        layers.append(d)
    pp = 2 if rng.random() < 0.2 and n >= 8 else 1
    if pp == 1:
        ranks = [list(range(len(layers)))]
    else:
        half = n // 2
        ranks = [list(range(half)), list(range(half, len(layers)))]  # drafter on the last stage
    case = {
        "case": f"random-{i}",
        "max_model_len": rng.choice([8192, 32768, 131072]),
        "max_num_batched_tokens": rng.choice([2048, 8192]),
        "async_scheduling": rng.random() < 0.8,
        "pipeline_parallel_size": pp,
        "use_v2_model_runner": True if pp > 1 else None,
        "budget_factor": rng.uniform(0.5, 3.0),
    }
    if unset:
        # no --max-num-batched-tokens (kvplan's engine default, 8192, goes to the runner), no model runner (the
        # release's probe picks it), and for one worker without a drafter no --async-scheduling: the runner
        # takes what the release's VllmConfig resolves (with a drafter or PP that resolution needs the
        # speculative and parallel configs the runner does not build, so there it stays given)
        case.update(max_num_batched_tokens=None, use_v2_model_runner=None)
        if pp == 1 and nd == 0:
            case["async_scheduling"] = None
    return case, layers, ranks


def _plan(layers: list[dict], ranks: list[list[int]], case: dict, era, budget: int):
    ls = tuple(LayerSpec(lay["name"], spec_from_dict(lay), lay["source"], k) for k, lay in enumerate(layers))
    rk = tuple(tuple(layers[p]["name"] for p in r) for r in ranks) if len(ranks) > 1 else ()
    facts = ModelFacts(max_model_len=case["max_model_len"],
                       speculative_method="eagle3" if any(x["source"] == "drafter" for x in layers) else None)
    given = {k: case[k] for k in ("max_num_batched_tokens",) if case[k] is not None}
    return simulate(ls, rk, facts, era, SimulateOptions(
        kv_cache_memory_bytes=budget, max_model_len=case["max_model_len"], async_scheduling=case["async_scheduling"],
        use_v2_model_runner=case["use_v2_model_runner"], **given))


def build(release: str, n: int, seed: int, unset: bool = False) -> list[dict]:
    rng = random.Random(seed)
    era = era_of_release(release)
    out = []
    for i in range(n):
        case, layers, ranks = random_case(rng, i, unset)
        # the budget's scale: kvplan's admission need for one max-length request
        need = max(_plan(layers, ranks, case, era, 1 << 50).needed_bytes, 1 << 20)
        plan = _plan(layers, ranks, case, era, int(need * case["budget_factor"]) // 4096 * 4096)
        rc = runner_case(plan, case["case"])
        if case["async_scheduling"] is None:
            rc["async_scheduling"] = None  # the release resolves it (compared with kvplan's)
        out.append(rc)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--releases", nargs="+", required=True)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rules", default=None, help="also score against this release's era")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--unset", action="store_true",
                    help="leave --max-num-batched-tokens, the model runner and (one worker, no drafter) "
                         "--async-scheduling unset: kvplan resolves them, the release its own")
    args = ap.parse_args(argv)
    report = {}
    for release in args.releases:
        cases = build(release, args.n, args.seed, args.unset)
        results = run_release(release, cases)
        own, other, fields, examples = 0, 0, {}, []
        starts = sum(1 for r in results if not r.get("error") and (r.get("drafter_check") or {}).get("ok") is not False)
        for case, result in zip(cases, results, strict=True):
            golden = {"vllm_version": release, "case": case, "result": result}
            bad = mismatches(golden)
            own += not bad
            for b in bad:
                fields[b.split(":")[0]] = fields.get(b.split(":")[0], 0) + 1
            if bad and len(examples) < 5:
                examples.append({"case": case["case"], "mismatches": bad[:3]})
            if args.rules:  # the start-up outcome and max concurrency under the other release's rules
                other += not [m for m in mismatches(golden, era_of_release(args.rules))
                              if m.startswith(("error", "drafter_check", "workers[0].max_concurrency"))]
        resolved = sum(1 for r in results if r.get("async_scheduling") is not None)
        report[release] = {"cases": len(cases), "vllm_starts": starts, "agree_all_fields": own,
                           "mismatched_fields": fields, "examples": examples, "async_scheduling_by_release": resolved}
        line = f"vllm {release}: {own}/{len(cases)} cases agree on every field ({starts} start in vLLM)"
        if args.unset:
            line += (f"; options unset, async scheduling from the release's own default in {resolved}, the model "
                     f"runner from its probe in {sum(1 for r in results if r.get('model_runner'))}")
        if args.rules:
            report[release][f"agree_under_{args.rules}_rules"] = other
            line += f"; under {args.rules}'s rules {other}/{len(cases)} agree on start-up and max concurrency"
        print(line, flush=True)
        if fields:
            print(f"  mismatched fields: {fields}")
            for ex in examples:
                print(f"  {ex['case']}: {ex['mismatches']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
