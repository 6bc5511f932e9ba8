#!/usr/bin/env python3
"""Record the resolved view of every bundled config (``kvplan/model/catalog_resolved.json``).

A bundled model's first run then answers from this file instead of importing transformers
(issue #23: first run <= 1.2 s). The entries are the config cache's (``kvplan/model/config_cache.py``):
what transformers' configuration classes answered for each attribute kvplan read, recorded by
running, with an empty cache and the shipped file off, every command path the catalog takes:
``inspect`` of every bundled model and the bundled drafter pairs, every bundled model's KV budget
on a card (``--gpu H100-80GB``: the weight rules read more of the config than the layout does), and
the benchmark's simulate runs. ``tests/test_config_cache.py`` checks the shipped answers against the installed transformers.

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

RECORD = r"""
from kvplan.model import build_model_layout, list_catalog, ServingOptions
from kvplan.usecases.records import inspect_body
from kvplan.errors import KvplanError
for m in list_catalog():
    try:
        inspect_body(build_model_layout(m["id"], None, ServingOptions()), ServingOptions())
    except KvplanError:
        pass
for target, drafter in [("openai/gpt-oss-20b", "amazon/GPT-OSS-20B-P-EAGLE"),
                        ("mistralai/Mistral-7B-v0.1", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")]:
    inspect_body(build_model_layout(target, drafter, ServingOptions(num_speculative_tokens=3)), ServingOptions())
from kvplan.usecases.scenario import run_scenario, scenario_from
for m in list_catalog():  # the budget's weight rules read more of the config than the layout
    try:
        run_scenario(scenario_from(m["id"], {"gpu": "H100-80GB"}), fixes=False)
    except KvplanError:
        pass
"""


def main() -> None:
    cache = Path(tempfile.mkdtemp(prefix="kvplan-resolved-"))
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(cache), "KVPLAN_NO_SHIPPED_CONFIGS": "1", "PYTHONPATH": str(ROOT)}
    env.pop("KVPLAN_NO_CACHE", None)
    subprocess.run([sys.executable, "-c", RECORD], check=True, env=env, cwd=ROOT)
    sys.path.insert(0, str(ROOT))
    from scripts.bench import CLI_CASES  # noqa: E402 - the benchmark's commands

    for _, args in CLI_CASES:
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
