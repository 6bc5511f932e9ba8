"""The result records (``kvplan.results.records``) filled from the model's layout and the engine's
plan: the one place a layout, a plan or an era becomes result data. It sits in the use-case layer,
above the model and the engines, so reading their objects runs downhill.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, overload

from kvplan.results.summary import PlanSummary
from kvplan.results.data import bytes_per_token, kind_label, layer_index
from kvplan.results.records import (
    BlockSizeChange, BucketRow, Fix, Grouping, GroupRow, HybridKVCacheManager, InspectBody,
    KindSummaryRow, LayerRow, MambaAlignmentRecord, Memory, ModelRecord, PlanBody, PlanSpeculative, PolicyRecord,
    RankRow, Scheduler, Serving, Speculative, TensorRow, WorkerPadding, WorkerRow, WorkerSummaryRow,
)
from kvplan.specs import MambaSpec, SpecRecord
from kvplan.usecases.envelope import plan_outcome

if TYPE_CHECKING:
    from kvplan.model.layout import ModelInfo
    from kvplan.results.budget import Budget, DeviceBudget
    from kvplan.results.compare import EngineRowRecord
    from kvplan.results.host_tier import DeploymentTotals
    from kvplan.results.sweep import SweepRow


@overload
def model_record(info: None) -> None: ...
@overload
def model_record(info: ModelInfo) -> ModelRecord: ...
@overload
def model_record(info: ModelInfo | None) -> ModelRecord | None: ...


def model_record(info: ModelInfo | None) -> ModelRecord | None:
    """The model layer's ``ModelInfo`` (None for no drafter)."""
    if info is None:
        return None
    src = info.source
    return ModelRecord(src.model_id, src.kind, src.path, src.revision, info.provenance, info.architecture,
                       info.model_type, info.family, info.num_hidden_layers, info.dtype)


def policy_record(era) -> PolicyRecord:
    """An ``Era`` as results show it (its plain fields only are read)."""
    return PolicyRecord(era.name, era.release or None, era.release_note or None, era.warning or None, era.threshold,
                        era.description, tuple(era.releases), era.grouping, era.is_proposal)


def serving_record(serving, layout=None) -> Serving:
    """The serving options as resolved: with a layout, its block size (before any hybrid Mamba alignment)
    and the attention backend the engine's block-size decision picked (--attention-backend or the GPU's)."""
    decision = getattr(layout, "block_size_decision", None)
    return Serving(
        block_size=layout.block_size if layout is not None else serving.block_size,
        attention_backend=decision.attention_backend if decision is not None else serving.attention_backend,
        attention_backend_note=getattr(decision, "note", None),
        kv_cache_dtype=serving.kv_cache_dtype,
        dtype=serving.dtype,
        tensor_parallel_size=serving.tensor_parallel_size,
        pipeline_parallel_size=serving.pipeline_parallel_size,
    )


def speculative_record(layout) -> Speculative:
    return Speculative(layout.speculative_method, layout.num_speculative_tokens)


def layer_row(ls, spec=None) -> LayerRow:
    return LayerRow(ls.index, ls.name, ls.source, SpecRecord.of(spec or ls.spec))


def kind_summary(layers) -> tuple[KindSummaryRow, ...]:
    """Per distinct spec and source: layer count, bytes per token per layer and in total."""
    counts: dict[tuple, int] = {}
    first: dict[tuple, object] = {}
    for ls in layers:
        key = (ls.spec, ls.source)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, ls)
    rows = []
    for key, n in counts.items():
        spec, source = key
        per = bytes_per_token(spec)
        rows.append(KindSummaryRow(
            kind=spec.kind, label=kind_label(spec), source=source, num_layers=n, page_size_bytes=spec.page_size_bytes,
            kv_bytes_per_token=per, state_bytes=spec.page_size_bytes if isinstance(spec, MambaSpec) else None,
            kv_bytes_per_token_total=per * n if per is not None else None))
    return tuple(rows)


