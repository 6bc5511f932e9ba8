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
from typing import Any

from kvplan.engines.vllm.eras import Era, first_release
from kvplan.errors import EngineFailure, OptionError
from kvplan.results.host_tier import HostTier, HostTierGroup
from kvplan.specs import ChunkedLocalAttentionSpec, KVCacheSpec, MambaSpec, MLAAttentionSpec, SlidingWindowSpec
from kvplan.units import cdiv

GiB = 1 << 30
HOST_PAGE_BYTES = 4096  # mmap.PAGESIZE on x86-64 Linux: SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT
NATIVE_CONNECTORS = frozenset({"OffloadingConnector"})


def transfer_config(kv_transfer_config: dict | None, size_gib: float | None, backend: str | None,
                    *, simple_offload: bool = False) -> dict | None:
    """The ``kv_transfer_config`` vLLM holds after ``_post_init_kv_transfer_config``."""
    if size_gib is None:
        return kv_transfer_config
    out = dict(kv_transfer_config or {})
    extra = dict(out.get("kv_connector_extra_config") or {})
    if (backend or "native") == "native":
        out["kv_connector"] = "SimpleCPUOffloadConnector" if simple_offload else "OffloadingConnector"
        extra["cpu_bytes_to_use"] = size_gib * GiB
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
              decode_context_parallel_size: int = 1, mamba_cache_mode: str = "none") -> HostTier | None:
    """The host tier for one engine. ``groups``: the scheduler's KV cache groups (``layer_names``,
    ``spec``); ``worker_kv_bytes``: the bytes of one worker's KV buffer holding ``num_blocks`` blocks.
    None when no offloading connector is configured."""
    if not kv_transfer_config:
        return None
    if backend is not None and era.kv_offloading == "none":
        raise OptionError(f"--kv-offloading-size: vllm=={era.stands_for} has no such flag (from "
                          f"{first_release('kv_offloading', 'flags')}); drop it or pass --kv-transfer-config")
    connector = str(kv_transfer_config.get("kv_connector") or "")
    if "Offload" not in connector and "LMCache" not in connector:
        return None  # a P/D or other connector: no host tier of its own
    role = str(kv_transfer_config.get("kv_role") or "kv_both")
    base: dict[str, Any] = dict(kv_connector=connector, kv_role=role, backend=backend, hybrid_kv_cache_manager=hma_on)
    if connector not in NATIVE_CONNECTORS:
        # LMCacheMPConnector: vLLM's builtin class does not subclass SupportsHMA (0.34.0
        # kv_connector/v1/lmcache_mp_connector.py:462); the lmcache package's class replaces it when installed
        note = ("the LMCache server process holds the tier; vLLM passes it no size" if "LMCache" in connector
                else f"{connector}'s host pool is not modelled yet")
        return HostTier(**base, sized=False, note=note)
    if era.kv_offloading != "cpu_chunks":
        return HostTier(**base, sized=False,
                        note=f"the host tier of vllm=={era.stands_for} is not modelled yet (modelled from 0.33.0)")
    extra = kv_transfer_config.get("kv_connector_extra_config") or {}
    cpu_bytes = extra.get("cpu_bytes_to_use")
    if not cpu_bytes:
        raise EngineFailure("Exception", "cpu_bytes_to_use must be specified in kv_connector_extra_config",
                            "kv_connector")
    dcp = decode_context_parallel_size
    selected = [(i, g) for i, g in enumerate(groups)]
    if not selected:
        raise EngineFailure("ValueError", "KV offloading found no eligible cache groups.", "kv_connector")
    # resolve_dcp_kv_block_size: attention specs are DCP-sharded (the release's default), Mamba states not
    spans = [g.spec.block_size * (1 if isinstance(_first_layer_spec(g.spec), MambaSpec) else dcp)
             for _, g in selected]
    _check_hash_alignment(groups, spans, mamba_cache_mode)
    blocks_per_chunk = 1
    by_blocks, by_tokens = extra.get("blocks_per_chunk"), extra.get("block_size")
    if by_blocks is not None and by_tokens is not None:
        raise EngineFailure("ValueError", "Specify only one of 'block_size' or 'blocks_per_chunk' in "
                            "kv_connector_extra_config.", "kv_connector")
    if by_blocks is not None:
        blocks_per_chunk = int(by_blocks)
        if blocks_per_chunk <= 0:
            raise EngineFailure("ValueError", "'blocks_per_chunk' must be greater than 0.", "kv_connector")
    elif by_tokens is not None:
        tokens = int(by_tokens)
        if len(set(spans)) != 1:
            raise EngineFailure("AssertionError", "If 'block_size' is specified in kv_connector_extra_config, "
                                "there must be at least one KV cache group, and all groups must have the same "
                                "block size.", "kv_connector")
        span = spans[0]
        if tokens % span:
            raise EngineFailure(
                "ValueError", f"'block_size'={tokens} in kv_connector_extra_config must be a multiple of the GPU "
                f"KV cache block size ({span} tokens). Use {-(-tokens // span) * span} instead, or set "
                "'blocks_per_chunk' to express the chunk size in blocks.", "kv_connector")
        blocks_per_chunk = tokens // span
    tier_groups = tuple(
        HostTierGroup(i, span, len(g.layer_names), _window_chunks(_first_layer_spec(g.spec), span * blocks_per_chunk))
        for (i, g), span in zip(selected, spans))
    per_block = worker_kv_bytes // num_blocks if num_blocks > 0 else 0
    world = tensor_parallel_size * pipeline_parallel_size
    # CPUOffloadingSpec: one copy of an MLA cache under TP (every rank holds the same latent) on a
    # CUDA host's shared region; single node, TP only, the multiprocessing executor
    use_mla = all(isinstance(_first_layer_spec(g.spec), MLAAttentionSpec) for g in groups)
    replicated = (use_mla and tensor_parallel_size > 1 and pipeline_parallel_size == 1 and dcp == 1
                  and per_block > 0)
    num_chunks = chunk = 0
    if per_block > 0 and world > 0:
        copies = 1 if replicated else world
        chunk = -(-(per_block * copies * blocks_per_chunk) // HOST_PAGE_BYTES) * HOST_PAGE_BYTES
        num_chunks = int(cpu_bytes) // chunk
    tier_tokens = _tier_tokens(tier_groups, blocks_per_chunk, num_chunks, max_model_len)
    return HostTier(
        **base, sized=True, cpu_bytes_to_use=int(cpu_bytes), world_size=world, groups=tier_groups,
        worker_kv_bytes_per_block=per_block, blocks_per_chunk=blocks_per_chunk, kv_bytes_per_chunk=chunk,
        num_chunks=num_chunks, cpu_kv_cache_size_bytes=num_chunks * chunk, cpu_kv_cache_size_tokens=tier_tokens,
        host_to_gpu_tokens_ratio=round(tier_tokens / gpu_kv_tokens, 2) if tier_tokens and gpu_kv_tokens else None,
        note="one copy of the MLA cache for every TP rank (replicated layout)" if replicated else None)


def _check_hash_alignment(groups, spans: list[int], mamba_cache_mode: str) -> None:
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
                "AssertionError", f"tokens_per_block={span} not divisible by tokens_per_hash={per_hash}. Hybrid "
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

