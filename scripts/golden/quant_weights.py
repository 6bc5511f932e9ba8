#!/usr/bin/env python3
"""Quantized linear layers as a vLLM release allocates and keeps them on a card: the weights' bytes (issue 34).

Run inside a release environment (imports nothing from kvplan; ``make_goldens.py --weights`` drives it, one
process per release and card)::

    PYTHONPATH=<release tree> $RELEASE_BASE/bin/python scripts/golden/quant_weights.py --capability 9.0 OUT.json

What it runs, per case (a ``quantization_config`` and a linear layer's input/output sizes):

1. the method vLLM serves the checkpoint with: every registered method's ``override_quantization_method``
   (``gptq`` → ``gptq_marlin`` / ``auto_gptq``, ``awq`` → ``awq_marlin`` / ``auto_awq`` where the card and the
   config allow), as ``ModelConfig._verify_quantization`` asks them, then ``get_quantization_config(name)
   .from_config(cfg)``;
2. a ``ColumnParallelLinear`` (the class of q/k/v and gate/up; TP 1: one rank's whole layer) built with that config on the CPU: the release's
   ``LinearBase.__init__`` picks the method (``get_quant_method``) and its ``create_weights`` registers the
   parameters the loader fills; the bytes recorded (``created``) are every parameter, buffer and tensor
   attribute of the layer (and, in ``kept``, the tensors the method or its kernel holds: Marlin's workspace);
3. ``quant_method.process_weights_after_loading(layer)`` (the Marlin / Machete / CUTLASS repacking, scale
   permutes and swizzles, freed ``g_idx`` / zero points), and the bytes again (``kept``).

STUBS (what needs CUDA; nothing else is replaced):

* the platform answers CUDA with ``--capability`` (``is_cuda``, ``_enum``, ``get_device_capability``,
  ``has_device_capability``, ``supports_fp8``), devices on the CPU, an SM count of 132 (``arch_runner.setup``'s other stubs);
* vLLM's compiled kernels (``torch.ops._C`` / ``_moe_C``) are absent: each op that the release registers a fake
  for (``register_fake("_C::gptq_marlin_repack")`` … in ``vllm/_custom_ops.py``, the release's own statement of
  its output's shape and dtype) runs that fake; any other op is a no-op returning None (a kernel writing into a
  buffer its wrapper allocated; a case whose method needs its result fails and says so in ``kept_error``);
* ``CUTLASS_BLOCK_FP8_SUPPORTED`` (``w8a8_utils``, computed at import, before the platform answered) is computed
  again on the CUDA platform;
* parameters are allocated on the CPU and filled with ones before ``process_weights_after_loading`` (what a
  checkpoint would write: methods read scales back with ``.item()`` / ``torch.unique``); the values the
  repacking computes are not meaningful, their shapes and dtypes are the release's;
* ``Tensor.cuda()`` returns the tensor (the NVFP4 scale swizzle moves its result to the card);
* GPTQ's ``maybe_update_config`` (which lists the quantized modules from the checkpoint's tensor dtypes) is
  answered with the layer's own prefix (its qweight is int32);
* a compiled op the release registers no fake for returns an ``Unknown`` object: an in-place op (its result
  unused: ``gptq_shuffle``) is harmless and named in ``ops_without_fake``; a result used as a tensor fails the
  case (``kept_error``); the Marlin repacks of releases without their fake (0.11) take the output shape of the
  0.19.0 fakes (``BORROWED_FAKES``, named in ``borrowed_fakes``);
* a case that cannot be built (the method refuses the card, an import needs CUDA) records the exception,
  one line, and where (``error``).

Output: ``{"vllm_version", "capability", "cases": [{"case", "config", "in", "out", "params_dtype", "method",
"linear_method", "kernel", "created": {name: [shape, dtype, bytes]}, "created_bytes", "kept", "kept_bytes",
"error", "kept_error"}]}``.

With ``--moe`` (``make_goldens.py --weights --moe``): a ``FusedMoE`` layer (0.29+: ``FusedMoEFactory``'s
``RoutedExperts``) of ``MOE_SHAPES`` (experts, hidden, intermediate) for each ``MOE_SCHEMES`` config instead, the same
three steps through its MoE method (``--quantization fp8``'s online method for ``fp8-online``: ``Fp8Config()``),
recording also what the method's modular kernel, experts and MoE quant config hold, the backend its oracle chose
(``moe_backend``), and ``experts`` / ``hidden`` / ``intermediate`` in place of ``in`` / ``out``. Stubs beyond the
above: FlashInfer imports resolve to inert names (``arch_runner``'s CUDA-only finder), so the oracle picks its
backend as on a CUDA install, where FlashInfer is a dependency; a backend whose loading calls a FlashInfer function
records ``kept_error`` ("hold the result of a FlashInfer function (not run here)"); triton_kernels cannot be imported
(it needs libcuda), so MXFP4 takes the backend vLLM falls back to without it; a tensor viewing a storage already
counted is listed with 0 bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
import types
from pathlib import Path

# The quantization configs (the keys vLLM reads; the values of the public checkpoints each case names).
SCHEMES = {
    # Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 (AutoGPTQ, symmetric, no act-order)
    "gptq-int4-g128": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True,
                       "damp_percent": 0.01, "true_sequential": True, "static_groups": False},
    # TheBloke's act-order GPTQ checkpoints (desc_act true: g_idx used)
    "gptq-int4-g128-actorder": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True,
                                "sym": True, "damp_percent": 0.01, "true_sequential": True},
    # Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8
    "gptq-int8-g128": {"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": False, "sym": True,
                       "damp_percent": 0.01, "true_sequential": True, "static_groups": False},
    # Qwen/Qwen2.5-7B-Instruct-AWQ (AutoAWQ GEMM, zero point)
    "awq-int4-g128": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm",
                      "modules_to_not_convert": None},
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16 (llm-compressor: int4 symmetric, group 128, packed)
    "ct-w4a16-g128": {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
                      "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None,
                                                    "weights": {"num_bits": 4, "type": "int", "symmetric": True,
                                                                "strategy": "group", "group_size": 128,
                                                                "dynamic": False, "actorder": None}}}},
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8 (int8 weights per channel, dynamic per-token activations)
    "ct-w8a8-int8": {"quant_method": "compressed-tensors", "format": "int-quantized", "ignore": ["lm_head"],
                     "config_groups": {"group_0": {"targets": ["Linear"],
                                                   "input_activations": {"num_bits": 8, "type": "int",
                                                                         "symmetric": True, "strategy": "token",
                                                                         "dynamic": True},
                                                   "weights": {"num_bits": 8, "type": "int", "symmetric": True,
                                                               "strategy": "channel", "dynamic": False}}}},
    # RedHatAI FP8-block checkpoints (llm-compressor FP8_BLOCK: 128×128 weight blocks, dynamic group activations)
    "ct-fp8-block": {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
                     "config_groups": {"group_0": {"targets": ["Linear"],
                                                   "input_activations": {"num_bits": 8, "type": "float",
                                                                         "symmetric": True, "strategy": "group",
                                                                         "group_size": 128, "dynamic": True},
                                                   "weights": {"num_bits": 8, "type": "float", "symmetric": True,
                                                               "strategy": "block", "block_structure": [128, 128],
                                                               "dynamic": False}}}},
    # RedHatAI NVFP4 checkpoints (llm-compressor NVFP4: fp4 e2m1 values, fp8 scale per 16, a global scale)
    "ct-nvfp4": {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head"],
                 "config_groups": {"group_0": {"targets": ["Linear"],
                                               "input_activations": {"num_bits": 4, "type": "float",
                                                                     "symmetric": True, "strategy": "tensor_group",
                                                                     "group_size": 16, "dynamic": "local"},
                                               "weights": {"num_bits": 4, "type": "float", "symmetric": True,
                                                           "strategy": "tensor_group", "group_size": 16,
                                                           "dynamic": False}}}},
    # nvidia/*-NVFP4 (ModelOpt: quant_algo NVFP4, group 16)
    "modelopt-nvfp4": {"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                                    "kv_cache_quant_algo": None,
                                                                    "exclude_modules": ["lm_head"]}},
    # ModelOpt W4A16_NVFP4 (weight-only NVFP4: the experts and MLPs of nvidia/Qwen3.6-35B-A3B-NVFP4's
    # MIXED_PRECISION config, tests/logs/budget/configs/nvidia/Qwen3.6-35B-A3B-NVFP4/hf_quant_config.json)
    "modelopt-w4a16-nvfp4": {"quant_method": "modelopt", "quantization": {"quant_algo": "W4A16_NVFP4", "group_size": 16,
                                                                          "kv_cache_quant_algo": None,
                                                                          "exclude_modules": ["lm_head"]}},
    # nvidia/*-FP8 (ModelOpt: per-tensor fp8)
    "modelopt-fp8": {"quant_method": "modelopt", "quantization": {"quant_algo": "FP8",
                                                                  "kv_cache_quant_algo": None,
                                                                  "exclude_modules": ["lm_head"]}},
    # fp8 block checkpoints in vLLM's own format (DeepSeek-V3 / Qwen3-FP8: weight_block_size [128, 128])
    "fp8-block": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
}
# Linear shapes (input, output): Qwen2.5-7B's MLP (gate/up 3584 → 18944, down 18944 → 3584), Llama-3.1-8B's
# q_proj (4096 → 4096) and a narrow one, Qwen3.5/3.6's gated-delta-net in_proj_a (2048 → 32: output rows below the
# kernels' tiles, where padding shows)
SHAPES = ((3584, 18944), (18944, 3584), (4096, 4096), (2048, 32))

FAKES: dict[str, object] = {}
UNFAKED: list[str] = []  # compiled ops called that the release registers no fake for (no-ops here)
BORROWED: list[str] = []  # ops answered by BORROWED_FAKES in this case


def _marlin_repack_out(b_q_weight, size_k, size_n, num_bits):
    import torch

    # vLLM 0.19.0 _custom_ops.py:1178-1190 (_gptq_marlin_repack_fake) and :1211-1223 (_awq_marlin_repack_fake):
    # [size_k / 16, size_n · 16 / (32 / num_bits)] int32 — the allocation of csrc/quantization/gptq_marlin/
    # gptq_marlin_repack.cu and awq_marlin_repack.cu, unchanged since 0.11
    return torch.empty((size_k // 16, size_n * 16 // (32 // num_bits)), dtype=torch.int32, device=b_q_weight.device)


# Releases before 0.12 register no fake for the Marlin repacks: their output as the next releases' fakes state it
# (the kernels' allocation did not change; 0.11's gptq_marlin_repack takes a ``perm`` argument besides).
BORROWED_FAKES = {
    "_C::gptq_marlin_repack": lambda b, perm, size_k, size_n, num_bits, *a, **k: _marlin_repack_out(b, size_k, size_n,
                                                                                                   num_bits),
    "_C::awq_marlin_repack": lambda b, size_k, size_n, num_bits, *a, **k: _marlin_repack_out(b, size_k, size_n,
                                                                                             num_bits),
}


class Unknown:
    """What a compiled op without a fake returns: using it as a tensor fails (the case records why); an in-place
    op's discarded result is harmless."""


