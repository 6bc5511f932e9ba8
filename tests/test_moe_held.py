"""The fused-MoE workspace the dummy forward leaves allocated under the profile's sampler pass (kvplan/budget/
estimate.py ``moe_held_bytes``), against what each release's own model class left alive on the meta device
(tests/golden/profile_terms/held/, scripts/golden/profile_terms.py --held-all) and kvplan's table built from it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kvplan.api import simulate
from kvplan.budget.estimate import (ACTIVATION_WORKSPACE_BYTES, MOE_WORKSPACE, forward_terms, moe_held_row,
                                    sampler_terms)
from kvplan.engines.vllm.releases import get_era

ROOT = Path(__file__).resolve().parent.parent
HELD = ROOT / "tests" / "golden" / "profile_terms" / "held"


def _script():
    spec = importlib.util.spec_from_file_location("profile_terms_script", ROOT / "scripts/golden/profile_terms.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _golden(release: str) -> dict:
    return json.loads((HELD / f"{release}.json").read_text())["held"]


def test_table_is_the_goldens(tmp_path):
    """kvplan's moe_workspace.json is exactly what --held-table builds from the committed goldens."""
    out = tmp_path / "m.json"
    _script().held_table(ROOT / "tests" / "golden" / "profile_terms", out)
    assert json.loads(out.read_text()) == json.loads(MOE_WORKSPACE.read_text())


def test_before_the_workspace_manager_the_forward_keeps_nothing_per_token():
    """0.11.0 and 0.12.0 have no v1/worker/workspace.py; 0.13.0 has it, but its unquantized experts still call
    fused_experts with caches freed per call (unquantized_fused_moe_method.py line 325; 0.14.1 runs them through
    FusedMoEModularKernel, line 258): no model, MoE or dense, leaves anything per token once its forward returned."""
    for release, manager in (("0.11.0", False), ("0.12.0", False), ("0.13.0", True)):
        for label, r in _golden(release).items():
            assert r["derived"] and r["workspace_manager"] is manager, (release, label)
            assert r["held_bytes_per_token"] == 0, (release, label)
        assert moe_held_row(release)[0]["factor"] == 0


def test_from_0_14_the_fused_moe_workspace_stays():
    """From 0.14.1 the WorkspaceManager keeps the buffer workspace13 and workspace2 are cut from: Qwen3-30B-A3B
    (k 8, H 2,048, I 768) holds 8·(max(768, 2048) + max(1536, 2048))·2 = 65,536 B a token, Mixtral-8x7B (k 2,
    H 4,096, I 14,336) 2·(14,336 + 28,672)·2 = 172,032 B; the dense Qwen3-8B nothing."""
    for release in ("0.14.1", "0.15.1", "0.17.0", "0.18.0", "0.19.0", "0.27.1", "0.34.0"):
        g = _golden(release)
        assert g["moe-qwen3"]["held_bytes_per_token"] == 8 * (2048 + 2048) * 2, release
        assert g["moe-mixtral"]["held_bytes_per_token"] == 2 * (14336 + 28672) * 2, release
        assert g["dense"]["held_bytes_per_token"] == 0, release
        assert g["moe-qwen3"]["held"]["512"][0] == [[512 * 65536], "uint8", 512 * 65536], release  # one buffer
        row, basis = moe_held_row(release)
        assert row["factor"] == 1.0 and basis == "derived"
    assert moe_held_row("0.9.2")[0] is None  # before the first measured release (0.10.1)


def test_a_release_not_run_takes_the_older_measured_one(tmp_path, monkeypatch):
    """Every release kvplan accepts has its own held golden since 2026-12-07: the table built without 0.20.2's
    gives 0.20.2 the older measured release's row (0.20.1), assumed."""
    import shutil

    from kvplan.budget import profile

    goldens = tmp_path / "goldens"
    shutil.copytree(ROOT / "tests" / "golden" / "profile_terms" / "held", goldens / "held")
    (goldens / "held" / "0.20.2.json").unlink()
    _script().held_table(goldens, tmp_path / "m.json")
    monkeypatch.setattr(profile, "_moe_workspace_table", lambda: json.loads((tmp_path / "m.json").read_text()))
    row, basis = moe_held_row("0.20.2")
    assert row["from"] == "0.20.1" and basis == "assumed" and row["factor"] == 1.0
    assert moe_held_row("0.20.1") == (row, "derived")