def inspect_body(layout, serving) -> InspectBody:
    """``kvplan inspect``'s body for a built layout and the serving options it was built with."""
    layers = layout.layers
    summary = kind_summary(layers)
    return InspectBody(
        model=model_record(layout.target),
        drafter=model_record(layout.drafter),
        speculative=speculative_record(layout),
        serving=serving_record(serving, layout),
        num_layers=len(layers),
        layers=tuple(layer_row(ls) for ls in layers),
        summary=summary,
        kv_bytes_per_token=sum(r.kv_bytes_per_token_total or 0 for r in summary),
        state_bytes_per_request=sum((r.state_bytes or 0) * r.num_layers for r in summary),
        ranks=tuple(RankRow(i, len(names), tuple(layer_index(n) for n in names)) for i, names in enumerate(layout.ranks)),
        kv_sharing_layers=tuple(layout.kv_sharing_layers),
        notes=tuple(layout.notes),
    )


# ----------------------------------------------------------------------------------------- a plan

def plan_ranks(plan) -> list[tuple[str, ...]]:
    """Layer names per worker (one worker without pipeline parallelism)."""
    return list(getattr(plan, "ranks", ()) or ()) or [tuple(ls.name for ls in plan.layers)]


def binding_check(plan):
    """The worker whose numbers the memory section shows: the one that fails the admission
    check, else the one whose own pool is smallest (it sets the engine-wide num_blocks)."""
    checks = plan.worker_checks
    if not checks:
        return None
    return plan.failing_worker or min(checks, key=lambda c: (c.num_blocks, c.rank))


def worker_padding(check, blocks_per_request: list[int], num_blocks: int) -> WorkerPadding:
    """Padding on one worker: each block id of group g holds ``group_size − n_g`` unused
    pages there (``n_g`` = the group's layers on this worker). With the pool full of
    max-length requests, that is the share Σ b_g·(G − n_g) / (G · Σ b_g) of the pool.
    Never negative: G is the largest n_g on the worker."""
    G = check.group_size
    counts = [len(g.layer_names) for g in check.groups]
    pool = check.bytes_per_block * num_blocks
    total = sum(blocks_per_request)
    uniform_type = len(check.groups) == 1 and check.groups[0].spec.kind == "uniform_type"
    slots = sum(max(G - n, 0) for n in counts)
    if uniform_type or not total or not G:
        return WorkerPadding(0, 0, 0.0)
    held = sum(b * max(G - n, 0) for b, n in zip(blocks_per_request, counts))
    waste = pool * held // (G * total)
    return WorkerPadding(slots, waste, waste / pool * 100 if pool else 0.0)


def _tensor_rows(tensors) -> tuple[TensorRow, ...]:
    return tuple(TensorRow(i, t.size_bytes, tuple(t.shared_by)) for i, t in enumerate(tensors))


def worker_rows(plan) -> tuple[WorkerRow | WorkerSummaryRow, ...]:
    """One row per worker (pipeline stage; TP ranks are identical)."""
    configs = {w.rank: w for w in plan.workers}
    ranks = plan_ranks(plan)
    out: list = []
    for c in plan.worker_checks:
        w = configs.get(c.rank)
        allocated = w is not None  # configs exist once the admission check passed (a drafter check fails after)
        num_blocks = w.num_blocks if w is not None else c.num_blocks
        pool = c.bytes_per_block * num_blocks
        names = ranks[c.rank] if c.rank < len(ranks) else ()
        out.append(WorkerRow(
            rank=c.rank,
            available_bytes=c.available_bytes,
            group_size=c.group_size,
            num_layers=sum(len(g.layer_names) for g in c.groups),
            layers=tuple(layer_index(n) for n in names),
            group_layer_counts=tuple(len(g.layer_names) for g in c.groups),
            bytes_per_block=c.bytes_per_block,
            own_num_blocks=c.num_blocks,
            num_blocks=num_blocks,
            allocated=allocated,
            allocated_bytes=pool if allocated else 0,
            unused_bytes=max(c.available_bytes - pool, 0) if allocated else c.available_bytes,
            needed_bytes=c.needed_bytes,
            checked_available_bytes=c.checked_available_bytes,
            fits=c.fits,
            estimated_max_model_len=c.estimated_max_model_len,
            # at full load of the allocated pool (nothing is allocated when the engine fails)
            padding=worker_padding(c, plan.blocks_per_request, num_blocks if allocated else 0),
            num_tensors=len(w.tensors) if w else 0,
            tensors=_tensor_rows(w.tensors) if w is not None else (),
        ))
    if not out:  # attention-free, or an era that checks before grouping (0.11)
        out = [WorkerSummaryRow(w.rank, w.available_bytes, w.group_size, sum(len(g.layer_names) for g in w.groups),
                                w.num_blocks, len(w.tensors)) for w in plan.workers]
    return tuple(out)


