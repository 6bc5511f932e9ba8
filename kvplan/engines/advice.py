"""Knobs for a workload (``--target-len L --target-concurrency N``), found by evaluating
the engine models themselves, never by a separate formula:

- **SGLang** ``--swa-full-tokens-ratio``: every ratio from 0.001 to 1.0 in steps of 0.001
  is evaluated; the one with the highest concurrency wins among those where the engine
  starts and the SWA pool holds a window plus one prefill chunk (smaller ratios stall long
  prompts). Ties go to the larger ratio (more SWA headroom).
- **TensorRT-LLM** ``TRTLLM_WINDOW_SIZE_SHARES``: start from shares proportional to what
  one request costs in each window pool (blocks per request · block bytes), where every pool
  runs out together; then move shares between pools in steps of 0.01, 0.001 and 0.0001 while
  the concurrency strictly improves (block rounding moves the optimum slightly). The result
  has four decimals and sums to exactly 1.0 (TensorRT-LLM asserts ``sum == 1.0``).
- **vLLM** threshold: only the smallest and largest bucket counts matter, so two thresholds
  cover every outcome: 1.0 (group size = smallest bucket, as any threshold ≤ max/min) and
  the first hundredth above max/min (group size = largest bucket). kvplan simulates both with
  the era's other rules and advises the smallest threshold that starts when the era's own
  fails, else the smallest with the fewest padding layers.
- **llama.cpp**: the largest ``-np`` whose ``n_ctx = L · n_seq`` fits, with and without
  ``--swa-full``.
"""

from __future__ import annotations

import math
from fractions import Fraction

from kvplan.engines.compare import CompareInputs
from kvplan.engines.layer_costs import LayerCost
from kvplan.engines.llamacpp import llamacpp_model
from kvplan.engines.sglang import sglang_model
from kvplan.engines.trtllm import trtllm_model, window_bytes_per_token

RATIO_STEP = Fraction(1, 1000)
SHARE_STEPS = (Fraction(1, 100), Fraction(1, 1000), Fraction(1, 10000))


def _reaches(concurrency: float, target: int | None) -> bool | None:
    return None if target is None else concurrency >= target


# --- SGLang ------------------------------------------------------------------------------


def sglang_concurrency(costs, architecture, inputs: CompareInputs, ratio: float):
    return sglang_model(
        costs, architecture, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
        swa_full_tokens_ratio=ratio, page_size=inputs.sglang_page_size,
        chunked_prefill_size=inputs.max_num_batched_tokens,
    )


def ratio_grid() -> list[float]:
    return [float(k * RATIO_STEP) for k in range(1, int(1 / RATIO_STEP) + 1)]


def advise_sglang(costs: tuple[LayerCost, ...], architecture: str | None, inputs: CompareInputs) -> dict:
    default = sglang_concurrency(costs, architecture, inputs, inputs.swa_full_tokens_ratio)
    if not default.hybrid_swa_memory:
        return {"applicable": False, "reason": f"the ratio has no effect: {default.reason}",
                "max_concurrency": round(default.max_concurrency, 6),
                "reaches_target": _reaches(default.max_concurrency, inputs.target_concurrency)}
    best = None
    for ratio in ratio_grid():
        r = sglang_concurrency(costs, architecture, inputs, ratio)
        if not r.starts or r.prefill_fits is False:
            continue
        if best is None or r.concurrency >= best.concurrency:  # ties → the larger ratio
            best = r
    if best is None:
        return {"applicable": True, "swa_full_tokens_ratio": None,
                "reason": "no ratio in (0, 1] starts with a window plus one prefill chunk in the SWA pool",
                "max_concurrency": 0.0, "reaches_target": _reaches(0.0, inputs.target_concurrency)}
    return {
        "applicable": True,
        "swa_full_tokens_ratio": best.swa_full_tokens_ratio,
        "flag": f"--swa-full-tokens-ratio {best.swa_full_tokens_ratio:g}",
        "max_concurrency": round(best.max_concurrency, 6),
        "full_tokens": best.full_tokens,
        "swa_tokens": best.swa_tokens,
        "default_swa_full_tokens_ratio": inputs.swa_full_tokens_ratio,
        "default_max_concurrency": round(default.max_concurrency, 6),
        "reaches_target": _reaches(best.max_concurrency, inputs.target_concurrency),
    }


# --- TensorRT-LLM ------------------------------------------------------------------------


def trtllm_concurrency(costs, inputs: CompareInputs, shares) -> Fraction:
    return trtllm_model(
        costs, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
        window_shares=tuple(float(s) for s in shares), tokens_per_block=inputs.trtllm_tokens_per_block,
    ).concurrency


def _exact_sum(shares: list[Fraction]) -> bool:
    return sum(float(s) for s in shares) == 1.0


def proportional_shares(costs, inputs: CompareInputs) -> list[Fraction]:
    """Shares where every pool runs out at the same concurrency (before block rounding),
    rounded to four decimals, the last one taking the remainder."""
    L, tpb = inputs.target_len_tokens, inputs.trtllm_tokens_per_block
    windows = window_bytes_per_token(costs, L)
    weights = [(math.ceil(L / tpb) if w >= L else math.ceil(w / tpb) + 1) * tpb * b for w, (_, b) in windows.items()]
    total = sum(weights)
    quantum = SHARE_STEPS[-1]
    shares = [max(quantum, Fraction(round(Fraction(x, total) / quantum)) * quantum) for x in weights[:-1]]
    shares.append(1 - sum(shares))
    return shares


