"""One simulation described as the user states it (CLI flags or a `check` YAML entry),
and the run that turns it into a layout, a plan and the report dict.

Field names are the long CLI flags with underscores, so `kvplan check` files use
the same words as `kvplan simulate`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, make_dataclass
from functools import cache, cached_property

from kvplan import options as _o
from kvplan.results.budget import Budget, LoadFailure
from kvplan.errors import KvplanError, OptionError
from kvplan.engines.vllm.eras import Era
from kvplan.engines.vllm.plan import Plan
from kvplan.model.layout import ModelLayout
from kvplan.options import ENV, OPTIONS, env_value, scenario_options
from kvplan.results.records import Fix, PlanBody
from kvplan.budget.hardware import GpuCard
from kvplan.usecases.deployment import (
    BudgetInput, Deployment, ModelInput, SchedulerInput, ServingInput, changed, deployment_of, under,
)


class _ScenarioMethods:
    def __post_init__(self) -> None:
        # Every value goes through its option's parser (idempotent on typed values), so
        # Scenario(model=..., kv_cache_memory="40GiB") and a flag or file key mean the same.
        for opt in scenario_options():
            raw = getattr(self, opt.name)
            if opt.kind == ENV:  # the VLLM_* variables given, plus those set in kvplan's environment
                object.__setattr__(self, opt.name, env_value(raw))
            elif raw is not None:
                object.__setattr__(self, opt.name, opt.parse(raw))

    # The typed deployment (its era resolved from ``policy``), made once per scenario at its first
    # use, so a bad policy is refused where it always was. The stages below take its parts, never
    # the scenario. ``replace(s, policy=...)`` makes a new scenario, with its own deployment.
    @cached_property
    def deployment(self) -> Deployment:
        """This scenario as a typed ``Deployment`` (``kvplan.usecases.deployment``)."""
        return deployment_of(self)

    @property
    def policy_era(self) -> Era:
        """The era ``policy`` names, with its own grouping threshold."""
        return self.deployment.policy_era

    @property
    def era(self) -> Era:
        """The era this deployment runs under: ``policy_era`` with ``--threshold`` when given."""
        return self.deployment.era

    def batch_sizes(self, max_model_len: int | None = None) -> tuple[int, int]:
        """``(max_num_batched_tokens, max_num_seqs)`` (``SchedulerInput.batch_sizes``)."""
        return self.deployment.scheduler.batch_sizes(max_model_len)

    def check_sizing(self) -> None:
        """Refuse --enable-extensible-kv-cache where vLLM refuses it (``check_sizing``)."""
        check_sizing(self.deployment)

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


# The type each option kind parses to (Option.parse): sizes in bytes, max_model_len in tokens
# (-1 = auto-fit), --gpu-memory in GiB, the VLLM_* variables, --model-map and --set as text maps.
# A kind missing here fails on import (the Scenario cannot be generated), not at the first use.
KIND_TYPES: dict[str, type] = {
    _o.STR: str, _o.INT: int, _o.FLOAT: float, _o.SIZE: int, _o.GIB: float, _o.LENGTH: int, _o.BOOL: bool,
    _o.TRISTATE: bool, _o.CHOICE: str, _o.JSON: dict, _o.POLICY_NAME: str, _o.ENV: dict[str, str],
    _o.MAP: dict[str, str], _o.SETTINGS: dict[str, str],
}


def _field_type(o) -> object:
    """An option's Scenario field type: its kind's type, ``| None`` unless the table gives a default."""
    if o.kind not in KIND_TYPES:
        raise TypeError(f"option {o.name}: kind {o.kind!r} has no type in kvplan.usecases.scenario.KIND_TYPES")
    t = KIND_TYPES[o.kind]
    return t if o.default is not None else t | None


# One simulation as the user states it: `model` plus every scenario option of the option table
# (kvplan.options), with the table's defaults and its kinds' types. Values are typed
# (Option.parse). Generated, so an option is declared once.
Scenario = make_dataclass(
    "Scenario",
    [("model", str)] + [(o.name, _field_type(o), field(default=o.default)) for o in scenario_options()],
    bases=(_ScenarioMethods,),
    frozen=True,
)
Scenario.__module__ = __name__


def scenario_from(model: str, options: dict) -> "Scenario":
    """A Scenario from raw option values (flags, file keys or library keywords), each parsed
    by its option in the table; options that are not scenario options are ignored here."""
    names = {o.name for o in scenario_options()}
    return Scenario(model=model, **{k: (v if v is not None else OPTIONS[k].default)
                                    for k, v in options.items() if k in names})


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


def serving_of(s: Scenario):
    """The model layer's serving options for ``s`` (``serving_options``)."""
    d = s.deployment
    return serving_options(d.serving, d.era)


