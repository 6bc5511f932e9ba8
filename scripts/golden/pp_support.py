#!/usr/bin/env python3
"""Which registered architectures implement ``SupportsPP``, release by release: read from each release's own
model registry (``vllm/model_executor/models/registry.py``: architecture → (module, class)) and model files
(parsed with ``ast``; nothing is imported), then cross-checked by running the release's own
``supports_pp`` (``--cross-check``).

vLLM refuses ``--pipeline-parallel-size`` > 1 for a model whose class fails ``supports_pp``:
``ModelConfig.verify_with_parallel_config`` asks ``registry.is_pp_supported_model`` (the class's
``_ModelInfo.supports_pp``) and raises ``NotImplementedError`` (``CHECK_RE`` finds the text, file and line in each
release). ``supports_pp(cls)`` (model_executor/models/interfaces.py) is true when

* ``SupportsPP`` is in the class's MRO, or the class carries the protocol's members itself (``supports_pp`` and
  ``make_empty_intermediate_tensors`` as class attributes: ``_SupportsPPType``), and
* its ``forward`` accepts ``intermediate_tensors`` as a keyword (a named parameter, or ``**kwargs``:
  ``supports_kw``'s ``allow_var_kwargs``).

The static rule follows both: a class's bases are resolved by name through its module's imports (``from .x import
Y as Z``, ``from vllm.model_executor.models.x import Y``, ``from . import x`` then ``x.Y``) and, failing that, its
own module, recursively across the models package; ``forward`` is the first one the MRO (C3) meets.

    python scripts/golden/pp_support.py $RELEASE_SRC tests/golden/pp_support [RELEASE...]   # <release>.json each
    PYTHONPATH=$RELEASE_SRC/0.19.0 $RELEASE_BASE/bin/python scripts/golden/pp_support.py --cross-check 0.19.0 \\
        tests/golden/pp_support       # adds "cross_check" to 0.19.0.json
    python scripts/golden/pp_support.py --table tests/golden/pp_support kvplan/engines/vllm/pp_support.json

The drafter meets the same check: ``SpeculativeConfig`` verifies the draft config with the draft's parallel config
(``draft_verify``: where, and the draft's pipeline-parallel size: the target's up to 0.29.0, 1 from 0.30.0), so a
draft class lacking ``SupportsPP`` refuses PP > 1 while the draft runs at the target's PP. For ``method: mtp`` the
draft config is the target's own config rewritten by ``SpeculativeConfig.hf_config_override``
(``mtp_override``: the draft architecture by the target's model_type and by its architectures[0]).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from functools import cache
from pathlib import Path

PKG = "vllm.model_executor.models"
# The refusal: ``raise NotImplementedError(`` then the text's string pieces (one or two literals).
CHECK_RE = re.compile(r'"(Pipeline parallelism is not supported for this model\. )"\s*\n\s*"([^"]*)"')


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


class Models:
    """The release's ``vllm`` package, parsed on demand: module (dotted) → its classes and its imports. Where a
    module picks its classes by platform (0.34.0's ``vllm/models/*/__init__.py``: ``if TYPE_CHECKING or
    current_platform.is_cuda(): from .nvidia...``), the first import of a name wins: the CUDA branch."""

    def __init__(self, root: Path):
        self.root = root  # the folder holding vllm/

    def file(self, name: str) -> Path | None:
        path = self.root.joinpath(*name.split("."))
        for f in (path.with_suffix(".py"), path / "__init__.py"):
            if f.is_file():
                return f
        return None

    @cache
    def module(self, name: str) -> tuple[dict[str, ast.ClassDef], dict[str, tuple[str, str | None]]] | None:
        """(classes by name, imported names: local → (module, name) — name None for a module) or None."""
        f = self.file(name)
        if f is None:
            return None
        tree = ast.parse(f.read_text())
        classes: dict[str, ast.ClassDef] = {}
        imports: dict[str, tuple[str, str | None]] = {}
        package = name.split(".") if f.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.col_offset == 0:
                classes[node.name] = node  # the module-level definition (the last one wins, as in Python)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - (node.level - 1)]
                    mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
                elif node.module and node.module.split(".")[0] == "vllm":
                    mod = node.module
                else:
                    continue
                for a in node.names:
                    local = a.asname or a.name
                    sub = f"{mod}.{a.name}"
                    if self.file(sub) is not None:  # ``from . import x``: a module
                        imports.setdefault(local, (sub, None))
                    else:
                        imports.setdefault(local, (mod, a.name))
        return classes, imports

    def resolve(self, module: str, expr: ast.expr) -> tuple[str, str] | None:
        """The (module, class) a base-class expression names, or None (outside the package, or a call)."""
        if isinstance(expr, ast.Subscript):  # Generic[...]-style bases
            expr = expr.value
        if isinstance(expr, ast.Call) and expr.args:
            # an adapter (model_executor/models/adapters.py ``as_embedding_model(LlamaForCausalLM)``,
            # ``as_seq_cls_model``, ...) returns a subclass of the class it is given
            return self.resolve(module, expr.args[0])
        parsed = self.module(module)
        if parsed is None:
            return None
        classes, imports = parsed
        if isinstance(expr, ast.Name):
            if expr.id in imports and imports[expr.id][1] is not None:
                mod, name = imports[expr.id]
                return self._follow(mod, name)
            if expr.id in classes:
                return module, expr.id
            return None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            target = imports.get(expr.value.id)
            if target is not None and target[1] is None:
                return self._follow(target[0], expr.attr)
        return None

    def _follow(self, module: str, name: str) -> tuple[str, str] | None:
        """A name imported from ``module``: its definition, following re-exports."""
        parsed = self.module(module)
        if parsed is None:
            return None
        classes, imports = parsed
        if name in classes:
            return module, name
        if name in imports and imports[name][1] is not None:
            return self._follow(*imports[name])
        return None

    def bases(self, key: tuple[str, str]) -> list[tuple[str, str] | str]:
        """The class's bases: resolved (module, class), or the bare name of one outside the package."""
        node = self.module(key[0])[0][key[1]]
        out: list[tuple[str, str] | str] = []
        for b in node.bases:
            r = self.resolve(key[0], b)
            out.append(r if r is not None else ast.unparse(b))
        return out

    def mro(self, key: tuple[str, str] | str) -> list[tuple[str, str] | str]:
        """C3 linearisation over the package's classes (an outside base is a leaf)."""
        if isinstance(key, str):
            return [key]
        seqs = [self.mro(b) for b in self.bases(key)]
        seqs.append(list(self.bases(key)))
        out: list = [key]
        seqs = [s for s in seqs if s]
        while seqs:
            for s in seqs:
                head = s[0]
                if not any(head in t[1:] for t in seqs):
                    break
            else:  # not linearisable (Python would refuse the class): fall back to depth-first
                head = seqs[0][0]
            out.append(head)
            seqs = [[x for x in t if x != head] for t in seqs]
            seqs = [s for s in seqs if s]
        return out


