"""How vLLM turns a card's memory into the KV cache's size: the two sizing modes, their
``--gpu-memory-utilization`` defaults and their formulas (pure; no model, no torch).

**profiled** (every release up to 0.33.0; 0.34.0 with ``--no-enable-extensible-kv-cache``,
``--kv-cache-memory-bytes`` or ``--num-gpu-blocks-override``), per worker
(``v1/worker/gpu_worker.py determine_available_memory``)::

    requested = ceil(gpu_memory × gpu_memory_utilization)        (v1/worker/utils.py request_memory)
    kv_cache_memory = requested − weights − activation_peak − non_torch − cudagraph

**extensible** (vLLM 0.34.0's default on CUDA and ROCm, ``CacheConfig.enable_extensible_kv_cache``):
the cache's address range is reserved from the profiled figure at the utilization default 1.0
(``resolved_gpu_memory_utilization``), and its pages are committed after warmup and CUDA-graph
capture, from the memory measured then (``v1/worker/extensible_kv_cache.py
measure_kv_cache_bytes``; ``finalize_extensible_kv_cache`` keeps the smaller of the two)::

    tentative  = requested − weights − activation_peak − non_torch − cudagraph   (the reservation)
    used       = weights + non_torch + cudagraph_resident     (resident after warmup and capture)
    transient  = activation_peak + cudagraph                  (gpu_worker.peak_activation_memory)
    (cudagraph: the profile's estimate, 0 with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0;
     cudagraph_resident: the captured graphs' pool, there unless --enforce-eager)
    margin     = max(1 GiB (3 GiB on ROCm), int(0.75 × transient))
    measured   = min(requested − used, gpu_memory − startup − used − margin) − transient
    kv_cache_memory = min(measured, tentative)

``startup`` is the memory already in use at vLLM's start-up snapshot (the CUDA context, NCCL
communicators, other processes): the profiled mode never sees it (``requested`` is a share of the
total), the extensible mode does (its headroom is the memory actually free). ``transient`` keeps
the profiled CUDA-graph estimate on top of the activation peak because vLLM adds it to
``peak_activation_memory`` (gpu_worker.py 771-773) and seeds the cache's
``reserved_headroom_bytes`` with that (946-948); warmup can only raise it.
"""

from __future__ import annotations

import math

from kvplan.errors import OptionError
from kvplan.units import GiB

PROFILED, EXTENSIBLE = "profiled", "extensible"

# vllm 0.34.0 v1/worker/extensible_kv_cache.py 64-65: KV_CACHE_MARGIN_FLOOR_BYTES, KV_CACHE_MARGIN_FRACTION
MARGIN_FLOOR_BYTES = 1 * GiB
MARGIN_FLOOR_BYTES_ROCM = 3 * GiB
MARGIN_FRACTION = 0.75

_FLAG = "--enable-extensible-kv-cache"
_SOURCE_034 = (
    "vLLM 0.34.0: config/cache.py resolved_gpu_memory_utilization (495-501), config/vllm.py "
    "_resolve_extensible_kv_cache (3180-3263), v1/worker/utils.py request_memory (734-800), v1/worker/gpu_worker.py "
    "determine_available_memory (673-841) and _compile_or_warm_up_model (1022-1240), "
    "v1/worker/extensible_kv_cache.py measure_kv_cache_bytes (592-618), v1/core/kv_cache_planning.py "
    "finalize_extensible_kv_cache (1864-1906)"
)

FORMULAS = {
    PROFILED: "kv_cache_memory = ceil(gpu_memory × gpu_memory_utilization) − weights − activation_peak − non_torch "
              "− cudagraph (vLLM determine_available_memory; see docs/fit.md)",
    EXTENSIBLE: "kv_cache_memory = min(tentative, min(requested − used, gpu_memory − startup − used − margin) − transient); "
                "requested = ceil(gpu_memory × gpu_memory_utilization), tentative = requested − weights − activation_peak "
                "− non_torch − cudagraph, used = weights + non_torch + cudagraph_resident, "
                "transient = activation_peak + cudagraph, "
                "margin = max(margin_floor, 0.75 × transient) (vLLM's extensible KV cache, measured after warmup and "
                "CUDA-graph capture; see docs/fit.md)",
}


