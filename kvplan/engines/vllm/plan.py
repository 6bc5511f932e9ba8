"""``simulate()``: vLLM's ``get_kv_cache_configs`` pipeline, end to end, for one era.

Order (reference §2): HMA decision → hybrid Mamba alignment → global groups →
per-worker projection → (0.33) block override → auto-fit → admission check per
worker → per-worker config → equalise num_blocks → report lines → drafter check.
A start-up failure is a result (``Plan.failure``), not an exception: the logs
vLLM prints before it fails are kept.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import TYPE_CHECKING

from kvplan.frozen import dataclass
from kvplan.bounds import MAX_TOKENS
from kvplan.engines.vllm import grouping, hybrid, offload, prechecks, runner, sizing
from kvplan.engines.vllm.eras import Era
from kvplan.engines.vllm.grouping import EngineFailure, Group, GroupingDecision
from kvplan.engines.vllm.hybrid import HmaDecision, MambaAlignment
from kvplan.engines.vllm.wording import autofit_lines, wording
from kvplan.errors import OptionError
from kvplan.specs import (
    AttentionSpec,
    ChunkedLocalAttentionSpec,
    CrossAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MLAAttentionSpec,
    LayerSpec,
    SlidingWindowSpec,
    Workload,
)
from kvplan.units import GiB

if TYPE_CHECKING:  # the model side's value types; the engine only reads their fields
    from kvplan.engines.vllm.block_size import BlockSizeDecision
    from kvplan.model.limits import DerivedLength
    from kvplan.model.traits import ModelTraits
    from kvplan.results.host_tier import HostTier  # --kv-offloading-size's tier

LAYOUT_LOG_033 = "Using LBNHC KV cache layout."
LAYOUT_LOG_BLHNC = "Using BLHNC KV cache layout."


@dataclass(frozen=True)
class ModelFacts:
    """The few model-level numbers the engine reads besides the layer specs."""

    max_model_len: int  # the model's derived maximum length (default --max-model-len)
    attention_chunk_size: int | None = None
    speculative_method: str | None = None
    num_speculative_tokens: int = 0
    mamba_chunk_size: int | None = None
    # the drafter's config carries ptd_token_id (a P-EAGLE head): it can draft in parallel, when
    # speculative_config.parallel_drafting is set (SimulateOptions.parallel_drafting)
    drafter_ptd_token: bool = False
    # for vLLM's decode-context-parallel checks (ModelConfig.verify_with_parallel_config)
    use_mla: bool = False
    total_num_kv_heads: int | None = None
    total_num_attention_heads: int | None = None
    # for vLLM's config checks before the KV cache (kvplan.engines.vllm.prechecks)
    derived_max_len: DerivedLength | None = None  # the ceiling a given --max-model-len is checked against
    num_hidden_layers: int | None = None
    pp_partition: tuple[int, ...] | None = None  # VLLM_PP_LAYER_PARTITION, parsed
    pp_partition_error: str | None = None  # get_pp_indices' ValueError text for it
    num_speculative_tokens_missing: bool = False  # a method with no num_speculative_tokens or n_predict
    kv_cache_dtype: str = "auto"  # --kv-cache-dtype as given
    model_dtype: str | None = None  # the resolved model dtype (torch name)
    target_hidden_size: int | None = None
    drafter_target_hidden_size: int | None = None  # the hidden size an EAGLE drafter reads from its target
    vocab_size: int | None = None  # the target text config's vocab_size (LoRA's lm_head limit)
    architecture: str | None = None  # the architecture the layout was built for (LoRA support)
    drafter_architecture: str | None = None  # the draft config's own architectures[0] (its SupportsPP check)
    model_type: str | None = None  # the target config's model_type (an MTP draft's class: hf_config_override)
    tp_checks: tuple = ()  # ModelLayout.tp_checks: the head counts split over TP
    # block_size.BlockSizeDecision: the attention backend, its smallest kernel block (the hybrid Mamba
    # alignment's floor) and update_block_size_for_backend's "Setting kv cache block size" line
    block_size_decision: BlockSizeDecision | None = None
    # model.traits.ModelTraits: what 0.22-0.28 pick the model runner by (None: not known)
    traits: ModelTraits | None = None


@dataclass(frozen=True)
class SimulateOptions:
    kv_cache_memory_bytes: int  # per worker (vLLM's --kv-cache-memory-bytes)
    # one budget per pipeline stage (each worker profiles its own memory); None = the same for all
    kv_cache_memory_bytes_per_worker: tuple[int, ...] | None = None
    max_model_len: int | None = None  # None = model default; -1 = auto-fit
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 1024
    # None = vLLM's default: on, unless the V1 model runner runs pipeline parallelism (0.33)
    async_scheduling: bool | None = None
    enable_prefix_caching: bool | None = None
    mamba_cache_mode: str | None = None
    mamba_block_size: int | None = None
    disable_hybrid_kv_cache_manager: bool | None = None
    kv_transfer_config: dict | None = None  # as vLLM holds it (the offloading flags applied)
    kv_offloading_backend: str | None = None  # --kv-offloading-backend, when the flags made the connector
    lmcache: dict | None = None  # offload.lmcache_settings: LMCache's own settings (LMCACHE_* variables)
    num_gpu_blocks_override: int | None = None
    allow_chunked_local_with_hma: bool = True
    allow_long_max_model_len: bool = False  # VLLM_ALLOW_LONG_MAX_MODEL_LEN
    enable_chunked_prefill: bool | None = None  # None = vLLM's default (on for generative models)
    decode_context_parallel_size: int = 1
    tensor_parallel_size: int = 1  # only for the decode-context-parallel checks (specs are per rank)
    pipeline_parallel_size: int = 1  # only for the SupportsPP check (the stages are the layout's ranks)
    # The model runner (VLLM_USE_V2_MODEL_RUNNER): None = the release's own choice
    # (``resolve_model_runner``). 0.33 with async scheduling keeps PP + 1 batches in
    # flight on the V2 runner, PP on V1.
    use_v2_model_runner: bool | None = None
    kv_events: bool = False  # vLLM's --kv-events-config is set
    # speculative_config.parallel_drafting as given (None = not given; runner.effective_parallel_drafting)
    parallel_drafting: bool | None = None
    data_parallel_size: int = 1  # only for EPLB's check
    enable_expert_parallel: bool = False  # only for EPLB's check
    # --enable-lora and its settings, --enable-eplb and its redundant experts (the option table's, Option.part)
    enable_lora: bool = False
    max_loras: int | None = None
    max_lora_rank: int | None = None
    max_cpu_loras: int | None = None
    enable_eplb: bool = False
    num_redundant_experts: int | None = None
    # --max-cudagraph-capture-size, --cudagraph-capture-sizes (the option table's): their checks only (the budget
    # counts the graphs)
    max_cudagraph_capture_size: int | None = None
    cudagraph_capture_sizes: tuple[int, ...] | None = None
    optimization_level: int | None = None  # --optimization-level: refused before 0.12.0 (check_optimization_level)
    cudagraph_mode: str | None = None  # --compilation-config's: with -O0 refused from 0.30.0 (the same check)
    performance_mode: str | None = None  # --performance-mode: refused before 0.17.0 (check_performance_mode)


def model_runner_of(era: Era, use_v2: bool | None, async_scheduling: bool | None, *, pp: int,
                    speculative_method: str | None, parallel_drafting: bool, traits=None) -> str:
    """The model runner ("v1" / "v2") vLLM ends up with (``runner.resolve_model_runner``, as ``simulate`` resolves
    it), for the budget stage (the V1 runner's dummy sampler run has a rejection-sampler pass with a drafter); a
    combination vLLM refuses is the engine stage's to report: "v2" here."""
    try:
        return runner.resolve_model_runner(era, use_v2, async_scheduling, pp=pp, speculative_method=speculative_method,
                                           parallel_drafting=parallel_drafting, logs=[], model=traits).runner
    except EngineFailure:
        return "v2"


@dataclass(frozen=True)
class Failure:
    stage: str  # config, grouping, page_unification, admission, autofit, drafter
    error_type: str
    message: str


@dataclass
class Plan:
    era: Era
    options: SimulateOptions
    facts: ModelFacts
    layers: tuple[LayerSpec, ...]
    hma: HmaDecision | None = None
    mamba: MambaAlignment | None = None
    specs: dict[str, KVCacheSpec] = field(default_factory=dict)  # final per-layer specs
    # the per-layer specs handed to grouping: after the config-time Mamba alignment, before the
    # HMA-off conversion (what vLLM's get_kv_cache_groups receives; kvplan.verify sends them to vLLM)
    engine_specs: dict[str, KVCacheSpec] = field(default_factory=dict)
    decision: GroupingDecision | None = None
    groups: list[Group] = field(default_factory=list)
    workers: list[sizing.WorkerConfig] = field(default_factory=list)
    max_model_len: int = 0
    original_max_model_len: int = 0
    workload: Workload | None = None
    blocks_per_request: list[int] = field(default_factory=list)
    needed_bytes: int = 0
    checked_available_bytes: int = 0
    num_blocks: int = 0
    max_concurrency: float = 0.0
    kv_cache_size_tokens: int = 0
    logs: list[str] = field(default_factory=list)
    failure: Failure | None = None
    runner: runner.RunnerChoice | None = None
    # speculative_config.parallel_drafting as the release holds it, and a note when a P-EAGLE
    # head drafts sequentially (runner.parallel_drafting_note)
    parallel_drafting: bool = False
    parallel_drafting_note: str | None = None
    # the host tier of a KV offloading connector (kvplan.engines.vllm.offload), None without one
    host_tier: HostTier | None = None
    # per worker, at the admission check (kept when it fails): groups, pool, need, estimate
    worker_checks: list[sizing.WorkerCheck] = field(default_factory=list)
    steady: sizing.SteadyState | None = None
    ranks: tuple[tuple[str, ...], ...] = ()  # layer names per pipeline stage (() = one worker)

    # What the results read, computed once by ``settle`` when the simulation ends (plain values:
    # a reader of a result never runs engine code to learn them).
    starts: bool = field(default=False, init=False)
    group_size: int = field(default=0, init=False)
    num_groups: int = field(default=0, init=False)
    page_size_bytes: int = field(default=0, init=False)
    num_padding_layers: int = field(default=0, init=False)
    # vLLM's own figure: the largest "may waste at most P%" over the padded buckets
    padding_waste_pct: float = field(default=0.0, init=False)
    # tokens of max-length requests that fit: max_concurrency · max_model_len (both eras)
    kv_tokens: int = field(default=0, init=False)
    # kvplan's figure: requests of max_model_len the pool holds once past prefill
    steady_state_concurrency: float = field(default=0.0, init=False)
    failing_worker: sizing.WorkerCheck | None = field(default=None, init=False)
    # one max-length request over the global groups (every rank's layers): blocks per group and their
    # bytes (None when the engine stopped before the groups or the workload)
    request_blocks: tuple[int, ...] = field(default=(), init=False)
    request_bytes: int | None = field(default=None, init=False)

    def drafter_groups(self) -> list[int]:
        names = {ls.name for ls in self.layers if ls.source == "drafter"}
        return sorted({i for i, g in enumerate(self.groups) for n in g.layer_names if n in names})


def _workload(era: Era, o: SimulateOptions, max_model_len: int, mamba: MambaAlignment | None, batches: int) -> Workload:
    return Workload(
        max_model_len=max_model_len,
        max_in_flight_tokens=batches * o.max_num_batched_tokens,
        mamba_cache_mode=mamba.mamba_cache_mode if mamba else (o.mamba_cache_mode or "none"),
        max_num_encoder_input_tokens=o.max_num_batched_tokens,
        cp_world_size=o.decode_context_parallel_size,
        mamba_legacy_reservation=era.mamba_legacy_reservation,
    )


def simulate(
    layers: tuple[LayerSpec, ...],
    ranks: tuple[tuple[str, ...], ...],
    facts: ModelFacts,
    era: Era,
    options: SimulateOptions,
) -> Plan:
    plan = Plan(era=era, options=options, facts=facts, layers=layers, ranks=tuple(ranks or ()))
    try:
        _run(plan, ranks)
    except EngineFailure as e:
        plan.failure = Failure(e.stage, e.error_type, e.message)
    return settle(plan)


def settle(plan: Plan) -> Plan:
    """Fill the figures the results read from what the simulation left in ``plan``."""
    d = plan.decision
    plan.starts = plan.failure is None
    plan.group_size = d.group_size if d else 0
    plan.num_groups = len(plan.groups)
    plan.page_size_bytes = plan.groups[0].spec.page_size_bytes if plan.groups else 0
    plan.num_padding_layers = d.num_padding_layers if d else 0
    plan.padding_waste_pct = max((pad / n * 100 for pad, n in d.padding if pad), default=0.0) if d else 0.0
    plan.kv_tokens = int(plan.max_concurrency * plan.max_model_len)
    plan.steady_state_concurrency = plan.steady.concurrency if plan.steady else 0.0
    plan.failing_worker = next((c for c in plan.worker_checks if not c.fits), None)
    if plan.groups and plan.workload is not None:
        try:
            plan.request_blocks = tuple(sizing.blocks_per_request(plan.groups, plan.workload))
            plan.request_bytes = sizing.bytes_per_block(plan.groups) * sum(plan.request_blocks)
        except AssertionError:  # a spec's own assert (DCP with a sliding window): the plan's failure says so
            pass
    return plan


def failed_before_kv_cache(plan: Plan, stage: str, error_type: str, message: str) -> Plan:
    """``plan`` for a deployment that fails before the KV cache (loading the weights or in the
    profile run): no KV cache, no block count and no KV log line."""
    plan.failure = Failure(stage, error_type, message)
    plan.num_blocks, plan.max_concurrency, plan.kv_cache_size_tokens, plan.steady = 0, 0.0, 0, None
    plan.logs = []
    return settle(plan)


def _run(plan: Plan, ranks: tuple[tuple[str, ...], ...]) -> None:
    """vLLM's start-up for ``plan``, in vLLM's order: the length and the config checks, the hybrid manager and the
    model runner, the specs as the engine sees them, the admission of each worker, the blocks, the capacity (and its
    log lines), the drafter's group check and the offloading connector's host tier."""
    original = _config_length(plan)
    specs, packed = _engine_specs(plan, ranks, original)
    era, o, logs = plan.era, plan.options, plan.logs
    worker_names = [set(r) for r in ranks] if ranks else [set(specs)]
    assert plan.runner is not None and plan.hma is not None  # decided by _engine_specs
    batches = runner.max_concurrent_batches(era, plan.runner, len(worker_names))
    plan.workload = _workload(era, o, original, plan.mamba, batches)
    if era.admission == "per_layer":
        # 0.11 checked every layer's own reservation before grouping (and before HMA-off conversion).
        for names in worker_names:
            need = sizing.check_per_layer_memory(
                era, plan.workload, [specs[n] for n in specs if n in names], o.kv_cache_memory_bytes
            )
            if not plan.needed_bytes:
                plan.needed_bytes, plan.checked_available_bytes = need, o.kv_cache_memory_bytes
    groups, plan.decision, specs = grouping.get_kv_cache_groups(
        specs,
        hma_disabled=plan.hma.disabled,
        threshold=era.threshold,
        page_mismatch=era.page_mismatch,
        mamba_page_pad=era.mamba_page_pad,
        logs=logs,
        rule=era.grouping,
        drafter_layers=frozenset(ls.name for ls in plan.layers if ls.source == "drafter"),
        packed=packed,
    )
    plan.specs, plan.groups = specs, groups

    projected = [sizing.project_groups(groups, names) for names in worker_names]
    available = _worker_budgets(plan, projected)
    worker_specs = [[specs[n] for n in specs if n in names] for names in worker_names]
    if o.decode_context_parallel_size > 1 and any(isinstance(sp, SlidingWindowSpec) for sp in specs.values()):
        # SlidingWindowSpec.max_memory_usage_bytes asserts it is not DCP-sharded (0.18.0, 0.33.0)
        raise EngineFailure("AssertionError", runner.DCP_SLIDING, "admission")
    _admit(plan, projected, worker_specs, available)

    override = None if era.override_before_check else o.num_gpu_blocks_override
    workers = [
        sizing.kv_cache_config_from_groups(i, pg, avail, override, era, logs)
        for i, (pg, avail) in enumerate(zip(projected, available))
    ]
    own = {w.rank: w.num_blocks for w in workers}  # before the minimum (≤ 0.18 applies the override here)
    plan.worker_checks = [replace(c, num_blocks=own[c.rank]) for c in plan.worker_checks]
    plan.workers = sizing.equalise(workers)
    plan.num_blocks = plan.workers[0].num_blocks if plan.workers else 0
    _capacity(plan)
    _after_the_cache(plan, ranks)


def _config_length(plan: Plan) -> int:
    """The length vLLM's config holds (the given one, else the model's; auto-fit runs later), checked, and the
    config-stage checks before the KV cache (``prechecks.check_config``)."""
    era, o, facts = plan.era, plan.options, plan.facts
    if o.max_model_len == -1 and not era.auto_fit:
        raise OptionError("--max-model-len auto needs vLLM PR #29431 or later (policy vllm-1.25 or newer)")
    original = facts.max_model_len if o.max_model_len in (None, -1) else o.max_model_len
    if original is None or original <= 0:
        raise OptionError("--max-model-len must be a positive number of tokens, or 'auto'")
    if original > MAX_TOKENS:  # only a config's own length can get here: the flag has this maximum
        raise OptionError(f"the model's max_model_len {original:,} (from its config) is above kvplan's plausibility "
                          f"bound of {MAX_TOKENS:,} tokens; pass --max-model-len")
    plan.original_max_model_len = plan.max_model_len = original
    plan.parallel_drafting = runner.effective_parallel_drafting(era, facts.speculative_method, o.parallel_drafting)
    plan.parallel_drafting_note = runner.parallel_drafting_note(era, facts.speculative_method, o.parallel_drafting,
                                                                facts.drafter_ptd_token)
    prechecks.check_config(facts, o, era, plan.logs, original)  # vLLM's checks before the KV cache
    return original


def _engine_specs(plan: Plan, ranks: tuple[tuple[str, ...], ...], original: int) -> tuple[dict, bool]:
    """The hybrid manager and the model runner decided, and the per-layer specs as the engine holds them before
    grouping (V head sizes by the era, the block size's log lines, the Mamba alignment); whether the groups are
    packed (block-outermost backends)."""
    era, o, facts, logs = plan.era, plan.options, plan.facts, plan.logs
    plan.hma = hybrid.decide_hma(
        era,
        user_disable=o.disable_hybrid_kv_cache_manager,
        attention_chunk_size=facts.attention_chunk_size,
        speculative_method=facts.speculative_method,
        allow_chunked_local_with_hma=o.allow_chunked_local_with_hma,
        kv_transfer_config=o.kv_transfer_config,
        logs=logs,
        kv_events=o.kv_events,
    )
    pp = len(ranks) if ranks else 1
    plan.runner = runner.resolve_model_runner(
        era, o.use_v2_model_runner, o.async_scheduling, pp=pp, speculative_method=facts.speculative_method,
        parallel_drafting=plan.parallel_drafting, logs=logs, model=facts.traits,
    )
    specs = {ls.name: ls.spec for ls in plan.layers}
    packed = era.packed_kv_groups and grouping.block_outermost(specs)
    if era.kv_buffer_layout == "lbnhc":
        # after the config-time warnings above; BLHNC where a backend declares only block-outermost layouts
        logs.append(LAYOUT_LOG_BLHNC if packed else LAYOUT_LOG_033)
    if not (era.window_head_size_v and era.full_head_size_v):
        memo: dict[int, KVCacheSpec] = {}
        specs = {n: memo.setdefault(id(s), _without_head_size_v(s, era)) for n, s in specs.items()}
    decision = facts.block_size_decision
    if decision is not None:
        logs.extend(decision.log_lines)  # update_block_size_for_backend, phase 1 (before the hybrid alignment)
    specs, plan.mamba = hybrid.align_hybrid_mamba(
        specs, era,
        kernel_block_size=decision.kernel_block_size if decision is not None else None,
        enable_prefix_caching=o.enable_prefix_caching,
        mamba_cache_mode=o.mamba_cache_mode,
        mamba_block_size=o.mamba_block_size,
        mamba_chunk_size=facts.mamba_chunk_size,
        max_model_len=original,
        logs=logs,
    )
    plan.engine_specs = dict(specs)
    return specs, packed


def _worker_budgets(plan: Plan, projected: list) -> list[int]:
    """Each worker's KV bytes: its own (pipeline stages profile their own memory) or the one budget; where the
    era applies ``--num-gpu-blocks-override`` before the admission check, the override's blocks."""
    o, logs = plan.options, plan.logs
    per_worker = o.kv_cache_memory_bytes_per_worker
    if per_worker is not None and len(per_worker) == len(projected):
        available = list(per_worker)
    else:
        available = [o.kv_cache_memory_bytes for _ in projected]
    if o.num_gpu_blocks_override is not None and plan.era.override_before_check:
        for i, pg in enumerate(projected):
            if pg:
                bpb = sizing.bytes_per_block(pg)
                logs.append(
                    f"Overriding num_gpu_blocks={available[i] // bpb} with "
                    f"num_gpu_blocks_override={o.num_gpu_blocks_override}"
                )
                available[i] = o.num_gpu_blocks_override * bpb
    return available


def _admit(plan: Plan, projected: list, worker_specs: list, available: list[int]) -> None:
    """Auto-fit (``--max-model-len auto``) and the admission check, on the scope the era checks."""
    era = plan.era
    # 0.14-0.16 ran auto-fit and the admission check once, on the global groups with the
    # smallest worker budget; 0.17 projects the groups onto each worker first.
    if era.admission_scope == "global" and len(projected) > 1:
        checked_groups, checked_specs, checked_avail = [plan.groups], [list(plan.specs.values())], [min(available)]
    else:
        checked_groups, checked_specs, checked_avail = projected, worker_specs, available
    if plan.options.max_model_len == -1:
        _auto_fit(plan, checked_groups, checked_specs, checked_avail)

    if era.admission != "per_layer":
        _record_checks(plan, checked_groups, checked_specs, checked_avail)
        workload = plan.workload
        assert workload is not None  # set by _run before the groups
        for pg, ws, avail in zip(checked_groups, checked_specs, checked_avail):
            if pg:
                sizing.check_enough_memory(pg, era, workload, ws, avail)


def _capacity(plan: Plan) -> None:
    """The capacity of the first worker with groups (blocks per request, concurrency, KV tokens), the scheduler's
    steady state, and the capacity log lines as the era writes them."""
    era, logs, dcp = plan.era, plan.logs, plan.options.decode_context_parallel_size
    reported = next((w for w in plan.workers if w.groups), None)
    workload = plan.workload
    if reported is None or workload is None:
        return
    rg = list(reported.groups)
    plan.blocks_per_request = sizing.blocks_per_request(rg, workload)
    plan.max_concurrency = sizing.max_concurrency(reported.num_blocks, rg, workload)
    plan.kv_cache_size_tokens = sizing.kv_cache_size_tokens(
        era, reported.num_blocks, rg, plan.max_concurrency, workload
    )
    # the scheduler's view: one pool of num_blocks, every global group draws from it
    plan.steady = sizing.steady_state(plan.num_blocks, plan.groups, workload,
                                      1 + plan.facts.num_speculative_tokens)
    if _logs_dcp(era) and dcp > 1:
        logs.append(_dcp_log(dcp))  # _report_kv_cache_config, plain info: once per worker
    size_line = f"GPU KV cache size: {plan.kv_cache_size_tokens:,} tokens"
    conc_line = f"Maximum concurrency for {plan.max_model_len:,} tokens per request: {plan.max_concurrency:.2f}x"
    if era.capacity_log == "one_line":
        logs.append(f"{size_line}, {conc_line}")  # one line from update_kv_cache_capacity
    else:
        logs.append(size_line)
        logs.append(conc_line)
    if _logs_dcp(era) and dcp > 1:
        logs.extend(_dcp_log(dcp) for w in plan.workers if w.groups and w is not reported)
    if era.capacity_log in ("per_worker", "per_worker_both"):
        # 0.11 logged the concurrency line with plain info: once per worker that has groups
        # (up to 0.11.0 the size line too)
        for w in plan.workers:
            if w.groups and w is not reported:
                rg_w = list(w.groups)
                c = sizing.max_concurrency(w.num_blocks, rg_w, workload)
                if era.capacity_log == "per_worker_both":
                    tokens = sizing.kv_cache_size_tokens(era, w.num_blocks, rg_w, c, workload)
                    logs.append(f"GPU KV cache size: {tokens:,} tokens")
                logs.append(f"Maximum concurrency for {plan.max_model_len:,} tokens per request: {c:.2f}x")


def _after_the_cache(plan: Plan, ranks: tuple[tuple[str, ...], ...]) -> None:
    """What vLLM checks and builds once the KV cache is sized: the drafter's single group, the offloading
    connector's host tier."""
    era, o, facts = plan.era, plan.options, plan.facts
    drafter = [ls.name for ls in plan.layers if ls.source == "drafter"]
    if era.drafter_single_group_check and facts.speculative_method is not None and len(plan.drafter_groups()) != 1:
        if drafter or facts.speculative_method in hybrid.EAGLE_METHODS:
            raise EngineFailure("AssertionError", wording(era).drafter_split, "drafter")
    if o.kv_transfer_config and plan.workers:
        # the connector is built after the KV cache is sized, from the scheduler's config (the global
        # groups) and the first worker's buffer
        w0 = plan.workers[0]
        plan.host_tier = offload.host_tier(
            era, o.kv_transfer_config, backend=o.kv_offloading_backend, hma_on=not (plan.hma and plan.hma.disabled),
            groups=plan.groups, num_blocks=w0.num_blocks, worker_kv_bytes=sum(t.size_bytes for t in w0.tensors),
            max_model_len=plan.max_model_len, gpu_kv_tokens=int(plan.max_concurrency * plan.max_model_len),
            tensor_parallel_size=o.tensor_parallel_size, pipeline_parallel_size=max(len(ranks), 1),
            decode_context_parallel_size=o.decode_context_parallel_size,
            mamba_cache_mode=plan.workload.mamba_cache_mode if plan.workload else "none",
            cross_layer_layout=_cross_layer_layout(plan), lmcache=o.lmcache)


def _cross_layer_layout(plan) -> bool:
    """The V1 model runner's one cross-layer KV tensor, which a connector preferring cross-layer blocks gets
    (``use_uniform_kv_cache``, 0.14.1-0.34.0 ``v1/worker/kv_connector_model_runner_mixin.py``): one KV cache
    group of plain (non-MLA) full attention, on the V1 runner (the V2 runner allocates per layer)."""
    if plan.runner is None or plan.runner.runner != "v1" or len(plan.groups) != 1:
        return False
    spec = plan.groups[0].spec
    return type(spec) is FullAttentionSpec


def _dcp_log(dcp: int) -> str:
    return f"Multiplying the GPU KV cache size by the cp_world_size {dcp} (pcp_world_size 1 * dcp_world_size {dcp})."


def _logs_dcp(era: Era) -> bool:
    """Up to 0.18, _report_kv_cache_config logged the DCP multiplication once per worker (read in
    0.18.0; 0.33.0 logs capacity in one line without it)."""
    return era.capacity_log != "one_line"


def _without_head_size_v(spec: KVCacheSpec, era: Era) -> KVCacheSpec:
    """Before PR #40045 (0.20.0) only full-attention specs had a separate V head size: sliding,
    chunked and cross layers cached V at the K head size (page 2·bs·h·hk·b); before 0.14.0
    full-attention specs did not either."""
    windowed = isinstance(spec, (SlidingWindowSpec, ChunkedLocalAttentionSpec, CrossAttentionSpec))
    full = isinstance(spec, FullAttentionSpec) and not isinstance(spec, MLAAttentionSpec)
    if isinstance(spec, AttentionSpec) and ((windowed and not era.window_head_size_v)
                                            or (full and not era.full_head_size_v)):
        if spec.head_size_v != spec.head_size:
            return replace(spec, head_size_v=spec.head_size)
    return spec


def _record_checks(plan: Plan, projected, worker_specs, available) -> None:
    """Every worker's admission numbers, kept on the plan before the check may raise."""
    workload = plan.workload
    assert workload is not None, "the workload is set before the KV-cache checks"
    plan.worker_checks = [
        sizing.worker_check(i, pg, plan.era, workload, ws, avail)
        for i, (pg, ws, avail) in enumerate(zip(projected, worker_specs, available)) if pg
    ]
    if plan.worker_checks:
        plan.blocks_per_request = sizing.blocks_per_request(plan.groups, workload)
        first = next((c for c in plan.worker_checks if not c.fits), plan.worker_checks[0])
        plan.needed_bytes, plan.checked_available_bytes = first.needed_bytes, first.checked_available_bytes


def _auto_fit(plan: Plan, projected, worker_specs, available) -> None:
    era, logs = plan.era, plan.logs
    if not any(projected):
        logs.append("Auto-fit max_model_len: the model has no KV cache (attention-free); nothing to fit.")
        return
    original = plan.original_max_model_len
    workload = plan.workload
    assert workload is not None, "the workload is set before the auto-fit"
    best = original
    # the memory the line names: the limiting worker's, as the fit saw it (0.29+: less the null block;
    # kv_cache_planning.py 0.34.0 lines 1415-1443, limiting_worker_mem; visible at block 64: "3.99 GiB")
    limiting = None
    for pg, ws, avail in zip(projected, worker_specs, available):
        if pg:
            checked = sizing.checked_memory(pg, era, avail)
            worker_max = sizing.estimate_max_model_len(pg, era, workload, ws, checked)
            if limiting is None or worker_max < best:
                limiting = checked if era.null_block_in_check else avail
            best = min(best, worker_max)
    if best <= 0:
        _record_checks(plan, projected, worker_specs, available)
        raise EngineFailure("ValueError", wording(era).autofit_none, "autofit")
    assert limiting is not None, "a worker with KV layers was fitted (the model has a KV cache)"
    avail_gib = round(limiting / GiB, 2)
    logs.extend(autofit_lines(era, original, best, avail_gib))
    if best >= original:
        return
    plan.max_model_len = best
    plan.workload = replace(workload, max_model_len=best)