# The compiled capability checks (C++: csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu and
# csrc/quantization/fp4/nvfp4_scaled_mm_entry.cu in vLLM's sources, which the wheel does not ship), answered for a
# build with CUDA >= 12.8 as the release wheels are: fp8 scaled mm from SM 8.9, block fp8 from SM 9.0, fp4 from
# SM 10.0 (10.x and 12.x), grouped GEMM on SM 9.0 and 10.x.
CAPABILITY_QUERIES = {
    "cutlass_scaled_mm_supports_fp8": lambda cc: cc >= 89,
    "cutlass_scaled_mm_supports_block_fp8": lambda cc: cc >= 90,
    "cutlass_scaled_mm_supports_fp4": lambda cc: cc >= 100,
    "cutlass_group_gemm_supported": lambda cc: cc == 90 or 100 <= cc < 110,
}


class CompiledOps:
    """``torch.ops._C`` & co.: a capability query answered (``CAPABILITY_QUERIES``), the op's registered fake
    where the release has one, else a no-op."""

    def __init__(self, ns):
        self.ns = ns

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in CAPABILITY_QUERIES:
            return CAPABILITY_QUERIES[name]
        fake = FAKES.get(f"{self.ns}::{name}")
        if fake is not None:
            return fake
        borrowed = BORROWED_FAKES.get(f"{self.ns}::{name}")
        if borrowed is not None:
            def lent(*a, **k):
                BORROWED.append(f"{self.ns}.{name}")
                return borrowed(*a, **k)
            return lent

        def unfaked(*a, **k):
            UNFAKED.append(f"{self.ns}.{name}")
            return Unknown()
        return unfaked


