"""The KV budget as frozen records: what ``kvplan.budget.estimate.kv_budget`` returns (``Budget``, with
its pipeline stages, profile terms, weights and load failure), and the budget of a given
``--kv-cache-memory`` (``GivenBudget``). ``kvplan.results.to_data`` serialises them: keys in field
order, a field marked ``OMIT_NONE`` left out while None (a stage's ``encoder_profile_bytes`` on the
first stage of a multimodal model only; the extensible sizing's terms with that mode only)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from kvplan.frozen import dataclass
from kvplan.results import CONCURRENCY, OMIT_NONE



def _only() -> Any:
    """A field left out of the serialised record while None (``OMIT_NONE``), None by default."""
    return field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class BudgetStage:
    """One pipeline stage's profile terms and KV bytes (vLLM sizes each stage's pool from its own)."""

    stage: int
    weights_bytes: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    encoder_profile_bytes: int | None = _only()  # the activation peak's part due to the encoder
    cudagraph_resident_bytes: int | None = _only()  # extensible: the graphs' pool after capture
    tentative_kv_cache_memory_bytes: int | None = _only()
    transient_reserve_bytes: int | None = _only()
    sizing_margin_bytes: int | None = _only()
    measured_kv_cache_memory_bytes: int | None = _only()
    kv_cache_memory_bytes: int = 0


@dataclass(frozen=True)
class ProfileTerm:
    """One non-KV term of vLLM's profile with how sure it is (``basis``) and where it comes from."""

    term: str
    bytes: int | None
    basis: str
    source: str
    # how the figure was found: "derived" (a release's own code run on the CPU, or the checkpoint's metadata),
    # "calibrated" (fitted on the calibration half of the start-up corpus), "assumed" (kvplan's rule, not checked
    # by either), "override", "not counted"; and its band (the low and high end the KV band is made of)
    derivation: str | None = field(default=None, metadata=OMIT_NONE)
    low_bytes: int | None = field(default=None, metadata=OMIT_NONE)
    high_bytes: int | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class BudgetBand:
    """The KV budget as a value with a band: the pessimistic end (every term at its high end) and the optimistic
    one, and what the engine does at each (filled by the use case, which simulates both ends)."""

    kv_cache_memory_low_bytes: int
    kv_cache_memory_high_bytes: int
    num_gpu_blocks_low: int | None = None
    num_gpu_blocks_high: int | None = None
    kv_cache_tokens_low: int | None = None
    kv_cache_tokens_high: int | None = None
    max_concurrency_low: float | None = field(default=None, metadata=CONCURRENCY)
    max_concurrency_high: float | None = field(default=None, metadata=CONCURRENCY)
    starts_at_low: bool | None = None
    failure_at_low: str | None = None  # the stage the pessimistic end fails at ("load", "profile", "warm-up", "admission")
    # the warm-up after the KV cache is allocated (profiled sizing): what the CUDA graphs vLLM did not subtract and
    # the sampler's warm-up pass need at the pessimistic end, and the headroom (1 − utilization, less start-up memory)
    warmup_need_bytes: int | None = None
    warmup_headroom_bytes: int | None = None
    basis: str = ""


@dataclass(frozen=True)
class LoadFailure:
    """The first start-up stage that runs out of device memory (``kvplan.budget.load``)."""

    stage: str  # "load" or "profile"
    pipeline_stage: int
    error_type: str
    needed_bytes: int
    free_bytes: int
    message: str


@dataclass(frozen=True)
class BudgetWeights:
    """The weights behind the budget's weights term (``kvplan.budget.weights``)."""

    num_params: int
    num_params_by_kind: Mapping[str, int]
    num_params_per_rank: tuple[int, ...]
    dtype: str
    quantization: str | None
    bytes_by_kind: Mapping[str, int]  # on the budget's stage
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Budget:
    """The KV-cache budget per GPU estimated from a card, as vLLM would derive it (integer bytes);
    ``kv_cache_memory_bytes`` is the smallest stage's and may be ≤ 0 (vLLM then fails to start)."""

    gpu: str | None
    gpu_memory_bytes: int
    gpu_memory_source: str
    kv_cache_sizing: str
    kv_cache_sizing_source: str
    gpu_memory_utilization: float
    gpu_memory_utilization_source: str
    requested_memory_bytes: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    weights_bytes: int
    weights_source: str
    activation_peak_bytes: int
    activation_source: str
    non_torch_bytes: int
    non_torch_source: str
    cudagraph_bytes: int
    cudagraph_source: str
    cudagraph_resident_bytes: int | None
    startup_memory_bytes: int | None
    startup_memory_source: str
    sizing_margin_floor_bytes: int | None
    tentative_kv_cache_memory_bytes: int | None
    transient_reserve_bytes: int | None
    sizing_margin_bytes: int | None
    measured_kv_cache_memory_bytes: int | None
    kv_cache_memory_bytes: int
    load_startup_memory_bytes: int
    load_failure: LoadFailure | None
    kv_room_bytes: int
    estimated: bool
    stages: tuple[BudgetStage, ...]
    weights: BudgetWeights | None
    max_num_batched_tokens: int
    max_num_seqs: int
    weights_basis: str
    activation_basis: str
    non_torch_basis: str
    cudagraph_basis: str
    encoder_cache_basis: str | None = field(default=None, metadata=OMIT_NONE)  # multimodal only
    profile_terms: tuple[ProfileTerm, ...] = ()
    band: BudgetBand | None = field(default=None, metadata=OMIT_NONE)  # estimated budgets (--gpu)
    formula: str = ""
    formula_source: str = ""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class GivenBudget:
    """A KV budget given as is (``--kv-cache-memory``: vLLM's ``--kv-cache-memory-bytes``, no profiling)."""

    kv_cache_memory_bytes: int
    kv_cache_memory_source: str


@dataclass(frozen=True)
class DeviceBudget:
    """``--budget-from-device``: the KV budget read from the device (``kvplan.device``)."""

    source: str  # "device"
    device: str
    kv_cache_sizing: str
    kv_cache_sizing_source: str
    gpu_memory_utilization: float
    gpu_memory_utilization_source: str
    reserve_bytes: int
    kv_cache_memory_bytes: int
