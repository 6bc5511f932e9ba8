"""The host-memory tier around the GPU pool: what ``--kv-offloading-size`` / ``--kv-offloading-backend``
(or a ``--kv-transfer-config`` naming an offloading connector) make vLLM build (issue 36).

Names are vLLM's: the connector, ``cpu_bytes_to_use`` (the request, in bytes, summed over the TP
ranks), ``blocks_per_chunk``, ``num_chunks``, ``kv_bytes_per_chunk``, and the two figures the
CPU spec reports as ``cpu_kv_cache_size_bytes`` / ``cpu_kv_cache_size_tokens``
(``vllm/v1/kv_offload/cpu/common.py`` ``CPUOffloadingInfo`` in 0.33.0 and 0.34.0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import OMIT_NONE


@dataclass(frozen=True)
class HostTierGroup:
    """One KV cache group the tier stores (the prefix-cacheable groups, in group order)."""

    group_id: int
    tokens_per_block: int  # the GPU block's token span (times DCP for sharded attention)
    num_layers: int
    # chunks one request keeps in the tier: a window's reach, 1 for a Mamba state, None for a full layer
    sliding_window_size_in_chunks: int | None


@dataclass(frozen=True)
class HostTier:
    """The host tier one engine builds. ``sized`` is False where the release's connector holds the
    capacity elsewhere (LMCache's server process) or kvplan does not size that release's tier: then
    only the connector and the hybrid-manager decision are the engine's, and ``note`` says why."""

    kv_connector: str
    kv_role: str
    backend: str | None  # --kv-offloading-backend, when the tier came from the flags
    hybrid_kv_cache_manager: bool  # the hybrid manager stays on with this connector
    sized: bool
    note: str | None = field(default=None, metadata=OMIT_NONE)
    cpu_bytes_to_use: int | None = field(default=None, metadata=OMIT_NONE)
    world_size: int | None = field(default=None, metadata=OMIT_NONE)  # workers whose blocks share a chunk
    groups: tuple[HostTierGroup, ...] = ()
    worker_kv_bytes_per_block: int | None = field(default=None, metadata=OMIT_NONE)
    blocks_per_chunk: int | None = field(default=None, metadata=OMIT_NONE)
    kv_bytes_per_chunk: int | None = field(default=None, metadata=OMIT_NONE)  # all workers, page-aligned
    num_chunks: int | None = field(default=None, metadata=OMIT_NONE)
    # the host memory the tier maps (num_chunks x kv_bytes_per_chunk): /dev/shm on CUDA hosts
    cpu_kv_cache_size_bytes: int | None = field(default=None, metadata=OMIT_NONE)
    # tokens the tier holds for requests of max_model_len (vLLM's own figure from 0.33, like the GPU pool's;
    # before, kvplan's count by the same formula: the note says so)
    cpu_kv_cache_size_tokens: int | None = field(default=None, metadata=OMIT_NONE)
    # the host memory the workers actually take: the shared region (0.27+), or 0.14-0.26's pinned torch
    # tensors after the caching allocator's power-of-two rounding (None where that layout is not modelled)
    host_bytes_allocated: int | None = field(default=None, metadata=OMIT_NONE)
    # where the capacity comes from when vLLM does not size it (LMCache's own buffer)
    basis: str | None = field(default=None, metadata=OMIT_NONE)
    # the request's tokens beside the GPU pool's: cpu_kv_cache_size_tokens / the GPU pool's KV tokens
    host_to_gpu_tokens_ratio: float | None = field(default=None, metadata=OMIT_NONE)

    @property
    def memory_bytes(self) -> int | None:
        """The host memory the tier takes, as ``check``'s max_host_memory and ``fit`` count it: what the workers
        actually allocate where known (the pinned allocator's rounding), else the tier's bytes; None unsized."""
        return tier_memory_bytes(self)


@dataclass(frozen=True)
class DeploymentTotals:
    """Every engine of the deployment together (kvplan's sums of one engine's figures, which are vLLM's own).

    Each replica of a manifest and each data-parallel rank is an engine with its own scheduler and KV pool of ``num_blocks`` (the plan
    shows one); tensor- and pipeline-parallel ranks share one engine's pool. ``kv_tokens`` and
    ``max_concurrency`` are one engine's times the engines: what DP 8 and TP 8 on eight GPUs compare by."""

    data_parallel_size: int
    engines: int
    gpus_per_engine: int  # tensor x pipeline parallel ranks
    gpus: int
    kv_tokens: int
    max_concurrency: float
    effective_concurrency: float  # each engine's min(KV-limited, max_num_seqs), summed
    host_memory_bytes: int | None = field(default=None, metadata=OMIT_NONE)  # host tiers, every engine's
    host_kv_tokens: int | None = field(default=None, metadata=OMIT_NONE)
    # copies of the whole deployment a manifest runs (spec.replicas): engines = data_parallel_size x replicas
    replicas: int = 1


def tier_memory_bytes(tier) -> int | None:
    """``HostTier.memory_bytes`` of any object with the tier's fields (the allocated bytes where known, else the
    tier's bytes; None when the tier is not sized)."""
    if tier is None or not getattr(tier, "sized", False):
        return None
    allocated = getattr(tier, "host_bytes_allocated", None)
    return allocated if allocated is not None else getattr(tier, "cpu_kv_cache_size_bytes", None)