def serving_options(s: ServingInput, era: Era):
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
        # Era.stands_for, read from its fields (the selected release, else the era's newest, else its first)
        release=era.release or (era.releases[-1] if era.releases else era.first_release),
        kv_cache_dtype_skip_layers=tuple(x for x in (s.kv_cache_dtype_skip_layers or "").replace(",", " ").split()),
    )


def model_facts(layout, era, *, disable_sliding_window: bool = False):
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
        drafter_target_hidden_size=drafter_target_hidden_size(layout),
        tp_checks=layout.tp_checks,
        block_size_decision=layout.block_size_decision,
        traits=c.traits,
        attention_chunk_size=layout.target.attention_chunk_size,
        speculative_method=layout.speculative_method,
        num_speculative_tokens=layout.num_speculative_tokens,
        mamba_chunk_size=layout.target.mamba_chunk_size,
        drafter_ptd_token=drafter_has_ptd_token(layout),
        use_mla=any(ls.spec.kind == "mla" for ls in layout.layers),
        total_num_kv_heads=c.total_num_kv_heads,
        total_num_attention_heads=c.total_num_attention_heads,
    )


def drafter_target_hidden_size(layout) -> int | None:
    """The hidden size an EAGLE/EAGLE-3 drafter expects from its target (``ConfigFacts``); None for
    other methods."""
    return layout.config_facts.drafter_target_hidden_size


def drafter_has_ptd_token(layout) -> bool:
    """A P-EAGLE head: its config carries ``ptd_token_id`` (``ConfigFacts.drafter_ptd_token``)."""
    return layout.config_facts.drafter_ptd_token


def run_search(search, rerun):
    """Drive one of the engine's searches (``kvplan.engines.vllm.fixes.Search``: it yields the options
    to try) with ``rerun(options) -> Plan``, here, so every simulation runs from this layer; its result."""
    try:
        options = next(search)
        while True:
            options = search.send(rerun(options))
    except StopIteration as done:
        return done.value


def plan_layout(layout, era, options, *, disable_sliding_window: bool = False):
    """vLLM's simulation of a built layout under ``era`` with engine options."""
    return engine_run(layout, era, disable_sliding_window=disable_sliding_window)(options)


def engine_run(layout, era, *, disable_sliding_window: bool = False):
    """``options -> Plan``: the engine's own simulation of a built layout under ``era``, bound to
    the model's facts (read once); ``run_search`` runs it for the engine's searches."""
    from functools import partial

    from kvplan.engines.vllm.plan import simulate

    facts = model_facts(layout, era, disable_sliding_window=disable_sliding_window)
    return partial(simulate, layout.layers, layout.ranks, facts, era)


def stage_budgets(budget: Budget | None, kv_bytes: int) -> tuple[int, ...] | None:
    """Each pipeline stage's KV budget when the smallest is ``kv_bytes``: stages differ by their
    weights, activation and CUDA-graph memory (``kv_budget``'s stages), and vLLM sizes each
    worker's pool from its own memory before keeping the smallest num_blocks."""
    stages = budget.stages if budget is not None else ()
    if len(stages) < 2:
        return None
    least = min(st.kv_cache_memory_bytes for st in stages)
    return tuple(kv_bytes + st.kv_cache_memory_bytes - least for st in stages)


def config_max_model_len(layout, era, max_model_len: int | None, *, disable_sliding_window: bool = False) -> int:
    """The length vLLM's config holds when it sets the scheduler defaults: the given one, else the
    model's derived length (auto-fit, -1, runs later, at the KV cache)."""
    if max_model_len is not None and max_model_len > 0:
        return max_model_len
    return layout.config_facts.max_lengths[era.yarn_max_len, disable_sliding_window].max_model_len


