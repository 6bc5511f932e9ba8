"""Every architecture vLLM 0.34.0 registers, against vLLM's own model classes (issue #23).

The goldens (``tests/golden/architectures/0.34.0/``, ``scripts/golden/make_goldens.py
--architectures``) hold the layers vLLM's model class registers, built on the meta device. kvplan
must reproduce each one exactly or refuse it with a reason; it never builds other layers."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from kvplan.model import families as F
from kvplan.verify import archcheck as A

ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def verdicts() -> dict[str, A.Verdict]:
    return {v.architecture: v for v in A.check_all()}


@lru_cache(maxsize=1)
def goldens() -> dict[str, dict]:
    return {g["architecture"]: g for g in A.load_goldens()}


def test_goldens_cover_the_registry():
    reg = F.vllm_registry()
    assert reg["release"] == A.RELEASE
    registered = {a for k in ("text", "multimodal", "speculative", "transformers") for a in reg[k]}
    assert set(goldens()) == registered
    assert (len(reg["text"]), len(reg["multimodal"]), len(reg["speculative"])) == (126, 130, 69)
    for g in goldens().values():
        assert g["vllm_version"] == A.RELEASE
        assert g["status"] in ("built", "no_kv_cache", "failed", "no_config")
        assert g["status"] == "built" or g["reason"], g["architecture"]


def test_kvplan_never_builds_other_layers_than_vllm():
    differs = {a: v.detail for a, v in verdicts().items() if v.verdict == "differs"}
    assert differs == {}


# Family rules that refuse by design (UnsupportedError: the layout is not modelled), with vLLM's golden
# showing what they would have to build.
REFUSING_RULES: dict[str, str] = {}


def test_every_architecture_with_a_rule_is_exact():
    """An architecture kvplan has a rule for is never refused when vLLM built it here, unless the
    rule itself is a refusal naming what is not modelled."""
    for a, v in verdicts().items():
        fam = F.family_of(a, None)
        if v.status == "built" and fam is not None:
            if fam in REFUSING_RULES:
                assert v.verdict == "refused" and REFUSING_RULES[fam] in v.detail, (a, v.detail)
            else:
                assert v.verdict == "exact", (a, v.detail)


def test_generic_list_is_what_the_goldens_verify():
    """GENERIC_ARCHS is exactly the set of built architectures the generic rule reproduces."""
    exact_generic = {a for a, v in verdicts().items() if v.verdict == "exact" and v.family == F.GENERIC}
    assert exact_generic == set(F.GENERIC_ARCHS)


def test_agreement_rate():
    built = [v for v in verdicts().values() if v.status == "built"]
    exact = [v for v in built if v.verdict == "exact"]
    assert len(exact) / len(built) >= 0.95, A.summary(list(verdicts().values()))


def test_refusals_say_why(tmp_path):
    """Without a verified rule kvplan names the real reason: vLLM registers it but kvplan has no
    checked rule, or vLLM removed it (naming the release), or it is not registered (remote code)."""
    from kvplan.errors import ConfigError
    from kvplan.model.layout import build_model_layout

    def refuse(cfg):
        p = tmp_path / "config.json"
        p.write_text(json.dumps(cfg))
        with pytest.raises(ConfigError) as e:
            build_model_layout(str(p))
        return str(e.value)

    unruled = next(a for a, g in goldens().items() if g["status"] == "failed" and F.family_of(a, None) is None)
    msg = refuse({"architectures": [unruled], "model_type": "x", "auto_map": {"AutoConfig": "a.B"}})
    assert f"vLLM 0.34.0 registers '{unruled}'" in msg and "remote code" not in msg
    msg = refuse({"architectures": ["MiniMaxText01ForCausalLM"], "model_type": "minimax"})
    assert "removed from vLLM in 0.23.0" in msg
    msg = refuse({"architectures": ["FooForCausalLM"], "model_type": "foo", "auto_map": {"AutoConfig": "a.B"}})
    assert "not in vLLM 0.34.0's registry" in msg and "remote code" in msg


def test_docs_architectures_md_is_generated():
    text = (ROOT / "docs" / "architectures.md").read_text()
    assert text == A.markdown() + "\n", "regenerate: python -m kvplan.verify.archcheck --markdown > docs/architectures.md"


# The named examples, as vLLM 0.34.0 and this machine leave them (docs/architectures.md).
NAMED_EXACT = [
    "SmolLM3ForCausalLM",  # Transformers backend; no-RoPE layers are still full attention
    "Qwen3VLForConditionalGeneration",  # text_config wrapper
    "KimiK25ForConditionalGeneration",  # DeepSeek-V3 MLA under text_config
    "Exaone4ForCausalLM",
    "FalconH1ForCausalLM",  # attention + Mamba2 in every layer
    "GraniteMoeHybridForCausalLM",
    "Zamba2ForCausalLM",  # shared attention blocks + Mamba2
    "DeepseekV32ForCausalLM",  # sparse MLA: indexer k_cache + latent cache per layer
    "GlmMoeDsaForCausalLM",  # GLM-5: the DeepSeek-V3.2 layout
    "Glm4MoeForCausalLM",  # GLM-4.5/4.6/4.7 class (GLM-4.7-FP8's config): plain GQA, generic rule
    "Glm4MoeLiteForCausalLM",  # GLM-4.7-Flash: DeepSeek-V3 MLA
    "MiMoForCausalLM",  # MiMo-7B (config class is remote code: read as Qwen2Config)
    "Qwen3VLMoeForConditionalGeneration",  # text_config wrapper, MoE
    "Lfm2ForCausalLM",  # short convolution + attention (full_attn_idxs)
    "Lfm2MoeForCausalLM",
    "KimiLinearForCausalLM",  # KDA + MLA
    "HunYuanDenseV1ForCausalLM",  # Transformers backend, genuine RoPE fields
    "HunYuanMoEV1ForCausalLM",  # Hunyuan-A13B's first published config (remote code: read as hunyuan_v1_moe)
]
# Speculative heads built beside their target (make_goldens.SPEC_CASES): kvplan's drafter layers equal vLLM's.
NAMED_SPECULATIVE = ["Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3", "DeepSeekMTPModel", "DeepseekV32MTPModel",
                     "MiMoMTPModel", "Qwen3_5MTP", "Qwen3_5MoeMTP", "Qwen3NextMTP"]
NAMED_REMOVED = {"BambaForCausalLM": "0.23.0", "MiniMaxText01ForCausalLM": "0.23.0", "Phi4FlashForCausalLM": "0.10.2"}
NAMED_NOT_BUILT_HERE = ["LongcatFlashForCausalLM"]  # no public config found; the class defaults lack mla_scale_q_lora


@pytest.mark.parametrize("arch", NAMED_EXACT + NAMED_SPECULATIVE)
def test_named_examples_agree_with_vllm(arch):
    v = verdicts()[arch]
    assert (v.status, v.verdict) == ("built", "exact"), v.detail


@pytest.mark.parametrize("arch", NAMED_SPECULATIVE)
def test_speculative_goldens_hold_the_drafter_vllm_resolved(arch):
    g = goldens()[arch]
    assert g["registry"] == "speculative" and g["drafter_architecture"] == arch
    assert g["speculative_config"]["method"] in ("eagle3", "mtp") and g["target_config"]


def test_deepseek_v4_flash_built_by_vllm_is_exact():
    """vLLM builds DeepSeek-V4-Flash here (stubs: CUDA streams, Hopper capability for its FP8 o_proj,
    tilelang/cutlass imports); kvplan's 167 caches match it in kind, heads, head size, dtype, window, block
    size, tokens per state and page."""
    g = goldens()["DeepseekV4ForCausalLM"]
    assert g["status"] == "built" and g["config_source"].endswith("deepseek-ai/DeepSeek-V4-Flash")
    v = verdicts()["DeepseekV4ForCausalLM"]
    assert v.verdict == "exact" and "block 256, 128 tokens a state, page 1728 B" in v.detail


@pytest.mark.parametrize("arch,release", sorted(NAMED_REMOVED.items()))
def test_named_removed_architectures_are_refused_naming_the_release(arch, release, tmp_path):
    from kvplan.errors import ConfigError
    from kvplan.model.layout import build_model_layout

    assert F.vllm_registry()["removed"][arch] == release
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"architectures": [arch], "model_type": "x"}))
    with pytest.raises(ConfigError, match=f"removed from vLLM in {release}"):
        build_model_layout(str(p))


@pytest.mark.parametrize("arch", NAMED_NOT_BUILT_HERE)
def test_named_examples_vllm_could_not_build_here_are_refused(arch, tmp_path):
    """No golden, no rule: kvplan refuses (a rule unchecked against vLLM's class could mislead)."""
    from kvplan.errors import ConfigError
    from kvplan.model.layout import build_model_layout

    g = goldens()[arch]
    assert g["status"] in ("failed", "no_config") and g["reason"]
    assert F.family_of(arch, None) is None
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"architectures": [arch], "model_type": "x", "auto_map": {"AutoConfig": "a.B"}}))
    with pytest.raises(ConfigError, match="registers"):
        build_model_layout(str(p))


