"""GPU presets (the memory CUDA reports for each card) and the batch defaults ``vllm serve`` picks.

``--gpu`` names a preset; ``--gpu-memory`` (GiB) covers any other card, or a measured figure.
The presets give ``torch.cuda.mem_get_info()[1]``, the figure vLLM logs, from a public printout
(``basis="cuda"``; only the H100 NVL has the ``nvidia-smi`` total, ``basis="nvidia-smi"``), and
what vLLM's backend choice reads: ``compute_capability`` and ``platform``.
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
    # what torch.cuda.get_device_capability() returns (vLLM's current_platform.get_device_capability;
    # on ROCm torch maps the gfx target: gfx90a -> (9, 0), gfx942 -> (9, 4)); None where not known
    compute_capability: tuple[int, int] | None = None
    platform: str = "cuda"  # vLLM's platform: "cuda" | "rocm" (ROCm: the extensible KV cache keeps a 3 GiB margin floor)

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GiB

    @property
    def rocm(self) -> bool:
        return self.platform == "rocm"


def _mib(n: int) -> int:
    return n * MiB


def _gib2(x: float) -> int:
    """Bytes of a figure vLLM printed in GiB with two decimals (within 5 MiB of the device's)."""
    return round(x * GiB)


# One basis: the memory CUDA reports (torch.cuda.mem_get_info()[1] = cudaGetDeviceProperties
# totalGlobalMem = torch's get_device_properties().total_memory, which torch prints in MiB as
# "MB"), the figure vLLM multiplies by --gpu-memory-utilization and prints in its logs
# ("Free memory on device (free/total GiB)", "total_gpu_memory"). Each number is one public
# printout of it (torch, CUDA's deviceQuery, or a vLLM log), quoted in the source; it moves by
# a few MiB between drivers. The one exception, the H100 NVL, has only an nvidia-smi total
# (basis "nvidia-smi"; the budget warns about it).
GPU_PRESETS: dict[str, GpuPreset] = {p.name: p for p in (
    GpuPreset("H100-80GB", _mib(81089), "cuda",
              "torch total_memory=81089MB (torch 2.7, H100 80GB HBM3; 81082-81090 seen across drivers) = 79.19 GiB; "
              "vLLM logs total_gpu_memory 79.22 GiB (vllm PR #10511)", "80 GB HBM3",
              ("H100", "H100-SXM", "H100-80G", "H100-SXM5-80GB"), (9, 0)),
    GpuPreset("H100-PCIe-80GB", _mib(81008), "cuda",
              "torch printout _CudaDeviceProperties(name='NVIDIA H100 PCIe', major=9, minor=0, total_memory=81008MB, "
              "multi_processor_count=114) = 79.11 GiB", "80 GB HBM2e", ("H100-PCIE", "H100PCIE"), (9, 0)),
    GpuPreset("H100-NVL-94GB", _mib(95830), "nvidia-smi",
              "nvidia-smi total 95830MiB (H100 NVL); no public printout of the CUDA figure found, which is ~0.5 GiB less",
              "94 GB HBM3", ("H100-NVL", "H100NVL"), (9, 0)),
    GpuPreset("H20-96GB", _mib(97285), "cuda",
              "torch printout _CudaDeviceProperties(name='NVIDIA H20', major=9, minor=0, total_memory=97285MB, "
              "multi_processor_count=78) = 95.00 GiB", "96 GB HBM3", ("H20",), (9, 0)),
    GpuPreset("H200-141GB", _mib(143156), "cuda",
              "torch total_memory=143156MB (NVIDIA H200) = 139.80 GiB; nvidia-smi shows 143771MiB", "141 GB HBM3e",
              ("H200", "H200-SXM"), (9, 0)),
    GpuPreset("GH200-96GB", 102_005_473_280, "cuda",
              "deviceQuery 'NVIDIA GH200 480GB': Total amount of global memory 97280 MBytes (102005473280 bytes) "
              "= 95.00 GiB", "96 GB HBM3", ("GH200", "GH200-480GB"), (9, 0)),
    GpuPreset("B200-180GB", _mib(182642), "cuda",
              "torch total_memory=182642MB (NVIDIA B200) = 178.36 GiB, as vLLM logged 178.36 GiB total "
              "(vllm PR #21489); nvidia-smi shows 183359MiB", "180 GB HBM3e",
              ("B200",), (10, 0)),
    GpuPreset("A100-40GB", 42_298_834_944, "cuda",
              "deviceQuery totalGlobalMem 42298834944 bytes (A100-SXM4-40GB) = 39.39 GiB", "40 GB HBM2",
              ("A100-40G", "A100-SXM4-40GB"), (8, 0)),
    GpuPreset("A100-80GB", _gib2(79.32), "cuda",
              "vLLM logged 'Free memory on device (0.49/79.32 GiB) on startup' on an A100 80GB "
              "(vllm-project/vllm-omni issue #276); deviceQuery printouts show 81051-81158 MBytes "
              "(79.15-79.26 GiB) on older drivers; nvidia-smi shows 81920MiB",
              "80 GB HBM2e", ("A100", "A100-80G", "A100-SXM4-80GB"), (8, 0)),
    GpuPreset("L40S-48GB", _gib2(44.40), "cuda",
              "torch's OutOfMemoryError on an L40S with vLLM 0.10.1: 'GPU 0 has a total capacity of 44.40 GiB' "
              "(vllm issue #23230); an older printout showed total_memory=45589MB (44.52 GiB); nvidia-smi shows "
              "46068MiB", "48 GB GDDR6", ("L40S",), (8, 9)),
    GpuPreset("L20-48GB", 47_803_596_800, "cuda",
              "vLLM logged total_gpu_memory: 44.52056884765625GiB (= 47803596800 bytes) on NVIDIA L20 cards "
              "(vllm issue #14011, nvidia-smi 46068MiB there)", "48 GB GDDR6", ("L20",), (8, 9)),
    GpuPreset("L4-24GB", 23_612_293_120, "cuda",
              "deviceQuery 'NVIDIA L4': Total amount of global memory 22518 MBytes (23612293120 bytes) = 21.99 GiB; "
              "nvidia-smi shows 23034MiB", "24 GB GDDR6", ("L4",), (8, 9)),
    GpuPreset("A10G-24GB", _mib(22587), "cuda",
              "torch total_memory=22587MB (NVIDIA A10G) = 22.06 GiB", "24 GB GDDR6", ("A10G",), (8, 6)),
    GpuPreset("RTX-3090-24GB", 25_286_672_384, "cuda",
              "deviceQuery 'NVIDIA GeForce RTX 3090': Global Memory 25286672384 bytes = 23.55 GiB "
              "(Jumperkables/cuda-benchmarking 00_deviceQuery/README.md); an older torch printout shows 24268MB",
              "24 GB GDDR6X", ("RTX-3090", "RTX3090", "3090"), (8, 6)),
    GpuPreset("RTX-4090-24GB", _mib(24563), "cuda",
              "torch total_memory=24563MB (GeForce RTX 4090) = 23.99 GiB; nvidia-smi shows 24564MiB",
              "24 GB GDDR6X", ("RTX-4090", "RTX4090", "4090"), (8, 9)),
    GpuPreset("RTX-5090-32GB", 33_660_534_784, "cuda",
              "deviceQuery 'NVIDIA GeForce RTX 5090' (driver 13.0): Total amount of global memory 32101 MBytes "
              "(33660534784 bytes) = 31.35 GiB", "32 GB GDDR7", ("RTX-5090", "RTX5090", "5090"), (12, 0)),
    GpuPreset("RTX-A6000-48GB", _mib(48676), "cuda",
              "torch printout _CudaDeviceProperties(name='NVIDIA RTX A6000', major=8, minor=6, total_memory=48676MB, "
              "multi_processor_count=84) = 47.54 GiB", "48 GB GDDR6", ("RTX-A6000", "A6000"), (8, 6)),
    GpuPreset("RTX-6000-Ada-48GB", _mib(48622), "cuda",
              "torch printout (name='NVIDIA RTX 6000 Ada Generation', major=8, minor=9, total_memory=48622MB, "
              "multi_processor_count=142) = 47.48 GiB", "48 GB GDDR6", ("RTX-6000-Ada", "RTX6000-Ada", "6000-Ada"),
              (8, 9)),
    GpuPreset("RTX-PRO-6000-96GB", _mib(97250), "cuda",
              "torch printout _CudaDeviceProperties(name='NVIDIA RTX PRO 6000 Blackwell Server Edition', major=12, "
              "minor=0, total_memory=97250MB, multi_processor_count=188) = 94.97 GiB", "96 GB GDDR7",
              ("RTX-PRO-6000", "RTX-PRO-6000-Blackwell", "PRO-6000"), (12, 0)),
    GpuPreset("MI250X-64GB", _mib(65520), "cuda",
              "torch (ROCm) printout _CudaDeviceProperties(name='AMD Instinct MI250X', major=9, minor=0, "
              "gcnArchName='gfx90a:sramecc+:xnack-', total_memory=65520MB) = 63.98 GiB (one GCD, the device vLLM "
              "sees)", "64 GB HBM2e per GCD", ("MI250X", "MI250"), (9, 0), platform="rocm"),
    GpuPreset("MI300X-192GB", _mib(196592), "cuda",
              "torch (ROCm) total_memory=196592MB (AMD Instinct MI300X) = 191.98 GiB", "192 GB HBM3",
              ("MI300X",), (9, 4), platform="rocm"),
)}

# The fit table's default cards (``kvplan fit`` without --gpus): one of each memory class, so that
# the default table stays readable; every preset can be named with --gpus.
FIT_TABLE_DEFAULT = ("H100-80GB", "H100-NVL-94GB", "H200-141GB", "B200-180GB", "A100-40GB", "A100-80GB",
                     "L40S-48GB", "L4-24GB", "A10G-24GB", "RTX-4090-24GB", "MI300X-192GB")

# Cards the issue asks for whose CUDA-reported memory has no public printout kvplan found:
# pass --gpu-memory with the figure vLLM logs ("Free memory on device (free/total GiB)").
NOT_PRESET = ("B300", "MI325X")


def _key(name: str) -> str:
    return name.strip().upper().replace("_", "-").replace(" ", "-")


def get_gpu(name: str) -> GpuPreset:
    """A preset by name or alias, case-insensitive (``h100``, ``H100-80GB``, ``mi300x``)."""
    key = _key(name)
    for p in GPU_PRESETS.values():
        if key == _key(p.name) or key in (_key(a) for a in p.aliases):
            return p
    hint = " (no preset: pass --gpu-memory with the total GiB vLLM logs)" if key in NOT_PRESET else ""
    raise OptionError(f"unknown GPU '{name}'{hint}; presets: {', '.join(GPU_PRESETS)} (or pass --gpu-memory GiB)")


@dataclass(frozen=True)
class GpuCard:
    """The card a deployment runs on, resolved once from ``--gpu`` and ``--gpu-memory`` (``gpu_card``): the
    memory vLLM multiplies by the utilization and where that figure comes from, and what vLLM's backend
    choice reads. Plain values: the stages below the edge read them and never look the preset up again."""

    name: str | None  # the preset's name; None with --gpu-memory alone
    memory_bytes: int  # the total CUDA reports (--gpu-memory when given, else the preset's)
    memory_source: str  # where memory_bytes comes from, for the report
    memory_basis: str | None  # the preset's basis ("cuda" | "nvidia-smi") when memory_bytes is the preset's
    compute_capability: tuple[int, int] | None = None  # the preset's; None without --gpu or where not known
    platform: str = "cuda"  # the preset's ("cuda" | "rocm"); "cuda" without --gpu


def gpu_card(gpu: str | None, gpu_memory_gib: float | None) -> GpuCard:
    """The ``GpuCard`` of ``--gpu`` and/or ``--gpu-memory`` (the latter's figure wins); errors as ``gpu_memory``'s."""
    name, total, source = gpu_memory(gpu, gpu_memory_gib)
    preset = get_gpu(name) if name else None
    if preset is None:
        return GpuCard(None, total, source, None)
    return GpuCard(name, total, source, preset.basis if gpu_memory_gib is None else None,
                   preset.compute_capability, preset.platform)


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
    return card_batch_defaults(gpu_card(gpu, gpu_memory_gib), large_tier=large_tier)


def card_batch_defaults(card: GpuCard | None, *, large_tier: bool = True) -> tuple[int, int]:
    """``vllm_batch_defaults`` of a resolved card (None: no card, the H100/H200 class assumed)."""
    if card is None:
        return DEFAULT_BATCH
    if large_tier and card.memory_bytes >= 160 * GiB:
        return 16384, 1024
    if card.memory_bytes >= 70 * GiB and "a100" not in (card.name or "").lower():
        return 8192, 1024
    return 2048, 256


def preset_table_markdown() -> str:
    """The presets as docs/fit.md shows them (a test checks the page holds exactly this)."""
    lines = ["| preset | memory used | basis | compute capability | platform | source |", "|---|---|---|---|---|---|"]
    for p in GPU_PRESETS.values():
        mib, rest = divmod(p.memory_bytes, MiB)
        size = f"{p.memory_bytes} B" if rest else f"{mib} MiB"
        cc = ".".join(map(str, p.compute_capability)) if p.compute_capability else "?"
        lines.append(f"| {p.name} | {size} ({p.memory_gib:.2f} GiB) | {p.basis} | {cc} | {p.platform} | {p.source} |")
    return "\n".join(lines) + "\n"
