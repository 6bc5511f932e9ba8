"""A run's capacity and what a change of release does to it (``kvplan diff`` and ``check``'s
``max_upgrade_loss``): the tokens of max_model_len requests that fit, vLLM's group-aware figure."""

from __future__ import annotations


def kv_tokens(result) -> int:
    """A run's capacity: ``int(max_concurrency x max_model_len)`` (0 when it does not start)."""
    return result.body.memory.kv_cache_size_tokens_concurrency_meaning if result.plan.starts else 0


def capacity_change(a, b) -> tuple[int, int, float]:
    """(KV tokens of ``a``, of ``b``, the % of ``a``'s lost in ``b``: negative a gain, 100 when ``b``
    does not start and ``a`` does)."""
    ka, kb = kv_tokens(a), kv_tokens(b)
    return ka, kb, 100.0 * (ka - kb) / ka if ka else 0.0
