"""The KV-cache budget vLLM derives from a card's memory (reference §4.6), estimated.

vLLM (``gpu_worker.determine_available_memory``), per worker::

    kv_cache_memory = total · gpu_memory_utilization
                      − weights − peak activation − non-torch memory [− CUDA-graph estimate]

``total`` is ``torch.cuda.mem_get_info()[1]``: what CUDA reports as the device's memory,
a little under the card's nominal size (the driver keeps some). The presets
(``kvplan.budget.hardware``) give that figure where a public printout of it was found
(``basis="cuda"``), else the ``nvidia-smi`` total (``basis="nvidia-smi"``, which on the
H100 SXM is 0.46 GiB above what CUDA reports).
``--gpu-memory`` (GiB) covers any other card, or a measured figure.

Weights come from ``kvplan.budget.weights`` (exact for the config). The three other terms are
estimates, labelled as such in every output, each with an override:

* **peak activation** (``--activation-memory``): vLLM profiles one forward pass of
  ``max_num_batched_tokens`` dummy tokens, then a sampler pass over ``max_num_seqs``
  dummy requests. kvplan's rule::

      forward = T · (4·H + W) · a        sampler = S(R, V) + T · H · a [+ M]   (last PP stage)
      activation = max(f · forward, sampler) + 256 MiB

  ``S(R, V)`` is the dummy sampler pass's peak, derived per release from the release's own
  ``_dummy_sampler_run`` run on the CPU under a memory-tracking dispatch mode, with the workspace torch's CUDA sort
  allocates added where the pass sorts (``kvplan.budget.profile``: 38 B per logit in 0.11-0.15 from 128 requests,
  whose top-k/top-p sorts the logits, 28 of them on the CPU; 14 B from 0.17, the Triton path), while the
  forward's hidden states ``T · H · a`` are still held (kvplan charged ``R · V · 4 · 2`` before). ``f`` is the
  release's measured forward peak over the rule for the model's family (dense / MoE), from the release's model
  class run on the meta device (``kvplan.budget.profile.forward_factors``; 1.077 for a dense model from 0.24), or
  the model's own measured row where a release at or before it measured its architecture (Gemma 4 26B-A4B:
  1.4592, its fused-MoE workspace held beside a 512-dim global-attention layer's q/k/v, against the MoE family's
  1.2626).
  ``M`` is the fused-MoE workspace the forward leaves allocated under the sampler pass (``moe_held_bytes``:
  ``T·k·(max(I/tp, H) + max(2I/tp, H))·a`` for unquantized experts in the releases whose ``WorkspaceManager``
  keeps it, measured per release: tests/golden/profile_terms/held/), and for FP8 experts where the release's FP8 MoE
  oracle picks TritonExperts on the card (``quant_kernels.fp8_moe_held_backend``; measured under ``--quantization
  fp8`` on an H100 stand-in, the same bytes); another FP8 kernel's workspace is not derived: the pessimistic end
  counts the Triton figure.

  with ``T`` = max_num_batched_tokens, ``R`` = min(max_num_seqs, T), ``H`` the hidden size,
  ``V`` the vocabulary, ``a`` the model dtype's bytes, and ``W`` the widest per-token
  intermediate of any layer on one rank: a dense MLP ``3·I/tp`` (gate-up output and its
  activation), a MoE layer the fused experts' workspaces ``top_k·(max(I_moe/tp, H) + max(2·I_moe/tp, H))``
  (``forward_width``), attention ``(q + 2·kv heads on the rank)·head_dim + q heads·v_head_dim``, a Mamba/GDN
  mixer its ``in_proj`` rows on the rank. On a TP rank the out-of-place all-reduce's output adds ``H``, on a PP
  stage after the first its two intermediate-tensor buffers add ``H`` (``forward_rule_bytes_per_token``), and
  ``f`` is the factor measured at that TP size or PP stage (tests/golden/profile_terms/parallel/: Qwen3-8B's
  rule exact at TP 2/4/8 and PP 2 in 0.11.0 and 0.19.0). Every TP rank samples the full logits (the
  LogitsProcessor all-gathers): the sampler term is at least ``R·V·(2 + 1/tp)·a``; the last PP stage samples
  with its buffers (``2·T·H·a``) held. The 256 MiB stands for kernels' workspaces. Checked
  against one published profile: Llama-3-8B on an H100 at 8192 tokens logged 1.26 GiB of
  activation peak (vllm PR #10511); the rule gives 1.16 GiB. A multimodal model's first stage also
  encodes vLLM's dummy items and keeps their outputs cached under the text forward
  (``kvplan.budget.encoder``: per tower the dummy batch its release's processor builds — Gemma 3 and 4, Qwen3-VL
  / 3.5 / 3.6, Llama 4 — and the tower's peak per patch its release's own tower class measured on the meta device
  — Gemma 3, Qwen3-VL, Llama 4 —; ``--limit-mm-per-prompt`` bounds the items, ``--language-model-only`` skips the
  pass and, where the release skips it, the tower's weights): ``max(encoder, cache + text)``, shown as the
  ``encoder_cache`` term.
* **non-torch memory** (``--non-torch-memory``), **calibrated** where ``calibration.json`` has the card family and
  parallelism (``scripts/calibrate_budget.py``: the median of what the calibration half's logs leave beside
  kvplan's other terms, the band their spread); otherwise kvplan's constants below. CUDA context allocations outside
  PyTorch's allocator that vLLM counts (cuBLAS/NCCL buffers): 0.25 GiB on one GPU,
  0.75 GiB when tp·pp > 1 (NCCL communicators, custom all-reduce buffers). Published
  profiles show 0.07-0.20 GiB single-GPU and 0.20 GiB for a 4-GPU run (vllm PR #12126,
  #14447).
* **CUDA graphs** (``--cudagraph-memory``; ``kvplan.budget.cudagraph``): the graphs a rank captures are derived
  from the release's code (its capture sizes for max_num_seqs and max_num_batched_tokens, or from
  ``--max-cudagraph-capture-size`` / ``--cudagraph-capture-sizes``, its default mode: a piecewise graph per size,
  from 0.11.0 a full graph per decode size too; -O0 none, -O1 and ``cudagraph_mode`` PIECEWISE piecewise only);
  their memory per graph, ``a + b · layers
  on the rank``, is **calibrated** on the calibration half's logged capture figures (``calibration.json``
  ``cudagraph``), the band the logged-over-fitted ratios. vLLM ≥ 0.20.0 estimates the graphs in the profile and
  subtracts the estimate (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to 1 from 0.20.0, vllm/envs.py;
  ``determine_available_memory``, 0.19.0 v1/worker/gpu_worker.py:376-411): the ``estimate`` fit. Older releases
  capture them after sizing the KV cache, in the ``1 − utilization`` headroom; then (every release) the sampler is
  warmed up over max_num_seqs dummy requests (``compile_or_warm_up_model``, 0.19.0 gpu_worker.py:686), in the
  memory the profile's activation left: on the V1 runner the profile's own pass again; on the V2 runner
  ``warmup_kernels``, whose prompt logprobs and (before 0.33.0) fp32 sampler pipeline the profile never ran
  (``kvplan.budget.profile.warmup_pass_bytes``: what it needs beyond the activation's low end joins the check).
  The band's pessimistic end checks that headroom: the start-up memory (the
  most the calibration logs show at vLLM's start-up snapshot for the parallelism), the graphs vLLM did not subtract
  (the ``actual`` fit's high end) and what capture may leave reserved but unusable for the sampler's pass: for MXFP4
  weights the graphs' high end × the largest ratio the calibration's warm-up OOMs show (gpt-oss-20b on an H100,
  0.19.0: 1.78 GiB reserved but unallocated beside 1.84 GiB of graphs), none elsewhere (``fragmentation_ratio``);
  where it does not hold the verdict is "may fail at warm-up".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any
from functools import cache
from pathlib import Path

from kvplan.budget import sizing
from kvplan.budget.hardware import GpuCard, gpu_card
from kvplan.budget.load import load_failure, physical_kv_room
from kvplan.budget.request import BudgetInput, BudgetRequest
from kvplan.results.budget import Budget, BudgetBand, BudgetStage, BudgetWeights, LoadFailure, ProfileTerm
from kvplan.budget.weights import (CHECKPOINT_METADATA, FP8_HELD_TRITON, WARNING_NOTES, fp8_experts,
                                   fp8_experts_kernel, layout_weight_memory, layout_weights, target_quantization,
                                   with_tower, mxfp4_other_padding_for, mxfp4_padding_for,
                                   widest_intermediate)
from kvplan.budget.weights import _top_k as top_k_experts
from kvplan.budget.profile import (CUDAGRAPH_REASON, MOE_WORKSPACE, encoder_row, moe_held_row,  # noqa: F401
                                   warmup_pass_bytes)
from kvplan.budget.encoder import (ENCODER_DUMMIES, encoder_dummy_batch, encoder_rule_bytes_per_patch,  # noqa: F401
                                   estimate_encoder_profile, tower_architectures, tower_load)
from kvplan.errors import OptionError
from kvplan.units import GiB, MiB, dtype_size_bytes, parse_bytes
from kvplan.version import version_key

# ----------------------------------------------------------------------- era defaults

def subtracts_cudagraph_memory(era) -> bool:
    return era.cudagraph_memory_in_profile


# ----------------------------------------------------------------------- estimates

ACTIVATION_WORKSPACE_BYTES = 256 * MiB
NON_TORCH_SINGLE_BYTES = 256 * MiB
NON_TORCH_MULTI_BYTES = 768 * MiB
CUDAGRAPH_BASE_BYTES = 256 * MiB
CUDAGRAPH_PER_LAYER_BYTES = 8 * MiB
# Memory in use at vLLM's start-up snapshot (the CUDA context and cuBLAS handles; NCCL communicators,
# created before the snapshot, when tp·pp > 1). kvplan's guess, not checked against a log; only the
# extensible sizing subtracts it (--startup-memory overrides it).
STARTUP_SINGLE_BYTES = 512 * MiB
STARTUP_MULTI_BYTES = 1024 * MiB


def forward_rule_bytes_per_token(inventory, cfg: dict, dtype_bytes: int, *, tp: int, layers: set[int] | None = None,
                                 first_stage: bool = True) -> int:
    """kvplan's rule for the dummy forward's peak per token on one rank, before the release's factor:
    ``(4·H + W + H·[tp > 1] + H·[a later PP stage])·a``, ``W`` the rank's widest intermediate (its shapes at
    ``tp``). Read from the live tensors at the peak of each release's model class run as rank 0 of a TP group and
    as each PP stage (scripts/golden/profile_terms.py --parallel-all, tests/golden/profile_terms/parallel/): under
    TP the all-reduce is out of place (pynccl's and the custom all-reduce's ``torch.empty_like`` of its input), so
    the reduced ``[T, H]`` is live beside the row-parallel layer's partial one; a later PP stage's input is the V1
    runner's persistent ``hidden_states`` and ``residual`` buffers (``make_empty_intermediate_tensors``, two
    ``[max_num_tokens, H]``) where the first stage has one embedding output."""
    hidden = int(cfg.get("hidden_size") or 0)
    extra = (hidden if tp > 1 else 0) + (0 if first_stage else hidden)
    return (4 * hidden + forward_width(inventory, cfg, tp, layers) + extra) * dtype_bytes


def forward_width(inventory, cfg: dict, tp: int, layers: set[int] | None = None) -> int:
    """``W`` of the forward rule on one TP rank: the widest per-token intermediate of a dense or attention layer
    (``widest_intermediate``) and, for a MoE layer, the fused experts' two workspaces ``k·(max(I/tp, H) +
    max(2I/tp, H))`` (TritonExperts.workspace_shapes, fused_moe.py 0.19.0 lines 1988-1989: ``(M, topk,
    max(N/2, K))`` and ``(M, topk, max(N, K))``): once ``2I/tp ≤ H`` they keep the hidden width at any TP size
    (tests/golden/profile_terms/parallel/). 0.11's per-call caches are ``max(2I/tp, H)`` and ``I/tp``: its factor
    per TP size falls below 1 as TP grows (0.87 at TP 2 to 0.65 at TP 8 for Mixtral-8x7B)."""
    workspace = moe_workspace_width(inventory, cfg, tp, layers)
    if not workspace:
        return widest_intermediate(inventory, cfg, tp, layers)
    rest = replace(inventory, weights=tuple(w for w in inventory.weights if w.kind != "experts"))
    return max(widest_intermediate(rest, cfg, tp, layers), workspace)


def moe_workspace_width(inventory, cfg: dict, tp: int, layers: set[int] | None = None) -> int:
    """The fused experts' two workspaces per token on one TP rank, ``k·(max(I/tp, H) + max(2I/tp, H))`` elements
    (``forward_width``), the widest over the MoE layers in ``layers``; 0 without MoE layers."""
    experts = [w for w in inventory.weights if w.kind == "experts" and w.linear and ".down_proj" not in w.name
               and not w.name.endswith(".bias") and (layers is None or w.layer in layers)]
    hidden = int(cfg.get("hidden_size") or 0)
    k = top_k_experts(cfg)
    workspace = 0
    for w in experts:
        up = w.rank_shape(tp)[1]  # [E, 2I (or I), H] per rank
        inter = up // 2 if "gate_up" in w.name else up
        workspace = max(workspace, k * (max(inter, hidden) + max(up, hidden)))
    return workspace


def moe_held_bytes(inventory, cfg: dict, dtype_bytes: int, *, tp: int, tokens: int, release: str | None,
                   layers: set[int] | None = None, fp8: bool = False) -> tuple[int, str]:
    """The fused-MoE workspace still allocated when the dummy sampler runs: from 0.13 the V1 worker's
    WorkspaceManager (v1/worker/workspace.py) keeps the one buffer FusedMoEModularKernel takes workspace13 and
    workspace2 from (model_executor/layers/fused_moe/modular_kernel.py, 0.19.0 lines 1063-1068), so the profile's
    sampler pass runs beside ``T · k · (max(I/tp, H) + max(2I/tp, H)) · a`` of it; before 0.13 the caches were
    freed with each call. Measured per release on the unquantized Qwen3-30B-A3B and Mixtral-8x7B (the factor on
    the rule, tests/golden/profile_terms/held/). The factor holds for FP8 experts that the release's FP8 MoE oracle
    gives TritonExperts (``quant_kernels.fp8_moe_held_backend``: the same workspace_shapes, taken from the
    WorkspaceManager in the activation dtype); ``_Estimate.moe_held`` decides which experts count (``fp8``: the
    release's measured FP8 factor where the held harness ran Qwen3-30B-A3B under ``--quantization fp8``, its
    ``experts_kernel`` TritonExperts, else the unquantized factor). Other quantized
    MoE kernels (MXFP4: gpt-oss-20b's experts at 0.19.0 show no such residual in the corpus) are not derived.
    Returns (bytes, source)."""
    width = moe_workspace_width(inventory, cfg, tp, layers)
    row, basis = moe_held_row(release)
    if not width or row is None or not row.get("factor"):
        return 0, ""
    factor, what = row["factor"], "forward"
    if fp8 and "fp8_factor" in row:
        factor, what = row["fp8_factor"], "forward under --quantization fp8 (TritonExperts)"
    held = round(tokens * width * dtype_bytes * factor)
    return held, (f"the fused-MoE workspace held by the WorkspaceManager under the sampler: {held:,} B "
                  f"(T·{width:,}·a × {factor:g}; {basis}: vLLM {row['from']}'s {what} on the meta device, "
                  f"tests/golden/profile_terms/held/{row['from']}.json)")


def logits_gather_bytes(reqs: int, vocab: int, dtype_bytes: int, tp: int) -> int:
    """``compute_logits``'s peak on a TP rank: the vocab-parallel logits ``[R, V/tp]``, the all-gather's output
    ``[tp·R, V/tp]`` and its reshaped copy ``[R, V]`` (every release's V1 LogitsProcessor all-gathers: every rank
    gets the full logits and runs the sampler), ``R·V·(2 + 1/tp)·a``; at TP 1 the logits alone."""
    return round(reqs * vocab * dtype_bytes * (2 + 1 / tp)) if tp > 1 else reqs * vocab * dtype_bytes


def estimate_activation_bytes(inventory, cfg: dict, dtype_bytes: int, *, tp: int, max_num_batched_tokens: int,
                              max_num_seqs: int, layers: set[int] | None = None, last_stage: bool = True,
                              encoder: dict | None = None, sampler_bytes: int | None = None,
                              forward_factor: float = 1.0, first_stage: bool = True, held_bytes: int = 0,
                              persistent_bytes: int = 0, drafter: dict | None = None) -> int:
    """Peak activation of vLLM's profiling run on one rank (rule in the module docstring). ``encoder``
    (``estimate_encoder_profile``, first stage of a multimodal model): the encoder's forward peaks alone, its
    outputs stay cached under the text forward and the sampler: ``max(encoder, cache + text)``.
    ``sampler_bytes``: the dummy sampler pass's peak (``kvplan.budget.profile``, derived per release; on the last
    stage only), which runs while the forward's hidden states (``T · H · a``) are still held, and on a later PP
    stage the runner's two intermediate-tensor buffers (``2 · T · H · a``); under TP at least the logits' gather
    (``logits_gather_bytes``). ``forward_factor``: the release's measured forward peak over the rule for the
    model's family at this TP size or PP stage (``kvplan.budget.profile``). ``held_bytes``: what the forward leaves
    allocated under the sampler (``moe_held_bytes``: the fused-MoE workspace from 0.13). ``persistent_bytes``: what
    the runner keeps allocated from its creation on and the release's profile counts (``sampler_terms``: the V2
    runner's per-request states from 0.27.1), on every stage beside the peak. ``drafter``
    (``kvplan.budget.drafter.drafter_phase``, the stage that runs an EAGLE-style / MTP drafter): the drafter's
    forward in the dummy run, after the target's, beside the target's held states (``activation_phases``)."""
    peak = max(activation_phases(inventory, cfg, dtype_bytes, tp=tp, max_num_batched_tokens=max_num_batched_tokens,
                                 max_num_seqs=max_num_seqs, layers=layers, last_stage=last_stage,
                                 sampler_bytes=sampler_bytes, forward_factor=forward_factor, first_stage=first_stage,
                                 held_bytes=held_bytes, drafter=drafter).values())
    if encoder is not None:
        peak = max(encoder["forward_bytes"], encoder["cache_bytes"] + peak)
    return peak + ACTIVATION_WORKSPACE_BYTES + persistent_bytes


def activation_phases(inventory, cfg: dict, dtype_bytes: int, *, tp: int, max_num_batched_tokens: int,
                      max_num_seqs: int, layers: set[int] | None = None, last_stage: bool = True,
                      sampler_bytes: int | None = None, forward_factor: float = 1.0, first_stage: bool = True,
                      held_bytes: int = 0, drafter: dict | None = None) -> dict:
    """The peaks of the profile run's phases on one rank (``estimate_activation_bytes`` takes the largest, then
    adds the workspace and the persistent part): ``forward`` the target's forward, ``sampler`` the dummy sampler
    pass with the hidden states (and the held workspace) beside it, ``drafter`` the drafter's forward after the
    target's (last stage, with ``drafter``): the target's ``[T, H]`` hidden states (three on a later PP stage, as
    under the sampler), one more per EAGLE-3 aux state (``drafter["aux_states"]``) and the held fused-MoE workspace
    (not for an MTP layer, whose own fused experts take the same workspace) beside the drafter's own peak, on the V2
    runner ``max(combine, combined states + forward)`` for an EAGLE-3 head (``kvplan.budget.drafter``)."""
    hidden = int(cfg.get("hidden_size") or 0)
    T = max_num_batched_tokens
    forward = round(T * forward_rule_bytes_per_token(inventory, cfg, dtype_bytes, tp=tp, layers=layers,
                                                     first_stage=first_stage) * forward_factor)
    reqs, vocab = min(max_num_seqs, T), int(cfg.get("vocab_size") or 0)
    if sampler_bytes is None:  # kvplan's old rule: two fp32 copies of the logits
        sampler_bytes = reqs * vocab * 4 * 2
    sampler_bytes = max(sampler_bytes, logits_gather_bytes(reqs, vocab, dtype_bytes, tp))
    held = T * hidden * dtype_bytes * (1 if first_stage else 3)
    sampler = sampler_bytes + held + held_bytes if last_stage else 0
    phases = {"forward": forward, "sampler": sampler}
    if drafter is not None and last_stage:
        states = held + T * hidden * dtype_bytes * drafter["aux_states"]
        own = max(drafter["combine_bytes"], drafter["combine_kept_bytes"] + drafter["forward_bytes"])
        phases["drafter"] = states + (held_bytes if drafter["moe_held"] else 0) + own
    return phases


# The weights' band: kvplan's per-tensor count was within 1 % of "Model loading took" on every dense and FP8
# checkpoint of issue 34's 27 start-ups (and docs/budget-validation.md's rows); the band keeps that much.
WEIGHTS_BAND = 0.01
CALIBRATION = Path(__file__).with_name("calibration.json")


@cache
def _calibration() -> dict:
    """The terms fitted on the calibration half of the start-up corpus (scripts/calibrate_budget.py)."""
    return json.loads(CALIBRATION.read_text()) if CALIBRATION.exists() else {}


def card_family(card_name: str | None) -> str:
    """A card's family as the calibration groups it: its preset name's first word (``H100-80GB`` → ``H100``)."""
    return (card_name or "").split("-")[0].upper()


def parallel_kind(tp: int, pp: int) -> str:
    """The calibration's parallelism: ``tp1`` one GPU, ``tp>1`` tensor parallel (NCCL's buffers, allocated lazily
    at the first collective, inside the profile: 2.07-2.21 GiB of non-torch memory in the 0.19.0 H100 logs at TP 2
    and 4 against 0.25 at TP 1), ``pp>1`` pipeline parallel alone. The custom all-reduce's buffers (max_size
    8 MiB, 0.19.0 distributed/device_communicators/custom_all_reduce.py:59) are allocated in ``init_device`` before
    the memory snapshot (0.19.0 v1/worker/gpu_worker.py:263-282): not in the profile's figure."""
    return "tp>1" if tp > 1 else "pp>1" if pp > 1 else "tp1"


