"""One workload through every engine model: vLLM (any era or proposal), SGLang, TensorRT-LLM,
llama.cpp, and the exact windowed need as the floor.

Each engine model takes the per-layer specs (per tensor-parallel rank) and the same budget
and length, and reports the same few numbers, so a row of one engine reads like a row of
another:

- ``kv_tokens``: tokens of full context the engine's pools hold (vLLM: its 0.33 log,
  ``max_concurrency · max_model_len``; SGLang: the full pool; TensorRT-LLM: the largest
  window's pool; llama.cpp: the largest ``n_ctx`` that fits; lower bound: ``budget · L / need``);
- ``max_concurrency``: requests of the workload's length ``L`` served at once (vLLM: its own
  logged figure, a worst case that charges every request the in-flight reservation);
- ``steady_state_concurrency``: requests of length ``L`` the pools hold once past prefill
  (vLLM: kvplan's steady-state figure, docs/capacity.md; the other engines' figures already
  count what a request holds, so they are the same number);
- ``reserved_per_request_bytes``: what one such request costs out of the pools when they are
  full (pool bytes ÷ concurrency; vLLM: its per-request block reservation);
- waste: reserved minus the lower bound's exact need, in bytes and as a share of reserved;
- whether the engine starts, and the knobs that produced the row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import Outcome, Record
from kvplan.results.engines import Knobs, LlamacppKnobs, NoKnobs, SglangKnobs, TrtllmKnobs, VllmDetails, VllmKnobs

from kvplan.engines.layer_costs import LayerCost
from kvplan.engines.llamacpp import DEFAULT_N_UBATCH, llamacpp_model, server_slots
from kvplan.engines.lower_bound import LowerBound, lower_bound
from kvplan.engines.sglang import (
    DEFAULT_MAMBA_FULL_MEMORY_RATIO,
    DEFAULT_SWA_EVICTION_INTERVAL,
    DEFAULT_SWA_FULL_TOKENS_RATIO,
    SglangResult,
    sglang_model,
)
from kvplan.engines.trtllm import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_NUM_TOKENS,
    GUARANTEED_NO_EVICT,
    TOKENS_PER_BLOCK,
    TRTLLM_COMMIT,
    TRTLLM_VERSION,
    TrtllmResult,
    trtllm_model,
)


@dataclass(frozen=True)
class CompareInputs(Record):
    """The workload and every engine's knobs (defaults are the engines' own)."""

    kv_cache_memory_bytes: int  # per GPU, the same budget for every engine
    target_len_tokens: int  # L: every engine is evaluated at requests of this length
    target_concurrency: int | None = None  # N
    max_num_batched_tokens: int = 8192  # vLLM's; SGLang's chunked prefill size
    swa_full_tokens_ratio: float = DEFAULT_SWA_FULL_TOKENS_RATIO
    sglang_page_size: int = 1
    trtllm_window_shares: tuple[float, ...] | None = None  # TRTLLM_WINDOW_SIZE_SHARES, ascending windows
    trtllm_tokens_per_block: int = TOKENS_PER_BLOCK
    llamacpp_n_seq: int | None = None  # -np; default: the target concurrency, else llama-server's auto (4, unified)
    llamacpp_n_ubatch: int = DEFAULT_N_UBATCH
    swa_full: bool = False  # llama.cpp --swa-full
    llamacpp_kv_unified: bool | None = None  # None: as llama-server decides from -np
    target_prompt_len_tokens: int | None = None  # prompt part of L (default: all of it)
    sglang_disable_overlap_schedule: bool = False
    sglang_swa_eviction_interval: int = DEFAULT_SWA_EVICTION_INTERVAL
    trtllm_scheduler_policy: str = GUARANTEED_NO_EVICT
    trtllm_max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS
    context_len_tokens: int | None = None  # the model's context length (SGLang's --context-length default)
    mamba_full_memory_ratio: float = DEFAULT_MAMBA_FULL_MEMORY_RATIO  # SGLang
    sglang_mamba_ssm_dtype: str = "float32"  # SGLang's SSM state dtype (SGLANG_MAMBA_SSM_DTYPE)
    num_speculative_tokens: int = 0  # the drafter's tokens per step (SGLang's speculative SWA term)
    trtllm_max_attention_window: bool = False  # kv_cache_config.max_attention_window = the model's windows
    trtllm_max_batch_size: int = DEFAULT_MAX_BATCH_SIZE  # sizes the Mamba state and the scheduler's capacity
    trtllm_enable_block_reuse: bool = True  # kv_cache_config.enable_block_reuse (Mamba hybrids need it off)

    @property
    def n_seq(self) -> int:
        return self.llamacpp_slots[0]

    @property
    def llamacpp_slots(self) -> tuple[int, bool, str, int | None]:
        """(n_seq, kv_unified, how, n_ctx): an explicit -np (or the target concurrency) gives each slot
        L tokens; llama-server's auto default shares n_ctx = L (the model's context) between 4 slots."""
        given = self.llamacpp_n_seq or self.target_concurrency
        n, unified, how = server_slots(given, self.llamacpp_kv_unified)
        return n, unified, how, None if given else self.target_len_tokens

    DATA = {k: k for k in ("kv_cache_memory_bytes", "target_len_tokens", "target_concurrency",
                           "max_num_batched_tokens")}


@dataclass(frozen=True)
class EngineRow:
    engine: str  # vllm | sglang | trtllm | llamacpp | lower_bound
    name: str  # the policy / configuration shown in the table
    starts: bool
    kv_tokens: int | None
    max_concurrency: float
    reserved_per_request_bytes: int | None
    lower_bound_bytes: int
    knobs: Knobs = field(default_factory=NoKnobs)
    # the engine's result: VllmDetails, SglangDetails, TrtllmDetails, LlamacppDetails, the LowerBound
    details: object = None
    failure: str | None = None
    is_proposal: bool = False
    notes: tuple[str, ...] = ()
    steady_state_concurrency: float | None = None  # None: the same as max_concurrency
    failure_stage: str | None = None  # the engine's own stage and exception, where it names them
    failure_type: str | None = None
    failure_fix: str | None = None  # the engine's own setting that removes the failure, where kvplan knows it

    # what a row shows beside the engine's figures, computed once when the row is made
    waste_per_request_bytes: int | None = field(init=False)
    waste_pct: float | None = field(init=False)
    outcome: Outcome = field(init=False)
    # the steady-state concurrency, the admission figure where the engine has no other
    steady_concurrency: float = field(init=False)

    def __post_init__(self) -> None:
        r = self.reserved_per_request_bytes
        if self.starts:
            outcome = Outcome(ok=True, starts=True, error=self.failure)
        else:
            outcome = Outcome(ok=False, starts=False, stage=self.failure_stage or "start-up",
                              error_type=self.failure_type, error=self.failure, fix=self.failure_fix)
        for name, value in (
            ("waste_per_request_bytes", None if r is None else r - self.lower_bound_bytes),
            ("waste_pct", (r - self.lower_bound_bytes) / r * 100 if r else None),
            ("outcome", outcome),
            ("steady_concurrency",
             self.max_concurrency if self.steady_state_concurrency is None else self.steady_state_concurrency),
        ):
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Comparison:
    inputs: CompareInputs
    lower_bound: LowerBound
    rows: tuple[EngineRow, ...]
    advice: dict | None = None

    def row(self, engine: str, name: str | None = None) -> EngineRow:
        return next(r for r in self.rows if r.engine == engine and (name is None or r.name == name))


# --- rows --------------------------------------------------------------------------------


def vllm_row(plan, lb: LowerBound) -> EngineRow:
    """A ``Plan`` (from ``simulate`` / ``run_scenario``) as a comparison row."""
    era = plan.era
    reserved, blocks = plan.request_bytes, plan.request_blocks
    d = plan.decision
    label = f"vllm=={era.release}" if era.release else era.name  # the release asked for, else the era
    knobs = VllmKnobs(
        policy=label,
        threshold=era.threshold,
        grouping=era.grouping,
        max_model_len_tokens=plan.max_model_len,
        max_num_batched_tokens=plan.options.max_num_batched_tokens,
        hybrid_kv_cache_manager=None if plan.hma is None else not plan.hma.disabled,
    )
    details = VllmDetails(
        grouping_path=d.path if d else None,
        group_size=plan.group_size,
        num_groups=plan.num_groups,
        num_padding_layers=plan.num_padding_layers,
        padding_waste_pct=round(plan.padding_waste_pct, 4),
        page_size_bytes=plan.page_size_bytes,
        num_blocks=plan.num_blocks,
        blocks_per_request=tuple(blocks),
        kv_cache_size_tokens=plan.kv_cache_size_tokens,
    )
    notes = ["proposal, not shipped behaviour"] if era.is_proposal else []
    return EngineRow(
        engine="vllm", name=label, starts=plan.starts, kv_tokens=plan.kv_tokens,
        max_concurrency=plan.max_concurrency, reserved_per_request_bytes=reserved,
        lower_bound_bytes=lb.per_request_bytes, knobs=knobs, details=details,
        failure=(plan.failure.message or plan.failure.error_type) if plan.failure else None,
        is_proposal=era.is_proposal, notes=tuple(notes), steady_state_concurrency=plan.steady_state_concurrency,
        failure_stage=plan.failure.stage if plan.failure else None,
        failure_type=plan.failure.error_type if plan.failure else None,
    )


def sglang_result(costs, architecture: str | None, inputs: CompareInputs, ratio: float) -> SglangResult:
    """SGLang's model on the workload with ``--swa-full-tokens-ratio ratio`` and every other knob from the inputs."""
    return sglang_model(
        costs, architecture, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
        swa_full_tokens_ratio=ratio, page_size=inputs.sglang_page_size,
        chunked_prefill_size=inputs.max_num_batched_tokens,
        disable_overlap_schedule=inputs.sglang_disable_overlap_schedule,
        swa_eviction_interval=inputs.sglang_swa_eviction_interval, prompt_len_tokens=inputs.target_prompt_len_tokens,
        mamba_full_memory_ratio=inputs.mamba_full_memory_ratio, mamba_ssm_dtype=inputs.sglang_mamba_ssm_dtype,
        context_len_tokens=inputs.context_len_tokens, num_speculative_tokens=inputs.num_speculative_tokens,
    )