def install_compiled_fakes() -> None:
    import torch

    for ns in ("_C", "_moe_C", "_C_cache_ops"):
        setattr(torch.ops, ns, CompiledOps(ns))
    orig = torch.library.register_fake

    def register_fake(op, fn=None, *a, **k):
        if isinstance(op, str) and op.split("::")[0] in ("_C", "_moe_C", "_C_cache_ops"):
            def keep(f):
                FAKES[op] = f
                return f
            return keep(fn) if fn is not None else keep
        return orig(op, fn, *a, **k) if fn is not None else orig(op, *a, **k)

    torch.library.register_fake = register_fake


def cuda_platform(cc: tuple[int, int]) -> None:
    import torch
    from vllm.platforms import current_platform as cp
    from vllm.platforms.interface import DeviceCapability, PlatformEnum

    P = type(cp)
    P.is_cuda_alike = lambda self: True
    P.is_cuda = lambda self: True
    P._enum = PlatformEnum.CUDA
    P.get_device_capability = classmethod(lambda cls, *x, **k: DeviceCapability(*cc))
    P.has_device_capability = classmethod(
        lambda cls, capability, device_id=0: (cc[0] * 10 + cc[1]) >= (
            capability if isinstance(capability, int) else capability[0] * 10 + capability[1]))
    P.is_device_capability = classmethod(
        lambda cls, capability, device_id=0: (cc[0] * 10 + cc[1]) == (
            capability if isinstance(capability, int) else capability[0] * 10 + capability[1]))
    # CudaPlatform.supports_fp8 (has_device_capability(89)): the MoE oracles ask it of each fp8 kernel (0.29's
    # TritonExperts._supports_quant_scheme); the CPU platform's answer is False
    P.supports_fp8 = classmethod(lambda cls: cc[0] * 10 + cc[1] >= 89)
    P.current_device = classmethod(lambda cls, *a, **k: torch.device("cpu"))
    P.num_compute_units = classmethod(lambda cls, *a, **k: 132)
    P.device_type = "cpu"

    class Props:
        multi_processor_count = 132
        total_memory = 80 << 30
        major, minor = cc
        name = "stand-in"

    torch.cuda.get_device_properties = lambda *a, **k: Props()
    torch.Tensor.cuda = lambda self, *a, **k: self  # a repacked tensor "moved to the card" stays where it is
    torch.cuda.current_device = lambda: 0
    torch.cuda.is_available = lambda: True


class StandInModelConfig:
    """The model config the quantization methods read (``model_config.dtype``): bfloat16; anything else None."""

    def __init__(self):
        import torch

        self.dtype = torch.bfloat16

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def dist():
    """A world-size-1 gloo group and the model-parallel groups."""
    import torch
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    vc = VllmConfig()
    vc.model_config = StandInModelConfig()
    with set_current_vllm_config(vc):
        if not torch.distributed.is_initialized():
            init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                         distributed_init_method=f"tcp://127.0.0.1:{29500 + os.getpid() % 1000}")
        initialize_model_parallel(1, 1)
    return vc


