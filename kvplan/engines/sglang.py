"""SGLang's token pools (one pool, or a full pool and an SWA pool) and the scheduler that
admits, prefills and evicts in them.

Rules read from the sglang 0.5.23 wheel (``sglang/_version.py``; the wheel records no commit);
paths below are inside ``python/sglang/srt/``. The pool sizes, the SWA request cap and the
admission estimate are checked against that wheel's own functions
(``scripts/golden/sglang_runner.py`` → ``tests/golden/sglang/pool_sizes.json``).

- **Which models get the split pool.** ``configs/model_config.py is_hybrid_swa_model``
  allowlists architectures (``HYBRID_SWA_ARCHITECTURES`` below). Gemma 2/3/3n are forced to
  ``disable_hybrid_swa_memory`` ("not yet supported", ``arg_groups/model_overrides/
  gemma2_gemma3.py``), so their sliding layers pay for every token like full layers.
- **Sizing** (``model_executor/pool_configurator.py HybridSWAPoolConfigurator``) with
  ``r = --swa-full-tokens-ratio`` (0.8 when not given), ``F`` the bytes of one token over the
  full-pool layers and ``S`` over the SWA-pool layers: ``max_total = int(budget // (F + r·S))``,
  ``full = align(max_total)``, ``swa = align(int(full · r))``, ``align`` rounding down to the
  page. Drafter layers are counted in the full term (kvplan's simplification: 0.5.23 can put
  a draft model's SWA layers in the SWA term via ``eagle_draft_swa_num_layers``).
- **A token cap** (``--max-total-tokens``, ``arg_groups/fields/schedule.py`` l.39): ``mem_cache/kv_cache_configurator.py
  config_from_budget`` (l.3192-3227) takes ``_apply_token_constraints`` (l.3090-3105), ``min(pool, max_total_tokens)``,
  of the profiled pool (the full pool with the split); when that changes it, the configurator solves again from the
  token count (``calculate_pool_sizes_from_max_tokens``): ``_solve_pool_sizes`` (``pool_configurator.py`` l.859-893)
  makes ``full = align(cap)``, ``swa = align(int(full · r))`` and validates the SWA pool; the single pool
  (``DefaultPoolConfigurator``, l.649-653) is ``align(cap)``. The running-request cap reads the capped pool.
- **Start-up**: ``validate_swa_pool_size`` refuses an SWA pool with ``W + page >= swa`` (checked
  first); ``MemoryPoolConfig`` refuses ``max_total_num_tokens <= 0``.
- **Admission** (``mem_cache/prefill_budget.py``): a prefill is admitted when
  ``total_tokens < remaining_total`` in the full pool and its SWA reservation
  ``max(min(P, chunk) − W, 0) + min(P + max_new, W) + page`` is below the free SWA tokens;
  ``reserve`` then holds ``ceil_page(P) + page + max_new`` full tokens. A long prompt's first
  chunk therefore needs ``chunk + page`` SWA tokens. When even an empty SWA pool cannot hold
  that, ``_chunk_cap`` shrinks the chunk instead of refusing the request.
- **Prefill**: only the window stays locked between chunks, so the SWA pool bounds the chunk,
  not the prompt; the longest prompt is bounded by the full pool (``total_tokens <
  remaining_total``: ``full − 1`` tokens on an empty pool).
- **Steady decode** (``managers/schedule_batch.py maybe_evict_swa``): out-of-window tokens are
  freed only once ``SGLANG_SWA_EVICTION_INTERVAL`` (128, ``environ.py``) tokens have slid out,
  so a decoding request holds up to ``W + interval``. SGLang's own worst case
  (``pool_configurator.py compute_swa_request_cap``) is ``W + interval·draft_tokens + page``
  plus a decode page per request, plus ``chunks_in_flight · chunked_prefill_size + page``
  for the batch, ``chunks_in_flight`` 2 with the overlap scheduler, 1 with
  ``--disable-overlap-schedule``. kvplan's steady concurrency is the largest count that cap
  allows, and never more than the full pool's ``full / ceil_page(L)``.
- **Worked number** (gpt-oss-20b, 40 GiB, r = 0.8): F = S = 12 · 2048 B, F + 0.8·S =
  44,236.8 B, full = 970,903, swa = 776,722; per request 128 + 128 + 1 + 1 = 258 SWA tokens.
- **Not modelled**: the SWA request-cap pool mode (``SWARequestCapPoolConfigurator``, chosen
  with an explicit ``--max-running-requests`` and ``--disable-radix-cache``), and
  DeepSeek-V4, which has its own configurator (``DSV4PoolConfigurator``; ratio 0.1 and page
  256 by default, ``arg_groups/model_overrides/deepseek_v4.py``); both are reported as notes.
- **Recurrent state** (Mamba/GDN; ``mem_cache/kv_cache_configurator.py
  KVCacheConfigurator._handle_max_mamba_cache``): the memory left after weights (kvplan's
  budget, in GB as SGLang computes it) is split by ``--mamba-full-memory-ratio`` ``m`` (0.9,
  ``arg_groups/fields/schedule.py``): ``max_mamba_cache_size = int((B·m/(1+m) − s) // s)`` with
  ``s`` one request's state (``configs/mamba_utils.py mamba_cache_per_req``: conv state in
  bfloat16, SSM state in float32 unless ``SGLANG_MAMBA_SSM_DTYPE`` / the config's
  ``mamba_ssm_dtype``); the KV pools get ``B − (K + 1)·s``. ``resolve_max_num_reqs`` caps the
  running requests at ``K // 3`` with the radix cache on (``_calculate_mamba_ratio``,
  ``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO``; the extra-buffer strategy is not modelled)
  and at ``token_capacity // 2``; ``K // 3 = 0`` fails at start-up. Checked against those
  functions run from the wheel (``tests/golden/sglang/mamba.json``).
- **Longest prompt** (``managers/tp_worker.py``, ``managers/utils.py validate_input_length``):
  ``max_req_input_len = min(context_len − 1, pool − 1) − 5`` and a prompt of that length or
  more is refused: the longest is ``min(context_len, pool) − 7``. ``context_len`` is the
  model's ``max_position_embeddings`` (SGLang's default ``--context-length``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from kvplan.engines.compare import (DEFAULT_MAMBA_FULL_MEMORY_RATIO, DEFAULT_SWA_EVICTION_INTERVAL,
                                    DEFAULT_SWA_FULL_TOKENS_RATIO, NO_SCORE, CompareInputs, EngineAnswer, EngineRow,
                                    EngineStages, Figure, reaches, require_version, rounded)
from kvplan.engines.engine import CompareRun, EngineDefaults
from kvplan.engines.layer_costs import FULL, STATE, WINDOW, LayerCost
from kvplan.engines.lower_bound import LowerBound
from kvplan.results.advice import NotApplicable, SglangAdvice, SglangNoChange, SglangNoRatio
from kvplan.units import cdiv, plural

SGLANG_VERSION = "0.5.23"

# configs/model_config.py ``is_hybrid_swa_model`` (0.5.23), including SWA_SINK_ARCHS and
# MIMO_V2_MODEL_ARCHS. BeamForCausalLM and LagunaForCausalLM are hybrid only with sliding layers,
# which hybrid_swa_decision checks for every architecture.
HYBRID_SWA_ARCHITECTURES = frozenset({
    "BeamForCausalLM", "Llama4ForConditionalGeneration",
    "DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark",
    "GptOssForCausalLM", "GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM", "IQuestQ1ForCausalLM", "IQuestQ1MTP",
    "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM", "MiMoV2MTP",
    "Step3p5ForCausalLM", "Step3p5MTP", "Step3p7ForConditionalGeneration",
    "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "EmbeddingGemma2Model",
    "Gemma4UnifiedForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
    "LagunaForCausalLM", "MellumForCausalLM", "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration",
    "InklingForConditionalGeneration", "InklingForConditionalGenerationMTP", "UnlimitedOCRForCausalLM",
})
# arg_groups/model_overrides/gemma2_gemma3.py: these set disable_hybrid_swa_memory = True.
HYBRID_SWA_FORCED_OFF = frozenset({
    "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
    "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration",
})

MAMBA_RUNNING_RATIO = 3  # kv_cache_configurator.py MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
SSM_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
PROMPT_MARGIN_TOKENS = 7  # tp_worker.py: min(context_len - 1, pool - 1) - 5, refused at >=
NOT_ENOUGH_MEMORY = "Not enough memory. Please try to increase --mem-fraction-static."

RULE_POOLS = "HybridSWAPoolConfigurator: full = budget // (F + r·S), swa = int(full · r), page-aligned"
RULE_PROMPT = ("validate_input_length: P < min(context_len - 1, pool - 1) - 5 (tp_worker.py); "
               "SWA shrinks the chunk (_chunk_cap)")
RULE_ADMIT = ("prefill_budget reserve: ceil_page(P) + page + max_new full tokens; first chunk needs "
              "chunk + page SWA tokens beyond running windows")
RULE_STEADY = ("compute_swa_request_cap: W + interval + 2 pages per request, plus chunks in flight "
               "· chunk + page; full pool / ceil_page(L)")


@dataclass(frozen=True)
class SglangResult:
    architecture: str | None
    hybrid_swa_memory: bool
    reason: str  # why the split pool is on or off
    swa_full_tokens_ratio: float
    page_size: int
    num_full_layers: int  # layers in the full pool (drafter layers included)
    num_swa_layers: int
    full_bytes_per_token: int  # F: one token across every full-pool layer
    swa_bytes_per_token: int  # S: one token across every SWA-pool layer
    window_tokens: int | None  # the largest window in the SWA pool
    full_tokens: int  # SGLang's full_max_total_num_tokens (max_total_num_tokens)
    swa_tokens: int | None  # swa_max_total_num_tokens
    state_slots: int
    state_bytes: int  # set aside for recurrent state
    state_bytes_per_request: int
    full_need_tokens: int  # per decoding request of L tokens
    swa_need_tokens: int | None  # per decoding request (compute_swa_request_cap's per_request)
    concurrency: Fraction  # requests of the workload served at once: min(admission, steady)
    chunked_prefill_size: int
    prefill_fits: bool | None  # the SWA pool holds a window plus one prefill chunk at full speed
    starts: bool
    failure: str | None
    pool_bytes: int
    notes: tuple[str, ...] = ()
    disable_overlap_schedule: bool = False
    swa_eviction_interval: int = DEFAULT_SWA_EVICTION_INTERVAL
    prompt_len_tokens: int = 0
    swa_in_flight_tokens: int = 0  # chunks in flight · chunk + page
    admission_concurrency: int = 0
    steady_concurrency: Fraction = Fraction(0)
    longest_prompt_tokens: int = 0
    mamba_full_memory_ratio: float | None = None  # None: no recurrent state
    max_mamba_cache_size: int | None = None
    max_running_requests: int | None = None  # resolve_max_num_reqs (Mamba hybrids)
    context_len_tokens: int | None = None
    max_total_tokens: int | None = None  # --max-total-tokens (None: the profiled pool)

    @property
    def max_concurrency(self) -> float:
        return float(self.concurrency)

    @property
    def reserved_per_request_bytes(self) -> int:
        """What one request costs out of the pools when they are full: pool bytes / concurrency."""
        if self.concurrency <= 0:
            return (self.full_need_tokens * self.full_bytes_per_token
                    + (self.swa_need_tokens or 0) * self.swa_bytes_per_token + self.state_bytes_per_request)
        return math.ceil(self.pool_bytes / self.concurrency)

    @property
    def stages(self) -> EngineStages:
        return EngineStages(
            engine="sglang", version=SGLANG_VERSION,
            kv_tokens=Figure(self.full_tokens, "full pool (" + RULE_POOLS + ")"),
            longest_prompt_tokens=Figure(self.longest_prompt_tokens, RULE_PROMPT),
            admission_concurrency=Figure(self.admission_concurrency, RULE_ADMIT),
            steady_concurrency=Figure(float(self.steady_concurrency), RULE_STEADY),
            starts=Figure(self.starts, "validate_swa_pool_size: W + page < swa; max_total_num_tokens > 0"),
            prompt_len_tokens=self.prompt_len_tokens,
        )

    def details(self) -> "SglangDetails":
        """The result as ``compare`` shows it (its engine row's ``details``): the full pool, and the
        SWA pool when the split is on (SGLang's two token pools)."""
        pools: list = [FullPoolRow("full", self.num_full_layers, self.full_bytes_per_token, self.full_tokens,
                                   self.full_need_tokens)]
        if self.hybrid_swa_memory:
            pools.append(SwaPoolRow("swa", self.num_swa_layers, self.swa_bytes_per_token, self.window_tokens, self.swa_tokens,
                                    self.swa_need_tokens, self.swa_in_flight_tokens))
        return SglangDetails(
            sglang_version=SGLANG_VERSION, architecture=self.architecture, hybrid_swa_memory=self.hybrid_swa_memory,
            reason=self.reason, swa_full_tokens_ratio=self.swa_full_tokens_ratio, page_size=self.page_size,
            disable_overlap_schedule=self.disable_overlap_schedule,
            swa_eviction_interval_tokens=self.swa_eviction_interval, pools=tuple(pools),
            state_slots=self.state_slots, state_bytes=self.state_bytes,
            mamba_full_memory_ratio=self.mamba_full_memory_ratio, max_mamba_cache_size=self.max_mamba_cache_size,
            max_running_requests=self.max_running_requests, context_len_tokens=self.context_len_tokens,
            chunked_prefill_size_tokens=self.chunked_prefill_size, prefill_fits=self.prefill_fits,
            stages=self.stages)


@dataclass(frozen=True)
class FullPoolRow:
    pool: Literal["full"]
    num_layers: int
    per_token_bytes: int
    capacity_tokens: int
    per_request_tokens: int


@dataclass(frozen=True)
class SwaPoolRow:
    pool: Literal["swa"]
    num_layers: int
    per_token_bytes: int
    window_tokens: int | None
    capacity_tokens: int | None
    per_request_tokens: int | None
    in_flight_prefill_tokens: int


@dataclass(frozen=True)
class SglangDetails:
    """An SGLang result as results show it."""

    sglang_version: str  # the release the rules were read from
    architecture: str | None
    hybrid_swa_memory: bool
    reason: str
    swa_full_tokens_ratio: float
    page_size: int
    disable_overlap_schedule: bool
    swa_eviction_interval_tokens: int
    pools: tuple[FullPoolRow | SwaPoolRow, ...]
    state_slots: int
    state_bytes: int
    mamba_full_memory_ratio: float | None
    max_mamba_cache_size: int | None
    max_running_requests: int | None
    context_len_tokens: int | None
    chunked_prefill_size_tokens: int
    prefill_fits: bool | None
    stages: EngineStages


def hybrid_swa_decision(architecture: str | None, costs: tuple[LayerCost, ...]) -> tuple[bool, str]:
    target = [c for c in costs if c.source == "target"]
    has_window = any(c.kind == WINDOW for c in target)
    has_full = any(c.kind == FULL for c in target)
    if not has_window:
        return False, "no sliding-window or chunked layers: one token pool"
    if architecture in HYBRID_SWA_FORCED_OFF:
        return False, f"{architecture}: SGLang forces --disable-hybrid-swa-memory (not yet supported), every layer pays for every token"
    if architecture not in HYBRID_SWA_ARCHITECTURES:
        return False, f"{architecture or 'this architecture'} is not on SGLang's hybrid-SWA allowlist: every layer pays for every token"
    if not has_full:
        return False, "no full-attention layers: one token pool"
    return True, f"{architecture} is on SGLang's hybrid-SWA allowlist: a full pool and an SWA pool"


def swa_per_request_tokens(window: int, length: int, page: int, interval: int, num_speculative_tokens: int = 0,
                           overlap: bool = True) -> int:
    """``compute_swa_request_cap``'s ``per_request``: ``window + interval · draft_tokens + page +
    decode_alloc``. Without speculative decoding ``draft_tokens`` is 1 and ``decode_alloc`` one page;
    with ``n`` speculative tokens (EAGLE chain: ``n`` steps, top-k 1, ``n + 1`` draft tokens) the
    overlap scheduler keeps ``2 · get_alloc_len_per_decode() = 2 · max(n, n + 1)`` (kvplan uses
    ``n + 1`` for the non-overlap spec-v1 path, an approximation). A request shorter than its
    window holds its own tokens and one page."""
    if num_speculative_tokens:
        draft = num_speculative_tokens + 1
        decode_alloc = 2 * draft if overlap else draft
        return window + interval * draft + page + decode_alloc
    return min(cdiv(length, page) * page + page, window + interval + page + page)


def swa_admission_tokens(extend: int, max_new: int, window: int, page: int, chunk_limit: int | None) -> int:
    """``prefill_budget.estimate_swa_kv_tokens``: the SWA tokens a prefill reserves: the part of its
    chunk beyond the window, plus the window (or less for a short request), plus a page."""
    allocated = extend if chunk_limit is None else min(extend, chunk_limit)
    return max(allocated - window, 0) + min(extend + max_new, window) + page


def mamba_state_per_request_bytes(costs, ssm_dtype: str = "float32") -> int:
    """``mamba_cache_per_req``: conv elements in bfloat16 (``SGLANG_MAMBA_CONV_DTYPE``), SSM
    elements in ``ssm_dtype`` (float32 by default, ``mamba2_state_dtype``), over every state layer."""
    ssm = SSM_DTYPE_BYTES[ssm_dtype]
    return sum(c.state_conv_elements * 2 + c.state_temporal_elements * ssm for c in costs if c.kind == STATE)


def mamba_split(budget_bytes: int, per_req: int, ratio: float) -> tuple[int, int]:
    """``_handle_max_mamba_cache`` (ratio branch, no speculative decoding): (max_mamba_cache_size,
    KV bytes left), in SGLang's own float arithmetic (GB as floats, then ``int(· · 2**30)``)."""
    rest = budget_bytes / (1 << 30)
    mamba_budget_bytes = rest * ratio / (1 + ratio) * (1 << 30)
    k = int((mamba_budget_bytes - per_req) // per_req)
    kv_gb = rest - (k + 1) * per_req / (1 << 30)
    return k, int(kv_gb * (1 << 30))


def max_running_requests(token_capacity: int, context_len: int, max_mamba_cache_size: int | None) -> int:
    """``resolve_max_num_reqs`` without --max-running-requests (one DP worker, radix cache on)."""
    estimated = max(min(int(token_capacity / context_len * 512), 4096), 2048)
    n = min(estimated, token_capacity // 2)
    if max_mamba_cache_size is not None:
        n = min(n, max_mamba_cache_size // MAMBA_RUNNING_RATIO)
    return n


@dataclass(frozen=True)
class _Shape:
    """What the rules read, derived once from the layers and the knobs: the pools' layers and their bytes
    per token (``F``, ``S``), the workload (``L`` tokens, ``P`` of them prompt) and each request's needs."""

    hybrid: bool
    reason: str
    full_layers: tuple[LayerCost, ...]
    swa_layers: tuple[LayerCost, ...]
    full_bytes_per_token: int  # F
    swa_bytes_per_token: int  # S
    window: int | None  # the largest window in the SWA pool
    length: int  # L
    prompt: int  # P
    page: int
    ratio: float  # r
    interval: int
    chunks: int  # prefill chunks in flight: 2 with the overlap scheduler
    in_flight: int  # chunks · chunked_prefill_size + page (hybrid only)
    full_need: int  # ceil_page(L)
    swa_need: int | None  # compute_swa_request_cap's per_request (hybrid only)
    admit_full: int  # reserve(): paged extend + page + max_new

    @property
    def W(self) -> int:  # noqa: N802 - the rules' name for the window
        """The SWA pool's window (a hybrid model has window layers); 0 otherwise."""
        return self.window or 0

    @property
    def swa_need_tokens(self) -> int:
        return self.swa_need or 0


def _shape(costs: tuple[LayerCost, ...], architecture: str | None, target_len_tokens: int, *, ratio: float,
           page: int, chunked_prefill_size: int, disable_overlap_schedule: bool, swa_eviction_interval: int,
           prompt_len_tokens: int | None, num_speculative_tokens: int) -> _Shape:
    hybrid, reason = hybrid_swa_decision(architecture, costs)
    L = target_len_tokens
    P = L if prompt_len_tokens is None else min(prompt_len_tokens, L)
    interval = max(1, swa_eviction_interval)
    chunks = 1 if disable_overlap_schedule else 2
    attention = [c for c in costs if c.kind != STATE]
    in_swa_pool = [hybrid and c.kind == WINDOW and c.source == "target" for c in attention]
    swa_layers = tuple(c for c, swa in zip(attention, in_swa_pool) if swa)
    full_layers = tuple(c for c, swa in zip(attention, in_swa_pool) if not swa)
    window = max((c.window_tokens or 0 for c in swa_layers), default=None)
    swa_need = swa_per_request_tokens(window or 0, L, page, interval, num_speculative_tokens,
                                      not disable_overlap_schedule) if hybrid else None
    return _Shape(
        hybrid=hybrid, reason=reason, full_layers=full_layers, swa_layers=swa_layers,
        full_bytes_per_token=sum(c.bytes_per_token for c in full_layers),
        swa_bytes_per_token=sum(c.bytes_per_token for c in swa_layers), window=window, length=L, prompt=P,
        page=page, ratio=ratio, interval=interval, chunks=chunks,
        in_flight=chunks * chunked_prefill_size + page if hybrid else 0, full_need=cdiv(L, page) * page,
        swa_need=swa_need, admit_full=cdiv(P, page) * page + page + (L - P))


def _pools(s: _Shape, budget: int, max_total_tokens: int | None = None) -> tuple[int, int, Fraction]:
    """HybridSWAPoolConfigurator: (full pool tokens, SWA pool tokens (0 without one), steady concurrency);
    ``max_total_tokens`` (--max-total-tokens) caps the full pool, the SWA pool following it (``config_from_budget``)."""
    F, S, page = s.full_bytes_per_token, s.swa_bytes_per_token, s.page
    if budget <= 0 or F + S == 0:
        return 0, 0, Fraction(0)
    if s.hybrid:
        full = int(budget // (F + s.ratio * S))
        full -= full % page
        if max_total_tokens is not None and max_total_tokens < full:  # solved again from the capped count
            full = max_total_tokens - max_total_tokens % page
        swa = int(full * s.ratio)
        swa -= swa % page
        conc = min(Fraction(full, s.full_need), Fraction(max(swa - s.in_flight, 0), s.swa_need_tokens))
        return full, swa, conc
    full = budget // F
    full -= full % page
    if max_total_tokens is not None and max_total_tokens < full:
        full = max_total_tokens - max_total_tokens % page
    return full, 0, Fraction(full, s.full_need)


def _admitted(s: _Shape, full_tokens: int, swa_pool: int, chunked_prefill_size: int, running: int | None) -> int:
    """Admission: request n is admitted when its total (P + max_new = L) is below what the n − 1 before it
    left in the full pool, and its first chunk's SWA reservation below what they left in the SWA pool."""
    L, P, page = s.length, s.prompt, s.page
    admitted = (full_tokens - L - 1) // s.admit_full + 1 if full_tokens > L else 0
    if s.hybrid:
        first_chunk = swa_admission_tokens(cdiv(P, page) * page, L - P, s.W, page, chunked_prefill_size)
        if swa_pool > first_chunk:
            admitted = min(admitted, (swa_pool - first_chunk - 1) // s.swa_need_tokens + 1)
    if running is not None:
        admitted = min(admitted, max(running, 0))
    return admitted


def _failure(s: _Shape, mamba_k: int | None, running: int | None, full_tokens: int, swa_pool: int) -> str | None:
    """The start-up check that fails first (SGLang's message), None when it starts."""
    if mamba_k is not None and mamba_k <= 0:
        return (f"Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed "
                f"max_mamba_cache_size={mamba_k}")
    if running is not None and running <= 0:
        return (f"Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
                f"max_mamba_cache_size={mamba_k}, mamba_ratio={MAMBA_RUNNING_RATIO}, resulting "
                f"max_num_reqs={running}.")
    if s.hybrid and s.W + s.page >= swa_pool:  # _solve_pool_sizes validates before MemoryPoolConfig's check
        return (f"SWA pool ({swa_pool} tokens) cannot hold even one request: the prefill admission floor is "
                f"sliding_window_size ({s.window}) + page_size ({s.page}). Increase --swa-full-tokens-ratio or the "
                "total KV budget.")
    if full_tokens <= 0:
        return NOT_ENOUGH_MEMORY
    return None


def _prefill_fits(s: _Shape, swa_pool: int, chunked_prefill_size: int) -> bool | None:
    """The SWA pool holds a window plus one prefill chunk at full speed (None without an SWA pool)."""
    if not s.hybrid:
        return None
    return swa_pool >= min(s.full_need, cdiv(s.W + chunked_prefill_size, s.page) * s.page) + s.page


def _swa_notes(s: _Shape, swa_pool: int, steady: Fraction, failure: str | None, prefill_fits: bool | None,
               chunked_prefill_size: int, disable_overlap_schedule: bool, num_speculative_tokens: int) -> list[str]:
    """What the SWA pool does to prefill and decode (hybrid only)."""
    if not s.hybrid:
        return []
    notes = []
    if not prefill_fits and failure is None:
        notes.append(f"the SWA pool ({swa_pool:,} tokens) is smaller than a window plus one prefill chunk "
                     f"({s.window} + {chunked_prefill_size}): SGLang shrinks the chunks (_chunk_cap), prefill slows")
    scheduler = "--disable-overlap-schedule" if disable_overlap_schedule else "overlap scheduler"
    notes.append(f"steady decode: each request holds up to {s.swa_need_tokens:,} SWA tokens (W + {s.interval}"
                 + (f" · {num_speculative_tokens + 1} draft tokens" if num_speculative_tokens else "")
                 + " + page + decode allocation) "
                 f"(SGLANG_SWA_EVICTION_INTERVAL {s.interval}), the batch {s.in_flight:,} more for "
                 f"{plural(s.chunks, 'prefill chunk')} in flight ({scheduler})")
    if failure is None and steady < 1 <= Fraction(max(swa_pool - s.page, 0), s.swa_need_tokens):
        notes.append("below SGLang's own worst case for one decoding request with the prefill chunks in flight "
                     "(compute_swa_request_cap): it shrinks the chunks (_chunk_cap) and decodes fewer at once")
    return notes


def _model_notes(s: _Shape, costs: tuple[LayerCost, ...], architecture: str | None, failure: str | None,
                 mamba_k: int | None, state: int, mamba_full_memory_ratio: float, mamba_ssm_dtype: str,
                 num_speculative_tokens: int) -> list[str]:
    """What kvplan does not model, or models its own way, for this architecture, state and drafter."""
    notes = []
    has_drafter = any(c.source == "drafter" for c in costs)
    if architecture and architecture.startswith("DeepseekV4"):
        notes.append("SGLang sizes DeepSeek-V4 with DSV4PoolConfigurator (ratio 0.1 and page 256 by default, "
                     "arg_groups/model_overrides/deepseek_v4.py), not this rule")
    if s.hybrid:
        notes.append("not modelled: the SWA request-cap pool (explicit --max-running-requests with "
                     "--disable-radix-cache sizes the SWA pool from compute_swa_request_cap)")
    if mamba_k is not None and failure is None:
        notes.append(f"--mamba-full-memory-ratio {mamba_full_memory_ratio:g}: {mamba_k:,} state slots of {state:,} B "
                     f"(SSM state {mamba_ssm_dtype}); running requests capped at {mamba_k:,} // "
                     f"{MAMBA_RUNNING_RATIO} = {mamba_k // MAMBA_RUNNING_RATIO:,} (resolve_max_num_reqs)")
        if has_drafter:
            notes.append("not modelled: the speculative intermediate state SGLang reserves for Mamba hybrids")
    if has_drafter and s.hybrid:
        notes.append("drafter layers counted in the full pool")
    if num_speculative_tokens and s.hybrid:
        notes.append(f"speculative decoding: {num_speculative_tokens + 1} draft tokens widen each request's SWA share "
                     f"to W + {s.interval} · {num_speculative_tokens + 1} + page + decode allocation "
                     f"(compute_swa_request_cap)")
    return notes


def sglang_model(
    costs: tuple[LayerCost, ...],
    architecture: str | None,
    budget_bytes: int,
    target_len_tokens: int,
    *,
    swa_full_tokens_ratio: float = DEFAULT_SWA_FULL_TOKENS_RATIO,
    page_size: int = 1,
    chunked_prefill_size: int = 8192,
    disable_overlap_schedule: bool = False,
    swa_eviction_interval: int = DEFAULT_SWA_EVICTION_INTERVAL,
    prompt_len_tokens: int | None = None,
    mamba_full_memory_ratio: float = DEFAULT_MAMBA_FULL_MEMORY_RATIO,
    mamba_ssm_dtype: str = "float32",
    context_len_tokens: int | None = None,
    num_speculative_tokens: int = 0,
    max_total_tokens: int | None = None,
) -> SglangResult:
    """SGLang's pools and scheduler for one workload, in stages: the shape (which layers go to which pool,
    each request's needs), the recurrent state's share, the pools, admission, the start-up checks, the notes."""
    s = _shape(costs, architecture, target_len_tokens, ratio=swa_full_tokens_ratio, page=page_size,
               chunked_prefill_size=chunked_prefill_size, disable_overlap_schedule=disable_overlap_schedule,
               swa_eviction_interval=swa_eviction_interval, prompt_len_tokens=prompt_len_tokens,
               num_speculative_tokens=num_speculative_tokens)
    L, P = s.length, s.prompt
    state = mamba_state_per_request_bytes(costs, mamba_ssm_dtype)
    context_len = context_len_tokens or L
    # with a Mamba state (``state``): the state slots and the running-request cap, else None
    mamba_k, kv_budget = mamba_split(budget_bytes, state, mamba_full_memory_ratio) if state else (None, budget_bytes)
    slots = mamba_k + 1 if mamba_k is not None and mamba_k > 0 else 0
    full_tokens, swa_pool, steady = _pools(s, kv_budget, max_total_tokens)
    running = max_running_requests(full_tokens, context_len, mamba_k) if state else None
    if running is not None:
        steady = min(steady, Fraction(max(running, 0)))
    admitted = _admitted(s, full_tokens, swa_pool, chunked_prefill_size, running)
    failure = _failure(s, mamba_k, running, full_tokens, swa_pool)
    notes: list[str] = []
    if max_total_tokens is not None and full_tokens == max_total_tokens - max_total_tokens % s.page:
        notes.append(f"--max-total-tokens {max_total_tokens:,} caps the full pool at {full_tokens:,} tokens "
                     "(_apply_token_constraints)" + (f", the SWA pool at {swa_pool:,}" if s.hybrid else ""))
    if failure is None and full_tokens < s.full_need:
        notes.append(f"the full pool holds {full_tokens:,} tokens, less than one {L:,}-token request: SGLang caps "
                     "the request length at the pool size")
    prefill_fits = _prefill_fits(s, swa_pool, chunked_prefill_size)
    notes += _swa_notes(s, swa_pool, steady, failure, prefill_fits, chunked_prefill_size, disable_overlap_schedule,
                        num_speculative_tokens)
    notes += _model_notes(s, costs, architecture, failure, mamba_k, state, mamba_full_memory_ratio, mamba_ssm_dtype,
                          num_speculative_tokens)
    longest = max(min(context_len, full_tokens) - PROMPT_MARGIN_TOKENS, 0)
    if P > longest and failure is None and context_len <= full_tokens:
        notes.append(f"a {P:,}-token prompt is refused: validate_input_length allows fewer than "
                     f"min(context_len - 1, pool - 1) - 5 = {longest + 1:,} tokens (context_len {context_len:,})")
    starts = failure is None
    conc = min(Fraction(admitted), steady) if starts and P <= longest else Fraction(0)
    return SglangResult(
        architecture=architecture, hybrid_swa_memory=s.hybrid, reason=s.reason, swa_full_tokens_ratio=s.ratio,
        page_size=s.page, num_full_layers=len(s.full_layers), num_swa_layers=len(s.swa_layers),
        full_bytes_per_token=s.full_bytes_per_token, swa_bytes_per_token=s.swa_bytes_per_token,
        window_tokens=s.window, full_tokens=full_tokens, swa_tokens=swa_pool if s.hybrid else None,
        state_slots=slots, state_bytes=slots * state, state_bytes_per_request=state,
        full_need_tokens=s.full_need, swa_need_tokens=s.swa_need, concurrency=conc,
        chunked_prefill_size=chunked_prefill_size, prefill_fits=prefill_fits, starts=starts,
        failure=failure, pool_bytes=full_tokens * s.full_bytes_per_token + swa_pool * s.swa_bytes_per_token
        + slots * state, notes=tuple(notes),
        disable_overlap_schedule=disable_overlap_schedule, swa_eviction_interval=s.interval, prompt_len_tokens=P,
        swa_in_flight_tokens=s.in_flight, admission_concurrency=admitted if starts else 0,
        steady_concurrency=steady if starts else Fraction(0),
        longest_prompt_tokens=longest if starts else 0,
        mamba_full_memory_ratio=mamba_full_memory_ratio if state else None, max_mamba_cache_size=mamba_k,
        max_running_requests=running, context_len_tokens=context_len, max_total_tokens=max_total_tokens,
    )


# --- in `kvplan compare`: SGLang's row and its --swa-full-tokens-ratio advice -----------------------
# The advice tries every ratio from 0.001 to 1.0 in steps of 0.001, each through sglang_model itself,
# and keeps the one serving the most requests, then with the widest margin (kvplan.engines.compare).

RATIO_STEP = Fraction(1, 1000)


@dataclass(frozen=True)
class SglangKnobs:
    """SGLang's settings its row ran with (the row's ``knobs``)."""

    swa_full_tokens_ratio: float | None  # None without the hybrid SWA pool
    page_size: int
    hybrid_swa_memory: bool
    chunked_prefill_size: int
    disable_overlap_schedule: bool
    swa_eviction_interval: int
    context_length: int | None
    mamba_full_memory_ratio: float | None
    mamba_ssm_dtype: str | None
    max_total_tokens: int | None  # --max-total-tokens (None: the profiled pool)


@dataclass(frozen=True)
class SglangInputs:
    """SGLang's knobs in ``kvplan compare`` (compare's options of the same names; the defaults SGLang's own)."""

    swa_full_tokens_ratio: float = DEFAULT_SWA_FULL_TOKENS_RATIO
    sglang_page_size: int = 1
    sglang_disable_overlap_schedule: bool = False
    sglang_swa_eviction_interval: int = DEFAULT_SWA_EVICTION_INTERVAL
    mamba_full_memory_ratio: float = DEFAULT_MAMBA_FULL_MEMORY_RATIO  # no option: SGLang's fallback
    sglang_mamba_ssm_dtype: str = "float32"  # no option: SGLANG_MAMBA_SSM_DTYPE unset
    sglang_max_total_tokens: int | None = None


def knobs_of(inputs: CompareInputs) -> SglangInputs:
    return inputs.knobs("sglang", SglangInputs())


def sglang_result(costs, architecture: str | None, inputs: CompareInputs, ratio: float) -> SglangResult:
    """SGLang's model on the workload with ``--swa-full-tokens-ratio ratio`` and every other knob from the inputs."""
    k = knobs_of(inputs)
    return sglang_model(
        costs, architecture, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
        swa_full_tokens_ratio=ratio, page_size=k.sglang_page_size,
        chunked_prefill_size=inputs.max_num_batched_tokens,
        disable_overlap_schedule=k.sglang_disable_overlap_schedule,
        swa_eviction_interval=k.sglang_swa_eviction_interval, prompt_len_tokens=inputs.target_prompt_len_tokens,
        mamba_full_memory_ratio=k.mamba_full_memory_ratio, mamba_ssm_dtype=k.sglang_mamba_ssm_dtype,
        context_len_tokens=inputs.context_len_tokens, num_speculative_tokens=inputs.num_speculative_tokens,
        max_total_tokens=k.sglang_max_total_tokens,
    )


def sglang_row(costs: tuple[LayerCost, ...], architecture: str | None, inputs: CompareInputs,
               lb: LowerBound, ratio: float | None = None) -> EngineRow:
    r = sglang_result(costs, architecture, inputs, knobs_of(inputs).swa_full_tokens_ratio if ratio is None else ratio)
    knobs = SglangKnobs(
        swa_full_tokens_ratio=r.swa_full_tokens_ratio if r.hybrid_swa_memory else None,
        page_size=r.page_size,
        hybrid_swa_memory=r.hybrid_swa_memory,
        chunked_prefill_size=r.chunked_prefill_size,
        disable_overlap_schedule=r.disable_overlap_schedule,
        swa_eviction_interval=r.swa_eviction_interval,
        context_length=r.context_len_tokens,
        mamba_full_memory_ratio=r.mamba_full_memory_ratio,
        mamba_ssm_dtype=knobs_of(inputs).sglang_mamba_ssm_dtype if r.mamba_full_memory_ratio is not None else None,
        max_total_tokens=r.max_total_tokens,
    )
    return EngineRow(
        engine="sglang", name="hybrid SWA pool" if r.hybrid_swa_memory else "one token pool", starts=r.starts, kv_tokens=r.full_tokens,
        max_concurrency=r.max_concurrency, reserved_per_request_bytes=r.reserved_per_request_bytes,
        lower_bound_bytes=lb.per_request_bytes, knobs=knobs, details=r.details(), failure=r.failure,
        notes=(r.reason, *r.notes),
    )


def sglang_pool_margins(r: SglangResult, requests: int) -> dict[str, float]:
    """Each pool's capacity over what ``requests`` decoding requests need in it (the SWA pool
    after the prefill chunks in flight)."""
    out = {"full": r.full_tokens / (requests * r.full_need_tokens)}
    if r.hybrid_swa_memory and r.swa_tokens is not None and r.swa_need_tokens is not None:
        out["swa"] = (r.swa_tokens - r.swa_in_flight_tokens) / (requests * r.swa_need_tokens)
    return out


def sglang_score(r: SglangResult) -> tuple[int, float]:
    n = math.floor(r.max_concurrency)
    if not r.starts or n < 1:
        return NO_SCORE
    return n, min(sglang_pool_margins(r, n).values())


def ratio_grid() -> list[float]:
    return [float(k * RATIO_STEP) for k in range(1, int(1 / RATIO_STEP) + 1)]


def advise_sglang(costs: tuple[LayerCost, ...], architecture: str | None,
                  inputs: CompareInputs) -> NotApplicable | SglangNoRatio | SglangNoChange | SglangAdvice:
    default_ratio = knobs_of(inputs).swa_full_tokens_ratio
    default = sglang_result(costs, architecture, inputs, default_ratio)
    if not default.hybrid_swa_memory:
        return NotApplicable(False, f"the ratio has no effect: {default.reason}", rounded(default.max_concurrency),
                             reaches(default.max_concurrency, inputs.target_concurrency))
    best, best_score = None, NO_SCORE
    grid = ratio_grid()
    for ratio in grid:
        r = sglang_result(costs, architecture, inputs, ratio)
        score = sglang_score(r)
        if score > best_score:
            best, best_score = r, score
    if best is None:
        return SglangNoRatio(True, None, rounded(default.max_concurrency), len(grid),
                             f"no ratio in (0, 1] serves one {inputs.target_len_tokens:,}-token request",
                             reaches(default.max_concurrency, inputs.target_concurrency))
    n, margin = best_score
    assert best.swa_tokens is not None, "a hybrid result has a SWA pool"
    base = sglang_score(default)[0]
    if n <= base:  # advice is offered only when it serves more than the engine's default
        return SglangNoChange(
            True, None, rounded(default.max_concurrency), len(grid), base,
            f"no change: the default {default_ratio:g} serves {plural(base, 'request')}; "
            f"none of the {len(grid):,} ratios tried serves more (SGLang's own worst case, "
            "compute_swa_request_cap, speculation included)",
            reaches(default.max_concurrency, inputs.target_concurrency))
    return SglangAdvice(
        default_requests=base,
        gain_requests=n - base,
        candidates_tried=len(grid),
        applicable=True,
        swa_full_tokens_ratio=best.swa_full_tokens_ratio,
        flag=f"--swa-full-tokens-ratio {best.swa_full_tokens_ratio:g}",
        max_concurrency=rounded(best.max_concurrency),
        requests=n,
        margin=rounded(margin),
        pool_margins={k: rounded(v) for k, v in sglang_pool_margins(best, n).items()},
        full_tokens=best.full_tokens,
        swa_tokens=best.swa_tokens,
        default_swa_full_tokens_ratio=default_ratio,
        default_max_concurrency=rounded(default.max_concurrency),
        reaches_target=reaches(best.max_concurrency, inputs.target_concurrency),
    )


def sglang_compared(costs: tuple[LayerCost, ...], architecture: str | None, inputs: CompareInputs,
                    lb: LowerBound) -> EngineAnswer:
    """SGLang's answer to the workload: its row and its ``--swa-full-tokens-ratio`` advice."""
    return EngineAnswer((sglang_row(costs, architecture, inputs, lb),), advise_sglang(costs, architecture, inputs))


class SGLang(EngineDefaults):
    """SGLang in ``kvplan compare`` (``kvplan.engines.engine.Engine``)."""

    name: str = "sglang"
    title: str = "SGLang"
    version_option: str | None = "sglang_version"
    inputs_type: type | None = SglangInputs
    advice_type: Any = NotApplicable | SglangNoRatio | SglangNoChange | SglangAdvice
    knobs_type: type = SglangKnobs

    def versions(self, given: str | None) -> dict[str, str]:
        return {"sglang": require_version("--sglang-version", given, SGLANG_VERSION, self.title)}

    def compared(self, run: CompareRun) -> EngineAnswer:
        return sglang_compared(run.costs, run.architecture, run.inputs, run.lower_bound)

    def knobs_text(self, row: dict) -> str:
        k = row["knobs"]
        cap = f", --max-total-tokens {k['max_total_tokens']:,}" if k.get("max_total_tokens") else ""
        if not k["hybrid_swa_memory"]:
            return f"one pool (hybrid SWA off), page {k['page_size']}{cap}"
        return (f"--swa-full-tokens-ratio {k['swa_full_tokens_ratio']:g}, page {k['page_size']}{cap}"
                + (", no overlap" if k.get("disable_overlap_schedule") else "")
                + (f", --mamba-full-memory-ratio {k['mamba_full_memory_ratio']:g}" if k.get("mamba_full_memory_ratio")
                   else ""))

    def advice_cells(self, advice: dict) -> tuple[str, str, bool | None, str]:
        s = advice
        if s["applicable"] and s.get("swa_full_tokens_ratio") is not None:
            return (s["flag"], f"{s['max_concurrency']:.2f}", s["reaches_target"],
                    f"default {s['default_swa_full_tokens_ratio']:g} gives {s['default_max_concurrency']:.2f}; "
                    f"+{plural(s['gain_requests'], 'request')} (best of {s['candidates_tried']:,} ratios); "
                    f"smallest pool margin {s['margin']:.3f}")
        return "(swa-full-tokens-ratio)", f"{s['max_concurrency']:.2f}", s["reaches_target"], s["reason"]


ENGINE = SGLang()
