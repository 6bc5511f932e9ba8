"""The records of ``kvplan compare``'s advice (each engine's from its own module: ``engines/sglang.py``,
``engines/trtllm.py``, ``engines/llamacpp.py``, ``engines/vllm/compare.py``): per engine, the knob that
serves more requests of the target length within the same budget, or why there is none.

Each outcome of an engine's search is its own record, so a key is present exactly when that outcome
has it (``applicable`` False: the knob has no effect; ``no change``: the engine's default already
serves the most; advised: the knob, the requests it serves and its margins). Figures are rounded to
4 digits where the engines' own are not integers. Serialised by ``kvplan.results.to_data``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kvplan.results import FLATTEN, OMIT_NONE


@dataclass(frozen=True)
class NotApplicable:
    """The knob has no effect for this model (one window size, no hybrid SWA pool)."""

    applicable: bool
    reason: str
    max_concurrency: float
    reaches_target: bool | None


# --- SGLang: --swa-full-tokens-ratio ----------------------------------------------------------


@dataclass(frozen=True)
class SglangNoRatio:
    """No ratio in (0, 1] serves one request of the target length."""

    applicable: bool
    swa_full_tokens_ratio: float | None
    max_concurrency: float
    candidates_tried: int
    reason: str
    reaches_target: bool | None


@dataclass(frozen=True)
class SglangNoChange:
    """The default ratio serves as many requests as any ratio tried."""

    applicable: bool
    swa_full_tokens_ratio: float | None
    max_concurrency: float
    candidates_tried: int
    default_requests: int
    reason: str
    reaches_target: bool | None


@dataclass(frozen=True)
class SglangAdvice:
    """The ratio that serves the most requests (SGLang's own worst case), and its margins."""

    default_requests: int
    gain_requests: int
    candidates_tried: int
    applicable: bool
    swa_full_tokens_ratio: float
    flag: str
    max_concurrency: float
    requests: int
    margin: float
    pool_margins: dict[str, float]
    full_tokens: int
    swa_tokens: int
    default_swa_full_tokens_ratio: float
    default_max_concurrency: float
    reaches_target: bool | None


# --- TensorRT-LLM: TRTLLM_WINDOW_SIZE_SHARES, and a Mamba hybrid's settings -------------------


@dataclass(frozen=True)
class TrtllmNoSplit:
    """No split of the pool prefills one prompt of the target length."""

    applicable: bool
    window_shares: tuple[float, ...] | None
    max_concurrency: float
    reason: str
    longest_prompt_tokens: int
    equal_shares_max_concurrency: float
    reaches_target: bool | None


@dataclass(frozen=True)
class TrtllmNoChange:
    """Equal shares serve as many requests as any split tried."""

    applicable: bool
    window_shares: tuple[float, ...] | None
    max_concurrency: float
    default_requests: int
    candidates_tried: int
    reason: str
    equal_shares_max_concurrency: float
    reaches_target: bool | None


@dataclass(frozen=True)
class TrtllmShares:
    """The window shares that serve the most requests; ``reason`` only where a Mamba hybrid's
    settings serve none."""

    default_requests: int
    gain_requests: int
    candidates_tried: int
    applicable: bool
    windows_tokens: tuple[int, ...]
    window_shares: tuple[float, ...]
    env: str
    max_concurrency: float
    requests: int
    margin: float
    pool_margins: dict[str, float]
    longest_prompt_tokens: int
    equal_shares_max_concurrency: float
    reaches_target: bool | None
    reason: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class TrtllmSettings:
    """A Mamba hybrid: block reuse off and a ``max_batch_size`` (``settings``), with the window-share
    advice under them spread in place (its figures replaced by those of the settings)."""

    shares: NotApplicable | TrtllmNoSplit | TrtllmNoChange | TrtllmShares = field(metadata=FLATTEN)
    applicable: bool
    settings: dict[str, bool | int]  # TensorRT-LLM's own setting names (kv_cache_config.enable_block_reuse)
    settings_text: str
    max_concurrency: float
    requests: int
    default_requests: int
    gain_requests: int
    default_fails: str | None
    reaches_target: bool | None
    reason: str


# --- vLLM: the grouping threshold (a code change: vLLM has no flag for it) ----------------------


@dataclass(frozen=True)
class VllmGrouping:
    """One threshold's grouping, as the deployment runs now (``current``)."""

    threshold: float | None
    group_size: int
    num_padding_layers: int
    starts: bool
    max_concurrency: float


@dataclass(frozen=True)
class VllmTried:
    """One threshold simulated."""

    threshold: float
    group_size: int
    num_groups: int
    num_padding_layers: int
    starts: bool
    max_concurrency: float
    failure: str | None


@dataclass(frozen=True)
class VllmNotApplicable:
    """The threshold is not consulted (another rule, another grouping path, equal bucket counts)."""

    applicable: bool
    reason: str
    current: VllmGrouping


@dataclass(frozen=True)
class VllmNoThreshold:
    """No threshold tried avoids the failure or serves one request."""

    applicable: bool
    threshold: float | None
    current: VllmGrouping
    tried: tuple[VllmTried, ...]
    reason: str


@dataclass(frozen=True)
class VllmAdvice:
    """The threshold that starts with the fewest padding layers."""

    applicable: bool
    threshold: float
    code_change: str | None
    kvplan_flag: str
    reason: str
    group_size: int
    num_padding_layers: int
    max_concurrency: float
    reaches_target: bool | None
    current: VllmGrouping
    tried: tuple[VllmTried, ...]


# --- llama.cpp: -np / -c / --kv-unified ---------------------------------------------------------


@dataclass(frozen=True)
class LlamacppSlots:
    """How many sequences of the target length allocate, by cache layout."""

    n_seq: int
    kv_unified: bool
    n_seq_non_unified: int
    n_seq_unified: int
    n_seq_with_swa_full: int
    reaches_target: bool | None


@dataclass(frozen=True)
class LlamacppNone:
    """Not one sequence of the target length allocates."""

    slots: LlamacppSlots = field(metadata=FLATTEN)
    flags: str | None
    reason: str


@dataclass(frozen=True)
class LlamacppNoChange:
    """The row's own -np / -c already serve the most."""

    slots: LlamacppSlots = field(metadata=FLATTEN)
    default_requests: int
    gain_requests: int
    flags: str | None
    reason: str


@dataclass(frozen=True)
class LlamacppAdvice:
    """The flags that serve the most sequences, re-simulated (they allocate within the budget)."""

    slots: LlamacppSlots = field(metadata=FLATTEN)
    default_requests: int
    gain_requests: int
    flags: str
    total_bytes: int
    margin: float


@dataclass(frozen=True)
class Advice:
    """Every engine's advice at the target length: ``engines`` maps each engine's name to its advice record, in the
    registry's order (``kvplan.engines.registry``), spread into the keys (vLLM's None without a vLLM plan). The
    schema names each key and its records from the registry (``Engine.advice_type``, scripts/make_schemas.py)."""

    target_len_tokens: int
    target_concurrency: int | None
    engines: Mapping[str, object] = field(metadata=FLATTEN)
