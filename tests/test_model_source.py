"""Resolution order: local path → bundled catalog → HF cache (offline) → Hub only with download=True."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.errors import KvplanError, ModelNotFoundError
from kvplan.model import build_model_layout, list_catalog, load_model_info, resolve_model
from kvplan.model.catalog import catalog_dir

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty HF cache in tmp (HF_HUB_CACHE), and a helper that puts a snapshot in it."""
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))

    def put(repo: str, commit: str, config: dict, ref: str | None = "main") -> Path:
        d = cache / ("models--" + repo.replace("/", "--"))
        snap = d / "snapshots" / commit
        snap.mkdir(parents=True, exist_ok=True)
        (snap / "config.json").write_text(json.dumps(config))
        if ref:
            (d / "refs").mkdir(exist_ok=True)
            (d / "refs" / ref).write_text(commit)
        return snap / "config.json"

    return put


def gpt_oss_config(n: int | None = None) -> dict:
    cfg = json.loads(Path(catalog_dir(), "openai/gpt-oss-20b/config.json").read_text())
    if n is not None:  # a smaller copy: layer_types must keep one entry per layer
        cfg["num_hidden_layers"] = n
        cfg["layer_types"] = cfg["layer_types"][:n]
    return cfg


def test_local_file_and_directory(tmp_path):
    src = Path(catalog_dir(), "openai/gpt-oss-20b/config.json")
    shutil.copy(src, tmp_path / "config.json")
    s = resolve_model(str(tmp_path))
    assert s.kind == "local" and s.path == str(tmp_path / "config.json") and s.revision is None
    assert resolve_model(str(tmp_path / "config.json")).kind == "local"


def test_catalog_before_cache(hub):
    # a cached snapshot of the same id does not shadow the bundled copy
    hub("openai/gpt-oss-20b", COMMIT, gpt_oss_config(2))
    s = resolve_model("openai/gpt-oss-20b")
    assert s.kind == "catalog" and s.path.endswith("configs/openai/gpt-oss-20b/config.json")
    assert load_model_info("openai/gpt-oss-20b").provenance == "genuine"


def test_hf_cache_offline(hub):
    hub("someorg/tiny-oss", COMMIT, gpt_oss_config(4))
    s = resolve_model("someorg/tiny-oss")
    assert s.kind == "hf-cache" and s.revision == COMMIT
    L = build_model_layout("someorg/tiny-oss")
    assert len(L.layers) == 4 and L.target.provenance is None


def test_hf_cache_revision(hub):
    hub("someorg/tiny-oss", COMMIT, gpt_oss_config(4))
    hub("someorg/tiny-oss", OTHER, gpt_oss_config(6), ref="v2")
    assert resolve_model("someorg/tiny-oss", revision="v2").revision == OTHER
    assert len(build_model_layout("someorg/tiny-oss", revision="v2").layers) == 6
    assert resolve_model("someorg/tiny-oss", revision=COMMIT).revision == COMMIT  # a commit hash directly
    # the catalog has no revisions: --revision skips it and looks in the cache
    hub("openai/gpt-oss-20b", OTHER, gpt_oss_config(2), ref="old")
    s = resolve_model("openai/gpt-oss-20b", revision="old")
    assert s.kind == "hf-cache" and len(build_model_layout("openai/gpt-oss-20b", revision="old").layers) == 2
    with pytest.raises(ModelNotFoundError, match="skipped: it has no revisions"):
        resolve_model("openai/gpt-oss-20b", revision="missing")


def test_download_refused_without_flag(hub, monkeypatch):
    import huggingface_hub

    def boom(*a, **k):  # pragma: no cover - must not be called
        raise AssertionError("network used without --download")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", boom)
    with pytest.raises(ModelNotFoundError) as e:
        resolve_model("someorg/not-here")
    msg = str(e.value)
    assert "--download" in msg and "Hugging Face cache" in msg and "bundled catalog" in msg


def test_download_with_flag(hub, tmp_path, monkeypatch):
    import huggingface_hub

    calls = []

    def fake(repo_id, filename, revision=None, **where):
        calls.append((repo_id, filename, revision))
        p = tmp_path / "dl" / "models--someorg--new" / "snapshots" / COMMIT / "config.json"
        p.parent.mkdir(parents=True)
        p.write_text(json.dumps(gpt_oss_config()))
        return str(p)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    monkeypatch.setattr("kvplan.model.source.hub_unreachable", lambda: None)  # as if online
    s = resolve_model("someorg/new", revision="main", download=True)
    assert calls == [("someorg/new", "config.json", "main")]
    assert s.kind == "download" and s.revision == COMMIT


