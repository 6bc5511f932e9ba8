"""``--download`` reads a Hub checkpoint's index and safetensors headers, never its weights
(kvplan/budget/checkpoint_hub.py), against a fake Hub: a real HTTP server on the loopback (http.server in a
thread; no mock of huggingface_hub or urllib) that answers as the Hub does.

* ``/{org}/{name}/resolve/{main|commit}/{file}``: HEAD and GET with the headers hf_hub_download 2.4.0 reads
  (file_download.get_hf_file_metadata: X-Repo-Commit, ETag / X-Linked-Etag, Content-Length / X-Linked-Size);
  a missing file is 404 with ``X-Error-Code: EntryNotFound``, a gated repository without its token 401 with
  ``X-Error-Code: GatedRepo`` (utils/_http.hf_raise_for_status).
* a ``.safetensors`` file (an LFS file on the Hub) is a 302 to the CDN, here ``localhost`` instead of
  ``127.0.0.1``: another host, so the user's token must not follow; the CDN answers ranges with 206.

kvplan is pointed at it with ``HF_ENDPOINT`` and a temporary ``HF_HOME``. Every request is logged; the tests
assert that each request for a ``.safetensors`` file carried a Range header and that no file was sent whole:
huggingface_hub reads a header with one range request of the first 100,000 bytes (``bytes=0-100000``,
hf_api.parse_safetensors_file_metadata in 2.4.0), a second one only for a longer header.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from factories import loopback_server, safetensors_file, tiny_llama_config, tiny_llama_layer

ROOT = Path(__file__).resolve().parent.parent
COMMIT = "c0ffee00" * 5
TOKEN = "hf_kvplantesttoken"

# A Llama of 2 layers, hidden 64, 4 query heads and 2 KV heads of 16, MLP 128, vocabulary 256, untied, bf16.
CONFIG = tiny_llama_config(2, 256)
layer = tiny_llama_layer


SHARD_TENSORS = ({"model.embed_tokens.weight": ("BF16", [256, 64]), **layer(0)},
                 {**layer(1), "model.norm.weight": ("BF16", [64]), "lm_head.weight": ("BF16", [256, 64])})
# Per layer: q 64·64 + k 32·64 + v 32·64 + o 64·64 = 12,288; gate, up, down 3 · 128·64 = 24,576; two norms 128:
# 36,992 parameters. Embedding and lm_head 2 · 256·64 = 32,768, final norm 64: 32,768 + 2 · 36,992 + 64 =
# 106,816 parameters, 2 bytes each (bf16) = 213,632 B: the headers' sum, the index's total_size and kvplan's
# formula count of this config (stored_bytes) alike. The budget's weights add the rotary table every rank holds
# (kvplan.budget.rotary: max_position_embeddings 2,048 rows of the 16-wide head, bf16), not a checkpoint tensor.
TINY_BYTES = 2 * (2 * 256 * 64 + 2 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 128 * 64 + 2 * 64) + 64)
ROTARY = 2_048 * 16 * 2
SHARDS = {f"model-0000{i + 1}-of-00002.safetensors": safetensors_file(t) for i, t in enumerate(SHARD_TENSORS)}
INDEX = json.dumps({"metadata": {"total_size": TINY_BYTES},
                    "weight_map": {name: f for f, t in zip(SHARDS, SHARD_TENSORS) for name in t}}).encode()
# The single-file repository also stores a 1,000-element bf16 tensor kvplan does not model: 2,000 B more.
SINGLE = safetensors_file({**SHARD_TENSORS[0], **SHARD_TENSORS[1], "model.extra.weight": ("BF16", [1000])})
CUT = struct.pack("<Q", 500) + b'{"lm_head.weight": {"dtype": "BF16"'  # a header of 500 B that ends after 35
CFG = json.dumps(CONFIG).encode()

REPOS = {
    "kvtest/tiny-llama": {"config.json": CFG, "model.safetensors.index.json": INDEX, **SHARDS},
    "kvtest/tiny-single": {"config.json": CFG, "model.safetensors": SINGLE},
    "kvtest/tiny-gguf": {"config.json": CFG, "tiny-Q4_K_M.gguf": b"GGUF" + b"\0" * 4096},
    "kvtest/tiny-cut": {"config.json": CFG, "model.safetensors": CUT},
    "kvtest/tiny-gated": {"config.json": CFG, "model.safetensors.index.json": INDEX, **SHARDS},
    "kvtest/tiny-gated-weights": {"config.json": CFG, "model.safetensors": SINGLE},
}
GATED = {"kvtest/tiny-gated": "all", "kvtest/tiny-gated-weights": ".safetensors"}
LOG: list[dict] = []
LOCK = threading.Lock()


FIRST_READ = 100_001  # huggingface_hub's first range request of a safetensors file: bytes=0-100000


def header_span(body: bytes) -> int:
    """8 + the header's length: the bytes a safetensors file's header takes."""
    return 8 + struct.unpack("<Q", body[:8])[0]


class FakeHub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def do_HEAD(self):
        self.answer(head=True)

    def do_GET(self):
        self.answer(head=False)

    def send(self, code: int, headers: dict, body: bytes = b"", head: bool = False, entry: dict | None = None):
        self.send_response(code)
        for k, v in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(k, v)
        self.end_headers()
        if entry is not None:  # counted before the write: the client may close as soon as it has read
            with LOCK:
                entry["sent"] = 0 if head else len(body)
        if not head and body:
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

    def answer(self, head: bool):
        host = self.headers.get("Host", "").split(":")[0]
        entry = {"method": self.command, "host": host, "path": self.path, "range": self.headers.get("Range"),
                 "auth": self.headers.get("Authorization"), "status": None, "sent": 0}
        with LOCK:
            LOG.append(entry)
        m = re.fullmatch(r"/cdn/([^/]+/[^/]+)/(.+)", self.path)
        if m:
            return self.serve_bytes(REPOS[m.group(1)][m.group(2)], head, entry, {})
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", self.path)
        if not m or m.group(1) not in REPOS or m.group(2) not in ("main", COMMIT):
            entry["status"] = 404
            return self.send(404, {"X-Error-Code": "RepoNotFound"}, head=head, entry=entry)
        repo, file = m.group(1), m.group(3)
        gated = GATED.get(repo)
        if gated and (gated == "all" or file.endswith(gated)) and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            entry["status"] = 401
            return self.send(401, {"X-Error-Code": "GatedRepo", "X-Error-Message": f"Access to model {repo} is "
                                   "restricted. You must have access to it and be authenticated to access it."},
                             head=head, entry=entry)
        body = REPOS[repo].get(file)
        common = {"X-Repo-Commit": COMMIT, "ETag": f'"{abs(hash((repo, file))):x}"'}
        if body is None:
            entry["status"] = 404
            return self.send(404, {**common, "X-Error-Code": "EntryNotFound"}, head=head, entry=entry)
        if file.endswith((".safetensors", ".gguf")):  # an LFS file: the Hub redirects to its CDN, another host
            port = self.server.server_address[1]
            entry["status"] = 302
            return self.send(302, {**common, "X-Linked-Size": str(len(body)), "X-Linked-Etag": f'"{len(body)}"',
                                   "Location": f"http://localhost:{port}/cdn/{repo}/{file}"}, head=head, entry=entry)
        return self.serve_bytes(body, head, entry, common)

    def serve_bytes(self, body: bytes, head: bool, entry: dict, headers: dict):
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range") or "")
        if m and not head:
            first, last = int(m.group(1)), min(int(m.group(2)), len(body) - 1)
            entry["status"] = 206
            return self.send(206, {**headers, "Content-Range": f"bytes {first}-{last}/{len(body)}"},
                             body[first:last + 1], entry=entry)
        entry["status"] = 200
        if head:  # Content-Length of the whole file, no body
            self.send_response(200)
            for k, v in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(k, v)
            self.end_headers()
            return None
        return self.send(200, headers, body, entry=entry)


@pytest.fixture(scope="module")
def hub_server():
    with loopback_server(FakeHub) as url:
        yield url


@pytest.fixture
def hub(hub_server, tmp_path, monkeypatch):
    """The fake Hub as kvplan's Hub (HF_ENDPOINT), an empty HF_HOME; no token unless a test sets one."""
    for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE",
              "HF_TOKEN_PATH", "HF_ENDPOINT", "HF_HOME"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", hub_server)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))
    from kvplan.budget import checkpoint_hub

    checkpoint_hub._fetch.cache_clear()  # each test starts with nothing fetched in this process
    with LOCK:
        LOG.clear()
    return hub_server


