#!/usr/bin/env python3
"""Fit the budget's calibrated term on the calibration half of the start-up corpus, and nothing else.

What cannot be derived on a CPU (the CUDA context, NCCL communicators and cuBLAS workspaces outside torch's
allocator, and whatever the other estimated terms miss) is one term, ``non_torch``. For every measured case of
the **calibration** half (``scripts/budget_validation.py``'s split: the half is a hash of the case's source,
fixed before fitting) whose log prints the available KV memory and whose weights kvplan counts within 2 % of
"Model loading took" (a case whose weights are off measures the weights, not this term), kvplan simulates the
deployment with ``--non-torch-memory 0``; what the log's available KV memory leaves below that is the term's
residual for that start-up::

    residual = kvplan's KV memory with non_torch = 0  −  logged available KV memory

The term's value is the median residual per group, its band the smallest and the largest residual: per card
family and parallelism (one GPU; several: tp·pp > 1, NCCL) where the group has at least 3 cases, and per
parallelism alone as the fallback (every case's figures where that has fewer than 3). Writes
``kvplan/budget/calibration.json`` (read at run time by ``kvplan.budget.estimate``). The holdout half is never
read here.

    PYTHONPATH=. python scripts/calibrate_budget.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
OUT = ROOT / "kvplan" / "budget" / "calibration.json"
GIB = 1 << 30
WEIGHTS_WITHIN = 0.02
MIN_GROUP = 3


def residuals() -> list[dict]:
    import budget_validation as bv
    from kvplan.api import simulate
    from kvplan.budget.estimate import card_family
    from kvplan.errors import KvplanError

    out = []
    for case in json.loads(bv.CASES.read_text())["cases"]:
        if case.get("excluded") or bv.half_of(bv.source_key(case)) != "calibration":
            continue
        got = bv.logged(case)
        if got.get("kv_gib") is None or got.get("weights_gib") is None:
            continue
        model = str(ROOT / case["config"]) if case.get("config") else case["model"]
        try:
            d = simulate(model, **{**case["options"], "non_torch_memory": 0})
        except KvplanError:
            continue
        b = d["budget"]
        if b.get("kv_cache_sizing") not in (None, "profiled"):
            continue  # the extensible sizing measures after warm-up: another formula
        if abs(b["weights_bytes"] / GIB / got["weights_gib"] - 1) > WEIGHTS_WITHIN:
            continue
        world = int(case["options"].get("tensor_parallel_size", 1)) * int(case["options"].get("pipeline_parallel_size", 1))
        out.append({"id": case["id"], "group": "tp>1" if world > 1 else "tp1", "family": card_family(b["gpu"]),
                    "residual_bytes": b["kv_cache_memory_bytes"] - round(got["kv_gib"] * GIB)})
    return out


def main() -> int:
    rows = residuals()
    groups = {}

    def fit(name: str, use: list[dict], pooled: bool) -> None:
        vals = sorted(r["residual_bytes"] for r in use)
        groups[name] = {"group": name, "value_bytes": round(statistics.median(vals)), "low_bytes": vals[0],
                        "high_bytes": vals[-1], "n": len(use), "cases": ", ".join(r["id"] for r in use),
                        "pooled": pooled}

    for g in ("tp1", "tp>1"):  # per parallelism (every family), the fallback
        mine = [r for r in rows if r["group"] == g]
        fit(g, mine if len(mine) >= MIN_GROUP else rows, len(mine) < MIN_GROUP)
    for fam in sorted({r["family"] for r in rows}):  # per card family and parallelism, where it has enough
        for g in ("tp1", "tp>1"):
            mine = [r for r in rows if r["group"] == g and r["family"] == fam]
            if len(mine) >= MIN_GROUP:
                fit(f"{fam}/{g}", mine, False)
    OUT.write_text(json.dumps({"source": "scripts/calibrate_budget.py on the calibration half of "
                                         "tests/logs/budget/cases.json",
                               "non_torch": groups}, indent=1) + "\n")
    for g, v in groups.items():
        print(f"{g}: n={v['n']}{' (pooled)' if v['pooled'] else ''} median {v['value_bytes'] / GIB:.3f} GiB, "
              f"spread {v['low_bytes'] / GIB:.3f} .. {v['high_bytes'] / GIB:.3f} GiB")
    for r in rows:
        print(f"  {r['family']:6} {r['group']:5} {r['residual_bytes'] / GIB:+.3f} GiB  {r['id']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
