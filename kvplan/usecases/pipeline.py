"""The pipeline every command runs a deployment through: its stages, and ``run_deployment`` composing them.

    Deployment ─ model_stage ─▶ ModelLayout ─ budget_stage ─▶ Budget ─ engine_stage ─▶ Plan ─▶ ScenarioResult

A deployment (``kvplan.usecases.deployment.Deployment``: typed once at the edge) flows through here and
nowhere else: each stage takes the deployment's parts it reads (``ModelInput``, ``ServingInput``,
``SchedulerInput``, ``BudgetInput``) and the era, never a bag of copied fields; the budget stage hands the
budget layer one record (``kvplan.budget.estimate.BudgetRequest``). The use cases above (simulate, vllm,
check, fit, compare, explain-log, inspect, emit, export, diff, disagg) ask this module for layouts, budgets
and plans; the fix search (``kvplan.usecases.fix_search``) runs its candidates through it too, and
``run_search`` drives the engine's searches from here, so every simulation runs from this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from kvplan.engines.vllm.eras import Era
from kvplan.errors import OptionError
from kvplan.model.layout import ModelLayout
from kvplan.results.records import Fix, PlanBody
from kvplan.usecases.deployment import (
    BudgetInput, Deployment, ModelInput, SchedulerInput, ServingInput, changed, table_fields, under,
)
from kvplan.version import stands_for

if TYPE_CHECKING:  # annotations only: a run imports each where it is used
    from kvplan.budget.hardware import GpuCard
    from kvplan.results.budget import Budget, LoadFailure
    from kvplan.engines.vllm.plan import ModelFacts, Plan, SimulateOptions
    from kvplan.engines.vllm.block_size import BlockSizeDecision
    from kvplan.model.options import ServingOptions


def check_sizing(d: Deployment) -> None:
    """Refuse --enable-extensible-kv-cache where vLLM refuses it (``kvplan.budget.sizing.kv_cache_sizing``).
    Callers that fix ``kv_cache_memory`` from a budget already resolved clear the flag with it."""
    b = d.budget
    if b.enable_extensible_kv_cache:
        from kvplan.budget.sizing import kv_cache_sizing

        kv_cache_sizing(d.era, True, kv_cache_memory_given=b.kv_cache_memory is not None,
                        num_gpu_blocks_override=d.scheduler.num_gpu_blocks_override)


@dataclass
class ScenarioResult:
    """One deployment run: its layout, the engine's plan, the estimated budget (with --gpu), the
    warnings to show (the layout's, then kvplan's own), the fixes found (a failing deployment's) and
    the plan as results show it (``body``: made when first read; compare reads the plans alone)."""

    deployment: Deployment
    layout: ModelLayout
    plan: Plan
    budget: Budget | None = None
    warnings: tuple[str, ...] = ()
    fixes: tuple[Fix, ...] = ()
    explain: bool = False  # the body carries --explain's decision chain

    @cached_property
    def body(self) -> PlanBody:
        """The plan as results show it (``kvplan.usecases.records.plan_body``), with the options the layout
        was built with."""
        from kvplan.results.explain import explain as explain_plan
        from kvplan.usecases.records import plan_body

        d = self.deployment
        return plan_body(self.layout, self.plan, serving_options(d.serving, d.era),
                         explain_plan(self.plan) if self.explain else None, list(self.fixes), self.budget,
                         data_parallel_size=d.serving.data_parallel_size)



def serving_options(s: ServingInput, era: Era) -> ServingOptions:
    """The model layer's serving options: the serving input with the era's rules bound to it."""
    from kvplan.engines.vllm import environment
    from kvplan.model.options import ServingOptions

    return ServingOptions(
        block_size=s.block_size, attention_backend=s.attention_backend, kv_cache_dtype=s.kv_cache_dtype,
        dtype=s.dtype, tensor_parallel_size=s.tensor_parallel_size, pipeline_parallel_size=s.pipeline_parallel_size,
        speculative_method=s.speculative_method, num_speculative_tokens=s.num_speculative_tokens,
        disable_sliding_window=s.disable_sliding_window,
        nemotron_h_ssm_cache_dtype=era.nemotron_h_ssm_cache_dtype,
        speculators_user_config=era.speculators_user_config,
        suffix_default_tokens=era.suffix_default_tokens,
        pp_layer_partition=environment.pp_layer_partition(s.env, era),
        release=stands_for(era.release, era.releases, era.first_release),  # Era.stands_for, from its fields
        kv_cache_dtype_skip_layers=tuple(x for x in (s.kv_cache_dtype_skip_layers or "").replace(",", " ").split()),
    )


def model_facts(layout: ModelLayout, era: Era, *, disable_sliding_window: bool = False) -> ModelFacts:
    """The engine's ``ModelFacts`` of a built layout under ``era``: the layout's fields, with the
    lengths of ``era``'s YaRN reading and ``disable_sliding_window`` (``ConfigFacts.max_lengths``)."""
    from kvplan.engines.vllm.plan import ModelFacts

    c = layout.config_facts
    length = c.max_lengths[era.yarn_max_len, disable_sliding_window]
    return ModelFacts(
        max_model_len=length.max_model_len,
        derived_max_len=length.derived,
        num_hidden_layers=layout.target.num_hidden_layers,
        pp_partition=layout.pp_partition,
        pp_partition_error=layout.pp_partition_error,
        num_speculative_tokens_missing=layout.num_speculative_tokens_missing,
        kv_cache_dtype=layout.kv_cache_dtype,
        model_dtype=layout.target.dtype,
        target_hidden_size=c.hidden_size,
        drafter_target_hidden_size=c.drafter_target_hidden_size,
        vocab_size=int(layout.target.text_config.get("vocab_size") or 0) or None,
        architecture=str((layout.target.config.get("architectures") or [""])[0]) or None,
        drafter_architecture=(str((layout.drafter.config.get("architectures") or [""])[0]) or None
                              if layout.drafter is not None else None),
        model_type=str(layout.target.config.get("model_type") or "") or None,
        tp_checks=layout.tp_checks,
        # the engine's decision, carried by the model layout as a value it does not look into
        block_size_decision=cast("BlockSizeDecision | None", layout.block_size_decision),
        traits=c.traits,
        attention_chunk_size=layout.target.attention_chunk_size,
        speculative_method=layout.speculative_method,
        num_speculative_tokens=layout.num_speculative_tokens,
        mamba_chunk_size=layout.target.mamba_chunk_size,
        drafter_ptd_token=c.drafter_ptd_token,
        use_mla=any(ls.spec.kind == "mla" for ls in layout.layers),
        total_num_kv_heads=c.total_num_kv_heads,
        total_num_attention_heads=c.total_num_attention_heads,
    )


def plan_layout(layout: ModelLayout, era: Era, options: SimulateOptions, *,
                disable_sliding_window: bool = False) -> Plan:
    """vLLM's simulation of a built layout under ``era`` with engine options."""
    return engine_run(layout, era, disable_sliding_window=disable_sliding_window)(options)


def replan(result: ScenarioResult, **engine_options: Any) -> Plan:
    """The run's layout planned again on its own budget with some of the engine's options changed (a question a use
    case asks about the same deployment, e.g. explain-log's "with the hybrid manager on"): the one place a plan's
    options are changed (``tests/test_pipeline_only.py``)."""
    return plan_layout(result.layout, result.plan.era, replace(result.plan.options, **engine_options),
                       disable_sliding_window=result.deployment.serving.disable_sliding_window)


def engine_run(layout: ModelLayout, era: Era, *,
               disable_sliding_window: bool = False) -> Callable[[SimulateOptions], Plan]:
    """``options -> Plan``: the engine's own simulation of a built layout under ``era``, bound to
    the model's facts (read once); ``run_search`` runs it for the engine's searches."""
    from kvplan.engines.vllm.plan import simulate

    facts = model_facts(layout, era, disable_sliding_window=disable_sliding_window)

    def run(options: SimulateOptions) -> Plan:
        return simulate(layout.layers, layout.ranks, facts, era, options)

    return run


def stage_budgets(budget: Budget | None, kv_bytes: int) -> tuple[int, ...] | None:
    """Each pipeline stage's KV budget when the smallest is ``kv_bytes``: stages differ by their
    weights, activation and CUDA-graph memory (``kv_budget``'s stages), and vLLM sizes each
    worker's pool from its own memory before keeping the smallest num_blocks."""
    stages = budget.stages if budget is not None else ()
    if len(stages) < 2:
        return None
    least = min(st.kv_cache_memory_bytes for st in stages)
    return tuple(kv_bytes + st.kv_cache_memory_bytes - least for st in stages)


def config_max_model_len(layout: ModelLayout, era: Era, max_model_len: int | None, *,
                         disable_sliding_window: bool = False) -> int:
    """The length vLLM's config holds when it sets the scheduler defaults: the given one, else the
    model's derived length (auto-fit, -1, runs later, at the KV cache)."""
    if max_model_len is not None and max_model_len > 0:
        return max_model_len
    return layout.config_facts.max_lengths[era.yarn_max_len, disable_sliding_window].max_model_len


def simulate_options(scheduler: SchedulerInput, serving: ServingInput, era: Era, kv_bytes: int,
                     max_model_len: int | None, budget: Budget | None = None,
                     config_len: int | None = None) -> SimulateOptions:
    """The engine's options with a resolved budget and length (-1 = auto-fit); ``config_len``: the
    length vLLM's config holds (``config_max_model_len``), for the batch defaults."""
    from kvplan.engines.vllm import environment
    from kvplan.engines.vllm.plan import SimulateOptions

    s, env = scheduler, serving.env
    batched, seqs = s.batch_sizes(config_len)
    # the scheduler's options the engine reads under the same name pass as they are (the table's own included:
    # an option declared with ``Option.part`` reaches the engine without a line here); the rest is resolved here
    engine_names = {f.name for f in fields(SimulateOptions)}
    same = {name: getattr(s, name) for name in (*SAME_NAMED, *table_fields(s)) if name in engine_names}
    return SimulateOptions(
        kv_cache_memory_bytes=kv_bytes,
        kv_cache_memory_bytes_per_worker=stage_budgets(budget, kv_bytes),
        max_model_len=max_model_len,
        max_num_batched_tokens=batched,
        max_num_seqs=seqs,
        use_v2_model_runner=_asks_v2(scheduler, serving, era),
        decode_context_parallel_size=serving.decode_context_parallel_size,
        tensor_parallel_size=serving.tensor_parallel_size,
        pipeline_parallel_size=serving.pipeline_parallel_size,
        data_parallel_size=serving.data_parallel_size,
        enable_expert_parallel=serving.enable_expert_parallel,
        kv_transfer_config=s.transfer_config(simple_offload=environment.simple_kv_offload(env, era), era=era,
                                             num_kv_ranks=serving.tensor_parallel_size
                                             * serving.pipeline_parallel_size),
        lmcache=serving.lmcache(),
        kv_offloading_backend=(s.kv_offloading_backend or "native") if s.kv_offloading_size is not None else None,
        allow_chunked_local_with_hma=environment.allow_chunked_local_with_hma(env, era),
        allow_long_max_model_len=environment.allow_long_max_model_len(env, era),
        parallel_drafting=serving.parallel_drafting,
        **same,
    )


# the scheduler's options the engine's options hold under the same name and meaning
SAME_NAMED = ("async_scheduling", "enable_prefix_caching", "mamba_cache_mode", "disable_hybrid_kv_cache_manager",
              "num_gpu_blocks_override", "kv_events", "enable_chunked_prefill")


def engine_stage(layout: ModelLayout, scheduler: SchedulerInput, serving: ServingInput, era: Era, *, kv_bytes: int,
                 max_model_len: int | None, budget: Budget | None = None) -> Plan:
    """The engine stage: one vLLM simulation of a built layout on a resolved budget (with a
    hardware ``budget``, each pipeline stage gets its own; ``kv_bytes`` is the smallest)."""
    dsw = serving.disable_sliding_window
    config_len = config_max_model_len(layout, era, max_model_len, disable_sliding_window=dsw)
    options = simulate_options(scheduler, serving, era, kv_bytes, max_model_len, budget, config_len)
    return plan_layout(layout, era, options, disable_sliding_window=dsw)



def budget_stage(layout: ModelLayout, request: BudgetInput, scheduler: SchedulerInput, serving: ServingInput,
                 era: Era) -> Budget:
    """The budget stage: the estimated KV budget per GPU on the card (``kvplan.budget.estimate.kv_budget``), asked
    with one record (``BudgetRequest``: the deployment's budget part and the batch the profile runs)."""
    from kvplan.budget.estimate import kv_budget
    from kvplan.budget.request import BudgetRequest, LoraSlots
    from kvplan.engines.vllm import environment

    profile = environment.cudagraph_memory_in_profile(serving.env, era)
    if profile is not None:
        era = replace(era, cudagraph_memory_in_profile=profile)
    runner = _runner(layout, scheduler, serving, era)  # whose dummy sampler run (and rejection-sampler pass) it is
    if runner == "v2" and not era.v2_runner_estimates_cudagraphs:  # the V2 runner's estimate is 0 up to 0.28
        era = replace(era, cudagraph_memory_in_profile=False)
    batched, seqs = scheduler.batch_sizes(config_max_model_len(
        layout, era, scheduler.max_model_len, disable_sliding_window=serving.disable_sliding_window))
    transfer = scheduler.transfer_config(simple_offload=environment.simple_kv_offload(serving.env, era), era=era,
                                         num_kv_ranks=serving.tensor_parallel_size * serving.pipeline_parallel_size)
    knobs = table_fields(scheduler)  # the LoRA and EPLB options of the table (Option.part), typed by their kinds
    loras, rank, redundant = (cast("int | None", knobs.get(k)) for k in ("max_loras", "max_lora_rank",
                                                                          "num_redundant_experts"))
    lora = LoraSlots(max_loras=loras or 1, max_lora_rank=rank or 16) if knobs.get("enable_lora") else None
    mm = table_fields(serving)  # --limit-mm-per-prompt, --language-model-only
    return kv_budget(layout, era, BudgetRequest(
        request, max_num_batched_tokens=batched, max_num_seqs=seqs, data_parallel_size=serving.data_parallel_size,
        enable_expert_parallel=serving.enable_expert_parallel,
        num_gpu_blocks_override=scheduler.num_gpu_blocks_override, kv_transfer_config=transfer,
        limit_mm_per_prompt=cast("dict | None", mm.get("limit_mm_per_prompt")),
        language_model_only=bool(mm.get("language_model_only")),
        lora=lora, enable_eplb=bool(knobs.get("enable_eplb")), num_redundant_experts=redundant,
        rejection_sampler=layout.speculative_method is not None and runner == "v1", model_runner=runner,
        mxfp4_use_marlin=environment.mxfp4_use_marlin(serving.env, era),
        triton_kernels=cast("bool | None", mm.get("triton_kernels")),
        max_cudagraph_capture_size=cast("int | None", knobs.get("max_cudagraph_capture_size")),
        cudagraph_capture_sizes=cast("tuple[int, ...] | None", knobs.get("cudagraph_capture_sizes")),
        optimization_level=cast("int | None", knobs.get("optimization_level")),
        cudagraph_mode=cast("str | None", knobs.get("cudagraph_mode")),
        performance_mode=cast("str | None", knobs.get("performance_mode"))))


def _runner(layout: ModelLayout, scheduler: SchedulerInput, serving: ServingInput, era: Era) -> str:
    """The model runner vLLM ends up with for this deployment (``plan.model_runner_of``)."""
    from kvplan.engines.vllm.plan import model_runner_of

    return model_runner_of(era, _asks_v2(scheduler, serving, era), scheduler.async_scheduling,
                           pp=serving.pipeline_parallel_size,
                           speculative_method=layout.speculative_method,
                           parallel_drafting=bool(serving.parallel_drafting), traits=layout.config_facts.traits)


def _asks_v2(scheduler: SchedulerInput, serving: ServingInput, era: Era) -> bool | None:
    """Whether the deployment asks for the V2 model runner: ``--model-runner``, else ``VLLM_USE_V2_MODEL_RUNNER``
    as the release reads it (None: the release's default)."""
    from kvplan.engines.vllm import environment

    if scheduler.model_runner is not None:
        return scheduler.model_runner == "v2"
    return environment.use_v2_model_runner(serving.env, era)


def config_stage_checks(config: dict, scheduler: SchedulerInput, serving: ServingInput, era: Era) -> None:
    """vLLM's config-stage checks (``prechecks.check_config_stage``) on a model kvplan has no layer rule
    for, from its config alone: the length it derives, its attention and KV heads. A check that fails is
    vLLM's refusal (``ConfigStageFailure``, exit 3), which comes before vLLM meets the model class."""
    from kvplan.engines.vllm import prechecks
    from kvplan.engines.vllm.plan import ModelFacts
    from kvplan.errors import ConfigStageFailure, EngineFailure
    from kvplan.model.limits import max_lengths, text_config

    dsw = serving.disable_sliding_window
    length = max_lengths(config)[era.yarn_max_len, dsw]
    text = text_config(config)

    def count(key: str) -> int | None:
        v = text.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

    method = serving.speculative_method
    facts = ModelFacts(
        max_model_len=length.max_model_len, derived_max_len=length.derived, speculative_method=method,
        architecture=str((config.get("architectures") or [""])[0]) or None,
        num_speculative_tokens_missing=method in prechecks.NO_DRAFT_MODEL_METHODS and serving.num_speculative_tokens is None,
        total_num_attention_heads=count("num_attention_heads"),
        # MLA is exempt from the GQA DCP checks and cannot be told without a rule: only plain KV heads count
        total_num_kv_heads=None if "kv_lora_rank" in text else count("num_key_value_heads"),
    )
    given = scheduler.max_model_len
    config_len = given if given is not None and given > 0 else length.max_model_len
    options = simulate_options(scheduler, serving, era, 0, given, None, config_len)
    try:
        prechecks.check_config_stage(facts, options, era, [], config_len)
    except EngineFailure as e:
        fix = ""
        if e.stage == prechecks.STAGE_MAX_MODEL_LEN:
            fix = f"; fix: --max-model-len {int(length.derived.value)} or less"
        elif e.stage == prechecks.STAGE_PP_SUPPORT and facts.architecture:
            fix = "; fix: " + prechecks.pp_support_fix(facts.architecture, era.stands_for, options.tensor_parallel_size,
                                                       options.pipeline_parallel_size)
        raise ConfigStageFailure(f"vLLM {era.stands_for} would fail at start-up ({e.stage}): {e.error_type}: "
                                 f"{e.message}{fix} (kvplan ran vLLM's config checks only: it has no layer rule "
                                 "for this model)") from None


def model_stage(source: ModelInput, serving: ServingInput, era: Era, card: GpuCard | None, *,
                inventory: bool = False, scheduler: SchedulerInput | None = None) -> ModelLayout:
    """The model stage: the model's layout, with a warning for each ``VLLM_*`` variable vLLM would ignore;
    ``card``: the deployment's card (its preset decides the attention backend), None without one;
    ``inventory``: count the weights too (``ModelLayout.inventory``), for the budget stage to read;
    ``scheduler``: with it, a model kvplan has no layer rule for first meets vLLM's config-stage checks
    (``config_stage_checks``)."""
    from dataclasses import replace

    from kvplan.engines.vllm import environment
    from kvplan.engines.vllm.block_size import decide_block_size, deepseek_v4_block_size, device_of
    from kvplan.errors import NoLayerRuleError
    from kvplan.model.layout import draft_model_layout, finish_model_layout

    s = source
    model, drafter = s.model_read or s.model, s.drafter_read  # model_read: set in ModelInput.__post_init__
    # --revision is the served checkpoint's (the name the line writes); a --model-map target is another
    # config, read as mapped (a bundled one has no revisions: issue 39's "--model-map target not found")
    revision = s.revision if model == s.model else None
    try:
        draft = draft_model_layout(model, drafter, serving_options(serving, era), revision=revision,
                                   download=s.download, hf_overrides=s.hf_overrides)
    except NoLayerRuleError as e:  # the target's config (the drafter's is read later)
        if scheduler is not None:
            config_stage_checks(e.config, scheduler, serving, era)
        raise
    # the engine decides the block size from the model's attention facts, here, as a value
    decision = decide_block_size(era, draft.attention(), device=device_of(card),
                                 block_size=serving.block_size, attention_backend=serving.attention_backend)
    if draft.parsed.family == "deepseek_v4":
        decision = deepseek_v4_block_size(decision, era)
    layout = finish_model_layout(draft, decision, inventory=inventory)
    mapped = [f"{what} '{given}' read as '{to}' (--model-map)" for what, given, to in
              (("model", s.model, model), ("drafter", s.drafter, drafter)) if given != to]
    if s.revision and model != s.model:
        mapped.append(f"--revision {s.revision} is the revision of '{s.model}'; '{model}' (--model-map) is read as "
                      "mapped, without it")
    if mapped:
        layout = replace(layout, warnings=(*mapped, *layout.warnings))
    environment.refuse_unmodelled(serving.env, era, use_mla=any(ls.spec.kind == "mla" for ls in layout.layers))
    extra = [w for w in environment.warnings(serving.env, era) if w not in layout.warnings]
    return replace(layout, warnings=(*layout.warnings, *extra)) if extra else layout


def with_band(d: Deployment, layout: ModelLayout, era: Era, budget: Budget) -> Budget:
    """The budget with its band's ends simulated: the blocks, KV tokens and concurrency vLLM would give at the
    pessimistic and the optimistic end, and whether the engine starts at the pessimistic one."""
    from dataclasses import replace as with_

    b, ends = budget.band, []
    if b is None or b.failure_at_low in ("load", "profile"):  # the pessimistic end runs out of memory before the cache
        return budget
    for kv in (b.kv_cache_memory_low_bytes, b.kv_cache_memory_high_bytes):
        ends.append(engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=kv,
                                 max_model_len=d.scheduler.max_model_len, budget=budget) if kv > 0 else None)
    lo, hi = ends
    fail = None if lo is not None and lo.starts else (lo.failure.stage if lo is not None and lo.failure else "admission")
    fail = b.failure_at_low or fail  # the warm-up after the cache (kvplan.budget.estimate): it fails whatever the blocks
    return with_(budget, band=with_(
        b, num_gpu_blocks_low=lo.num_blocks if lo else 0, num_gpu_blocks_high=hi.num_blocks if hi else 0,
        kv_cache_tokens_low=lo.kv_tokens if lo else 0, kv_cache_tokens_high=hi.kv_tokens if hi else 0,
        max_concurrency_low=lo.max_concurrency if lo else 0.0,
        max_concurrency_high=hi.max_concurrency if hi else 0.0,
        starts_at_low=fail is None, failure_at_low=fail))



