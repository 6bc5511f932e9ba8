"""Paths into a model cache are read as the repository they name (issue 39), in the model resolver
and through `vllm`, `check` and `explain-log`. The ModelScope path is the one a public note runs
(tests/data/traps/modelscope-vl-cache-path.sh, tests/data/traps/README.md);
the Hugging Face snapshot path is vLLM's own form of a cached model's path (``snapshot_download``)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvplan.errors import ModelNotFoundError
from kvplan.model.source import cache_repo, resolve_model

ROOT = Path(__file__).resolve().parents[1]
SHA = "0123456789abcdef0123456789abcdef01234567"
SERVER_SNAPSHOT = f"/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/{SHA}"


def test_cache_paths_name_their_repository():
    assert cache_repo(SERVER_SNAPSHOT) == ("Qwen/Qwen3-8B", SHA, "Hugging Face")
    assert cache_repo(SERVER_SNAPSHOT + "/config.json") == ("Qwen/Qwen3-8B", SHA, "Hugging Face")
    assert cache_repo("/data/hub/models--gpt2") == ("gpt2", None, "Hugging Face")
    assert cache_repo("/data/hub/models--Qwen--Qwen3-8B/blobs/abc") is None
    assert cache_repo("/root/.cache/modelscope/hub/models/Qwen/Qwen2___5-VL-7B-Instruct") == (
        "Qwen/Qwen2.5-VL-7B-Instruct", None, "ModelScope")
    assert cache_repo("~/.cache/modelscope/hub/qwen/Qwen2___5-7B") == ("qwen/Qwen2.5-7B", None, "ModelScope")
    assert cache_repo("/models/Qwen3-8B") is None


def test_a_server_snapshot_is_read_as_the_bundled_model():
    src = resolve_model(SERVER_SNAPSHOT)
    assert (src.model_id, src.kind, src.requested) == ("Qwen/Qwen3-8B", "catalog", SERVER_SNAPSHOT)
    assert "Hugging Face cache folder of 'Qwen/Qwen3-8B'" in src.note and "may differ" in src.note


def test_a_snapshot_on_this_machine_is_read_from_its_own_config(tmp_path, monkeypatch):
    repo = tmp_path / "hub" / "models--Qwen--Qwen3-8B"
    snap = repo / "snapshots" / SHA
    snap.mkdir(parents=True)
    shutil.copy(ROOT / "configs" / "Qwen" / "Qwen3-8B" / "config.json", snap / "config.json")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(SHA)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    here = resolve_model(str(snap))
    assert (here.model_id, here.kind, here.revision, here.path) == ("Qwen/Qwen3-8B", "hf-cache", SHA,
                                                                    str(snap / "config.json"))
    # the server's path to the same snapshot: read from this machine's cache at that commit
    there = resolve_model(SERVER_SNAPSHOT)
    assert (there.model_id, there.kind, there.revision) == ("Qwen/Qwen3-8B", "hf-cache", SHA)


def test_a_modelscope_folder_on_this_machine_keeps_its_config(tmp_path):
    folder = tmp_path / ".cache" / "modelscope" / "hub" / "models" / "Qwen" / "Qwen2___5-7B"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "configs" / "Qwen" / "Qwen2.5-7B" / "config.json", folder / "config.json")
    src = resolve_model(str(folder))
    assert (src.model_id, src.kind, src.path) == ("Qwen/Qwen2.5-7B", "local", str(folder / "config.json"))


def test_an_unknown_cached_repository_names_the_fix():
    with pytest.raises(ModelNotFoundError) as e:
        resolve_model(f"/x/hub/models--Foo--Bar/snapshots/{SHA}")
    assert "cache folder of 'Foo/Bar'" in e.value.message and "--model-map" in e.value.message


def _kvplan(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "kvplan.cli", *args, "--format", "json"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert out.returncode in (0, 3), out.stderr
    return json.loads(out.stdout)


def test_the_published_modelscope_line_names_its_repository():
    from kvplan.serve import parse_line

    text = (ROOT / "tests" / "data" / "traps" / "modelscope-vl-cache-path.sh").read_text()
    model = parse_line(text[text.index("vllm serve"):]).argv[0]
    assert cache_repo(model) == ("Qwen/Qwen2.5-VL-7B-Instruct", None, "ModelScope")


def test_vllm_line_with_a_modelscope_path():
    line = "vllm serve /root/.cache/modelscope/hub/models/Qwen/Qwen2___5-7B --max-model-len 4096"
    got = _kvplan("vllm", "--gpu", "H100-80GB", "--line", line)
    assert got["inputs"]["model"]["id"] == "Qwen/Qwen2.5-7B"


def test_check_file_with_a_snapshot_path(tmp_path):
    f = tmp_path / "d.yaml"
    f.write_text(f"deployments:\n  - name: q\n    model: {SERVER_SNAPSHOT}\n    kv_cache_memory: 20GiB\n"
                 "    max_model_len: 4096\n")
    got = _kvplan("check", str(f))
    assert "Qwen/Qwen3-8B" in json.dumps(got)


def test_explain_log_with_a_snapshot_path(tmp_path):
    log = tmp_path / "v.log"
    log.write_text(f"INFO 10-03 16:22:17 [utils.py:253] non-default args: {{'model': '{SERVER_SNAPSHOT}', "
                   "'max_model_len': 4096}\n"
                   "INFO 10-03 16:22:40 [gpu_worker.py:298] Available KV cache memory: 20.0 GiB\n")
    got = _kvplan("explain-log", str(log))
    assert got["inputs"]["model"]["id"] == "Qwen/Qwen3-8B"
    assert got["verdict"].startswith("re-simulated")
