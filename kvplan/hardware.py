"""GPU presets and the KV-cache budget vLLM derives from a card's memory (reference §4.6).

vLLM (``gpu_worker.determine_available_memory``), per worker::

    kv_cache_memory = total · gpu_memory_utilization
                      − weights − peak activation − non-torch memory [− CUDA-graph estimate]

``total`` is ``torch.cuda.mem_get_info()[1]``: what CUDA reports as the device's memory,
a little under the card's nominal size (the driver keeps some). The presets below give that
figure where a public printout of it was found (``basis="cuda"``), else the ``nvidia-smi``
total (``basis="nvidia-smi"``, which on the H100 SXM is 0.46 GiB above what CUDA reports).
``--gpu-memory`` (GiB) covers any other card, or a measured figure.

Weights come from ``kvplan.weights`` (exact for the config). The three other terms are
estimates, labelled as such in every output, each with an override:

* **peak activation** (``--activation-memory``): vLLM profiles one forward pass of
  ``max_num_batched_tokens`` dummy tokens, then a sampler pass over ``max_num_seqs``
  dummy requests. kvplan's rule::

      forward = T · (4·H + W) · a        sampler = R · V · 4 · 2        (last PP stage)
      activation = max(forward, sampler) + 256 MiB

  with ``T`` = max_num_batched_tokens, ``R`` = min(max_num_seqs, T), ``H`` the hidden size,
  ``V`` the vocabulary, ``a`` the model dtype's bytes, and ``W`` the widest per-token
  intermediate of any layer on one rank: a dense MLP ``3·I/tp`` (gate-up output and its
  activation), a MoE layer ``top_k·(3·I_moe/tp + H)`` (fused-MoE caches), attention
  ``(q + 2·kv heads on the rank)·head_dim + q heads·v_head_dim``, a Mamba/GDN mixer its
  ``in_proj`` rows on the rank. The 256 MiB stands for kernels' workspaces. Checked
  against one published profile: Llama-3-8B on an H100 at 8192 tokens logged 1.26 GiB of
  activation peak (vllm PR #10511); the rule gives 1.16 GiB.
* **non-torch memory** (``--non-torch-memory``): CUDA context allocations outside
  PyTorch's allocator that vLLM counts (cuBLAS/NCCL buffers): 0.25 GiB on one GPU,
  0.75 GiB when tp·pp > 1 (NCCL communicators, custom all-reduce buffers). Published
  profiles show 0.07-0.20 GiB single-GPU and 0.20 GiB for a 4-GPU run (vllm PR #12126,
  #14447).
* **CUDA-graph reserve** (``--cudagraph-memory``): vLLM ≥ 0.2x estimates the graphs' memory
  during profiling and subtracts it (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``, on by
  default by then; vllm issue #45178); the ``vllm-latest`` policy therefore subtracts
  ``256 MiB + 8 MiB · (layers on the rank)`` (0.52 GiB for a 34-layer Gemma-3-4B, whose
  profile logged 0.65 GiB in vllm PR #21489). Older eras capture graphs after the KV cache
  is sized, so the term is 0 there (the graphs use the ``1 − utilization`` headroom).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan.errors import OptionError
from kvplan.units import GiB, MiB, parse_bytes


@dataclass(frozen=True)
class GpuPreset:
    name: str
    memory_bytes: int  # total memory CUDA reports (basis "cuda"), else nvidia-smi's total
    basis: str  # "cuda" | "nvidia-smi"
    source: str
    nominal: str  # the marketing size
    aliases: tuple[str, ...] = ()

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
              ("MI300X",)),
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


# ----------------------------------------------------------------------- era defaults

def _latest_generation(era) -> bool:
    """0.33-generation behaviour (``vllm-latest`` and the proposals built on it)."""
    return era.kv_size_log == "concurrency"


def default_gpu_memory_utilization(era) -> float:
    """``--gpu-memory-utilization`` default: 0.92 in vLLM 0.33 (``vllm-latest``), 0.9 before."""
    return 0.92 if _latest_generation(era) else 0.9


def subtracts_cudagraph_memory(era) -> bool:
    return _latest_generation(era)


# ----------------------------------------------------------------------- estimates

ACTIVATION_WORKSPACE_BYTES = 256 * MiB
NON_TORCH_SINGLE_BYTES = 256 * MiB
NON_TORCH_MULTI_BYTES = 768 * MiB
CUDAGRAPH_BASE_BYTES = 256 * MiB
CUDAGRAPH_PER_LAYER_BYTES = 8 * MiB


def _top_k(cfg: dict) -> int:
    for key in ("num_experts_per_tok", "top_k_experts", "moe_topk", "num_experts_per_token"):
        v = cfg.get(key)
        if isinstance(v, int) and v > 0:
            return v
    return 1


def _widest_intermediate(inventory, cfg: dict, tp: int, layers: set[int] | None) -> int:
    """``W`` of the module docstring: the widest per-token intermediate on one rank."""
    hidden = int(cfg.get("hidden_size") or 0)
    top_k = _top_k(cfg)
    per_layer: dict[tuple[int | None, str], int] = {}
    for w in inventory.weights:
        if layers is not None and w.layer not in layers:
            continue
        if not w.linear or w.name.endswith(".bias"):
            continue
        rows = w.rank_shape(tp)
        key = (w.layer, w.kind)
        if w.kind == "experts":
            if ".down_proj" in w.name:
                continue
            up = rows[1]  # [E, 2I (or I), H] per rank
            inter = up // 2 if "gate_up" in w.name else up
            per_layer[key] = max(per_layer.get(key, 0), top_k * (up + inter + hidden))
        elif w.kind in ("mlp", "drafter"):
            if w.shard_dim == 0:  # gate/up (column-parallel)
                per_layer[key] = per_layer.get(key, 0) + rows[0]
        elif w.kind in ("attention", "mixer"):
            if w.shard_dim == 0 or w.kv_heads:
                per_layer[key] = per_layer.get(key, 0) + rows[0]
            elif w.shard_dim == 1:  # o_proj / out_proj input
                per_layer[key] = per_layer.get(key, 0) + rows[1]
    widest = 0
    for (layer, kind), width in per_layer.items():
        if kind in ("mlp", "drafter"):
            width = width * 3 // 2  # gate+up output (2I) and the activation (I)
        widest = max(widest, width)
    return widest


def estimate_activation_bytes(inventory, cfg: dict, dtype_bytes: int, *, tp: int, max_num_batched_tokens: int,
                              max_num_seqs: int, layers: set[int] | None = None, last_stage: bool = True) -> int:
    """Peak activation of vLLM's profiling run on one rank (rule in the module docstring)."""
    hidden = int(cfg.get("hidden_size") or 0)
    vocab = int(cfg.get("vocab_size") or 0)
    T = max_num_batched_tokens
    forward = T * (4 * hidden + _widest_intermediate(inventory, cfg, tp, layers)) * dtype_bytes
    sampler = min(max_num_seqs, T) * vocab * 4 * 2 if last_stage else 0
    return max(forward, sampler) + ACTIVATION_WORKSPACE_BYTES


