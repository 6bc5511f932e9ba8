"""The exact windowed need: what an ideal allocator would reserve, the floor for every engine.

One request of ``L`` tokens needs, per tensor-parallel rank:

    Σ_full L · b  +  Σ_window min(L, W) · b  +  Σ_state state

(``b`` = K + V bytes per token of that layer). No block rounding, no in-flight tokens, no
padding, no static pool split. Every engine model reserves at least this much per request
(tests check it over random layer mixes), so ``reserved − need`` is that engine's waste.

Worked numbers (reference engines.md §3.1, L = 131072, bf16): gpt-oss-20b
12 · 131072 · 2048 + 12 · 128 · 2048 = 3,224,371,200 B (3.00 GiB); gemma-3-27b
10 · 131072 · 8192 + 52 · 1024 · 8192 = 11,173,625,856 B (10.41 GiB).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.engines.compare import EngineRow
from kvplan.engines.layer_costs import FULL, STATE, WINDOW, LayerCost
from kvplan.results import Attr, Record


@dataclass(frozen=True)
class LowerBound(Record):
    target_len_tokens: int
    full_bytes: int  # full-attention layers: L tokens each
    window_bytes: int  # sliding / chunked layers: min(L, W) tokens each
    state_bytes: int  # recurrent state
    per_request_bytes: int  # the sum: one request's exact need
    budget_bytes: int
    max_concurrency: float  # budget / need
    kv_tokens: int  # floor(budget · L / need): tokens of L-length requests an ideal pool holds

    DATA = {"target_len_tokens": "target_len_tokens", "per_request_bytes": "per_request_bytes",
            "full_attention_bytes": "full_bytes", "window_attention_bytes": "window_bytes",
            "state_bytes": "state_bytes", "max_concurrency": Attr("max_concurrency", 6), "kv_tokens": "kv_tokens"}


def kept_tokens(cost: LayerCost, length: int) -> int:
    """Tokens of a ``length``-token request this layer must hold at once: all, or the window."""
    if cost.kind == FULL:
        return length
    if cost.kind == WINDOW:
        return min(length, cost.window_tokens or length)
    return 0


def per_request_bytes(costs: tuple[LayerCost, ...], length: int) -> int:
    return sum(kept_tokens(c, length) * c.bytes_per_token + c.state_bytes for c in costs)


def lower_bound(costs: tuple[LayerCost, ...], target_len_tokens: int, budget_bytes: int) -> LowerBound:
    L = target_len_tokens
    full = sum(L * c.bytes_per_token for c in costs if c.kind == FULL)
    window = sum(kept_tokens(c, L) * c.bytes_per_token for c in costs if c.kind == WINDOW)
    state = sum(c.state_bytes for c in costs if c.kind == STATE)
    need = full + window + state
    concurrency = budget_bytes / need if need else 0.0
    kv_tokens = budget_bytes * L // need if need else 0
    return LowerBound(L, full, window, state, need, budget_bytes, concurrency, kv_tokens)


def lower_bound_row(lb: LowerBound) -> EngineRow:
    return EngineRow(
        engine="lower_bound", name="exact windowed need", starts=True, kv_tokens=lb.kv_tokens,
        max_concurrency=lb.max_concurrency, reserved_per_request_bytes=lb.per_request_bytes,
        lower_bound_bytes=lb.per_request_bytes, details=lb,
        notes=("what an ideal allocator reserves: full layers L tokens, window layers min(L, W), state once",),
    )
