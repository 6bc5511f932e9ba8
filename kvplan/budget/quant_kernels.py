"""Quantized linear layers as each vLLM release keeps them on a card (issue 34).

``kvplan.budget.quantization`` counts a converted tensor as the checkpoint stores it. vLLM's linear method then
picks a kernel by the card's compute capability and repacks in ``process_weights_after_loading``: some stored
tensors are freed (GPTQ's zero points under Marlin, ``g_idx`` without act-order), some change dtype (AWQ's zero
points become the activation dtype under Machete; block-fp8 scales become per-column bf16 under Marlin's
weight-only FP8), and Marlin keeps a per-layer workspace. ``kept_linear_bytes`` gives the bytes one rank keeps of
a converted linear of ``rows × k`` (its per-rank shape), ``kept_delta`` their difference from the stored form.

Every rule below was run: ``scripts/golden/quant_weights.py`` builds the release's ``ColumnParallelLinear`` with
its quantization config on the CPU (the platform answering CUDA at the capability), calls ``create_weights`` and
``process_weights_after_loading`` with vLLM's registered fakes for the compiled repacks, and records every tensor
the layer and its kernel hold (``tests/golden/quant_weights/<release>.json``, ``make_goldens.py --weights``);
``tests/test_weights.py`` holds these rules to those bytes. Releases without a golden take the nearest one's
era: before 0.24 the 0.11.0 / 0.19.0 rules (``gptq_marlin.py`` / ``awq_marlin.py``), from 0.24 the 0.34.0 ones
(``auto_gptq.py`` / ``auto_awq.py``).

Kernel choice (the goldens' ``kernel``):

* GPTQ / AWQ / compressed-tensors W4A16 (``choose_mp_linear_kernel``): Machete on SM 9.0 (Hopper), else Marlin;
  0.11.0 serves GPTQ with ``GPTQLinearMethod`` (ExLlama) and AWQ with ``AWQLinearMethod`` below SM 8.0
  (gptq_marlin / awq_marlin ``get_min_capability`` 80; 0.19.0 and 0.34.0's Marlin takes SM 7.5), and
  refuses compressed-tensors W4A16 there (``get_min_capability`` 80).
* fp8 block: Marlin weight-only FP8 below SM 8.9 (0.11.0, 0.19.0) / below SM 9.0 (0.34.0: the block CUTLASS and
  DeepGEMM kernels need 9.0, Marlin precedes Triton in ``_POSSIBLE_FP8_BLOCK_KERNELS``,
  kernels/linear/__init__.py:495-507), else CUTLASS / Triton (no repacking).
* NVFP4: Marlin FP4 below SM 10.0 (``cutlass_scaled_mm_supports_fp4``), CUTLASS from 10.0 (the swizzled block
  scale, rows padded to 128 and scale columns to 4: nvfp4_utils.py ``swizzle_blockscale``).
"""

from __future__ import annotations

import math

from kvplan.budget.quantization import Quantization, tensor_bytes
from kvplan.errors import UnsupportedError
from kvplan.units import cdiv
from kvplan.version import version_key

# the int32 workspace Marlin allocates per layer in 0.11-0.2x: one int32 per SM (marlin_make_workspace_new(device),
# max_blocks_per_sm 1; 0.11.0 gptq_marlin.py kernels/mixed_precision/marlin.py process_weights_after_loading,
# 0.19.0 kernels/linear/mixed_precision/marlin.py:74 ``self.workspace``); 0.34.0's Marlin allocates none
# (kernels/linear/mixed_precision/marlin.py:80-161)
MARLIN_WORKSPACE_INT32_PER_SM = 1
# GPTQ with desc_act (group activation ordering) is refused from 0.30.0 (quantization/utils/gptq_utils.py
# normalize_and_validate_gptq_desc_act, 0.34.0 lines 23-37; absent in 0.29.0)
GPTQ_ACT_ORDER_REFUSED_FROM = (0, 30)
# the era boundary: 0.24.0 replaced gptq_marlin.py / awq_marlin.py by auto_gptq.py / auto_awq.py
AUTO_ERA_FROM = (0, 24)


def _cc(capability: tuple[int, int]) -> int:
    return capability[0] * 10 + capability[1]


