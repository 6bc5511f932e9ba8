"""TensorRT-LLM's variable sliding window attention (VSWA): one block pool per window, and
the capacity scheduler that admits requests into those pools.

Rules read from TensorRT-LLM 1.2.0rc2 (``tensorrt_llm/version.py``), commit
``b35ac1b64368513d215c57d2ed01d62d910df8da``; file names below are relative to that tree.

- Every layer has a ``max_attention_window``: the sliding window (or chunk) for local
  layers, ``max_seq_len`` (the workload's length here) for full layers; windows above
  ``max_seq_len`` are clamped to it (``_torch/pyexecutor/resource_manager.py``,
  ``KVCacheManager.__init__``). Layers of one window share one ``WindowBlockManager``.
- **Windows by default**: ``kv_cache_config.max_attention_window`` is unset by default
  (``llmapi/llm_args.py KvCacheConfig``), so every layer gets ``max_seq_len`` and there is one
  pool; the model's own windows (VSWA) need it set (``--trtllm-max-attention-window``, shown as
  a knob).
- **Memory split** (``cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp
  BaseKVCacheManager::calculateMaxNumBlocks``): each distinct window gets ``share · budget``,
  equal shares ``1.0f / n`` by default or ``TRTLLM_WINDOW_SIZE_SHARES`` (ascending window order,
  one per window, each in [0, 1], sum > 0, **normalised** to sum 1 in float32). Per window
  ``maxTokens = uint64(budget · share / bytes_per_token)``, ``blocks = ceilDiv(maxTokens, 32)``
  (rounded *up*). A later release's Python helper floors and asserts ``sum == 1.0``; 1.2.0rc2
  does neither.
- **Chunked prefill** is off by default (``enable_chunked_prefill`` False): a prompt longer
  than ``max_num_tokens`` does not fit one context batch. kvplan's row assumes it on and shows
  it as a knob, with a note when the prompt needs it.
- **Temporary attention window** (``resource_manager.py _set_temp_attention_window_inputs``
  and ``cpp/include/tensorrt_llm/batch_manager/kvCacheManager.h
  calculateTemporaryAttentionWindow``, read at commit ``2213a799``): when some window is below ``max_seq_len``, every
  pool whose window ``W < max_seq_len − 1`` gets ``temp = min(max_num_tokens,
  max_seq_len − 1 − W)`` (``max_num_tokens`` 8192 by default), else 0.
- **Admission, GUARANTEED_NO_EVICT** (the default ``CapacitySchedulerPolicy``,
  ``llmapi/llm_args.py SchedulerConfig``):
  ``cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp`` admits a request while
  ``getRemainingBlocksToCompletion`` fits in every pool's free blocks
  (``scheduledBlocksManager.h``). ``kvCacheManager.cpp getRemainingBlocksToCompletion``:
  ``ceil(min(P + max_new, W + temp) / 32)`` blocks, plus one when the request is longer
  than the window, crosses a block boundary in decode and ``ceil(L/32)`` exceeds that.
- **Admission, MAX_UTILIZATION**: ``getNeededBlocksOneStep`` for a first context chunk,
  ``ceil(min(P + draft, W + max_new) / 32)`` blocks (the source names ``max_new`` the
  chunk size); started requests are paused when a step does not fit.
- **Prefill**: ``resource_manager.py prepare_resources`` calls ``add_sequence(prompt_len)``
  on the first context chunk; ``kvCacheManager.cpp addSequence`` allocates
  ``ceil(min(P, maxTokenNum + temp) / 32)`` blocks in *every* pool, with
  ``maxTokenNum = max(W, max_seq_len)`` (``BlockManager`` constructor: "SWA allocates
  blocks linearly"). A window pool therefore needs ``ceil(P/32)`` blocks for one prompt;
  out-of-window blocks go back only in decode. The longest prompt an empty engine can
  prefill is the smallest pool's ``blocks · 32``.
- **Steady decode**: ``WindowBlockManager::adjustBlocksIfNeeded`` detaches front blocks
  while the sequence holds ``≥ W + 32`` tokens, so a request keeps ``cdiv(W, 32) + 1``
  blocks in a window below its length, ``cdiv(L, 32)`` in a window at least as long.
- **Worked numbers** (gemma-3-27b, 40 GiB, equal shares, L = 131072): window-1024 pool
  20 GiB / (52 · 8192 B) = 50,412 tokens, 1,575 blocks; full pool 262,144 tokens, 8,192
  blocks. Admission: temp = min(8192, 131071 − 1024) = 8192, ``ceil(9216/32) = 288``
  blocks in the window pool, 4,096 in the full pool → 2 requests. Prefill of a 131,072-token
  prompt needs 4,096 blocks in the window pool, which has 1,575: the longest prompt is
  1,575 · 32 = 50,400 tokens. gpt-oss-20b (window 128): admission ``ceil(8320/32) = 260``.
- **Too little memory for one sequence**: ``adjust_window_sizes_for_vswa`` shrinks the
  windows from the largest down (PR #5880); the engine starts, with a shorter maximum length.
- **Mamba / GDN hybrids** (``_torch/pyexecutor/_util.py get_kv_cache_manager_cls``: Nemotron-H
  and Qwen3-Next get ``MambaHybridCacheManager``, ``_torch/pyexecutor/mamba_cache_manager.py``):
  its constructor first asserts ``not kv_cache_config.enable_block_reuse`` ("mamba hybrid cache
  requires block reuse to be disabled in KV cache config"), and block reuse is on by default
  (``KvCacheConfig.enable_block_reuse = True``): with the defaults the engine does not start.
  Then ``MambaCacheManager`` allocates ``conv_states [layers, max_batch_size, conv_dim, d_conv − 1]``
  in the model dtype and ``ssm_states [layers, max_batch_size, nheads, head_dim, d_state]`` in
  ``mamba_ssm_cache_dtype`` ("auto": the model dtype), ``conv_dim = head_dim · nheads + 2 ·
  n_groups · d_state`` per rank: the state is sized by ``max_batch_size`` (2048 by default,
  ``BuildConfig.max_batch_size``), not by what fits. It is allocated before the KV pool
  (``KvCacheCreator`` profiles with it in place), so it comes out of the budget first; a state
  larger than the budget runs out of memory, and a pool with no block left fails
  ``get_max_atten_window_upper_bound`` ("Impossible to fit in any sequence in kvCache").
  Requests beyond ``max_batch_size`` are never scheduled (``create_py_executor_instance``:
  the capacity scheduler's capacity is ``max_batch_size``; ``_prepare_mamba_cache_blocks``
  raises "run out of mamba cache blocks" past it).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Mapping

from kvplan.engines.compare import (DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_NUM_TOKENS, GUARANTEED_NO_EVICT, NO_SCORE,
                                    TOKENS_PER_BLOCK, CompareInputs, EngineAnswer, EngineRow, EngineStages, Figure,
                                    reaches, require_version, rounded)
from kvplan.engines.engine import CompareRun, EngineDefaults
from kvplan.engines.layer_costs import FULL, STATE, LayerCost
from kvplan.engines.lower_bound import LowerBound
from kvplan.errors import OptionError
from kvplan.results.advice import NotApplicable, TrtllmNoChange, TrtllmNoSplit, TrtllmSettings, TrtllmShares
from kvplan.units import Bisection, cdiv, plural

TRTLLM_VERSION = "1.2.0rc2"  # tensorrt_llm/version.py at the commit below
TRTLLM_COMMIT = "b35ac1b64368513d215c57d2ed01d62d910df8da"
BLOCK_REUSE_ASSERT = "mamba hybrid cache requires block reuse to be disabled in KV cache config"
NO_SEQUENCE_FITS = "Impossible to fit in any sequence in kvCache"
# _util.py get_kv_cache_manager_cls: is_nemotron_hybrid(config) or is_qwen3_next(config)
TRTLLM_MAMBA_HYBRIDS = ("NemotronHForCausalLM", "Qwen3NextForCausalLM")
REUSE_FIX = "kv_cache_config.enable_block_reuse=false (--no-trtllm-enable-block-reuse)"
BATCH_FIX = "a max_batch_size whose Mamba state leaves KV blocks (--trtllm-max-batch-size; the advice names one)"
MAMBA_STAGE = "KvCacheCreator.build_managers → MambaHybridCacheManager.__init__"
MAX_UTILIZATION = "MAX_UTILIZATION"
SCHEDULER_POLICIES = (GUARANTEED_NO_EVICT, MAX_UTILIZATION)
NO_FREE_BLOCKS = "allocateBlock: TLLM_CHECK(hasFreeBlocks) fails, no free blocks left"

RULE_POOL = "calculateMaxNumBlocks: ceilDiv(uint64(budget · share / bytes per token), 32) per window"
RULE_PREFILL = ("prepare_resources → addSequence(prompt_len): ceil(P/32) blocks in every window pool "
                "(maxTokenNum = max(W, max_seq_len)); longest prompt = smallest pool · 32")
RULE_ADMIT = {
    GUARANTEED_NO_EVICT: "getRemainingBlocksToCompletion: ceil(min(L, W + temp)/32) (+1) blocks per pool, "
                         "whole requests",
    MAX_UTILIZATION: "getNeededBlocksOneStep (first context chunk): ceil(min(P, W + max_new)/32) blocks per "
                     "pool, whole requests",
}
RULE_STEADY = "adjustBlocksIfNeeded: cdiv(W, 32) + 1 blocks below the length, cdiv(L, 32) otherwise"


@dataclass(frozen=True)
class TrtllmPool:
    window_tokens: int  # max_attention_window of this pool
    num_layers: int
    bytes_per_token: int  # one token across the pool's layers
    share: float
    capacity_tokens: int  # int(budget · share / bytes_per_token), before block rounding
    num_blocks: int  # capacity // tokens_per_block
    blocks_per_request: int  # steady decode
    concurrency: Fraction  # steady decode: num_blocks / blocks_per_request
    temporary_window_tokens: int = 0
    admission_blocks: int = 0  # what the scheduler reserves for one request at admission
    prefill_blocks: int = 0  # what addSequence allocates for the workload's prompt

    def row(self, tokens_per_block: int) -> "TrtllmPoolRow":
        return TrtllmPoolRow(self.window_tokens, self.num_layers, self.bytes_per_token, round(self.share, 6),
                             self.capacity_tokens, self.num_blocks, self.num_blocks * tokens_per_block,
                             self.temporary_window_tokens, self.admission_blocks, self.prefill_blocks,
                             self.blocks_per_request, round(float(self.concurrency), 6))


@dataclass(frozen=True)
class TrtllmPoolRow:
    """One window pool as results show it."""

    window_tokens: int
    num_layers: int
    per_token_bytes: int
    share: float
    capacity_tokens: int
    num_blocks: int
    kv_tokens: int
    temporary_attention_window_tokens: int
    admission_blocks_per_request: int
    prefill_blocks_per_request: int
    blocks_per_request: int
    max_concurrency: float


@dataclass(frozen=True)
class AdjustedWindow:
    window_tokens: int
    adjusted_to_tokens: int


@dataclass(frozen=True)
class TrtllmResult:
    pools: tuple[TrtllmPool, ...]
    tokens_per_block: int
    shares_given: bool
    adjusted_windows: tuple[tuple[int, int], ...]  # (window, shrunk to) from adjust_window_sizes_for_vswa
    state_slots: int
    state_bytes: int
    state_bytes_per_request: int
    concurrency: Fraction  # requests of the workload served at once (0 when its prompt cannot be prefilled)
    pool_bytes: int
    starts: bool = True
    failure: str | None = None
    notes: tuple[str, ...] = ()
    scheduler_policy: str = GUARANTEED_NO_EVICT
    max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS
    prompt_len_tokens: int = 0
    max_attention_window: bool = False
    admission_concurrency: int = 0
    steady_concurrency: Fraction = Fraction(0)
    longest_prompt_tokens: int = 0
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    enable_block_reuse: bool = True
    failure_stage: str | None = None
    failure_type: str | None = None
    fix: str | None = None  # the engine's own setting that removes the failure

    @property
    def max_concurrency(self) -> float:
        return float(self.concurrency)

    @property
    def kv_tokens(self) -> int:
        """Tokens the largest-window pool holds (blocks · tokens_per_block)."""
        return self.pools[-1].num_blocks * self.tokens_per_block if self.pools else 0

    @property
    def windows(self) -> tuple[int, ...]:
        return tuple(p.window_tokens for p in self.pools)

    @property
    def reserved_per_request_bytes(self) -> int:
        if self.concurrency <= 0:
            return sum(p.blocks_per_request * self.tokens_per_block * p.bytes_per_token for p in self.pools) + \
                self.state_bytes_per_request
        return math.ceil(self.pool_bytes / self.concurrency)

    @property
    def stages(self) -> EngineStages:
        return EngineStages(
            engine="trtllm", version=f"{TRTLLM_VERSION} ({TRTLLM_COMMIT[:9]})",
            kv_tokens=Figure(self.kv_tokens, "largest window pool: blocks · 32 (" + RULE_POOL + ")"),
            longest_prompt_tokens=Figure(self.longest_prompt_tokens, RULE_PREFILL),
            admission_concurrency=Figure(self.admission_concurrency, RULE_ADMIT[self.scheduler_policy]),
            steady_concurrency=Figure(float(self.steady_concurrency), RULE_STEADY),
            starts=Figure(self.starts, "Mamba hybrids: MambaHybridCacheManager asserts block reuse off and "
                                       "allocates the state for max_batch_size first; otherwise starts "
                                       "(adjust_window_sizes_for_vswa shrinks windows instead of failing)"),
            prompt_len_tokens=self.prompt_len_tokens,
        )

    def details(self) -> "TrtllmDetails":
        """The result as ``compare`` shows it (its engine row's ``details``)."""
        return TrtllmDetails(
            trtllm_version=TRTLLM_VERSION, trtllm_commit=TRTLLM_COMMIT,
            max_attention_window="model windows" if self.max_attention_window else None,
            scheduler_policy=self.scheduler_policy, max_num_tokens=self.max_num_tokens,
            tokens_per_block=self.tokens_per_block, window_shares="given" if self.shares_given else "equal",
            pools=tuple(p.row(self.tokens_per_block) for p in self.pools),
            adjusted_windows=tuple(AdjustedWindow(w, a) for w, a in self.adjusted_windows),
            max_batch_size=self.max_batch_size, enable_block_reuse=self.enable_block_reuse,
            state_slots=self.state_slots, state_bytes_per_request=self.state_bytes_per_request,
            state_bytes=self.state_bytes, stages=self.stages)


@dataclass(frozen=True)
class TrtllmDetails:
    """A TensorRT-LLM result as results show it."""

    trtllm_version: str
    trtllm_commit: str
    max_attention_window: str | None  # "model windows" with --trtllm-max-attention-window
    scheduler_policy: str
    max_num_tokens: int
    tokens_per_block: int
    window_shares: str  # "given" (--trtllm-window-shares) or "equal"
    pools: tuple[TrtllmPoolRow, ...]
    adjusted_windows: tuple[AdjustedWindow, ...]
    max_batch_size: int
    enable_block_reuse: bool
    state_slots: int
    state_bytes_per_request: int
    state_bytes: int
    stages: EngineStages


def window_of(cost: LayerCost, max_seq_len: int, max_attention_window: bool = True) -> int:
    if cost.kind == FULL or not max_attention_window:
        return max_seq_len
    return min(cost.window_tokens or max_seq_len, max_seq_len)


def window_bytes_per_token(costs: tuple[LayerCost, ...], max_seq_len: int,
                           max_attention_window: bool = True) -> dict[int, tuple[int, int]]:
    """{window: (layers, bytes per token)}, ascending window order; without
    ``max_attention_window`` (TensorRT-LLM's default) every layer attends ``max_seq_len``."""
    out: dict[int, list[int]] = {}
    for c in costs:
        if c.kind == STATE:
            continue
        out.setdefault(window_of(c, max_seq_len, max_attention_window), []).append(c.bytes_per_token)
    return {w: (len(v), sum(v)) for w, v in sorted(out.items())}


def adjust_window_sizes(windows: dict[int, tuple[int, int]], pool_bytes: int) -> list[tuple[int, int]]:
    """``adjust_window_sizes_for_vswa``: when one sequence of every window does not fit, fill
    windows from the smallest up with the layers still unserved, and cap the larger windows
    at the tokens reached. Returns (window, new window) for the windows that shrink."""
    required = sum(w * b for w, (_, b) in windows.items())
    if required < pool_bytes:
        return []
    remaining = pool_bytes
    remaining_bytes = {w: b for w, (_, b) in windows.items()}
    accum, prev, changes = 0, 0, []
    for w in windows:
        if remaining > 0 and remaining_bytes:
            per_token = sum(remaining_bytes.values())
            tokens = min(remaining // per_token, w - prev)
            remaining -= tokens * per_token
            accum += tokens
            if accum < w:
                remaining = 0
        if accum != w:
            changes.append((w, accum))
        remaining_bytes.pop(w)
        prev = w
    return changes


def parse_shares(text: str) -> tuple[float, ...]:
    try:
        shares = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise OptionError(f"--trtllm-window-shares {text!r}: write comma-separated fractions, e.g. 0.1,0.9") from None
    # calculateMaxNumBlocks: "Shares must be in value range [0,1]", "Sum of shares must be > 0."
    if not shares or any(not 0 <= s <= 1 for s in shares) or sum(shares) <= 0:
        raise OptionError(f"--trtllm-window-shares {text!r}: every share must be in [0, 1] and their sum above 0 "
                          "(TensorRT-LLM checks both, then normalises them)")
    return shares


def f32(x: float) -> float:
    """The float32 value C++ stores (shares are ``float`` in calculateMaxNumBlocks)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def effective_shares(given: tuple[float, ...] | None, n: int) -> tuple[float, ...]:
    """``windowSizeToShare``: ``1.0f / n`` each, or the given shares normalised in float32."""
    if given is None:
        return tuple(f32(1.0 / n) for _ in range(n))
    total = 0.0
    for x in given:
        total = f32(total + f32(x))
    return tuple(f32(f32(x) / total) for x in given)


def temporary_window(window: int, max_seq_len: int, max_num_tokens: int, any_sliding: bool) -> int:
    """``calculateTemporaryAttentionWindow`` with the PyTorch inputs (paged context FMHA on,
    ``max_input_len = max_seq_len − 1``), set only when some window is below ``max_seq_len``."""
    max_input_len = max_seq_len - 1
    if not any_sliding or max_input_len <= window:
        return 0
    return max(0, min(max_num_tokens, max_input_len - window))


def admission_blocks(policy: str, window: int, temp: int, prompt: int, length: int, tpb: int) -> int:
    """Blocks one new request needs in a pool before it is admitted (no blocks allocated yet)."""
    max_new = length - prompt
    if policy == MAX_UTILIZATION:  # getNeededBlocksOneStep, first context chunk, no draft tokens
        return cdiv(min(prompt, window + max_new), tpb)
    total = cdiv(min(length, window + temp), tpb)  # getRemainingBlocksToCompletion
    sliding = length > window
    crosses_block = cdiv(length, tpb) > cdiv(prompt, tpb)
    crosses_window = cdiv(length, tpb) > total
    return total + (1 if sliding and crosses_block and crosses_window else 0)


def steady_blocks(window: int, length: int, tpb: int) -> int:
    return cdiv(length, tpb) if window >= length else cdiv(window, tpb) + 1


def mamba_state_bytes(costs: tuple[LayerCost, ...]) -> int:
    """One request's state in ``MambaCacheManager``: the conv and the SSM elements, both in the
    model dtype (``conv_states`` take it; ``mamba_ssm_cache_dtype`` "auto" resolves to it)."""
    total = 0
    for c in costs:
        if c.kind != STATE:
            continue
        elements = c.state_conv_elements + c.state_temporal_elements
        total += elements * c.state_conv_dtype_bytes if elements else c.state_bytes
    return total


def _windows(costs: tuple[LayerCost, ...], L: int, window_shares: tuple[float, ...] | None,
             max_attention_window: bool) -> dict[int, tuple[int, int]]:
    """The model's windows (``window_bytes_per_token``), checked against the given shares' count."""
    windows = window_bytes_per_token(costs, L, max_attention_window)
    if window_shares is not None and len(window_shares) != len(windows):
        raise OptionError(
            f"--trtllm-window-shares has {plural(len(window_shares), 'share')} but the model has "
            f"{plural(len(windows), 'window size')} ({', '.join(map(str, windows))}, ascending"
            + ("" if max_attention_window else "; without --trtllm-max-attention-window every layer uses "
               "max_seq_len") + "); TensorRT-LLM checks they match"
        )
    return windows


@dataclass(frozen=True)
class _Workload:
    """What the pools are sized for: ``L`` tokens per request (``P`` of them prompt), the block, the scheduler."""

    length: int  # L
    prompt: int  # P
    tokens_per_block: int
    scheduler_policy: str
    max_num_tokens: int


def _pools(windows: dict[int, tuple[int, int]], shares: tuple[float, ...], budget: int, w: _Workload,
           attention_free: Fraction) -> tuple[tuple[TrtllmPool, ...], Fraction]:
    """One pool per window on ``budget`` bytes, and the steady concurrency they allow (``attention_free``: the
    figure of a model with no window pool, which only the state slots limit)."""
    L, tpb = w.length, w.tokens_per_block
    any_sliding = any(win < L for win in windows)
    out = []
    for (win, (n, b)), share in zip(windows.items(), shares):
        capacity = int(max(budget, 0) * share / b) if b else 0  # uint64(bytes · share / double(bytes))
        blocks = cdiv(capacity, tpb)  # tc::ceilDiv(maxTokens, tokensPerBlock)
        need = steady_blocks(win, L, tpb)
        temp = temporary_window(win, L, w.max_num_tokens, any_sliding)
        out.append(TrtllmPool(win, n, b, share, capacity, blocks, need, Fraction(blocks, need), temp,
                              admission_blocks(w.scheduler_policy, win, temp, w.prompt, L, tpb), cdiv(w.prompt, tpb)))
    return tuple(out), min((p.concurrency for p in out), default=attention_free)


def _failure(pools: tuple[TrtllmPool, ...], state: int, slots: int, kv_budget: int, budget_bytes: int,
             max_batch_size: int, enable_block_reuse: bool) -> tuple[str | None, str | None, str | None]:
    """The start-up failure that comes first: (message, stage, error type), or Nones when it starts."""
    if state and enable_block_reuse:
        return BLOCK_REUSE_ASSERT, MAMBA_STAGE, "AssertionError"
    if kv_budget < 0:
        return (f"CUDA out of memory: the Mamba state for max_batch_size {max_batch_size:,} requests needs "
                f"{slots * state:,} B, more than the {budget_bytes:,} B budget",
                "MambaCacheManager.__init__ (conv_states / ssm_states for max_batch_size)", "torch.OutOfMemoryError")
    if pools and min(p.num_blocks for p in pools) < 1:
        return (NO_SEQUENCE_FITS + " (no KV block left after the Mamba state)" if state else NO_SEQUENCE_FITS,
                "KVCacheManager.__init__ → get_max_atten_window_upper_bound", "AssertionError")
    return None, None, None


def _notes(costs: tuple[LayerCost, ...], windows: dict[int, tuple[int, int]], pools: tuple[TrtllmPool, ...],
           w: _Workload, *, adjusted: list[tuple[int, int]], steady: Fraction, short: list[TrtllmPool],
           longest: int, failure: str | None, max_attention_window: bool, state: int, slots: int,
           max_batch_size: int) -> list[str]:
    """What the result does not say by its figures: shrunk windows, a prompt that cannot be prefilled, kvplan's
    assumptions, the policy's meaning, the Mamba state, the drafter's pool."""
    notes: list[str] = []
    P = w.prompt
    if adjusted:
        notes.append("one sequence does not fit: TensorRT-LLM shrinks the windows (adjust_window_sizes_for_vswa): "
                     + ", ".join(f"{win} → {a}" for win, a in adjusted))
    elif steady < 1 and pools and failure is None:
        notes.append("a pool holds less than one request: TensorRT-LLM lowers that window to the pool's capacity")
    if short and failure is None:
        p = short[0]
        notes.append(f"a {P:,}-token prompt cannot be prefilled: addSequence allocates {p.prefill_blocks:,} blocks "
                     f"in the {p.window_tokens}-token window pool, which has {p.num_blocks:,} ({NO_FREE_BLOCKS}); "
                     f"the longest prompt is {longest:,} tokens")
    if P > w.max_num_tokens:
        notes.append(f"assumes enable_chunked_prefill (off by default in {TRTLLM_VERSION}): without it a {P:,}-token "
                     f"prompt does not fit max_num_tokens {w.max_num_tokens:,} in one context batch")
    if not max_attention_window and any(c.kind == "window" for c in costs):
        notes.append("kv_cache_config.max_attention_window unset (the default): every layer attends max_seq_len, one "
                     "pool; --trtllm-max-attention-window sets the model's windows (VSWA)")
    if w.scheduler_policy == MAX_UTILIZATION:
        notes.append("MAX_UTILIZATION pauses started requests when a decode step does not fit; the steady figure "
                     "is what stays resident")
    if state:
        notes.append(f"Mamba state for max_batch_size {max_batch_size:,} requests ({slots * state:,} B, "
                     f"{state:,} B each, conv and SSM in the model dtype) allocated before the KV pool "
                     "(MambaHybridCacheManager)")
    if any(c.source == "drafter" for c in costs) and len(windows) > 1:
        notes.append("drafter layers placed in the pool of their own window (VSWA + EAGLE pool sizing is open work "
                     "in TensorRT-LLM)")
    return notes


def _check_knobs(scheduler_policy: str, max_batch_size: int) -> None:
    if scheduler_policy not in SCHEDULER_POLICIES:
        raise OptionError(f"--trtllm-scheduler-policy {scheduler_policy!r}: choose one of "
                          f"{', '.join(SCHEDULER_POLICIES)}")
    if max_batch_size < 1:
        raise OptionError(f"--trtllm-max-batch-size {max_batch_size}: must be at least 1")


def _admitted(pools: tuple[TrtllmPool, ...], slots: int, max_batch_size: int) -> int:
    """Requests admitted at once: each pool's blocks over one admission's (a model without a window pool: its state
    slots), at most max_batch_size (the capacity scheduler holds that many)."""
    admitted = min((p.num_blocks // p.admission_blocks for p in pools if p.admission_blocks), default=slots)
    return min(admitted, max_batch_size)


def _mamba_fix(costs: tuple[LayerCost, ...], budget_bytes: int, target_len_tokens: int,
               pools: tuple[TrtllmPool, ...], kv_budget: int, enable_block_reuse: bool,
               knobs: dict[str, Any]) -> tuple[list[str], str]:
    """A Mamba hybrid that fails: the note of what it does with block reuse off (simulated), and the fix's words
    (block reuse off, and a smaller max_batch_size when the state starves the pool)."""
    notes = []
    if enable_block_reuse:
        fixed = trtllm_model(costs, budget_bytes, target_len_tokens, **knobs, enable_block_reuse=False)
        notes.append(f"fix: {REUSE_FIX}; then " + (f"it starts and serves {fixed.max_concurrency:g} requests"
                                                   if fixed.starts else f"it still fails: {fixed.failure}"))
    starved = kv_budget < 0 or bool(pools) and min(p.num_blocks for p in pools) < 1
    return notes, " and ".join(([REUSE_FIX] if enable_block_reuse else []) + ([BATCH_FIX] if starved else []))


def trtllm_model(
    costs: tuple[LayerCost, ...],
    budget_bytes: int,
    target_len_tokens: int,
    *,
    window_shares: tuple[float, ...] | None = None,
    tokens_per_block: int = TOKENS_PER_BLOCK,
    scheduler_policy: str = GUARANTEED_NO_EVICT,
    max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS,
    prompt_len_tokens: int | None = None,
    max_attention_window: bool = False,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    enable_block_reuse: bool = True,
) -> TrtllmResult:
    """TensorRT-LLM's pools and scheduler for one workload, in stages: the windows and their shares, the Mamba
    state set aside, the pools, admission, the start-up failure, the notes (and the fix a Mamba hybrid needs)."""
    _check_knobs(scheduler_policy, max_batch_size)
    L, tpb = target_len_tokens, tokens_per_block
    w = _Workload(L, L if prompt_len_tokens is None else min(prompt_len_tokens, L), tpb, scheduler_policy,
                  max_num_tokens)
    windows = _windows(costs, L, window_shares, max_attention_window)
    shares = effective_shares(window_shares, len(windows)) if windows else ()
    state = mamba_state_bytes(costs)
    slots = max_batch_size if state else 0
    kv_budget = budget_bytes - slots * state  # the state is allocated before the pool is sized
    result_pools, steady = _pools(windows, shares, kv_budget, w,
                                  Fraction(budget_bytes if kv_budget >= 0 else 0))
    steady = min(steady, Fraction(max_batch_size))  # the capacity scheduler holds max_batch_size requests
    admitted = _admitted(result_pools, slots, max_batch_size)
    longest = min(min((p.num_blocks * tpb for p in result_pools), default=L), L)
    failure, stage, error_type = _failure(result_pools, state, slots, kv_budget, budget_bytes, max_batch_size,
                                          enable_block_reuse)
    adjusted = adjust_window_sizes(windows, kv_budget) if windows and failure is None else []
    short = [p for p in result_pools if p.num_blocks < p.prefill_blocks]
    notes = _notes(costs, windows, result_pools, w, adjusted=adjusted, steady=steady, short=short, longest=longest,
                   failure=failure, max_attention_window=max_attention_window, state=state, slots=slots,
                   max_batch_size=max_batch_size)
    fix = None
    if failure and state:
        fix_note, fix = _mamba_fix(costs, budget_bytes, target_len_tokens, result_pools, kv_budget, enable_block_reuse,
                                   dict(window_shares=window_shares, tokens_per_block=tokens_per_block,
                                        scheduler_policy=scheduler_policy, max_num_tokens=max_num_tokens,
                                        prompt_len_tokens=prompt_len_tokens,
                                        max_attention_window=max_attention_window, max_batch_size=max_batch_size))
        notes[:0] = fix_note
    conc = Fraction(0) if short or failure else \
        min(Fraction(admitted), steady) if scheduler_policy == GUARANTEED_NO_EVICT else steady
    pool_bytes = sum(p.num_blocks * tpb * p.bytes_per_token for p in result_pools) + slots * state
    return TrtllmResult(
        pools=result_pools, tokens_per_block=tpb, shares_given=window_shares is not None,
        adjusted_windows=tuple(adjusted), state_slots=slots, state_bytes=slots * state,
        state_bytes_per_request=state, concurrency=conc,
        pool_bytes=pool_bytes, starts=failure is None, failure=failure, notes=tuple(notes),
        scheduler_policy=scheduler_policy, max_num_tokens=max_num_tokens, prompt_len_tokens=w.prompt,
        max_attention_window=max_attention_window, admission_concurrency=admitted if failure is None else 0,
        steady_concurrency=steady if failure is None else Fraction(0),
        longest_prompt_tokens=longest if failure is None else 0, max_batch_size=max_batch_size,
        enable_block_reuse=enable_block_reuse, failure_stage=stage, failure_type=error_type, fix=fix,
    )


# --- in `kvplan compare`: TensorRT-LLM's row and its advice ------------------------------------------
# TRTLLM_WINDOW_SIZE_SHARES: start from shares proportional to each pool's binding need for one request
# (the larger of the prefill and the admission blocks, times block bytes), then move shares between pools
# in steps of 0.01, 0.001 and 0.0001 while the score improves (kvplan.engines.compare: requests served,
# then the smallest pool margin). Four decimals, summing to exactly 1.0 (TensorRT-LLM asserts
# ``sum == 1.0``). When no split prefills the workload's prompt, the advice says so and gives the longest
# prompt any split can prefill (every pool holding the prompt: shares proportional to the pools' bytes
# per token). Mamba hybrids: first ``kv_cache_config.enable_block_reuse=false`` (the defaults fail
# MambaHybridCacheManager's assert) and the ``max_batch_size`` whose state leaves a pool serving the most
# requests (the largest ``S`` still served ``S`` times, equal shares), then the shares on top; offered
# when that serves more than the defaults.

SHARE_STEPS = (Fraction(1, 100), Fraction(1, 1000), Fraction(1, 10000))
TrtllmSharesAny = NotApplicable | TrtllmNoSplit | TrtllmNoChange | TrtllmShares
TrtllmAdviceAny = TrtllmSharesAny | TrtllmSettings


@dataclass(frozen=True)
class TrtllmKnobs:
    """TensorRT-LLM's settings its row ran with (the row's ``knobs``)."""

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
class TrtllmInputs:
    """TensorRT-LLM's knobs in ``kvplan compare`` (compare's options of the same names; the defaults its own)."""

    trtllm_window_shares: tuple[float, ...] | None = None  # TRTLLM_WINDOW_SIZE_SHARES, ascending windows
    trtllm_tokens_per_block: int = TOKENS_PER_BLOCK
    trtllm_scheduler_policy: str = GUARANTEED_NO_EVICT
    trtllm_max_num_tokens: int = DEFAULT_MAX_NUM_TOKENS
    trtllm_max_attention_window: bool = False  # kv_cache_config.max_attention_window = the model's windows
    trtllm_max_batch_size: int = DEFAULT_MAX_BATCH_SIZE  # sizes the Mamba state and the scheduler's capacity
    trtllm_enable_block_reuse: bool = True  # kv_cache_config.enable_block_reuse (Mamba hybrids need it off)


def knobs_of(inputs: CompareInputs) -> TrtllmInputs:
    return inputs.knobs("trtllm", TrtllmInputs())


def with_knobs(inputs: CompareInputs, **knobs) -> CompareInputs:
    """``inputs`` with TensorRT-LLM's knobs ``knobs`` changed."""
    return replace(inputs, engines={**inputs.engines, "trtllm": replace(knobs_of(inputs), **knobs)})


