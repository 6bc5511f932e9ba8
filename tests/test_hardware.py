"""GPU presets and the KV budget vLLM derives from a card (kvplan.budget.hardware, kvplan.budget.estimate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.budget.estimate import graph_terms
from kvplan.budget.profile import _table as profile_table_rows
from kvplan.budget.sizing import EXTENSIBLE, PROFILED, resolve_gpu_memory_utilization
from kvplan.budget.hardware import GPU_PRESETS, get_gpu, vllm_batch_defaults
from kvplan.cli.app import ensure_registered
from kvplan.engines.vllm import get_era
from kvplan.errors import OptionError
from kvplan.model import ServingOptions, build_model_layout
from kvplan.units import GiB, MiB
from factories import budget_of, heavy_modules_after_cli

PROFILE_ROWS = profile_table_rows()  # kvplan/budget/profile_terms.json, its shared rows resolved
CALIBRATION = json.loads((Path(__file__).resolve().parent.parent / "kvplan/budget/calibration.json").read_text())


def sampler(release: str, reqs: int, vocab: int) -> int:
    """The dummy sampler pass's peak by the table derived from the release's code (kvplan/budget/profile.py):
    reqs · vocab · bytes per logit + the Triton buffer's rows (min(next_pow2(min(132, reqs)), 132) = 132 SMs of an
    H100 at ≥ 128 requests) · vocab · its bytes per entry + the fixed bytes."""
    row = PROFILE_ROWS[release]
    rows = 132 if reqs >= 128 else 1 << (reqs - 1).bit_length()
    return round(reqs * vocab * row["bytes_per_logit"] + (rows * vocab * row["sm_row_bytes_per_vocab"] if
                                                           row["sm_row_bytes_per_vocab"] else 0) + row["fixed_bytes"])


def v2_states(release: str, max_num_seqs: int, vocab: int, tokens: int = 8192) -> int:
    """What the V2 runner keeps on the card after the profile run, which the profile counts from 0.27.1 (0.34.0 runs
    V2 only; tests/test_profile_terms.py::test_v2_runner_persistent_buffers_per_release): max_num_seqs · (V · 4.25 B
    — the penalty bin counts, int32, the prompt mask and the grammar bitmask, int32 per 32 entries each — + the
    golden's bytes per request) + max_num_batched_tokens · 13 B (input_ids int32, positions int64, is_padding bool)
    + its fixed bytes, on every stage."""
    p = PROFILE_ROWS[release]["persistent"]
    assert p["counted"] and p["bytes_per_logit"] == 4.25 and p["bytes_per_token"] == 13
    return round(max_num_seqs * (vocab * 4.25 + p["bytes_per_req"]) + tokens * 13 + p["fixed_bytes"])


def forward(release: str, bytes_by_rule: int) -> int:
    """kvplan's forward rule T·(4H + W)·a scaled by the release's measured dense factor (the dummy forward of
    Qwen3-8B on the meta device over the rule for it, kvplan/budget/profile_terms.json; 1.077 for 0.34.0)."""
    return round(bytes_by_rule * PROFILE_ROWS[release]["forward"]["dense"]["factor"])


def non_torch(group: str) -> int:
    """The calibrated non-torch term (kvplan/budget/calibration.json, scripts/calibrate_budget.py)."""
    return CALIBRATION["non_torch"][group]["value_bytes"]


def graphs(layers: int, n: int = 102, what: str = "estimate") -> int:
    """The calibrated CUDA-graph memory of ``n`` graphs on a rank of ``layers`` layers: n · (a + b · layers)
    (kvplan/budget/calibration.json ``cudagraph``). 102 graphs: vLLM's default 51 capture sizes at max_num_seqs
    1024 and 8192 batched tokens, each captured piecewise and, all being ≤ 1024 decode requests, full
    (FULL_AND_PIECEWISE), test_cuda_graph_sizes_from_the_release_code."""
    fit = CALIBRATION["cudagraph"][what]
    return round(n * (fit["per_graph_bytes"] + fit["per_graph_per_layer_bytes"] * layers))

app = ensure_registered()

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
LATEST, OLD = get_era("vllm-latest"), get_era("vllm-1.5")


def test_required_presets_with_sources():
    # issue 24's cards; B300 and MI325X have no public printout of their CUDA total (hardware.NOT_PRESET)
    required = {"H100-80GB", "H100-PCIe-80GB", "H100-NVL-94GB", "H20-96GB", "H200-141GB", "GH200-96GB", "B200-180GB",
                "A100-40GB", "A100-80GB", "L40S-48GB", "L20-48GB", "L4-24GB", "A10G-24GB", "RTX-3090-24GB",
                "RTX-4090-24GB", "RTX-5090-32GB", "RTX-A6000-48GB", "RTX-6000-Ada-48GB", "RTX-PRO-6000-96GB",
                "MI250X-64GB", "MI300X-192GB"}
    assert required <= set(GPU_PRESETS)
    for p in GPU_PRESETS.values():
        # the figure is the one its source printed: "<n>MB" from torch (MiB), "<n>MiB" from nvidia-smi or a
        # vLLM log in MiB, deviceQuery's byte count, or a vLLM log's "<x.xx> GiB"
        mib, rest = divmod(p.memory_bytes, MiB)
        printed = ([f"{p.memory_bytes} bytes", f"{p.memory_bytes / GiB:.2f} GiB"] if rest
                   else [f"{mib}MB" if p.basis == "cuda" else f"{mib}MiB", f"{mib} MiB", f"{p.memory_bytes} bytes"])
        assert p.basis in ("cuda", "nvidia-smi") and any(x in p.source for x in printed), (p.name, printed, p.source)
        assert p.platform in ("cuda", "rocm") and p.rocm == (p.platform == "rocm")
        assert p.compute_capability is None or (len(p.compute_capability) == 2
                                                and all(isinstance(x, int) for x in p.compute_capability))
    # one basis: CUDA's figure everywhere but the H100 NVL (no printout found; the budget warns)
    assert [p.name for p in GPU_PRESETS.values() if p.basis != "cuda"] == ["H100-NVL-94GB"]
    # H100 80GB: CUDA reports 81089 MiB = 79.19 GiB (not the nominal 80 GB); the A100 80GB 79.32 GiB as vLLM
    # logged it (vllm-omni issue #276), no longer the nvidia-smi 80.00 GiB that gave it more than an H100
    assert GPU_PRESETS["H100-80GB"].memory_bytes == 81089 * MiB
    assert round(GPU_PRESETS["H100-80GB"].memory_gib, 2) == 79.19
    assert round(GPU_PRESETS["A100-80GB"].memory_gib, 2) == 79.32
    assert GPU_PRESETS["L20-48GB"].memory_bytes == round(44.52056884765625 * GiB)
    assert (GPU_PRESETS["RTX-5090-32GB"].compute_capability, GPU_PRESETS["MI300X-192GB"].platform) == ((12, 0), "rocm")


def test_presets_without_a_cuda_figure_say_so():
    with pytest.raises(OptionError, match="no preset: pass --gpu-memory"):
        get_gpu("B300")


def test_nvidia_smi_preset_warns(llama):
    b = budget_of(llama, LATEST, gpu="H100-NVL", **PROFILED_034)
    assert any("nvidia-smi total" in w for w in b.warnings)
    assert not any("nvidia-smi" in w for w in budget_of(llama, LATEST, gpu="H100", **PROFILED_034).warnings)


def test_fit_md_lists_every_preset():
    """docs/fit.md's preset table is the presets' own figures (hardware.preset_table_markdown)."""
    from kvplan.budget.hardware import preset_table_markdown

    assert preset_table_markdown() in (ROOT / "docs" / "fit.md").read_text()


@pytest.mark.parametrize("alias, name", [("h100", "H100-80GB"), ("H200", "H200-141GB"), ("mi300x", "MI300X-192GB"),
                                         ("a100-40gb", "A100-40GB"), ("RTX 4090", "RTX-4090-24GB"),
                                         ("rtx 5090", "RTX-5090-32GB"), ("gh200", "GH200-96GB"), ("h20", "H20-96GB"),
                                         ("RTX PRO 6000", "RTX-PRO-6000-96GB"), ("mi250x", "MI250X-64GB")])
def test_aliases(alias, name):
    assert get_gpu(alias).name == name


def test_unknown_gpu_lists_presets():
    with pytest.raises(OptionError, match="H100-80GB.*--gpu-memory"):
        get_gpu("V100")


def test_default_utilization_by_era():
    # CacheConfig: 0.9 to 0.19.1, 0.92 from 0.20.0 (DEFAULT_GPU_MEMORY_UTILIZATION in 0.34.0 config/cache.py 186);
    # 0.34.0's resolved_gpu_memory_utilization (config/cache.py 495-501): 1.0 with the extensible KV cache.
    assert resolve_gpu_memory_utilization(LATEST, None, PROFILED) == (0.92, "vllm-0.34 default")
    assert resolve_gpu_memory_utilization(LATEST, None, EXTENSIBLE) == (
        1.0, "vllm-0.34 default with the extensible KV cache")
    assert resolve_gpu_memory_utilization(get_era("vllm-0.33"), None, PROFILED)[0] == 0.92
    assert resolve_gpu_memory_utilization(OLD, None, PROFILED)[0] == 0.9
    assert resolve_gpu_memory_utilization(get_era("vllm-min"), None, PROFILED)[0] == 0.9
    assert resolve_gpu_memory_utilization(LATEST, 0.8, EXTENSIBLE) == (0.8, "--gpu-memory-utilization")


def test_cuda_graph_sizes_from_the_release_code():
    """The capture sizes each release's _set_cudagraph_sizes gives (kvplan/budget/cudagraph.py), checked against
    what vLLM 0.19.0 logged in tests/logs/budget/llm-d-planner-v0.19.0: 51 sizes for Llama-3.1-8B at max_num_seqs
    1024 and 8192 batched tokens (1, 2, 4; 8 to 248 by 8: 31; 256 to 512 by 16: 17), 83 for gpt-oss-20b (its model
    config raises the ceiling to 1024: 256 to 1024 by 16, 49)."""
    from kvplan.budget.cudagraph import capture_sizes, graph_count

    assert len(capture_sizes("0.19.0", max_num_seqs=1024, max_num_batched_tokens=8192)) == 3 + 31 + 17
    assert len(capture_sizes("0.19.0", max_num_seqs=1024, max_num_batched_tokens=8192,
                             architecture="GptOssForCausalLM")) == 3 + 31 + 49
    # 0.10.1-0.11.1: multiples of 8 up to min(2R, 512) (3 + 64 = 67); gpt-oss up to 992 ("from 67 to 81", 0.11.0
    # model_executor/models/config.py:257-258)
    assert len(capture_sizes("0.11.0", max_num_seqs=256, max_num_batched_tokens=8192)) == 67
    assert len(capture_sizes("0.11.0", max_num_seqs=256, max_num_batched_tokens=8192,
                             architecture="GptOssForCausalLM")) == 81
    # 0.22: max_num_seqs 128, 2048 batched tokens: ceiling 256 (3 + 31 + 1 = 35 sizes); 19 of them ≤ 128 decode
    # requests get a full graph too (FULL_AND_PIECEWISE, from 0.11.0); 0.10.x captures piecewise only
    sizes = capture_sizes("0.22.0", max_num_seqs=128, max_num_batched_tokens=2048)
    assert len(sizes) == 35 and graph_count("0.22.0", sizes, max_num_seqs=128) == 35 + 19
    assert graph_count("0.10.1", capture_sizes("0.10.1", max_num_seqs=256, max_num_batched_tokens=8192),
                       max_num_seqs=256) == 67
    # 0.28+: the ceiling is 1024 on a data-center Blackwell card (compute capability 10.x), 512 elsewhere
    assert len(capture_sizes("0.29.0", max_num_seqs=1024, max_num_batched_tokens=8192,
                             compute_capability=(10, 0))) == 3 + 31 + 49
    assert len(capture_sizes("0.29.0", max_num_seqs=1024, max_num_batched_tokens=8192,
                             compute_capability=(9, 0))) == 51
    # their memory: the calibrated per-graph cost; none captured, none charged
    t = graph_terms("H100-80GB", graphs=102, layers=32)
    assert t["estimate"]["value"] == graphs(32) and t["actual"]["value"] == graphs(32, what="actual")
    assert t["actual"]["low"] < t["actual"]["value"] < t["actual"]["high"] and t["actual"]["basis"] == "calibrated"
    assert graph_terms("H100-80GB", graphs=0, layers=32)["actual"]["value"] == 0


def test_warmup_after_the_kv_cache_may_fail_at_the_pessimistic_end():
    """gpt-oss-20b on one H100 at --gpu-memory-utilization 0.95, vLLM 0.19.0: the KV cache is sized, then capture
    took 1.84 GiB and the sampler's warm-up ran out of memory with 1.78 GiB reserved but unallocated
    (tests/logs/budget/llm-d-planner-v0.19.0/openai-gpt-oss-20b--h100-80gb--tp1pp1dp1--8192.FAILED.log). kvplan's
    pessimistic end: the 5 % headroom (3.96 GiB) less the start-up memory does not hold the graphs' high end and
    what capture may leave unusable (MXFP4: the graphs × the calibrated ratio), so it says MAY FAIL at warm-up
    with a fix that holds there; Llama-3.1-8B at the same utilization starts."""
    from kvplan.api import simulate

    d = simulate("openai/gpt-oss-20b", gpu="H100-80GB", policy="vllm==0.19.0", max_model_len=8192,
                 gpu_memory_utilization=0.95)
    band = d["budget"]["band"]
    assert d["outcome"]["starts"] and band["starts_at_low"] is False and band["failure_at_low"] == "warm-up"
    assert band["warmup_need_bytes"] > band["warmup_headroom_bytes"]
    assert d["fixes"][0]["option"] == "gpu_memory_utilization" and d["fixes"][0]["value"] < 0.95
    assert all(f["starts"] for f in d["fixes"])
    ok = simulate("meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", policy="vllm==0.19.0", max_model_len=8192,
                  gpu_memory_utilization=0.95)["budget"]["band"]
    assert ok["starts_at_low"] is True and ok["warmup_need_bytes"] <= ok["warmup_headroom_bytes"]


@pytest.fixture(scope="module")
def llama():
    return build_model_layout("meta-llama/Meta-Llama-3.1-8B")


# vLLM 0.34.0 without its extensible KV cache sizes it from the profiling estimate, as every release before
# (kvplan.budget.sizing); these tests check that formula at the newest era.
PROFILED_034 = dict(enable_extensible_kv_cache=False)


# Llama-3.1-8B's llama3 rotary table, held whole on every rank beside the weights (kvplan.budget.rotary; vLLM's
# get_rope buffer): max_position_embeddings 131,072 rows of the 128-wide head, bf16
L31_ROTARY = 131_072 * 128 * 2


def test_budget_is_the_vllm_formula(llama):
    # Llama-3.1-8B, TP 1, on an H100 (81089 MiB as CUDA reports it), vllm-latest without the extensible KV
    # cache (0.92):
    #   requested  = ceil(81089 · 2^20 · 0.92) = ceil(78,225,740,922.88)     = 78,225,740,923
    #                (v1/worker/utils.py request_memory: math.ceil, 0.18.0 l. 408, 0.34.0 l. 743)
    #   weights    = 8,030,261,248 params (test_weights) · 2 B                = 16,060,522,496
    #                (vLLM logged 14.96 GiB for Llama-3-8B, PR #10511: 16,060,522,496 / 2^30 = 14.957)
    #                + the llama3 rotary table every rank holds, 131,072 rows of 128, bf16 (L31_ROTARY)
    #   activation = max(forward, sampler + hidden) + 256 MiB: forward 8192 · (4·4096 + 3·14336) · 2
    #                = 973,078,528 (× 1.077, 0.34.0's measured dense factor) < the derived sampler pass over
    #                1024 × 128256 logits (0.34.0's V2 sampler, 10.127 B per logit) + the forward's 8192 × 4096 bf16
    #                hidden states
    #   non-torch  = calibrated for an H100 on one GPU under a release whose profile takes the free memory's drop
    #                (0.27.0+: "consumed", estimate.profile_measure; the group's value, or its parent's when thin)
    #   CUDA graphs = the calibrated estimate of 102 graphs on 32 layers (graphs())
    #   KV = requested − weights − activation − non-torch − CUDA graphs
    b = budget_of(llama, LATEST, gpu="H100-80GB", **PROFILED_034)
    assert b.gpu_memory_bytes == 85_027_979_264 and b.gpu_memory_utilization == 0.92  # 81089 · 2^20
    assert (b.kv_cache_sizing, b.kv_cache_sizing_source) == ("profiled", "--no-enable-extensible-kv-cache")
    assert b.requested_memory_bytes == 78_225_740_923
    assert b.weights_bytes == 16_060_522_496 + L31_ROTARY
    act = sampler("0.34.0", 1024, 128256) + 8192 * 4096 * 2 + 256 * MiB + v2_states("0.34.0", 1024, 128256)
    assert act > 973_078_528 + 256 * MiB and b.activation_peak_bytes == act
    assert b.non_torch_bytes == non_torch("H100/tp1/consumed") and b.cudagraph_bytes == graphs(32)
    kv = 78_225_740_923 - 16_060_522_496 - L31_ROTARY - act - non_torch("H100/tp1/consumed") - graphs(32)
    assert b.kv_cache_memory_bytes == kv
    assert b.estimated is True
    extensible_only = {"cudagraph_resident_bytes", "startup_memory_bytes", "sizing_margin_floor_bytes", "tentative_kv_cache_memory_bytes",
                       "transient_reserve_bytes", "sizing_margin_bytes", "measured_kv_cache_memory_bytes"}
    assert all(isinstance(v, int) for k, v in vars(b).items() if k.endswith("_bytes") and k not in extensible_only)
    assert all(getattr(b, k) is None for k in extensible_only)
    assert b.formula.startswith("kv_cache_memory = ceil(gpu_memory × gpu_memory_utilization) − weights − "
                                "activation_peak − non_torch − cudagraph")
    assert b.formula_source == ("vLLM 0.34.0: v1/worker/utils.py request_memory, v1/worker/gpu_worker.py "
                                "determine_available_memory (CUDA-graph estimate in the profile)")
    # vLLM 0.33.0 has no extensible KV cache (no `extensible` anywhere in its vllm/config or vllm/v1; its
    # CacheConfig.gpu_memory_utilization is a float defaulting to 0.92, config/cache.py 215): its default
    # budget is this same profiled one, and asking for the extensible cache there is an error.
    old = budget_of(llama, get_era("vllm-0.33"), gpu="H100-80GB")
    assert (old.kv_cache_sizing, old.gpu_memory_utilization, old.kv_cache_memory_bytes) == \
        ("profiled", 0.92, kv + sampler("0.34.0", 1024, 128256) - sampler("0.33.0", 1024, 128256)
         + v2_states("0.34.0", 1024, 128256))
    assert old.gpu_memory_utilization_source == "vllm-0.33 default"
    with pytest.raises(OptionError, match="^--enable-extensible-kv-cache: vLLM 0.33.0 has no extensible KV cache"):
        budget_of(llama, get_era("vllm-0.33"), gpu="H100-80GB", enable_extensible_kv_cache=True)


def test_overrides_replace_estimates(llama):
    b = budget_of(llama, OLD, gpu_memory_gib=80, gpu_memory_utilization=0.5,
                  overrides={"weights_memory": "10GiB", "activation_memory": 2 * GiB, "non_torch_memory": "0",
                             "cudagraph_memory": "1.5GiB"})
    assert b.gpu_memory_bytes == 80 * GiB and b.gpu is None
    assert b.kv_cache_memory_bytes == 40 * GiB - 10 * GiB - 2 * GiB - 0 - int(1.5 * GiB)
    assert (b.weights_source, b.activation_source, b.non_torch_source, b.cudagraph_source) == \
        ("override",) * 4
    assert b.weights is None  # not counted when overridden


def test_bad_override_is_one_line(llama):
    with pytest.raises(OptionError, match="--activation-memory"):
        budget_of(llama, LATEST, gpu="H100", overrides={"activation_memory": "lots"})


def test_tp_comes_from_the_layout_and_splits_weights_and_adds_nccl(llama):
    # The tensor-parallel size is the layout's own (issue 10: it silently fell back to 1).
    # Llama-3.1-8B at TP 2 on an H100 (81089 MiB), vllm-latest (0.92):
    #   requested  = ceil(81089 · 2^20 · 0.92)                         = 78,225,740,923
    #   weights    = 4,015,263,744 params per rank · 2 B (test_weights) =  8,030,527,488, + L31_ROTARY (whole on
    #                every rank)
    #   activation = max(forward, sampler + hidden) + 256 MiB; forward = 8192 · (4·4096 + 3·14336/2) · 2
    #                = 620,756,992 < the derived sampler pass (as in test_budget_is_the_vllm_formula)
    #   non-torch  = calibrated for an H100 at tp·pp > 1 (NCCL), else for any card at tp·pp > 1
    #   CUDA graphs = the calibrated estimate of 102 graphs on 32 layers (graphs())
    tp2 = build_model_layout("meta-llama/Meta-Llama-3.1-8B", None, ServingOptions(tensor_parallel_size=2))
    b2 = budget_of(tp2, LATEST, gpu="H100", **PROFILED_034)
    nt2 = non_torch("H100/tp>1" if "H100/tp>1" in CALIBRATION["non_torch"] else "tp>1")
    act = sampler("0.34.0", 1024, 128256) + 8192 * 4096 * 2 + 256 * MiB + v2_states("0.34.0", 1024, 128256)
    assert b2.tensor_parallel_size == 2 and b2.warnings == ()
    assert b2.requested_memory_bytes == 78_225_740_923
    assert b2.weights_bytes == 8_030_527_488 + L31_ROTARY
    assert b2.activation_peak_bytes == act
    assert b2.non_torch_bytes == nt2 and b2.cudagraph_bytes == graphs(32)
    assert b2.kv_cache_memory_bytes == 78_225_740_923 - 8_030_527_488 - L31_ROTARY - act - nt2 - graphs(32)
    assert budget_of(llama, LATEST, gpu="H100").non_torch_bytes == non_torch("H100/tp1/consumed")
    with pytest.raises(OptionError, match="tensor_parallel_size 4.*built for 2"):
        budget_of(tp2, LATEST, gpu="H100", tensor_parallel_size=4)


def test_pipeline_budget_is_the_tightest_stage():
    layout = build_model_layout("meta-llama/Meta-Llama-3.1-8B", None, ServingOptions(pipeline_parallel_size=2))
    b = budget_of(layout, LATEST, gpu="L40S", **PROFILED_034)
    # Llama-3.1-8B, PP 2 on an L40S (44.40 GiB: round(44.40 · 2^30) = 47,674,136,986 B), vllm-latest profiled:
    # requested ceil(47,674,136,986 · 0.92) = ceil(43,860,206,027.12) = 43,860,206,028 per GPU. One layer is 218,112,000 parameters (test_weights).
    #   stage 0: embedding 128256·4096 + layers 0-15 = 4,015,128,576 params = 8,030,257,152 B;
    #            activation: no sampler on a first stage, forward 8192 · (4·4096 + 3·14336) · 2
    #            = 973,078,528 × 1.077 (0.34.0's measured dense factor) + 256 MiB
    #   stage 1: layers 16-31 + final norm 4096 + lm_head 128256·4096 = 4,015,132,672 params
    #            = 8,030,265,344 B; activation: the derived sampler pass over kv_budget's default 1024 requests
    #            + the 8192 × 4096 hidden states and the runner's two 8192 × 4096 intermediate-tensor buffers
    #            + 256 MiB, or the forward of a later stage, 8192 · (5·4096 + 3·14336) · 2 × 0.34.0's PP 2
    #            last-stage factor (tests/golden/profile_terms/parallel), the larger
    #   both: non-torch calibrated for pipeline parallelism (no L40S group); CUDA graphs: the calibrated estimate
    #   of 102 graphs on 16 layers (graphs()); each stage builds its layers' rotary table (L31_ROTARY)
    nt = non_torch("pp>1")
    fwd0 = forward("0.34.0", 8192 * (4 * 4096 + 3 * 14336) * 2) + 256 * MiB + v2_states("0.34.0", 1024, 128256)
    later = PROFILE_ROWS["0.34.0"]["parallel"]["dense"]["layouts"]["pp2-last"]["factor"]
    act1 = max(round(8192 * (5 * 4096 + 3 * 14336) * 2 * later),
               sampler("0.34.0", 1024, 128256) + 3 * 8192 * 4096 * 2) + 256 * MiB + v2_states("0.34.0", 1024, 128256)
    kv0 = 43_860_206_028 - 8_030_257_152 - L31_ROTARY - fwd0 - nt - graphs(16)
    kv1 = 43_860_206_028 - 8_030_265_344 - L31_ROTARY - act1 - nt - graphs(16)
    assert [(s.weights_bytes, s.activation_peak_bytes, s.kv_cache_memory_bytes) for s in b.stages] == [
        (8_030_257_152 + L31_ROTARY, fwd0, kv0),
        (8_030_265_344 + L31_ROTARY, act1, kv1),
    ]
    assert b.kv_cache_memory_bytes == min(kv0, kv1)
    assert any("pipeline parallel" in w and "stage 1" in w for w in b.warnings)


def test_model_too_big_fails_loading_the_weights_and_says_so():
    layout = build_model_layout("Qwen/Qwen3-32B")
    b = budget_of(layout, LATEST, gpu="L4", **PROFILED_034)
    # Qwen3-32B: per layer q 8192·5120 + k, v 1024·5120 + o 5120·8192 + q/k norms 2·128 + MLP
    # 3·5120·25600 + two norms 2·5120 = 487,598,336; 64 layers + embed and head 2·151936·5120
    # + final norm 5120 = 32,762,123,264 params = 65,524,246,528 B (bf16), + the rotary table (40,960 rows of 128,
    # bf16: 10,485,760 B, kvplan.budget.rotary) = 65,534,732,288 B.
    # ceil(L4 (23,612,293,120 B) · 0.92) = 21,723,309,671; activation max(forward 8192 · (4·5120 + 3·25600) · 2
    # = 1,593,835,520, the derived sampler pass over 1024 × 151936 logits + 8192 × 5120 bf16 hidden states)
    # + 256 MiB; non-torch calibrated for an L4 on one GPU under a 0.27.0+ release ("consumed"); CUDA graphs: the calibrated estimate of 102 graphs on
    # 64 layers (graphs()).
    act = (max(forward("0.34.0", 1_593_835_520), sampler("0.34.0", 1024, 151936) + 8192 * 5120 * 2) + 256 * MiB
           + v2_states("0.34.0", 1024, 151936))
    assert b.weights_bytes == 65_534_732_288
    assert b.kv_cache_memory_bytes == 21_723_309_671 - 65_534_732_288 - act - non_torch("L4/tp1/consumed") - graphs(64)
    # but vLLM never gets there: 61.03 GiB of weights do not fit 21.99 GiB − 0.50 GiB (start-up estimate)
    f = b.load_failure
    assert (f.stage, f.error_type, f.needed_bytes, f.free_bytes) == (
        "load", "torch.OutOfMemoryError", 65_534_732_288, 23_612_293_120 - 512 * MiB)
    assert any(w.startswith("vLLM fails before the KV cache (load): CUDA out of memory while loading the model "
                            "weights: 61.03 GiB of weights per GPU, 21.49 GiB free") for w in b.warnings)
    assert not any(w.startswith("no memory left for the KV cache") for w in b.warnings)


def test_profile_run_that_does_not_fit_the_card():
    # Llama-3.1-8B on an L4 with a 64k-token profile batch: the weights fit (14.96 GiB), the activation peak
    # on top of them does not: 65536 · (4·4096 + 3·14336) · 2 = 7,784,628,224, × 1.077 (0.34.0's measured dense
    # factor), + 256 MiB
    layout = build_model_layout("meta-llama/Meta-Llama-3.1-8B")
    b = budget_of(layout, LATEST, gpu="L4", max_num_batched_tokens=65536, **PROFILED_034)
    f = b.load_failure
    assert b.activation_peak_bytes == forward("0.34.0", 65536 * (4 * 4096 + 3 * 14336) * 2) + 256 * MiB + v2_states(
        "0.34.0", b.max_num_seqs, 128256, 65536)
    assert f.stage == "profile" and f.needed_bytes == (
        b.weights_bytes + b.activation_peak_bytes + b.non_torch_bytes)
    assert budget_of(layout, LATEST, gpu="L4", **PROFILED_034).load_failure is None


# --- through the CLI ------------------------------------------------------------------------


def _json(*args):
    r = runner.invoke(app, [*args, "--format", "json"])
    return r, json.loads(r.stdout)


def test_simulate_with_gpu_marks_the_budget_estimated():
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB", "-tp", "2")
    assert r.exit_code == 0
    b = d["budget"]
    assert b["estimated"] is True and b["tensor_parallel_size"] == 2
    # the TP-2 extensible budget (vLLM 0.34.0's default sizing; its rule: test_extensible_budget_tp2) is what the
    # plan gets, and more than the profiled one (utilization 1.0 against 0.92)
    assert b["kv_cache_sizing"] == "extensible"
    ext = b["kv_cache_memory_bytes"]
    assert ext == d["memory"]["available_bytes"]
    # --no-enable-extensible-kv-cache: the profiled TP-2 budget of test_tp_comes_from_the_layout_and_splits_...
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB", "-tp", "2",
                 "--no-enable-extensible-kv-cache")
    nt2 = non_torch("H100/tp>1" if "H100/tp>1" in CALIBRATION["non_torch"] else "tp>1")
    profiled = (78_225_740_923 - 8_030_527_488 - L31_ROTARY - (sampler("0.34.0", 1024, 128256) + 8192 * 4096 * 2 + 256 * MiB)
                - v2_states("0.34.0", 1024, 128256) - nt2 - graphs(32))
    assert d["budget"]["kv_cache_memory_bytes"] == d["memory"]["available_bytes"] == profiled < ext


def test_simulate_with_kv_cache_memory_has_no_estimate():
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory", "40GiB")
    assert r.exit_code == 0 and "budget" not in d


def test_simulate_override_flags():
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu-memory", "80", "--gpu-memory-utilization", "0.9",
                 "--weights-memory", "15GiB", "--activation-memory", "1GiB", "--non-torch-memory", "0",
                 "--cudagraph-memory", "0")
    assert r.exit_code == 0
    assert d["memory"]["available_bytes"] == int(80 * GiB * 0.9) - 16 * GiB


def test_simulate_gpu_too_small_fails_loading_with_deployment_fixes():
    r, d = _json("simulate", "Qwen/Qwen3-32B", "--gpu", "L4")
    assert r.exit_code == 3 and d["outcome"]["starts"] is False
    assert (d["outcome"]["stage"], d["outcome"]["error_type"]) == ("load", "torch.OutOfMemoryError")
    assert d["outcome"]["error"].startswith("CUDA out of memory while loading the model weights: 61.03 GiB")
    # fixes change the deployment (each simulated again from scratch, and kept only when it then starts),
    # never the KV budget. 61.02 GiB over 4 L4s loads (15.3 GiB each) but leaves 1.94 GiB of KV for 2.5 GiB
    # needed at 40,960 tokens: TP 8 is the least that starts, PP likewise; fp8 (30.5 GiB) still does not
    # fit one L4; the smallest larger CUDA card that starts it at the band's pessimistic end is the RTX PRO 6000
    # (on an A100 80GB the CUDA graphs' estimate runs to 2.9× its fitted value at that end, the spread of the
    # A100 start-ups' logged graphs in the calibration: too little KV is left for a 40,960-token request)
    fixes = {f["option"]: f for f in d["fixes"]}
    assert "kv_cache_memory" not in fixes and "gpu_memory_utilization" not in fixes and "quantization" not in fixes
    assert fixes["tensor_parallel_size"]["value"] == 8 and fixes["pipeline_parallel_size"]["value"] == 8
    assert fixes["gpu"]["value"] == "RTX-PRO-6000-96GB"
    # or offload to CPU memory: 39.5 GiB short of loading; 60 GiB offloaded is the least whole GiB that leaves room
    # for the 10 GiB a 40,960-token request needs at the band's pessimistic end (re-simulated): there the L4's
    # CUDA-graph estimate is at every card's widest calibrated ratio (no L4 start-up logs one) and its non-torch
    # term at the one-GPU spread (one L4 start-up: the band widened)
    assert fixes["cpu_offload_gb"]["value"] == 60 and fixes["cpu_offload_gb"]["starts"]
    assert all(f["verified"] for f in d["fixes"])


def test_simulate_budget_too_small_is_still_vllms_no_memory_error():
    # weights 14.96 GiB fit a 20 GiB card, but not 0.5 of it: vLLM loads, profiles, then finds no KV memory
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu-memory", "20", "--gpu-memory-utilization", "0.5",
                 "--max-num-batched-tokens", "2048")
    assert r.exit_code == 3 and d["outcome"]["stage"] == "admission"
    assert d["outcome"]["error"].startswith("No available memory for the cache blocks")
    assert d["budget"]["load_failure"] is None


def test_budget_path_does_not_import_torch():
    rc, mods = heavy_modules_after_cli(["simulate", "openai/gpt-oss-20b", "--gpu", "H100", "--format", "json"], ROOT)
    assert rc == 0 and not [m for m in mods if m.split(".")[0] == "torch"]


@pytest.mark.parametrize("gpu, expected", [
    (None, (8192, 1024)),  # no card named: kvplan assumes H100/H200, the reference's setting
    ("H100-80GB", (8192, 1024)),  # 79.19 GiB ≥ 70 GiB, not an A100
    ("H200-141GB", (8192, 1024)),  # 139.8 GiB < 160 GiB
    ("B200-180GB", (16384, 1024)),  # 178.4 GiB ≥ 160 GiB
    ("MI300X-192GB", (16384, 1024)),
    ("A100-80GB", (2048, 256)),  # vLLM keeps A100 on the small tier (PR #17885)
    ("L4-24GB", (2048, 256)),
])
def test_vllm_serve_batch_defaults_by_card(gpu, expected):
    assert vllm_batch_defaults(gpu, None) == expected


def test_simulate_uses_the_cards_batch_defaults():
    from kvplan.usecases.scenario import Scenario, run_scenario

    r = run_scenario(Scenario(model="openai/gpt-oss-20b", gpu="L4-24GB", max_model_len=8192))
    assert (r.plan.options.max_num_batched_tokens, r.plan.options.max_num_seqs) == (2048, 256)
    # gpt-oss sliding(128) on an L4 (SM 8.9: FA2 has no sinks, so TRITON_ATTN, which keeps 0.34.0's default
    # block 64): cdiv(min(127 + 2 · 2048, 8192), 64) + 1 = 67 blocks (async)
    assert r.plan.blocks_per_request[0] == 67
    r = run_scenario(Scenario(model="openai/gpt-oss-20b", gpu="L4-24GB", max_model_len=8192,
                              max_num_batched_tokens=4096))
    assert r.plan.options.max_num_batched_tokens == 4096


def test_the_large_card_tier_is_new():
    from kvplan.usecases.scenario import Scenario

    # 0.18's get_batch_defaults has no ≥160 GiB tier: a B200 gets the H100 values
    assert vllm_batch_defaults("B200-180GB", None, large_tier=False) == (8192, 1024)
    assert Scenario(model="x", gpu="B200-180GB", policy="vllm-1.5").batch_sizes() == (8192, 1024)
    assert Scenario(model="x", gpu="B200-180GB").batch_sizes() == (16384, 1024)


def test_deepseek_v3_tp8_h100_fails_loading_with_working_fixes():
    """Issue 24: DeepSeek-V3 (fp8 checkpoint) at TP 8 holds 79.29 GiB of weights per H100 (79.19 GiB CUDA total).
    vLLM runs out of memory loading them; a larger --kv-cache-memory cannot help. The fixes are deployment
    changes, each simulated again: TP 16, PP 2, H200s, or CPU offload."""
    r, d = _json("simulate", "deepseek-ai/DeepSeek-V3", "--gpu", "H100", "-tp", "8")
    assert r.exit_code == 3
    assert (d["outcome"]["stage"], d["outcome"]["error_type"]) == ("load", "torch.OutOfMemoryError")
    assert round(d["budget"]["weights_bytes"] / GiB, 2) == 79.29
    assert d["memory"]["num_blocks"] == 0 and d["logs"] == []
    # ... or 29 GiB of weights per GPU kept in CPU memory (--cpu-offload-gb: the least whole GiB that starts, at
    # the band's pessimistic end too (28 fails admission there; 26 before the held workspace was counted), with the
    # CUDA cards' calibrated CUDA graphs' estimate and its band (ROCm's HIP graphs fitted apart), 0.34.0's V2 runner
    # states (1,024 x 129,280 x 4.25 B and their other buffers) and the FP8 experts' held workspace: block FP8 on an
    # H100 at TP 8 (no expert parallelism) runs TritonExperts from 0.17 (oracle/fp8.py 0.34.0 lines 128-138), whose
    # WorkspaceManager buffer stays under the sampler: T·k·(max(I/tp, H) + max(2I/tp, H))·a =
    # 8,192·8·(7,168 + 7,168)·2 = 1,879,048,192 B = 1.75 GiB
    assert [(f["option"], f["value"]) for f in d["fixes"]] == [
        ("tensor_parallel_size", 16), ("pipeline_parallel_size", 2), ("gpu", "H200-141GB"), ("cpu_offload_gb", 29)]
    assert all(f["starts"] for f in d["fixes"])
    # kvplan fit labels the row as the load failure, with no KV budget (there is no KV cache)
    r, d = _json("fit", "deepseek-ai/DeepSeek-V3", "--gpus", "H100,H200", "--tp-sizes", "8")
    rows = {row["gpu"]: row for row in d["gpus"]["rows"]}
    assert rows["H100-80GB"]["outcome"]["stage"] == "load" and rows["H100-80GB"]["kv_cache_memory_bytes"] is None
    assert rows["H200-141GB"]["outcome"]["starts"]
