"""Every repository path a doc names (README.md, docs/*.md), and every path or ``kvplan.*`` name a comment or
docstring in kvplan/ and scripts/ names, exists: a file that moved or a function that was renamed leaves no
pointer behind.

A path is a word with a ``/`` whose first part is a top-level folder of the repository (``kvplan/``,
``scripts/``, ``docs/``, ``tests/``, ``configs/``, ``.ci/``, ``.github/``) or a kvplan subpackage
(``model/layout.py``); it exists when it names a file or folder (or a module without its ``.py``) from the
root, from kvplan/, scripts/, tests/ or configs/. Patterns (``*``, ``<org>``, ``{a,b}``) and placeholders in capitals (``X.json``) are not
paths. ``kvplan.a.b.name``: the longest importable module, then its attribute. Paths of other projects'
repositories, of the user's repository and of an installed wheel are listed in ``ELSEWHERE`` with whose
they are."""

from __future__ import annotations

import importlib
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP = {"kvplan", "scripts", "docs", "tests", "configs", ".ci", ".github"}
SUBPACKAGES = {p.name for p in (ROOT / "kvplan").iterdir() if (p / "__init__.py").exists()}
BASES = ("", "kvplan/", "scripts/", "tests/", "configs/")
PATH = re.compile(r"(?<![\w./:-])((?:\.?[A-Za-z_][\w-]*/)+[\w.*<>{}-]*)")
DOTTED = re.compile(r"(?<![\w./:-])(kvplan(?:\.\w+)+)")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*(\.\w+)?$")  # X.json, BASE__X.txt, VERSION
# Paths that are not in this repository, with whose they are.
ELSEWHERE = {
    ".github/workflows/kv-layout.yml": "the user's repository (docs/check.md's workflow to copy)",
    "kvplan/configs": "an installed wheel (the catalog as package data)",
    "configs/model_config.py": "SGLang's python/sglang/srt/configs/",
    "configs/mamba_utils.py": "SGLang's python/sglang/srt/configs/",
    "configs/qwen3_next.py": "SGLang's python/sglang/srt/configs/",
    "configs/nemotron_h.py": "SGLang's python/sglang/srt/configs/",
    "docs/features/speculative_decoding/eagle.md": "vLLM's docs",
    "docs/deployment/k8s.md": "vLLM's docs",
    "docs/user_guide/getting_started.md": "vllm-project/speculators' docs",
    "docs/user_guide/algorithms/eagle3.md": "vllm-project/speculators' docs",
    "docs/source/en/model_doc/qwen3_next.md": "transformers' docs",
    "logs/vllm_serve_v4.log": "leadawon/LAMBO's (a budget case's note in docs/budget-validation.md)",
    "results/tidy/kv_capacity.csv": "roy6n23/vllm-tp2-profiling's (budget cases' sources in docs/budget-validation.md)",
    "results/p0.log": "roy6n23/vllm-tp2-profiling's (budget cases' sources in docs/budget-validation.md)",
    "tests/unit/test_evals.py": "Brownings-productions/farmhub's (budget cases' sources in docs/budget-validation.md)",
    "docs/gates/M4-report.md": "ish-codes-magic/bytes-per-token's (budget cases' sources in docs/budget-validation.md)",
    "configs/models/qwen2.5-1.5b-instruct-bf16.yaml": "GIO443/statecraft-serving's (budget cases' sources in docs/budget-validation.md)",
}


def _sources() -> list[Path]:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    code = [p for d in ("kvplan", "scripts") for p in sorted((ROOT / d).rglob("*.py")) if "__pycache__" not in p.parts]
    return docs + code


def _texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of a page, or of a module's comments and docstrings (a string that is a statement of its own)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return list(enumerate(text.splitlines(), 1))
    out, prev = [], tokenize.NEWLINE
    for t in tokenize.generate_tokens(io.StringIO(text).readline):
        if t.type == tokenize.COMMENT:
            out.append((t.start[0], t.string))
        elif t.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            out += [(t.start[0] + i, line) for i, line in enumerate(t.string.splitlines())]
        if t.type not in (tokenize.NL, tokenize.COMMENT):
            prev = t.type
    return out


def path_exists(word: str) -> bool | None:
    """Whether a path a text names exists; None where the word is not a repository path."""
    if word.endswith(("...", "…")):  # a table cell cut short
        return None
    word = word.rstrip(".,:;)'\"`")
    parts = word.rstrip("/").split("/")
    if parts[0] not in TOP | SUBPACKAGES:
        return None
    if any(c in word for c in "*<>{}") or any(PLACEHOLDER.match(p) for p in parts[1:]):
        return None
    if word.rstrip("/") in ELSEWHERE:
        return True
    word = word.rstrip("/")
    return any((ROOT / base / word).exists() or (ROOT / base / f"{word}.py").exists()  # a module by its path
               for base in BASES)


def name_exists(dotted: str) -> bool:
    """``kvplan.a.b`` or ``kvplan.a.b.attr``: the longest importable module, then its first attribute."""
    parts = dotted.rstrip(".").split(".")
    for k in range(len(parts), 0, -1):
        module = ".".join(parts[:k])
        file = ROOT.joinpath(*parts[:k])
        if not (file.with_suffix(".py").exists() or (file / "__init__.py").exists()):
            continue
        if k == len(parts):
            return True
        try:
            mod = importlib.import_module(module)
        except ImportError:  # a module that runs inside a vLLM environment: its source names the attribute
            source = (file.with_suffix(".py") if file.with_suffix(".py").exists() else file / "__init__.py")
            return re.search(rf"\b{parts[k]}\b", source.read_text(encoding="utf-8")) is not None
        return hasattr(mod, parts[k])
    return False


def _stale() -> list[str]:
    out = []
    for path in _sources():
        rel = path.relative_to(ROOT)
        for line, text in _texts(path):
            for m in PATH.finditer(text):
                if path_exists(m.group(1)) is False:
                    out.append(f"{rel}:{line}: {m.group(1)}")
            for m in DOTTED.finditer(text):
                if not name_exists(m.group(1)):
                    out.append(f"{rel}:{line}: {m.group(1)}")
    return out


def test_every_named_path_exists():
    assert _stale() == []


@pytest.mark.parametrize("word, exists", [
    ("kvplan/model/layout.py", True),  # from the root
    ("model/layout.py", True),  # inside kvplan/
    ("results/host_tier", True),  # a module named by its path
    ("golden/make_goldens.py", None),  # not a top-level folder or a kvplan subpackage: not checked
    ("report/console.py", False),  # gone
    ("tests/golden/defaults/X.json", None),  # a placeholder
    ("configs/<org>/<name>/config.json", None),  # a pattern
    ("kvplan/configs", True),  # a wheel's, in ELSEWHERE
])
def test_path_rule(word, exists):
    assert path_exists(word) is exists


def test_name_rule():
    assert name_exists("kvplan.engines.vllm.fixes.smallest_fixes")
    assert name_exists("kvplan.simulate")  # kvplan's lazy re-export of kvplan.api.simulate
    assert not name_exists("kvplan.engines.vllm.fixes.largest_fixes")
    assert not name_exists("kvplan.logs.facts")
