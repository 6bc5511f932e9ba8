"""The transformers answer cache: a warm run gives byte-identical results without importing
transformers, for every bundled model (and its drafters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# every command path the bundled catalog takes (scripts/catalog_resolved.py records the shipped views from it)
SCRIPT = "import json, sys; from scripts.catalog_resolved import run_catalog; json.dump(run_catalog(), sys.stdout)"


def _run(cache_dir: Path, shipped: bool = False) -> dict:
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    env.pop("KVPLAN_NO_CACHE", None)
    env.pop("KVPLAN_NO_SHIPPED_CONFIGS", None)
    if not shipped:  # transformers answers (neither the shipped views nor the configuration classes' table)
        env["KVPLAN_NO_SHIPPED_CONFIGS"] = "1"
        env["KVPLAN_NO_CONFIG_TABLE"] = "1"
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_warm_runs_match_cold_runs_without_transformers(tmp_path):
    cold = _run(tmp_path)
    assert cold["transformers_imported"]
    assert any(tmp_path.rglob("*.json"))
    warm = _run(tmp_path)
    assert warm["layouts"] == cold["layouts"]
    assert warm["budgets"] == cold["budgets"]
    assert not warm["transformers_imported"]


def test_shipped_resolved_views_match_transformers(tmp_path):
    """The bundled configs' shipped views (kvplan/model/catalog_resolved.json, scripts/catalog_resolved.py)
    give the layouts and the KV budgets on a card the installed transformers gives, and a first run never
    imports it."""
    cold = _run(tmp_path / "real")
    shipped = _run(tmp_path / "shipped", shipped=True)
    assert shipped["layouts"] == cold["layouts"]
    assert shipped["budgets"] == cold["budgets"]
    assert not shipped["transformers_imported"]


def test_cache_can_be_turned_off(tmp_path):
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(tmp_path), "KVPLAN_NO_CACHE": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "kvplan.cli", "inspect", "openai/gpt-oss-20b", "--format", "json"],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0 and not any(tmp_path.rglob("*.json"))


def test_building_the_config_object_leaves_the_config_as_read(monkeypatch):
    """transformers 5 writes its rope defaults (rope_theta, rope_type) into the nested rope_scaling dict it
    is given; the config kvplan read must not change with it, or the budget (which hashes the same dict for
    the config cache) misses the model stage's cache entry and imports transformers on every warm run."""
    import copy

    from kvplan.model.hfconfig import build_config_object

    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    monkeypatch.setenv("KVPLAN_NO_SHIPPED_CONFIGS", "1")
    path = ROOT / "configs" / "deepseek-ai" / "DeepSeek-R1" / "config.json"
    raw = json.loads(path.read_text())
    before = copy.deepcopy(raw)
    obj = build_config_object(raw, str(path))
    assert obj is not None and obj.rope_parameters["rope_type"] == "yarn"  # transformers did fill its defaults
    assert raw == before
