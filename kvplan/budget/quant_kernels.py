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
from kvplan.version import newest_at_or_before, version_key

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


# --- quantized MoE experts (FusedMoE) as each release keeps them on a card ---------------------------------------
#
# ``scripts/golden/quant_weights.py --moe`` builds each release's FusedMoE layer (8 experts of Qwen3-30B-A3B's,
# gemma-4-26B-A4B's, MiniMax-M2.5's and gpt-oss-20b's shapes) with each quantization config on the CPU at each card's
# capability, runs the method's ``create_weights`` and ``process_weights_after_loading`` and records what the layer,
# its method and its kernel keep and the backend its oracle chose (``tests/golden/quant_weights/moe/<release>.json``:
# 0.11.0, 0.19.0, 0.29.0, 0.34.0). The rules below reproduce every recorded figure exactly
# (``tests/test_weights.py::test_quantized_moe_layers_keep_the_bytes_each_release_keeps``). Not derived (the stored
# form is counted, and the weights' notes say so): backends whose loading calls FlashInfer's compiled functions
# (TRT-LLM's weight shuffles for fp8 block / ModelOpt fp8 / NVFP4 on SM 10.0 from 0.29, 0.11's SM100 MXFP4) —
# ``moe_backend`` answers NOT_RUN; int8 W8A8 and bitsandbytes experts (no MoE rule); ROCm's AITER / Triton MoE (the
# harness answers CUDA only).

MOE_GOLDEN_RELEASES = ("0.11.0", "0.19.0", "0.29.0", "0.34.0")
# the Marlin NVFP4 MoE pads the intermediate size per rank to a multiple of 128 (w13's rows, w2's columns) from the
# 0.29.0 golden on (0.19.0 keeps it)
MOE_MARLIN_PADS_INTERMEDIATE_FROM = (0, 29)
MOE_MARLIN_NO_WORKSPACE_FROM = (0, 34)


def moe_kind(quant: Quantization) -> str:
    """The expert scheme a FusedMoE method is chosen for: ``fp8-block`` / ``fp8-channel`` / ``fp8-tensor`` /
    ``fp8-online`` / ``nvfp4`` / ``nvfp4-a16`` / ``gptq`` / ``awq`` / ``wna16`` / ``mxfp4``; "" for a method without
    a MoE rule (int8 W8A8, bitsandbytes)."""
    m = quant.expert_method or quant.method
    if m == "fp8":
        if quant.expert_method == "fp8" or quant.block:
            return "fp8-block" if quant.block else "fp8-tensor"
        if quant.strategy == "channel":
            return "fp8-channel"
        return "fp8-online" if quant.config_format == "online" else "fp8-tensor"
    if m == "nvfp4":
        return "nvfp4-a16" if quant.strategy == "a16" else "nvfp4"
    if m in ("gptq", "awq", "wna16", "mxfp4"):
        return m
    return ""


def _marlin_moe_fits(quant: Quantization, hidden: int, inter: int) -> bool:
    """check_moe_marlin_supports_layer (marlin_utils.py, 0.11.0-0.34.0): Marlin MoE tiles need the hidden size a
    multiple of 128 and the intermediate size per rank a multiple of max(64, group)."""
    g = quant.group_size if quant.group_size > 0 else 1
    return hidden % 128 == 0 and inter % max(64, g) == 0


def moe_backend(quant: Quantization, capability: tuple[int, int], release: str, hidden: int, inter: int) -> str:
    """The MoE backend ``release`` loads a quantized expert layer (``hidden`` size, ``inter`` intermediate size per
    rank) with on a card of ``capability``, in vLLM's names (the goldens' ``moe_backend``): MARLIN, TRITON, CUTLASS,
    VLLM_CUTLASS, FLASHINFER_CUTLASS, FLASHINFER_TRTLLM, DEEPGEMM, WNA16 (the Triton WNA16 methods); REFUSED where
    the release refuses the layer, NOT_RUN where the backend's loading needs FlashInfer's compiled package (not
    derived), "" for a scheme without a MoE rule. Releases between the goldens take the newest golden's rule at or
    before them."""
    kind, cc = moe_kind(quant), _cc(capability)
    era = newest_at_or_before(MOE_GOLDEN_RELEASES, release) or MOE_GOLDEN_RELEASES[0]
    if not kind:
        return ""
    if kind == "fp8-block" and quant.block and inter % quant.block[0]:
        if _refined_fp8_block(quant, hidden, inter, release) is None:
            return "REFUSED"  # "The output_size of gate's and up's weight ... is not divisible by ... block_n"
        return "TRITON" if cc >= 89 else "REFUSED"  # only the Triton experts take a refined block shape
    return _MOE_RULES[era](kind, quant, cc, hidden, inter)


