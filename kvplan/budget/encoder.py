"""The multimodal encoder's part of vLLM's profile run, and which releases load a tower, per vision tower.

vLLM's ``profile_run`` (v1/worker/gpu_model_runner.py, 0.19.0 lines 5720-5779) encodes a dummy batch of the
modality with the most tokens per item and keeps the outputs in the encoder cache while the text dummy forward and
the sampler run, then frees them. Per tower kvplan needs three things, each from the release's code:

* **the dummy batch** (``ENCODER_DUMMIES``: the processor's largest item per modality, from the config where the
  config has it, the processor defaults otherwise, each cited), and how many items the encoder budget holds
  (``encoder_dummy_batch``);
* **the tower's forward peak per patch** over that batch: the release's tower class run on the meta device under a
  memory-tracking dispatch mode (Gemma 4's, whose padding probes are data-dependent, made real on the CPU with random
  weights under the same mode) (``scripts/golden/profile_terms.py --encoder-all``;
  ``tests/golden/profile_terms/encoder/<release>.json``), read from ``kvplan/budget/profile_terms.json`` per
  architecture (``kvplan.budget.profile.encoder_row``). A measured config reproduces its golden exactly
  (``fixed + patches · bytes_per_patch``); another checkpoint of the same tower scales the measured bytes per patch
  by kvplan's tower rule (``encoder_rule_bytes_per_patch``) on its own config over the measured one's;
* **the encoder cache**: the tower's outputs per item as ``embed_multimodal`` returns them (``cache_row_bytes``:
  Qwen3-VL's are the merger's output and its deepstack features side by side).

And whether a release loads the tower at all when every one of its modalities is limited to 0
(``--language-model-only`` / ``--limit-mm-per-prompt``): ``tower_skipped``.

No torch here.
"""

from __future__ import annotations

from pathlib import Path

from kvplan.version import version_key

DERIVED, ASSUMED = "derived", "assumed"
DEFAULT_MM_LIMIT = 999  # vLLM's items per modality per prompt when --limit-mm-per-prompt does not name it

# Gemma 4's video dummy (vLLM 0.19.0 model_executor/models/gemma4_mm.py lines 79-80, the same in 0.34.0 lines
# 137-138): 32 frames, each through the vision tower at max_soft_tokens 70; a video item's tokens are
# 32 · (70 + boi + eoi + 6 timestamp tokens) (get_mm_max_tokens_per_item, 0.19.0 lines 201-216).
GEMMA4_VIDEO_FRAMES, GEMMA4_VIDEO_SOFT_TOKENS, GEMMA4_VIDEO_EXTRA_TOKENS = 32, 70, 2 + 6


def gemma4_encoder_dummy(config: dict, release: str | None = None) -> tuple[list[dict] | None, str]:
    """The dummy items vLLM's profile_run can encode for a Gemma 4 checkpoint, per modality, from its config: a
    video of 32 frames (2,496 tokens) and an image of ``vision_config.default_output_length`` tokens. Each frame's
    pixel values are padded to ``max_patches = 70 · pooling²`` patches (Gemma4ImagePixelInputs), which the tower
    encodes. None (and why) where an input is not in the config: a checkpoint with an audio tower (its tokens per
    item are the processor's ``audio_seq_length``)."""
    vision = config.get("vision_config") or {}
    if config.get("audio_config"):
        return None, "the audio tower's tokens per item are the processor's audio_seq_length, not in the config"
    image = int(vision.get("default_output_length") or 280)
    video = GEMMA4_VIDEO_FRAMES * (GEMMA4_VIDEO_SOFT_TOKENS + GEMMA4_VIDEO_EXTRA_TOKENS)
    pool = int(vision.get("pooling_kernel_size") or 1)
    return [{"modality": "video", "tokens_per_item": video,
             "inputs_per_item": GEMMA4_VIDEO_FRAMES * GEMMA4_VIDEO_SOFT_TOKENS * pool * pool},
            {"modality": "image", "tokens_per_item": image, "inputs_per_item": image * pool * pool}], ""