def test_architectures_with_a_quantized_kv_cache():
    """The same harness with vLLM's --kv-cache-dtype fp8 (``make_goldens.py --architectures --kv-cache-dtype
    fp8 --built-in 0.34.0``): every architecture the plain run builds (154) is built again in fp8, and every layer
    vLLM builds is kvplan's under --kv-cache-dtype fp8 (uint8 caches, MLA's cache_dtype_str, the Mamba states
    untouched, Falcon's attention left in bfloat16): 154/154 exact."""
    vs = A.check_all(kv_cache_dtype="fp8")
    built = {v.architecture: v for v in vs if v.status == "built"}
    plain = {v.architecture for v in A.check_all() if v.status == "built"}
    assert len(built) == 154 and set(built) == plain
    assert {a: v.detail for a, v in built.items() if v.verdict != "exact"} == {}
    falcon = next(g for g in A.load_goldens(kv_cache_dtype="fp8") if g["architecture"] == "FalconForCausalLM")
    assert {s["dtype"] for s in falcon["spec_table"]} == {"bfloat16"}  # FalconAttention: no cache config
    for g in A.load_goldens(kv_cache_dtype="fp8"):
        assert g["status"] == "no_config" or g["kv_cache_dtype"] == "fp8"
    llama = next(g for g in A.load_goldens(kv_cache_dtype="fp8") if g["architecture"] == "LlamaForCausalLM")
    assert {s["dtype"] for s in llama["spec_table"]} == {"uint8"}
