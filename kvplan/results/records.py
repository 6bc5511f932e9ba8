"""The result records of a layout and a vLLM plan: frozen dataclasses whose fields are the keys
``--format json`` prints, in order (``kvplan.results.to_data`` serialises them; no record writes
its own dict).

Field names are vLLM's vocabulary (block_size, page_size_bytes, num_blocks, group_size, shared_by,
sliding_window, attention_chunk_size, max_concurrency); sizes are integer bytes named ``*_bytes``,
token counts ``*_tokens`` or vLLM's own length names. The annotations are the JSON types:
``scripts/make_schemas.py`` reads them for docs/schema/ (``X | None`` may be null, ``tuple[X, ...]``
is a list, a record is an object, ``dict`` an object of the layer that made it).

Only types live here (the core layer): the use cases fill them from the model's layout and the
engine's plan (``kvplan.usecases.records``), so nothing here reads an object of a layer above.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kvplan.results import FLATTEN, OMIT_NONE, Outcome, Record
from kvplan.results.budget import Budget, DeviceBudget, GivenBudget
from kvplan.results.host_tier import DeploymentTotals, HostTier
from kvplan.specs import SpecRecord

if TYPE_CHECKING:  # named by other commands' bodies only: loaded by annotation_types(), not on every run
    from kvplan.results.advice import Advice
    from kvplan.results.allocation import Allocation
    from kvplan.results.engines import Knobs
    from kvplan.results.fit import ContextAnswer, GoalAnswer, GpuTable, MaxModelLenAnswer, UtilizationAnswer
    from kvplan.results.recovered import Recovered


def annotation_types() -> None:
    """Make every type the records here name resolvable (``typing.get_type_hints``: the JSON Schemas,
    the tests). compare's advice and rows, fit's answers, explain-log's recovered facts and --allocate's
    report are named in annotations only, so a simulation's start-up does not import their modules."""
    from kvplan.results.advice import Advice
    from kvplan.results.allocation import Allocation
    from kvplan.results.engines import Knobs
    from kvplan.results.fit import ContextAnswer, GoalAnswer, GpuTable, MaxModelLenAnswer, UtilizationAnswer
    from kvplan.results.recovered import Recovered

    globals().update(Advice=Advice, Allocation=Allocation, Knobs=Knobs, ContextAnswer=ContextAnswer,
                     GpuTable=GpuTable, GoalAnswer=GoalAnswer, MaxModelLenAnswer=MaxModelLenAnswer, UtilizationAnswer=UtilizationAnswer,
                     Recovered=Recovered)


@dataclass(frozen=True)
class PolicyRecord:
    """An era as results show it: the one serialisation of ``Era`` (a plan's ``policy``; the
    envelope's ``inputs.policy`` is its ``PolicyInputs`` cut, ``kvplan.results.envelope``)."""

    name: str
    vllm_release: str | None  # the release asked for (vllm==X) or installed
    release_note: str | None  # "installed", "unchecked"
    warning: str | None
    threshold: float | None
    description: str
    vllm_releases: tuple[str, ...]
    grouping: str
    is_proposal: bool


@dataclass(frozen=True)
class ModelRecord:
    """A model as results show it (the model layer's ``ModelInfo``)."""

    id: str
    source: str  # catalog, local, hf_cache, download
    path: str | None
    revision: str | None
    provenance: str | None  # "genuine" / "reconstructed" for the bundled catalog
    architecture: str | None
    model_type: str | None
    family: str | None
    num_hidden_layers: int | None
    dtype: str | None


@dataclass(frozen=True)
class Speculative:
    method: str | None
    num_speculative_tokens: int | None


@dataclass(frozen=True)
class PlanSpeculative:
    method: str | None
    num_speculative_tokens: int | None
    # speculative_config.parallel_drafting as the release holds it (given or its default)
    parallel_drafting: bool | None
    parallel_drafting_given: bool | None
    note: str | None


@dataclass(frozen=True)
class Serving:
    """The serving options as resolved: with a layout, its block size (before any hybrid Mamba
    alignment) and the attention backend the engine's block-size decision picked."""

    block_size: int | None
    attention_backend: str | None
    attention_backend_note: str | None  # what the backend choice assumed (no --gpu: an H100)
    kv_cache_dtype: str
    dtype: str
    tensor_parallel_size: int
    pipeline_parallel_size: int