def release_series(release: str | None) -> str:
    return ".".join((release or "").split(".")[:2])


CONSUMED_FROM = (0, 27, 0)


def profile_measure(release: str | None) -> str:
    """What the release's profile measures as the memory beside the KV cache, which decides what the calibrated
    residual holds. ``allocated`` before 0.27.0: the weights, torch's allocated peak's increase during the profile
    and the non-torch memory's increase (``memory_profiling``: ``non_kv_cache_memory = weights_memory +
    torch_peak_increase + non_torch_increase``, utils/mem_utils.py of 0.19.0); what torch keeps reserved but not
    allocated after ``empty_cache`` is in neither. ``consumed`` from 0.27.0: the free memory's drop from the
    engine's creation to after the profile plus the transient headroom (``total_consumed =
    before_create.free_memory - after_profile.free_memory``, ``non_kv_cache_memory = total_consumed +
    transient_peak_headroom``, utils/mem_utils.py of 0.27.0 and 0.27.1 lines 317-326, the same to 0.34.0; 0.26.0's
    has no ``total_consumed``): every byte the process holds after the profile counts, segments torch keeps for a
    live block included. A release string with no number is taken as the newest (``consumed``)."""
    key = version_key(release or "")
    return "consumed" if not key or key >= CONSUMED_FROM else "allocated"


def calibrated(tp: int, pp: int = 1, card_name: str | None = None, release: str | None = None) -> dict | None:
    """The calibrated non-torch term (``calibration.json``, scripts/calibrate_budget.py), the most specific group
    the calibration has: card family / parallelism / release series, card family / parallelism / what the profile
    measures (``profile_measure``), parallelism / what it measures, card family / parallelism, parallelism, else one
    GPU or several (None before a calibration)."""
    groups = _calibration().get("non_torch", {})
    kind, fam, measure = parallel_kind(tp, pp), card_family(card_name), profile_measure(release)
    for key in (f"{fam}/{kind}/{release_series(release)}", f"{fam}/{kind}/{measure}", f"{kind}/{measure}", f"{fam}/{kind}", kind,
                "tp>1" if tp * pp > 1 else "tp1"):
        if key in groups:
            return groups[key]
    return None


