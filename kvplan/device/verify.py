"""``--allocate``: allocate the KV tensors a plan predicts on a real device and verify the layout.

torch is imported inside functions only (through ``kvplan.device.probe.import_torch``):
``import kvplan.device`` works without it, and every entry point turns a missing torch (or a
missing CUDA) into a one-line ``DeviceError`` that says what to install or use.

What happens, in order (``allocate_and_verify``):

1. **Geometry, no torch** (``kvplan.device.views.plan_views``): one worker of the plan
   (the PP stage this device would be) as tensors and per-layer strided views.

2. **Fits?** Free memory is read first (``kvplan.device.probe``: CUDA's
   ``torch.cuda.mem_get_info``, the CPU's ``cpu_free_bytes``). The layout needs its tensors
   (rounded as the allocator rounds them), the verification scratch and a headroom; if that
   is more than is free, nothing is allocated and ``DeviceDoesNotFitError`` (exit 3) says by how much.

3. **Allocate** with ``torch.zeros(size, dtype=int8)``, as vLLM does, and build the views
   with ``as_strided`` (seen as integer words of up to 8 bytes for the checks).

4. **Verify**, vectorised over block tables (no Python loop over blocks):

   - block ids ``1 … num_blocks − 1`` (0 is vLLM's null block) are handed to the groups
     as the block pool would hand them to max-length requests: in proportion to the blocks
     one request reserves in each group, interleaved (``request_block_order``), so every
     block id belongs to exactly one group;
   - *write*: through each layer's view, every page of every block of its group gets a
     pattern that encodes (layer, block) injectively and changes with the byte position
     (``_pattern``); every pattern byte is odd, so never 0;
   - *read back*: every page is read through the same view and compared; a page that
     another group or another layer overwrote, or a wrong pattern, is a failure naming
     the tensor, the group, the block and the layer (and whose pattern it holds);
   - *scan*: each raw tensor is read as vLLM's allocator sees it (rows of one block:
     ``(2, num_blocks, page/2)`` for kv_outer, ``(num_blocks, page)`` for block_outer) and
     every block must be non-zero exactly on its owner layer's page bytes and zero
     elsewhere (padding, the null block, blocks of groups without a layer in this slot).
     This catches a view that writes outside its own pages, which read-back alone cannot.

5. **Free** everything, also on error and on Ctrl-C (``KeyboardInterrupt``), and measure
   free memory again.

Test hooks: ``corrupt="overlap"`` gives the second group a block id of the first group,
``"pattern"`` writes one wrong page, ``"alias"`` builds one layer's view on another slot's
tensor. Each must come back as a failure.
"""

from __future__ import annotations

import gc
import time
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from kvplan.device.probe import free_bytes, import_torch, resolve_device
from kvplan.device.views import (
    LayerView,
    TensorView,
    ViewPart,
    backing_of,
    plan_views,
    request_block_order,
    view_style,
)
from kvplan.errors import DeviceDoesNotFitError, OptionError
from kvplan.results.allocation import Allocation, AllocatedLayer, AllocatedTensor, AllocatedView, VerifyFigures
from kvplan.units import MiB, format_bytes

CORRUPTIONS = ("overlap", "pattern", "alias")
MAX_FAILURES = 50  # failures listed in the report; the count covers all of them
PER_PLACE = 4  # blocks listed per layer (read-back) or per tensor (scan) before one summary line

# Verification works on chunks of blocks so that its scratch stays small next to the
# KV tensors: a chunk of pattern bytes, its read-back copy and two masks (4 chunks).
CHUNK_BYTES = {"cuda": 128 * MiB, "cpu": 8 * MiB}
# Left free on top of tensors and scratch: the CUDA caching allocator's fragmentation and
# kernel workspaces; on CPU, the Python process's own growth while it runs.
HEADROOM_BYTES = {"cuda": 256 * MiB, "cpu": 256 * MiB}
# The CUDA caching allocator hands out large blocks in multiples of 2 MiB.
CUDA_ROUND_BYTES = 2 * MiB
CPU_ROUND_BYTES = 4096  # one page

# Weak references to the storages of the raw tensors allocated here. torch keeps a
# storage's Python object alive while any view of it lives, so a live reference here
# means memory not yet freed.
_LIVE: list = []


# --- scratch and clean-up (pure Python) ---------------------------------------------------------