def _is_supports_pp(entry) -> bool:
    return entry == (f"{PKG}.interfaces", "SupportsPP") or entry == "SupportsPP"


def _forward_accepts(node: ast.FunctionDef) -> bool:
    a = node.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return "intermediate_tensors" in names or a.kwarg is not None


def _class_attrs(node: ast.ClassDef) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            out[stmt.target.id] = stmt.value
    return out


def supports_pp(models: Models, key: tuple[str, str]) -> tuple[bool, str]:
    """(supports_pp, why) for the class ``key`` as vLLM's ``supports_pp`` decides it."""
    mro = models.mro(key)
    attrs: dict[str, tuple[tuple[str, str], ast.AST]] = {}
    for k in mro:
        if isinstance(k, tuple):
            for name, value in _class_attrs(models.module(k[0])[0][k[1]]).items():
                attrs.setdefault(name, (k, value))
    in_mro = any(_is_supports_pp(k) for k in mro)
    flag = attrs.get("supports_pp")
    duck = (flag is not None and isinstance(flag[1], ast.Constant) and flag[1].value is True
            and "make_empty_intermediate_tensors" in attrs)
    if not (in_mro or duck):
        return False, "SupportsPP not in the MRO"
    forward = attrs.get("forward")
    if forward is None or not isinstance(forward[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False, "no forward of its own in the package's classes"
    if not _forward_accepts(forward[1]):
        return False, f"{forward[0][0].removeprefix(PKG + '.')}.{forward[0][1]}.forward takes no intermediate_tensors"
    return True, "SupportsPP in the MRO" if in_mro else "supports_pp and make_empty_intermediate_tensors set"


def module_name(relname: str) -> str:
    """A registry entry's module as the release imports it (0.34.0 registry.py ``_resolve_module_name``: a
    ``vllm.``-qualified path as is, else under vllm.model_executor.models)."""
    return relname if relname.startswith("vllm.") else f"{PKG}.{relname}"


def registry(src: Path) -> dict[str, dict]:
    """The release's ``_VLLM_MODELS`` as its literal entries: architecture → {module, class, category}, in the
    merge order of ``_VLLM_MODELS`` (a later dict's entry replaces an earlier one, as ``{**a, **b}`` does)."""
    tree = ast.parse((src / "vllm/model_executor/models/registry.py").read_text())
    dicts: dict[str, ast.Dict] = {}
    order: list[str] = []
    for node in tree.body:
        target = (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
                  else node.target if isinstance(node, ast.AnnAssign) else None)
        if not isinstance(target, ast.Name) or not isinstance(node.value, ast.Dict):
            continue
        dicts[target.id] = node.value
        if target.id == "_VLLM_MODELS":
            order = [v.id for k, v in zip(node.value.keys, node.value.values) if k is None and isinstance(v, ast.Name)]
    out: dict[str, dict] = {}
    for name in order:
        d = dicts[name]
        category = name.strip("_").removesuffix("_MODELS").lower()
        for k, v in zip(d.keys, d.values):
            if not (isinstance(k, ast.Constant) and isinstance(v, ast.Tuple) and len(v.elts) >= 2):
                continue  # ``**{...}`` comprehensions re-map entries already listed
            mod, cls = (e.value for e in v.elts[:2])
            out[k.value] = {"module": mod, "class": cls, "category": category}
    return out


def pp_check(src: Path) -> dict | None:
    """Where the release raises the refusal (file, line of the text) and its text."""
    for rel in ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py"):
        f = src / rel
        if not f.is_file():
            continue
        text = f.read_text()
        m = CHECK_RE.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            raise_line = text.rfind("raise NotImplementedError(", 0, m.start())
            return {"file": rel, "line": line, "exception": "NotImplementedError",
                    "raise_line": text.count("\n", 0, raise_line) + 1, "text": m.group(1) + m.group(2)}
    return None


# SpeculativeConfig lives in vllm/config/__init__.py up to 0.10.2, in vllm/config/speculative.py from 0.11.0
SPEC_FILES = ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py")


def _speculative_class(src: Path) -> tuple[str, str, ast.ClassDef] | None:
    """(file, its text, the ``SpeculativeConfig`` class) of the release."""
    for rel in SPEC_FILES:
        f = src / rel
        if not f.is_file():
            continue
        text = f.read_text()
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef) and node.name == "SpeculativeConfig":
                return rel, text, node
    return None


class _Anything:
    """What a name the override imports or calls stands for here (a logger, a layer-count constant): anything."""

    def __getattr__(self, name: str) -> _Anything:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args, **kwargs) -> _Anything:
        return self


