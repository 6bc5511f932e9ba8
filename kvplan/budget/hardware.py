"""GPU presets (the memory CUDA reports for each card) and the batch defaults ``vllm serve`` picks.

``--gpu`` names a preset; ``--gpu-memory`` (GiB) covers any other card, or a measured figure.
The presets give ``torch.cuda.mem_get_info()[1]`` where a public printout of it was found
(``basis="cuda"``), else the ``nvidia-smi`` total (``basis="nvidia-smi"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan.errors import OptionError
from kvplan.units import GiB, MiB


@dataclass(frozen=True)
class GpuPreset:
    name: str
    memory_bytes: int  # total memory CUDA reports (basis "cuda"), else nvidia-smi's total
    basis: str  # "cuda" | "nvidia-smi"
    source: str
    nominal: str  # the marketing size
    aliases: tuple[str, ...] = ()
    rocm: bool = False  # an AMD card (vLLM's ROCm platform: the extensible KV cache keeps a 3 GiB margin floor)

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GiB


def _mib(n: int) -> int:
    return n * MiB


# Figures: torch.cuda.get_device_properties(0).total_memory (= cudaGetDeviceProperties
# totalGlobalMem = mem_get_info()[1]), printed in MiB by torch, from public printouts; it
# moves by a few MiB between driver versions.
GPU_PRESETS: dict[str, GpuPreset] = {p.name: p for p in (
    GpuPreset("H100-80GB", _mib(81089), "cuda",
              "torch total_memory=81089MB (torch 2.7, H100 80GB HBM3; 81082-81090 seen across drivers) = 79.19 GiB; "
              "vLLM logs total_gpu_memory 79.22 GiB (vllm PR #10511)", "80 GB HBM3",
              ("H100", "H100-SXM", "H100-80G", "H100-SXM5-80GB")),
    GpuPreset("H100-NVL-94GB", _mib(95830), "nvidia-smi",
              "nvidia-smi total 95830MiB (H100 NVL); CUDA reports ~0.5 GiB less", "94 GB HBM3",
              ("H100-NVL", "H100NVL")),
    GpuPreset("H200-141GB", _mib(143156), "cuda",
              "torch total_memory=143156MB (NVIDIA H200) = 139.80 GiB; nvidia-smi shows 143771MiB", "141 GB HBM3e",
              ("H200", "H200-SXM")),
    GpuPreset("B200-180GB", _mib(182642), "cuda",
              "torch total_memory=182642MB (NVIDIA B200) = 178.36 GiB, as vLLM logged 178.36 GiB total "
              "(vllm PR #21489); nvidia-smi shows 183359MiB", "180 GB HBM3e",
              ("B200",)),
    GpuPreset("A100-40GB", 42_298_834_944, "cuda",
              "deviceQuery totalGlobalMem 42298834944 bytes (A100-SXM4-40GB) = 39.39 GiB", "40 GB HBM2",
              ("A100-40G", "A100-SXM4-40GB")),
    GpuPreset("A100-80GB", _mib(81920), "nvidia-smi",
              "nvidia-smi total 81920MiB (modal-labs/modal-client PR #2797); CUDA reports ~0.4-0.6 GiB less",
              "80 GB HBM2e", ("A100", "A100-80G", "A100-SXM4-80GB")),
    GpuPreset("L40S-48GB", _mib(45589), "cuda",
              "torch total_memory=45589MB (NVIDIA L40S) = 44.52 GiB; nvidia-smi shows 46068MiB", "48 GB GDDR6",
              ("L40S",)),
    GpuPreset("L4-24GB", _mib(23034), "nvidia-smi",
              "nvidia-smi total 23034MiB (modal-labs/modal-client PR #2797); CUDA reports ~0.4 GiB less",
              "24 GB GDDR6", ("L4",)),
    GpuPreset("A10G-24GB", _mib(22587), "cuda",
              "torch total_memory=22587MB (NVIDIA A10G) = 22.06 GiB", "24 GB GDDR6", ("A10G",)),
    GpuPreset("RTX-4090-24GB", _mib(24563), "cuda",
              "torch total_memory=24563MB (GeForce RTX 4090) = 23.99 GiB; nvidia-smi shows 24564MiB",
              "24 GB GDDR6X", ("RTX-4090", "RTX4090", "4090")),
    GpuPreset("MI300X-192GB", _mib(196592), "cuda",
              "torch (ROCm) total_memory=196592MB (AMD Instinct MI300X) = 191.98 GiB", "192 GB HBM3",
              ("MI300X",), rocm=True),
)}


def _key(name: str) -> str:
    return name.strip().upper().replace("_", "-").replace(" ", "-")


def get_gpu(name: str) -> GpuPreset:
    """A preset by name or alias, case-insensitive (``h100``, ``H100-80GB``, ``mi300x``)."""
    key = _key(name)
    for p in GPU_PRESETS.values():
        if key == _key(p.name) or key in (_key(a) for a in p.aliases):
            return p
    raise OptionError(f"unknown GPU '{name}'; presets: {', '.join(GPU_PRESETS)} (or pass --gpu-memory GiB)")


def gpu_memory(gpu: str | None, gpu_memory_gib: float | None) -> tuple[str | None, int, str]:
    """``(name, bytes, source)`` from ``--gpu`` and/or ``--gpu-memory`` (the latter wins)."""
    if gpu_memory_gib is not None:
        if not (isinstance(gpu_memory_gib, (int, float)) and math.isfinite(gpu_memory_gib) and gpu_memory_gib > 0):
            raise OptionError(f"--gpu-memory must be a positive number of GiB, got {gpu_memory_gib!r}")
        name = get_gpu(gpu).name if gpu else None
        return name, int(gpu_memory_gib * GiB), f"--gpu-memory {gpu_memory_gib:g} GiB"
    if gpu is None:
        raise OptionError("no GPU: pass --gpu (e.g. H100-80GB) or --gpu-memory GiB")
    p = get_gpu(gpu)
    return p.name, p.memory_bytes, f"preset {p.name} ({p.basis}): {p.source}"


# ----------------------------------------------------------------------- scheduler defaults

# Without a GPU to look at, kvplan assumes an H100/H200-class card (the reference's setting).
DEFAULT_BATCH = (8192, 1024)


def vllm_batch_defaults(gpu: str | None, gpu_memory_gib: float | None, *, large_tier: bool = True) -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` that ``vllm serve`` picks for this card
    (``EngineArgs.get_batch_defaults``, OPENAI_API_SERVER, read in vLLM 0.33.0): ≥ 160 GiB
    (B200, MI300X) 16384 and 1024; ≥ 70 GiB except A100 (H100, H200) 8192 and 1024; anything
    else 2048 and 256. The ≥ 160 GiB tier is not in 0.11–0.18 (``large_tier=False``)."""
    if gpu is None and gpu_memory_gib is None:
        return DEFAULT_BATCH
    name, total, _ = gpu_memory(gpu, gpu_memory_gib)
    if large_tier and total >= 160 * GiB:
        return 16384, 1024
    if total >= 70 * GiB and "a100" not in (name or "").lower():
        return 8192, 1024
    return 2048, 256