def sglang_row(costs: tuple[LayerCost, ...], architecture: str | None, inputs: CompareInputs,
               lb: LowerBound, ratio: float | None = None) -> EngineRow:
    r = sglang_result(costs, architecture, inputs, inputs.swa_full_tokens_ratio if ratio is None else ratio)
    knobs = SglangKnobs(
        swa_full_tokens_ratio=r.swa_full_tokens_ratio if r.hybrid_swa_memory else None,
        page_size=r.page_size,
        hybrid_swa_memory=r.hybrid_swa_memory,
        chunked_prefill_size=r.chunked_prefill_size,
        disable_overlap_schedule=r.disable_overlap_schedule,
        swa_eviction_interval=r.swa_eviction_interval,
        context_length=r.context_len_tokens,
        mamba_full_memory_ratio=r.mamba_full_memory_ratio,
        mamba_ssm_dtype=inputs.sglang_mamba_ssm_dtype if r.mamba_full_memory_ratio is not None else None,
    )
    return EngineRow(
        engine="sglang", name="hybrid SWA pool" if r.hybrid_swa_memory else "one token pool", starts=r.starts, kv_tokens=r.full_tokens,
        max_concurrency=r.max_concurrency, reserved_per_request_bytes=r.reserved_per_request_bytes,
        lower_bound_bytes=lb.per_request_bytes, knobs=knobs, details=r.details(), failure=r.failure,
        notes=(r.reason, *r.notes),
    )


