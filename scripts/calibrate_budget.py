#!/usr/bin/env python3
"""Fit the budget's calibrated terms on the calibration half of the start-up corpus, and nothing else.

Two terms cannot be derived on a CPU; both are fitted here and written to ``kvplan/budget/calibration.json`` (read
at run time by ``kvplan.budget.estimate``). The holdout half is never read.

**CUDA graphs** (``cudagraph``; the graph count per release is derived, ``kvplan.budget.cudagraph``): every
calibration log that prints the graphs' memory — "Graph capturing finished in N secs, took X GiB" (what capture
took), and from 0.19 "CUDA graph pool memory: A GiB (actual), E GiB (estimated)" (E: the estimate
``profile_cudagraph_memory`` makes in the profile, which 0.20+ subtract) — gives one row: its graph count ``n``
(the release's capture sizes for the logged deployment's max_num_seqs and max_num_batched_tokens) and the layers on
the logging rank ``L``. Per graph, ``X / n = a + b · L`` by least squares (one row per distinct deployment and
figure: the corpus's repeats of one start-up count once); the band is the rows' smallest and largest ratio of
logged to fitted, per card family where it has at least 3 rows, else every row's. The same for E (``estimate``).

**Start-up memory** (``startup``): what the logs' memory account says was in use at vLLM's start-up snapshot ("Free
memory on device (F/T GiB) on startup": T − F), per parallelism; and (``cudagraph.warmup_fragmentation``) at a
warm-up out-of-memory after capture, the memory torch held reserved but unallocated over what capture took (the
warm-up check of ``kvplan.budget.estimate``).

**Non-torch memory** (``non_torch``: the CUDA context's growth, NCCL communicators, cuBLAS workspaces outside
torch's allocator, and whatever the other estimated terms miss): for every measured case whose log prints the
available KV memory and whose weights kvplan counts within 2 % of "Model loading took" (a case whose weights are off
measures the weights, not this term), kvplan simulates the deployment with ``--non-torch-memory 0``; what the log's
available KV memory leaves below that is the term's residual for that start-up::

    residual = kvplan's KV memory with non_torch = 0  −  logged available KV memory

Groups, most specific first: card family / parallelism / release series (``H100/tp>1/0.19``), card family /
parallelism / what the release's profile measures (``H100/tp1/consumed``), parallelism / what it measures
(``tp1/consumed``), card family / parallelism over both measures (``RTX/tp>1``: a family's NCCL and PCIe set its
tensor-parallel term whatever the release counts; no TP start-up of the ``consumed`` releases is in the calibration
half), parallelism. What it measures (``kvplan.budget.estimate.profile_measure``): ``allocated`` before
0.27.0 (torch's allocated peak and the non-torch increase), ``consumed`` from 0.27.0 (the free memory's drop: what
torch keeps reserved after ``empty_cache`` counts too), so a residual of one is not a residual of the other.
Parallelism: ``tp1`` (one GPU), ``tp>1`` (tensor parallel: NCCL and the custom
all-reduce), ``pp>1`` (pipeline parallel only). A group's value is its median residual, its band the smallest and
the largest; a group with fewer than 3 start-ups does not set the value (one or two start-ups of a card or release
are no median): it takes its parent's (the next group up with 3 or more), its band widened to cover both, and says
so.

    PYTHONPATH=. python scripts/calibrate_budget.py
"""

from __future__ import annotations

import json
import re
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
SOURCE = "scripts/calibrate_budget.py on the calibration half of tests/logs/budget/cases.json"


def calibration_cases() -> list[dict]:
    import budget_validation as bv

    return [c for c in bv.cases() if not c.get("excluded") and bv.half_of(bv.source_key(c)) == "calibration"]


def _simulate(case: dict, **extra):
    import budget_validation as bv
    from kvplan.api import simulate
    from kvplan.errors import KvplanError

    model = str(ROOT / case["config"]) if case.get("config") else case["model"]
    try:
        return simulate(model, **{**bv.case_options(case), **extra})
    except KvplanError:
        return None


def release_series(d: dict) -> str:
    """The release a simulation ran, as its series (``0.19.0`` → ``0.19``)."""
    release = (d.get("policy") or {}).get("vllm_release") or ""
    return ".".join(release.split(".")[:2])


