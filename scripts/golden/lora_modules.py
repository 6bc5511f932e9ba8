#!/usr/bin/env python3
"""Which model classes support LoRA, and which wrap their embeddings and lm_head, release by release: read from
each release's own model files (``vllm/model_executor/models/*.py``, parsed with ``ast``; nothing is imported).

vLLM's LoRA manager wraps every linear layer of a model class that implements ``SupportsLoRA``, and the modules
named in the class's ``embedding_modules`` (``embed_tokens`` → ``VocabParallelEmbeddingWithLoRA``, ``lm_head`` →
``LogitsProcessorWithLoRA``: ``LoRAModelManager._create_lora_modules``, vllm/lora/model_manager.py). A class's
``embedding_modules`` is the first one its bases define (Python's attribute lookup; the bases are resolved by name
among the release's model files). The LoRA goldens (``scripts/golden/profile_terms.py --lora``) check the result on
the two families they run: Qwen3ForCausalLM wraps its embeddings from 0.17 (144 wrapped modules in 0.11.0 and
0.15.1, 146 in 0.19.0 and 0.34.0), LlamaForCausalLM in every release.

    python scripts/golden/lora_modules.py $RELEASE_SRC > kvplan/budget/lora_modules.json
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path


def _names(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def classes_of(models: Path) -> dict[str, tuple[list[str], list[str] | None]]:
    """Every class of the model files: its bases' names and its own ``embedding_modules`` keys (None: not set)."""
    out: dict[str, tuple[list[str], list[str] | None]] = {}
    for f in sorted(models.glob("*.py")):
        try:
            tree = ast.parse(f.read_text())
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            keys = None
            for stmt in node.body:
                target = (stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                          else stmt.target if isinstance(stmt, ast.AnnAssign) else None)
                if isinstance(target, ast.Name) and target.id == "embedding_modules" and stmt.value is not None:
                    v = stmt.value
                    keys = ([k.value for k in v.keys if isinstance(k, ast.Constant)] if isinstance(v, ast.Dict)
                            else [])
            out.setdefault(node.name, ([_names(b) for b in node.bases], keys))
    return out


def resolve(classes: dict, name: str, seen: frozenset = frozenset()) -> tuple[bool, list[str] | None]:
    """(implements SupportsLoRA, its embedding_modules keys) through the bases, depth first as Python's MRO
    visits single-inheritance chains."""
    if name == "SupportsLoRA":
        return True, None
    if name not in classes or name in seen:
        return False, None
    bases, keys = classes[name]
    lora = False
    for b in bases:
        b_lora, b_keys = resolve(classes, b, seen | {name})
        lora = lora or b_lora
        if keys is None and b_keys is not None:
            keys = b_keys
    return lora, keys


def ranges(releases: list[str], present: list[str]) -> list[list[str]]:
    """``present`` (a subset of ``releases``, in order) as runs of consecutive releases [first, last]."""
    out: list[list[str]] = []
    prev = None
    for r in releases:
        if r in present:
            if out and prev is not None and prev in present:
                out[-1][1] = r
            else:
                out.append([r, r])
        prev = r
    return out


def main(src: Path) -> dict:
    key = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    releases = sorted((d.name for d in src.iterdir() if (d / "vllm/model_executor/models").is_dir()), key=key)
    lora: dict[str, list[str]] = {}
    embed: dict[str, list[str]] = {}
    head: dict[str, list[str]] = {}
    for r in releases:
        classes = classes_of(src / r / "vllm/model_executor/models")
        for name in classes:
            if not name.endswith(("ForCausalLM", "ForConditionalGeneration", "LMHeadModel", "Model")):
                continue
            supports, keys = resolve(classes, name)
            if not supports:
                continue
            lora.setdefault(name, []).append(r)
            if keys and any(k != "lm_head" for k in keys):
                embed.setdefault(name, []).append(r)
            if keys and "lm_head" in keys:
                head.setdefault(name, []).append(r)
    archs = {}
    for name in sorted(lora):
        archs[name] = {"lora": ranges(releases, lora[name])}
        if name in embed:
            archs[name]["embeddings"] = ranges(releases, embed[name])
        if name in head:
            archs[name]["lm_head"] = ranges(releases, head[name])
    return {"source": "scripts/golden/lora_modules.py over each release's vllm/model_executor/models/*.py",
            "releases": releases, "architectures": archs}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1])), indent=0, sort_keys=True))
