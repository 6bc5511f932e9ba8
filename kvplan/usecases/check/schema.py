"""`kvplan check`: deployments files → scenarios → expectations → verdicts.

A deployments file is YAML (read with PyYAML's ``SafeLoader``, composed node by node
so every value keeps its line)::

    defaults:                      # optional; shared by every deployment below
      kv_cache_memory: 80GiB
      expect: {starts: true}
    deployments:
      - name: gpt-oss-20b-peagle   # required, unique in the file
        model: openai/gpt-oss-20b  # required (here or in defaults)
        drafter: amazon/GPT-OSS-20B-P-EAGLE
        policy: vllm-1.5           # any `kvplan simulate` option, underscores for dashes
        expect:
          max_padding_waste_pct: 40
          same_layout_as: vllm-latest

An entry's own keys win over ``defaults`` (``expect`` merges key by key); ``null``
unsets a key (the option takes simulate's default, the expectation is dropped).
``starts`` defaults to ``true``: a deployment that would crash-loop fails unless it
says it expects that.

Bad files (YAML syntax, unknown keys, wrong types, impossible values) raise
:class:`DeploymentsFileError`, which lists every problem with file, line, entry and
key (exit 1). A deployment that cannot be simulated (unknown model, unsupported
config) is a failed deployment, not an error of the run: the others still run.

Pure: nothing here prints, reads the environment or imports Typer or Rich.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Final, Literal

from kvplan.errors import DeploymentsFileError, FileIssue, KvplanError, OptionError  # noqa: F401 (re-exported)
from kvplan.usecases.scenario import Scenario

DEFAULTS = "defaults"
DEPLOYMENTS = "deployments"
EXPECT = "expect"
NAME = "name"
# A deployment may give its `vllm serve` line instead of (or beside) separate keys; the line's
# flags become the entry's options (kvplan.serve), a key set both ways is a problem.
VLLM_SERVE = "vllm_serve"
# ... or a manifest (docker-compose, Kubernetes, KServe, production-stack or llm-d Helm values; kvplan.serve.manifests):
# one deployment per vLLM container, named "<entry name>: <where in the manifest>", the entry's keys shared.
MANIFEST = "manifest"
TOP_LEVEL_KEYS = (DEFAULTS, DEPLOYMENTS)

Status = Literal["pass", "fail", "error"]  # a deployment's verdict
PASS: Final = "pass"
FAIL: Final = "fail"
ERROR: Final = "error"


# ---------------------------------------------------------------------------
# Problems in a file


class _Bad(Exception):
    """A value that fails validation; the caller adds file, line, entry and key."""


_INVALID = object()  # stands for a value already reported as bad


# ---------------------------------------------------------------------------
# Value validators: (value) -> value, raising _Bad(problem)


def _type_name(v: Any) -> str:
    from kvplan.options import type_name

    return type_name(v)


def _string(v: Any) -> str:
    if not isinstance(v, str):
        raise _Bad(f"expected a string, got {_type_name(v)}")
    if not v.strip():
        raise _Bad("must not be empty")
    return v


def _boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise _Bad(f"expected true or false, got {_type_name(v)}")
    return v


def _integer(minimum: int | None = None) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise _Bad(f"expected an integer, got {_type_name(v)}")
        if minimum is not None and v < minimum:
            raise _Bad(f"must be at least {minimum}, got {v}")
        return v

    return check


def _number(minimum: float | None = None, maximum: float | None = None) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Bad(f"expected a number, got {_type_name(v)}")
        if not math.isfinite(v):
            raise _Bad(f"must be a finite number, got {v}")
        if minimum is not None and v < minimum:
            raise _Bad(f"must be at least {minimum:g}, got {v:g}")
        if maximum is not None and v > maximum:
            raise _Bad(f"must be at most {maximum:g}, got {v:g}")
        return v

    return check


def _from_table(name: str) -> Callable[[Any], Any]:
    """The option table's parser for one scenario option, its OptionError as a file problem."""
    from kvplan.options import OPTIONS

    opt = OPTIONS[name]

    def check(v: Any) -> Any:
        if v is None:
            raise _Bad("null is only allowed to unset a default")
        try:
            return opt.parse(v)
        except OptionError as e:  # "--max-model-len: must be …" → "must be …": the key is named already
            raise _Bad(re.sub(r"^-[-a-z]+:? ", "", str(e))) from None

    return check


