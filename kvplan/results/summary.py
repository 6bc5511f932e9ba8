"""A plan's headline figures, read and rounded once (``PlanSummary.of``), for every record that shows them:
simulate's memory, check's numbers, fit's answers, a fix's result, compare's vLLM row, the sweep."""

from __future__ import annotations

from kvplan.frozen import dataclass

# the digits a figure is shown with: a share in percent, a concurrency (requests)
PCT_DIGITS = 4
CONCURRENCY_DIGITS = 6


@dataclass(frozen=True)
class PlanSummary:
    """The figures of a plan (``kvplan.engines.vllm.plan.Plan``) every command reports, rounded here once."""

    starts: bool
    max_model_len: int
    group_size: int
    num_groups: int
    num_padding_layers: int
    padding_waste_pct: float
    page_size_bytes: int
    num_blocks: int
    kv_tokens: int
    max_concurrency: float
    steady_state_concurrency: float

    @classmethod
    def of(cls, plan) -> PlanSummary:
        """The summary of ``plan`` (read by attribute: the results import no engine)."""
        return cls(
            starts=plan.starts, max_model_len=plan.max_model_len, group_size=plan.group_size,
            num_groups=plan.num_groups, num_padding_layers=plan.num_padding_layers,
            padding_waste_pct=round(plan.padding_waste_pct, PCT_DIGITS), page_size_bytes=plan.page_size_bytes,
            num_blocks=plan.num_blocks, kv_tokens=plan.kv_tokens,
            max_concurrency=round(plan.max_concurrency, CONCURRENCY_DIGITS),
            steady_state_concurrency=round(plan.steady_state_concurrency, CONCURRENCY_DIGITS),
        )
