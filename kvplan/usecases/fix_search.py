"""The fix search: the verified changes that make a failing deployment start, in the order a serving engineer
tries them (``FIX_ORDER``). Each candidate is the deployment changed (``deployment.changed``: kvplan's own typed
values) and simulated again through the pipeline (``kvplan.usecases.pipeline``); the engine's own searches
(``kvplan.engines.vllm.fixes``) yield the options to try and ``run_search`` runs each through the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any

from kvplan.engines.vllm.eras import Era
from kvplan.engines.vllm.plan import Plan
from kvplan.errors import KvplanError
from kvplan.model.layout import ModelLayout
from kvplan.results.records import Fix
from kvplan.usecases.deployment import Deployment, changed
from kvplan.usecases.pipeline import (
    ScenarioResult, engine_run, engine_stage, kv_bytes_at, layout_of, plan_layout, run_deployment,
)

if TYPE_CHECKING:  # annotations only (a budget that was computed)
    from kvplan.results.budget import Budget, LoadFailure


def with_fixes(r: ScenarioResult) -> ScenarioResult:
    """``r`` with the fixes of its deployment when it fails (none when it starts, none without a budget: only
    vLLM's configuration checks ran). A load-stage failure (out of memory before the KV cache) gets the load fixes;
    any other the engine's fixes, the utilization fix and ``--kv-cache-dtype fp8`` (``deployment_fixes``)."""
    d, budget = r.deployment, r.budget
    if budget is None and d.budget.kv_cache_memory is None:
        return r
    if budget is not None and budget.load_failure is not None:
        found = load_fixes(d, r.layout, r.plan, budget.load_failure)
    else:
        found = deployment_fixes(d, r.layout, d.era, r.plan, budget)
    return replace(r, fixes=tuple(found)) if found else r


def run_search(search: Generator[Any, Any, Any], rerun: Callable[[Any], Any]) -> Any:
    """Drive one of the searches (``kvplan.engines.vllm.fixes.Search``: it yields the options to try; or
    ``least_that_starts``: the values) with ``rerun(options)``, here, each simulation run by the
    pipeline (``pipeline.engine_run``, ``run_deployment``); its result."""
    try:
        options = next(search)
        while True:
            options = search.send(rerun(options))
    except StopIteration as done:
        return done.value


def deployment_fixes(d: Deployment, layout: ModelLayout, era: Era, plan: Plan, budget: Budget | None) -> list[Fix]:
    """The verified changes that make a failing deployment start (none when it starts), in the order a serving
    engineer tries them (``rank_fixes``); with a band, a deployment that starts only at the central estimate
    gets the fixes that hold at the pessimistic end."""
    band = budget.band if budget is not None else None
    if plan.starts and (band is None or band.starts_at_low is not False):
        return []
    if (layout.num_speculative_tokens_missing and not plan.starts and plan.failure is not None
            and plan.failure.stage == "config.speculative"):
        return speculative_tokens_fix(d, era, plan)
    if band is not None and band.failure_at_low in ("load", "profile"):  # out of memory before the KV cache
        return load_fixes(d, layout, plan)
    if budget is not None and band is not None and band.failure_at_low == "warm-up":  # out of memory after it
        return warmup_fixes(d, budget)
    if budget is not None and band is not None and band.starts_at_low is False:  # they hold at the pessimistic end
        return pessimistic_fixes(d, layout, era, budget)
    return rank_fixes(_deployment_fixes(d, layout, era, plan, budget) + kv_dtype_fixes(d, budget))


def pessimistic_fixes(d: Deployment, layout: ModelLayout, era: Era, budget: Budget) -> list[Fix]:
    """The fixes of a deployment that starts at kvplan's central estimate but not at the band's pessimistic end:
    each simulated at that end (a lower utilization's KV bytes shifted by the band's shortfall)."""
    assert budget.band is not None
    low = budget.band.kv_cache_memory_low_bytes
    plan = engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=max(low, 0),
                        max_model_len=d.scheduler.max_model_len, budget=budget)
    if plan.starts or plan.failure is None:
        return []
    fixes = _deployment_fixes(d, layout, era, plan, budget, shortfall=budget.kv_cache_memory_bytes - low)
    return rank_fixes(fixes + kv_dtype_fixes(d, budget))