def kv_bytes_at(budget: Budget, utilization: float) -> int:
    """The KV bytes per GPU at ``utilization``, by the budget's sizing mode: the smallest over
    stages (``kvplan.budget.estimate.kv_bytes_at``)."""
    from kvplan.budget.estimate import kv_bytes_at as at

    return at(budget, utilization)



NO_BUDGET_REFUSAL = ("no KV-cache budget given (--gpu or --kv-cache-memory): only vLLM's configuration checks "
                     "ran, and they refuse this deployment; give a budget for the memory figures and verified fixes")


def with_load_failure(plan: Plan, failed: LoadFailure) -> Plan:
    """The plan of a deployment that runs out of memory before the KV cache (``kvplan.budget.load``):
    vLLM stops while loading the weights or in the profile run, so there is no KV cache, no block
    count and no KV log line."""
    from kvplan.engines.vllm.plan import failed_before_kv_cache

    return failed_before_kv_cache(plan, failed.stage, failed.error_type, failed.message)



def _plausible_budget(model: str, kv_bytes: int, plan: Plan) -> None:
    """``--kv-cache-memory 40`` is 40 bytes (vLLM's ``--kv-cache-memory-bytes`` reads bytes): a budget
    below one KV block of the model cannot be what was meant; refuse it and suggest the unit."""
    per_block = max((w.bytes_per_block for w in [*plan.workers, *(plan.worker_checks or ())]), default=0)
    if 0 < kv_bytes < per_block:
        raise OptionError(f"--kv-cache-memory {kv_bytes:,}: that is {kv_bytes:,} bytes, less than one KV block of "
                          f"{model} ({per_block:,} bytes); give the unit, e.g. --kv-cache-memory {kv_bytes}GiB "
                          "(40G = 40 GiB, 40g = 40*10^9 bytes)")



