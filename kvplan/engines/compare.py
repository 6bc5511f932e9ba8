"""The words every engine of ``kvplan compare`` reads and answers in: the engines' shared
vocabulary, read like a glossary (as ``specs.py`` is for the layers), so a row of one engine
reads like a row of another. Nothing here runs an engine: each engine answers from its own
module (``sglang.py``, ``trtllm.py``, ``llamacpp.py``, ``vllm/compare.py``, and
``lower_bound.py`` for the floor), which the use case (``kvplan/usecases/compare.py``) calls once
for both the engine's row and its advice (an ``EngineAnswer``).

- ``CompareInputs``: the workload, and each engine's knobs as the record its own module declares
  (the engines' own defaults; the default values they share are named here);
- ``EngineRow``: the same few numbers per engine, each engine model taking the per-layer specs
  (per tensor-parallel rank) and the same budget and length:

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
  - whether the engine starts, and the knobs that produced the row;

- ``Figure`` / ``EngineStages``: one request's life in a non-vLLM engine (admission, prefill,
  steady decode), the same five figures for every engine, each with the rule it was computed
  from (source file and function, or kvplan's own interpretation):

  - ``kv_tokens``: tokens of context the pools hold;
  - ``longest_prompt_tokens``: the longest prompt the engine can prefill on an empty pool;
  - ``admission_concurrency``: requests of the workload the scheduler admits at once;
  - ``steady_concurrency``: requests that fit once every request is decoding;
  - ``starts``: whether the engine starts;

- how an advised knob is scored and shown (``NO_SCORE``, ``rounded``, ``reaches``): every candidate
  knob is re-simulated through the same engine model as the rows (admission, prefill and steady
  decode included), never a separate formula. A candidate is scored by the whole requests of the
  workload it serves (the model's concurrency, 0 when the workload's prompt cannot be prefilled or
  the engine does not start), then by its **margin**: the smallest pool's capacity over what those
  requests need in it (``min_pool capacity / (requests · need)``), so among knobs serving as many
  requests the one leaving every pool the most headroom wins. A knob that serves no request is never
  advised (``tests/test_compare_advice_properties.py`` checks over random models that every advised
  knob leaves each pool at least one request's need).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, TypeVar

from kvplan.results import Attr, Outcome, Record
from kvplan.results.engines import NoKnobs

_Knobs = TypeVar("_Knobs")

# --- the engines' own defaults for the knobs compare passes them ------------------------------
# SGLang (sglang.py): --swa-full-tokens-ratio
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8
DEFAULT_SWA_EVICTION_INTERVAL = 128  # environ.py SGLANG_SWA_EVICTION_INTERVAL
DEFAULT_MAMBA_FULL_MEMORY_RATIO = 0.9  # arg_groups/fields/schedule.py mamba_full_memory_ratio fallback
# TensorRT-LLM (trtllm.py)
TOKENS_PER_BLOCK = 32
DEFAULT_MAX_NUM_TOKENS = 8192  # resource_manager.py KVCacheManager(max_num_tokens=8192)
DEFAULT_MAX_BATCH_SIZE = 2048  # BuildConfig.max_batch_size, copied into TorchLlmArgs.max_batch_size
GUARANTEED_NO_EVICT = "GUARANTEED_NO_EVICT"  # the default CapacitySchedulerPolicy
# llama.cpp (llamacpp.py): -ub
DEFAULT_N_UBATCH = 512


@dataclass(frozen=True)
class CompareInputs(Record):
    """The workload every engine is evaluated at, and each engine's own knobs: ``engines`` maps an engine's name
    (``kvplan.engines.registry``) to the knob record its module declares (``Engine.inputs``; an engine missing from it
    runs with its record's defaults, the engine's own). ``kvplan.engines.registry.compare_inputs`` builds one from
    flat keywords (each knob by its option's name)."""

    kv_cache_memory_bytes: int  # per GPU, the same budget for every engine
    target_len_tokens: int  # L: every engine is evaluated at requests of this length
    target_concurrency: int | None = None  # N
    max_num_batched_tokens: int = 8192  # vLLM's; SGLang's chunked prefill size
    target_prompt_len_tokens: int | None = None  # prompt part of L (default: all of it)
    context_len_tokens: int | None = None  # the model's context length (SGLang's --context-length default)
    num_speculative_tokens: int = 0  # the drafter's tokens per step (SGLang's speculative SWA term)
    engines: Mapping[str, Any] = field(default_factory=dict)  # engine name -> its knob record

    DATA = {k: k for k in ("kv_cache_memory_bytes", "target_len_tokens", "target_concurrency",
                           "max_num_batched_tokens")}

    def knobs(self, name: str, default: _Knobs) -> _Knobs:
        """The knob record of engine ``name`` (``default``, the engine's defaults, when none was given)."""
        got = self.engines.get(name)
        return default if got is None else got


@dataclass(frozen=True)
class EngineRow:
    engine: str  # vllm | sglang | trtllm | llamacpp | lower_bound
    name: str  # the policy / configuration shown in the table
    starts: bool
    kv_tokens: int | None
    max_concurrency: float
    reserved_per_request_bytes: int | None
    lower_bound_bytes: int
    knobs: object = field(default_factory=NoKnobs)  # the engine's knob record (Engine.knobs_type)
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
class EngineAnswer:
    """One engine's answer to the workload: its rows in the table (one per vLLM policy, else one) and
    its advice (the records of ``kvplan.results.advice``; None where none was asked)."""

    rows: tuple[EngineRow, ...]
    advice: object = None


@dataclass(frozen=True)
class Figure(Record):
    value: int | float | bool | None
    rule: str

    DATA = {"value": Attr("value", 6), "rule": "rule"}


@dataclass(frozen=True)
class EngineStages(Record):
    engine: str  # sglang | trtllm | llamacpp
    version: str  # the release or build the rules were read from
    kv_tokens: Figure
    longest_prompt_tokens: Figure
    admission_concurrency: Figure
    steady_concurrency: Figure
    starts: Figure
    prompt_len_tokens: int  # the workload's prompt (the longest it can be is the request length)
    prefills_prompt: bool = field(init=False)  # the longest prompt it prefills reaches the workload's

    def __post_init__(self) -> None:
        v = self.longest_prompt_tokens.value
        object.__setattr__(self, "prefills_prompt", v is None or v >= self.prompt_len_tokens)

    DATA = {"engine_version": "version", "prompt_len_tokens": "prompt_len_tokens", "prefills_prompt": "prefills_prompt",
            "kv_tokens": "kv_tokens", "longest_prompt_tokens": "longest_prompt_tokens",
            "admission_concurrency": "admission_concurrency", "steady_concurrency": "steady_concurrency",
            "starts": "starts"}


def require_version(flag: str, given: str | None, known: str, engine: str) -> str:
    """The engine version whose rules kvplan models; any other is refused, naming the one it knows."""
    from kvplan.errors import OptionError

    if given is None or given.strip() == known:
        return known
    raise OptionError(f"{flag} {given}: kvplan's {engine} rules were read from {known} only; pass {flag} {known} "
                      f"(or leave it out)")


# --- how an advised knob is scored and shown -----------------------------------------------------

NO_SCORE = (0, 0.0)  # (whole requests served, the smallest pool margin): a knob that serves none


def reaches(concurrency: float, target: int | None) -> bool | None:
    """Whether ``concurrency`` reaches the workload's target (None: no target asked)."""
    return None if target is None else concurrency >= target


def rounded(x: float) -> float:
    """A figure of the advice as it is shown: six decimals."""
    return round(x, 6)
