"""Free memory on a device, and the KV budget ``--budget-from-device`` derives from it.

torch is imported here, inside ``import_torch`` only, for the whole ``kvplan.device``
package; importing any module of the package never loads it. CPU free memory is read
without torch or psutil (``cpu_free_bytes``).
"""

from __future__ import annotations

import os

from kvplan.results.budget import DeviceBudget
from kvplan.budget.sizing import kv_cache_sizing, resolve_gpu_memory_utilization
from kvplan.errors import DeviceError, OptionError
from kvplan.units import format_bytes

INSTALL_HINT = "install the optional extra: pip install 'kvplan[gpu]' (or a torch wheel for your machine)"


def import_torch():
    try:
        import torch
    except ImportError:
        raise DeviceError(f"--allocate needs torch, which is not installed; {INSTALL_HINT}") from None
    return torch


def _device_kind(device: str) -> str:
    d = device.strip().lower()
    if d == "cpu":
        return "cpu"
    if d == "cuda" or (d.startswith("cuda:") and d[5:].isdigit()):
        return "cuda"
    raise DeviceError(f"unknown device '{device}'; use cuda, cuda:N or cpu")


def resolve_device(torch, device: str):
    kind = _device_kind(device)
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise DeviceError(
            f"--device {device}: torch {torch.__version__} sees no CUDA device (a CPU-only build, or no GPU "
            "visible); use --device cpu, or install a CUDA build of torch on a machine with a GPU"
        )
    dev = torch.device(device.strip().lower())
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    if index >= torch.cuda.device_count():
        raise DeviceError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) visible (cuda:0 …)")
    return torch.device("cuda", index)


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _stat_value(path: str, key: str) -> int:
    try:
        with open(path) as f:
            for line in f:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _cgroup_free_bytes(root: str = "/sys/fs/cgroup") -> int | None:
    """Room left under this process's cgroup memory limit, or None when there is no limit.

    v2: ``memory.max − memory.current + inactive_file``; v1: ``memory.limit_in_bytes −
    memory.usage_in_bytes + total_inactive_file`` (inactive page cache is reclaimed before
    the limit bites, as the kubelet counts a working set)."""
    for limit_p, usage_p, stat_p, inactive in (
        (f"{root}/memory.max", f"{root}/memory.current", f"{root}/memory.stat", "inactive_file"),
        (f"{root}/memory/memory.limit_in_bytes", f"{root}/memory/memory.usage_in_bytes",
         f"{root}/memory/memory.stat", "total_inactive_file"),
    ):
        limit, usage = _read_int(limit_p), _read_int(usage_p)
        if limit is None or usage is None or limit >= 1 << 60:  # "max" or v1's "unlimited" (2^63 − page)
            continue
        return max(limit - usage + _stat_value(stat_p, inactive), 0)
    return None


def cpu_free_bytes(meminfo: str = "/proc/meminfo", cgroup_root: str = "/sys/fs/cgroup") -> tuple[int, str]:
    """Free memory for ``--device cpu`` and the rule that gave it (no psutil).

    ``MemAvailable`` from ``/proc/meminfo`` (the kernel's estimate of what can be
    allocated without swapping, page cache included); where there is no ``/proc``,
    ``os.sysconf(SC_AVPHYS_PAGES) · SC_PAGE_SIZE``. Capped by the room left under a
    cgroup memory limit, when there is one (containers)."""
    free, rule = None, ""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free, rule = int(line.split()[1]) * 1024, "/proc/meminfo MemAvailable"
                    break
    except (OSError, ValueError, IndexError):
        pass
    if free is None:
        try:
            free, rule = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "sysconf(SC_AVPHYS_PAGES)"
        except (ValueError, OSError, AttributeError):
            raise DeviceError("cannot read free CPU memory: no /proc/meminfo and no sysconf(SC_AVPHYS_PAGES)") from None
    cg = _cgroup_free_bytes(cgroup_root)
    if cg is not None and cg < free:
        free, rule = cg, rule + ", capped by the cgroup memory limit"
    return free, rule


def free_bytes(torch, dev) -> tuple[int, str]:
    if dev.type == "cuda":
        free, _total = torch.cuda.mem_get_info(dev)
        return int(free), "torch.cuda.mem_get_info"
    return cpu_free_bytes()


def device_free_bytes(device: str) -> tuple[int, str]:
    """Free bytes on ``device`` now, and the rule used to read them."""
    torch = import_torch()
    return free_bytes(torch, resolve_device(torch, device))


def budget_from_device(device: str, utilization: float, reserve_bytes: int) -> int:
    """The KV budget ``--budget-from-device`` gives: ``free · utilization − reserve``, in bytes.

    ``free`` is what the device has free now (the weights of a model are not loaded by
    kvplan, so this is the memory a KV cache could take on an otherwise idle device)."""
    if not 0 < utilization <= 1:
        raise OptionError(f"--gpu-memory-utilization must be in (0, 1], got {utilization}")
    if reserve_bytes < 0:
        raise OptionError(f"--reserve must not be negative, got {reserve_bytes}")
    free, rule = device_free_bytes(device)
    budget = int(free * utilization) - reserve_bytes
    if budget <= 0:
        raise DeviceError(
            f"--budget-from-device: {device} has {format_bytes(free)} free ({rule}); × {utilization:g} − --reserve "
            f"{format_bytes(reserve_bytes)} leaves nothing for the KV cache; lower --reserve"
        )
    return budget


def device_kv_budget(device: str, era, utilization: float | None = None, reserve_bytes: int = 0, *,
                     enable_extensible_kv_cache: bool | None = None, num_gpu_blocks_override: int | None = None) -> DeviceBudget:
    """``--budget-from-device`` as the JSON's ``budget`` records it: ``budget_from_device``
    with ``--gpu-memory-utilization`` defaulting as ``--gpu`` budgets do
    (``kvplan.budget.sizing.resolve_gpu_memory_utilization``: 1.0 with vLLM 0.34's extensible KV
    cache, else 0.92 from 0.20, 0.9 before)."""
    mode, mode_source = kv_cache_sizing(era, enable_extensible_kv_cache, num_gpu_blocks_override=num_gpu_blocks_override,
                                        cuda_alike=_device_kind(device) == "cuda")
    util, util_source = resolve_gpu_memory_utilization(era, utilization, mode)
    budget = budget_from_device(device, util, reserve_bytes)
    return DeviceBudget(
        source="device",
        device=device,
        kv_cache_sizing=mode,
        kv_cache_sizing_source=mode_source,
        gpu_memory_utilization=util,
        gpu_memory_utilization_source=util_source,
        reserve_bytes=reserve_bytes,
        kv_cache_memory_bytes=budget,
    )
