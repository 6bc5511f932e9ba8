"""Weight bytes one GPU holds, stage by stage.

Per rank (``weight_memory(..., tp, pp)``), as vLLM shards:
* embeddings and lm_head are vocab-parallel: ``round_up(vocab, 64) / tp`` rows each;
* attention and MLP are column-parallel (q/k/v, gate/up: output rows / tp) then
  row-parallel (o, down: input columns / tp); KV heads are replicated when tp exceeds them
  (``max(1, kv_heads / tp)`` heads per rank); MoE experts split by tp (TP or EP alike);
* norms, routers, MLA's low-rank ``q_a``/``kv_a`` projections, the DeepSeek-V3.2 indexer and
  MTP's ``eh_proj`` are replicated;
* pipeline stages take their decoder layers (vLLM's ``get_pp_indices``); the embedding sits
  on the first stage, the final norm and lm_head on the last (a tied embedding is held by
  both when pp > 1); drafter and MTP weights sit on the last stage.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from kvplan.budget.checkpoint import DTYPE_BITS
from kvplan.budget.checkpoint_bundle import DOWNLOAD_FAILED, checkpoint_metadata
from kvplan.budget.meta import meta_param_counts
from kvplan.budget.quant_kernels import (
    FP8_HELD_TRITON, fp8_moe_held_backend, kept_delta, kept_expert_bytes, linear_kernel, moe_backend, moe_kind,
    moe_layer_bytes, triton_mxfp4_swizzle_extra,
)
from kvplan.budget.rotary import RotaryCache, rotary_cache, table_dtype_bytes
from kvplan.budget.quantization import (
    NO_QUANTIZATION, Quantization, quantization_of, quantization_override, weight_bytes,
)
from kvplan.model.inventory import ModelInventory, layout_inventory
from kvplan.tensors import KINDS, Inventory, Weight
from kvplan.model.layout import get_pp_indices
from kvplan.units import cdiv, dtype_size_bytes
from kvplan.version import version_key

# vLLM's Marlin MXFP4 MoE backend, the one CUDA cards below compute capability 9.0 (A100, A10G, L4,
# L40S, RTX 30xx/40xx) run: the experts are allocated with the intermediate size per rank rounded up
# to 128 and the hidden size to 256 (vLLM 0.34.0 model_executor/layers/fused_moe/oracle/mxfp4.py
# mxfp4_round_up_hidden_size_and_intermediate_size, lines 850-855; Mxfp4MoEMethod.create_weights
# allocates w13 [E, 2·I', H'], w2 [E, H', I'] and their biases with the padded sizes).
MARLIN_MXFP4_PADDING = (128, 256)  # (intermediate alignment, hidden alignment)


# Releases whose MXFP4 MoE runs Marlin on every CUDA card but compute capability 10.0. Their wheels pin
# torch==2.7.1 (vllm-0.10.1 and vllm-0.10.1.1 METADATA, Requires-Dist), and Mxfp4MoEMethod._should_use_marlin
# (0.10.1.1 model_executor/layers/quantization/mxfp4.py:123-135, the same lines in 0.10.1) returns True on CUDA
# when the card is not cc 10.0 and either cc < 9.0, triton_kernels is missing, or torch < 2.8.0: with the
# pinned torch, Hopper (cc 9.0) and consumer Blackwell (cc 12.0) take Marlin and its padding too (the H100 log
# of vllm issue #23278 prints marlin_utils_fp4's "Weight-only FP4 compression ... Marlin kernel" warning).
MARLIN_MXFP4_EXCEPT_SM100_RELEASES = ("0.10.1", "0.10.1.1")
# vLLM's Triton MXFP4 MoE backend (the triton_kernels package) on CUDA: the intermediate size per rank rounded
# up to 64, the hidden size kept (0.11.0 model_executor/layers/quantization/mxfp4.py:224-226 and 0.12.0
# :328-331, the ``else`` branch of Mxfp4MoEMethod.create_weights; 0.19.0 fused_moe/oracle/mxfp4.py:398-399 and
# 0.34.0 :900-901, the ``else`` branch of mxfp4_round_up_hidden_size_and_intermediate_size, which TRITON
# reaches on CUDA). gpt-oss at TP 1 (2880 = 45·64) keeps the checkpoint's layout; TP 2 pads 1440 → 1472.
# Two more terms of the Triton path's process_weights_after_loading, as a padding tuple's third and fourth
# fields (intermediate alignment, hidden alignment, bytes per expert-bias element, extra copies of the block
# scales): the biases become float32 (0.11.0 quantization/mxfp4.py:581-582, 0.18.1 :889-890, 0.19.0
# fused_moe/oracle/mxfp4.py:725-726, 0.34.0 :1434-1436), and through 0.24 the swizzled scales go into the
# kernel's PrecisionConfig while the checkpoint's w13/w2_weight_scale parameters stay allocated (only
# w13/w2_weight are deleted: 0.11.0 quantization/mxfp4.py:599-614, 0.12.0 :767-784, 0.18.1 :906-922, 0.19.0
# oracle/mxfp4.py:728-745 with quantization/mxfp4.py:299-308 keeping the parameter); 0.25.1 deletes them
# (oracle/mxfp4.py:1155 ``del layer.w13_weight_scale``, 0.26.0 :1159-1165), 0.34.0 stores the swizzled scales in
# the parameters' storage (:1454-1460). The swizzled copy's row padding (HopperMXScaleLayout, rows to a
# multiple of 256) is not counted.
# Fifth to seventh fields: the alignment of the swizzled copy's packed values (both dims, in bytes), of its block
# scales' rows and of their columns, from the Triton path's ``_swizzle_mxfp4`` (quantization/utils/mxfp4_utils.py)
# and triton_kernels' Hopper layouts: on SM 9.0 with the release's torch >= 2.8.1 HopperMXValueLayout /
# HopperMXScaleLayout, StridedLayout (no padding) otherwise (0.11.0 :28-36, 0.19.0 :34-45, 0.34.0 :80-92):
# * scale rows to 2·num_warps·2·8 = 256 (num_warps 8 without DeepEP's low-latency kernels, 0.17.0
#   quantization/mxfp4.py:873-877; the default from 0.19) and scale columns to 2 (hopper_scale.py ``swizzle_data``
#   SWIZZLE_ALIGN_M / _K, the same lines in every vendored copy 0.12.0-0.34.0); from 0.26.0 the columns to 4 first
#   on SM 9.0 (mxfp4_utils.py "pad K (num scale groups) to 0 mod 4", 0.34.0 :132-137; absent in 0.25.1);
# * values pre-padded to 64 packed bytes on both dims by the vendored copies of 0.17.0-0.21.x (hopper_value.py
#   ``swizzle_data`` SWIZZLE_ALIGN_M = SWIZZLE_ALIGN_K = 64; absent in 0.12.0-0.15.1 and from 0.22.1, whose tile
#   packs of 16 / 32 packed bytes divide gpt-oss's sizes at TP 1-8: not counted).
# ``scripts/golden/quant_weights.py --moe --triton-kernels`` runs the release's own code on the CPU at SM 9.0 (its
# vendored triton_kernels importable, torch answered as the release pins it, gpt-oss's activation and model type):
# tests/golden/quant_weights/moe/triton_kernels/<release>.json (0.19.0, 0.29.0, 0.34.0; test_weights.py holds the
# rule to them). 0.11.0 pins torch 2.8.0 (its wheel's Requires-Dist): StridedLayout; 0.11.2 pins 2.9.0 (0.11.1 is
# not unpacked here: taken as 0.11.2). From 0.25.1 the checkpoint's scales are deleted (the fourth field 0) and the
# swizzled copy, padded, is what the layer keeps.
TRITON_MXFP4_PADDING_STRIDED = (64, 1, 4, 1, 1, 1, 1)  # 0.11.0 (torch 2.8.0: no swizzle)
TRITON_MXFP4_PADDING_KEPT_SCALES = (64, 1, 4, 1, 1, 256, 2)  # 0.11.1-0.16, 0.22-0.24
TRITON_MXFP4_PADDING_VALUES_PADDED = (64, 1, 4, 1, 64, 256, 2)  # 0.17-0.21
TRITON_MXFP4_PADDING_SCALES_DELETED = (64, 1, 4, 0, 1, 256, 2)  # 0.25
TRITON_MXFP4_PADDING = (64, 1, 4, 0, 1, 256, 4)  # 0.26+
TRITON_KEEPS_SCALES_BEFORE = (0, 25)
TRITON_SCALE_COLUMNS_TO_4_FROM = (0, 26)
TRITON_VALUES_PADDED = ((0, 17), (0, 22))  # [from, before)
TRITON_STRIDED_RELEASES = ("0.11.0",)
# Releases whose Hopper (cc 9.0) MXFP4 MoE takes Marlin unless the triton_kernels package is installed:
# get_mxfp4_backend (0.11.0 model_executor/layers/quantization/mxfp4.py:85-105) picks FlashInfer's SM90 BF16
# kernel only with VLLM_USE_FLASHINFER_MOE_MXFP4_BF16 set, else Marlin when VLLM_MXFP4_USE_MARLIN is set or
# has_triton_kernels() is False (0.11.0 vllm/utils/__init__.py:3431-3434: the top-level ``triton_kernels``
# module only), Triton otherwise. No 0.11 wheel lists triton_kernels (Requires-Dist) nor vendors it
# (0.11.0 and 0.11.2 vllm/third_party hold pynvml.py only): a pip install gets Marlin and its padding (the
# value; the Kaggle 0.11.2 log prints the Marlin FP4 warning), an install that adds the package (the
# vllm/vllm-openai:v0.11.0 image of the llm-d H100 logs loads below Marlin's figure) gets Triton's: the
# band's low end. The user does not state which, so both ends are kept.
HOPPER_MARLIN_MXFP4_RELEASES = ("0.11.0", "0.11.1", "0.11.2")
# From 0.12.0 the wheel vendors triton_kernels (vllm/third_party/triton_kernels in 0.12.0 ... 0.34.0) and
# has_triton_kernels() accepts it (0.12.0 vllm/utils/import_utils.py:431-438): Hopper takes Triton in every
# install. 0.12-0.18: get_mxfp4_backend (0.12.0 quantization/mxfp4.py:107-166, 0.18.1 :157-171). 0.19+:
# select_mxfp4_moe_backend's priority list (0.19.0 fused_moe/oracle/mxfp4.py:174-183: FLASHINFER_TRTLLM, CK,
# TRITON, ...; 0.34.0 :424-458) where TRITON's device check accepts (9, 0) <= cc < (11, 0) only (0.19.0
# fused_moe/gpt_oss_triton_kernels_moe.py:555-564): Hopper gets Triton, cards below 9.0 fall to MARLIN.
#
# VLLM_MXFP4_USE_MARLIN=1 (``--env``; envs.py ``maybe_convert_bool``), where each release reads it:
# * 0.10.1: Mxfp4MoEMethod._should_use_marlin returns it first (0.10.1 quantization/mxfp4.py:124-125): every card;
# * 0.11.0: not read by the MoE method (no reference under model_executor/);
# * 0.11.2 (0.11.1 taken as it): the fallback after the FlashInfer branches (0.11.2 quantization/mxfp4.py:134-142):
#   Hopper (cards below 9.0 are Marlin already; 0.11's B200 is Marlin without FlashInfer);
# * 0.12-0.18: the same fallback after the SM100 FlashInfer branch (0.12.0 :161, 0.18.1 :165): Hopper;
# * 0.19-0.23: the explicit Marlin configuration before the priority list (0.19.0 oracle/mxfp4.py:336, 0.22.1
#   :526): every card, B200 included;
# * 0.24+: not read by the MoE oracle (no reference under model_executor/ in 0.24.0, 0.29.0, 0.34.0).
MXFP4_MARLIN_ENV_EVERY_CARD = (("0.10.1", "0.10.1.1"), ((0, 19), (0, 24)))  # releases, [from, before)
MXFP4_MARLIN_ENV_HOPPER = ((0, 11, 1), (0, 19))  # [from, before)


# B200 (compute capability 10.0): FlashInfer's MXFP4 MoE with bf16 activations, in the padding-tuple form above
# (intermediate alignment, hidden alignment, bytes per expert-bias element, extra scale copies). flashinfer-python is a
# Requires-Dist of every wheel from 0.12.0 (0.11.x lists it under the "flashinfer" extra only). 0.12-0.18:
# get_mxfp4_backend returns SM100_FI_MXFP4_BF16 on cc 10.0 with FlashInfer (0.12.0 quantization/mxfp4.py:134-140),
# whose create_weights pads the intermediate size per rank and the hidden size to 256 (0.12.0 :306-312, 0.18.1
# :347-353; 0.11.0 :206-214); 0.19-0.26: FLASHINFER_TRTLLM_MXFP4_BF16 heads the priority list (0.19.0
# fused_moe/oracle/mxfp4.py:174-183) and supports the SM100 family with FlashInfer
# (experts/trtllm_mxfp4_moe.py _supports_current_device), padding both to 256 (0.19.0 oracle/mxfp4.py:386-388);
# from 0.27.1 the TRTLLM intermediate alignment is 128, the hidden 256 (0.34.0 oracle/mxfp4.py:856-858). Every one
# of these paths widens the expert biases to float32 and replaces the weights and block scales by their shuffled,
# interleaved copies (0.11.0 quantization/mxfp4.py:351-352, 0.34.0 oracle/mxfp4.py:998-1100; the interleave pads
# scale rows to 128 and columns to 4, which the padded sizes already are for gpt-oss at TP 1-8).
FLASHINFER_SM100_MXFP4_PADDING = (256, 256, 4, 0)  # 0.12-0.26 (and 0.11 with the flashinfer extra)
TRTLLM_SM100_MXFP4_PADDING = (128, 256, 4, 0)  # 0.27+
TRTLLM_ALIGN_128_FROM = (0, 27)


def _env_marlin(compute_capability: tuple[int, int], release: str) -> bool:
    """Whether ``VLLM_MXFP4_USE_MARLIN=1`` moves this card's MXFP4 experts to Marlin in ``release``."""
    key = version_key(release)
    every, (lo, hi) = MXFP4_MARLIN_ENV_EVERY_CARD
    if release in every or (key and lo <= key < hi):
        return True
    return bool(key) and MXFP4_MARLIN_ENV_HOPPER[0] <= key < MXFP4_MARLIN_ENV_HOPPER[1] and compute_capability == (9, 0)


