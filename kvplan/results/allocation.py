"""The result records of ``--allocate`` (``kvplan.device.verify.allocate_and_verify``): the KV
tensors of one worker allocated on a real device, each layer's views of them, and what the
verification found. Simulate's ``allocation`` key; ``kvplan.results.to_data`` serialises them
(field order is key order), and ``scripts/make_schemas.py`` reads the same fields.

Sizes are integer bytes (``*_bytes``), timings seconds rounded to the microsecond, bandwidths
integer bytes per second.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import FLATTEN, OMIT_NONE, to_data


@dataclass(frozen=True)
class AllocatedView:
    """One strided view of a layer over its tensor, as the attention backend builds it
    (``kvplan.device.views.ViewPart``: shape and stride in elements of ``dtype``)."""

    name: str  # kv, key, value, conv, ssm, ...
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int  # elements from the tensor's start
    dtype: str


@dataclass(frozen=True)
class AllocatedLayer:
    """One layer of a tensor: its KV cache group, and the bytes of its page it really uses."""

    name: str
    group: int
    kind: str
    real_page_bytes: int
    views: tuple[AllocatedView, ...]


@dataclass(frozen=True)
class AllocatedTensor:
    """One KV tensor (a group slot) of the worker, and the layers that view it."""

    index: int
    size_bytes: int
    page_size_bytes: int
    num_blocks: int
    layout: str  # block_outer, kv_outer, mixed (kvplan.device.views)
    layers: tuple[AllocatedLayer, ...]


@dataclass(frozen=True)
class VerifyFigures:
    """What the write, read-back and scan passes covered, and how long each took."""

    blocks_checked: int
    pages_checked: int
    bytes_written: int
    bytes_read: int
    bytes_scanned: int
    allocate_seconds: float
    write_seconds: float
    read_seconds: float
    scan_seconds: float
    verify_seconds: float
    write_bandwidth_bytes_per_s: int
    read_bandwidth_bytes_per_s: int
    scan_bandwidth_bytes_per_s: int
    num_layers_checked: int


@dataclass(frozen=True, kw_only=True)
class Allocation:
    """``--allocate``: the layout a plan predicts for one worker, allocated on a device and verified.

    ``ok``: every tensor was allocated at the predicted size, every page read back what its own
    layer wrote, no block holds bytes outside its owner's pages, and nothing stayed allocated.
    ``failures`` lists the first ones found (``num_failures`` counts them all)."""

    device: str
    device_name: str
    torch_version: str
    free_memory_rule: str  # how free memory was read (CUDA's mem_get_info, /proc/meminfo, a cgroup limit)
    rank: int  # the pipeline stage allocated
    backing: str  # one buffer, one tensor per slot, one tensor per layer (kvplan.device.views.backing_of)
    view_style: str
    layout: str  # the tensors' layouts, comma-separated ("none" without a layer)
    corrupt: str | None = field(default=None, metadata=OMIT_NONE)  # a test hook's deliberate corruption
    predicted_bytes: int
    allocated_bytes: int
    device_allocated_bytes: int
    scratch_bytes: int
    required_bytes: int
    free_bytes_before: int
    free_bytes_allocated: int
    free_bytes_after: int
    leaked_bytes: int
    num_tensors: int
    num_groups: int
    num_views: int
    num_blocks: int
    page_size_bytes: int
    figures: VerifyFigures = field(metadata=FLATTEN)
    ok: bool
    num_failures: int
    failures: tuple[str, ...]
    tensors: tuple[AllocatedTensor, ...]

    def to_dict(self) -> dict:
        """The JSON data (simulate's ``allocation``), by the one serializer."""
        return to_data(self)