class StandIn:
    """A target config as ``hf_config_override`` reads it: ``model_type``, ``architectures`` and the MTP fields of
    a checkpoint that holds MTP layers (one layer: ``num_nextn_predict_layers``, ``mtp_num_hidden_layers``,
    Inkling's ``mtp_config``, Qwen4-exp's ``hc_count``); any other attribute is absent (``getattr`` defaults)."""

    def __init__(self, model_type: str, architecture: str):
        self.model_type = model_type
        self.architectures = [architecture]
        self.num_nextn_predict_layers = 1
        self.mtp_num_hidden_layers = 1
        self.mtp_config = {"num_nextn_predict_layers": 1}
        self.hc_count = 1
        self.layer_types: list[str] = []

    def update(self, values: dict) -> None:
        self.__dict__.update(values)


# a name neither model type nor architecture: the other half of a stand-in config
UNSET = "-"


def mtp_override(src: Path) -> dict | None:
    """How the release maps an MTP target's config to the draft's architecture: ``SpeculativeConfig.
    hf_config_override`` (the draft config of ``method: mtp`` is the target's own config.json with this override:
    ``ModelConfig(model=<the target>, hf_overrides=SpeculativeConfig.hf_config_override)``), its source compiled
    from the release's file (no ``vllm`` import: the names it imports or calls stand for anything, ``_Anything``)
    and run on a stand-in config (``StandIn``) for every string literal the function holds, once as the
    model_type (architecture ``UNSET``) and once as architectures[0] (model_type ``UNSET``). Recorded: where the
    function is, and each literal whose stand-in comes back with another architecture (the draft's), by
    model_type and by architecture. A config both tables name is answered by its model_type's branch: the
    architecture branches compare ``architectures[0]``, which a model_type branch above them has already
    replaced (0.29.0 config/speculative.py lines 661-676 before line 701)."""
    found = _speculative_class(src)
    if found is None:
        return None
    rel, text, cls = found
    fn = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "hf_config_override"), None)
    if fn is None:
        return None
    fn.decorator_list = []
    fn.returns = None
    for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
        a.annotation = None
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    stored |= {a.arg for a in fn.args.args}
    free = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - stored
    import builtins

    names: dict = {k: _Anything() for k in free if not hasattr(builtins, k)}
    if "get_hf_text_config" in names:  # transformers_utils/config.py: the text config where there is one
        names["get_hf_text_config"] = lambda c: getattr(c, "text_config", c)
    names["__builtins__"] = {**vars(builtins), "__import__": lambda *a, **k: _Anything()}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), f"{rel}:hf_config_override", "exec"), names)
    run = names["hf_config_override"]
    literals = sorted({n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)})

    def draft(model_type: str, architecture: str) -> str | None:
        try:
            out = run(StandIn(model_type, architecture))
        except Exception:  # noqa: BLE001 - a branch that needs more of a real config: no answer
            return None
        if not isinstance(out, StandIn):  # a config the function built elsewhere (0.34.0's DSpark helpers)
            return None
        arch = (out.architectures or [None])[0]
        return arch if arch not in (architecture, UNSET) else None

    by_type = {m: a for m in literals if (a := draft(m, UNSET))}
    by_arch = {x: a for x in literals if (a := draft(UNSET, x))}
    return {"file": rel, "line": fn.lineno, "model_type": by_type, "architecture": by_arch}


