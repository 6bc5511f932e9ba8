"""The drafter's forward in the profile's dummy run (issue 34): the goldens of ``scripts/golden/profile_terms.py
--drafter-all`` (tests/golden/profile_terms/drafter/), the table's ``drafter`` rows and the activation of a
deployment with an EAGLE-3 head."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.api import simulate
from kvplan.budget import profile
from kvplan.budget.estimate import (ACTIVATION_WORKSPACE_BYTES, aux_hidden_states, drafter_rule_bytes_per_token,
                                    forward_terms, sampler_terms)
from kvplan.budget.weights import layout_weights
from kvplan.engines.vllm.releases import get_era
from kvplan.model.layout import build_model_layout
from kvplan.model.options import ServingOptions

ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "tests" / "golden" / "profile_terms" / "drafter"
RELEASES = tuple(sorted((p.stem for p in GOLDENS.glob("*.json")), key=lambda r: tuple(map(int, r.split(".")))))
# the releases measured before 0.21.0
BEFORE_0_21 = tuple(r for r in RELEASES if tuple(map(int, r.split("."))) < (0, 21))
H, I, A = 4096, 14336, 2  # the EAGLE-3 Llama head (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B): hidden, MLP, bf16 bytes


def _golden(release: str) -> dict:
    return json.loads((GOLDENS / f"{release}.json").read_text())["drafter"]


def _key(release: str) -> tuple[int, ...]:
    return tuple(map(int, release.split(".")))


def _derived(release: str, label: str) -> bool:
    return release in RELEASES and all(_golden(release)[label][p]["derived"] for p in ("custom_ops", "native"))


def _stand_in(release: str, label: str) -> str:
    """The measured release whose row stands in for ``release``'s: the newest before it that derived ``label``,
    else the oldest that did."""
    derived = [r for r in RELEASES if _derived(r, label)]
    before = [r for r in derived if _key(r) < _key(release)]
    return before[-1] if before else derived[0]


def _llama_eagle3():
    return build_model_layout(str(ROOT / "configs/meta-llama/Llama-3.1-8B-Instruct"),
                              str(ROOT / "configs/yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
                              ServingOptions(speculative_method="eagle3", num_speculative_tokens=3))


@pytest.mark.parametrize("release", RELEASES)
def test_every_drafter_ran_or_says_why(release):
    """Every catalog drafter of DRAFTER_MODELS has both paths in each measured release, derived or with the reason."""
    g = _golden(release)
    assert set(g) == {"eagle3-llama", "eagle3-peagle-gpt-oss", "mtp-qwen3.5"}
    for label, paths in g.items():
        for path in ("custom_ops", "native"):
            assert paths[path]["derived"] or paths[path]["why"], (release, label, path)


@pytest.mark.parametrize("release", [r for r in RELEASES if r not in BEFORE_0_21])
def test_eagle3_llama_head_by_hand(release):
    """The head's one decoder layer over T tokens peaks in its MLP on the custom-op path: the gate/up projection's
    [T, 2I] beside SiLU-and-mul's [T, I] and four [T, H] (the embeddings, held across the layer loop; the residual;
    the post-attention norm's output; the attention's output), (3·14,336 + 4·4,096)·2 = 118,784 B per token (what
    kvplan's dense rule (4H + 3I)·a gives: factor 1). The V2 speculator's combination of the three aux states: the
    [T, 3·4,096] concatenation beside the fc's [T, 4,096] output, (3·4,096 + 4,096)·2 = 32,768 B per token, the
    output kept, 8,192."""
    run = _golden(release)["eagle3-llama"]["custom_ops"]
    assert run["architecture"] == "Eagle3LlamaForCausalLM" and run["draft_hidden_size"] == H
    assert run["bytes_per_token"] == (3 * I + 4 * H) * A == 118_784
    at_peak = sorted(shape[1] for shape, _, _ in run["live_at_peak"]["512"] if shape[0] == 512)
    assert at_peak == [H, H, H, H, I, 2 * I]
    assert run["combine"] == {"aux_hidden_states": 3, "bytes_per_token": (3 * H + H) * A,
                              "fc_in_features": 3 * H, "kept_bytes_per_token": H * A,
                              "peak_bytes": {"256": 256 * 32_768, "512": 512 * 32_768}}
    # the native graph keeps SiLU's own output beside the product: more than the custom-op path
    assert _golden(release)["eagle3-llama"]["native"]["bytes_per_token"] > run["bytes_per_token"]


@pytest.mark.parametrize("release", BEFORE_0_21)
def test_eagle3_llama_head_before_0_21(release):
    """Up to 0.20 the head peaks one [T, H] lower: (3·14,336 + 3·4,096)·2 = 110,592 B per token (factor 0.931)."""
    run = _golden(release)["eagle3-llama"]["custom_ops"]
    assert run["bytes_per_token"] == (3 * I + 3 * H) * A == 110_592
    at_peak = sorted(shape[1] for shape, _, _ in run["live_at_peak"]["512"] if shape[0] == 512)
    assert at_peak == [H, H, H, I, 2 * I]
    row = profile._table()[release]["drafter"]["eagle3-llama"]
    assert row["basis"] == "derived" and row["factor"] == round(110_592 / 118_784, 4) == 0.931


def test_qwen3_5_mtp_not_in_old_releases():
    """0.11.0 and 0.14.1 have no Qwen3.5 (their transformers base does not know qwen3_5): recorded with the reason,
    the table's row for them the oldest measured release's, assumed."""
    for release in ("0.11.0", "0.14.1"):
        run = _golden(release)["mtp-qwen3.5"]["custom_ops"]
        assert not run["derived"] and "qwen3_5" in run["why"]
        row = profile._table()[release]["drafter"]["mtp-qwen3.5"]
        assert row["basis"] == "assumed" and row["from"] == _stand_in(release, "mtp-qwen3.5") == "0.17.0"
        assert "qwen3_5" in row["why"]


def test_peagle_and_mtp_heads_by_hand_0_29_0():
    """0.29.0 on the custom-op path, each peaking in an MLP with five [T, H] live beside the gate/up [T, 2I] and
    SiLU-and-mul's [T, I]: gpt-oss-20b's P-EAGLE head (four layers, H 2,880, LlamaConfig's default I 11,008, as
    vLLM builds it from a config without intermediate_size), (3·11,008 + 5·2,880)·2 = 94,848 B per token; Qwen3.5-27B's
    MTP layer (H 5,120, I 17,408, fed the target's inputs_embeds), (3·17,408 + 5·5,120)·2 = 155,648 B per token."""
    g = _golden("0.29.0")
    for label, hidden, inter in (("eagle3-peagle-gpt-oss", 2880, 11008), ("mtp-qwen3.5", 5120, 17408)):
        run = g[label]["custom_ops"]
        assert run["bytes_per_token"] == (3 * inter + 5 * hidden) * A, label
        at_peak = sorted(shape[1] for shape, _, _ in run["live_at_peak"]["512"] if shape[0] == 512)
        assert at_peak == [hidden] * 5 + [inter, 2 * inter], label
    assert g["mtp-qwen3.5"]["custom_ops"]["multimodal_inputs"] is True
    assert g["mtp-qwen3.5"]["custom_ops"]["call"].startswith("model(input_ids=None")


def test_kvplan_rule_for_the_drafters():
    """kvplan's drafter rule: an EAGLE head's (4·H + 3·I)·a at TP 1 (Llama's head 118,784 B; the P-EAGLE head of
    gpt-oss-20b, H 2,880 and LlamaConfig's default I 11,008: (11,520 + 33,024)·2 = 89,088 B), an MTP layer the
    target's own forward rule (Qwen3.5-27B: (4·5,120 + 3·17,408)·2 = 145,408 B); EAGLE-3's aux states from its fc's
    input, 12,288 / 4,096 = 3."""
    layout = _llama_eagle3()
    assert drafter_rule_bytes_per_token(layout, layout_weights(layout), tp=1) == 118_784
    assert aux_hidden_states(layout, layout_weights(layout)) == 3
    peagle = build_model_layout(str(ROOT / "configs/openai/gpt-oss-20b"), str(ROOT / "configs/amazon/GPT-OSS-20B-P-EAGLE"),
                                ServingOptions(speculative_method="eagle3", num_speculative_tokens=5))
    assert drafter_rule_bytes_per_token(peagle, layout_weights(peagle), tp=1) == (4 * 2880 + 3 * 11008) * 2 == 89_088
    mtp = build_model_layout(str(ROOT / "configs/Qwen/Qwen3.5-27B"), None,
                             ServingOptions(speculative_method="mtp", num_speculative_tokens=1))
    assert drafter_rule_bytes_per_token(mtp, layout_weights(mtp), tp=1) == (4 * 5120 + 3 * 17408) * 2 == 145_408
    assert aux_hidden_states(mtp, layout_weights(mtp)) == 0


def test_table_rows_are_the_goldens_over_the_rule():
    """Each measured release's row: the golden's bytes per token over kvplan's rule; a release between measured ones
    takes the newest measured one's before it (assumed, with the reason), one before the first the oldest's."""
    rows = profile._table()
    for release in RELEASES:
        g = _golden(release)
        for label, row in rows[release]["drafter"].items():
            v, n = g[label]["custom_ops"], g[label]["native"]
            if not v["derived"]:
                continue
            assert row["basis"] == "derived" and row["from"] == release
            assert row["factor"] == round(v["bytes_per_token"] / row["rule_bytes_per_token"], 4)
            assert row["factor_high"] >= round(max(v["bytes_per_token"], n["bytes_per_token"])
                                               / row["rule_bytes_per_token"], 4)
    # the high end: the largest native factor any release measured for the drafter (0.11.0's native run kept its
    # custom ops: 110,592 B, the same as its custom-op path; 147,464 / 118,784 = 1.2414 from 0.14.1 on)
    assert rows["0.11.0"]["drafter"]["eagle3-llama"]["factor_high"] == round(147_464 / 118_784, 4) == 1.2414
    # every release (or drafter) not measured: the stand-in's row, assumed
    for release, row in rows.items():
        for label, r in row["drafter"].items():
            if not _derived(release, label):
                assert r["basis"] == "assumed" and r["from"] == _stand_in(release, label), (release, label)
    # 0.10.1 builds the Llama head only: the P-EAGLE head from the oldest release that built it, Qwen3.5's MTP layer
    # from the first with Qwen3.5
    assert {label: r["from"] for label, r in rows["0.10.1"]["drafter"].items()} == {
        "eagle3-llama": "0.10.1", "eagle3-peagle-gpt-oss": "0.11.0", "mtp-qwen3.5": "0.17.0"}


def test_profile_terms_page_row():
    """docs/profile-terms.md's 'drafter dummy run': derived where the release ran, assumed (naming the release
    whose figure stands in) where it did not."""
    era = get_era("vllm==0.29.0")
    terms = {t["term"]: t for t in profile.term_bases("0.29.0", cudagraph_counted=era.cudagraph_memory_in_profile,
                                                      calibrated_groups={})}
    assert terms["drafter dummy run"]["basis"] == "derived"
    assert "tests/golden/profile_terms/drafter/0.29.0.json" in terms["drafter dummy run"]["detail"]
    # 0.16.0 has no Qwen3.5: its MTP row is 0.17.0's, so the term is assumed, naming both goldens
    terms = {t["term"]: t for t in profile.term_bases("0.16.0", cudagraph_counted=True, calibrated_groups={})}
    assert terms["drafter dummy run"]["basis"] == "assumed" and terms["drafter dummy run"]["from"] == "0.17.0"
    assert "drafter/0.16.0.json, tests/golden/profile_terms/drafter/0.17.0.json" in terms["drafter dummy run"]["detail"]


def test_eagle3_deployment_activation_by_hand():
    """Llama-3.1-8B with its EAGLE-3 head on an H100, vLLM 0.29.0 (the V2 runner by default), T = 8,192,
    R = 1,024. The drafter phase of the dummy run (kvplan.budget.drafter): the target's hidden states and its three
    aux states held, 8,192·4,096·2·(1 + 3) = 268,435,456 B, beside max(the combination, 8,192·(3·4,096 + 4,096)·2 =
    268,435,456 B; its kept output 8,192·4,096·2 = 67,108,864 B + the head's forward 8,192·118,784·1.0 =
    973,078,528 B) = 1,040,187,392 B: 1,308,622,848 B, above the target's forward (8,192·118,784·1.077) and the
    V2 sampler pass; the activation is it + the 256 MiB workspace + the V2 runner's persistent buffers. On the V1
    runner (--model-runner v1) the head runs over the persistent buffer, no combination: 268,435,456 + 973,078,528
    = 1,241,513,984 B, below the rejection sampler's pass, which stays the peak."""
    b = simulate("meta-llama/Llama-3.1-8B-Instruct", drafter="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", gpu="H100",
                 policy="vllm==0.29.0", speculative_method="eagle3", num_speculative_tokens=3)["budget"]
    T, R, V = 8192, 1024, 128256
    drafter = T * H * A * 4 + max(T * (3 * H + H) * A, T * H * A + T * 118_784)
    assert drafter == 1_308_622_848
    era = get_era("vllm==0.29.0")
    forward = round(T * (4 * H + 3 * I) * A * forward_terms(era, {"hidden_size": H})["value"])
    s = sampler_terms(era, R, V, "v2", R, T, 0, 3, H * A)
    assert forward < drafter and s["value"] + T * H * A < drafter
    assert b["activation_peak_bytes"] == drafter + ACTIVATION_WORKSPACE_BYTES + s["persistent"]
    act = next(t for t in b["profile_terms"] if t["term"] == "activation")
    assert act["derivation"] == "derived" and "peak the drafter" in act["source"]
    assert "vLLM 0.29.0's drafter forward on the meta device (its own row, eagle3-llama" in act["source"]
    v1 = simulate("meta-llama/Llama-3.1-8B-Instruct", drafter="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", gpu="H100",
                  policy="vllm==0.29.0", speculative_method="eagle3", num_speculative_tokens=3,
                  model_runner="v1")["budget"]
    act1 = next(t for t in v1["profile_terms"] if t["term"] == "activation")
    assert "the drafter's forward in the dummy run: 973,078,528 B" in act1["source"]
    assert "(below the peak)" in act1["source"] and "peak the sampler" in act1["source"]