def _blocks_meaning(plan) -> int:
    """num_blocks // num_groups · min block_size (vLLM ≤ 0.20): pool size in tokens, padding included."""
    if not plan.groups or not plan.num_blocks:
        return 0
    tokens = plan.num_blocks // len(plan.groups) * min(g.spec.block_size for g in plan.groups)
    return tokens * max(plan.options.decode_context_parallel_size, 1)


def _group_rows(plan) -> tuple[GroupRow, ...]:
    drafter_names = {ls.name for ls in plan.layers if ls.source == "drafter"}
    G = plan.group_size  # the global decision: every group has group_size slots, short ones are padded
    bpr = plan.blocks_per_request or [None] * len(plan.groups)
    check = binding_check(plan)
    ranks = [set(r) for r in plan_ranks(plan)]
    rows = []
    for i, (g, blocks) in enumerate(zip(plan.groups, bpr)):
        rows.append(GroupRow(
            index=i,
            kind=g.spec.kind,
            label=kind_label(g.spec),
            block_size=g.spec.block_size,
            page_size_bytes=g.spec.page_size_bytes,
            num_layers=len(g.layer_names),
            padding_slots=max(G - len(g.layer_names), 0) if g.spec.kind != "uniform_type" else 0,
            layers=tuple(layer_index(n) for n in g.layer_names),
            layer_names=tuple(g.layer_names),
            has_drafter_layers=any(n in drafter_names for n in g.layer_names),
            drafter_layers=tuple(layer_index(n) for n in g.layer_names if n in drafter_names),
            blocks_per_request=blocks,
            needed_bytes=blocks * check.bytes_per_block if (blocks is not None and check) else None,
            steady_blocks_per_request=plan.steady.blocks_per_request[i] if plan.steady else None,
            num_layers_per_worker=(tuple(sum(1 for n in g.layer_names if n in r) for r in ranks)
                                   if len(ranks) > 1 else None),
        ))
    return tuple(rows)


def _scheduler(plan) -> Scheduler:
    o = plan.options
    return Scheduler(
        max_model_len=plan.max_model_len,
        original_max_model_len=plan.original_max_model_len,
        max_num_batched_tokens=o.max_num_batched_tokens,
        max_in_flight_tokens=plan.workload.max_in_flight_tokens if plan.workload else None,
        max_num_seqs=o.max_num_seqs,
        async_scheduling=plan.runner.async_scheduling if plan.runner else o.async_scheduling,
        model_runner=plan.runner.runner if plan.runner else None,
        model_runner_reason=plan.runner.reason if plan.runner else None,
        enable_prefix_caching=o.enable_prefix_caching,
        mamba_cache_mode=plan.workload.mamba_cache_mode if plan.workload else o.mamba_cache_mode,
        num_gpu_blocks_override=o.num_gpu_blocks_override,
        decode_context_parallel_size=o.decode_context_parallel_size,
    )


def _mamba(m) -> MambaAlignmentRecord | None:
    if m is None:
        return None
    return MambaAlignmentRecord(m.mamba_cache_mode, m.attention_bytes_per_token, m.mamba_page_bytes,
                                m.kernel_alignment_tokens, m.attention_block_size, m.mamba_block_size,
                                m.attention_page_bytes, m.padded_pct)