def draft_verify(src: Path) -> dict | None:
    """Where ``SpeculativeConfig`` verifies the draft config with the draft's parallel config
    (``self.draft_model_config.verify_with_parallel_config(``: the SupportsPP check on the draft's class) and the
    draft's pipeline-parallel size (``create_draft_parallel_config``'s ``pipeline_parallel_size=`` keyword: the
    target's, or 1)."""
    found = _speculative_class(src)
    if found is None:
        return None
    rel, _, cls = found
    out: dict = {"file": rel, "verify_line": None, "draft_pp": None, "draft_pp_line": None}
    for node in ast.walk(cls):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "verify_with_parallel_config"
                and ast.unparse(node.func.value) == "self.draft_model_config" and out["verify_line"] is None):
            out["verify_line"] = node.lineno
        if isinstance(node, ast.FunctionDef) and node.name == "create_draft_parallel_config":
            for k in (k for c in ast.walk(node) if isinstance(c, ast.Call) for k in c.keywords):
                if k.arg == "pipeline_parallel_size":
                    out["draft_pp"] = ast.unparse(k.value)
                    out["draft_pp_line"] = k.value.lineno
    return out


def derive(src: Path) -> dict:
    """One release: every registered architecture's class and whether it supports PP."""
    models = Models(src)
    archs: dict[str, dict] = {}
    for arch, entry in sorted(registry(src).items()):
        key = models._follow(module_name(entry["module"]), entry["class"])
        if key is None:
            row = {"supports_pp": None, "why": f"class {entry['class']} not found in {entry['module']}"}
        else:
            ok, why = supports_pp(models, key)
            row = {"supports_pp": ok, "why": why}
        archs[arch] = {**entry, **row}
    return {"check": pp_check(src), "architectures": archs, "mtp_override": mtp_override(src),
            "draft_verify": draft_verify(src)}


