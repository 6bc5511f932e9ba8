"""KV offloading to host memory: the connector vLLM installs for ``--kv-offloading-size`` /
``--kv-offloading-backend``, and the host tier the native ``OffloadingConnector`` builds.

Read in vLLM 0.33.0 and 0.34.0 and run there by the golden runner
(``kvplan/verify/vllm_runner.py`` ``_offloading``; ``tests/golden/*offload*``):

- ``VllmConfig._post_init_kv_transfer_config`` (0.34.0 ``vllm/config/vllm.py:1072-1104``): with
  ``--kv-offloading-size S`` the backend ``native`` installs ``OffloadingConnector`` (or
  ``SimpleCPUOffloadConnector`` with ``VLLM_USE_SIMPLE_KV_OFFLOAD``) with
  ``cpu_bytes_to_use = S * 2**30`` in the extra config; ``lmcache`` installs ``LMCacheMPConnector``
  and passes no size (the LMCache server process holds the capacity). Either way the role is
  ``kv_both``, and a ``--kv-transfer-config`` given beside the flags is updated, not replaced.
- ``build_offloading_config`` (0.34.0 ``distributed/kv_transfer/kv_connector/v1/offloading/config.py``):
  the prefix-cacheable groups, each block's token span (times DCP for sharded attention), the
  chunk (``blocks_per_chunk``, or the extra config's ``block_size`` in tokens, which must be a
  multiple of the GPU block), a window's reach in chunks, the bytes one worker stores per block
  (the worker's KV buffer over its blocks), and the single-copy layout of MLA under TP.
- ``CPUOffloadingSpec.__init__`` (0.34.0 ``vllm/v1/kv_offload/cpu/spec.py:95-130``): one chunk holds
  every worker's blocks (one copy when replicated), rounded up to the host page
  (``mmap.PAGESIZE``, 4 KiB on x86-64); ``num_chunks = cpu_bytes_to_use // chunk``.
- ``CPUOffloadingInfo`` (``vllm/v1/kv_offload/cpu/common.py``): the tier's bytes
  (``num_chunks x chunk``) and the tokens it holds for requests of ``max_model_len``.

Releases from 0.12 accept the flags; their host tier is sized here from the 0.33 code on
(``Era.kv_offloading``); for 0.12-0.32 the connector and the hybrid-manager decision are given,
and the tier's size is said to be unmodelled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvplan.engines.vllm.eras import Era, first_release
from kvplan.errors import EngineFailure, OptionError
from kvplan.specs import ChunkedLocalAttentionSpec, KVCacheSpec, MambaSpec, MLAAttentionSpec, SlidingWindowSpec
from kvplan.units import cdiv

if TYPE_CHECKING:  # built only when an offloading connector is configured (imported there)
    from kvplan.results.host_tier import HostTier, HostTierGroup

GiB = 1 << 30
HOST_PAGE_BYTES = 4096  # mmap.PAGESIZE on x86-64 Linux: SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT
NATIVE_CONNECTORS = frozenset({"OffloadingConnector"})


def transfer_config(kv_transfer_config: dict | None, size_gib: float | None, backend: str | None,
                    *, simple_offload: bool = False, era: Era | None = None, num_kv_ranks: int = 1) -> dict | None:
    """The ``kv_transfer_config`` vLLM holds after ``_post_init_kv_transfer_config`` (``era``: the
    release's wiring, default the newest; ``num_kv_ranks``: TP x PP, which 0.12-0.22 divide the size by).

    - 0.12.0-0.13.0 (``vllm/config/vllm.py:459-500`` in 0.12.0): only ``--kv-offloading-backend`` turns
      offloading on (``kv_offloading_backend`` defaults to None; the size alone does nothing, a backend
      without a size is a ValueError); ``native`` puts ``kv_bytes_per_rank`` and ``num_cpu_blocks: 0`` in
      the extra config.
    - 0.14.1-0.22.1 (0.14.1 ``vllm/config/vllm.py:495-530``): the size turns it on, backend ``native`` by
      default, ``cpu_bytes_to_use = size x 2**30``.
    - ``lmcache`` up to 0.22.1: ``LMCacheConnectorV1`` with the extra config replaced by
      ``{"lmcache.local_cpu": True, "lmcache.max_local_cpu_size": size / (TP x PP)}`` (GB per rank);
      from 0.23.0 (``vllm/config/vllm.py:757-800``) ``LMCacheMPConnector`` with no size."""
    wiring = era.kv_offloading if era is not None else "cpu_chunks"
    if wiring == "backend_flag":
        if backend is None:
            return kv_transfer_config  # 0.12-0.13: kv_offloading_backend defaults to None: nothing happens
        if size_gib is None:
            raise EngineFailure("ValueError", "You must set kv_offloading_size when kv_offloading_backend is set.",
                                "config")
    elif size_gib is None:
        return kv_transfer_config
    out = dict(kv_transfer_config or {})
    extra = dict(out.get("kv_connector_extra_config") or {})
    lmcache_v1 = era is not None and era.lmcache_offloading_connector == "LMCacheConnectorV1"
    if (backend or "native") == "native":
        out["kv_connector"] = "SimpleCPUOffloadConnector" if simple_offload else "OffloadingConnector"
        if wiring == "backend_flag":
            extra.update(kv_bytes_per_rank=size_gib * GiB / num_kv_ranks, num_cpu_blocks=0)
        else:
            extra["cpu_bytes_to_use"] = size_gib * GiB
    elif lmcache_v1:
        out["kv_connector"] = "LMCacheConnectorV1"
        extra = {"lmcache.local_cpu": True, "lmcache.max_local_cpu_size": size_gib / num_kv_ranks}
    else:
        out["kv_connector"] = "LMCacheMPConnector"
    out["kv_connector_extra_config"] = extra
    out["kv_role"] = "kv_both"
    return out


def _window_chunks(spec: KVCacheSpec, tokens_per_chunk: int) -> int | None:
    """``get_sliding_window_size_in_chunks``: chunks one request keeps for this group."""
    if isinstance(spec, SlidingWindowSpec):
        return cdiv(spec.sliding_window, tokens_per_chunk)  # 0.34: no layer here retains extra tokens
    if isinstance(spec, ChunkedLocalAttentionSpec):
        return cdiv(spec.attention_chunk_size, tokens_per_chunk)
    if isinstance(spec, MambaSpec):
        return 1
    return None


def _first_layer_spec(spec: KVCacheSpec) -> KVCacheSpec:
    inner = getattr(spec, "kv_cache_specs", None)  # UniformTypeKVCacheSpecs: one spec per layer
    return inner[0][1] if inner else spec


def host_tier(era: Era, kv_transfer_config: dict | None, *, backend: str | None, hma_on: bool,
              groups, num_blocks: int, worker_kv_bytes: int, max_model_len: int, gpu_kv_tokens: int,
              tensor_parallel_size: int = 1, pipeline_parallel_size: int = 1,
              decode_context_parallel_size: int = 1, mamba_cache_mode: str = "none",
              cross_layer_layout: bool = False, lmcache: dict | None = None) -> HostTier | None:
    """The host tier for one engine. ``groups``: the scheduler's KV cache groups (``layer_names``,
    ``spec``); ``worker_kv_bytes``: the bytes of one worker's KV buffer holding ``num_blocks`` blocks;
    ``cross_layer_layout``: the V1 model runner keeps one cross-layer KV tensor (one group of plain
    full attention), which the 0.14-0.26 connector mirrors in one pinned host tensor per worker.
    None when no offloading connector is configured."""
    if not kv_transfer_config:
        return None
    if backend is not None and era.kv_offloading == "none":
        raise OptionError(f"--kv-offloading-size: vllm=={era.stands_for} has no such flag (from "
                          f"{first_release('kv_offloading', 'backend_flag')}); drop it or pass --kv-transfer-config")
    connector = str(kv_transfer_config.get("kv_connector") or "")
    if "Offload" not in connector and "LMCache" not in connector:
        return None  # a P/D or other connector: no host tier of its own
    from kvplan.results.host_tier import HostTier
    role = str(kv_transfer_config.get("kv_role") or "kv_both")
    base: dict[str, Any] = dict(kv_connector=connector, kv_role=role, backend=backend, hybrid_kv_cache_manager=hma_on)
    if connector not in NATIVE_CONNECTORS:
        if "LMCache" in connector:
            return lmcache_tier(base, kv_transfer_config, world_size=tensor_parallel_size * pipeline_parallel_size,
                                groups=groups, num_blocks=num_blocks, worker_kv_bytes=worker_kv_bytes,
                                max_model_len=max_model_len, gpu_kv_tokens=gpu_kv_tokens, lmcache=lmcache)
        return HostTier(**base, sized=False, note=f"{connector}'s host pool is not modelled yet")
    extra = kv_transfer_config.get("kv_connector_extra_config") or {}
    # the GPU block's token span: DCP-sharded attention spans dcp x block (0.21+), Mamba states not
    spans = [g.spec.block_size * (1 if isinstance(_first_layer_spec(g.spec), MambaSpec)
                                  else decode_context_parallel_size) for g in groups]
    _check_native(era, extra, groups, spans, mamba_cache_mode)
    if era.kv_offloading == "backend_flag":
        return _counted_tier(base, extra, spans)
    return _sized_tier(era, base, extra, groups, spans, _NativeRun(
        num_blocks, worker_kv_bytes, max_model_len, gpu_kv_tokens, tensor_parallel_size, pipeline_parallel_size,
        decode_context_parallel_size, cross_layer_layout))


def _check_native(era: Era, extra: dict, groups, spans: list[int], mamba_cache_mode: str) -> None:
    """The native connector's checks of the groups' blocks before it sizes anything: the hash block first (the
    spec's base __init__ 0.18-0.25, build_offloading_config 0.26+), then a ``block_size`` of the extra config
    against the GPU block (0.12-0.25)."""
    if era.offload_hash_check == "resolved" and era.kv_offloading != "backend_flag":
        # 0.22-0.25 word it as the spec's base __init__ does (gpu_block_size / hash_block_size), 0.26 on as
        # build_offloading_config (tokens_per_block / tokens_per_hash)
        _check_hash_alignment(groups, spans, mamba_cache_mode,
                              names=("tokens_per_block", "tokens_per_hash") if chunked_config(era)
                              else ("gpu_block_size", "hash_block_size"))
    elif era.offload_hash_check in ("assert", "message"):
        # 0.18-0.21 OffloadingSpec.__init__: the hash block is the cache config's block size (the attention
        # layers' block; a hybrid's Mamba groups span max_model_len without prefix caching)
        attention = [sp for g, sp in zip(groups, spans) if not isinstance(_first_layer_spec(g.spec), MambaSpec)]
        per_hash = min(attention or spans)
        for span in spans:
            if span % per_hash:
                raise EngineFailure("AssertionError", "" if era.offload_hash_check == "assert" else (
                    f"gpu_block_size={span} not divisible by hash_block_size={per_hash}. Hybrid models (e.g. "
                    "Mamba+Attention) need --enable-prefix-caching to align block sizes."), "kv_connector")
    by_tokens = extra.get("block_size")
    # build_offloading_config (0.26 on) reads blocks_per_chunk too; before, only the spec's block_size
    if not _chunked(era) and by_tokens is not None:
        # 0.12-0.25 OffloadingSpec.__init__ (0.14.1 vllm/v1/kv_offload/spec.py:40-45, 0.18.0 lines 44-57):
        # one GPU block size, and the offloaded block a multiple of it (asserts without a message)
        _one_block_size(spans)
        if int(by_tokens) % spans[0]:
            raise EngineFailure("AssertionError", "", "kv_connector")


def _chunked(era: Era) -> bool:
    """The release's connector reads ``blocks_per_chunk`` (build_offloading_config, 0.26 on)."""
    return era.kv_offloading in ("chunks", "aligned_chunks", "cpu_chunks")


def _one_block_size(spans: list[int]) -> None:
    if len(set(spans)) != 1:
        raise EngineFailure("AssertionError", "If 'block_size' is specified in kv_connector_extra_config, "
                            "there must be at least one KV cache group, and all groups must have the same "
                            "block size.", "kv_connector")


def _counted_tier(base: dict[str, Any], extra: dict, spans: list[int]) -> HostTier:
    """0.12.0-0.13.0: the post-init sets num_cpu_blocks to 0, which CPUOffloadingSpec refuses
    (0.12.0 vllm/v1/kv_offload/cpu.py:24-28); a count given in the extra config is the tier."""
    from kvplan.results.host_tier import HostTier

    if not extra.get("num_cpu_blocks"):
        raise EngineFailure("Exception", "num_cpu_blocks must be specified in kv_connector_extra_config",
                            "kv_connector")
    by_tokens = extra.get("block_size")
    tokens = int(by_tokens) if by_tokens is not None else spans[0]
    n = int(extra["num_cpu_blocks"])
    return HostTier(**base, sized=True, num_chunks=n, blocks_per_chunk=tokens // spans[0],
                    note="num_cpu_blocks given in the extra config (0.12-0.13 take the count, not bytes)")


def _blocks_per_chunk(era: Era, extra: dict, spans: list[int]) -> int:
    """GPU blocks per offloaded chunk: ``blocks_per_chunk`` (0.26 on), else ``block_size`` tokens over the GPU
    block, else 1; each checked as the release checks it."""
    by_blocks, by_tokens = extra.get("blocks_per_chunk"), extra.get("block_size")
    chunked = _chunked(era)
    if chunked and by_blocks is not None and by_tokens is not None:
        raise EngineFailure("ValueError", "Specify only one of 'block_size' or 'blocks_per_chunk' in "
                            "kv_connector_extra_config.", "kv_connector")
    if chunked and by_blocks is not None:
        if int(by_blocks) <= 0:
            raise EngineFailure("ValueError", "'blocks_per_chunk' must be greater than 0.", "kv_connector")
        return int(by_blocks)
    if by_tokens is None:
        return 1
    tokens = int(by_tokens)
    _one_block_size(spans)
    span = spans[0]
    if tokens % span and era.offload_chunk_check == "assert":  # 0.26.0-0.29.0 config.py: a bare assert
        raise EngineFailure("AssertionError", "", "kv_connector")
    if tokens % span:
        raise EngineFailure(
            "ValueError", f"'block_size'={tokens} in kv_connector_extra_config must be a multiple of the GPU "
            f"KV cache block size ({span} tokens). Use {-(-tokens // span) * span} instead, or set "
            "'blocks_per_chunk' to express the chunk size in blocks.", "kv_connector")
    return tokens // span


@dataclass(frozen=True)
class _NativeRun:
    """The engine's figures the native tier is sized from."""

    num_blocks: int
    worker_kv_bytes: int
    max_model_len: int
    gpu_kv_tokens: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    decode_context_parallel_size: int
    cross_layer_layout: bool


def _chunk_bytes(era: Era, groups, per_block: int, blocks_per_chunk: int, run: _NativeRun) -> tuple[int, bool]:
    """(the host bytes of one chunk, whether the MLA cache is kept once for every TP rank); 0 bytes when the GPU
    blocks are empty. CPUOffloadingSpec from 0.27 keeps one copy of an MLA cache under TP (every rank holds the same
    latent) on a CUDA host's shared region: single node, TP only, the multiprocessing executor."""
    tp, pp = run.tensor_parallel_size, run.pipeline_parallel_size
    world = tp * pp
    use_mla = all(isinstance(_first_layer_spec(g.spec), MLAAttentionSpec) for g in groups)
    aligned = era.kv_offloading in ("aligned_chunks", "cpu_chunks")
    replicated = (aligned and use_mla and tp > 1 and pp == 1 and run.decode_context_parallel_size == 1
                  and per_block > 0)
    if per_block <= 0 or world <= 0:
        return 0, replicated
    # the chunk rounded up to BLOCK_SIZE_ALIGNMENT: the host page from 0.27 (SharedOffloadRegion), 1 before
    # (0.23.0-0.26.0 vllm/v1/kv_offload/cpu/spec.py: BLOCK_SIZE_ALIGNMENT = 1)
    align = HOST_PAGE_BYTES if aligned else 1
    copies = 1 if replicated else world
    return -(-(per_block * copies * blocks_per_chunk) // align) * align, replicated


def _sized_tier(era: Era, base: dict[str, Any], extra: dict, groups, spans: list[int], run: _NativeRun) -> HostTier:
    """The native connector's tier from ``cpu_bytes_to_use``: chunks of ``blocks_per_chunk`` GPU blocks (one copy
    per worker, or one for an MLA cache under TP from 0.27), rounded up to the host page, and the tokens they hold."""
    from kvplan.results.host_tier import HostTier, HostTierGroup

    cpu_bytes = extra.get("cpu_bytes_to_use")
    if not cpu_bytes:
        raise EngineFailure("Exception", "cpu_bytes_to_use must be specified in kv_connector_extra_config",
                            "kv_connector")
    if not groups:
        raise EngineFailure("ValueError", "KV offloading found no eligible cache groups.", "kv_connector")
    blocks_per_chunk = _blocks_per_chunk(era, extra, spans)
    windows = era.kv_offloading == "cpu_chunks"  # a window's reach in chunks: 0.33's OffloadingGroupConfig
    tier_groups = tuple(
        HostTierGroup(i, span, len(g.layer_names),
                      _window_chunks(_first_layer_spec(g.spec), span * blocks_per_chunk) if windows else None)
        for i, (g, span) in enumerate(zip(groups, spans)))
    per_block = run.worker_kv_bytes // run.num_blocks if run.num_blocks > 0 else 0
    world = run.tensor_parallel_size * run.pipeline_parallel_size
    chunk, replicated = _chunk_bytes(era, groups, per_block, blocks_per_chunk, run)
    num_chunks = int(cpu_bytes) // chunk if chunk else 0
    tokens = _tier_tokens(tier_groups, blocks_per_chunk, num_chunks, run.max_model_len)
    allocated, alloc_note = _host_allocation(era, num_chunks, chunk, per_block, blocks_per_chunk, world,
                                             run.cross_layer_layout)
    notes = [n for n in ("one copy of the MLA cache for every TP rank (replicated layout)" if replicated else None,
                         alloc_note,
                         None if windows else "tokens held: kvplan's count by 0.33's CPUOffloadingInfo formula")
             if n]
    return HostTier(
        **base, sized=True, cpu_bytes_to_use=int(cpu_bytes), world_size=world, groups=tier_groups,
        worker_kv_bytes_per_block=per_block, blocks_per_chunk=blocks_per_chunk, kv_bytes_per_chunk=chunk,
        num_chunks=num_chunks, cpu_kv_cache_size_bytes=num_chunks * chunk, cpu_kv_cache_size_tokens=tokens,
        host_bytes_allocated=allocated,
        host_to_gpu_tokens_ratio=round(tokens / run.gpu_kv_tokens, 2) if tokens and run.gpu_kv_tokens else None,
        note="; ".join(notes) or None)


# LMCache's own defaults and units (LMCache/LMCache lmcache/v1/config.py @ 3ecd72f84ee028571d17a9694d910b5339d33874,
# _CONFIG_DEFINITIONS): chunk_size 256 tokens, local_cpu True, max_local_cpu_size 5.0 (GB, a float; logged
# "{value} GB"); from_env reads LMCACHE_<NAME>; from_file the same keys from the YAML file LMCACHE_CONFIG_FILE
# names. Each worker's LMCacheEngine takes MixedMemoryAllocator(int(max_local_cpu_size * 1024**3)) of pinned
# host memory (LMCacheEngineBuilder._Create_memory_allocator, lmcache/v1/cache_engine.py).
LMCACHE_CHUNK_TOKENS = 256
LMCACHE_MAX_LOCAL_CPU_GB = 5.0


def lmcache_settings(env: dict | None) -> dict:
    """LMCache's settings as a vLLM process's LMCacheConnectorV1 loads them (vLLM's in-tree adapter, 0.20.0
    ``lmcache_integration/utils.py:31-63``: the file ``LMCACHE_CONFIG_FILE`` names, overridden by the
    ``LMCACHE_*`` variables, else the variables alone): ``{"max_local_cpu_size", "chunk_size", "local_cpu",
    "source"}``. A config file kvplan cannot read is reported in ``source``."""
    env = env or {}
    out: dict = {"max_local_cpu_size": LMCACHE_MAX_LOCAL_CPU_GB, "chunk_size": LMCACHE_CHUNK_TOKENS,
                 "local_cpu": True, "source": "LMCache's default max_local_cpu_size 5.0 GB"}
    if env.get("LMCACHE_CONFIG_FILE"):
        out["source"] = (f"LMCACHE_CONFIG_FILE={env['LMCACHE_CONFIG_FILE']} (not read by kvplan; its "
                         "max_local_cpu_size is taken as LMCache's default 5.0 GB unless a variable sets it)")
    raw = env.get("LMCACHE_MAX_LOCAL_CPU_SIZE")
    if raw is not None:
        try:
            out["max_local_cpu_size"] = float(raw)
            out["source"] = f"LMCACHE_MAX_LOCAL_CPU_SIZE={raw}"
        except ValueError:
            raise OptionError(f"LMCACHE_MAX_LOCAL_CPU_SIZE={raw!r}: LMCache reads a number of GB (float); "
                              "write e.g. LMCACHE_MAX_LOCAL_CPU_SIZE=20") from None
    if env.get("LMCACHE_CHUNK_SIZE") is not None:
        try:
            out["chunk_size"] = int(env["LMCACHE_CHUNK_SIZE"])
        except ValueError:
            raise OptionError(f"LMCACHE_CHUNK_SIZE={env['LMCACHE_CHUNK_SIZE']!r}: LMCache reads an integer "
                              "(tokens); write e.g. LMCACHE_CHUNK_SIZE=256") from None
    if env.get("LMCACHE_LOCAL_CPU") is not None:
        out["local_cpu"] = str(env["LMCACHE_LOCAL_CPU"]).lower() in ("true", "1")
    return out


def lmcache_tier(base: dict, kv_transfer_config: dict, *, world_size: int, groups, num_blocks: int,
                 worker_kv_bytes: int, max_model_len: int, gpu_kv_tokens: int,
                 lmcache: dict | None = None) -> HostTier:
    """The host buffer LMCache takes in a vLLM engine: LMCacheConnectorV1 builds one LMCache engine per
    worker (0.20.0 ``lmcache_integration/vllm_v1_adapter.py:575-600``: ``worker_count`` = TP; the extra
    config's ``lmcache.*`` keys override LMCache's own settings), each with ``max_local_cpu_size`` GB of
    pinned memory. LMCacheMPConnector (``--kv-offloading-backend lmcache`` from 0.23) talks to an LMCache
    server process that holds the tier: vLLM passes it no size."""
    from kvplan.results.host_tier import HostTier

    connector = base["kv_connector"]
    if connector != "LMCacheConnectorV1":
        return HostTier(**base, sized=False, note="the LMCache server process holds the tier; vLLM passes it no size")
    settings = dict(lmcache or lmcache_settings(None))
    extra = kv_transfer_config.get("kv_connector_extra_config") or {}
    if "lmcache.max_local_cpu_size" in extra:
        settings["max_local_cpu_size"] = float(extra["lmcache.max_local_cpu_size"])
        settings["source"] = (f"lmcache.max_local_cpu_size={extra['lmcache.max_local_cpu_size']} in "
                              "kv_connector_extra_config")
    if "lmcache.chunk_size" in extra:
        settings["chunk_size"] = int(extra["lmcache.chunk_size"])
    if "lmcache.local_cpu" in extra:
        settings["local_cpu"] = bool(extra["lmcache.local_cpu"])
    per_worker = int(settings["max_local_cpu_size"] * GiB)
    chunk_tokens = int(settings["chunk_size"])
    tokens = None
    notes = [f"LMCache's own buffer: {settings['max_local_cpu_size']:g} GB of pinned host memory for each of "
             f"{world_size} worker(s), {chunk_tokens}-token chunks"]
    if len(groups) == 1 and type(groups[0].spec).__name__ in ("FullAttentionSpec", "MLAAttentionSpec") \
            and num_blocks > 0 and per_worker > 0:
        # one chunk: chunk_size tokens of every layer's K and V on this worker (LMCache's kv_shape
        # (num_layer, 2 or 1 for MLA, chunk_size, num_kv_head, head_size)), the worker's per-token KV bytes
        per_token = worker_kv_bytes // num_blocks // groups[0].spec.block_size
        chunk_bytes = per_token * chunk_tokens
        if chunk_bytes > 0:
            tokens = per_worker // chunk_bytes * chunk_tokens
            notes.append("tokens held: kvplan's count of whole chunks in one worker's buffer (LMCache's "
                         "per-object alignment not counted)")
    if not settings["local_cpu"]:
        notes.append("local_cpu is off: the buffer stages transfers and holds no cache")
        tokens = None
    return HostTier(
        **base, sized=True, world_size=world_size, cpu_kv_cache_size_bytes=per_worker * world_size,
        host_bytes_allocated=per_worker * world_size, cpu_kv_cache_size_tokens=tokens,
        host_to_gpu_tokens_ratio=round(tokens / gpu_kv_tokens, 2) if tokens and gpu_kv_tokens else None,
        basis=settings["source"], note="; ".join(notes))


def pinned_round_bytes(size: int) -> int:
    """PyTorch's pinned caching host allocator rounds each allocation up to the next power of two
    (``aten/src/ATen/core/CachingHostAllocator.h`` ``roundSize``: ``c10::llvm::PowerOf2Ceil(size)``
    while ``size <= pinned_max_round_threshold()``, whose default is SIZE_MAX; torch 2.13.0's header,
    lines 300-309, as installed in the golden base venvs; the rounding vllm#48436 and vllm#50094 measured
    on the 0.2x tensor path: 6 GiB -> 8, 10 -> 16, 33 -> 64)."""
    return 1 << (size - 1).bit_length() if size > 0 else 0


def _host_allocation(era: Era, num_chunks: int, chunk: int, per_block: int, blocks_per_chunk: int, world: int,
                     cross_layer_layout: bool) -> tuple[int | None, str | None]:
    """The host memory the workers actually take for the tier, and how it is allocated.

    - 0.14-0.26 (``CpuGpuOffloadingHandlers``, 0.20.0 ``vllm/v1/kv_offload/worker/cpu_gpu.py:371-410``;
      0.14.1 ``cpu_gpu.py:193-265``): every worker ``torch.zeros(..., pin_memory=True)`` one host tensor per
      KV tensor it registered, through the pinned caching allocator (power-of-two rounding). With the
      connector's ``prefer_cross_layer_blocks`` (True, ``offloading_connector.py``) the V1 model runner keeps a
      single cross-layer tensor for one group of attention on a backend with a layers dimension
      (``kv_connector_model_runner_mixin.py`` ``use_uniform_kv_cache``, 0.20.0 lines 150-190): one host
      tensor of ``num_blocks x worker bytes per block x blocks per chunk``, rounded.
    - 0.27 on (``CPUOffloadingSpec.get_handlers``, 0.27.1 ``vllm/v1/kv_offload/cpu/spec.py:144-172``): one
      ``SharedOffloadRegion`` (mmap + ``cudaHostRegister``) of ``num_chunks x kv_bytes_per_chunk`` on CUDA
      (not ROCm from 0.32): no rounding beyond the page."""
    if era.kv_offloading in ("aligned_chunks", "cpu_chunks"):
        return num_chunks * chunk, "one shared host region (mmap + cudaHostRegister, /dev/shm) on CUDA hosts"
    if era.kv_offloading not in ("blocks", "chunks") or num_chunks <= 0:
        return None, None
    if cross_layer_layout:
        tensor = num_chunks * per_block * blocks_per_chunk
        return world * pinned_round_bytes(tensor), (
            f"pinned torch tensors: one cross-layer tensor of {tensor:,} bytes per worker, rounded up to a power "
            "of two by the pinned caching allocator")
    return None, ("pinned torch tensors, one per KV tensor, each rounded up to a power of two by the pinned "
                  "caching allocator (up to 2x the sized bytes; this layout's tensors are not modelled)")


def chunked_config(era: Era) -> bool:
    """From 0.26 the connector builds an ``OffloadingConfig`` (``build_offloading_config``)."""
    return era.kv_offloading in ("chunks", "aligned_chunks", "cpu_chunks")


def _check_hash_alignment(groups, spans: list[int], mamba_cache_mode: str,
                          names: tuple[str, str] = ("tokens_per_block", "tokens_per_hash")) -> None:
    """``build_offloading_config``'s assertion: every group's span divides by the hash block. With a
    connector configured, block hashing is active; a Mamba group outside align mode backs the hash
    block off to the scheduler's (the LCM of the spans), which the smaller spans do not divide."""
    if len(spans) <= 1:
        return
    lcm = math.lcm(*spans)
    backs_off = mamba_cache_mode != "align" and any(isinstance(_first_layer_spec(g.spec), MambaSpec)
                                                    for g in groups)
    per_hash = lcm if backs_off else math.gcd(*spans)
    for span in spans:
        if span % per_hash:
            raise EngineFailure(
                "AssertionError", f"{names[0]}={span} not divisible by {names[1]}={per_hash}. Hybrid "
                "models (e.g. Mamba+Attention) need --enable-prefix-caching to align block sizes.", "kv_connector")


def _tier_tokens(groups: tuple[HostTierGroup, ...], blocks_per_chunk: int, num_chunks: int,
                 max_model_len: int) -> int | None:
    """``CPUOffloadingInfo``'s tokens: chunks per max_model_len request, summed over the groups."""
    if max_model_len <= 0 or not groups:
        return None
    per_request = 0
    for g in groups:
        n = cdiv(max_model_len, g.tokens_per_block * blocks_per_chunk)
        if g.sliding_window_size_in_chunks is not None:
            n = min(n, g.sliding_window_size_in_chunks)
        per_request += n
    return num_chunks * max_model_len // per_request

