"""Knobs for a workload (``--target-len L --target-concurrency N``), found and checked by
evaluating the engine models themselves, never by a separate formula.

Every candidate knob is re-simulated through the same engine model as the comparison rows
(admission, prefill and steady decode included). A candidate is scored by the whole requests
of the workload it serves (the model's concurrency, 0 when the workload's prompt cannot be
prefilled or the engine does not start), then by its **margin**: the smallest pool's capacity
over what those requests need in it (``min_pool capacity / (requests · need)``), so among knobs
serving as many requests the one leaving every pool the most headroom wins. A knob that serves
no request is never advised (``tests/test_compare.py`` checks over random models that every
advised knob leaves each pool at least one request's need).

- **SGLang** ``--swa-full-tokens-ratio``: every ratio from 0.001 to 1.0 in steps of 0.001.
- **TensorRT-LLM** ``TRTLLM_WINDOW_SIZE_SHARES``: start from shares proportional to each
  pool's binding need for one request (the larger of the prefill and the admission blocks,
  times block bytes), then move shares between pools in steps of 0.01, 0.001 and 0.0001 while
  the score improves. Four decimals, summing to exactly 1.0 (TensorRT-LLM asserts
  ``sum == 1.0``). When no split prefills the workload's prompt, the advice says so and gives
  the longest prompt any split can prefill (every pool holding the prompt: shares
  proportional to the pools' bytes per token).
- **TensorRT-LLM, Mamba hybrids**: first ``kv_cache_config.enable_block_reuse=false`` (the
  defaults fail MambaHybridCacheManager's assert) and the ``max_batch_size`` whose state leaves a
  pool serving the most requests (the largest ``S`` still served ``S`` times, equal shares), then
  the shares on top; offered when that serves more than the defaults.
- **vLLM** grouping threshold: not a vLLM flag. The 1.5 is a literal in
  ``vllm/v1/core/kv_cache_utils.py`` (``_get_kv_cache_groups_uniform_page_size``, PR
  #36684), so the advice is labelled a code change; kvplan's own ``--threshold`` simulates
  it. Only the smallest and largest bucket counts matter, so two values cover every outcome:
  1.0 and the first hundredth above max/min.
- **llama.cpp**: the largest ``-np`` whose ``-c = L · n_seq`` allocates within the budget, in
  the unified and the per-slot (non-unified) layout, with and without ``--swa-full``; ``-c``
  is what llama.cpp keeps after padding to 256.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

from kvplan.engines.compare import CompareInputs, sglang_result, trtllm_result
from kvplan.engines.layer_costs import LayerCost
from kvplan.engines.llamacpp import llamacpp_model
from kvplan.engines.sglang import SglangResult
from kvplan.engines.trtllm import MAX_UTILIZATION, TrtllmResult, mamba_state_bytes, window_bytes_per_token
from kvplan.results.advice import (
    Advice, LlamacppAdvice, LlamacppNoChange, LlamacppNone, LlamacppSlots, NotApplicable, SglangAdvice, SglangNoChange,
    SglangNoRatio, TrtllmNoChange, TrtllmNoSplit, TrtllmSettings, TrtllmShares, VllmAdvice, VllmGrouping,
    VllmNoThreshold, VllmNotApplicable, VllmTried,
)
from kvplan.units import Bisection, plural

TrtllmSharesAny = NotApplicable | TrtllmNoSplit | TrtllmNoChange | TrtllmShares
TrtllmAdviceAny = TrtllmSharesAny | TrtllmSettings
VllmAdviceAny = VllmNotApplicable | VllmNoThreshold | VllmAdvice

RATIO_STEP = Fraction(1, 1000)
SHARE_STEPS = (Fraction(1, 100), Fraction(1, 1000), Fraction(1, 10000))
VLLM_THRESHOLD_SOURCE = ("vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size "
                         "(the literal 1.5 since PR #36684)")
NO_SCORE = (0, 0.0)


def _reaches(concurrency: float, target: int | None) -> bool | None:
    return None if target is None else concurrency >= target


def _round(x: float) -> float:
    return round(x, 6)


# --- SGLang ------------------------------------------------------------------------------


def sglang_concurrency(costs, architecture, inputs: CompareInputs, ratio: float) -> SglangResult:
    return sglang_result(costs, architecture, inputs, ratio)


def sglang_pool_margins(r: SglangResult, requests: int) -> dict[str, float]:
    """Each pool's capacity over what ``requests`` decoding requests need in it (the SWA pool
    after the prefill chunks in flight)."""
    out = {"full": r.full_tokens / (requests * r.full_need_tokens)}
    if r.hybrid_swa_memory:
        out["swa"] = (r.swa_tokens - r.swa_in_flight_tokens) / (requests * r.swa_need_tokens)
    return out


def sglang_score(r: SglangResult) -> tuple[int, float]:
    n = math.floor(r.max_concurrency)
    if not r.starts or n < 1:
        return NO_SCORE
    return n, min(sglang_pool_margins(r, n).values())


def ratio_grid() -> list[float]:
    return [float(k * RATIO_STEP) for k in range(1, int(1 / RATIO_STEP) + 1)]


def advise_sglang(costs: tuple[LayerCost, ...], architecture: str | None,
                  inputs: CompareInputs) -> NotApplicable | SglangNoRatio | SglangNoChange | SglangAdvice:
    default = sglang_concurrency(costs, architecture, inputs, inputs.swa_full_tokens_ratio)
    if not default.hybrid_swa_memory:
        return NotApplicable(False, f"the ratio has no effect: {default.reason}", _round(default.max_concurrency),
                             _reaches(default.max_concurrency, inputs.target_concurrency))
    best, best_score = None, NO_SCORE
    grid = ratio_grid()
    for ratio in grid:
        r = sglang_concurrency(costs, architecture, inputs, ratio)
        score = sglang_score(r)
        if score > best_score:
            best, best_score = r, score
    if best is None:
        return SglangNoRatio(True, None, _round(default.max_concurrency), len(grid),
                             f"no ratio in (0, 1] serves one {inputs.target_len_tokens:,}-token request",
                             _reaches(default.max_concurrency, inputs.target_concurrency))
    n, margin = best_score
    base = sglang_score(default)[0]
    if n <= base:  # advice is offered only when it serves more than the engine's default
        return SglangNoChange(
            True, None, _round(default.max_concurrency), len(grid), base,
            f"no change: the default {inputs.swa_full_tokens_ratio:g} serves {plural(base, 'request')}; "
            f"none of the {len(grid):,} ratios tried serves more (SGLang's own worst case, "
            "compute_swa_request_cap, speculation included)",
            _reaches(default.max_concurrency, inputs.target_concurrency))
    return SglangAdvice(
        default_requests=base,
        gain_requests=n - base,
        candidates_tried=len(grid),
        applicable=True,
        swa_full_tokens_ratio=best.swa_full_tokens_ratio,
        flag=f"--swa-full-tokens-ratio {best.swa_full_tokens_ratio:g}",
        max_concurrency=_round(best.max_concurrency),
        requests=n,
        margin=_round(margin),
        pool_margins={k: _round(v) for k, v in sglang_pool_margins(best, n).items()},
        full_tokens=best.full_tokens,
        swa_tokens=best.swa_tokens,
        default_swa_full_tokens_ratio=inputs.swa_full_tokens_ratio,
        default_max_concurrency=_round(default.max_concurrency),
        reaches_target=_reaches(best.max_concurrency, inputs.target_concurrency),
    )


# --- TensorRT-LLM ------------------------------------------------------------------------




def trtllm_concurrency(costs, inputs: CompareInputs, shares) -> Fraction:
    return trtllm_result(costs, inputs, shares).concurrency


def trtllm_pool_margins(r: TrtllmResult, requests: int) -> dict[int, float]:
    """Each window pool's blocks over what ``requests`` requests need there: the admission blocks
    (GUARANTEED_NO_EVICT) or the resident ones (MAX_UTILIZATION), and at least one prompt's prefill."""
    out = {}
    for p in r.pools:
        per = p.blocks_per_request if r.scheduler_policy == MAX_UTILIZATION else p.admission_blocks
        out[p.window_tokens] = p.num_blocks / max(requests * per, p.prefill_blocks)
    return out


