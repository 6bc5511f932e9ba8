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

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    value: int | float | bool | None
    rule: str

    def to_dict(self) -> dict:
        v = self.value
        return {"value": round(v, 6) if isinstance(v, float) else v, "rule": self.rule}


@dataclass(frozen=True)
class EngineStages:
    engine: str  # sglang | trtllm | llamacpp
    version: str  # the release or build the rules were read from
    kv_tokens: Figure
    longest_prompt_tokens: Figure
    admission_concurrency: Figure
    steady_concurrency: Figure
    starts: Figure
    prompt_len_tokens: int  # the workload's prompt (the longest it can be is the request length)

    @property
    def prefills_prompt(self) -> bool:
        v = self.longest_prompt_tokens.value
        return v is None or v >= self.prompt_len_tokens

    def to_dict(self) -> dict:
        return {
            "engine_version": self.version,
            "prompt_len_tokens": self.prompt_len_tokens,
            "prefills_prompt": self.prefills_prompt,
            "kv_tokens": self.kv_tokens.to_dict(),
            "longest_prompt_tokens": self.longest_prompt_tokens.to_dict(),
            "admission_concurrency": self.admission_concurrency.to_dict(),
            "steady_concurrency": self.steady_concurrency.to_dict(),
            "starts": self.starts.to_dict(),
        }


def require_version(flag: str, given: str | None, known: str, engine: str) -> str:
    """The engine version whose rules kvplan models; any other is refused, naming the one it knows."""
    from kvplan.errors import OptionError

    if given is None or given.strip() == known:
        return known
    raise OptionError(f"{flag} {given}: kvplan's {engine} rules were read from {known} only; pass {flag} {known} "
                      f"(or leave it out)")