@pytest.mark.parametrize("has_quant", [True, False])
def test_download_fetches_hf_quant_config_too(hub, tmp_path, monkeypatch, has_quant):
    # a ModelOpt <= 0.29 checkpoint (config.json without quantization_config): vLLM reads
    # hf_quant_config.json from the repository too, so --download fetches it into the same snapshot
    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError

    nano = Path(catalog_dir(), "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4")
    snap = tmp_path / "dl" / "models--someorg--nano" / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    calls = []

    def fake(repo_id, filename, revision=None, **where):
        calls.append(filename)
        if filename == "hf_quant_config.json" and not has_quant:
            raise EntryNotFoundError("404 Client Error: Entry Not Found")
        (snap / filename).write_bytes((nano / filename).read_bytes())
        return str(snap / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    monkeypatch.setattr("kvplan.model.source.hub_unreachable", lambda: None)  # as if online
    layout = build_model_layout("someorg/nano", download=True)
    assert calls == ["config.json", "hf_quant_config.json"]
    attention = {ls.spec.dtype for ls in layout.layers if ls.spec.kind == "full_attention"}
    assert attention == ({"uint8"} if has_quant else {"bfloat16"})


def test_download_failure_is_one_line(hub, monkeypatch):
    import huggingface_hub

    def fail(*a, **k):
        raise OSError("We couldn't connect to 'https://huggingface.co'\nmore detail")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fail)
    monkeypatch.setattr("kvplan.model.source.hub_unreachable", lambda: None)  # the probe passed, the fetch failed
    with pytest.raises(KvplanError) as e:
        resolve_model("someorg/new", download=True)
    assert "\n" not in str(e.value) and "could not download config.json of 'someorg/new'" in str(e.value)


def test_catalog_dir_override(tmp_path, monkeypatch):
    (tmp_path / "acme" / "m").mkdir(parents=True)
    (tmp_path / "acme" / "m" / "config.json").write_text(json.dumps(gpt_oss_config()))
    monkeypatch.setenv("KVPLAN_CONFIGS_DIR", str(tmp_path))
    assert resolve_model("acme/m").kind == "catalog"
    assert [r["id"] for r in list_catalog()] == ["acme/m"]


def test_list_catalog():
    rows = {r["id"]: r for r in list_catalog()}
    assert rows["openai/gpt-oss-20b"]["family"] and rows["openai/gpt-oss-20b"]["role"] == "target"
    assert rows["amazon/GPT-OSS-20B-P-EAGLE"]["provenance"] == "reconstructed"
    assert rows["amazon/GPT-OSS-20B-P-EAGLE"]["role"] == "drafter"
    for r in rows.values():
        assert set(r) >= {"id", "family", "role", "provenance", "path"} and Path(r["path"]).is_file()


def test_every_catalog_config_parses():
    # every bundled config resolves and is a modelled family (DeepSeek-V4 is refused at layout time)
    for r in list_catalog():
        info = load_model_info(r["id"])
        raw = json.loads(Path(r["path"]).read_text())
        text = raw.get("text_config") or raw.get("llm_config") or raw.get("transformer_layer_config") or raw
        # the layer count is the config's own (text config for multimodal wrappers, the draft layer's
        # config for a speculators checkpoint)
        assert info.num_hidden_layers == text.get("num_hidden_layers", raw.get("num_hidden_layers")), r["id"]
        assert info.dtype in ("bfloat16", "float16", "float32")


