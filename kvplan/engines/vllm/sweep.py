"""``--sweep-threshold``: the same inputs under many thresholds, and where the decision flips."""

from __future__ import annotations

from fractions import Fraction

from kvplan.bounds import MAX_SWEEP_POINTS
from kvplan.errors import OptionError
from kvplan.results.sweep import CriticalThreshold


def parse_thresholds(text: str) -> list[float]:
    """``1.0:2.0:0.05`` (start:stop:step, stop included) or ``1.25,1.5``."""
    text = text.strip()
    try:
        for p in text.replace(":", ",").split(","):  # Fraction("1e999999") would compute the power
            if p.strip() and not abs(float(p)) <= 1e6:
                raise ValueError
        if ":" in text:
            parts = [Fraction(p) for p in text.split(":")]
            if len(parts) != 3 or parts[2] <= 0 or parts[1] < parts[0]:
                raise ValueError
            start, stop, step = parts
            n = int((stop - start) / step)
            if n + 1 > MAX_SWEEP_POINTS:
                raise OptionError(_too_many(text, n + 1))
            values = [float(start + i * step) for i in range(n + 1)]
        else:
            values = [float(Fraction(p)) for p in text.split(",") if p.strip()]
    except (ValueError, ZeroDivisionError):
        raise OptionError(
            f"--sweep-threshold {text!r}: write start:stop:step (e.g. 1.0:2.0:0.05) or a list (1.25,1.5)"
        ) from None
    if len(values) > MAX_SWEEP_POINTS:
        raise OptionError(_too_many(text, len(values)))
    if not values or any(v <= 0 for v in values):
        raise OptionError(f"--sweep-threshold {text!r}: thresholds must be positive")
    return values


def _too_many(text: str, n: int) -> str:
    return (f"--sweep-threshold {text!r}: {n:,} thresholds, more than kvplan sweeps at once "
            f"({MAX_SWEEP_POINTS:,}); take a larger step")


def critical_thresholds(plan) -> list[CriticalThreshold]:
    """The threshold where the group size flips: the ratio max/min of the bucket counts.
    At exactly that value the strict ``<`` fails, so the smaller size still wins."""
    d = plan.decision
    if d is None or d.path != "uniform_page" or d.min_count == d.max_count:
        return []
    ratio = d.max_count / d.min_count
    return [CriticalThreshold(threshold=round(ratio, 6), ratio=f"{d.max_count}/{d.min_count}",
                              group_size_at_or_below=d.min_count, group_size_above=d.max_count)]