def gemma3_encoder_dummy(config: dict, release: str | None = None) -> tuple[list[dict] | None, str]:
    """Gemma 3's dummy image: ``mm_tokens_per_image`` (256) tokens (pan-and-scan off by default: one crop,
    ``get_num_image_tokens`` = (crops + 1) · image_seq_length with 0 crops; vllm 0.34.0
    model_executor/models/gemma3_mm.py lines 198-214), resized to the tower's ``image_size`` (896: (896 / 14)² =
    4,096 patches through SigLIP)."""
    vision = config.get("vision_config") or {}
    per_item = int(config.get("mm_tokens_per_image") or 256)
    patches = (int(vision.get("image_size") or 896) // int(vision.get("patch_size") or 14)) ** 2
    return [{"modality": "image", "tokens_per_item": per_item, "inputs_per_item": patches}], ""


# Qwen3-VL's processor limits (not in config.json: the checkpoint's preprocessor_config.json and
# video_preprocessor_config.json, ``size.longest_edge``, which vLLM reads through the HF image / video processor;
# Qwen3-VL, Qwen3.5 and Qwen3.6 checkpoints ship 16,777,216 (4,096²) for images and 25,165,824 for videos, with
# patch 16, merge 2, temporal patch 2 as their config.json's vision_config says). kvplan assumes these published
# defaults; a checkpoint or --mm-processor-kwargs that lowers them lowers the dummy.
QWEN3_VL_IMAGE_MAX_PIXELS = 16_777_216
QWEN3_VL_VIDEO_MAX_PIXELS = 25_165_824
# 0.11.0-0.12.0 count a video item's tokens as 12.5 × its soft tokens (timestamps text; 0.11.0
# model_executor/models/qwen3_vl.py line 674, 0.12.0 line 708), which makes the video the modality with the most
# tokens per item
QWEN3_VL_VIDEO_TOKEN_FACTOR_BEFORE_0_13 = 12.5


def qwen3_vl_encoder_dummy(config: dict, release: str | None = None) -> tuple[list[dict] | None, str]:
    """Qwen3-VL's tower (Qwen3-VL, Qwen3-VL-MoE, Qwen3.5, Qwen3.6): the image with the most features
    (``get_image_size_with_most_features``: the merged patches under ``max_pixels`` factorized into a square where
    they are one, 0.34.0 model_executor/models/qwen2_vl.py 1079-1130; 0.11.0 qwen2_vl.py 956-963 resizes a
    9,999,999² image to the same 4,096²): 4,096² / (16 · 2)² = 16,384 tokens, 65,536 patches. The video: its
    frames share the video processor's ``longest_edge`` (``video_smart_resize`` caps frames × height × width), so
    at most 25,165,824 / 2 / 32² = 12,288 tokens, 49,152 patches, whatever the frame count (0.19.0 qwen3_vl.py
    786-812: 2 frames). From 0.13.0 that is fewer than the image's tokens: the image is the dummy (the logs of
    Qwen3.5 / 3.6 at 0.18-0.27: "a budget of 16384 tokens, and profiled with 1 image items"). In 0.11.0-0.12.0
    a video counts 12.5 × its soft tokens (0.12.0 qwen3_vl.py 693-709): 153,600, so the video is the dummy (the
    0.12.0 log tests/logs/budget/63-videocuttingagent-qwen3-vl-30b-a3b-h100-tp2-v0.12.0.log: "a budget of 153600
    tokens, and profiled with 1 video items"), its 49,152 patches and 12,288 embeddings."""
    vision = config.get("vision_config") or {}
    patch, merge = int(vision.get("patch_size") or 16), int(vision.get("spatial_merge_size") or 2)
    temporal = int(vision.get("temporal_patch_size") or 2)
    unit = (patch * merge) ** 2
    image = QWEN3_VL_IMAGE_MAX_PIXELS // unit
    video = QWEN3_VL_VIDEO_MAX_PIXELS // temporal // unit
    items = [{"modality": "image", "tokens_per_item": image, "inputs_per_item": image * merge * merge}]
    if release is not None and version_key(release) < version_key("0.13.0"):
        items.append({"modality": "video", "tokens_per_item": int(video * QWEN3_VL_VIDEO_TOKEN_FACTOR_BEFORE_0_13),
                      "inputs_per_item": video * merge * merge, "embeddings_per_item": video})
    else:
        items.append({"modality": "video", "tokens_per_item": video, "inputs_per_item": video * merge * merge})
    return items, ""


# Llama 4's processor tiles an image into at most ``max_patches`` chunks of image_size² (the checkpoint's
# preprocessor_config.json, not in config.json; transformers' Llama4ImageProcessorFast default 16, image_processing
# _llama4_fast.py line 305, and the Llama-4 checkpoints' value) plus one global chunk when there is more than one.
LLAMA4_MAX_TILES = 16


def llama4_encoder_dummy(config: dict, release: str | None = None) -> tuple[list[dict] | None, str]:
    """Llama 4's dummy image: ``get_image_size_with_most_features`` is 16 tiles high and one wide (0.34.0
    model_executor/models/mllama4.py 562-570), so 16 chunks and the global one: 17 chunks of
    (image_size / patch_size)² patches (336 / 14: 576; the tower adds a class token per chunk), each giving
    ``get_patch_per_chunk`` = 576 // (1 / pixel_shuffle_ratio²) = 144 embeddings (mllama4.py 550-560): 2,448. The
    item's tokens for the encoder budget are its embeddings (0.34.0 multimodal/encoder_budget.py line 38,
    ``get_num_embeds``; the tile separators and image start/end tokens around them are not encoded)."""
    vision = config.get("vision_config") or {}
    size, patch = int(vision.get("image_size") or 336), int(vision.get("patch_size") or 14)
    ratio = float(vision.get("pixel_shuffle_ratio") or 0.5)
    chunks = LLAMA4_MAX_TILES + 1
    patches = (size // patch) ** 2
    embeds = patches // int(round(1.0 / ratio ** 2))
    return [{"modality": "image", "tokens_per_item": chunks * embeds, "inputs_per_item": chunks * patches}], ""


ENCODER_DUMMIES = {"Gemma4ForConditionalGeneration": gemma4_encoder_dummy,
                   "Llama4ForConditionalGeneration": llama4_encoder_dummy,
                   "Gemma3ForConditionalGeneration": gemma3_encoder_dummy,
                   "Qwen3VLForConditionalGeneration": qwen3_vl_encoder_dummy,
                   "Qwen3VLMoeForConditionalGeneration": qwen3_vl_encoder_dummy,
                   "Qwen3_5ForConditionalGeneration": qwen3_vl_encoder_dummy,
                   "Qwen3_5MoeForConditionalGeneration": qwen3_vl_encoder_dummy}

# Architectures that share a tower class (the table is keyed by the architecture measured): the measured
# architectures to try, own first. Qwen3.5 / 3.6 build Qwen3-VL's ``Qwen3_VisionTransformer`` (0.19.0
# model_executor/models/qwen3_5.py imports it from qwen3_vl).
SAME_TOWER = {"Qwen3VLForConditionalGeneration": ("Qwen3VLMoeForConditionalGeneration",
                                                  "Qwen3_5ForConditionalGeneration"),
              "Qwen3VLMoeForConditionalGeneration": ("Qwen3VLMoeForConditionalGeneration",
                                                     "Qwen3_5ForConditionalGeneration"),
              "Qwen3_5ForConditionalGeneration": ("Qwen3_5ForConditionalGeneration",
                                                  "Qwen3VLMoeForConditionalGeneration"),
              "Qwen3_5MoeForConditionalGeneration": ("Qwen3_5ForConditionalGeneration",
                                                     "Qwen3VLMoeForConditionalGeneration")}


def encoder_dummy_batch(candidates: list[dict], T: int, *, max_num_seqs: int | None = None,
                        limits: dict | None = None) -> dict:
    """The batch vLLM's profile_run encodes (``MultiModalBudget``: v1/worker/utils.py ``get_max_items`` in 0.11.0,
    multimodal/encoder_budget.py ``_get_max_items`` in 0.19.0-0.34.0, the same rule): the
    modalities whose limit is above 0, the one with the most tokens per item (``get_modality_with_max_tokens``, ties
    to the larger name); the encoder budget ``max(T, tokens per item)`` (``compute_mm_encoder_budget``,
    v1/core/encoder_cache_manager.py: the compute budget and the cache size both default to
    max_num_batched_tokens) holds ``budget // tokens`` items, and the decoder ``max_num_seqs · max(1, limit)``
    (``_get_max_items``; its other bound, max_model_len // tokens per item, is not applied: it binds only below
    limit × tokens per item). Every limit 0 (``--language-model-only``): no item, the pass is skipped."""
    limits = limits or {}
    active = [c for c in candidates if int(limits.get(c["modality"], DEFAULT_MM_LIMIT)) > 0]
    if not active:
        return {"modality": "none", "items": 0, "tokens_per_item": 0, "encoder_tokens": 0, "embeddings": 0}
    pick = max(active, key=lambda c: (c["tokens_per_item"], c["modality"]))
    per_item = pick["tokens_per_item"]
    items = max(T, per_item) // per_item
    if max_num_seqs is not None:
        items = min(items, max_num_seqs * max(1, int(limits.get(pick["modality"], DEFAULT_MM_LIMIT))))
    items = max(1, items)
    return {"modality": pick["modality"], "items": items, "tokens_per_item": per_item,
            "encoder_tokens": items * pick["inputs_per_item"],
            "embeddings": items * pick.get("embeddings_per_item", per_item)}


def cache_row_bytes(config: dict, text_hidden: int, dtype_bytes: int) -> int:
    """Bytes of one encoder output the cache keeps (one embedding, ``embed_multimodal``'s row): the text hidden
    size; Qwen3-VL's tower returns its merger's output and one deepstack feature per ``deepstack_visual_indexes``
    entry concatenated, each ``out_hidden_size`` wide (0.34.0 qwen3_vl.py ``Qwen3_VisionTransformer.forward``;
    Qwen3-VL-30B-A3B: 2048 · (1 + 3) · 2 = 16,384 B, as its golden's 4,194,304 B per 256 embeddings)."""
    vision = config.get("vision_config") or {}
    if "deepstack_visual_indexes" in vision and vision.get("out_hidden_size"):
        return int(vision["out_hidden_size"]) * (1 + len(vision["deepstack_visual_indexes"] or ())) * dtype_bytes
    return text_hidden * dtype_bytes


def encoder_rule_bytes_per_patch(vision: dict, dtype_bytes: int) -> int:
    """kvplan's activation rule per patch of a vision tower, ``(4·h + W_v)·a``: ``W_v`` the tower's widest per-token
    intermediate (a gated MLP ``3·I``; attention ``(heads + 2·kv)·hd + heads·hd``); the tower is whole on every rank.
    A derived factor per architecture scales it (``tower_bytes``)."""
    h, inter = int(vision["hidden_size"]), int(vision["intermediate_size"])
    heads = int(vision.get("num_attention_heads") or vision["num_heads"])
    kv = int(vision.get("num_key_value_heads") or heads)
    hd = int(vision.get("head_dim") or h // heads)
    return (4 * h + max(3 * inter, (heads + 2 * kv) * hd + heads * hd)) * dtype_bytes


def tower_architectures(architecture: str) -> tuple[str, ...]:
    """The measured architectures whose table row stands for this architecture's tower, own first
    (``SAME_TOWER``; ``kvplan.budget.profile.encoder_row`` reads them)."""
    return SAME_TOWER.get(architecture, (architecture,))


def tower_bytes(row: dict | None, vision: dict, patches: int, dtype_bytes: int) -> int:
    """The tower's forward peak over ``patches`` dummy patches: by a measured row, ``fixed + patches · b`` with
    ``b`` the measured bytes per patch scaled by kvplan's rule on this config over the measured config's (1 on
    the measured config itself: its golden exactly); without a row, kvplan's rule alone."""
    rule = encoder_rule_bytes_per_patch(vision, dtype_bytes)
    if row is None:
        return patches * rule
    return round(row.get("fixed_bytes", 0) + patches * row["bytes_per_patch"] * rule / row["rule_bytes_per_patch"])


def tp_row(row: dict, tp: int) -> tuple[dict, int]:
    """The measured row for rank 0 of a TP group of ``tp`` and the TP size it was measured at: the row's own figures
    at that size where the golden ran it (``--encoder-tp``: the tower's linears split over the group, vLLM's default
    ``mm_encoder_tp_mode`` "weights"), else the largest measured size below it (TP 1: the row itself)."""
    measured = {1: row, **{int(k): {**row, **t} for k, t in (row.get("tp") or {}).items()}}
    at = max(t for t in measured if t <= max(tp, 1))
    return measured[at], at


def estimate_encoder_profile(config: dict, dtype_bytes: int, T: int, text: dict | None = None,
                             release: str | None = None, *, max_num_seqs: int | None = None,
                             limits: dict | None = None, tp: int = 1,
                             row: dict | None = None) -> tuple[dict | None, str]:
    """The multimodal encoder's part of vLLM's profile_run: ``forward_bytes`` = the tower's peak over the dummy
    batch's patches (``encoder_dummy_batch``, ``tower_bytes``), ``cache_bytes`` = the batch's embeddings · their
    row bytes (``cache_row_bytes``). ``limits``: ``--limit-mm-per-prompt`` (every modality 0 with
    ``--language-model-only``). None and why for a multimodal architecture without a dummy rule here.
    ``text``: the text decoder's config (``ModelInfo.text_config``; default: read from ``config``). ``tp``: the
    tensor-parallel size: the row's per-rank figures at that size where measured, else at the largest measured size
    below it (assumed; ``forward_high_bytes`` then the TP 1 figure, the band's pessimistic end; ``tp_row``). ``row``: the release's measured row for
    this tower (``kvplan.budget.profile.encoder_row`` over ``tower_architectures``; None: kvplan's rule alone)."""
    archs = config.get("architectures") or [""]
    arch = archs[0] if isinstance(archs, list) and archs else ""
    rule = ENCODER_DUMMIES.get(arch)
    if rule is None:
        return None, "no rule for this architecture's dummy multimodal batch"
    candidates, why = rule(config, release)
    if candidates is None:
        return None, why
    dummy = encoder_dummy_batch(candidates, T, max_num_seqs=max_num_seqs, limits=limits)
    v = config.get("vision_config") or {}
    if text is None:
        from kvplan.model.limits import text_config

        text = text_config(config)
    text_hidden = int(text.get("hidden_size") or 0)
    if row is None:
        basis, source = ASSUMED, "kvplan's activation rule on the tower (no tower of this family run on the meta device)"
        rank_row, at = None, tp
    else:
        rank_row, at = tp_row(row, tp)
        basis = row["basis"] if at == tp else ASSUMED
        per_patch = rank_row["bytes_per_patch"] * encoder_rule_bytes_per_patch(v, dtype_bytes) / row["rule_bytes_per_patch"]
        where = "the CPU (random weights)" if row.get("run_on") == "cpu" else "the meta device"
        source = (f"vLLM {row['from']}'s {Path(row['model']).parent.name} vision tower run over dummy items on "
                  f"{where}" + ("" if at == 1 else f" on rank 0 of TP {at} (its linears split over the "
                                        "group, mm_encoder_tp_mode 'weights')")
                  + f": {rank_row['bytes_per_patch']:,.0f} B per patch + {rank_row.get('fixed_bytes', 0):,} B"
                  + ("" if round(per_patch) == round(rank_row["bytes_per_patch"]) else
                     f", {per_patch:,.0f} B per patch on this config by kvplan's tower rule")
                  + f" (tests/golden/profile_terms/encoder/{row['from']}.json)"
                  + ("" if row["basis"] == DERIVED else f"; {release or 'this era'}'s own not run ({row['why']})")
                  + ("" if at == tp else f"; TP {tp} not run: assumed TP {at}'s per-rank figure (more ranks split "
                     "the linears further), the TP 1 figure the band's pessimistic end"))
    forward = tower_bytes(rank_row, v, dummy["encoder_tokens"], dtype_bytes) if dummy["items"] else 0
    # the pessimistic end: the TP 1 figure where this TP size was not run (the tower whole on the rank)
    high = forward if at == tp or not dummy["items"] else tower_bytes(row, v, dummy["encoder_tokens"], dtype_bytes)
    return {**{k: dummy[k] for k in ("modality", "items", "tokens_per_item", "encoder_tokens")},
            "forward_bytes": forward, "forward_high_bytes": high,
            "cache_bytes": dummy["embeddings"] * cache_row_bytes(config, text_hidden, dtype_bytes),
            "basis": basis, "measured_tp": at, "source": source}, ""


# Which releases skip a tower's weights when every one of its modalities is limited to 0 (--language-model-only
# sets them all to 0). From 0.15.1 every model marks its towers (``_mark_tower_model``, 0.19.0
# model_executor/models/interfaces.py 249-288: a StageMissingLayer, no weights, when all the tower's modalities'
# limits are 0). Before it only some models test the limit themselves (0.11.0: qwen3_vl.py 1129-1131,
# qwen2_5_vl.py 1011-1012, mistral3.py 440, mllama4.py 738); Gemma 3 and Kimi-VL always load theirs (0.11.0-0.14.1
# gemma3_mm.py, kimi_vl.py: no limit test).
TOWER_MARKED_FROM = "0.15.1"
SKIPS_TOWER_BEFORE_MARKING = frozenset({"Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
                                        "Qwen2_5_VLForConditionalGeneration", "Mistral3ForConditionalGeneration",
                                        "Llama4ForConditionalGeneration"})


# the modalities a tower serves (its ``_mark_tower_model`` set): image and video, or image alone
IMAGE_ONLY_TOWERS = frozenset({"Gemma3ForConditionalGeneration", "Mistral3ForConditionalGeneration",
                               "Llama4ForConditionalGeneration", "KimiVLForConditionalGeneration"})


def tower_skipped(architecture: str, release: str | None, limits: dict | None) -> bool:
    """Whether ``release`` leaves the vision tower's weights out for these per-modality limits (every modality the
    tower serves at 0: --language-model-only, or --limit-mm-per-prompt naming each 0)."""
    limits = limits or {}
    served = ("image",) if architecture in IMAGE_ONLY_TOWERS else ("image", "video")
    if not all(int(limits.get(m, DEFAULT_MM_LIMIT)) == 0 for m in served):
        return False
    if release is None or version_key(release) >= version_key(TOWER_MARKED_FROM):
        return True
    return architecture in SKIPS_TOWER_BEFORE_MARKING


def _vit_blocks(h: int, inter: int, layers: int) -> tuple[int, int]:
    """``layers`` ViT blocks as the three towers below build them: ``(whole on every rank, split over TP)``. Whole:
    two LayerNorms (weight and bias), the row-parallel biases of the attention output and of the MLP's second
    linear; split: the attention's ``qkv (h → 3h, bias)`` and ``o (h → h)`` weights, the MLP's ``fc1 (h → I, bias)``
    and ``fc2 (I → h)`` weights."""
    return layers * (4 * h + h + h), layers * (3 * h * h + 3 * h + h * h + h * inter + inter + inter * h)


def qwen3_vl_tower_params(vision: dict, tp: int = 1, text_hidden: int = 0) -> int:
    """Parameters of Qwen3-VL's ``Qwen3_VisionTransformer`` on one rank, as vLLM builds it (0.34.0
    model_executor/models/qwen3_vl.py 381-640): the patch embedding ``Conv3dLayer(C, h, (t, p, p), bias)`` and the
    position table ``Embedding(P, h)``, replicated; per block two LayerNorms (weight and bias), the attention's
    ``QKVParallelLinear(h, 3h, bias)`` and ``RowParallelLinear(h, h, bias)``, the MLP's ``linear_fc1 (h → I, bias)``
    and ``linear_fc2 (I → h, bias)``; the merger (LayerNorm over h, ``linear_fc1 (H → H)``, ``linear_fc2
    (H → out)``, ``H = h · merge²``) and one deepstack merger per ``deepstack_visual_indexes`` entry (LayerNorm over
    H). Column-parallel weights and biases and row-parallel weights split over ``tp``; a row-parallel bias, the
    norms, the convolution and the table are whole on every rank."""
    h, inter = int(vision["hidden_size"]), int(vision["intermediate_size"])
    p, t, c = int(vision["patch_size"]), int(vision.get("temporal_patch_size") or 2), int(vision.get("in_channels") or 3)
    pos, depth = int(vision["num_position_embeddings"]), int(vision["depth"])
    big, out = h * int(vision.get("spatial_merge_size") or 2) ** 2, int(vision["out_hidden_size"])
    stacks = len(vision.get("deepstack_visual_indexes") or ())
    blocks_whole, blocks_split = _vit_blocks(h, inter, depth)
    whole = c * t * p * p * h + h + pos * h + blocks_whole + (2 * h + out) + stacks * (2 * big + out)
    split = blocks_split + (1 + stacks) * (big * big + big + big * out)
    return whole + split // tp


def llama4_tower_params(vision: dict, tp: int = 1, text_hidden: int = 0) -> int:
    """Parameters of Llama 4's ``vision_model`` and ``multi_modal_projector`` on one rank, as vLLM builds them
    (0.34.0 model_executor/models/mllama4.py): the patch embedding (an unfold and a linear C·p² → h, no bias), the
    class token, the position table ((size / p)² + 1 rows), the pre and post LayerNorms; per layer two LayerNorms,
    ``qkv (h → 3h, bias)``, ``o_proj (h → h, bias)``, ``fc1 (h → I, bias)``, ``fc2 (I → h, bias)``; the pixel-shuffle
    adapter's ``fc1 (h / ratio² → projector_input_dim)`` and ``fc2 (→ projector_output_dim)`` (no bias) and the
    projector ``vision_output_dim → text hidden`` (no bias). Column/row-parallel weights split over ``tp`` (a
    row-parallel bias whole); at TP 1 this is the golden's module count (Llama-4-Scout: 850,960,896 + 20,971,520)."""
    h, inter, layers = int(vision["hidden_size"]), int(vision["intermediate_size"]), int(vision["num_hidden_layers"])
    size, p, c = int(vision["image_size"]), int(vision["patch_size"]), int(vision.get("num_channels") or 3)
    ratio = float(vision.get("pixel_shuffle_ratio") or 0.5)
    shuffled = int(h / ratio ** 2)
    blocks_whole, blocks_split = _vit_blocks(h, inter, layers)
    whole = c * p * p * h + h + ((size // p) ** 2 + 1) * h + 4 * h + blocks_whole
    split = (blocks_split
             + shuffled * int(vision["projector_input_dim"])
             + int(vision["projector_input_dim"]) * int(vision["projector_output_dim"])
             + int(vision["vision_output_dim"]) * text_hidden)
    return whole + split // tp


def gemma3_tower_params(vision: dict, tp: int = 1, text_hidden: int = 0) -> int:
    """Parameters of Gemma 3's SigLIP ``vision_tower`` and ``multi_modal_projector`` on one rank, as vLLM builds them
    (0.34.0 model_executor/models/siglip.py, gemma3_mm.py): the patch embedding ``Conv2d(C, h, p, p, bias)`` and
    the position table ((size / p)² rows), per layer two LayerNorms (weight and bias), ``qkv_proj (h → 3h, bias)``,
    ``out_proj (h → h, bias)``, ``fc1 (h → I, bias)``, ``fc2 (I → h, bias)``; the post LayerNorm (every layer is
    used) and no pooling head (``vision_use_head`` false); the projector's RMSNorm over h and its ``h × text hidden``
    matrix. Column/row-parallel weights split over ``tp`` (a row-parallel bias whole; the projector whole)."""
    h, inter, layers = int(vision["hidden_size"]), int(vision["intermediate_size"]), int(vision["num_hidden_layers"])
    size, p, c = int(vision["image_size"]), int(vision["patch_size"]), int(vision.get("num_channels") or 3)
    blocks_whole, split = _vit_blocks(h, inter, layers)
    whole = c * p * p * h + h + (size // p) ** 2 * h + blocks_whole + 2 * h + h + h * text_hidden
    return whole + split // tp


TOWER_PARAMS = {**{arch: qwen3_vl_tower_params for arch in SAME_TOWER},
                "Llama4ForConditionalGeneration": llama4_tower_params,
                "Gemma3ForConditionalGeneration": gemma3_tower_params}


def tower_weight_bytes(config: dict, tp: int, dtype_bytes: int, text_hidden: int) -> int | None:
    """The vision tower's bytes on one rank as vLLM loads it (unquantized, the model dtype), where kvplan has its
    rule (``TOWER_PARAMS``); None otherwise. ``text_hidden``: the text decoder's hidden size (the projector's
    output)."""
    archs = config.get("architectures") or [""]
    rule = TOWER_PARAMS.get(archs[0] if isinstance(archs, list) and archs else "")
    vision = config.get("vision_config")
    if rule is None or not isinstance(vision, dict):
        return None
    if rule is gemma3_tower_params and vision.get("vision_use_head") is not False:
        return None  # a SigLIP pooling head: not counted here
    return rule(vision, tp, text_hidden) * dtype_bytes


def tower_load(config: dict, release: str | None, limits: dict | None, tp: int, dtype_bytes: int,
               text_hidden: int, *, from_metadata: bool) -> tuple[int | None, bool, str] | None:
    """How ``release`` loads the vision tower, for ``kvplan.budget.weights.with_tower``: ``(tower bytes on one
    rank, skipped, why)``; None where the weights stay as counted (loaded, and no rule here). Skipped: every
    modality it serves is limited to 0 and the release then builds none (``tower_skipped``). ``from_metadata``:
    the count is the checkpoint's total_size, which holds the tower whole on every rank (the whole tower comes
    out of it)."""
    archs = config.get("architectures") or [""]
    arch = archs[0] if isinstance(archs, list) and archs else ""
    skipped = tower_skipped(arch, release, limits)
    tower = tower_weight_bytes(config, 1 if from_metadata else tp, dtype_bytes, text_hidden)
    if skipped:
        why = (f"vision tower not loaded: every modality it serves is limited to 0 (--language-model-only / "
               f"--limit-mm-per-prompt), and vLLM {release or 'this era'} then builds no tower "
               + ("(_mark_tower_model, interfaces.py)" if release is None or
                  version_key(release) >= version_key(TOWER_MARKED_FROM) else "(the model's own limit test)"))
        return tower, True, why
    if tower is None:
        return None
    return tower, False, f"vision tower counted by kvplan.budget.encoder's rule for {arch}: {tower:,} B on each rank"