def estimate_non_torch_bytes(tp: int, pp: int = 1, card_name: str | None = None, release: str | None = None) -> int:
    """The non-torch term (and what the rest of the estimate leaves over, see ``calibration.json``): the
    calibrated value for the card family, parallelism and release, else kvplan's old constants."""
    g = calibrated(tp, pp, card_name, release)
    if g is not None:
        return g["value_bytes"]
    return NON_TORCH_MULTI_BYTES if tp * pp > 1 else NON_TORCH_SINGLE_BYTES


def non_torch_ends(tp: int, pp: int = 1, card_name: str | None = None, release: str | None = None) -> tuple[int, int]:
    """The non-torch term's band: the calibration residuals' spread (widened for a thin group), else the value."""
    g = calibrated(tp, pp, card_name, release)
    if g is not None:
        return g["low_bytes"], g["high_bytes"]
    v = estimate_non_torch_bytes(tp, pp)
    return v, v


def sampler_terms(era, reqs: int, vocab: int, runner: str = "v1", max_num_seqs: int | None = None,
                  max_num_batched_tokens: int = 0, inputs_embeds_bytes: int = 0, num_speculative_tokens: int = 0,
                  draft_hidden_bytes: int = 0) -> dict:
    """The dummy sampler pass's peak for ``reqs`` dummy requests (``min(max_num_seqs, T)``: both runners' ``_dummy_run``
    take ``min(num_tokens, max_num_reqs)`` requests and sample one hidden state each) at ``vocab``, by the release's
    derived table for the model runner ``runner`` (``kvplan.budget.profile``): value, low and high end, basis and
    where it came from."""
    from kvplan.budget.profile import per_logit_key, persistent_bytes, sampler_bytes, sampler_row

    # the release the era stands for (Era.stands_for), read from its fields: the budget calls nothing in the engines
    row, basis, src = sampler_row(_release(era), runner)
    high = sampler_bytes(row, reqs, vocab, per_logit=row[per_logit_key(reqs, "high")])
    if runner == "v2" and row.get("runner") == "v2" and "v2" in (v1 := sampler_row(_release(era), "v1")[0]):
        # a release with both runners: the V2 runner's profile is derived but no calibration start-up ran on it
        # (every V2 start-up of the corpus is in the holdout half), so the band's pessimistic end keeps the V1
        # runner's sampler pass, the larger of the two (the value stays the V2 runner's)
        high = max(high, sampler_bytes(v1, reqs, vocab, per_logit=v1[per_logit_key(reqs, "high")]))
        src += "; the band's high end the V1 runner's pass (the V2 profile is checked on no calibration start-up)"
    # the V2 runner's persistent per-request states, where the release's profile counts them (every stage holds them)
    # (max_model_len is not an input: no release's runner keeps a per-slot buffer on the card, all_token_ids is
    # pinned host memory: each golden's bytes_per_token_slot is 0)
    persistent = persistent_bytes(row, max_num_seqs if max_num_seqs is not None else reqs, vocab,
                                  max_num_batched_tokens=max_num_batched_tokens,
                                  inputs_embeds_bytes=inputs_embeds_bytes,
                                  num_speculative_tokens=num_speculative_tokens, draft_hidden_bytes=draft_hidden_bytes)
    if persistent:
        p = row["persistent"]
        src += (f"; with what the V2 runner keeps on the card, {persistent:,} B (vLLM {row['from']}'s runner run on "
                f"the CPU: {p['bytes_per_logit']:g} B per max_num_seqs x V — the penalty bin counts, int32 —, "
                f"{p['bytes_per_req']:,} B per request"
                + (f", {p['bytes_per_token']:g} B per batched token" if p.get("bytes_per_token") else "")
                + (f", the multimodal inputs_embeds [T, {inputs_embeds_bytes:,} B]" if inputs_embeds_bytes
                   and p.get("multimodal") else "")
                + (f", the {num_speculative_tokens}-token autoregressive speculator's buffers (EAGLE-3 fit, "
                   f"hidden_states [T, {draft_hidden_bytes:,} B])" if num_speculative_tokens and draft_hidden_bytes
                   and p.get("speculative") else "")
                + "; counted from 0.27.1, whose profile takes the free memory's drop)")
    return {"value": sampler_bytes(row, reqs, vocab),
            "low": sampler_bytes(row, reqs, vocab, per_logit=row[per_logit_key(reqs, "low")]),
            "high": high, "basis": basis, "source": src, "row": row, "persistent": persistent}


def with_rejection_sampler(sampler: dict, era, reqs: int, vocab: int, rejection: bool) -> dict:
    """``sampler`` (``sampler_terms``) where the V1 runner's dummy sampler run ends with the rejection-sampler pass
    of a speculative config (``kvplan.budget.drafter``): each end the larger of the sampler pass and the whole
    call's derived peak."""
    if not rejection:
        return sampler
    from kvplan.budget.drafter import spec_sampler_bytes, spec_sampler_row

    row, src, own = spec_sampler_row(_release(era))
    if row is None:
        return {**sampler, "basis": ASSUMED, "source": sampler["source"] + "; the rejection-sampler pass of the "
                "speculative config is not derived for this release (kvplan/budget/drafter.py)"}
    spec = spec_sampler_bytes(row, sampler["row"], reqs, vocab)
    note = (f"; with the speculative config's rejection-sampler pass: {spec:,} B ({row['bytes_per_logit']:g} B per "
            f"logit, vLLM {src}'s own _dummy_sampler_run with its RejectionSampler, run on the CPU"
            + ("" if own else f"; {_release(era)} not run: the newest derived release before it") + ")")
    return {**sampler, "value": max(sampler["value"], spec), "low": max(sampler["low"], spec),
            "high": max(sampler["high"], spec), "basis": sampler["basis"] if own else ASSUMED,
            "source": sampler["source"] + note}


# What a soft-capped LogitsProcessor keeps live at once, in [R, V] tensors of the model dtype: ``forward`` divides,
# tanh-s and multiplies out of place (model_executor/layers/logits_processor.py, the same three lines in every release
# 0.10.1-0.34.0: 0.29.0 lines 113-116), each result beside its input until the name is rebound. Gemma 4's own
# compute_logits run on the meta device measured 4.0 B per bf16 logit (tests/golden/profile_terms/forward/<release>.json
# architectures, ``logits``; tests/test_profile_terms.py checks the two agree).
SOFT_CAP_LOGITS_TENSORS = 2


def with_compute_logits(sampler: dict, era, cfg: dict, architecture: str, reqs: int, vocab: int,
                        dtype_bytes: int) -> dict:
    """``sampler`` (``sampler_terms``) where the model's own ``compute_logits`` peaks above the pass: the derived pass
    is measured behind a stand-in ``compute_logits`` that makes the logits alone (``hidden @ lm_head.T``), and the
    dummy sampler run calls the model's first, then the sampler on its logits, so the run's peak is the larger of
    the two. The model's own row where a release at or before this one measured it (the forward golden's
    ``logits``: its compute_logits at TP 1 on the meta device); else a soft-capped model
    (``final_logit_softcapping``) takes the soft cap's ``SOFT_CAP_LOGITS_TENSORS`` [R, V] tensors."""
    from kvplan.budget.profile import model_forward_row

    own = model_forward_row(_release(era), architecture)
    per = own.get("logits_bytes_per_logit") if own is not None else None
    if own is not None and per:
        what = (f"{own['row']}'s own compute_logits ({'derived' if own['basis'] == DERIVED else 'assumed'}: vLLM "
                f"{own['release']}'s, run on the meta device at TP 1): {per:g} B per logit")
    elif cfg.get("final_logit_softcapping"):
        per = SOFT_CAP_LOGITS_TENSORS * dtype_bytes
        what = (f"the LogitsProcessor's soft cap (final_logit_softcapping {cfg['final_logit_softcapping']:g}): "
                f"{SOFT_CAP_LOGITS_TENSORS} [R, V] tensors live at once, {per:g} B per logit "
                "(logits_processor.py forward, every release; measured on Gemma 4's compute_logits)")
    else:
        return sampler
    logits = round(reqs * vocab * per)
    if logits <= sampler["low"]:
        return sampler
    return {**sampler, "value": max(sampler["value"], logits), "low": max(sampler["low"], logits),
            "high": max(sampler["high"], logits),
            "source": sampler["source"] + f"; the model's compute_logits peaks above the pass: {logits:,} B ({what})"}


def forward_terms(era, cfg: dict, tp: int = 1, pp: int = 1, architecture: str = "") -> dict:
    """The dummy forward's factor on kvplan's rule for this model at this TP size and PP stage, by the release's
    derived table (``kvplan.budget.profile.forward_factors``): the architecture's own row where the release's golden
    measured it, else the model's family's."""
    from kvplan.budget.profile import forward_factors

    return forward_factors(_release(era), cfg, tp=tp, pp=pp, architecture=architecture)


def startup_high(tp: int, pp: int, fallback: int) -> int:
    """The start-up memory's high end for the warm-up check: the most the calibration half's logs show in use at
    vLLM's start-up snapshot for this parallelism (``calibration.json`` ``startup``), else ``fallback``."""
    g = (_calibration().get("startup") or {}).get(parallel_kind(tp, pp))
    return max(fallback, g["high_bytes"]) if g else fallback


def estimate_startup_bytes(world_size: int) -> int:
    return STARTUP_MULTI_BYTES if world_size > 1 else STARTUP_SINGLE_BYTES


# the band's failure after the KV cache is allocated: the CUDA-graph capture and the sampler warm-up
WARMUP = "warm-up"


def estimate_cudagraph_pool_bytes(num_layers: int) -> int:
    """kvplan's former pool rule for the graphs on a rank, 256 MiB + 8 MiB per layer (0.52 GiB for a 34-layer
    Gemma-3-4B, whose profile logged 0.65 GiB in vllm PR #21489): the fallback without a calibration."""
    return CUDAGRAPH_BASE_BYTES + CUDAGRAPH_PER_LAYER_BYTES * num_layers


def graph_terms(card_name: str | None, *, graphs: int, layers: int, platform: str = "cuda") -> dict:
    """The captured graphs' memory on a rank (``actual``: what capture takes) and the profile's estimate of it
    (``estimate``: what 0.20+ subtract), each ``{value, low, high, basis, source}``: the calibrated per-graph cost
    (``calibration.json`` ``cudagraph``: the card platform's own fit where the calibration has one, ROCm's HIP
    graphs apart from CUDA's) where there is one, else kvplan's pool rule (assumed)."""
    from kvplan.budget.cudagraph import fitted_bytes, ratio_band

    cal = _calibration().get("cudagraph") or {}
    out = {}
    for what in ("actual", "estimate"):
        fit = cal.get(what) or cal.get("actual")
        own = fit is not None and (fit.get("platforms") or {}).get(platform)
        fit, cards = (own, f"{platform.upper()} ") if own else (fit, "CUDA " if platform == "cuda" else
                                                                 f"CUDA (no {platform.upper()} fit) ")
        if fit is None or graphs == 0:
            v = estimate_cudagraph_pool_bytes(layers) if graphs else 0
            out[what] = {"value": v, "low": v, "high": v, "basis": ASSUMED,
                         "source": "kvplan's pool rule 256 MiB + 8 MiB per layer on the rank" if graphs else
                         "no graphs captured"}
            continue
        v = fitted_bytes(fit, graphs, layers)
        band = ratio_band(fit, card_family(card_name))
        out[what] = {"value": v, "low": round(v * band["ratio_low"]), "high": round(v * band["ratio_high"]),
                     "basis": CALIBRATED, "source": (
                         f"{graphs} graphs × ({fit['per_graph_bytes'] / MiB:.2f} MiB + "
                         f"{fit['per_graph_per_layer_bytes'] / MiB:.3f} MiB × {layers} layers), calibrated on "
                         f"{fit['n']} {cards}start-ups' logged {'capture' if what == 'actual' else 'profile estimate'} "
                         "figures "
                         f"of the calibration half (scripts/calibrate_budget.py); band {band['ratio_low']:.2f}-"
                         f"{band['ratio_high']:.2f}× from {band['n']} start-ups ({band['group']}"
                         f"{', fewer than 3 of this card family: widened to every card' if band['widened'] else ''})")}
    return out


# ----------------------------------------------------------------------- the budget

