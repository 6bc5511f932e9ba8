"""The smallest changes that make a failing deployment start, each verified by simulating
the deployment again with it.

vLLM's config checks that an engine option decides (``config_fixes``: max_model_len, the
scheduler's batch sizes) get the option's value that passes. Memory failures (the admission
check, auto-fit with no room) get: a
shorter ``--max-model-len`` (the engine's own estimate, checked), a larger
``--kv-cache-memory`` (the least that starts, rounded up to a whole GiB, or to 64 MiB
below 8 GiB), a larger ``--num-gpu-blocks-override`` (the least that starts) or none, and
``--no-async-scheduling`` where the in-flight reservation of the windowed layers is what
does not fit. ``--gpu-memory-utilization`` needs the hardware budget and is found by
``kvplan.usecases.fix_search.utilization_fix``.

The searches here simulate nothing themselves: each is a generator that yields the engine
options to try and is sent back the plan they give (``Search``); the use case that drives it
(``kvplan.usecases.fix_search.run_search``) runs every simulation, so this module never calls up
or out.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from kvplan.results.records import Fix
from kvplan.results.summary import PlanSummary
from kvplan.units import Bisection, GiB, MiB, cdiv

if TYPE_CHECKING:
    from kvplan.engines.vllm.plan import Plan

MEMORY_STAGES = ("admission", "autofit")
ROUND_GIB_FROM = 8 * GiB


def fix_entry(option: str, value, flag: str, plan) -> Fix:
    """One verified fix: the option, its value, the flag to type and what the engine then does."""
    s = PlanSummary.of(plan)
    return Fix(
        option=option, value=value, flag=flag, verified=s.starts, starts=s.starts,
        max_model_len=s.max_model_len, num_blocks=s.num_blocks, max_concurrency=s.max_concurrency,
        steady_state_concurrency=s.steady_state_concurrency,
        result=(f"starts; num_blocks {plan.num_blocks:,}, max_concurrency {plan.max_concurrency:.2f}, "
                f"steady_state_concurrency {plan.steady_state_concurrency:.2f}"),
    )


def size_flag(n: int) -> str:
    return f"{n // GiB}GiB" if n % GiB == 0 else f"{n // MiB}MiB"


def round_up_size(n: int) -> int:
    """Up to a whole GiB from 8 GiB, to 64 MiB below."""
    step = GiB if n >= ROUND_GIB_FROM else 64 * MiB
    return cdiv(n, step) * step


_Found = TypeVar("_Found")
# A search: yields the options to simulate (whatever the driver's ``rerun`` takes), is sent each one's plan
# (None where the driver has none to give), returns what it found.
Search = Generator[object, "Plan | None", _Found]


def _starts(options) -> Search[Plan | None]:
    """The plan of ``options`` when it starts, else None (one simulation, asked of the driver; the driver
    sends None where it has no plan to give, e.g. no KV memory left at that value)."""
    p = yield options
    return p if p is not None and p.starts else None


def least_that_starts(failing: int, starting: int, with_value=None) -> Search[int]:
    """The least value in (failing, starting] that starts (starting is known to start); each value is
    asked of the driver as ``with_value(k)`` (the engine options), or as the value itself."""
    search = Bisection(failing, starting - 1)
    for k in search:  # the largest that still fails
        search.answer((yield from _starts(k if with_value is None else with_value(k))) is None)
    return search.largest + 1


def config_fixes(plan) -> Search[list[Fix]]:
    """Fixes for vLLM's config checks that an engine option changes (``prechecks``): the derived
    length or ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` for a too-long --max-model-len, a token budget
    of at least max_num_seqs (and max_model_len without chunked prefill), or chunked prefill on;
    without ``parallel_drafting`` where 0.34.0 refuses it.
    Each is kept only when the deployment then starts."""
    from kvplan.engines.vllm.prechecks import STAGE_MAX_MODEL_LEN, STAGE_SCHEDULER, STAGE_SPECULATIVE

    o, stage = plan.options, plan.failure.stage
    candidates = []
    if stage == STAGE_MAX_MODEL_LEN and plan.facts.derived_max_len is not None:
        n = plan.facts.derived_max_len.tokens
        candidates += [(replace(o, max_model_len=n), "max_model_len", n, f"--max-model-len {n}"),
                       (replace(o, allow_long_max_model_len=True), "env", {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"},
                        "--env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")]
    elif stage == STAGE_SCHEDULER:
        need = max(o.max_num_seqs, plan.original_max_model_len if o.enable_chunked_prefill is False else 0)
        candidates.append((replace(o, max_num_batched_tokens=need), "max_num_batched_tokens", need,
                           f"--max-num-batched-tokens {need}"))
        if o.enable_chunked_prefill is False:
            candidates.append((replace(o, enable_chunked_prefill=True), "enable_chunked_prefill", True,
                               "--enable-chunked-prefill"))
    elif stage == STAGE_SPECULATIVE and o.parallel_drafting is not None:
        candidates.append((replace(o, parallel_drafting=None), "parallel_drafting", None,
                           "omit --parallel-drafting"))
    fixes = []
    for opts, option, value, flag in candidates:
        p = yield from _starts(opts)
        if p is not None:
            fixes.append(fix_entry(option, value, flag, p))
    return fixes


def smallest_fixes(plan) -> Search[list[Fix]]:
    """The fixes of a failing ``plan``: a search over the same deployment with other options;
    returns the list of ``Fix``."""
    if plan.failure is not None and plan.failure.stage.startswith("config."):
        return (yield from config_fixes(plan))
    if plan.failure is None or plan.failure.stage not in MEMORY_STAGES or plan.failure.error_type != "ValueError":
        return []  # not a memory failure (e.g. DCP with sliding-window layers)
    o = plan.options
    fixes: list[Fix] = []

    # 1. a shorter --max-model-len: the engine's own estimate (the smallest over failing workers)
    estimates = [c.estimated_max_model_len for c in plan.worker_checks if not c.fits and c.estimated_max_model_len]
    if estimates and o.max_model_len != -1:
        length = min(estimates)
        p = (yield from _starts(replace(o, max_model_len=length)))
        if p is None:  # never seen; search below the estimate rather than print an unverified fix
            best = 0
            if (yield from _starts(replace(o, max_model_len=1))):
                search = Bisection(1, length)
                for n in search:
                    search.answer((yield from _starts(replace(o, max_model_len=n))) is not None)
                best = search.largest
            p = (yield from _starts(replace(o, max_model_len=best))) if best else None
            length = best
        if p is not None:
            fixes.append(fix_entry("max_model_len", length, f"--max-model-len {length}", p))

    # 2. more blocks: the override, or more memory
    if o.num_gpu_blocks_override is not None:
        p = (yield from _starts(replace(o, num_gpu_blocks_override=None)))
        if p is not None:
            fixes.append(fix_entry("num_gpu_blocks_override", None, "drop --num-gpu-blocks-override", p))
        need = max((cdiv(c.needed_bytes, c.bytes_per_block) + 1 for c in plan.worker_checks if c.bytes_per_block),
                   default=0)
        lo = o.num_gpu_blocks_override
        if need > lo and (yield from _starts(replace(o, num_gpu_blocks_override=need))):
            n = yield from least_that_starts(lo, need, lambda k: replace(o, num_gpu_blocks_override=k))
            p = (yield from _starts(replace(o, num_gpu_blocks_override=n)))
            if p is not None:
                fixes.append(fix_entry("num_gpu_blocks_override", n, f"--num-gpu-blocks-override {n}", p))
    else:
        o = replace(o, kv_cache_memory_bytes_per_worker=None)  # --kv-cache-memory gives every stage the same
        mem = o.kv_cache_memory_bytes
        hi = max(mem, 1) * 2
        while hi < (1 << 50) and (yield from _starts(replace(o, kv_cache_memory_bytes=hi))) is None:
            hi *= 2
        if hi < (1 << 50):
            least = round_up_size((yield from least_that_starts(mem, hi, lambda k: replace(o, kv_cache_memory_bytes=k))))
            p = (yield from _starts(replace(o, kv_cache_memory_bytes=least)))
            if p is not None:
                fixes.append(fix_entry("kv_cache_memory", least, f"--kv-cache-memory {size_flag(least)}", p))

    # 3. async scheduling off: the windowed layers then reserve one batch fewer
    if plan.era.in_flight_batches and plan.runner is not None and plan.runner.async_scheduling:
        p = (yield from _starts(replace(plan.options, async_scheduling=False)))
        if p is not None:
            fixes.append(fix_entry("async_scheduling", False, "--no-async-scheduling", p))
    return fixes