def trtllm_result(costs, inputs: CompareInputs, shares=None) -> TrtllmResult:
    """TensorRT-LLM's model on the workload with window ``shares`` (None: its equal default)."""
    return trtllm_model(
        costs, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
        window_shares=None if shares is None else tuple(float(s) for s in shares),
        tokens_per_block=inputs.trtllm_tokens_per_block, scheduler_policy=inputs.trtllm_scheduler_policy,
        max_num_tokens=inputs.trtllm_max_num_tokens, prompt_len_tokens=inputs.target_prompt_len_tokens,
        max_attention_window=inputs.trtllm_max_attention_window, max_batch_size=inputs.trtllm_max_batch_size,
        enable_block_reuse=inputs.trtllm_enable_block_reuse,
    )


def trtllm_row(costs: tuple[LayerCost, ...], inputs: CompareInputs, lb: LowerBound,
               shares: tuple[float, ...] | None = None) -> EngineRow:
    r = trtllm_result(costs, inputs, inputs.trtllm_window_shares if shares is None else shares)
    knobs = TrtllmKnobs(
        windows_tokens=tuple(r.windows),
        window_shares=tuple(round(p.share, 6) for p in r.pools),
        window_shares_given=r.shares_given,
        tokens_per_block=r.tokens_per_block,
        scheduler_policy=r.scheduler_policy,
        max_num_tokens=r.max_num_tokens,
        max_attention_window="model windows" if r.max_attention_window else None,
        enable_chunked_prefill=True,  # assumed by kvplan (off by default)
        max_batch_size=r.max_batch_size,
        enable_block_reuse=r.enable_block_reuse,
        mamba_ssm_cache_dtype="auto (the model dtype)" if r.state_bytes_per_request else None,
        release=f"{TRTLLM_VERSION} @ {TRTLLM_COMMIT}",
    )
    return EngineRow(
        engine="trtllm", name="VSWA" if len(r.pools) > 1 else "one window pool", starts=r.starts, kv_tokens=r.kv_tokens,
        max_concurrency=r.max_concurrency, reserved_per_request_bytes=r.reserved_per_request_bytes,
        lower_bound_bytes=lb.per_request_bytes, knobs=knobs, details=r.details(), failure=r.failure,
        notes=r.notes, failure_stage=r.failure_stage, failure_type=r.failure_type, failure_fix=r.fix,
    )


