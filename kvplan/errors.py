"""kvplan's errors. Each one builds its message from its fields and says what to do.

``exit_code`` 1 is a kvplan error (bad input, unknown policy); the engine's own
start-up failures are not exceptions here but part of a plan's result (exit 3).
"""

from __future__ import annotations


class KvplanError(Exception):
    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(KvplanError):
    """A model config that kvplan cannot turn into layer specs."""

    def __init__(self, path: str, field: str | None, problem: str, fix: str):
        where = f"{path}" + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {problem}; {fix}")
        self.path, self.field, self.problem, self.fix = path, field, problem, fix


class ModelNotFoundError(KvplanError):
    def __init__(self, model: str, tried: list[str]):
        super().__init__(
            f"model '{model}' not found (looked in: {', '.join(tried)}); pass a path to a config.json, "
            "a bundled id (see 'kvplan models'), or add --download to fetch it from the Hugging Face Hub"
        )


class UnsupportedError(KvplanError):
    """Something vLLM does that kvplan does not model yet: refused, never approximated."""


class OptionError(KvplanError):
    """A bad option value (unknown policy, malformed size, impossible combination)."""


class DeviceError(KvplanError):
    """--allocate could not run: torch missing, no such device."""