def served_method(cfg: dict, hf_config=None) -> str:
    """The method ``ModelConfig._verify_quantization`` settles on: the first registered method whose
    ``override_quantization_method`` claims the checkpoint's config, else the config's own (``hf_config``: the
    model's config where a method asks for it: 0.34's GptOssMxfp4Config claims ``mxfp4`` for model_type gpt_oss)."""
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS, get_quantization_config

    own = str(cfg["quant_method"]).lower()
    order = list(QUANTIZATION_METHODS)
    try:  # the order the release asks them in (overrides first, as ModelConfig lists them)
        import inspect

        from vllm.config import model as M
        src = inspect.getsource(M.ModelConfig._verify_quantization)
        m = re.search(r"overrides\s*=\s*\[(.*?)\]", src, re.S)
        if m:
            order = re.findall(r'"([\w-]+)"', m.group(1)) + order
    except Exception:  # noqa: BLE001 - the registry's order
        pass
    for name in dict.fromkeys(order):
        try:
            Q = get_quantization_config(name)
        except Exception:  # noqa: BLE001 - a method that does not import here
            continue
        got = None
        for extra in (([hf_config],) if hf_config is not None else ()) + ([], [None]):
            try:
                got = Q.override_quantization_method(dict(cfg), None, *extra)
                break
            except TypeError:  # the release's signature takes fewer / more arguments
                continue
            except Exception:  # noqa: BLE001
                break
        if got:
            return got
    return {"modelopt": "modelopt_fp4" if "FP4" in str((cfg.get("quantization") or {}).get("quant_algo")) else
            "modelopt"}.get(own, own)


def kernel_of(*holders) -> str | None:
    """The kernel class a method (or its compressed-tensors scheme) holds: an attribute whose class name ends in
    ``Kernel`` (``kernel``, ``fp8_linear``, ...)."""
    for h in holders:
        for v in vars(h).values() if h is not None else ():
            name = type(v).__name__
            if name.endswith("Kernel"):
                return name
    return None


def as_torch(t):
    """A tensor as torch holds it: a ``triton_kernels.tensor.Tensor`` (the swizzled MXFP4 weights and scales of the
    Triton MoE backend, 0.11+) is the torch tensor of its storage (``Tensor.storage.data``, the bytes it keeps);
    anything else unchanged."""
    data = getattr(getattr(t, "storage", None), "data", None)
    return data if type(t).__module__.split(".")[0] in ("triton_kernels", "vllm") and data is not None else t


def tensors(layer, deep: bool = False) -> dict:
    """Every parameter, buffer and tensor attribute of ``layer``: ``[shape, dtype, bytes]``; with ``deep`` (MoE) a
    tensor viewing the storage of one listed before (a repacked parameter under a second name) is listed with 0
    bytes, so the storage is counted once (tensors on the meta device, which ``--quantization fp8``'s online
    method creates until the loader fills them, have no storage: each counts)."""
    import torch

    out = {}
    seen: set = set()

    def add(n, t):
        ptr = t.untyped_storage().data_ptr() if deep and t.numel() and t.device.type != "meta" else None
        out[n] = [list(t.shape), str(t.dtype).replace("torch.", ""),
                  0 if ptr is not None and ptr in seen else t.numel() * t.element_size()]
        if ptr is not None:
            seen.add(ptr)

    for n, t in list(layer.named_parameters(recurse=False)) + list(layer.named_buffers(recurse=False)):
        if t is not None:
            add(n, t)
    for n, t in vars(layer).items():
        t = as_torch(t)
        if isinstance(t, torch.Tensor) and n not in out and not n.startswith("_"):
            add(n, t)
    return out


def where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    at = next((f"{f.filename.split('/vllm/')[-1]}:{f.lineno}" for f in reversed(tb) if "/vllm/" in f.filename), "")
    msg = re.sub(r"(?:/[\w.+-]+)+/", "", str(e).splitlines()[0][:240] if str(e) else "")
    return f"{type(e).__name__}: {msg} [{at}]"


def run_case(name: str, cfg: dict, k: int, n: int, dtype: str, vc) -> dict:
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.layers.linear import ColumnParallelLinear
    from vllm.model_executor.layers.quantization import get_quantization_config

    rec = {"case": f"{name}:{k}x{n}:{dtype}", "scheme": name, "config": cfg, "in": k, "out": n, "params_dtype": dtype}
    try:
        method = served_method(cfg)
        rec["method"] = method
        qc = get_quantization_config(method).from_config(dict(cfg))
        if getattr(qc, "modules_in_block_to_quantize", None) == [] and hasattr(qc, "maybe_update_config"):
            # GPTQ's maybe_update_config lists the quantized modules from the checkpoint's tensor dtypes (an int32
            # qweight): the layer's own prefix
            qc.modules_in_block_to_quantize = ["model.layers.0.mlp.gate_proj"]
        with set_current_vllm_config(vc), torch.device("cpu"):
            layer = ColumnParallelLinear(k, n, bias=False, gather_output=False, quant_config=qc,
                                         params_dtype=getattr(torch, dtype), prefix="model.layers.0.mlp.gate_proj")
    except Exception as e:  # noqa: BLE001 - recorded
        rec["error"] = where(e)
        return rec
    return _load_and_keep(rec, layer, layer.quant_method, getattr(layer, "scheme", None), vc)


