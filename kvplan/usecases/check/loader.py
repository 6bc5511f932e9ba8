"""Deployments files: YAML composed node by node (every value keeps its line), validated
against the schema, every problem collected before anything runs."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable

from kvplan.usecases.check.schema import (
    _INVALID, DEFAULT_EXPECTATIONS, DEFAULTS, DEPLOYMENTS, EXPECT, EXPECTATIONS, MANIFEST, NAME, OPTIONS,
    PROGRAM_KEYS, TOP_LEVEL_KEYS, VLLM_SERVE,
    Deployment, DeploymentsFileError, Expectation, FileIssue, _Bad, _string, _type_name,
)
from kvplan.usecases.scenario import Scenario

@dataclass
class _Value:
    value: Any
    line: int | None  # None where the YAML node has no position


class _FileReader:
    """Walks one composed YAML document, collecting every problem instead of stopping at the first."""

    def __init__(self, path: str, require_budget: bool = True):
        self.path = path
        self.require_budget = require_budget  # False for `check --live`: the server's own pool is the budget
        self.issues: list[FileIssue] = []
        self.loader: Any = None  # readfile.yaml_loader_class()'s loader, made per document (compose)
        self._seen: set[int] = set()  # mapping nodes already checked for duplicate keys (aliases)
        self.refused: dict[str, str] = {}  # entry -> why its serve line is not simulated as written (ServeRequest)

    def issue(self, line: int | None, entry: str | None, key: str | None, problem: str) -> None:
        self.issues.append(FileIssue(self.path, line, entry, key, problem))

    # -- YAML plumbing ------------------------------------------------------

    def compose(self, text: str):
        import yaml

        from kvplan.readfile import yaml_loader_class

        self.loader = yaml_loader_class()(text)  # safe, and refuses bombs and depth while composing
        try:
            return self.loader.get_single_node()
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            problem = "; ".join(filter(None, [e.context, e.problem])) or "invalid YAML"
            self.issue(mark.line + 1 if mark else None, None, None, f"invalid YAML: {problem}")
        except yaml.YAMLError as e:
            self.issue(None, None, None, f"invalid YAML: {' '.join(str(e).split())}")
        except RecursionError:
            self.issue(None, None, None, "invalid YAML: it nests deeper than the YAML parser goes")
        return None

    def value(self, node) -> Any:
        """The Python value of a node (safe constructors only), or _Bad on e.g. a bad timestamp."""
        import yaml

        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as e:
            raise _Bad(f"cannot read value: {getattr(e, 'problem', None) or e}") from None
        except RecursionError:  # a value that contains itself (a: &a [*a])
            raise _Bad("cannot read value: it nests too deep or refers to itself") from None

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
        known = [*OPTIONS, EXPECT, VLLM_SERVE, MANIFEST] + ([NAME] if allow_name else [])
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
            if key in (VLLM_SERVE, MANIFEST):
                options[key] = _Value(self._checked(vnode, _string, entry, key), _line(knode))
                continue
            if key in PROGRAM_KEYS:
                from kvplan.options import program_refusal

                self.issue(_line(knode), entry, key, program_refusal(key, "a deployments file"))
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
            if key in PROGRAM_KEYS:
                from kvplan.options import program_refusal

                self.issue(_line(knode), None, key, program_refusal(key, "a deployments file"))
                continue
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
        names: dict[str, int | None] = {}  # each name and the line it was first used on
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
            if MANIFEST in options or MANIFEST in default_options:
                out += self._manifest(name, entry, line, default_options, options, default_expect, expect)
                continue
            d = self._deployment(name, entry, line, default_options, options, default_expect, expect)
            if d is not None:
                out.append(d)
        return out

    def _manifest(self, name, entry, line, default_options, options, default_expect, expect) -> list[Deployment]:
        """``manifest: FILE``: one deployment per vLLM container of the file (its path is relative to
        this file), each with the entry's other keys; problems name the manifest's file and line."""
        from pathlib import Path

        from kvplan.errors import KvplanError
        from kvplan.serve.manifests import read_manifests

        merged = {**default_options, **options}
        key = merged.pop(MANIFEST)
        if key.value is _INVALID or name is None:
            return []
        if VLLM_SERVE in merged:
            self.issue(key.line, entry, MANIFEST, f"give either {MANIFEST} or {VLLM_SERVE}, not both")
            return []
        path = Path(key.value).expanduser()
        if not path.is_absolute():
            path = Path(self.path).resolve().parent / path
        from kvplan.errors import InputFileError
        from kvplan.readfile import read_text

        try:
            found = read_manifests(read_text(path, "manifest", MANIFEST, stdin=False), key.value)
        except InputFileError as e:
            self.issue(key.line, entry, MANIFEST, f"{key.value}: {e.problem}; {e.fix}")
            return []
        except KvplanError as e:
            self.issue(key.line, entry, MANIFEST, e.message)
            return []
        out = []
        for c in found:
            where = f"{c.path}:{c.line}"
            short = c.name.split(": ", 1)[-1]
            sub = f"deployment '{name}: {short}'"
            if c.serve is None:
                self.issue(key.line, sub, MANIFEST, f"{where}: {c.problem}")
                continue
            d = self._deployment(f"{name}: {short}", sub, line, {}, merged, default_expect, expect,
                                 serve=(c.serve, where))
            if d is not None:  # its place is the container's, in the manifest
                from dataclasses import replace

                out.append(replace(d, file=str(path), line=c.line, notes=(*d.notes, *c.warnings)))
        return out

    def _deployment(self, name, entry, line, default_options, options, default_expect, expect,
                    serve=None) -> Deployment | None:
        merged = {**default_options, **options}
        values = {k: v.value for k, v in merged.items() if v.value is not None}
        if serve is not None:  # a manifest's container: (ServeLine, "file:line")
            values = self._serve_line({**values, VLLM_SERVE: serve[0]}, line, entry, where=serve[1])
        elif isinstance(values.get(VLLM_SERVE), str):
            values = self._serve_line(values, merged[VLLM_SERVE].line, entry)
        serve_bad = values.pop(VLLM_SERVE, None) is _INVALID
        # an invalid value was reported already: it counts as present for the checks below
        ok = not serve_bad and not any(v is _INVALID for v in values.values())
        if "model" not in values and not serve_bad:
            self.issue(line, entry, "model", "missing; set the model id (here or in defaults)")
            ok = False
        if self.require_budget and not any(k in values for k in ("kv_cache_memory", "gpu", "gpu_memory")) \
                and not serve_bad:
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
        refused = self.refused.pop(entry, None)
        return Deployment(name, self.path, line, Scenario(**values), expectations, notes=(refused,) if refused else ())


    def _serve_line(self, values: dict, line: int, entry: str, where: str | None = None) -> dict:
        """``vllm_serve: "vllm serve MODEL --flags"`` (or a manifest container's line) → the entry's
        options (kvplan.serve reads it with the release of the entry's policy, or of the image's tag)."""
        from pathlib import Path

        from kvplan.errors import KvplanError
        from kvplan.serve import parse_line, read_serve

        given = values[VLLM_SERVE]
        try:
            policy = values.get("policy")  # a bad policy was reported already: the line's own release reads it
            req = read_serve(line=given if where else parse_line(given), policy=None if policy is _INVALID else policy,
                             base=Path(self.path).resolve().parent)
        except KvplanError as e:
            self.issue(line, entry, MANIFEST if where else VLLM_SERVE, f"{where}: {e.message}" if where else e.message)
            return {**values, VLLM_SERVE: _INVALID}
        if req.refused:  # not simulated as written (the demo server, another accelerator): said beside the result
            self.refused[entry] = f"{where}: {req.refused}" if where else req.refused
        out = dict(values)
        for key, value in [("model", req.model), *req.options.items()]:
            if key == "policy" and key in values:
                continue
            if key in values and values[key] != value and key != "policy":
                self.issue(line, entry, key, f"set by the key and by {VLLM_SERVE}; give it once")
                out[key] = _INVALID
                continue
            out[key] = value
        env = {k: v for k, v in req.env.items() if k.startswith("VLLM_")}
        if env and "env" in OPTIONS:
            given = values.get("env")  # an env key already reported as bad stays so
            out["env"] = given if given is _INVALID else {**env, **(given or {})}
        return out


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
        from kvplan.readfile import yaml_loader_class

        return _type_name(yaml_loader_class()("").construct_object(node))
    except yaml.YAMLError:
        return f"{node.tag.rsplit(':', 1)[-1]} {node.value!r}"


def _unknown(key: str, known: list[str], what: str) -> str:
    candidate = key.replace("-", "_")
    if candidate != key and candidate in known:
        return f"unknown {what}; write '{candidate}' (underscores, not dashes)"
    close = difflib.get_close_matches(candidate, known, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'?" if close else f"known: {', '.join(known)}"
    return f"unknown {what}; {hint}"


def load_deployments_text(text: str, path: str, *, require_budget: bool = True) -> list[Deployment]:
    """Parse and validate one deployments file's text; raise DeploymentsFileError listing every problem.
    ``require_budget`` False accepts a deployment without kv_cache_memory / gpu (``check --live``)."""
    reader = _FileReader(path, require_budget)
    try:
        deployments = reader.read(text)
    finally:
        if reader.loader is not None:
            reader.loader.dispose()
    if reader.issues:
        raise DeploymentsFileError(sorted(reader.issues, key=lambda i: i.line or 0))
    return deployments


def load_deployments(paths: list[str], *, require_budget: bool = True) -> list[Deployment]:
    """Every deployment of every file, in order; problems of all files are reported together."""
    issues: list[FileIssue] = []
    out: list[Deployment] = []
    from kvplan.errors import InputFileError
    from kvplan.readfile import read_text

    for path in paths:
        try:
            text = read_text(path, "deployments", "")
        except InputFileError as e:
            issues.append(FileIssue(path, None, None, None, f"{e.problem}; {e.fix}"))
            continue
        try:
            out.extend(load_deployments_text(text, path, require_budget=require_budget))
        except DeploymentsFileError as e:
            issues.extend(e.issues)
    if issues:
        raise DeploymentsFileError(issues)
    return out