OVERRIDE_KEYS = ("weights_memory", "activation_memory", "non_torch_memory", "cudagraph_memory", "startup_memory")
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
    """A size by the rules of vLLM's ``human_readable_int`` (``kvplan.units.parse_human_int``)."""
    try:
        return parse_bytes(text)
    except ValueError:
        raise OptionError(f"{flag}: cannot read {text!r} as a size; write bytes or e.g. 16GiB, 512MiB") from None


@dataclass(frozen=True)
class _Overrides:
    """The terms given instead of estimated (bytes; None = estimated): ``--weights-memory`` and the others."""

    weights: int | None
    activation: int | None
    non_torch: int | None
    cudagraph: int | None
    startup: int | None

    @classmethod
    def of(cls, budget: BudgetInput) -> _Overrides:
        given = {k: getattr(budget, k) for k in OVERRIDE_KEYS}  # the fields, read (no call back into the request)
        return cls(*(_override_bytes(given, k) for k in OVERRIDE_KEYS))


@dataclass(frozen=True)
class _Estimate:
    """What every pipeline stage's estimate reads: the layout, the era, the card, the sizing mode, the profile's
    batch, the weights counted and the terms given (``kv_budget`` makes it once)."""

    layout: Any
    era: Any
    card: GpuCard
    over: _Overrides
    mode: str
    util: float
    tp: int
    pp: int
    T: int
    R: int
    weights: Any  # the weights per stage (layout_weight_memory), None when given
    unpadded: Any  # the same as the other MXFP4 backend pads them (0.11 Hopper with triton_kernels), else None
    inventory: Any  # the target's weights as the model stage counted them, None when both terms are given
    offload: int  # --cpu-offload-gb in bytes
    sampler: dict
    forward: dict  # the release's forward factor on kvplan's rule (forward_terms)
    encoder: dict | None
    startup: int
    margin_floor: int
    exact: bool  # --exact-params: the weights counted on the meta device
    encoder_why: str = ""  # why a tower's profile is or is not estimated
    release: str = ""  # the release the era stands for
    graphs: int = 0  # the CUDA graphs a rank captures by default (kvplan.budget.cudagraph)
    lora: Any = None  # BudgetRequest.lora (LoraSlots) with --enable-lora, else None
    redundant_experts: int = 0  # EPLB's redundant experts per MoE layer (resolved), 0 without EPLB
    eplb: bool = False  # --enable-eplb
    quant: Any = None  # the target's Quantization (quantization_of / quantization_override), None when not read
    expert_parallel: bool = False  # --enable-expert-parallel
    # the drafter's part of the dummy run by band end ("value", "high": kvplan.budget.drafter.drafter_phase), None
    # without an EAGLE-style / MTP drafter or a measured row
    drafter: dict | None = None
    # the V2 runner's warm-up after the KV cache is sized (kvplan.budget.profile.warmup_pass_bytes), None on V1
    warmup_pass: dict | None = None

    @property
    def graph_basis(self) -> str:
        if self.over.cudagraph is not None:
            return OVERRIDE
        fit = (_calibration().get("cudagraph") or {}).get("actual")
        return f"{self.graphs} graphs, " + (ASSUMED if fit is None else f"{CALIBRATED} on {fit['n']} start-ups")

    @property
    def fragmentation_ratio(self) -> float:
        """What capture may leave reserved but unusable for the sampler's warm-up, over the graphs' memory: the
        calibration's warm-up OOMs were MXFP4 MoE checkpoints (gpt-oss-20b, 0.19.0, H100, TP 1 and 2), so the ratio
        applies to MXFP4 weights; the calibration half's other deployments started with less room to spare than
        that (Llama-3.3-70B FP8 at TP 2, 0.95: at most 0.67 GiB beside 1.79 GiB of graphs), 0 there."""
        frag = (_calibration().get("cudagraph") or {}).get("warmup_fragmentation")
        mxfp4 = self.weights is not None and str(self.weights.quantization).startswith("mxfp4")
        return float(frag["ratio_high"]) if frag and mxfp4 else 0.0

    def graph_terms(self, layers: int) -> dict:
        return graph_terms(self.card.name, graphs=self.graphs, layers=layers, platform=self.card.platform)

    @property
    def extensible(self) -> bool:
        return self.mode == sizing.EXTENSIBLE

    @property
    def cfg(self) -> dict:
        return self.layout.target.text_config

    @property
    def dbytes(self) -> int:
        return dtype_size_bytes(self.layout.target.dtype)

    @property
    def persistent(self) -> int:
        """What the runner keeps allocated from its creation on and the profile counts, inside kvplan's activation
        (``sampler_terms``: the V2 runner's per-request states from 0.27.1)."""
        return int(self.sampler.get("persistent") or 0)

    def _sized(self, *, weights: int, activation: int, non_torch: int, cudagraph: int,
               cudagraph_resident: int | None) -> dict:
        return sizing.stage_kv_cache_bytes(self.mode, total=self.card.memory_bytes, utilization=self.util,
                                           startup=self.startup, margin_floor=self.margin_floor, weights=weights,
                                           activation=activation, non_torch=non_torch, cudagraph=cudagraph,
                                           cudagraph_resident=cudagraph_resident,
                                           persistent=0 if self.over.activation is not None else self.persistent)

    def _phase_args(self, layers: set[int], last: bool, sampler: int, forward_end: str, first: bool) -> dict:
        """``activation_phases``' arguments for this stage at a band end (``forward_end``: "value" / "high")."""
        factors = self.forward if first else self.forward.get("later", self.forward)
        return dict(tp=self.tp, max_num_batched_tokens=self.T, max_num_seqs=self.R, layers=layers, last_stage=last,
                    sampler_bytes=sampler, forward_factor=factors[forward_end], first_stage=first,
                    held_bytes=self.moe_held(layers, last, high=forward_end == "high")[0],
                    drafter=(self.drafter or {}).get(forward_end) if last else None)

    def _activation(self, layers: set[int], last: bool, sampler: int, encoder: dict | None = None,
                    forward_end: str = "value", first: bool = True) -> int:
        return estimate_activation_bytes(self.inventory, self.cfg, self.dbytes, encoder=encoder,
                                         persistent_bytes=self.persistent,
                                         **self._phase_args(layers, last, sampler, forward_end, first))

    def phases(self, layers: set[int], last: bool, first: bool) -> dict:
        """The profile run's phases on the stage at the band's value (``activation_phases``): which one peaks."""
        return activation_phases(self.inventory, self.cfg, self.dbytes,
                                 **self._phase_args(layers, last, self.sampler["value"], "value", first))

    def moe_held(self, layers: set[int], last: bool, high: bool = False) -> tuple[int, str]:
        """The fused-MoE workspace held under the last stage's sampler (``moe_held_bytes``): unquantized experts,
        and FP8 experts where the release's FP8 MoE oracle picks TritonExperts on this card
        (``quant_kernels.fp8_moe_held_backend``). Where it picks another kernel, or the pick depends on what kvplan
        cannot know (DeepGEMM installed, a ROCm card), the value counts none of it and the pessimistic end
        (``high``) counts the Triton experts' workspace, the source saying why."""
        if not last or self.inventory is None:
            return 0, ""
        quant = (str(self.weights.quantization) if self.weights is not None
                 else "unquantized" if not self.layout.target.config.get("quantization_config") else "quantized")
        if quant == "unquantized" and (self.quant is None or self.quant.method == "none"):
            return moe_held_bytes(self.inventory, self.cfg, self.dbytes, tp=self.tp, tokens=self.T,
                                  release=self.release, layers=layers)
        backend, why = self.fp8_moe_backend()
        if not backend:
            return 0, ""
        held, source = moe_held_bytes(self.inventory, self.cfg, self.dbytes, tp=self.tp, tokens=self.T,
                                      release=self.release, layers=layers, fp8=True)
        if not held:
            return 0, ""
        if backend == FP8_HELD_TRITON:
            return held, f"{source}; FP8 experts: {why}"
        return (held if high else 0), (f"{source}, counted at the pessimistic end only: the FP8 experts' kernel is "
                                       f"{why}, whose workspace kvplan has not derived")

    def fp8_moe_backend(self) -> tuple[str, str]:
        """(backend, why) the release's FP8 MoE oracle picks for the target's FP8 experts on this card
        (``quant_kernels.fp8_moe_held_backend``); ("", "") for experts that are not FP8 or no card named;
        ("ROCM", why) on a ROCm card (AITER or Triton by environment switches: not derived)."""
        q = self.quant
        if not self.card.name or not fp8_experts(q):
            return "", ""
        if self.card.platform != "cuda" or not self.card.compute_capability:
            return "ROCM", (f"{self.card.platform}'s FP8 MoE backend (AITER or Triton by VLLM_ROCM_USE_AITER "
                            "/ VLLM_ROCM_USE_AITER_MOE, not derived)")
        hidden = int(self.cfg.get("hidden_size") or 0)
        inter = int(self.cfg.get("moe_intermediate_size") or self.cfg.get("intermediate_size") or 0) // self.tp
        backend, why = fp8_experts_kernel(q, self.card.compute_capability, self.release, hidden, inter,
                                          expert_parallel=self.expert_parallel)
        return backend, (f"{why} (vLLM {self.release}, SM {self.card.compute_capability[0]}."
                         f"{self.card.compute_capability[1]})")

    def _weights_on(self, s: int, weights: Any) -> int:
        """Stage ``s``'s weights after offloading, with what LoRA and EPLB add inside vLLM's load_model (what vLLM
        logs as 'Model loading took')."""
        w = weights.stages[s].weight_bytes  # counted: called only where --weights-memory is not given
        return w - min(self.offload, w) + self.loaded_extra(s)

    def lora_cost(self, s: int):
        """``kvplan.budget.lora.LoraCost`` on stage ``s`` (None without --enable-lora)."""
        if self.lora is None or self.inventory is None:
            return None
        from kvplan.budget.lora import lora_cost

        a, z = self.layout.pp_bounds[s]
        return lora_cost(self.inventory, self.cfg, _architecture(self.layout.target.config), self.release, dtype_bytes=self.dbytes,
                         tp=self.tp, max_loras=self.lora.max_loras, max_lora_rank=self.lora.max_lora_rank,
                         max_num_batched_tokens=self.T, max_num_seqs=self.R, layers=set(range(a, z)),
                         first=s == 0, last=s == self.pp - 1)

    def eplb_buffer(self, s: int) -> int:
        """EPLB's expert buffer on stage ``s``: one MoE layer's local expert tensors (``EplbState``'s
        ``[torch.empty_like(w) for w in model.expert_weights[0]]``, distributed/eplb/eplb_state.py 0.19.0 line 466,
        0.34.0 line 512; from 0.12), 0 without EPLB or before 0.12. ``load_model`` adds the target to the EPLB state
        after measuring 'Model loading took' (0.19.0 line 4849): the profile's torch peak holds it, so kvplan adds it
        to the activation term."""
        if not self.eplb or self.weights is None or version_key(self.release) < (0, 12):
            return 0
        experts = self.weights.stages[s].bytes_by_kind.get("experts", 0)
        a, z = self.layout.pp_bounds[s]
        moe_layers = {w.layer for w in (self.inventory.weights if self.inventory is not None else ())
                      if w.expert and w.layer is not None and a <= w.layer < z}
        return experts // len(moe_layers) if moe_layers else 0

    def loaded_extra(self, s: int) -> int:
        """What vLLM's load_model allocates beside the checkpoint's weights on stage ``s``, inside 'Model loading
        took': LoRA's slots (and up to 0.11.x its wider vocabulary) and punica buffers (``load_lora_model`` runs in
        the DeviceMemoryProfiler block, v1/worker/gpu_model_runner.py 0.19.0 lines 4746-4808)."""
        cost = self.lora_cost(s)
        return cost.total_bytes if cost is not None else 0

    def stage(self, s: int, a: int, z: int) -> tuple[BudgetStage, tuple[int, int], BudgetStage, dict]:
        """Pipeline stage ``s`` (its layers ``a`` to ``z``): its budget, its band's two ends (every estimated term
        at its high end, then at its low end), the stage at the pessimistic end, and its terms' ends."""
        o, name, last = self.over, self.card.name, s == self.pp - 1
        layers = set(range(a, z))
        # the weights vLLM logs ('Model loading took') are after offloading: an override is taken as is
        w_bytes = o.weights if o.weights is not None else self._weights_on(s, self.weights)
        eplb = self.eplb_buffer(s) if o.activation is None else 0  # held under the profile run
        first = s == 0
        act = o.activation if o.activation is not None else self._activation(
            layers, last, self.sampler["value"], first=first) + eplb
        act_ends = (act, act) if o.activation is not None else tuple(
            self._activation(layers, last, self.sampler[end], forward_end=f, first=first) + eplb
            for end, f in (("low", "value"), ("high", "high")))
        enc_part = enc_high = 0
        first_encodes = o.activation is None and s == 0 and self.encoder is not None
        if first_encodes and self.encoder is not None:  # the first PP rank encodes the dummy items
            encoder = self.encoder
            enc_part = self._activation(layers, last, self.sampler["value"], encoder) - act
            # a TP size whose tower was not run: the TP 1 figure at the pessimistic end (encoder.tp_row)
            enc_high = self._activation(layers, last, self.sampler["value"], {
                **encoder, "forward_bytes": encoder.get("forward_high_bytes", encoder["forward_bytes"])}) - act
            act += enc_part
        nt = o.non_torch if o.non_torch is not None else estimate_non_torch_bytes(self.tp, self.pp, name, self.release)
        nt_band = (nt, nt) if o.non_torch is not None else non_torch_ends(self.tp, self.pp, name, self.release)
        drafter_layers = len([ls for ls in self.layout.layers if ls.source == "drafter"]) if last else 0
        layers_on_stage = (z - a) + drafter_layers
        counted = subtracts_cudagraph_memory(self.era)
        if o.cudagraph is not None:  # taken as is, whether or not the release subtracts the graphs
            cg = o.cudagraph
            cg_ends, captured = (cg, cg), {"value": o.cudagraph, "low": o.cudagraph, "high": o.cudagraph}
            g = {"estimate": captured, "actual": captured}
        else:
            g = self.graph_terms(layers_on_stage)
            est, captured = g["estimate"], g["actual"]
            cg, cg_ends = (est["value"], (est["low"], est["high"])) if counted else (0, (0, 0))
        # extensible: the graphs' pool after capture, measured whether or not the profile estimated the graphs
        resident = captured["value"] if self.extensible else None
        sized = self._sized(weights=w_bytes, activation=act, non_torch=nt, cudagraph=cg, cudagraph_resident=resident)
        sized.pop("requested_memory_bytes")
        stage = BudgetStage(stage=s, weights_bytes=w_bytes, activation_peak_bytes=act, non_torch_bytes=nt,
                            cudagraph_bytes=cg, encoder_profile_bytes=enc_part if first_encodes else None,
                            cudagraph_resident_bytes=resident, **sized)
        w_low, w_high = w_bytes, w_bytes
        if o.weights is None:
            # the other backend an unstated package picks (mxfp4_other_padding_for): below the value (0.11 Hopper's
            # Triton) or above it (0.11 B200's FlashInfer, which pads more): the band holds both
            other = w_bytes if self.unpadded is None else self._weights_on(s, self.unpadded)
            w_low = round(min(w_bytes, other) * (1 - WEIGHTS_BAND))
            w_high = round(max(w_bytes, other) * (1 + WEIGHTS_BAND))
        ends = tuple(self._sized(weights=w_e, activation=af + enc_e, non_torch=nt_e, cudagraph=cg_e,
                                 cudagraph_resident=resident)["kv_cache_memory_bytes"]
                     for w_e, af, enc_e, nt_e, cg_e in ((w_high, act_ends[1], enc_high, nt_band[1], cg_ends[1]),
                                                        (w_low, act_ends[0], enc_part, nt_band[0], cg_ends[0])))
        pessimistic = replace(stage, weights_bytes=w_high, activation_peak_bytes=act_ends[1] + enc_high,
                              non_torch_bytes=nt_band[1], cudagraph_bytes=cg_ends[1])
        # (0, why) for FP8 experts counted at the pessimistic end only: the source says so
        held = self.moe_held(layers, last) if o.activation is None else (0, "")
        phases = self.phases(layers, last, first) if o.activation is None else {}
        sampler_peak = bool(phases) and last and phases["sampler"] >= max(phases.values())
        drafter_peak = "drafter" in phases and phases["drafter"] > max(phases["forward"], phases["sampler"])
        # the warm-up after the KV cache is allocated (profiled sizing): the graphs vLLM did not subtract at this
        # end, and what capture may leave reserved but unusable for the sampler's warm-up pass (the module docstring)
        warmup = {"graphs": max(0, captured["high"] - cg_ends[1]),
                  "fragmentation": round(captured["high"] * self.fragmentation_ratio),
                  # the V2 runner's warm-up passes, in what the profile's activation peak left (its low end)
                  "sampler": max(0, self.warmup_pass["bytes"] - act_ends[0])
                  if last and self.warmup_pass is not None and o.activation is None else 0}
        terms = {"weights": (w_low, w_high), "activation": act_ends, "non_torch": nt_band, "sampler_peak": sampler_peak,
                 "cudagraph": cg_ends, "captured": captured, "warmup": warmup, "graphs": g,
                 "encoder_cache": (enc_part, enc_high), "moe_held": held, "drafter_peak": drafter_peak,
                 "drafter": (self.drafter or {}).get("value") if last and o.activation is None else None}
        return stage, (ends[0], ends[1]), pessimistic, terms