def _held_tensors(obj, label: str, out: dict, seen: set, deep: bool, depth: int = 0) -> None:
    """Tensors ``obj`` (a method, its scheme or kernel) holds outside the layer, and those of the kernel objects it
    holds: a linear's ``*Kernel`` attributes (Marlin's workspace), and with ``deep`` every vLLM object a MoE method
    holds, three levels down (its modular kernel, experts and quant config's scales), as ``Class.name``."""
    import torch

    if obj is None or id(obj) in seen or depth > 3 or isinstance(obj, torch.nn.Module) or not hasattr(obj, "__dict__"):
        return
    seen.add(id(obj))
    for n, t in vars(obj).items():
        t = as_torch(t)
        if isinstance(t, torch.Tensor):
            if deep and t.numel() and _counted(t, out.get("", ())):
                continue  # the layer's own tensor (a MoE quant config's view of a scale): counted once
            out[f"{label}.{n}"] = [list(t.shape), str(t.dtype).replace("torch.", ""), t.numel() * t.element_size()]
            if deep and t.numel():
                out.setdefault("", []).append(t)
        elif (type(t).__name__.endswith("Kernel") and depth == 0) or (
                deep and type(t).__module__.split(".")[0] in ("vllm", "triton_kernels") and not isinstance(t, type)):
            _held_tensors(t, type(t).__name__ if not deep else f"{label}.{n}", out, seen, deep, depth + 1)


def _counted(t, ts) -> bool:
    """``t`` shares a storage with one of ``ts`` (on the meta device, where there is none: is one of them or a view
    of one)."""
    if t.device.type == "meta":
        ids = {id(x) for x in ts}
        return id(t) in ids or id(getattr(t, "_base", None)) in ids
    return t.untyped_storage().data_ptr() in {x.untyped_storage().data_ptr() for x in ts if x.device.type != "meta"}


def _backends(rec: dict, qm) -> None:
    """The backend a MoE method chose (its enum-valued attributes: ``fp8_backend``, ``nvfp4_backend``,
    ``mxfp4_backend``, ``use_marlin`` ...), as ``moe_backend``."""
    import enum

    got = {n: (v.name if isinstance(v, enum.Enum) else v) for n, v in sorted(vars(qm).items())
           if isinstance(v, enum.Enum) or (isinstance(v, bool) and any(
               w in n for w in ("marlin", "backend", "flashinfer", "cutlass", "deep_gemm", "triton")))}
    if got:
        rec["moe_backend"] = got


def _load_and_keep(rec: dict, layer, qm, scheme, vc, deep: bool = False) -> dict:
    """Record the layer as ``create_weights`` left it, fill it as the loader would, run the method's
    ``process_weights_after_loading`` and record what the layer, its method and kernels keep."""
    import torch
    from vllm.config import set_current_vllm_config

    rec["linear_method"] = type(qm).__name__
    if scheme is not None:
        rec["scheme_class"] = type(scheme).__name__
    rec["kernel"] = kernel_of(qm, scheme)
    _backends(rec, qm)
    rec["created"] = tensors(layer, deep)
    rec["created_bytes"] = sum(v[2] for v in rec["created"].values())
    with torch.no_grad():  # what the loader writes: ones (scales a method divides by are not zero)
        for _, t in list(layer.named_parameters(recurse=False)) + list(layer.named_buffers(recurse=False)):
            if t is not None and t.numel():
                t.data.fill_(1) if t.dtype.is_floating_point or t.dtype in (torch.int32, torch.int64, torch.uint8,
                                                                              torch.int8) else None
    UNFAKED.clear()
    BORROWED.clear()
    try:
        with set_current_vllm_config(vc), torch.device("cpu"):
            qm.process_weights_after_loading(layer)
        bad = [n for n, t in list(layer.named_parameters(recurse=False)) if not isinstance(t, torch.Tensor)]
        if deep:  # a tensor the loader filled, replaced by what an inert FlashInfer name returned
            bad += [n for n in rec["created"] if not isinstance(as_torch(getattr(layer, n, None)),
                                                                (torch.Tensor, type(None)))]
            inert = [n for n, v in vars(layer).items() if type(type(v)).__name__ == "_CudaOnlyName"
                     or type(v).__name__ == "_CudaOnlyName"]
            if bad or inert:
                raise RuntimeError(f"{sorted(set(bad + inert))} hold the result of a FlashInfer function (not run here)")
        if bad:
            raise RuntimeError(f"parameters {bad} hold the result of a compiled op without a fake {sorted(set(UNFAKED))}")
        rec["kernel"] = kernel_of(qm, scheme) or rec["kernel"]
        if deep:
            _backends(rec, qm)
        rec["kept"] = tensors(layer, deep)
        seen: set = set()
        if deep:  # the storages counted so far: the layer's tensors (a held view of one is not counted again)
            rec["kept"][""] = [t for _, t in list(layer.named_parameters(recurse=False))
                               + list(layer.named_buffers(recurse=False)) if t is not None and t.numel()] + [
                t for t in vars(layer).values() if isinstance(t, torch.Tensor) and t.numel()]
        for holder in (qm, scheme):  # tensors a method or its kernel holds outside the layer (Marlin's workspace)
            if holder is not None:
                _held_tensors(holder, type(holder).__name__, rec["kept"], seen, deep)
        rec["kept"].pop("", None)
        rec["kept_bytes"] = sum(v[2] for v in rec["kept"].values())
    except Exception as e:  # noqa: BLE001 - recorded
        rec["kept_error"] = where(e) + (f" (compiled ops without a fake: {sorted(set(UNFAKED))})" if UNFAKED else "")
    if UNFAKED:
        rec["ops_without_fake"] = sorted(set(UNFAKED))  # in place (their result unused) where ``kept`` is recorded
    if BORROWED:
        rec["borrowed_fakes"] = sorted(set(BORROWED))
    return rec


