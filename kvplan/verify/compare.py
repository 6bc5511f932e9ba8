"""kvplan's plan against what vLLM's own planning functions returned (a runner result), field
by field: the start-up outcome (failure type and text), the model runner and the tokens in
flight, every engine-core log line, the groups (layers, spec class, block size after
alignment, page size), the final max_model_len, the cache block size, num_blocks per worker
and global, the admission need per worker, the KV-cache tensors, and max concurrency per
worker and global.

Each compared value is one ``FieldCheck``; ``mismatches`` words the ones that differ (the golden
tests and the random differential use it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

from kvplan.engines.vllm import hybrid, runner
from kvplan.engines.vllm.versions import version_key

# Lines vLLM logs at config time (EngineArgs, VllmConfig, the model's config hooks), before the
# engine core runs the planning functions; the runner does not run that code, so these lines
# are kvplan's alone and are left out of the comparison.
CONFIG_TIME_LOGS = (
    "Setting attention block size", "Padding mamba page size", hybrid.MAMBA_FLAG_NO_EFFECT_033,
    hybrid.MAMBA_NONE_WITHOUT_PREFIX, hybrid.MAMBA_ALL_FALLBACK, hybrid.CHUNKED_LOCAL_WARNING,
    "Turning off hybrid kv cache manager because", runner.V1_ASYNC_WARNING.split("{")[0],
)


@dataclass(frozen=True)
class FieldCheck:
    field: str  # e.g. "groups[1].layers", "workers[0].num_blocks", "logs[2]"
    kvplan: Any
    vllm: Any
    agree: bool


def engine_logs(plan) -> list[str]:
    """kvplan's log lines that vLLM's engine core prints (config-time lines left out)."""
    return [line for line in plan.logs if not line.startswith(CONFIG_TIME_LOGS)]


def _failure_text(error_type: str | None, message: str | None) -> str | None:
    return None if error_type is None else f"{error_type}: {message}"


def vllm_failure(result: dict) -> tuple[str, str | None]:
    """``(field, "Type: text" or None)``: the exception the engine-side calls raised, else the
    drafter check's, else None (vLLM would start)."""
    if result.get("error"):
        return "error", _failure_text(result["error"]["type"], result["error"]["message"])
    check = result.get("drafter_check")
    if check and check.get("ok") is False:
        return "drafter_check", _failure_text(check["error"]["type"], check["error"]["message"])
    return "error", None


def _close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12)
    return a == b


Check = Callable[[str, Any, Any], None]


def compare(plan, result: dict) -> list[FieldCheck]:
    """Every field of ``result`` (the runner's output for the case of ``plan``) against kvplan's."""
    out: list[FieldCheck] = []

    def check(name: str, ours, theirs) -> None:
        out.append(FieldCheck(name, ours, theirs, _close(ours, theirs)))

    connector_error = (result.get("kv_offloading") or {}).get("error")
    _compare_failure(plan, result, connector_error, check)
    _compare_runner(plan, result, check)
    _compare_logs(plan, result, check)
    _compare_groups(plan, result, check)
    if plan.workers and len(plan.workers) != len(result.get("workers") or []):
        check("workers.count", len(plan.workers), len(result.get("workers") or []))
        return out
    _compare_workers(plan, result, check)
    if result.get("error") is None and result.get("num_blocks") is not None and plan.workers:
        check("num_blocks", plan.num_blocks, result["num_blocks"])
        if result.get("max_concurrency") is not None:
            check("max_concurrency", plan.max_concurrency, result["max_concurrency"])
    if result.get("error") is None and result.get("kv_offloading") is not None and not connector_error:
        _compare_host_tier(plan.host_tier, result["kv_offloading"], check)
    return out


def _compare_failure(plan, r: dict, connector_error: dict | None, check: Check) -> None:
    """The start-up outcome: the exception vLLM raised (else the connector's, raised after the KV cache is sized)."""
    f = plan.failure
    name, theirs_failure = vllm_failure(r)
    if theirs_failure is None and connector_error:  # the connector's constructor, after the KV cache is sized
        theirs_failure = _failure_text(connector_error["type"], connector_error["message"])
    check(name, _failure_text(f.error_type, f.message) if f else None, theirs_failure)


def _compare_runner(plan, r: dict, check: Check) -> None:
    """The model runner the release picked, and so the tokens a window must hold in flight."""
    chosen = (r.get("model_runner") or {}).get("use_v2_model_runner")
    if chosen is not None and plan.runner is not None:
        check("model_runner", plan.runner.runner, "v2" if chosen else "v1")
    if r.get("async_scheduling") is not None and plan.runner is not None:  # the release's default (case: null)
        check("async_scheduling", plan.runner.async_scheduling, r["async_scheduling"])
    if r.get("max_in_flight_tokens") is not None and plan.workload is not None:
        check("max_in_flight_tokens", plan.workload.max_in_flight_tokens, r["max_in_flight_tokens"])


def _compare_logs(plan, r: dict, check: Check) -> None:
    """vLLM's log lines, verbatim and in order."""
    ours_logs, theirs_logs = engine_logs(plan), [x["message"] for x in r.get("logs") or []]
    for i in range(max(len(ours_logs), len(theirs_logs))):
        check(f"logs[{i}]", ours_logs[i] if i < len(ours_logs) else None,
              theirs_logs[i] if i < len(theirs_logs) else None)