def _weights_of(layout, era, card: GpuCard, budget: BudgetInput, request: BudgetRequest, counted,
                redundant: int = 0) -> tuple:
    """The weights per stage (``layout_weight_memory``) with the default MXFP4 backend's padding and, where an
    installed package the user did not state picks another backend (``mxfp4_other_padding_for``), with its."""
    tp = layout.tensor_parallel_size
    release = getattr(era, "release", "") or ""
    marlin, tk = request.mxfp4_use_marlin, request.triton_kernels
    padding = mxfp4_padding_for(card.compute_capability, card.platform, release, use_marlin=marlin,
                                triton_kernels=tk) if card.name else None
    other = mxfp4_other_padding_for(card.compute_capability, card.platform, release, use_marlin=marlin,
                                    triton_kernels=tk) if card.name else None

    loaded_on = (card.compute_capability, release) if card.name and card.platform == "cuda" and \
        card.compute_capability and release else None

    def count(pad):
        return layout_weight_memory(layout, tp=tp, exact_params=bool(budget.exact_params),
                                    data_parallel_size=request.data_parallel_size,
                                    expert_parallel=request.enable_expert_parallel, quantization=budget.quantization,
                                    mxfp4_padding=pad, inventory=counted, loaded_on=loaded_on,
                                    num_redundant_experts=redundant, release=release)

    weights = count(padding)
    unpadded = count(other) if other is not None else None  # 0.11 Hopper: Triton with triton_kernels installed
    config = layout.target.config
    if isinstance(config.get("vision_config"), dict):  # the tower as the release loads it (kvplan.budget.encoder)
        def loaded(w):
            how = tower_load(config, release, _mm_limits(request), tp, dtype_size_bytes(layout.target.dtype),
                             int(layout.target.text_config.get("hidden_size") or 0),
                             from_metadata=w.basis == CHECKPOINT_METADATA)
            return w if how is None else with_tower(w, how[0], skipped=how[1], why=how[2])

        weights, unpadded = (None if w is None else loaded(w) for w in (weights, unpadded))
    return weights, unpadded


def _tower_row(release: str, config: dict) -> dict | None:
    """The release's measured row for the model's vision tower (its own architecture's, else one of the same
    tower class: ``kvplan.budget.encoder.tower_architectures``)."""
    return next((r for a in tower_architectures(_architecture(config)) if (r := encoder_row(release, a)) is not None), None)


def _mm_limits(request: BudgetRequest) -> dict | None:
    """The per-modality limits vLLM applies: --language-model-only sets every modality's limit to 0
    (MultiModalConfig.get_limit_per_prompt), else --limit-mm-per-prompt."""
    if request.language_model_only:
        return {m: 0 for m in ("image", "video", "audio")}
    return request.limit_mm_per_prompt


def _estimate(layout, era, request: BudgetRequest) -> _Estimate:
    """The inputs every stage's estimate reads, resolved once (the card, the sizing mode, the weights)."""
    b = request.budget
    tp = layout.tensor_parallel_size
    if request.tensor_parallel_size and int(request.tensor_parallel_size) != tp:
        raise OptionError(f"kv_budget: tensor_parallel_size {request.tensor_parallel_size} given, but the layout "
                          f"was built for {tp}; build the layout with that --tensor-parallel-size")
    T, R = int(request.max_num_batched_tokens or 8192), int(request.max_num_seqs or 1024)
    pp = max(1, len(layout.ranks))
    card = b.card if b.card is not None else gpu_card(b.gpu, b.gpu_memory)
    mode, _ = sizing.kv_cache_sizing(era, b.enable_extensible_kv_cache,
                                     num_gpu_blocks_override=request.num_gpu_blocks_override)
    util, _ = sizing.resolve_gpu_memory_utilization(era, b.gpu_memory_utilization, mode)
    over = _Overrides.of(b)
    startup = 0
    if mode == sizing.EXTENSIBLE:
        startup = over.startup if over.startup is not None else estimate_startup_bytes(tp * pp)
    counted = weights = unpadded = None
    if over.weights is None or over.activation is None:
        counted = layout_weights(layout)  # the model stage's count (ModelLayout.inventory)
    redundant = redundant_experts(era, request, layout)
    if over.weights is None:
        weights, unpadded = _weights_of(layout, era, card, b, request, counted, redundant)
    cfg = layout.target.text_config
    release = _release(era)
    has_tower = isinstance(layout.target.config.get("vision_config"), dict)
    limits = _mm_limits(request)
    reqs, vocab = min(R, T), int(cfg.get("vocab_size") or 0)  # the dummy sampler run's requests and logits
    # a multimodal model served with its inputs (a modality's limit above 0: vLLM's supports_multimodal_inputs):
    # the V2 runner's encoder runner keeps inputs_embeds [T, inputs_embeds_size] (ModelConfig.get_inputs_embeds_size:
    # the text config's projection_dim / projection_size, else its hidden size) in the model dtype
    serves_mm = has_tower and not (limits is not None and not any(limits.values()))
    embeds = int(cfg.get("projection_dim") or cfg.get("projection_size") or cfg.get("hidden_size") or 0) * \
        dtype_size_bytes(layout.target.dtype) if serves_mm else 0
    encoder = (estimate_encoder_profile(layout.target.config, dtype_size_bytes(layout.target.dtype), T, cfg, release,
                                        max_num_seqs=R, limits=limits, tp=tp,
                                        row=_tower_row(release, layout.target.config))
               if has_tower else (None, ""))
    return _Estimate(
        layout=layout, era=era, card=card, over=over, mode=mode, util=util, tp=tp, pp=pp, T=T, R=R,
        weights=weights, unpadded=unpadded,
        # the MTP layers' weights sit past the decoder: the activation skips them
        inventory=counted.target if counted is not None else None,
        offload=int((b.cpu_offload_gb or 0) * GiB),
        sampler=with_compute_logits(
            with_rejection_sampler(sampler_terms(era, reqs, vocab, request.model_runner, R, T, embeds,
                                                 *_speculator(layout)), era, reqs, vocab, request.rejection_sampler),
            era, cfg, _architecture(layout.target.config), reqs, vocab, dtype_size_bytes(layout.target.dtype)),
        forward=forward_terms(era, cfg, tp, pp, architecture=_architecture(layout.target.config)),
        encoder=encoder[0], startup=startup,
        margin_floor=sizing.MARGIN_FLOOR_BYTES_ROCM if card.platform == "rocm" else sizing.MARGIN_FLOOR_BYTES,
        exact=bool(b.exact_params), encoder_why=encoder[1], release=release,
        graphs=_graphs(release, card, T=T, R=R, layout=layout, request=request),
        lora=request.lora, redundant_experts=redundant, eplb=request.enable_eplb,
        quant=target_quantization(layout.target.config, b.quantization), expert_parallel=bool(request.enable_expert_parallel),
        drafter=_drafter(layout, counted, release, request.model_runner, T, tp) if counted is not None else None,
        warmup_pass=warmup_pass_bytes(release, request.model_runner, max_num_seqs=R, max_num_batched_tokens=T,
                                      vocab=vocab, num_speculative_tokens=_num_speculative(layout)),
    )