def mxfp4_padding_for(compute_capability: tuple[int, int] | None, platform: str = "cuda",
                      release: str = "", *, use_marlin: bool = False,
                      triton_kernels: bool | None = None) -> tuple[int, ...] | None:
    """The install-aware choice: ``use_marlin`` (``VLLM_MXFP4_USE_MARLIN=1``) gives Marlin's padding where the
    release reads it on this card (``_env_marlin``); ``triton_kernels`` stated for 0.11 on Hopper picks Triton
    (True) or Marlin (False); otherwise ``_default_padding`` (the release's choice on a pip install)."""
    if platform == "cuda" and compute_capability is not None and use_marlin and _env_marlin(compute_capability,
                                                                                           release):
        return MARLIN_MXFP4_PADDING
    if triton_kernels is not None and platform == "cuda" and compute_capability == (9, 0) and \
            release in HOPPER_MARLIN_MXFP4_RELEASES:
        return _triton_padding(release) if triton_kernels else MARLIN_MXFP4_PADDING
    return _default_padding(compute_capability, platform, release)


def _default_padding(compute_capability: tuple[int, int] | None, platform: str = "cuda",
                     release: str = "") -> tuple[int, ...] | None:
    """The MXFP4 expert padding of the MoE backend vLLM picks by default on a card: Marlin below compute
    capability 9.0 on CUDA; in the 0.10.1 releases (``MARLIN_MXFP4_EXCEPT_SM100_RELEASES``) Marlin on every
    CUDA card but cc 10.0; on Hopper Marlin in 0.11 (``HOPPER_MARLIN_MXFP4_RELEASES``: no triton_kernels in a
    pip install), Triton's from 0.12 (vendored triton_kernels); on a B200 (cc 10.0) FlashInfer's SM100 backends
    from 0.12 (``FLASHINFER_SM100_MXFP4_PADDING``, ``TRTLLM_SM100_MXFP4_PADDING``), Marlin in 0.11; None elsewhere
    (consumer Blackwell, cc 12.0, is not modelled)."""
    if platform != "cuda" or compute_capability is None:
        return None
    if release in MARLIN_MXFP4_EXCEPT_SM100_RELEASES:
        return None if compute_capability == (10, 0) else MARLIN_MXFP4_PADDING
    if compute_capability < (9, 0) or (compute_capability == (9, 0) and release in HOPPER_MARLIN_MXFP4_RELEASES):
        return MARLIN_MXFP4_PADDING
    if compute_capability == (9, 0):
        return _triton_padding(release)
    if compute_capability == (10, 0) and release:
        if release in HOPPER_MARLIN_MXFP4_RELEASES:  # 0.11: no flashinfer nor triton_kernels in a pip install
            return MARLIN_MXFP4_PADDING
        return TRTLLM_SM100_MXFP4_PADDING if version_key(release) >= TRTLLM_ALIGN_128_FROM else \
            FLASHINFER_SM100_MXFP4_PADDING
    return None