# vLLM's own fp8 format refines the block scales of a MoE layer whose intermediate size per rank the checkpoint's
# block does not divide (refine_fp8_moe_block_shape, fused_moe/oracle/fp8.py, 0.29.0 lines 272-302)
FP8_MOE_BLOCK_REFINED_FROM = (0, 29)


def _refined_fp8_block(quant: Quantization, hidden: int, inter: int, release: str) -> tuple[int, int] | None:
    """The block shape a vLLM-format fp8 block MoE layer keeps scales for when ``inter`` is not a multiple of the
    checkpoint's block: gcd(block, intermediate, hidden) when at least 32 (0.29+), else None (refused)."""
    if quant.config_format != "fp8" or version_key(release) < FP8_MOE_BLOCK_REFINED_FROM or not quant.block:
        return None
    refine = math.gcd(quant.block[0], quant.block[1], inter, hidden)
    return (refine, refine) if refine >= 32 else None


def _moe_0_11(kind: str, quant: Quantization, cc: int, hidden: int, inter: int) -> str:
    """0.11.0: fp8 Marlin below SM 8.9 (fp8.py / compressed_tensors_moe.py ``use_marlin``), the CUTLASS grouped
    GEMM for compressed-tensors per-channel fp8 on SM 9.0 / 10.x, Triton otherwise; ModelOpt fp8 always Triton;
    NVFP4 refused below SM 8.0, Marlin below SM 10.0, CUTLASS from it (ModelOpt's needs the scale columns a multiple
    of 16 ... per 16 values); GPTQ / AWQ / compressed-tensors W4A16 Marlin where the shape fits
    (``_marlin_moe_fits``), GPTQ the Triton WNA16 method below SM 8.0, AWQ refused there; MXFP4 Marlin but on
    SM 10.0 (FlashInfer's SM100 backend: not run)."""
    if kind.startswith("fp8"):
        if quant.config_format == "modelopt":
            return "TRITON"
        if cc < 89:
            return "MARLIN"
        if kind == "fp8-channel" and (cc == 90 or 100 <= cc < 110):
            return "CUTLASS"
        return "TRITON"
    if kind == "nvfp4":
        if cc < 80:
            return "REFUSED"
        if cc < 100:
            return "MARLIN"
        if quant.config_format == "modelopt" and (cdiv(hidden, 16) % 16 or cdiv(inter, 16) % 16):
            return "REFUSED"  # modelopt.py: "Expected weight_scale.dim(1) to be divisible by 16"
        return "CUTLASS"
    if kind in ("gptq", "awq", "wna16"):
        fits = _marlin_moe_fits(quant, hidden, inter)
        if cc < 80 and kind != "wna16":
            return "REFUSED" if kind == "awq" and fits else "WNA16"
        return "MARLIN" if fits else "WNA16"
    if kind == "mxfp4":
        return "NOT_RUN" if cc == 100 else "MARLIN"
    return ""