def _drafter(layout, weights, release: str, runner: str, T: int, tp: int) -> dict | None:
    """The drafter's part of the dummy run at each band end (``kvplan.budget.drafter.drafter_phase``: the value on
    the custom-op path's factor, the high end on the native graph's) for an EAGLE-style / MTP drafter with a
    measured row, else None. The factor: the drafter's own measured row where the goldens ran this checkpoint (an
    MTP layer: its target's), else the largest of its kind (``kvplan.budget.profile.drafter_factors``), measured
    at TP 1. ``weights``: the layout's weights as the model stage counted them (``layout_weights``)."""
    from kvplan.budget.drafter import drafter_phase
    from kvplan.budget.profile import drafter_factors

    method = getattr(layout, "speculative_method", None)
    if method not in ("eagle", "eagle3", "mtp") or not _num_speculative(layout):
        return None
    dbytes = dtype_size_bytes(layout.target.dtype)
    rule = drafter_rule_bytes_per_token(layout, weights, tp=tp, dtype_bytes=dbytes)
    info = layout.drafter or layout.target
    row = drafter_factors(release, method, Path(info.source.model_id).name)
    if not rule or row is None:
        return None
    target = int(layout.target.text_config.get("hidden_size") or 0)
    return {end: drafter_phase(row, runner=runner, tokens=T, rule_bytes_per_token=rule,
                               aux_states=aux_hidden_states(layout, weights), target_hidden=target,
                               draft_hidden=int(info.text_config.get("hidden_size") or 0), dtype_bytes=dbytes,
                               mtp=method == "mtp", end=end) for end in ("value", "high")}


def drafter_rule_bytes_per_token(layout, weights, *, tp: int, dtype_bytes: int = 2) -> int:
    """kvplan's rule for the drafter's forward per token on one TP rank, before the release's factor: an EAGLE /
    EAGLE-3 head's ``(4·H + 3·I/tp + H·[tp > 1])·a`` (its own width ``H`` and widest MLP ``I``: the gate and up
    projections' ``2I`` beside the activation's ``I``, as the target's dense rule), the target's own forward rule for
    an MTP layer (one decoder layer of the target's shapes: ``forward_rule_bytes_per_token`` on the target's
    weights). 0 where the layout has no such drafter. ``weights``: ``layout_weights(layout)``."""
    if layout.drafter is None:
        if getattr(layout, "speculative_method", None) != "mtp":
            return 0
        return forward_rule_bytes_per_token(weights.target, layout.target.text_config, dtype_bytes, tp=tp)
    hidden = int(layout.drafter.text_config.get("hidden_size") or 0)
    inter = max((w.rank_shape(tp)[1] for w in weights.drafter.weights if ".mlp.down_proj" in w.name), default=0)
    return (4 * hidden + 3 * inter + (hidden if tp > 1 else 0)) * dtype_bytes


def aux_hidden_states(layout, weights) -> int:
    """How many ``[T, target hidden]`` auxiliary states an EAGLE-3 head takes from the target (its ``fc``'s input
    over the target's hidden size, ``eagle_aux_hidden_state_layer_ids`` or 3: llama_eagle3.py 0.34.0 lines
    209-221), 0 for any other drafter. ``weights``: ``layout_weights(layout)``."""
    if getattr(layout, "speculative_method", None) != "eagle3" or layout.drafter is None:
        return 0
    target = int(layout.target.text_config.get("hidden_size") or 0)
    fc = next((w for w in weights.drafter.weights if w.name == "model.fc.weight"), None)
    return fc.rank_shape(1)[1] // target if fc is not None and target else 0


def _architecture(config: dict) -> str:
    """The model's architecture as its config names it (``architectures[0]``), "" where it names none."""
    archs = config.get("architectures") or [""]
    return str(archs[0]) if isinstance(archs, list) and archs else ""


# the V2 runner's speculators built on AutoRegressiveSpeculator (v1/worker/gpu/spec_decode: EagleSpeculator,
# MTPSpeculator, 0.29.0-0.34.0), whose buffers the table's ``speculative`` fit (an EAGLE-3 drafter) stands for
AUTOREGRESSIVE_METHODS = ("eagle", "eagle3", "mtp")


def _num_speculative(layout) -> int:
    """The deployment's num_speculative_tokens (0 without a drafter)."""
    return int(getattr(layout, "num_speculative_tokens", 0) or 0)


def _speculator(layout) -> tuple[int, int]:
    """``(num_speculative_tokens, draft hidden size × dtype bytes)`` of an autoregressive drafter (the drafter's
    config, or the target's for MTP, whose head has the target's width), else ``(0, 0)``."""
    k = _num_speculative(layout)
    if not k or getattr(layout, "speculative_method", None) not in AUTOREGRESSIVE_METHODS:
        return 0, 0
    info = layout.drafter or layout.target
    return k, int(info.text_config.get("hidden_size") or 0) * dtype_size_bytes(layout.target.dtype)


def _graphs(release: str, card: GpuCard, *, T: int, R: int, layout, request: BudgetRequest) -> int:
    """The CUDA graphs a rank captures by the release's rule (``kvplan.budget.cudagraph``): its default, or the
    capture sizes the request gives (``--max-cudagraph-capture-size``, ``--cudagraph-capture-sizes``), under the mode
    it resolves (``--optimization-level``, ``--compilation-config``'s cudagraph_mode: -O0 none, -O1 piecewise only)."""
    from kvplan.budget.cudagraph import capture_sizes, graph_count, resolved_mode

    spec = _num_speculative(layout)
    sizes = capture_sizes(release, max_num_seqs=R, max_num_batched_tokens=T, num_speculative_tokens=spec,
                          architecture=_architecture(layout.target.config),
                          compute_capability=card.compute_capability,
                          max_cudagraph_capture_size=request.max_cudagraph_capture_size,
                          cudagraph_capture_sizes=request.cudagraph_capture_sizes,
                          performance_mode=request.performance_mode)
    mode = resolved_mode(release, optimization_level=request.optimization_level, cudagraph_mode=request.cudagraph_mode)
    return graph_count(release, sizes, max_num_seqs=R, num_speculative_tokens=spec, mode=mode)


def _release(era) -> str:
    """The release an era stands for, read from its fields (the budget calls nothing in the engines)."""
    return era.release or (era.releases[-1] if era.releases else era.first_release)


def redundant_experts(era, request: BudgetRequest, layout) -> int:
    """EPLB's redundant experts per MoE layer: as given, else the release's default: 0 up to 0.33
    (``EPLBConfig.num_redundant_experts = 0``, config/parallel.py 0.19.0 line 66), from 0.34 with --enable-eplb the
    fewest that make the physical experts divide the EP ranks (``compute_eplb_num_redundant_experts``, 0.34.0
    lines 652-676: ``(ep - E % ep) % ep`` over ep = tp × dp)."""
    from kvplan.budget.profile import MOE_KEYS

    if not request.enable_eplb:
        return 0
    if request.num_redundant_experts is not None:
        return request.num_redundant_experts
    if version_key(_release(era)) < (0, 34):
        return 0
    cfg = layout.target.text_config
    experts = next((int(cfg[k]) for k in MOE_KEYS if int(cfg.get(k) or 0) > 1), 0)
    ep = layout.tensor_parallel_size * request.data_parallel_size
    return (ep - experts % ep) % ep if experts else 0


def _budget_warnings(e: _Estimate, request: BudgetRequest, stage: BudgetStage, failed_load: LoadFailure | None,
                     requested: int) -> list[str]:
    """The budget's warnings: the card's figure, pipeline stages, a failure before the KV cache or no room for it,
    the extensible sizing's, and the weights count's notes."""
    name, total, util, b = e.card.name, e.card.memory_bytes, e.util, request.budget
    warnings: list[str] = []
    if e.card.memory_basis not in (None, "cuda"):
        warnings.append(f"preset {name}: the nvidia-smi total (no printout of the CUDA figure found); CUDA reports "
                        "~0.5 GiB less: pass --gpu-memory with the total vLLM logs for an exact budget")
    if e.pp > 1:
        warnings.append(
            f"pipeline parallel: each stage has its own budget (smallest: stage {stage.stage}); each "
            "stage's pool is sized from its own, then vLLM keeps the smallest num_blocks"
        )
    if failed_load is not None:
        warnings.append(f"vLLM fails before the KV cache ({failed_load.stage}): {failed_load.message}")
    elif stage.kv_cache_memory_bytes <= 0:
        terms = "weights, activation, non-torch and CUDA-graph memory" + (
            ", the start-up memory and the sizing margin" if e.extensible else "")
        warnings.append(
            f"no memory left for the KV cache: {requested / GiB:.2f} GiB usable "
            f"({total / GiB:.2f} GiB × {util:g}) minus {terms} "
            f"is {stage.kv_cache_memory_bytes / GiB:.2f} GiB"
        )
    if e.extensible:
        warnings += _extensible_warnings(stage, total=total, util=util, util_given=b.gpu_memory_utilization,
                                         startup=e.startup, kv_transfer_config=request.kv_transfer_config,
                                         mode_default=b.enable_extensible_kv_cache is None)
    if e.weights is not None and e.weights.basis != CHECKPOINT_METADATA:  # the metadata counts the tower
        warnings += [n for n in e.weights.notes if n.startswith(WARNING_NOTES)]
    return warnings


def _weights_source(e: _Estimate, cpu_offload_gb: float | None) -> str:
    if e.over.weights is not None:
        return "override"
    counted = ("checkpoint metadata" if e.weights is not None and e.weights.basis == CHECKPOINT_METADATA
               else "meta-device count" if e.exact else "analytic count from the config")
    lora = e.lora_cost(0)
    return (counted + (f", minus --cpu-offload-gb {cpu_offload_gb:g}" if e.offload else "")
            + (f", with --enable-lora's slots and punica buffers ({lora.total_bytes:,} B on the first stage, the "
               "lora term)" if lora is not None else ""))


