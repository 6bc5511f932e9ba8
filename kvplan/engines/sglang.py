"""SGLang's token pools: one pool, or a full pool and an SWA pool ("hybrid SWA memory").

Source: sglang ``python/sglang/srt/model_executor/model_runner.py`` (``set_num_token_hybrid``)
and ``configs/model_config.py`` (``is_hybrid_swa_model``), ``server_args.py`` (model-specific
adjustments); reference engines.md §3.2.

- **Which models get the split pool.** Only allowlisted architectures
  (``HYBRID_SWA_ARCHITECTURES``). Gemma 2/3/3n are forced to ``disable_hybrid_swa_memory``
  ("not yet supported"), so their sliding layers pay for every token like full layers.
- **Sizing** with ``r = --swa-full-tokens-ratio`` (default 0.8), per-token bytes ``F`` (all
  layers of the full pool) and ``S`` (all layers of the SWA pool):
  ``full_tokens = int(budget / (F + r·S))``, ``swa_tokens = int(full_tokens · r)``, each
  then rounded down to the page size. Drafter (EAGLE / draft-model) layers sit in the full
  term whatever their own attention: the draft worker's pool is sized from the full count.
- **Worked number** (engines.md §3.2): gpt-oss-20b, 40 GiB, r = 0.8: F = S = 12 · 2048 B,
  F + 0.8·S = 44,236.8 B, full = int(42,949,672,960 / 44,236.8) = 970,903, swa = 776,722.
- **Per request** at length L: ``cdiv(L, page)·page`` full tokens, and in the SWA pool the
  window plus one page, ``min(that, cdiv(W, page)·page + page)``; concurrency is the smaller
  of the two pools' quotients. Start-up fails when the SWA pool cannot hold one window plus
  a page. While a request prefills a chunk of ``chunked_prefill_size`` tokens its window
  grows by the chunk before eviction, so a pool smaller than ``W + chunk`` stalls long
  prompts (the too-small-ratio hang of kvcache-ai/sglang PR #60): ``prefill_fits``.
- **Recurrent state** (Mamba/GDN) lives in a pool of its own (``--mamba-full-memory-ratio``
  in SGLang); kvplan sets aside ``state_slots`` requests' state first, as many as serve the
  most requests (``layer_costs.state_slots``), an approximation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from kvplan.engines.layer_costs import FULL, STATE, WINDOW, LayerCost, state_slots
from kvplan.units import cdiv

# sglang configs/model_config.py ``is_hybrid_swa_model`` (snapshot 2026-09).
HYBRID_SWA_ARCHITECTURES = frozenset({
    "Llama4ForConditionalGeneration",
    "DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN",
    "GptOssForCausalLM",
    "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM", "MiMoV2MTP",
    "Step3p5ForCausalLM", "Step3p5MTP", "Step3p7ForConditionalGeneration",
    "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration",
    "LagunaForCausalLM",
})
# sglang server_args.py: these set disable_hybrid_swa_memory = True.
HYBRID_SWA_FORCED_OFF = frozenset({
    "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
    "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration",
})

DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8
NOT_ENOUGH_MEMORY = "Not enough memory. Please try to increase --mem-fraction-static."


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
    full_need_tokens: int  # per request of L tokens
    swa_need_tokens: int | None
    concurrency: Fraction
    chunked_prefill_size: int
    prefill_fits: bool | None  # the SWA pool holds a window plus a prefill chunk
    starts: bool
    failure: str | None
    pool_bytes: int
    notes: tuple[str, ...] = ()

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

    def to_dict(self) -> dict:
        return {
            "architecture": self.architecture,
            "hybrid_swa_memory": self.hybrid_swa_memory,
            "reason": self.reason,
            "swa_full_tokens_ratio": self.swa_full_tokens_ratio,
            "page_size": self.page_size,
            "pools": [
                {"pool": "full", "num_layers": self.num_full_layers, "per_token_bytes": self.full_bytes_per_token,
                 "capacity_tokens": self.full_tokens, "per_request_tokens": self.full_need_tokens},
                *([{"pool": "swa", "num_layers": self.num_swa_layers, "per_token_bytes": self.swa_bytes_per_token,
                    "window_tokens": self.window_tokens, "capacity_tokens": self.swa_tokens,
                    "per_request_tokens": self.swa_need_tokens}] if self.hybrid_swa_memory else []),
            ],
            "state_slots": self.state_slots,
            "state_bytes": self.state_bytes,
            "chunked_prefill_size_tokens": self.chunked_prefill_size,
            "prefill_fits": self.prefill_fits,
        }


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


def sglang_model(
    costs: tuple[LayerCost, ...],
    architecture: str | None,
    budget_bytes: int,
    target_len_tokens: int,
    *,
    swa_full_tokens_ratio: float = DEFAULT_SWA_FULL_TOKENS_RATIO,
    page_size: int = 1,
    chunked_prefill_size: int = 8192,
) -> SglangResult:
    hybrid, reason = hybrid_swa_decision(architecture, costs)
    L, page, r = target_len_tokens, page_size, swa_full_tokens_ratio
    attention = [c for c in costs if c.kind != STATE]
    if hybrid:
        swa_layers = [c for c in attention if c.kind == WINDOW and c.source == "target"]
        full_layers = [c for c in attention if not (c.kind == WINDOW and c.source == "target")]
    else:
        swa_layers, full_layers = [], attention
    F = sum(c.bytes_per_token for c in full_layers)
    S = sum(c.bytes_per_token for c in swa_layers)
    window = max((c.window_tokens or 0 for c in swa_layers), default=None)
    full_need = cdiv(L, page) * page
    swa_need = min(full_need, cdiv(window, page) * page + page) if hybrid else None

    def pools(budget: int) -> tuple[int, int | None, Fraction]:
        if budget <= 0 or F + S == 0:
            return 0, (0 if hybrid else None), Fraction(0)
        if hybrid:
            full = int(budget / (F + r * S))
            swa = int(full * r)
            full -= full % page
            swa -= swa % page
            conc = min(Fraction(full, full_need), Fraction(swa, swa_need))
            return full, swa, conc
        full = budget // F
        full -= full % page
        return full, None, Fraction(full, full_need)

    state = sum(c.state_bytes for c in costs if c.kind == STATE)
    slots = state_slots(state, budget_bytes, lambda b: pools(b)[2])
    full_tokens, swa_tokens, conc = pools(budget_bytes - slots * state)
    if state:
        conc = min(conc, Fraction(slots))
    notes: list[str] = []
    failure = None
    if full_tokens <= 0:
        failure = NOT_ENOUGH_MEMORY
    elif hybrid and swa_tokens < cdiv(window, page) * page + page:
        failure = (f"the SWA pool ({swa_tokens} tokens) cannot hold one window of {window} tokens plus a page; "
                   f"raise --swa-full-tokens-ratio")
    elif full_tokens < full_need:
        notes.append(f"the full pool holds {full_tokens:,} tokens, less than one {L:,}-token request: SGLang caps "
                     "the request length at the pool size")
    prefill_fits = None
    if hybrid:
        prefill_fits = swa_tokens >= min(full_need, cdiv(window + chunked_prefill_size, page) * page) + page
        if not prefill_fits and failure is None:
            notes.append(f"the SWA pool ({swa_tokens:,} tokens) is smaller than a window plus one prefill chunk "
                         f"({window} + {chunked_prefill_size}): long prompts stall; raise --swa-full-tokens-ratio")
    if state:
        notes.append(f"recurrent state set aside for {slots} request(s) before the token pools (approximation)")
    if any(c.source == "drafter" for c in costs) and hybrid:
        notes.append("drafter layers counted in the full pool")
    pool_bytes = full_tokens * F + (swa_tokens or 0) * S + slots * state
    return SglangResult(
        architecture=architecture, hybrid_swa_memory=hybrid, reason=reason, swa_full_tokens_ratio=r,
        page_size=page, num_full_layers=len(full_layers), num_swa_layers=len(swa_layers),
        full_bytes_per_token=F, swa_bytes_per_token=S, window_tokens=window, full_tokens=full_tokens,
        swa_tokens=swa_tokens, state_slots=slots, state_bytes=slots * state, state_bytes_per_request=state,
        full_need_tokens=full_need,
        swa_need_tokens=swa_need, concurrency=conc if failure is None else Fraction(0),
        chunked_prefill_size=chunked_prefill_size, prefill_fits=prefill_fits, starts=failure is None,
        failure=failure, pool_bytes=pool_bytes, notes=tuple(notes),
    )