def llamacpp_row(costs: tuple[LayerCost, ...], inputs: CompareInputs, lb: LowerBound) -> EngineRow:
    n_seq, unified, how, n_ctx = inputs.llamacpp_slots
    r = llamacpp_model(
        costs, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
        n_seq=n_seq, n_ubatch=inputs.llamacpp_n_ubatch, swa_full=inputs.swa_full, kv_unified=unified,
        slots_from=how, n_ctx=n_ctx,
    )
    knobs = LlamacppKnobs(
        n_ctx_tokens=r.caches.n_ctx,
        n_seq=r.n_seq,
        n_ubatch=r.n_ubatch,
        swa_full=r.swa_full,
        kv_unified=r.kv_unified,
        slots=how,
    )
    return EngineRow(
        engine="llamacpp", name="iSWA cache" if r.n_swa else "KV cache", starts=r.starts, kv_tokens=r.max_n_ctx_tokens,
        max_concurrency=r.max_concurrency, reserved_per_request_bytes=r.reserved_per_request_bytes,
        lower_bound_bytes=lb.per_request_bytes, knobs=knobs, details=r.details(), failure=r.failure,
        notes=r.notes,
    )


def lower_bound_row(lb: LowerBound) -> EngineRow:
    return EngineRow(
        engine="lower_bound", name="exact windowed need", starts=True, kv_tokens=lb.kv_tokens,
        max_concurrency=lb.max_concurrency, reserved_per_request_bytes=lb.per_request_bytes,
        lower_bound_bytes=lb.per_request_bytes, details=lb,
        notes=("what an ideal allocator reserves: full layers L tokens, window layers min(L, W), state once",),
    )


def compare(costs: tuple[LayerCost, ...], architecture: str | None, inputs: CompareInputs,
            vllm_plans=()) -> Comparison:
    """Every engine on the same layers (their ``layer_costs``), budget and length. ``vllm_plans`` are ready
    plans (the CLI runs them through ``run_scenario`` so they match ``simulate`` exactly)."""
    lb = lower_bound(costs, inputs.target_len_tokens, inputs.kv_cache_memory_bytes)
    rows = [vllm_row(p, lb) for p in vllm_plans]
    rows.append(sglang_row(costs, architecture, inputs, lb))
    rows.append(trtllm_row(costs, inputs, lb))
    rows.append(llamacpp_row(costs, inputs, lb))
    rows.append(lower_bound_row(lb))
    return Comparison(inputs, lb, tuple(rows))