# MoE experts (issue 34): the quantization configs of the MoE checkpoints whose experts vLLM serves with a quantized
# FusedMoE method. The linear schemes above, plus:
MOE_SCHEMES = {
    **{k: SCHEMES[k] for k in ("gptq-int4-g128", "awq-int4-g128", "ct-w4a16-g128", "ct-fp8-block", "ct-nvfp4",
                               "modelopt-nvfp4", "modelopt-fp8", "fp8-block")},
    # RedHatAI/*-FP8-dynamic (llm-compressor FP8_DYNAMIC: fp8 weights, one fp32 scale per output channel, dynamic
    # per-token activations; RedHatAI/gemma-4-26B-A4B-it-FP8-dynamic, Qwen3-30B-A3B-FP8-dynamic)
    "ct-fp8-channel": {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
                       "config_groups": {"group_0": {"targets": ["Linear"],
                                                     "input_activations": {"num_bits": 8, "type": "float",
                                                                           "symmetric": True, "strategy": "token",
                                                                           "dynamic": True},
                                                     "weights": {"num_bits": 8, "type": "float", "symmetric": True,
                                                                 "strategy": "channel", "dynamic": False}}}},
    # fp8 per-tensor checkpoints in vLLM's own format (activation_scheme dynamic, no weight_block_size)
    "fp8-tensor": {"quant_method": "fp8", "activation_scheme": "dynamic"},
    # ``--quantization fp8`` on an unquantized checkpoint: no quantization_config, vLLM builds ``Fp8Config()``
    # (model_loader/weight_utils.py get_quant_config ``return quant_cls()``): bf16 weights quantized at load time
    "fp8-online": {"quant_method": "fp8", "online": True},
    # openai/gpt-oss-20b / -120b (MXFP4 experts: fp4 e2m1 values, an e8m0 scale per 32)
    "mxfp4": {"quant_method": "mxfp4"},
}
# (experts, hidden size, intermediate size per expert): the experts of Qwen3-30B-A3B (2048, 768), gemma-4-26B-A4B
# (2816, 704), MiniMax-M2.5 (3072, 1536) and gpt-oss-20b (2880, 2880), 8 of each (a layer's expert tensors scale with
# the expert count, its per-layer ones do not; kvplan's rule is checked at the real count by that scaling)
MOE_SHAPES = ((8, 2048, 768), (8, 2816, 704), (8, 3072, 1536), (8, 2880, 2880))


def run_moe_case(name: str, cfg: dict, e: int, h: int, i: int, dtype: str, vc) -> dict:
    """A ``FusedMoE`` layer of ``e`` experts (hidden ``h``, intermediate ``i`` per expert, gated: w13 is
    ``[e, 2i, h]``) built with ``cfg``, its method's ``create_weights`` and ``process_weights_after_loading``."""
    import inspect

    import torch
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.layers.quantization import get_quantization_config

    try:
        from vllm.model_executor.layers.fused_moe import FusedMoE as make
    except ImportError:  # 0.29+: FusedMoEFactory builds a MoERunner around its RoutedExperts (the weights' module)
        from vllm.model_executor.layers.fused_moe import FusedMoEFactory as make

    rec = {"case": f"{name}:E{e}:h{h}:i{i}:{dtype}", "scheme": name, "config": cfg, "experts": e, "hidden": h,
           "intermediate": i, "params_dtype": dtype}
    prefix = f"model.layers.{len(vc.compilation_config.static_forward_context)}.mlp.experts"
    try:
        gpt_oss = name == "mxfp4" and TRITON_KERNELS_RUN  # gpt-oss's own config (model_type gpt_oss)
        method = served_method(cfg, types.SimpleNamespace(model_type="gpt_oss") if gpt_oss else None)
        rec["method"] = method
        Q = get_quantization_config(method)
        qc = Q() if cfg.get("online") else Q.from_config(dict(cfg))
        if getattr(qc, "modules_in_block_to_quantize", None) == [] and hasattr(qc, "maybe_update_config"):
            qc.modules_in_block_to_quantize = ["model.layers.0.mlp.experts"]
        args = {"num_experts": e, "top_k": 2, "hidden_size": h, "intermediate_size": i,
                "params_dtype": getattr(torch, dtype), "reduce_results": True, "renormalize": True,
                "quant_config": qc, "tp_size": 1, "prefix": prefix, "has_bias": name == "mxfp4"}
        if name == "mxfp4" and TRITON_KERNELS_RUN:
            # gpt-oss's experts (models/gpt_oss.py: ``FusedMoE(..., activation="swigluoai")``): the Triton experts
            # support that activation only (gpt_oss_triton_kernels_moe.py ``_supports_activation``)
            args["activation"] = "swigluoai"
        takes = inspect.signature(make).parameters
        with set_current_vllm_config(vc), torch.device("cpu"):
            layer = make(**{k: v for k, v in args.items() if k in takes})
        layer = getattr(layer, "routed_experts", None) or layer
    except Exception as ex:  # noqa: BLE001 - recorded
        rec["error"] = where(ex)
        return rec
    return _load_and_keep(rec, layer, layer.quant_method, None, vc, deep=True)


