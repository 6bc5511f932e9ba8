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

import difflib
import json
import math
import os
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from kvplan.errors import KvplanError, OptionError
from kvplan.scenario import Scenario

DEFAULTS = "defaults"
DEPLOYMENTS = "deployments"
EXPECT = "expect"
NAME = "name"
TOP_LEVEL_KEYS = (DEFAULTS, DEPLOYMENTS)

PASS, FAIL, ERROR = "pass", "fail", "error"


# ---------------------------------------------------------------------------
# Problems in a file


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


class _Bad(Exception):
    """A value that fails validation; the caller adds file, line, entry and key."""


_INVALID = object()  # stands for a value already reported as bad


# ---------------------------------------------------------------------------
# Value validators: (value) -> value, raising _Bad(problem)


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"a boolean ({str(v).lower()})"
    if isinstance(v, int):
        return f"an integer ({v})"
    if isinstance(v, float):
        return f"a number ({v:g})"
    if isinstance(v, str):
        return f"a string ({v!r})"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    return f"a {type(v).__name__}"


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


def _choice(choices: list[str]) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        v = _string(v)
        if v not in choices:
            raise _Bad(f"'{v}' is not one of: {', '.join(choices)}")
        return v

    return check


def _option_error(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Run one of kvplan's own parsers and turn its OptionError into a file problem."""

    def check(v: Any) -> Any:
        try:
            return fn(v)
        except OptionError as e:  # "--max-model-len must be …" → "must be …": the key is named already
            raise _Bad(re.sub(r"^--[a-z-]+:? ", "", str(e))) from None

    return check


def _policy(v: Any) -> str:
    from kvplan.engines.vllm.eras import get_era

    v = _string(v)
    _option_error(get_era)(v)
    return v


def _size(v: Any) -> str | int:
    from kvplan.units import parse_bytes

    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise _Bad(f"expected bytes or a size such as 80GiB, got {_type_name(v)}")
    try:
        n = parse_bytes(str(v))
    except ValueError as e:
        raise _Bad(str(e)) from None
    if n <= 0:
        raise _Bad(f"must be positive, got {v!r}")
    return v


def _max_model_len(v: Any) -> str | int:
    from kvplan.cli.common import parse_max_model_len

    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise _Bad(f"expected a number of tokens or 'auto', got {_type_name(v)}")
    _option_error(parse_max_model_len)(str(v))
    return v


def _kv_transfer_config(v: Any) -> dict:
    if isinstance(v, dict):
        return v
    if isinstance(v, str):
        from kvplan.cli.common import parse_kv_transfer_config

        return _option_error(parse_kv_transfer_config)(v)
    raise _Bad(f"expected a mapping (or a JSON string) such as {{kv_connector: NixlConnector}}, got {_type_name(v)}")


def _cache_dtype(v: Any) -> str:
    from kvplan.units import CACHE_DTYPES

    return _choice(list(CACHE_DTYPES))(v)


def _model_dtype(v: Any) -> str:
    from kvplan.units import MODEL_DTYPES

    return _choice(["auto", *MODEL_DTYPES])(v)


# Every `kvplan simulate` option a deployment may set, with the CLI's own bounds.
# Keys are Scenario's field names (the long flags with underscores).
OPTIONS: dict[str, Callable[[Any], Any]] = {
    "model": _string,
    "drafter": _string,
    "speculative_method": _choice(["eagle", "eagle3", "mtp", "draft_model"]),
    "num_speculative_tokens": _integer(1),
    "block_size": _integer(1),
    "attention_backend": _string,
    "kv_cache_dtype": _cache_dtype,
    "dtype": _model_dtype,
    "tensor_parallel_size": _integer(1),
    "pipeline_parallel_size": _integer(1),
    "decode_context_parallel_size": _integer(1),
    "disable_sliding_window": _boolean,
    "revision": _string,
    "download": _boolean,
    "policy": _policy,
    "threshold": _number(0.0),
    "kv_cache_memory": _size,
    "max_model_len": _max_model_len,
    "max_num_batched_tokens": _integer(1),
    "max_num_seqs": _integer(1),
    "async_scheduling": _boolean,
    "model_runner": _choice(["v1", "v2"]),
    "enable_prefix_caching": _boolean,
    "mamba_cache_mode": _choice(["none", "align", "all"]),
    "disable_hybrid_kv_cache_manager": _boolean,
    "kv_transfer_config": _kv_transfer_config,
    "num_gpu_blocks_override": _integer(1),
    "kv_events": _boolean,
    "gpu": _string,
    "gpu_memory": _number(1.0),
    "gpu_memory_utilization": _number(0.01, 1.0),
}
# Scenario fields a file cannot set (no `simulate` flag; free-form, so unknown keys could not be caught).
NOT_IN_FILES = ("budget_overrides",)

# Expectations, in the order they are reported.
EXPECTATIONS: dict[str, Callable[[Any], Any]] = {
    "starts": _boolean,
    "max_padding_waste_pct": _number(0.0, 100.0),
    "min_concurrency": _number(0.0),
    "min_steady_concurrency": _number(0.0),
    "min_max_model_len": _integer(1),
    "min_kv_tokens": _integer(0),
    "max_groups": _integer(1),
    "same_layout_as": _policy,
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


@dataclass
class _Value:
    value: Any
    line: int


class _FileReader:
    """Walks one composed YAML document, collecting every problem instead of stopping at the first."""

    def __init__(self, path: str):
        self.path = path
        self.issues: list[FileIssue] = []
        self.loader = None
        self._seen: set[int] = set()  # mapping nodes already checked for duplicate keys (aliases)

    def issue(self, line: int | None, entry: str | None, key: str | None, problem: str) -> None:
        self.issues.append(FileIssue(self.path, line, entry, key, problem))

    # -- YAML plumbing ------------------------------------------------------

    def compose(self, text: str):
        import yaml

        self.loader = yaml.SafeLoader(text)
        try:
            return self.loader.get_single_node()
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            problem = "; ".join(filter(None, [e.context, e.problem])) or "invalid YAML"
            self.issue(mark.line + 1 if mark else None, None, None, f"invalid YAML: {problem}")
        except yaml.YAMLError as e:
            self.issue(None, None, None, f"invalid YAML: {e}")
        return None

    def value(self, node) -> Any:
        """The Python value of a node (safe constructors only), or _Bad on e.g. a bad timestamp."""
        import yaml

        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as e:
            raise _Bad(f"cannot read value: {getattr(e, 'problem', None) or e}") from None

    def mapping(self, node, entry: str | None, key_prefix: str = "") -> dict[str, tuple[Any, Any]] | None:
        """Mapping node → {key: (key_node, value_node)}, or None for another kind of node.

        A key written twice is a problem (PyYAML would silently keep the last); ``<<: *anchor``
        merge keys are honoured, the mapping's own keys winning."""
        import yaml

        if not isinstance(node, yaml.MappingNode):
            return None
        str_tag = "tag:yaml.org,2002:str"
        skip: set[int] = set()
        if id(node) not in self._seen:
            self._seen.add(id(node))
            first: dict[str, int | None] = {}
            for k, _ in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag == str_tag:
                    if k.value in first:
                        self.issue(_line(k), entry, key_prefix + k.value,
                                   f"duplicate key (first set on line {first[k.value]})")
                        skip.add(id(k))
                    else:
                        first[k.value] = _line(k)
        try:
            self.loader.flatten_mapping(node)
        except yaml.YAMLError as e:
            self.issue(_line(node), entry, None, f"invalid merge key: {getattr(e, 'problem', None) or e}")
            return {}
        out: dict[str, tuple[Any, Any]] = {}
        for k, v in node.value:
            if id(k) in skip:
                continue
            if not isinstance(k, yaml.ScalarNode) or k.tag != str_tag:
                got = f"{k.tag.rsplit(':', 1)[-1]} {k.value!r}" if isinstance(k, yaml.ScalarNode) else _node_kind(k)
                self.issue(_line(k), entry, None, f"keys must be names, got {got}")
                continue
            out[k.value] = (k, v)
        return out

    # -- sections -----------------------------------------------------------

    def read_settings(self, node, items, entry: str, allow_name: bool) -> tuple[dict[str, _Value], dict[str, _Value], int]:
        """An entry or the defaults section (``items`` from mapping()) → (options, expectations, line).
        A ``null`` value is kept as None: it unsets what defaults set."""
        import yaml

        options: dict[str, _Value] = {}
        expect: dict[str, _Value] = {}
        if items is None:
            self.issue(_line(node), entry, None, f"expected a mapping of settings, got {_node_kind(node)}")
            return options, expect, _line(node) or 0
        known = [*OPTIONS, EXPECT] + ([NAME] if allow_name else [])
        for key, (knode, vnode) in items.items():
            if key == NAME and allow_name:
                continue
            if key == EXPECT:
                exp_items = self.mapping(vnode, entry, EXPECT + ".")
                if exp_items is None:
                    if isinstance(vnode, yaml.ScalarNode) and vnode.tag == "tag:yaml.org,2002:null":
                        continue
                    self.issue(_line(vnode), entry, EXPECT, f"expected a mapping of expectations, got {_node_kind(vnode)}")
                    continue
                for ekey, (eknode, evnode) in exp_items.items():
                    if ekey not in EXPECTATIONS:
                        self.issue(_line(eknode), entry, f"{EXPECT}.{ekey}",
                                   _unknown(ekey, list(EXPECTATIONS), "expectation"))
                        continue
                    v = self._checked(evnode, EXPECTATIONS[ekey], entry, f"{EXPECT}.{ekey}")
                    expect[ekey] = _Value(v, _line(eknode))
                continue
            if key not in OPTIONS:
                hint = _unknown(key, known, "key")
                if key == NAME:
                    hint = "'name' belongs to a deployment, not to defaults"
                elif key in EXPECTATIONS:
                    hint = f"'{key}' is an expectation: put it under '{EXPECT}:'"
                self.issue(_line(knode), entry, key, hint)
                continue
            options[key] = _Value(self._checked(vnode, OPTIONS[key], entry, key), _line(knode))
        return options, expect, _line(node) or 0

    def _checked(self, vnode, check: Callable[[Any], Any], entry: str, key: str) -> Any:
        try:
            v = self.value(vnode)
            return None if v is None else check(v)
        except _Bad as e:
            self.issue(_line(vnode), entry, key, str(e))
            return _INVALID

    def read(self, text: str) -> list[Deployment]:
        import yaml

        root = self.compose(text)
        if self.issues:
            return []
        if root is None:
            self.issue(1, None, None, f"the file is empty; expected a mapping with a '{DEPLOYMENTS}' list")
            return []
        top = self.mapping(root, None)
        if top is None:
            self.issue(_line(root), None, None,
                       f"expected a mapping with '{DEFAULTS}' (optional) and '{DEPLOYMENTS}', got {_node_kind(root)}")
            return []
        for key, (knode, _) in top.items():
            if key not in TOP_LEVEL_KEYS:
                hint = _unknown(key, list(TOP_LEVEL_KEYS), "top-level key")
                if key in OPTIONS or key == EXPECT:
                    hint += f"; shared settings go under '{DEFAULTS}:'"
                self.issue(_line(knode), None, key, hint)
        default_options: dict[str, _Value] = {}
        default_expect: dict[str, _Value] = {}
        if DEFAULTS in top:
            dnode = top[DEFAULTS][1]
            if not (isinstance(dnode, yaml.ScalarNode) and dnode.tag == "tag:yaml.org,2002:null"):
                default_options, default_expect, _ = self.read_settings(
                    dnode, self.mapping(dnode, DEFAULTS), DEFAULTS, allow_name=False)
        if DEPLOYMENTS not in top:
            self.issue(_line(root), None, DEPLOYMENTS, f"missing; list the deployments under '{DEPLOYMENTS}:'")
            return []
        knode, seq = top[DEPLOYMENTS]
        if not isinstance(seq, yaml.SequenceNode):
            self.issue(_line(seq), None, DEPLOYMENTS, f"expected a list of deployments, got {_node_kind(seq)}")
            return []
        if not seq.value:
            self.issue(_line(knode), None, DEPLOYMENTS, "the list is empty; add at least one deployment")
            return []
        out: list[Deployment] = []
        names: dict[str, int] = {}
        for i, enode in enumerate(seq.value, start=1):
            entry = f"deployment #{i}"
            peeked = _peek_name(enode)
            if peeked:
                entry = f"deployment '{peeked}'"
            items = self.mapping(enode, entry)
            name = None
            if items is not None and NAME in items:
                try:
                    name = _string(self.value(items[NAME][1]))
                except _Bad as e:
                    self.issue(_line(items[NAME][1]), entry, NAME, str(e))
                else:
                    entry = f"deployment '{name}'"
                    if name in names:
                        self.issue(_line(items[NAME][1]), entry, NAME, f"duplicate name (first used on line {names[name]})")
                    names.setdefault(name, _line(items[NAME][1]))
            elif items is not None:
                self.issue(_line(enode), entry, NAME, "missing; every deployment needs a name")
            options, expect, line = self.read_settings(enode, items, entry, allow_name=True)
            if items is None:
                continue
            d = self._deployment(name, entry, line, default_options, options, default_expect, expect)
            if d is not None:
                out.append(d)
        return out

    def _deployment(self, name, entry, line, default_options, options, default_expect, expect) -> Deployment | None:
        merged = {**default_options, **options}
        values = {k: v.value for k, v in merged.items() if v.value is not None}
        # an invalid value was reported already: it counts as present for the checks below
        ok = not any(v is _INVALID for v in values.values())
        if "model" not in values:
            self.issue(line, entry, "model", "missing; set the model id (here or in defaults)")
            ok = False
        if not any(k in values for k in ("kv_cache_memory", "gpu", "gpu_memory")):
            self.issue(line, entry, "kv_cache_memory",
                       "no KV-cache budget; set kv_cache_memory (e.g. 80GiB) or gpu (e.g. H100-80GB), here or in defaults")
            ok = False
        if not ok or name is None:
            return None
        exp = {k: _Value(v, None) for k, v in DEFAULT_EXPECTATIONS.items()}
        exp.update(default_expect)
        exp.update(expect)
        if any(v.value is _INVALID for v in exp.values()):
            return None
        expectations = tuple(
            Expectation(k, exp[k].value, exp[k].line)
            for k in EXPECTATIONS if k in exp and exp[k].value is not None
        )
        return Deployment(name, self.path, line, Scenario(**values), expectations)


def _peek_name(node) -> str | None:
    """The entry's name, read before validation so that every problem can name its entry."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if (isinstance(k, yaml.ScalarNode) and k.value == NAME and isinstance(v, yaml.ScalarNode)
                    and v.tag == "tag:yaml.org,2002:str" and v.value.strip()):
                return v.value
    return None


def _line(node) -> int | None:
    return node.start_mark.line + 1 if node is not None and node.start_mark is not None else None


def _node_kind(node) -> str:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    try:
        return _type_name(yaml.SafeLoader("").construct_object(node))
    except yaml.YAMLError:
        return f"{node.tag.rsplit(':', 1)[-1]} {node.value!r}"


def _unknown(key: str, known: list[str], what: str) -> str:
    candidate = key.replace("-", "_")
    if candidate != key and candidate in known:
        return f"unknown {what}; write '{candidate}' (underscores, not dashes)"
    close = difflib.get_close_matches(candidate, known, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else f"known: {', '.join(known)}"
    return f"unknown {what}; {hint}"


def load_deployments_text(text: str, path: str) -> list[Deployment]:
    """Parse and validate one deployments file's text; raise DeploymentsFileError listing every problem."""
    reader = _FileReader(path)
    try:
        deployments = reader.read(text)
    finally:
        if reader.loader is not None:
            reader.loader.dispose()
    if reader.issues:
        raise DeploymentsFileError(sorted(reader.issues, key=lambda i: i.line or 0))
    return deployments


def load_deployments(paths: list[str]) -> list[Deployment]:
    """Every deployment of every file, in order; problems of all files are reported together."""
    issues: list[FileIssue] = []
    out: list[Deployment] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            issues.append(FileIssue(path, None, None, None, f"cannot read the file ({reason})"))
            continue
        try:
            out.extend(load_deployments_text(text, path))
        except DeploymentsFileError as e:
            issues.extend(e.issues)
    if issues:
        raise DeploymentsFileError(issues)
    return out


# ---------------------------------------------------------------------------
# Evaluation


@dataclass
class Outcome:
    """One expectation, measured."""

    key: str
    limit: Any
    measured: Any
    passed: bool
    message: str
    line: int | None


@dataclass
class DeploymentResult:
    deployment: Deployment
    status: str  # pass, fail, error
    outcomes: list[Outcome] = field(default_factory=list)
    error: str | None = None
    error_type: str | None = None
    plan: dict | None = None  # the key numbers (see plan_numbers)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.passed]


def plan_numbers(plan) -> dict:
    """The numbers `check` reports for one plan (raw values; rounding only to hide float noise)."""
    failure = plan.failure
    return {
        "starts": plan.starts,
        "stage": failure.stage if failure else None,
        "error_type": failure.error_type if failure else None,
        "error": failure.message if failure else None,
        "group_size": plan.group_size,
        "num_groups": plan.num_groups,
        "num_padding_layers": plan.num_padding_layers,
        "padding_waste_pct": round(plan.padding_waste_pct, 4),
        "max_concurrency": round(plan.max_concurrency, 6),
        "steady_state_concurrency": round(plan.steady_state_concurrency, 6),
        "kv_tokens": plan.kv_tokens,
        "max_model_len": plan.max_model_len,
    }


def layout_signature(plan) -> dict:
    """What `same_layout_as` compares: group size, each group's layers in order, and padding."""
    return {
        "group_size": plan.group_size,
        "num_groups": plan.num_groups,
        "groups": [list(g.layer_names) for g in plan.groups],
        "num_padding_layers": plan.num_padding_layers,
        "padding_waste_pct": round(plan.padding_waste_pct, 4),
    }


def layout_differences(mine: dict, theirs: dict) -> list[str]:
    """Human phrases for what differs between two layout signatures ([] when the same)."""
    out = []
    if mine["group_size"] != theirs["group_size"]:
        out.append(f"group size {mine['group_size']} vs {theirs['group_size']}")
    if mine["num_groups"] != theirs["num_groups"]:
        out.append(f"{mine['num_groups']} vs {theirs['num_groups']} groups")
    elif mine["groups"] != theirs["groups"]:
        changed = [i for i, (a, b) in enumerate(zip(mine["groups"], theirs["groups"], strict=True)) if a != b]
        out.append(f"layers of group{'s' if len(changed) > 1 else ''} {', '.join(map(str, changed))} differ")
    if mine["num_padding_layers"] != theirs["num_padding_layers"]:
        out.append(f"{mine['num_padding_layers']} vs {theirs['num_padding_layers']} padding layers")
    elif mine["padding_waste_pct"] != theirs["padding_waste_pct"]:
        out.append(f"padding {mine['padding_waste_pct']:.2f}% vs {theirs['padding_waste_pct']:.2f}%")
    return out


def _engine_outcome(numbers: dict) -> str:
    if numbers["starts"]:
        return "the engine would start"
    return f"the engine would fail at start-up ({numbers['stage']}): {numbers['error_type']}: {numbers['error']}"


def evaluate(expectation: Expectation, numbers: dict) -> Outcome:
    """One numeric or start-up expectation against a plan's numbers (same_layout_as: see run_deployment)."""
    key, limit = expectation.key, expectation.limit
    if key == "starts":
        measured = numbers["starts"]
        passed = measured == limit
        want = "expected the engine to start" if limit else "expected a start-up failure"
        message = f"{want}; {_engine_outcome(numbers)}"
    elif key == "max_padding_waste_pct":
        measured = numbers["padding_waste_pct"]
        passed = measured <= limit
        message = f"padding waste {measured:.2f}% ({numbers['num_padding_layers']} padding layers), limit {limit:g}%"
    elif key == "min_concurrency":
        measured = numbers["max_concurrency"]
        passed = measured >= limit
        message = f"max concurrency {measured:.2f}, need at least {limit:g}"
    elif key == "min_steady_concurrency":
        measured = numbers["steady_state_concurrency"]
        passed = measured >= limit
        message = f"steady-state concurrency {measured:.2f} (kvplan's estimate), need at least {limit:g}"
    elif key == "min_max_model_len":
        measured = numbers["max_model_len"]
        passed = measured >= limit
        message = f"max_model_len {measured:,} tokens, need at least {limit:,}"
    elif key == "min_kv_tokens":
        measured = numbers["kv_tokens"]
        passed = measured >= limit
        message = f"KV tokens {measured:,}, need at least {limit:,}"
    elif key == "max_groups":
        measured = numbers["num_groups"]
        passed = measured <= limit
        message = f"{measured} KV cache groups, limit {limit}"
    else:
        raise ValueError(f"not a per-plan expectation: {key}")
    return Outcome(key, limit, measured, passed, message, expectation.line)


Runner = Callable[..., Any]  # run_scenario(scenario, layout=None) -> object with .plan, .layout


def _same_layout(expectation: Expectation, scenario: Scenario, result, run: Runner) -> Outcome:
    ref = expectation.limit
    mine = layout_signature(result.plan)
    policy = scenario.policy if scenario.threshold is None else f"{scenario.policy} (threshold {scenario.threshold:g})"
    try:
        other = run(replace(scenario, policy=ref, threshold=None), layout=result.layout)
    except Exception as e:  # the reference run failing is this expectation failing
        msg = e.message if isinstance(e, KvplanError) else f"{type(e).__name__}: {e}"
        return Outcome(expectation.key, ref, None, False, f"could not simulate under {ref}: {msg}", expectation.line)
    theirs = layout_signature(other.plan)
    diffs = layout_differences(mine, theirs)
    measured = {
        "policy": ref,
        "group_size": theirs["group_size"],
        "num_groups": theirs["num_groups"],
        "num_padding_layers": theirs["num_padding_layers"],
        "padding_waste_pct": theirs["padding_waste_pct"],
        "differences": diffs,
    }
    if diffs:
        message = f"layout under {policy} differs from {ref}: {'; '.join(diffs)}"
    else:
        message = f"same layout under {policy} and {ref} (group size {mine['group_size']}, {mine['num_groups']} groups)"
    return Outcome(expectation.key, ref, measured, not diffs, message, expectation.line)


def run_deployment(d: Deployment, run: Runner | None = None, *, reraise: bool = False) -> DeploymentResult:
    """Simulate one deployment and check its expectations. Errors become an ``error`` result
    (unless ``reraise``, for debugging), so one broken deployment never stops the others."""
    if run is None:
        from kvplan.scenario import run_scenario as run
    start = time.perf_counter()
    try:
        result = run(d.scenario)
        numbers = plan_numbers(result.plan)
        outcomes = [
            _same_layout(e, d.scenario, result, run) if e.key == "same_layout_as" else evaluate(e, numbers)
            for e in d.expectations
        ]
    except Exception as e:
        if reraise and not isinstance(e, KvplanError):
            raise
        msg = e.message if isinstance(e, KvplanError) else f"internal error: {type(e).__name__}: {e}"
        return DeploymentResult(d, ERROR, error=msg, error_type=type(e).__name__,
                                seconds=time.perf_counter() - start)
    status = PASS if all(o.passed for o in outcomes) else FAIL
    warnings = list(getattr(result.layout, "warnings", ()) or ())
    return DeploymentResult(d, status, outcomes, plan=numbers, warnings=warnings, seconds=time.perf_counter() - start)


def run_deployments(deployments: list[Deployment], run: Runner | None = None, *, reraise: bool = False,
                    progress: Callable[[DeploymentResult], None] | None = None) -> list[DeploymentResult]:
    out = []
    for d in deployments:
        r = run_deployment(d, run, reraise=reraise)
        if progress:
            progress(r)
        out.append(r)
    return out


# ---------------------------------------------------------------------------
# Report data, JUnit XML, GitHub annotations


def deployment_dict(r: DeploymentResult) -> dict:
    d, s = r.deployment, r.deployment.scenario
    return {
        "name": d.name,
        "file": d.file,
        "line": d.line,
        "model": s.model,
        "drafter": s.drafter,
        "policy": s.policy,
        "threshold": s.threshold,
        "status": r.status,
        "passed": r.passed,
        "failed_expectations": [o.key for o in r.failed],
        "error": r.error,
        "error_type": r.error_type,
        "expectations": [
            {"key": o.key, "limit": o.limit, "measured": o.measured, "passed": o.passed, "message": o.message,
             "line": o.line}
            for o in r.outcomes
        ],
        "plan": r.plan,
        "seconds": round(r.seconds, 3),
    }


def check_dict(files: list[str], results: list[DeploymentResult]) -> dict:
    from kvplan import __version__
    from kvplan.report import SCHEMA_VERSION

    num_errors = sum(r.status == ERROR for r in results)
    num_failed = sum(r.status == FAIL for r in results)
    return {
        "schema_version": SCHEMA_VERSION,
        "kvplan_version": __version__,
        "command": "check",
        "files": list(files),
        "passed": num_errors == 0 and num_failed == 0,
        "summary": {
            "num_deployments": len(results),
            "num_passed": len(results) - num_errors - num_failed,
            "num_failed": num_failed,
            "num_errors": num_errors,
        },
        "deployments": [deployment_dict(r) for r in results],
        "warnings": [f"deployment '{r.deployment.name}': {w}" for r in results for w in r.warnings],
    }


def failure_messages(dep: dict) -> list[str]:
    """The lines that explain why one deployment (a dict from check_dict) did not pass."""
    if dep["status"] == ERROR:
        return [f"error: {dep['error']}"]
    return [f"{e['key']}: {e['message']}" for e in dep["expectations"] if not e["passed"]]


def _numbers_line(dep: dict) -> str:
    p = dep.get("plan")
    if not p:
        return ""
    return (f"group_size={p['group_size']} num_groups={p['num_groups']} padding_waste_pct={p['padding_waste_pct']:.2f} "
            f"max_concurrency={p['max_concurrency']:.2f} "
            f"steady_state_concurrency={p.get('steady_state_concurrency', 0.0):.2f} kv_tokens={p['kv_tokens']} max_model_len={p['max_model_len']} "
            f"starts={str(p['starts']).lower()}")


def junit_xml(data: dict) -> str:
    """JUnit XML (one <testsuite> per file, one <testcase> per deployment) for CI test reporters.

    An expectation that does not hold is a <failure>; a deployment that could not be
    simulated (unknown model, …) is an <error>. The message attribute holds the first
    reason, the element text all of them."""
    import xml.etree.ElementTree as ET

    deployments = data["deployments"]
    root = ET.Element("testsuites", {
        "name": "kvplan check",
        "tests": str(len(deployments)),
        "failures": str(sum(d["status"] == FAIL for d in deployments)),
        "errors": str(sum(d["status"] == ERROR for d in deployments)),
        "time": f"{sum(d['seconds'] for d in deployments):.3f}",
    })
    by_file: dict[str, list[dict]] = {}
    for d in deployments:
        by_file.setdefault(d["file"], []).append(d)
    for path, deps in by_file.items():
        suite = ET.SubElement(root, "testsuite", {
            "name": path,
            "tests": str(len(deps)),
            "failures": str(sum(d["status"] == FAIL for d in deps)),
            "errors": str(sum(d["status"] == ERROR for d in deps)),
            "skipped": "0",
            "time": f"{sum(d['seconds'] for d in deps):.3f}",
        })
        for d in deps:
            case = ET.SubElement(suite, "testcase", {
                "classname": "kvplan.check." + _suite_stem(path),
                "name": d["name"],
                "file": path,
                "line": str(d["line"]),
                "time": f"{d['seconds']:.3f}",
            })
            reasons = failure_messages(d)
            if d["status"] == ERROR:
                el = ET.SubElement(case, "error", {"message": d["error"] or "", "type": d["error_type"] or "error"})
                el.text = "\n".join(reasons)
            elif d["status"] == FAIL:
                el = ET.SubElement(case, "failure", {"message": reasons[0], "type": d["failed_expectations"][0]})
                el.text = "\n".join(reasons)
            out = ET.SubElement(case, "system-out")
            out.text = _numbers_line(d)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _suite_stem(path: str) -> str:
    base = os.path.basename(path)
    for ext in (".yaml", ".yml"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    return base.replace(".", "_") or "deployments"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def annotation_path(path: str, workspace: str | None = None) -> str:
    """The file as GitHub wants it: relative to the workspace (the repository root) when inside it."""
    root = workspace or os.getcwd()
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.path.abspath(root))
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def annotation(file: str, line: int | None, title: str, message: str, level: str = "error") -> str:
    """One GitHub Actions workflow command: ``::error file=F,line=L,title=T::message``."""
    props = [f"file={_escape_property(file)}"]
    if line is not None:
        props.append(f"line={line}")
    props.append(f"title={_escape_property(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def github_annotations(data: dict, workspace: str | None = None) -> list[str]:
    """One ``::error`` per failing expectation (at the line that sets its limit) or errored deployment."""
    out = []
    for d in data["deployments"]:
        file = annotation_path(d["file"], workspace)
        if d["status"] == ERROR:
            out.append(annotation(file, d["line"], f"kvplan check: {d['name']}", f"error: {d['error']}"))
            continue
        for e in d["expectations"]:
            if not e["passed"]:
                out.append(annotation(file, e["line"] or d["line"], f"kvplan check: {d['name']} ({e['key']})",
                                      e["message"]))
    return out


def issue_annotations(issues: list[FileIssue], workspace: str | None = None) -> list[str]:
    """``::error`` lines for the problems of a bad deployments file."""
    out = []
    for i in issues:
        title = "kvplan check: bad deployments file"
        message = ": ".join(filter(None, [i.entry, f"key '{i.key}'" if i.key else None, i.problem]))
        out.append(annotation(annotation_path(i.file, workspace), i.line, title, message))
    return out


def format_limit(key: str, value: Any) -> str:
    """A limit or measurement in words for tables (raw values stay in JSON)."""
    if value is None:
        return ""
    if key == "starts":
        return "starts" if value else "fails"
    if key == "max_padding_waste_pct":
        return f"{value:.2f}%" if isinstance(value, float) else f"{value}%"
    if key in ("min_concurrency", "min_steady_concurrency"):
        return f"{value:.2f}" if isinstance(value, float) else str(value)
    if key in ("min_max_model_len", "min_kv_tokens"):
        return f"{value:,}"
    if key == "same_layout_as" and isinstance(value, dict):
        return "; ".join(value["differences"]) or "same"
    return str(value) if not isinstance(value, (dict, list)) else json.dumps(value)
