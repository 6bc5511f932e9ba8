"""kvplan.budget.checkpoint against a real HTTP server on 127.0.0.1 (http.server in a thread, with
Range support) serving small fabricated safetensors files: partial content, a server without
range support, errors, truncated headers. The weights are never transferred: the test counts
the bytes the server sent."""

from __future__ import annotations

import json
import re
import struct
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from factories import loopback_server, safetensors_file
from kvplan.budget.checkpoint import (CheckpointError, compact_form, fetch_checkpoint, fetch_header, fold_experts,
                                      module_prefix, parse_header, parse_index, read_header)

LOCK = threading.Lock()
WEIGHT_BYTES = 1 << 20  # each fabricated file carries 1 MiB of "weights" after its header


SHARD1 = safetensors_file({"model.embed_tokens.weight": ("BF16", [1000, 64]),
                           "model.layers.0.mlp.experts.w": ("U8", [4, 64, 32]),
                           "model.layers.0.mlp.experts.scales": ("U8", [4, 64, 2])}, data_bytes=WEIGHT_BYTES)
SHARD2 = safetensors_file({"lm_head.weight": ("BF16", [1000, 64]), "model.norm.weight": ("F32", [64])},
                          data_bytes=WEIGHT_BYTES)
INDEX = json.dumps({"metadata": {"total_size": 2 * 1000 * 64 * 2 + 4 * 64 * 32 + 4 * 64 * 2 + 64 * 4},
                    "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                                   "model.layers.0.mlp.experts.w": "model-00001-of-00002.safetensors",
                                   "model.layers.0.mlp.experts.scales": "model-00001-of-00002.safetensors",
                                   "lm_head.weight": "model-00002-of-00002.safetensors",
                                   "model.norm.weight": "model-00002-of-00002.safetensors"}}).encode()