def kv_cache_sizing(era, enable_extensible_kv_cache: bool | None = None, *, kv_cache_memory_given: bool = False,
                    num_gpu_blocks_override: int | None = None, cuda_alike: bool = True) -> tuple[str, str]:
    """``(mode, why)``: how ``era`` sizes the KV cache, as ``VllmConfig._resolve_extensible_kv_cache``
    settles ``enable_extensible_kv_cache`` (vLLM 0.34.0 config/vllm.py 3180-3263): on when unset,
    off on a CPU device and where ``kv_cache_memory_bytes`` or ``num_gpu_blocks_override`` replaces
    the measurement, and an error when asked for there (or in a release without it)."""
    if not era.extensible_kv_cache:
        if enable_extensible_kv_cache:
            raise OptionError(f"{_FLAG}: vLLM {era.stands_for} has no extensible KV cache (first in 0.34.0); "
                              f"drop the flag or pick --policy vllm==0.34.0")
        return PROFILED, f"{era.name}: the profiling estimate (no extensible KV cache before 0.34.0)"
    if not cuda_alike:
        if enable_extensible_kv_cache:
            raise OptionError(f"{_FLAG}: vLLM supports it on CUDA and ROCm only, not on a CPU device; drop the flag")
        return PROFILED, "off: CPU device (vLLM's extensible KV cache is CUDA and ROCm only)"
    overridden = ("--kv-cache-memory" if kv_cache_memory_given
                  else "--num-gpu-blocks-override" if num_gpu_blocks_override is not None else None)
    if overridden:
        if enable_extensible_kv_cache:
            raise OptionError(f"{_FLAG}: vLLM refuses it with {overridden}, which replaces the memory it would "
                              f"measure; drop one of the two")
        return PROFILED, f"off: {overridden} given (vLLM then leaves the extensible KV cache off)"
    if enable_extensible_kv_cache is False:
        return PROFILED, "--no-enable-extensible-kv-cache"
    if enable_extensible_kv_cache:
        return EXTENSIBLE, _FLAG
    return EXTENSIBLE, f"{era.name} default (on for CUDA and ROCm)"


def resolve_gpu_memory_utilization(era, given: float | None, mode: str) -> tuple[float, str]:
    """``(utilization, source)``: as given, else ``resolved_gpu_memory_utilization``'s default
    for the mode (0.34.0: 1.0 with the extensible KV cache, 0.92 without; 0.92 from 0.20, 0.9 before)."""
    if given is not None:
        util = float(given)
        if not (0 < util <= 1):
            raise OptionError(f"--gpu-memory-utilization must be in (0, 1], got {util}")
        return util, "--gpu-memory-utilization"
    if mode == EXTENSIBLE and era.extensible_gpu_memory_utilization is not None:
        return era.extensible_gpu_memory_utilization, f"{era.name} default with the extensible KV cache"
    return era.gpu_memory_utilization, f"{era.name} default"


def requested_memory(total: int, utilization: float) -> int:
    """``math.ceil(total_memory × gpu_memory_utilization)`` (v1/worker/utils.py request_memory, 0.18.0-0.34.0)."""
    return math.ceil(total * utilization)


def formula_source(era, mode: str) -> str:
    if mode == EXTENSIBLE:
        return _SOURCE_034
    return (f"vLLM {era.stands_for}: v1/worker/utils.py request_memory, v1/worker/gpu_worker.py "
            "determine_available_memory" + (" (CUDA-graph estimate in the profile)" if era.cudagraph_memory_in_profile
                                            else " (no CUDA-graph term)"))


def stage_kv_cache_bytes(mode: str, *, total: int, utilization: float, weights: int, activation: int,
                         non_torch: int, cudagraph: int, startup: int = 0,
                         margin_floor: int = MARGIN_FLOOR_BYTES, cudagraph_resident: int | None = None,
                         persistent: int = 0) -> dict:
    """One worker's KV bytes by the mode's formula (module docstring), with its intermediate terms.
    ``cudagraph`` is the profile's CUDA-graph estimate (0 when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0),
    ``cudagraph_resident`` the graphs' pool after capture (default: the same figure), which the
    extensible sizing measures whether or not the profile estimated it. ``persistent``: the part of
    ``activation`` that stays allocated (the V2 runner's per-request states): the extensible sizing measures it as
    used memory, not as a transient its margin scales with."""
    requested = requested_memory(total, utilization)
    tentative = requested - weights - activation - non_torch - cudagraph
    if mode != EXTENSIBLE:
        return {"requested_memory_bytes": requested, "kv_cache_memory_bytes": tentative}
    used = weights + non_torch + persistent + (cudagraph if cudagraph_resident is None else cudagraph_resident)
    transient = activation - persistent + cudagraph
    margin = max(margin_floor, int(transient * MARGIN_FRACTION))
    measured = min(requested - used, total - startup - used - margin) - transient
    return {
        "requested_memory_bytes": requested,
        "tentative_kv_cache_memory_bytes": tentative,
        "transient_reserve_bytes": transient,
        "sizing_margin_bytes": margin,
        "measured_kv_cache_memory_bytes": measured,
        "kv_cache_memory_bytes": min(measured, tentative),
    }


def withheld_by_utilization(*, total: int, utilization: float, startup: int, used: int, margin: int) -> int:
    """Bytes an explicit utilization keeps out of an extensible cache: the measured size with a
    budget of all the memory free at start-up, less the one at ``utilization``
    (measure_kv_cache_bytes' warning, 0.34.0 extensible_kv_cache.py 655-676)."""
    free_at_start = total - startup
    requested = requested_memory(total, utilization)
    return (min(free_at_start - used, free_at_start - used - margin)
            - min(requested - used, free_at_start - used - margin))