def warmup_fixes(d: Deployment, budget: Budget) -> list[Fix]:
    """The fixes of a deployment whose pessimistic end runs out of memory in the warm-up after the KV cache is
    allocated (the CUDA graphs vLLM did not subtract and the sampler's warm-up pass, ``kvplan.budget.estimate``):
    the largest lower ``--gpu-memory-utilization`` (to 0.01) whose headroom holds them, and the largest halved
    ``--max-num-seqs`` (fewer graphs, a smaller sampler pass), each simulated again from scratch and kept when it
    starts at the pessimistic end."""
    from kvplan.engines.vllm.fixes import fix_entry

    band = budget.band
    assert band is not None and band.warmup_need_bytes is not None and band.warmup_headroom_bytes is not None
    fixes: list[Fix] = []
    total, util = budget.gpu_memory_bytes, budget.gpu_memory_utilization
    short = band.warmup_need_bytes - band.warmup_headroom_bytes
    k = int((util - short / total) * 100)  # the headroom grows by total / 100 per step
    for u in (k / 100, (k - 1) / 100):
        if 0 < u < util:
            p = _starts_with(changed(d, gpu_memory_utilization=u))
            if p is not None:
                fixes.append(fix_entry("gpu_memory_utilization", u, f"--gpu-memory-utilization {u:.2f}", p))
                break
    seqs = budget.max_num_seqs
    for n in (seqs >> i for i in range(1, 6)):
        if n >= 1:
            p = _starts_with(changed(d, max_num_seqs=n))
            if p is not None:
                fixes.append(fix_entry("max_num_seqs", n, f"--max-num-seqs {n}", p))
                break
    return rank_fixes(fixes)


# The order a serving engineer tries a failing deployment's fixes in: a quantized KV cache (no change to what is
# served), the utilization, a shorter context, fewer or lighter requests in flight, more GPUs or a larger card,
# and only then a fixed --kv-cache-memory (it skips the profile: the figure must be right for the card).
FIX_ORDER = ("kv_cache_dtype", "gpu_memory_utilization", "max_model_len", "async_scheduling",
             "num_gpu_blocks_override", "tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size",
             "gpu", "kv_cache_memory")


def rank_fixes(fixes: list[Fix]) -> list[Fix]:
    """``fixes`` in ``FIX_ORDER`` (the ones it does not name keep their place after those it does)."""
    rank = {o: i for i, o in enumerate(FIX_ORDER)}
    return sorted(fixes, key=lambda f: rank.get(f.option, len(FIX_ORDER)))


def kv_dtype_fixes(d: Deployment, budget: Budget | None) -> list[Fix]:
    """``--kv-cache-dtype fp8`` for a deployment whose KV cache is in the model's dtype: the whole deployment
    simulated again with it (the layout's pages halve), kept when it then starts (at the band's pessimistic
    end where there is one)."""
    from kvplan.engines.vllm.fixes import fix_entry

    if d.serving.kv_cache_dtype not in (None, "auto") or budget is None:
        return []
    p = _starts_with(changed(d, kv_cache_dtype="fp8"))
    return [] if p is None else [fix_entry("kv_cache_dtype", "fp8", "--kv-cache-dtype fp8", p)]


