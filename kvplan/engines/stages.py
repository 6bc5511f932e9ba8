"""One request's life in an engine: admission, prefill, steady decode, each figure with its rule.

Every non-vLLM engine model reports the same five figures, so ``kvplan compare`` can print
them side by side and say where each comes from:

- ``kv_tokens``: tokens of context the pools hold;
- ``longest_prompt_tokens``: the longest prompt the engine can prefill on an empty pool;
- ``admission_concurrency``: requests of the workload the scheduler admits at once;
- ``steady_concurrency``: requests that fit once every request is decoding;
- ``starts``: whether the engine starts.

A ``Figure`` carries its value and the rule (source file and function, or kvplan's own
interpretation) it was computed from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import Attr, Record


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
