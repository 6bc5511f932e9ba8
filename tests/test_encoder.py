"""The multimodal encoder's part of the profile run per vision tower (kvplan/budget/encoder.py) against the goldens
of each release's own tower run on the meta device (tests/golden/profile_terms/encoder/, scripts/golden/
profile_terms.py --encoder-all), and the tower's weights as each release loads or skips them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.version import version_key

from kvplan.budget import encoder as enc
from kvplan.budget.profile import encoder_row

ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "tests" / "golden" / "profile_terms" / "encoder"


def _runs():
    """Every derived run of a tower kvplan has a dummy rule for: (release, architecture, path, record)."""
    out = []
    for f in sorted(GOLDENS.glob("*.json")):
        g = json.loads(f.read_text())
        for arch, paths in sorted(g["encoder"].items()):
            if not all(r.get("derived") for r in paths.values()):
                continue  # the table takes another release's row (both paths are its value and its high end)
            for path, r in sorted(paths.items()):
                if r.get("derived"):
                    out.append(pytest.param(g["vllm_version"], arch, path, r, id=f"{f.stem}-{arch}-{path}"))
    return out


RUNS = _runs()


def test_the_goldens_hold_each_tower_on_the_releases_it_runs():
    """The Qwen3-VL tower (two configs) and Llama 4's were run on 0.19.0, 0.24.0, 0.29.0 and 0.34.0, each with the
    same bytes per patch in every release. 0.11.0's do not run on the meta device, and the golden says why:
    Qwen3-VL builds cu_seqlens on the device with a data-dependent repeat_interleave; Qwen3.5 is not in 0.11.0."""
    runs = {(p.values[0], p.values[1]): p.values[3] for p in RUNS if p.values[2] == "custom_ops"}
    per_patch = {"Qwen3VLMoeForConditionalGeneration": 33936 + 4 / 1024, "Qwen3_5ForConditionalGeneration":
                 30864 + 4 / 1024, "Llama4ForConditionalGeneration": 53_349_376 / 1152}
    for release in ("0.19.0", "0.24.0", "0.29.0", "0.34.0"):
        for arch, b in per_patch.items():
            assert runs[(release, arch)]["bytes_per_patch"] == b, (release, arch)
    g = json.loads((GOLDENS / "0.11.0.json").read_text())["encoder"]
    assert "repeat_interleave" in g["Qwen3VLMoeForConditionalGeneration"]["custom_ops"]["why"]
    assert "not in this release's model registry" in g["Qwen3_5ForConditionalGeneration"]["custom_ops"]["why"]


@pytest.mark.parametrize("release,arch,path,run", [p for p in RUNS if p.values[2] == "custom_ops"])
def test_kvplan_reproduces_each_tower_golden_exactly(release, arch, path, run):
    """kvplan's tower peak over the golden's own dummy items (its config, items × patches per item) is the peak the
    release's tower reached on the meta device, to the byte: ``fixed + patches · bytes per patch``."""
    config = json.loads((ROOT / run["model"]).read_text())
    row = encoder_row(release, arch)
    assert row is not None and row["basis"] == "derived" and row["from"] == release
    for items, peak in run["peak_bytes"].items():
        patches = int(items) * run["patches_per_item"]
        assert enc.tower_bytes(row, config["vision_config"], patches, 2) == peak, (release, arch, items)


