"""The profile run's derived sampler terms (kvplan/budget/profile.py) against the goldens each release's own code
produced (tests/golden/profile_terms, scripts/golden/profile_terms.py), the bands built from them and the
calibration, the pessimistic verdict and the order of fixes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kvplan.api import simulate
from kvplan.budget import profile
from kvplan.budget.estimate import ACTIVATION_WORKSPACE_BYTES, sampler_terms
from kvplan.engines.vllm.releases import get_era
from kvplan.engines.vllm.versions import GOLDEN_RELEASES, VERSIONS
from kvplan.report.verdict import verdict_line

ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "tests" / "golden" / "profile_terms"


def _script():
    spec = importlib.util.spec_from_file_location("profile_terms_script", ROOT / "scripts/golden/profile_terms.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_table_is_the_goldens(tmp_path):
    """kvplan's run-time table is exactly what --table builds from the committed goldens."""
    out = tmp_path / "t.json"
    _script().table(GOLDENS, out)
    assert json.loads(out.read_text()) == json.loads(profile.TABLE.read_text())


def test_every_golden_release_has_a_golden_derived_or_a_reason():
    """Every golden release ran the script; the variant its install takes is derived, or says why not."""
    for release in GOLDEN_RELEASES:
        g = json.loads((GOLDENS / f"{release}.json").read_text())
        pick = g["sampler"]["flashinfer" if g["flashinfer_required"] else "no_flashinfer"]
        assert pick["derived"] or pick["why"], release
    rows = json.loads(profile.TABLE.read_text())["releases"]
    assert set(rows) == set(VERSIONS)
    # 0.34.0 has no V1 runner: its V2 runner's own _dummy_sampler_run was run (vllm/v1/worker/gpu), derived
    assert rows["0.34.0"]["basis"] == "derived" and rows["0.34.0"]["from"] == "0.34.0"


def test_v2_sampler_of_0_34_0():
    """0.34.0's V2 runner: its _dummy_sampler_run runs the sampler twice (the default pass, then the warmup-parameter
    pass with the fp32 logits pipeline), on FlashInfer's sampling call (the wheel requires flashinfer-python); the
    peak grows by 10.127 B per logit at vocabulary 151,936 (bf16 logits 2 + fp32 copy 4 + processed fp32 logits 4
    and per-request rows), FlashInfer's own 8 B added at the high end."""
    g = json.loads((GOLDENS / "0.34.0.json").read_text())
    v = g["sampler"]["flashinfer"]
    assert g["flashinfer_required"] and v["derived"] and v["runner"] == "V2 GPUModelRunner"
    assert v["topk_topp_path"] == "V2 Sampler: flashinfer_sample" and v["flashinfer_sampling_calls"] > 0
    row = json.loads(profile.TABLE.read_text())["releases"]["0.34.0"]
    assert row["bytes_per_logit"] == round(v["sampler"][0]["bytes_per_logit"], 3) == 10.127
    assert row["bytes_per_logit_high"] == 18.127  # + FlashInfer's masked logits and softmax, 2 fp32 copies


def test_forward_goldens_and_factors():
    """The dummy forward on the meta device (scripts/golden/profile_terms.py --forward-all). Qwen3-8B (H 4,096,
    I 12,288, bf16) on 0.34.0's custom-op path: at the MLP the gate-up output [T, 2I], SiLU-and-mul's [T, I] and
    five [T, H] (hidden, residual, the norm's output, the attention's and o_proj's) are live:
    (5·4,096 + 3·12,288)·2 = 114,688 B per token (+ 8 for a per-token index); the native graph also keeps SiLU's own
    output: (4·4,096 + 4·12,288)·2 = 131,072 (+ 16). kvplan's rule (4H + 3I)·2 = 106,496, so the factor is
    114,696 / 106,496 = 1.077. 0.19.1's fused add-RMSNorm writes in place: (4·4,096 + 3·12,288)·2 + 8 = 106,504."""
    for release in ("0.34.0", "0.19.1"):
        g = json.loads((GOLDENS / "forward" / f"{release}.json").read_text())
        dense = g["forward"]["dense"]
        assert dense["custom_ops"]["derived"] and dense["native"]["derived"]
        assert dense["native"]["bytes_per_token"] == 131088
    g34 = json.loads((GOLDENS / "forward" / "0.34.0.json").read_text())["forward"]
    assert g34["dense"]["custom_ops"]["bytes_per_token"] == 114696
    assert json.loads((GOLDENS / "forward" / "0.19.1.json").read_text())["forward"]["dense"]["custom_ops"][
        "bytes_per_token"] == 106504
    rows = json.loads(profile.TABLE.read_text())["releases"]
    d = rows["0.34.0"]["forward"]["dense"]
    assert d["rule_bytes_per_token"] == 106496 and d["factor"] == round(114696 / 106496, 4) and d["basis"] == "derived"
    # a release with no forward golden of its own takes the newest measured one before it, labelled assumed
    assert rows["0.33.0"]["forward"]["dense"]["basis"] in ("derived", "assumed")
    for release, row in rows.items():
        for fam in row["forward"].values():
            assert fam["basis"] == "derived" or fam["why"], release