def estimate_non_torch_bytes(world_size: int) -> int:
    return NON_TORCH_MULTI_BYTES if world_size > 1 else NON_TORCH_SINGLE_BYTES


def estimate_cudagraph_bytes(era, num_layers: int) -> int:
    if not subtracts_cudagraph_memory(era):
        return 0
    return CUDAGRAPH_BASE_BYTES + CUDAGRAPH_PER_LAYER_BYTES * num_layers


# ----------------------------------------------------------------------- the budget

OVERRIDE_KEYS = ("weights_memory", "activation_memory", "non_torch_memory", "cudagraph_memory")
_FLAGS = {k: "--" + k.replace("_", "-") for k in OVERRIDE_KEYS}


def _override_bytes(overrides: dict, key: str) -> int | None:
    v = overrides.get(key)
    if v is None:
        return None
    if isinstance(v, bool):
        raise OptionError(f"{_FLAGS[key]} must be a size, got {v!r}")
    if isinstance(v, int):
        n = v
    else:
        n = _parse_size(str(v), _FLAGS[key])
    if n < 0:
        raise OptionError(f"{_FLAGS[key]} must not be negative, got {v!r}")
    return n


def _parse_size(text: str, flag: str) -> int:
    """A size with a unit, fractions allowed and floored to bytes (``13.7GiB``, vLLM's
    "Model loading took 13.72 GiB" copied as is)."""
    try:
        return parse_bytes(text)
    except ValueError:
        raise OptionError(f"{flag}: cannot read {text!r} as a size; write bytes or e.g. 16GiB, 512MiB") from None