def safetensors_requests() -> list[dict]:
    with LOCK:
        return [e for e in LOG if ".safetensors" in e["path"] and not e["path"].endswith(".json")]


def assert_no_weights_sent(repo: str) -> None:
    """Each request for a .safetensors file carried a Range header; each file served its first read (its header
    within it) and never whole: every shard here is longer than 100,001 bytes (see SHARDS and SINGLE)."""
    reqs = safetensors_requests()
    assert reqs and all(e["range"] for e in reqs), reqs
    for file, body in REPOS[repo].items():
        if file.endswith(".safetensors"):
            sent = sum(e["sent"] for e in reqs if e["path"].endswith(f"{repo}/{file}"))
            assert header_span(body) <= sent == FIRST_READ < len(body), (file, sent)


def budget(repo: str) -> dict:
    from kvplan.api import simulate

    return simulate(repo, download=True, gpu="H100-80GB")["budget"]


def test_sharded_repo_weights_from_downloaded_headers(hub):
    b = budget("kvtest/tiny-llama")
    assert b["weights_bytes"] - ROTARY == TINY_BYTES == 213_632
    assert b["weights_source"] == "checkpoint metadata"
    assert b["weights_basis"].startswith(f"from checkpoint metadata: total_size 213,632 B (downloaded headers, "
                                         f"kvtest/tiny-llama@{COMMIT})")
    assert_no_weights_sent("kvtest/tiny-llama")
    # the Hub's requests: the index (a small JSON file, whole), then each shard's first 100,000 bytes
    hub_gets = [(e["path"].rsplit("/", 1)[-1], e["range"]) for e in LOG if e["method"] == "GET"
                and "resolve" in e["path"] and not e["path"].endswith("config.json")]
    assert hub_gets == [("model.safetensors.index.json", None)] + [(f, "bytes=0-100000") for f in SHARDS]
    stored = Path(os.environ["HF_HOME"], "hub", "models--kvtest--tiny-llama", "kvplan", f"{COMMIT}.checkpoint.json")
    doc = json.loads(stored.read_text())
    assert doc["total_size_bytes"] == doc["tensor_bytes"] == 213_632
    # bytes per module prefix and dtype: embedding, lm_head 256·64·2 = 32,768 each; layers 2 · 36,992 · 2
    assert doc["bytes_by_module"] == {"lm_head": {"BF16": 32_768}, "model.embed_tokens": {"BF16": 32_768},
                                      "model.layers": {"BF16": 147_968}, "model.norm": {"BF16": 128}}
    assert doc["provenance"]["files"] == ["model.safetensors.index.json", *SHARDS]