def test_forward_factor_enters_the_activation():
    """Qwen3-8B on an H100 with 0.34.0 at 8,192 tokens: the forward is 1.077 × 8,192 · (4·4,096 + 36,864)·2;
    the activation is the larger of it and the sampler pass (with the hidden states), + the 256 MiB workspace."""
    from kvplan.budget.estimate import forward_terms

    era = get_era("vllm==0.34.0")
    cfg = json.loads((ROOT / "configs/Qwen/Qwen3-8B/config.json").read_text())
    f = forward_terms(era, cfg)
    assert f["basis"] == "derived" and f["family"] == "dense" and f["value"] == 1.077 and f["high"] == 1.2309
    d = simulate("Qwen/Qwen3-8B", gpu="H100", policy="vllm==0.34.0")
    b = d["budget"]
    forward = round(8192 * (4 * 4096 + 36864) * 2 * 1.077)
    s = sampler_terms(era, min(b["max_num_seqs"], 8192), 151936)
    assert b["activation_peak_bytes"] == max(forward, s["value"] + 8192 * 4096 * 2) + ACTIVATION_WORKSPACE_BYTES
    act = next(t for t in b["profile_terms"] if t["term"] == "activation")
    assert "0.34.0's dense forward (Qwen3-8B) on the meta device" in act["source"]


def test_sampler_bytes_per_logit_by_release():
    """The measured peaks per logit: 0.11.0 without FlashInfer (a pip install: FlashInfer is an extra there) sorts
    the logits: bf16 logits 2 + their fp32 copy 4 + the sorted values 4 + the int64 sort indices 8 + the sorted
    softmax 4 + the probabilities 4 + the exponential noise 4 = 30 at most, 28 live at the peak (the bf16 logits'
    slot is reused: the peak is what the tracker saw); 0.19.0's Triton top-k/top-p works in place: 2 + 4 + the
    probabilities 4 + the noise 4 = 14, plus the Triton wrapper's buffer of one fp32 vocabulary row per SM."""
    rows = json.loads(profile.TABLE.read_text())["releases"]
    assert round(rows["0.11.0"]["bytes_per_logit"]) == 28 and rows["0.11.0"]["sm_row_bytes_per_vocab"] == 0
    assert round(rows["0.11.0"]["bytes_per_logit_low"]) == 6  # with FlashInfer: 2 + 4, FlashInfer's own unmeasured
    assert round(rows["0.19.0"]["bytes_per_logit"]) == 14 and rows["0.19.0"]["sm_row_bytes_per_vocab"] == 4
    assert rows["0.19.0"]["triton"] is True


def test_sampler_term_enters_the_activation_as_derived():
    """Qwen3-32B (hidden 5120, vocab 151,936) on an H100 with vLLM 0.11.0: 1,024 dummy requests (min(max_num_seqs,
    T)) × 151,936 logits × 28.001 B, held with the forward's 8,192 × 5,120 bf16 hidden states, exceed the forward's
    8,192 · (4 · 5,120 + 3 · 25,600) · 2 = 1,593,835,520 B; the activation is that + the 256 MiB workspace."""
    era = get_era("vllm==0.11.0")
    s = sampler_terms(era, 1024, 151936)
    assert s["value"] == round(1024 * 151936 * rows_0110()["bytes_per_logit"]) and s["basis"] == "derived"
    d = simulate("Qwen/Qwen3-32B", gpu="H100", policy="vllm==0.11.0", max_model_len=32768)
    b = d["budget"]
    assert b["max_num_seqs"] == 1024 and b["max_num_batched_tokens"] == 8192
    assert b["activation_peak_bytes"] == s["value"] + 8192 * 5120 * 2 + ACTIVATION_WORKSPACE_BYTES
    act = next(t for t in b["profile_terms"] if t["term"] == "activation")
    assert act["derivation"] == "derived" and "0.11.0's own _dummy_sampler_run" in act["source"]


