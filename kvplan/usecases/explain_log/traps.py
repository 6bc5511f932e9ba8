"""The traps a logged deployment falls into, each with its numbers (kvplan's re-simulation
where one ran, the log's own figures otherwise).

- ``hybrid_manager_off``: a KV connector, KV events, chunked local attention or the user
  turned the hybrid KV cache manager off; the cost is the same deployment simulated with it on.
- ``padding_waste``: group slots with no layer, in bytes of the pool at full load.
- ``sliding_window_reservation``: the logged concurrency counts each request's in-flight
  reservation in the sliding/chunked groups; past prefill the pool holds more
  (``steady_state_concurrency``, docs/capacity.md).
- ``autofit_reduced``: ``--max-model-len auto`` cut the model's length.
- ``rounding_unused``: memory below one block id that num_blocks' rounding leaves unused;
  ``stage_unused``: what a pipeline stage could hold beyond the smallest stage's num_blocks.
- ``startup_failure``: the engine fails; the smallest verified fix (simulate's failure report).
"""

from __future__ import annotations


from kvplan.logs.extract import Facts
from kvplan.results.explain_log import (
    AutofitTrap, HmaCost, HmaOffTrap, PaddingTrap, RoundingTrap, SlidingTrap, StageUnusedTrap, StartupFailureTrap,
    Trap,
)
from kvplan.units import format_bytes

# a steady state at least this much above the logged concurrency is worth naming
STEADY_FACTOR = 1.10
# rounding leftovers below this share of the budget are not worth naming
ROUNDING_PCT = 0.1

_HMA_REASONS = {
    "kv_connector": "a KV connector (--kv-transfer-config)",
    "kv_events": "KV events (--kv-events-config)",
    "chunked_local_attention": "chunked local attention (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0)",
}


def find_traps(logged: Facts, sim, *, layout=None) -> list[Trap]:
    """``sim``: the re-simulation at the logged budget (None when none ran); ``layout``: a
    layout-only one (no KV memory in the log), which names only the budget-free traps."""
    result = sim.result if sim is not None else None
    out: list[Trap] = []
    out += _hma(logged, sim if sim is not None else layout, cost=sim is not None)
    if result is not None:
        out += _padding(result)
        out += _sliding(logged, result)
    out += _autofit(logged, result)
    if result is not None:
        out += _rounding(result)
    out += _failure(logged, result)
    return out


def _hma(logged: Facts, sim, *, cost: bool = True) -> list[Trap]:
    reasons = [_HMA_REASONS[f["reason"]] for f in logged.all("hma_off") if f["reason"] in _HMA_REASONS]
    result = sim.result if sim is not None else None
    plan = result.plan if result is not None else None
    if plan is not None and plan.hma is not None and plan.hma.disabled:
        reasons += [r for r in plan.hma.reasons if r not in reasons]
    if not reasons and not logged.has("hma_off_converted"):
        return []
    if not reasons:
        reasons = ["--disable-hybrid-kv-cache-manager or a cause the log does not show"]
    detail = ("the hybrid KV cache manager is off (" + "; ".join(reasons) + "): sliding-window and chunked "
              "layers keep KV for the whole length")
    hma_cost = None
    if cost and plan is not None and plan.starts and plan.hma.disabled:
        on = _with_hma(sim)
        if on is not None and on.starts and not on.hma.disabled:
            hma_cost = HmaCost(plan.max_concurrency, on.max_concurrency, plan.num_blocks,
                               on.num_blocks, plan.kv_tokens, on.kv_tokens)
            detail += (f"; with it on, the same memory holds {on.max_concurrency:.2f}x max-length requests "
                       f"instead of {plan.max_concurrency:.2f}x")
    return [HmaOffTrap("hybrid_manager_off", tuple(reasons), hma_cost, detail)]


def _with_hma(sim):
    """The same deployment with the hybrid manager left to vLLM, no connector, no KV events."""
    from kvplan.usecases.pipeline import replan

    return replan(sim.result, disable_hybrid_kv_cache_manager=None, kv_transfer_config=None, kv_events=False,
                  allow_chunked_local_with_hma=True)


def _padding(result) -> list[Trap]:
    mem = result.body.memory
    waste = mem.padding_waste_bytes or 0
    if not waste:
        return []
    return [PaddingTrap("padding_waste", waste, mem.padding_waste_pct_of_pool, result.plan.num_padding_layers,
                        f"{result.plan.num_padding_layers} padding slot(s) per block id: {format_bytes(waste)} "
                        f"({mem.padding_waste_pct_of_pool:.2f}% of the pool) hold no layer at full load")]