def test_the_held_workspace_enters_the_sampler_phase():
    """Qwen3-30B-A3B on an H100 with 0.19.0 at 8,192 tokens and 1,024 dummy requests: the sampler pass (151,936
    logits a request) runs beside the hidden states 8,192·2,048·2 and the held workspace 8,192·65,536 B; that
    exceeds the forward 8,192·(4·2,048 + 65,536/2)·2 × the release's MoE factor, so it is the peak (+ 256 MiB)."""
    era = get_era("vllm==0.19.0")
    cfg = json.loads((ROOT / "tests/logs/budget/configs/Qwen/Qwen3-30B-A3B/config.json").read_text())
    d = simulate(str(ROOT / "tests/logs/budget/configs/Qwen/Qwen3-30B-A3B/config.json"), gpu="H100",
                 policy="vllm==0.19.0", max_model_len=8192)
    b = d["budget"]
    assert b["max_num_seqs"] == 1024 and b["max_num_batched_tokens"] == 8192
    s = sampler_terms(era, 1024, 151936)
    forward = round(8192 * (4 * 2048 + 8 * (2048 + 2048)) * 2 * forward_terms(era, cfg)["value"])
    sampler_phase = s["value"] + 8192 * 2048 * 2 + 8192 * 65536
    assert sampler_phase > forward
    assert b["activation_peak_bytes"] == sampler_phase + ACTIVATION_WORKSPACE_BYTES
    act = next(t for t in b["profile_terms"] if t["term"] == "activation")
    assert "fused-MoE workspace held by the WorkspaceManager under the sampler: 536,870,912 B" in act["source"]


def test_not_counted_before_0_13_nor_for_a_dense_or_quantized_moe():
    """0.12.0 frees the caches with each call; a dense model has no experts; gpt-oss-20b's MXFP4 experts run other
    kernels (not derived): the sampler phase is the sampler pass with the hidden states only."""
    cfg = str(ROOT / "tests/logs/budget/configs/Qwen/Qwen3-30B-A3B/config.json")
    b = simulate(cfg, gpu="H100", policy="vllm==0.12.0", max_model_len=8192)["budget"]
    s = sampler_terms(get_era("vllm==0.12.0"), 1024, 151936)
    assert b["activation_peak_bytes"] == s["value"] + 8192 * 2048 * 2 + ACTIVATION_WORKSPACE_BYTES
    for model in ("Qwen/Qwen3-8B", "openai/gpt-oss-20b"):
        b = simulate(model, gpu="H100", policy="vllm==0.19.0", max_model_len=8192)["budget"]
        act = next(t for t in b["profile_terms"] if t["term"] == "activation")
        assert "WorkspaceManager" not in act["source"], model


def _activation_source(config: str, **options) -> tuple[int, str]:
    b = simulate(config, **options)["budget"]
    act = next(t for t in b["profile_terms"] if t["term"] == "activation")
    return b["activation_peak_bytes"], act["source"]


QWEN3_30B = str(ROOT / "tests/logs/budget/configs/Qwen/Qwen3-30B-A3B/config.json")


def test_fp8_experts_under_triton_hold_the_same_workspace():
    """FP8 experts that the release's FP8 MoE oracle gives TritonExperts hold the unquantized workspace: the same
    workspace_shapes (experts/triton_moe.py 0.29.0 lines 218-233), taken from the WorkspaceManager in the activation
    dtype (modular_kernel.py 0.29.0 lines 830-833, 1144-1176). Qwen3-Coder-30B-A3B-FP8 on an H100 with 0.30.0
    (tests/logs/budget/115-..., 'Using TRITON Fp8 MoE backend'; kvplan simulates it as the base config with
    --quantization fp8: dynamic per-tensor FP8, which FlashInfer CUTLASS (static only) and DeepGEMM (block only)
    refuse; the checkpoint's block FP8 takes Triton too, oracle/fp8.py 0.30.0 lines 113-123) at T = 8,192:
    T·k·(max(I, H) + max(2I, H))·a = 8,192·8·(2,048 + 2,048)·2 = 536,870,912 B."""
    _, src = _activation_source(str(ROOT / "tests/logs/budget/configs/Qwen/Qwen3-Coder-30B-A3B-Instruct/config.json"),
                                gpu="H100-80GB", policy="vllm==0.30.0", max_model_len=16384, max_num_seqs=256,
                                quantization="fp8")
    assert 8192 * 8 * (2048 + 2048) * 2 == 536_870_912
    assert "under the sampler: 536,870,912 B" in src and "FP8 experts: TritonExperts" in src
    assert "pessimistic end only" not in src


