"""The settings each engine's row in ``kvplan compare`` ran with (``knobs``), and vLLM's own result
details (the other engines' ``details`` records are declared beside their models in kvplan/engines).
Serialised by ``kvplan.results.to_data``; the keys are each engine's own names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import PCT


@dataclass(frozen=True)
class NoKnobs:
    """A row with no engine settings (the exact windowed need)."""


@dataclass(frozen=True)
class VllmKnobs:
    policy: str  # vllm==<release> asked for, else the era's name
    threshold: float | None
    grouping: str
    max_model_len_tokens: int
    max_num_batched_tokens: int
    hybrid_kv_cache_manager: bool | None


@dataclass(frozen=True)
class VllmDetails:
    """The plan's grouping and pool (``kvplan.engines.vllm.plan.Plan``)."""

    grouping_path: str | None
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float = field(metadata=PCT)
    page_size_bytes: int
    num_blocks: int
    blocks_per_request: tuple[int, ...]
    kv_cache_size_tokens: int


@dataclass(frozen=True)
class SglangKnobs:
    swa_full_tokens_ratio: float | None  # None without the hybrid SWA pool
    page_size: int
    hybrid_swa_memory: bool
    chunked_prefill_size: int
    disable_overlap_schedule: bool
    swa_eviction_interval: int
    context_length: int | None
    mamba_full_memory_ratio: float | None
    mamba_ssm_dtype: str | None


@dataclass(frozen=True)
class TrtllmKnobs:
    windows_tokens: tuple[int, ...]
    window_shares: tuple[float, ...]
    window_shares_given: bool
    tokens_per_block: int
    scheduler_policy: str
    max_num_tokens: int
    max_attention_window: str | None  # "model windows" with --trtllm-max-attention-window
    enable_chunked_prefill: bool  # assumed by kvplan (off by default)
    max_batch_size: int
    enable_block_reuse: bool
    mamba_ssm_cache_dtype: str | None
    release: str  # <version> @ <commit> the rules were read from


@dataclass(frozen=True)
class LlamacppKnobs:
    n_ctx_tokens: int
    n_seq: int
    n_ubatch: int
    swa_full: bool
    kv_unified: bool
    slots: str  # where -np came from
