"""The result records of a prefill/decode pair (``kvplan vllm --line PREFILL --decode-line DECODE``): each
side's plan as ``kvplan vllm`` shows it, and what the KV connector requires of the two together
(``kvplan.engines.vllm.disagg``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import OMIT_NONE
from kvplan.results.serve import ServeBody


@dataclass(frozen=True)
class PairRule:
    """One rule the connector applies to the pair: the two sides' values and, when they fail it, the
    engine's error."""

    rule: str
    ok: bool
    prefill: str
    decode: str
    error_type: str | None = field(default=None, metadata=OMIT_NONE)
    error: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class PdPair:
    kv_connector: str | None
    modelled: bool  # the connector's pair rules for this release are modelled
    note: str | None
    compatible: bool | None  # None when the rules are not modelled
    rules: tuple[PairRule, ...]
    fix: str | None = field(default=None, metadata=OMIT_NONE)  # a change that makes the pair pass, re-checked
    # --max-num-inflight-kv-loads N on the decode side (0.34): up to N requests hold their loaded KV blocks
    # before they run; kvplan's worst case (each a max_model_len prompt) leaves the running batch
    # max_concurrency - N requests of the decode pool
    decode_max_num_inflight_kv_loads: int | None = field(default=None, metadata=OMIT_NONE)
    decode_running_concurrency_with_loads: float | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class PdBody:
    """``kvplan vllm`` on a prefill/decode pair: both sides, then the pair."""

    prefill: ServeBody
    decode: ServeBody
    pair: PdPair