def test_gemma4_fp8_on_l40s_holds_the_triton_workspace():
    """Gemma 4 26B-A4B with FP8 experts on an L40S (SM 8.9) with 0.29.0 at T = 2,048 (the akamaslabs study's
    baseline flags, tests/logs/budget/95-105, 'Using TRITON Fp8 MoE backend'): no FlashInfer (SM 9.0+ / 10.x),
    no DeepGEMM (9.0 / 10.x), no vLLM CUTLASS (cutlass_group_gemm_supported: 9.0 / 10.x), so Triton. H = 2,816,
    I = 704, k = 8: 2,048·8·(2,816 + 2,816)·2 = 184,549,376 B."""
    _, src = _activation_source(str(ROOT / "configs/google/gemma-4-26B-A4B-it/config.json"), gpu="L40S-48GB",
                                policy="vllm==0.29.0", quantization="fp8", max_model_len=4096, max_num_seqs=256,
                                max_num_batched_tokens=2048, gpu_memory_utilization=0.92, language_model_only=True)
    assert 2048 * 8 * (2816 + 2816) * 2 == 184_549_376
    assert "under the sampler: 184,549,376 B" in src and "FP8 experts: TritonExperts" in src


def test_fp8_experts_on_another_kernel_widen_the_pessimistic_end_only():
    """On an A100 (SM 8.0) every release loads FP8 experts with weight-only Marlin (0.14.1 oracle/fp8.py lines
    104-109; TritonExperts needs supports_fp8 from 0.17), whose workspace kvplan has not derived: the value holds
    none of the Triton workspace, the pessimistic end all of it (Qwen3-30B-A3B, 0.19.0, T = 8,192 and 1,024 dummy
    requests, where the sampler phase is the peak as in test_the_held_workspace_enters_the_sampler_phase:
    8,192·8·4,096·2 = 536,870,912 B of activation the value leaves out)."""
    opts = dict(policy="vllm==0.19.0", max_model_len=8192, max_num_batched_tokens=8192, max_num_seqs=1024,
                quantization="fp8")
    a100 = simulate(QWEN3_30B, gpu="A100-80GB", **opts)["budget"]
    act = next(t for t in a100["profile_terms"] if t["term"] == "activation")
    assert "counted at the pessimistic end only" in act["source"] and "Marlin below SM 8.9" in act["source"]
    # counted at the pessimistic end exactly as a Triton pick counts it in the value: with the oracle answering
    # TRITON the band's pessimistic end is the same, the value's activation holds the workspace
    import kvplan.budget.estimate as estimate

    real = estimate.fp8_experts_kernel
    try:
        estimate.fp8_experts_kernel = lambda *a, **k: (estimate.FP8_HELD_TRITON, "as if Triton")
        triton = simulate(QWEN3_30B, gpu="A100-80GB", **opts)["budget"]
    finally:
        estimate.fp8_experts_kernel = real
    assert triton["band"]["kv_cache_memory_low_bytes"] == a100["band"]["kv_cache_memory_low_bytes"]
    assert triton["activation_peak_bytes"] - a100["activation_peak_bytes"] == 536_870_912


def test_fp8_experts_ran_triton_and_held_the_unquantized_workspace():
    """scripts/golden/profile_terms.py --held-all's FP8 run (Qwen3-30B-A3B under --quantization fp8, the platform
    an H100 stand-in): every release it ran built its online FP8 MoE method, whose oracle picked TRITON /
    TritonExperts, and the forward left the same 65,536 B a token held as the unquantized model (8·(2,048 +
    2,048)·2, the rule at I = 768, H = 2,048, k = 8): fp8_factor 1, equal to the unquantized factor."""
    table = json.loads(MOE_WORKSPACE.read_text())["releases"]
    ran = [r for r, row in table.items() if "fp8_factor" in row]
    assert {"0.14.1", "0.19.0", "0.27.1", "0.29.0", "0.34.0"} <= set(ran)
    # 0.10.x (no workspace manager: the unquantized factor 0) build Fp8MoEMethod, whose fused_experts caches are freed
    # per call as the unquantized ones: nothing held per token either
    before = [r for r in ran if table[r]["factor"] == 0]
    assert set(before) == {"0.10.1", "0.10.1.1", "0.10.2"} & set(table)
    for release in before:
        fp8 = _golden(release)["moe-qwen3-fp8"]
        assert fp8["experts_kernel"] == ["Fp8MoEMethod"] and fp8["held_bytes_per_token"] == 0
        assert table[release]["fp8_factor"] == 0
    for release in sorted(set(ran) - set(before)):
        fp8 = _golden(release)["moe-qwen3-fp8"]
        # Fp8OnlineMoEMethod up to 0.19, Fp8PerTensorOnlineMoEMethod (quantization/online/fp8.py) from 0.27
        (kernel,) = fp8["experts_kernel"]
        method, backend, experts = kernel.split("/")
        assert method.startswith("Fp8") and "Online" in method and (backend, experts) == ("TRITON", "TritonExperts")
        assert fp8["held_bytes_per_token"] == 8 * (2048 + 2048) * 2 == _golden(release)["moe-qwen3"]["held_bytes_per_token"]
        assert table[release]["fp8_factor"] == table[release]["factor"] == 1


