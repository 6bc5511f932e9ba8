"""Bytes of one weight tensor under the config's quantization.

Every tensor in the model dtype unless the config's
``quantization_config`` converts it. Methods modelled, per converted weight of ``n``
values in rows of ``k`` inputs:

==============  ===========================================================================
method          bytes
==============  ===========================================================================
mxfp4           ``n/2 + n/32``: 4-bit values + one e8m0 scale per 32 (4.25 bits); vLLM's
                Mxfp4 method converts MoE experts only (gpt-oss)
fp8 (block)     ``n + 4·⌈rows/128⌉·⌈k/128⌉``: e4m3 values + an fp32 scale per 128×128 block
fp8 (tensor)    ``n + 4`` per matrix
nvfp4           ``n/2 + n/16``: 4-bit values + one fp8 scale per 16 (4.5 bits) + 8 per matrix (the
                fp32 weight global scale and static input scale)
bnb 4-bit       ``n/2 + 4·n/64`` (absmax fp32 per 64); with double quant ``n/2 + n/64 + 4·n/16384``
bnb 8-bit       ``n + 4·rows``
gptq            ``n·b/8 + rows·⌈k/g⌉·(2 + b/8) + 4·k``: packed values + fp16 scales + packed zeros + the
                int32 ``g_idx`` an AutoGPTQ checkpoint stores per input column
awq             ``n·b/8 + rows·⌈k/g⌉·(2 + b/8)``: packed values + fp16 scales + packed zeros
wna16           compressed-tensors ``pack-quantized`` (W4A16 / W8A16): ``n·b/8 + rows·⌈k/g⌉·2 + 16``
                (packed values, scales, the int64 ``weight_shape`` pair), packed zeros when asymmetric,
                an int32 ``g_idx`` per input column with ``actorder: group``
int8            compressed-tensors ``int-quantized`` (W8A8): ``n + 4·rows`` (int8 + fp32 scale per row)
==============  ===========================================================================

As vLLM keeps them on a card (the repacking of its kernels) is ``kvplan.budget.quant_kernels``.
ModelOpt ``MIXED_PRECISION`` (``quantized_layers``: a method per module, the lm_head included) resolves
per tensor (``Quantization.resolve``).

Never converted: embeddings, lm_head, norms, biases, routers, convolutions, Mamba/GDN
state parameters, and any module matched by ``modules_to_not_convert`` /
``ignored_layers`` / ``ignore`` / ``llm_int8_skip_modules`` / ``exclude_modules`` (also ModelOpt's
``quantization.exclude_modules``, in checkpoint names that the model's vLLM prefix map renames; fnmatch
on the module name).
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kvplan.errors import UnsupportedError
from kvplan.units import cdiv, dtype_size_bytes

if TYPE_CHECKING:
    from kvplan.tensors import Weight


@dataclass(frozen=True)
class Quantization:
    method: str  # none, mxfp4, fp8, nvfp4, bnb_4bit, bnb_8bit, gptq, awq
    description: str
    experts_only: bool = False
    block: tuple[int, int] | None = None  # fp8 block size
    bits: int = 0  # gptq / awq
    group_size: int = 0
    double_quant: bool = False
    exclude: tuple[str, ...] = ()
    scale_bytes: int = 4  # fp8 block scale: fp32, or e8m0 (1 byte) under DeepSeek-V4's fp4-expert scheme
    expert_method: str | None = None  # the routed experts' own method (DeepSeek-V4: mxfp4), else ``method``
    zero_point: bool = False  # awq / asymmetric gptq and wna16: zero points stored
    act_order: bool = False  # gptq desc_act / compressed-tensors actorder "group": g_idx used
    strategy: str = ""  # fp8 / int8: "block", "channel", "tensor"; "" = as ``block`` says
    # ModelOpt MIXED_PRECISION: (module prefix in kvplan's names, method) — each module its own scheme
    per_module: tuple[tuple[str, str], ...] = ()
    # the checkpoint's format (the vLLM config class that reads it): "fp8" (vLLM's own), "modelopt",
    # "compressed-tensors", "gptq", "awq", "online" (``--quantization fp8`` on an unquantized checkpoint), "" other;
    # a quantized MoE layer keeps different scalars per format (quant_kernels.kept_expert_bytes)
    config_format: str = ""
    static_input_scale: bool = False  # a static activation scale per matrix (ModelOpt FP8, activation_scheme static)

    def converts(self, w: Weight) -> bool:
        if self.per_module:
            return w.dtype is None and (w.linear or w.kind == "lm_head") and self._module_method(w.module) is not None \
                and not _excluded(w.module, self.exclude)
        if self.method == "none" or not w.linear or w.dtype is not None:
            return False
        if self.experts_only and w.kind != "experts":
            return False
        return not _excluded(w.module, self.exclude)

    def _module_method(self, module: str) -> str | None:
        for prefix, method in self.per_module:
            if module == prefix or module.startswith(prefix + "."):
                return method
        return None

    def resolve(self, w: Weight) -> Quantization:
        """The scheme of ``w`` itself: under MIXED_PRECISION the method its module declares, else this one."""
        if not self.per_module:
            return self
        method = self._module_method(w.module)
        if method is None:
            return NO_QUANTIZATION
        # "nvfp4-a16": W4A16_NVFP4, NVFP4 weights with bf16 activations (ModelOptNvFp4W4A16LinearMethod: Marlin FP4)
        return replace(self, method=method.split("-")[0], per_module=(),
                       strategy={"fp8": "tensor", "nvfp4-a16": "a16"}.get(method, self.strategy))


NO_QUANTIZATION = Quantization("none", "unquantized")


def _excluded(module: str, patterns: tuple[str, ...]) -> bool:
    parts = module.split(".")
    for p in patterns:
        if fnmatch.fnmatchcase(module, p) or fnmatch.fnmatchcase(module, p + ".*"):
            return True
        if "." not in p and "*" not in p and p in parts:
            return True
        if module.endswith("." + p) or ("." + p + ".") in ("." + module + "."):
            return True
    return False


# The checkpoint-name prefixes vLLM renames before it matches a quantization config's module lists
# (the model's hf_to_vllm_mapper, applied by apply_vllm_mapper): NemotronH's "backbone" is "model"
# (vllm/model_executor/models/nemotron_h.py 0.34.0 line 735), the names kvplan's inventory uses.
HF_PREFIXES = {"NemotronHForCausalLM": (("backbone.", "model."),)}


def _vllm_name(config: dict, name: str) -> str:
    archs = config.get("architectures") or [""]
    for old, new in HF_PREFIXES.get(archs[0] if isinstance(archs, list) and archs else "", ()):
        if name.startswith(old):
            return new + name[len(old):]
    return name


def quantization_of(config: dict) -> Quantization:
    """The scheme ``quantization_config`` declares (top level, else the text config's)."""
    found = config.get("quantization_config")
    if not isinstance(found, dict):
        text = config.get("text_config")
        found = text.get("quantization_config") if isinstance(text, dict) else None
    if not isinstance(found, dict):
        return NO_QUANTIZATION
    q: dict[str, Any] = found
    method = str(q.get("quant_method", "")).lower()
    # ModelOpt <= 0.29 (hf_quant_config.json) keeps its list under "quantization" (vLLM's ModelOptQuantConfigBase
    # .from_config reads quantization.exclude_modules, modelopt.py 0.34.0 line 346)
    inner = q.get("quantization")
    nested = inner if isinstance(inner, dict) else {}
    exclude = tuple(
        _vllm_name(config, str(x)) for src, key in (
            (q, "modules_to_not_convert"), (q, "ignored_layers"), (q, "ignore"), (q, "llm_int8_skip_modules"),
            (q, "exclude_modules"), (nested, "exclude_modules"))
        for x in (src.get(key) or []) if isinstance(x, str)
    )
    if method == "mxfp4":
        return Quantization("mxfp4", "mxfp4 experts: 4-bit values + e8m0 scale per 32 (4.25 bits)",
                            experts_only=True, exclude=exclude, config_format="mxfp4")
    if method == "fp8" and config.get("model_type") == "deepseek_v4" and q.get("weight_block_size"):
        return _deepseek_v4_fp8(config, q, exclude)
    if method == "fp8":
        block = q.get("weight_block_size")
        if block:
            bo, bi = int(block[0]), int(block[1])
            return Quantization("fp8", f"fp8 e4m3 + fp32 scale per {bo}x{bi} block", block=(bo, bi), exclude=exclude,
                                config_format="fp8")
        return Quantization("fp8", "fp8 e4m3 + fp32 scale per matrix", exclude=exclude, config_format="fp8",
                            static_input_scale=str(q.get("activation_scheme", "dynamic")).lower() == "static")
    if method == "modelopt" or method == "modelopt_fp4":
        algo = str((q.get("quantization") or {}).get("quant_algo", q.get("quant_algo", ""))).upper()
        if algo == "MIXED_PRECISION":
            return _modelopt_mixed(config, q, nested, exclude)
        if "FP4" in algo or method == "modelopt_fp4":
            a16 = algo == "W4A16_NVFP4"  # weight-only: bf16 activations (the Marlin FP4 GEMM, quant_kernels)
            return Quantization("nvfp4", "nvfp4: 4-bit values + fp8 scale per 16 (4.5 bits)"
                                + (", weight-only" if a16 else ""), exclude=exclude, strategy="a16" if a16 else "",
                                config_format="modelopt")
        if "FP8" in algo:
            return Quantization("fp8", "fp8 e4m3 + fp32 scale per matrix (modelopt)", exclude=exclude,
                                config_format="modelopt", static_input_scale=True)
    if method == "compressed-tensors":
        found_ct = _compressed_tensors(q, exclude)
        if found_ct is not None:
            acts = [g.get("input_activations") for g in (q.get("config_groups") or {}).values() if isinstance(g, dict)]
            static = bool(acts) and all(isinstance(a, dict) and a.get("dynamic") is False for a in acts)
            return replace(found_ct, config_format="compressed-tensors", static_input_scale=static)
    if method == "bitsandbytes":
        if q.get("load_in_4bit") or q.get("_load_in_4bit"):
            dq = bool(q.get("bnb_4bit_use_double_quant"))
            return Quantization("bnb_4bit", "bitsandbytes 4-bit" + (" (double quant)" if dq else ""),
                                double_quant=dq, exclude=exclude or ("lm_head",))
        if q.get("load_in_8bit") or q.get("_load_in_8bit"):
            return Quantization("bnb_8bit", "bitsandbytes 8-bit (int8 + fp32 row scale)", exclude=exclude or ("lm_head",))
    if method in ("gptq", "awq"):
        bits, g = int(q.get("bits", q.get("w_bit", 4))), int(q.get("group_size", q.get("q_group_size", 128)))
        g = g if g > 0 else 0
        zp = bool(q.get("zero_point", True)) if method == "awq" else not bool(q.get("sym", True))
        act = method == "gptq" and bool(q.get("desc_act", False))
        return Quantization(method, f"{method} {bits}-bit, group {g or 'per-channel'}"
                            + (", zero points" if zp else "") + (", act-order" if act else ""),
                            bits=bits, group_size=g, exclude=exclude, zero_point=zp, act_order=act,
                            config_format=method)
    raise UnsupportedError(
        f"quantization {method or q!r} is not modelled; pass --weights-memory with the per-GPU weight size "
        "vLLM logs ('Model loading took X GiB')"
    )


# The checkpoint prefixes of a multimodal wrapper's text model that kvplan's inventory names ``model.``
# (ModelOptMixedPrecisionConfig._quantized_layer_prefix_candidates, vLLM 0.24.0 quantization/modelopt.py 2447-2461,
# maps the two spellings onto each other; the inventory holds the text decoder as ``model.layers.N``)
_TEXT_PREFIXES = ("model.language_model.", "language_model.model.")
# ModelOpt per-module algorithms and kvplan's method for each (modelopt.py 0.24.0 get_quant_method 2463-2507:
# FP8 → ModelOptFp8LinearMethod (per-tensor fp8), NVFP4 / W4A16_NVFP4 → the NVFP4 methods, same packing)
_MODELOPT_ALGOS = {"FP8": "fp8", "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4-a16"}


def _text_name(name: str) -> str:
    for p in _TEXT_PREFIXES:
        if name.startswith(p):
            return "model." + name[len(p):]
    return name


def _modelopt_mixed(config: dict, q: dict, nested: dict, exclude: tuple[str, ...]) -> Quantization:
    """ModelOpt MIXED_PRECISION (``ModelOptMixedPrecisionConfig``, vLLM 0.24.0 quantization/modelopt.py 2268-2507):
    ``quantized_layers`` names each quantized module and its algorithm; a module not listed stays unquantized; the
    lm_head is quantized when listed (ParallelLMHead is matched, line 2482)."""
    layers = q.get("quantized_layers") or nested.get("quantized_layers") or {}
    per: list[tuple[str, str]] = []
    for name, info in layers.items():
        algo = str((info or {}).get("quant_algo", "")).upper() if isinstance(info, dict) else ""
        if algo not in _MODELOPT_ALGOS:
            raise UnsupportedError(f"quantization_config.quantized_layers[{name!r}]: quant_algo {algo!r} is not "
                                   f"modelled ({', '.join(_MODELOPT_ALGOS)} are); pass --weights-memory")
        per.append((_vllm_name(config, _text_name(str(name))), _MODELOPT_ALGOS[algo]))
    if not per:
        raise UnsupportedError("quantization_config: MIXED_PRECISION without quantized_layers; pass --weights-memory")
    counts = {m.replace("nvfp4-a16", "nvfp4 (weight-only)"): sum(1 for _, x in per if x == m)
              for m in sorted({x for _, x in per})}
    return Quantization("mixed", "modelopt mixed precision: " + ", ".join(f"{n} {m}" for m, n in counts.items())
                        + " modules", exclude=tuple(_text_name(e) for e in exclude), per_module=tuple(per))


def _compressed_tensors(q: dict, exclude: tuple[str, ...]) -> Quantization | None:
    """A compressed-tensors config whose groups all target ``Linear`` with one weight scheme (vLLM's
    CompressedTensorsConfig: ``pack-quantized`` int weights → CompressedTensorsWNA16, ``int-quantized`` →
    CompressedTensorsW8A8Int8, ``float-quantized`` → CompressedTensorsW8A8Fp8, ``nvfp4-pack-quantized`` →
    CompressedTensorsW4A4Fp4 / W4A16Fp4); None when a format is not one of these."""
    fmt = str(q.get("format", "")).lower()
    groups = [g for g in (q.get("config_groups") or {}).values() if isinstance(g, dict)]
    weights = [g.get("weights") or {} for g in groups]
    w = weights[0] if weights and all(x == weights[0] for x in weights) else {}
    bits = int(w.get("num_bits") or 0)
    strategy = str(w.get("strategy") or "").lower()
    if "nvfp4" in fmt:
        return Quantization("nvfp4", "nvfp4 (compressed-tensors)", exclude=exclude)
    if "float-quantized" in fmt:
        if strategy == "block" and w.get("block_structure"):
            bo, bi = (int(x) for x in w["block_structure"])
            return Quantization("fp8", f"fp8 e4m3 + fp32 scale per {bo}x{bi} block (compressed-tensors)", block=(bo, bi),
                                exclude=exclude, strategy="block")
        return Quantization("fp8", f"fp8 e4m3 + fp32 scale per {'row' if strategy == 'channel' else 'matrix'} "
                            "(compressed-tensors)", exclude=exclude, strategy="channel" if strategy == "channel" else "tensor")
    if "int-quantized" in fmt and bits == 8:
        return Quantization("int8", "int8 + fp32 scale per " + ("row" if strategy == "channel" else "matrix")
                            + " (compressed-tensors W8A8)", exclude=exclude,
                            strategy="channel" if strategy == "channel" else "tensor")
    if "pack-quantized" in fmt and bits in (4, 8) and str(w.get("type", "int")) == "int":
        g = int(w.get("group_size") or 0) if strategy == "group" else 0
        zp = not bool(w.get("symmetric", True))
        act = str(w.get("actorder") or "").lower() == "group"
        return Quantization("wna16", f"W{bits}A16 int{bits}, group {g or 'per-channel'} (compressed-tensors)"
                            + (", zero points" if zp else "") + (", act-order" if act else ""),
                            bits=bits, group_size=g, exclude=exclude, zero_point=zp, act_order=act)
    return None


def _deepseek_v4_fp8(config: dict, q: dict, exclude: tuple[str, ...]) -> Quantization:
    """vLLM 0.34.0 serves a DeepSeek-V4 fp8 checkpoint with ``DeepseekV4FP8Config``
    (models/deepseek_v4/quant_config.py: ``override_quantization_method`` lines 171-187): fp8 block linears, the
    routed experts by the config's ``expert_dtype`` (default ``fp4``): ``fp4`` → ``Mxfp4MoEMethod`` (lines
    232-245; 4-bit values + an e8m0 scale per 32, fused_moe mxfp4.py ``create_weights``) with the linears' block
    scales in e8m0 (``is_scale_e8m0``, lines 104-108: one byte, ``Fp8LinearMethod.create_weights`` fp8.py line
    340); ``fp8`` → fp8 block experts with float32 scales."""
    bo, bi = (int(x) for x in q["weight_block_size"])
    expert_dtype = config.get("expert_dtype", "fp4")
    if expert_dtype == "fp4":
        return Quantization("fp8", f"DeepSeek-V4 fp8 e4m3 + e8m0 scale per {bo}x{bi} block; mxfp4 experts (4.25 bits)",
                            block=(bo, bi), exclude=exclude, scale_bytes=1, expert_method="mxfp4")
    if expert_dtype == "fp8":
        return Quantization("fp8", f"DeepSeek-V4 fp8 e4m3 + fp32 scale per {bo}x{bi} block, experts too",
                            block=(bo, bi), exclude=exclude)
    raise UnsupportedError(f"DeepSeek-V4 expert_dtype {expert_dtype!r} is not one vLLM takes (fp4, fp8); fix the "
                           "config's expert_dtype")


# vLLM methods that hold a checkpoint's weights in the same bytes as the checkpoint's own method
# (Marlin kernels repack GPTQ/AWQ weights without changing their size).
_SAME_BYTES = {"gptq_marlin": "gptq", "awq_marlin": "awq", "modelopt_fp4": "modelopt", "mxfp4": "mxfp4"}


def quantization_override(config: dict, method: str) -> Quantization:
    """The weights under vLLM's ``--quantization METHOD``.

    * A checkpoint that declares a method keeps its scheme when METHOD names it (or its Marlin
      variant); another METHOD is refused (vLLM's ``_verify_quantization`` refuses a method the
      checkpoint's config does not name unless a method class overrides it, which kvplan does not model).
    * An unquantized checkpoint with ``fp8``: vLLM quantizes every Linear and the experts at load time
      (``Fp8LinearMethod`` / ``Fp8MoEMethod`` without a serialized checkpoint): e4m3 values and one
      fp32 scale per matrix. Other methods need a quantized checkpoint and are refused.
    """
    given = method.strip().lower()
    declared = quantization_of(config)
    if declared.method != "none":
        q = config.get("quantization_config") or (config.get("text_config") or {}).get("quantization_config") or {}
        own = str(q.get("quant_method", "")).lower()
        if _SAME_BYTES.get(given, given) == _SAME_BYTES.get(own, own):
            return declared
        raise UnsupportedError(f"--quantization {method}: the checkpoint declares {own!r} (quantization_config); "
                               "kvplan models a --quantization that names the checkpoint's method")
    if given == "fp8":
        return Quantization("fp8", "fp8 e4m3 + fp32 scale per matrix (quantized at load time, --quantization fp8)",
                            config_format="online")
    raise UnsupportedError(f"--quantization {method} on an unquantized checkpoint is not modelled (fp8 is); pass "
                           "--weights-memory with the per-GPU weight size vLLM logs ('Model loading took X GiB')")


def _matrix(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """``(count, rows, cols)`` of a Linear or stacked-expert weight."""
    if len(shape) == 1:
        return 1, 1, shape[0]
    return math.prod(shape[:-2]), shape[-2], shape[-1]


def tensor_bytes(shape: tuple[int, ...], quant: Quantization, converted: bool, dtype_bytes: int, *,
                 expert: bool = False) -> int:
    """``expert``: a routed-experts tensor, converted by ``quant.expert_method`` when the scheme names one."""
    n = math.prod(shape)
    if not converted:
        return n * dtype_bytes
    c, rows, k = _matrix(shape)
    m = quant.expert_method if expert and quant.expert_method else quant.method
    if m == "mxfp4":
        return c * rows * (cdiv(k, 2) + cdiv(k, 32))
    if m == "fp8":
        if quant.block:
            bo, bi = quant.block
            return n + c * cdiv(rows, bo) * cdiv(k, bi) * quant.scale_bytes
        if quant.strategy == "channel":
            return n + c * rows * 4
        return n + c * 4
    if m == "int8":
        return n + c * (rows if quant.strategy == "channel" else 1) * 4
    if m == "nvfp4":
        # + the fp32 weight global scale and the static input scale (ModelOpt weight_scale_2 / input_scale,
        # compressed-tensors weight_global_scale / input_global_scale)
        return c * rows * (cdiv(k, 2) + cdiv(k, 16)) + c * 8
    if m == "bnb_4bit":
        blocks = cdiv(n, 64)
        if quant.double_quant:
            return cdiv(n, 2) + blocks + cdiv(blocks, 256) * 4
        return cdiv(n, 2) + blocks * 4
    if m == "bnb_8bit":
        return n + c * rows * 4
    if m in ("gptq", "awq"):
        groups = cdiv(k, quant.group_size) if quant.group_size else 1
        g_idx = c * k * 4 if m == "gptq" else 0
        return cdiv(n * quant.bits, 8) + c * rows * groups * 2 + cdiv(c * rows * groups * quant.bits, 8) + g_idx
    if m == "wna16":
        groups = cdiv(k, quant.group_size) if quant.group_size else 1
        zeros = cdiv(c * rows * groups * quant.bits, 8) if quant.zero_point else 0
        return cdiv(n * quant.bits, 8) + c * rows * groups * 2 + zeros + c * (16 + (k * 4 if quant.act_order else 0))
    raise AssertionError(m)  # pragma: no cover


def weight_bytes(w: Weight, shape: tuple[int, ...], quant: Quantization, dtype_bytes: int) -> int:
    """``w`` (``shape`` as one rank holds it) in the checkpoint's form under ``quant`` (its own module's scheme under
    MIXED_PRECISION); ``dtype_bytes`` the model dtype's size (the tensor's own dtype wins)."""
    q = quant.resolve(w)
    own = dtype_size_bytes(w.dtype) if w.dtype else dtype_bytes
    return tensor_bytes(shape, q, q.converts(w) if not quant.per_module else quant.converts(w), own, expert=w.expert)


