"""``kvplan gpus``'s records: the card presets."""

from __future__ import annotations

from dataclasses import dataclass, field

from typing import Literal


@dataclass(frozen=True)
class GpuRow:
    """One GPU preset (``kvplan.budget.hardware.GpuPreset``)."""

    name: str
    memory_bytes: int
    basis: str  # "cuda": what CUDA reports; "nvidia-smi": its total
    nominal: str
    aliases: tuple[str, ...]
    source: str
    compute_capability: tuple[int, ...] | None
    platform: Literal["cuda", "rocm"]


@dataclass(frozen=True)
class GpusBody:
    """``kvplan fit --list-gpus``."""

    gpus: tuple[GpuRow, ...]