# --triton-kernels: gpt-oss-20b's experts per rank at TP 1, 2 and 4 (intermediate 2880 / tp), the shapes whose
# padding the Triton MXFP4 swizzle decides
TRITON_MXFP4_SHAPES = ((8, 2880, 2880), (8, 2880, 1440), (8, 2880, 720))
TRITON_KERNELS_RUN = False  # set by --triton-kernels


def triton_kernels_on_cpu(cc: tuple[int, int]) -> str:
    """Let the triton_kernels package an install holds (0.12+: the wheel's vllm/third_party/triton_kernels) run its
    layout code here: Triton's active driver answers the card's target (``GPUTarget("cuda", cc, 32)``: what
    ``triton_kernels.target_info.cuda_capability_geq`` asks; any other driver call fails the case), and vLLM's
    ``is_torch_equal_or_newer`` answers for the torch the release pins (its ``Requires-Dist: torch==``: the Hopper
    swizzle needs torch >= 2.8.1, mxfp4_utils.py ``_swizzle_mxfp4``) instead of this environment's. Returns that
    torch version. The swizzles themselves (``HopperMXValueLayout`` / ``HopperMXScaleLayout.swizzle_data``) are
    plain PyTorch and run as written."""
    import importlib.metadata as md

    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    class CardDriver:
        def get_current_target(self):
            return GPUTarget("cuda", cc[0] * 10 + cc[1], 32)

        def __getattr__(self, name):
            raise RuntimeError(f"triton driver.{name} needs a GPU (not run here)")

    driver.set_active(CardDriver())
    pin = next((r.split("==")[1].split(";")[0].strip() for r in md.requires("vllm") or ()
                if re.match(r"torch\s*==", r)), "")
    if not pin:
        return ""
    from packaging.version import Version

    def newer(target: str) -> bool:
        return Version(pin) >= Version(target)

    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("vllm") and hasattr(mod, "is_torch_equal_or_newer"):
            mod.is_torch_equal_or_newer = newer
    return pin


