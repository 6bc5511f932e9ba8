"""The width output is laid out for (no import of the renderer: ``kvplan --help`` uses it too)."""

from __future__ import annotations

import os
import sys

PIPED_WIDTH = 100
MIN_WIDTH = 40


def terminal_width() -> int:
    """``$COLUMNS`` when it is a positive integer, else the terminal's width, else 100 (piped)."""
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    try:
        if sys.stdout.isatty():
            return max(MIN_WIDTH, os.get_terminal_size(sys.stdout.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        pass
    return PIPED_WIDTH
