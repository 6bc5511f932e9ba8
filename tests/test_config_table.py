"""The configuration classes' table (``kvplan/model/config_table.py``, ``kvplan/model/config_classes.json`` by
``scripts/config_classes.py``): a config never seen is answered without transformers, and every answer is
transformers' own, for every config in the repository and seeded perturbations of each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_CONFIGS_DIR = ROOT.parent / "shared" / "configs"  # the shared copies, where this checkout has them
sys.path.insert(0, str(ROOT))

from kvplan.installed import version  # noqa: E402
from kvplan.model import config_table, hfconfig  # noqa: E402
from scripts import config_classes  # noqa: E402

# The model types the table must answer (the unseen-config case is a Gemma 3; Qwen3 and Llama are the
# most common configs on the Hub): the generator demoting one of them fails here, not silently in the timings.
PROVEN = {"gemma2", "gemma3", "gemma3_text", "gpt_oss", "llama", "mistral", "mixtral", "qwen2", "qwen3"}


def _fresh(code: str) -> object:
    """``code``'s printed JSON, run in a fresh interpreter: transformers then reads configs with torch hidden, as
    the table was made (a test before this one may have imported torch, which turns the table off)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KVPLAN_NO_CONFIG_TABLE", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


_SHARED = str(SHARED_CONFIGS_DIR)
CORPUS = f"configs = corpus_configs(({_SHARED!r},) if os.path.isdir({_SHARED!r}) else ())"


def test_table_is_for_the_installed_transformers():
    """The table's facts hold for the release it was generated from; kvplan uses it only then (``usable``), and
    a newer transformers needs ``python scripts/config_classes.py`` (``scripts/regenerate.py --check`` says so)."""
    assert config_table.table()["transformers"] == version("transformers"), \
        "kvplan/model/config_classes.json is for another transformers: run python scripts/config_classes.py"


def test_table_covers_the_proven_model_types():
    t = config_table.table()
    answered = {mt for mt, cls in t["types"].items() if t["classes"][cls]["status"] == "table"}
    assert PROVEN <= answered, t["classes"]
    for mt, cls in t["types"].items():  # every other type says why transformers answers it
        assert t["classes"][cls]["status"] == "table" or t["classes"][cls]["why"], mt


@pytest.mark.slow
def test_every_repository_config_and_its_perturbations_answer_as_transformers():
    """For every config of a table type (the bundled catalog, tests/data/arch_configs,
    tests/data/transformers5_configs, the shared copies) and 60 seeded perturbations of each (keys removed,
    values changed or of another type, keys added: sliding_window_pattern, rope_scaling, aliases, ...): every
    attribute the table answers or calls missing, top level and text config, is transformers' own, and the
    table answers nothing transformers rejects (a seed other than the generator's)."""
    result = _fresh("import json, os\n"
                    "from kvplan.model.hfconfig import _torch_hidden\n"
                    "from scripts.config_classes import check_corpus, corpus_configs\n"
                    f"{CORPUS}\n"
                    "with _torch_hidden():\n"
                    "    print(json.dumps(check_corpus(configs, 60, seed=20261207)))")
    assert isinstance(result, dict)
    assert result["diffs"] == {}
    counts = result["counts"]
    # not vacuous: most variants are answered, and many are rejected by transformers (and so by the table)
    assert counts["table"] > 800 and counts["rejected"] > 500, counts


def test_every_real_config_of_a_table_type_is_answered():
    """The real configs of the proven types are answered from the table (none falls back), so a first run on
    an edited copy of one never imports transformers."""
    result = _fresh("import json, os\n"
                    "from kvplan.model import config_table\n"
                    "from kvplan.model.hfconfig import _torch_hidden\n"
                    "from scripts.config_classes import compare, corpus_configs\n"
                    f"{CORPUS}\n"
                    "t = config_table.table()\n"
                    "out = []\n"
                    "with _torch_hidden():\n"
                    "    for path, raw in configs:\n"
                    "        cls = t['types'].get(raw['model_type'])\n"
                    "        if cls and t['classes'][cls]['status'] == 'table':\n"
                    "            out.append([path, raw['model_type'], *compare(raw)])\n"
                    "print(json.dumps(out))")
    assert isinstance(result, list)
    for path, _, outcome, diffs in result:
        assert (outcome, diffs) == ("table", []), path
    assert {"gemma2", "gemma3", "gpt_oss", "llama", "mistral", "mixtral", "qwen2", "qwen3"} <= {r[1] for r in result}