def rows_0110() -> dict:
    return json.loads(profile.TABLE.read_text())["releases"]["0.11.0"]


def test_band_is_the_terms_ends():
    """The KV band: the card's requested memory minus every term's high end (low) and low end (high)."""
    d = simulate("Qwen/Qwen3-8B", gpu="H100", policy="vllm==0.19.0")
    b = d["budget"]
    terms = {t["term"]: t for t in b["profile_terms"]}
    low = b["requested_memory_bytes"] - sum(t["high_bytes"] for t in terms.values())
    high = b["requested_memory_bytes"] - sum(t["low_bytes"] for t in terms.values())
    assert (b["band"]["kv_cache_memory_low_bytes"], b["band"]["kv_cache_memory_high_bytes"]) == (low, high)
    assert low <= b["kv_cache_memory_bytes"] <= high
    assert b["band"]["num_gpu_blocks_low"] <= d["memory"]["num_blocks"] <= b["band"]["num_gpu_blocks_high"]
    assert {t["derivation"] for t in terms.values()} <= {"derived", "calibrated", "assumed", "not counted"}


def test_given_kv_memory_has_no_band():
    d = simulate("Qwen/Qwen3-8B", kv_cache_memory="20GiB")
    assert "budget" not in d or d["budget"] is None or "band" not in d["budget"]
    assert verdict_line(d).endswith("assumed an H100's 8,192 batched tokens (no --gpu)")


def test_failing_deployment_offers_fp8_kv_first():
    """Qwen3-32B, TP 1, one H100, vLLM 0.11.0 (issue 34's over-promise was its 32k run, which vLLM refused at
    admission; kvplan now refuses it too) at 24k: 6 GiB of KV needed (64 layers · 8 KV heads · 128 · 2 · 2 B =
    256 KiB per token) beside the 4.47 GiB kvplan estimates. The first fix is the quantized KV cache (3 GiB, which
    fits the band's pessimistic end), before the utilization and a fixed --kv-cache-memory."""
    d = simulate("Qwen/Qwen3-32B", gpu="H100", policy="vllm==0.11.0", max_model_len=24576)
    assert d["outcome"]["starts"] is False and d["outcome"]["stage"] == "admission"
    assert [f["option"] for f in d["fixes"]] == ["kv_cache_dtype", "gpu_memory_utilization", "kv_cache_memory"]
    assert d["fixes"][0]["flag"] == "--kv-cache-dtype fp8" and d["fixes"][0]["starts"]
    assert simulate("Qwen/Qwen3-32B", gpu="H100", policy="vllm==0.11.0", max_model_len=32768)["outcome"]["stage"] \
        == "admission"


def test_starts_only_at_the_estimate_is_may_fail_with_a_fix_that_holds_at_the_pessimistic_end():
    """At 16k the 4 GiB of KV fit kvplan's central 4.47 GiB but not the band's pessimistic 3.40 GiB: the verdict
    says MAY FAIL, with the quantized KV cache (2 GiB), which starts at that end too."""
    d = simulate("Qwen/Qwen3-32B", gpu="H100", policy="vllm==0.11.0", max_model_len=16384)
    band = d["budget"]["band"]
    assert d["outcome"]["starts"] is True and band["starts_at_low"] is False and band["failure_at_low"] == "admission"
    assert band["kv_cache_memory_low_bytes"] < 16384 * 64 * 8 * 128 * 2 * 2 <= d["budget"]["kv_cache_memory_bytes"]
    line = verdict_line(d)
    assert line.startswith("MAY FAIL at admission: starts at kvplan's estimate")
    assert line.endswith("— fix: --kv-cache-dtype fp8")
    fixed = simulate("Qwen/Qwen3-32B", gpu="H100", policy="vllm==0.11.0", max_model_len=16384, kv_cache_dtype="fp8")
    assert fixed["budget"]["band"]["starts_at_low"] is True and verdict_line(fixed).startswith("OK starts")


