"""A model's own dummy-forward row (issue 34): Gemma 4 26B-A4B measured on the meta device by its release's own
classes (scripts/golden/profile_terms.py --forward-all, the golden's ``architectures``), taken by kvplan for that
architecture instead of the MoE family's factor (kvplan.budget.profile.model_forward_row)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.api import simulate
from kvplan.budget import profile
from kvplan.budget.estimate import ACTIVATION_WORKSPACE_BYTES, forward_terms, sampler_terms
from kvplan.engines.vllm.releases import get_era

ROOT = Path(__file__).resolve().parent.parent
FORWARD = ROOT / "tests" / "golden" / "profile_terms" / "forward"
GEMMA4 = ROOT / "configs" / "google" / "gemma-4-26B-A4B-it" / "config.json"
ARCH = "Gemma4ForConditionalGeneration"

# Gemma 4 26B-A4B's text model (H 2,816; 16 query heads; sliding layers 8 KV heads × 256, full layers 2 KV heads × 512
# with attention_k_eq_v; 128 experts, top 8, moe_intermediate 704, a dense MLP of 2,112 beside them; bf16, a = 2):
# the peak is in a full-attention layer while the fused-MoE WorkspaceManager keeps its buffer allocated:
#   the workspace              k·(max(I, H) + max(2I, H))·a = 8·(2,816 + 2,816)·2  = 90,112  (uint8 [T·90,112])
#   qkv_proj's output          (16·512 + 2·512 + 2·512)·2                         = 20,480  ([T, 10,240])
#   q after its norm / rope     16·512·2                                          = 16,384  ([T, 16, 512])
#   the attention's output      16·512·2                                          = 16,384  ([T, 8,192])
#   hidden, residual, norm out  3·2,816·2                                         = 16,896
#   k and v after their norms   2·(2·512)·2                                       =  4,096  ([T, 2, 512] twice)
#   a per-token int64 index                                                            8
# = 164,360 B per token on the custom-op path. The native graph keeps the unfused intermediates: the workspace,
# qkv, three [T, 16, 512] (q, its fp32-free norm and rotary copies), two [T, 2,816], one [T, 2, 512], [T, 512],
# four [T, 2, 256] and two int64 indices: 90,112 + 20,480 + 49,152 + 11,264 + 2,048 + 1,024 + 4,096 + 16 = 178,192.
CUSTOM_OPS_BPT, NATIVE_BPT = 164360, 178192
# kvplan's rule for the same model (kvplan.budget.estimate.forward_rule_bytes_per_token): (4H + W)·a with W the
# widest intermediate, here the experts' workspaces 8·(2,816 + 2,816) = 45,056: (4·2,816 + 45,056)·2 = 112,640
RULE_BPT = (4 * 2816 + 8 * (2816 + 2816)) * 2


@pytest.mark.parametrize("release", ["0.27.1", "0.29.0", "0.34.0"])
def test_gemma4_forward_golden(release):
    g = json.loads((FORWARD / f"{release}.json").read_text())["architectures"][ARCH]
    custom, native = g["custom_ops"], g["native"]
    assert custom["derived"] and native["derived"]
    assert custom["architecture"] == ARCH and custom["text_architecture"] == "Gemma4ForCausalLM"
    assert custom["custom_ops"] == ["all"] and native["custom_ops"] == ["none"]
    assert custom["bytes_per_token"] == CUSTOM_OPS_BPT and native["bytes_per_token"] == NATIVE_BPT
    # the peaks at 256 and 512 tokens differ by exactly the slope (the workspace buffer seen at each size)
    assert custom["peak_bytes"]["512"] - custom["peak_bytes"]["256"] == 256 * CUSTOM_OPS_BPT
    # the fused experts ran (their Triton kernel and Gemma 4's own routing kernel launched per MoE layer per pass)
    assert custom["kernel_launches"]["fused_moe_kernel"] > 0 and custom["kernel_launches"]["_gemma4_routing_kernel"] > 0
    workspace = next(x for x in custom["live_at_peak"]["512"] if x[1] == "uint8")
    assert workspace[2] == 512 * 8 * (2816 + 2816) * 2


def test_the_table_row_is_the_golden():
    rows = profile._table()
    r = rows["0.29.0"]["forward_models"][ARCH]
    assert r["basis"] == "derived" and r["from"] == "0.29.0"
    assert r["architectures"] == ["Gemma4ForCausalLM", ARCH]
    assert r["rule_bytes_per_token"] == RULE_BPT == 112640
    assert r["bytes_per_token"] == CUSTOM_OPS_BPT and r["bytes_per_token_native"] == NATIVE_BPT
    assert r["factor"] == round(CUSTOM_OPS_BPT / RULE_BPT, 4) == 1.4592
    assert r["factor_high"] == round(NATIVE_BPT / RULE_BPT, 4) == 1.582
    # the MoE family's factor at the same release is gpt-oss-20b's (116,360 / 92,160): below Gemma 4's own
    assert rows["0.29.0"]["forward"]["moe"]["factor"] == round(116360 / 92160, 4) == 1.2626


def test_gemma4_plan_takes_its_own_row():
    """Gemma 4 on an H100 with 0.29.0 at 8,192 tokens and 16 requests: the forward is the peak, 8,192 · 112,640 ×
    1.4592 (its own row), not × 1.2626 (the MoE family's, gpt-oss-20b); + 256 MiB and the V2 runner's per-request
    states (0.29.0 runs V2 by default)."""
    era = get_era("vllm==0.29.0")
    cfg = json.loads(GEMMA4.read_text())["text_config"]
    f = forward_terms(era, cfg, architecture=ARCH)
    assert f["row"] == ARCH and f["basis"] == "derived" and f["family"] == "moe"
    assert (f["value"], f["high"]) == (1.4592, 1.582)
    assert forward_terms(era, cfg, architecture="Gemma4ForCausalLM")["row"] == ARCH  # a text-only checkpoint
    b = simulate("google/gemma-4-26B-A4B-it", gpu="H100", policy="vllm==0.29.0", max_num_seqs=16)["budget"]
    act = next(t for t in b["profile_terms"] if t["term"] == "activation")
    # the V2 runner's kept buffers at R = 16, T = 8,192 with the encoder runner's inputs_embeds [T, 2,816] bf16
    # (5,632 B a token: the multimodal model serves images here; kvplan.budget.profile.persistent_bytes)
    s = sampler_terms(era, 16, 262144, "v2", 16, 8192, 2816 * 2)
    forward = round(8192 * RULE_BPT * 1.4592)
    assert forward == 1346472247  # 922,746,880 × 1.4592; the family factor would give 1,165,060,210
    assert act["bytes"] == forward + ACTIVATION_WORKSPACE_BYTES + s["persistent"]
    assert act["derivation"] == "derived"
    assert ("the forward: derived: the Gemma4ForConditionalGeneration row (derived): vLLM 0.29.0's "
            "Gemma4ForConditionalGeneration forward (gemma-4-26B-A4B-it) on the meta device: 164,360 B per token "
            "on the custom-op path, 178,192 native, 1.4592-1.582× kvplan's rule") in act["source"]
    assert "(Gemma4ForConditionalGeneration row, 1.4592-1.582× the rule)" in b["band"]["basis"]


def test_other_models_and_releases_keep_the_family_row():
    mixtral = json.loads((ROOT / "configs/mistralai/Mixtral-8x7B-Instruct-v0.1/config.json").read_text())
    f = profile.forward_factors("0.29.0", mixtral, architecture="MixtralForCausalLM")
    assert f["row"] == "moe" and f["value"] == 1.2626
    assert f["source"].startswith("the moe family row (derived): vLLM 0.29.0's moe forward (gpt-oss-20b)")
    cfg = json.loads(GEMMA4.read_text())["text_config"]
    # before the first release that measured Gemma 4 the family's factor, as for any MoE model
    first = min((r for r, row in profile._table().items() if ARCH in (row.get("forward_models") or {})),
                key=lambda r: tuple(int(x) for x in r.split(".")))
    assert profile.forward_factors("0.24.0", cfg, architecture=ARCH)["row"] == "moe"
    assert profile.forward_factors(first, cfg, architecture=ARCH)["row"] == ARCH
    # under TP the family's parallel factors (the own row is measured at TP 1), said in the source
    tp2 = profile.forward_factors("0.29.0", cfg, tp=2, architecture=ARCH)
    assert "own row is measured at TP 1 / PP 1 only" in tp2["source"]


def test_assumed_own_row_names_its_release():
    """A release between two measured ones takes the older one's row, assumed, and says from which."""
    rows = profile._table()
    assumed = [r for r, row in rows.items() if (row.get("forward_models") or {}).get(ARCH, {}).get("basis") == "assumed"]
    for r in assumed:
        m = rows[r]["forward_models"][ARCH]
        cfg = json.loads(GEMMA4.read_text())["text_config"]
        f = profile.forward_factors(r, cfg, architecture=ARCH)
        assert f["basis"] == "assumed" and f"the {ARCH} row (assumed from {m['from']})" in f["source"], r


def test_a_dense_model_under_the_architecture_keeps_its_family_row():
    """The row was measured on a MoE model (26B-A4B); a dense Gemma 4 (no experts: the MoE keys removed from the same
    text config) takes the dense family's factor, and the source says why the Gemma 4 row was not taken."""
    cfg = {k: v for k, v in json.loads(GEMMA4.read_text())["text_config"].items()
           if k not in ("num_experts", "top_k_experts", "moe_intermediate_size", "enable_moe_block")}
    f = profile.forward_factors("0.29.0", cfg, architecture=ARCH)
    assert f["row"] == "dense" and f["value"] == round(114696 / 106496, 4) == 1.077  # Qwen3-8B's
    assert (f"not the {ARCH} row (measured on gemma-4-26B-A4B-it, a moe model, for a dense one)") in f["source"]