def trtllm_result(costs, inputs: CompareInputs, shares=None) -> TrtllmResult:
    """TensorRT-LLM's model on the workload with window ``shares`` (None: its equal default)."""
    k = knobs_of(inputs)
    return trtllm_model(
        costs, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
        window_shares=None if shares is None else tuple(float(s) for s in shares),
        tokens_per_block=k.trtllm_tokens_per_block, scheduler_policy=k.trtllm_scheduler_policy,
        max_num_tokens=k.trtllm_max_num_tokens, prompt_len_tokens=inputs.target_prompt_len_tokens,
        max_attention_window=k.trtllm_max_attention_window, max_batch_size=k.trtllm_max_batch_size,
        enable_block_reuse=k.trtllm_enable_block_reuse,
    )


def trtllm_row(costs: tuple[LayerCost, ...], inputs: CompareInputs, lb: LowerBound,
               shares: tuple[float, ...] | None = None) -> EngineRow:
    r = trtllm_result(costs, inputs, knobs_of(inputs).trtllm_window_shares if shares is None else shares)
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


def trtllm_pool_margins(r: TrtllmResult, requests: int) -> dict[int, float]:
    """Each window pool's blocks over what ``requests`` requests need there: the admission blocks
    (GUARANTEED_NO_EVICT) or the resident ones (MAX_UTILIZATION), and at least one prompt's prefill."""
    out = {}
    for p in r.pools:
        per = p.blocks_per_request if r.scheduler_policy == MAX_UTILIZATION else p.admission_blocks
        out[p.window_tokens] = p.num_blocks / max(requests * per, p.prefill_blocks)
    return out