def layout_of(d: Deployment, **values: Any) -> ModelLayout:
    """The model stage for ``d`` (with ``values``: for ``d`` changed by them, ``deployment.changed``)."""
    if values:
        d = changed(d, **values)
    return model_stage(d.source, d.serving, d.era, d.budget.card, inventory=d.budget.counts_weights,
                       scheduler=d.scheduler)


def run_deployment(d: Deployment, *, explain: bool = False, layout: ModelLayout | None = None) -> ScenarioResult:
    """The pipeline: build the layout (unless given), resolve the budget, simulate; no fixes searched
    (``kvplan.usecases.fix_search.with_fixes`` adds them to a failing deployment's result)."""
    check_sizing(d)
    era = d.era
    if layout is None:
        layout = layout_of(d)
    budget = None
    if d.budget.kv_cache_memory is not None:
        kv_bytes = d.budget.kv_cache_memory
    elif d.budget.on_card:
        budget = budget_stage(layout, d.budget, d.scheduler, d.serving, era)
        kv_bytes = budget.kv_cache_memory_bytes
    else:
        # No budget. vLLM's configuration checks come before any memory is measured, so a
        # deployment they refuse is refused whatever the GPU; anything further needs a budget.
        from kvplan.engines.vllm.prechecks import before_kv_cache

        plan = engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=0, max_model_len=d.scheduler.max_model_len)
        if plan.starts or plan.failure is None or not before_kv_cache(plan.failure.stage):
            raise OptionError("no KV-cache budget: pass --kv-cache-memory (e.g. 40GiB) or --gpu (e.g. H100-80GB)")
        return ScenarioResult(d, layout, plan, None, (*layout.warnings, NO_BUDGET_REFUSAL), (), explain)
    plan = engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=kv_bytes,
                        max_model_len=d.scheduler.max_model_len, budget=budget)
    if budget is not None and budget.load_failure is not None:
        plan = with_load_failure(plan, budget.load_failure)
    elif budget is None:
        _plausible_budget(d.source.model, kv_bytes, plan)
    elif budget.band is not None:
        budget = with_band(d, layout, era, budget)
    return ScenarioResult(d, layout, plan, budget, tuple(layout.warnings), (), explain)


def plans_under(main: ScenarioResult, eras: list[Era], thresholds: list[float], *,
                max_model_len: int) -> tuple[list[Plan], dict[float, Plan]]:
    """``main``'s deployment under each of ``eras``, and under its own policy with each grouping threshold of
    ``thresholds``: the plans compare sets beside ``main``'s. Each runs on ``main``'s layout, at
    ``max_model_len``, on the KV budget ``main`` resolved (the sizing mode, if any, is spent); no fixes are
    searched (compare shows none)."""
    d = changed(main.deployment, max_model_len=max_model_len, kv_cache_memory=main.plan.options.kv_cache_memory_bytes,
                enable_extensible_kv_cache=None)
    plans = [run_deployment(under(d, e), layout=main.layout).plan for e in eras]
    tried = {t: run_deployment(under(d, d.policy_era, t), layout=main.layout).plan for t in thresholds}
    return plans, tried