def _deployment_fixes(d: Deployment, layout: ModelLayout, era: Era, plan: Plan, budget: Budget | None,
                      shortfall: int = 0) -> list[Fix]:
    """The engine's fixes of a failing plan, the utilization fix, and (``shortfall``) at the band's low end."""
    from kvplan.engines.vllm.fixes import smallest_fixes

    fixes = run_search(smallest_fixes(plan),
                       engine_run(layout, era, disable_sliding_window=d.serving.disable_sliding_window))
    if budget is not None and budget.kv_room_bytes is not None:
        # --kv-cache-memory skips the profile, but the cache must still fit beside the weights, the
        # activation peak and the graphs: a larger value runs out of memory allocating it
        fixes = [f for f in fixes if f.option != "kv_cache_memory" or f.value <= budget.kv_room_bytes]
    if budget is not None and d.budget.kv_cache_memory is None:
        fix = utilization_fix(d, layout, era, budget, plan, shortfall)
        if fix is not None:
            fixes.append(fix)
    return fixes


# the value the fix for a missing num_speculative_tokens is simulated with: the least vLLM accepts
# (SpeculativeConfig's field: Field(gt=0), 0.18.0 line 70, 0.34.0 line 455)
SPEC_TOKENS_FIX = 1


def speculative_tokens_fix(d: Deployment, era: Era, plan: Plan) -> list[Fix]:
    """The fix for a speculative method vLLM refuses without num_speculative_tokens: the same
    deployment simulated again with ``SPEC_TOKENS_FIX`` tokens (the layout rebuilt: a Mamba
    state depends on it), kept when it then starts."""
    from kvplan.engines.vllm.fixes import fix_entry

    try:
        layout = layout_of(d, num_speculative_tokens=SPEC_TOKENS_FIX)
    except KvplanError:  # with the tokens it fails later (a DSpark drafter the checkpoint lacks): no fix
        return []
    p = plan_layout(layout, era, plan.options, disable_sliding_window=d.serving.disable_sliding_window)
    if not p.starts:
        return []
    n = SPEC_TOKENS_FIX
    fix = fix_entry("num_speculative_tokens", n, f"--num-speculative-tokens {n}", p)
    return [replace(fix, result=f"starts with {n} speculative token (simulated with {n}, the least vLLM accepts; "
                                f"give the drafter's own value): " + fix.result.removeprefix("starts; "))]



def utilization_fix(d: Deployment, layout: ModelLayout, era: Era, budget: Budget, plan: Plan,
                    shortfall: int = 0) -> Fix | None:
    """The least ``--gpu-memory-utilization`` (to 0.01, at most 1.0) at which a failing
    deployment starts, verified by simulating it; None when even 1.0 does not. ``shortfall``: the KV bytes
    the band's pessimistic end has less than the central estimate (the fix then holds at that end)."""
    from kvplan.engines.vllm.fixes import fix_entry, least_that_starts

    if plan.failure is None or plan.failure.stage not in ("admission", "autofit"):
        return None
    length = plan.options.max_model_len

    @cache  # the fix's own plan is the search's last one: simulated once
    def starts(k: int) -> Plan | None:
        kv = kv_bytes_at(budget, k / 100) - shortfall
        p = engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=kv, max_model_len=length,
                         budget=budget) if kv > 0 else None
        return p if p is not None and p.starts else None

    current = round((d.budget.gpu_memory_utilization or budget.gpu_memory_utilization or 0.9) * 100)
    if current >= 100 or starts(100) is None:
        return None
    k = run_search(least_that_starts(current, 100), starts)
    if not shortfall:
        return fix_entry("gpu_memory_utilization", k / 100, f"--gpu-memory-utilization {k / 100:.2f}", starts(k))
    # the band's shortfall moves with the utilization (the extensible sizing's margin, the CUDA graphs' band):
    # the search's value simulated again from scratch, and the next steps where it does not start at that end
    for j in range(k, 101):
        p = _starts_with(changed(d, gpu_memory_utilization=j / 100))
        if p is not None:
            return fix_entry("gpu_memory_utilization", j / 100, f"--gpu-memory-utilization {j / 100:.2f}", p)
    return None



# the sizes kvplan tries for a larger tensor- / pipeline-parallel deployment (vLLM takes any, the
# model's heads and layers decide which build)
LOAD_FIX_TP = (2, 4, 8, 16, 32)
LOAD_FIX_PP = (2, 3, 4, 8)


