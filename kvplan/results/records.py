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

from dataclasses import field
from typing import TYPE_CHECKING, Literal

from kvplan.frozen import dataclass
from kvplan.results import CONCURRENCY, FLATTEN, OMIT_NONE, PCT, Outcome, Record
from kvplan.specs import SpecRecord

if TYPE_CHECKING:  # named in annotations only: kvplan.results.annotations loads them, not every run
    from kvplan.results.allocation import Allocation  # --allocate's body
    from kvplan.results.budget import Budget, DeviceBudget  # a budget that was computed
    from kvplan.results.host_tier import DeploymentTotals, HostTier  # --kv-offloading-size


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
    mamba_padding_pct: float = field(metadata=PCT)


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
    padding_waste_pct: float = field(metadata=PCT)
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
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)
    # the scheduler runs at most max_num_seqs requests: min(KV-limited, max_num_seqs)
    effective_concurrency: float = field(metadata=CONCURRENCY)
    steady_blocks_per_request: int
    prefill_reserve_blocks: int
    padding_waste_bytes: int
    padding_waste_pct_of_pool: float = field(metadata=PCT)


@dataclass(frozen=True)
class WorkerPadding:
    """Padding on one worker at full load of its pool (``kvplan.usecases.records.worker_padding``)."""

    padding_slots_per_block: int
    padding_waste_bytes: int
    padding_waste_pct_of_pool: float = field(metadata=PCT)


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
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)
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