def _moe_oracle(era: tuple[int, ...]):
    """0.19.0, 0.29.0 and 0.34.0 (the backend oracles, fused_moe/oracle/{fp8,nvfp4,mxfp4}.py, with FlashInfer
    installed as vLLM's CUDA wheels require): fp8 Marlin below SM 8.9; fp8 block Triton, on SM 10.0 FlashInfer
    TRT-LLM (0.19: no repacking; 0.29+: its shuffles not run); ModelOpt fp8 (static activation scales) Triton on
    SM 8.9, FlashInfer CUTLASS elsewhere (0.29+ on 10.0: TRT-LLM, not run); compressed-tensors per-channel fp8 vLLM's
    CUTLASS on SM 9.0 / 10.0, Triton elsewhere; NVFP4 Marlin below SM 10.0, FlashInfer CUTLASS on 12.0, on 10.0
    FlashInfer TRT-LLM (not run; 0.19: only where the intermediate size is a multiple of 128, FlashInfer CUTLASS
    otherwise); GPTQ / AWQ Marlin where the shape fits (``_marlin_moe_fits``), else the Triton WNA16 method;
    compressed-tensors W4A16 likewise in 0.19, refused where Marlin does not fit from 0.29; MXFP4 Marlin,
    FlashInfer's CUTLASS MXFP4 x BF16 on SM 9.0 in 0.19, SM 10.0 not run (the harness cannot import triton_kernels,
    which needs libcuda: where an install with it takes Triton's MXFP4 backend the goldens hold the Marlin fallback;
    kvplan's weights keep ``weights.mxfp4_padding_for``'s choice for MXFP4, whose Triton layout has its own goldens
    with the package importable: ``quant_weights.py --moe --triton-kernels``, ``triton_mxfp4_swizzle_extra``)."""
    late = era >= (0, 29)

    def rule(kind: str, quant: Quantization, cc: int, hidden: int, inter: int) -> str:
        if kind.startswith("fp8"):
            if cc < 89:
                return "MARLIN"
            if kind == "fp8-block":
                return ("NOT_RUN" if late else "FLASHINFER_TRTLLM") if cc == 100 else "TRITON"
            if quant.static_input_scale:
                return "TRITON" if cc == 89 else "NOT_RUN" if late and cc == 100 else "FLASHINFER_CUTLASS"
            return "VLLM_CUTLASS" if kind == "fp8-channel" and cc in (90, 100) else "TRITON"
        if kind == "nvfp4":
            if cc < 100:
                return "MARLIN"
            return "NOT_RUN" if cc == 100 and (late or inter % 128 == 0) else "FLASHINFER_CUTLASS"
        if kind in ("gptq", "awq", "wna16"):
            if _marlin_moe_fits(quant, hidden, inter):
                return "MARLIN"
            return "REFUSED" if late and kind == "wna16" else "WNA16"
        if kind == "mxfp4":
            return "NOT_RUN" if cc == 100 else "FLASHINFER_CUTLASS_MXFP4_BF16" if cc == 90 and not late else "MARLIN"
        return ""
    return rule


_MOE_RULES = {"0.11.0": _moe_0_11, "0.19.0": _moe_oracle((0, 19)), "0.29.0": _moe_oracle((0, 29)),
              "0.34.0": _moe_oracle((0, 34))}


def _moe_values(rows: int, k: int, bits: int) -> int:
    return cdiv(rows * k * bits, 8)