def simulate_options(scheduler: SchedulerInput, serving: ServingInput, era: Era, kv_bytes: int,
                     max_model_len: int | None, budget: Budget | None = None, config_len: int | None = None):
    """The engine's options with a resolved budget and length (-1 = auto-fit); ``config_len``: the
    length vLLM's config holds (``config_max_model_len``), for the batch defaults."""
    from kvplan.engines.vllm import environment
    from kvplan.engines.vllm.plan import SimulateOptions

    s, env = scheduler, serving.env
    batched, seqs = s.batch_sizes(config_len)
    return SimulateOptions(
        kv_cache_memory_bytes=kv_bytes,
        kv_cache_memory_bytes_per_worker=stage_budgets(budget, kv_bytes),
        max_model_len=max_model_len,
        max_num_batched_tokens=batched,
        max_num_seqs=seqs,
        async_scheduling=s.async_scheduling,
        use_v2_model_runner=(environment.use_v2_model_runner(env, era) if s.model_runner is None
                             else s.model_runner == "v2"),
        decode_context_parallel_size=serving.decode_context_parallel_size,
        tensor_parallel_size=serving.tensor_parallel_size,
        enable_prefix_caching=s.enable_prefix_caching,
        mamba_cache_mode=s.mamba_cache_mode,
        disable_hybrid_kv_cache_manager=s.disable_hybrid_kv_cache_manager,
        kv_transfer_config=s.transfer_config(simple_offload=environment.simple_kv_offload(env, era)),
        kv_offloading_backend=(s.kv_offloading_backend or "native") if s.kv_offloading_size is not None else None,
        num_gpu_blocks_override=s.num_gpu_blocks_override,
        kv_events=s.kv_events,
        allow_chunked_local_with_hma=environment.allow_chunked_local_with_hma(env, era),
        allow_long_max_model_len=environment.allow_long_max_model_len(env, era),
        enable_chunked_prefill=s.enable_chunked_prefill,
        parallel_drafting=serving.parallel_drafting,
    )


def engine_stage(layout: ModelLayout, scheduler: SchedulerInput, serving: ServingInput, era: Era, *, kv_bytes: int,
                 max_model_len: int | None, budget: Budget | None = None):
    """The engine stage: one vLLM simulation of a built layout on a resolved budget (with a
    hardware ``budget``, each pipeline stage gets its own; ``kv_bytes`` is the smallest)."""
    dsw = serving.disable_sliding_window
    config_len = config_max_model_len(layout, era, max_model_len, disable_sliding_window=dsw)
    options = simulate_options(scheduler, serving, era, kv_bytes, max_model_len, budget, config_len)
    return plan_layout(layout, era, options, disable_sliding_window=dsw)


def plan_scenario(s: Scenario, layout, era, kv_bytes: int, max_model_len: int | None, budget: Budget | None = None):
    """``engine_stage`` for ``s`` under ``era``."""
    d = s.deployment
    return engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=kv_bytes, max_model_len=max_model_len,
                        budget=budget)


def hardware_budget(s: Scenario, layout, era) -> Budget:
    """``budget_stage`` for ``s`` under ``era``."""
    d = s.deployment
    return budget_stage(layout, d.budget, d.scheduler, d.serving, era)


def budget_stage(layout: ModelLayout, request: BudgetInput, scheduler: SchedulerInput, serving: ServingInput,
                 era: Era) -> Budget:
    """The budget stage: the estimated KV budget per GPU on the card (``kvplan.budget.estimate.kv_budget``)."""
    from dataclasses import replace

    from kvplan.budget.estimate import kv_budget
    from kvplan.engines.vllm import environment

    profile = environment.cudagraph_memory_in_profile(serving.env, era)
    if profile is not None:
        era = replace(era, cudagraph_memory_in_profile=profile)
    batched, seqs = scheduler.batch_sizes(config_max_model_len(
        layout, era, scheduler.max_model_len, disable_sliding_window=serving.disable_sliding_window))
    return kv_budget(
        layout, era, card=request.card, gpu=request.gpu, gpu_memory_gib=request.gpu_memory,
        gpu_memory_utilization=request.gpu_memory_utilization, overrides=request.overrides(),
        tensor_parallel_size=serving.tensor_parallel_size, max_num_batched_tokens=batched, max_num_seqs=seqs,
        exact_params=request.exact_params, data_parallel_size=serving.data_parallel_size,
        enable_expert_parallel=serving.enable_expert_parallel, quantization=request.quantization,
        cpu_offload_gb=request.cpu_offload_gb, enable_extensible_kv_cache=request.enable_extensible_kv_cache,
        num_gpu_blocks_override=scheduler.num_gpu_blocks_override, kv_transfer_config=scheduler.transfer_config(
            simple_offload=environment.simple_kv_offload(serving.env, era)),
    )


