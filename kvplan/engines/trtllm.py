"""TensorRT-LLM's variable sliding window attention (VSWA): one block pool per window.

Source: TensorRT-LLM ``tensorrt_llm/_torch/pyexecutor/resource_manager.py`` and its VSWA
helpers (``calculate_max_num_blocks_for_vswa``, ``adjust_window_sizes_for_vswa``), C++
``kvCacheManager.cpp``; reference engines.md §3.3.

- Every layer has a ``max_attention_window``: the sliding window (or chunk) for local
  layers, ``max_seq_len`` (the workload's length here) for full layers. Layers with the same
  window share one ``WindowBlockManager``: one block id covers every layer of that window.
- **Memory split.** Each distinct window gets ``share · budget``: equal shares by default,
  or ``TRTLLM_WINDOW_SIZE_SHARES`` (comma-separated, in ascending window order, one per
  window, summing to 1.0; TensorRT-LLM asserts both). Per window,
  ``tokens = budget · share / Σ_layers bytes_per_token`` and ``blocks = tokens // 32``
  (``tokens_per_block`` 32).
- **Worked number** (engines.md §3.3): gemma-3-27b, 40 GiB, equal shares: the 1024-token
  window pool gets 20 GiB / (52 · 8192 B) = 50,412 tokens, 1,575 blocks; the full pool
  20 GiB / (10 · 8192 B) = 262,144 tokens, 8,192 blocks.
- **Per request** of L tokens: ``cdiv(L, 32)`` blocks in a window ≥ L; a smaller window
  keeps ``cdiv(W, 32) + 1`` (the window straddles one more block before the oldest is
  released). Concurrency is the smallest pool quotient.
- **Too little memory for one sequence**: ``adjust_window_sizes_for_vswa`` shrinks the windows
  from the largest down (PR #5880); the engine starts, with a shorter maximum length.
- **Recurrent state** (Mamba hybrids) has its own manager sized for the batch; kvplan sets
  it aside first (``layer_costs.state_slots``), an approximation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from kvplan.engines.layer_costs import FULL, STATE, LayerCost, state_slots
from kvplan.errors import OptionError
from kvplan.units import cdiv

TOKENS_PER_BLOCK = 32


@dataclass(frozen=True)
class TrtllmPool:
    window_tokens: int  # max_attention_window of this pool
    num_layers: int
    bytes_per_token: int  # one token across the pool's layers
    share: float
    capacity_tokens: int  # int(budget · share / bytes_per_token), before block rounding
    num_blocks: int  # capacity // tokens_per_block
    blocks_per_request: int
    concurrency: Fraction

    def to_dict(self, tokens_per_block: int) -> dict:
        return {
            "window_tokens": self.window_tokens,
            "num_layers": self.num_layers,
            "per_token_bytes": self.bytes_per_token,
            "share": round(self.share, 6),
            "capacity_tokens": self.capacity_tokens,
            "num_blocks": self.num_blocks,
            "kv_tokens": self.num_blocks * tokens_per_block,
            "blocks_per_request": self.blocks_per_request,
            "max_concurrency": round(float(self.concurrency), 6),
        }


@dataclass(frozen=True)
class TrtllmResult:
    pools: tuple[TrtllmPool, ...]
    tokens_per_block: int
    shares_given: bool
    adjusted_windows: tuple[tuple[int, int], ...]  # (window, shrunk to) from adjust_window_sizes_for_vswa
    state_slots: int
    state_bytes: int
    state_bytes_per_request: int
    concurrency: Fraction
    pool_bytes: int
    starts: bool = True
    failure: str | None = None
    notes: tuple[str, ...] = ()

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

    def to_dict(self) -> dict:
        return {
            "tokens_per_block": self.tokens_per_block,
            "window_shares": "given" if self.shares_given else "equal",
            "pools": [p.to_dict(self.tokens_per_block) for p in self.pools],
            "adjusted_windows": [{"window_tokens": w, "adjusted_to_tokens": a} for w, a in self.adjusted_windows],
            "state_slots": self.state_slots,
            "state_bytes": self.state_bytes,
        }


def window_of(cost: LayerCost, max_seq_len: int) -> int:
    if cost.kind == FULL:
        return max_seq_len
    return min(cost.window_tokens or max_seq_len, max_seq_len)


def window_bytes_per_token(costs: tuple[LayerCost, ...], max_seq_len: int) -> dict[int, tuple[int, int]]:
    """{window: (layers, bytes per token)}, ascending window order."""
    out: dict[int, list[int]] = {}
    for c in costs:
        if c.kind == STATE:
            continue
        out.setdefault(window_of(c, max_seq_len), []).append(c.bytes_per_token)
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
    if not shares or any(s <= 0 for s in shares):
        raise OptionError(f"--trtllm-window-shares {text!r}: every share must be positive")
    return shares


def trtllm_model(
    costs: tuple[LayerCost, ...],
    budget_bytes: int,
    target_len_tokens: int,
    *,
    window_shares: tuple[float, ...] | None = None,
    tokens_per_block: int = TOKENS_PER_BLOCK,
) -> TrtllmResult:
    L, tpb = target_len_tokens, tokens_per_block
    windows = window_bytes_per_token(costs, L)
    if window_shares is not None:
        if len(window_shares) != len(windows):
            raise OptionError(
                f"--trtllm-window-shares has {len(window_shares)} share(s) but the model has {len(windows)} "
                f"window size(s) ({', '.join(map(str, windows))}, ascending); TensorRT-LLM asserts they match"
            )
        if abs(sum(window_shares) - 1.0) > 1e-6:
            raise OptionError(f"--trtllm-window-shares must sum to 1.0 (TensorRT-LLM asserts it), got {sum(window_shares):g}")
        shares = window_shares
    else:
        shares = tuple(1.0 / len(windows) for _ in windows) if windows else ()

    def need_blocks(w: int) -> int:
        return cdiv(L, tpb) if w >= L else cdiv(w, tpb) + 1

    def pools(budget: int) -> tuple[tuple[TrtllmPool, ...], Fraction]:
        out = []
        for (w, (n, b)), share in zip(windows.items(), shares):
            capacity = int(max(budget, 0) * share / b) if b else 0
            blocks = capacity // tpb
            need = need_blocks(w)
            out.append(TrtllmPool(w, n, b, share, capacity, blocks, need, Fraction(blocks, need)))
        # an attention-free model has no window pool: only the state slots limit it
        conc = min((p.concurrency for p in out), default=Fraction(budget_bytes if budget >= 0 else 0))
        return tuple(out), conc

    state = sum(c.state_bytes for c in costs if c.kind == STATE)
    slots = state_slots(state, budget_bytes, lambda b: pools(b)[1])
    kv_budget = budget_bytes - slots * state
    result_pools, conc = pools(kv_budget)
    if state:
        conc = min(conc, Fraction(slots))
    notes: list[str] = []
    adjusted = adjust_window_sizes(windows, kv_budget) if windows else []
    if adjusted:
        notes.append("one sequence does not fit: TensorRT-LLM shrinks the windows (adjust_window_sizes_for_vswa): "
                     + ", ".join(f"{w} → {a}" for w, a in adjusted))
    elif conc < 1 and result_pools:
        notes.append("a pool holds less than one request: TensorRT-LLM lowers that window to the pool's capacity")
    if state:
        notes.append(f"recurrent state set aside for {slots} request(s) before the window pools (approximation)")
    if any(c.source == "drafter" for c in costs) and len(windows) > 1:
        notes.append("drafter layers placed in the pool of their own window (VSWA + EAGLE pool sizing is open work "
                     "in TensorRT-LLM)")
    failure = None if kv_budget > 0 else "no memory left for the KV cache after the recurrent state"
    pool_bytes = sum(p.num_blocks * tpb * p.bytes_per_token for p in result_pools) + slots * state
    return TrtllmResult(
        pools=result_pools, tokens_per_block=tpb, shares_given=window_shares is not None,
        adjusted_windows=tuple(adjusted), state_slots=slots, state_bytes=slots * state,
        state_bytes_per_request=state, concurrency=conc if failure is None else Fraction(0),
        pool_bytes=pool_bytes, starts=failure is None, failure=failure, notes=tuple(notes),
    )