FILES = {
    "/sharded/model.safetensors.index.json": INDEX,
    "/sharded/model-00001-of-00002.safetensors": SHARD1,
    "/sharded/model-00002-of-00002.safetensors": SHARD2,
    "/single/model.safetensors": SHARD2,
    "/short.safetensors": b"\x10\x00\x00",  # 3 bytes: not even the length
    "/cut.safetensors": struct.pack("<Q", 500) + b'{"a": {"dtype": "BF16"',  # the header ends early
    "/huge.safetensors": struct.pack("<Q", 1 << 40) + b"{}",  # a length no header has
    "/notjson.safetensors": struct.pack("<Q", 4) + b"\xff\xfe{}",
    "/badoffsets.safetensors": (lambda raw: struct.pack("<Q", len(raw)) + raw)(
        json.dumps({"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 30]}}).encode()),
}


class Handler(BaseHTTPRequestHandler):
    sent = 0  # body bytes handed to the socket, over all requests (class-wide)
    ranges = True

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        path = self.path
        if path.startswith("/norange"):
            path, ranges = path[len("/norange"):], False
        else:
            ranges = True
        if path == "/error":
            self.send_error(500, "Internal Server Error")
            return
        body = FILES.get(path)
        if body is None:
            self.send_error(404, "Not Found")
            return
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        if ranges and m:
            first, last = int(m.group(1)), min(int(m.group(2)), len(body) - 1)
            if first >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.end_headers()
                return
            part = body[first:last + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {first}-{last}/{len(body)}")
        else:
            part = body
            self.send_response(200)
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        # Counted before the write: the client may read the last byte and the test assert on
        # ``sent`` before this thread runs again (CI saw 731 of 940 bytes counted).
        with LOCK:
            type(self).sent += len(part)
        try:
            self.wfile.write(part)
        except (BrokenPipeError, ConnectionResetError):  # the client read what it needed and closed
            pass


@pytest.fixture(scope="module")
def server():
    with loopback_server(Handler) as url:
        yield url


def test_sharded_checkpoint_headers_by_range_requests(server):
    Handler.sent = 0
    ck = fetch_checkpoint(server + "/sharded/")
    # 2 · 1000·64 BF16 (256,000 B) + 4·64·32 U8 (8,192) + 4·64·2 U8 (512) + 64 F32 (256) = 264,960 B
    assert ck["total_size"] == ck["tensor_bytes"] == 264_960
    names = {t.name: t for h in ck["headers"] for t in h.tensors}
    assert names["model.layers.0.mlp.experts.w"].shape == (4, 64, 32)
    assert names["model.norm.weight"].nbytes == 256
    assert ck["headers"][0].bytes_by_dtype() == {"BF16": 128_000, "U8": 8_704}
    # only the index and the two headers crossed the wire, never the 2 MiB of weights
    headers = sum(8 + struct.unpack("<Q", FILES[f"/sharded/model-0000{i}-of-00002.safetensors"][:8])[0]
                  for i in (1, 2))
    assert Handler.sent == len(INDEX) + headers


def test_compact_form_of_the_fetched_checkpoint(server):
    """The bundled form (kvplan/budget/checkpoint.py compact_form) of the sharded checkpoint above: bytes per module
    prefix (layer indices dropped) and dtype, summed over both headers; the figures are the shapes × dtype
    sizes written beside SHARD1/SHARD2."""
    ck = fetch_checkpoint(server + "/sharded/")
    c = compact_form(ck["total_size"], ck["headers"])
    assert c == {"total_size_bytes": 264_960, "tensor_bytes": 264_960, "bytes_by_module": {
        "lm_head": {"BF16": 128_000}, "model.embed_tokens": {"BF16": 128_000},
        "model.layers": {"U8": 4 * 64 * 32 + 4 * 64 * 2}, "model.norm": {"F32": 256}},
        # per tensor (expert indices folded, none here), what the per-rank split reads
        "bytes_by_tensor": {"lm_head.weight": {"BF16": 128_000}, "model.embed_tokens.weight": {"BF16": 128_000},
                            "model.layers.0.mlp.experts.scales": {"U8": 4 * 64 * 2},
                            "model.layers.0.mlp.experts.w": {"U8": 4 * 64 * 32}, "model.norm.weight": {"F32": 256}}}


def test_fold_experts_keeps_layers_and_folds_expert_indices():
    assert fold_experts("model.layers.3.mlp.experts.17.up_proj.weight") == "model.layers.3.mlp.experts.*.up_proj.weight"
    assert fold_experts("model.layers.3.mlp.shared_experts.up_proj.weight") == \
        "model.layers.3.mlp.shared_experts.up_proj.weight"
    assert fold_experts("model.layers.0.mlp.experts.gate_up_proj_blocks") == "model.layers.0.mlp.experts.gate_up_proj_blocks"


def test_module_prefix_drops_layer_indices():
    assert module_prefix("model.layers.3.mlp.up_proj.weight") == "model.layers"
    assert module_prefix("model.vision_tower.encoder.layers.26.mlp.fc2.bias") == "model.vision_tower.encoder.layers"
    assert module_prefix("model.vision_tower.std_bias") == "model.vision_tower"


def test_single_file_checkpoint_without_an_index(server):
    ck = fetch_checkpoint(server + "/single/")
    assert ck["total_size"] is None and ck["tensor_bytes"] == 128_000 + 256


def test_server_without_range_support_is_read_only_as_far_as_needed(server):
    h = fetch_header(server + "/norange/single/model.safetensors")
    assert h.total_bytes == 128_256 and h.metadata == {"format": "pt"}


@pytest.mark.parametrize("path, message", [
    ("/short.safetensors", "3 bytes, shorter than the 8-byte safetensors header length"),
    ("/cut.safetensors", "the header is 500 bytes but the server sent 22; truncated file"),
    ("/huge.safetensors", "header length 1099511627776 is outside 2..100000000 bytes"),
    ("/notjson.safetensors", "the safetensors header is not JSON"),
    ("/badoffsets.safetensors", "tensor 'w': data_offsets span 30 bytes, but BF16 [4, 4] is 32 bytes"),
    ("/missing.safetensors", "HTTP 404 Not Found"),
    ("/error", "HTTP 500 Internal Server Error"),
])
def test_bad_files_and_errors_are_one_line(server, path, message):
    with pytest.raises(CheckpointError) as e:
        fetch_header(server + path)
    assert message in e.value.message and "\n" not in e.value.message
    assert e.value.message.startswith(server + path)


def test_connection_refused_is_one_line():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(CheckpointError, match="cannot connect"):
        fetch_header(f"http://127.0.0.1:{port}/model.safetensors", timeout=2)


def test_local_file_header(tmp_path):
    p = tmp_path / "model.safetensors"
    p.write_bytes(SHARD1)
    h = read_header(p)
    assert h.total_bytes == 128_000 + 8_192 + 512
    (tmp_path / "cut.safetensors").write_bytes(FILES["/cut.safetensors"])
    with pytest.raises(CheckpointError, match="ends after 22; truncated"):
        read_header(tmp_path / "cut.safetensors")


@pytest.mark.parametrize("doc, message", [
    ([], "no 'weight_map' object"),
    ({"weight_map": {"a": 3}}, "weight_map['a'] is not a file name"),
    ({"weight_map": {}, "metadata": {"total_size": "12"}}, "metadata.total_size '12' is not a byte count"),
])
def test_bad_index(doc, message):
    with pytest.raises(CheckpointError, match=re.escape(message)):
        parse_index(doc, "index.json")


def test_unknown_dtype():
    with pytest.raises(CheckpointError, match="dtype 'Q4' is not a safetensors dtype"):
        parse_header(json.dumps({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 1]}}).encode(), "x")
