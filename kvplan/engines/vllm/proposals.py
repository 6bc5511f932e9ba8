"""Alternative grouping policies proposed upstream but not shipped (filled by `compare`)."""

from __future__ import annotations

PROPOSALS: dict = {}