def _grouping(plan) -> Grouping | None:
    d = plan.decision
    if d is None:
        return None
    buckets = tuple(
        BucketRow(i, SpecRecord.of(b.spec), kind_label(b.spec), len(b.layer_names),
                  d.padding[i][0] if i < len(d.padding) else 0, tuple(layer_index(n) for n in b.layer_names))
        for i, b in enumerate(d.buckets)
    ) if d.path == "uniform_page" else ()
    return Grouping(
        path=d.path, min_count=d.min_count, max_count=d.max_count, threshold=d.threshold, group_size=d.group_size,
        num_groups=plan.num_groups, num_padding_layers=d.num_padding_layers,
        padding_waste_pct=plan.padding_waste_pct,
        block_size_changes=tuple(BlockSizeChange(k, a, b) for k, a, b in d.block_size_changes),
        buckets=buckets,
    )


def _memory(plan, workers: tuple) -> Memory:
    o = plan.options
    w0 = plan.workers[0] if plan.workers else None
    check = binding_check(plan)
    shown = next((w for w in workers if check is not None and w.rank == check.rank), None)
    pool = shown.allocated_bytes if shown else (w0.bytes_per_block * w0.num_blocks if w0 else 0)
    waste = shown.padding.padding_waste_bytes if shown else 0
    steady = plan.steady
    return Memory(
        available_bytes=o.kv_cache_memory_bytes,
        checked_available_bytes=plan.checked_available_bytes,
        needed_bytes=plan.needed_bytes,
        page_size_bytes=plan.page_size_bytes,
        group_size=plan.group_size,
        binding_rank=check.rank if check else 0,
        slots_per_block=check.group_size if check else (w0.group_size if w0 else 0),
        bytes_per_block=check.bytes_per_block if check else (w0.bytes_per_block if w0 else 0),
        num_blocks=plan.num_blocks,
        pool_num_blocks=check.num_blocks if check else plan.num_blocks,
        allocated_bytes=pool,
        blocks_per_request=sum(plan.blocks_per_request),
        bytes_per_request=(check.bytes_per_block * sum(plan.blocks_per_request)) if check else 0,
        estimated_max_model_len=check.estimated_max_model_len if check else None,
        kv_tokens=plan.kv_tokens,
        kv_cache_size_tokens=plan.kv_cache_size_tokens,
        kv_cache_size_tokens_blocks_meaning=_blocks_meaning(plan),
        kv_cache_size_tokens_concurrency_meaning=int(plan.max_concurrency * plan.max_model_len),
        max_concurrency=plan.max_concurrency,
        steady_state_concurrency=plan.steady_state_concurrency,
        effective_concurrency=min(plan.max_concurrency, o.max_num_seqs or plan.max_concurrency),
        steady_blocks_per_request=sum(steady.blocks_per_request) if steady else 0,
        prefill_reserve_blocks=steady.prefill_reserve_blocks if steady else 0,
        padding_waste_bytes=waste,
        padding_waste_pct_of_pool=waste / pool * 100 if pool else 0.0,
    )


def plan_body(layout, plan, serving, explain: list[str] | None = None, fixes: list[Fix] | None = None,
              budget: Budget | DeviceBudget | None = None, *, data_parallel_size: int = 1) -> PlanBody:
    """One deployment's plan as results show it (``serving``: the options the layout was built with)."""
    w0 = plan.workers[0] if plan.workers else None
    workers = worker_rows(plan)
    memory = _memory(plan, workers)
    return PlanBody(
        engine="vllm",
        policy=policy_record(plan.era),
        model=model_record(layout.target),
        drafter=model_record(layout.drafter),
        speculative=PlanSpeculative(layout.speculative_method, layout.num_speculative_tokens, plan.parallel_drafting,
                                    plan.options.parallel_drafting, plan.parallel_drafting_note),
        serving=serving_record(serving, layout),
        scheduler=_scheduler(plan),
        hybrid_kv_cache_manager=HybridKVCacheManager((not plan.hma.disabled) if plan.hma else None,
                                                     tuple(plan.hma.reasons) if plan.hma else ()),
        mamba_alignment=_mamba(plan.mamba),
        grouping=_grouping(plan),
        groups=_group_rows(plan),
        tensors=_tensor_rows(w0.tensors) if w0 else (),
        memory=memory,
        workers=workers,
        logs=tuple(plan.logs),
        explain=tuple(explain or ()),
        fixes=tuple(fixes or ()),
        budget=budget,
        host_tier=plan.host_tier,
        totals=deployment_totals(plan, memory, tensor_parallel_size=serving.tensor_parallel_size,
                                 data_parallel_size=data_parallel_size),
    )