def _text_config(config: dict) -> dict:
    inner = config.get("text_config")
    return inner if isinstance(inner, dict) else config


def kv_budget(layout, era, *, gpu: str | None = None, gpu_memory_gib: float | None = None,
              gpu_memory_utilization: float | None = None, overrides: dict | None = None,
              tensor_parallel_size: int | None = None, max_num_batched_tokens: int | None = None,
              max_num_seqs: int | None = None, exact_params: bool | None = None) -> dict:
    """The KV-cache budget per GPU for ``layout`` on a card, as vLLM would derive it.

    ``overrides`` holds the four override sizes (``weights_memory``, ``activation_memory``,
    ``non_torch_memory``, ``cudagraph_memory``: bytes or "16GiB") and may carry the scheduler
    facts the estimate needs when the caller has no keyword for them
    (``tensor_parallel_size``, ``max_num_batched_tokens``, ``max_num_seqs``, ``exact_params``).
    Returns a plain dict (integer bytes, stable key order); ``kv_cache_memory_bytes`` is the
    smallest stage's budget and may be ≤ 0 (vLLM then fails to start).
    """
    from kvplan.model.layout import get_pp_indices
    from kvplan.weights import layout_weight_memory

    overrides = dict(overrides or {})
    tp_given = tensor_parallel_size or overrides.get("tensor_parallel_size") or getattr(layout, "tensor_parallel_size", None)
    tp = int(tp_given or 1)
    T = int(max_num_batched_tokens or overrides.get("max_num_batched_tokens") or 8192)
    R = int(max_num_seqs or overrides.get("max_num_seqs") or 1024)
    exact = bool(exact_params if exact_params is not None else overrides.get("exact_params", False))
    pp = max(1, len(layout.ranks))
    name, total, mem_source = gpu_memory(gpu, gpu_memory_gib)
    util_default = gpu_memory_utilization is None
    util = default_gpu_memory_utilization(era) if util_default else float(gpu_memory_utilization)
    if not (0 < util <= 1):
        raise OptionError(f"--gpu-memory-utilization must be in (0, 1], got {util}")
    requested = int(total * util)
    warnings: list[str] = []
    if not tp_given:
        warnings.append("kv_budget was not told the tensor-parallel size; weights are per GPU at tp 1")

    w_over = _override_bytes(overrides, "weights_memory")
    a_over = _override_bytes(overrides, "activation_memory")
    n_over = _override_bytes(overrides, "non_torch_memory")
    c_over = _override_bytes(overrides, "cudagraph_memory")

    cfg = _text_config(layout.target.config)
    from kvplan.units import dtype_size_bytes

    dbytes = dtype_size_bytes(layout.target.dtype)
    n_layers = layout.target.num_hidden_layers
    bounds = [get_pp_indices(n_layers, r, pp) for r in range(pp)]

    weights = None
    inv = None
    if w_over is None or a_over is None:
        from kvplan.weights import analytic_inventory

        inv = analytic_inventory(layout.target.config, path=getattr(layout.target.source, "path", "<config>"))
    if w_over is None:
        weights = layout_weight_memory(layout, tp=tp, exact_params=exact)

    stages = []
    for s, (a, z) in enumerate(bounds):
        layers = set(range(a, z))
        last = s == pp - 1
        w_bytes = w_over if w_over is not None else weights.stages[s].weight_bytes
        act = a_over if a_over is not None else estimate_activation_bytes(
            inv, cfg, dbytes, tp=tp, max_num_batched_tokens=T, max_num_seqs=R, layers=layers, last_stage=last)
        nt = n_over if n_over is not None else estimate_non_torch_bytes(tp * pp)
        layers_on_stage = (z - a) + (len([ls for ls in layout.layers if ls.source == "drafter"]) if last else 0)
        cg = c_over if c_over is not None else estimate_cudagraph_bytes(era, layers_on_stage)
        kv = requested - w_bytes - act - nt - cg
        stages.append({
            "stage": s,
            "weights_bytes": w_bytes,
            "activation_peak_bytes": act,
            "non_torch_bytes": nt,
            "cudagraph_bytes": cg,
            "kv_cache_memory_bytes": kv,
        })
    budget_stage = min(stages, key=lambda st: st["kv_cache_memory_bytes"])
    if pp > 1:
        warnings.append(
            f"pipeline parallel: each stage has its own budget (smallest: stage {budget_stage['stage']}); kvplan "
            "gives every stage the smallest, vLLM then equalises num_blocks across stages"
        )
    if budget_stage["kv_cache_memory_bytes"] <= 0:
        warnings.append(
            f"no memory left for the KV cache: {requested / GiB:.2f} GiB usable "
            f"({total / GiB:.2f} GiB × {util:g}) minus weights, activation, non-torch and CUDA-graph memory "
            f"is {budget_stage['kv_cache_memory_bytes'] / GiB:.2f} GiB"
        )
    if weights is not None:
        warnings += [n for n in weights.notes if n.startswith("text decoder only")]

    def src(over, what):
        return "override" if over is not None else what

    out = {
        "gpu": name,
        "gpu_memory_bytes": total,
        "gpu_memory_source": mem_source,
        "gpu_memory_utilization": util,
        "gpu_memory_utilization_source": f"{era.name} default" if util_default else "--gpu-memory-utilization",
        "requested_memory_bytes": requested,
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "weights_bytes": budget_stage["weights_bytes"],
        "weights_source": src(w_over, "meta-device count" if exact else "analytic count from the config"),
        "activation_peak_bytes": budget_stage["activation_peak_bytes"],
        "activation_source": src(a_over, "estimate"),
        "non_torch_bytes": budget_stage["non_torch_bytes"],
        "non_torch_source": src(n_over, "estimate"),
        "cudagraph_bytes": budget_stage["cudagraph_bytes"],
        "cudagraph_source": src(c_over, "estimate" if subtracts_cudagraph_memory(era)
                                else f"not subtracted by {era.name}"),
        "kv_cache_memory_bytes": budget_stage["kv_cache_memory_bytes"],
        "estimated": True,
        "stages": stages,
        "weights": None if weights is None else {
            "num_params": weights.num_params,
            "num_params_by_kind": weights.num_params_by_kind,
            "num_params_per_rank": [st.num_params for st in weights.stages],
            "dtype": weights.dtype,
            "quantization": weights.quantization,
            "bytes_by_kind": weights.stages[budget_stage["stage"]].bytes_by_kind,
            "notes": list(weights.notes),
        },
        "max_num_batched_tokens": T,
        "max_num_seqs": R,
        "formula": "kv_cache_memory = gpu_memory × gpu_memory_utilization − weights − activation_peak − "
                   "non_torch − cudagraph (vLLM determine_available_memory; see docs/fit.md)",
        "warnings": warnings,
    }
    return out