def graph_rows() -> list[dict]:
    """One row per calibration log that prints the CUDA graphs' memory (see the module docstring)."""
    import budget_validation as bv
    from kvplan.budget.cudagraph import capture_sizes, graph_count
    from kvplan.budget.estimate import card_family
    from kvplan.budget.hardware import gpu_card
    from kvplan.logs.extract import facts_of
    from kvplan.logs.reader import read_records

    rows, seen = [], set()
    for case in calibration_cases():
        if case.get("file") is None:
            continue
        facts = facts_of(read_records((bv.CASES.parent / case["file"]).read_text()))
        took, pool = facts.first("cuda_graph"), facts.first("cuda_graph_pool")
        actual = pool.values["actual_gib"] if pool else (took.values["gib"] if took else None)
        if actual is None or actual <= 0:
            continue
        d = _simulate(case)
        if d is None or d["budget"] is None:
            continue
        release, sch, b = (d.get("policy") or {}).get("vllm_release"), d["scheduler"], d["budget"]
        spec = int((d.get("speculative") or {}).get("num_speculative_tokens") or 0)
        card = gpu_card(b["gpu"], None) if b["gpu"] else None
        sizes = capture_sizes(release, max_num_seqs=sch["max_num_seqs"],
                              max_num_batched_tokens=sch["max_num_batched_tokens"], num_speculative_tokens=spec,
                              architecture=d["model"]["architecture"],
                              compute_capability=card.compute_capability if card else None)
        n = graph_count(release, sizes, max_num_seqs=sch["max_num_seqs"], num_speculative_tokens=spec)
        layers = int(d["model"]["num_hidden_layers"]) // int(case["options"].get("pipeline_parallel_size", 1))
        row = {"id": case["id"], "family": card_family(b["gpu"]), "platform": card.platform if card else "cuda",
               "graphs": n, "layers": layers,
               "actual_bytes": round(actual * GIB),
               "estimate_bytes": round(pool.values["estimated_gib"] * GIB) if pool else None}
        key = (row["family"], n, layers, row["actual_bytes"], row["estimate_bytes"])
        if key not in seen:  # the corpus's repeats of one start-up (the same figures) count once
            seen.add(key)
            rows.append(row)
    return rows


def fit_graphs(rows: list[dict], what: str) -> dict | None:
    """``what`` (actual_bytes / estimate_bytes) per graph = a + b · layers, least squares; the ratio band. Fitted on
    the CUDA cards' start-ups; another platform (ROCm: HIP graphs, a different runtime whose pool logged 5.3-8.6 GiB
    for 86 graphs on an MI300X where an H100 took 0.5 GiB for the same model and graphs) gets its own fit under
    ``platforms`` once it has ``MIN_GROUP`` start-ups over two layer counts, and stays out of the CUDA fit."""
    use = [r for r in rows if r[what] is not None]
    others = {}
    for platform in sorted({r.get("platform", "cuda") for r in use} - {"cuda"}):
        mine = [r for r in use if r.get("platform") == platform]
        if len(mine) >= MIN_GROUP and len({r["layers"] for r in mine}) >= 2:
            others[platform] = _fit_line(mine, what)
    use = [r for r in use if r.get("platform", "cuda") == "cuda"]
    if len(use) < 2:
        return None
    fit = _fit_line(use, what)
    for own in others.values():
        if own["configurations"] < 3:
            # a line through two configurations leaves no residual to set a band from: the CUDA cards' spread
            own.update(pooled=fit["pooled"], families={}, band_from="cuda")
    if others:
        fit["platforms"] = others
    return fit


def _fit_line(use: list[dict], what: str) -> dict:
    xs = [r["layers"] for r in use]
    ys = [r[what] / r["graphs"] for r in use]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    a = my - b * mx
    fit = {"per_graph_bytes": round(a), "per_graph_per_layer_bytes": round(b), "n": len(use),
           "configurations": len({(r["graphs"], r["layers"]) for r in use}), "cases": ", ".join(r["id"] for r in use)}

    def band(rs):
        ratios = sorted(r[what] / (r["graphs"] * (a + b * r["layers"])) for r in rs)
        return {"ratio_low": round(ratios[0], 4), "ratio_high": round(ratios[-1], 4), "n": len(rs)}

    fit["pooled"] = band(use)
    fams = {}
    for fam in sorted({r["family"] for r in use}):
        mine = [r for r in use if r["family"] == fam]
        if len(mine) >= MIN_GROUP:
            fams[fam] = band(mine)
    fit["families"] = fams
    return fit


OOM_RESERVED = re.compile(r"Tried to allocate .*? ([\d.]+) GiB is reserved by PyTorch but unallocated")