def test_a_later_offline_run_reads_the_stored_metadata(hub, monkeypatch):
    budget("kvtest/tiny-llama")
    with LOCK:
        LOG.clear()
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: any request would fail
    from kvplan.api import simulate

    b = simulate("kvtest/tiny-llama", gpu="H100-80GB")["budget"]  # no --download: the HF cache, offline
    assert b["weights_bytes"] == 213_632 + ROTARY and b["weights_source"] == "checkpoint metadata"
    assert f"(downloaded headers, kvtest/tiny-llama@{COMMIT})" in b["weights_basis"]
    assert LOG == []


def test_a_cached_config_without_stored_metadata_is_completed_by_download(hub):
    """A config already in the HF cache (downloaded earlier, by kvplan or hf) whose stored metadata is missing or
    not kvplan's resolves offline; with --download the headers are fetched for it all the same (and stored
    again), without --download the weights say how to get them."""
    from kvplan.api import simulate

    budget("kvtest/tiny-llama")
    stored = Path(os.environ["HF_HOME"], "hub", "models--kvtest--tiny-llama", "kvplan", f"{COMMIT}.checkpoint.json")
    stored.write_text('{"version": 1, "total_size_bytes": "213632"}')  # not what kvplan writes: not read
    b = simulate("kvtest/tiny-llama", gpu="H100-80GB")["budget"]
    assert b["weights_source"] == "analytic count from the config"
    assert b["weights_basis"].endswith("no checkpoint metadata: none read: the Hugging Face cache holds no "
                                       "safetensors index or headers of kvtest/tiny-llama; add --download to read "
                                       "them (range requests, no weights)")
    from kvplan.budget import checkpoint_hub

    checkpoint_hub._fetch.cache_clear()  # as a new process would
    with LOCK:
        LOG.clear()
    assert budget("kvtest/tiny-llama")["weights_source"] == "checkpoint metadata"
    assert json.loads(stored.read_text())["total_size_bytes"] == 213_632  # rewritten
    assert not any(e["path"].endswith("config.json") for e in LOG)  # the config came from the cache
    assert_no_weights_sent("kvtest/tiny-llama")


def test_single_file_repo_without_an_index(hub):
    b = budget("kvtest/tiny-single")
    # the index is 404: model.safetensors's header is the metadata; it holds the tiny Llama's 213,632 B and a
    # 1,000-element bf16 tensor kvplan does not model (2,000 B), added whole to the rank
    assert b["weights_bytes"] == 213_632 + 2_000 + ROTARY
    assert "the 2,000 B of 1 module(s) kvplan does not model (model.extra first) whole on every rank" \
        in b["weights_basis"]
    assert_no_weights_sent("kvtest/tiny-single")
    assert [e["status"] for e in LOG if e["path"].endswith("model.safetensors.index.json")] == [404]