# Marlin's tile: output rows per rank a multiple of 64, inputs of 128 (marlin_utils.py GPTQ_MARLIN_MIN_THREAD_N /
# _K, check_marlin_supports_shape); AWQ layers that do not fit fall back to AWQLinearMethod before 0.24
# (0.11.0 / 0.19.0 awq_marlin.py get_quant_method: check_marlin_supports_layer, else AWQConfig's method)
MARLIN_MIN_N, MARLIN_MIN_K = 64, 128
# Machete's prepacked block: inputs a multiple of 64, outputs of 128, else the next kernel (Marlin)
# (machete_utils.py MACHETE_PREPACKED_BLOCK_SHAPE and check_machete_supports_shape, 0.11.0 / 0.19.0 / 0.34.0)
MACHETE_BLOCK_K, MACHETE_BLOCK_N = 64, 128


def marlin_padded_nk(rows: int, k: int, group_size: int) -> tuple[int, int]:
    """0.34.0's Marlin thread-tile padding (quantization/utils/marlin_utils.py marlin_padded_nk, lines 221-243): the
    cheaper of (n to 64, k to lcm(128, group)) and (n to 128, k to lcm(64, group)); earlier releases refuse a shape
    that needs it."""
    g = group_size if group_size > 0 else 1
    a = (_round_up(rows, 64), _round_up(k, math.lcm(128, g)))
    b = (_round_up(rows, 128), _round_up(k, math.lcm(64, g)))
    return min((a, b), key=lambda nk: (nk[0] * nk[1], nk[0] + nk[1]))


def _round_up(n: int, m: int) -> int:
    return cdiv(n, m) * m


def linear_kernel(quant: Quantization, capability: tuple[int, int], release: str, rows: int = 0, k: int = 0) -> str:
    """The kernel vLLM ``release`` serves a converted linear of ``quant`` (per-rank weight ``[rows, k]`` when
    given) with on a card of ``capability`` (the names of the goldens' ``kernel`` / ``linear_method``)."""
    cc, key = _cc(capability), version_key(release)
    m = quant.method
    if m == "awq" and key < AUTO_ERA_FROM and rows and (rows % MARLIN_MIN_N or k % MARLIN_MIN_K):
        return "AWQLinearMethod"
    if m in ("gptq", "awq", "wna16"):
        if m == "gptq" and quant.act_order and key >= GPTQ_ACT_ORDER_REFUSED_FROM:
            raise UnsupportedError(f"vLLM {release} refuses GPTQ checkpoints with desc_act=true (group activation "
                                   "ordering: quantization/utils/gptq_utils.py); use a desc_act=false checkpoint")
        if key < (0, 12) and cc < 80:
            if m == "wna16":
                raise UnsupportedError(f"vLLM {release} needs compute capability 8.0 for compressed-tensors W4A16 "
                                       "(CompressedTensorsWNA16.get_min_capability)")
            return "GPTQLinearMethod" if m == "gptq" else "AWQLinearMethod"
        if cc == 90 and not (m == "awq" and key < (0, 12)) and not (  # 0.11.0's AWQMarlin calls Marlin itself
                rows and (k % MACHETE_BLOCK_K or rows % MACHETE_BLOCK_N)):
            return "MacheteLinearKernel"
        return "MarlinLinearKernel"
    if m == "fp8" and quant.block:
        return "MarlinFP8ScaledMMLinearKernel" if cc < (90 if key >= AUTO_ERA_FROM else 89) else "Fp8BlockScaled"
    if m == "nvfp4":
        # W4A16 NVFP4 (ModelOpt W4A16_NVFP4, strategy "a16") runs the Marlin FP4 GEMM on every card
        # (ModelOptNvFp4W4A16LinearMethod, 0.24.0 quantization/modelopt.py 1247-1273: the Marlin NVFP4 adapter pinned)
        return "MarlinNvFp4LinearKernel" if cc < 100 or quant.strategy == "a16" else "CutlassNvFp4LinearKernel"
    return ""


def kept_linear_bytes(rows: int, k: int, quant: Quantization, capability: tuple[int, int], release: str, *,
                      sms: int = 0, dtype_bytes: int = 2) -> int:
    """Bytes one rank keeps of a converted linear whose per-rank weight is ``[rows, k]`` once ``release`` has
    loaded it on a card of ``capability`` (``sms``: its SM count, for Marlin's workspace; 0 leaves it out)."""
    stored = tensor_bytes((rows, k), quant, True, dtype_bytes)
    return stored + kept_delta(rows, k, quant, capability, release, sms=sms, dtype_bytes=dtype_bytes)


