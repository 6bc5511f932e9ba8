"""vLLM 0.34.0's extensible KV cache in the --gpu budget (kvplan.budget.sizing, kvplan.budget.estimate).

The rule, read in vLLM 0.34.0 (.golden-venvs/vllm-0.34.0/lib/python3.11/site-packages/vllm/):
* config/cache.py 395-405 ``enable_extensible_kv_cache`` (None = decide), 495-501
  ``resolved_gpu_memory_utilization``: the given value, else 1.0 with the extensible cache, else 0.92;
* config/vllm.py 3180-3263 ``_resolve_extensible_kv_cache``: unset → on (CUDA/ROCm), off when
  ``kv_cache_memory_bytes`` or ``num_gpu_blocks_override`` is set; asked for there → ValueError;
* v1/worker/utils.py 734-800 ``request_memory``: ``ceil(total × utilization)``;
* v1/worker/gpu_worker.py 673-841 ``determine_available_memory``: the tentative size
  ``requested − non_kv_cache_memory − cudagraph_estimate`` (the reservation), 771-773
  ``peak_activation_memory = transient_peak_headroom + cudagraph_memory_estimate``, 946-948 that peak
  seeds ``reserved_headroom_bytes``; 1226-1240 the measurement after warmup and capture;
* v1/worker/extensible_kv_cache.py 64-65 margin floor 1 GiB (3 GiB on ROCm) and fraction 0.75,
  592-618 ``measure_kv_cache_bytes``: ``min(requested − used, free + committed − margin) − transient``;
* v1/core/kv_cache_planning.py 1864-1906 ``finalize_extensible_kv_cache``: min(measured, reserved).
vLLM 0.33.0 has none of it (``grep -r extensible`` finds no such code in its vllm/config or vllm/v1),
and no release lies between 0.33.0 and 0.34.0 (kvplan/engines/vllm/versions.py), so 0.34.0 introduced it.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from kvplan.budget.estimate import kv_bytes_at
from factories import budget_of
from kvplan.budget.sizing import EXTENSIBLE, PROFILED, kv_cache_sizing, stage_kv_cache_bytes
from kvplan.cli.app import ensure_registered
from kvplan.engines.vllm import get_era
from kvplan.errors import OptionError
from kvplan.model import ServingOptions, build_model_layout
from kvplan.units import GiB

# the sizing rule on fixed profile terms (tests/conftest.py fixed_profile_terms): its hand derivations below
pytestmark = pytest.mark.usefixtures("fixed_profile_terms")

app = ensure_registered()
runner = CliRunner()
LATEST, V033 = get_era("vllm-latest"), get_era("vllm-0.33")


@pytest.fixture(scope="module")
def llama():
    return build_model_layout("meta-llama/Meta-Llama-3.1-8B")


def test_eras_name_the_sizing_mode_and_its_utilization():
    assert (LATEST.extensible_kv_cache, LATEST.extensible_gpu_memory_utilization) == (True, 1.0)
    assert (V033.extensible_kv_cache, V033.extensible_gpu_memory_utilization) == (False, None)
    assert get_era("vllm==0.34.0").extensible_kv_cache and not get_era("vllm==0.33.0").extensible_kv_cache


def test_sizing_mode_as_vllm_settles_the_flag():
    assert kv_cache_sizing(LATEST) == (EXTENSIBLE, "vllm-0.34 default (on for CUDA and ROCm)")
    assert kv_cache_sizing(LATEST, True) == (EXTENSIBLE, "--enable-extensible-kv-cache")
    assert kv_cache_sizing(LATEST, False) == (PROFILED, "--no-enable-extensible-kv-cache")
    assert kv_cache_sizing(LATEST, kv_cache_memory_given=True) == (
        PROFILED, "off: --kv-cache-memory given (vLLM then leaves the extensible KV cache off)")
    assert kv_cache_sizing(LATEST, num_gpu_blocks_override=100)[0] == PROFILED
    assert kv_cache_sizing(LATEST, cuda_alike=False)[0] == PROFILED
    assert kv_cache_sizing(V033) == (PROFILED, "vllm-0.33: the profiling estimate (no extensible KV cache before 0.34.0)")
    # explicitly requested where vLLM refuses it (config/vllm.py 3262-3263: ValueError)
    with pytest.raises(OptionError, match="^--enable-extensible-kv-cache: vLLM refuses it with --kv-cache-memory"):
        kv_cache_sizing(LATEST, True, kv_cache_memory_given=True)
    with pytest.raises(OptionError, match="with --num-gpu-blocks-override"):
        kv_cache_sizing(LATEST, True, num_gpu_blocks_override=100)


def test_extensible_budget_is_the_measured_one(llama):
    # Llama-3.1-8B, TP 1, H100 (81089 MiB = 85,027,979,264 B), vllm-latest default: extensible, utilization 1.0.
    # The four estimated terms are those of tests/test_hardware.py::test_budget_is_the_vllm_formula:
    #   W (weights) 16,094,076,928   A (activation) 1,319,108,608   N (non-torch) 268,435,456
    #     (W: 16,060,522,496 of parameters + the 33,554,432 B rotary table, tests/test_hardware.py L31_ROTARY)
    #   G (CUDA graphs, 256 MiB + 32 · 8 MiB) 536,870,912;  S (start-up, one GPU: 512 MiB) 536,870,912
    #   requested = ceil(85,027,979,264 · 1.0)                          = 85,027,979,264
    #   tentative = 85,027,979,264 − W − A − N − G                      = 66,809,487,360
    #   used      = W + N + G                                           = 16,899,383,296
    #   transient = A + G                                               =  1,855,979,520
    #   margin    = max(1 GiB, int(0.75 · 1,855,979,520) = 1,391,984,640) =  1,391,984,640
    #   measured  = min(85,027,979,264 − 16,899,383,296 = 68,128,595,968,
    #                   85,027,979,264 − S − used − margin = 66,199,740,416) − transient
    #             = 66,199,740,416 − 1,855,979,520                      = 64,343,760,896
    #   KV = min(measured, tentative)                                   = 64,343,760,896
    #   (the profiled 0.92 budget is 60,007,249,019: 4,336,511,877 B = 4.04 GiB more)
    b = budget_of(llama, LATEST, gpu="H100-80GB")
    assert (b.kv_cache_sizing, b.kv_cache_sizing_source) == ("extensible", "vllm-0.34 default (on for CUDA and ROCm)")
    assert (b.gpu_memory_utilization, b.gpu_memory_utilization_source) == (
        1.0, "vllm-0.34 default with the extensible KV cache")
    assert b.requested_memory_bytes == 85_027_979_264
    assert (b.weights_bytes, b.activation_peak_bytes, b.non_torch_bytes, b.cudagraph_bytes) == (
        16_094_076_928, 1_319_108_608, 268_435_456, 536_870_912)
    assert (b.startup_memory_bytes, b.startup_memory_source) == (536_870_912, "estimate")
    assert b.sizing_margin_floor_bytes == GiB
    assert b.tentative_kv_cache_memory_bytes == 66_809_487_360
    assert b.transient_reserve_bytes == 1_855_979_520
    assert b.sizing_margin_bytes == 1_391_984_640
    assert b.measured_kv_cache_memory_bytes == b.kv_cache_memory_bytes == 64_343_760_896
    assert b.formula.startswith("kv_cache_memory = min(tentative, min(requested − used, gpu_memory − startup − "
                                "used − margin) − transient)")
    assert b.formula_source.startswith("vLLM 0.34.0: config/cache.py resolved_gpu_memory_utilization (495-501)")
    assert "extensible_kv_cache.py measure_kv_cache_bytes (592-618)" in b.formula_source
    assert b.warnings == ()
    # the same rule at another utilization (fit's bisection) gives the same figure at 1.0
    assert kv_bytes_at(b, 1.0) == 64_343_760_896


def test_graphs_not_in_the_profile_are_still_measured(llama):
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (0.34.0 gpu_worker.py 746-747): no CUDA-graph estimate in the
    # profile or in peak_activation_memory, but the graphs are still captured before the measurement, so they
    # stay in `used` (extensible_kv_cache.py 613: non_kv_used counts everything resident). Terms as above:
    #   tentative = 85,027,979,264 − 16,094,076,928 − 1,319,108,608 − 268,435,456 − 0  = 67,346,358,272
    #   transient = A = 1,319,108,608; margin = max(1 GiB, int(0.75 · 1,319,108,608) = 989,331,456) = 1,073,741,824
    #   used      = 16,094,076,928 + 268,435,456 + 536,870,912 (graphs after capture) = 16,899,383,296
    #   measured  = 85,027,979,264 − 536,870,912 − 16,899,383,296 − 1,073,741,824 − 1,319,108,608
    #             = 65,198,874,624 → KV 65,198,874,624
    b = budget_of(llama, replace(LATEST, cudagraph_memory_in_profile=False), gpu="H100-80GB")
    assert (b.cudagraph_bytes, b.cudagraph_resident_bytes) == (0, 536_870_912)
    assert b.tentative_kv_cache_memory_bytes == 67_346_358_272
    assert (b.transient_reserve_bytes, b.sizing_margin_bytes) == (1_319_108_608, GiB)
    assert b.kv_cache_memory_bytes == 65_198_874_624
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB",
                 "--env", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0")
    assert d["budget"]["kv_cache_memory_bytes"] == 65_198_874_624
    # --cudagraph-memory 0 (--enforce-eager: nothing captured) sets both to 0:
    #   transient = A, margin 1 GiB, used = W + N = 16,362,512,384
    #   measured = 85,027,979,264 − 536,870,912 − 16,362,512,384 − 1,073,741,824 − 1,319,108,608
    #            = 65,735,745,536
    b = budget_of(llama, LATEST, gpu="H100-80GB", overrides={"cudagraph_memory": 0})
    assert (b.cudagraph_bytes, b.cudagraph_resident_bytes) == (0, 0)
    assert b.kv_cache_memory_bytes == 65_735_745_536


def test_extensible_budget_tp2():
    # Llama-3.1-8B TP 2 on an H100, extensible: W 8,064,081,920, A 1,319,108,608, N 768 MiB = 805,306,368,
    # G 536,870,912 (tests/test_hardware.py::test_tp_comes_...); S 1 GiB (tp·pp = 2) = 1,073,741,824.
    #   used = 8,064,081,920 + 805,306,368 + 536,870,912 = 9,406,259,200; transient 1,855,979,520;
    #   margin 1,391,984,640 (as for TP 1)
    #   measured = min(85,027,979,264 − 9,406,259,200 = 75,621,720,064,
    #                  85,027,979,264 − 1,073,741,824 − 9,406,259,200 − 1,391,984,640 = 73,155,993,600)
    #              − 1,855,979,520 = 71,300,014,080
    #   tentative = 85,027,979,264 − 8,064,081,920 − 1,319,108,608 − 805,306,368 − 536,870,912 = 74,302,611,456
    tp2 = build_model_layout("meta-llama/Meta-Llama-3.1-8B", None, ServingOptions(tensor_parallel_size=2))
    b = budget_of(tp2, LATEST, gpu="H100")
    assert b.startup_memory_bytes == 1_073_741_824
    assert b.tentative_kv_cache_memory_bytes == 74_302_611_456
    assert b.kv_cache_memory_bytes == 71_300_014_080


def test_explicit_utilization_caps_the_extensible_cache_and_warns(llama):
    # --gpu-memory-utilization 0.9 with the extensible cache (terms of test_extensible_budget_is_the_measured_one):
    #   requested = ceil(85,027,979,264 · 0.9) = ceil(76,525,181,337.6) = 76,525,181,338
    #   measured  = min(76,525,181,338 − 16,899,383,296 = 59,625,798,042, 66,199,740,416) − 1,855,979,520
    #             = 57,769,818,522
    #   tentative = 76,525,181,338 − 18,218,491,904 = 58,306,689,434 → KV 57,769,818,522
    #   withheld (measure_kv_cache_blocks' warning, extensible_kv_cache.py 655-676: 0.7 < u < 1.0 and ≥ 1 GiB)
    #             = 66,199,740,416 − 59,625,798,042 = 6,573,942,374 B = 6.12 GiB
    b = budget_of(llama, LATEST, gpu="H100-80GB", gpu_memory_utilization=0.9)
    assert b.requested_memory_bytes == 76_525_181_338
    assert b.tentative_kv_cache_memory_bytes == 58_306_689_434
    assert b.kv_cache_memory_bytes == 57_769_818_522
    assert list(b.warnings) == [
        "--gpu-memory-utilization 0.9 keeps 6.12 GiB of free memory out of the extensible KV cache, which measures "
        "vLLM's own use after warmup; vLLM 0.34.0 warns so too. Leave it unset unless other processes or buffers "
        "vLLM does not see need the room"]
    # 0.7 or below: vLLM does not warn (the value is not a habit from estimate-based sizing)
    assert budget_of(llama, LATEST, gpu="H100-80GB", gpu_memory_utilization=0.7).warnings == ()


def test_rocm_margin_floor_is_3_gib(llama):
    # Overrides: weights 100 GiB, activation 2 GiB, non-torch 0, CUDA graphs 0, start-up 1 GiB, on 192 GiB.
    # transient = 2 GiB; margin = max(floor, int(0.75 · 2 GiB) = 1.5 GiB); requested = 192 GiB (1.0)
    #   CUDA: margin 1.5 GiB → measured = min(192 − 100, 192 − 1 − 100 − 1.5) − 2 = 87.5 GiB
    #   ROCm (MI300X): margin 3 GiB → min(92, 88) − 2 = 86 GiB; tentative 192 − 102 = 90 GiB either way
    over = {"weights_memory": 100 * GiB, "activation_memory": 2 * GiB, "non_torch_memory": 0, "cudagraph_memory": 0,
            "startup_memory": GiB}
    cuda = budget_of(llama, LATEST, gpu_memory_gib=192, overrides=over)
    rocm = budget_of(llama, LATEST, gpu="MI300X", gpu_memory_gib=192, overrides=over)
    assert (cuda.sizing_margin_bytes, cuda.kv_cache_memory_bytes) == (int(1.5 * GiB), int(87.5 * GiB))
    assert (rocm.sizing_margin_bytes, rocm.kv_cache_memory_bytes) == (3 * GiB, 86 * GiB)
    assert rocm.tentative_kv_cache_memory_bytes == 90 * GiB and rocm.startup_memory_source == "override"


def test_tentative_bounds_the_measured_size():
    # With no CUDA graphs and a large start-up slack the measured figure cannot exceed the reservation:
    # total 100, weights 10, activation 1, non-torch 0, graphs 0, start-up 0, margin floor 1 (GiB):
    #   tentative = 100 − 11 = 89; margin = max(1, 0.75) = 1; measured = min(90, 100 − 10 − 1) − 1 = 88
    t = stage_kv_cache_bytes(EXTENSIBLE, total=100 * GiB, utilization=1.0, weights=10 * GiB, activation=GiB,
                             non_torch=0, cudagraph=0)
    assert (t["tentative_kv_cache_memory_bytes"], t["measured_kv_cache_memory_bytes"],
            t["kv_cache_memory_bytes"]) == (89 * GiB, 88 * GiB, 88 * GiB)
    # a lower utilization: requested ceil(100 GiB · 0.5) = 50 GiB; tentative 39, measured min(40, 89) − 1 = 39
    t = stage_kv_cache_bytes(EXTENSIBLE, total=100 * GiB, utilization=0.5, weights=10 * GiB, activation=GiB,
                             non_torch=0, cudagraph=0)
    assert (t["tentative_kv_cache_memory_bytes"], t["kv_cache_memory_bytes"]) == (39 * GiB, 39 * GiB)


def _json(*args):
    r = runner.invoke(app, [*args, "--format", "json"])
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def test_kv_cache_memory_turns_it_off_and_refuses_the_flag():
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory", "40GiB",
                 "--enable-extensible-kv-cache")
    assert r.exit_code == 1 and d is None
    assert r.stderr.strip().splitlines() == [
        "Error: --enable-extensible-kv-cache: vLLM refuses it with --kv-cache-memory, which replaces the memory it "
        "would measure; drop one of the two"]
    # fit refuses it too; compare fixes the budget after resolving the flag, so the flag with --gpu is fine there
    r, d = _json("fit", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory", "40GiB", "--enable-extensible-kv-cache")
    assert r.exit_code == 1 and "vLLM refuses it with --kv-cache-memory" in r.stderr
    r, d = _json("compare", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100", "--enable-extensible-kv-cache")
    assert r.exit_code == 0, r.stderr
    assert d["budget"]["kv_cache_sizing_source"] == "--enable-extensible-kv-cache"
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100", "--num-gpu-blocks-override", "1000")
    assert d["budget"]["kv_cache_sizing"] == "profiled" and d["budget"]["gpu_memory_utilization"] == 0.92
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100", "--policy", "vllm==0.33.0",
                 "--enable-extensible-kv-cache")
    assert r.exit_code == 1 and r.stderr.startswith("Error: --enable-extensible-kv-cache: vLLM 0.33.0 has no")


def test_fit_uses_the_extensible_budget_and_flag():
    # fit's budget is the simulate budget (64,343,760,896 B derived above); the flag reaches it
    r, d = _json("fit", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB")
    assert r.exit_code == 0 and d["budget"]["kv_cache_memory_bytes"] == 64_343_760_896
    r, d = _json("fit", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB", "--no-enable-extensible-kv-cache")
    assert d["budget"]["kv_cache_memory_bytes"] == 60_007_249_019


def test_check_file_key(tmp_path):
    # A deployments file takes the option as a key. Llama-3.1-8B's page is 32 layers · 2 · 8 heads · 128 · 2 B
    # · 64 tokens (0.34.0's default block, FLASH_ATTN on the H100) = 8,388,608 B per block (one group):
    #   enable_extensible_kv_cache: false → 60,007,249,019 // 8,388,608 = 7,153 blocks · 64 = 457,792 tokens
    #   unset (extensible)               → 64,343,760,896 // 8,388,608 = 7,670 blocks · 64 = 490,880 tokens
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n"
                 "  - {name: profiled, model: meta-llama/Meta-Llama-3.1-8B, gpu: H100-80GB, enable_extensible_kv_cache: false}\n"
                 "  - {name: extensible, model: meta-llama/Meta-Llama-3.1-8B, gpu: H100-80GB}\n")
    r, d = _json("check", str(f))
    assert r.exit_code == 0, r.stderr
    assert [x["plan"]["kv_tokens"] for x in d["deployments"]] == [457_792, 490_880]


def test_budget_from_device_uses_the_same_utilization(monkeypatch):
    from kvplan.device import probe

    monkeypatch.setattr(probe, "device_free_bytes", lambda device: (10 * GiB, "test rule"))
    # a CUDA device on 0.34: extensible, utilization 1.0 → 10 GiB − --reserve 1 GiB
    b = probe.device_kv_budget("cuda", LATEST, reserve_bytes=GiB)
    assert (b.kv_cache_sizing, b.gpu_memory_utilization, b.kv_cache_memory_bytes) == (
        "extensible", 1.0, 9 * GiB)
    # turned off: the profiled default 0.92 → int(10 GiB · 0.92) = 9,878,424,780
    b = probe.device_kv_budget("cuda", LATEST, enable_extensible_kv_cache=False)
    assert (b.gpu_memory_utilization, b.kv_cache_memory_bytes) == (0.92, 9_878_424_780)
    # a CPU device: vLLM's extensible cache is CUDA/ROCm only
    b = probe.device_kv_budget("cpu", LATEST)
    assert b.kv_cache_sizing == "profiled" and b.gpu_memory_utilization == 0.92


def test_serve_line_reads_vllms_flag_and_its_negative():
    # `kvplan vllm ... serve` reads vLLM 0.34.0's own spellings (--disable-extensible-kv-cache is its negative alias)
    def serve(*flags):
        r = runner.invoke(app, ["vllm", "--gpu", "H100-80GB", "--format", "json", "serve",
                                "meta-llama/Meta-Llama-3.1-8B", *flags])
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)["budget"]

    b = serve("--disable-extensible-kv-cache")
    assert (b["kv_cache_sizing"], b["kv_cache_memory_bytes"]) == ("profiled", 60_007_249_019)
    assert serve()["kv_cache_memory_bytes"] == 64_343_760_896


# The line vLLM 0.34.0 logs once the extensible cache is sized (extensible_kv_cache.py 693-707), with this
# file's H100 figures: 30,697 blocks of 2 MiB = 64,376,274,944 B = 59.96 GiB; the reservation logged before
# ("Available KV cache memory", gpu_worker.py 795-796) is the tentative 66,843,041,792 B = 62.25 GiB.
_MEASURED_LOG = (
    "INFO 12-03 08:00:00 [gpu_worker.py:795] Available KV cache memory: 62.25 GiB\n"
    "INFO 12-03 08:01:00 [extensible_kv_cache.py:693] Memory after warmup: 1.52 GiB free, 0.0 GiB committed to the "
    "KV cache, 1.73 GiB kept for transient activations (1.73 GiB allocated at peak, 0.0 GiB of torch reservation "
    "growth); 30697 KV cache blocks (59.96 GiB) fit within the requested 79.19 GiB. Torch may reserve up to "
    "18.2 GiB.\n")


def test_explain_log_takes_the_measured_size_over_the_reservation():
    from kvplan.logs import facts_of, read_records
    from kvplan.usecases.explain_log.rebuild import deployment

    facts = facts_of(read_records(_MEASURED_LOG))
    m = facts.first("kv_cache_measured")
    assert (m["num_blocks"], m["gib"], m["transient_gib"], m["requested_gib"]) == (30697, 59.96, 1.73, 79.19)
    b = deployment(facts, model="meta-llama/Meta-Llama-3.1-8B").budget
    # 59.96 GiB = 59.96 · 1,073,741,824 = 64,381,559,767.04 B → 64,381,559,767 (± half a hundredth of a GiB:
    # the log's rounding; the 30,697 blocks' 64,376,274,944 B lie within)
    assert b.source.startswith("the extensible KV cache's size after warmup")
    assert b.bytes == 64_381_559_767 and b.low <= 64_376_274_944 <= b.high


def test_persistent_states_are_used_memory_not_a_transient():
    """The extensible sizing (0.34.0 extensible_kv_cache.py: vLLM measures what it uses after warm-up, and keeps a
    reserve for the transient peak with a margin of 0.75 of it): the part of the activation that stays allocated
    (the V2 runner's per-request states) is used memory, so it costs its own bytes, not 1.75 of them. By hand, an
    80 GiB card at utilization 1.0, no start-up memory, weights 20 GiB, activation 3 GiB of which 1 GiB persistent,
    non-torch 0.5 GiB, graphs 1 GiB (estimated and resident):
        used      = 20 + 0.5 + 1 (persistent) + 1 (graphs) = 22.5 GiB
        transient = 3 − 1 + 1 = 3 GiB; margin = max(floor, 0.75 · 3) = 2.25 GiB
        measured  = min(80 − 22.5, 80 − 0 − 22.5 − 2.25) − 3 = 52.25 GiB
    against 51.5 GiB with the 1 GiB counted as a transient (used 21.5, transient 4, margin 3)."""
    from kvplan.budget.sizing import EXTENSIBLE, stage_kv_cache_bytes
    from kvplan.units import GiB

    args = dict(total=80 * GiB, utilization=1.0, weights=20 * GiB, activation=3 * GiB, non_torch=GiB // 2,
                cudagraph=GiB, startup=0, margin_floor=0)
    with_states = stage_kv_cache_bytes(EXTENSIBLE, persistent=GiB, **args)
    assert with_states["measured_kv_cache_memory_bytes"] == round(52.25 * GiB)
    assert stage_kv_cache_bytes(EXTENSIBLE, **args)["measured_kv_cache_memory_bytes"] == round(51.5 * GiB)