@pytest.mark.parametrize("release,arch,path,run", [p for p in RUNS if p.values[2] == "custom_ops"])
def test_the_encoder_cache_rows_are_what_the_tower_returns(release, arch, path, run):
    """The encoder cache keeps what embed_multimodal returns per item: Gemma 3 256 embeddings of the text hidden
    size; Qwen3-VL-30B-A3B (32 × 32 patches, merge 2: 256 embeddings) 2048 · (1 + 3 deepstack) · 2 = 16,384 B
    each, Qwen3.5-27B (no deepstack) 5120 · 2 = 10,240 B; Llama-4-Scout (2 chunks of 576 patches, pixel shuffle
    0.5: 288 embeddings) 5120 · 2."""
    config = json.loads((ROOT / run["model"]).read_text())
    v = config["vision_config"]
    from kvplan.model.limits import text_config

    row_bytes = enc.cache_row_bytes(config, int(text_config(config)["hidden_size"]), 2)
    if arch.startswith("Qwen"):
        embeddings = run["patches_per_item"] // int(v["spatial_merge_size"]) ** 2
    elif arch.startswith("Llama4"):  # pixel shuffle at ratio 0.5: one embedding per 4 patches
        embeddings = run["patches_per_item"] // 4
    elif arch.startswith("Gemma4"):  # a 224² dummy frame resized to 384² (24 × 24 of its 630 patches), pooled 3 × 3
        embeddings = (24 // 3) ** 2
    else:
        embeddings = int(config.get("mm_tokens_per_image") or 256)
    assert embeddings * row_bytes == run["output_bytes_per_item"]


def test_gemma4_tower_run_on_the_cpu():
    """Gemma 4's tower (transformers' Gemma4VisionModel, data-dependent padding probes) made real on the CPU with
    random weights, over the dummy video's frames (630 patches each, 24 × 24 real): per patch the MLP's gate, up and
    product [630, 4304] (3 · 4304 · 2 = 25,824 B), four [630, 1152] hidden states (9,216), the pixel values (768 · 2 =
    1,536), the padding mask [630, 630] bool (630 B a patch: it grows with the frame's max_patches), rotary cos and
    sin (2 · 72 · 2 = 288), the position ids (2 · 8 = 16) and two padding flags (2): 37,512 B; fixed the frame
    count (8 B). Factor over kvplan's rule (4 · 1152 + 3 · 4304) · 2 = 35,040: 1.0705.

    Up to 0.21.0 vLLM's gemma4_mm.py encodes the frames one at a time (``for i in range(pixel_values.shape[0])``:
    0.21.0 lines 1136-1159; 0.22.0 stacks them): the peak is one frame's, 630 · 37,512 + 8 = 23,632,568 B, and each
    further frame adds what stays live meanwhile: its pixel values (630 · 768 · 2 = 967,680) and position ids
    (630 · 2 · 8 = 10,080), and the finished frame's 64 valid tokens in the tower's width (64 · 1152 · 2 = 147,456)
    and in the text model's (64 · 2816 · 2 = 360,448): 1,485,664 B a frame, so the golden's fit is 1,485,664 / 630
    B a patch beside 23,632,568 − 1,485,664 = 22,146,904 fixed."""
    runs = [p.values for p in RUNS if p.values[1] == "Gemma4ForConditionalGeneration"]
    assert {r[0] for r in runs} >= {"0.21.0", "0.22.0", "0.24.0", "0.25.1", "0.29.0", "0.33.0", "0.34.0"}
    per_frame = 630 * 768 * 2 + 630 * 2 * 8 + 64 * 1152 * 2 + 64 * 2816 * 2
    one_frame = 630 * (25_824 + 9_216 + 1_536 + 630 + 288 + 16 + 2) + 8
    for release, _, path, run in runs:
        assert run["run_on"].startswith("cpu") and run["patches_per_item"] == 630
        # the transformers the tower ran with, the newest inside the release's pin (0.31.0 pins < 5.18: 5.17.0;
        # 0.32.0 < 5.20: 5.19.0; 0.33.0 < 5.21: 5.20.2; 0.34.0's run predates the record, 5.22.2)
        pinned = {"0.31.0": "5.17.0", "0.32.0": "5.19.0", "0.33.0": "5.20.2"}
        assert run.get("transformers", "5.22.2") == pinned.get(release, "5.22.2"), release
        if version_key(release) < (0, 22):  # frame by frame
            assert run["peak_bytes"] == {"1": one_frame, "2": one_frame + per_frame}, (release, path)
            assert run["fixed_bytes"] == one_frame - per_frame == 22_146_904
        else:  # every frame in one chunk
            assert run["bytes_per_patch"] == 25_824 + 9_216 + 1_536 + 630 + 288 + 16 + 2 and run["fixed_bytes"] == 8
            assert run["peak_bytes"] == {"1": one_frame, "2": 2 * one_frame - 8}, (release, path)
    row = encoder_row("0.34.0", "Gemma4ForConditionalGeneration")
    assert row["basis"] == "derived" and row["run_on"] == "cpu" and row["rule_bytes_per_patch"] == 35_040
    assert row["factor"] == round(37_512 / 35_040, 4)
    # 0.31.0 and 0.32.0 pin transformers below the environment's 5.22.2: run with the newest their pins admit
    assert {r[0] for r in runs} >= {"0.19.1", "0.20.0", "0.20.2", "0.31.0", "0.32.0"}
    assert encoder_row("0.32.0", "Gemma4ForConditionalGeneration")["basis"] == "derived"
    # 0.19.0 pins transformers < 5, which has no Gemma 4 class: the refusal is recorded, the newest run stands in
    why = json.loads((GOLDENS / "0.19.0.json").read_text())["encoder"]["Gemma4ForConditionalGeneration"]
    assert "outside this release's pin (<5,>=4.56.0)" in why["custom_ops"]["why"]
    row = encoder_row("0.19.0", "Gemma4ForConditionalGeneration")
    assert (row["basis"], row["from"], row["fixed_bytes"]) == ("assumed", "0.19.1", 22_146_904)


@pytest.mark.parametrize("release,arch,path,run", [p for p in RUNS if "param_bytes_by_module" in p.values[3]
                                                   and p.values[1] in enc.TOWER_PARAMS])
def test_the_tower_weights_are_the_module_the_release_builds(release, arch, path, run):
    """kvplan's count of the tower (``qwen3_vl_tower_params``, ``llama4_tower_params``, ``gemma3_tower_params``) is
    the tower modules' parameters as the release built them (bf16), at TP 1: Qwen3-VL's ``visual``; Llama 4's
    ``vision_model`` and ``multi_modal_projector``; Gemma 3's ``vision_tower`` and ``multi_modal_projector``."""
    config = json.loads((ROOT / run["model"]).read_text())
    from kvplan.model.limits import text_config

    text_hidden = int(text_config(config)["hidden_size"])
    by = run["param_bytes_by_module"]
    tower = sum(by.get(m, 0) for m in ("visual", "vision_model", "vision_tower", "multi_modal_projector"))
    assert tower and enc.tower_weight_bytes(config, 1, 2, text_hidden) == tower


def test_qwen3_vl_dummy_items():
    """4,096² pixels at patch 16 and merge 2: 128 × 128 merged patches = 16,384 tokens, 65,536 patches; the video
    25,165,824 // 2 // 32² = 12,288 tokens (49,152 patches); in 0.11.0-0.12.0 the video counts 12.5 × 12,288 =
    153,600 tokens, as the 0.12.0 log says ("a budget of 153600 tokens, and profiled with 1 video items",
    tests/logs/budget/63-videocuttingagent-qwen3-vl-30b-a3b-h100-tp2-v0.12.0.log). At 8,192 batched tokens the
    encoder budget max(8192, 16,384) holds one image (the 0.18-0.27 logs: "a budget of 16384 tokens, and profiled
    with 1 image items"); at 0.12.0 one video of 12,288 embeddings."""
    config = json.loads((ROOT / "configs/Qwen/Qwen3.5-27B/config.json").read_text())
    items, _ = enc.qwen3_vl_encoder_dummy(config, "0.24.0")
    assert [(i["modality"], i["tokens_per_item"], i["inputs_per_item"]) for i in items] == [
        ("image", 16_384, 65_536), ("video", 12_288, 49_152)]
    d = enc.encoder_dummy_batch(items, 8192)
    assert (d["modality"], d["items"], d["encoder_tokens"], d["embeddings"]) == ("image", 1, 65_536, 16_384)
    old, _ = enc.qwen3_vl_encoder_dummy(config, "0.12.0")
    d = enc.encoder_dummy_batch(old, 8192)
    assert (d["modality"], d["items"], d["tokens_per_item"], d["encoder_tokens"], d["embeddings"]) == (
        "video", 1, 153_600, 49_152, 12_288)
    # only images allowed: the image is the dummy in every release
    assert enc.encoder_dummy_batch(old, 8192, limits={"video": 0})["modality"] == "image"


def test_which_releases_skip_the_tower():
    """From 0.15.1 every tower is a StageMissingLayer when every modality it serves is limited to 0
    (_mark_tower_model); before, Qwen3-VL, Qwen2.5-VL, Mistral 3 and Llama 4 test their limit themselves and Gemma 3
    and Kimi-VL always load theirs. Gemma 3's tower serves images only: an image limit of 0 is enough."""
    off = {"image": 0, "video": 0, "audio": 0}
    assert enc.tower_skipped("Qwen3VLMoeForConditionalGeneration", "0.11.0", off)
    assert not enc.tower_skipped("Gemma3ForConditionalGeneration", "0.14.1", off)
    assert enc.tower_skipped("Gemma3ForConditionalGeneration", "0.15.1", {"image": 0})
    assert not enc.tower_skipped("Qwen3_5ForConditionalGeneration", "0.19.0", {"image": 0})
    assert enc.tower_skipped("Qwen3_5ForConditionalGeneration", "0.19.0", {"image": 0, "video": 0})


def test_language_model_only_drops_the_tower_and_its_pass():
    """Qwen3.5-27B at 0.19.0 on an H100: the tower (kvplan/budget/encoder.py qwen3_vl_tower_params: 460,730,096
    parameters, bf16) is in the weights when served whole and out with --language-model-only, which also skips the
    encoder's dummy pass."""
    from kvplan.api import simulate

    full = simulate(str(ROOT / "configs/Qwen/Qwen3.5-27B"), gpu="H100", policy="vllm==0.19.0")["budget"]
    lm = simulate(str(ROOT / "configs/Qwen/Qwen3.5-27B"), gpu="H100", policy="vllm==0.19.0",
                  language_model_only=True)["budget"]
    assert full["weights_bytes"] - lm["weights_bytes"] == 460_730_096 * 2
    term = next(t for t in full["profile_terms"] if t["term"] == "encoder_cache")
    assert term["derivation"] == "derived" and "65,536 patches" in term["source"]
    assert next(t for t in lm["profile_terms"] if t["term"] == "encoder_cache")["bytes"] == 0


def test_llama4_dummy_items():
    """Llama-4-Scout's dummy image: 16 tiles and the global chunk, 17 × 576 = 9,792 patches, 17 × 144 = 2,448
    embeddings; at 8,192 batched tokens 8192 // 2448 = 3 items, as vLLM 0.19.0 logged for it ("a budget of 8192
    tokens, and profiled with 3 image items", tests/logs/budget/llm-d-planner-v0.19.0/
    meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192.log)."""
    config = json.loads((ROOT / "configs/meta-llama/Llama-4-Scout-17B-16E-Instruct/config.json").read_text())
    items, _ = enc.llama4_encoder_dummy(config)
    d = enc.encoder_dummy_batch(items, 8192)
    assert (d["modality"], d["items"], d["tokens_per_item"], d["encoder_tokens"]) == ("image", 3, 2448, 3 * 9792)


def _tp_runs():
    """Every derived run of a tower on rank 0 of a TP group (``--encoder-tp``): (release, architecture, TP, record)."""
    return [pytest.param(release, arch, int(tp), t, id=f"{release}-{arch}-tp{tp}")
            for release, arch, path, run in (p.values for p in RUNS) if path == "custom_ops"
            for tp, t in sorted((run.get("tp") or {}).items())]


TP_RUNS = _tp_runs()


def test_the_towers_were_run_per_tp_rank():
    """Qwen3-VL's tower on Qwen3.5-27B and Qwen3-VL-30B-A3B at TP 2 and 4 on 0.19.0, 0.24.0, 0.29.0 and 0.34.0,
    under each release's default ``mm_encoder_tp_mode`` "weights" (0.19.0 config/multimodal.py line 144, 0.34.0
    line 384): the linears split over the group, so the per-rank peak shrinks with it (Qwen3.5-27B 30,864 →
    23,952 → 19,344 B a patch, Qwen3-VL-30B-A3B 33,936 → 27,024 → 22,416, in every release from 0.18.0; 0.14.1's
    tower: Qwen3-VL-30B-A3B 32,720 → 24,720 → 22,264, Qwen3.5 not in that release)."""
    have = {(r, a, tp) for r, a, tp, _ in (p.values for p in TP_RUNS)}
    for release in ("0.19.0", "0.24.0", "0.29.0", "0.34.0"):
        for arch in ("Qwen3_5ForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration"):
            assert {(release, arch, 2), (release, arch, 4)} <= have
    per_patch = {("Qwen3_5ForConditionalGeneration", 2): 23952, ("Qwen3_5ForConditionalGeneration", 4): 19344,
                 ("Qwen3VLMoeForConditionalGeneration", 2): 27024, ("Qwen3VLMoeForConditionalGeneration", 4): 22416}
    # the releases before 0.15.0 measured their own Qwen3-VL tower: 0.12.0-0.14.1 24,720 / 22,264 B a patch at
    # TP 2 / 4, 0.11.1-0.11.2 28,464 / 22,264 (at TP 1: 32,720 and 43,440); Qwen3.5 came in 0.17.0
    older = {("Qwen3VLMoeForConditionalGeneration", 2): 24720, ("Qwen3VLMoeForConditionalGeneration", 4): 22264}
    oldest = {("Qwen3VLMoeForConditionalGeneration", 2): 28464, ("Qwen3VLMoeForConditionalGeneration", 4): 22264}
    for release, arch, tp, t in (p.values for p in TP_RUNS):
        assert t["mm_encoder_tp_mode"] == "weights" and t["tp"] == tp
        key = version_key(release)
        want = (oldest if key < (0, 12) else older if key < (0, 15) else per_patch)[(arch, tp)]
        assert t["bytes_per_patch"] == want + 4 / 1024, (release, arch, tp)


@pytest.mark.parametrize("release,arch,tp,run", TP_RUNS)
def test_kvplan_reproduces_each_tp_golden_exactly(release, arch, tp, run):
    """At a measured TP size kvplan takes that size's per-rank figures (``tp_row``) and reproduces the release's
    rank-0 peak to the byte, derived, its pessimistic end the same figure."""
    config = json.loads((ROOT / encoder_row(release, arch)["model"]).read_text())
    row = encoder_row(release, arch)
    rank_row, at = enc.tp_row(row, tp)
    assert at == tp
    for items, peak in run["peak_bytes"].items():
        patches = int(items) * run["patches_per_item"]
        assert enc.tower_bytes(rank_row, config["vision_config"], patches, 2) == peak, (release, arch, tp, items)
    e, _ = enc.estimate_encoder_profile(config, 2, 8192, release=release, tp=tp, row=row)
    assert e["basis"] == "derived" and e["measured_tp"] == tp and e["forward_high_bytes"] == e["forward_bytes"]
    assert f"rank 0 of TP {tp}" in e["source"]


@pytest.mark.parametrize("release,arch,tp,run", TP_RUNS)
def test_the_tower_weights_per_rank_are_the_module_the_release_builds(release, arch, tp, run):
    """``qwen3_vl_tower_params`` at TP 2 and 4 is the ``visual`` module's parameters the release built on rank 0
    (bf16): the column-parallel weights and biases and the row-parallel weights split, the rest whole."""
    config = json.loads((ROOT / encoder_row(release, arch)["model"]).read_text())
    assert enc.tower_weight_bytes(config, tp, 2, 0) == run["param_bytes_by_module"]["visual"]


def test_an_unmeasured_tp_takes_the_nearest_measured_below_assumed():
    """TP 8 was not run: the TP 4 per-rank figure, assumed, with the TP 1 figure the band's pessimistic end; TP 3:
    TP 2's. Qwen3.5-27B at 0.34.0, one dummy image (65,536 patches, T 8192 holds one 16,384-token item):
    TP 4 4,128,772 + 65,536 · 19,344.0039 B, TP 1 4,128,772 + 65,536 · 30,864.0039 B."""
    config = json.loads((ROOT / "configs/Qwen/Qwen3.5-27B/config.json").read_text())
    row = encoder_row("0.34.0", "Qwen3_5ForConditionalGeneration")
    e8, _ = enc.estimate_encoder_profile(config, 2, 8192, release="0.34.0", tp=8, row=row)
    assert (e8["basis"], e8["measured_tp"]) == ("assumed", 4)
    assert e8["forward_bytes"] == 4_128_772 + round(65_536 * (19_344 + 4 / 1024))
    assert e8["forward_high_bytes"] == 4_128_772 + round(65_536 * (30_864 + 4 / 1024))
    assert "TP 8 not run: assumed TP 4" in e8["source"]
    e3, _ = enc.estimate_encoder_profile(config, 2, 8192, release="0.34.0", tp=3, row=row)
    assert e3["measured_tp"] == 2 and e3["basis"] == "assumed"
    e1, _ = enc.estimate_encoder_profile(config, 2, 8192, release="0.34.0", tp=1, row=row)
    assert e1["forward_bytes"] == e1["forward_high_bytes"] == e8["forward_high_bytes"]


def test_the_run_takes_the_per_rank_tower_at_its_tp():
    """Qwen3.5-27B on RTX 3090s at 0.19.0: one dummy image of 65,536 patches. TP 4 is measured: the tower's peak is
    4,128,772 + 65,536 · 19,344.0039 = 1,271,857,412 B on each rank (derived); TP 8 is not: TP 4's figure, assumed,
    the TP 1 figure (4,128,772 + 65,536 · 30,864.0039 = 2,026,832,132 B) its pessimistic end."""
    from kvplan.api import simulate

    def term(tp):
        d = simulate("Qwen/Qwen3.5-27B", gpu="RTX 3090", policy="vllm==0.19.0", tensor_parallel_size=tp,
                     max_model_len=32768)
        return next(t for t in d["budget"]["profile_terms"] if t["term"] == "encoder_cache")

    four, eight = term(4), term(8)
    assert four["derivation"] == "derived" and "1,271,857,412 B" in four["source"] and "rank 0 of TP 4" in four["source"]
    assert eight["derivation"] == "assumed" and "1,271,857,412 B" in eight["source"]
    assert "TP 8 not run: assumed TP 4's per-rank figure" in eight["source"]