def _triton_padding(release: str) -> tuple[int, ...]:
    key = version_key(release)
    if release in TRITON_STRIDED_RELEASES:
        return TRITON_MXFP4_PADDING_STRIDED
    if key and TRITON_VALUES_PADDED[0] <= key[:2] < TRITON_VALUES_PADDED[1]:
        return TRITON_MXFP4_PADDING_VALUES_PADDED
    if key and key < TRITON_KEEPS_SCALES_BEFORE:
        return TRITON_MXFP4_PADDING_KEPT_SCALES
    return TRITON_MXFP4_PADDING if not key or key >= TRITON_SCALE_COLUMNS_TO_4_FROM else \
        TRITON_MXFP4_PADDING_SCALES_DELETED


def mxfp4_other_padding_for(compute_capability: tuple[int, int] | None, platform: str = "cuda",
                            release: str = "", *, use_marlin: bool = False,
                            triton_kernels: bool | None = None) -> tuple[int, ...] | None:
    """The padding of the backend vLLM picks instead when an installed package the user did not state is
    present: Triton's on Hopper in 0.11 when triton_kernels is installed (``HOPPER_MARLIN_MXFP4_RELEASES``);
    None where the choice does not depend on one, or the user stated it (``triton_kernels``, ``use_marlin``:
    ``mxfp4_padding_for``)."""
    if platform == "cuda" and compute_capability is not None and use_marlin and _env_marlin(compute_capability,
                                                                                           release):
        return None  # VLLM_MXFP4_USE_MARLIN=1 decided it
    if triton_kernels is not None and compute_capability == (9, 0):
        return None  # the user stated the package
    if platform == "cuda" and compute_capability == (9, 0) and release in HOPPER_MARLIN_MXFP4_RELEASES:
        return _triton_padding(release)
    if platform == "cuda" and compute_capability == (10, 0) and release in HOPPER_MARLIN_MXFP4_RELEASES:
        return FLASHINFER_SM100_MXFP4_PADDING  # 0.11 with the flashinfer extra: SM100_FI_MXFP4_BF16
    return None


