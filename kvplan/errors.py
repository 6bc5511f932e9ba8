"""kvplan's errors. Each one builds its message from its fields and says what to do.

``exit_code`` 1 is a kvplan error (bad input, unknown policy); the engine's own
start-up failures are not exceptions here but part of a plan's result (exit 3).
"""

from __future__ import annotations

from collections.abc import Sequence

from kvplan.frozen import dataclass


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


class NoLayerRuleError(ConfigError):
    """A config whose architecture kvplan has no layer rule for; ``config``: the config as read
    (overrides applied), for vLLM's config-stage checks, which run before any layer rule."""

    def __init__(self, path: str, field: str | None, problem: str, fix: str, config: dict):
        super().__init__(path, field, problem, fix)
        self.config = config


class ConfigStageFailure(KvplanError):
    """vLLM would refuse the deployment while it builds its config (before any layer), for a
    model kvplan has no layer rule for: vLLM's own error, exit 3 like any predicted start-up failure."""

    exit_code = 3


class InputFileError(KvplanError):
    """A file (or standard input) kvplan refuses to read: not a regular file, too large, not UTF-8
    text, a YAML or JSON document past the limits (kvplan/readfile.py). ``field`` names where the path
    came from (``--file``, ``manifest``, ``log file``)."""

    def __init__(self, path: str, field: str, problem: str, fix: str):
        super().__init__(f"{path}: {field}: {problem}; {fix}" if field else f"{path}: {problem}; {fix}")
        self.path, self.field, self.problem, self.fix = path, field, problem, fix


class ModelNotFoundError(KvplanError):
    def __init__(self, model: str, tried: list[str], suggestions: Sequence[str] = (), *, ambiguous: bool = False):
        self.suggestions = list(suggestions)
        quoted = " or ".join(f"'{s}'" for s in suggestions)
        if ambiguous:
            super().__init__(f"model '{model}' is ambiguous: several known models have that name; write {quoted}")
        elif suggestions:
            super().__init__(f"model '{model}' not found; did you mean {quoted}? (looked in: {', '.join(tried)})")
        else:
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


class DeviceDoesNotFitError(KvplanError):
    """--allocate: the layout does not fit in the device's free memory; nothing was allocated."""

    exit_code = 3


class SpecMergeAssertion(Exception):
    """An AssertionError inside a spec merge (vLLM's ``is_kv_cache_spec_uniform`` catches it:
    the layers are not uniform). Internal; never reaches the user."""


class EngineFailure(Exception):
    """vLLM would raise this at start-up. ``error_type`` is vLLM's exception class name,
    ``message`` its exact text. Not a kvplan error: the plan catches it and reports a
    predicted failure (exit 3)."""

    def __init__(self, error_type: str, message: str, stage: str):
        super().__init__(message)
        self.error_type, self.message, self.stage = error_type, message, stage


@dataclass(frozen=True)
class FileIssue:
    """One problem in a deployments file, located as precisely as the file allows."""

    file: str
    line: int | None  # 1-based; None when the file could not be read at all
    entry: str | None  # "defaults", "deployment 'name'", "deployment #3"; None at top level
    key: str | None  # "tensor_parallel_size", "expect.min_concurrency"
    problem: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        parts = [where]
        if self.entry:
            parts.append(self.entry)
        if self.key:
            parts.append(f"key '{self.key}'")
        return ": ".join(parts) + ": " + self.problem


class DeploymentsFileError(KvplanError):
    """One or more deployments files are malformed; nothing was run (exit 1)."""

    def __init__(self, issues: list[FileIssue]):
        self.issues = list(issues)
        n = len(self.issues)
        head = str(self.issues[0]) if n else "bad deployments file"
        more = f" (and {n - 1} more problem{'s' if n > 2 else ''})" if n > 1 else ""
        super().__init__(head + more)
