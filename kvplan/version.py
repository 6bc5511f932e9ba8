"""kvplan's version (one place; pyproject.toml carries the same string, tests/test_layering.py checks)."""

__version__ = "0.1.0"