def startup_rows() -> tuple[list[dict], list[dict]]:
    """From the calibration logs: the memory in use at vLLM's start-up snapshot ("Free memory on device (F/T GiB) on
    startup": T − F, the CUDA context and, at tp·pp > 1, NCCL's communicators and the custom all-reduce's buffers),
    and at a warm-up OOM after capture the memory torch held reserved but unallocated, over what capture took."""
    import budget_validation as bv
    from kvplan.logs.extract import facts_of
    from kvplan.logs.reader import read_records

    starts, frag, seen = [], [], set()
    for case in calibration_cases():
        if case.get("file") is None:
            continue
        text = (bv.CASES.parent / case["file"]).read_text(errors="replace")
        facts = facts_of(read_records(text))
        tp = int(case["options"].get("tensor_parallel_size", 1))
        pp = int(case["options"].get("pipeline_parallel_size", 1))
        acct = facts.first("memory_account")
        if acct is not None:
            used = round((acct.values["total_gib"] - acct.values["free_gib"]) * GIB)
            key = (case["file"], used)
            if key not in seen:
                seen.add(key)
                starts.append({"id": case["id"], "group": "tp>1" if tp > 1 else "pp>1" if pp > 1 else "tp1",
                               "bytes": used})
        took = facts.first("cuda_graph")
        m = OOM_RESERVED.search(text)
        if m and took is not None and took.values["gib"] > 0:
            frag.append({"id": case["id"], "ratio": float(m[1]) / took.values["gib"]})
    return starts, frag


def fit_startup(rows: list[dict]) -> dict:
    out = {}
    for g in ("tp1", "tp>1", "pp>1"):
        vals = sorted(r["bytes"] for r in rows if r["group"] == g)
        if vals:
            out[g] = {"value_bytes": round(statistics.median(vals)), "low_bytes": vals[0], "high_bytes": vals[-1],
                      "n": len(vals), "cases": ", ".join(r["id"] for r in rows if r["group"] == g)}
    return out


def residuals() -> list[dict]:
    import budget_validation as bv
    from kvplan.budget.estimate import card_family, profile_measure

    out = []
    for case in calibration_cases():
        got = bv.logged(case)
        if got.get("kv_gib") is None or got.get("weights_gib") is None:
            continue
        d = _simulate(case, non_torch_memory=0)
        if d is None:
            continue
        b = d["budget"]
        if b.get("kv_cache_sizing") not in (None, "profiled"):
            continue  # the extensible sizing measures after warm-up: another formula
        if abs(b["weights_bytes"] / GIB / got["weights_gib"] - 1) > WEIGHTS_WITHIN:
            continue
        tp = int(case["options"].get("tensor_parallel_size", 1))
        pp = int(case["options"].get("pipeline_parallel_size", 1))
        out.append({"id": case["id"], "group": "tp>1" if tp > 1 else "pp>1" if pp > 1 else "tp1",
                    "family": card_family(b["gpu"]), "series": release_series(d),
                    "measure": profile_measure((d.get("policy") or {}).get("vllm_release")),
                    "residual_bytes": b["kv_cache_memory_bytes"] - round(got["kv_gib"] * GIB)})
    return out


def fit_non_torch(rows: list[dict]) -> dict:
    groups: dict[str, dict] = {}

    def fit(name: str, use: list[dict]) -> None:
        vals = sorted(r["residual_bytes"] for r in use)
        groups[name] = {"group": name, "value_bytes": round(statistics.median(vals)), "low_bytes": vals[0],
                        "high_bytes": vals[-1], "n": len(use), "cases": ", ".join(r["id"] for r in use),
                        "pooled": False}

    def widen(name: str, parents: list[str]) -> None:
        g = groups[name]
        if g["n"] >= MIN_GROUP:
            return
        parent = next((groups[p] for p in parents if p in groups and groups[p]["n"] >= MIN_GROUP), None)
        if parent is not None:  # too few to set the value: the parent's median, the band over both
            g.update(value_bytes=parent["value_bytes"], low_bytes=min(g["low_bytes"], parent["low_bytes"]),
                     high_bytes=max(g["high_bytes"], parent["high_bytes"]), widened_by=parent["group"])

    measures = ("allocated", "consumed")
    for g in ("tp1", "tp>1", "pp>1"):  # per parallelism (every family and release), the fallback
        mine = [r for r in rows if r["group"] == g]
        if mine:
            fit(g, mine)
        for m in measures:  # per what the release's profile measures (estimate.profile_measure), every family
            if any(r["measure"] == m for r in mine):
                fit(f"{g}/{m}", [r for r in mine if r["measure"] == m])
    for fam in sorted({r["family"] for r in rows}):
        for g in ("tp1", "tp>1", "pp>1"):
            mine = [r for r in rows if r["group"] == g and r["family"] == fam]
            if mine:
                fit(f"{fam}/{g}", mine)
            for m in measures:
                if any(r["measure"] == m for r in mine):
                    fit(f"{fam}/{g}/{m}", [r for r in mine if r["measure"] == m])
            for series in sorted({r["series"] for r in mine}):
                fit(f"{fam}/{g}/{series}", [r for r in mine if r["series"] == series])
    everyone = [r for r in rows]
    for g in ("tp1", "tp>1", "pp>1"):
        if g in groups and groups[g]["n"] < MIN_GROUP:  # a thin parallelism: every start-up's spread
            fit("all", everyone)
            widen(g, ["all"])
    for name in list(groups):
        parts = name.split("/")
        if len(parts) == 3 and parts[2] in measures:
            widen(name, [f"{parts[1]}/{parts[2]}", f"{parts[0]}/{parts[1]}", parts[1], "all"])
        elif len(parts) == 3:
            m = _measure_of(rows, name)
            widen(name, [f"{parts[0]}/{parts[1]}/{m}", f"{parts[1]}/{m}", f"{parts[0]}/{parts[1]}", parts[1], "all"])
        elif len(parts) == 2 and parts[1] in measures:
            widen(name, [parts[0], "all"])
        elif len(parts) == 2:
            widen(name, [parts[1], "all"])
    return groups


