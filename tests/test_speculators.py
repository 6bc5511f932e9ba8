"""Speculators-format EAGLE-3 checkpoints (``speculators_model_type``, ``transformer_layer_config``,
``speculators_config``), read as vLLM 0.34.0 reads them:

- as a drafter: ``SpeculatorsConfig.extract_transformers_pre_trained_config`` (vllm/transformers_utils/
  configs/speculators/base.py lines 47-63, algos.py lines 15-50): the layer config + EAGLE-3 fields, the
  head class from the layer's model_type; no default num_speculative_tokens (the draft config has no
  n_predict: v1/worker/gpu/spec_decode/speculator_config.py lines 275-282);
- served as the model: ``maybe_override_with_speculators`` (transformers_utils/config.py lines 833-925):
  the verifier is served, the checkpoint drafts, num_speculative_tokens defaults to
  ``proposal_methods[0].speculative_tokens``, the method is locked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kvplan

from kvplan.errors import ConfigError, UnsupportedError
from kvplan.model import ServingOptions
from kvplan.model.catalog import catalog_config_path
from kvplan.model.drafters import speculators_pretrained_config, speculators_spec
from kvplan.model.layout import build_model_layout
from kvplan.specs import FullAttentionSpec

LLAMA_SPEC = "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3"


def _spec_config(**changes) -> dict:
    cfg = {
        "architectures": ["Eagle3Speculator"],
        "draft_vocab_size": 32000,
        "speculators_config": {
            "algorithm": "eagle3",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 4}],
            "verifier": {"name_or_path": "Qwen/Qwen3-8B"},
        },
        "speculators_model_type": "eagle3",
        "transformer_layer_config": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                                     "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 1,
                                     "vocab_size": 151936},
    }
    cfg.update(changes)
    return cfg


def _write(tmp_path, cfg: dict) -> str:
    d = tmp_path / "spec"
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d)


def test_speculators_drafter_is_one_full_layer_after_the_target():
    # Llama-3.1-8B-Instruct: 32 full layers; the head's layer config: 1 layer, 8 KV heads x 128.
    # Page: 16 tokens x 8 heads x 128 x 2 (K, V) x 2 bytes (bfloat16, the target's dtype) = 65,536.
    L = build_model_layout("meta-llama/Llama-3.1-8B-Instruct", drafter=LLAMA_SPEC,
                           options=ServingOptions(num_speculative_tokens=3))
    assert L.speculative_method == "eagle3"
    assert "speculative method eagle3 inferred: Eagle3LlamaForCausalLM is an EAGLE-3 head" in L.notes
    assert len(L.layers) == 33
    last = L.layers[-1]
    assert (last.name, last.source) == ("model.layers.32.self_attn.attn", "drafter")
    assert last.spec == FullAttentionSpec(block_size=16, num_kv_heads=8, head_size=128, dtype="bfloat16")
    assert last.spec.page_size_bytes == 65536 and last.spec == L.layers[0].spec  # joins the full bucket
    # the drafter's config is what vLLM builds from the speculators file
    assert L.drafter.config["architectures"] == ["Eagle3LlamaForCausalLM"]
    assert L.drafter.config["draft_vocab_size"] == 32000 and L.drafter.config["num_hidden_layers"] == 1
    assert L.drafter.provenance == "reconstructed"


def test_speculators_drafter_gives_no_default_token_count():
    # vLLM 0.34.0: the draft SpeculatorsConfig has no n_predict, so a speculators checkpoint given as the
    # drafter needs num_speculative_tokens ("A speculative model was provided, but `num_speculative_tokens`
    # was not provided"); its speculative_tokens is read only when the checkpoint is served.
    L = build_model_layout("meta-llama/Llama-3.1-8B-Instruct", drafter=LLAMA_SPEC)
    assert L.num_speculative_tokens == 0 and L.num_speculative_tokens_missing
    # a start-up failure with that text (exit 3; tests/test_prechecks.py), the fix simulated with 1 token
    r = kvplan.simulate("meta-llama/Llama-3.1-8B-Instruct", drafter=LLAMA_SPEC, kv_cache_memory="40GiB")
    assert (r["outcome"]["stage"], r["outcome"]["error"], r["outcome"]["fix"]) == (
        "config.speculative", "A speculative model was provided, but `num_speculative_tokens` was not provided",
        "--num-speculative-tokens 1")


def test_served_speculator_serves_the_verifier_with_default_tokens():
    L = build_model_layout(LLAMA_SPEC)
    assert L.target.source.model_id == "meta-llama/Llama-3.1-8B-Instruct"
    assert L.drafter.source.model_id == LLAMA_SPEC
    assert (L.speculative_method, L.num_speculative_tokens) == ("eagle3", 3)
    assert L.notes[0] == (f"{LLAMA_SPEC} is a speculators checkpoint: vLLM serves its verifier "
                          "meta-llama/Llama-3.1-8B-Instruct with it as the eagle3 drafter")
    assert ("num_speculative_tokens 3 (vLLM's default: speculators_config.proposal_methods[0].speculative_tokens "
            "of the served speculators checkpoint)") in L.notes
    assert [ls.name for ls in L.layers][-2:] == ["model.layers.31.self_attn.attn", "model.layers.32.self_attn.attn"]
    # the user's --num-speculative-tokens wins (0.33.0+: speculative_config.update(user's))
    assert build_model_layout(LLAMA_SPEC, options=ServingOptions(num_speculative_tokens=5)).num_speculative_tokens == 5


def test_served_speculator_locks_method_and_replaces_drafter():
    L = build_model_layout(LLAMA_SPEC, drafter="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                           options=ServingOptions(speculative_method="eagle"))
    assert L.speculative_method == "eagle3" and L.drafter.source.model_id == LLAMA_SPEC
    assert (f"--drafter yuhuili/EAGLE3-LLaMA3.1-Instruct-8B is replaced by the served speculators checkpoint "
            f"{LLAMA_SPEC}: vLLM sets speculative_config.model to it") in L.warnings
    assert ("--speculative-method eagle is replaced by the checkpoint's eagle3: vLLM locks the method a "
            "speculators checkpoint names") in L.warnings


@pytest.mark.parametrize(("model", "target", "target_layers", "kv", "hd"), [
    ("RedHatAI/Qwen3-8B-speculator.eagle3", "Qwen/Qwen3-8B", 36, 8, 128),
    ("RedHatAI/gpt-oss-20b-speculator.eagle3", "openai/gpt-oss-20b", 24, 8, 64),
])
def test_bundled_speculators_join_their_verifiers_full_layers(model, target, target_layers, kv, hd):
    L = build_model_layout(model)
    assert L.target.source.model_id == target and L.num_speculative_tokens == 3
    last = L.layers[-1]
    assert last.name == f"model.layers.{target_layers}.self_attn.attn" and last.source == "drafter"
    assert last.spec == FullAttentionSpec(block_size=16, num_kv_heads=kv, head_size=hd, dtype="bfloat16")
    # spec-equal to the verifier's full layers: vLLM puts the head in the full bucket
    assert any(ls.spec == last.spec for ls in L.layers if ls.source == "target")


def test_qwen3_layer_config_builds_the_qwen3_head(tmp_path):
    cfg = _spec_config()
    cfg["transformer_layer_config"]["model_type"] = "qwen3"
    L = build_model_layout(_write(tmp_path, cfg))
    assert L.drafter.architecture == "Eagle3Qwen3ForCausalLM"  # algos.py update_eagle3 (0.33.0+)
    assert L.num_speculative_tokens == 4 and L.target.source.model_id == "Qwen/Qwen3-8B"
    assert L.layers[-1].spec == FullAttentionSpec(block_size=16, num_kv_heads=8, head_size=128, dtype="bfloat16")


def test_bad_speculators_configs_are_one_line_errors(tmp_path):
    cfg = _spec_config()
    cfg["transformer_layer_config"]["model_type"] = "mistral"
    with pytest.raises(ConfigError, match=r"field 'transformer_layer_config.model_type': Unsupported model_type "
                                          r"mistral for Eagle3 speculator"):
        build_model_layout(_write(tmp_path, cfg))
    with pytest.raises(ConfigError, match="field 'transformer_layer_config': missing"):
        build_model_layout(_write(tmp_path, {k: v for k, v in _spec_config().items()
                                             if k != "transformer_layer_config"}))
    with pytest.raises(UnsupportedError, match="P-EAGLE \\(parallel drafting EAGLE-3\\) is not supported"):
        build_model_layout(_write(tmp_path, _spec_config(speculators_model_type="peagle")))
    with pytest.raises(UnsupportedError, match="the dflash method is not modelled by kvplan"):
        build_model_layout(_write(tmp_path, _spec_config(speculators_model_type="dflash")))
    with pytest.raises(ConfigError, match="field 'speculators_model_type': 'medusa' is not a speculators type"):
        build_model_layout(_write(tmp_path, _spec_config(speculators_model_type="medusa")))
    broken = _spec_config()
    broken["speculators_config"]["proposal_methods"] = []
    with pytest.raises(ConfigError, match="Invalid speculators config structure"):
        build_model_layout(_write(tmp_path, broken))
    local = _spec_config()
    local["speculators_config"]["verifier"]["name_or_path"] = str(tmp_path)
    with pytest.raises(ConfigError, match="Speculators verifier must name a remote model repository"):
        build_model_layout(_write(tmp_path, local))


def test_served_speculator_plans_like_its_eagle3_head():
    # Served as the model (3 tokens): Llama-3.1-8B-Instruct's 32 full layers + the head's 1, one group of 33.
    # At 0.34.0's block 64: page 64 x 8 x 128 x 2 x 2 B = 262,144; a block holds 33 pages = 8,650,752 B;
    # 40 GiB = 42,949,672,960 B // 8,650,752 = 4,964 blocks (golden llama-3.1-8b-speculator__40gib__0.34.0;
    # 0.18.0/0.33.0 at block 16: 19,859); 4,964 x 64 = 317,696 tokens, / 131,072 = 2.42x.
    r = kvplan.simulate(LLAMA_SPEC, kv_cache_memory="40GiB", max_model_len=131072)
    assert r["outcome"]["starts"] and r["speculative"] == {"method": "eagle3", "num_speculative_tokens": 3,
                                                     "parallel_drafting": False, "parallel_drafting_given": None,
                                                     "note": None}
    assert [(g["kind"], g["num_layers"], g["drafter_layers"]) for g in r["groups"]] == [("full_attention", 33, ["32"])]
    m = r["memory"]
    assert (m["page_size_bytes"], m["bytes_per_block"], m["num_blocks"], m["kv_tokens"]) == (262144, 8650752, 4964,
                                                                                              317696)


def test_gpt_oss_speculator_joins_the_full_group():
    # gpt-oss-20b: 12 sliding(128) + 12 full, 8 KV x 64; the head adds a 13th full layer (model.layers.24),
    # so the group size is 13 and the sliding group carries 1 padding slot. Page at 0.34.0's block 64:
    # 64 x 8 x 64 x 2 x 2 B = 131,072; a block = 13 x 131,072 = 1,703,936 B; 42,949,672,960 // 1,703,936 =
    # 25,206 blocks.
    r = kvplan.simulate("RedHatAI/gpt-oss-20b-speculator.eagle3", kv_cache_memory="40GiB", max_model_len=131072)
    assert [(g["kind"], g["num_layers"], g["padding_slots"], g["drafter_layers"]) for g in r["groups"]] == [
        ("sliding_window", 12, 1, []), ("full_attention", 13, 0, ["24"])]
    m = r["memory"]
    assert (m["page_size_bytes"], m["group_size"], m["bytes_per_block"], m["num_blocks"]) == (131072, 13, 1703936,
                                                                                               25206)


VLLM_RECORD = json.loads((Path(__file__).parent / "data" / "speculators_vllm.json").read_text())


@pytest.mark.parametrize("release", sorted(VLLM_RECORD))
def test_reading_matches_vllms_own_functions(release):
    """tests/data/speculators_vllm.json: vLLM's SpeculatorsConfig run on each bundled config in that
    release's venv (scripts/golden/speculators_probe.py). kvplan's draft config equals 0.33.0/0.34.0's
    exactly; 0.18.0 sets fewer EAGLE-3 flags (no norm_before_fc/fc_norm/norm_output) but the same layer.
    No release gives the draft config an n_predict (so a speculators --drafter has no default token
    count); serving the checkpoint gives eagle3 with its speculative_tokens."""
    for model_id, rec in VLLM_RECORD[release].items():
        path = catalog_config_path(model_id)
        raw = json.loads(path.read_text())
        mine = speculators_pretrained_config(raw, str(path))
        theirs = rec["pre_trained_config"]
        if release == "0.18.0":
            mine = {k: v for k, v in mine.items() if k in theirs or k not in ("norm_before_fc", "fc_norm", "norm_output")}
        assert mine == theirs, (release, model_id)
        assert rec["n_predict"] is None
        method, tokens, _ = speculators_spec(raw, str(path))
        assert rec["speculative_config"] == {"method": method, "num_speculative_tokens": tokens}


def test_release_018_drops_the_users_token_count_for_a_served_speculator():
    # vLLM 0.18.0's maybe_override_with_speculators returns the checkpoint's speculative config alone
    # (transformers_utils/config.py lines 584-598): --num-speculative-tokens 5 becomes the checkpoint's 3;
    # 0.33.0 and 0.34.0 update the checkpoint's config with the user's (Era.speculators_user_config).
    old = kvplan.simulate(LLAMA_SPEC, kv_cache_memory="40GiB", max_model_len=131072, num_speculative_tokens=5,
                          policy="vllm==0.18.0")
    new = kvplan.simulate(LLAMA_SPEC, kv_cache_memory="40GiB", max_model_len=131072, num_speculative_tokens=5,
                          policy="vllm==0.33.0")
    assert old["speculative"]["num_speculative_tokens"] == 3 and new["speculative"]["num_speculative_tokens"] == 5
    assert ("--num-speculative-tokens 5 is dropped: this vLLM release replaces the user's speculative config with "
            "the speculators checkpoint's (3 tokens)") in old["warnings"]