def kv_budget(layout, era, request: BudgetRequest) -> Budget:
    """The KV-cache budget per GPU for ``layout`` on a card, as vLLM would derive it, for the budget stage's
    ``request`` (``kvplan.budget.request.BudgetRequest``: the deployment's ``BudgetInput`` and the serving facts the
    estimate reads): the card resolved at the edge (``BudgetInput.card``, ``kvplan.budget.hardware.gpu_card``),
    else the one ``gpu`` and ``gpu_memory`` name.

    The MoE experts are split over tp × dp ranks (``data_parallel_size``, ``enable_expert_parallel``),
    ``quantization`` is ``--quantization``, ``cpu_offload_gb`` the weights moved to CPU memory per GPU
    (``--cpu-offload-gb``: vLLM moves whole parameters until that many GiB are on the CPU; kvplan subtracts the
    amount, at most the stage's weights). The override sizes (``weights_memory``, ``activation_memory``,
    ``non_torch_memory``, ``cudagraph_memory``, ``startup_memory``: bytes or "16GiB") replace their estimates.
    The tensor-parallel size is the layout's. ``enable_extensible_kv_cache`` (None = the era's default) and
    ``num_gpu_blocks_override`` pick the sizing mode (``kvplan.budget.sizing``).
    Returns a ``Budget`` record (integer bytes; ``kvplan.results.to_data`` keeps the key order);
    ``kv_cache_memory_bytes`` is the smallest stage's budget and may be ≤ 0 (vLLM then fails to start).
    """
    e = _estimate(layout, era, request)
    b, o, name, total = request.budget, e.over, e.card.name, e.card.memory_bytes
    mode_source = sizing.kv_cache_sizing(era, b.enable_extensible_kv_cache,
                                         num_gpu_blocks_override=request.num_gpu_blocks_override)[1]
    util_source = sizing.resolve_gpu_memory_utilization(era, b.gpu_memory_utilization, e.mode)[1]
    per_stage = [e.stage(s, a, z) for s, (a, z) in enumerate(layout.pp_bounds)]
    stages = [st for st, _, _, _ in per_stage]
    budget_stage = min(stages, key=lambda st: st.kv_cache_memory_bytes)
    # the load and the profile run happen before the KV cache, whatever the sizing mode
    load_startup = o.startup if o.startup is not None else estimate_startup_bytes(e.tp * e.pp)
    failed_low = load_failure([p for _, _, p, _ in per_stage], total=total, startup=load_startup, pp=e.pp)
    # the warm-up after the KV cache (profiled sizing): the 1 − utilization headroom, less the start-up memory, must
    # hold the graphs vLLM did not subtract and the sampler's warm-up pass, at the pessimistic end (every stage)
    need = headroom = None
    if not e.extensible:
        headroom = total - sizing.requested_memory(total, e.util) - (
            o.startup if o.startup is not None else startup_high(e.tp, e.pp, load_startup))
        need = max(t["warmup"]["graphs"] + t["warmup"]["fragmentation"] + t["warmup"]["sampler"]
                   for _, _, _, t in per_stage)
    warm_fails = failed_low is None and need is not None and need > headroom
    band = BudgetBand(kv_cache_memory_low_bytes=min(ends[0] for _, ends, _, _ in per_stage),
                      starts_at_low=False if failed_low is not None or warm_fails else None,
                      failure_at_low=failed_low.stage if failed_low is not None else WARMUP if warm_fails else None,
                      kv_cache_memory_high_bytes=min(ends[1] for _, ends, _, _ in per_stage),
                      warmup_need_bytes=need, warmup_headroom_bytes=headroom,
                      basis="every estimated term at its high end (low) and its low end (high): " + ", ".join(
                          f"{k} {v}" for k, v in (
                              ("weights", "±1 %"), ("sampler", e.sampler["basis"]),
                              ("forward", f"{e.forward['basis']} ({e.forward.get('row', e.forward['family'])} row, "
                                          f"{e.forward['value']:g}-{e.forward['high']:g}× the rule)"),
                              ("non-torch", _non_torch_basis(e.tp, e.pp, name, e.release)),
                              ("CUDA graphs", e.graph_basis))) + (
                          f"; after the KV cache, the V2 runner's warm-up pass {e.warmup_pass['bytes']:,} B "
                          f"({e.warmup_pass['basis']}: {e.warmup_pass['source']})" if e.warmup_pass else ""))
    requested = sizing.requested_memory(total, e.util)
    failed_load = load_failure(stages, total=total, startup=load_startup, pp=e.pp)
    warnings = _budget_warnings(e, request, budget_stage, failed_load, requested)

    def src(over, what):
        return "override" if over is not None else what

    terms = profile_terms(layout, era, T=e.T, R=e.R, exact=e.exact, offload=bool(e.offload), overrides={
        "weights": o.weights, "activation": o.activation, "non_torch": o.non_torch, "cudagraph": o.cudagraph},
        stage=budget_stage, weights=e.weights, encoder=e.encoder, encoder_why=e.encoder_why, sampler=e.sampler,
        forward=e.forward, ends=per_stage[budget_stage.stage][3], tp=e.tp, pp=e.pp, card_name=name, release=e.release)

    terms += consumer_terms(e, budget_stage.stage)
    bases = {f"{t.term}_basis": f"{t.basis}: {t.source}" if t.basis != OVERRIDE else OVERRIDE
             for t in terms if t.term in BASIS_TERMS}
    weights, extensible = e.weights, e.extensible
    return Budget(
        gpu=name,
        gpu_memory_bytes=total,
        gpu_memory_source=e.card.memory_source,
        kv_cache_sizing=e.mode,
        kv_cache_sizing_source=mode_source,
        gpu_memory_utilization=e.util,
        gpu_memory_utilization_source=util_source,
        requested_memory_bytes=requested,
        tensor_parallel_size=e.tp,
        pipeline_parallel_size=e.pp,
        weights_bytes=budget_stage.weights_bytes,
        weights_source=_weights_source(e, b.cpu_offload_gb),
        activation_peak_bytes=budget_stage.activation_peak_bytes,
        activation_source=src(o.activation, "estimate"),
        non_torch_bytes=budget_stage.non_torch_bytes,
        non_torch_source=src(o.non_torch, "estimate"),
        cudagraph_bytes=budget_stage.cudagraph_bytes,
        cudagraph_source=src(o.cudagraph, "estimate" if subtracts_cudagraph_memory(era)
                             else f"not subtracted by {era.name}"),
        cudagraph_resident_bytes=budget_stage.cudagraph_resident_bytes,
        startup_memory_bytes=e.startup if extensible else None,
        startup_memory_source=(src(o.startup, "estimate") if extensible
                               else "not subtracted by the profiled sizing"),
        sizing_margin_floor_bytes=e.margin_floor if extensible else None,
        tentative_kv_cache_memory_bytes=budget_stage.tentative_kv_cache_memory_bytes,
        transient_reserve_bytes=budget_stage.transient_reserve_bytes,
        sizing_margin_bytes=budget_stage.sizing_margin_bytes,
        measured_kv_cache_memory_bytes=budget_stage.measured_kv_cache_memory_bytes,
        kv_cache_memory_bytes=budget_stage.kv_cache_memory_bytes,
        load_startup_memory_bytes=load_startup,
        load_failure=failed_load,
        kv_room_bytes=physical_kv_room(stages, total=total, startup=load_startup),
        estimated=True,
        stages=tuple(stages),
        weights=None if weights is None else BudgetWeights(
            num_params=weights.num_params,
            num_params_by_kind=weights.num_params_by_kind,
            num_params_per_rank=tuple(st.num_params for st in weights.stages),
            dtype=weights.dtype,
            quantization=weights.quantization,
            bytes_by_kind=weights.stages[budget_stage.stage].bytes_by_kind,
            notes=tuple(weights.notes),
        ),
        max_num_batched_tokens=e.T,
        max_num_seqs=e.R,
        **bases,
        profile_terms=terms,
        band=band,
        formula=sizing.FORMULAS[e.mode],
        formula_source=sizing.formula_source(era, e.mode),
        warnings=tuple(warnings),
    )


# How sure each term of the profile is: the weights from the checkpoint's own metadata or kvplan's per-tensor
# formula; kvplan's estimate (a rule of kvplan's, checked against few logs); the user's override; a term the
# release does not count; a term vLLM counts and kvplan does not estimate. No term is vLLM's own figure: vLLM
# measures each one on the card ("Model loading took", the profile's peaks).
KVPLAN_FORMULA, KVPLAN_ESTIMATE, OVERRIDE, NOT_COUNTED, NOT_ESTIMATED = (
    "kvplan's formula estimate", "kvplan's estimate", "override", "not counted", "not estimated")


def _non_torch_basis(tp: int, pp: int, card_name: str | None = None, release: str | None = None) -> str:
    g = calibrated(tp, pp, card_name, release)
    return ASSUMED if g is None else f"{CALIBRATED} on {g['n']} start-ups"


DERIVED, CALIBRATED, ASSUMED = "derived", "calibrated", "assumed"


def profile_terms(layout, era, *, T: int, R: int, exact: bool, offload: bool, overrides: dict, stage: BudgetStage,
                  weights=None, encoder: dict | None = None, encoder_why: str = "", sampler: dict | None = None,
                  forward: dict | None = None, ends: dict | None = None, tp: int = 1, pp: int = 1,
                  card_name: str | None = None, release: str | None = None) -> tuple[ProfileTerm, ...]:
    """The non-KV terms of vLLM's profile on the budget's stage, each with its basis (how sure it is) and its
    source (``ProfileTerm``). The release's code behind each: ``determine_available_memory``
    (v1/worker/gpu_worker.py) subtracts the weights ('Model loading took'), the torch peak of ``profile_run`` over
    the dummy batch, the non-torch memory it measures and, where the release estimates them, the CUDA graphs."""
    release = getattr(era, "release", "") or era.name
    counted = subtracts_cudagraph_memory(era)
    ends = ends or {}
    graphs = ends.get("graphs") or {}
    g = calibrated(tp, pp, card_name, release)
    weights_basis, weights_src = _weights_term_source(weights, exact, offload, stage.stage)
    acted = overrides["activation"] is None
    terms = [
        ("weights", stage.weights_bytes, overrides["weights"], weights_basis, weights_src),
        ("activation", stage.activation_peak_bytes - (stage.encoder_profile_bytes or 0), overrides["activation"],
         KVPLAN_ESTIMATE, _activation_source(T, R, tp, pp, sampler if acted else None, forward if acted else None,
                                             bool(ends.get("sampler_peak")), per_rank=acted,
                                             drafter_peak=bool(ends.get("drafter_peak")))
         + (f"; {ends['moe_held'][1]}" if acted and (ends.get("moe_held") or (0, ""))[1] else "")
         + (_drafter_source(ends["drafter"], bool(ends.get("drafter_peak"))) if acted and ends.get("drafter") else "")),
        ("non_torch", stage.non_torch_bytes, overrides["non_torch"], KVPLAN_ESTIMATE, _non_torch_source(g)),
        ("cudagraph", stage.cudagraph_bytes, overrides["cudagraph"], KVPLAN_ESTIMATE if counted else NOT_COUNTED,
         _cudagraph_source(release, counted, graphs)),
    ]
    derivation = {"weights": DERIVED, "activation": _activation_derivation(ends, sampler, forward),
                  "non_torch": CALIBRATED if g is not None else ASSUMED,
                  "cudagraph": (graphs.get("estimate", {}).get("basis", ASSUMED)) if counted else NOT_COUNTED}
    out = []
    for t, b, over, basis, source in terms:
        lo, hi = ends.get(t, (b, b)) if over is None else (b, b)
        out.append(ProfileTerm(t, b, OVERRIDE if over is not None else basis, "override" if over is not None
                               else source, derivation=OVERRIDE if over is not None else derivation[t],
                               low_bytes=lo, high_bytes=hi))
    if isinstance(layout.target.config.get("vision_config"), dict):
        out.append(_encoder_term(stage, encoder, encoder_why, ends, acted))
    return tuple(out)


def _weights_term_source(weights, exact: bool, offload: bool, s: int = 0) -> tuple[str, str]:
    """The weights term's basis and source: the checkpoint's metadata, else kvplan's count; the rotary tables of
    stage ``s`` said where counted."""
    rotary = weights.stages[s].bytes_by_kind.get("rotary", 0) if weights is not None else 0
    tables = f" + the rotary cos/sin tables every rank holds ({rotary:,} B: kvplan.budget.rotary)" if rotary else ""
    if weights is not None and weights.basis == CHECKPOINT_METADATA:
        basis, src = CHECKPOINT_METADATA, weights.basis_detail + tables
    else:
        basis = KVPLAN_FORMULA
        src = ("the meta-device count (transformers), by kvplan's per-rank rules" if exact else
               "kvplan's per-tensor formula from the config (shapes, dtype, quantization, TP/PP sharding)") + tables
        if weights is not None and weights.basis_detail:
            src += "; " + weights.basis_detail
    return basis, src + (", minus --cpu-offload-gb" if offload else "")


def _activation_source(T: int, R: int, tp: int, pp: int, sampler: dict | None, forward: dict | None,
                       sampler_peak: bool, *, per_rank: bool, drafter_peak: bool = False) -> str:
    """The activation term's source: kvplan's rule, with the per-rank, sampler and forward facts that fill it
    (``sampler`` / ``forward`` None where the activation is an override)."""
    src = (f"torch peak of vLLM's profile_run: one forward of {T:,} dummy tokens (max_num_batched_tokens), then the "
           f"sampler over {min(R, T):,} dummy requests (max_num_seqs); kvplan's rule max(T·(4H + W)·a, R·V·8) "
           "+ 256 MiB (kvplan/budget/estimate.py)")
    if (tp > 1 or pp > 1) and per_rank:  # the per-rank rule (forward_rule_bytes_per_token)
        src = (src.replace("(4H + W)", "(4H + W + H·[tp > 1] + H·[later PP stage])")
               + f"; per rank at TP {tp} / PP {pp}: W at the rank's shapes, the all-reduce's output beside its "
               "input, a later stage's two intermediate-tensor buffers (held under its sampler too), the "
               "logits' all-gather R·V·(2 + 1/tp)·a at least (every TP rank samples)")
    if sampler is not None:
        row = sampler["row"]
        src = src.replace("R·V·8", f"R·V·{row['bytes_per_logit']:g} + T·H·a") + (
            f"; the sampler pass {sampler['value']:,} B ({sampler['basis']}: {sampler['source']}, "
            f"{row['bytes_per_logit']:g} B per logit on the {row['topk_topp_path']} path"
            f"{', Triton top-k/top-p' if row['triton'] else ''}; band {row['bytes_per_logit_low']:g}-"
            f"{row['bytes_per_logit_high']:g} B per logit)")
    if forward is not None:
        src = (src.replace("max(T·(4H", f"max({forward['value']:g}·T·(4H")
               + f"; the forward: {forward['basis']}: {forward['source']}, band to {forward['high']:g}× "
               "(the unfused native graph); peak "
               + ("the sampler" if sampler_peak else "the drafter" if drafter_peak else "the forward"))
    return src