def trtllm_score(r: TrtllmResult) -> tuple[int, float]:
    n = math.floor(r.max_concurrency)
    if not r.starts or n < 1 or not r.pools:
        return NO_SCORE
    return n, min(trtllm_pool_margins(r, n).values())


def _exact_sum(shares: list[Fraction]) -> bool:
    return sum(float(s) for s in shares) == 1.0


def _rounded_shares(weights: list[float]) -> list[Fraction]:
    total = sum(weights)
    quantum = SHARE_STEPS[-1]
    shares = [max(quantum, Fraction(round(Fraction(x) / Fraction(total) / quantum)) * quantum) for x in weights[:-1]]
    shares.append(1 - sum(shares, Fraction(0)))
    return shares


def _moved(shares: list[Fraction], i: int, j: int, step: Fraction) -> list[Fraction] | None:
    """``shares`` with ``step`` moved from share ``i`` to share ``j``; None when ``i == j`` or share ``i``
    would not stay positive."""
    if i == j or shares[i] - step <= 0:
        return None
    trial = list(shares)
    trial[i] -= step
    trial[j] += step
    return trial


def _exact_start(shares: list[Fraction], costs, inputs: CompareInputs) -> list[Fraction]:
    """Four-decimal shares whose float sum is exactly 1.0 (0.6667 + 0.1667 + 0.1666 sums to
    0.9999999999999999 in floats): when rounding missed, the best-scoring move of the fewest
    quanta between two shares that makes the sum exact (hypothesis found the case)."""
    if _exact_sum(shares):
        return shares
    found = None
    for k in range(1, 6):  # the fewest quanta that make it exact (two, in the case found)
        q = SHARE_STEPS[-1] * k
        for i in range(len(shares)):
            for j in range(len(shares)):
                trial = _moved(shares, i, j, q)
                if trial is not None and _exact_sum(trial):
                    score = trtllm_score(trtllm_result(costs, inputs, trial))
                    if found is None or score > found[0]:
                        found = (score, trial)
        if found:
            return found[1]
    return shares