def build_layout(s: Scenario):
    """``model_stage`` for ``s``."""
    d = s.deployment
    return model_stage(d.source, d.serving, d.era, d.budget.card, inventory=d.budget.counts_weights,
                       scheduler=d.scheduler)


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
    model, drafter = s.model_read, s.drafter_read
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


def with_band(d: Deployment, layout, era, budget: Budget) -> Budget:
    """The budget with its band's ends simulated: the blocks, KV tokens and concurrency vLLM would give at the
    pessimistic and the optimistic end, and whether the engine starts at the pessimistic one."""
    from dataclasses import replace as with_

    b, ends = budget.band, []
    if b.failure_at_low is not None:  # the pessimistic end runs out of memory loading or profiling
        return budget
    for kv in (b.kv_cache_memory_low_bytes, b.kv_cache_memory_high_bytes):
        ends.append(engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=kv,
                                 max_model_len=d.scheduler.max_model_len, budget=budget) if kv > 0 else None)
    lo, hi = ends
    fail = None if lo is not None and lo.starts else (lo.failure.stage if lo is not None else "admission")
    return with_(budget, band=with_(
        b, num_gpu_blocks_low=lo.num_blocks if lo else 0, num_gpu_blocks_high=hi.num_blocks if hi else 0,
        kv_cache_tokens_low=lo.kv_tokens if lo else 0, kv_cache_tokens_high=hi.kv_tokens if hi else 0,
        max_concurrency_low=round(lo.max_concurrency, 6) if lo else 0.0,
        max_concurrency_high=round(hi.max_concurrency, 6) if hi else 0.0,
        starts_at_low=fail is None, failure_at_low=fail))


def deployment_fixes(d: Deployment, layout, era, plan, budget: Budget | None) -> list[Fix]:
    """The verified changes that make a failing deployment start (none when it starts), in the order a serving
    engineer tries them (``rank_fixes``); with a band, a deployment that starts only at the central estimate
    gets the fixes that hold at the pessimistic end."""
    band = budget.band if budget is not None else None
    if plan.starts and (band is None or band.starts_at_low is not False):
        return []
    if layout.num_speculative_tokens_missing and not plan.starts and plan.failure.stage == "config.speculative":
        return speculative_tokens_fix(d, era, plan)
    if band is not None and band.failure_at_low in ("load", "profile"):  # out of memory before the KV cache
        return load_fixes(d, layout, plan)
    if band is not None and band.starts_at_low is False:  # the fixes that hold at the pessimistic end
        return pessimistic_fixes(d, layout, era, budget)
    return rank_fixes(_deployment_fixes(d, layout, era, plan, budget) + kv_dtype_fixes(d, budget))


def pessimistic_fixes(d: Deployment, layout, era, budget: Budget) -> list[Fix]:
    """The fixes of a deployment that starts at kvplan's central estimate but not at the band's pessimistic end:
    each simulated at that end (a lower utilization's KV bytes shifted by the band's shortfall)."""
    low = budget.band.kv_cache_memory_low_bytes
    plan = engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=max(low, 0),
                        max_model_len=d.scheduler.max_model_len, budget=budget)
    if plan.starts or plan.failure is None:
        return []
    fixes = _deployment_fixes(d, layout, era, plan, budget, shortfall=budget.kv_cache_memory_bytes - low)
    return rank_fixes(fixes + kv_dtype_fixes(d, budget))


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


def _deployment_fixes(d: Deployment, layout, era, plan, budget: Budget | None, shortfall: int = 0) -> list[Fix]:
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


