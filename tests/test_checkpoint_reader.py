"""kvplan.budget.checkpoint's reader on small fabricated safetensors files: headers, an index, the compact
form, truncated and malformed headers. Reading them from the Hub (huggingface_hub, against a real HTTP server
on the loopback) is tests/test_checkpoint_download.py."""

from __future__ import annotations

import json
import re
import struct

import pytest

from factories import safetensors_file
from kvplan.budget.checkpoint import (CheckpointError, compact_form, fold_experts, module_prefix, parse_header,
                                      parse_index, read_header)

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


def _headers(tmp_path, names):
    """The headers of the fabricated files ``names``, written to ``tmp_path`` and read back."""
    out = []
    for name in names:
        p = tmp_path / name.rsplit("/", 1)[-1]
        p.write_bytes(FILES[name])
        out.append(read_header(p))
    return out


def test_sharded_checkpoint_headers(tmp_path):
    total, wm = parse_index(json.loads(INDEX), "index.json")
    headers = _headers(tmp_path, [f"/sharded/{f}" for f in sorted(set(wm.values()))])
    # 2 · 1000·64 BF16 (256,000 B) + 4·64·32 U8 (8,192) + 4·64·2 U8 (512) + 64 F32 (256) = 264,960 B
    assert total == sum(h.total_bytes for h in headers) == 264_960
    names = {t.name: t for h in headers for t in h.tensors}
    assert names["model.layers.0.mlp.experts.w"].shape == (4, 64, 32)
    assert names["model.norm.weight"].nbytes == 256
    assert headers[0].bytes_by_dtype() == {"BF16": 128_000, "U8": 8_704}


def test_compact_form_of_the_sharded_checkpoint(tmp_path):
    """The bundled form (kvplan/budget/checkpoint.py compact_form) of the sharded checkpoint above: bytes per module
    prefix (layer indices dropped) and dtype, summed over both headers; the figures are the shapes × dtype
    sizes written beside SHARD1/SHARD2."""
    total, wm = parse_index(json.loads(INDEX), "index.json")
    c = compact_form(total, _headers(tmp_path, [f"/sharded/{f}" for f in sorted(set(wm.values()))]))
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


@pytest.mark.parametrize("path, message", [
    ("/short.safetensors", "3 bytes, shorter than the 8-byte safetensors header length"),
    ("/cut.safetensors", "the header is 500 bytes but the file ends after 22; truncated"),
    ("/huge.safetensors", "header length 1099511627776 is outside 2..100000000 bytes"),
    ("/notjson.safetensors", "the safetensors header is not JSON"),
    ("/badoffsets.safetensors", "tensor 'w': data_offsets span 30 bytes, but BF16 [4, 4] is 32 bytes"),
])
def test_bad_files_are_one_line(tmp_path, path, message):
    p = tmp_path / path.lstrip("/")
    p.write_bytes(FILES[path])
    with pytest.raises(CheckpointError) as e:
        read_header(p)
    assert message in e.value.message and "\n" not in e.value.message
    assert e.value.message.startswith(str(p))


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
