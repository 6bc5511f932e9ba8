"""A plan's headline figures, read once (``PlanSummary.of``), for every record that shows them: simulate's
memory, check's numbers, fit's answers, a fix's result, compare's vLLM row, the sweep. The figures are kept
exact; the serializer rounds them (``PCT``, ``CONCURRENCY``: kvplan.results.rounded), in this record and in
every record that takes them from it."""

from __future__ import annotations

from dataclasses import field

from kvplan.frozen import dataclass

from kvplan.results import CONCURRENCY, PCT


@dataclass(frozen=True)
class PlanSummary:
    """The figures of a plan (``kvplan.engines.vllm.plan.Plan``) every command reports, exact (the
    serializer rounds the floats)."""

    starts: bool
    max_model_len: int
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float = field(metadata=PCT)
    page_size_bytes: int
    num_blocks: int
    kv_tokens: int
    max_concurrency: float = field(metadata=CONCURRENCY)
    steady_state_concurrency: float = field(metadata=CONCURRENCY)

    @classmethod
    def of(cls, plan) -> PlanSummary:
        """The summary of ``plan`` (read by attribute: the results import no engine)."""
        return cls(
            starts=plan.starts, max_model_len=plan.max_model_len, group_size=plan.group_size,
            num_groups=plan.num_groups, num_padding_layers=plan.num_padding_layers,
            padding_waste_pct=plan.padding_waste_pct, page_size_bytes=plan.page_size_bytes,
            num_blocks=plan.num_blocks, kv_tokens=plan.kv_tokens, max_concurrency=plan.max_concurrency,
            steady_state_concurrency=plan.steady_state_concurrency,
        )