def replicated(body: PlanBody, replicas: int) -> DeploymentTotals | None:
    """A plan's totals when a manifest runs ``replicas`` copies of it: each copy's engines again (None when the
    engine does not start)."""
    from kvplan.results.host_tier import DeploymentTotals

    m = body.memory
    if m.num_blocks <= 0:  # no pool sized: nothing to add up
        return body.totals
    t = body.totals or DeploymentTotals(
        data_parallel_size=1, engines=1, gpus_per_engine=body.serving.tensor_parallel_size * max(len(body.workers), 1),
        gpus=body.serving.tensor_parallel_size * max(len(body.workers), 1), kv_tokens=m.kv_tokens,
        max_concurrency=round(m.max_concurrency, 2), effective_concurrency=round(m.effective_concurrency, 2),
        host_memory_bytes=body.host_tier.memory_bytes if body.host_tier else None,
        host_kv_tokens=(body.host_tier.cpu_kv_cache_size_tokens or 0) if body.host_tier and body.host_tier.sized
        else None)
    return replace(t, replicas=replicas, engines=t.engines * replicas, gpus=t.gpus * replicas,
                   kv_tokens=t.kv_tokens * replicas, max_concurrency=round(t.max_concurrency * replicas, 2),
                   effective_concurrency=round(t.effective_concurrency * replicas, 2),
                   host_memory_bytes=t.host_memory_bytes * replicas if t.host_memory_bytes is not None else None,
                   host_kv_tokens=t.host_kv_tokens * replicas if t.host_kv_tokens is not None else None)


def deployment_totals(plan, memory: Memory, *, tensor_parallel_size: int,
                      data_parallel_size: int) -> DeploymentTotals | None:
    """One engine's figures times its data-parallel ranks (None on one GPU, or when no pool was sized)."""
    dp = data_parallel_size
    per_engine = tensor_parallel_size * max(len(plan.workers), 1)
    if dp * per_engine <= 1 or not plan.starts:
        return None
    from kvplan.results.host_tier import DeploymentTotals  # here: one GPU (most runs) needs no totals

    h = plan.host_tier
    sized = h is not None and h.sized
    return DeploymentTotals(
        data_parallel_size=dp, engines=dp, gpus_per_engine=per_engine, gpus=dp * per_engine,
        kv_tokens=memory.kv_tokens * dp, max_concurrency=round(memory.max_concurrency * dp, 2),
        effective_concurrency=round(memory.effective_concurrency * dp, 2),
        host_memory_bytes=h.memory_bytes * dp if sized and h.memory_bytes is not None else None,
        host_kv_tokens=(h.cpu_kv_cache_size_tokens or 0) * dp if sized else None)



def sweep_row(threshold: float, plan) -> SweepRow:
    from kvplan.results.sweep import SweepRow  # another command's record: not loaded by a simulation

    s = PlanSummary.of(plan)
    return SweepRow(round(threshold, 6), s.group_size, s.num_groups, s.num_padding_layers, s.padding_waste_pct,
                    s.num_blocks, s.kv_tokens, s.max_concurrency, plan_outcome(plan))


def engine_row(row) -> EngineRowRecord:
    """One row of ``kvplan compare`` (an ``EngineRow``: each engine's ``*_row``, e.g.
    ``kvplan.engines.vllm.compare.vllm_row``)."""
    from kvplan.results.compare import EngineRowRecord  # another command's record: not loaded by a simulation

    return EngineRowRecord(
        engine=row.engine, name=row.name, is_proposal=row.is_proposal, outcome=row.outcome, kv_tokens=row.kv_tokens,
        max_concurrency=row.max_concurrency, steady_state_concurrency=row.steady_concurrency,
        reserved_per_request_bytes=row.reserved_per_request_bytes, waste_per_request_bytes=row.waste_per_request_bytes,
        waste_pct=row.waste_pct, knobs=row.knobs, details=row.details, notes=tuple(row.notes))


# ------------------------------------------------------------------------------------- the envelope