def proportional_shares(costs, inputs: CompareInputs) -> list[Fraction]:
    """Shares where every pool runs out at the same time for one request's binding need (the
    larger of its prefill and admission blocks), four decimals, the last taking the remainder."""
    r = trtllm_result(costs, inputs)
    tpb = knobs_of(inputs).trtllm_tokens_per_block
    return _rounded_shares([max(p.prefill_blocks, p.admission_blocks) * tpb * p.bytes_per_token for p in r.pools])


def trtllm_mamba_settings(costs: tuple[LayerCost, ...], inputs: CompareInputs) -> dict | None:
    """For a Mamba hybrid, the engine's own settings that let it start and serve the most requests:
    ``kv_cache_config.enable_block_reuse=false`` (MambaHybridCacheManager asserts it) and the
    ``max_batch_size`` ``S`` maximising ``min(S, what the pool left after S states serves)``: the
    largest S the pool still serves (equal window shares). None for a model without state."""
    if not mamba_state_bytes(costs):
        return None
    fixed = with_knobs(inputs, trtllm_enable_block_reuse=False)

    def served(s: int) -> int:
        return math.floor(trtllm_result(costs, with_knobs(fixed, trtllm_max_batch_size=s)).max_concurrency)

    hi = max(1, inputs.kv_cache_memory_bytes // mamba_state_bytes(costs))
    best = 1
    if served(1) >= 1:
        search = Bisection(1, hi)
        for s in search:
            search.answer(served(s) >= s)
        best = search.largest
    return {"trtllm_enable_block_reuse": False, "trtllm_max_batch_size": best}


def _settings_text(settings: dict) -> str:
    return (f"kv_cache_config.enable_block_reuse=false max_batch_size={settings['trtllm_max_batch_size']} "
            f"(--no-trtllm-enable-block-reuse --trtllm-max-batch-size {settings['trtllm_max_batch_size']})")


def advise_trtllm(costs: tuple[LayerCost, ...], inputs: CompareInputs) -> TrtllmAdviceAny:
    """Window shares; for a Mamba hybrid first the settings it needs to start (block reuse off, a
    ``max_batch_size`` whose state leaves the pool room), offered when they serve more requests."""
    settings = trtllm_mamba_settings(costs, inputs)
    if settings is None:
        return _advise_trtllm_shares(costs, inputs)
    default = trtllm_result(costs, inputs)
    base = math.floor(default.max_concurrency) if default.starts else 0
    fixed_inputs = with_knobs(inputs, **settings)
    inner = _advise_trtllm_shares(costs, fixed_inputs)
    shares = getattr(inner, "window_shares", None)
    r = trtllm_result(costs, fixed_inputs, shares)
    n = math.floor(r.max_concurrency) if r.starts else 0
    if n <= base:
        out = _advise_trtllm_shares(costs, inputs)
        if n < 1:
            out = replace(out, reason=(
                f"no max_batch_size serves one {inputs.target_len_tokens:,}-token request with block "
                f"reuse off: the Mamba state of one request ({mamba_state_bytes(costs):,} B) and its KV "
                "blocks do not fit the budget" + ("" if default.starts else f" (the default fails: {default.failure})")))
        return out
    return TrtllmSettings(
        shares=inner,
        applicable=True,
        settings={"kv_cache_config.enable_block_reuse": False, "max_batch_size": settings["trtllm_max_batch_size"]},
        settings_text=_settings_text(settings),
        max_concurrency=rounded(r.max_concurrency),
        requests=n,
        default_requests=base,
        gain_requests=n - base,
        default_fails=None if default.starts else default.failure,
        reaches_target=reaches(r.max_concurrency, inputs.target_concurrency),
        reason=((f"the defaults do not start ({default.failure}); " if not default.starts else "")
                + f"{_settings_text(settings)} serves {plural(n, 'request')}"
                + (f" with {inner.env}" if shares and isinstance(inner, TrtllmShares) else "")),
    )


def _advise_trtllm_shares(costs: tuple[LayerCost, ...], inputs: CompareInputs) -> TrtllmSharesAny:
    vswa = knobs_of(inputs).trtllm_max_attention_window
    windows = list(window_bytes_per_token(costs, inputs.target_len_tokens, vswa))
    equal = trtllm_result(costs, inputs)
    if len(windows) < 2:
        return NotApplicable(False, "one window size: one pool, nothing to share", rounded(equal.max_concurrency),
                             reaches(equal.max_concurrency, inputs.target_concurrency))
    shares = _exact_start(proportional_shares(costs, inputs), costs, inputs)
    best = trtllm_score(trtllm_result(costs, inputs, shares))
    tried = [1]
    improved = True
    while improved:
        improved = False
        for step in SHARE_STEPS:
            for i in range(len(shares)):
                for j in range(len(shares)):
                    trial = _moved(shares, i, j, step)
                    if trial is None or not _exact_sum(trial):
                        continue
                    score = trtllm_score(trtllm_result(costs, inputs, trial))
                    tried[0] += 1
                    if score > best:
                        shares, best, improved = trial, score, True
    if best == NO_SCORE:
        # every pool must hold the prompt: shares proportional to the pools' bytes per token
        even = _rounded_shares([b for _, b in window_bytes_per_token(costs, inputs.target_len_tokens, vswa).values()])
        longest = trtllm_result(costs, inputs, even).longest_prompt_tokens
        prompt = equal.prompt_len_tokens
        return TrtllmNoSplit(
            True, None, 0.0,
            f"no split prefills a {prompt:,}-token prompt: every window pool needs its "
            f"ceil(P/32) blocks; the longest prompt any split prefills is {longest:,} tokens "
            f"(shares {','.join(f'{float(s):g}' for s in even)})",
            longest, rounded(equal.max_concurrency), reaches(0.0, inputs.target_concurrency))
    r = trtllm_result(costs, inputs, shares)
    base = trtllm_score(equal)[0]
    if best[0] <= base:  # offered only when it serves more than the equal default
        return TrtllmNoChange(
            True, None, rounded(equal.max_concurrency), base, tried[0],
            f"no change: equal shares serve {plural(base, 'request')}; none of the {tried[0]:,} splits tried serves more",
            rounded(equal.max_concurrency), reaches(equal.max_concurrency, inputs.target_concurrency))
    value = ",".join(f"{float(s):g}" for s in shares)
    return TrtllmShares(
        default_requests=base,
        gain_requests=best[0] - base,
        candidates_tried=tried[0],
        applicable=True,
        windows_tokens=tuple(windows),
        window_shares=tuple(float(s) for s in shares),
        env=f"TRTLLM_WINDOW_SIZE_SHARES={value}",
        max_concurrency=rounded(r.max_concurrency),
        requests=best[0],
        margin=rounded(best[1]),
        pool_margins={str(w): rounded(m) for w, m in trtllm_pool_margins(r, best[0]).items()},
        longest_prompt_tokens=r.longest_prompt_tokens,
        equal_shares_max_concurrency=rounded(equal.max_concurrency),
        reaches_target=reaches(r.max_concurrency, inputs.target_concurrency),
    )


def trtllm_compared(costs: tuple[LayerCost, ...], inputs: CompareInputs, lb: LowerBound) -> EngineAnswer:
    """TensorRT-LLM's answer to the workload: its row and its advice (window shares; a Mamba hybrid's
    settings first)."""
    return EngineAnswer((trtllm_row(costs, inputs, lb),), advise_trtllm(costs, inputs))


class TensorRTLLM(EngineDefaults):
    """TensorRT-LLM in ``kvplan compare`` (``kvplan.engines.engine.Engine``)."""

    name: str = "trtllm"
    title: str = "TensorRT-LLM"
    version_option: str | None = "trtllm_version"
    inputs_type: type | None = TrtllmInputs
    advice_type: Any = TrtllmAdviceAny
    knobs_type: type = TrtllmKnobs

    def inputs(self, options: Mapping[str, Any]) -> TrtllmInputs:
        text = options["trtllm_window_shares"]  # TRTLLM_WINDOW_SIZE_SHARES, read here
        return replace(super().inputs(options), trtllm_window_shares=parse_shares(text) if text else None)

    def versions(self, given: str | None) -> dict[str, str]:
        return {"trtllm": require_version("--trtllm-version", given, TRTLLM_VERSION, self.title),
                "trtllm_commit": TRTLLM_COMMIT}

    def compared(self, run: CompareRun) -> EngineAnswer:
        return trtllm_compared(run.costs, run.inputs, run.lower_bound)

    def warnings(self, run: CompareRun) -> list[str]:
        if not run.has_mamba or run.architecture in TRTLLM_MAMBA_HYBRIDS:
            return []
        return [f"TensorRT-LLM {TRTLLM_VERSION} builds its Mamba hybrid cache (MambaHybridCacheManager) for "
                "Nemotron-H and Qwen3-Next only (_util.py get_kv_cache_manager_cls); its row applies those "
                f"rules to {run.architecture}"]

    def knobs_text(self, row: dict) -> str:
        k = row["knobs"]
        windows = "/".join(str(w) for w in k["windows_tokens"])
        shares = "/".join(f"{s:g}" for s in k["window_shares"])
        mamba = (f"max_batch_size {k['max_batch_size']}, block reuse {'on' if k['enable_block_reuse'] else 'off'}, "
                 f"Mamba SSM cache {k['mamba_ssm_cache_dtype']}, " if k.get("mamba_ssm_cache_dtype") else "")
        return (f"windows {windows}, shares {shares}{'' if k['window_shares_given'] else ' (equal)'}, "
                f"{k['tokens_per_block']} tok/block, {k.get('scheduler_policy', '')}, max_attention_window "
                f"{'= the model windows' if k.get('max_attention_window') else 'unset'}, {mamba}chunked prefill on "
                f"(assumed); TensorRT-LLM {k.get('release', '')}")

    def advice_cells(self, advice: dict) -> tuple[str, str, bool | None, str]:
        tr = advice
        if tr.get("settings"):
            knob = tr["settings_text"] + (f" {tr['env']}" if tr.get("window_shares") else "")
            return (knob, f"{tr['max_concurrency']:.2f}", tr["reaches_target"],
                    f"defaults serve {plural(tr['default_requests'], 'request')}"
                    + (f" (they fail: {tr['default_fails']})" if tr.get("default_fails") else "")
                    + f"; +{plural(tr['gain_requests'], 'request')}")
        if tr["applicable"] and tr.get("window_shares"):
            return (tr["env"], f"{tr['max_concurrency']:.2f}", tr["reaches_target"],
                    f"equal shares give {tr['equal_shares_max_concurrency']:.2f}; "
                    f"+{plural(tr['gain_requests'], 'request')} (best of {tr['candidates_tried']:,} splits); "
                    f"smallest pool margin {tr['margin']:.3f}")
        # no split advised: TrtllmNoSplit serves no prompt (its figure 0), the others keep their own
        no_split = tr["applicable"] and tr.get("default_requests") is None
        return ("(window shares)", "0.00" if no_split else f"{tr['max_concurrency']:.2f}", tr["reaches_target"],
                tr["reason"])


ENGINE = TensorRTLLM()
