"""Goal-seeking fit: the flags that serve N requests of L tokens on a card, as one deployment.

``kvplan fit MODEL --gpu CARD --concurrency N --max-model-len L`` asks for a deployment, not a figure. The
search changes only what a serving engineer changes to get there, in the order they try it
(``scenario.FIX_ORDER``): ``--kv-cache-dtype fp8``, a higher ``--gpu-memory-utilization``, a smaller
``--max-num-batched-tokens`` (a smaller dummy batch in the profile run: a lower activation peak, more KV), and
more GPUs, as tensor-parallel or data-parallel ranks. Every candidate is the whole deployment simulated again
from scratch (``scenario.run_scenario``: layout, weights, budget, engine), and it counts only when the engine
starts at the KV budget band's **pessimistic** end (every estimated term at its high end, ``budget.band``,
docs/simulate.md) and the pool there holds N requests of L tokens in steady state (docs/capacity.md), summed
over the data-parallel engines. The answer is the candidate with the fewest GPUs, then the fewest changed
flags; among those, the most requests held. Nothing is estimated outside the simulation.

The smallest ``--max-num-batched-tokens`` tried is 2048: ``vllm serve``'s own default on cards below 70 GiB
(``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``, the usage-context table: 2048 tokens /
256 sequences; kvplan's ``SchedulerInput.batch_sizes``), a batch vLLM itself runs with.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kvplan.errors import KvplanError
from kvplan.results.fit import GoalAnswer, GoalChange

if TYPE_CHECKING:
    from kvplan.engines.vllm.plan import Plan
    from kvplan.usecases.pipeline import ScenarioResult
    from kvplan.usecases.scenario import Scenario

# the GPU counts tried, smallest first (a node's 8 GPUs at most: tensor parallelism past a node is not searched)
GOAL_GPU_COUNTS = (1, 2, 4, 8)
# the smallest batch tried: vLLM's own default on cards below 70 GiB (see the module's docstring)
GOAL_MIN_BATCHED_TOKENS = 2048
UTILIZATION_STEPS = 100  # --gpu-memory-utilization to 0.01, as the utilization fix (scenario.utilization_fix)
METHOD = ("each candidate simulated from scratch (layout, weights, budget, engine); reached = the engine starts at "
          "the budget band's pessimistic end and its steady-state concurrency there × DP ≥ N; the fewest GPUs, then "
          "the fewest changed flags (--kv-cache-dtype fp8, --gpu-memory-utilization, --max-num-batched-tokens, "
          "TP / DP), then the most requests held")


@dataclass(frozen=True)
class _Proof:
    """One candidate simulated: the scenario, its result, and its figures at the band's pessimistic end."""

    scenario: Scenario
    result: ScenarioResult | None
    reaches: bool
    total_low: float = 0.0
    low_plan: Plan | None = None
    why: str = ""


@dataclass(frozen=True)
class Goal:
    """The search's answer: the record, and the deployment that reaches it (its scenario and simulation)."""

    answer: GoalAnswer
    scenario: Scenario | None
    result: ScenarioResult | None