def kept_delta(rows: int, k: int, quant: Quantization, capability: tuple[int, int], release: str, *,
               sms: int = 0, dtype_bytes: int = 2) -> int:
    """``kept_linear_bytes`` less the stored form (``quantization.tensor_bytes``)."""
    kernel = linear_kernel(quant, capability, release, rows, k)
    auto = version_key(release) >= AUTO_ERA_FROM
    workspace = 0 if auto else 4 * MARLIN_WORKSPACE_INT32_PER_SM * sms
    m = quant.method
    if m in ("gptq", "awq", "wna16"):
        groups = cdiv(k, quant.group_size) if quant.group_size else 1
        zeros = cdiv(rows * groups * quant.bits, 8)  # packed int32 zero points, as stored
        g_idx = 4 * k
        if kernel == "GPTQLinearMethod":
            # ExLlama (0.11.0 gptq.py process_weights_after_loading): g_idx replaced by an empty tensor without
            # act-order, kept (shuffled in place) with it
            return 0 if quant.act_order else -g_idx
        if kernel == "AWQLinearMethod":
            return 0
        if kernel == "MacheteLinearKernel":
            # 0.11.0 / 0.19.0: every registered tensor kept as loaded (g_idx included); 0.34.0's AutoGPTQ registers
            # no g_idx (auto_gptq.py create_weights 339-458); AWQ's zero points become the activation dtype
            # (machete.py process_weights_after_loading: w_zp = -scales · zp, in params_dtype)
            d = -g_idx if (m == "gptq" and auto) else 0
            if m == "awq" or (m == "wna16" and quant.zero_point):
                d += rows * groups * dtype_bytes - zeros
            return d
        # Marlin
        if auto:
            # 0.34.0 marlin.py: the checkpoint's qzeros kept ("a loaded unused one keeps its data", 149-152), no
            # g_idx registered by AutoGPTQ; weight, scales and AWQ's zero points padded to marlin_padded_nk (98-140)
            pn, pk = marlin_padded_nk(rows, k, quant.group_size or -1)
            pgroups = cdiv(pk, quant.group_size) if quant.group_size else 1
            pad = (cdiv(pn * pk * quant.bits, 8) - cdiv(rows * k * quant.bits, 8)
                   + (pn * pgroups - rows * groups) * dtype_bytes)
            if m == "awq" or (m == "wna16" and quant.zero_point):
                pad += cdiv(pn * pgroups * quant.bits, 8) - zeros
            return pad - (g_idx if m == "gptq" else 0)
        d = workspace
        if m == "gptq":
            # gptq_marlin (0.11.0 / 0.19.0): symmetric zero points replaced by an empty tensor; g_idx empty without
            # act-order, else the sorted g_idx plus its int32 sort indices
            d -= 0 if quant.zero_point else zeros
            d += g_idx if quant.act_order else -g_idx
        elif m == "wna16" and quant.act_order:
            d += g_idx
        return d
    if m == "fp8" and quant.block:
        if kernel != "MarlinFP8ScaledMMLinearKernel":
            return 0
        # prepare_fp8_layer_for_marlin (marlin_utils_fp8.py): the block scales become one params-dtype scale per
        # output column and 128-column input group, [⌈k/128⌉, rows]; the fp32 block scales are freed
        bo, bi = quant.block
        pn, pk = marlin_padded_nk(rows, k, bi) if auto else (rows, k)  # 0.34.0 pads as the INT Marlin (above)
        return (pn * pk - rows * k + pn * cdiv(pk, bi) * dtype_bytes - cdiv(rows, bo) * cdiv(k, bi) * quant.scale_bytes
                + workspace)
    if m == "nvfp4":
        if kernel == "MarlinNvFp4LinearKernel":
            if not auto:
                return workspace
            pn, pk = marlin_padded_nk(rows, k, 16)  # 0.34.0: values and fp8 scales padded as the INT Marlin
            return (pn - rows) * (cdiv(pk, 2) + cdiv(pk, 16)) + rows * (cdiv(pk, 2) + cdiv(pk, 16) - cdiv(k, 2) - cdiv(k, 16))
        # CUTLASS: the fp8 block scale swizzled with its rows padded to 128 and its columns to 4
        # (nvfp4_utils.py swizzle_blockscale, 0.34.0 lines 40-57)
        return (cdiv(rows, 128) * 128 * cdiv(cdiv(k, 16), 4) * 4) - rows * cdiv(k, 16)
    return 0