def _sliding(logged: Facts, result) -> list[Trap]:
    plan = result.plan
    if not plan.starts or plan.steady is None or not plan.max_concurrency:
        return []
    steady = plan.steady_state_concurrency
    if steady < plan.max_concurrency * STEADY_FACTOR:
        return []
    conc = [f for f in logged.all("concurrency")] + [f for f in logged.all("capacity")]
    shown = conc[0]["max_concurrency"] if conc else round(plan.max_concurrency, 2)
    return [SlidingTrap(
        "sliding_window_reservation", plan.max_concurrency, conc[0]["max_concurrency"] if conc else None,
        steady, plan.steady.prefill_reserve_blocks,
        f"the logged concurrency ({shown:.2f}x) counts each request's in-flight reservation in the "
        f"sliding/chunked groups; once past prefill the pool holds {steady:.2f}x max-length requests "
        f"(kvplan's steady_state_concurrency; {plan.steady.prefill_reserve_blocks:,} blocks are the "
        "prefill reserve)")]


def _autofit(logged: Facts, result) -> list[Trap]:
    f = next((x for x in logged.all("autofit") if x["reduced"]), None)
    if f is not None:
        return [AutofitTrap("autofit_reduced", f["original"], f["max_model_len"], f.line,
                            f"--max-model-len auto cut max_model_len from {f['original']:,} to "
                            f"{f['max_model_len']:,} tokens (line {f.line}): longer requests are rejected")]
    if result is not None and result.plan.max_model_len < result.plan.original_max_model_len:
        p = result.plan
        return [AutofitTrap("autofit_reduced", p.original_max_model_len, p.max_model_len, None,
                            f"kvplan's auto-fit cuts max_model_len from {p.original_max_model_len:,} to "
                            f"{p.max_model_len:,} tokens (the log does not show the auto-fit line)")]
    return []


def _rounding(result) -> list[Trap]:
    """Two kinds of memory a worker allocates nothing in: below one block id (num_blocks rounds
    down), and, with pipeline stages, the blocks a stage could hold beyond the smallest stage's
    num_blocks (every stage keeps the engine-wide minimum)."""
    if result.plan.options.num_gpu_blocks_override is not None:
        return []  # the pool is what the override asked for, not what the memory rounds to
    workers = [w for w in result.body.workers if getattr(w, "allocated", False)]
    out: list[Trap] = []
    for w in workers:
        avail, bpb = w.available_bytes, w.bytes_per_block
        if not avail or not bpb:
            continue
        rounding = avail - w.own_num_blocks * bpb
        if rounding * 100 >= avail * ROUNDING_PCT:
            out.append(RoundingTrap("rounding_unused", rounding, avail, w.rank, bpb,
                                    f"{format_bytes(rounding)} ({rounding / avail * 100:.2f}% of the KV memory) stay "
                                    f"unused on rank {w.rank}: num_blocks rounds down to whole block ids of "
                                    f"{format_bytes(bpb)}"))
        equalised = (w.own_num_blocks - w.num_blocks) * bpb
        if equalised > 0:
            out.append(StageUnusedTrap(
                "stage_unused", equalised, avail, w.rank, w.own_num_blocks, w.num_blocks,
                f"{format_bytes(equalised)} ({equalised / avail * 100:.2f}% of the KV memory) stay "
                f"unused on pipeline stage {w.rank}: with its layers it could hold "
                f"{w.own_num_blocks:,} blocks, but every stage keeps the smallest stage's "
                f"{w.num_blocks:,} (each stage given the logged KV memory)"))
    return out


def _failure(logged: Facts, result) -> list[Trap]:
    plan = result.plan if result is not None else None
    if plan is not None and plan.failure is not None:
        fixes = list(result.body.fixes)
        fix = fixes[0] if fixes else None
        detail = f"start-up fails ({plan.failure.stage}: {plan.failure.error_type})"
        if fix:
            detail += f"; the smallest verified fix: {fix.flag} ({fix.result})"
        return [StartupFailureTrap("startup_failure", plan.failure.stage, plan.failure.error_type,
                                   plan.failure.message, fix, detail)]
    f = next((logged.first(k) for k in ("admission_error", "admission_error_tokens", "no_memory_error",
                                        "drafter_split", "page_error", "autofit_none", "exception", "engine_failed")
              if logged.has(k)), None)
    if f is not None:
        detail = f"start-up failed (line {f.line})"
        if f.kind == "admission_error" and "estimated_max_model_len" in f.values:
            detail += f"; vLLM's own estimate: --max-model-len {f['estimated_max_model_len']} fits (not re-simulated)"
        return [StartupFailureTrap("startup_failure", None, None, f.text, None, detail)]
    return []
