"""Grouping rules proposed upstream but not shipped: what-ifs, never the default.

Each proposal is an ``Era`` copied from ``vllm-latest`` (0.33.0) with ``is_proposal=True``
and ``grouping`` naming its rule; only the group-size choice on the uniform-page path
(reference §3.8) changes, everything else (admission, sizing, logs) is 0.33's. The rules
themselves, beside vLLM's shipped threshold rule, are in ``group_size.py``, which
``grouping.get_kv_cache_groups`` asks for every era; this module only declares the eras.

- ``pr56445-gcd`` (vllm PR #56445, open): group size = gcd of the bucket counts when ≥ 2.
- ``pr49472-cost`` (vllm PR #49472, open): the size minimising padding + 1.0 · groups.
- ``pr35062-drafter-group`` (vllm PR #35062, open): drafter layers in a dedicated group.
- ``pr51742-skip-singletons`` (vllm PR #51742, open): one-layer buckets left out of the minimum.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.engines.vllm.eras import ERAS, Era
from kvplan.engines.vllm.group_size import COST, DRAFTER_GROUP, GCD, SKIP_SINGLETONS


def _proposal(name: str, grouping: str, description: str, threshold: float | None = 1.5) -> Era:
    return replace(
        ERAS["vllm-0.33"], name=name, description=description, grouping=grouping, is_proposal=True,
        releases=(), threshold=threshold,
    )


PROPOSALS: dict[str, Era] = {
    era.name: era
    for era in (
        _proposal(
            "pr56445-gcd", GCD,
            "proposal (vllm PR #56445, not shipped): group size = gcd of the bucket counts when >= 2 "
            "(no padding), else the 1.5 rule; 0.33.0 otherwise",
        ),
        _proposal(
            "pr49472-cost", COST,
            "proposal (vllm PR #49472, not shipped): the group size minimising padding layers + 1.0 x "
            "number of groups, ties to fewer groups (no threshold); 0.33.0 otherwise",
            threshold=None,
        ),
        _proposal(
            "pr35062-drafter-group", DRAFTER_GROUP,
            "proposal (vllm PR #35062, not shipped): drafter layers in a dedicated group, the 1.5 rule "
            "on the target's buckets only; 0.33.0 otherwise",
        ),
        _proposal(
            "pr51742-skip-singletons", SKIP_SINGLETONS,
            "proposal (vllm PR #51742, not shipped): one-layer buckets are left out of the minimum, "
            "then the 1.5 rule; 0.33.0 otherwise",
        ),
    )
}


def proposal_names() -> list[str]:
    return list(PROPOSALS)
