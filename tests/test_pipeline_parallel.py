"""Pipeline parallelism: one global grouping, one KV cache config per stage, the engine-wide
num_blocks the minimum over stages, padding per stage and never negative; and the model
runner that decides how many batches are in flight (vLLM 0.33.0's rules, kvplan.engines.vllm.runner).

Figures checked against vLLM 0.33.0 itself are in tests/golden (``*__pp<N>__*``)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from factories import full, layers, sw
from kvplan.cli.app import ensure_registered

app = ensure_registered()
from kvplan.engines.vllm import ModelFacts, SimulateOptions, get_era, simulate
from kvplan.engines.vllm.runner import resolve_model_runner
from kvplan.model.layout import get_pp_indices
from kvplan.results import to_data
from kvplan.usecases.records import plan_body

GiB = 1 << 30
runner = CliRunner()


def as_json(*args):
    r = runner.invoke(app, [*args, "--format", "json"])
    assert r.exit_code in (0, 3), r.stderr
    return r, json.loads(r.stdout)


def negatives(x, path="") -> list[str]:
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in negatives(v, f"{path}.{k}")]
    if isinstance(x, list):
        return [p for i, v in enumerate(x) for p in negatives(v, f"{path}[{i}]")]
    if isinstance(x, (int, float)) and not isinstance(x, bool) and x < 0:
        return [f"{path} = {x}"]
    return []


# --- gemma-3-27b, PP 2, 40 GiB (the example) -----------------------------------------------


def test_gemma_pp2_json_has_no_negative_number_and_consistent_group_sizes():
    # the figures below are 0.33.0's (block 16; its golden gemma-3-27b__pp2__40gib says 3.68x); 0.34.0's block
    # 64 is checked against its own golden in test_cross_check / test_golden
    r, d = as_json("simulate", "google/gemma-3-27b-it", "-pp", "2", "--kv-cache-memory", "40GiB", "--policy", "vllm==0.33.0")
    assert r.exit_code == 0
    assert negatives(d) == []
    # one global decision: 52 sliding ≥ 10 full × 1.5 → group size 10 (6 sliding groups of 9/9/9/9/8/8 + 10 full)
    assert d["grouping"]["group_size"] == d["memory"]["group_size"] == 10
    assert [g["num_layers"] for g in d["groups"]] == [9, 9, 9, 9, 8, 8, 10]
    assert [g["padding_slots"] for g in d["groups"]] == [1, 1, 1, 1, 2, 2, 0]
    # stage 0 = layers 0-30, stage 1 = 31-61 (get_pp_indices): the groups split 5+4, 4+5, …
    assert [g["num_layers_per_worker"] for g in d["groups"]] == [[5, 4], [5, 4], [4, 5], [4, 5], [4, 4], [4, 4],
                                                                 [5, 5]]
    w0, w1 = d["workers"]
    assert (w0["group_layer_counts"], w1["group_layer_counts"]) == ([5, 5, 4, 4, 4, 4, 5], [4, 4, 5, 5, 4, 4, 5])
    # each stage: 5 slots (its largest projected group), 5 × 131,072 = 655,360 B per block,
    # 40 GiB // 655,360 = 65,536 blocks on both, so the engine-wide minimum is 65,536
    for w in (w0, w1):
        assert (w["group_size"], w["bytes_per_block"], w["own_num_blocks"], w["num_blocks"]) == (5, 655360, 65536, 65536)
        assert w["num_tensors"] == 5 and len(w["tensors"]) == 5
        assert sum(t["size_bytes"] for t in w["tensors"]) == w["allocated_bytes"] == 40 * GiB
    # V2 runner with async scheduling: PP + 1 = 3 batches of 8192 in flight → sliding
    # cdiv(1023 + 24576, 16) + 1 = 1601 blocks; 6 × 1601 + 8192 = 17,798 per request;
    # max_concurrency = 65536 / 17798 = 3.6822 (vLLM 0.33.0 says 3.68x, golden gemma-3-27b__pp2__40gib)
    assert (d["scheduler"]["model_runner"], d["scheduler"]["max_in_flight_tokens"]) == ("v2", 24576)
    assert d["memory"]["max_concurrency"] == round(65536 / 17798, 6)
    # padding on stage 0: groups of 4 layers leave 1 of 5 slots empty: held pages per full-load
    # request 4 × 1601 × 1 = 6404 of 5 × 17798 → 42,949,672,960 × 6404 // 88990 = 3,090,793,410 B (7.20%)
    assert (w0["padding_slots_per_block"], w0["padding_waste_bytes"]) == (4, 42949672960 * 6404 // 88990)
    assert w0["padding_waste_pct_of_pool"] == round(3090793410 / (40 * GiB) * 100, 4)
    assert d["memory"]["padding_waste_bytes"] == 3090793410
    # steady state: (65536 − 1 − 6 × (1601 − 65)) / (6 × 65 + 8192) = 56319 / 8582
    assert d["memory"]["steady_state_concurrency"] == round(56319 / 8582, 6)


def test_gemma_pp2_table_shows_each_stage():
    r = runner.invoke(app, ["simulate", "google/gemma-3-27b-it", "-pp", "2", "--kv-cache-memory", "40GiB"])
    assert r.exit_code == 0
    assert "group_size 10, global; slots per stage 5/5" in r.stdout
    assert "Per pipeline stage" in r.stdout
    assert "-" + "35.27" not in r.stdout and "(-" not in r.stdout


def test_gpt_oss_120b_pp2_no_negative_percent():
    # 18 sliding(128) + 18 full: group size 18, 2 groups; each stage holds 9 + 9, so no padding at all.
    r, d = as_json("simulate", "openai/gpt-oss-120b", "-pp", "2", "--kv-cache-memory", "40GiB")
    assert negatives(d) == []
    assert d["grouping"]["group_size"] == 18
    assert [w["group_layer_counts"] for w in d["workers"]] == [[9, 9], [9, 9]]
    assert [(w["padding_waste_bytes"], w["padding_waste_pct_of_pool"]) for w in d["workers"]] == [(0, 0.0), (0, 0.0)]
    # 9 slots × 8 KV heads × 64 × 2 (K, V) × 2 B × 64 tokens (0.34.0's block) = 1,179,648 B;
    # 40 GiB // 1,179,648 = 36,408
    assert d["memory"]["num_blocks"] == 40 * GiB // 1179648 == 36408


def test_peagle_pp2_runs_v1_without_async_and_stage_pools_differ():
    # speculative_config.parallel_drafting (the amazon model card sets it) keeps vLLM 0.33 on the V1
    # runner; V1 + PP turns async scheduling off by default, so 2 batches (PP) are in flight.
    r, d = as_json("simulate", "openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5", "-pp", "2",
                   "--kv-cache-memory", "40GiB", "--policy", "vllm==0.33.0", "--parallel-drafting")
    assert r.exit_code == 0
    sch = d["scheduler"]
    assert (sch["model_runner"], sch["async_scheduling"], sch["max_in_flight_tokens"]) == ("v1", False, 16384)
    assert "Async scheduling is disabled because the V1 model runner does not support it with pipeline " \
           "parallelism." in d["logs"]
    w0, w1 = d["workers"]
    # stage 0: 6 sliding + 6 full (6 slots); stage 1: 6 sliding + 6 full + 4 drafter (10 slots)
    assert (w0["group_layer_counts"], w1["group_layer_counts"]) == ([6, 6], [6, 10])
    # own pools: 40 GiB // (6 × 32768) = 218,453 and 40 GiB // (10 × 32768) = 131,072; the engine keeps 131,072
    assert (w0["own_num_blocks"], w1["own_num_blocks"]) == (218453, 131072)
    assert d["memory"]["num_blocks"] == w0["num_blocks"] == w1["num_blocks"] == 131072
    assert d["memory"]["binding_rank"] == 1
    # stage 0 leaves 40 GiB − 131072 × 196,608 = 16 GiB unused; stage 1 pads 4 slots of its sliding group:
    # 42,949,672,960 × (1033 × 4) // (10 × (1033 + 8192)) = 1,923,772,885 B
    assert w0["unused_bytes"] == 16 * GiB and w1["unused_bytes"] == 0
    assert (w0["padding_waste_bytes"], w1["padding_waste_bytes"]) == (0, 42949672960 * 4132 // 92250)
    assert d["memory"]["max_concurrency"] == round(131072 / 9225, 6)  # vLLM 0.33.0: 14.21x


def test_peagle_pp2_explicit_async_or_v2_fails_like_vllm():
    base = ["simulate", "openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5", "-pp", "2",
            "--kv-cache-memory", "40GiB", "--policy", "vllm==0.33.0", "--parallel-drafting"]
    r, d = as_json(*base, "--async-scheduling")
    assert r.exit_code == 3
    assert (d["outcome"]["stage"], d["outcome"]["error"]) == (
        "config", "Async scheduling is not supported by the V1 model runner with pipeline parallelism.")
    r, d = as_json(*base, "--model-runner", "v2")
    assert r.exit_code == 3
    assert d["outcome"]["error"] == ("Model Runner V2 does not yet support: parallel drafting for EAGLE "
                                     "speculative decoding")


def test_peagle_pp2_on_034_runs_the_one_runner_with_async():
    # vLLM 0.34.0 removed the V1 runner (platforms/interface.py validate_environ); its one runner
    # drafts the EAGLE-3 head sequentially (parallel_drafting only for dflash/dspark) and keeps
    # async scheduling on with PP: max_concurrent_batches =
    # PP + 1 = 3 (config/vllm.py), 3 × 8192 tokens in flight. Pinning V1 is a config-time error.
    base = ["simulate", "openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5", "-pp", "2",
            "--kv-cache-memory", "40GiB", "--policy", "vllm==0.34.0"]
    r, d = as_json(*base)
    assert r.exit_code == 0
    sch = d["scheduler"]
    assert (sch["model_runner"], sch["async_scheduling"], sch["max_in_flight_tokens"]) == ("v2", True, 3 * 8192)
    r, d = as_json(*base, "--model-runner", "v1")
    assert r.exit_code == 3
    assert (d["outcome"]["stage"], d["outcome"]["error"]) == (
        "config", "VLLM_USE_V2_MODEL_RUNNER=0 is no longer supported: Model Runner V1 has been removed. "
        "Unset this variable.")


def test_model_runner_flag_changes_in_flight_batches():
    base = ["simulate", "google/gemma-3-27b-it", "-pp", "2", "--kv-cache-memory", "40GiB", "--policy", "vllm==0.33.0"]
    _, v2 = as_json(*base)
    _, v1 = as_json(*base, "--model-runner", "v1")
    assert v2["scheduler"]["max_in_flight_tokens"] == 3 * 8192
    assert (v1["scheduler"]["model_runner"], v1["scheduler"]["async_scheduling"]) == ("v1", False)
    assert v1["scheduler"]["max_in_flight_tokens"] == 2 * 8192
    # sliding cdiv(1023 + 16384, 16) + 1 = 1089: 65536 / (6 × 1089 + 8192) = 65536 / 14726
    assert v1["memory"]["max_concurrency"] == round(65536 / 14726, 6)
    r = runner.invoke(app, [*base, "--model-runner", "v3"])
    assert r.exit_code == 1 and r.stderr == "Error: --model-runner: 'v3' is not one of: v1, v2\n"


@pytest.mark.parametrize("policy, use_v2, asynchronous, pp, method, parallel, expect", [
    # 0.33.0: V2 by default; async on → PP + 1 (vllm/config/vllm.py max_concurrent_batches)
    ("vllm==0.33.0", None, None, 2, None, False, ("v2", True)),
    ("vllm==0.33.0", None, None, 1, "eagle3", True, ("v1", True)),   # P-EAGLE, PP 1: V1 keeps async
    ("vllm==0.33.0", None, None, 3, "eagle3", True, ("v1", False)),  # P-EAGLE, PP 3: async off
    ("vllm==0.33.0", None, False, 2, None, False, ("v2", False)),
    ("vllm==0.33.0", None, None, 2, "eagle3", False, ("v2", True)),  # sequential EAGLE-3 stays on V2
    ("vllm==0.33.0", None, None, 1, "ngram", False, ("v2", True)),
    ("vllm==0.33.0", False, None, 1, "ngram", False, ("v1", False)),  # V1 cannot run n-gram asynchronously
    # 0.34.0: one runner (V1 removed), P-EAGLE included, async on unless turned off
    ("vllm==0.34.0", None, None, 3, "eagle3", True, ("v2", True)),
    ("vllm==0.34.0", None, False, 1, "ngram", False, ("v2", False)),
    ("vllm==0.34.0", True, None, 2, None, False, ("v2", True)),
    ("vllm-1.5", None, None, 2, None, False, ("v1", True)),  # 0.18: V1 by default
    ("vllm-1.5", True, None, 2, None, False, ("v2", True)),
])
def test_resolve_model_runner(policy, use_v2, asynchronous, pp, method, parallel, expect):
    logs = []
    c = resolve_model_runner(get_era(policy), use_v2, asynchronous, pp=pp, speculative_method=method,
                             parallel_drafting=parallel, logs=logs)
    assert (c.runner, c.async_scheduling) == expect


# --- decode-context parallelism (goldens: *__dcp<N>__*, vLLM 0.33.0 and 0.18.0) -------------------


def test_dcp_llama_tp16_dcp2_by_hand():
    # Llama-3.3-70B, 8 KV heads: TP 16 leaves one KV head per rank (page at 0.34.0's block 64:
    # 64 × 1 × 128 × 2 × 2 = 32,768 B), 80 full layers in one group → 2,621,440 B per block, 40 GiB //
    # 2,621,440 = 16,384 blocks (golden llama-3.3-70b__tp16__dcp2__40gib__0.34.0). Each of the 2 DCP ranks
    # keeps half of a request: cdiv(cdiv(131072, 2), 64) = 1024 blocks → 16.00x.
    r, d = as_json("simulate", "meta-llama/Llama-3.3-70B-Instruct", "-tp", "16", "-dcp", "2",
                   "--kv-cache-memory", "40GiB")
    assert r.exit_code == 0
    m = d["memory"]
    assert (m["num_blocks"], m["blocks_per_request"], m["max_concurrency"]) == (16384, 1024, 16.0)
    assert m["steady_state_concurrency"] == round(16383 / 1024, 6)
    assert d["scheduler"]["decode_context_parallel_size"] == 2
    assert d["logs"][-1] == "GPU KV cache size: 2,097,152 tokens, Maximum concurrency for 131,072 tokens per request: 16.00x"
    # 0.18 multiplies its block-based token count by the cp world size and says so
    _, d = as_json("simulate", "meta-llama/Llama-3.3-70B-Instruct", "-tp", "16", "-dcp", "2",
                   "--kv-cache-memory", "40GiB", "--policy", "vllm-1.5")
    assert d["logs"] == ["Multiplying the GPU KV cache size by the cp_world_size 2 (pcp_world_size 1 * dcp_world_size 2).",
                         "GPU KV cache size: 2,097,152 tokens",
                         "Maximum concurrency for 131,072 tokens per request: 16.00x"]


# The config-time refusals are raised inside pydantic validators (ParallelConfig._validate_parallel_config,
# ModelConfig.verify_with_parallel_config from VllmConfig), so the process dies with pydantic's
# ValidationError around vLLM's text (run in each release: tests/data/prechecks_vllm.json, cases
# llama70b-tp*-dcp*, qwen2.5-7b-tp14-dcp2). 0.34.0: config/parallel.py line 641, config/model.py
# lines 1602-1626. 0.18.0 (below): the same checks as asserts with older texts.
@pytest.mark.parametrize("args, stage, error_type, message", [
    (("meta-llama/Llama-3.3-70B-Instruct", "-tp", "8", "-dcp", "2"), "config.decode_context_parallel",
     "ValidationError",
     "Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` (8) to be greater than the model's "
     "total number of KV heads (8). Increase `--tensor-parallel-size` or set `--decode-context-parallel-size 1`."),
    (("meta-llama/Llama-3.3-70B-Instruct", "-tp", "16", "-dcp", "4"), "config.decode_context_parallel",
     "ValidationError",
     "`--decode-context-parallel-size` (4) exceeds the maximum supported value (2) for `--tensor-parallel-size` (16) "
     "and 8 model KV heads."),
    (("meta-llama/Llama-3.3-70B-Instruct", "-tp", "16", "-dcp", "3"), "config.decode_context_parallel",
     "ValidationError", "tp_size=16 must be divisible by dcp_size=3."),
    # Qwen2.5-7B: 28 query heads / 4 KV heads = 7 per KV head; TP 14 allows DCP up to 14 // 4 = 3, and 7 % 2 != 0
    (("Qwen/Qwen2.5-7B", "-tp", "14", "-dcp", "2"), "config.decode_context_parallel", "ValidationError",
     "The model's number of query heads per KV head (7) must be divisible by `--decode-context-parallel-size` (2) "
     "for GQA/MQA."),
    # not a config check: SlidingWindowSpec's assert while the KV cache is planned (a bare AssertionError)
    (("openai/gpt-oss-120b", "-tp", "16", "-dcp", "2"), "admission", "AssertionError",
     "DCP not support sliding window."),
])
def test_dcp_refusals_match_vllm(args, stage, error_type, message):
    r, d = as_json("simulate", *args, "--kv-cache-memory", "40GiB")
    assert r.exit_code == 3
    assert (d["outcome"]["stage"], d["outcome"]["error_type"], d["outcome"]["error"]) == (stage, error_type, message)
    assert d["fixes"] == []


@pytest.mark.parametrize("args, message", [
    # config/parallel.py lines 416-420: two f-strings joined with no space between "by" and "dcp_size"
    (("-tp", "16", "-dcp", "3"), "tp_size=16 must be divisible bydcp_size=3."),
    # config/model.py lines 1093-1097, 1100-1105: asserts (pydantic reports them as ValidationError too)
    (("-tp", "8", "-dcp", "2"),
     "tensor parallel size 8 must be greater than total num kv heads 8 when enable decode context parallel for GQA/MQA"),
    (("-tp", "16", "-dcp", "4"),
     "decode context parallel size must less than or equal to (tensor parallel size 16 // total num kv heads 8) = 2, "
     "but got 4"),
])
def test_dcp_refusals_in_018_keep_its_texts(args, message):
    # vLLM 0.18.0, run: tests/data/prechecks_vllm.json (llama70b-tp16-dcp3, -tp8-dcp2, -tp16-dcp4)
    r, d = as_json("simulate", "meta-llama/Llama-3.3-70B-Instruct", *args, "--kv-cache-memory", "40GiB",
                   "--policy", "vllm==0.18.0")
    assert r.exit_code == 3
    assert (d["outcome"]["error_type"], d["outcome"]["error"]) == ("ValidationError", message)


def test_dcp_refused_before_the_speculative_config():
    # create_engine_config builds ParallelConfig (0.34.0 arg_utils.py line 2603) before SpeculativeConfig
    # (line 2669): with both wrong, the DCP text is the one vLLM prints
    r, d = as_json("simulate", "meta-llama/Llama-3.3-70B-Instruct", "-tp", "16", "-dcp", "3", "--speculative-method",
                   "ngram", "--kv-cache-memory", "40GiB")
    assert r.exit_code == 3
    assert d["outcome"]["error"] == "tp_size=16 must be divisible by dcp_size=3."


def test_dcp_mla_needs_no_kv_head_replicas():
    # DeepSeek-V3 (MLA, one latent head) with TP 8, DCP 8, FLASH_ATTN_MLA on the assumed H100 at 0.34.0's block
    # 64: 61 layers × 64 × 576 × 2 B = 4,497,408 B per block, 40 GiB // 4,497,408 = 9,549 blocks; a 131,072-token
    # request keeps cdiv(16384, 64) = 256 per rank (golden deepseek-v3__tp8__dcp8__40gib__0.34.0: 37.30x).
    r, d = as_json("simulate", "deepseek-ai/DeepSeek-V3", "-tp", "8", "-dcp", "8", "--kv-cache-memory", "40GiB",
                   "--max-model-len", "131072")
    assert r.exit_code == 0
    assert (d["memory"]["num_blocks"], d["memory"]["max_concurrency"]) == (9549, round(9549 / 256, 6))


# --- property: no negative figure, each stage within its budget ------------------------------------

KINDS = [full(), sw(128), sw(1024), full(heads=4, head=128)]


STUB_LAYOUT = SimpleNamespace(target=None, drafter=None, speculative_method=None, num_speculative_tokens=0,
                              block_size=16, warnings=())
STUB_SERVING = SimpleNamespace(block_size=16, attention_backend=None, kv_cache_dtype="auto", dtype="auto",
                               tensor_parallel_size=1, pipeline_parallel_size=1)


@settings(max_examples=200, deadline=None)
@given(mix=st.lists(st.sampled_from(range(len(KINDS))), min_size=4, max_size=64),
       pp=st.integers(1, 4), mem=st.integers(1 << 24, 1 << 36),
       policy=st.sampled_from(["vllm-latest", "vllm-1.5"]), length=st.sampled_from([512, 8192, 131072]),
       override=st.one_of(st.none(), st.integers(1, 5000)))
def test_no_negative_figures_and_stages_within_budget(mix, pp, mem, policy, length, override):
    if pp > len(mix):
        pp = 1
    ls = layers([KINDS[k] for k in mix])
    n = len(ls)
    ranks = tuple(tuple(ls[i].name for i in range(*get_pp_indices(n, r, pp))) for r in range(pp)) if pp > 1 else ()
    p = simulate(ls, ranks, ModelFacts(length), get_era(policy),
                 SimulateOptions(kv_cache_memory_bytes=mem, max_model_len=length, async_scheduling=None,
                                 num_gpu_blocks_override=override))
    d = to_data(plan_body(STUB_LAYOUT, p, STUB_SERVING))
    assert negatives(d) == []
    for w in d["workers"]:
        if "tensors" in w and w["allocated"]:
            assert sum(t["size_bytes"] for t in w["tensors"]) == w["allocated_bytes"]
            if override is None:  # the override may ask for more than the memory holds, as in vLLM
                assert w["allocated_bytes"] <= w["available_bytes"]
            assert w["num_blocks"] <= w["own_num_blocks"]
            assert 0 <= w["padding_waste_pct_of_pool"] <= 100
    if p.starts and p.workers:
        assert p.num_blocks == min(c.num_blocks for c in p.worker_checks)
        assert 0 <= p.max_concurrency and 0 <= p.steady_state_concurrency
    if not p.starts and p.failure.stage == "admission":
        # the report keeps the grouping and each group's need
        assert d["groups"] and all(g["blocks_per_request"] is not None for g in d["groups"])
        assert d["memory"]["needed_bytes"] > d["memory"]["checked_available_bytes"]


def test_stage_budgets_from_hardware():
    # With --gpu each stage's budget is its own (its weights, activation and CUDA-graph memory):
    # vLLM sizes each worker's pool from its own memory, then keeps the smallest num_blocks.
    r, d = as_json("simulate", "openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5", "-pp", "2",
                   "--gpu", "H100-80GB")
    assert r.exit_code == 0
    stages = [st["kv_cache_memory_bytes"] for st in d["budget"]["stages"]]
    assert [w["available_bytes"] for w in d["workers"]] == stages
    assert d["budget"]["kv_cache_memory_bytes"] == d["memory"]["available_bytes"] == min(stages)
    # stage 0: 6 slots × 131,072 B (64 × 8 × 64 × 2 × 2: 0.34.0's block); stage 1: 10 slots (the drafter's
    # 4 layers join its full group)
    assert [w["bytes_per_block"] for w in d["workers"]] == [6 * 131072, 10 * 131072]
    own = [avail // bpb for avail, bpb in zip(stages, (6 * 131072, 10 * 131072))]
    assert [w["own_num_blocks"] for w in d["workers"]] == own
    assert d["memory"]["num_blocks"] == min(own) == d["workers"][0]["num_blocks"]