def _round_up(n: int, m: int) -> int:
    return cdiv(n, m) * m


def padded_expert_shape(w: Weight, shape: tuple[int, ...], padding: tuple[int, int]) -> tuple[int, ...]:
    """An MXFP4 expert tensor (gpt-oss names) as the Marlin backend allocates it on one rank."""
    ia, ha = padding[:2]
    leaf = w.name.rsplit(".", 1)[-1]
    if leaf == "gate_up_proj":  # [E, 2I, H]
        return shape[0], 2 * _round_up(shape[1] // 2, ia), _round_up(shape[2], ha)
    if leaf == "gate_up_proj_bias":  # [E, 2I]
        return shape[0], 2 * _round_up(shape[1] // 2, ia)
    if leaf == "down_proj":  # [E, H, I]
        return shape[0], _round_up(shape[1], ha), _round_up(shape[2], ia)
    if leaf == "down_proj_bias":  # [E, H]
        return shape[0], _round_up(shape[1], ha)
    return shape


def _triton_after_loading_bytes(w: Weight, shape: tuple[int, ...], converted: bool, padding: tuple[int, ...]) -> int:
    """What the Triton MXFP4 path holds beyond the tensor as allocated (``TRITON_MXFP4_PADDING``): the
    expert biases widened to float32, the checkpoint's block scales kept beside their swizzled copy."""
    _, _, bias_bytes, scale_copies, *aligns = (*padding, 1, 1, 1)[:7]  # FlashInfer's tuples: 4 fields
    if not converted:
        return math.prod(shape) * (bias_bytes - (dtype_size_bytes(w.dtype) if w.dtype else 2)) \
            if w.name.endswith("_bias") else 0
    e, rows, k = shape
    return e * triton_mxfp4_swizzle_extra(rows, k, *aligns) + scale_copies * math.prod(shape[:-1]) * cdiv(shape[-1], 32)


@dataclass(frozen=True)
class StageWeights:
    stage: int  # pipeline stage (0-based)
    num_params: int  # parameters held by one TP rank of this stage
    weight_bytes: int
    bytes_by_kind: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class WeightMemory:
    num_params: int  # whole model (target + drafter/MTP as loaded), unsharded
    num_params_by_kind: dict[str, int]
    quantization: str
    dtype: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    stages: tuple[StageWeights, ...]
    notes: tuple[str, ...] = ()
    basis: str = "kvplan's formula estimate"  # or "from checkpoint metadata" (with_checkpoint)
    basis_detail: str = ""

    @property
    def total_bytes(self) -> int:
        """Bytes summed over every rank (tp · Σ stages): replicated weights count per rank."""
        return sum(s.weight_bytes for s in self.stages) * self.tensor_parallel_size


def _stage_of(w: Weight, bounds: tuple[tuple[int, int], ...], tied: bool) -> list[int]:
    pp = len(bounds)
    if w.stage == "first":
        stages = [0]
        if tied and pp > 1 and w.kind == "embedding" and w.name.endswith("embed_tokens.weight"):
            stages.append(pp - 1)  # the last stage's lm_head is a copy of the tied embedding
        return stages
    if w.stage == "every":
        return list(range(pp))
    if w.stage == "last" or w.layer is None:
        return [pp - 1]
    for s, (a, z) in enumerate(bounds):
        if a <= w.layer < z:
            return [s]
    return [pp - 1]


@dataclass(frozen=True)
class Placement:
    """One tensor as one rank holds it: ``inventory`` 0 is the target, ``shape`` and ``nbytes`` the rank's
    (sharded, padded, quantized), ``stages`` the pipeline stages that hold it."""
    inventory: int
    weight: Weight
    shape: tuple[int, ...]
    nbytes: int
    stages: tuple[int, ...]


def placements(inventories: list[Inventory], dtype: str, *, tp: int = 1, pp: int = 1,
               quant: Quantization = NO_QUANTIZATION, drafter_quant: Quantization = NO_QUANTIZATION,
               drafter_dtype: str | None = None, partition: tuple[int, ...] | None = None,
               data_parallel_size: int = 1, expert_parallel: bool = False,
               mxfp4_padding: tuple[int, int] | None = None,
               bounds: tuple[tuple[int, int], ...] | None = None,
               loaded_on: tuple[tuple[int, int], str] | None = None, num_redundant_experts: int = 0) -> list[Placement]:
    """Every tensor of ``inventories`` as one rank holds it (``weight_memory``'s arguments); ``bounds``: each
    pipeline stage's decoder layers as the model stage placed them (``ModelLayout.pp_bounds``), else
    ``get_pp_indices`` over the target's layers; ``loaded_on``: ``(compute capability, release)`` of the card and
    release that load them, whose kernels keep a quantized linear's bytes (``quant_kernels.kept_delta``; Marlin's
    per-layer workspace of 4 B per SM is left out: the card's SM count is not known here)."""
    target = inventories[0]
    if not bounds:
        bounds = tuple(get_pp_indices(target.num_hidden_layers, r, pp, partition) for r in range(pp))
    dbytes = dtype_size_bytes(dtype)
    out = []
    for idx, inv in enumerate(inventories):
        q = quant if idx == 0 else drafter_quant
        db = dbytes if idx == 0 or drafter_dtype is None else dtype_size_bytes(drafter_dtype)
        for w in inv.weights:
            # MoE experts are split over tp x dp ranks (vLLM flattens TP across DP for FusedMoE)
            # EPLB's redundant experts on the target's MoE layers (kvplan gives a drafter's MoE layers none: assumed)
            shape = (w.moe_rank_shape(tp * data_parallel_size, expert_parallel, num_redundant_experts if idx == 0 else 0)
                     if w.expert else w.rank_shape(tp))
            if mxfp4_padding and w.expert and (q.expert_method or q.method) == "mxfp4":
                shape = padded_expert_shape(w, shape, mxfp4_padding)
            nbytes = weight_bytes(w, shape, q, db)
            if loaded_on and not w.expert and len(shape) == 2 and q.converts(w):
                nbytes += kept_delta(shape[0], shape[1], q.resolve(w), loaded_on[0], loaded_on[1], dtype_bytes=db)
            elif loaded_on and w.expert and len(shape) == 3 and w.linear and q.converts(w):
                nbytes = _kept_experts(w, shape, q.resolve(w), loaded_on, db, nbytes)
            if mxfp4_padding and len(mxfp4_padding) > 2 and w.expert and (q.expert_method or q.method) == "mxfp4":
                nbytes += _triton_after_loading_bytes(w, shape, q.converts(w), mxfp4_padding)
            out.append(Placement(idx, w, shape, nbytes,
                                 tuple(_stage_of(w, bounds, inv.tie_word_embeddings and idx == 0))))
    return out


def target_quantization(config: dict, quantization: str | None) -> Quantization | None:
    """The target's quantization scheme (``--quantization`` over the checkpoint's), None where it cannot be read
    (the weights term reports that error itself)."""
    from kvplan.errors import KvplanError

    try:
        return quantization_override(config, quantization) if quantization else quantization_of(config)
    except KvplanError:
        return None


def fp8_experts(quant: Quantization | None) -> bool:
    """Whether ``quant`` quantizes the routed experts to FP8 (block, channel, tensor or online; not a per-module
    scheme)."""
    return quant is not None and moe_kind(quant).startswith("fp8") and not quant.per_module


def fp8_experts_kernel(quant: Quantization | None, capability: tuple[int, int], release: str, hidden: int,
                       inter: int, *, expert_parallel: bool = False) -> tuple[str, str]:
    """(backend, why) the release's FP8 MoE oracle picks for FP8 experts on a CUDA card
    (``quant_kernels.fp8_moe_held_backend``; ``FP8_HELD_TRITON`` for TritonExperts); ("", "") for experts that are
    not FP8 (or a per-module scheme)."""
    if quant is None or not fp8_experts(quant):
        return "", ""
    return fp8_moe_held_backend(quant, capability, release, hidden, inter, expert_parallel=expert_parallel)


def _expert_dims(w: Weight, shape: tuple[int, ...]) -> tuple[bool, int, int]:
    """(w13?, hidden, intermediate per rank) of a stacked expert tensor: w13 ``[E, 2I (I ungated), H]`` is split on
    its rows (``shard_dim`` 1), w2 ``[E, H, I]`` on its columns."""
    if w.shard_dim == 1:
        gated = "gate_up" in w.name or "w13" in w.name
        return True, shape[2], shape[1] // 2 if gated else shape[1]
    return False, shape[1], shape[2]


def _moe_backend_of(p: Placement, q: Quantization, loaded_on: tuple[tuple[int, int], str]) -> str:
    kind = moe_kind(q)
    if not kind or kind == "mxfp4":
        return ""
    _, hidden, inter = _expert_dims(p.weight, p.shape)
    return moe_backend(q, loaded_on[0], loaded_on[1], hidden, inter)


def _kept_experts(w: Weight, shape: tuple[int, ...], q: Quantization, loaded_on: tuple[tuple[int, int], str],
                  dtype_bytes: int, stored: int) -> int:
    """A quantized expert tensor as ``loaded_on``'s release keeps it with the MoE backend it picks on that card
    (``quant_kernels.kept_expert_bytes``; the layer's own buffers with its w2, Marlin's workspace left out: the SM
    count is not known here); ``stored`` where kvplan has no MoE rule for the scheme (MXFP4 is padded by
    ``mxfp4_padding_for``) or the release refuses the shape."""
    kind = moe_kind(q)
    if not kind or kind == "mxfp4":
        return stored
    w13, hidden, inter = _expert_dims(w, shape)
    backend = moe_backend(q, loaded_on[0], loaded_on[1], hidden, inter)
    if backend in ("", "REFUSED", "NOT_RUN"):
        return stored
    out = kept_expert_bytes(shape[0], shape[1], shape[2], q, backend, loaded_on[1], w13=w13, dtype_bytes=dtype_bytes)
    return out if w13 else out + moe_layer_bytes(q, backend, loaded_on[1])


def weight_memory(inventories: list[Inventory], dtype: str, *, tp: int = 1, pp: int = 1,
                  quant: Quantization = NO_QUANTIZATION, drafter_quant: Quantization = NO_QUANTIZATION,
                  drafter_dtype: str | None = None, partition: tuple[int, ...] | None = None,
                  data_parallel_size: int = 1, expert_parallel: bool = False,
                  mxfp4_padding: tuple[int, int] | None = None) -> WeightMemory:
    """Bytes one GPU holds, stage by stage. ``inventories[0]`` is the target (its layers set
    the PP split); further inventories (drafter) go to the last stage with ``drafter_quant``.
    ``mxfp4_padding``: the card's MXFP4 MoE backend padding (``mxfp4_padding_for``)."""
    return memory_of(placements(inventories, dtype, tp=tp, pp=pp, quant=quant, drafter_quant=drafter_quant,
                                drafter_dtype=drafter_dtype, partition=partition,
                                data_parallel_size=data_parallel_size, expert_parallel=expert_parallel,
                                mxfp4_padding=mxfp4_padding),
                     inventories, dtype, tp=tp, pp=pp, quant=quant, drafter_quant=drafter_quant)


def memory_of(placed: list[Placement], inventories: list[Inventory], dtype: str, *, tp: int, pp: int,
              quant: Quantization, drafter_quant: Quantization) -> WeightMemory:
    """``weight_memory`` of the placements ``placed``."""
    params = [0] * pp
    bytes_ = [0] * pp
    kinds: list[dict[str, int]] = [{} for _ in range(pp)]
    by_kind: dict[str, int] = {}
    for p in placed:
        w = p.weight
        by_kind[w.kind] = by_kind.get(w.kind, 0) + w.numel
        for s in p.stages:
            params[s] += math.prod(p.shape)
            bytes_[s] += p.nbytes
            kinds[s][w.kind] = kinds[s].get(w.kind, 0) + p.nbytes
    stages = tuple(
        StageWeights(s, params[s], bytes_[s], {k: kinds[s][k] for k in KINDS if k in kinds[s]}) for s in range(pp)
    )
    notes = tuple(n for inv in inventories for n in inv.notes)
    qdesc = quant.description if len(inventories) == 1 or drafter_quant == quant else \
        f"{quant.description}; drafter {drafter_quant.description}"
    return WeightMemory(
        num_params=sum(inv.num_params() for inv in inventories),
        num_params_by_kind={k: by_kind[k] for k in KINDS if k in by_kind},
        quantization=qdesc,
        dtype=dtype,
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        stages=stages,
        notes=notes,
    )


CHECKPOINT_METADATA = "from checkpoint metadata"
# the notes of a weight count that the budget repeats as warnings: a tower not counted, headers not read
WARNING_NOTES = ("text decoder only", DOWNLOAD_FAILED)


TOWER_NOT_COUNTED = "text decoder only: the vision tower of this multimodal checkpoint is not counted"


def with_tower(mem: WeightMemory, tower_bytes: int | None, *, skipped: bool, why: str) -> WeightMemory:
    """The vision tower's weights as the release loads them (``kvplan.budget.encoder``: ``tower_bytes`` on one rank,
    whole on every stage). Loaded and not yet counted (the family has no tower rule and no checkpoint metadata):
    added, as kind ``vision``. Skipped (every modality it serves limited to 0): taken out where counted (the
    family's rule, kind ``vision``; the checkpoint's total_size, which holds it whole on every rank)."""
    counted_as = "vision" if any(st.bytes_by_kind.get("vision") for st in mem.stages) else \
        "other" if mem.basis == CHECKPOINT_METADATA else None
    if skipped:
        if counted_as is None:
            return replace(mem, notes=tuple(n for n in mem.notes if n != TOWER_NOT_COUNTED)
                           + (why + "; kvplan did not count it either",))
        stages = tuple(replace(st, weight_bytes=st.weight_bytes - (cut := min(st.bytes_by_kind.get(counted_as, 0),
                                                                               tower_bytes or st.bytes_by_kind.get(counted_as, 0))),
                               bytes_by_kind={**st.bytes_by_kind, counted_as: st.bytes_by_kind[counted_as] - cut})
                       for st in mem.stages)
        return replace(mem, stages=stages, notes=mem.notes + (why,))
    if counted_as is not None or tower_bytes is None:
        return mem
    stages = tuple(replace(st, weight_bytes=st.weight_bytes + tower_bytes,
                           bytes_by_kind={**st.bytes_by_kind, "vision": tower_bytes}) for st in mem.stages)
    return replace(mem, stages=stages, notes=tuple(n for n in mem.notes if n != TOWER_NOT_COUNTED) + (why,))


def with_rotary(mem: WeightMemory, cache: RotaryCache) -> WeightMemory:
    """``mem`` with the rotary tables ``cache`` on every stage (each stage's layers build them: ``get_rope`` keeps one
    per distinct setting per process), as ``bytes_by_kind["rotary"]``."""
    if not cache.bytes and not cache.not_derived:
        return mem
    stages = tuple(replace(st, weight_bytes=st.weight_bytes + cache.bytes,
                           bytes_by_kind={**st.bytes_by_kind, "rotary": cache.bytes}) for st in mem.stages) \
        if cache.bytes else mem.stages
    return replace(mem, stages=stages, notes=mem.notes + ((cache.not_derived,) if cache.not_derived else ()))


def stored_bytes(stored: Inventory, dtype: str, quant: Quantization) -> int:
    """What kvplan's inventory says the checkpoint stores: every tensor the checkpoint can hold (MTP layers
    included, which vLLM skips when MTP is off), whole, at the config's dtype or as the quantization stores
    it (before any backend repacking): the figure the index's ``metadata.total_size`` gives. ``stored``: the
    inventory of what the checkpoint stores (``ModelInventory.stored``)."""
    db = dtype_size_bytes(dtype)
    return sum(weight_bytes(w, w.shape, quant, db) for w in stored.weights)


def with_checkpoint(mem: WeightMemory, meta: dict, where: str, stored: int) -> WeightMemory:
    """``mem`` reconciled with the checkpoint's own ``total_size_bytes``. The tensors kvplan models keep its
    per-rank split (vLLM's sharding, padding and repacking); what the checkpoint holds beyond them
    (``total_size − stored``: a vision or audio tower kvplan does not model, buffers) is added whole to every
    rank of every stage — kvplan's assumption, said in the note. A checkpoint smaller than kvplan's count
    leaves the formula in place, with a note (a checkpoint stored in a narrower dtype than the config's,
    or a config kvplan misreads)."""
    total = int(meta["total_size_bytes"])
    residual = total - stored
    if residual < 0:
        return replace(mem, basis_detail=f"the checkpoint's total_size ({total:,} B, {where}) is {-residual:,} B "
                                         "below kvplan's count of it: the formula is kept",
                       notes=mem.notes + (f"checkpoint metadata: total_size {total:,} B is {-residual:,} B below "
                                          f"kvplan's count of the stored tensors ({stored:,} B); formula kept",))
    stages = tuple(replace(st, weight_bytes=st.weight_bytes + residual,
                           bytes_by_kind={**st.bytes_by_kind, "other": st.bytes_by_kind.get("other", 0) + residual})
                   if residual else st for st in mem.stages)
    detail = (f"total_size {total:,} B ({where}); kvplan's per-rank split of the {stored:,} B it models"
              + (f", the other {residual:,} B whole on every rank (kvplan's assumption)" if residual else ""))
    return replace(mem, stages=stages, basis=CHECKPOINT_METADATA, basis_detail=detail,
                   notes=mem.notes + (f"checkpoint metadata: {detail}",))


# Checkpoint tensors vLLM drops before loading (AutoWeightsLoader.REMOVE_UNUSED_ROTARY_EMBEDS_MAPPER, vLLM 0.34.0
# model_executor/models/utils.py lines 247-254: rotary tables early ColossalAI / GPTQModel checkpoints carry).
DROPPED_TENSORS = ("rotary_pos_emb.inv_freq", "rotary_emb.inv_freq", "rotary_emb.cos_cached", "rotary_emb.sin_cached")
# safetensors dtypes vLLM casts to the model dtype when it loads an unquantized module (parameters are created
# in params_dtype and the checkpoint's tensor is copied in): only their element count matters
FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")
_EXPERT_GROUP = re.compile(r"\.experts\.(\d+|\*)\.")


def tensor_group(name: str) -> str:
    """The module a tensor belongs to when a checkpoint's tensors are matched to kvplan's inventory: the name
    without its last component (``weight``, ``bias``, ``weight_scale_inv``, ``qweight``, ``*_blocks``), a MoE
    layer's experts one module (``model.layers.3.mlp.experts.17.up_proj.weight`` and the inventory's fused
    ``model.layers.3.mlp.experts.gate_up_proj`` are both ``model.layers.3.mlp.experts``)."""
    m = _EXPERT_GROUP.search(name)
    if m:
        return name[: m.start()] + ".experts"
    return name.rsplit(".", 1)[0] if "." in name else name


def split_by_checkpoint(mem: WeightMemory, meta: dict, where: str, placed: list[Placement], full: Inventory,
                        dtype: str, quant: Quantization) -> tuple[WeightMemory | None, str]:
    """``mem`` with the target's weights taken from the checkpoint's own tensors (``meta['bytes_by_tensor']``),
    each module held per rank as vLLM shards it. A module's bytes as vLLM loads them are the checkpoint's
    (float tensors of an unquantized module at the model dtype: vLLM copies them into ``params_dtype``
    parameters; quantized modules as stored); where they differ from kvplan's count of the module, the
    difference goes to each rank in the module's own share (``placed``: column/row-parallel 1/tp, K/V heads
    replicated past tp, vocab rows padded to 64 then 1/tp, replicated norms and routers whole, experts by
    tp or ep, each stage its layers), on top of kvplan's per-rank bytes of the module (MXFP4 padding
    included). Modules kvplan does not model (a vision tower without a rule) are whole on every rank (kvplan's
    assumption); modules of ``full`` the rank does not load (MTP layers with MTP off) are skipped, as vLLM
    skips them. Returns ``(None, why)`` when a module of kvplan's inventory is absent from the checkpoint (the
    names do not match: a renamed or re-packed checkpoint) — the caller keeps ``total_size``."""
    db = dtype_size_bytes(dtype)
    stored: dict[str, int] = {}
    converted: set[str] = set()
    for w in full.weights:
        g = tensor_group(w.name)
        conv = quant.converts(w)
        stored[g] = stored.get(g, 0) + weight_bytes(w, w.shape, quant, db)
        if conv:
            converted.add(g)
    loaded: dict[str, int] = {}
    for name, by_dtype in meta["bytes_by_tensor"].items():
        if any(name.endswith(t) for t in DROPPED_TENSORS):
            continue
        g = tensor_group(name)
        loaded[g] = loaded.get(g, 0) + sum(
            b * 8 // DTYPE_BITS[d] * db if d in FLOAT_DTYPES and g not in converted else b for d, b in by_dtype.items())
    missing = [g for g in stored if g not in loaded]
    if missing:
        return None, (f"the checkpoint has no tensor of kvplan's module {missing[0]}"
                      + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                      + ": its names do not match kvplan's inventory, so the per-rank split uses total_size")
    pp = len(mem.stages)
    whole: dict[str, int] = {}
    share: dict[str, list[int]] = {}
    kind: dict[str, str] = {}
    for p in placed:
        if p.inventory:
            continue
        g = tensor_group(p.weight.name)
        whole[g] = whole.get(g, 0) + p.weight.numel
        kind.setdefault(g, p.weight.kind)
        per = share.setdefault(g, [0] * pp)
        for st in p.stages:
            per[st] += math.prod(p.shape)
    delta: list[dict[str, int]] = [{} for _ in range(pp)]
    changed = 0
    for g, per in share.items():
        d = loaded[g] - stored[g]
        changed += d
        for st in range(pp):
            if d and per[st]:
                delta[st][kind[g]] = delta[st].get(kind[g], 0) + d * per[st] // whole[g]
    extra = {g: b for g, b in loaded.items() if g not in stored}
    extra_bytes = sum(extra.values())
    stages = []
    for st, sw in zip(range(pp), mem.stages):
        add = {**delta[st], **({"other": delta[st].get("other", 0) + extra_bytes} if extra_bytes else {})}
        by_kind = {k: sw.bytes_by_kind.get(k, 0) + add.get(k, 0) for k in KINDS if k in sw.bytes_by_kind or k in add}
        stages.append(replace(sw, weight_bytes=sw.weight_bytes + sum(add.values()), bytes_by_kind=by_kind))
    detail = (f"total_size {int(meta['total_size_bytes']):,} B ({where}); the checkpoint's tensors, each module "
              "split per rank as vLLM shards it"
              + (f"; they differ from kvplan's count of its modules by {changed:+,} B, split as those modules"
                 if changed else "")
              + (f"; the {extra_bytes:,} B of {len(extra)} module(s) kvplan does not model ({sorted(extra)[0]} first) "
                 "whole on every rank (kvplan's assumption)" if extra else ""))
    return replace(mem, stages=tuple(stages), basis=CHECKPOINT_METADATA, basis_detail=detail,
                   notes=mem.notes + (f"checkpoint metadata: {detail}",)), ""


def with_metadata(mem: WeightMemory, meta: dict, where: str, placed: list[Placement], stored: Inventory, dtype: str,
                  quant: Quantization) -> WeightMemory:
    """``mem`` from the checkpoint's metadata: the per-tensor split (``split_by_checkpoint``) where the headers
    were read, else (an index alone, a stored form without ``bytes_by_tensor``, names that do not match)
    ``total_size`` over kvplan's per-rank split (``with_checkpoint``)."""
    why = ""
    if "bytes_by_tensor" in meta:
        split, why = split_by_checkpoint(mem, meta, where, placed, stored, dtype, quant)
        if split is not None:
            return split
    mem = with_checkpoint(mem, meta, where, stored_bytes(stored, dtype, quant))
    return replace(mem, notes=mem.notes + (f"checkpoint metadata: {why}",)) if why else mem


def _top_k(cfg: dict) -> int:
    for key in ("num_experts_per_tok", "top_k_experts", "moe_topk", "num_experts_per_token"):
        v = cfg.get(key)
        if isinstance(v, int) and v > 0:
            return v
    return 1


def widest_intermediate(inventory: Inventory, cfg: dict, tp: int, layers: set[int] | None) -> int:
    """The widest per-token intermediate of any layer of ``inventory`` (``layers``: those decoder layers only) on one
    TP rank, from the per-rank shapes of its weights: ``W`` of the activation rule (``kvplan.budget.estimate``)."""
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


def layout_weights(layout) -> ModelInventory:
    """The weights of ``layout``: what the model stage counted (``ModelLayout.inventory``), else (a layout built
    without a budget in view, as the library's ``build_model_layout`` does) the model layer's count of it."""
    return layout.inventory if layout.inventory is not None else layout_inventory(layout)


def layout_weight_memory(layout, *, tp: int | None = None, exact_params: bool = False, data_parallel_size: int = 1,
                         expert_parallel: bool = False, quantization: str | None = None,
                         mxfp4_padding: tuple[int, int] | None = None,
                         inventory: ModelInventory | None = None,
                         loaded_on: tuple[tuple[int, int], str] | None = None,
                         num_redundant_experts: int = 0, release: str | None = None) -> WeightMemory:
    """Weights of a ``kvplan.model.ModelLayout`` (target, its MTP layers when MTP is on,
    the drafter) per GPU; ``inventory``: its weights (``kvplan.model.inventory.ModelInventory``), else the
    layout's own (the model stage's, ``ModelLayout.inventory``), else counted here. ``tp`` defaults to the layout's own tensor-parallel size; MoE experts
    are split over ``tp × data_parallel_size`` ranks (whole experts with ``expert_parallel``);
    ``quantization`` is vLLM's ``--quantization`` (``quantization_override``). Every stage also holds the text
    decoder's rotary cos/sin tables (``kvplan.budget.rotary``: buffers, not in the checkpoint) as ``release`` (None:
    the rule of releases before 0.32) builds them."""
    tp = tp or layout.tensor_parallel_size
    pp = max(1, len(layout.ranks))
    target = layout.target
    weights = inventory or layout_weights(layout)
    inv = weights.target
    invs = [inv]
    dq = NO_QUANTIZATION
    ddtype = None
    if layout.drafter is not None:
        assert weights.drafter is not None, "a layout with a drafter has the drafter's inventory"
        invs.append(weights.drafter)
        dq = quantization_of(layout.drafter.config)
        ddtype = layout.drafter.dtype
    quant = quantization_override(target.config, quantization) if quantization else quantization_of(target.config)
    placed = placements(invs, target.dtype, tp=tp, pp=pp, quant=quant,
                        partition=getattr(layout, "pp_partition", None), drafter_quant=dq, drafter_dtype=ddtype,
                        data_parallel_size=data_parallel_size, expert_parallel=expert_parallel,
                        mxfp4_padding=mxfp4_padding, bounds=layout.pp_bounds, loaded_on=loaded_on,
                        num_redundant_experts=num_redundant_experts)
    mem = memory_of(placed, invs, target.dtype, tp=tp, pp=pp, quant=quant, drafter_quant=dq)
    if loaded_on:
        kernels = sorted({linear_kernel(quant.resolve(p.weight), loaded_on[0], loaded_on[1], *p.shape)
                          for p in placed if p.inventory == 0 and not p.weight.expert and len(p.shape) == 2
                          and quant.converts(p.weight)} - {""})
        if kernels:
            cc = loaded_on[0]
            mem = replace(mem, notes=mem.notes + (
                f"quantized linears as vLLM {loaded_on[1]} keeps them on SM {cc[0]}.{cc[1]}: {', '.join(kernels)} "
                "(kvplan.budget.quant_kernels; Marlin's per-layer workspace not counted)",))
        moe = sorted({_moe_backend_of(p, quant.resolve(p.weight), loaded_on) for p in placed
                      if p.inventory == 0 and p.weight.expert and p.weight.linear and len(p.shape) == 3
                      and quant.converts(p.weight)} - {""})
        if moe:
            cc = loaded_on[0]
            said = {"NOT_RUN": "NOT_RUN (a FlashInfer backend whose loading was not run on the CPU: the stored form "
                               "counted)", "REFUSED": "REFUSED (the release refuses this layer: the stored form "
                                                      "counted)"}
            mem = replace(mem, notes=mem.notes + (
                f"quantized MoE experts as vLLM {loaded_on[1]} keeps them on SM {cc[0]}.{cc[1]}: "
                + ", ".join(said.get(b, b) for b in moe) + " (kvplan.budget.quant_kernels.kept_expert_bytes)",))
    if mxfp4_padding and quant.method == "mxfp4":
        if len(mxfp4_padding) > 2:
            kept = " and the checkpoint's block scales kept beside their swizzled copy" if mxfp4_padding[3] else ""
            which = "Triton" if mxfp4_padding[1] == 1 else "FlashInfer SM100"
            hidden = f", hidden size to {mxfp4_padding[1]}" if mxfp4_padding[1] > 1 else ""
            note = (f"mxfp4 experts as vLLM's {which} MoE backend holds them on this card: intermediate size per rank "
                    f"rounded up to {mxfp4_padding[0]}{hidden}, expert biases in float32{kept} (kvplan.budget.weights."
                    "mxfp4_padding_for)")
        else:
            note = (f"mxfp4 experts as vLLM's Marlin MoE backend allocates them on this card: intermediate size per "
                    f"rank rounded up to {mxfp4_padding[0]}, hidden size to {mxfp4_padding[1]} "
                    "(vLLM fused_moe/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_size)")
        mem = replace(mem, notes=mem.notes + (note,))
    source = getattr(target, "source", None)
    meta, where = checkpoint_metadata(source) if source is not None else (None, "")
    if meta is not None:
        mem = with_metadata(mem, meta, where, placed, weights.stored, target.dtype, quant)
    elif where:
        mem = replace(mem, basis_detail=f"no checkpoint metadata: {where}",
                      notes=mem.notes + ((where,) if where.startswith(DOWNLOAD_FAILED) else ()))
    # the rotary tables get_rope builds, in the model dtype (gpt-oss's in float32: rotary.table_dtype_bytes)
    mem = with_rotary(mem, rotary_cache(layout.target.text_config,
                                        table_dtype_bytes(target.config, dtype_size_bytes(target.dtype)),
                                        version_key(release or "")))
    if exact_params:
        counts = meta_param_counts(target.config, path=source.path if source is not None else "<config>")
        analytic_text = inv.num_params(include_buffers=False, kinds=tuple(k for k in KINDS if k not in ("mtp", "vision")))
        note = (f"meta-device count (transformers): {counts['text']:,} text parameters"
                + (f" + {counts['vision']:,} vision" if counts["vision"] else "")
                + ("; agrees with the analytic count" if counts["text"] == analytic_text
                   else f"; the analytic count is {analytic_text:,}"))
        mem = replace(mem, notes=mem.notes + (note,))
    return mem