def speculative_tokens_fix(d: Deployment, era, plan) -> list[Fix]:
    """The fix for a speculative method vLLM refuses without num_speculative_tokens: the same
    deployment simulated again with ``SPEC_TOKENS_FIX`` tokens (the layout rebuilt: a Mamba
    state depends on it), kept when it then starts."""
    from dataclasses import replace

    from kvplan.engines.vllm.fixes import fix_entry

    fixed = changed(d, num_speculative_tokens=SPEC_TOKENS_FIX)
    try:
        layout = model_stage(fixed.source, fixed.serving, fixed.era, fixed.budget.card,
                             inventory=fixed.budget.counts_weights)
    except KvplanError:  # with the tokens it fails later (a DSpark drafter the checkpoint lacks): no fix
        return []
    p = plan_layout(layout, era, plan.options, disable_sliding_window=d.serving.disable_sliding_window)
    if not p.starts:
        return []
    n = SPEC_TOKENS_FIX
    fix = fix_entry("num_speculative_tokens", n, f"--num-speculative-tokens {n}", p)
    return [replace(fix, result=f"starts with {n} speculative token (simulated with {n}, the least vLLM accepts; "
                                f"give the drafter's own value): " + fix.result.removeprefix("starts; "))]


def kv_bytes_at(budget: Budget, utilization: float) -> int:
    """The KV bytes per GPU at ``utilization``, by the budget's sizing mode: the smallest over
    stages (``kvplan.budget.estimate.kv_bytes_at``)."""
    from kvplan.budget.estimate import kv_bytes_at as at

    return at(budget, utilization)


def utilization_fix(d: Deployment, layout, era, budget: Budget, plan, shortfall: int = 0) -> Fix | None:
    """The least ``--gpu-memory-utilization`` (to 0.01, at most 1.0) at which a failing
    deployment starts, verified by simulating it; None when even 1.0 does not. ``shortfall``: the KV bytes
    the band's pessimistic end has less than the central estimate (the fix then holds at that end)."""
    from kvplan.engines.vllm.fixes import fix_entry, least_that_starts

    if plan.failure is None or plan.failure.stage not in ("admission", "autofit"):
        return None
    length = plan.options.max_model_len

    @cache  # the fix's own plan is the search's last one: simulated once
    def starts(k: int):
        kv = kv_bytes_at(budget, k / 100) - shortfall
        p = engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=kv, max_model_len=length,
                         budget=budget) if kv > 0 else None
        return p if p is not None and p.starts else None

    current = round((d.budget.gpu_memory_utilization or budget.gpu_memory_utilization or 0.9) * 100)
    if current >= 100 or starts(100) is None:
        return None
    k = run_search(least_that_starts(current, 100), starts)
    return fix_entry("gpu_memory_utilization", k / 100, f"--gpu-memory-utilization {k / 100:.2f}", starts(k))


NO_BUDGET_REFUSAL = ("no KV-cache budget given (--gpu or --kv-cache-memory): only vLLM's configuration checks "
                     "ran, and they refuse this deployment; give a budget for the memory figures and verified fixes")


def with_load_failure(plan, failed: LoadFailure):
    """The plan of a deployment that runs out of memory before the KV cache (``kvplan.budget.load``):
    vLLM stops while loading the weights or in the profile run, so there is no KV cache, no block
    count and no KV log line."""
    from kvplan.engines.vllm.plan import failed_before_kv_cache

    return failed_before_kv_cache(plan, failed.stage, failed.error_type, failed.message)


# the sizes kvplan tries for a larger tensor- / pipeline-parallel deployment (vLLM takes any, the
# model's heads and layers decide which build)
LOAD_FIX_TP = (2, 4, 8, 16, 32)
LOAD_FIX_PP = (2, 3, 4, 8)


def _starts_with(d: Deployment) -> object | None:
    """``d`` simulated from scratch (its own layout and budget), no fixes; the plan when it starts."""
    try:
        r = run_deployment(d, fixes=False)
    except KvplanError:
        return None  # e.g. heads not divisible by that tensor-parallel size
    band = r.budget.band if r.budget is not None else None
    return r.plan if r.plan.starts and (band is None or band.starts_at_low is not False) else None