def _starts_with(d: Deployment) -> Plan | None:
    """``d`` simulated from scratch (its own layout and budget), no fixes; the plan when it starts."""
    try:
        r = run_deployment(d)
    except KvplanError:
        return None  # e.g. heads not divisible by that tensor-parallel size
    band = r.budget.band if r.budget is not None else None
    return r.plan if r.plan.starts and (band is None or band.starts_at_low is not False) else None


def load_fixes(d: Deployment, layout: ModelLayout, plan: Plan, failed: LoadFailure | None = None) -> list[Fix]:
    """Deployment changes that make a load-stage failure start, each simulated again from scratch
    (layout, weights, budget): the least larger ``--tensor-parallel-size``, the least larger
    ``--pipeline-parallel-size``, ``--quantization fp8`` for an unquantized checkpoint, the
    smallest larger card of the same platform, and (``failed``: the budget's ``load_failure``)
    for the profile stage the largest halved ``--max-num-batched-tokens``, for the load stage the
    least whole ``--cpu-offload-gb`` that starts. A smaller KV budget never helps here."""
    from kvplan.budget.hardware import GPU_PRESETS
    from kvplan.engines.vllm.fixes import fix_entry, least_that_starts

    fixes: list[Fix] = []

    def first(candidates):
        for opts, option, value, flag in candidates:
            p = _starts_with(opts)
            if p is not None:
                fixes.append(fix_entry(option, value, flag, p))
                return

    tp, pp = d.serving.tensor_parallel_size, d.serving.pipeline_parallel_size
    first((changed(d, tensor_parallel_size=n), "tensor_parallel_size", n, f"--tensor-parallel-size {n}")
          for n in LOAD_FIX_TP if n > tp)
    first((changed(d, pipeline_parallel_size=n), "pipeline_parallel_size", n, f"--pipeline-parallel-size {n}")
          for n in LOAD_FIX_PP if n > pp)
    if d.budget.quantization is None:
        # fp8 at load time: a checkpoint that declares another method refuses it and one that declares fp8 loads
        # the same weights, so the candidate's own simulation rules both out (quantization_override)
        first([(changed(d, quantization="fp8"), "quantization", "fp8", "--quantization fp8")])
    here = d.budget.card
    if here is not None and here.name is not None and d.budget.gpu_memory is None:
        larger = sorted((g for g in GPU_PRESETS.values() if g.platform == here.platform
                         and g.memory_bytes > here.memory_bytes and g.basis == "cuda"),
                        key=lambda g: g.memory_bytes)
        first((changed(d, gpu=g.name), "gpu", g.name, f"--gpu {g.name} (a larger card)") for g in larger)
    from kvplan.budget.load import LOAD, PROFILE

    stage = failed.stage if failed is not None else None
    if stage == PROFILE:  # a smaller dummy batch lowers the activation peak
        t = plan.options.max_num_batched_tokens
        first((changed(d, max_num_batched_tokens=n), "max_num_batched_tokens", n, f"--max-num-batched-tokens {n}")
              for n in (t >> k for k in range(1, 8)) if n >= 256)
    elif stage == LOAD and failed is not None:  # vLLM keeps that many GiB of weights in CPU memory (UVA), per GPU
        @cache  # each size simulated once (the fix's own plan is the search's last one)
        def offloaded(k: int):
            return _starts_with(changed(d, cpu_offload_gb=float(k)))

        lo = int((d.budget.cpu_offload_gb or 0) + (failed.needed_bytes - failed.free_bytes) // (1 << 30))
        hi = int(failed.needed_bytes // (1 << 30))  # nearly every weight offloaded
        if hi > lo and offloaded(hi) is not None:
            k = run_search(least_that_starts(lo, hi), offloaded)
            fixes.append(fix_entry("cpu_offload_gb", k, f"--cpu-offload-gb {k}", offloaded(k)))
    return fixes