def test_another_transformers_version_falls_back(monkeypatch):
    raw = json.loads((ROOT / "configs/Qwen/Qwen3-8B/config.json").read_text())
    assert config_table.entry_for(raw, "qwen3", torch_hidden=True) is not None
    monkeypatch.setitem(config_table.table(), "transformers", "0.0.1")
    assert config_table.entry_for(raw, "qwen3", torch_hidden=True) is None
    monkeypatch.undo()
    monkeypatch.setenv("KVPLAN_NO_CONFIG_TABLE", "1")
    assert config_table.entry_for(raw, "qwen3", torch_hidden=True) is None


def test_torch_imported_first_falls_back(monkeypatch):
    """With torch loaded before transformers (``--exact-params``), transformers 5 turns ``dtype`` names into torch
    dtypes and refuses a name torch lacks: the table, made with torch hidden, is not used then, and the config
    loader tells it which world transformers reads configs in."""
    raw = json.loads((ROOT / "configs/Qwen/Qwen3-8B/config.json").read_text())
    assert config_table.entry_for(raw, "qwen3", torch_hidden=False) is None
    monkeypatch.setattr(hfconfig, "_TORCH_MODE", "visible")
    assert not hfconfig.torch_stays_hidden()
    monkeypatch.setattr(hfconfig, "_TORCH_MODE", "hidden")
    assert hfconfig.torch_stays_hidden()


def test_strict_type_check_restated():
    """@strict's checks on JSON values (huggingface_hub/dataclasses.py 460-640): an int is not a float, a bool
    is not an int, a union takes any member, a list checks each item."""
    accepts = config_table.accepts
    assert accepts(3, "int") and not accepts(True, "int") and not accepts(3.0, "int")
    assert accepts(0.5, "float") and not accepts(1, "float")
    assert accepts(None, {"any_of": ["int", "null"]}) and not accepts("x", {"any_of": ["int", "null"]})
    assert accepts(["a"], {"list": "str"}) and not accepts(["a", 1], {"list": "str"})
    assert accepts(1, {"literal": [1, 2]}) and not accepts(True, {"literal": [1, 2]})
    assert not accepts({}, {"class": "RopeParameters"})  # never vouched for


RUN = """
import json, sys
from kvplan.errors import KvplanError
from kvplan.model import ServingOptions, build_model_layout
from kvplan.results import to_data
from kvplan.usecases.records import inspect_body
from kvplan.usecases.scenario import run_scenario, scenario_from
out = {}
for path in sys.argv[1:]:
    try:
        layout = to_data(inspect_body(build_model_layout(path, None, ServingOptions()), ServingOptions()))
        budget = to_data(run_scenario(scenario_from(path, {"gpu": "H100-80GB"}), fixes=False).budget)
        out[path] = {"layout": layout, "budget": budget}
    except KvplanError as e:
        out[path] = str(e)
print(json.dumps({"runs": out, "transformers": "transformers" in sys.modules}))
"""


def _runs(paths: list[Path], cache: Path, table: bool) -> dict:
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    for k in ("KVPLAN_NO_CACHE", "KVPLAN_NO_CONFIG_TABLE", "KVPLAN_NO_SHIPPED_CONFIGS"):
        env.pop(k, None)
    if not table:
        env["KVPLAN_NO_CONFIG_TABLE"] = "1"
    r = subprocess.run([sys.executable, "-c", RUN, *map(str, paths)], capture_output=True, text=True, env=env,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.slow
def test_first_run_on_a_config_never_seen_skips_transformers(tmp_path):
    """Every bundled config of a proven type (targets and EAGLE-3 heads), each with one key more (no shipped view,
    no cache entry): the table answers, transformers is never imported, the layout and the KV budget on an H100
    are the ones transformers gives, and the cache entries are written for the next run."""
    t = config_table.table()
    paths = []
    for path, raw in config_classes.corpus_configs():
        if not path.startswith("configs/") or not path.endswith("config.json"):
            continue
        cls = t["types"].get(raw["model_type"])
        if cls is None or t["classes"][cls]["status"] != "table":
            continue
        raw["_name_or_path"] = f"edited-{len(paths)}"
        (tmp_path / str(len(paths))).mkdir()
        paths.append(tmp_path / str(len(paths)) / "config.json")
        paths[-1].write_text(json.dumps(raw))
    # Gemma 2 and 3, gpt-oss, Llama 3.x, Mistral, Mixtral, Qwen2.5, Qwen3, the Llama-type EAGLE-3 heads
    assert len(paths) >= 20
    fast = _runs(paths, tmp_path / "table", table=True)
    slow = _runs(paths, tmp_path / "transformers", table=False)
    assert not fast["transformers"] and slow["transformers"]
    assert fast["runs"] == slow["runs"]
    assert all(isinstance(v, dict) for v in fast["runs"].values())
    assert len(list((tmp_path / "table").rglob("*.json"))) == len(paths)
