"""The llm-d router export with a host tier (issues 36, 37): llm-d's tiered prefix-cache config
(guides/tiered-prefix-cache/cpu/manifests/inferencepool/values.yaml) with a GPU and a CPU prefix-cache scorer, each
with its own lruCapacityPerServer: vLLM's GPU pool and the host tier's tokens in blocks of the same size."""

from __future__ import annotations

import yaml

import kvplan
from kvplan.usecases.export import export

LINE = "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-offloading-size 64 --kv-offloading-backend {}"


def test_the_cpu_scorer_gets_the_host_tier_in_blocks():
    out = export(to="llmd-router", gpu="H100-80GB", line=LINE.format("native"))
    gpu = kvplan.vllm_serve(line=LINE.format("native"), gpu="H100-80GB")
    # Llama-3.1-8B, vLLM 0.34.0: a block of 64 tokens is 32 layers x 2 (K, V) x 8 heads x 128 x 2 B x 64 = 8,388,608 B;
    # --kv-offloading-size 64 (GiB) = 68,719,476,736 B holds 8,192 of them (524,288 tokens)
    assert 32 * 2 * 8 * 128 * 2 * 64 == gpu["host_tier"]["worker_kv_bytes_per_block"] == 8_388_608
    assert out["host_num_blocks"] == 64 * 2**30 // 8_388_608 == 8192
    doc = yaml.safe_load(out["text"])
    scorers = {p["name"]: p["parameters"] for p in doc["plugins"]}
    assert scorers["gpu-prefix-cache-scorer"] == {"autoTune": False, "blockSizeTokens": 64,
                                                  "lruCapacityPerServer": gpu["memory"]["num_blocks"]}
    assert scorers["cpu-prefix-cache-scorer"] == {"autoTune": False, "blockSizeTokens": 64, "lruCapacityPerServer": 8192}
    assert [p["pluginRef"] for p in doc["schedulingProfiles"][0]["plugins"]] == ["gpu-prefix-cache-scorer",
                                                                                 "cpu-prefix-cache-scorer"]
    assert f"{gpu['memory']['num_blocks'] + 8192:,} per server" in out["mapping"]


def test_a_tier_kvplan_does_not_size_leaves_the_gpu_pool_alone():
    out = export(to="llmd-router", gpu="H100-80GB", line=LINE.format("lmcache"))
    assert "host_num_blocks" not in out
    assert [p["type"] for p in yaml.safe_load(out["text"])["plugins"]] == ["prefix-cache-scorer"]
    assert any("a host tier kvplan does not size" in w for w in out["warnings"])


def test_without_offloading_the_export_is_unchanged():
    out = export("meta-llama/Llama-3.1-8B-Instruct", to="llmd-router", kv_cache_memory="40GiB", policy="vllm==0.34.0")
    assert out["arguments"] == {"autoTune": False, "blockSizeTokens": 64, "lruCapacityPerServer": 5120}