def trtllm_score(r: TrtllmResult) -> tuple[int, float]:
    n = math.floor(r.max_concurrency)
    if not r.starts or n < 1 or not r.pools:
        return NO_SCORE
    return n, min(trtllm_pool_margins(r, n).values())


def _exact_sum(shares: list[Fraction]) -> bool:
    return sum(float(s) for s in shares) == 1.0


def _rounded_shares(weights: list[float]) -> list[Fraction]:
    total = sum(weights)
    quantum = SHARE_STEPS[-1]
    shares = [max(quantum, Fraction(round(Fraction(x) / Fraction(total) / quantum)) * quantum) for x in weights[:-1]]
    shares.append(1 - sum(shares))
    return shares


def _exact_start(shares: list[Fraction], costs, inputs: CompareInputs) -> list[Fraction]:
    """Four-decimal shares whose float sum is exactly 1.0 (0.6667 + 0.1667 + 0.1666 sums to
    0.9999999999999999 in floats): when rounding missed, the best-scoring move of the fewest
    quanta between two shares that makes the sum exact (hypothesis found the case)."""
    if _exact_sum(shares):
        return shares
    found = None
    for k in range(1, 6):  # the fewest quanta that make it exact (two, in the case found)
        q = SHARE_STEPS[-1] * k
        for i in range(len(shares)):
            for j in range(len(shares)):
                if i == j or shares[i] - q <= 0:
                    continue
                trial = list(shares)
                trial[i] -= q
                trial[j] += q
                if _exact_sum(trial):
                    score = trtllm_score(trtllm_result(costs, inputs, trial))
                    if found is None or score > found[0]:
                        found = (score, trial)
        if found:
            return found[1]
    return shares