def _drafter_source(d: dict, peak: bool) -> str:
    """The activation source's part for the drafter's forward in the dummy run (``kvplan.budget.drafter``)."""
    combine = (f", after the V2 speculator's EAGLE-3 combination (peak {d['combine_bytes']:,} B: the [T, k·H_target] "
               f"concatenation beside the fc's output, which it keeps)" if d["combine_bytes"] else "")
    return (f"; the drafter's forward in the dummy run: {d['forward_bytes']:,} B (T·{d['rule_bytes_per_token']:,}·"
            f"{d['factor']:g}; {d['basis']}: {d['source']}){combine}, beside the target's hidden states"
            + (f" and its {d['aux_states']} EAGLE-3 aux states" if d["aux_states"] else "")
            + (" (the peak)" if peak else " (below the peak)"))


def _activation_derivation(ends: dict, sampler: dict | None, forward: dict | None) -> str:
    """Derived when the term at the peak (the sampler pass, the forward or the drafter's forward) has a golden,
    else assumed."""
    if ends.get("drafter_peak") and ends.get("drafter"):
        return DERIVED if ends["drafter"]["basis"] == DERIVED else ASSUMED
    if ends.get("sampler_peak"):
        return DERIVED if sampler is None or sampler["basis"] == DERIVED else ASSUMED
    return DERIVED if forward is not None and forward["basis"] == DERIVED else ASSUMED


def _non_torch_source(g: dict | None) -> str:
    """The non-torch term's source: its calibration group, else kvplan's assumed constants."""
    if g is None:
        return ("memory outside torch's allocator (CUDA context, cuBLAS, NCCL) that vLLM measures at profiling; "
                "kvplan's 0.25 GiB on one GPU, 0.75 GiB when tp·pp > 1")
    return (f"calibrated on {g['n']} start-ups ({g['group']}: {g['cases']}) of the calibration half of "
            f"tests/logs/budget: what vLLM's logged KV memory leaves beside kvplan's other terms, median "
            f"{g['value_bytes'] / GiB:.2f} GiB, spread {g['low_bytes'] / GiB:.2f} to "
            f"{g['high_bytes'] / GiB:.2f} GiB" + (
                f", fewer than 3 start-ups: {g['widened_by']}'s value, the band widened to cover both"
                if g.get("widened_by") else "") + " (scripts/calibrate_budget.py); a compiled start-up's first boot "
            "with an empty torch.compile cache is held only as far as this spread: vLLM charges the compile's scratch "
            "on the card to the profile's peak (its issues #54122, #54383), which no CPU run measures")


def _cudagraph_source(release: str, counted: bool, graphs: dict) -> str:
    """The CUDA-graph term's source: subtracted by the release's profile, or captured in the headroom after."""
    if counted:
        return (f"vLLM {release} subtracts its CUDA-graph estimate (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, "
                f"gpu_worker.py determine_available_memory); not derived ({CUDAGRAPH_REASON}): "
                + graphs.get("estimate", {}).get("source", ""))
    return (f"vLLM {release} captures the graphs after sizing the KV cache: they use the 1 − utilization headroom "
            f"(checked at the band's pessimistic end with the sampler warm-up); "
            + graphs.get("actual", {}).get("source", ""))


def _encoder_term(stage: BudgetStage, encoder: dict | None, encoder_why: str, ends: dict,
                  acted: bool) -> ProfileTerm:
    """A multimodal model's encoder_cache term on this stage: skipped (limits 0), estimated, on a later stage
    (none), or not estimated (no dummy rule for the architecture)."""
    if encoder is not None and encoder["items"] == 0:
        return ProfileTerm("encoder_cache", 0, KVPLAN_ESTIMATE, derivation=DERIVED, source=
                           "multimodal: every modality's limit is 0 (--language-model-only or "
                           "--limit-mm-per-prompt): vLLM's profile_run skips the encoder's dummy pass and the "
                           "encoder cache (MultiModalBudget: no tower modality, encoder budget 0)")
    if stage.encoder_profile_bytes is not None and encoder is not None:
        e = encoder
        return ProfileTerm(
            "encoder_cache", stage.encoder_profile_bytes, KVPLAN_ESTIMATE, derivation=e.get("basis", ASSUMED), source=
            f"multimodal: vLLM's profile_run encodes {e['items']} dummy {e['modality']} item(s) of "
            f"{e['tokens_per_item']:,} tokens ({e['encoder_tokens']:,} patches through the vision "
            f"tower: {e['forward_bytes']:,} B; {e.get('source', 'kvplan activation rule')}) and keeps their outputs "
            f"({e['cache_bytes']:,} B) cached under the text forward; the peak's rise over the text "
            "decoder's, max(encoder, cache + text) (kvplan/budget/encoder.py estimate_encoder_profile)",
            low_bytes=ends.get("encoder_cache", (0, 0))[0], high_bytes=ends.get("encoder_cache", (0, 0))[1])
    if acted and stage.stage > 0 and encoder is not None:
        return ProfileTerm("encoder_cache", 0, KVPLAN_ESTIMATE, derivation=ASSUMED, source=
                           "multimodal: the encoder's dummy batch runs on the first pipeline stage only")
    return ProfileTerm(
        "encoder_cache", None, NOT_ESTIMATED, derivation=NOT_ESTIMATED, source=
        "multimodal: vLLM's profile_run also encodes the largest dummy images/videos for the "
        "encoder cache before the text forward; kvplan's activation covers the text "
        "decoder only, so the KV budget may be high by that peak"
        + (f" ({encoder_why})" if encoder_why else ""))


# the terms with a *_basis field of Budget
BASIS_TERMS = ("weights", "activation", "non_torch", "cudagraph", "encoder_cache")


def consumer_terms(e: _Estimate, s: int) -> tuple[ProfileTerm, ...]:
    """The other consumers vLLM's load_model adds on stage ``s``, listed on their own: LoRA's slots and punica
    buffers (inside 'Model loading took', so inside the weights term's bytes), EPLB's expert buffer (after it,
    inside the activation term's)."""
    release = e.release
    out = []
    if e.lora is not None and e.over.weights is not None:
        out.append(ProfileTerm("lora", None, OVERRIDE, "inside --weights-memory", derivation=OVERRIDE))
    cost = e.lora_cost(s) if e.over.weights is None else None
    if cost is not None:
        from kvplan.budget.lora import class_support, punica_row

        supports = class_support(_architecture(e.layout.target.config), release)[0]
        own = punica_row(release)[1]
        src = (f"--enable-lora at max_loras {e.lora.max_loras}, max_lora_rank {e.lora.max_lora_rank}: "
               f"{cost.slot_bytes:,} B of adapter slots over {cost.num_slices} lora_a/lora_b pairs"
               + (" (embeddings and lm_head included)" if cost.embeddings else " (the class does not wrap its "
                  "embeddings in this release)")
               + (f", {cost.vocab_weight_bytes:,} B of the extra LoRA vocabulary in the embedding and lm_head"
                  if cost.vocab_weight_bytes else "")
               + f", {cost.punica_bytes:,} B of punica buffers (vLLM {cost.punica_from}'s golden"
               + ("" if own else ", the nearest golden release") + "); the rule of kvplan/budget/lora.py, checked "
               "byte for byte against the release's own load_lora_model run on the meta device (tests/golden/"
               "profile_terms/lora); inside the weights term, as vLLM's 'Model loading took' counts it")
        if cost.not_counted:
            src += "; not counted: " + ", ".join(cost.not_counted)
        if supports is None:
            src += ("; the architecture is not in the release's model files under this name "
                    "(lora_modules.json): its embeddings are counted as not wrapped")
        out.append(ProfileTerm("lora", cost.total_bytes, KVPLAN_FORMULA, src,
                               derivation=DERIVED if not cost.not_counted and supports is not None else ASSUMED,
                               low_bytes=cost.total_bytes, high_bytes=cost.total_bytes))
    if e.eplb and e.over.activation is not None:
        out.append(ProfileTerm("eplb", None, OVERRIDE, "inside --activation-memory", derivation=OVERRIDE))
    elif e.eplb:
        buf = e.eplb_buffer(s)
        out.append(ProfileTerm(
            "eplb", buf, KVPLAN_FORMULA,
            f"--enable-eplb: {e.redundant_experts} redundant experts per MoE layer, placed with the logical ones "
            "over the tp × dp EP ranks (counted in the weights: rank 0 holds ceil((E + redundant) / ranks) experts, "
            "fused_moe/layer.py determine_expert_map), and EPLB's buffer of one MoE layer's local experts "
            f"({buf:,} B: distributed/eplb/eplb_state.py, from 0.12; the 0.20+ communicators other than the "
            "default may own another buffer, not counted), allocated after 'Model loading took' and held under the "
            "profile run: inside the activation term",
            derivation=DERIVED, low_bytes=buf, high_bytes=buf))
    return tuple(out)


def stage_kv_bytes(mode: str, stage: BudgetStage, *, total: int, utilization: float, startup: int = 0,
                   margin_floor: int = sizing.MARGIN_FLOOR_BYTES) -> dict:
    """``kvplan.budget.sizing.stage_kv_cache_bytes`` on one stage of a budget."""
    return sizing.stage_kv_cache_bytes(
        mode, total=total, utilization=utilization, weights=stage.weights_bytes,
        activation=stage.activation_peak_bytes, non_torch=stage.non_torch_bytes,
        cudagraph=stage.cudagraph_bytes, startup=startup, margin_floor=margin_floor,
        cudagraph_resident=stage.cudagraph_resident_bytes)


def kv_bytes_at(budget: Budget, utilization: float) -> int:
    """The KV bytes per GPU of a ``kv_budget`` result at another ``utilization``, by its sizing
    mode: the smallest over the stages."""
    mode = budget.kv_cache_sizing
    extensible = mode == sizing.EXTENSIBLE
    return min(stage_kv_bytes(mode, st, total=budget.gpu_memory_bytes, utilization=utilization,
                              startup=(budget.startup_memory_bytes or 0) if extensible else 0,
                              margin_floor=budget.sizing_margin_floor_bytes
                              if extensible and budget.sizing_margin_floor_bytes is not None
                              else sizing.MARGIN_FLOOR_BYTES)["kv_cache_memory_bytes"]
               for st in budget.stages)


# the connectors whose class does not override kv_cache_access in vLLM 0.34.0 (read in kv_connector/v1/)
IN_PROCESS_CONNECTORS = frozenset({"OffloadingConnector", "SimpleCPUOffloadConnector"})


def _extensible_warnings(stage: BudgetStage, *, total: int, util: float, util_given: float | None, startup: int,
                         kv_transfer_config: dict | None, mode_default: bool) -> list[str]:
    out = []
    if util_given is not None and 0.7 < util < 1.0:
        withheld = sizing.withheld_by_utilization(
            total=total, utilization=util, startup=startup,
            used=stage.weights_bytes + stage.non_torch_bytes + (stage.cudagraph_resident_bytes or 0),
            margin=stage.sizing_margin_bytes or 0)
        if withheld >= GiB:
            out.append(f"--gpu-memory-utilization {util:g} keeps {withheld / GiB:.2f} GiB of free memory out of the "
                       "extensible KV cache, which measures vLLM's own use after warmup; vLLM 0.34.0 warns so too. "
                       "Leave it unset unless other processes or buffers vLLM does not see need the room")
    # connectors that keep the base class's kv_cache_access (IN_PROCESS: 0.34.0 kv_connector/v1/base.py:206-213)
    # leave the extensible KV cache as it is; the offloading connectors are among them
    in_process = str((kv_transfer_config or {}).get("kv_connector")) in IN_PROCESS_CONNECTORS
    if kv_transfer_config and mode_default and not in_process:
        out.append("--kv-transfer-config: vLLM leaves the extensible KV cache off for some connectors (legacy CUDA "
                   "IPC, a connector memory pool, NIXL without an IMEX channel); kvplan assumes it on: pass "
                   "--no-enable-extensible-kv-cache if vLLM logs that it is off")
    return out