def kept_expert_bytes(experts: int, rows: int, k: int, quant: Quantization, backend: str, release: str, *,
                      w13: bool, dtype_bytes: int = 2) -> int:
    """Bytes one rank keeps of one stacked expert tensor ``[experts, rows, k]`` (w13: gate and up, ``rows`` = 2 ×
    the intermediate size per rank, ``k`` the hidden size; w2: down, ``rows`` the hidden size) once ``release`` has
    loaded it with ``backend`` (``moe_backend``): its values, scales, zero points and per-expert scalars; the
    layer's own buffers are ``moe_layer_bytes``."""
    e, kind, key = experts, moe_kind(quant), version_key(release)
    db = dtype_bytes
    if kind.startswith("fp8"):
        values = e * rows * k
        if backend == "MARLIN":
            # prepare_moe_fp8_layer_for_marlin (marlin_utils_fp8.py): the scales become params-dtype, one per output
            # row and 128-column group (block) or one per output row (channel, tensor)
            groups = cdiv(k, quant.block[1]) if quant.block else 1
            return values + e * rows * groups * db
        if quant.block:
            hidden, inter = (k, rows // 2) if w13 else (rows, k)
            bo, bi = (_refined_fp8_block(quant, hidden, inter, release) if inter % quant.block[0] else None) \
                or quant.block
            return values + e * cdiv(rows, bo) * cdiv(k, bi) * 4
        if kind == "fp8-channel":
            scales = e * rows * 4
            # CUTLASS grouped GEMM (0.11 CompressedTensorsW8A8Fp8MoECutlassMethod): three int64 stride tensors per
            # expert held by the method, on the layer's first tensor
            return values + scales + (e * 3 * 8 if w13 and backend == "CUTLASS" else 0)
        # per-tensor: w13's two shard scales requantized to one per expert ([E]), w2's one
        scalars = e * 4
        if backend == "FLASHINFER_CUTLASS":
            scalars += e * 4  # the GEMM's alpha per expert (moe_quant_config g1/g2 alphas)
        return values + scalars
    if kind in ("nvfp4", "nvfp4-a16"):
        if backend == "MARLIN" and key >= MOE_MARLIN_PADS_INTERMEDIATE_FROM:
            # the layer's hidden and intermediate sizes padded as the down projection's Marlin tile needs
            # (marlin_padded_nk over [hidden, intermediate], group 16)
            hidden, inter = (k, rows // 2) if w13 else (rows, k)
            hidden, inter = marlin_padded_nk(hidden, inter, 16)
            rows, k = (2 * inter, hidden) if w13 else (hidden, inter)
        values = cdiv(e * rows * k, 2)
        if backend in ("MARLIN",):
            scales = e * rows * cdiv(k, 16)
        else:  # the CUTLASS / FlashInfer block-scale swizzle: rows to 128, scale columns to 4 (swizzle_blockscale)
            scales = e * _round_up(rows, 128) * _round_up(cdiv(k, 16), 4)
        era = version_key(newest_at_or_before(MOE_GOLDEN_RELEASES, release) or MOE_GOLDEN_RELEASES[0])
        if backend == "MARLIN" and era < (0, 19) and quant.config_format == "compressed-tensors":
            values *= 2  # 0.11.0 keeps the loaded weight_packed beside Marlin's repacked weight
        return values + scales + e * _nvfp4_scalar_bytes(quant, backend, era, w13)
    if kind in ("gptq", "awq", "wna16"):
        g = quant.group_size or k
        values = _moe_values(e * rows, k, quant.bits)
        scales = e * rows * cdiv(k, g) * db
        if kind == "gptq":
            # GPTQMarlinMoEMethod.create_weights: qzeros [E, k/g, rows·bits/32] in the params dtype, kept; int32 in
            # AutoGPTQMoEMethod (from 0.24)
            zeros = e * cdiv(k, g) * cdiv(rows * quant.bits, 32) * (4 if key >= AUTO_ERA_FROM else db)
        elif kind == "awq":
            zeros = e * cdiv(k, g) * cdiv(rows * quant.bits, 32) * 4  # packed int32 zero points, kept
        else:
            zeros = e * 2 * 4 if backend == "MARLIN" else 0  # compressed-tensors' weight_shape [E, 2] (fp32 here)
        if backend == "WNA16":
            return values + _wna16_moe_bytes(e, rows, k, quant, w13, dtype_bytes)
        return values + scales + zeros
    if kind == "mxfp4":
        # the intermediate size rounded up to 128 and the hidden size to 256 (Marlin; weights.MARLIN_MXFP4_PADDING) or
        # 128 (FlashInfer's CUTLASS MXFP4 x BF16 on SM 9.0) at allocation
        # (mxfp4_round_up_hidden_size_and_intermediate_size)
        ha = 256 if backend == "MARLIN" else 128
        rows, k = (2 * _round_up(rows // 2, 128), _round_up(k, ha)) if w13 else (_round_up(rows, ha),
                                                                                 _round_up(k, 128))
        values = cdiv(e * rows * k, 2)
        # + the expert biases (gpt-oss); FlashInfer's CUTLASS experts hold the SwiGLU alpha, beta and clamp limit per
        # expert (fp32)
        extra = e * 3 * 4 if w13 and backend == "FLASHINFER_CUTLASS_MXFP4_BF16" else 0
        return values + e * rows * cdiv(k, 32) + e * rows * db + extra
    raise UnsupportedError(f"no MoE rule for {quant.description}")


def triton_mxfp4_swizzle_extra(rows: int, k: int, value_align: int, scale_row_align: int,
                               scale_column_align: int) -> int:
    """Bytes per expert the Triton MXFP4 backend's swizzled copy of one stacked expert tensor ``[rows, k]`` (fp4
    values packed two per byte, an e8m0 scale per 32) keeps beyond the checkpoint's layout: its packed values padded
    to ``value_align`` bytes on both dims, its scales' rows to ``scale_row_align`` and columns to
    ``scale_column_align`` (triton_kernels' Hopper layouts; ``weights.TRITON_MXFP4_PADDING_*`` says which release
    pads what; 1, 1, 1: the unswizzled StridedLayout)."""
    kb, ks = cdiv(k, 2), cdiv(k, 32)
    values = _round_up(rows, value_align) * _round_up(kb, value_align) - rows * kb
    scales = _round_up(rows, scale_row_align) * _round_up(ks, scale_column_align) - rows * ks
    return values + scales


def _wna16_moe_bytes(e: int, rows: int, k: int, quant: Quantization, w13: bool, db: int) -> int:
    """Scales, zero points and indices of the Triton WNA16 MoE methods (no repacking), beside the packed values.

    * GPTQ / AWQ (``MoeWNA16Method``, moe_wna16.py create_weights): the group halved until both the hidden and the
      intermediate size divide it; scales ``[E, rows, k/g]``; AWQ's zero points uint8 ``[E, rows·bits/8, k/g]``.
    * compressed-tensors (``CompressedTensorsWNA16MoEMethod``): scales ``[E, k // g, rows]`` (floor), the int32
      ``g_idx`` and its sort indices per input column, the ``weight_shape`` pair (fp32 here)."""
    if quant.method == "wna16" or quant.config_format == "compressed-tensors":
        g = quant.group_size or k
        return e * (k // g) * rows * db + e * k * 4 * 2 + e * 2 * 4
    g = quant.group_size or k
    hidden, inter = (k, rows // 2) if w13 else (rows, k)
    while g > 32 and (inter % g or hidden % g):
        g //= 2
    out = e * rows * (k // g) * db
    if quant.method == "awq":
        out += e * (rows * quant.bits // 8) * (k // g)
    return out


def _nvfp4_scalar_bytes(quant: Quantization, backend: str, key: tuple[int, ...], w13: bool) -> int:
    """Bytes of the scalars per expert an NVFP4 MoE layer keeps beside one of its tensors (w13 loads two shards:
    its per-shard scalars are ``[E, 2]``)."""
    ct = quant.config_format == "compressed-tensors"
    shard = 2 if w13 else 1
    if key < (0, 12):
        # 0.11.0 (ModelOptNvFp4FusedMoE / CompressedTensorsW4A4MoeMethod): the loaded input scales kept; Marlin turns
        # weight_scale_2 into one params-dtype value per expert, CUTLASS keeps it fp32 and adds g1/g2 alphas and
        # the inverted input scale per expert
        # compressed-tensors keeps its weight global scales besides (Marlin: both shards' of w13 and w2's; CUTLASS:
        # w13's, w2's inverted input scale a view of a loaded tensor)
        if backend == "MARLIN":
            return 4 * shard + 2 + (4 * shard if ct else 0)
        return 4 * shard + 4 + 4 + 4 + (4 * shard if ct and w13 else 0)
    # 0.19.0+: weight_scale_2 one fp32 per expert; compressed-tensors keeps its input and weight global scales as
    # loaded; the CUTLASS / FlashInfer GEMMs add the input scale and (0.19-0.29, the quant config's activation
    # global scale) one more per expert; 0.34.0's Marlin keeps ModelOpt's loaded input scales
    extra = 8 * shard if ct else 0
    if key >= MOE_MARLIN_NO_WORKSPACE_FROM:
        if backend == "MARLIN":
            return 4 + extra + (0 if ct else 4 * shard)
        return 8 + extra
    return (4 if backend == "MARLIN" else 12) + extra


def moe_layer_bytes(quant: Quantization, backend: str, release: str, *, sms: int = 0) -> int:
    """Bytes a quantized MoE layer keeps once, whatever its expert count: Marlin's workspace (an int32 per SM
    times 4: ``marlin_make_workspace_new(device, 4)``) and the static activation scales reduced to one scalar."""
    kind = moe_kind(quant)
    era = version_key(newest_at_or_before(MOE_GOLDEN_RELEASES, release) or MOE_GOLDEN_RELEASES[0])
    out = 0
    # the 0.34.0 golden's Marlin MoE keeps no workspace (its kernels allocate one per call); MXFP4's none from 0.19.0
    if backend == "MARLIN" and era < MOE_MARLIN_NO_WORKSPACE_FROM and not (kind == "mxfp4" and era >= (0, 19)):
        out += 16 * sms
    if kind.startswith("fp8") and quant.static_input_scale:
        out += 8  # w13_input_scale and w2_input_scale: the max over experts, one fp32 each
        if backend == "FLASHINFER_CUTLASS" and era < MOE_MARLIN_NO_WORKSPACE_FROM:
            out += 8  # the activations' global scales (moe_quant_config a1 / a2; 0.19-0.29)
    return out


# The FP8 MoE oracle's default pick on CUDA from 0.14 (the releases whose WorkspaceManager keeps the fused-MoE
# workspace under the sampler, ``estimate.moe_held_bytes``), for the held term: where it is TritonExperts the
# modular kernel takes workspace13 / workspace2 of the same shapes as for unquantized experts (experts/triton_moe.py
# 0.29.0 lines 218-233: (M, k, max(N/2, K)) and (M, k, max(N, K))) from the WorkspaceManager in the activation
# dtype (modular_kernel.py 0.29.0 lines 830-833 ``workspace_dtype`` returns act_dtype, 1144-1176
# ``current_workspace_manager().get_simultaneous``; 0.14.1 lines 818-862).
FP8_HELD_TRITON = "TRITON"


def fp8_moe_held_backend(quant: Quantization, capability: tuple[int, int], release: str, hidden: int, inter: int,
                         *, expert_parallel: bool = False) -> tuple[str, str]:
    """(backend, why) for an FP8 expert layer on a CUDA card of ``capability`` under ``release``'s default
    environment (no VLLM_USE_FLASHINFER_MOE_FP8 / VLLM_USE_DEEP_GEMM / --moe-backend set), read from each era's
    oracle; ``backend`` is ``FP8_HELD_TRITON`` where the pick is TritonExperts, else the other backend's name
    (``DEEPGEMM_OR_TRITON`` where it depends on whether the deep_gemm package is installed).

    * 0.14.x (quantization/fp8.py and fused_moe/oracle/fp8.py 0.14.1 lines 51-150, ``select_fp8_moe_backend``):
      FlashInfer only with VLLM_USE_FLASHINFER_MOE_FP8=1 (envs.py line 1230, default 0); Marlin below SM 8.9
      (lines 104-109); DeepGEMM for block FP8 on SM 9.0 / 10.x where deep_gemm is importable (lines 123-138,
      ``is_deep_gemm_supported``: utils/deep_gemm.py lines 69-77; no vLLM wheel requires deep_gemm, so kvplan
      cannot know); vLLM's CUTLASS grouped GEMM for compressed-tensors' non-block FP8 (allow_vllm_cutlass=True,
      compressed_tensors_moe.py line 587) on SM 9.0 / 10.x; Triton otherwise (lines 148-150; make_fp8_moe_kernel
      lines 348-357 wraps TritonExperts in FusedMoEModularKernel).
    * 0.15.x (oracle/fp8.py 0.15.1 lines 144-330): the priority list AITER, FlashInfer TRT-LLM, FlashInfer CUTLASS,
      DeepGEMM, vLLM CUTLASS (compressed-tensors only: fp8.py line 678 passes allow_vllm_cutlass=False), Triton;
      FlashInferExperts takes static per-tensor FP8 from SM 9.0 and block FP8 on SM 9.0 exactly
      (flashinfer_cutlass_moe.py 0.15.1 lines 93-137; flashinfer-python is a requirement of every vLLM CUDA
      wheel, e.g. 0.15.1's METADATA), so Hopper's block and static FP8 take it, SM 8.9 and dynamic FP8 Triton.
    * 0.17-0.18: 0.19.0's structure (oracle/fp8.py 0.17.0 lines 85-95 move Triton to the front for block FP8 on
      SM 9.0 without expert parallelism, FlashInfer CUTLASS with it), taken from ``moe_backend``'s 0.19.0 rule;
      from 0.19 ``moe_backend`` (its oracle run on the CPU, tests/golden/quant_weights/), with the same expert-
      parallel exception (0.29.0 lines 113-123, 0.34.0 lines 128-138).
    """
    kind, cc = moe_kind(quant), _cc(capability)
    v = version_key(release)
    if not kind.startswith("fp8"):
        return "", "not an FP8 expert scheme"
    if v < (0, 14):
        return moe_backend(quant, capability, release, hidden, inter), "before 0.14 nothing is held"
    if cc < 89:
        return "MARLIN", "weight-only FP8 Marlin below SM 8.9"
    if v < (0, 15):
        if kind == "fp8-block" and (cc == 90 or 100 <= cc < 110):
            return "DEEPGEMM_OR_TRITON", ("block FP8 on SM 9.0 / 10.x: DeepGEMM where the deep_gemm package is "
                                          "installed, Triton otherwise (oracle/fp8.py 0.14.1 lines 123-138)")
        if quant.config_format == "compressed-tensors" and (cc == 90 or 100 <= cc < 110):
            return "VLLM_CUTLASS", "compressed-tensors FP8 on SM 9.0 / 10.x (oracle/fp8.py 0.14.1 lines 144-146)"
        return FP8_HELD_TRITON, "TritonExperts (oracle/fp8.py 0.14.1 lines 148-150, make_fp8_moe_kernel 348-357)"
    if v < (0, 17):
        if cc >= 90 and (quant.static_input_scale or (kind == "fp8-block" and cc == 90)):
            return "FLASHINFER_CUTLASS", ("FlashInferExperts: static per-tensor FP8 from SM 9.0, block FP8 on 9.0 "
                                          "(flashinfer_cutlass_moe.py 0.15.1 lines 111-137)")
        if kind == "fp8-block" and 100 <= cc < 110:
            return "FLASHINFER_TRTLLM_OR_DEEPGEMM", "block FP8 on SM 10.x (oracle/fp8.py 0.15.1 lines 184-200)"
        if kind == "fp8-channel" and quant.config_format == "compressed-tensors" and cc in (90, 100):
            return "VLLM_CUTLASS", "compressed-tensors per-channel FP8 on SM 9.0 / 10.0"
        return FP8_HELD_TRITON, "TritonExperts (the first of 0.15.1's priority list that takes the scheme)"
    if expert_parallel and kind == "fp8-block" and cc == 90:
        return "FLASHINFER_CUTLASS", "block FP8 on SM 9.0 with expert parallelism (oracle/fp8.py _get_priority_backends)"
    backend = (_MOE_RULES["0.19.0"](kind, quant, cc, hidden, inter) if v < (0, 19)
               else moe_backend(quant, capability, release, hidden, inter))
    if backend == "TRITON":
        return FP8_HELD_TRITON, "TritonExperts (fused_moe/oracle/fp8.py backend_to_kernel_cls, 0.29.0 lines 189-194)"
    return backend, f"{backend} (fused_moe/oracle/fp8.py's priority list)"