def scratch_bytes(tensors: list[TensorView], kind: str) -> int:
    """Memory the verification takes besides the KV tensors (see CHUNK_BYTES)."""
    largest_page = max((t.page_size_bytes for t in tensors), default=0)
    nb = max((t.num_blocks for t in tensors), default=0)
    sizes = {(p.bytes_per_block, i) for t in tensors for lv in t.layers for i, p in enumerate(lv.parts)}
    largest_part = max((e for e, _ in sizes), default=0)
    # pattern, read-back copy and two masks of one chunk; the block tables, owner and
    # expected-size arrays (int64 per block); the position words kept per part shape (one
    # byte per page byte) and the int64 lanes made while building one of them.
    return (4 * max(CHUNK_BYTES[kind], largest_page) + 6 * 8 * nb + sum(e + 8 for e, _ in sizes)
            + 9 * largest_part + MiB)


def _rounded(n: int, kind: str) -> int:
    r = CUDA_ROUND_BYTES if kind == "cuda" else CPU_ROUND_BYTES
    return -(-n // r) * r


def live_bytes() -> int:
    """Bytes of KV tensors allocated by this module that are still referenced (0 after a run)."""
    alive = [r for r in _LIVE if r() is not None]
    _LIVE[:] = alive
    return sum(st.nbytes() for st in (r() for r in alive) if st is not None)


# --- allocation and verification (torch) -------------------------------------------------------


class _Failures:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.count = 0

    def add(self, message: str, count: int = 1) -> None:
        self.count += count
        if len(self.items) < MAX_FAILURES:
            self.items.append(message)


class _Session:
    """Holds every tensor of one run, so that ``release()`` drops them all at once."""

    def __init__(self, torch, dev) -> None:
        self.torch, self.dev = torch, dev
        self.raws: list = []
        self.views: dict = {}  # (tensor index, layer name) → [(ViewPart, word bytes, block-major word view)]
        self.tables: list = []
        self.misc: dict = {}

    def sync(self) -> None:
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize(self.dev)

    def release(self) -> None:
        self.views.clear()
        self.tables.clear()
        self.misc.clear()
        self.raws.clear()
        if live_bytes():  # only reference cycles can still hold a tensor
            gc.collect()
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize(self.dev)
            self.torch.cuda.empty_cache()


_WORD_DTYPES = {8: "int64", 4: "int32", 2: "int16", 1: "uint8"}
# One byte 0x01 in every byte lane of a word: ``w & LOW_BITS == LOW_BITS`` ⇔ every byte is odd.
LOW_BITS = {8: 0x0101010101010101, 4: 0x01010101, 2: 0x0101, 1: 0x01}


def word_bytes(part: ViewPart, base_offset_bytes: int = 0) -> int:
    """The widest integer word (8, 4, 2 or 1 bytes) the part can be read as: the innermost
    dimension, the storage offset (the slot's start in its buffer included) and every other
    stride must be whole words."""
    e = part.element_bytes
    for w in (8, 4, 2, 1):
        if w < e:
            break
        strides = [st * e for i, st in enumerate(part.stride) if i != len(part.shape) - 1]
        offset = base_offset_bytes + part.offset * e
        if (part.shape[-1] * e) % w == 0 and offset % w == 0 and all(b % w == 0 for b in strides):
            return w
    return e if e in _WORD_DTYPES else 1


def _word_view(torch, raw, part: ViewPart):
    """``(word bytes, view)``: the typed view as the backend sees it (``as_strided`` on the
    raw bytes of a slot), block dimension first, read as integer words."""
    e = part.element_bytes
    base = raw[: raw.numel() - raw.numel() % e].view(getattr(torch, part.dtype))
    typed = torch.as_strided(base, part.shape, part.stride, base.storage_offset() + part.offset)
    w = word_bytes(part, raw.storage_offset())
    return w, typed.movedim(part.block_dim, 0).view(getattr(torch, _WORD_DTYPES[w]))


def _position_words(torch, dev, num_words: int, salt: int):
    """One int64 per 8 bytes of a page: byte lane j of word q is ``2·s + 1`` with
    ``s = (37·q + 11·j + 53·salt) mod 128``: odd, and different from one position to the next."""
    q = torch.arange(num_words, dtype=torch.int64, device=dev)[:, None]
    j = torch.arange(8, dtype=torch.int64, device=dev)[None, :]
    lanes = ((37 * q + 11 * j + 53 * salt) % 128 * 2 + 1).to(torch.uint8)
    return lanes.view(torch.int64).flatten()


def _key_words(torch, keys):
    """Byte lane j (j < 7) of a key word is 2 · the j-th 7-bit digit of the key (49 bits in all)."""
    shifts = torch.arange(0, 49, 7, dtype=torch.int64, device=keys.device)
    digits = (keys[:, None] >> shifts[None, :]) & 0x7F
    return ((digits * 2) << (shifts[None, :] // 7 * 8)).sum(1)


def _pattern(torch, keys, positions, nbytes: int, word: int):
    """The page contents for each key: ``key word XOR position word``, as ``[k, nbytes / word]``
    words of ``word`` bytes.

    Every byte is odd (even key lane XOR odd position lane), so a written byte is never 0;
    at any byte position the map from the key's 7-bit digit to the byte is a bijection,
    so two different (layer, block) keys differ in at least one byte of every 8."""
    pat = _key_words(torch, keys)[:, None] ^ positions[None, :]
    if word == 8 and nbytes % 8 == 0:
        return pat
    pat = pat.view(torch.uint8)[:, :nbytes].contiguous()
    return pat.view(getattr(torch, _WORD_DTYPES[word]))


def _whose(torch, page, positions, nbytes: int, word: int, nb: int, owners: dict) -> str:
    """Whose data a wrong page holds: decode a key from its first 8 bytes and accept it only
    if that key's whole pattern is what the page holds."""
    page8 = page.view(torch.uint8)
    if not bool(page8.any()):
        return "the page was never written (a view that misses its memory)"
    if nbytes < 8:
        return ""
    lanes = (page8[:8] ^ positions.view(torch.uint8)[:8]).tolist()
    if not (lanes[7] or any(x % 2 for x in lanes)):
        key = sum((x // 2) << (7 * j) for j, x in enumerate(lanes[:7]))
        lv = owners.get(key // nb) if nb else None
        if lv is not None:
            want = _pattern(torch, torch.tensor([key], device=page.device), positions, nbytes, word)
            if torch.equal(want.flatten(), page.flatten()):
                return f"the page holds block {key % nb} of layer {lv.name} (group {lv.group})"
    return "the page holds no layer's pattern (written wrong)"


def _warm_up(torch, dev) -> None:
    """Run every op the verification uses once on a few kilobytes."""
    raw = torch.zeros(4 * 1024, dtype=torch.int8, device=dev).view(torch.uint8)
    part = ViewPart("kv", (2, 4, 8, 8), (256, 64, 8, 1), 0, "bfloat16", 1)
    _, view = _word_view(torch, raw, part)
    blk = torch.arange(1, 3, dtype=torch.int64, device=dev)
    positions = _position_words(torch, dev, 16, 0)
    pat = _pattern(torch, blk, positions, 128, 8)
    view[blk] = pat.view(-1, *view.shape[1:])
    torch.equal(view[blk].reshape(2, -1), pat)
    rows = raw.view(torch.int64).view(4, -1)
    low = rows & LOW_BITS[8]
    bool((low.amin(1) == LOW_BITS[8]).any() | (low.amax(1) == 0).any())


def _chunks(table, block_bytes: int, chunk_bytes: int):
    step = max(1, chunk_bytes // max(block_bytes, 1))
    for s in range(0, table.numel(), step):
        yield table[s : s + step]


def allocate_and_verify(plan, device: str, *, corrupt: str | None = None, rank: int = 0) -> Allocation:
    """Allocate the tensors ``plan`` predicts for pipeline stage ``rank`` on ``device``,
    build each layer's views, verify the layout, free everything, and return the report.

    Raises ``DeviceError`` (exit 1) without torch or CUDA, ``DeviceDoesNotFitError``
    (exit 3) when the layout does not fit in free memory; a layout that fails the
    verification is a report with ``ok`` False and ``failures``."""
    if corrupt is not None and corrupt not in CORRUPTIONS:
        raise OptionError(f"unknown corruption '{corrupt}'; choose one of: {', '.join(CORRUPTIONS)}")
    if not plan.starts:
        raise OptionError("the engine would not start with this layout; nothing to allocate")
    worker, tensors, layout_failures = plan_views(plan, rank)
    torch = import_torch()
    dev = resolve_device(torch, device)
    kind = dev.type
    predicted = sum(t.size_bytes for t in worker.tensors)
    backing = backing_of(plan, worker)
    scratch = scratch_bytes(tensors, kind)
    allocations = [predicted] if backing == "one buffer" else [t.size_bytes for t in worker.tensors]
    required = sum(_rounded(n, kind) for n in allocations) + scratch + HEADROOM_BYTES[kind]
    free_before, rule = free_bytes(torch, dev)
    if required > free_before:
        raise DeviceDoesNotFitError(
            f"the layout does not fit on {device}: it needs {format_bytes(required)} ({len(worker.tensors)} KV "
            f"tensors, {format_bytes(predicted)} predicted, + {format_bytes(scratch)} verification scratch + "
            f"{format_bytes(HEADROOM_BYTES[kind])} headroom) but only {format_bytes(free_before)} is free ({rule}); "
            "lower --kv-cache-memory or use --budget-from-device"
        )
    if corrupt == "overlap" and sum(1 for g in worker.groups if g.layer_names) < 2:
        raise OptionError("corruption 'overlap' needs at least two KV cache groups")

    failures = _Failures()
    for f in layout_failures:
        failures.add(f)
    session = _Session(torch, dev)
    baseline_cuda = torch.cuda.memory_allocated(dev) if kind == "cuda" else 0
    try:
        measured = _run(session, worker, tensors, plan, corrupt, failures, kind, backing)
    except BaseException as e:
        session.release()
        traceback.clear_frames(e.__traceback__)  # frames of the helpers hold views of the tensors
        oom = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
        if isinstance(e, oom) or (kind == "cpu" and "can't allocate memory" in str(e)):
            raise DeviceDoesNotFitError(
                f"the allocator refused the layout on {device} ({type(e).__name__}); "
                f"{format_bytes(free_before)} was free ({rule}); lower --kv-cache-memory"
            ) from None
        raise
    finally:
        session.release()
    free_after, _ = free_bytes(torch, dev)
    leaked = live_bytes()
    if kind == "cuda":
        leaked = max(leaked, torch.cuda.memory_allocated(dev) - baseline_cuda)
    if leaked:
        failures.add(f"{leaked:,} B of KV tensors still allocated after release")
    listed, count = list(failures.items), failures.count
    if predicted != measured.allocated_bytes:
        listed.append(f"allocated {measured.allocated_bytes:,} B, predicted {predicted:,} B")
        count += 1
    return Allocation(
        device=str(dev),
        device_name=torch.cuda.get_device_name(dev) if kind == "cuda" else "cpu",
        torch_version=torch.__version__,
        free_memory_rule=rule,
        rank=rank,
        backing=backing,
        view_style=view_style(plan.era, [plan.specs.get(n) or g.spec for g in worker.groups for n in g.layer_names]),
        layout=", ".join(sorted({t.layout for t in tensors if t.layers})) or "none",
        corrupt=corrupt or None,
        predicted_bytes=predicted,
        allocated_bytes=measured.allocated_bytes,
        device_allocated_bytes=measured.device_allocated_bytes,
        scratch_bytes=scratch,
        required_bytes=required,
        free_bytes_before=free_before,
        free_bytes_allocated=measured.free_bytes_allocated,
        free_bytes_after=free_after,
        leaked_bytes=leaked,
        num_tensors=len(worker.tensors),
        num_groups=len(worker.groups),
        num_views=sum(len(lv.parts) for t in tensors for lv in t.layers),
        num_blocks=worker.num_blocks,
        page_size_bytes=max((t.page_size_bytes for t in tensors), default=0),
        figures=measured.figures,
        ok=count == 0,
        num_failures=count,
        failures=tuple(listed),
        tensors=allocated_tensors(tensors),
    )


def allocated_tensors(tensors: list[TensorView]) -> tuple[AllocatedTensor, ...]:
    """The report's ``tensors``: each tensor, its layers and their views."""
    return tuple(
        AllocatedTensor(t.index, t.size_bytes, t.page_size_bytes, t.num_blocks, t.layout, tuple(
            AllocatedLayer(lv.name, lv.group, lv.kind, lv.real_bytes,
                           tuple(AllocatedView(p.name, tuple(p.shape), tuple(p.stride), p.offset, p.dtype)
                                 for p in lv.parts))
            for lv in t.layers))
        for t in tensors
    )


@dataclass(frozen=True)
class _Measured:
    """What one run measured: the bytes allocated (as torch's storages and as the device counts
    them), free memory while they were, and the verification's figures."""

    allocated_bytes: int
    device_allocated_bytes: int
    free_bytes_allocated: int
    figures: VerifyFigures


def _rate(nbytes: int, seconds: float) -> int:
    return int(nbytes / seconds) if seconds > 0 else 0


def _run(s: _Session, worker, tensors: list[TensorView], plan, corrupt, failures: _Failures, kind: str,
         backing: str) -> _Measured:
    """Allocate, build the views and block tables, then write, read back and scan; the figures of each step."""
    nb = worker.num_blocks
    chunk = CHUNK_BYTES[kind]

    _warm_up(s.torch, s.dev)  # first calls of each op pay one-off costs the timings should not include
    allocate_seconds, allocated = _timed(s, lambda: _allocate(s, worker, backing))
    device_allocated = s.torch.cuda.memory_allocated(s.dev) if kind == "cuda" else allocated
    free_allocated, _ = free_bytes(s.torch, s.dev)
    _build_views(s, tensors, corrupt)
    tables = _block_tables(s, worker, plan, corrupt)
    layers = [lv for t in tensors for lv in t.layers]
    if len(layers) * max(nb, 1) >= 1 << 49:
        raise OptionError("too many layers × blocks for the 49-bit verification key")
    owners = {lv.ordinal: lv for lv in layers}
    write_seconds, written = _timed(s, lambda: _write(s, tensors, tables, nb, chunk, corrupt == "pattern"))
    read_seconds, (read, pages) = _timed(s, lambda: _read_back(s, tensors, tables, nb, chunk, owners, failures))
    scan_seconds, scanned = _timed(s, lambda: sum(_scan_tensor(s, t, tables, chunk, failures) for t in tensors))

    verify_seconds = write_seconds + read_seconds + scan_seconds
    return _Measured(allocated, device_allocated, free_allocated, VerifyFigures(
        blocks_checked=sum(int(tb.numel()) for tb in tables),
        pages_checked=pages,
        bytes_written=written,
        bytes_read=read,
        bytes_scanned=scanned,
        allocate_seconds=round(allocate_seconds, 6),
        write_seconds=round(write_seconds, 6),
        read_seconds=round(read_seconds, 6),
        scan_seconds=round(scan_seconds, 6),
        verify_seconds=round(verify_seconds, 6),
        write_bandwidth_bytes_per_s=_rate(written, write_seconds),
        read_bandwidth_bytes_per_s=_rate(read, read_seconds),
        scan_bandwidth_bytes_per_s=_rate(scanned, scan_seconds),
        num_layers_checked=len(layers),
    ))


_T = TypeVar("_T")


def _timed(s: _Session, step: Callable[[], _T]) -> tuple[float, _T]:
    """``step()`` and its seconds, the device synchronised before and after."""
    s.sync()
    t0 = time.perf_counter()
    result = step()
    s.sync()
    return time.perf_counter() - t0, result


def _allocate(s: _Session, worker, backing: str) -> int:
    """Zeroed int8, as vLLM allocates it: one tensor per KVTensor (≤ 0.32, _allocate_kv_cache_tensors) or one
    buffer with the slots end to end (0.33, allocate_kv_cache); the slots go to ``s.raws``. Returns the bytes
    torch's storages hold."""
    torch = s.torch
    allocated = 0
    sizes = [kt.size_bytes for kt in worker.tensors]
    for n in ([sum(sizes)] if backing == "one buffer" and sizes else sizes):
        raw = torch.zeros(n, dtype=torch.int8, device=s.dev).view(torch.uint8)
        _LIVE.append(weakref.ref(raw.untyped_storage()))
        allocated += raw.untyped_storage().nbytes()
        if backing == "one buffer":  # the slots end to end: slot i at i · page · num_blocks
            starts = [sum(sizes[:i]) for i in range(len(sizes))]
            s.raws.extend(raw[a : a + n] for a, n in zip(starts, sizes))
        else:
            s.raws.append(raw)
        del raw
    return allocated


def _build_views(s: _Session, tensors: list[TensorView], corrupt: str | None) -> None:
    """Each layer's word views on its slot (the "alias" hook builds one layer of slot ≥ 1 on tensor 0's memory)."""
    alias = None
    if corrupt == "alias":
        alias = next(((t.index, t.layers[0].name) for t in tensors[1:] if t.layers and tensors[0].layers
                      and all(p.end_byte <= tensors[0].size_bytes for p in t.layers[0].parts)), None)
        if alias is None:
            raise OptionError("corruption 'alias' needs two KV tensors that can hold the same view")
    for t in tensors:
        for lv in t.layers:
            raw = s.raws[0] if alias == (t.index, lv.name) else s.raws[t.index]
            s.views[(t.index, lv.name)] = [(p, *_word_view(s.torch, raw, p)) for p in lv.parts]


def _block_tables(s: _Session, worker, plan, corrupt: str | None) -> list:
    """Block ids 1 … num_blocks − 1 to the groups, as max-length requests take them (the "overlap" hook gives the
    second group a block of the first)."""
    from kvplan.engines.vllm import sizing

    torch, dev = s.torch, s.dev
    groups = list(worker.groups)
    bpr = sizing.blocks_per_request(groups, plan.workload) if len(groups) > 1 else [1]
    order = torch.tensor(request_block_order(bpr), dtype=torch.int64, device=dev)
    ids = torch.arange(1, max(worker.num_blocks, 1), dtype=torch.int64, device=dev)
    label = order[(ids - 1) % order.numel()]
    s.tables = [ids[label == g] for g in range(len(groups))]
    del ids, label, order
    if corrupt == "overlap":
        a, b = [g for g, tb in enumerate(s.tables) if tb.numel()][:2]
        s.tables[b] = s.tables[b].clone()
        s.tables[b][0] = s.tables[a][0]
    return s.tables


def _parts_of(s: _Session, t: TensorView, lv: LayerView):
    """``(part, view, bytes per block, word bytes, position words)`` of each view part of ``lv``. Position words
    depend on the part's size and its index in the layer only, so layers of one shape share them (the key carries
    the layer)."""
    for i, (part, w, view) in enumerate(s.views[(t.index, lv.name)]):
        e = part.bytes_per_block
        if (e, i) not in s.misc:
            s.misc[(e, i)] = _position_words(s.torch, s.dev, -(-e // 8), i)
        yield part, view, e, w, s.misc[(e, i)]


def _write(s: _Session, tensors: list[TensorView], tables: list, nb: int, chunk: int, wrong_page: bool) -> int:
    """Every page of every block of each layer's group, through the layer's views (``wrong_page``: one page gets
    one wrong, still odd, byte). Returns the bytes written."""
    written = 0
    for t in tensors:
        for lv in t.layers:
            for _part, view, e, w, positions in _parts_of(s, t, lv):
                for blk in _chunks(tables[lv.group], e, chunk):
                    pat = _pattern(s.torch, lv.ordinal * nb + blk, positions, e, w)
                    if wrong_page:
                        pat[0, 0] ^= 2  # one page gets one wrong (still odd) byte
                        wrong_page = False
                    view[blk] = pat.view(-1, *view.shape[1:])
                    written += blk.numel() * e
                    del pat
    return written


def _read_back(s: _Session, tensors: list[TensorView], tables: list, nb: int, chunk: int,
               owners: dict[int, LayerView], failures: _Failures) -> tuple[int, int]:
    """Every page read back through the same views and compared with the pattern; the blocks read back wrong
    are failures. Returns the bytes and the pages read."""
    read = pages = 0
    for t in tensors:
        for lv in t.layers:
            read += _read_layer(s, t, lv, tables[lv.group], nb, chunk, owners, failures)
            pages += tables[lv.group].numel()
    return read, pages


def _read_layer(s: _Session, t: TensorView, lv: LayerView, table, nb: int, chunk: int,
                owners: dict[int, LayerView], failures: _Failures) -> int:
    """One layer's pages read back: failures name the first blocks wrong (and whose pattern they hold), one line
    counts the rest. Returns the bytes read."""
    torch = s.torch
    read = 0
    wrong_bytes: dict[int, int] = {}  # block → page bytes read back wrong
    whose: dict[int, str] = {}  # block → whose pattern it holds (for the first MAX_FAILURES blocks)
    for _part, view, e, w, positions in _parts_of(s, t, lv):
        for blk in _chunks(table, e, chunk):
            got = view[blk].reshape(blk.numel(), -1)
            want = _pattern(torch, lv.ordinal * nb + blk, positions, e, w)
            read += blk.numel() * e
            if not torch.equal(got, want):
                wrong = (got.view(torch.uint8) != want.view(torch.uint8)).sum(1)
                hit = wrong.nonzero().flatten()
                for r, b, n in zip(hit.tolist(), blk[hit].tolist(), wrong[hit].tolist()):
                    wrong_bytes[b] = wrong_bytes.get(b, 0) + n
                    if not whose.get(b) and len(wrong_bytes) <= MAX_FAILURES:
                        whose[b] = _whose(torch, got[r], positions, e, w, nb, owners)
                del wrong, hit
            del got, want
    listed = sorted(wrong_bytes.items())
    for b, n in listed[:PER_PLACE]:
        failures.add(f"tensor {t.index}, group {lv.group}, block {b}: layer {lv.name} read back {n:,} of "
                     f"{lv.real_bytes:,} page bytes wrong" + (f": {whose[b]}" if whose.get(b) else ""))
    if len(listed) > PER_PLACE:
        more = listed[PER_PLACE:]
        failures.add(f"tensor {t.index}, group {lv.group}, blocks {more[0][0]}…{more[-1][0]}: layer "
                     f"{lv.name}: {len(more):,} more blocks read back wrong", len(more))
    return read


def _scan_tensor(s: _Session, t: TensorView, tables: list, chunk: int, failures: _Failures) -> int:
    """Check one raw tensor block by block, independently of the views: the bytes of block b
    are non-zero (odd) exactly on the first ``real`` bytes of its owner layer's page (both
    halves for kv_outer) and zero elsewhere. Returns the bytes scanned."""
    torch, dev = s.torch, s.dev
    nb, P = t.num_blocks, t.page_size_bytes
    if not nb or not t.layers:
        return 0
    if t.layout == "mixed":
        failures.add(f"tensor {t.index}: layers with kv_outer and block_outer views share it; "
                     "their pages overlap across blocks")
        return 0
    halves = 2 if t.layout == "kv_outer" else 1
    width = P // halves
    owner = torch.full((nb,), -1, dtype=torch.int64, device=dev)
    real = torch.zeros(nb, dtype=torch.int64, device=dev)
    classes = {0}
    for lv in t.layers:
        owner[tables[lv.group]] = lv.group
        real[tables[lv.group]] = lv.real_bytes // halves
        classes.add(lv.real_bytes // halves)
    raw = s.raws[t.index]
    w = next(w for w in (8, 4, 2, 1)
             if width % w == 0 and raw.storage_offset() % w == 0 and all(c % w == 0 for c in classes))
    word = getattr(torch, _WORD_DTYPES[w])
    rows_list = [raw.view(halves, nb, width)[h].view(word) for h in range(halves)]
    step = max(1, chunk // width)
    bad = torch.zeros(nb, dtype=torch.bool, device=dev)
    for rows in rows_list:
        for r0 in range(0, nb, step):
            block = rows[r0 : r0 + step]
            cls = real[r0 : r0 + step]
            # Every byte a view writes is odd and the tensor starts zeroed, so the low bit of
            # each byte says whether it was written.
            low = block & LOW_BITS[w]
            ok = torch.zeros(block.shape[0], dtype=torch.bool, device=dev)
            for c in sorted(classes):
                cw = c // w
                good = cls == c
                if cw:  # the owner layer's page bytes: all written
                    good &= low[:, :cw].amin(1) == LOW_BITS[w]
                if cw < low.shape[1]:  # padding, or a block no layer of this slot owns: untouched
                    good &= low[:, cw:].amax(1) == 0
                ok |= good
                del good
            bad[r0 : r0 + step] |= ~ok
            del block, cls, ok, low
    hit = bad.nonzero().flatten().tolist()
    for b in hit[:PER_PLACE]:
        rows = raw.view(halves, nb, width)[:, b]  # [halves, width] bytes of block b
        col = torch.arange(width, device=dev)[None, :]
        expect = col < real[b]
        outside = int((rows.ne(0) & ~expect).sum())
        missing = int((rows.eq(0) & expect).sum())
        g = int(owner[b])
        who = f"group {g}" if g >= 0 else ("group none (null block)" if b == 0 else "group none (not owned here)")
        failures.add(f"tensor {t.index}, {who}, block {b}: {outside:,} B written outside the layers' pages, "
                     f"{missing:,} page bytes never written")
    if len(hit) > PER_PLACE:
        more = hit[PER_PLACE:]
        failures.add(f"tensor {t.index}, blocks {more[0]}…{more[-1]}: {len(more):,} more blocks whose raw bytes "
                     "do not match the layout", len(more))
    return nb * P