def render(release: str, derived: dict, cross: dict | None = None) -> str:
    """A release's golden file: the check, then one line per architecture ([module:class, supports_pp, why]:
    the reason only where it fails), then the cross-check where one was run."""
    rows = derived["architectures"]
    lines = []
    for a, r in sorted(rows.items()):
        cell = [f"{r['module']}:{r['class']}", r["supports_pp"], None if r["supports_pp"] else r["why"]]
        lines.append(f"  {json.dumps(a)}: {json.dumps(cell)}")
    head = {"release": release, "source": SOURCE, "check": derived["check"],
            "mtp_override": derived["mtp_override"], "draft_verify": derived["draft_verify"],
            "num_architectures": len(rows), "num_lacking": sum(r["supports_pp"] is False for r in rows.values()),
            "columns": ["module:class", "supports_pp", "why not"]}
    text = json.dumps(head, indent=1, sort_keys=True)[:-2]
    text += ',\n "architectures": {\n' + ",\n".join(lines) + "\n }"
    if cross is not None:
        text += ',\n "cross_check": ' + json.dumps(cross, indent=1, sort_keys=True).replace("\n", "\n ")
    return text + "\n}\n"


def read(path: Path) -> dict:
    """A release's golden file back as ``derive`` returns it (with its cross-check, if any)."""
    data = json.loads(path.read_text())
    archs = {}
    for a, (mc, ok, why) in data["architectures"].items():
        mod, cls = mc.split(":")
        archs[a] = {"module": mod, "class": cls, "supports_pp": ok, "why": why}
    return {"check": data["check"], "architectures": archs, "mtp_override": data.get("mtp_override"),
            "draft_verify": data.get("draft_verify"), "cross_check": data.get("cross_check")}


SOURCE = ("scripts/golden/pp_support.py over the release's vllm/model_executor/models/registry.py and the model "
          "files it names (parsed with ast); mtp_override: the release's SpeculativeConfig.hf_config_override "
          "compiled from its source and run on stand-in configs; draft_verify: where SpeculativeConfig verifies "
          "the draft config and the draft's pipeline-parallel size")


def main(src: Path, out: Path, releases: list[str]) -> None:
    if not releases:
        releases = sorted((d.name for d in src.iterdir() if (d / "vllm/model_executor/models").is_dir()),
                          key=version_key)
    out.mkdir(parents=True, exist_ok=True)
    for r in releases:
        f = out / f"{r}.json"
        cross = json.loads(f.read_text()).get("cross_check") if f.is_file() else None
        derived = derive(src / r)
        if cross is not None and cross.get("static_digest") != digest(derived):
            cross = None  # the static answer changed since the cross-check ran: run it again
        elif cross is not None and cross.get("mtp_digest") not in (None, mtp_digest(derived["mtp_override"])):
            cross = {k: v for k, v in cross.items() if not k.startswith("mtp_")}  # the MTP part: run it again
        f.write_text(render(r, derived, cross))


def digest(derived: dict) -> str:
    """A short hash of the static answer a cross-check compared against."""
    import hashlib

    rows = {a: r["supports_pp"] for a, r in derived["architectures"].items()}
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]


def portable(text: str, release_src: Path, venv: Path) -> str:
    """The machine's folders as the README's names: ``$RELEASE_SRC`` for the unpacked releases, ``$VENV/<name>``
    for the environment the cross-check ran in."""
    return text.replace(f"{release_src}/", "$RELEASE_SRC/").replace(f"{venv}/", f"$VENV/{venv.name}/")


