#!/usr/bin/env python3
"""Record the resolved view of every bundled config (``kvplan/model/catalog_resolved.json``).

A bundled model's first run then answers from this file instead of importing transformers
(issue #23: first run <= 1.2 s). The entries are the config cache's (``kvplan/model/config_cache.py``):
what transformers' configuration classes answered for each attribute kvplan read, recorded by
running, with an empty cache and the shipped file off, every command path the catalog takes
(``run_catalog``: every bundled model, every bundled drafter with its target, MTP, each with its KV
budget on a card) and the benchmark's simulate runs. ``tests/test_config_cache.py`` checks the shipped answers against the installed transformers.

    python scripts/catalog_resolved.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "kvplan" / "model" / "catalog_resolved.json"

def run_catalog() -> dict:
    """Every command path the bundled catalog takes, run once: ``inspect`` of every bundled model, of every
    bundled drafter with the target the catalog names for it (with and without ``--num-speculative-tokens``:
    without it, vLLM's default is the draft config's ``n_predict``), of every model with MTP layers under MTP,
    and the KV budget on a card (``--gpu H100-80GB``: the weight rules read more of the config than the layout)
    of each, and of each model with an fp8 KV cache (the fix the budget tries first). Returns the plain results (``layouts``, ``budgets``; a refusal as its message) and whether
    transformers was imported. ``tests/test_config_cache.py`` runs it too."""
    import sys

    from kvplan.errors import KvplanError
    from kvplan.model import ServingOptions, build_model_layout, list_catalog
    from kvplan.results import to_data
    from kvplan.usecases.records import inspect_body
    from kvplan.usecases.scenario import run_scenario, scenario_from

    catalog = list_catalog()
    runs = [(m["id"], m["id"], None, {}) for m in catalog]
    for m in catalog:
        if m.get("role") == "drafter" and m.get("target"):
            runs += [(f"{m['target']}+{m['id']}", m["target"], m["id"], {}),
                     (f"{m['target']}+{m['id']} k=3", m["target"], m["id"], {"num_speculative_tokens": 3})]
        elif m.get("role") != "drafter":
            runs.append((f"{m['id']} mtp", m["id"], None, {"speculative_method": "mtp", "num_speculative_tokens": 1}))
            # an fp8 KV cache reads the KV layers' counts (the budget's fixes try --kv-cache-dtype fp8)
            runs.append((f"{m['id']} fp8", m["id"], None, {"kv_cache_dtype": "fp8"}))
    layouts, budgets = {}, {}
    for label, model, drafter, spec in runs:
        try:
            layout = build_model_layout(model, drafter, ServingOptions(**spec))
            layouts[label] = {**to_data(inspect_body(layout, ServingOptions())), "warnings": list(layout.warnings)}
        except KvplanError as e:
            layouts[label] = "error: " + str(e)
        try:
            options = {"gpu": "H100-80GB", **({"drafter": drafter} if drafter else {}), **spec}
            budgets[label] = to_data(run_scenario(scenario_from(model, options), fixes=False).budget)
        except KvplanError as e:
            budgets[label] = "error: " + str(e)
    return {"layouts": layouts, "budgets": budgets, "transformers_imported": "transformers" in sys.modules}


RECORD = "from scripts.catalog_resolved import run_catalog; run_catalog()"


def main() -> None:
    cache = Path(tempfile.mkdtemp(prefix="kvplan-resolved-"))
    # transformers answers every read (not the configuration classes' table, which answers more than is read)
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(cache), "KVPLAN_NO_SHIPPED_CONFIGS": "1",
           "KVPLAN_NO_CONFIG_TABLE": "1", "PYTHONPATH": str(ROOT)}
    env.pop("KVPLAN_NO_CACHE", None)
    subprocess.run([sys.executable, "-c", RECORD], check=True, env=env, cwd=ROOT)
    sys.path.insert(0, str(ROOT))
    from scripts.bench import CLI_CASES  # noqa: E402 - the benchmark's commands

    for _, args in CLI_CASES:
        if "{unseen}" in args:  # the benchmark's config made up on the spot: never a shipped view
            continue
        subprocess.run([sys.executable, "-m", "kvplan.cli", *args], check=True, env=env, cwd=ROOT,
                       capture_output=True)
    dirs = list(cache.glob("transformers-*"))
    assert len(dirs) == 1, dirs
    entries = {p.stem: json.loads(p.read_text()) for p in sorted(dirs[0].glob("*.json"))}
    doc = {"transformers": dirs[0].name.removeprefix("transformers-"), "entries": entries}
    OUT.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"{OUT.relative_to(ROOT)}: {len(entries)} configs (transformers {doc['transformers']})")


if __name__ == "__main__":
    main()