def advise_trtllm(costs: tuple[LayerCost, ...], inputs: CompareInputs) -> dict:
    windows = list(window_bytes_per_token(costs, inputs.target_len_tokens))
    equal = trtllm_model(costs, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
                         tokens_per_block=inputs.trtllm_tokens_per_block)
    if len(windows) < 2:
        return {"applicable": False, "reason": "one window size: one pool, nothing to share",
                "max_concurrency": round(equal.max_concurrency, 6),
                "reaches_target": _reaches(equal.max_concurrency, inputs.target_concurrency)}
    shares = proportional_shares(costs, inputs)
    best = trtllm_concurrency(costs, inputs, shares)
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
                    c = trtllm_concurrency(costs, inputs, trial)
                    if c > best:
                        shares, best, improved = trial, c, True
    value = ",".join(f"{float(s):g}" for s in shares)
    return {
        "applicable": True,
        "windows_tokens": windows,
        "window_shares": [float(s) for s in shares],
        "env": f"TRTLLM_WINDOW_SIZE_SHARES={value}",
        "max_concurrency": round(float(best), 6),
        "equal_shares_max_concurrency": round(equal.max_concurrency, 6),
        "reaches_target": _reaches(float(best), inputs.target_concurrency),
    }


# --- vLLM --------------------------------------------------------------------------------


def threshold_candidates(min_count: int, max_count: int) -> list[float]:
    """1.0 (→ smallest bucket) and the first hundredth strictly above max/min (→ largest)."""
    above = Fraction(math.floor(Fraction(max_count, min_count) * 100) + 1, 100)
    return [1.0, float(above)]


def advise_vllm(plan, simulate_at, target_concurrency: int | None = None) -> dict:
    """``simulate_at(threshold) -> Plan`` reruns the same inputs with another threshold."""
    era, d = plan.era, plan.decision
    current = {"threshold": era.threshold, "group_size": plan.group_size, "num_padding_layers": plan.num_padding_layers,
               "starts": plan.starts, "max_concurrency": round(plan.max_concurrency, 6)}
    if era.grouping != "threshold":
        return {"applicable": False, "reason": f"{era.name} chooses the group size by its own rule, not a threshold",
                "current": current}
    if d is None or d.path != "uniform_page":
        path = d.path if d else "none (the engine failed before grouping)"
        return {"applicable": False, "reason": f"grouping path {path}: the threshold is not consulted",
                "current": current}
    if d.min_count == d.max_count:
        return {"applicable": False, "reason": f"equal bucket counts ({d.min_count}): every threshold gives group "
                                               f"size {d.min_count}", "current": current}
    ratio = d.max_count / d.min_count
    tried = []
    for t in threshold_candidates(d.min_count, d.max_count):
        p = simulate_at(t)
        tried.append({"threshold": t, "group_size": p.group_size, "num_groups": p.num_groups,
                      "num_padding_layers": p.num_padding_layers, "starts": p.starts,
                      "max_concurrency": round(p.max_concurrency, 6),
                      "failure": p.failure.message if p.failure else None})
    starting = [t for t in tried if t["starts"]]
    if not starting:
        return {"applicable": True, "threshold": None, "current": current, "tried": tried,
                "reason": "no threshold avoids the failure"}
    if not plan.starts:
        pick, why = min(starting, key=lambda t: t["threshold"]), "the smallest threshold that avoids the failure"
    else:
        pick = min(starting, key=lambda t: (t["num_padding_layers"], t["threshold"]))
        why = "the smallest threshold with the fewest padding layers"
    reaches = _reaches(pick["max_concurrency"], target_concurrency)
    same = (f"any threshold <= {ratio:.4g} gives the same grouping" if pick["threshold"] == 1.0
            else f"any threshold > {ratio:.4g} gives the same grouping")
    return {"applicable": True, "threshold": pick["threshold"], "flag": f"--threshold {pick['threshold']:g}",
            "reason": f"{why}; {same} (largest/smallest bucket = {d.max_count}/{d.min_count})",
            "group_size": pick["group_size"], "num_padding_layers": pick["num_padding_layers"],
            "max_concurrency": pick["max_concurrency"], "reaches_target": reaches, "current": current, "tried": tried}


# --- llama.cpp ---------------------------------------------------------------------------


def advise_llamacpp(costs: tuple[LayerCost, ...], inputs: CompareInputs) -> dict:
    out = {}
    for swa_full in (False, True):
        r = llamacpp_model(costs, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
                           n_seq=1, n_ubatch=inputs.llamacpp_n_ubatch, swa_full=swa_full)
        out["swa_full" if swa_full else "default"] = r.max_n_seq
    return {
        "n_seq": out["default"],
        "flags": f"-c {inputs.target_len_tokens * out['default']} -np {out['default']} --kv-unified",
        "n_seq_with_swa_full": out["swa_full"],
        "reaches_target": _reaches(out["default"], inputs.target_concurrency),
    }


def advise(costs: tuple[LayerCost, ...], architecture: str | None, inputs: CompareInputs,
           vllm_plan=None, simulate_at=None) -> dict:
    return {
        "target_len_tokens": inputs.target_len_tokens,
        "target_concurrency": inputs.target_concurrency,
        "vllm": advise_vllm(vllm_plan, simulate_at, inputs.target_concurrency) if vllm_plan is not None and simulate_at is not None else None,
        "sglang": advise_sglang(costs, architecture, inputs),
        "trtllm": advise_trtllm(costs, inputs),
        "llamacpp": advise_llamacpp(costs, inputs),
    }