def test_no_heavy_imports():
    # importing the package loads neither transformers nor torch; parsing a config never loads torch;
    # a bundled config answers from its shipped resolved view (kvplan/model/catalog_resolved.json)
    # without transformers, any other config loads transformers' configuration classes lazily
    code = (
        "import json, os, sys, tempfile, kvplan.model as m\n"
        "assert 'transformers' not in sys.modules and 'torch' not in sys.modules\n"
        "m.build_model_layout('Qwen/Qwen3-Next-80B-A3B-Thinking')\n"
        "assert 'transformers' not in sys.modules, 'a bundled config imported transformers'\n"
        "from kvplan.model.catalog import catalog_config_path\n"
        "raw = json.loads(catalog_config_path('Qwen/Qwen3-Next-80B-A3B-Thinking').read_text())\n"
        "raw['max_position_embeddings'] = 12345\n"
        "p = os.path.join(tempfile.mkdtemp(), 'config.json')\n"
        "json.dump(raw, open(p, 'w'))\n"
        "m.build_model_layout(p)\n"
        "assert 'transformers' in sys.modules\n"
        "assert sys.modules.get('torch') is None, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ model ids: case, org, did you mean

def test_catalog_lookup_is_case_insensitive():
    # the catalog spells the drafter amazon/GPT-OSS-20B-P-EAGLE; the Hub matches ids case-insensitively
    s = resolve_model("amazon/gpt-oss-20b-p-eagle")
    assert (s.kind, s.model_id, s.requested, s.note) == (
        "catalog", "amazon/GPT-OSS-20B-P-EAGLE", "amazon/gpt-oss-20b-p-eagle", None)
    assert s.path.endswith("configs/amazon/GPT-OSS-20B-P-EAGLE/config.json")
    assert load_model_info("AMAZON/gpt-oss-20b-P-EAGLE").provenance == "reconstructed"
    assert resolve_model("openai/GPT-OSS-20B").model_id == "openai/gpt-oss-20b"


def test_hf_cache_lookup_is_case_insensitive(hub):
    hub("SomeOrg/Tiny-OSS", COMMIT, gpt_oss_config(4))
    s = resolve_model("someorg/tiny-oss")
    assert (s.kind, s.model_id, s.revision) == ("hf-cache", "SomeOrg/Tiny-OSS", COMMIT)


def test_org_inferred_for_a_unique_bare_name(hub):
    s = resolve_model("gpt-oss-20b")
    assert (s.kind, s.model_id, s.requested) == ("catalog", "openai/gpt-oss-20b", "gpt-oss-20b")
    assert s.note == ("model 'gpt-oss-20b' taken as 'openai/gpt-oss-20b' (the only known model of that name); "
                      "write the full id")
    assert s.note in build_model_layout("gpt-oss-20b").warnings
    # a cached model's bare name works too, in any case
    hub("someorg/Tiny-OSS", COMMIT, gpt_oss_config(4))
    assert resolve_model("tiny-oss").model_id == "someorg/Tiny-OSS"


def test_ambiguous_bare_name(tmp_path, monkeypatch):
    for org in ("acme", "other"):
        (tmp_path / org / "m").mkdir(parents=True)
        (tmp_path / org / "m" / "config.json").write_text(json.dumps(gpt_oss_config()))
    monkeypatch.setenv("KVPLAN_CONFIGS_DIR", str(tmp_path))
    with pytest.raises(ModelNotFoundError) as e:
        resolve_model("M")
    assert str(e.value) == "model 'M' is ambiguous: several known models have that name; write 'acme/m' or 'other/m'"


def test_did_you_mean(hub):
    with pytest.raises(ModelNotFoundError) as e:
        resolve_model("google/gema-3-27b-it")
    # one insertion ('m') away from google/gemma-3-27b-it; gemma-3-12b-it is 3 edits away (insert m, 2→1, 7→2)
    assert e.value.suggestions == ["google/gemma-3-27b-it"]
    assert str(e.value).startswith("model 'google/gema-3-27b-it' not found; did you mean 'google/gemma-3-27b-it'? "
                                   "(looked in: local path, bundled catalog, Hugging Face cache ")
    assert "\n" not in str(e.value)
    # a bare name is compared with the name part: 'gema-3-27b-it' → gemma-3-27b-it (1 edit)
    with pytest.raises(ModelNotFoundError) as e:
        resolve_model("gema-3-27b-it")
    assert e.value.suggestions == ["google/gemma-3-27b-it"]
    # nothing within max(3, len // 4) edits: no suggestion, the plain message
    with pytest.raises(ModelNotFoundError) as e:
        resolve_model("foo/bar")
    assert e.value.suggestions == [] and "did you mean" not in str(e.value)


def test_edit_distance_and_suggestions():
    from kvplan.model.source import _edit_distance, suggest_ids

    assert _edit_distance("kitten", "sitting") == 3  # k→s, e→i, +g
    assert _edit_distance("", "abc") == 3 and _edit_distance("abc", "abc") == 0
    # ties at the best distance are all named; farther ones are not
    assert suggest_ids("acme/mx", ["acme/m1", "acme/m2", "acme/zzzz"]) == ["acme/m1", "acme/m2"]
    assert suggest_ids("x" * 300, ["acme/m1"]) == []


def test_cli_says_which_model_it_ran():
    from typer.testing import CliRunner

    from kvplan.cli.app import app, ensure_registered

    ensure_registered()
    r = CliRunner().invoke(app, ["simulate", "gpt-oss-20b", "--kv-cache-memory", "40GiB", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["inputs"]["model"]["id"] == "openai/gpt-oss-20b" and d["inputs"]["model"]["requested"] == "gpt-oss-20b"
    assert "model 'gpt-oss-20b' taken as 'openai/gpt-oss-20b'" in d["warnings"][0]


@pytest.mark.parametrize("env, why", [
    ({"HF_ENDPOINT": "http://127.0.0.1:9"}, "127.0.0.1:9 unreachable (ConnectionRefusedError"),  # discard port: refused
    ({"HF_HUB_OFFLINE": "1"}, "HF_HUB_OFFLINE is set"),
])
def test_download_offline_is_one_quick_line(hub, monkeypatch, env, why):
    import time

    import huggingface_hub

    def boom(*a, **k):  # pragma: no cover - the probe must stop it first (its retries take ~25 s)
        raise AssertionError("hf_hub_download called although the Hub is unreachable")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", boom)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    t0 = time.monotonic()
    with pytest.raises(KvplanError) as e:
        resolve_model("someorg/new", download=True)
    assert time.monotonic() - t0 < 2.0
    msg = str(e.value)
    assert msg.startswith(f"--download: cannot reach the Hugging Face Hub ({why}") and "\n" not in msg
    assert msg.endswith("); connect to the network, or pass a local config.json")