def test_fp8_moe_oracle_pick_per_release_and_card():
    """Which FP8 MoE kernel each era picks by default on a CUDA card (quant_kernels.fp8_moe_held_backend), for
    Qwen3-30B-A3B's experts (H = 2,048, I = 768) as block FP8 (vLLM's format, 128×128), online --quantization fp8
    (dynamic per-tensor activations) and static per-tensor FP8:
    * 0.14.1 (oracle/fp8.py 51-150): FlashInfer off by default; Marlin below SM 8.9; block FP8 on 9.0 / 10.x
      DeepGEMM where deep_gemm is installed (not known); Triton otherwise.
    * 0.15.1: FlashInfer CUTLASS takes Hopper's block and static FP8 (flashinfer_cutlass_moe.py 111-137).
    * 0.17.0 onward: Triton moved to the front for Hopper's block FP8 at EP 1; FlashInfer CUTLASS with EP; SM 10.0
      FlashInfer TRT-LLM (0.29+: its loading not run); SM 12.0's static FP8 FlashInfer CUTLASS."""
    from kvplan.budget.quant_kernels import fp8_moe_held_backend
    from kvplan.budget.quantization import Quantization

    block = Quantization("fp8", "block", block=(128, 128), config_format="fp8")
    online = Quantization("fp8", "online", config_format="online")
    static = Quantization("fp8", "static", config_format="fp8", static_input_scale=True)
    cards = ((8, 0), (8, 9), (9, 0), (10, 0), (12, 0))
    expected = {
        "0.14.1": {block: ["MARLIN", "TRITON", "DEEPGEMM_OR_TRITON", "DEEPGEMM_OR_TRITON", "TRITON"],
                   online: ["MARLIN", "TRITON", "TRITON", "TRITON", "TRITON"],
                   static: ["MARLIN", "TRITON", "TRITON", "TRITON", "TRITON"]},
        "0.15.1": {block: ["MARLIN", "TRITON", "FLASHINFER_CUTLASS", "FLASHINFER_TRTLLM_OR_DEEPGEMM", "TRITON"],
                   online: ["MARLIN", "TRITON", "TRITON", "TRITON", "TRITON"],
                   static: ["MARLIN", "TRITON", "FLASHINFER_CUTLASS", "FLASHINFER_CUTLASS", "FLASHINFER_CUTLASS"]},
        "0.19.0": {block: ["MARLIN", "TRITON", "TRITON", "FLASHINFER_TRTLLM", "TRITON"],
                   online: ["MARLIN", "TRITON", "TRITON", "TRITON", "TRITON"],
                   static: ["MARLIN", "TRITON", "FLASHINFER_CUTLASS", "FLASHINFER_CUTLASS", "FLASHINFER_CUTLASS"]},
        "0.34.0": {block: ["MARLIN", "TRITON", "TRITON", "NOT_RUN", "TRITON"],
                   online: ["MARLIN", "TRITON", "TRITON", "TRITON", "TRITON"],
                   static: ["MARLIN", "TRITON", "FLASHINFER_CUTLASS", "NOT_RUN", "FLASHINFER_CUTLASS"]},
    }
    for release, schemes in expected.items():
        for q, picks in schemes.items():
            assert [fp8_moe_held_backend(q, cc, release, 2048, 768)[0] for cc in cards] == picks, (release, q)
    # expert parallelism on Hopper: FlashInfer CUTLASS for block FP8 from 0.17 (oracle/fp8.py 0.29.0 113-123)
    assert fp8_moe_held_backend(block, (9, 0), "0.30.0", 2048, 768, expert_parallel=True)[0] == "FLASHINFER_CUTLASS"
    assert fp8_moe_held_backend(block, (9, 0), "0.30.0", 2048, 768)[0] == "TRITON"
