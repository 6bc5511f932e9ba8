"""GPU presets and the KV budget vLLM derives from a card (kvplan.hardware)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered

app = ensure_registered()
from kvplan.engines.vllm import get_era
from kvplan.errors import OptionError
from kvplan.hardware import (
    GPU_PRESETS,
    default_gpu_memory_utilization,
    estimate_cudagraph_bytes,
    get_gpu,
    kv_budget,
)
from kvplan.model import ServingOptions, build_model_layout
from kvplan.units import GiB, MiB

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
LATEST, OLD = get_era("vllm-latest"), get_era("vllm-1.5")


def test_required_presets_with_sources():
    required = {"H100-80GB", "H100-NVL-94GB", "H200-141GB", "B200-180GB", "A100-40GB", "A100-80GB", "L40S-48GB",
                "L4-24GB", "A10G-24GB", "RTX-4090-24GB", "MI300X-192GB"}
    assert required <= set(GPU_PRESETS)
    for p in GPU_PRESETS.values():
        assert p.basis in ("cuda", "nvidia-smi") and p.source and p.memory_bytes > 20 * GiB
    # H100 80GB: CUDA reports 81089 MiB = 79.19 GiB (not the nominal 80 GB).
    assert GPU_PRESETS["H100-80GB"].memory_bytes == 81089 * MiB
    assert round(GPU_PRESETS["H100-80GB"].memory_gib, 2) == 79.19


@pytest.mark.parametrize("alias, name", [("h100", "H100-80GB"), ("H200", "H200-141GB"), ("mi300x", "MI300X-192GB"),
                                         ("a100-40gb", "A100-40GB"), ("RTX 4090", "RTX-4090-24GB")])
def test_aliases(alias, name):
    assert get_gpu(alias).name == name


def test_unknown_gpu_lists_presets():
    with pytest.raises(OptionError, match="H100-80GB.*--gpu-memory"):
        get_gpu("V100")


def test_default_utilization_by_era():
    assert default_gpu_memory_utilization(LATEST) == 0.92
    assert default_gpu_memory_utilization(OLD) == default_gpu_memory_utilization(get_era("vllm-min")) == 0.9


def test_cudagraph_reserve_only_where_vllm_subtracts_it():
    assert estimate_cudagraph_bytes(OLD, 32) == 0
    assert estimate_cudagraph_bytes(LATEST, 32) == 256 * MiB + 32 * 8 * MiB


@pytest.fixture(scope="module")
def llama():
    return build_model_layout("meta-llama/Meta-Llama-3.1-8B")


def test_budget_is_the_vllm_formula(llama):
    b = kv_budget(llama, LATEST, gpu="H100-80GB")
    total = 81089 * MiB
    assert b["gpu_memory_bytes"] == total and b["gpu_memory_utilization"] == 0.92
    assert b["requested_memory_bytes"] == int(total * 0.92)
    assert b["kv_cache_memory_bytes"] == (b["requested_memory_bytes"] - b["weights_bytes"] - b["activation_peak_bytes"]
                                          - b["non_torch_bytes"] - b["cudagraph_bytes"])
    assert b["estimated"] is True
    assert round(b["weights_bytes"] / GiB, 2) == 14.96
    # activation: max(8192·(4·4096 + 3·14336)·2, 1024·128256·4·2) + 256 MiB (sampler pass wins)
    assert b["activation_peak_bytes"] == max(8192 * (4 * 4096 + 3 * 14336) * 2, 1024 * 128256 * 8) + 256 * MiB
    assert b["non_torch_bytes"] == 256 * MiB and b["cudagraph_bytes"] == 256 * MiB + 32 * 8 * MiB
    assert all(isinstance(v, int) for k, v in b.items() if k.endswith("_bytes"))


def test_overrides_replace_estimates(llama):
    b = kv_budget(llama, OLD, gpu_memory_gib=80, gpu_memory_utilization=0.5,
                  overrides={"weights_memory": "10GiB", "activation_memory": 2 * GiB, "non_torch_memory": "0",
                             "cudagraph_memory": "1.5GiB"})
    assert b["gpu_memory_bytes"] == 80 * GiB and b["gpu"] is None
    assert b["kv_cache_memory_bytes"] == 40 * GiB - 10 * GiB - 2 * GiB - 0 - int(1.5 * GiB)
    assert (b["weights_source"], b["activation_source"], b["non_torch_source"], b["cudagraph_source"]) == \
        ("override",) * 4
    assert b["weights"] is None  # not counted when overridden


def test_bad_override_is_one_line(llama):
    with pytest.raises(OptionError, match="--activation-memory"):
        kv_budget(llama, LATEST, gpu="H100", overrides={"activation_memory": "lots"})


def test_tp_splits_weights_and_adds_nccl(llama):
    tp2 = build_model_layout("meta-llama/Meta-Llama-3.1-8B", None, ServingOptions(tensor_parallel_size=2))
    b1 = kv_budget(llama, LATEST, gpu="H100")
    b2 = kv_budget(tp2, LATEST, gpu="H100", tensor_parallel_size=2)
    assert round(b2["weights_bytes"] / GiB, 2) == 7.48
    assert b2["non_torch_bytes"] == 768 * MiB and b1["non_torch_bytes"] == 256 * MiB


def test_pipeline_budget_is_the_tightest_stage():
    layout = build_model_layout("meta-llama/Meta-Llama-3.1-8B", None, ServingOptions(pipeline_parallel_size=2))
    b = kv_budget(layout, LATEST, gpu="L40S")
    assert len(b["stages"]) == 2
    assert b["kv_cache_memory_bytes"] == min(s["kv_cache_memory_bytes"] for s in b["stages"])
    assert any("pipeline parallel" in w for w in b["warnings"])


def test_model_too_big_gives_a_negative_budget_and_says_so():
    layout = build_model_layout("Qwen/Qwen3-32B")
    b = kv_budget(layout, LATEST, gpu="L4")
    assert b["kv_cache_memory_bytes"] < 0 and any("no memory left" in w for w in b["warnings"])


# --- through the CLI ------------------------------------------------------------------------


def _json(*args):
    r = runner.invoke(app, [*args, "--format", "json"])
    return r, json.loads(r.stdout)


def test_simulate_with_gpu_marks_the_budget_estimated():
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB", "-tp", "2")
    assert r.exit_code == 0
    b = d["budget"]
    assert b["estimated"] is True and b["tensor_parallel_size"] == 2
    assert d["memory"]["available_bytes"] == b["kv_cache_memory_bytes"]


def test_simulate_with_kv_cache_memory_has_no_estimate():
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory", "40GiB")
    assert r.exit_code == 0 and "budget" not in d


def test_simulate_override_flags():
    r, d = _json("simulate", "meta-llama/Meta-Llama-3.1-8B", "--gpu-memory", "80", "--gpu-memory-utilization", "0.9",
                 "--weights-memory", "15GiB", "--activation-memory", "1GiB", "--non-torch-memory", "0",
                 "--cudagraph-memory", "0")
    assert r.exit_code == 0
    assert d["memory"]["available_bytes"] == int(80 * GiB * 0.9) - 16 * GiB


def test_simulate_gpu_too_small_fails_at_start():
    r, d = _json("simulate", "Qwen/Qwen3-32B", "--gpu", "L4")
    assert r.exit_code == 3 and d["outcome"]["starts"] is False
    assert d["outcome"]["error"].startswith("No available memory for the cache blocks")


def test_budget_path_does_not_import_torch():
    code = (
        "import sys, runpy\n"
        "sys.argv = ['kvplan', 'simulate', 'openai/gpt-oss-20b', '--gpu', 'H100', '--format', 'json']\n"
        "try:\n    runpy.run_module('kvplan', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('TORCH ' + str('torch' in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stderr.rsplit("TORCH ", 1)[-1].strip() == "False"


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
    from kvplan.hardware import vllm_batch_defaults

    assert vllm_batch_defaults(gpu, None) == expected


def test_simulate_uses_the_cards_batch_defaults():
    from kvplan.usecases.scenario import Scenario, run_scenario

    r = run_scenario(Scenario(model="openai/gpt-oss-20b", gpu="L4-24GB", max_model_len=8192))
    assert (r.plan.options.max_num_batched_tokens, r.plan.options.max_num_seqs) == (2048, 256)
    # gpt-oss sliding(128) on an L4: cdiv(min(127 + 2 · 2048, 8192), 16) + 1 = 265 blocks (0.33, async)
    assert r.plan.blocks_per_request[0] == 265
    r = run_scenario(Scenario(model="openai/gpt-oss-20b", gpu="L4-24GB", max_model_len=8192,
                              max_num_batched_tokens=4096))
    assert r.plan.options.max_num_batched_tokens == 4096


def test_the_large_card_tier_is_new():
    from kvplan.hardware import vllm_batch_defaults
    from kvplan.usecases.scenario import Scenario

    # 0.18's get_batch_defaults has no ≥160 GiB tier: a B200 gets the H100 values
    assert vllm_batch_defaults("B200-180GB", None, large_tier=False) == (8192, 1024)
    assert Scenario(model="x", gpu="B200-180GB", policy="vllm-1.5").batch_sizes() == (8192, 1024)
    assert Scenario(model="x", gpu="B200-180GB").batch_sizes() == (16384, 1024)
