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
    rows = profile._table()
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
    row = profile._table()["0.34.0"]
    assert row["bytes_per_logit_cpu"] == round(v["sampler"][0]["bytes_per_logit"], 3) == 10.127
    # on CUDA nothing is sorted (no workspace); measured at 128/192 requests the per-request rows weigh 0.001 more
    assert v["cuda_workspace_ops"] == {} and row["bytes_per_logit"] == 10.128
    assert row["bytes_per_logit_high"] == 18.128  # + FlashInfer's masked logits and softmax, 2 fp32 copies


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
    rows = profile._table()
    d = rows["0.34.0"]["forward"]["dense"]
    assert d["rule_bytes_per_token"] == 106496 and d["factor"] == round(114696 / 106496, 4) and d["basis"] == "derived"
    # a release with no forward golden of its own takes the newest measured one before it, labelled assumed
    assert rows["0.33.0"]["forward"]["dense"]["basis"] in ("derived", "assumed")
    for release, row in rows.items():
        for fam in row["forward"].values():
            assert fam["basis"] == "derived" or fam["why"], release


def test_forward_factor_enters_the_activation():
    """Qwen3-8B on an H100 with 0.34.0 at 8,192 tokens: the forward is 1.077 × 8,192 · (4·4,096 + 36,864)·2;
    the activation is the larger of it and the sampler pass (with the hidden states), + the 256 MiB workspace and the
    V2 runner's per-request states."""
    from kvplan.budget.estimate import forward_terms

    era = get_era("vllm==0.34.0")
    cfg = json.loads((ROOT / "configs/Qwen/Qwen3-8B/config.json").read_text())
    f = forward_terms(era, cfg)
    assert f["basis"] == "derived" and f["family"] == "dense" and f["value"] == 1.077 and f["high"] == 1.2309
    d = simulate("Qwen/Qwen3-8B", gpu="H100", policy="vllm==0.34.0")
    b = d["budget"]
    forward = round(8192 * (4 * 4096 + 36864) * 2 * 1.077)
    s = sampler_terms(era, min(b["max_num_seqs"], 8192), 151936, "v2", b["max_num_seqs"], 8192)
    # + what the V2 runner keeps on the card (0.34.0 runs V2 only: test_v2_runner_persistent_buffers_per_release)
    assert s["persistent"] == round(b["max_num_seqs"] * (151936 * 4.25 + 17960) + 8192 * 13 + 4)
    assert b["activation_peak_bytes"] == max(forward, s["value"] + 8192 * 4096 * 2) + ACTIVATION_WORKSPACE_BYTES + \
        s["persistent"]
    act = next(t for t in b["profile_terms"] if t["term"] == "activation")
    assert "0.34.0's dense forward (Qwen3-8B) on the meta device" in act["source"]


def test_sampler_bytes_per_logit_by_release():
    """The measured peaks per logit on the CPU: 0.11.0 without FlashInfer (a pip install: FlashInfer is an extra there) sorts
    the logits: bf16 logits 2 + their fp32 copy 4 + the sorted values 4 + the int64 sort indices 8 + the sorted
    softmax 4 + the probabilities 4 + the exponential noise 4 = 30 at most, 28 live at the peak (the bf16 logits'
    slot is reused: the peak is what the tracker saw); 0.19.0's Triton top-k/top-p works in place: 2 + 4 + the
    probabilities 4 + the noise 4 = 14, plus the Triton wrapper's buffer of one fp32 vocabulary row per SM."""
    rows = profile._table()
    assert round(rows["0.11.0"]["bytes_per_logit_cpu"]) == 28 and rows["0.11.0"]["sm_row_bytes_per_vocab"] == 0
    assert round(rows["0.11.0"]["bytes_per_logit_low"]) == 6  # with FlashInfer: 2 + 4, FlashInfer's own unmeasured
    assert round(rows["0.19.0"]["bytes_per_logit"]) == 14 and rows["0.19.0"]["sm_row_bytes_per_vocab"] == 4
    assert rows["0.19.0"]["triton"] is True


def test_cuda_sort_workspace_by_hand():
    """torch's CUDA sort of [R, V] fp32 logits along V (aten/src/ATen/native/cuda/Sort.cpp, SortStable.cu; cub's
    DispatchSegmentedRadixSort / DispatchRadixSort temporary storage): from 128 slices an int64 index per element and
    cub's third key (4 B) and value (8 B) buffers, 20 B per element; 2-127 slices two int2 buffers (16 B), a key copy
    (4 B) and cub's third key and int2 buffers (4 + 8 B), 32 B; one slice V int64 indices and cub's buffers for V
    elements, 20 B per element of the slice; a slice of at most 4,096 is sorted in place: nothing."""
    ws = _script().cuda_sort_workspace_bytes
    assert ws((1024, 151936), 1, 4) == 20 * 1024 * 151936
    assert ws((128, 151936), 1, 4) == 20 * 128 * 151936
    assert ws((127, 151936), 1, 4) == 32 * 127 * 151936
    assert ws((2, 151936), 1, 4) == 32 * 2 * 151936
    assert ws((1, 151936), 1, 4) == 20 * 151936
    assert ws((1024, 4096), 1, 4) == 0 and ws((1024, 4097), 1, 4) == 20 * 1024 * 4097
    # a slice of a million or more is sorted one segment at a time whatever the batch
    assert ws((4, 1_000_000), 1, 4) == 20 * 1_000_000
    # an input not dense along dim is first copied (Sort.cpp: self_ = a contiguous copy)
    assert ws((1024, 151936), 1, 4, dense_along_dim=False) == 24 * 1024 * 151936


def test_sampler_on_cuda_adds_the_sort_workspace():
    """0.11.0's native top-k/top-p path on CUDA (the golden's ``cuda`` figures, measured at 128/192 and 32/64
    dummy requests): what is live when the logits are sorted — the bf16 logits 2, their fp32 copy 4, the sorted
    values 4 and int64 indices 8 — plus the sort kernel's workspace (test_cuda_sort_workspace_by_hand): 18 + 20 = 38 B
    per logit from 128 requests, 18 + 32 = 50 below; the CPU's own peak, 28, comes later in the pass. 0.19.0's Triton
    top-k/top-p sorts nothing: its CUDA figure is its CPU one."""
    g = json.loads((GOLDENS / "0.11.0.json").read_text())["sampler"]["no_flashinfer"]
    assert g["cuda_workspace_ops"] == {"aten.sort.default": 1}
    cuda = g["sampler"][0]["cuda"]
    assert round(cuda["bytes_per_logit"], 3) == 38.001 and round(cuda["bytes_per_logit_under_128"], 3) == 50.001
    row = rows_0110()
    assert (row["bytes_per_logit"], row["bytes_per_logit_under_128"], row["bytes_per_logit_cpu"]) == (38.001, 50.001,
                                                                                                     28.001)
    r19 = profile._table()["0.19.0"]
    assert r19["cuda_workspace_ops"] == {} and r19["bytes_per_logit"] == r19["bytes_per_logit_cpu"]
    era = get_era("vllm==0.11.0")
    assert sampler_terms(era, 64, 151936)["value"] == round(64 * 151936 * 50.001)
    assert sampler_terms(era, 1024, 151936)["value"] == round(1024 * 151936 * 38.001)


