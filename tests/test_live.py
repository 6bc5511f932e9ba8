"""`kvplan check --live` (issue 37) against a real HTTP server on 127.0.0.1 (http.server in a thread)
serving metrics text that real vLLM releases printed (tests/data/metrics/, sources in its README):
the prediction beside the server's cache_config_info, per figure; a server that disagrees exits 3."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kvplan.errors import KvplanError
from kvplan.serve.metrics import read_metrics
from kvplan.usecases.live import fetch_metrics, live_check

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "metrics"
ISSUE_28924 = DATA / "vllm-issue-28924-0.11.0.prom"
PR_29605 = DATA / "vllm-pr-29605-qwen3-0.6b.prom"


class _Server:
    """A real HTTP server on the loopback: GET /metrics answers ``body`` (``status``)."""

    def __init__(self, body: bytes, status: int = 200):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.paths.append(self.path)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.paths: list[str] = []
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def deployments(tmp_path, **entry) -> str:
    import yaml

    f = tmp_path / "d.yaml"
    f.write_text(yaml.safe_dump({"deployments": [{"name": "served", **entry}]}))
    return str(f)


def figures(server) -> dict:
    return {f["figure"]: (f["predicted"], f["served"], f["agrees"]) for f in server["figures"]}


def test_the_parser_reads_both_real_dumps():
    [a] = read_metrics(ISSUE_28924.read_text(), "issue-28924")
    [b] = read_metrics(PR_29605.read_text(), "pr-29605")
    assert (a.engine, a.value("block_size"), a.value("num_gpu_blocks"), a.value("gpu_memory_utilization")) == \
        ("0", "16", "9271", "0.65")
    assert a.value("num_cpu_blocks") is None  # vLLM wrote "None": the bug the issue reports
    assert (b.value("num_gpu_blocks"), b.value("num_cpu_blocks"), b.value("gpu_memory_utilization")) == \
        ("33676", "410", "0.8")


def test_a_server_that_agrees(tmp_path):
    # vllm#28924: vLLM 0.11.0, --gpu-memory-utilization 0.65. The issue does not name the model; the
    # deployment is a Llama-3.1-8B, whose figures kvplan compares here are the ones any full-attention
    # model gets on 0.11.0: block 16 (DEFAULT_BLOCK_SIZE), cache dtype auto, prefix caching on.
    files = deployments(tmp_path, model="meta-llama/Llama-3.1-8B-Instruct", policy="vllm==0.11.0",
                        gpu_memory_utilization=0.65)
    with _Server(ISSUE_28924.read_bytes()) as srv:
        r = live_check([files], [srv.url])
        assert srv.paths == ["/metrics"]
    [s] = r["servers"]
    f = figures(s)
    assert f["block_size"] == (16, 16, True)
    assert f["cache_dtype"] == ("auto", "auto", True)
    assert f["enable_prefix_caching"] == (True, True, True)
    assert f["gpu_memory_utilization"] == (0.65, 0.65, True)
    assert f["num_gpu_blocks"] == (None, 9271, None)  # no budget in the deployment: not predicted
    # 0.11.0 does not publish the capacity labels; kvplan's for the server's own 9271 blocks:
    # 9271 x 16 tokens = 148,336 tokens (one group), / 131,072 = 1.13171 requests of max_model_len
    assert f["kv_cache_size_tokens"] == (148336, None, None)
    assert s["agrees"] is True and r["outcome"]["ok"] is True
    assert s["matched_by"] == "the only deployment of the files"
    import jsonschema

    jsonschema.validate(dict(r), json.loads((ROOT / "docs/schema/check-live.json").read_text()))


def test_a_server_that_disagrees_exits_3(tmp_path):
    # the same server read as 0.34.0 would run it: DEFAULT_BLOCK_SIZE 64, not the 16 it serves
    files = deployments(tmp_path, model="meta-llama/Llama-3.1-8B-Instruct", policy="vllm==0.34.0",
                        gpu_memory_utilization=0.65)
    with _Server(ISSUE_28924.read_bytes()) as srv:
        r = subprocess.run([sys.executable, "-m", "kvplan.cli", "check", files, "--live", srv.url, "-f", "json"],
                           capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3, r.stderr
    [s] = json.loads(r.stdout)["servers"]
    assert figures(s)["block_size"] == (64, 16, False)
    assert "block_size predicted 64, served 16" in r.stderr


def test_a_budget_predicts_the_pool_and_the_tolerance_bounds_it(tmp_path):
    # With --kv-cache-memory 40 GiB kvplan predicts 20480 blocks (golden llama-3.1-8b__40gib__0.11.0 has
    # the same figure); the server of vllm#29605 has 33676: 64 % more, outside any small tolerance.
    golden = json.loads((ROOT / "tests/golden/llama-3.1-8b__40gib__0.11.0.json").read_text())["result"]
    assert golden["num_blocks"] == 20480
    files = deployments(tmp_path, model="meta-llama/Llama-3.1-8B-Instruct", policy="vllm==0.11.0",
                        kv_cache_memory="40GiB", gpu_memory_utilization=0.8)
    with _Server(PR_29605.read_bytes()) as srv:
        r = live_check([files], [srv.url], tolerance=5)
    f = figures(r["servers"][0])
    assert f["num_gpu_blocks"] == (20480, 33676, False)
    assert r["outcome"]["ok"] is False


def test_model_name_picks_the_deployment(tmp_path):
    text = ISSUE_28924.read_text() + 'vllm:num_requests_running{engine="0",model_name="Llama-3.1-8B-Instruct"} 0.0\n'
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n"
                 "  - {name: qwen, model: Qwen/Qwen3-8B, policy: vllm==0.11.0}\n"
                 "  - {name: llama, model: meta-llama/Llama-3.1-8B-Instruct, policy: vllm==0.11.0}\n")
    with _Server(text.encode()) as srv:
        r = live_check([str(f)], [srv.url])
    [s] = r["servers"]
    assert (s["deployment"], s["matched_by"]) == ("llama", "model_name Llama-3.1-8B-Instruct")


def test_bounded_and_refused_reads(tmp_path):
    with _Server(b"x" * 2048) as srv:
        with pytest.raises(KvplanError, match="more than 1,024 bytes"):
            fetch_metrics(srv.url, max_bytes=1024)
    with _Server(b"not found", status=404) as srv:
        with pytest.raises(KvplanError, match="answered HTTP 404"):
            fetch_metrics(srv.url)
    with _Server(b"# HELP x y\nx 1.0\n") as srv:
        files = deployments(tmp_path, model="meta-llama/Llama-3.1-8B-Instruct")
        with pytest.raises(KvplanError, match="no vllm:cache_config_info in the metrics"):
            live_check([files], [srv.url])
    with pytest.raises(KvplanError, match="expected an http"):
        fetch_metrics("file:///etc/passwd")
