"""llama.cpp's KV caches (``llama_kv_cache_iswa``: a base cache and an SWA cache) plus
recurrent state, as llama.cpp sizes them at context creation.

Rules read from llama.cpp at ``ggml-org/llama.cpp@0c1e57098`` (the source vendored by
llama-cpp-python 0.3.36), and checked against that build on CPU (``tests/golden/llamacpp``,
made by ``scripts/golden/llamacpp_goldens.py``).

- **n_ctx** (``src/llama-context.cpp``, ``llama_context`` constructor): the requested
  ``n_ctx`` is padded up to a multiple of 256. With a unified KV cache one stream holds
  ``n_ctx`` cells shared by all sequences (``n_ctx_seq = n_ctx``); without, every sequence has
  a stream of ``n_ctx_seq = pad256(n_ctx / n_seq)`` cells and ``n_ctx`` becomes
  ``n_ctx_seq · n_seq``. ``n_ubatch`` is ``min(n_ubatch, n_batch)`` with
  ``n_batch = min(n_ctx as requested, n_batch)`` (2048 by default).
- **Two caches** (``src/llama-kv-cache-iswa.cpp``): base (full-attention layers) with
  ``n_ctx_seq`` cells per stream; SWA (sliding / chunked layers, ``n_swa`` the model's
  window) with ``pad256(min(n_ctx_seq, n_swa · (unified ? n_seq : 1) + n_ubatch))`` cells
  per stream, or ``n_ctx_seq`` with ``swa_full``. ``src/llama-kv-cache.cpp`` allocates every
  layer's K and V as ``cells × n_stream`` rows. A cell costs each layer its K + V bytes.
- **Defaults differ by entry point**: the library (``llama_context_default_params``) has
  ``swa_full`` true and ``kv_unified`` false; ``common/common.h`` (the tools) has
  ``swa_full`` false, ``kv_unified`` false, ``n_parallel`` 1; ``llama-server``
  (``tools/server/server.cpp``) defaults ``-np`` to auto, which becomes 4 slots with a
  unified cache ("n_parallel is set to auto, using n_parallel = 4 and kv_unified = true"),
  while an explicit ``-np N`` keeps the non-unified cache unless ``--kv-unified`` is given.
- **Recurrent layers** (Mamba, GDN) keep one state per sequence in a separate
  ``llama_memory_recurrent`` of ``n_seq`` cells, always in float32 (``src/llama-model.cpp
  create_memory``: ``recurrent_type_k`` / ``recurrent_type_v`` are ``GGML_TYPE_F32``; ``-ctk`` /
  ``-ctv`` do not apply); read from the source, not run (the golden models have no recurrent layers).
- **One configuration per row**: the row's concurrency is what its own ``-np`` / ``-c`` serve
  (llama-server's default: 4 slots sharing ``n_ctx = L``, so ``n_ctx // L`` = 1 request of ``L``;
  an explicit ``-np N``: ``N`` requests, ``n_ctx = L · N``, or none when it does not allocate);
  the largest ``-np`` that fits is the advice. ``-np`` auto always gets a unified cache
  (llama-server sets ``kv_unified = true`` with it), whatever ``--no-kv-unified`` says.
- **Drafter layers** live in llama.cpp's separate draft context; kvplan sizes it with the
  same ``n_ctx`` and ``n_seq`` and the same formulas, and adds it to the total.
- llama.cpp has no KV budget of its own: it allocates what ``n_ctx`` asks and fails to
  allocate past the device memory. kvplan checks the allocation against the same budget,
  reports the largest ``n_ctx`` that fits at the chosen ``n_seq`` (a multiple of 256, since
  llama.cpp pads any other value up), and the largest ``n_seq`` whose ``n_ctx = L · n_seq``
  fits. Slots are fixed at start, so admission and steady decode serve the same count. With
  ``-c`` unset, the tools fit ``n_ctx`` to free device memory (``common/common.h fit_params``,
  on by default, 1 GiB margin per device, at least 4096 tokens); kvplan's largest ``n_ctx`` is
  the KV cache's share of that bound.
- **Worked numbers** (f16, one sequence, ``n_ubatch`` 512, ``n_ctx`` 131072): gemma-3-27b
  base 10 · 131072 · 8192 B = 10 GiB; SWA pad256(1024 + 512) = 1536 cells, 52 · 1536 · 8192 B
  = 624 MiB; total 11,391,729,664 B; with ``swa_full`` 62 GiB. gpt-oss-20b SWA
  pad256(128 + 512) = 768 cells, 18 MiB. Four non-unified sequences at ``n_ctx`` 524288:
  four streams of 131072 base cells and pad256(1024 + 512) = 1536 SWA cells each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvplan.engines.compare import (DEFAULT_N_UBATCH, CompareInputs, EngineAnswer, EngineRow, EngineStages, Figure,
                                    reaches, require_version, rounded)
from kvplan.engines.engine import CompareRun, EngineDefaults
from kvplan.engines.layer_costs import FULL, STATE, WINDOW, LayerCost
from kvplan.engines.lower_bound import LowerBound
from kvplan.errors import OptionError
from kvplan.results.advice import LlamacppAdvice, LlamacppNoChange, LlamacppNone, LlamacppSlots
from kvplan.units import Bisection, cdiv, plural

LLAMACPP_BUILD = "0c1e57098"  # ggml-org/llama.cpp commit vendored by llama-cpp-python 0.3.36
SWA_PAD_CELLS = 256
N_CTX_PAD_CELLS = 256
DEFAULT_N_BATCH = 2048
SERVER_AUTO_N_PARALLEL = 4  # tools/server/server.cpp: -np auto → 4 slots, unified KV
ALLOC_FAILURE = "failed to allocate buffer for kv cache"
RECURRENT_DTYPE_BYTES = 4  # src/llama-model.cpp: recurrent_type_k / recurrent_type_v = GGML_TYPE_F32

RULE_CTX = "llama_context: n_ctx padded to 256; largest that fits the budget"
RULE_PROMPT = "slot context: n_ctx_seq (n_ctx unified, pad256(n_ctx / n_seq) per stream otherwise)"
RULE_SLOTS = ("slots fixed at start: this row's -np / -c (unified: min(n_seq, n_ctx // L); per slot: n_seq "
              "when n_ctx_seq >= L); 0 when it does not allocate")


def pad256(n: int) -> int:
    return cdiv(n, SWA_PAD_CELLS) * SWA_PAD_CELLS


@dataclass(frozen=True)
class LlamacppCaches:
    n_ctx: int  # after llama.cpp's padding
    n_seq: int
    base_cells: int  # per stream
    swa_cells: int  # per stream
    base_bytes: int
    swa_bytes: int
    recurrent_bytes: int
    n_stream: int = 1
    n_ctx_seq: int = 0
    n_ubatch: int = DEFAULT_N_UBATCH

    @property
    def total_bytes(self) -> int:
        return self.base_bytes + self.swa_bytes + self.recurrent_bytes

    def row(self) -> "LlamacppCachesRow":
        return LlamacppCachesRow(self.n_ctx, self.n_ctx_seq, self.n_seq, self.n_stream, self.n_ubatch, self.base_cells,
                                 self.swa_cells, self.base_bytes, self.swa_bytes, self.recurrent_bytes, self.total_bytes)


@dataclass(frozen=True)
class LlamacppCachesRow:
    """The caches as results show them."""

    n_ctx_tokens: int
    n_ctx_seq_tokens: int
    n_seq: int
    n_stream: int
    n_ubatch: int
    base_cells: int
    swa_cells: int
    base_bytes: int
    swa_bytes: int
    recurrent_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class _Model:
    base_bytes_per_cell: int  # Σ K+V bytes per token over full-attention layers
    swa_bytes_per_cell: int  # Σ over sliding / chunked layers
    n_swa: int  # the window
    state_bytes: int  # recurrent state of one sequence, all layers
    n_ubatch: int
    swa_full: bool
    kv_unified: bool = True
    n_batch: int = DEFAULT_N_BATCH

    def caches(self, n_ctx: int, n_seq: int) -> LlamacppCaches:
        ubatch = min(self.n_ubatch, min(n_ctx, self.n_batch))  # llama_context: n_batch = min(n_ctx, n_batch)
        ctx = cdiv(n_ctx, N_CTX_PAD_CELLS) * N_CTX_PAD_CELLS
        if self.kv_unified:
            streams, ctx_seq = 1, ctx
        else:
            streams, ctx_seq = n_seq, pad256(ctx // n_seq)
            ctx = ctx_seq * n_seq
        swa_cells = 0
        if self.swa_bytes_per_cell:
            span = self.n_swa * (n_seq if self.kv_unified else 1) + ubatch
            swa_cells = ctx_seq if self.swa_full else pad256(min(ctx_seq, span))
        base_cells = ctx_seq if self.base_bytes_per_cell else 0
        return LlamacppCaches(
            ctx, n_seq, base_cells, swa_cells, streams * base_cells * self.base_bytes_per_cell,
            streams * swa_cells * self.swa_bytes_per_cell, n_seq * self.state_bytes, streams, ctx_seq, ubatch,
        )


def _model(costs: tuple[LayerCost, ...], n_ubatch: int, swa_full: bool, kv_unified: bool = True,
           n_batch: int = DEFAULT_N_BATCH) -> _Model:
    return _Model(
        base_bytes_per_cell=sum(c.bytes_per_token for c in costs if c.kind == FULL),
        swa_bytes_per_cell=sum(c.bytes_per_token for c in costs if c.kind == WINDOW),
        n_swa=max((c.window_tokens or 0 for c in costs if c.kind == WINDOW), default=0),
        state_bytes=sum((c.state_conv_elements + c.state_temporal_elements) * RECURRENT_DTYPE_BYTES
                        for c in costs if c.kind == STATE),
        n_ubatch=n_ubatch, swa_full=swa_full, kv_unified=kv_unified, n_batch=n_batch,
    )


def cache_sizes(costs, n_ctx: int, n_seq: int = 1, n_ubatch: int = DEFAULT_N_UBATCH,
                swa_full: bool = False, kv_unified: bool = True, n_batch: int = DEFAULT_N_BATCH) -> LlamacppCaches:
    return _model(costs, n_ubatch, swa_full, kv_unified, n_batch).caches(n_ctx, n_seq)


def server_slots(n_seq: int | None, kv_unified: bool | None) -> tuple[int, bool, str]:
    """(n_seq, kv_unified, how) as llama-server sets them up from -np and --kv-unified."""
    if n_seq is not None and n_seq < 1:
        raise OptionError(f"--llamacpp-n-seq {n_seq}: llama-server needs at least one slot (-np 0 is refused)")
    if n_seq is None:  # -np auto: llama-server sets kv_unified = true, whatever was asked
        return SERVER_AUTO_N_PARALLEL, True, "llama-server default: -np auto → 4 slots, unified KV" + (
            " (--no-kv-unified has no effect with -np auto)" if kv_unified is False else "")
    unified = False if kv_unified is None else kv_unified
    return n_seq, unified, f"-np {n_seq}" + (" --kv-unified" if unified else " (non-unified: a stream per slot)")


@dataclass(frozen=True)
class LlamacppKnobs:
    """llama.cpp's settings its row ran with (the row's ``knobs``)."""

    n_ctx_tokens: int
    n_seq: int
    n_ubatch: int
    swa_full: bool
    kv_unified: bool
    slots: str  # where -np came from


@dataclass(frozen=True)
class LlamacppInputs:
    """llama.cpp's knobs in ``kvplan compare`` (compare's options of the same names; the defaults llama-server's)."""

    llamacpp_n_seq: int | None = None  # -np; default: the target concurrency, else llama-server's auto (4, unified)
    llamacpp_n_ubatch: int = DEFAULT_N_UBATCH
    swa_full: bool = False  # --swa-full
    llamacpp_kv_unified: bool | None = None  # None: as llama-server decides from -np