def proportional_shares(costs, inputs: CompareInputs) -> list[Fraction]:
    """Shares where every pool runs out at the same time for one request's binding need (the
    larger of its prefill and admission blocks), four decimals, the last taking the remainder."""
    r = trtllm_result(costs, inputs)
    tpb = inputs.trtllm_tokens_per_block
    return _rounded_shares([max(p.prefill_blocks, p.admission_blocks) * tpb * p.bytes_per_token for p in r.pools])


def trtllm_mamba_settings(costs: tuple[LayerCost, ...], inputs: CompareInputs) -> dict | None:
    """For a Mamba hybrid, the engine's own settings that let it start and serve the most requests:
    ``kv_cache_config.enable_block_reuse=false`` (MambaHybridCacheManager asserts it) and the
    ``max_batch_size`` ``S`` maximising ``min(S, what the pool left after S states serves)``: the
    largest S the pool still serves (equal window shares). None for a model without state."""
    if not mamba_state_bytes(costs):
        return None
    fixed = replace(inputs, trtllm_enable_block_reuse=False)

    def served(s: int) -> int:
        return math.floor(trtllm_result(costs, replace(fixed, trtllm_max_batch_size=s)).max_concurrency)

    hi = max(1, inputs.kv_cache_memory_bytes // mamba_state_bytes(costs))
    best = 1
    if served(1) >= 1:
        search = Bisection(1, hi)
        for s in search:
            search.answer(served(s) >= s)
        best = search.largest
    return {"trtllm_enable_block_reuse": False, "trtllm_max_batch_size": best}


def _settings_text(settings: dict) -> str:
    return (f"kv_cache_config.enable_block_reuse=false max_batch_size={settings['trtllm_max_batch_size']} "
            f"(--no-trtllm-enable-block-reuse --trtllm-max-batch-size {settings['trtllm_max_batch_size']})")


def advise_trtllm(costs: tuple[LayerCost, ...], inputs: CompareInputs) -> TrtllmAdviceAny:
    """Window shares; for a Mamba hybrid first the settings it needs to start (block reuse off, a
    ``max_batch_size`` whose state leaves the pool room), offered when they serve more requests."""
    settings = trtllm_mamba_settings(costs, inputs)
    if settings is None:
        return _advise_trtllm_shares(costs, inputs)
    default = trtllm_result(costs, inputs)
    base = math.floor(default.max_concurrency) if default.starts else 0
    fixed_inputs = replace(inputs, **settings)
    inner = _advise_trtllm_shares(costs, fixed_inputs)
    shares = getattr(inner, "window_shares", None)
    r = trtllm_result(costs, fixed_inputs, shares)
    n = math.floor(r.max_concurrency) if r.starts else 0
    if n <= base:
        out = _advise_trtllm_shares(costs, inputs)
        if n < 1:
            out = replace(out, reason=(
                f"no max_batch_size serves one {inputs.target_len_tokens:,}-token request with block "
                f"reuse off: the Mamba state of one request ({mamba_state_bytes(costs):,} B) and its KV "
                "blocks do not fit the budget" + ("" if default.starts else f" (the default fails: {default.failure})")))
        return out
    return TrtllmSettings(
        shares=inner,
        applicable=True,
        settings={"kv_cache_config.enable_block_reuse": False, "max_batch_size": settings["trtllm_max_batch_size"]},
        settings_text=_settings_text(settings),
        max_concurrency=_round(r.max_concurrency),
        requests=n,
        default_requests=base,
        gain_requests=n - base,
        default_fails=None if default.starts else default.failure,
        reaches_target=_reaches(r.max_concurrency, inputs.target_concurrency),
        reason=(("the defaults do not start (" + default.failure + "); " if not default.starts else "")
                + f"{_settings_text(settings)} serves {plural(n, 'request')}"
                + (f" with {inner.env}" if shares else "")),
    )


def _advise_trtllm_shares(costs: tuple[LayerCost, ...], inputs: CompareInputs) -> TrtllmSharesAny:
    windows = list(window_bytes_per_token(costs, inputs.target_len_tokens, inputs.trtllm_max_attention_window))
    equal = trtllm_result(costs, inputs)
    if len(windows) < 2:
        return NotApplicable(False, "one window size: one pool, nothing to share", _round(equal.max_concurrency),
                             _reaches(equal.max_concurrency, inputs.target_concurrency))
    shares = _exact_start(proportional_shares(costs, inputs), costs, inputs)
    best = trtllm_score(trtllm_result(costs, inputs, shares))
    tried = [1]
    improved = True
    while improved:
        improved = False
        for step in SHARE_STEPS:
            for i in range(len(shares)):
                for j in range(len(shares)):
                    if i == j or shares[i] - step <= 0:
                        continue
                    trial = list(shares)
                    trial[i] -= step
                    trial[j] += step
                    if not _exact_sum(trial):
                        continue
                    score = trtllm_score(trtllm_result(costs, inputs, trial))
                    tried[0] += 1
                    if score > best:
                        shares, best, improved = trial, score, True
    if best == NO_SCORE:
        # every pool must hold the prompt: shares proportional to the pools' bytes per token
        even = _rounded_shares([b for _, b in window_bytes_per_token(costs, inputs.target_len_tokens, inputs.trtllm_max_attention_window).values()])
        longest = trtllm_result(costs, inputs, even).longest_prompt_tokens
        prompt = equal.prompt_len_tokens
        return TrtllmNoSplit(
            True, None, 0.0,
            f"no split prefills a {prompt:,}-token prompt: every window pool needs its "
            f"ceil(P/32) blocks; the longest prompt any split prefills is {longest:,} tokens "
            f"(shares {','.join(f'{float(s):g}' for s in even)})",
            longest, _round(equal.max_concurrency), _reaches(0.0, inputs.target_concurrency))
    r = trtllm_result(costs, inputs, shares)
    base = trtllm_score(equal)[0]
    if best[0] <= base:  # offered only when it serves more than the equal default
        return TrtllmNoChange(
            True, None, _round(equal.max_concurrency), base, tried[0],
            f"no change: equal shares serve {plural(base, 'request')}; none of the {tried[0]:,} splits tried serves more",
            _round(equal.max_concurrency), _reaches(equal.max_concurrency, inputs.target_concurrency))
    value = ",".join(f"{float(s):g}" for s in shares)
    return TrtllmShares(
        default_requests=base,
        gain_requests=best[0] - base,
        candidates_tried=tried[0],
        applicable=True,
        windows_tokens=tuple(windows),
        window_shares=tuple(float(s) for s in shares),
        env=f"TRTLLM_WINDOW_SIZE_SHARES={value}",
        max_concurrency=_round(r.max_concurrency),
        requests=best[0],
        margin=_round(best[1]),
        pool_margins={str(w): _round(m) for w, m in trtllm_pool_margins(r, best[0]).items()},
        longest_prompt_tokens=r.longest_prompt_tokens,
        equal_shares_max_concurrency=_round(equal.max_concurrency),
        reaches_target=_reaches(r.max_concurrency, inputs.target_concurrency),
    )


# --- vLLM --------------------------------------------------------------------------------


def threshold_candidates(min_count: int, max_count: int) -> list[float]:
    """1.0 (→ smallest bucket) and the first hundredth strictly above max/min (→ largest)."""
    above = Fraction(math.floor(Fraction(max_count, min_count) * 100) + 1, 100)
    return [1.0, float(above)]


def _not_consulted(plan) -> str | None:
    """Why the grouping threshold does not decide ``plan``'s grouping (None: it does)."""
    era, d = plan.era, plan.decision
    if era.grouping != "threshold":
        return f"{era.name} chooses the group size by its own rule, not a threshold"
    if d is None or d.path != "uniform_page":
        return f"grouping path {d.path if d else 'none (the engine failed before grouping)'}: the threshold is not consulted"
    if d.min_count == d.max_count:
        return f"equal bucket counts ({d.min_count}): every threshold gives group size {d.min_count}"
    return None


def vllm_thresholds(plan) -> list[float]:
    """The thresholds ``advise_vllm`` compares: none where the threshold is not consulted, else 1.0
    and the first hundredth above the bucket ratio (the use case simulates each)."""
    if _not_consulted(plan) is not None:
        return []
    return threshold_candidates(plan.decision.min_count, plan.decision.max_count)


def advise_vllm(plan, tried_plans: dict, target_concurrency: int | None = None) -> VllmAdviceAny:
    """The threshold advice for ``plan``; ``tried_plans``: the same inputs simulated under each of
    ``vllm_thresholds(plan)`` (threshold -> Plan)."""
    era, d = plan.era, plan.decision
    current = VllmGrouping(era.threshold, plan.group_size, plan.num_padding_layers, plan.starts,
                           _round(plan.max_concurrency))
    why_not = _not_consulted(plan)
    if why_not is not None:
        return VllmNotApplicable(False, why_not, current)
    ratio = d.max_count / d.min_count
    tried = []
    for t in threshold_candidates(d.min_count, d.max_count):
        p = tried_plans[t]
        tried.append(VllmTried(t, p.group_size, p.num_groups, p.num_padding_layers, p.starts,
                               _round(p.max_concurrency), p.failure.message if p.failure else None))
    starting = [t for t in tried if t.starts and t.max_concurrency >= 1]
    if not starting:
        return VllmNoThreshold(True, None, current, tuple(tried), "no threshold avoids the failure or serves one request")
    if not plan.starts:
        pick, why = min(starting, key=lambda t: t.threshold), "the smallest threshold that avoids the failure"
    else:
        pick = min(starting, key=lambda t: (t.num_padding_layers, t.threshold))
        why = "the smallest threshold with the fewest padding layers"
    same = (f"any threshold <= {ratio:.4g} gives the same grouping" if pick.threshold == 1.0
            else f"any threshold > {ratio:.4g} gives the same grouping")
    unchanged = plan.starts and (pick.group_size, pick.num_padding_layers) == (plan.group_size, plan.num_padding_layers)
    if unchanged:
        why = f"the shipped threshold {era.threshold:g} already gives this grouping"
    return VllmAdvice(
        applicable=True, threshold=pick.threshold,
        code_change=None if unchanged else
        f"set the grouping threshold to {pick.threshold:g} in {VLLM_THRESHOLD_SOURCE}: vLLM has no flag for it",
        kvplan_flag=f"--threshold {pick.threshold:g}",
        reason=f"{why}; {same} (largest/smallest bucket = {d.max_count}/{d.min_count})",
        group_size=pick.group_size, num_padding_layers=pick.num_padding_layers, max_concurrency=pick.max_concurrency,
        reaches_target=_reaches(pick.max_concurrency, target_concurrency), current=current, tried=tuple(tried))


# --- llama.cpp ---------------------------------------------------------------------------


def advise_llamacpp(costs: tuple[LayerCost, ...],
                    inputs: CompareInputs) -> LlamacppNone | LlamacppNoChange | LlamacppAdvice:
    L, B = inputs.target_len_tokens, inputs.kv_cache_memory_bytes
    layouts = {}
    for unified in (True, False):
        for swa_full in (False, True):
            r = llamacpp_model(costs, B, L, n_seq=1, n_ubatch=inputs.llamacpp_n_ubatch, swa_full=swa_full,
                               kv_unified=unified)
            layouts[(unified, swa_full)] = r.max_n_seq
    unified = layouts[(True, False)] >= layouts[(False, False)]
    n = layouts[(unified, False)]
    slots = LlamacppSlots(n, unified, layouts[(False, False)], layouts[(True, False)],
                          max(layouts[(True, True)], layouts[(False, True)]), _reaches(n, inputs.target_concurrency))
    if n < 1:
        return LlamacppNone(slots, None, f"not even one {L:,}-token sequence allocates within the budget")
    n_seq, kv_unified, _, n_ctx = inputs.llamacpp_slots
    base = llamacpp_model(costs, B, L, n_seq=n_seq, n_ubatch=inputs.llamacpp_n_ubatch, swa_full=inputs.swa_full,
                          kv_unified=kv_unified, n_ctx=n_ctx).configured_concurrency
    if n <= base:  # offered only when it serves more than the row's own configuration
        return LlamacppNoChange(slots, base, n - base, None, f"no change: the row's -np / -c already serve "
                                                              f"{plural(base, 'request')}, the most that allocate")
    check = llamacpp_model(costs, B, L, n_seq=n, n_ubatch=inputs.llamacpp_n_ubatch, kv_unified=unified)
    assert check.starts  # the advised -np/-c re-simulated: it allocates within the budget
    return LlamacppAdvice(slots, base, n - base, f"-c {check.caches.n_ctx} -np {n}" + (" --kv-unified" if unified else ""),
                          check.caches.total_bytes, _round(B / check.caches.total_bytes))


def advise(costs: tuple[LayerCost, ...], architecture: str | None, inputs: CompareInputs,
           vllm: VllmAdviceAny | None = None) -> Advice:
    """Every engine's advice; ``vllm``: the threshold advice (``advise_vllm``, driven by the caller)."""
    return Advice(
        target_len_tokens=inputs.target_len_tokens,
        target_concurrency=inputs.target_concurrency,
        vllm=vllm,
        sglang=advise_sglang(costs, architecture, inputs),
        trtllm=advise_trtllm(costs, inputs),
        llamacpp=advise_llamacpp(costs, inputs),
    )