def _size(v: Any) -> int:
    """A size in bytes: an integer, or ``64GiB`` / ``70G`` as the command line's sizes are written."""
    from kvplan.units import parse_human_int

    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise _Bad(f"expected a size such as 64GiB, got {_type_name(v)}")
    try:
        n = parse_human_int(v)
    except (ValueError, OptionError) as e:
        raise _Bad(f"expected a size such as 64GiB ({e})") from None
    if n < 0:
        raise _Bad(f"must be at least 0, got {v}")
    return n


def _policy(v: Any) -> str:
    return _from_table("policy")(v)


def _upgrade_loss(v: Any) -> dict:
    """``max_upgrade_loss: {to: vllm==0.34.0, pct: 5}``: upgrading to ``to`` loses at most ``pct`` % of
    the KV tokens (kvplan.usecases.diff's capacity)."""
    if not isinstance(v, dict):
        raise _Bad(f"expected a mapping {{to: vllm==X, pct: N}}, got {_type_name(v)}")
    unknown = sorted(set(v) - {"to", "pct"})
    if unknown or "to" not in v or "pct" not in v:
        raise _Bad("expected exactly the keys 'to' (a release: vllm==0.34.0) and 'pct' (the most KV tokens "
                   "lost, in %)" + (f"; unknown: {', '.join(map(str, unknown))}" if unknown else ""))
    to = _policy(v["to"])
    if not to.startswith("vllm=="):
        raise _Bad(f"to: expected a release (vllm==0.34.0), got {to!r}")
    return {"to": to, "pct": _number(0.0, 100.0)(v["pct"])}


def _options() -> dict[str, Callable[[Any], Any]]:
    from kvplan.options import file_options

    return {"model": _string, **{o.name: _from_table(o.name) for o in file_options()}}


# Every option a deployment may set: `model` plus the option table's scenario options
# (kvplan.options), with the same parsers and bounds as the command line. Options that name a
# program (`vllm_python`) are not among them: a file that names one is refused (PROGRAM_KEYS).
OPTIONS: dict[str, Callable[[Any], Any]] = _options()


def _program_keys() -> frozenset[str]:
    from kvplan.options import program_options

    return frozenset(o.name for o in program_options())


PROGRAM_KEYS: frozenset[str] = _program_keys()

# Expectations, in the order they are reported.
EXPECTATIONS: dict[str, Callable[[Any], Any]] = {
    "starts": _boolean,
    "max_padding_waste_pct": _number(0.0, 100.0),
    "min_concurrency": _number(0.0),
    "min_steady_concurrency": _number(0.0),
    "min_max_model_len": _integer(1),
    "min_kv_tokens": _integer(0),
    "max_groups": _integer(1),
    # the host tier of --kv-offloading-size (bytes the engine maps, every data-parallel engine's) and its tokens
    "max_host_memory": _size,
    "min_host_kv_tokens": _integer(0),
    "same_layout_as": _policy,
    "max_upgrade_loss": _upgrade_loss,
}
DEFAULT_EXPECTATIONS = {"starts": True}


# ---------------------------------------------------------------------------
# Loaded deployments


@dataclass(frozen=True)
class Expectation:
    key: str
    limit: Any
    line: int | None  # where the limit was written (the entry or the defaults section)


@dataclass(frozen=True)
class Deployment:
    name: str
    file: str
    line: int  # line of the entry's first key
    scenario: Scenario
    expectations: tuple[Expectation, ...]
    notes: tuple[str, ...] = ()  # how its manifest was read (a KServe placeholder, an hf:// storageUri)