def _measure_of(rows: list[dict], group: str) -> str:
    """What the profile of a card / parallelism / release-series group's start-ups measures (one release series,
    one measure; were a series to straddle a boundary, the later measure)."""
    fam, kind, series = group.split("/")
    return max(r["measure"] for r in rows if (r["family"], r["group"], r["series"]) == (fam, kind, series))


def write(data: dict) -> None:
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    from kvplan.budget.estimate import _calibration

    _calibration.cache_clear()


def _gib(v) -> str:
    return "-" if v is None else f"{v / GIB:.2f}"


def main() -> int:
    graphs = graph_rows()
    cudagraph: dict = {"actual": fit_graphs(graphs, "actual_bytes"), "estimate": fit_graphs(graphs, "estimate_bytes")}
    starts, frag = startup_rows()
    startup = fit_startup(starts)
    fragmentation = None if not frag else {
        "ratio_high": round(max(r["ratio"] for r in frag), 4), "ratio_low": round(min(r["ratio"] for r in frag), 4),
        "n": len(frag), "cases": ", ".join(r["id"] for r in frag)}
    cudagraph["warmup_fragmentation"] = fragmentation
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    # the graphs' fit first: the residuals of a release that counts the graphs in its profile are taken beside it
    write({"source": SOURCE, "cudagraph": cudagraph, "startup": startup, "non_torch": previous.get("non_torch", {})})
    rows = residuals()
    groups = fit_non_torch(rows)
    write({"source": SOURCE, "cudagraph": cudagraph, "startup": startup, "non_torch": groups})
    for g, v in startup.items():
        print(f"startup {g}: n={v['n']} median {v['value_bytes'] / GIB:.2f} GiB, spread {v['low_bytes'] / GIB:.2f} .. "
              f"{v['high_bytes'] / GIB:.2f} GiB")
    print(f"warm-up fragmentation: {fragmentation}")
    for what in ("actual", "estimate"):
        fit = cudagraph[what]
        if fit is None:
            print(f"cudagraph {what}: too few rows")
            continue
        print(f"cudagraph {what}: n={fit['n']} per graph {fit['per_graph_bytes'] / 2**20:.2f} MiB + "
              f"{fit['per_graph_per_layer_bytes'] / 2**20:.3f} MiB/layer; ratio {fit['pooled']['ratio_low']:.2f}-"
              f"{fit['pooled']['ratio_high']:.2f}; " + ", ".join(
                  f"{k} {v['ratio_low']:.2f}-{v['ratio_high']:.2f} (n={v['n']})" for k, v in fit["families"].items()))
        for platform, own in (fit.get("platforms") or {}).items():
            print(f"cudagraph {what} {platform}: n={own['n']} per graph {own['per_graph_bytes'] / 2**20:.2f} MiB + "
                  f"{own['per_graph_per_layer_bytes'] / 2**20:.3f} MiB/layer; ratio {own['pooled']['ratio_low']:.2f}-"
                  f"{own['pooled']['ratio_high']:.2f}")
    for r in graphs:
        print(f"  graphs {r['family']:6} n={r['graphs']:4} L={r['layers']:3} actual {r['actual_bytes'] / GIB:.2f} "
              f"est {_gib(r['estimate_bytes'])}  {r['id']}")
    for g, v in groups.items():
        print(f"{g}: n={v['n']}{' widened by ' + v['widened_by'] if v.get('widened_by') else ''} median "
              f"{v['value_bytes'] / GIB:.3f} GiB, spread {v['low_bytes'] / GIB:.3f} .. {v['high_bytes'] / GIB:.3f} GiB")
    for r in rows:
        print(f"  {r['family']:6} {r['group']:5} {r['series']:5} {r['residual_bytes'] / GIB:+.3f} GiB  {r['id']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