def test_profile_terms_page_is_current():
    """docs/profile-terms.md is what scripts/profile_terms_doc.py prints from the table, the calibration and the
    eras (scripts/regenerate.py profile-terms-doc), and every term of every release has a basis: a derived term
    names its golden file, any other names its reason."""
    spec = importlib.util.spec_from_file_location("profile_terms_doc", ROOT / "scripts/profile_terms_doc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (ROOT / "docs/profile-terms.md").read_text() == mod.markdown()
    groups = json.loads((ROOT / "kvplan/budget/calibration.json").read_text())["non_torch"]
    for release in VERSIONS:
        era = get_era(f"vllm=={release}")
        for t in profile.term_bases(release, cudagraph_counted=era.cudagraph_memory_in_profile,
                                    calibrated_groups=groups):
            assert t["basis"] in ("derived", "assumed", "calibrated", "not counted", "not planned"), t
            if t["basis"] == "derived":
                name = t["detail"].split(" ")[0]
                assert (ROOT / name).is_file() and f"/{release}.json" in name, (release, t)
            else:
                assert len(t["detail"]) > 40, (release, t)  # a reason, not a label
    # the CUDA-graph estimate is subtracted from 0.20.0 (eras.py); before it the graphs are captured after sizing,
    # in the 1 - utilization headroom the warm-up check reads: calibrated either way, the detail says which
    rows = {t["term"]: t for t in profile.term_bases("0.19.1", cudagraph_counted=False, calibrated_groups={})}
    assert rows["CUDA graphs"]["basis"] == "calibrated" and "headroom" in rows["CUDA graphs"]["detail"]
    assert rows["non-torch memory"]["basis"] == "assumed"
    counted = {t["term"]: t for t in profile.term_bases("0.20.2", cudagraph_counted=True, calibrated_groups={})}
    assert "headroom" not in counted["CUDA graphs"]["detail"]


def test_moe_forward_goldens_two_models():
    """Mixtral-8x7B (H 4,096, I 14,336, top-2, 32 q / 8 kv heads × 128, bf16) beside gpt-oss-20b, so the MoE factor
    is not one model's. 0.34.0 (0.24.0, 0.27.1 the same): the peak is at a layer's attention with the fused-MoE
    workspace still held: T·k·(2I + I)·2 = 172,032 B per token (intermediate caches 1 and 2; cache 3 aliases them),
    the qkv output [T, 6,144] 12,288, six [T, H] 49,152 and a per-token index 8: 233,480. 0.19.0's fused
    add-RMSNorm works in place, four [T, H]: 217,096. kvplan's rule k·(3I + H)·2 + 4H·2 = 221,184, so the factors
    are 1.0556 and 0.9815 (gpt-oss-20b's 1.0101 and 0.9101): the family's factor is the larger, Mixtral's. 0.11.0
    has no persistent workspace: the peak is inside fused_experts, its cache13 [T·k·2I] (caches 1 and 3 share it)
    and cache2 [T·k, I] beside three [T, H]: (2·2·14,336 + 2·14,336 + 3·4,096)·2 = 196,608, plus 48.125 B of routing
    tensors (top-k weights and ids, moe_align's sorted ids padded per expert block): 196,656.125."""
    for release, mixtral, gpt_oss in (("0.34.0", 233480, 116360), ("0.24.0", 233480, 116360),
                                      ("0.19.0", 217096, 104840), ("0.11.0", 196656.125, 86520.25)):
        g = json.loads((GOLDENS / "forward" / f"{release}.json").read_text())["forward"]
        assert g["moe-mixtral"]["custom_ops"]["bytes_per_token"] == mixtral, release
        assert g["moe"]["custom_ops"]["bytes_per_token"] == gpt_oss, release
    rows = json.loads(profile.TABLE.read_text())["releases"]
    m34, m19 = rows["0.34.0"]["forward"]["moe"], rows["0.19.0"]["forward"]["moe"]
    assert m34["rule_bytes_per_token"] == 221184 and m34["factor"] == round(233480 / 221184, 4) == 1.0556
    assert m19["basis"] == "derived" and m19["factor"] == round(217096 / 221184, 4) == 0.9815
    assert set(m34["models"]) == {"moe", "moe-mixtral"} and m34["models"]["moe"]["factor"] == 1.0101
    # every release with a forward golden (0.11.0 to 0.34.0) measured its MoE forward itself
    for f in sorted((GOLDENS / "forward").glob("*.json")):
        assert rows[f.stem]["forward"]["moe"]["basis"] == "derived", f.stem
    assert rows["0.11.0"]["forward"]["moe"]["factor"] == round(196656.125 / 221184, 4)


def test_encoder_golden_and_term():
    """Gemma 3's SigLIP tower (h 1,152, I 4,304, 16 heads × 72, a GELU MLP fc1 → fc2, not gated) on 0.34.0's
    custom-op path over 896 × 896 images (4,096 patches each): at the MLP, fc1's and GELU's [P, I] outputs and three
    [P, h] (hidden, residual, the norm's output): (3·1,152 + 2·4,304)·2 = 24,128 B per patch, with the image's pixel
    values 3·14·14·2 = 1,176 and the patch embeddings [P, h] 2,304 still live: 27,608. kvplan's tower rule
    (4h + 3I)·2 = 35,040 (it assumes a gated MLP), so the factor is 0.7879. The encoder cache keeps 256 tokens ×
    the text hidden 2,560 × 2 B = 1,310,720 B per image."""
    g = json.loads((GOLDENS / "encoder" / "0.34.0.json").read_text())["encoder"]["Gemma3ForConditionalGeneration"]
    v = g["custom_ops"]
    assert v["derived"] and v["bytes_per_patch"] == 27608 and v["patches_per_item"] == 4096
    assert v["output_bytes_per_item"] == 256 * 2560 * 2
    rows = json.loads(profile.TABLE.read_text())["releases"]
    e = rows["0.34.0"]["encoder"]["Gemma3ForConditionalGeneration"]
    assert e["rule_bytes_per_patch"] == 35040 and e["factor"] == round(27608 / 35040, 4) and e["basis"] == "derived"
    # kvplan counts it: gemma-3-4b-it on an H100 at 0.34.0 encodes max(8,192, 256) // 256 = 32 dummy images
    d = simulate("google/gemma-3-4b-it", gpu="H100", policy="vllm==0.34.0")
    term = next(t for t in d["budget"]["profile_terms"] if t["term"] == "encoder_cache")
    assert term["derivation"] == "derived" and "32 dummy image item(s)" in term["source"]
    # the measured config itself: the golden's bytes per patch exactly (0.34.0's run has no fixed part)
    assert f"{32 * 4096 * 27608:,} B" in term["source"]


def test_multimodal_limits_bound_the_encoder_pass():
    """--language-model-only sets every modality's limit to 0 (vLLM 0.34.0 config/multimodal.py
    get_limit_per_prompt): MultiModalBudget has no tower modality, the encoder budget is 0 and profile_run skips the
    encoder pass: the term is 0 (derived) and the activation is the text decoder's alone. --limit-mm-per-prompt
    '{"image": 1}' with --max-num-seqs 4: min(8,192 // 256, 4 · max(1, 1)) = 4 dummy images (4 · 4,096 patches)."""
    def term(**kw):
        d = simulate("google/gemma-3-4b-it", gpu="H100", policy="vllm==0.34.0", **kw)
        return d["budget"], next(t for t in d["budget"]["profile_terms"] if t["term"] == "encoder_cache")

    full, enc = term()
    lm, skipped = term(language_model_only=True)
    assert skipped["bytes"] == 0 and skipped["derivation"] == "derived" and "skips the encoder" in skipped["source"]
    assert lm["activation_peak_bytes"] == full["activation_peak_bytes"] - enc["bytes"]
    _, four = term(limit_mm_per_prompt={"image": 1}, max_num_seqs=4)
    assert "4 dummy image item(s)" in four["source"] and "16,384 patches" in four["source"]
    _, none = term(limit_mm_per_prompt={"image": 0})
    assert none["bytes"] == 0
