"""kvplan against vLLM's own layout functions, field by field.

Each file in tests/golden was written by scripts/golden/make_goldens.py, which ran the
released vLLM wheels (every release in kvplan.engines.vllm.releases.GOLDEN_RELEASES) on CPU
on the layer specs that `kvplan inspect` produced. Here the same specs and options go through kvplan's engine
and every field vLLM reported must match: groups, num_blocks per worker, tensors,
admission bytes, max concurrency, the final max_model_len, vLLM's log lines verbatim,
and the exact start-up error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.engines.vllm import ModelFacts, SimulateOptions, simulate
from kvplan.engines.vllm.releases import GOLDEN_RELEASES, era_of_release
from kvplan.specs import LayerSpec, spec_from_dict

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))
# Lines of the Mamba alignment and of the Mamba cache-mode resolution are config-time logs
# (EngineArgs / the model config); the goldens receive specs already aligned and the mode resolved.
ALIGNMENT_LOGS = ("Setting attention block size", "Padding mamba page size", "--mamba-cache-mode is deprecated",
                  "Mamba cache mode is set to", "Hybrid or mamba-based model detected")


def _layers(case: dict):
    table = case.get("spec_table")
    seen: dict[str, LayerSpec] = {}
    ranks = []
    for worker in case["workers"]:
        names = []
        for entry in worker:
            if isinstance(entry, list):
                name, idx, source = entry
                spec = spec_from_dict(table[idx])
            else:
                name, source, spec = entry["name"], entry["source"], spec_from_dict(entry)
            if name not in seen:
                seen[name] = LayerSpec(name, spec, source, len(seen))
            names.append(name)
        ranks.append(tuple(names))
    return tuple(seen.values()), tuple(ranks)


def _plan(golden: dict, era=None):
    case = golden["case"]
    layers, ranks = _layers(case)
    mem = case["available_memory_bytes"]
    mem = mem if isinstance(mem, int) else mem[0]
    mml = case["max_model_len"]
    probe = case.get("model_runner_probe")
    facts = ModelFacts(
        max_model_len=case.get("derived_max_model_len", mml) if mml == -1 else mml,
        speculative_method="eagle3" if any(x.source == "drafter" for x in layers) else None,
        parallel_drafting=bool(probe and probe.get("parallel_drafting")),
    )
    options = SimulateOptions(
        kv_cache_memory_bytes=mem,
        max_model_len=mml,
        max_num_batched_tokens=case["max_num_batched_tokens"],
        async_scheduling=case.get("async_scheduling", True),
        enable_prefix_caching=case.get("enable_prefix_caching"),
        mamba_cache_mode=case.get("mamba_cache_mode"),
        disable_hybrid_kv_cache_manager=case.get("disable_hybrid_kv_cache_manager"),
        num_gpu_blocks_override=case.get("num_gpu_blocks_override"),
        # with a probe the release picked the runner itself, and so does kvplan
        use_v2_model_runner=None if probe else bool(case.get("use_v2_model_runner")),
        decode_context_parallel_size=case.get("decode_context_parallel_size", 1),
        tensor_parallel_size=case.get("tensor_parallel_size", 1),
    )
    era = era or era_of_release(golden["vllm_version"])
    return simulate(layers, ranks if len(ranks) > 1 else (), facts, era, options)


def mismatches(golden: dict, era=None) -> list[str]:
    """Every field where kvplan (under ``era``, default: the golden's release) differs from
    what vLLM reported; [] when all agree. scripts/golden/differential.py uses it too."""
    from kvplan.engines.vllm.sizing import max_concurrency, vllm_tensor_records

    r = golden["result"]
    plan = _plan(golden, era)
    out: list[str] = []

    def check(field: str, ours, theirs) -> None:
        if ours != theirs:
            out.append(f"{field}: kvplan {ours!r} != vLLM {theirs!r}")

    # the start-up outcome: vLLM's exception type and exact text
    failure = (plan.failure.error_type, plan.failure.message) if plan.failure else None
    if r.get("error"):
        check("error", failure, (r["error"]["type"], r["error"]["message"]))
    elif r.get("drafter_check") and r["drafter_check"]["ok"] is False:
        err = r["drafter_check"]["error"]
        check("drafter_check", (plan.failure.stage if plan.failure else None, failure), ("drafter", (err["type"],
                                                                                                   err["message"])))
    else:
        check("error", failure, None)

    # the model runner the release picked (and so the batches in flight)
    if r.get("model_runner") and r["model_runner"]["use_v2_model_runner"] is not None:
        assert plan.runner.runner == ("v2" if r["model_runner"]["use_v2_model_runner"] else "v1")
        assert plan.workload.max_in_flight_tokens == r["max_in_flight_tokens"]

    # vLLM's log lines, verbatim and in order
    check("logs", [line for line in plan.logs if not line.startswith(ALIGNMENT_LOGS)],
          [x["message"] for x in r["logs"]])

    # (0.11 checks memory before grouping; the generator then groups for the record only)
    before_grouping = plan.failure is not None and plan.failure.stage == "admission" and not plan.groups
    if r.get("groups") and not before_grouping:
        check("groups", [list(g.layer_names) for g in plan.groups], [g["layer_names"] for g in r["groups"]])
    if "max_model_len" in r and r.get("error") is None:
        check("max_model_len", plan.max_model_len, r["max_model_len"])

    # every worker vLLM configured, one for one (a missing or extra worker fails)
    theirs_workers = r.get("workers") or []
    if plan.workers and len(plan.workers) != len(theirs_workers):
        check("workers.length", len(plan.workers), len(theirs_workers))
        return out
    for i, (ours_w, theirs) in enumerate(zip(plan.workers, theirs_workers, strict=True) if plan.workers else ()):
        if theirs.get("num_blocks") is None:
            continue
        check(f"workers[{i}].num_blocks", ours_w.num_blocks, theirs["num_blocks"])
        if theirs.get("max_concurrency") is not None and ours_w.groups:
            ours_c = max_concurrency(ours_w.num_blocks, list(ours_w.groups), plan.workload)
            if ours_c != pytest.approx(theirs["max_concurrency"], rel=1e-12):
                check(f"workers[{i}].max_concurrency", ours_c, theirs["max_concurrency"])
        adm = theirs.get("admission") or {}
        if adm.get("needed_bytes") is not None and ours_w.rank == 0:
            check("admission.needed_bytes", plan.needed_bytes, adm["needed_bytes"])
            check("admission.checked_available_bytes", plan.checked_available_bytes, adm["checked_available_bytes"])
        stage = next((c for c in plan.worker_checks if c.rank == ours_w.rank), None)
        if adm.get("needed_bytes") is not None and stage is not None:
            # every stage's own admission numbers (kept for the report even when the check fails)
            check(f"workers[{i}].admission", (stage.needed_bytes, stage.checked_available_bytes),
                  (adm["needed_bytes"], adm["checked_available_bytes"]))
        tensors = theirs.get("kv_cache_tensors")
        if tensors and "shared_by" in tensors[0]:  # ≤ 0.32: one tensor per slot
            check(f"workers[{i}].kv_cache_tensors", [(t.size_bytes, list(t.shared_by)) for t in ours_w.tensors],
                  [(t["size"], t["shared_by"]) for t in tensors])
        elif tensors:  # 0.33: one record per group over one shared buffer
            check(f"workers[{i}].kv_cache_tensors", vllm_tensor_records(ours_w), tensors)
    return out


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_matches_vllm(path):
    assert mismatches(json.loads(path.read_text())) == []


def test_goldens_cover_the_golden_releases():
    """Every release the registry says was golden-tested has goldens, and no other (≥ 25)."""
    versions = {json.loads(p.read_text())["vllm_version"] for p in GOLDEN}
    assert versions == set(GOLDEN_RELEASES)
    assert len(versions) >= 25