@dataclass(frozen=True)
class LayerRow:
    index: int
    name: str
    source: str  # target, drafter
    spec: SpecRecord = field(metadata=FLATTEN)


@dataclass(frozen=True)
class KindSummaryRow:
    """One distinct spec and source: its layers, bytes per token per layer and in total."""

    kind: str
    label: str
    source: str
    num_layers: int
    page_size_bytes: int
    kv_bytes_per_token: int | None  # None for state layers (they do not grow)
    state_bytes: int | None
    kv_bytes_per_token_total: int | None


@dataclass(frozen=True)
class RankRow:
    rank: int
    num_layers: int
    layers: tuple[str, ...]


@dataclass(frozen=True)
class InspectBody:
    """``kvplan inspect``: the per-layer KV specs vLLM would register."""

    model: ModelRecord
    drafter: ModelRecord | None
    speculative: Speculative
    serving: Serving
    num_layers: int
    layers: tuple[LayerRow, ...]
    summary: tuple[KindSummaryRow, ...]
    kv_bytes_per_token: int
    state_bytes_per_request: int
    ranks: tuple[RankRow, ...]
    kv_sharing_layers: tuple[str, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Scheduler:
    max_model_len: int
    original_max_model_len: int
    max_num_batched_tokens: int
    max_in_flight_tokens: int | None
    max_num_seqs: int
    async_scheduling: bool | None  # None where the engine stopped before deciding
    model_runner: str | None
    model_runner_reason: str | None
    enable_prefix_caching: bool | None
    mamba_cache_mode: str | None
    num_gpu_blocks_override: int | None
    decode_context_parallel_size: int


@dataclass(frozen=True)
class HybridKVCacheManager:
    enabled: bool | None
    reasons_disabled: tuple[str, ...]


@dataclass(frozen=True)
class MambaAlignmentRecord:
    mamba_cache_mode: str
    attention_bytes_per_token: int
    mamba_page_bytes: int
    kernel_alignment_tokens: int
    attention_block_size: int
    mamba_block_size: int
    attention_page_bytes: int
    mamba_padding_pct: float


@dataclass(frozen=True)
class BlockSizeChange:
    kind: str
    from_block_size: int
    to_block_size: int


@dataclass(frozen=True)
class BucketRow:
    index: int
    spec: SpecRecord = field(metadata=FLATTEN)
    label: str = ""
    num_layers: int = 0
    padding_layers: int = 0
    layers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grouping:
    path: str
    min_count: int
    max_count: int
    threshold: float | None
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float
    block_size_changes: tuple[BlockSizeChange, ...]
    buckets: tuple[BucketRow, ...]  # the uniform-page path's buckets (empty on the others)


@dataclass(frozen=True)
class GroupRow:
    index: int
    kind: str
    label: str
    block_size: int
    page_size_bytes: int
    num_layers: int
    padding_slots: int
    layers: tuple[str, ...]
    layer_names: tuple[str, ...]
    has_drafter_layers: bool
    drafter_layers: tuple[str, ...]
    blocks_per_request: int | None
    # one max-length request's blocks in this group, priced at the pool's bytes per block
    needed_bytes: int | None
    steady_blocks_per_request: int | None
    # with pipeline parallelism: the group's layers on each worker
    num_layers_per_worker: tuple[int, ...] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class TensorRow:
    index: int
    size_bytes: int
    shared_by: tuple[str, ...]


@dataclass(frozen=True)
class Memory:
    available_bytes: int
    checked_available_bytes: int
    needed_bytes: int
    page_size_bytes: int | None
    group_size: int
    # the worker shown (binding_rank): slots per block id there, and what one block costs
    binding_rank: int
    slots_per_block: int
    bytes_per_block: int
    num_blocks: int
    pool_num_blocks: int
    allocated_bytes: int
    blocks_per_request: int
    bytes_per_request: int
    estimated_max_model_len: int | None
    kv_tokens: int
    kv_cache_size_tokens: int
    # the two meanings the "GPU KV cache size" log line has had (reference §4.7, §11 item 4)
    kv_cache_size_tokens_blocks_meaning: int
    kv_cache_size_tokens_concurrency_meaning: int
    max_concurrency: float
    steady_state_concurrency: float
    # the scheduler runs at most max_num_seqs requests: min(KV-limited, max_num_seqs)
    effective_concurrency: float
    steady_blocks_per_request: int
    prefill_reserve_blocks: int
    padding_waste_bytes: int
    padding_waste_pct_of_pool: float


@dataclass(frozen=True)
class WorkerPadding:
    """Padding on one worker at full load of its pool (``kvplan.usecases.records.worker_padding``)."""

    padding_slots_per_block: int
    padding_waste_bytes: int
    padding_waste_pct_of_pool: float


@dataclass(frozen=True)
class WorkerRow:
    """One worker (pipeline stage; TP ranks are identical): its layers, pool, tensors, admission
    numbers and padding. ``num_blocks`` is the engine-wide figure (the minimum over workers);
    ``own_num_blocks`` what the worker's memory alone gives."""

    rank: int
    available_bytes: int
    group_size: int
    num_layers: int
    layers: tuple[str, ...]
    group_layer_counts: tuple[int, ...]
    bytes_per_block: int
    own_num_blocks: int
    num_blocks: int
    allocated: bool
    allocated_bytes: int
    unused_bytes: int
    needed_bytes: int
    checked_available_bytes: int
    fits: bool
    estimated_max_model_len: int | None
    padding: WorkerPadding = field(metadata=FLATTEN)
    num_tensors: int = 0
    tensors: tuple[TensorRow, ...] = ()


@dataclass(frozen=True)
class WorkerSummaryRow:
    """A worker without an admission check (attention-free, or an era that checks before grouping)."""

    rank: int
    available_bytes: int
    group_size: int
    num_layers: int
    num_blocks: int
    num_tensors: int


@dataclass(frozen=True)
class CrossCheckDifference:
    """One figure where kvplan and the checked vLLM differ."""

    field: str
    kvplan: object
    vllm: object

    SCHEMA_CLOSED = True


@dataclass(frozen=True)
class CrossCheckScope:
    """What a cross-check verifies and what it leaves out (``kvplan.verify.crosscheck``)."""

    verified: str | None
    not_verified: str | None
    notes: tuple[str, ...]

    SCHEMA_CLOSED = True


@dataclass(frozen=True)
class CrossCheck:
    """``--cross-check`` / ``cross_check: true``: the comparison with a real vLLM (``kvplan.verify.crosscheck``)."""

    ran: bool
    agree: bool | None
    reason: str | None
    vllm_version: str | None
    python: str | None
    fields_compared: int
    fields_agree: int
    differences: tuple[CrossCheckDifference, ...]
    scope: CrossCheckScope
    seconds: float
    cached: bool

    SCHEMA_CLOSED = True


@dataclass(frozen=True)
class Fix:
    """One verified fix (``kvplan.engines.vllm.fixes.fix_entry``): the option, its value, the flag to
    type and what the engine then does."""

    option: str
    value: object  # the option's value as kvplan sets it (a number, a bool, or None to drop the flag)
    flag: str
    verified: bool
    starts: bool
    max_model_len: int
    num_blocks: int
    max_concurrency: float
    steady_state_concurrency: float
    result: str


@dataclass(frozen=True)
class PlanBody:
    """One deployment through a vLLM era: what ``simulate`` shows (and ``check``, ``vllm``,
    ``explain-log`` read)."""

    engine: Literal["vllm"]
    policy: PolicyRecord
    model: ModelRecord
    drafter: ModelRecord | None
    speculative: PlanSpeculative
    serving: Serving
    scheduler: Scheduler
    hybrid_kv_cache_manager: HybridKVCacheManager
    mamba_alignment: MambaAlignmentRecord | None
    grouping: Grouping | None
    groups: tuple[GroupRow, ...]
    tensors: tuple[TensorRow, ...]
    memory: Memory
    workers: tuple[WorkerRow | WorkerSummaryRow, ...]
    logs: tuple[str, ...]
    explain: tuple[str, ...]
    fixes: tuple[Fix, ...]  # kvplan.engines.vllm.fixes entries
    # the estimated KV budget (with --gpu / --gpu-memory: kvplan.budget.estimate.kv_budget)
    budget: Budget | DeviceBudget | None = field(default=None, metadata=OMIT_NONE)
    # the host-memory tier of a KV offloading connector (kvplan.engines.vllm.offload), when one is configured
    host_tier: HostTier | None = field(default=None, metadata=OMIT_NONE)
    # every engine together, for a deployment on more than one GPU (data-parallel ranks are engines)
    totals: DeploymentTotals | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class SimulateBody:
    """``kvplan simulate``: the plan, then what was asked for beside it."""

    plan: PlanBody = field(metadata=FLATTEN)
    cross_check: CrossCheck | None = field(default=None, metadata=OMIT_NONE)  # --cross-check (kvplan.verify.crosscheck)
    checks_failed: tuple[str, ...] = ()  # --require-start / --fail-on-padding / --min-concurrency
    allocation: Allocation | None = field(default=None, metadata=OMIT_NONE)  # --allocate (kvplan.device)


@dataclass(frozen=True)
class SweepRow:
    """One threshold of ``simulate --sweep-threshold``."""

    threshold: float
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float
    num_blocks: int
    kv_tokens: int
    max_concurrency: float
    outcome: Outcome


@dataclass(frozen=True)
class CriticalThreshold:
    """Where the group size flips: the ratio max/min of the bucket counts (at exactly that value the
    strict ``<`` fails, so the smaller size still wins)."""

    threshold: float
    ratio: str  # "max_count/min_count"
    group_size_at_or_below: int
    group_size_above: int


@dataclass(frozen=True)
class SweepBody:
    model: ModelRecord
    drafter: ModelRecord | None
    policy: PolicyRecord
    rows: tuple[SweepRow, ...]
    # where the group size flips (kvplan.engines.vllm.sweep.critical_thresholds)
    critical_thresholds: tuple[CriticalThreshold, ...]


@dataclass(frozen=True)
class EngineVersions:
    sglang: str
    trtllm: str
    trtllm_commit: str
    llamacpp: str


@dataclass(frozen=True)
class EngineRowRecord:
    """One engine (or vLLM era) in ``compare``: its outcome, capacity and waste per request."""

    engine: str  # vllm, sglang, trtllm, llamacpp, lower_bound
    name: str
    is_proposal: bool
    outcome: Outcome
    kv_tokens: int | None
    max_concurrency: float
    steady_state_concurrency: float  # the admission figure where the engine has no other
    reserved_per_request_bytes: int | None
    waste_per_request_bytes: int | None  # reserved beyond the exact windowed need
    waste_pct: float | None
    knobs: Knobs  # the engine's own settings for this row
    # the engine's result: vLLM's grouping (VllmDetails); SglangDetails, TrtllmDetails, LlamacppDetails and
    # the exact windowed need (LowerBound) are declared beside their models in kvplan/engines
    details: object
    notes: tuple[str, ...]


@dataclass(frozen=True)
class CompareBody:
    """``kvplan compare``: one model, budget and workload through every engine."""

    model: ModelRecord
    drafter: ModelRecord | None
    speculative: Speculative
    serving: Serving
    engine_versions: EngineVersions
    workload: object  # kvplan.engines.compare.CompareInputs (a Record: its DATA keys)
    lower_bound: object  # kvplan.engines.lower_bound.LowerBound
    engines: tuple[EngineRowRecord, ...]  # one per engine (and vLLM era)
    advice: Advice  # each engine's advice (kvplan.usecases.compare.compare_engines)
    budget: Budget | None  # the estimated budget (with --gpu), else None


@dataclass(frozen=True)
class FitBody:
    """``kvplan fit``: the answers the inputs allow (each None when not asked or not answerable)."""

    engine: Literal["vllm"]
    policy: PolicyRecord
    model: ModelRecord
    drafter: ModelRecord | None
    speculative: Speculative
    serving: Serving
    budget: Budget | GivenBudget | None  # kvplan.budget.estimate.kv_budget, or the given --kv-cache-memory
    max_model_len: MaxModelLenAnswer | None
    min_gpu_memory_utilization: UtilizationAnswer | None
    max_context_len_for_concurrency: ContextAnswer | None
    gpus: GpuTable | None  # the GPU x TP table
    estimated: bool  # the answers rest on an estimated budget (not a given --kv-cache-memory)
    # --gpu with --concurrency N and --max-model-len L: the flags that serve N requests of L tokens (usecases.fit_goal)
    goal: GoalAnswer | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class GpuRow:
    """One GPU preset (``kvplan.budget.hardware.GpuPreset``)."""

    name: str
    memory_bytes: int
    basis: str  # "cuda": what CUDA reports; "nvidia-smi": its total
    nominal: str
    aliases: tuple[str, ...]
    source: str
    compute_capability: tuple[int, ...] | None
    platform: Literal["cuda", "rocm"]


@dataclass(frozen=True)
class GpusBody:
    """``kvplan fit --list-gpus``."""

    gpus: tuple[GpuRow, ...]


@dataclass(frozen=True)
class CatalogRow:
    """One bundled config (``kvplan.model.list_catalog``; configs/INDEX.json's fields, None where the
    index does not list the config)."""

    id: str
    family: str | None
    role: str | None  # target, drafter
    provenance: str | None  # genuine, reconstructed
    path: str
    target: str | None  # a drafter's target model
    layer_mix: str | None


@dataclass(frozen=True)
class ModelsBody:
    """``kvplan models``: the bundled catalog."""

    models: tuple[CatalogRow, ...]


@dataclass(frozen=True)
class FlagList:
    """The ``vllm serve`` flag list a line was read with (a release's own, or its nearest)."""

    release: str
    source: str
    note: str | None


@dataclass(frozen=True)
class ServeFlagRow(Record):
    """One flag of a serve line and what kvplan did with it (``kvplan.serve.read_serve``). The
    key ``from`` (a Python keyword) reads ``origin``."""

    flag: str  # as the line spells it (--max-model, -tp)
    value: object  # as given: text, a bool for a switch, a list, None
    dest: str  # vLLM's argument name
    effect: str  # applied, no effect, estimate, not modelled (kvplan.serve.effects)
    applied_as: str | None  # the kvplan option it set
    note: str | None
    origin: str  # line, config file, dotted (kvplan.serve.args.Given.origin)

    DATA = {"flag": "flag", "value": "value", "dest": "dest", "effect": "effect", "applied_as": "applied_as",
            "note": "note", "from": "origin"}


@dataclass(frozen=True)
class ServeRecord:
    """``kvplan vllm``'s ``serve`` section: the line, the release it is read with and why, and what
    kvplan did with every flag and environment variable."""

    form: Literal["vllm serve", "api_server", "docker"]
    line: str | None
    image: str | None
    manifest: str | None  # --file: the manifest's file and line
    model: str
    release: str
    release_source: str
    flag_list: FlagList
    flags: tuple[ServeFlagRow, ...]  # kvplan.serve.read_serve
    environment: dict[str, str]  # the VLLM_* variables the line sets
    environment_applied: bool
    environment_ignored: tuple[str, ...]


@dataclass(frozen=True)
class ServeBody:
    """``kvplan vllm``: simulate's body, then the ``serve`` section."""

    simulate: SimulateBody = field(metadata=FLATTEN)
    serve: ServeRecord


@dataclass(frozen=True)
class LogSummary:
    source: str  # the file, or "-" for standard input
    lines: int
    records: int
    facts: int


@dataclass(frozen=True)
class Rebuild:
    """The deployment rebuilt from the log, and how its simulation went."""

    deployment: object = field(metadata=FLATTEN)  # kvplan.usecases.explain_log.rebuild.Deployment
    policy_used: str | None = None
    status: str = ""  # simulated, layout only, not simulated
    detail: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SimulationSummary:
    """The re-simulation's plan, the parts explain-log shows."""

    policy: PolicyRecord
    model: ModelRecord
    drafter: ModelRecord | None
    speculative: PlanSpeculative
    serving: Serving
    scheduler: Scheduler
    hybrid_kv_cache_manager: HybridKVCacheManager
    grouping: Grouping | None
    memory: Memory
    logs: tuple[str, ...]
    fixes: tuple[Fix, ...]

    @classmethod
    def of(cls, p: PlanBody) -> "SimulationSummary":
        return cls(p.policy, p.model, p.drafter, p.speculative, p.serving, p.scheduler, p.hybrid_kv_cache_manager,
                   p.grouping, p.memory, p.logs, p.fixes)


@dataclass(frozen=True)
class FactRow:
    """One fact read from a log line: its kind, the line, the values read (spread in place; their
    keys depend on the kind, kvplan.logs.extract) and the line's text."""

    kind: str
    line: int
    values: dict = field(metadata=FLATTEN)
    text: str = ""


@dataclass(frozen=True)
class FigureRow:
    """One figure the log shows beside kvplan's (``kvplan.logs.compare.figures``): the logged value,
    kvplan's from its own predicted lines, the range at both ends of the logged KV memory's rounding,
    what the line means in that release, and the verdict."""

    figure: str
    kind: str  # the fact kind (kvplan.logs.extract), or "outcome"
    key: str | None  # the value read (None: the line's presence is the figure)
    line: int | None
    logged: object  # a number, an exception type, True (a line's presence) or the logged start
    count: int  # lines that show the same value (every worker prints it)
    kvplan: object
    kvplan_range: tuple[object, ...] | None  # [low, high]
    meaning: str | None
    agrees: bool | None  # None: not compared
    verdict: str


# ---- explain-log's traps (kvplan.usecases.explain_log.traps), each with its numbers and ``detail`` last


@dataclass(frozen=True)
class HmaCost:
    """The same memory with the hybrid KV cache manager off and on (kvplan's simulations)."""

    max_concurrency_off: float
    max_concurrency_on: float
    num_blocks_off: int
    num_blocks_on: int
    kv_tokens_off: int
    kv_tokens_on: int


@dataclass(frozen=True)
class HmaOffTrap:
    trap: Literal["hybrid_manager_off"]
    reasons: tuple[str, ...]
    cost: HmaCost | None
    detail: str


@dataclass(frozen=True)
class PaddingTrap:
    trap: Literal["padding_waste"]
    padding_waste_bytes: int
    padding_waste_pct_of_pool: float
    num_padding_layers: int
    detail: str


@dataclass(frozen=True)
class SlidingTrap:
    trap: Literal["sliding_window_reservation"]
    max_concurrency: float
    logged_max_concurrency: float | None
    steady_state_concurrency: float
    prefill_reserve_blocks: int
    detail: str


@dataclass(frozen=True)
class AutofitTrap:
    trap: Literal["autofit_reduced"]
    original_max_model_len: int
    max_model_len: int
    line: int | None  # the log's auto-fit line (None: kvplan's own auto-fit)
    detail: str


@dataclass(frozen=True)
class RoundingTrap:
    trap: Literal["rounding_unused"]
    unused_bytes: int
    available_bytes: int
    rank: int
    bytes_per_block: int
    detail: str


@dataclass(frozen=True)
class StageUnusedTrap:
    trap: Literal["stage_unused"]
    unused_bytes: int
    available_bytes: int
    rank: int
    own_num_blocks: int
    num_blocks: int
    detail: str


@dataclass(frozen=True)
class StartupFailureTrap:
    trap: Literal["startup_failure"]
    stage: str | None
    error_type: str | None
    error: str
    fix: Fix | None  # simulate's first verified fix
    detail: str


Trap = HmaOffTrap | PaddingTrap | SlidingTrap | AutofitTrap | RoundingTrap | StageUnusedTrap | StartupFailureTrap


@dataclass(frozen=True)
class ExplainLogBody:
    """``kvplan explain-log``: a start-up log read, rebuilt, re-simulated and set beside kvplan's figures."""

    log: LogSummary
    release: object  # kvplan.logs.release.ReleaseGuess
    recovered: Recovered
    facts: tuple[FactRow, ...]
    missing: tuple[str, ...]
    rebuild: Rebuild
    figures: tuple[FigureRow, ...]  # kvplan.logs.compare.figures
    verdict: str
    traps: tuple[Trap, ...]
    simulation: SimulationSummary | None


# ---------------------------------------------------------------- kvplan policies


@dataclass(frozen=True)
class DefaultPolicy:
    policy: str  # vllm==X
    era: str
    installed: bool  # the installed vLLM picked it


@dataclass(frozen=True)
class ReleaseRow:
    version: str
    era: str
    golden: bool  # golden-tested


@dataclass(frozen=True)
class EraRow:
    name: str
    first_release: str
    releases: tuple[str, ...]
    description: str
    changes: dict  # the Era fields that changed at this boundary, with their new values
    decisions: dict  # every behaviour decision of the era (kvplan.engines.vllm.releases.DECISION_FIELDS)


@dataclass(frozen=True)
class ProposalRow:
    name: str
    description: str
    grouping: str  # the group-size rule (kvplan.engines.vllm.proposals)


@dataclass(frozen=True)
class PoliciesBody:
    """``kvplan policies``: releases, eras (with what changed at each boundary), legacy names, proposals."""

    default: DefaultPolicy
    installed_vllm: str | None
    newest_checked: str
    releases: tuple[ReleaseRow, ...]
    eras: tuple[EraRow, ...]
    aliases: dict[str, str]
    proposals: tuple[ProposalRow, ...]
