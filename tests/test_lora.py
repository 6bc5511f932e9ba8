"""--enable-lora's GPU bytes (kvplan.budget.lora) against the release's own load_lora_model run on the meta device
(tests/golden/profile_terms/lora/, scripts/golden/profile_terms.py --lora-all), EPLB's redundant experts in the
weights, and the LoRA / EPLB config checks (kvplan.engines.vllm.prechecks.check_lora / check_eplb)."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

import kvplan
from kvplan.budget.lora import PUNICA, class_support, lora_cost
from kvplan.budget.weights import layout_weights
from kvplan.engines.vllm.prechecks import check_eplb, check_lora
from kvplan.engines.vllm.releases import get_era
from kvplan.errors import EngineFailure
from kvplan.model.layout import build_model_layout
from kvplan.tensors import Weight

GOLDENS = Path(__file__).parent / "golden" / "profile_terms" / "lora"
LLAMA, QWEN3 = "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B"
MODELS = {"llama": LLAMA, "qwen3": QWEN3}


def _cost(model: str, release: str, *, tp: int = 1, loras: int = 4, rank: int = 64, tokens: int = 2048,
          seqs: int = 256):
    layout = build_model_layout(model)
    return lora_cost(layout_weights(layout).target, layout.target.text_config,
                     layout.target.config["architectures"][0], release, dtype_bytes=2, tp=tp, max_loras=loras,
                     max_lora_rank=rank, max_num_batched_tokens=tokens, max_num_seqs=seqs)


def _goldens():
    return [(p.stem, family, rec) for p in sorted(GOLDENS.glob("*.json"))
            for family, rec in json.loads(p.read_text())["lora"].items()]


def test_goldens_cover_the_releases_and_models_asked_for():
    got = {(release, family) for release, family, rec in _goldens() if rec.get("derived")}
    assert {("0.19.0", "llama"), ("0.19.0", "qwen3"), ("0.34.0", "llama"), ("0.34.0", "qwen3")} <= got


@pytest.mark.parametrize("release,family,rec", _goldens(), ids=lambda x: x if isinstance(x, str) else "")
def test_slots_and_punica_equal_the_release_golden(release, family, rec):
    loras, rank, seqs, tokens = (rec["lora_config"][k] for k in ("max_loras", "max_lora_rank", "max_num_seqs",
                                                                   "max_num_batched_tokens"))
    c = _cost(MODELS[family], release, loras=loras, rank=rank, tokens=tokens, seqs=seqs)
    assert c.slot_bytes == rec["slot_bytes"]
    p = rec["punica"]
    assert c.punica_bytes == round(p["bytes_per_token"] * tokens + p["bytes_per_seq"] * seqs + p["fixed_bytes"])
    # the class wraps its embeddings where the golden shows model.embed_tokens wrapped
    assert c.embeddings == ("model.embed_tokens" in rec["modules"])
    assert (release, p["bytes_per_token"], p["bytes_per_seq"], p["fixed_bytes"]) in PUNICA


def test_llama_slots_by_hand():
    # Llama-3.1-8B (H 4096, q 32x128, kv 8x128, I 14336, 32 layers, V 128256) at L 4, r 64, bf16, TP 1, 0.34.0;
    # per layer, per slot and rank unit: q/k/v (4096+4096) + 2 (1024+4096), o 4096+4096, gate/up 2 (14336+4096),
    # down 14336+4096 = 81,920; the embeddings and lm_head (128256 + 4096) each
    per_rank_unit = 32 * 81_920 + 2 * (128_256 + 4_096)
    assert _cost(LLAMA, "0.34.0").slot_bytes == per_rank_unit * 64 * 4 * 2 == 1_477_705_728


def test_tensor_parallel_shards_the_linear_slots_not_the_embeddings():
    # TP 2: column-parallel lora_b and row-parallel lora_a halve (q/k/v/gate/up out, o/down in), the inputs of
    # column-parallel and the outputs of row-parallel layers stay whole; embeddings and lm_head whole
    per_layer = (4096 + 2048) + 2 * (4096 + 512) + (4096 + 2048) + 2 * (4096 + 7168) + (4096 + 7168)
    assert per_layer == 55_296
    assert _cost(LLAMA, "0.34.0", tp=2).slot_bytes == (32 * per_layer + 2 * (128_256 + 4_096)) * 64 * 4 * 2


def test_the_extra_lora_vocabulary_up_to_0_11():
    # 0.11.0: lora_a of the embeddings [L, V + 256, r], lm_head's lora_b [L, 1, ceil((V + 256)/256)*256, r], two
    # embeddings_tensors [L, 256, H]; the model's embedding 129,280 rows (V + 256 L) and lm_head 128,512 rows
    c = _cost(LLAMA, "0.11.0")
    assert c.slot_bytes == ((32 * 81_920 + 2 * (128_512 + 4_096)) * 64 + 2 * 256 * 4096) * 4 * 2 == 1_494_745_088
    assert c.vocab_weight_bytes == ((129_280 - 128_256) + (128_512 - 128_256)) * 4096 * 2
    # Qwen3's class did not wrap its embeddings before 0.17 (the goldens: 144 wrapped modules in 0.15.1, 146 in
    # 0.19.0), so it has no extra vocabulary either
    assert class_support("Qwen3ForCausalLM", "0.15.1") == (True, False, False)
    assert class_support("Qwen3ForCausalLM", "0.17.0") == (True, True, True)


def test_the_budget_counts_lora_inside_the_weights():
    kw = dict(gpu="H100", policy="vllm==0.34.0")
    plain = kvplan.simulate(LLAMA, **kw)["budget"]
    lora = kvplan.simulate(LLAMA, enable_lora=True, max_loras=4, max_lora_rank=64, **kw)["budget"]
    term = next(t for t in lora["profile_terms"] if t["term"] == "lora")
    # the slots at T 8192, R 1024 (H100's defaults), plus punica 48 B per token + 24 per sequence + 128 (0.34.0)
    assert term["bytes"] == 1_477_705_728 + 48 * 8192 + 24 * 1024 + 128
    assert term["derivation"] == "derived"
    assert lora["weights_bytes"] - plain["weights_bytes"] == term["bytes"]
    assert plain["kv_cache_memory_bytes"] - lora["kv_cache_memory_bytes"] == term["bytes"]
    assert not any(t["term"] == "lora" for t in plain["profile_terms"])


def test_lora_flags_from_a_serve_line_and_a_deployments_key():
    r = kvplan.vllm_serve(line=f"vllm serve {LLAMA} --enable-lora --max-loras 4 --max-lora-rank 64 --gpu-memory-utilization 0.9",
                          policy="vllm==0.34.0", gpu="H100")
    term = next(t for t in r["budget"]["profile_terms"] if t["term"] == "lora")
    assert term["bytes"] == 1_477_705_728 + 48 * 8192 + 24 * 1024 + 128


def test_eplb_config_from_a_serve_line():
    r = kvplan.vllm_serve(line="vllm serve openai/gpt-oss-20b -tp 2 --enable-expert-parallel --enable-eplb "
                               "--eplb-config '{\"num_redundant_experts\": 2, \"window_size\": 1000}'",
                          policy="vllm==0.34.0", gpu="H100")
    term = next(t for t in r["budget"]["profile_terms"] if t["term"] == "eplb")
    assert term["source"].startswith("--enable-eplb: 2 redundant experts per MoE layer")


def test_the_0_11_flag_and_no_buffer_before_0_12():
    # 0.11.0 still has --num-redundant-experts (deprecated for eplb_config.num_redundant_experts, config/parallel.py
    # lines 116-119); its EplbState keeps no expert buffer (the buffer is made in rearrange_expert_weights_inplace)
    r = kvplan.vllm_serve(line="vllm serve openai/gpt-oss-20b -tp 2 --enable-expert-parallel --enable-eplb "
                               "--num-redundant-experts 2", policy="vllm==0.11.0", gpu="H100")
    term = next(t for t in r["budget"]["profile_terms"] if t["term"] == "eplb")
    assert term["bytes"] == 0 and term["source"].startswith("--enable-eplb: 2 redundant experts per MoE layer")


def _facts(arch="LlamaForCausalLM", vocab=128_256):
    return types.SimpleNamespace(architecture=arch, vocab_size=vocab)


def _opts(**kw):
    base = dict(enable_lora=True, max_loras=1, max_lora_rank=16, max_cpu_loras=None, enable_eplb=False,
                num_redundant_experts=None, enable_expert_parallel=False, tensor_parallel_size=1,
                data_parallel_size=1)
    return types.SimpleNamespace(**{**base, **kw})


def test_lora_config_checks_per_release():
    # rank 1 joined the allowed ranks in 0.12 (0.11.0 config/lora.py possible_max_ranks; 0.12.0 MaxLoRARanks)
    with pytest.raises(EngineFailure, match=r"max_lora_rank \(1\) must be one of \(8, 16"):
        check_lora(_facts(), _opts(max_lora_rank=1), get_era("vllm==0.11.0"))
    check_lora(_facts(), _opts(max_lora_rank=1), get_era("vllm==0.12.0"))
    with pytest.raises(EngineFailure) as e:
        check_lora(_facts(), _opts(max_lora_rank=48), get_era("vllm==0.34.0"))
    assert e.value.error_type == "ValidationError"
    with pytest.raises(EngineFailure, match=r"max_cpu_loras \(2\) must be >= max_loras \(4\)\."):
        check_lora(_facts(), _opts(max_loras=4, max_cpu_loras=2), get_era("vllm==0.34.0"))
    # LogitsProcessorWithLoRA refuses a vocabulary over 258,048 (0.34.0 logits_processor.py line 91)
    with pytest.raises(EngineFailure, match="vocab size must be <= 258048"):
        check_lora(_facts(vocab=262_144), _opts(), get_era("vllm==0.34.0"))
    check_lora(_facts(vocab=262_144), _opts(enable_lora=False), get_era("vllm==0.34.0"))


def test_eplb_config_checks():
    with pytest.raises(EngineFailure, match="enable_expert_parallel must be True to use EPLB."):
        check_eplb(_opts(enable_eplb=True), get_era("vllm==0.34.0"))
    with pytest.raises(EngineFailure, match="TP=1, PCP=1, DP=1"):
        check_eplb(_opts(enable_eplb=True, enable_expert_parallel=True), get_era("vllm==0.34.0"))
    with pytest.raises(EngineFailure, match="num_redundant_experts is set to 8 but EPLB is not enabled"):
        check_eplb(_opts(num_redundant_experts=8), get_era("vllm==0.34.0"))


def test_redundant_experts_per_ep_rank():
    # determine_expert_map: rank 0 holds ceil((E + redundant) / ranks) physical experts
    w = Weight("experts.w13", "experts", (32, 5760, 2880), layer=0, shard_dim=1, linear=True, expert=True)
    assert w.moe_rank_shape(2, True) == (16, 5760, 2880)
    assert w.moe_rank_shape(2, True, 2) == (17, 5760, 2880)
    assert w.moe_rank_shape(2, False, 2) == (32, 2880, 2880)  # no EP: a slice of every expert, no replicas


def test_eplb_adds_one_expert_per_layer_and_the_buffer():
    # gpt-oss-20b (32 experts, 24 MoE layers), TP 2 with EP: 16 experts per rank; --num-redundant-experts 2 makes
    # 34 physical experts, 17 on rank 0: one more expert per layer; EPLB's buffer holds one layer's 17 experts
    kw = dict(gpu="H100", policy="vllm==0.34.0", tensor_parallel_size=2, enable_expert_parallel=True)
    plain = kvplan.simulate("openai/gpt-oss-20b", **kw)["budget"]
    eplb = kvplan.simulate("openai/gpt-oss-20b", enable_eplb=True, num_redundant_experts=2, **kw)["budget"]
    experts = plain["weights"]["bytes_by_kind"]["experts"]
    assert experts % (24 * 16) == 0
    one_expert_layer = experts // (24 * 16)
    term = next(t for t in eplb["profile_terms"] if t["term"] == "eplb")
    assert eplb["weights"]["bytes_by_kind"]["experts"] == 24 * 17 * one_expert_layer
    assert term["bytes"] == 17 * one_expert_layer
    assert eplb["weights_bytes"] - plain["weights_bytes"] == 24 * one_expert_layer
    # the buffer is allocated after 'Model loading took' and held under the profile run: in the activation
    assert eplb["activation_peak_bytes"] - plain["activation_peak_bytes"] == term["bytes"]


def test_eplb_default_redundant_experts_from_0_34():
    # 0.34.0 compute_eplb_num_redundant_experts: (ep - E % ep) % ep; 32 experts over ep 3 -> 1; 0.33: 0
    from kvplan.budget.estimate import redundant_experts
    from kvplan.budget.request import BudgetInput, BudgetRequest

    layout = build_model_layout("openai/gpt-oss-20b")
    req = BudgetRequest(BudgetInput(), data_parallel_size=3, enable_eplb=True)
    assert redundant_experts(get_era("vllm==0.34.0"), req, layout) == 1
    assert redundant_experts(get_era("vllm==0.33.0"), req, layout) == 0


# ---------------------------------------------------------------- the drafter's part of the profile

GPT_OSS, EAGLE3_HEAD = "openai/gpt-oss-20b", "RedHatAI/gpt-oss-20b-speculator.eagle3"


def _spec_golden(release: str) -> dict:
    return json.loads((GOLDENS.parent / "spec" / f"{release}.json").read_text())


def test_the_spec_sampler_table_is_the_goldens():
    table = json.loads(Path(kvplan.__file__).with_name("budget").joinpath("spec_sampler.json").read_text())
    for release, row in table["releases"].items():
        g = _spec_golden(release)
        if g["derived"]:
            # on CUDA (the sorts' workspace added, measured from 128 requests), and the CPU's own figure
            assert row["bytes_per_logit"] == round(g["cuda"]["spec"]["bytes_per_logit"], 4)
            assert row["bytes_per_logit_cpu"] == round(g["bytes_per_logit"], 4)
            assert g["bytes_per_logit"] >= g["bytes_per_logit_no_spec"] - 1e-6
        else:
            assert row == {"why": g["why"]}
    # 0.19.0: the rejection pass (2·R rows of logits and their fp32 probabilities) more than doubles the call's
    # peak per logit; 0.11.0: the sampler's sorting pass (28 B per logit) stays the peak
    assert _spec_golden("0.19.0")["bytes_per_logit"] > 2 * _spec_golden("0.19.0")["bytes_per_logit_no_spec"]
    assert _spec_golden("0.11.0")["bytes_per_logit"] == _spec_golden("0.11.0")["bytes_per_logit_no_spec"]
    # the V2 runner (0.34.0) has no V1 sampler module: no rejection pass in its _dummy_sampler_run
    assert not _spec_golden("0.34.0")["derived"]


def test_an_eagle_head_on_the_v1_runner_adds_the_rejection_sampler_pass():
    # gpt-oss-20b with its EAGLE-3 head on an H100 in 0.19.0 (V1 runner): R = min(1024, 8192) dummy requests over
    # V = 201,088 logits; the dummy sampler call's peak with the speculative config is R·V·b_spec plus the Triton
    # top-k/top-p buffer's rows (min(next_pow2(min(132, R)), 132) = 132 rows of V · s), above the plain pass
    from kvplan.budget.profile import sampler_row

    row = json.loads(Path(kvplan.__file__).with_name("budget").joinpath("spec_sampler.json").read_text())[
        "releases"]["0.19.0"]
    s = sampler_row("0.19.0")[0]["sm_row_bytes_per_vocab"]
    spec = round(1024 * 201_088 * row["bytes_per_logit"] + 132 * 201_088 * s)
    kw = dict(gpu="H100", policy="vllm==0.19.0", num_speculative_tokens=3)
    b = kvplan.simulate(GPT_OSS, drafter=EAGLE3_HEAD, **kw)["budget"]
    # the sampler peaks while the forward's hidden states (T·H·a) are held, + the 256 MiB workspace
    assert b["activation_peak_bytes"] == spec + 8192 * 2880 * 2 + 256 * 2**20
    term = next(t for t in b["profile_terms"] if t["term"] == "activation")
    assert "rejection-sampler pass" in term["source"] and term["derivation"] == "derived"
    # on 0.34.0's V2 runner there is no such pass: the sampler pass alone, and what the runner's EAGLE-3 speculator
    # keeps on the card (tests/test_profile_terms.py::test_v2_runner_persistent_with_an_eagle3_drafter: 0.34.0's
    # fit, k = 3, the head's hidden size 2,880 bf16): 1,024 · 201,088 · 3 · 0.125 + 1,024 · (49 + 3 · 24)
    # + 8,192 · (13 + 2 · 2,880) + 16 = 124,634,128 B
    plain = kvplan.simulate(GPT_OSS, gpu="H100", policy="vllm==0.34.0")["budget"]
    eagle = kvplan.simulate(GPT_OSS, drafter=EAGLE3_HEAD, gpu="H100", policy="vllm==0.34.0",
                            num_speculative_tokens=3)["budget"]
    speculator = round(1024 * 201_088 * 3 * 0.125) + 1024 * (49 + 3 * 24) + 8192 * (13 + 2 * 2880) + 16
    assert speculator == 124_634_128
    assert eagle["activation_peak_bytes"] == plain["activation_peak_bytes"] + speculator


def test_the_eagle3_head_weights_as_vllm_loads_them():
    # RedHatAI's gpt-oss-20b EAGLE-3 head ships no embed_tokens (shared with the target: has_own_embed_tokens
    # False, eagle.py 0.19.0 lines 1342-1346) and its own lm_head over a 64,000-token draft vocabulary (distinct
    # from the target's 201,088: kept, lines 1406-1428). Its parameters: fc 3H·H, one layer whose q/k/v read
    # 2H (q 64·64, k/v 8·64 rows), o, the gated MLP (I = H = 2,880), lm_head 64,000·H
    H = 2880
    params = 3 * H * H + (4096 + 2 * 512) * 2 * H + H * 4096 + 3 * H * H + 64_000 * H
    w = kvplan.simulate(GPT_OSS, drafter=EAGLE3_HEAD, gpu="H100", num_speculative_tokens=3)["budget"]["weights"]
    assert w["num_params_by_kind"]["drafter"] == params == 275_374_080
    assert w["bytes_by_kind"]["drafter"] == 2 * params
