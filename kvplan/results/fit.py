"""The result records of ``kvplan fit``: each answer with the layout decision behind it
(filled by ``kvplan.usecases.fit``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kvplan.results import CONCURRENCY, CONCURRENCY_DIGITS, FLATTEN, OMIT_NONE, PCT, Outcome, rounded
from kvplan.results.budget import Budget, GivenBudget
from kvplan.results.records import ModelRecord, PolicyRecord, Serving, Speculative


@dataclass(frozen=True)
class LayoutDecision:
    """The grouping behind an answer, in vLLM's words, and the start-up outcome."""

    max_model_len: int
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float = field(metadata=PCT)
    page_size_bytes: int
    bytes_per_block: int
    num_blocks: int
    blocks_per_request: int
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)
    kv_cache_size_tokens: int
    outcome: Outcome


@dataclass(frozen=True)
class Capacity:
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)
    starts: bool


@dataclass(frozen=True)
class LengthStarts:
    max_model_len: int
    starts: bool


@dataclass(frozen=True)
class LengthOutcome:
    max_model_len: int
    outcome: Outcome


@dataclass(frozen=True)
class MaxLenBoundary:
    fits: LengthStarts
    one_more: LengthOutcome | None  # None when the answer is the limit itself


@dataclass(frozen=True)
class MaxModelLenAnswer:
    """The largest ``--max-model-len`` the engine starts with on the budget (None: none)."""

    max_model_len: int | None
    model_max_model_len: int
    limit: int
    limited_by: str | None  # "limit" or "kv_cache_memory"
    method: str
    kv_cache_memory_bytes: int
    layout: LayoutDecision
    boundary: MaxLenBoundary | None


@dataclass(frozen=True)
class LengthCapacity:
    max_model_len: int
    capacity: Capacity = field(metadata=FLATTEN)


@dataclass(frozen=True)
class OneMoreToken:
    max_model_len: int
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)
    outcome: Outcome


@dataclass(frozen=True)
class ContextBoundary:
    fits: LengthCapacity
    one_more: OneMoreToken


@dataclass(frozen=True)
class ContextAnswer:
    """The longest ``--max-model-len`` at which the pool holds ``concurrency`` requests (None: none)."""

    concurrency: float
    max_model_len: int | None
    model_max_model_len: int
    kv_cache_memory_bytes: int
    method: str
    layout: LayoutDecision
    boundary: ContextBoundary | None
    reason: str | None = field(default=None, metadata=OMIT_NONE)  # why there is no answer
    max_concurrency: float | None = field(default=None, metadata=rounded(CONCURRENCY_DIGITS, omit_none=True))
    steady_state_concurrency: float | None = field(default=None, metadata=rounded(CONCURRENCY_DIGITS, omit_none=True))
    limited_by: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class UtilizationCapacity:
    gpu_memory_utilization: float
    capacity: Capacity = field(metadata=FLATTEN)


@dataclass(frozen=True)
class UtilizationBoundary:
    enough: UtilizationCapacity
    one_step_less: UtilizationCapacity | None


@dataclass(frozen=True)
class UtilizationAnswer:
    """The smallest ``--gpu-memory-utilization`` for ``concurrency`` requests of ``context_len`` tokens."""

    concurrency: float
    context_len: int
    gpu_memory_utilization: float | None
    kv_cache_memory_bytes: int | None
    method: str
    at_full_utilization: Capacity
    layout: LayoutDecision
    boundary: UtilizationBoundary | None
    reason: str | None = field(default=None, metadata=OMIT_NONE)  # why there is no answer
    outcome: Outcome | None = field(default=None, metadata=OMIT_NONE)  # a refusal before the KV cache


@dataclass(frozen=True)
class GpuTableRow:
    gpu: str
    tensor_parallel_size: int
    num_gpus: int
    gpu_memory_bytes: int
    weights_bytes: int | None
    # no KV cache when vLLM runs out of memory loading the weights or in the profile run
    kv_cache_memory_bytes: int | None
    max_model_len: int | None
    outcome: Outcome
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)
    kv_tokens: int
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float = field(metadata=PCT)
    enough: bool
    # data-parallel ranks: engines, each with the pool above (num_gpus counts every rank); the totals are
    # kvplan's sums of one engine's figures
    data_parallel_size: int = 1
    total_kv_tokens: int = 0
    total_max_concurrency: float = field(default=0.0, metadata=CONCURRENCY)
    total_steady_state_concurrency: float = field(default=0.0, metadata=CONCURRENCY)
    # the host tier of --kv-offloading-size, every engine's (host RAM the row's GPUs' engines map)
    host_memory_bytes: int | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class SmallestEnough:
    gpu: str
    tensor_parallel_size: int
    num_gpus: int
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)
    data_parallel_size: int = 1


@dataclass(frozen=True)
class GpuTable:
    """Max concurrency on each GPU preset x TP size."""

    max_model_len: int | None
    concurrency: float | None
    gpu_memory_utilization: float | None
    tp_sizes: tuple[int, ...]
    rows: tuple[GpuTableRow, ...]
    smallest_enough: SmallestEnough | None
    rule: str
    dp_sizes: tuple[int, ...] = (1,)


@dataclass(frozen=True)
class GoalChange:
    """One flag the goal search changed from the deployment as given (vLLM's option name, its value, the flag)."""

    option: str
    value: int | float | str  # TP / DP / batched tokens, the utilization, the KV cache dtype
    flag: str


@dataclass(frozen=True)
class GoalAnswer:
    """``kvplan fit --gpu CARD --concurrency N --max-model-len L``: one deployment that serves N requests of L
    tokens, proven by simulating it at the KV budget band's pessimistic end (``usecases.fit_goal``), or why none
    of the searched ones does. The figures are the pessimistic end's: one engine's, and all engines' (× DP)."""

    concurrency: float
    max_model_len: int
    gpu: str | None
    reached: bool
    method: str
    candidates_simulated: int
    changes: tuple[GoalChange, ...] = ()  # from the deployment as given, in the order an engineer tries them
    vllm_flags: tuple[str, ...] = ()  # the deployment's `vllm serve` flags (after the model), the release's spelling
    tensor_parallel_size: int | None = field(default=None, metadata=OMIT_NONE)
    data_parallel_size: int | None = field(default=None, metadata=OMIT_NONE)
    num_gpus: int | None = field(default=None, metadata=OMIT_NONE)
    kv_cache_dtype: str | None = field(default=None, metadata=OMIT_NONE)
    max_num_batched_tokens: int | None = field(default=None, metadata=OMIT_NONE)
    gpu_memory_utilization: float | None = field(default=None, metadata=OMIT_NONE)
    kv_cache_memory_low_bytes: int | None = field(default=None, metadata=OMIT_NONE)  # per GPU, pessimistic end
    num_gpu_blocks_low: int | None = field(default=None, metadata=OMIT_NONE)
    max_concurrency_low: float | None = field(default=None, metadata=rounded(CONCURRENCY_DIGITS, omit_none=True))  # vLLM's figure, one engine
    steady_state_concurrency_low: float | None = field(default=None, metadata=rounded(CONCURRENCY_DIGITS, omit_none=True))  # one engine
    total_steady_state_concurrency_low: float | None = field(default=None, metadata=rounded(CONCURRENCY_DIGITS, omit_none=True))  # × DP
    reason: str | None = field(default=None, metadata=OMIT_NONE)  # why nothing reaches it


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
