"""llama.cpp's interleaved-SWA cache (``llama_kv_cache_iswa``) plus recurrent state.

Source: llama.cpp ``src/llama-kv-cache-iswa.cpp`` (PR #13194), ``src/llama-memory-recurrent.cpp``;
reference engines.md §3.4.

- **Two caches**, cells shared by all sequences (unified KV):
  - base (full-attention layers): ``n_ctx`` cells;
  - SWA (sliding / chunked layers): ``pad256(min(n_ctx, n_swa · n_seq + n_ubatch))`` cells,
    or ``n_ctx`` with ``--swa-full``. ``n_swa`` is the model's window (the largest, if layers
    differ); chunked local attention (Llama 4) is llama.cpp's ``LLAMA_SWA_TYPE_CHUNKED``,
    the same cache with the chunk as window.
  A cell costs each layer its K + V bytes for one token.
- **Recurrent layers** (Mamba, GDN) keep one state per sequence in a separate
  ``llama_memory_recurrent`` of ``n_seq`` cells.
- **Drafter layers** live in llama.cpp's separate draft context; kvplan sizes it with the
  same ``n_ctx`` and ``n_seq`` and the same formulas, and adds it to the total.
- llama.cpp has no KV budget of its own: it allocates what ``n_ctx`` asks and fails to
  allocate past the device memory. kvplan checks the allocation against the same budget,
  reports the largest ``n_ctx`` that fits at the chosen ``n_seq`` (what ``llama-fit-params``
  shrinks to), and the largest ``n_seq`` (``-np``) whose ``n_ctx = L · n_seq`` fits.
- **Worked numbers** (engines.md §3.4, f16, one sequence, ``n_ubatch`` 512, ``n_ctx`` 131072):
  gemma-3-27b base 10 · 131072 · 8192 B = 10 GiB; SWA pad256(1024 + 512) = 1536 cells,
  52 · 1536 · 8192 B = 624 MiB; total 11,391,729,664 B (10.61 GiB); with ``--swa-full``
  62 · 131072 · 8192 B = 62 GiB. gpt-oss-20b SWA pad256(128 + 512) = 768 cells, 18 MiB.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.engines.layer_costs import FULL, STATE, WINDOW, LayerCost
from kvplan.units import cdiv, largest_true

SWA_PAD_CELLS = 256
DEFAULT_N_UBATCH = 512
ALLOC_FAILURE = "failed to allocate buffer for kv cache"


def pad256(n: int) -> int:
    return cdiv(n, SWA_PAD_CELLS) * SWA_PAD_CELLS


@dataclass(frozen=True)
class LlamacppCaches:
    n_ctx: int
    n_seq: int
    base_cells: int
    swa_cells: int
    base_bytes: int
    swa_bytes: int
    recurrent_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.base_bytes + self.swa_bytes + self.recurrent_bytes

    def to_dict(self) -> dict:
        return {
            "n_ctx_tokens": self.n_ctx,
            "n_seq": self.n_seq,
            "base_cells": self.base_cells,
            "swa_cells": self.swa_cells,
            "base_bytes": self.base_bytes,
            "swa_bytes": self.swa_bytes,
            "recurrent_bytes": self.recurrent_bytes,
            "total_bytes": self.total_bytes,
        }


@dataclass(frozen=True)
class _Model:
    base_bytes_per_cell: int  # Σ K+V bytes per token over full-attention layers
    swa_bytes_per_cell: int  # Σ over sliding / chunked layers
    n_swa: int  # the window
    state_bytes: int  # recurrent state of one sequence, all layers
    n_ubatch: int
    swa_full: bool

    def caches(self, n_ctx: int, n_seq: int) -> LlamacppCaches:
        swa_cells = 0
        if self.swa_bytes_per_cell:
            swa_cells = n_ctx if self.swa_full else pad256(min(n_ctx, self.n_swa * n_seq + self.n_ubatch))
        return LlamacppCaches(
            n_ctx, n_seq, n_ctx if self.base_bytes_per_cell else 0, swa_cells,
            n_ctx * self.base_bytes_per_cell, swa_cells * self.swa_bytes_per_cell, n_seq * self.state_bytes,
        )


def _model(costs: tuple[LayerCost, ...], n_ubatch: int, swa_full: bool) -> _Model:
    return _Model(
        base_bytes_per_cell=sum(c.bytes_per_token for c in costs if c.kind == FULL),
        swa_bytes_per_cell=sum(c.bytes_per_token for c in costs if c.kind == WINDOW),
        n_swa=max((c.window_tokens or 0 for c in costs if c.kind == WINDOW), default=0),
        state_bytes=sum(c.state_bytes for c in costs if c.kind == STATE),
        n_ubatch=n_ubatch,
        swa_full=swa_full,
    )


def cache_sizes(costs, n_ctx: int, n_seq: int = 1, n_ubatch: int = DEFAULT_N_UBATCH,
                swa_full: bool = False) -> LlamacppCaches:
    return _model(costs, n_ubatch, swa_full).caches(n_ctx, n_seq)


@dataclass(frozen=True)
class LlamacppResult:
    target_len_tokens: int
    n_seq: int
    n_ubatch: int
    swa_full: bool
    n_swa: int
    caches: LlamacppCaches  # at n_ctx = L · n_seq
    max_n_ctx_tokens: int | None  # largest n_ctx that fits at n_seq (None: not bounded by n_ctx)
    max_n_seq: int  # largest n_seq whose n_ctx = L · n_seq fits
    capacity_caches: LlamacppCaches | None  # at max_n_seq
    budget_bytes: int
    starts: bool
    failure: str | None
    notes: tuple[str, ...] = ()

    @property
    def max_concurrency(self) -> float:
        return float(self.max_n_seq)

    @property
    def reserved_per_request_bytes(self) -> int:
        c = self.capacity_caches or self.caches
        return -(-c.total_bytes // c.n_seq)

    def to_dict(self) -> dict:
        return {
            "n_seq": self.n_seq,
            "n_ubatch": self.n_ubatch,
            "swa_full": self.swa_full,
            "kv_unified": True,
            "n_swa_tokens": self.n_swa,
            "caches": self.caches.to_dict(),
            "max_n_ctx_tokens": self.max_n_ctx_tokens,
            "max_n_seq": self.max_n_seq,
            "capacity_caches": self.capacity_caches.to_dict() if self.capacity_caches else None,
        }


def _largest(fits, hi: int) -> int:
    """Largest x in [0, hi] with fits(x) (fits monotone, fits(0) assumed)."""
    return largest_true(fits, 0, hi)


def llamacpp_model(
    costs: tuple[LayerCost, ...],
    budget_bytes: int,
    target_len_tokens: int,
    *,
    n_seq: int = 1,
    n_ubatch: int = DEFAULT_N_UBATCH,
    swa_full: bool = False,
) -> LlamacppResult:
    m = _model(costs, n_ubatch, swa_full)
    L = target_len_tokens
    caches = m.caches(L * n_seq, n_seq)
    starts = caches.total_bytes <= budget_bytes
    failure = None if starts else (
        f"{ALLOC_FAILURE}: n_ctx {L * n_seq:,} with {n_seq} sequence(s) needs {caches.total_bytes:,} B, "
        f"more than the {budget_bytes:,} B budget"
    )
    # largest n_ctx at this n_seq; without full layers the caches stop growing with n_ctx
    max_n_ctx = None
    if m.base_bytes_per_cell or swa_full:
        per_cell = m.base_bytes_per_cell + (m.swa_bytes_per_cell if swa_full else 0)
        hi = budget_bytes // per_cell + 1
        max_n_ctx = _largest(lambda n: m.caches(n, n_seq).total_bytes <= budget_bytes, hi)
    per_seq = L * m.base_bytes_per_cell + min(L, m.n_swa) * m.swa_bytes_per_cell + m.state_bytes
    hi = budget_bytes // per_seq + 1 if per_seq else 1 << 20
    max_n_seq = _largest(lambda n: m.caches(L * n, n).total_bytes <= budget_bytes, hi)
    notes = []
    if any(c.source == "drafter" for c in costs):
        notes.append("drafter layers sized as llama.cpp's separate draft context (same n_ctx and n_seq)")
    if m.state_bytes:
        notes.append(f"recurrent state: {n_seq} cell(s) of {m.state_bytes:,} B in llama_memory_recurrent")
    return LlamacppResult(
        target_len_tokens=L, n_seq=n_seq, n_ubatch=n_ubatch, swa_full=swa_full, n_swa=m.n_swa, caches=caches,
        max_n_ctx_tokens=max_n_ctx, max_n_seq=max_n_seq,
        capacity_caches=m.caches(L * max_n_seq, max_n_seq) if max_n_seq else None,
        budget_bytes=budget_bytes, starts=starts, failure=failure, notes=tuple(notes),
    )