def knobs_of(inputs: CompareInputs) -> LlamacppInputs:
    return inputs.knobs("llamacpp", LlamacppInputs())


def llamacpp_slots(inputs: CompareInputs) -> tuple[int, bool, str, int | None]:
    """(n_seq, kv_unified, how, n_ctx) of the workload's llama-server: an explicit -np (or the target
    concurrency) gives each slot L tokens; llama-server's auto default shares n_ctx = L (the model's
    context) between 4 slots."""
    k = knobs_of(inputs)
    given = k.llamacpp_n_seq or inputs.target_concurrency
    n, unified, how = server_slots(given, k.llamacpp_kv_unified)
    return n, unified, how, None if given else inputs.target_len_tokens


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
    kv_unified: bool = True
    slots_from: str = ""
    one_request_caches: LlamacppCaches | None = None  # n_ctx = L, one sequence

    @property
    def configured_concurrency(self) -> int:
        """Requests of L this row's own -np / -c serve at once (0 when it does not allocate)."""
        if not self.starts:
            return 0
        return min(self.n_seq, self.caches.n_ctx_seq // self.target_len_tokens) if self.kv_unified \
            else (self.n_seq if self.caches.n_ctx_seq >= self.target_len_tokens else 0)

    @property
    def max_concurrency(self) -> float:
        return float(self.configured_concurrency)

    @property
    def reserved_per_request_bytes(self) -> int:
        n = self.configured_concurrency
        if n:  # this row's own caches over the requests they serve
            return -(-self.caches.total_bytes // n)
        c = self.one_request_caches or self.caches
        return -(-c.total_bytes // c.n_seq)

    @property
    def stages(self) -> EngineStages:
        return EngineStages(
            engine="llamacpp", version=LLAMACPP_BUILD,
            kv_tokens=Figure(self.max_n_ctx_tokens, RULE_CTX),
            longest_prompt_tokens=Figure(self.caches.n_ctx_seq if self.starts else 0, RULE_PROMPT),
            admission_concurrency=Figure(self.configured_concurrency, RULE_SLOTS),
            steady_concurrency=Figure(self.configured_concurrency, RULE_SLOTS),
            starts=Figure(self.starts, "every cache is allocated at start: fails past the budget"),
            prompt_len_tokens=self.target_len_tokens,
        )

    def details(self) -> "LlamacppDetails":
        """The result as ``compare`` shows it (its engine row's ``details``)."""
        return LlamacppDetails(
            llamacpp_build=LLAMACPP_BUILD, n_seq=self.n_seq, n_ubatch=self.n_ubatch, swa_full=self.swa_full,
            kv_unified=self.kv_unified, slots=self.slots_from, n_swa_tokens=self.n_swa, caches=self.caches.row(),
            max_n_ctx_tokens=self.max_n_ctx_tokens, max_n_seq=self.max_n_seq,
            capacity_caches=self.capacity_caches.row() if self.capacity_caches is not None else None,
            stages=self.stages)


@dataclass(frozen=True)
class LlamacppDetails:
    """A llama.cpp result as results show it."""

    llamacpp_build: str  # the build the rules were read from
    n_seq: int
    n_ubatch: int
    swa_full: bool
    kv_unified: bool
    slots: str  # where -np came from
    n_swa_tokens: int
    caches: LlamacppCachesRow
    max_n_ctx_tokens: int | None
    max_n_seq: int
    capacity_caches: LlamacppCachesRow | None
    stages: EngineStages


def llamacpp_model(
    costs: tuple[LayerCost, ...],
    budget_bytes: int,
    target_len_tokens: int,
    *,
    n_seq: int = 1,
    n_ubatch: int = DEFAULT_N_UBATCH,
    swa_full: bool = False,
    kv_unified: bool = True,
    slots_from: str = "",
    n_ctx: int | None = None,
) -> LlamacppResult:
    """``n_ctx`` defaults to ``L · n_seq`` (every slot holds a full request)."""
    m = _model(costs, n_ubatch, swa_full, kv_unified)
    L = target_len_tokens
    caches = m.caches(L * n_seq if n_ctx is None else n_ctx, n_seq)
    starts = caches.total_bytes <= budget_bytes
    failure = None if starts else (
        f"{ALLOC_FAILURE}: n_ctx {caches.n_ctx:,} with {plural(n_seq, 'sequence')} needs {caches.total_bytes:,} B, "
        f"more than the {budget_bytes:,} B budget"
    )
    # largest n_ctx at this n_seq, in steps of 256 (llama.cpp pads any other value up);
    # without full layers the caches stop growing with n_ctx
    max_n_ctx = None
    if m.base_bytes_per_cell or swa_full:
        step = N_CTX_PAD_CELLS * (1 if kv_unified else n_seq)
        per_cell = m.base_bytes_per_cell + (m.swa_bytes_per_cell if swa_full else 0)
        hi = budget_bytes // (per_cell * step) + 1
        search = Bisection(0, hi)
        for k in search:
            search.answer(m.caches(k * step, n_seq).total_bytes <= budget_bytes)
        max_n_ctx = search.largest * step
    per_seq = L * m.base_bytes_per_cell + min(L, m.n_swa) * m.swa_bytes_per_cell + m.state_bytes
    hi = budget_bytes // per_seq + 1 if per_seq else 1 << 20
    search = Bisection(0, hi)
    for n in search:
        search.answer(m.caches(L * n, n).total_bytes <= budget_bytes)
    max_n_seq = search.largest
    notes = []
    asked = L * n_seq if n_ctx is None else n_ctx
    if caches.n_ctx != asked:
        notes.append(f"llama.cpp pads n_ctx {asked:,} to {caches.n_ctx:,} (multiples of 256"
                     + ("" if kv_unified else ", per stream") + ")")
    if kv_unified and caches.n_ctx < L * n_seq:
        notes.append(f"{n_seq} slots share {caches.n_ctx:,} cells: {plural(caches.n_ctx // L, 'request')} of {L:,} tokens "
                     "at once; -np/-c from the advice give each slot a full request")
    if any(c.source == "drafter" for c in costs):
        notes.append("drafter layers sized as llama.cpp's separate draft context (same n_ctx and n_seq)")
    if m.state_bytes:
        notes.append(f"recurrent state: {plural(n_seq, 'cell')} of {m.state_bytes:,} B in llama_memory_recurrent")
    return LlamacppResult(
        target_len_tokens=L, n_seq=n_seq, n_ubatch=n_ubatch, swa_full=swa_full, n_swa=m.n_swa, caches=caches,
        max_n_ctx_tokens=max_n_ctx, max_n_seq=max_n_seq,
        capacity_caches=m.caches(L * max_n_seq, max_n_seq) if max_n_seq else None,
        budget_bytes=budget_bytes, starts=starts, failure=failure, notes=tuple(notes),
        kv_unified=kv_unified, slots_from=slots_from, one_request_caches=m.caches(L, 1),
    )


# --- in `kvplan compare`: llama.cpp's row and its -np / -c advice ------------------------------------
# The advice: the largest ``-np`` whose ``-c = L · n_seq`` allocates within the budget, in the unified and
# the per-slot (non-unified) layout, with and without ``--swa-full``; ``-c`` is what llama.cpp keeps after
# padding to 256.


def llamacpp_row(costs: tuple[LayerCost, ...], inputs: CompareInputs, lb: LowerBound) -> EngineRow:
    n_seq, unified, how, n_ctx = llamacpp_slots(inputs)
    k = knobs_of(inputs)
    r = llamacpp_model(
        costs, inputs.kv_cache_memory_bytes, inputs.target_len_tokens,
        n_seq=n_seq, n_ubatch=k.llamacpp_n_ubatch, swa_full=k.swa_full, kv_unified=unified,
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


def advise_llamacpp(costs: tuple[LayerCost, ...],
                    inputs: CompareInputs) -> LlamacppNone | LlamacppNoChange | LlamacppAdvice:
    L, B = inputs.target_len_tokens, inputs.kv_cache_memory_bytes
    k = knobs_of(inputs)
    layouts = {}
    for unified in (True, False):
        for swa_full in (False, True):
            r = llamacpp_model(costs, B, L, n_seq=1, n_ubatch=k.llamacpp_n_ubatch, swa_full=swa_full,
                               kv_unified=unified)
            layouts[(unified, swa_full)] = r.max_n_seq
    unified = layouts[(True, False)] >= layouts[(False, False)]
    n = layouts[(unified, False)]
    slots = LlamacppSlots(n, unified, layouts[(False, False)], layouts[(True, False)],
                          max(layouts[(True, True)], layouts[(False, True)]), reaches(n, inputs.target_concurrency))
    if n < 1:
        return LlamacppNone(slots, None, f"not even one {L:,}-token sequence allocates within the budget")
    n_seq, kv_unified, _, n_ctx = llamacpp_slots(inputs)
    base = llamacpp_model(costs, B, L, n_seq=n_seq, n_ubatch=k.llamacpp_n_ubatch, swa_full=k.swa_full,
                          kv_unified=kv_unified, n_ctx=n_ctx).configured_concurrency
    if n <= base:  # offered only when it serves more than the row's own configuration
        return LlamacppNoChange(slots, base, n - base, None, f"no change: the row's -np / -c already serve "
                                                              f"{plural(base, 'request')}, the most that allocate")
    check = llamacpp_model(costs, B, L, n_seq=n, n_ubatch=k.llamacpp_n_ubatch, kv_unified=unified)
    assert check.starts  # the advised -np/-c re-simulated: it allocates within the budget
    return LlamacppAdvice(slots, base, n - base, f"-c {check.caches.n_ctx} -np {n}" + (" --kv-unified" if unified else ""),
                          check.caches.total_bytes, rounded(B / check.caches.total_bytes))


def llamacpp_compared(costs: tuple[LayerCost, ...], inputs: CompareInputs, lb: LowerBound) -> EngineAnswer:
    """llama.cpp's answer to the workload: its row and its ``-np`` / ``-c`` advice."""
    return EngineAnswer((llamacpp_row(costs, inputs, lb),), advise_llamacpp(costs, inputs))


class LlamaCpp(EngineDefaults):
    """llama.cpp in ``kvplan compare`` (``kvplan.engines.engine.Engine``)."""

    name: str = "llamacpp"
    title: str = "llama.cpp"
    version_option: str | None = "llamacpp_build"
    inputs_type: type | None = LlamacppInputs
    advice_type: Any = LlamacppNone | LlamacppNoChange | LlamacppAdvice
    knobs_type: type = LlamacppKnobs

    def versions(self, given: str | None) -> dict[str, str]:
        return {"llamacpp": require_version("--llamacpp-build", given, LLAMACPP_BUILD, self.title)}

    def compared(self, run: CompareRun) -> EngineAnswer:
        return llamacpp_compared(run.costs, run.inputs, run.lower_bound)

    def knobs_text(self, row: dict) -> str:
        k = row["knobs"]
        return (f"-c {k['n_ctx_tokens']} -np {k['n_seq']} -ub {k['n_ubatch']}"
                + (" --swa-full" if k["swa_full"] else "") + (" (unified KV)" if k["kv_unified"] else " (KV per slot)"))

    def advice_cells(self, advice: dict) -> tuple[str, str, bool | None, str]:
        lc = advice
        return (lc["flags"] or "(-np / -c)", f"{lc['n_seq']}", lc["reaches_target"],
                lc.get("reason") or f"unified {lc['n_seq_unified']}, per slot {lc['n_seq_non_unified']}, "
                f"with --swa-full {plural(lc['n_seq_with_swa_full'], 'sequence')}")


ENGINE = LlamaCpp()