def run_model_case(config_path: Path, tp: int) -> dict:
    """One tensor-parallel rank of a whole model as the release builds it (``--model-config``): vLLM's
    ``EngineArgs(...).create_engine_config()`` on the checkpoint's config.json, the model class constructed on the
    meta device (``arch_runner``'s construction), with the tensor-parallel world size answered ``tp`` and the rank 0
    by every ``get_tensor_model_parallel_world_size`` / ``_rank`` vLLM's modules hold (one process stands for rank
    0 of ``tp``); every parameter and buffer ``[shape, dtype, bytes]``. The checkpoint's ``quantization_config`` is
    dropped: the MoE experts are recorded unquantized (their kept bytes are the ``--moe`` goldens'); the other
    layers are the ones a quantized checkpoint keeps unquantized (gpt-oss: ``modules_to_not_convert``)."""
    import inspect
    import tempfile

    import torch
    from vllm.config import set_current_vllm_config
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.models.registry import ModelRegistry

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kvplan" / "verify"))
    import arch_runner as AR

    # arch_runner's unquantized-MoE stub answers 0.29+'s signature (moe_config) -> (backend, experts class); 0.19's
    # select_unquantized_moe_backend(moe_config, use_ep, use_dp) returns the backend alone: the experts' kernel does
    # not change their parameters
    from vllm.model_executor.layers.fused_moe import unquantized_fused_moe_method as UFM
    from vllm.model_executor.layers.fused_moe.oracle import unquantized as UQ

    if "use_ep=" in inspect.getsource(UFM.UnquantizedFusedMoEMethod.__init__):
        UQ.select_unquantized_moe_backend = UFM.select_unquantized_moe_backend = \
            lambda *a, **k: UQ.UnquantizedMoeBackend.TRITON
    cfg = json.loads(config_path.read_text())
    cfg.pop("quantization_config", None)
    rec = {"model": config_path.parent.name, "tp": tp}
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(cfg))
        # enforce_eager: no torch.compile wrapper (its passes import compiled ops); the parameters do not change
        vc = EngineArgs(model=d, skip_tokenizer_init=True, dtype="bfloat16", enforce_eager=True).create_engine_config()
        vc.device_config.device = torch.device("meta")
        AR._dist(vc)
        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("vllm"):
                if hasattr(mod, "get_tensor_model_parallel_world_size"):
                    mod.get_tensor_model_parallel_world_size = lambda: tp
                if hasattr(mod, "get_tensor_model_parallel_rank"):
                    mod.get_tensor_model_parallel_rank = lambda: 0
        cls, _ = ModelRegistry.resolve_model_cls(vc.model_config.architectures, model_config=vc.model_config)
        rec["model_class"] = f"{cls.__module__}.{cls.__name__}"
        # the loader constructs under the model's dtype (model_loader/base_loader.py load_model:
        # set_default_torch_dtype(model_config.dtype)), then process_weights_after_loading (below)
        from vllm.utils.torch_utils import set_default_torch_dtype

        with set_current_vllm_config(vc), set_default_torch_dtype(vc.model_config.dtype), AR._meta_device():
            model = cls(vllm_config=vc, prefix="")
    rec["tensors"] = {n: [list(t.shape), str(t.dtype).replace("torch.", ""), t.numel() * t.element_size()]
                      for n, t in list(model.named_parameters()) + list(model.named_buffers())}
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--capability", default="9.0")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--only", default=None, help="schemes whose name contains this")
    ap.add_argument("--moe", action="store_true", help="FusedMoE layers (MOE_SCHEMES x MOE_SHAPES) instead of linears")
    ap.add_argument("--model-config", type=Path, default=None,
                    help="a checkpoint's config.json: the whole model per tensor-parallel rank (run_model_case)")
    ap.add_argument("--tp", default="1", help="with --model-config: tensor-parallel sizes, comma-separated")
    ap.add_argument("--triton-kernels", action="store_true",
                    help="with --moe: MXFP4 experts with the triton_kernels package importable (triton_kernels_on_cpu), "
                         "at TRITON_MXFP4_SHAPES")
    a = ap.parse_args(argv)
    cc = tuple(int(x) for x in a.capability.split("."))
    import logging

    logging.disable(logging.WARNING)
    if a.model_config is None:  # the whole-model build imports vLLM as arch_runner does (compiled ops absent)
        install_compiled_fakes()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kvplan" / "verify"))
    import arch_runner as AR

    if a.moe:
        # FlashInfer (vLLM's CUDA wheels depend on it; the NVFP4 / FP8 MoE modules import it at the top): absent
        # here, its imports resolve to inert names, so the release's oracle chooses its backend as on an install
        # with FlashInfer (``moe_backend``); a FlashInfer function the backend's process_weights_after_loading
        # calls (a weight shuffle, a scale swizzle) is not run: the case records ``kept_error`` naming it
        import importlib.util

        if importlib.util.find_spec("flashinfer") is None:
            AR._CUDA_ONLY_PACKAGES = tuple(AR._CUDA_ONLY_PACKAGES) + ("flashinfer",)
            if AR._CudaOnlyFinder not in sys.meta_path:
                sys.meta_path.append(AR._CudaOnlyFinder)
    AR.setup()
    cuda_platform(cc)
    import vllm
    import vllm._custom_ops  # noqa: F401 - registers the fakes

    # a capability constant computed when its module was imported (before the platform answered CUDA)
    try:
        from vllm.model_executor.layers.quantization.utils import w8a8_utils as W

        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("vllm") and hasattr(mod, "CUTLASS_BLOCK_FP8_SUPPORTED"):
                mod.CUTLASS_BLOCK_FP8_SUPPORTED = W.cutlass_block_fp8_supported()
    except Exception:  # noqa: BLE001 - a release without it
        pass

    global TRITON_KERNELS_RUN
    TRITON_KERNELS_RUN = a.triton_kernels
    if a.model_config is not None:
        doc = {"vllm_version": getattr(vllm, "__version__", "?"), "capability": list(cc),
               "cases": [run_model_case(a.model_config, int(t)) for t in a.tp.split(",")]}
        a.out.write_text(json.dumps(doc, sort_keys=True, indent=None, separators=(",", ":")) + "\n")
        return 0
    torch_pin = triton_kernels_on_cpu(cc) if a.triton_kernels else None
    vc = dist()
    cases = []
    for name, cfg in (MOE_SCHEMES if a.moe else SCHEMES).items():
        if a.only and a.only not in name or (a.triton_kernels and name != "mxfp4"):
            continue
        if a.moe:
            for e, h, i in (TRITON_MXFP4_SHAPES if a.triton_kernels else MOE_SHAPES):
                cases.append(run_moe_case(name, cfg, e, h, i, a.dtype, vc))
                c = cases[-1]
                print(f"  {c['case']}: {c.get('method')} {c.get('linear_method')} {c.get('kernel')} "
                      f"{c.get('created_bytes')} -> {c.get('kept_bytes')} {c.get('error') or c.get('kept_error') or ''}",
                      file=sys.stderr)
            continue
        for k, n in SHAPES:
            cases.append(run_case(name, cfg, k, n, a.dtype, vc))
            c = cases[-1]
            print(f"  {c['case']}: {c.get('method')} {c.get('linear_method')} {c.get('kernel')} "
                  f"{c.get('created_bytes')} -> {c.get('kept_bytes')} {c.get('error') or c.get('kept_error') or ''}",
                  file=sys.stderr)
    doc = {"vllm_version": getattr(vllm, "__version__", "?"), "capability": list(cc), "params_dtype": a.dtype,
           "setup_skipped": list(AR.SETUP_SKIPPED), "cases": cases}
    if torch_pin is not None:
        doc["triton_kernels"] = {"torch_pin": torch_pin}
    a.out.write_text(json.dumps(doc, sort_keys=True, indent=None, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
