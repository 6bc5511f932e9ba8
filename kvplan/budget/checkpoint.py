"""A checkpoint's own weight metadata, read without its weights: the safetensors index and headers.

A ``.safetensors`` file starts with an 8-byte little-endian length ``n``, then ``n`` bytes of
JSON: ``{tensor name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``
(the safetensors format; offsets are relative to the byte after the header). A sharded
checkpoint adds ``model.safetensors.index.json``: ``{"metadata": {"total_size": bytes},
"weight_map": {tensor name: file}}``.

``read_header`` reads one header from a local file; ``parse_header`` checks one header's JSON,
wherever it came from (a Hub checkpoint's headers are read through huggingface_hub,
``checkpoint_hub``). Every malformed input — a short file, a length past the end, a header that
is not a JSON object, a tensor without a dtype or whose offsets do not match its shape — is one
``CheckpointError`` line naming the source and the field.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass

from kvplan.errors import KvplanError

# safetensors' own limit on the header (safetensors/src/tensor.rs MAX_HEADER_SIZE: 100 MB)
MAX_HEADER_BYTES = 100_000_000
# bits per element of each safetensors dtype (safetensors Dtype; F8 variants and the 4-bit packs as stored)
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16, "F16": 16,
    "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64, "F4": 4, "F6_E2M3": 6,
    "F6_E3M2": 6, "C64": 64,
}
_LAYER = re.compile(r"\.\d+(\.|$)")
_EXPERT = re.compile(r"\.experts\.\d+\.")


class CheckpointError(KvplanError):
    """A checkpoint's metadata cannot be read (one line: where, which field, what to do)."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int


@dataclass(frozen=True)
class Header:
    source: str
    tensors: tuple[TensorInfo, ...]
    metadata: dict

    @property
    def total_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)

    def bytes_by_dtype(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.dtype] = out.get(t.dtype, 0) + t.nbytes
        return out


def header_length(prefix: bytes, source: str) -> int:
    """The header's byte count from a file's first 8 bytes."""
    if len(prefix) < 8:
        raise CheckpointError(f"{source}: {len(prefix)} bytes, shorter than the 8-byte safetensors header length; "
                              "the file is truncated or not safetensors")
    (n,) = struct.unpack("<Q", prefix[:8])
    if n < 2 or n > MAX_HEADER_BYTES:
        raise CheckpointError(f"{source}: header length {n} is outside 2..{MAX_HEADER_BYTES} bytes; "
                              "not a safetensors file")
    return n


