"""vLLM's grouping, sizing and start-up decisions on hand-built specs.

Every expected number is derived in a comment from reference §3-§4, §8 and §11
(vllm-kv-layout.md); §11's measured table (vLLM 0.17.1, 0.18.0, 0.33.0) is the
ground truth for the gpt-oss-20b + P-EAGLE case.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from factories import chunked, full, gdn, gemma3_27b, gpt_oss_20b, layers, mla, sw
from kvplan.engines.vllm import ModelFacts, SimulateOptions, get_era, simulate
from kvplan.engines.vllm.group_size import choose_group_size
from kvplan.errors import OptionError
from kvplan.units import GiB

L128K = 131072


def run(ls, era="vllm-latest", mem=40 * GiB, facts=None, threshold=None, **opts):
    e = get_era(era)
    if threshold is not None:
        e = replace(e, threshold=threshold)
    opts.setdefault("max_model_len", L128K)
    return simulate(ls, (), facts or ModelFacts(L128K), e, SimulateOptions(kv_cache_memory_bytes=mem, **opts))


EAGLE = ModelFacts(L128K, speculative_method="eagle3")


# §8.6: group size = max when max < min · threshold (strict), else min.
@pytest.mark.parametrize(
    "m, big, at125, at15",
    [(5, 6, 6, 6), (12, 13, 13, 13), (12, 14, 14, 14), (12, 15, 12, 15), (12, 16, 12, 16), (12, 17, 12, 17),
     (12, 18, 12, 12), (18, 22, 22, 22), (18, 23, 18, 23), (10, 12, 12, 12), (10, 13, 10, 13), (10, 15, 10, 10),
     (4, 5, 4, 5), (2, 3, 2, 2), (2, 4, 2, 2), (3, 7, 3, 3), (9, 9, 9, 9)],
)
def test_threshold_table(m, big, at125, at15):
    assert choose_group_size([m, big], 1.25) == at125
    assert choose_group_size([m, big], 1.5) == at15
    assert choose_group_size([m, big], None) == m  # vllm-min: always the smallest bucket


def test_gpt_oss_20b_peagle_at_1_25_fails_on_drafter_split():
    # 12 sliding + 16 full (12 target + 4 drafter): 16 < 12·1.25 = 15 is false → group size 12.
    # Full bucket splits in cdiv(16, 12) = 2 striped groups of 8; padding 12 − 16 mod 12 = 8 (8/16 = 50%).
    p = run(gpt_oss_20b(4), "vllm-1.25", facts=EAGLE)
    assert (p.group_size, p.num_groups, p.num_padding_layers) == (12, 3, 8)
    assert p.logs[0] == "Add 8 padding layers, may waste at most 50.00% KV cache memory"
    # 40 GiB // 32768 B page // 12 slots = 109226 blocks (§11 measured on 0.17.1)
    assert p.num_blocks == 109226
    # sliding: cdiv(min(127 + 8192, L), 16) + 1 = 521; each full group cdiv(131072, 16) = 8192
    assert p.blocks_per_request == [521, 8192, 8192]
    assert f"{p.max_concurrency:.2f}" == "6.46"  # 109226 / 16905
    assert p.kv_cache_size_tokens == 582528  # 109226 // 3 groups · 16
    # drafter layers 24,26 in group 1 and 25,27 in group 2: the proposer's assertion fires after the log lines
    assert p.drafter_groups() == [1, 2]
    assert p.failure.message == "All drafting layers should belong to the same kv cache group"
    assert p.logs[-1] == "Maximum concurrency for 131,072 tokens per request: 6.46x"


def test_gpt_oss_20b_peagle_at_1_5_starts():
    # 16 < 12·1.5 = 18 → group size 16; sliding bucket padded by 4 (4/12 = 33.33%).
    p = run(gpt_oss_20b(4), "vllm-1.5", facts=EAGLE)
    assert (p.group_size, p.num_groups, p.num_padding_layers) == (16, 2, 4)
    assert f"{p.padding_waste_pct:.2f}" == "33.33"
    assert p.num_blocks == 81920  # 40 GiB // 32768 // 16
    assert p.blocks_per_request == [521, 8192]
    assert f"{p.max_concurrency:.2f}" == "9.40"  # 81920 / 8713
    assert p.kv_cache_size_tokens == 655360  # 81920 // 2 · 16
    assert p.starts and p.drafter_groups() == [1]
    # 16 tensors of 32768 · 81920 B; tensors 0-11 shared by a sliding and a full layer, 12-15 by a full layer only
    w = p.workers[0]
    assert len(w.tensors) == 16 and {t.size_bytes for t in w.tensors} == {32768 * 81920}
    assert [len(t.shared_by) for t in w.tensors] == [2] * 12 + [1] * 4


def test_threshold_override_reproduces_the_pr():
    # The 0.17.1 era with --threshold 1.5 is 0.18.0: PR #36684 changed nothing else.
    p = run(gpt_oss_20b(4), "vllm-1.25", facts=EAGLE, threshold=1.5)
    assert (p.group_size, p.num_blocks, f"{p.max_concurrency:.2f}", p.starts) == (16, 81920, "9.40", True)


def test_gpt_oss_20b_peagle_latest_async_scheduling():
    # 0.33.0 (§11): sliding reserves cdiv(min(127 + 2·8192, L), 16) + 1 = 1033 blocks with async scheduling;
    # concurrency 81920 / (1033 + 8192) = 8.88; tokens int(8.8802… · 131072) = 1,163,947.
    p = run(gpt_oss_20b(4), facts=EAGLE)
    assert p.blocks_per_request == [1033, 8192]
    assert f"{p.max_concurrency:.2f}" == "8.88"
    assert p.kv_cache_size_tokens == 1163947
    p = run(gpt_oss_20b(4), facts=EAGLE, async_scheduling=False)
    assert p.blocks_per_request == [521, 8192]
    assert p.kv_cache_size_tokens == 1232344  # §8.1: int(9.4020… · 131072)


@pytest.mark.parametrize(
    "num_draft, group_size, pad, num_blocks, conc",
    [
        (0, 12, 0, 109226, "12.54"),  # 109226 / (521 + 8192)
        (1, 13, 1, 100824, "11.57"),  # 13 < 18; 40 GiB // 32768 // 13; 100824 / 8713
    ],
)
def test_gpt_oss_20b_related_cases(num_draft, group_size, pad, num_blocks, conc):
    p = run(gpt_oss_20b(num_draft), "vllm-1.5", facts=EAGLE if num_draft else None)
    assert (p.group_size, p.num_padding_layers, p.num_blocks, f"{p.max_concurrency:.2f}") == (
        group_size, pad, num_blocks, conc)


def test_gpt_oss_120b_eagle3_before_threshold_rule():
    # §8.1: 18 sliding + 19 full under the plain min rule → group size 18, full splits 10 + 9,
    # "17 padding layers, 89.47%" (18 − 19 mod 18 = 17; 17/19).
    specs = [sw(128) if i % 2 == 0 else full() for i in range(36)] + [full()]
    p = run(layers(specs, first_drafter=36), "vllm-min", facts=EAGLE)
    assert p.group_size == 18 and p.logs[0] == "Add 17 padding layers, may waste at most 89.47% KV cache memory"
    assert [len(g.layer_names) for g in p.groups] == [18, 10, 9]
    assert p.starts  # a 1-layer drafter always sits in one group: only memory is wasted
    # At 1.25 and later: 19 < 22.5 → group size 19, one sliding padding layer (5.56%), 68985 blocks.
    p = run(layers(specs, first_drafter=36), "vllm-1.25", facts=EAGLE)
    assert (p.group_size, p.num_padding_layers, p.num_blocks, p.starts) == (19, 1, 68985, True)


def test_gemma3_27b_striped_groups():
    # §8.2: 52 sliding(1024) + 10 full; 52 ≥ 10·1.5 → group size 10; sliding splits into
    # cdiv(52, 10) = 6 striped groups of 9,9,9,9,8,8; padding 10 − 52 mod 10 = 8 (8/52 = 15.38%).
    p = run(gemma3_27b(), "vllm-1.5")
    assert p.group_size == 10 and p.num_groups == 7
    assert [len(g.layer_names) for g in p.groups] == [9, 9, 9, 9, 8, 8, 10]
    assert p.groups[0].layer_names[:3] == ("model.layers.0.self_attn.attn", "model.layers.7.self_attn.attn",
                                           "model.layers.14.self_attn.attn")  # sliding layers 0,1,2,… striped [i::6]
    assert p.logs[0] == "Add 8 padding layers, may waste at most 15.38% KV cache memory"
    assert p.num_blocks == 32768  # 40 GiB // (16·16·256·2 = 131072 B page) // 10
    assert [len(t.shared_by) for t in p.workers[0].tensors] == [7] * 8 + [5, 1]
    # per request: 6 sliding groups × (cdiv(1023 + 8192, 16) + 1 = 577) + 8192 = 11654 blocks
    assert sum(p.blocks_per_request) == 11654 and f"{p.max_concurrency:.2f}" == "2.81"
    assert p.kv_cache_size_tokens == 74896  # old log: 32768 // 7 groups · 16
    p = run(gemma3_27b(), async_scheduling=False)
    assert p.kv_cache_size_tokens == 368540  # new log: int(32768 / 11654 · 131072)


def test_gemma3_27b_with_eagle_layer():
    # §8.2: 52/11 → group size 11 (52 ≥ 16.5); sliding → 5 groups (11, 11, 10, 10, 10), padding 3 (5.77%).
    p = run(gemma3_27b(extra_full=1), "vllm-1.5", facts=EAGLE)
    assert p.group_size == 11
    assert [len(g.layer_names) for g in p.groups[:5]] == [11, 11, 10, 10, 10]
    assert p.logs[0] == "Add 3 padding layers, may waste at most 5.77% KV cache memory"


def test_llama4_scout_hma_on_and_off():
    # §8.3: 36 chunked(8192) + 12 full (every 4th layer NoPE), 8 KV × 128, page 2·16·8·128·2 = 65536.
    specs = [full(8, 128) if (i + 1) % 4 == 0 else chunked(8192) for i in range(48)]
    facts = ModelFacts(L128K, attention_chunk_size=8192)
    p = run(layers(specs), "vllm-1.5", facts=facts)
    # HMA on: 36/12 → group size 12, 3 chunked groups + 1 full, 54613 blocks (40 GiB // 65536 // 12)
    assert (p.group_size, p.num_groups, p.num_padding_layers, p.num_blocks) == (12, 4, 0, 54613)
    # per request 3 × cdiv(min(8192 + 8192, L), 16) + 8192 = 11264 → 4.85
    assert sum(p.blocks_per_request) == 11264 and f"{p.max_concurrency:.2f}" == "4.85"
    # EAGLE turns HMA off: one uniform group of 48 Full layers that remember their chunk.
    p = run(layers(specs), "vllm-1.5", facts=ModelFacts(L128K, attention_chunk_size=8192, speculative_method="eagle3"))
    assert p.hma.disabled and p.num_groups == 1 and p.num_blocks == 13653  # 40 GiB // 65536 // 48
    assert f"{p.max_concurrency:.2f}" == "1.67"  # 13653 / 8192
    assert p.logs[0].startswith("Hybrid KV cache manager is disabled for this hybrid model")


def test_llama4_scout_hma_off_not_enough_memory():
    # §8.3: HMA off at 20 GiB: need 48·65536·8192 = 24 GiB; estimate 20 GiB // (48·65536) = 6826 blocks · 16 = 109216.
    specs = [full(8, 128) if (i + 1) % 4 == 0 else chunked(8192) for i in range(48)]
    p = run(layers(specs), "vllm-1.5", mem=20 * GiB, disable_hybrid_kv_cache_manager=True)
    assert p.failure.stage == "admission"
    assert p.failure.message == (
        "To serve at least one request with the models's max seq len (131072), (24.0 GiB KV cache is needed, "
        "which is larger than the available KV cache memory (20.0 GiB). Based on the available memory, the "
        "estimated maximum model length is 109216. Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine. See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    )
    # 0.33 keeps the null block out: (20 GiB − 3 MiB) // 3 MiB = 6825 blocks · 16 = 109200, "model's".
    p = run(layers(specs), "vllm-latest", mem=20 * GiB, disable_hybrid_kv_cache_manager=True)
    assert "model's max seq len (131072)" in p.failure.message
    assert "estimated maximum model length is 109200." in p.failure.message


def test_gemma4_page_unification():
    # §8.4: 25 sliding(1024) 8 KV × 256 (page 2·16·8·256·2 = 131072) + 5 full 2 KV × 512 (16·2·1024·2 = 65536):
    # full block_size 16 → 32; group size 5; num_blocks 40 GiB // 131072 // 5 = 65536.
    specs = [full(2, 512) if (i + 1) % 6 == 0 else sw(1024, 8, 256) for i in range(30)]
    p = run(layers(specs), "vllm-1.5", max_model_len=262144)
    assert p.decision.block_size_changes == (("full_attention", 16, 32),)
    assert (p.group_size, p.num_groups, p.num_blocks) == (5, 6, 65536)
    assert sum(p.blocks_per_request) == 5 * 577 + 8192  # cdiv(262144, 32) = 8192


def test_pages_not_divisible():
    # 8 KV × 64 (page 32768) beside 3 KV × 64 (page 12288): 32768 mod 12288 ≠ 0.
    specs = [sw(128), full(3, 64)] * 4
    p = run(layers(specs), "vllm-1.5")
    assert p.failure.error_type == "NotImplementedError"
    assert p.failure.message.startswith("The page size of the layer is not divisible by the maximum page size.")
    p = run(layers(specs), "vllm-latest")  # 0.33 pads the smaller page instead
    assert p.starts and p.page_size_bytes == 32768


def test_qwen3_next_mamba_alignment_by_era():
    # §8.5: raw state 3·8192·2 + 32·128·128·2 = 1097728 B; a1 = 2 KV · 2 · 256 · 2 = 2048 B/token.
    specs = [full(2, 256) if (i + 1) % 4 == 0 else gdn() for i in range(48)]
    p = run(layers(specs, name="model.layers.{i}.attn"), "vllm-1.5", max_model_len=262144)
    # prefix caching off (0.18 default): 16 · cdiv(1097728, 16 · 2048) = 544; page 544 · 2048 = 1114112 (+1.49%)
    assert p.mamba.attention_block_size == 544 and p.page_size_bytes == 1114112
    assert p.logs[:2] == [
        "Setting attention block size to 544 tokens to ensure that attention page size is >= mamba page size.",
        "Padding mamba page size by 1.49% to ensure that mamba page size and attention page size are exactly equal.",
    ]
    # 36/12 → group size 12: 3 GDN groups + 1 full; 40 GiB // 1114112 // 12 = 3212 blocks; 3·1 + cdiv(262144, 544)
    assert (p.group_size, p.num_groups, p.num_blocks) == (12, 4, 3212)
    assert p.blocks_per_request == [1, 1, 1, 482]
    # 0.33: prefix caching on → align mode, GDN 64-token alignment: 64 · cdiv(536, 64) = 576 (§12.4)
    p = run(layers(specs, name="model.layers.{i}.attn"), max_model_len=262144)
    assert p.mamba.attention_block_size == 576 and p.mamba.mamba_block_size == 576
    # align: 2 + 1 prefill checkpoint per GDN group (FlashInfer GDN prefill on Hopper exports
    # checkpoints in 0.33); full: cdiv(262144, 576) = 456
    assert p.blocks_per_request == [3, 3, 3, 456]
    assert p.specs["model.layers.0.attn"].num_prefill_checkpoint_blocks == 1


def test_qwen3_next_with_mtp():
    # §8.5: 2 speculative tokens → conv (5, 8192): mp = 1130496, ab = 16 · cdiv(1130496, 32768) = 560;
    # the MTP full layer joins the full bucket: 36/13 → group size 13; "Add 3 padding layers … 8.33%".
    specs = [full(2, 256) if (i + 1) % 4 == 0 else gdn(2) for i in range(48)] + [full(2, 256)]
    p = run(layers(specs, first_drafter=48), "vllm-1.5", max_model_len=262144,
            facts=ModelFacts(262144, speculative_method="mtp", num_speculative_tokens=2))
    assert p.mamba.attention_block_size == 560
    assert p.group_size == 13 and p.logs[2] == "Add 3 padding layers, may waste at most 8.33% KV cache memory"
    assert p.starts and p.drafter_groups() == [3]


def test_mamba_with_hma_off_fails_conversion():
    specs = [full(2, 256) if (i + 1) % 4 == 0 else gdn() for i in range(8)]
    p = run(layers(specs), "vllm-1.5", max_model_len=4096, disable_hybrid_kv_cache_manager=True)
    assert p.failure.message == (
        "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type.")


def test_mla_uniform_single_group():
    # DeepSeek-V3: 61 MLA layers, page 16 · 576 · 2 = 18432 B, one group of 61; one tensor per layer.
    p = run(layers([mla()] * 61), "vllm-1.5", max_model_len=163840)
    assert p.decision.path == "uniform" and p.page_size_bytes == 18432
    assert p.num_blocks == 40 * GiB // 18432 // 61 == 38199
    assert len(p.workers[0].tensors) == 61
    assert p.blocks_per_request == [10240]  # cdiv(163840, 16)


def test_fp8_ds_mla_page():
    assert mla(bs=64, cache_dtype_str="fp8_ds_mla", dtype="uint8").page_size_bytes == 64 * 656


def test_uniform_type_group_for_mixed_full_heads():
    # All full but two head counts: not mergeable, one type → one uniform-type group, per-layer tensors.
    specs = [full(8, 128)] * 4 + [full(2, 128)] * 2
    p = run(layers(specs), "vllm-1.5", max_model_len=4096)
    assert p.decision.path == "uniform_type"
    # bytes per block = 4·(16·8·256·2) + 2·(16·2·256·2) = 4·65536 + 2·16384 = 294912
    assert p.workers[0].bytes_per_block == 294912 and p.num_blocks == 40 * GiB // 294912
    assert [t.size_bytes for t in p.workers[0].tensors] == [65536 * p.num_blocks] * 4 + [16384 * p.num_blocks] * 2


def test_all_sliding_model_keeps_its_window_with_hma_off():
    # Mistral-7B-v0.1: 32 sliding(4096) layers are uniform already; HMA off changes nothing.
    p = run(layers([sw(4096, 8, 128)] * 32), "vllm-1.5", max_model_len=32768, disable_hybrid_kv_cache_manager=True)
    assert p.decision.path == "hma_off_uniform" and HMA_OFF_NOT_LOGGED(p)
    assert p.blocks_per_request == [cdiv_(4095 + 8192, 16) + 1]  # 769


def HMA_OFF_NOT_LOGGED(p):
    return not any(line.startswith("Hybrid KV cache manager is disabled") for line in p.logs)


def cdiv_(a, b):
    return -(a // -b)


def test_auto_fit_reduces_max_model_len():
    # Llama-3.1-8B-like: 32 full 8 KV × 128 → 32 · 65536 B per block. At 2 GiB: 2 GiB // 2 MiB = 1024 blocks
    # → 1024 · 16 = 16384 tokens fit (pre-0.33); 0.33 leaves the null block out → 1023 · 16 = 16368.
    ls = layers([full(8, 128)] * 32)
    p = run(ls, "vllm-1.5", mem=2 * GiB, max_model_len=-1)
    assert p.max_model_len == 16384 and p.starts
    assert p.logs[0] == ("Auto-fit max_model_len: reduced from 131072 to 16384 to fit in available GPU memory "
                         "(2.0 GiB available for KV cache)")  # golden: llama-3.1-8b__autofit__4gib__0.17.1
    p = run(ls, "vllm-latest", mem=2 * GiB, max_model_len=-1)
    assert p.max_model_len == 16368


def test_auto_fit_not_in_min_era():
    with pytest.raises(OptionError):
        run(layers([full()] * 2), "vllm-min", max_model_len=-1)


def test_num_gpu_blocks_override():
    p = run(gpt_oss_20b(), "vllm-1.5", num_gpu_blocks_override=1000)
    assert p.num_blocks == 1000 and "Overriding num_gpu_blocks=109226 with num_gpu_blocks_override=1000" in p.logs


def test_kv_transfer_config_turns_hma_off():
    p = run(gpt_oss_20b(), "vllm-1.5", kv_transfer_config={"kv_connector": "NixlConnector"})
    assert p.hma.disabled and p.num_groups == 1 and p.group_size == 24
    # explicit --no-disable-hybrid-kv-cache-manager with a chunked model + EAGLE: vLLM refuses the config
    specs = [full(8, 128) if (i + 1) % 4 == 0 else chunked(8192) for i in range(8)]
    p = run(layers(specs), "vllm-1.5", facts=ModelFacts(L128K, attention_chunk_size=8192, speculative_method="eagle"),
            disable_hybrid_kv_cache_manager=False)
    assert p.failure.stage == "config" and p.failure.message.startswith("Hybrid KV cache manager was explicitly enabled")


def test_pipeline_parallel_min_blocks_over_workers():
    # gpt-oss-20b + P-EAGLE at 1.5 on 2 stages: stage 0 holds layers 0-11 (6 sliding + 6 full), stage 1 the rest
    # + drafter (6 sliding + 10 full). Both see group size = longest projected group: 6 vs 10.
    ls = gpt_oss_20b(4)
    ranks = (tuple(x.name for x in ls[:12]), tuple(x.name for x in ls[12:]))
    p = simulate(ls, ranks, EAGLE, get_era("vllm-1.5"),
                 SimulateOptions(kv_cache_memory_bytes=40 * GiB, max_model_len=L128K))
    # stage 0: 40 GiB // 32768 // 6 = 218453; stage 1: // 10 = 131072; all take the minimum
    assert [w.group_size for w in p.workers] == [6, 10]
    assert p.num_blocks == 131072
    assert p.workers[0].tensors[0].size_bytes == 32768 * 131072  # shrunk, not regrown


def test_kv_connectors_by_release():
    # 0.18: any --kv-transfer-config turns the hybrid manager off (the user left the flag unset).
    p = run(gpt_oss_20b(), "vllm-1.5", kv_transfer_config={"kv_connector": "NixlConnector"})
    assert p.hma.disabled and p.logs[0].startswith("Turning off hybrid kv cache manager because `--kv-transfer-config` is set.")
    # 0.33: only connectors that subclass SupportsHMA keep it (NixlConnector = NixlPullConnector does).
    p = run(gpt_oss_20b(), kv_transfer_config={"kv_connector": "NixlConnector"})
    assert not p.hma.disabled and p.num_groups == 2
    p = run(gpt_oss_20b(), kv_transfer_config={"kv_connector": "LMCacheConnectorV1"})
    assert p.hma.disabled and p.num_groups == 1
    assert "selects a KV connector that does not support it" in p.logs[0]
    multi = {"kv_connector": "MultiConnector", "kv_connector_extra_config": {"connectors": [
        {"kv_connector": "NixlConnector"}, {"kv_connector": "OffloadingConnector"}]}}
    assert not run(gpt_oss_20b(), kv_transfer_config=multi).hma.disabled
    multi["kv_connector_extra_config"]["connectors"].append({"kv_connector": "LMCacheConnectorV1"})
    assert run(gpt_oss_20b(), kv_transfer_config=multi).hma.disabled


def test_kv_events_and_chunked_local_env():
    # KV events turned the hybrid manager off before PR #37688 (0.18 does, 0.33 does not).
    assert run(gpt_oss_20b(), "vllm-1.5", kv_events=True).hma.disabled
    assert not run(gpt_oss_20b(), kv_events=True).hma.disabled
    # VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0 with a chunked model: warning, HMA off.
    specs = [full(8, 128) if (i + 1) % 4 == 0 else chunked(8192) for i in range(8)]
    p = run(layers(specs), facts=ModelFacts(L128K, attention_chunk_size=8192), allow_chunked_local_with_hma=False)
    assert p.hma.disabled and p.logs[0].startswith("There is a latency regression when using chunked local attention")
    # explicitly enabled but not possible: the flag's name changed in 0.33
    p = run(layers(specs), facts=ModelFacts(L128K, attention_chunk_size=8192, speculative_method="eagle3"),
            disable_hybrid_kv_cache_manager=False)
    assert "--enable-hybrid-kv-cache-manager flag" in p.failure.message