# llm-d's published split of vLLM 0.11.0's profile on one H100 (tests/logs/budget/15-llm-d-benchmark-empirical-h100-
# v0.11.0.txt, the calibration half; "Activation" = torch peak memory increase, GiB): model, TP, logged activation.
# gpt-oss-120b's row repeats gpt-oss-20b's 7.38 (its weights, KV and 0.9 x 79.18 GiB leave 3.4 GiB): left out.
LLM_D_ACTIVATION = [("openai/gpt-oss-20b", 1, 7.38), ("meta-llama/Llama-3.1-8B-Instruct", 1, 4.76),
                    ("Qwen/Qwen3-32B", 1, 5.64), ("Qwen/Qwen3-32B", 2, 5.64)]


@pytest.mark.parametrize("model,tp,logged_gib", LLM_D_ACTIVATION)
def test_activation_against_a_logged_split(model, tp, logged_gib):
    """At 1,024 dummy requests the sampler's sort dominates the profile's torch peak: the logged activation is within
    0.06 GiB of the derived part (sampler on CUDA + the forward's hidden states held), and inside kvplan's band;
    kvplan's value adds the 256 MiB it keeps for kernels' workspaces (never below the log)."""
    d = simulate(model, gpu="H100", policy="vllm==0.11.0", max_model_len=16000, block_size=128,
                 enable_prefix_caching=True, tensor_parallel_size=tp)
    act = next(t for t in d["budget"]["profile_terms"] if t["term"] == "activation")
    derived = (act["bytes"] - ACTIVATION_WORKSPACE_BYTES) / (1 << 30)
    assert abs(derived - logged_gib) < 0.06, (derived, logged_gib)
    assert act["low_bytes"] <= logged_gib * (1 << 30) <= act["high_bytes"] and act["bytes"] > logged_gib * (1 << 30)


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
    return profile._table()["0.11.0"]


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
    add-RMSNorm works in place, four [T, H]: 217,096. kvplan's rule takes the fused experts' two workspaces
    k·(max(I, H) + max(2I, H)) (kvplan.budget.estimate.forward_width): (4H + 2·(14,336 + 28,672))·2 = 204,800 for
    Mixtral, (4·2,880 + 4·(2,880 + 5,760))·2 = 92,160 for gpt-oss-20b, so the factors are 1.14 and 1.06 (Mixtral)
    and 1.2626 and 1.1376 (gpt-oss-20b, whose attention outputs [T, 5,120] and [T, 4,096] are live beside the
    workspace): the family's factor is the larger, gpt-oss-20b's. 0.11.0
    has no persistent workspace: the peak is inside fused_experts, its cache13 [T·k·2I] (caches 1 and 3 share it)
    and cache2 [T·k, I] beside three [T, H]: (2·2·14,336 + 2·14,336 + 3·4,096)·2 = 196,608, plus 48.125 B of routing
    tensors (top-k weights and ids, moe_align's sorted ids padded per expert block): 196,656.125."""
    for release, mixtral, gpt_oss in (("0.34.0", 233480, 116360), ("0.24.0", 233480, 116360),
                                      ("0.19.0", 217096, 104840), ("0.11.0", 196656.125, 86520.25)):
        g = json.loads((GOLDENS / "forward" / f"{release}.json").read_text())["forward"]
        assert g["moe-mixtral"]["custom_ops"]["bytes_per_token"] == mixtral, release
        assert g["moe"]["custom_ops"]["bytes_per_token"] == gpt_oss, release
    rows = profile._table()
    m34, m19 = rows["0.34.0"]["forward"]["moe"], rows["0.19.0"]["forward"]["moe"]
    assert m34["rule_bytes_per_token"] == 92160 and m34["factor"] == round(116360 / 92160, 4) == 1.2626
    assert m19["basis"] == "derived" and m19["factor"] == round(104840 / 92160, 4) == 1.1376
    assert set(m34["models"]) == {"moe", "moe-mixtral"} and m34["models"]["moe-mixtral"]["factor"] == round(
        233480 / 204800, 4) == 1.14
    # every release with a forward golden (0.11.0 to 0.34.0) measured its MoE forward itself
    for f in sorted((GOLDENS / "forward").glob("*.json")):
        assert rows[f.stem]["forward"]["moe"]["basis"] == "derived", f.stem
    assert rows["0.11.0"]["forward"]["moe"]["factor"] == round(196656.125 / 204800, 4)  # Mixtral's, the larger


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
    rows = profile._table()
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
    # ... less the V2 runner's inputs_embeds [8,192, 2,560] bf16 (the encoder runner a multimodal model served with
    # its inputs keeps: test_v2_runner_persistent_buffers_per_release), which a text-only runner does not allocate
    assert lm["activation_peak_bytes"] == full["activation_peak_bytes"] - enc["bytes"] - 8192 * 2560 * 2
    _, four = term(limit_mm_per_prompt={"image": 1}, max_num_seqs=4)
    assert "4 dummy image item(s)" in four["source"] and "16,384 patches" in four["source"]
    _, none = term(limit_mm_per_prompt={"image": 0})
    assert none["bytes"] == 0


PARALLEL_RELEASES = ("0.11.0", "0.19.0", "0.27.1", "0.34.0")
# releases before 0.24 whose dense TP/PP forward is 0.11.0's and 0.19.0's (four [T, H] at TP 1)
FOUR_WIDE_PARALLEL = ("0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0",
                      "0.19.0")


def _parallel(release: str) -> dict:
    return json.loads((GOLDENS / "parallel" / f"{release}.json").read_text())["parallel"]


def test_parallel_goldens_dense_by_hand():
    """Qwen3-8B (H 4,096, I 12,288, bf16) as rank 0 of a TP group and as each PP 2 stage
    (scripts/golden/profile_terms.py --parallel-all). At TP N the MLP's gate-up and SiLU-and-mul outputs shrink to
    3·I/N, and the reduced [T, H] of the out-of-place all-reduce (pynccl's torch.empty_like) is live beside the
    row-parallel layer's partial one: one more [T, H] than at TP 1. 0.10.1-0.14.0 and 0.19.0 (fused add-RMSNorm in
    place, four [T, H] at TP 1): (5·4,096 + 3·12,288/N)·2; 0.27.1/0.34.0 (five at TP 1, factor 1.077):
    (6·4,096 + 3·12,288/N)·2.
    PP 2: the first stage is TP 1's peak; the last stage's input is the runner's two persistent [T, H] buffers
    (hidden_states, residual: 16,384 B per token) where the first stage has one embedding output: + 4,096·2 where
    the fused add-RMSNorm writes in place into them (0.11.0, 0.19.0), + 2·4,096·2 from 0.24 (its add-RMSNorm makes
    new outputs: the buffers stay live beside a residual stream of the first stage's size). The
    logits on the last stage: [R, V/N] vocab-parallel, the all-gather's [N·R, V/N] and its reshaped [R, V] copy:
    2·(2 + 1/N) B per logit, every rank gets all 151,936."""
    H, I = 4096, 12288
    for release in sorted(set(PARALLEL_RELEASES) | set(FOUR_WIDE_PARALLEL)):
        lay = {k: v for k, v in _parallel(release)["dense"]["custom_ops"]["layouts"].items()}
        fives = 4 if release in FOUR_WIDE_PARALLEL else 5
        assert lay["tp1"]["bytes_per_token"] == (fives * H + 3 * I) * 2 + 8, release
        for n in (2, 4, 8):
            assert lay[f"tp{n}"]["bytes_per_token"] == ((fives + 1) * H + 3 * I // n) * 2, (release, n)
            assert lay[f"tp{n}"]["logits"]["bytes_per_logit"] == 2 * (2 + 1 / n)
            assert lay[f"tp{n}"]["logits"]["shape"] == [64, 151936]
            assert lay[f"tp{n}"]["collectives_per_forward"]["all_reduce"] == 2 * 36 + 1  # two a layer + embedding
        assert lay["pp2-first"]["bytes_per_token"] == lay["tp1"]["bytes_per_token"]
        assert lay["pp2-first"]["layers_on_rank"] == lay["pp2-last"]["layers_on_rank"] == 18
        assert lay["pp2-last"]["intermediate_bytes_per_token"] == 2 * H * 2
        assert lay["pp2-last"]["bytes_per_token"] == ((fives + (1 if fives == 4 else 2)) * H + 3 * I) * 2, release
        assert lay["tp1"]["logits"]["bytes_per_logit"] == 2 and "logits" not in lay["pp2-first"]


def test_parallel_pp_not_run_where_the_release_refuses_it():
    """gpt-oss-20b's GptOssForCausalLM has no SupportsPP at 0.10.1 and 0.10.1.1 (gpt_oss.py line 229:
    ``class GptOssForCausalLM(nn.Module)``; 0.10.2 line 616 adds it), so their ModelConfig refuses PP > 1 for it:
    the parallel goldens measure its TP layouts only and name the PP stages not run; the MoE family's PP 2 factors
    there are Mixtral-8x7B's alone (0.9602 first, 0.9617 last, as 0.10.2's and 0.11.0's, where gpt-oss-20b's
    0.9388 / 0.9423 are below them), with gpt-oss-20b listed under ``not_run``."""
    for release in ("0.10.1", "0.10.1.1"):
        for path in ("custom_ops", "native"):
            g = _parallel(release)["moe"][path]
            assert sorted(g["layouts"]) == ["tp1", "tp2", "tp4", "tp8"], (release, path)
            assert sorted(g["layouts_not_run"]) == ["pp2-first", "pp2-last"]
            assert all("GptOssForCausalLM does not implement SupportsPP" in why
                       for why in g["layouts_not_run"].values())
        pp = profile._table()[release]["parallel"]["moe"]["layouts"]
        assert (pp["pp2-first"]["factor"], pp["pp2-last"]["factor"]) == (0.9602, 0.9617)
        assert pp["pp2-first"]["models"] == {"moe-mixtral": 0.9602}
        assert list(pp["pp2-last"]["not_run"]) == ["configs/openai/gpt-oss-20b/config.json"]
    for release in ("0.10.2", "0.11.0"):
        assert "layouts_not_run" not in _parallel(release)["moe"]["custom_ops"]
        pp = profile._table()[release]["parallel"]["moe"]["layouts"]
        assert pp["pp2-first"]["models"] == {"moe": 0.9388, "moe-mixtral": 0.9602} and "not_run" not in pp["pp2-first"]


def test_parallel_moe_workspace_keeps_the_hidden_width():
    """The fused-MoE workspaces of 0.19+ are [T, k, max(I/N, H)] and [T, k, max(2I/N, H)] (fused_moe.py
    TritonExperts.workspace_shapes, 0.19.0 lines 1988-1989): once 2I/N ≤ H they stop shrinking with TP. gpt-oss-20b
    (H = I = 2,880, top-4): 4·(2,880 + 5,760)·2 = 69,120 B per token at TP 1, 4·(2,880 + 2,880)·2 = 46,080 from TP 2;
    Mixtral-8x7B (H 4,096, I 14,336, top-2): 172,032, 86,016, 45,056, 32,768 at TP 1, 2, 4, 8."""
    for release in ("0.19.0", "0.27.1", "0.34.0"):
        g = _parallel(release)
        for label, per in (("moe", {1: 69120, 2: 46080, 4: 46080, 8: 46080}),
                           ("moe-mixtral", {1: 172032, 2: 86016, 4: 45056, 8: 32768})):
            lay = g[label]["custom_ops"]["layouts"]
            for n, b in per.items():
                ws = [x for x in lay[f"tp{n}"]["live_at_peak"] if x[1] == "uint8"]
                assert ws and ws[0][2] == b * 512, (release, label, n)


def test_parallel_rule_reproduces_every_golden():
    """kvplan's per-rank rule (forward_rule_bytes_per_token) times the table's factor for the family at that TP
    size or PP stage gives every parallel golden's bytes per token: the family's larger model exactly (the factor's
    four decimals), the other MoE model never below it."""
    from kvplan.budget.estimate import forward_rule_bytes_per_token
    from kvplan.budget.weights import layout_weights
    from kvplan.model.layout import build_model_layout

    checked = 0
    for f in sorted((GOLDENS / "parallel").glob("*.json")):
        release = f.stem
        for label, paths in json.loads(f.read_text())["parallel"].items():
            v = paths["custom_ops"]
            layout = build_model_layout(str(ROOT / Path(v["model"]).parent))
            cfg = layout.target.text_config
            inv = layout_weights(layout).target
            for key, lay in v["layouts"].items():
                tp, pp = lay["tp"], lay["pp"]
                fac = profile.forward_factors(release, cfg, tp=tp, pp=pp)
                assert fac["basis"] == "derived", (release, key)
                factor = fac["value"] if lay["first_stage"] else fac["later"]["value"]
                rule = forward_rule_bytes_per_token(inv, cfg, 2, tp=tp, first_stage=lay["first_stage"])
                kvplan = rule * factor
                assert kvplan >= lay["bytes_per_token"] * (1 - 5e-5), (release, label, key)
                top = profile._table()[release]["parallel"][profile.forward_family(
                    cfg)]["layouts"][key]
                if top["model"] == v["model"]:
                    assert abs(kvplan / lay["bytes_per_token"] - 1) < 5e-5, (release, label, key)
                checked += 1
    assert checked >= 4 * 3 * 6


def test_activation_on_a_tp_rank_and_a_pp_stage():
    """Qwen3-8B on an H100 with 0.19.0, 16 sequences (the forward is the peak): at TP 2 the activation is
    8,192 · (5·4,096 + 3·12,288/2)·2 = 637,534,208 B (factor 1.0) + the 256 MiB workspace; at PP 2 the first stage
    8,192 · 106,504 (TP 1's, factor 1.0001 on (4·4,096 + 36,864)·2) and the last 8,192 · 114,688, the sampler pass
    there held with the hidden states and the two intermediate-tensor buffers (3 · 8,192 · 4,096 · 2)."""
    era = get_era("vllm==0.19.0")
    d = simulate("Qwen/Qwen3-8B", gpu="H100", policy="vllm==0.19.0", tensor_parallel_size=2, max_num_seqs=16)
    assert d["budget"]["activation_peak_bytes"] == 8192 * (5 * 4096 + 3 * 12288 // 2) * 2 + ACTIVATION_WORKSPACE_BYTES
    act = next(t for t in d["budget"]["profile_terms"] if t["term"] == "activation")
    assert "as TP 2 rank 0" in act["source"] and act["derivation"] == "derived"
    d = simulate("Qwen/Qwen3-8B", gpu="H100", policy="vllm==0.19.0", pipeline_parallel_size=2, max_num_seqs=16)
    s = sampler_terms(era, 16, 151936)["value"]
    stages = {st["stage"]: st["activation_peak_bytes"] for st in d["budget"]["stages"]}
    assert stages[0] == round(8192 * 106496 * 1.0001) + ACTIVATION_WORKSPACE_BYTES
    assert stages[1] == max(8192 * 114688, s + 3 * 8192 * 4096 * 2) + ACTIVATION_WORKSPACE_BYTES


def test_sampler_under_tp_is_at_least_the_logits_gather():
    """Every TP rank runs the sampler over the full logits (the V1 LogitsProcessor all-gathers): the sampler term is
    the larger of the derived pass and compute_logits' R·V·(2 + 1/tp)·a; with kvplan's old 8 B per logit the pass
    is the larger, with a 2 B one (a stand-in here) the gather is."""
    from kvplan.budget.estimate import estimate_activation_bytes, logits_gather_bytes

    assert logits_gather_bytes(64, 151936, 2, 2) == 64 * 151936 * 5 and logits_gather_bytes(64, 151936, 2, 1) == \
        64 * 151936 * 2
    inv = type("Inv", (), {"weights": ()})()
    cfg = {"hidden_size": 64, "vocab_size": 151936}
    kw = dict(max_num_batched_tokens=64, max_num_seqs=64)
    small = 64 * 151936 * 2
    assert estimate_activation_bytes(inv, cfg, 2, tp=4, sampler_bytes=small, **kw) == \
        round(64 * 151936 * 2 * 2.25) + 64 * 64 * 2 + ACTIVATION_WORKSPACE_BYTES


def test_collective_buffers_cited_per_release():
    """The communicators' buffers (custom all-reduce, symmetric memory, NCCL) are made before the worker's init
    snapshot: in the start-up memory, not the profile; each cited release's lines hold the calls named (read from the
    unpacked release where it is on this machine)."""
    rows = {r: {t["term"]: t for t in profile.term_bases(r, cudagraph_counted=False, calibrated_groups={})}
            for r in ("0.19.0", "0.20.0", "0.10.1")}
    assert rows["0.19.0"]["collective buffers (TP/PP)"]["from"] == "0.19.0"
    assert rows["0.20.0"]["collective buffers (TP/PP)"]["from"] == "0.19.0"
    assert rows["0.10.1"]["collective buffers (TP/PP)"]["from"] == "0.11.0"
    assert "custom_all_reduce.py 187" in rows["0.19.0"]["collective buffers (TP/PP)"]["detail"]
    # the unpacked releases (scripts/golden/README.md: RELEASE_SRC, else .golden-venvs/rel-src or the shared copy
    # beside the checkout)
    import os

    src = next((p for p in (Path(os.environ.get("RELEASE_SRC") or ROOT / ".golden-venvs" / "rel-src"),
                            ROOT.parent / "golden-venvs" / "rel-src") if p.is_dir()), None)
    if src is None:
        pytest.skip("the unpacked releases are not on this machine")
    comm = "vllm/distributed/device_communicators/"
    # a release is read where release_env.sh has finished unpacking it (its .done marker)
    unpacked = {r: v for r, v in profile.COLLECTIVE_SITES.items() if (src / r / ".done").is_file()}
    if not unpacked:
        pytest.skip("none of the cited releases is unpacked on this machine")
    for release, (made, rank_data, ipc, symm, warm, outs) in unpacked.items():
        lines = lambda f: (src / release / f).read_text().splitlines()  # noqa: E731
        assert "torch.empty" in lines(comm + "custom_all_reduce.py")[int(rank_data.split()[-1]) - 1], release
        assert "torch_symm_mem.empty" in lines(comm + "symm_mem.py")[int(symm.split()[-1]) - 1], release
        assert "empty_like" in lines(comm + "pynccl.py")[int(outs.split()[1].rstrip(",")) - 1], release
        assert "empty_like" in lines(comm + "custom_all_reduce.py")[int(outs.split()[-1]) - 1], release
        worker = lines("vllm/v1/worker/gpu_worker.py")
        at, snap = int(made.split()[1]), int(made.split()[-1])
        assert "init_worker_distributed_environment" in worker[at - 1] and "MemorySnapshot" in worker[snap - 1]
        assert all("create_shared_buffer" in lines(comm + "custom_all_reduce.py")[int(x) - 1]
                   for x in ipc.split(", ")), release


# The V2 model runner's _dummy_sampler_run (vllm/v1/worker/gpu/model_runner.py), run by profile_terms.py --runner-v2
# beside the V1 runner's in the releases that have both (the golden's "v2"; the V1 variants as recorded before):
# release -> bytes per logit at vocabulary 151,936. The bf16 logits are 2 B; 0.19.0-0.25.1 copy them to fp32 in
# apply_sampling_params whatever the batch asks (4 B more: 0.19.0 sample/sampler.py line 115, 0.22.1 line 133,
# 0.25.1 line 157; measured 6.016 in 0.19-0.21, 6.012 from 0.22: about 600 B less per request, not per logit);
# 0.26.0 keeps the model dtype and clones only for raw logprobs (line 162-168), 0.27.1 and later copy only when a
# request needs processing (0.27.1 line 155, 0.28.0 line 192), which the default dummy batch does not: 2 B. 0.33.0's
# _dummy_sampler_run adds the warmup-parameter pass (model_runner.py line 1010: SamplingParams.for_sampler_warmup(),
# top-k/top-p on FlashInfer's sampling call, the fp32 pipeline): 10.127 B, as 0.34.0's 10.128 (test_v2_sampler_of_0_34_0).
GUMBEL, FLASHINFER = "V2 Sampler: gumbel_sample", "V2 Sampler: flashinfer_sample"
V2_SAMPLER_BYTES_PER_LOGIT = {**{r: (6.016, GUMBEL) for r in ("0.19.0", "0.19.1", "0.20.0", "0.20.2", "0.21.0")},
                              **{r: (6.012, GUMBEL) for r in ("0.22.1", "0.23.0", "0.24.0", "0.25.1")},
                              **{r: (2.012, GUMBEL) for r in ("0.26.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0",
                                                              "0.31.0", "0.32.0")},
                              "0.33.0": (10.127, FLASHINFER)}


@pytest.mark.parametrize("release,expected", sorted(V2_SAMPLER_BYTES_PER_LOGIT.items()))
def test_v2_runner_sampler_goldens(release, expected):
    """Each release's V2 runner golden: run on the V2 runner (Gumbel-max or FlashInfer sampling: nothing sorted, no
    CUDA workspace), its CPU and CUDA figures equal, and the table's ``v2`` row is that golden's; the V1 row is
    untouched (the Triton top-k/top-p path's 14.001 B per logit in these releases)."""
    per_logit, path = expected
    g = json.loads((GOLDENS / f"{release}.json").read_text())
    v = g["v2"]["flashinfer" if g["flashinfer_required"] else "no_flashinfer"]
    assert v["derived"] and v["runner"] == "V2 GPUModelRunner" and v["topk_topp_path"] == path
    assert v["cuda_workspace_ops"] == {} and bool(v["flashinfer_sampling_calls"]) is (path == FLASHINFER)
    at = v["sampler"][0]
    assert at["vocab_size"] == 151936 and round(at["bytes_per_logit"], 3) == per_logit
    assert round(at["cuda"]["bytes_per_logit"], 3) == per_logit
    row = profile._table()[release]
    assert row["runner"] == "v1" and row["bytes_per_logit"] == 14.001
    assert row["v2"]["runner"] == "v2" and row["v2"]["basis"] == "derived" and row["v2"]["from"] == release
    assert row["v2"]["bytes_per_logit"] == per_logit
    # FlashInfer's own masked logits and softmax (2 fp32 copies) at the high end where its sampling call ran
    assert row["v2"]["bytes_per_logit_high"] == round(per_logit + (8 if path == FLASHINFER else 0), 3)


def test_budget_takes_the_runner_the_engine_picks():
    """Qwen3-32B (dense, vocab 151,936) on an H100 with vLLM 0.27.1: the release's by-model rule gives a dense model
    the V2 runner (kvplan.engines.vllm.runner.v2_by_model), so the sampler pass is the V2 golden's
    1,024 × 151,936 × 2.012 + 8 = 313,031,926 B; ``--model-runner v1`` takes the V1 golden's 14.001 B per logit
    + 132 × 151,936 × 4 + 1,600 (2,258,533,886 B). The V2 runner's profile_cudagraph_memory returns 0 up to 0.28 (model_runner.py 0.27.1 line
    749), so the graphs are not subtracted on V2 and are on V1."""
    reqs, vocab = 1024, 151936
    v2 = simulate("Qwen/Qwen3-32B", gpu="H100", policy="vllm==0.27.1", max_model_len=32768)["budget"]
    v1 = simulate("Qwen/Qwen3-32B", gpu="H100", policy="vllm==0.27.1", max_model_len=32768,
                  model_runner="v1")["budget"]
    # V1: + the Triton top-k/top-p wrapper's fp32 row per SM (132 on the assumed H100) and its fixed tables
    r1 = profile._table()["0.27.1"]
    assert (r1["sm_row_bytes_per_vocab"], r1["fixed_bytes"]) == (4.0, 1600)
    assert round(reqs * vocab * 2.012) + 8 == 313_031_926
    assert round(reqs * vocab * 14.001 + 132 * vocab * 4) + 1600 == 2_258_533_886
    act2 = next(t for t in v2["profile_terms"] if t["term"] == "activation")
    act1 = next(t for t in v1["profile_terms"] if t["term"] == "activation")
    assert "the sampler pass 313,031,926 B" in act2["source"] and "V2 model runner's" in act2["source"]
    assert "the sampler pass 2,258,533,886 B" in act1["source"] and "V2 model runner" not in act1["source"]
    # V1: the sampler (+ the forward's 8,192 × 5,120 bf16 hidden states) dominates the forward's rule
    assert v1["activation_peak_bytes"] == 2_258_533_886 + 8192 * 5120 * 2 + ACTIVATION_WORKSPACE_BYTES
    cg2 = next(t for t in v2["profile_terms"] if t["term"] == "cudagraph")
    cg1 = next(t for t in v1["profile_terms"] if t["term"] == "cudagraph")
    assert cg2["bytes"] == 0 and cg2["derivation"] == "not counted" and cg1["bytes"] > 0
    # 0.19.1's V1 default is unchanged: no V2 row is read
    s = sampler_terms(get_era("vllm==0.19.1"), reqs, vocab)
    assert s["value"] == 2_258_533_886 and "V2" not in s["source"]


def test_v2_sampler_row_where_none_was_run(tmp_path):
    """A release with no V2 golden of its own takes the newest one before it, assumed: every release with both runners
    has its own since 2026-12-07, so the table is built from the goldens with 0.25.0's V2 run left out (0.25.0 ←
    0.24.0, 6.012 B per logit); the V2 row of 0.34.0 (V2 only) is the release's own row; a V1-only era asked for V2
    keeps the V1 figure, assumed."""
    import shutil

    goldens = tmp_path / "goldens"
    shutil.copytree(GOLDENS, goldens)
    g = json.loads((goldens / "0.25.0.json").read_text())
    del g["v2"]
    (goldens / "0.25.0.json").write_text(json.dumps(g))
    _script().table(goldens, tmp_path / "t.json")
    rows = json.loads((tmp_path / "t.json").read_text())["releases"]
    v2 = rows["0.25.0"]["v2"]
    assert (v2["from"], v2["basis"], v2["bytes_per_logit"]) == ("0.24.0", "assumed", 6.012)
    assert v2["why"] == "the V2 runner's sampler not run for this release"
    row, basis, _ = profile.sampler_row("0.25.0", "v2")  # the committed table: 0.25.0's own V2 run
    assert (row["from"], basis, row["bytes_per_logit"]) == ("0.25.0", "derived", 6.012)
    row, basis, _ = profile.sampler_row("0.34.0", "v2")
    assert row is profile._table()["0.34.0"] and basis == "derived" and row["bytes_per_logit"] == 10.128
    row, basis, src = profile.sampler_row("0.18.1", "v2")
    assert row["runner"] == "v1" and basis == "assumed" and "V2 runner's sampler not run" in src


def test_v2_runner_terms_on_the_profile_terms_page():
    """The page lists the V2 runner's sampler beside V1's where the release has both, and where its V2 runner
    estimates no graphs (0.22-0.28: profile_cudagraph_memory returns 0) a CUDA-graph row saying so; from 0.29 the
    V2 runner estimates them as V1 does (eras.py v2_runner_estimates_cudagraphs)."""
    for release, counted in (("0.27.1", False), ("0.29.0", True)):
        era = get_era(f"vllm=={release}")
        assert era.cudagraph_memory_in_profile and era.v2_runner_estimates_cudagraphs is counted
        rows = {t["term"]: t for t in profile.term_bases(release, cudagraph_counted=True, calibrated_groups={},
                                                         v2_cudagraph_counted=counted)}
        assert rows["sampler (V2 model runner)"]["detail"].startswith(f"tests/golden/profile_terms/{release}.json v2")
        assert ("CUDA graphs (V2 model runner)" in rows) is not counted
    rows = {t["term"]: t for t in profile.term_bases("0.27.1", cudagraph_counted=True, calibrated_groups={},
                                                     v2_cudagraph_counted=False)}
    assert profile.V2_CUDAGRAPH_NOT_COUNTED in rows["CUDA graphs (V2 model runner)"]["detail"]
    assert "sampler (V2 model runner)" not in {t["term"] for t in profile.term_bases(
        "0.34.0", cudagraph_counted=True, calibrated_groups={})}


def test_v2_runner_persistent_buffers_per_release():
    """What the V2 runner keeps on the card after the profile run, from each release's own GPUModelRunner built,
    loaded (a stand-in loader: the weights are their own term) and profiled on the CPU (the goldens' ``persistent``:
    ``profile_terms.py --runner-v2``, a grid of max_num_seqs R 32/64, vocabulary V 151,936/32,000, max_model_len L
    4,096/8,192 and max_num_batched_tokens T 2,048/4,096, checked at R 48, V 262,144, L 6,144, T 3,072). 0.27.1 to
    0.34.0 alike, by the allocating lines the golden records (0.29.0's line numbers):
    - per request and vocabulary entry 4.25 B: sample/penalties.py 40 ``output_bin_counts`` [R, V] int32 (4 B),
      penalties.py 32 ``prompt_bin_mask`` [R, V/32] int32 (0.125 B), structured_outputs.py 51 ``grammar_bitmask``
      [R, V/32] int32 (0.125 B, the term the per-state fit before this one left out);
    - per request 17,960 B: bad_words.py 22 (1,024 int32: 4,096 B) and 28 (129 int32: 516 B), logit_bias.py 23/30/35
      (3 × 4,096 B) and 46 (512 B), logprob.py 245 (128 int32: 512 B), states.py 52/58 (total_len,
      num_computed_tokens: 2 × 4 B), 65 (last_sampled_tokens int64: 8 B), 80 (next_prefill_tokens int32: 4 B),
      input_batch.py 31/34/36 (query_start_loc, seq_lens, dcp_local_seq_lens int32: 12 B), structured_outputs.py 48
      (logits_indices int32: 4 B): 4,096 + 516 + 12,288 + 512 + 512 + 8 + 8 + 4 + 12 + 4 = 17,960;
    - per batched token 13 B: input_batch.py 28-30 (input_ids int32, positions int64, is_padding bool);
    - per max_model_len slot 0 (all_token_ids is a UvaBuffer: pinned host memory), fixed 4 B (query_start_loc's
      R + 1st entry);
    - a multimodal model served with its inputs (Gemma 4 26B-A4B, inputs_embeds_size 2,816): + 5,632 B per batched
      token, mm/encoder_runner.py 58 ``inputs_embeds`` [T, 2,816] bf16.
    vLLM counts them from 0.27.1, whose memory_profiling takes the free memory's drop since the runner was created
    (total_consumed); 0.26.0 and before leave them out."""
    for release in ("0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0"):
        g = json.loads((GOLDENS / f"{release}.json").read_text())
        p = (g["sampler"] if release == "0.34.0" else g["v2"])["flashinfer"]["persistent"]
        assert p["counted"] and p["grid"] == "RxVxLxT"
        assert (p["bytes_per_logit"], p["bytes_per_req"], p["bytes_per_token"], p["bytes_per_token_slot"],
                p["bytes_per_vocab"], p["fixed_bytes"]) == (4.25, 17960, 13, 0, 0, 4), release
        # the fit predicts the point it was not fitted on, to the byte
        assert p["check"]["measured"] == p["check"]["predicted"] == 48 * (262144 * 4.25 + 17960) + 3072 * 13 + 4
        at = p["sites"]["32x151936x4096x2048"]
        assert sum(at.values()) == p["bytes"]["32x151936x4096x2048"] == 32 * (151936 * 4.25 + 17960) + 2048 * 13 + 4
        assert max(at.values()) == 32 * 151936 * 4  # output_bin_counts, the largest
        mm = p["multimodal"]["Gemma4ForConditionalGeneration"]
        if release == "0.27.1":  # its Gemma 4 config class does not read this transformers 5 config: said why
            assert not mm["derived"] and "AmbiguousGlobalPerLayerAttributeError" in mm["why"]
            continue
        assert (mm["inputs_embeds_size"], mm["bytes_per_token"], mm["fixed_bytes"]) == (2816, 2816 * 2, 0)
    assert not json.loads((GOLDENS / "0.26.0.json").read_text())["v2"]["flashinfer"]["persistent"]["counted"]
    row = profile.sampler_row("0.29.0", "v2")[0]
    assert profile.persistent_bytes(row, 1024, 151936, max_num_batched_tokens=8192) == \
        1024 * (151936 * 4.25 + 17960) + 8192 * 13 + 4
    assert profile.persistent_bytes(profile.sampler_row("0.26.0", "v2")[0], 1024, 151936) == 0
    # the V1 runner has no such states: nothing added
    assert profile.persistent_bytes(profile.sampler_row("0.29.0", "v1")[0], 1024, 151936) == 0


def test_v2_runner_persistent_for_gemma_4_against_the_per_state_fit():
    """Gemma 4 26B-A4B (V 262,144, inputs_embeds_size 2,816, bf16) on 0.29.0's V2 runner. The per-state fit it
    replaces: R · (V · 4.125 + 18,041) + 4. The runner's: R · (V · 4.25 + 17,960) + T · 13 + 4, + T · 5,632 with
    images served. R 256, T 2,048: 281,442,564 B before; 256 · 1,132,072 + 26,628 = 289,837,060 (+8,394,496);
    301,371,396 with the inputs_embeds (+19,928,832). R 16, T 512: 17,590,164 before; 18,119,812 (+529,648);
    21,003,396 with images (+3,413,232)."""
    era = get_era("vllm==0.29.0")
    for (R, T), before, text, images in (((256, 2048), 281_442_564, 289_837_060, 301_371_396),
                                         ((16, 512), 17_590_164, 18_119_812, 21_003_396)):
        assert round(R * (262144 * 4.125 + 18041) + 4) == before
        assert sampler_terms(era, min(R, T), 262144, "v2", R, T)["persistent"] == text
        s = sampler_terms(era, min(R, T), 262144, "v2", R, T, 2816 * 2)
        assert s["persistent"] == images and "inputs_embeds [T, 5,632 B]" in s["source"]


def test_v2_runner_persistent_with_an_eagle3_drafter():
    """The speculator's share (profile_terms.py --runner-v2 with RedHatAI/Qwen3-8B-speculator.eagle3 at
    num_speculative_tokens k = 2 and 4, its drafter a parameter-free stand-in, its dummy propose not run). 0.29.0, by
    the golden's allocating lines: per speculative token 0.125 B per request and vocabulary entry (the grammar bitmask
    has R · (k + 1) rows: structured_outputs.py 51) and 20 B per request (draft_tokens int64 in RequestState, states.py
    73, and in the speculator, speculator.py 142: 16 B; the bitmask's logits_indices int32, 4 B); with any k 44 B per
    request (the speculator's InputBuffers, idx_mapping, temperature, seeds, last_token_indices,
    sample_src_positions), 13 B per batched token (its InputBuffers) + its hidden_states [T, draft hidden] bf16
    (autoregressive/speculator.py 33: 2 · 4,096 B here), 12 B fixed.
    Qwen3-8B (V 151,936) on an H100 at 0.29.0, R 1,024, T 8,192, k 3: the text runner's 1,024 · (151,936 · 4.25 +
    17,960) + 8,192 · 13 + 4 = 679,723,012 B; the speculator's 1,024 · 151,936 · 0.375 + 1,024 · (44 + 3 · 20)
    + 8,192 · (13 + 8,192) + 12 = 125,665,292 B; 805,388,304 B in all."""
    g = json.loads((GOLDENS / "0.29.0.json").read_text())["v2"]["flashinfer"]["persistent"]["speculative"]
    for k, per_logit, per_req in (("2", 0.25, 84), ("4", 0.5, 124)):
        f = g[k]
        assert (f["bytes_per_logit"], f["bytes_per_req"], f["bytes_per_token"], f["fixed_bytes"]) == (
            per_logit, per_req, 13 + 2 * 4096, 12) and f["draft_hidden_size"] == 4096
        assert f["sites"]["32x151936x4096x2048"][
            "v1/worker/gpu/spec_decode/autoregressive/speculator.py:33 < v1/worker/gpu/spec_decode/__init__.py:56"] == \
            2048 * 4096 * 2
    # per release (the table's base + k · per_spec_token): the speculator's own per-request buffers grow from 36 B
    # (0.27.1) to 49 B (0.32.0), 4 B more per speculative token and request from 0.30.0, 4 B more fixed in 0.34.0
    # (spec_decode/speculator.py 220-236 and autoregressive/speculator.py 28-30 there); the rest as 0.29.0
    for release, per_req, fixed in (("0.27.1", (36, 20), 12), ("0.28.0", (36, 20), 12), ("0.29.0", (44, 20), 12),
                                    ("0.30.0", (45, 24), 12), ("0.31.0", (45, 24), 12), ("0.32.0", (49, 24), 12),
                                    ("0.33.0", (49, 24), 12), ("0.34.0", (49, 24), 16)):
        row = profile._table()[release]
        spec = row.get("v2", row)["persistent"]["speculative"]
        assert {t: (f["base"], f["per_spec_token"]) for t, f in spec.items() if isinstance(f, dict)} == {
            "bytes_per_logit": (0, 0.125), "bytes_per_req": per_req, "bytes_per_token": (13, 0),
            "bytes_per_vocab": (0, 0), "fixed_bytes": (fixed, 0)}, release
    era = get_era("vllm==0.29.0")
    assert sampler_terms(era, 1024, 151936, "v2", 1024, 8192)["persistent"] == 679_723_012
    s = sampler_terms(era, 1024, 151936, "v2", 1024, 8192, 0, 3, 4096 * 2)
    assert s["persistent"] == 679_723_012 + 125_665_292 == 805_388_304
    d = simulate("Qwen/Qwen3-8B", gpu="H100", policy="vllm==0.29.0", drafter="RedHatAI/Qwen3-8B-speculator.eagle3",
                 num_speculative_tokens=3)
    act = next(t for t in d["budget"]["profile_terms"] if t["term"] == "activation")
    assert "805,388,304 B" in act["source"] and "3-token autoregressive speculator" in act["source"]


def test_soft_capped_compute_logits_above_the_v2_sampler_pass():
    """The dummy sampler run calls the model's compute_logits, then the sampler on its logits; the derived pass was
    measured behind a stand-in compute_logits (the bf16 logits alone). Gemma 4's LogitsProcessor soft-caps
    (final_logit_softcapping 30): logits / cap, tanh, · cap, each out of place (logits_processor.py, 0.29.0 lines
    113-116), so two [R, V] bf16 tensors are live at once: 4 B per logit, which Gemma 4's own compute_logits on the
    meta device measured in every release whose forward golden ran it. On 0.29.0's V2 runner the pass is 2.012 B
    per logit, so the run's peak is compute_logits': R 256 · V 262,144 · 4 = 268,435,456 B (the pass alone
    256 · 262,144 · 2.012 + fixed = 135,023,042 B). On the V1 runner (14 B per logit) the pass stays the larger.
    A soft-capped model without its own row (Gemma 2 9B: V 256,000, soft cap 30) takes the same 2 tensors."""
    from kvplan.budget.estimate import SOFT_CAP_LOGITS_TENSORS, with_compute_logits

    seen = 0
    for f in sorted((GOLDENS / "forward").glob("*.json")):
        row = (json.loads(f.read_text()).get("architectures") or {}).get("Gemma4ForConditionalGeneration") or {}
        logits = (row.get("custom_ops") or {}).get("logits")
        if logits:
            assert logits["bytes_per_logit"] == SOFT_CAP_LOGITS_TENSORS * 2 and logits["shape"] == [64, 262144]
            seen += 1
    assert seen >= 10
    era = get_era("vllm==0.29.0")
    cfg = json.loads((ROOT / "configs/google/gemma-4-26B-A4B-it/config.json").read_text())["text_config"]
    v2 = sampler_terms(era, 256, 262144, "v2", 256, 2048)
    assert v2["value"] == 135_023_042
    capped = with_compute_logits(v2, era, cfg, "Gemma4ForConditionalGeneration", 256, 262144, 2)
    assert capped["value"] == capped["low"] == 256 * 262144 * 4 == 268_435_456
    assert "Gemma4ForConditionalGeneration's own compute_logits (derived" in capped["source"]
    v1 = sampler_terms(era, 256, 262144, "v1", 256, 2048)
    assert with_compute_logits(v1, era, cfg, "Gemma4ForConditionalGeneration", 256, 262144, 2) == v1
    gemma2 = json.loads((ROOT / "configs/google/gemma-2-9b-it/config.json").read_text())
    g2 = with_compute_logits(sampler_terms(era, 256, 256000, "v2", 256, 2048), era, gemma2, "Gemma2ForCausalLM",
                             256, 256000, 2)
    assert g2["value"] == 256 * 256000 * 4 and "soft cap (final_logit_softcapping 30)" in g2["source"]
    plain = json.loads((ROOT / "configs/google/gemma-3-12b-it/config.json").read_text())["text_config"]
    s = sampler_terms(era, 256, 262208, "v2", 256, 2048)
    assert with_compute_logits(s, era, plain, "Gemma3ForConditionalGeneration", 256, 262208, 2) == s


@pytest.mark.parametrize("release,sampler,high,in_profile", [
    ("0.19.0", 42.126, 42.126, False), ("0.22.1", 42.126, 42.126, False), ("0.23.0", 10.127, 18.127, False),
    ("0.26.0", 12.126, 20.126, False), ("0.29.0", 10.127, 18.127, False), ("0.32.0", 10.127, 18.127, False),
    ("0.33.0", 10.127, 18.127, True)])
def test_v2_runner_warmup_goldens(release, sampler, high, in_profile):
    """The V2 runner's warm-up after the KV cache is sized (``--runner-v2 --warmup-pass``: the release's Sampler over
    SamplingParams.for_sampler_warmup() and its compute_prompt_logprobs_with_chunking, on the CPU): the table's
    ``v2_warmup`` row is the release's own golden at a 151,936 vocabulary, on CUDA (the sort's workspace: 42.126 B
    per logit up to 0.22.1 against 28.126 on the CPU), FlashInfer's two fp32 [R, V] copies (8 B) at the high end
    where its sampling call ran (0.23.0+); the prompt logprobs 2 B per logit (the chunk's bf16 logits). From 0.33.0
    the profile's _dummy_sampler_run runs the sampler's warm-up-parameter pass itself (sampler_in_profile)."""
    g = json.loads((GOLDENS / f"{release}.json").read_text())
    v = g["v2_warmup"]["flashinfer"]
    assert v["derived"] and v["pass"] == "warm-up (SamplingParams.for_sampler_warmup)"
    at = v["sampler"][0]
    assert at["vocab_size"] == 151936 and round(at["cuda"]["bytes_per_logit"], 3) == sampler
    assert round(v["prompt_logprobs"][0]["bytes_per_logit"], 3) == 2.0
    row = profile._table()[release]["v2_warmup"]
    assert (row["basis"], row["from"], row["sampler_in_profile"]) == ("derived", release, in_profile)
    assert (row["sampler"]["bytes_per_logit"], row["sampler"]["bytes_per_logit_high"]) == (sampler, high)
    assert row["prompt_logprobs"] == {"bytes_per_logit": 2.0, "fixed_bytes": 0}
    assert "v2_warmup" not in profile._table()["0.18.1"]  # no V2 runner before 0.19.0


def test_v2_runner_warmup_pass_by_hand():
    """warmup_pass_bytes for gemma-4's 262,144 vocabulary at 256 max_num_seqs and 2,048 batched tokens: the warm-up's
    requests min(256, 2,048 // prompt_len 2) = 256 (warmup.py: prompt_len = decode_query_len + 1); the sampler pass
    256 · 262,144 · 18.127 (0.29.0's high end, 128+ requests) + 8 = 1,216,482,386 B; the prompt logprobs over
    min(1,024, 256 · 2) = 512 rows · 262,144 · 2 = 268,435,456 B; the peak the larger. 0.33.0: the sampler's pass is
    in the profile, the prompt logprobs remain. Three speculative tokens: prompt_len 5, min(256, 409) requests, the
    prompt rows capped at one chunk (1,024 · 262,144 · 2 = 536,870,912). 0.22.1 at 64 requests: under 128, the
    sort's other branch, 64 · 262,144 · 54.126 + 8 = 908,083,601. The V1 runner warms up with the profile's own pass:
    none."""
    V = 262144
    w = profile.warmup_pass_bytes("0.29.0", "v2", max_num_seqs=256, max_num_batched_tokens=2048, vocab=V)
    assert (w["reqs"], w["sampler"], w["prompt_logprobs"], w["bytes"]) == (256, 1_216_482_386, 268_435_456,
                                                                            1_216_482_386)
    assert w["basis"] == "derived" and "0.29.0's V2 warm-up" in w["source"]
    w = profile.warmup_pass_bytes("0.33.0", "v2", max_num_seqs=256, max_num_batched_tokens=2048, vocab=V)
    assert (w["sampler"], w["bytes"]) == (0, 268_435_456)
    w = profile.warmup_pass_bytes("0.29.0", "v2", max_num_seqs=256, max_num_batched_tokens=2048, vocab=V,
                                  num_speculative_tokens=3)
    assert (w["reqs"], w["prompt_logprobs"]) == (256, 536_870_912)
    w = profile.warmup_pass_bytes("0.22.1", "v2", max_num_seqs=64, max_num_batched_tokens=2048, vocab=V)
    assert (w["reqs"], w["sampler"]) == (64, 908_083_601)
    assert profile.warmup_pass_bytes("0.29.0", "v1", max_num_seqs=256, max_num_batched_tokens=2048, vocab=V) is None


def test_v2_runner_warmup_enters_the_warmup_check(monkeypatch):
    """The band's warm-up need adds what the V2 warm-up's larger pass needs beyond the profile's activation peak at
    its low end (the memory the profile freed): Qwen3-32B on an H100 with vLLM 0.27.1 (the V2 runner by model), the
    pass replaced by a known 40 GiB: the need grows by 40 GiB − the activation peak (the sampler's low end equals its
    value there: 2.012 B per logit on both paths), and the deployment may fail at warm-up; the pass within the
    activation adds nothing."""
    import kvplan.budget.estimate as est

    def run(pass_bytes):
        monkeypatch.setattr(est, "warmup_pass_bytes", lambda *a, **k: None if pass_bytes is None else {
            "bytes": pass_bytes, "basis": "derived", "source": "a stand-in"})
        return simulate("Qwen/Qwen3-32B", gpu="H100", policy="vllm==0.27.1", max_model_len=32768)["budget"]

    base, big = run(None), run(40 << 30)
    act = base["activation_peak_bytes"]
    assert big["band"]["warmup_need_bytes"] - base["band"]["warmup_need_bytes"] == (40 << 30) - act
    assert big["band"]["starts_at_low"] is False and big["band"]["failure_at_low"] == "warm-up"
    assert big["band"]["basis"].endswith(f"the V2 runner's warm-up pass {40 << 30:,} B (derived: a stand-in)")
    assert "warm-up pass" not in run(None)["band"]["basis"]
    assert run(act)["band"]["warmup_need_bytes"] == base["band"]["warmup_need_bytes"]
    real = simulate("Qwen/Qwen3-32B", gpu="H100", policy="vllm==0.27.1", max_model_len=32768)["budget"]
    assert real["band"]["warmup_need_bytes"] >= base["band"]["warmup_need_bytes"]
