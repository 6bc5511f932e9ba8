"""A checkpoint's own weight metadata, read without its weights: the safetensors index and headers.

A ``.safetensors`` file starts with an 8-byte little-endian length ``n``, then ``n`` bytes of
JSON: ``{tensor name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``
(the safetensors format; offsets are relative to the byte after the header). A sharded
checkpoint adds ``model.safetensors.index.json``: ``{"metadata": {"total_size": bytes},
"weight_map": {tensor name: file}}``.

``read_header`` reads one header from a local file, ``fetch_header`` from a URL with two HTTP
range requests (``bytes=0-7``, then the header's bytes), as hf-mem does: the weights are never
transferred. ``fetch_json`` reads an index. kvplan is offline by default: these run only where
the user asked for the network (``--download``). Every malformed input — a short file, a
length past the end, a header that is not a JSON object, a tensor without a dtype or whose
offsets do not match its shape — is one ``CheckpointError`` line naming the source and the field.
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
HTTP_TIMEOUT_S = 30.0
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


def _opener():
    """urllib's opener, with a redirect handler that drops the Authorization header when a redirect leaves the
    host (the Hub sends a weight file's range request on to its CDN with a signed URL, which must not see the
    user's token: the rule requests and httpx follow)."""
    import urllib.request
    from urllib.parse import urlsplit

    class SameHostAuth(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            if new is not None and urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
                new.remove_header("Authorization")
            return new

    return urllib.request.build_opener(SameHostAuth)


def _get_range(url: str, first: int, last: int, *, timeout: float, headers: dict | None = None) -> bytes:
    """Bytes ``first..last`` of ``url`` (HTTP Range; redirects followed, ``headers`` sent along, Authorization
    only to the first host). A server that ignores the range (200) is read only as far as needed; any HTTP or
    network error is one line."""
    import urllib.error
    import urllib.request

    want = last - first + 1
    req = urllib.request.Request(url, headers={**(headers or {}), "Range": f"bytes={first}-{last}",
                                               "User-Agent": "kvplan"})
    try:
        with _opener().open(req, timeout=timeout) as r:  # noqa: S310 - the user's --download URL
            if r.status == 206:
                return r.read(want + 1)[:want] if want else b""
            if r.status == 200:  # no range support: skip to the range, read no further than it
                r.read(first)
                return r.read(want)
            raise CheckpointError(f"{url}: HTTP {r.status} to a range request; expected 206 Partial Content")
    except urllib.error.HTTPError as e:
        if e.code == 416:
            return b""  # the range starts past the end: the caller reports a truncated file
        raise CheckpointError(f"{url}: HTTP {e.code} {e.reason}; check the id, the revision and HF_TOKEN "
                              "for gated repositories") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise CheckpointError(f"{url}: cannot connect ({reason}); check the network or drop --download") from None


def fetch_header(url: str, *, timeout: float = HTTP_TIMEOUT_S, headers: dict | None = None) -> Header:
    """The header of a remote ``.safetensors`` file from two range requests, never its weights."""
    n = header_length(_get_range(url, 0, 7, timeout=timeout, headers=headers), url)
    raw = _get_range(url, 8, 8 + n - 1, timeout=timeout, headers=headers)
    if len(raw) < n:
        raise CheckpointError(f"{url}: the header is {n} bytes but the server sent {len(raw)}; truncated file")
    return parse_header(raw, url)


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


def fetch_json(url: str, *, timeout: float = HTTP_TIMEOUT_S, limit: int = 64 << 20, headers: dict | None = None):
    """A small JSON document (an index) from ``url``, at most ``limit`` bytes."""
    raw = _get_range(url, 0, limit - 1, timeout=timeout, headers=headers)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CheckpointError(f"{url}: not JSON ({e.__class__.__name__}: {e})") from None


def fetch_checkpoint(base_url: str, *, timeout: float = HTTP_TIMEOUT_S, headers: dict | None = None) -> dict:
    """Every shard's header of a checkpoint at ``base_url`` (a directory URL ending in '/'):
    the index's files when there is one, else ``model.safetensors``. Returns the index's
    ``total_size`` (None without an index), the headers, their byte sum and the files read.
    Neither file there (a GGUF or ``.bin``-only repository) is a ``CheckpointError`` saying so."""
    index = base_url + "model.safetensors.index.json"
    try:
        total, wm = parse_index(fetch_json(index, timeout=timeout, headers=headers), index)
        files, indexed = sorted(set(wm.values())), True
    except CheckpointError as e:
        if "HTTP 404" not in e.message:
            raise
        total, files, indexed = None, ["model.safetensors"], False
    try:
        headers_read = [fetch_header(base_url + f, timeout=timeout, headers=headers) for f in files]
    except CheckpointError as e:
        if indexed or "HTTP 404" not in e.message:
            raise
        raise CheckpointError(f"{base_url}model.safetensors.index.json, {base_url}model.safetensors: neither is "
                              "there (HTTP 404), no safetensors headers to read (a GGUF or .bin-only repository?); "
                              "pass a local safetensors checkpoint for exact weights") from None
    return {"total_size": total, "headers": headers_read, "tensor_bytes": sum(h.total_bytes for h in headers_read),
            "files": ["model.safetensors.index.json"] * indexed + files}


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
