"""kvplan against vLLM's own layout functions, field by field.

Each file in tests/golden was written by scripts/golden/make_goldens.py, which ran the
released vLLM wheels (0.11.2, 0.17.1, 0.18.0, 0.33.0) on CPU on the layer specs that
`kvplan inspect` produced. Here the same specs and options go through kvplan's engine
and every field vLLM reported must match: groups, num_blocks per worker, tensors,
admission bytes, max concurrency, the final max_model_len, vLLM's log lines verbatim,
and the exact start-up error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.engines.vllm import ModelFacts, SimulateOptions, get_era, simulate
from kvplan.specs import LayerSpec, spec_from_dict

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))
ERA_OF = {"0.11.2": "vllm-min", "0.17.1": "vllm-1.25", "0.18.0": "vllm-1.5", "0.33.0": "vllm-latest"}
# Lines of the Mamba alignment are config-time logs; the goldens receive specs already aligned.
ALIGNMENT_LOGS = ("Setting attention block size", "Padding mamba page size")


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


def _plan(golden: dict):
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
    era = get_era(ERA_OF[golden["vllm_version"]])
    return simulate(layers, ranks if len(ranks) > 1 else (), facts, era, options)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_matches_vllm(path):
    golden = json.loads(path.read_text())
    r = golden["result"]
    plan = _plan(golden)

    # the start-up outcome: vLLM's exception type and exact text
    if r.get("error"):
        assert plan.failure is not None, f"vLLM failed: {r['error']}"
        assert (plan.failure.error_type, plan.failure.message) == (r["error"]["type"], r["error"]["message"])
    elif r.get("drafter_check") and not r["drafter_check"]["ok"]:
        err = r["drafter_check"]["error"]
        assert plan.failure is not None and plan.failure.stage == "drafter"
        assert (plan.failure.error_type, plan.failure.message) == (err["type"], err["message"])
    else:
        assert plan.failure is None, plan.failure

    # the model runner the release picked (and so the batches in flight)
    if r.get("model_runner") and r["model_runner"]["use_v2_model_runner"] is not None:
        assert plan.runner.runner == ("v2" if r["model_runner"]["use_v2_model_runner"] else "v1")
        assert plan.workload.max_in_flight_tokens == r["max_in_flight_tokens"]

    # vLLM's log lines, verbatim and in order
    ours = [line for line in plan.logs if not line.startswith(ALIGNMENT_LOGS)]
    assert ours == [x["message"] for x in r["logs"]]

    # (0.11 checks memory before grouping; the generator then groups for the record only)
    before_grouping = plan.failure is not None and plan.failure.stage == "admission" and not plan.groups
    if r.get("groups") and not before_grouping:
        assert [list(g.layer_names) for g in plan.groups] == [g["layer_names"] for g in r["groups"]]
    if "max_model_len" in r and r.get("error") is None:
        assert plan.max_model_len == r["max_model_len"]

    for ours_w, theirs in zip(plan.workers, r.get("workers") or []):
        if theirs.get("num_blocks") is None:
            continue
        assert ours_w.num_blocks == theirs["num_blocks"]
        if theirs.get("max_concurrency") is not None and ours_w.groups:
            from kvplan.engines.vllm.sizing import max_concurrency

            assert max_concurrency(ours_w.num_blocks, list(ours_w.groups), plan.workload) == pytest.approx(
                theirs["max_concurrency"], rel=1e-12)
        adm = theirs.get("admission") or {}
        if adm.get("needed_bytes") is not None and ours_w.rank == 0:
            assert plan.needed_bytes == adm["needed_bytes"]
            assert plan.checked_available_bytes == adm["checked_available_bytes"]
        check = next((c for c in plan.worker_checks if c.rank == ours_w.rank), None)
        if adm.get("needed_bytes") is not None and check is not None:
            # every stage's own admission numbers (kept for the report even when the check fails)
            assert (check.needed_bytes, check.checked_available_bytes, check.bytes_per_block) == (
                adm["needed_bytes"], adm["checked_available_bytes"], adm.get("bytes_per_block", check.bytes_per_block))
        tensors = theirs.get("kv_cache_tensors")
        if tensors and "shared_by" in tensors[0]:  # ≤ 0.32: one tensor per slot
            assert [(t.size_bytes, list(t.shared_by)) for t in ours_w.tensors] == [
                (t["size"], t["shared_by"]) for t in tensors]
        elif tensors:  # 0.33: one record per group over one shared buffer
            from kvplan.engines.vllm.sizing import vllm_tensor_records

            assert vllm_tensor_records(ours_w) == tensors


def test_goldens_cover_every_era():
    versions = {json.loads(p.read_text())["vllm_version"] for p in GOLDEN}
    assert versions == set(ERA_OF)