def parse_header(raw: bytes, source: str) -> Header:
    """The tensors of a safetensors JSON header (``raw``: the ``n`` bytes after the length)."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CheckpointError(f"{source}: the safetensors header is not JSON ({e.__class__.__name__}: {e}); "
                              "the file is truncated or corrupt") from None
    if not isinstance(doc, dict):
        raise CheckpointError(f"{source}: the safetensors header is a JSON {type(doc).__name__}, not an object")
    meta = doc.pop("__metadata__", None) or {}
    tensors = []
    for name, t in doc.items():
        where = f"{source}: tensor '{name}'"
        if not isinstance(t, dict):
            raise CheckpointError(f"{where}: expected an object with dtype, shape, data_offsets")
        dtype, shape, offsets = t.get("dtype"), t.get("shape"), t.get("data_offsets")
        if dtype not in DTYPE_BITS:
            raise CheckpointError(f"{where}: dtype {dtype!r} is not a safetensors dtype ({', '.join(DTYPE_BITS)})")
        if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
            raise CheckpointError(f"{where}: shape {shape!r} is not a list of non-negative integers")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise CheckpointError(f"{where}: data_offsets {offsets!r} is not [begin, end] with begin ≤ end")
        nbytes = math.ceil(math.prod(shape) * DTYPE_BITS[dtype] / 8)
        if offsets[1] - offsets[0] != nbytes:
            raise CheckpointError(f"{where}: data_offsets span {offsets[1] - offsets[0]} bytes, but {dtype} "
                                  f"{shape} is {nbytes} bytes")
        tensors.append(TensorInfo(name, dtype, tuple(shape), nbytes))
    return Header(source, tuple(tensors), meta if isinstance(meta, dict) else {})


def read_header(path) -> Header:
    """The header of a local ``.safetensors`` file (reads only its first 8 + n bytes)."""
    from kvplan.errors import InputFileError
    from kvplan.readfile import open_binary

    source = str(path)
    try:
        with open_binary(path, "checkpoint", "", stdin=False) as f:  # a regular file: never a FIFO's wait
            n = header_length(f.read(8), source)
            raw = f.read(n)
    except InputFileError as e:
        raise CheckpointError(f"{source}: {e.problem}; {e.fix}") from None
    except OSError as e:
        raise CheckpointError(f"{source}: cannot read ({e.strerror or e})") from None
    if len(raw) < n:
        raise CheckpointError(f"{source}: the header is {n} bytes but the file ends after {len(raw)}; truncated")
    return parse_header(raw, source)


def parse_index(doc, source: str) -> tuple[int | None, dict[str, str]]:
    """``(metadata.total_size, weight_map)`` of a ``model.safetensors.index.json``."""
    if not isinstance(doc, dict) or not isinstance(doc.get("weight_map"), dict):
        raise CheckpointError(f"{source}: no 'weight_map' object; not a safetensors index")
    total = (doc.get("metadata") or {}).get("total_size")
    if total is not None and not (isinstance(total, int) and total >= 0):
        raise CheckpointError(f"{source}: metadata.total_size {total!r} is not a byte count")
    wm = doc["weight_map"]
    bad = next((k for k, v in wm.items() if not isinstance(v, str)), None)
    if bad is not None:
        raise CheckpointError(f"{source}: weight_map['{bad}'] is not a file name")
    return total, dict(wm)


def module_prefix(tensor_name: str) -> str:
    """The module a tensor belongs to, layer indices dropped: ``model.layers.3.mlp.up_proj.weight`` →
    ``model.layers``; ``model.vision_tower.encoder.layers.0.mlp...`` → ``model.vision_tower.encoder.layers``;
    a name without a layer index keeps all but its last component (``lm_head.weight`` → ``lm_head``)."""
    m = _LAYER.search(tensor_name)
    if m:
        return tensor_name[: m.start()]
    return tensor_name.rsplit(".", 1)[0] if "." in tensor_name else tensor_name


def fold_experts(tensor_name: str) -> str:
    """A tensor's name with a MoE expert's index folded (``mlp.experts.17.up_proj.weight`` →
    ``mlp.experts.*.up_proj.weight``): every expert of a layer is one entry; layer indices stay."""
    return _EXPERT.sub(".experts.*.", tensor_name)


def _bytes_by(headers, key) -> dict[str, dict[str, int]]:
    by: dict[str, dict[str, int]] = {}
    for h in headers:
        for t in h.tensors:
            d = by.setdefault(key(t.name), {})
            d[t.dtype] = d.get(t.dtype, 0) + t.nbytes
    return {k: dict(sorted(v.items())) for k, v in sorted(by.items())}


def compact_form(total_size: int | None, headers) -> dict:
    """The bundled form of a checkpoint: the index's ``total_size``, the headers' byte sum, the bytes per
    module prefix and dtype (``{prefix: {dtype: bytes}}``, sorted) and per tensor (``bytes_by_tensor``: the
    name with expert indices folded, ``fold_experts``; what ``kvplan.budget.weights`` splits per rank)."""
    by = _bytes_by(headers, module_prefix)
    tensor_bytes = sum(sum(d.values()) for d in by.values())
    return {"total_size_bytes": total_size if total_size is not None else tensor_bytes,
            "tensor_bytes": tensor_bytes, "bytes_by_module": by, "bytes_by_tensor": _bytes_by(headers, fold_experts)}