class _Search:
    def __init__(self, s, concurrency: float, max_model_len: int):
        self.base, self.n, self.length = s, concurrency, max_model_len
        self.simulated = 0
        self.first_failure: str | None = None

    def prove(self, sc) -> _Proof:
        from kvplan.usecases.pipeline import engine_stage
        from kvplan.usecases.scenario import run_scenario

        self.simulated += 1
        try:
            r = run_scenario(sc, fixes=False)
        except KvplanError as e:  # e.g. heads not divisible by this tensor-parallel size
            return _Proof(sc, None, False, why=e.message)
        band = r.budget.band if r.budget is not None else None
        f = r.plan.failure
        if f is not None:  # the engine does not start
            return _Proof(sc, r, False, why=f"{f.stage}: {f.error_type}: {f.message}")
        if band is None:  # a given --kv-cache-memory: no band, the budget is the one simulated
            low = r.plan
        elif band.starts_at_low is False:
            return _Proof(sc, r, False, why=f"starts at kvplan's central estimate only; the band's pessimistic "
                                            f"end fails at {band.failure_at_low}")
        else:
            d = sc.deployment
            low = engine_stage(r.layout, d.scheduler, d.serving, sc.era, kv_bytes=band.kv_cache_memory_low_bytes,
                               max_model_len=self.length, budget=r.budget)
        dp = sc.data_parallel_size or 1
        total = low.steady_state_concurrency * dp if low.starts else 0.0
        why = "" if total >= self.n else (
            f"holds {total:.2f} requests of {self.length:,} tokens at the band's pessimistic end")
        return _Proof(sc, r, low.starts and total >= self.n, total, low, why)

    def note(self, p: _Proof) -> _Proof:
        if not p.reaches and self.first_failure is None:
            self.first_failure = p.why
        return p

    def least_utilization(self, sc, failed: _Proof) -> _Proof | None:
        """``sc`` (``failed``: its own proof) at the least --gpu-memory-utilization above its own (step 0.01, at
        most 1.0, and at most what leaves the warm-up its headroom) that reaches the goal; None when the highest does
        not, or the deployment already runs at 1.0 (0.34's default with the extensible KV cache)."""
        budget = failed.result.budget if failed.result is not None else None
        if budget is None:  # a given --kv-cache-memory: no utilization to raise
            return None
        given = sc.gpu_memory_utilization or budget.gpu_memory_utilization
        lo, hi = round(given * UTILIZATION_STEPS), UTILIZATION_STEPS  # lo: does not reach (the given value)
        band = budget.band
        if band is not None and band.warmup_need_bytes is not None and band.warmup_headroom_bytes is not None:
            # above this the 1 − utilization headroom no longer holds the warm-up after the KV cache (the start-up
            # memory and the graphs the profile did not count, kvplan.budget.estimate): more utilization fails there
            total = budget.gpu_memory_bytes
            startup = total - budget.requested_memory_bytes - band.warmup_headroom_bytes
            hi = min(hi, int((total - startup - band.warmup_need_bytes) * UTILIZATION_STEPS // total))
        if lo >= hi:
            return None
        top = self.prove(replace(sc, gpu_memory_utilization=hi / UTILIZATION_STEPS))
        if not top.reaches:
            return None
        best = top
        while hi - lo > 1:
            mid = (lo + hi) // 2
            p = self.prove(replace(sc, gpu_memory_utilization=mid / UTILIZATION_STEPS))
            if p.reaches:
                hi, best = mid, p
            else:
                lo = mid
        return best


def _splits(s, gpus: int) -> list[tuple[int, int]]:
    """(tensor-parallel size, data-parallel size) pairs on ``gpus`` GPUs per pipeline stage, the given sizes a floor."""
    tp0, dp0 = s.tensor_parallel_size or 1, s.data_parallel_size or 1
    out = []
    tp = gpus
    while tp >= 1:
        dp = gpus // tp
        if tp >= tp0 and dp >= dp0 and tp * dp == gpus:
            out.append((tp, dp))
        tp //= 2
    return out


def _batches(s) -> list[int | None]:
    """The --max-num-batched-tokens values tried: the deployment's own (None), then halvings down to 2048."""
    given, _ = s.batch_sizes(s.max_model_len)
    out: list[int | None] = [None]
    t = given // 2
    while t >= GOAL_MIN_BATCHED_TOKENS:
        out.append(t)
        t //= 2
    return out


def reach_goal(s, concurrency: float, max_model_len: int) -> Goal:
    """The deployment of ``s`` that serves ``concurrency`` requests of ``max_model_len`` tokens (see the module)."""
    from kvplan.progress import track

    base = replace(s, max_model_len=max_model_len)
    search = _Search(base, concurrency, max_model_len)
    dtypes = [None] + (["fp8"] if base.kv_cache_dtype in (None, "auto") else [])
    batches = _batches(base)
    pp = base.pipeline_parallel_size or 1
    for gpus in track([g for g in GOAL_GPU_COUNTS if g >= (base.tensor_parallel_size or 1)
                       * (base.data_parallel_size or 1)], "fit: GPU counts for the goal"):
        found: list[tuple[int, float, _Proof]] = []  # (changed flags, -requests held, proof)
        for tp, dp in _splits(base, gpus):
            for kv in dtypes:
                for batch in batches:
                    sc = replace(base, tensor_parallel_size=tp, data_parallel_size=dp)
                    if kv is not None:
                        sc = replace(sc, kv_cache_dtype=kv)
                    if batch is not None:
                        sc = replace(sc, max_num_batched_tokens=batch)
                    changed = (kv is not None) + (batch is not None)
                    p: _Proof | None = search.note(search.prove(sc))
                    if p is not None and not p.reaches:
                        failed = p.result.plan.failure if p.result is not None else None
                        if p.result is None or failed is not None and failed.stage not in ("admission", "autofit"):
                            continue  # refused before the KV cache: more utilization cannot help
                        p = search.least_utilization(sc, p)
                        changed += 1
                    if p is not None and p.reaches:
                        found.append((changed, -p.total_low, p))
        if found:
            found.sort(key=lambda t: (t[0], t[1]))
            return _answer(search, found[0][2], pp)
    why = search.first_failure or "no candidate could be simulated"
    return Goal(GoalAnswer(
        concurrency=concurrency, max_model_len=max_model_len, gpu=base.gpu, reached=False, method=METHOD,
        candidates_simulated=search.simulated,
        reason=(f"no deployment on up to {GOAL_GPU_COUNTS[-1]} × {base.gpu or 'the card'} per pipeline stage, with "
                f"--kv-cache-dtype fp8, --gpu-memory-utilization up to 1.0 and --max-num-batched-tokens down to "
                f"{GOAL_MIN_BATCHED_TOKENS}, serves {concurrency:g} requests of {max_model_len:,} tokens; as given: "
                f"{why}")), None, None)


def _answer(search: _Search, p: _Proof, pp: int) -> Goal:
    from kvplan.usecases.emit import vllm_args

    sc, base, r, low = p.scenario, search.base, p.result, p.low_plan
    if r is None or low is None:  # a proof that reaches the goal has both (_Search.prove)
        raise ValueError("a reached goal without its simulation")
    changes = []
    for option, flag in (("kv_cache_dtype", "--kv-cache-dtype"), ("gpu_memory_utilization", "--gpu-memory-utilization"),
                         ("max_num_batched_tokens", "--max-num-batched-tokens"),
                         ("tensor_parallel_size", "--tensor-parallel-size"),
                         ("data_parallel_size", "--data-parallel-size")):
        v = getattr(sc, option)
        if v != getattr(base, option):
            changes.append(GoalChange(option, v, f"{flag} {v}"))
    band = r.budget.band if r.budget is not None else None
    tp, dp = sc.tensor_parallel_size or 1, sc.data_parallel_size or 1
    answer = GoalAnswer(
        concurrency=search.n, max_model_len=search.length, gpu=sc.gpu, reached=True, method=METHOD,
        candidates_simulated=search.simulated, changes=tuple(changes),
        vllm_flags=tuple(vllm_args(sc, r.plan.era.stands_for)),
        tensor_parallel_size=tp, data_parallel_size=dp, num_gpus=tp * dp * pp,
        kv_cache_dtype=sc.kv_cache_dtype or "auto",
        max_num_batched_tokens=r.plan.options.max_num_batched_tokens,
        gpu_memory_utilization=sc.gpu_memory_utilization if sc.gpu_memory_utilization is not None else (
            r.budget.gpu_memory_utilization if r.budget is not None else None),
        kv_cache_memory_low_bytes=band.kv_cache_memory_low_bytes if band else r.plan.options.kv_cache_memory_bytes,
        num_gpu_blocks_low=low.num_blocks, max_concurrency_low=low.max_concurrency,
        steady_state_concurrency_low=low.steady_state_concurrency,
        total_steady_state_concurrency_low=p.total_low)
    return Goal(answer, sc, r)


def goal_options(answer: dict) -> dict:
    """The kvplan options that turn the deployment as given into the goal's (a reached ``GoalAnswer`` as data):
    ``kvplan emit`` is handed the given options with these, and simulates the deployment again."""
    return {c["option"]: c["value"] for c in answer.get("changes", [])}