def test_gated_repo_with_token_sends_it_to_the_hub_only(hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    b = budget("kvtest/tiny-gated")
    assert b["weights_bytes"] == 213_632 + ROTARY and b["weights_source"] == "checkpoint metadata"
    assert_no_weights_sent("kvtest/tiny-gated")
    assert {e["auth"] for e in LOG if e["host"] == "127.0.0.1"} == {f"Bearer {TOKEN}"}
    assert {e["auth"] for e in LOG if e["host"] == "localhost"} == {None}  # the CDN never sees the token


def test_gated_repo_without_token_is_one_line(hub):
    from kvplan.errors import KvplanError

    with pytest.raises(KvplanError) as e:
        budget("kvtest/tiny-gated")
    assert "\n" not in e.value.message
    assert "could not download config.json of 'kvtest/tiny-gated'" in e.value.message
    assert "GatedRepoError" in e.value.message and "HF_TOKEN" in e.value.message


@pytest.mark.parametrize("repo, reason", [
    ("kvtest/tiny-gated-weights", f"kvtest/tiny-gated-weights@{COMMIT}: model.safetensors: HTTP 401 Unauthorized "
     "(GatedRepoError); check the id, the revision and HF_TOKEN for gated repositories; no token found: accept "
     "the model's licence on the Hub, then set HF_TOKEN or run 'hf auth login'"),
    ("kvtest/tiny-gguf", f"kvtest/tiny-gguf@{COMMIT}: model.safetensors.index.json, model.safetensors: neither is "
     "there (HTTP 404), no safetensors headers to read (a GGUF or .bin-only repository?); pass a local "
     "safetensors checkpoint for exact weights"),
    # the header says 500 bytes, the file ends 35 bytes after the length: huggingface_hub's second read gets 35
    ("kvtest/tiny-cut", f"kvtest/tiny-cut@{COMMIT}: model.safetensors: header is not json-encoded string "
     "(huggingface_hub SafetensorsParsingError); a truncated or malformed safetensors file"),
])
def test_unreadable_headers_keep_the_formula_with_the_reason(hub, repo, reason):
    b = budget(repo)
    # kvplan's formula count of the tiny Llama (derivation at TINY_BYTES)
    assert b["weights_bytes"] == 213_632 + ROTARY and b["weights_source"] == "analytic count from the config"
    line = "--download could not read the checkpoint's headers, the weights are kvplan's formula: " + reason
    assert line in b["warnings"]
    assert b["weights_basis"].endswith("no checkpoint metadata: " + line)
    assert not (Path(os.environ["HF_HOME"]) / "hub" / f"models--{repo.replace('/', '--')}" / "kvplan").exists()
    assert all(e["range"] for e in safetensors_requests())


def test_cli_end_to_end_in_a_subprocess(hub, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KVPLAN_CACHE_DIR": str(tmp_path / "kvplan-cache")}
    cmd = [sys.executable, "-m", "kvplan.cli", "simulate", "kvtest/tiny-llama", "--download", "--gpu", "H100-80GB",
           "--format", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)["budget"]
    assert b["weights_bytes"] == 213_632 + ROTARY and b["weights_source"] == "checkpoint metadata"
    assert f"downloaded headers, kvtest/tiny-llama@{COMMIT}" in b["weights_basis"]
    assert_no_weights_sent("kvtest/tiny-llama")
    # a repository without safetensors: exit 0, the formula, the reason among the warnings, no traceback
    r = subprocess.run(cmd[:4] + ["kvtest/tiny-gguf"] + cmd[5:], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    out = json.loads(r.stdout)
    assert out["budget"]["weights_source"] == "analytic count from the config"
    assert [w for w in out["warnings"] if "could not read the checkpoint's headers" in w] == [
        "--download could not read the checkpoint's headers, the weights are kvplan's formula: "
        f"kvtest/tiny-gguf@{COMMIT}: model.safetensors.index.json, model.safetensors: neither is there (HTTP 404), "
        "no safetensors headers to read (a GGUF or .bin-only repository?); pass a local safetensors checkpoint "
        "for exact weights"]


def test_no_server_is_one_line(hub):  # slow (tests/conftest.py): huggingface_hub retries 5 times, 23 s in all
    """Nothing listens at the endpoint (the Hub went away after config.json): huggingface_hub's connection error,
    after its retries, is one CheckpointError line, not a fall-back to model.safetensors."""
    import socket

    from kvplan.budget import checkpoint_hub
    from kvplan.budget.checkpoint import CheckpointError

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(CheckpointError) as e:
        checkpoint_hub._fetch("kvtest/tiny-llama", COMMIT, f"http://127.0.0.1:{port}")
    assert e.value.message.startswith(f"kvtest/tiny-llama@{COMMIT}: model.safetensors.index.json: cannot connect (")
    assert e.value.message.endswith("); check the network or drop --download") and "\n" not in e.value.message