def cross_check(release: str, out: Path) -> None:
    """Run the release's own ``supports_pp`` on every registered class whose module imports here (CPU), and
    compare it with the static answer of ``derive`` on the same sources. Before vLLM is imported, the two import
    stubs of kvplan/verify/arch_runner.py that let model files load on a CPU (torchvision's fake-kernel
    registrations skipped; CUDA-only kernel packages as inert names): nothing they touch is a model class."""
    import importlib
    import logging
    import traceback

    logging.disable(logging.WARNING)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from kvplan.verify import arch_runner

    arch_runner._stub_torchvision()
    import vllm

    stubs = ["arch_runner._stub_torchvision"]
    try:  # from the releases whose vllm.utils has import_utils (not 0.10.x)
        arch_runner._stub_cuda_only_packages()
        stubs.append("arch_runner._stub_cuda_only_packages")
    except ImportError as e:
        stubs.append(f"arch_runner._stub_cuda_only_packages not applied ({e})")

    src = Path(vllm.__file__).resolve().parents[1]
    assert src.name == release, f"vllm imported from {src}, not release {release}"
    from vllm.model_executor.models.interfaces import supports_pp as vllm_supports_pp

    derived = derive(src)
    static = derived["architectures"]
    agree, disagree, not_imported = [], {}, {}
    for arch, row in sorted(static.items()):
        try:
            mod = importlib.import_module(module_name(row["module"]))
            cls = getattr(mod, row["class"])
        except Exception as e:  # noqa: BLE001 - a module that does not import on this CPU: record why
            last = traceback.format_exception_only(type(e), e)[-1].strip()
            not_imported[arch] = last[:300]
            continue
        ran = bool(vllm_supports_pp(cls))
        if ran == row["supports_pp"]:
            agree.append(arch)
        else:
            disagree[arch] = {"ran": ran, "static": row["supports_pp"], "why": row["why"]}
    import torch
    import transformers

    mtp = _cross_check_mtp(derived["mtp_override"])
    cross = {"python": sys.executable,
             "torch": torch.__version__, "transformers": transformers.__version__,
             "stubs": stubs,
             "static_digest": digest(derived),
             "num_run": len(agree) + len(disagree), "num_agree": len(agree),
             "disagree": disagree, "not_imported": not_imported, **mtp}
    (out / f"{release}.json").write_text(portable(render(release, derived, cross), src.parent, Path(sys.prefix)))


