"""Local paths, renamed repos and --model-map (issue 25): a served name that is not a catalog id
resolves to a known config with a warning saying how, or fails in one line naming --model-map."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered
from kvplan.errors import KvplanError, OptionError
from kvplan.model.source import resolve_model
from kvplan.usecases.check import load_deployments_text

app = ensure_registered()


@pytest.mark.parametrize("given, resolved, note", [
    # meta-llama renamed its Llama 3.1 repos (Meta-Llama-3.1-* -> Llama-3.1-*); the Hub redirects the old names
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct",
     "model 'meta-llama/Meta-Llama-3.1-8B-Instruct' read as 'meta-llama/Llama-3.1-8B-Instruct' (the Hub renamed "
     "meta-llama/Meta-Llama-3.1-* to meta-llama/Llama-3.1-* and redirects); pass --model-map or --download to "
     "read its own config"),
    ("meta-llama/Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B",
     "model 'meta-llama/Llama-3.1-8B' read as 'meta-llama/Meta-Llama-3.1-8B' (the Hub renamed "
     "meta-llama/Meta-Llama-3.1-* to meta-llama/Llama-3.1-*); pass --model-map or --download to read its own config"),
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B",
     "model 'Qwen/Qwen2.5-7B-Instruct' read as 'Qwen/Qwen2.5-7B' (its base model's config; their configs may "
     "differ (max_position_embeddings, ...)); pass --model-map or --download to read its own config"),
    ("/data/Qwen2.5-7B", "Qwen/Qwen2.5-7B",
     "model path '/data/Qwen2.5-7B' is not on this machine: read as 'Qwen/Qwen2.5-7B', the model its last part "
     "names; pass --model-map /data/Qwen2.5-7B=ID to choose the config"),
    ("/root/models/meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B",
     "model path '/root/models/meta-llama/Meta-Llama-3.1-8B' is not on this machine: read as "
     "'meta-llama/Meta-Llama-3.1-8B', the model its last part names; pass --model-map "
     "/root/models/meta-llama/Meta-Llama-3.1-8B=ID to choose the config"),
])
def test_served_names_resolve_with_a_note(given, resolved, note):
    s = resolve_model(given)
    assert (s.kind, s.model_id, s.note) == ("catalog", resolved, note)


def test_an_unknown_path_names_model_map():
    with pytest.raises(KvplanError) as e:
        resolve_model("/root/models/my-finetune")
    assert e.value.message == (
        "model path '/root/models/my-finetune' not found (/root/models/my-finetune does not exist here) and its "
        "last part names no known model; pass --model-map /root/models/my-finetune=ID (a catalog or Hub id, a "
        "directory or a config.json)")


def test_model_map_on_the_command_line_and_in_the_library(tmp_path):
    cfg = tmp_path / "ft"
    cfg.mkdir()
    (cfg / "config.json").write_text((kvplan.model.catalog.catalog_config_path("Qwen/Qwen3-8B")).read_text())
    d = kvplan.vllm_serve(["/srv/ft/", "--kv-cache-memory-bytes", "8G"], model_map={"/srv/ft": str(cfg)})
    assert d["model"]["id"] == str(cfg / "config.json") or d["model"]["source"] == "local"
    assert f"model '/srv/ft/' read as '{cfg}' (--model-map)" in d["warnings"]
    r = CliRunner().invoke(app, ["simulate", "/srv/ft", "--kv-cache-memory", "8GiB", "--model-map",
                                 "/srv/x=Qwen/Qwen3-32B", "--model-map", "/srv/ft=Qwen/Qwen3-8B", "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["model"]["id"] == "Qwen/Qwen3-8B"
    with pytest.raises(OptionError) as e:
        kvplan.simulate("x", kv_cache_memory="8GiB", model_map=["no-equals-sign"])
    assert e.value.message == ("--model-map: expected PATH=ID (e.g. /data/Qwen2.5-7B=Qwen/Qwen2.5-7B), "
                               "got 'no-equals-sign'")


def test_model_map_is_a_deployments_file_key():
    [d] = load_deployments_text("deployments:\n  - name: a\n    vllm_serve: vllm serve /models/ft --max-model-len 8k\n"
                                "    model_map: {/models/ft: Qwen/Qwen3-8B}\n    kv_cache_memory: 8GiB\n", "deploy.yaml")
    assert d.scenario.model == "/models/ft" and d.scenario.model_map == {"/models/ft": "Qwen/Qwen3-8B"}
    from kvplan.usecases.check.evaluate import run_deployment

    result = run_deployment(d)
    assert result.status == "pass", result