def load_fixes(d: Deployment, layout, plan, failed: LoadFailure | None = None) -> list[Fix]:
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
    elif stage == LOAD:  # vLLM keeps that many GiB of weights in CPU memory (UVA), per GPU
        @cache  # each size simulated once (the fix's own plan is the search's last one)
        def offloaded(k: int):
            return _starts_with(changed(d, cpu_offload_gb=float(k)))

        lo = int((d.budget.cpu_offload_gb or 0) + (failed.needed_bytes - failed.free_bytes) // (1 << 30))
        hi = int(failed.needed_bytes // (1 << 30))  # nearly every weight offloaded
        if hi > lo and offloaded(hi) is not None:
            k = run_search(least_that_starts(lo, hi), offloaded)
            fixes.append(fix_entry("cpu_offload_gb", k, f"--cpu-offload-gb {k}", offloaded(k)))
    return fixes


def _plausible_budget(model: str, kv_bytes: int, plan) -> None:
    """``--kv-cache-memory 40`` is 40 bytes (vLLM's ``--kv-cache-memory-bytes`` reads bytes): a budget
    below one KV block of the model cannot be what was meant; refuse it and suggest the unit."""
    per_block = max((w.bytes_per_block for w in [*plan.workers, *(plan.worker_checks or ())]), default=0)
    if 0 < kv_bytes < per_block:
        raise OptionError(f"--kv-cache-memory {kv_bytes:,}: that is {kv_bytes:,} bytes, less than one KV block of "
                          f"{model} ({per_block:,} bytes); give the unit, e.g. --kv-cache-memory {kv_bytes}GiB "
                          "(40G = 40 GiB, 40g = 40*10^9 bytes)")


def run_scenario(s: Scenario, *, explain: bool = False, layout=None, fixes: bool = True) -> ScenarioResult:
    """``run_deployment`` for the deployment ``s`` states."""
    return run_deployment(s.deployment, explain=explain, layout=layout, fixes=fixes)


def run_deployment(d: Deployment, *, explain: bool = False, layout=None, fixes: bool = True) -> ScenarioResult:
    """Build the layout (unless given), resolve the budget, simulate, and report (``fixes=False``:
    no search for the changes that make a failing deployment start)."""
    check_sizing(d)
    era = d.era
    if layout is None:
        layout = model_stage(d.source, d.serving, era, d.budget.card, inventory=d.budget.counts_weights,
                             scheduler=d.scheduler)
    budget = None
    if d.budget.kv_cache_memory is not None:
        kv_bytes = d.budget.kv_cache_memory
    elif d.budget.on_card:
        budget = budget_stage(layout, d.budget, d.scheduler, d.serving, era)
        kv_bytes = budget.kv_cache_memory_bytes
    else:
        kv_bytes = None
    if kv_bytes is None:
        # No budget. vLLM's configuration checks come before any memory is measured, so a
        # deployment they refuse is refused whatever the GPU; anything further needs a budget.
        from kvplan.engines.vllm.prechecks import before_kv_cache

        plan = engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=0, max_model_len=d.scheduler.max_model_len)
        if plan.starts or not before_kv_cache(plan.failure.stage):
            raise OptionError("no KV-cache budget: pass --kv-cache-memory (e.g. 40GiB) or --gpu (e.g. H100-80GB)")
        fixes = []
    else:
        plan = engine_stage(layout, d.scheduler, d.serving, era, kv_bytes=kv_bytes,
                            max_model_len=d.scheduler.max_model_len, budget=budget)
        if budget is not None and budget.load_failure is not None:
            plan = with_load_failure(plan, budget.load_failure)
            found = load_fixes(d, layout, plan, budget.load_failure) if fixes else []
        else:
            if budget is None:
                _plausible_budget(d.source.model, kv_bytes, plan)
            if budget is not None and budget.band is not None:
                budget = with_band(d, layout, era, budget)
            found = deployment_fixes(d, layout, era, plan, budget) if fixes else []
        fixes = found
    warnings = (*layout.warnings, NO_BUDGET_REFUSAL) if kv_bytes is None else tuple(layout.warnings)
    return ScenarioResult(d, layout, plan, budget, warnings, tuple(fixes), explain)


def plans_under(main: ScenarioResult, eras: list[Era], thresholds: list[float], *,
                max_model_len: int) -> tuple[list[Plan], dict[float, Plan]]:
    """``main``'s deployment under each of ``eras``, and under its own policy with each grouping threshold of
    ``thresholds``: the plans compare sets beside ``main``'s. Each runs on ``main``'s layout, at
    ``max_model_len``, on the KV budget ``main`` resolved (the sizing mode, if any, is spent); no fixes are
    searched (compare shows none)."""
    d = changed(main.deployment, max_model_len=max_model_len, kv_cache_memory=main.plan.options.kv_cache_memory_bytes,
                enable_extensible_kv_cache=None)
    plans = [run_deployment(under(d, e), layout=main.layout, fixes=False).plan for e in eras]
    tried = {t: run_deployment(under(d, d.policy_era, t), layout=main.layout, fixes=False).plan for t in thresholds}
    return plans, tried