def cross_check_mtp(release: str, out: Path) -> None:
    """Only the MTP part of the cross-check (``_cross_check_mtp``), added to the file's existing cross-check:
    the release's own ``hf_config_override`` needs ``vllm.config`` only, not the model files (torchvision's
    stub first, as in ``cross_check``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from kvplan.verify import arch_runner

    arch_runner._stub_torchvision()
    import vllm

    src = Path(vllm.__file__).resolve().parents[1]
    assert src.name == release, f"vllm imported from {src}, not release {release}"
    f = out / f"{release}.json"
    derived = derive(src)
    cross = json.loads(f.read_text()).get("cross_check")
    assert cross is not None and cross["static_digest"] == digest(derived), "run the full --cross-check first"
    cross.update(_cross_check_mtp(derived["mtp_override"]))
    f.write_text(render(release, derived, cross))


def _cross_check_mtp(static: dict | None) -> dict:
    """The release's own ``SpeculativeConfig.hf_config_override``, imported, on a transformers ``PretrainedConfig``
    carrying what ``StandIn`` carries, for every model_type and architecture the static answer names: the draft
    architecture it gives, compared with the static answer (``mtp_digest``: the answer compared against)."""
    import hashlib

    from transformers import PretrainedConfig
    from vllm.config import SpeculativeConfig

    agree, disagree = 0, {}
    for key in ("model_type", "architecture"):
        for name, expected in sorted(((static or {}).get(key) or {}).items()):
            model_type, arch = (name, UNSET) if key == "model_type" else (UNSET, name)
            stand_in = StandIn(model_type, arch)
            config = PretrainedConfig(**{k: v for k, v in vars(stand_in).items() if k != "model_type"})
            config.model_type = model_type
            try:
                ran = (SpeculativeConfig.hf_config_override(config).architectures or [None])[0]
            except Exception as e:  # noqa: BLE001 - recorded as the disagreement it is
                ran = f"{type(e).__name__}: {e}"[:200]
            if ran == expected:
                agree += 1
            else:
                disagree[f"{key} {name}"] = {"ran": ran, "static": expected}
    return {"mtp_num_agree": agree, "mtp_disagree": disagree, "mtp_digest": mtp_digest(static)}


def mtp_digest(static: dict | None) -> str:
    """A short hash of the static MTP mapping a cross-check compared against."""
    import hashlib

    return hashlib.sha256(json.dumps(static, sort_keys=True).encode()).hexdigest()[:16]


def table(golden: Path) -> dict:
    """kvplan's table (kvplan/engines/vllm/pp_support.json) from the goldens: the refusal's text (one text in
    every release: checked), where each release raises it, the releases in which each registered architecture's
    class lacks SupportsPP and those in which it has it (runs of consecutive releases)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from lora_modules import ranges  # runs of consecutive releases

    files = {f.stem: read(f) for f in golden.glob("*.json")}
    releases = sorted(files, key=version_key)
    texts = {files[r]["check"]["text"] for r in releases}
    assert len(texts) == 1, f"the refusal's text differs between releases: {texts}"
    lacking: dict[str, set[str]] = {}
    supported: dict[str, set[str]] = {}
    for r in releases:
        for a, row in files[r]["architectures"].items():
            if row["supports_pp"] is False:
                lacking.setdefault(a, set()).add(r)
            elif row["supports_pp"]:
                supported.setdefault(a, set()).add(r)
    mtp: dict[str, dict[str, dict[str, set[str]]]] = {"model_type": {}, "architecture": {}}
    for r in releases:
        for key in mtp:
            for name, arch in ((files[r]["mtp_override"] or {}).get(key) or {}).items():
                mtp[key].setdefault(name, {}).setdefault(arch, set()).add(r)
    draft_pp = {r: files[r]["draft_verify"]["draft_pp"] for r in releases}
    return {"source": "generated by scripts/golden/pp_support.py --table from tests/golden/pp_support/",
            # the draft architecture hf_config_override gives an MTP target, by its model_type and by its
            # architectures[0] (the model_type's answer first), with the releases giving it
            "mtp_draft": {key: {name: {arch: ranges(releases, rs) for arch, rs in sorted(by.items())}
                                for name, by in sorted(mtp[key].items())} for key in mtp},
            # the releases whose draft runs at the target's pipeline-parallel size (create_draft_parallel_config)
            "draft_pp_target": ranges(releases, {r for r, v in draft_pp.items()
                                                 if v == "target_parallel_config.pipeline_parallel_size"}),
            "draft_checks": {r: f"{files[r]['draft_verify']['file']}:{files[r]['draft_verify']['verify_line']}"
                             for r in releases},
            "releases": releases, "text": texts.pop(),
            "checks": {r: f"{files[r]['check']['file']}:{files[r]['check']['line']}" for r in releases},
            "lacking": {a: ranges(releases, lacking[a]) for a in sorted(lacking)},
            # where a lacking architecture supports PP (the fix names the next such release)
            "supported": {a: ranges(releases, supported[a]) for a in sorted(lacking) if a in supported}}


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--cross-check"]:  # --cross-check RELEASE GOLDEN_DIR (the models print to stdout on import)
        cross_check(args[1], Path(args[2]))
    elif args[:1] == ["--cross-check-mtp"]:  # --cross-check-mtp RELEASE GOLDEN_DIR
        cross_check_mtp(args[1], Path(args[2]))
    elif args[:1] == ["--table"]:  # --table GOLDEN_DIR OUT.json
        Path(args[2]).write_text(json.dumps(table(Path(args[1])), indent=0, sort_keys=True) + "\n")
    else:  # RELEASE_SRC GOLDEN_DIR [RELEASE...]
        main(Path(args[0]), Path(args[1]), args[2:])