def _compare_groups(plan, r: dict, check: Check) -> None:
    """The groups (0.11 checks memory before grouping; the runner then groups for the record only), then the
    final max_model_len and the cache block size when vLLM started."""
    f = plan.failure
    before_grouping = f is not None and f.stage == "admission" and not plan.groups
    groups = r.get("groups")
    if groups and not before_grouping:
        if len(plan.groups) != len(groups):
            check("groups.count", len(plan.groups), len(groups))
        for i, (ours, theirs) in enumerate(zip(plan.groups, groups)):
            check(f"groups[{i}].layers", list(ours.layer_names), theirs["layer_names"])
            check(f"groups[{i}].spec", type(ours.spec).__name__, theirs["spec"]["class"])
            check(f"groups[{i}].block_size", ours.spec.block_size, theirs["spec"]["block_size"])
            check(f"groups[{i}].page_size_bytes", ours.spec.page_size_bytes, theirs["spec"]["page_size_bytes"])
    if r.get("error") is None:
        if "max_model_len" in r:
            check("max_model_len", plan.max_model_len, r["max_model_len"])
        release = version_key(str(r.get("vllm_version", "0")))
        if r.get("block_size") is not None and plan.groups and release >= (0, 18):
            # cache_config.block_size after the engine core's update (from 0.18): the smallest group block
            check("block_size", min(g.spec.block_size for g in plan.groups), r["block_size"])


def _compare_workers(plan, r: dict, check: Check) -> None:
    """Every worker vLLM configured, one for one: its blocks, concurrency, admission and tensors."""
    from kvplan.engines.vllm.sizing import max_concurrency

    for i, (ours_w, theirs) in enumerate(zip(plan.workers, r.get("workers") or []) if plan.workers else ()):
        if theirs.get("num_blocks") is None:
            continue
        check(f"workers[{i}].num_blocks", ours_w.num_blocks, theirs["num_blocks"])
        if theirs.get("max_concurrency") is not None and ours_w.groups:
            check(f"workers[{i}].max_concurrency", max_concurrency(ours_w.num_blocks, list(ours_w.groups),
                                                                  plan.workload), theirs["max_concurrency"])
        adm = theirs.get("admission") or {}
        stage = next((c for c in plan.worker_checks if c.rank == ours_w.rank), None)
        if adm.get("needed_bytes") is not None and stage is not None:
            check(f"workers[{i}].admission.needed_bytes", stage.needed_bytes, adm["needed_bytes"])
            check(f"workers[{i}].admission.checked_available_bytes", stage.checked_available_bytes,
                  adm["checked_available_bytes"])
        _compare_tensors(f"workers[{i}]", ours_w, theirs.get("kv_cache_tensors") or [], check)


def _compare_tensors(prefix: str, ours_w, tensors: list[dict], check: Check) -> None:
    """A worker's KV-cache tensors: one per slot up to 0.32, one record per group over one buffer from 0.33."""
    from kvplan.engines.vllm.sizing import vllm_tensor_records

    if tensors and "shared_by" in tensors[0]:  # ≤ 0.32: one tensor per slot
        ours_t = [{"size": t.size_bytes, "shared_by": list(t.shared_by)} for t in ours_w.tensors]
        theirs_t = [{"size": t["size"], "shared_by": t["shared_by"]} for t in tensors]
    else:  # 0.33: one record per group over one shared buffer
        ours_t, theirs_t = (vllm_tensor_records(ours_w) if tensors else []), tensors
    if len(ours_t) != len(theirs_t):
        check(f"{prefix}.kv_cache_tensors.count", len(ours_t), len(theirs_t))
    for j, (a, b) in enumerate(zip(ours_t, theirs_t)):
        check(f"{prefix}.kv_cache_tensors[{j}]", a, b)


HOST_TIER_FIELDS = ("world_size", "worker_kv_bytes_per_block", "blocks_per_chunk", "kv_bytes_per_chunk", "num_chunks",
                    "cpu_kv_cache_size_bytes", "cpu_kv_cache_size_tokens")


def _compare_host_tier(ours, theirs: dict, check: Check) -> None:
    """The host tier of ``--kv-offloading-size``: the connector, whether the hybrid manager stays on with it, and
    the CPU spec's figures (the runner's ``_offloading``)."""
    check("kv_offloading.kv_connector", ours.kv_connector if ours else None, theirs.get("kv_connector"))
    if isinstance(theirs.get("supports_hma"), bool) and ours is not None:
        check("kv_offloading.supports_hma", ours.hybrid_kv_cache_manager, theirs["supports_hma"])
    if ours is None or theirs.get("kv_connector") != "OffloadingConnector":
        return
    for name in HOST_TIER_FIELDS:  # what the release's spec holds (cpu_kv_cache_size_* from 0.33, ...)
        if name in theirs:
            check(f"kv_offloading.{name}", getattr(ours, name), theirs[name])
    if "groups" not in theirs:  # OffloadingConfig's groups from 0.26
        return
    check("kv_offloading.groups", [[g.group_id, g.tokens_per_block, g.num_layers, g.sliding_window_size_in_chunks]
                                   for g in ours.groups],
          [[g["group_id"], g["tokens_per_block"], g["num_layers"], g["sliding_window_size_in_chunks"]]
           for g in theirs.get("groups") or []])


def differences(checks: list[FieldCheck]) -> list[FieldCheck]:
    return [c for c in checks if not c.agree]


def mismatches(golden: dict, era=None) -> list[str]:
    """Every field where kvplan (under ``era``, default: the golden's release) differs from what
    vLLM reported for a recorded case (``{"vllm_version", "case", "result"}``); [] when all agree."""
    from kvplan.engines.vllm.releases import era_of_release
    from kvplan.verify.case import plan_from_case

    plan = plan_from_case(golden["case"], era or era_of_release(golden["vllm_version"]))
    return [f"{c.field}: kvplan {c.kvplan!r} != vLLM {c.vllm!r}" for c in differences(compare(plan, golden["result"]))]
