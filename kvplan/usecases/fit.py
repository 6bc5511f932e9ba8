"""The fit answers: what fits on a GPU, found with the engine's own rules.

Three questions (reference: engines.md §4.1, §4.7), each answered by running the vLLM
simulation itself, never a separate formula, and each returned with the layout decision
behind it (group size, groups, padding) and whether the engine would start:

* ``fit_max_model_len``: the largest ``--max-model-len`` that fits the KV budget of one
  GPU preset. It is vLLM's own auto-fit (``--max-model-len auto``: the binary search of
  ``estimate_max_model_len`` over the admission check); then the boundary is checked by
  simulating at that length (starts) and one token more (fails). Eras without auto-fit
  (``vllm-min``) get the same search over ``simulate(...).starts``.
* ``fit_min_utilization``: the smallest ``--gpu-memory-utilization`` (to 0.001) at which
  the engine starts with ``--max-model-len L`` and reports a maximum concurrency ≥ N; a
  bisection over utilization, each step a full simulation; the step below is checked to
  fall short.
* ``fit_gpus``: for each GPU preset and tensor-parallel size, the KV budget, whether the
  engine starts and its maximum concurrency at a length, and whether that is enough for N.

The budget is ``kvplan.budget.estimate.kv_budget`` (an estimate, marked so); everything after it
is the engine's arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from kvplan.bounds import MAX_HEADS

from kvplan.errors import KvplanError, OptionError
from kvplan.budget.load import STAGES as LOAD_STAGES
from kvplan.results.budget import Budget, GivenBudget
from kvplan.usecases.pipeline import (budget_stage, engine_stage, kv_bytes_at, layout_of, serving_options,
                                      with_load_failure)
from kvplan.usecases.scenario import Scenario
from kvplan.results import outcome
from kvplan.usecases.envelope import plan_outcome
from kvplan.results.envelope import Envelope
from kvplan.results.fit import (
    Capacity, ContextAnswer, ContextBoundary, GpuTable, GpuTableRow, LayoutDecision, LengthCapacity, LengthOutcome,
    LengthStarts, MaxLenBoundary, MaxModelLenAnswer, OneMoreToken, SmallestEnough, UtilizationAnswer,
    UtilizationBoundary, UtilizationCapacity,
)
from kvplan.results.fit import FitBody
from kvplan.results.gpus import GpuRow, GpusBody
from kvplan.results.summary import PlanSummary
from kvplan.units import Bisection

if TYPE_CHECKING:
    from kvplan.engines.vllm.eras import Era
    from kvplan.engines.vllm.plan import Plan
    from kvplan.model.layout import ModelLayout

UTILIZATION_STEP = 0.001


@dataclass
class _Budgeted:
    """A layout with its budget: KV bytes at any utilization, for one GPU and TP size."""

    scenario: Scenario
    layout: ModelLayout
    era: Era
    budget: Budget | GivenBudget

    @property
    def estimated(self) -> Budget | None:
        """The budget estimated from a card (None for a given --kv-cache-memory: no stages, nothing loaded)."""
        return self.budget if isinstance(self.budget, Budget) else None

    @property
    def card_budget(self) -> Budget:
        """The budget estimated from the card (``budget_for``'s, which always estimates one)."""
        if not isinstance(self.budget, Budget):
            raise TypeError("a budget given with --kv-cache-memory is not estimated from a card")
        return self.budget

    def kv_bytes(self, utilization: float) -> int:
        """The KV bytes per GPU at ``utilization``; a given ``--kv-cache-memory`` (vLLM's
        ``--kv-cache-memory-bytes``) does not depend on it."""
        if self.estimated is None:
            return self.budget.kv_cache_memory_bytes
        return kv_bytes_at(self.estimated, utilization)


def budget_for(s: Scenario, layout=None, era=None) -> _Budgeted:

    era = era or s.era
    layout = layout or layout_of(s.deployment)
    d = s.deployment
    return _Budgeted(s, layout, era, budget_stage(layout, d.budget, d.scheduler, d.serving, era))


def _largest(holds, lo: int, hi: int) -> int:
    """The largest length in [lo, hi] where ``holds`` (true up to some point), searched here: the
    core's ``Bisection`` is driven by this module, so no predicate is passed down."""
    search = Bisection(lo, hi)
    for x in search:
        search.answer(holds(x))
    return search.largest


def simulate_at(b: _Budgeted, *, kv_bytes: int, max_model_len: int | None):
    """One vLLM simulation of ``b``'s layout with ``kv_bytes`` per GPU (-1 = auto-fit)."""

    d = b.scenario.deployment
    plan = engine_stage(b.layout, d.scheduler, d.serving, b.era, kv_bytes=kv_bytes, max_model_len=max_model_len,
                        budget=b.estimated)
    failed = b.estimated.load_failure if b.estimated is not None else None
    # the weights (or the profile run) do not fit the card: vLLM stops before the KV cache, at any length
    return with_load_failure(plan, failed) if failed else plan


def layout_decision(plan) -> LayoutDecision:
    """The grouping behind an answer, in vLLM's words, and the start-up outcome."""
    w0 = plan.workers[0] if plan.workers else None
    s = PlanSummary.of(plan)
    return LayoutDecision(
        max_model_len=s.max_model_len, group_size=s.group_size, num_groups=s.num_groups,
        num_padding_layers=s.num_padding_layers, padding_waste_pct=s.padding_waste_pct,
        page_size_bytes=s.page_size_bytes, bytes_per_block=w0.bytes_per_block if w0 else 0,
        num_blocks=s.num_blocks, blocks_per_request=sum(plan.blocks_per_request),
        max_concurrency=s.max_concurrency, steady_state_concurrency=s.steady_state_concurrency,
        kv_cache_size_tokens=plan.kv_cache_size_tokens, outcome=plan_outcome(plan))


def _model_max_len(b: _Budgeted) -> int:
    return b.layout.config_facts.max_lengths[b.era.yarn_max_len, b.scenario.disable_sliding_window].max_model_len


# --------------------------------------------------------------------------- question 1

def fit_max_model_len(b: _Budgeted) -> MaxModelLenAnswer:
    """The largest max_model_len the engine starts with on ``b``'s GPU (None if none).

    vLLM's auto-fit searches ``[1, the model's length]``; a ``--max-model-len`` given with
    ``fit`` caps the answer (the admission check is monotone in the length, so the best
    length under the cap is min(auto-fit, cap))."""
    kv = b.budget.kv_cache_memory_bytes
    model_max = _model_max_len(b)
    cap = b.scenario.max_model_len
    limit = model_max if cap in (None, -1) else cap
    if not b.era.auto_fit:
        best, plan = _search_starts(b, kv, limit)
        method = f"binary search over simulate(...).starts ({b.era.name} has no auto-fit)"
    else:
        plan = simulate_at(b, kv_bytes=kv, max_model_len=-1)
        best = min(plan.max_model_len, limit) if plan.starts else 0
        method = "vLLM auto-fit (--max-model-len auto: binary search of estimate_max_model_len)"
    boundary = None
    if best:
        at = simulate_at(b, kv_bytes=kv, max_model_len=best)
        one_more = None
        if best < limit:
            over = simulate_at(b, kv_bytes=kv, max_model_len=best + 1)
            one_more = LengthOutcome(best + 1, plan_outcome(over))
        boundary = MaxLenBoundary(LengthStarts(best, at.starts), one_more)
        plan = at
    return MaxModelLenAnswer(
        max_model_len=best or None, model_max_model_len=model_max, limit=limit,
        limited_by=None if not best else ("limit" if best >= limit else "kv_cache_memory"), method=method,
        kv_cache_memory_bytes=kv, layout=layout_decision(plan), boundary=boundary)


def _search_starts(b: _Budgeted, kv: int, limit: int):
    """The largest max_model_len in [1, limit] at which the engine starts, and its plan."""
    plan = simulate_at(b, kv_bytes=kv, max_model_len=1)
    if not plan.starts:
        return 0, plan
    plans = {1: plan}

    def starts(length: int) -> bool:
        plans[length] = simulate_at(b, kv_bytes=kv, max_model_len=length)
        return plans[length].starts

    best = _largest(starts, 1, limit)
    return best, plans[best]


# --------------------------------------------------------------------------- question 1b

def fit_context_for_concurrency(b: _Budgeted, concurrency: float) -> ContextAnswer:
    """The longest ``--max-model-len`` at which the engine starts on ``b``'s budget and the
    pool holds ``concurrency`` requests of that length in steady state (docs/capacity.md).
    Both conditions only get harder as the length grows, so a binary search over
    [1, the model's length] finds the boundary; it is checked one token above."""
    if concurrency <= 0:
        raise OptionError(f"--concurrency must be positive, got {concurrency}")
    kv = b.budget.kv_cache_memory_bytes
    limit = _model_max_len(b)
    plans: dict[int, Plan] = {}

    def enough(length: int) -> bool:
        plans[length] = simulate_at(b, kv_bytes=kv, max_model_len=length)
        return _enough(plans[length], concurrency)

    method = ("binary search over --max-model-len, each step a vLLM simulation; enough = the engine starts "
              "and its steady-state concurrency ≥ N")
    if kv <= 0 or not enough(1):
        at = plans.get(1) or simulate_at(b, kv_bytes=max(kv, 1), max_model_len=1)
        return ContextAnswer(
            concurrency=concurrency, max_model_len=None, model_max_model_len=limit, kv_cache_memory_bytes=kv,
            method=method, layout=layout_decision(at), boundary=None,
            reason=(f"even 1-token requests give a steady-state concurrency of {at.steady_state_concurrency:.2f}"
                    + ("" if at.starts else "; the engine would not start")))
    best = _largest(enough, 1, limit)
    at = plans[best]
    boundary = None
    if best < limit:
        over = simulate_at(b, kv_bytes=kv, max_model_len=best + 1)
        boundary = ContextBoundary(LengthCapacity(best, _capacity(at)),
                                   OneMoreToken(best + 1, over.max_concurrency, over.steady_state_concurrency,
                                                plan_outcome(over)))
    s = PlanSummary.of(at)
    return ContextAnswer(
        concurrency=concurrency, max_model_len=best, model_max_model_len=limit, kv_cache_memory_bytes=kv,
        method=method, layout=layout_decision(at), boundary=boundary, max_concurrency=s.max_concurrency,
        steady_state_concurrency=s.steady_state_concurrency,
        limited_by="limit" if best >= limit else "kv_cache_memory")


# --------------------------------------------------------------------------- question 2

def _enough(plan, concurrency: float) -> bool:
    """Capacity is the steady-state figure (docs/capacity.md): vLLM's max_concurrency is its
    worst-case admission figure, not how many requests the pool holds."""
    return plan.starts and plan.steady_state_concurrency >= concurrency


def _capacity(plan) -> Capacity:
    s = PlanSummary.of(plan)
    return Capacity(s.max_concurrency, s.steady_state_concurrency, s.starts)


def fit_min_utilization(b: _Budgeted, concurrency: float, context_len: int) -> UtilizationAnswer:
    """The smallest --gpu-memory-utilization (step 0.001) for ``concurrency`` requests of
    ``context_len`` tokens (max_model_len = context_len)."""
    from kvplan.engines.vllm.prechecks import before_kv_cache

    if concurrency <= 0:
        raise OptionError(f"--concurrency must be positive, got {concurrency}")
    if context_len <= 0:
        raise OptionError(f"--context-len must be positive, got {context_len}")
    steps = round(1 / UTILIZATION_STEP)

    def plan_at(k: int):
        return simulate_at(b, kv_bytes=b.kv_bytes(k / steps), max_model_len=context_len)

    top = plan_at(steps)
    unanswered = UtilizationAnswer(
        concurrency=concurrency, context_len=context_len, gpu_memory_utilization=None, kv_cache_memory_bytes=None,
        method="bisection over --gpu-memory-utilization (step 0.001), each step a vLLM simulation; "
               "enough = the engine starts and its steady-state concurrency ≥ N",
        at_full_utilization=_capacity(top), layout=layout_decision(top), boundary=None)
    if not top.starts and (before_kv_cache(top.failure.stage) or top.failure.stage in LOAD_STAGES):
        f = top.failure
        return replace(unanswered, outcome=plan_outcome(top),
                       reason=(f"vLLM refuses this deployment before the KV cache ({f.stage}), at any utilization: "
                               f"{f.error_type}: {f.message}"))
    if not _enough(top, concurrency):
        return replace(unanswered, reason=(
            f"even --gpu-memory-utilization 1.0 gives a steady-state concurrency of {top.steady_state_concurrency:.2f}"
            + ("" if top.starts else " and the engine would not start")
            + f" for {context_len:,} tokens per request"))
    lo, hi = 0, steps  # lo: not enough (or 0), hi: enough
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _enough(plan_at(mid), concurrency):
            hi = mid
        else:
            lo = mid
    at = plan_at(hi)
    below = plan_at(hi - 1) if hi > 1 else None
    return replace(
        unanswered, gpu_memory_utilization=round(hi / steps, 3), kv_cache_memory_bytes=b.kv_bytes(hi / steps),
        layout=layout_decision(at),
        boundary=UtilizationBoundary(
            UtilizationCapacity(round(hi / steps, 3), _capacity(at)),
            None if below is None else UtilizationCapacity(round((hi - 1) / steps, 3), _capacity(below))))


# --------------------------------------------------------------------------- question 3

def parse_tp_sizes(text: str | None, flag: str = "--tp-sizes", default: tuple[int, ...] = (1, 2, 4, 8)) -> list[int]:
    if not text:
        return list(default)
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            n = int(part)
        except ValueError:
            raise OptionError(f"{flag} must be a comma-separated list of integers, got {text!r}") from None
        if not 1 <= n <= MAX_HEADS:
            raise OptionError(f"{flag} entries must be between 1 and {MAX_HEADS:,}, got {n}")
        if n not in out:
            out.append(n)
    if not out:
        raise OptionError(f"{flag} is empty")
    return out


def parse_gpus(text: str | None) -> list[str]:
    from kvplan.budget.hardware import FIT_TABLE_DEFAULT, get_gpu

    if not text:
        return list(FIT_TABLE_DEFAULT)
    return [get_gpu(p).name for p in str(text).split(",") if p.strip()]


def fit_gpus(s: Scenario, gpus: list[str], tp_sizes: list[int], *, concurrency: float | None = None,
             context_len: int | None = None, layouts: dict | None = None,
             dp_sizes: list[int] | None = None) -> GpuTable:
    """Max concurrency on each GPU preset × TP size (× DP size) at ``context_len`` (default: the
    scenario's --max-model-len, else the model's), at the scenario's utilization. A DP rank is an
    engine of its own: the row's totals are one engine's figures times DP, and "enough" reads them."""
    from kvplan.budget.hardware import GPU_PRESETS

    era = s.era
    layouts = layouts if layouts is not None else {}
    rows = []
    length = context_len
    if length is None and s.max_model_len not in (None, -1):
        length = s.max_model_len
    from kvplan.progress import track

    for tp in track(tp_sizes, "fit: tensor-parallel sizes"):
        st = replace(s, tensor_parallel_size=tp, gpu_memory=None)
        try:
            layout = layouts.get(tp) or layout_of(st.deployment)
            layouts[tp] = layout
        except KvplanError as e:
            for g in gpus:
                rows.append(_error_row(g, tp, e.message))
            continue
        for g, dp in ((g, dp) for g in gpus for dp in dp_sizes or [1]):
            sg = replace(st, gpu=g, data_parallel_size=dp)
            try:
                b = budget_for(sg, layout, era)
            except KvplanError as e:
                rows.append(_error_row(g, tp, e.message, dp))
                continue
            L = length if length is not None else _model_max_len(b)
            plan = simulate_at(b, kv_bytes=b.budget.kv_cache_memory_bytes, max_model_len=L)
            enough = plan.starts and (concurrency is None or _enough(plan, concurrency / dp))
            ps = PlanSummary.of(plan)
            rows.append(GpuTableRow(
                gpu=g, tensor_parallel_size=tp, num_gpus=tp * s.pipeline_parallel_size * dp,
                gpu_memory_bytes=GPU_PRESETS[g].memory_bytes, weights_bytes=b.card_budget.weights_bytes,
                # no KV cache when vLLM runs out of memory loading the weights or in the profile run
                kv_cache_memory_bytes=None if b.card_budget.load_failure else b.budget.kv_cache_memory_bytes,
                max_model_len=L, outcome=plan_outcome(plan), max_concurrency=ps.max_concurrency,
                steady_state_concurrency=ps.steady_state_concurrency, kv_tokens=ps.kv_tokens,
                group_size=ps.group_size, num_groups=ps.num_groups, num_padding_layers=ps.num_padding_layers,
                padding_waste_pct=ps.padding_waste_pct, enough=enough, data_parallel_size=dp,
                total_kv_tokens=plan.kv_tokens * dp, total_max_concurrency=plan.max_concurrency * dp,
                total_steady_state_concurrency=plan.steady_state_concurrency * dp,
                host_memory_bytes=plan.host_tier.memory_bytes * dp
                if plan.host_tier is not None and plan.host_tier.memory_bytes is not None else None))
    ok = [r for r in rows if r.enough]
    smallest = min(ok, key=lambda r: (r.num_gpus * r.gpu_memory_bytes, r.num_gpus)) if ok else None
    return GpuTable(
        max_model_len=length, concurrency=concurrency, gpu_memory_utilization=s.gpu_memory_utilization,
        tp_sizes=tuple(tp_sizes), rows=tuple(rows), dp_sizes=tuple(dp_sizes or [1]),
        smallest_enough=None if smallest is None else SmallestEnough(
            smallest.gpu, smallest.tensor_parallel_size, smallest.num_gpus, smallest.total_max_concurrency,
            smallest.total_steady_state_concurrency, smallest.data_parallel_size),
        rule="enough = the engine starts" + (
            "" if concurrency is None else f" and steady-state concurrency ≥ {concurrency:g}")
        + "; smallest = least total GPU memory (num_gpus × memory), then fewest GPUs")


def _error_row(gpu: str, tp: int, message: str, dp: int = 1) -> GpuTableRow:
    from kvplan.budget.hardware import GPU_PRESETS

    return GpuTableRow(
        gpu=gpu, tensor_parallel_size=tp, num_gpus=tp * dp, gpu_memory_bytes=GPU_PRESETS[gpu].memory_bytes,
        weights_bytes=None, kv_cache_memory_bytes=None, max_model_len=None,
        outcome=outcome(ok=False, stage="kvplan", error_type="KvplanError", error=message),
        max_concurrency=0.0, steady_state_concurrency=0.0, kv_tokens=0, group_size=0, num_groups=0,
        num_padding_layers=0, padding_waste_pct=0.0, enough=False, data_parallel_size=dp)


# --------------------------------------------------------------------------- all together

@dataclass(frozen=True)
class FitAnswer:
    body: FitBody
    warnings: tuple[str, ...]
    layout: ModelLayout  # the layout at the deployment's own tensor-parallel size


def fit_scenario(s: Scenario, *, concurrency: float | None = None, context_len: int | None = None,
        gpus: list[str] | None = None, tp_sizes: list[int] | None = None, table: bool | None = None,
        dp_sizes: list[int] | None = None) -> FitAnswer:
    """Every answer the inputs allow.

    With ``s.gpu``/``s.gpu_memory``: the largest max_model_len and (given concurrency and
    context_len) the smallest utilization, on that GPU at ``s.tensor_parallel_size``. With
    ``s.kv_cache_memory`` (vLLM's ``--kv-cache-memory-bytes``) the length answers rest on that
    budget, GPU or not. The GPU table runs when ``table`` is True, or by default when neither a
    GPU nor a KV budget is given."""
    from kvplan.usecases.records import model_record, policy_record, serving_record, speculative_record

    if context_len is not None and concurrency is None:
        raise OptionError("--context-len needs --concurrency (N requests of L tokens); "
                          "--concurrency alone answers the longest context for N requests")
    s.check_sizing()
    warnings: list[str] = []
    on_gpu = s.gpu is not None or s.gpu_memory is not None
    layouts: dict[int, ModelLayout] = {}
    base_layout = layout_of(s.deployment)
    layouts[s.tensor_parallel_size] = base_layout
    era = s.era
    budget = max_len = min_util = ctx = table_rows = None
    estimated = True
    given_kv = s.kv_cache_memory
    if given_kv is not None and concurrency is not None and context_len is not None:
        raise OptionError("--kv-cache-memory fixes the KV budget, so there is no utilization to find for "
                          "--concurrency with --context-len; drop --kv-cache-memory, or --context-len to get the "
                          "longest context for N requests")
    if given_kv is not None:
        # vLLM's --kv-cache-memory-bytes is the KV size of every worker, used as given (no profiling): the
        # answers rest on it alone, nothing is estimated
        b = _Budgeted(s, base_layout, era, GivenBudget(given_kv, "given (--kv-cache-memory)"))
        budget = b.budget
        estimated = False
    elif on_gpu:
        b = budget_for(s, base_layout, era)
        budget = b.budget
        warnings += b.card_budget.warnings
    if given_kv is not None or on_gpu:
        max_len = fit_max_model_len(b)
        if concurrency is not None and context_len is not None:
            min_util = fit_min_utilization(b, concurrency, context_len)
        elif concurrency is not None:
            ctx = fit_context_for_concurrency(b, concurrency)
    if table or (table is None and not on_gpu and given_kv is None):
        table_rows = fit_gpus(s, gpus or parse_gpus(None), tp_sizes or [1, 2, 4, 8], concurrency=concurrency,
                              context_len=context_len, layouts=layouts, dp_sizes=dp_sizes)
    body = FitBody(
        engine="vllm", policy=policy_record(era), model=model_record(base_layout.target),
        drafter=model_record(base_layout.drafter), speculative=speculative_record(base_layout),
        serving=serving_record(serving_options(s.deployment.serving, era), base_layout), budget=budget, max_model_len=max_len,
        min_gpu_memory_utilization=min_util, max_context_len_for_concurrency=ctx, gpus=table_rows,
        estimated=estimated)
    return FitAnswer(body, (*base_layout.warnings, *warnings), base_layout)


def fit(model: str, **options) -> Envelope:
    """`kvplan fit`: the largest max_model_len on a GPU, the smallest utilization for N requests
    of L tokens, and max concurrency per GPU preset x TP size. ``outcome.ok`` is False when an
    asked question has no answer (the engine starts at no length, or no utilization <= 1 serves N)."""
    from kvplan.options import FIT, resolve
    from kvplan.results import outcome
    from kvplan.usecases.envelope import envelope
    from kvplan.usecases.fix_search import SPEC_TOKENS_FIX
    from kvplan.usecases.scenario import scenario_from

    r = resolve(FIT, options)
    table = r["table"]
    if table is None and (r["gpus"] is not None or r["tp_sizes"] is not None or r["dp_sizes"] is not None):
        table = True
    scenario = scenario_from(model, r.values)
    answer = fit_scenario(scenario, concurrency=r["concurrency"], context_len=r["context_len"],
                          gpus=parse_gpus(r["gpus"]), tp_sizes=parse_tp_sizes(r["tp_sizes"]), table=table,
                          dp_sizes=parse_tp_sizes(r["dp_sizes"], "--dp-sizes", (1,)))
    body = answer.body
    unanswered = []
    mml = body.max_model_len
    if mml is not None and mml.max_model_len is None:
        unanswered.append("the engine would not start on this GPU at any max_model_len")
    util = body.min_gpu_memory_utilization
    if util is not None and util.gpu_memory_utilization is None:
        unanswered.append(util.reason or "no utilization reaches the concurrency")
    ctx = body.max_context_len_for_concurrency
    if ctx is not None and ctx.max_model_len is None:
        unanswered.append(ctx.reason or "no context length reaches the concurrency")
    if (r["concurrency"] is not None and r["context_len"] is None and scenario.max_model_len not in (None, -1)
            and (scenario.gpu is not None or scenario.gpu_memory is not None)):
        from kvplan.usecases.fit_goal import reach_goal  # the flags that reach N requests of L tokens

        goal = reach_goal(scenario, r["concurrency"], scenario.max_model_len).answer
        body = replace(body, goal=goal)
        if not goal.reached:
            unanswered.append(goal.reason or f"{r['concurrency']:g} requests are not reached")
    layout_src = answer.layout
    # vLLM refuses a speculative method without num_speculative_tokens at any length and utilization:
    # the one change that lets fit answer (simulate verifies it: scenario.speculative_tokens_fix)
    fix = (f"--num-speculative-tokens {SPEC_TOKENS_FIX}"
           if unanswered and layout_src.num_speculative_tokens_missing else None)
    result = outcome(ok=not unanswered, stage="fit" if unanswered else None,
                     error_type="NotAchievable" if unanswered else None,
                     error="; ".join(unanswered) or None, fix=fix)
    return envelope("fit", options=r, outcome=result, body=body, model=layout_src.target,
                    drafter=layout_src.drafter, era=scenario.era, warnings=answer.warnings)


def gpus() -> Envelope:
    """`kvplan fit --list-gpus`: the GPU presets with their memory and its source."""
    from kvplan.budget.hardware import GPU_PRESETS
    from kvplan.results import outcome
    from kvplan.usecases.envelope import envelope

    body = GpusBody(tuple(
        GpuRow(p.name, p.memory_bytes, p.basis, p.nominal, tuple(p.aliases), p.source,
               tuple(p.compute_capability) if p.compute_capability else None, _platform(p.platform))
        for p in GPU_PRESETS.values()))
    return envelope("gpus", outcome=outcome(ok=True), body=body)


def _platform(name: str) -> Literal["cuda", "rocm"]:
    """A preset's platform as the GPU table's record types it (the presets name no other)."""
    if name == "rocm":
        return "rocm"
    if name == "cuda":
        return "cuda"
    raise ValueError(f"GPU preset platform {name!r}: expected cuda or rocm")
