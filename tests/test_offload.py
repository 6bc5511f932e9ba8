"""KV offloading to host memory (issue 36): the connector the offloading flags install and the host tier
the native OffloadingConnector builds.

Every figure of the tier is also checked field by field against the release's own code by
tests/test_golden.py (``tests/golden/*__offload-*``: vLLM 0.33.0 and 0.34.0 ran their post-init,
``build_offloading_config`` and ``CPUOffloadingSpec`` on these cases). Here: the intake paths (flags on
a serve line, ``simulate`` options, ``--kv-transfer-config``) give the same tier, and the cases the
CPU-only golden runner cannot take (the single-copy MLA layout needs a CUDA host's shared region)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered

app = ensure_registered()
runner = CliRunner()
GiB = 1 << 30
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
# Llama-3.1-8B, bf16, vLLM 0.34.0's 64-token block: 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes x 64
LLAMA_BLOCK_BYTES = 32 * 2 * 8 * 128 * 2 * 64  # 8 MiB: one worker's bytes per block id
# DeepSeek-V3 (MLA, bf16): 61 layers x (512 + 64) x 2 bytes x 64 tokens
DSV3_BLOCK_BYTES = 61 * 576 * 2 * 64  # 4,497,408 = 1,098 host pages of 4 KiB


def run_json(*args: str) -> tuple[int, dict]:
    r = runner.invoke(app, [*args, "--format", "json"] if args[0] != "vllm" else
                      ["vllm", "--format", "json", *args[1:]])
    return r.exit_code, json.loads(r.stdout)


def test_serve_line_native_backend_h100():
    """The issue's line: 64 GiB of host memory in chunks of one 8 MiB block (one worker), 8,192 chunks;
    a request of 131,072 tokens takes 131,072 / 64 = 2,048 chunks, so the tier holds 8,192 x 131,072 //
    2,048 = 524,288 tokens (the same figures as the 0.34.0 golden llama-3.1-8b__offload-64__40gib: the
    tier does not depend on the GPU pool's size)."""
    code, d = run_json("vllm", "--gpu", "H100-80GB", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                       "--kv-offloading-size", "64", "--kv-offloading-backend", "native")
    assert code == 0 and d["outcome"]["starts"]
    h = d["host_tier"]
    assert (h["kv_connector"], h["kv_role"], h["backend"], h["hybrid_kv_cache_manager"], h["sized"]) == (
        "OffloadingConnector", "kv_both", "native", True, True)
    assert h["cpu_bytes_to_use"] == 64 * GiB
    assert h["worker_kv_bytes_per_block"] == LLAMA_BLOCK_BYTES
    assert (h["blocks_per_chunk"], h["world_size"], h["kv_bytes_per_chunk"]) == (1, 1, LLAMA_BLOCK_BYTES)
    assert h["num_chunks"] == 64 * GiB // LLAMA_BLOCK_BYTES == 8192
    assert h["cpu_kv_cache_size_bytes"] == 8192 * LLAMA_BLOCK_BYTES
    assert h["cpu_kv_cache_size_tokens"] == 8192 * 131072 // 2048 == 524288
    assert h["groups"] == [{"group_id": 0, "tokens_per_block": 64, "num_layers": 32,
                            "sliding_window_size_in_chunks": None}]
    flags = {r["flag"]: r for r in d["serve"]["flags"]}
    assert flags["--kv-offloading-size"]["applied_as"] == "kv_offloading_size"
    assert flags["--kv-offloading-backend"]["applied_as"] == "kv_offloading_backend"
    assert not any("extensible KV cache off" in w for w in d["warnings"])  # OffloadingConnector is in-process


def test_lmcache_backend_turns_the_hybrid_manager_off():
    """``lmcache`` installs LMCacheMPConnector with no size (the LMCache server holds the tier), and vLLM's
    class does not subclass SupportsHMA: gpt-oss-20b's sliding and full layers fall into one group."""
    code, d = run_json("vllm", "serve", "openai/gpt-oss-20b", "--kv-cache-memory-bytes", "40GiB",
                       "--kv-offloading-size", "64", "--kv-offloading-backend", "lmcache")
    assert code == 0
    h = d["host_tier"]
    assert (h["kv_connector"], h["backend"], h["hybrid_kv_cache_manager"], h["sized"]) == (
        "LMCacheMPConnector", "lmcache", False, False)
    assert "LMCache server" in h["note"]
    assert d["hybrid_kv_cache_manager"]["enabled"] is False
    assert len(d["groups"]) == 1


def test_transfer_config_json_gives_the_same_tier_as_the_flags():
    """``--kv-transfer-config`` naming the OffloadingConnector with its extra config is what the flags
    become in vLLM's post-init: the same tier, here chunked by 4 blocks (10.5 GiB: 336 chunks of 32 MiB)."""
    extra = {"cpu_bytes_to_use": int(10.5 * GiB), "blocks_per_chunk": 4}
    ktc = json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both", "kv_connector_extra_config": extra})
    _, by_json = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-transfer-config", ktc)
    h = by_json["host_tier"]
    assert (h["blocks_per_chunk"], h["kv_bytes_per_chunk"], h["num_chunks"]) == (4, 4 * LLAMA_BLOCK_BYTES, 336)
    # 131,072 tokens in chunks of 4 x 64 tokens: 512 chunks a request
    assert h["cpu_kv_cache_size_tokens"] == 336 * 131072 // 512 == 86016
    _, by_flags = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-offloading-size", "10.5")
    assert by_flags["host_tier"]["num_chunks"] == int(10.5 * GiB) // LLAMA_BLOCK_BYTES == 1344


def test_mla_under_tp_keeps_one_copy():
    """DeepSeek-V3 on TP 8: every rank holds the same latent (``max_tp_shards=1``, so ``kv_tp_replicas`` is
    8), and on a CUDA host the chunk keeps one copy (``build_offloading_config``'s replicated layout,
    ``CPUOffloadingSpec``'s ``num_copies = 1``): 100 GiB // 4,497,408 = 23,874 chunks, as on one GPU; with
    a copy per rank it would be 2,984. (The golden runner runs on a CPU host, where the shared region and so
    this layout are off: deepseek-v3__offload-100 records the TP 1 figures.)"""
    _, d = run_json("simulate", "deepseek-ai/DeepSeek-V3", "--kv-cache-memory", "40GiB", "-tp", "8",
                    "--kv-offloading-size", "100")
    h = d["host_tier"]
    assert h["worker_kv_bytes_per_block"] == DSV3_BLOCK_BYTES == 1098 * 4096
    assert (h["world_size"], h["kv_bytes_per_chunk"]) == (8, DSV3_BLOCK_BYTES)
    assert h["num_chunks"] == 100 * GiB // DSV3_BLOCK_BYTES == 23874
    assert "replicated" in h["note"]


def test_dense_under_tp_stores_every_rank():
    """Llama on TP 2: each rank's block is half (4 MiB), a chunk holds both ranks' (8 MiB), so the 64 GiB
    hold the same 8,192 chunks (golden llama-3.1-8b__offload-64__tp2__40gib)."""
    _, d = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "-tp", "2", "--kv-offloading-size", "64")
    h = d["host_tier"]
    assert (h["worker_kv_bytes_per_block"], h["world_size"], h["kv_bytes_per_chunk"], h["num_chunks"]) == (
        LLAMA_BLOCK_BYTES // 2, 2, LLAMA_BLOCK_BYTES, 8192)


def test_token_chunk_not_a_multiple_of_the_block_fails_as_vllm_does():
    code, d = run_json("simulate", "openai/gpt-oss-20b", "--kv-cache-memory", "40GiB", "--kv-offloading-size", "64",
                       "--kv-transfer-config", json.dumps({"kv_connector_extra_config": {"block_size": 100}}))
    assert code == 3
    assert d["outcome"]["stage"] == "kv_connector"
    assert d["outcome"]["error"].startswith("'block_size'=100 in kv_connector_extra_config must be a multiple of "
                                            "the GPU KV cache block size (64 tokens). Use 128 instead")


def test_0_20_sizes_blocks_and_the_pinned_allocator_rounds_them():
    """vLLM 0.20.0, Llama-3.1-8B on TP 2 with --kv-offloading-size 80 (the size vllm#48436 measured):
    the 16-token block is 32 layers x 2 x 8 KV heads x 128 x 2 bytes x 16 = 2 MiB of KV, 1 MiB on each of
    the 2 workers; CPUOffloadingSpec (0.20.0 vllm/v1/kv_offload/cpu/spec.py:26-45) keeps
    80 GiB // (1 MiB x 2 workers) = 40,960 blocks, unaligned. Each worker pins one cross-layer host tensor of
    40,960 x 1 MiB = 40 GiB, which the pinned caching allocator rounds up to 64 GiB: 128 GiB for the
    engine, 1.6x the request (#48436: ~67 GB RSS per worker for 80 GiB on TP 2)."""
    _, d = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-offloading-size", "80", "-tp", "2",
                    "--policy", "vllm==0.20.0")
    h = d["host_tier"]
    assert (h["kv_connector"], h["sized"], h["world_size"]) == ("OffloadingConnector", True, 2)
    assert h["worker_kv_bytes_per_block"] == 1 << 20 and h["kv_bytes_per_chunk"] == 2 << 20
    assert h["num_chunks"] == 40_960
    assert h["cpu_kv_cache_size_bytes"] == 80 * GiB
    assert h["host_bytes_allocated"] == 2 * 64 * GiB
    assert "cross-layer tensor of 42,949,672,960 bytes per worker" in h["note"]


def test_0_27_aligns_chunks_to_the_host_page_in_one_shared_region():
    """From 0.27.0 the chunk is rounded up to the 4 KiB page and lives in one mmap region (no power-of-two
    rounding): 80 GiB // 2 MiB = 40,960 chunks, 80 GiB allocated."""
    _, d = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-offloading-size", "80", "-tp", "2",
                    "--policy", "vllm==0.27.1")
    h = d["host_tier"]
    assert (h["num_chunks"], h["host_bytes_allocated"]) == (40_960, 80 * GiB)


def test_0_12_native_backend_fails_in_the_connector():
    """0.12.0's post-init puts num_cpu_blocks: 0 in the extra config (vllm/config/vllm.py:481-488), which
    CPUOffloadingSpec refuses (vllm/v1/kv_offload/cpu.py:24-28); golden llama-3.1-8b__offload-64__40gib__0.12.0."""
    code, d = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-offloading-size", "64",
                       "--kv-offloading-backend", "native", "--policy", "vllm==0.12.0")
    assert code == 3
    assert d["outcome"]["stage"] == "kv_connector"
    assert d["outcome"]["error"] == "num_cpu_blocks must be specified in kv_connector_extra_config"


def test_0_12_size_without_a_backend_installs_nothing():
    """0.12-0.13: kv_offloading_backend defaults to None, and the post-init returns at once."""
    _, d = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-offloading-size", "64",
                    "--policy", "vllm==0.12.0")
    assert d.get("host_tier") is None


def test_0_20_lmcache_backend_is_lmcache_s_own_buffer_per_rank():
    """0.14-0.22: --kv-offloading-backend lmcache installs LMCacheConnectorV1 with lmcache.max_local_cpu_size
    = 64 / (TP 2 x PP 1) = 32 GB per rank (0.20.0 vllm/config/vllm.py:672-705); each worker's LMCache engine
    pins int(32 x 1024**3) bytes: 64 GiB in all. A 256-token chunk of one worker is 256 x 64 KiB (Llama's
    128 KiB per token over 2 workers) = 16 MiB: 32 GiB holds 2,048 chunks, 524,288 tokens."""
    _, d = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-offloading-size", "64", "-tp", "2",
                    "--kv-offloading-backend", "lmcache", "--policy", "vllm==0.20.0")
    h = d["host_tier"]
    assert (h["kv_connector"], h["sized"]) == ("LMCacheConnectorV1", True)
    assert h["basis"] == "lmcache.max_local_cpu_size=32.0 in kv_connector_extra_config"
    assert h["host_bytes_allocated"] == 64 * GiB
    assert h["cpu_kv_cache_size_tokens"] == 524_288


def test_lmcache_variables_size_the_buffer_of_a_kv_transfer_config_connector():
    """LMCACHE_MAX_LOCAL_CPU_SIZE (GB, a float: LMCache's lmcache/v1/config.py) read from the environment;
    LMCache's default without it is 5.0 GB."""
    cfg = json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"})
    _, d = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-transfer-config", cfg,
                    "--env", "LMCACHE_MAX_LOCAL_CPU_SIZE=2.5")
    h = d["host_tier"]
    assert (h["basis"], h["host_bytes_allocated"]) == ("LMCACHE_MAX_LOCAL_CPU_SIZE=2.5", int(2.5 * GiB))
    # 2.5 GiB // (256 x 128 KiB = 32 MiB) = 80 chunks = 20,480 tokens
    assert h["cpu_kv_cache_size_tokens"] == 20_480
    _, d = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-transfer-config", cfg)
    assert d["host_tier"]["host_bytes_allocated"] == 5 * GiB
    r = runner.invoke(app, ["simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-transfer-config", cfg,
                            "--env", "LMCACHE_MAX_LOCAL_CPU_SIZE=lots"])
    assert r.exit_code != 0 and "LMCACHE_MAX_LOCAL_CPU_SIZE='lots': LMCache reads a number of GB" in r.output


def test_production_stack_cpu_offloading_buffer():
    """production-stack's tutorial values (tests/data/manifests/production-stack-values-14-vllm-v1.yaml):
    lmcacheConfig.cpuOffloadingBufferSize "20" -> LMCACHE_MAX_LOCAL_CPU_SIZE=20 (the chart's
    deployment-vllm-multi.yaml:336-343): 20 GiB for its one worker, 20 GiB // 32 MiB = 640 chunks of 256 tokens."""
    code, d = run_json("vllm", "--gpu", "H100-80GB", "--file", "tests/data/manifests/production-stack-values-14-vllm-v1.yaml")
    h = d["host_tier"]
    assert (h["kv_connector"], h["basis"], h["host_bytes_allocated"]) == (
        "LMCacheConnectorV1", "LMCACHE_MAX_LOCAL_CPU_SIZE=20", 20 * GiB)
    assert h["cpu_kv_cache_size_tokens"] == 163_840


def test_release_without_the_flags_refuses_them():
    r = runner.invoke(app, ["simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-offloading-size", "64",
                            "--policy", "vllm==0.11.0"])
    assert r.exit_code == 1
    assert "vllm==0.11.0 has no such flag (from 0.12.0)" in r.output


def test_simple_offload_variable_switches_the_connector():
    _, d = run_json("simulate", LLAMA, "--kv-cache-memory", "40GiB", "--kv-offloading-size", "8",
                    "--env", "VLLM_USE_SIMPLE_KV_OFFLOAD=1")
    h = d["host_tier"]
    assert h["kv_connector"] == "SimpleCPUOffloadConnector" and h["sized"] is False


def test_connector_table_read_from_the_wheels():
    """kv_connectors.json (scripts/golden/kv_connectors.py over every unpacked wheel): 0.33.0's connectors that
    subclass SupportsHMA are the ones read by hand in its factory registry and classes before the table
    existed, and 0.34.0's NixlConnector is the pull connector by alias."""
    from kvplan.engines.vllm.hybrid import registered_connectors
    from kvplan.engines.vllm.releases import era_of_release

    hma = {n for n, c in registered_connectors(era_of_release("0.33.0")).items() if c["supports_hma"]}
    assert hma == {"ExampleHiddenStatesConnector", "NixlConnector", "NixlPullConnector", "NixlPushConnector",
                   "HiSparseConnector", "MoRIIOConnector", "OffloadingConnector", "DecodeBenchConnector",
                   "MooncakeConnector", "MooncakeStoreConnector", "SimpleCPUOffloadConnector", "MultiConnector"}
    assert registered_connectors(era_of_release("0.34.0"))["LMCacheMPConnector"]["supports_hma"] is False
    assert "SimpleCPUOffloadConnector" not in registered_connectors(era_of_release("0.18.0"))
    assert "SimpleCPUOffloadConnector" in registered_connectors(era_of_release("0.19.0"))


def test_unknown_connector_is_vllms_value_error():
    code, d = run_json("simulate", LLAMA, "--kv-cache-memory", "10GiB", "--kv-transfer-config",
                       json.dumps({"kv_connector": "FooConnector", "kv_role": "kv_both"}))
    assert code == 3
    assert (d["outcome"]["stage"], d["outcome"]["error_type"], d["outcome"]["error"]) == (
        "config", "ValueError", "Unsupported connector type: FooConnector")
    # an out-of-tree class named with kv_connector_module_path is imported by vLLM, not looked up
    code, d = run_json("simulate", LLAMA, "--kv-cache-memory", "20GiB", "--kv-transfer-config",
                       json.dumps({"kv_connector": "FooConnector", "kv_role": "kv_both",
                                   "kv_connector_module_path": "foo.connector"}))
    assert code == 0


def test_check_gates_the_host_tier(tmp_path):
    """``max_host_memory`` / ``min_host_kv_tokens``: two DP engines each map 64 GiB (8,192 chunks of 8 MiB)
    and hold 524,288 tokens: 128 GiB and 1,048,576 tokens in all."""
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n"
                 "  - {name: a, model: meta-llama/Meta-Llama-3.1-8B, kv_cache_memory: 40GiB, kv_offloading_size: 64,\n"
                 "     data_parallel_size: 2, expect: {max_host_memory: 128GiB, min_host_kv_tokens: 1048576}}\n"
                 "  - {name: b, model: meta-llama/Meta-Llama-3.1-8B, kv_cache_memory: 40GiB, kv_offloading_size: 64,\n"
                 "     data_parallel_size: 2, expect: {max_host_memory: 100GiB}}\n"
                 "  - {name: c, model: meta-llama/Meta-Llama-3.1-8B, kv_cache_memory: 40GiB,\n"
                 "     expect: {min_host_kv_tokens: 1}}\n")
    r = runner.invoke(app, ["check", str(f), "--format", "json"])
    assert r.exit_code == 3
    by = {d["name"]: d for d in json.loads(r.stdout)["deployments"]}
    assert by["a"]["status"] == "pass"
    assert by["a"]["plan"]["host_memory_bytes"] == 2 * 8192 * LLAMA_BLOCK_BYTES == 128 * GiB
    assert by["a"]["plan"]["host_kv_tokens"] == 2 * 524288
    failed = {n: [e for e in d["expectations"] if not e["passed"]] for n, d in by.items()}
    assert by["b"]["status"] == "fail" and [e["key"] for e in failed["b"]] == ["max_host_memory"]
    assert by["c"]["status"] == "fail" and "no sized host tier" in failed["c"][0]["message"]


def test_check_counts_what_the_host_actually_allocates(tmp_path):
    """max_host_memory sees the pinned allocator's rounding (0.20.0: 80 GiB on TP 2 pins 2 x 64 GiB = 128 GiB)
    and LMCache's own buffer (LMCACHE_MAX_LOCAL_CPU_SIZE=20 on TP 2: 2 x 20 GiB)."""
    f = tmp_path / "d.yaml"
    lm = json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"})
    f.write_text("deployments:\n"
                 "  - {name: rounded, model: meta-llama/Meta-Llama-3.1-8B, kv_cache_memory: 40GiB, policy: vllm==0.20.0,\n"
                 "     kv_offloading_size: 80, tensor_parallel_size: 2, expect: {max_host_memory: 100GiB}}\n"
                 f"  - {{name: lmcache, model: meta-llama/Meta-Llama-3.1-8B, kv_cache_memory: 40GiB, kv_transfer_config: '{lm}',\n"
                 "     tensor_parallel_size: 2, env: {LMCACHE_MAX_LOCAL_CPU_SIZE: '20'}, expect: {max_host_memory: 40GiB}}\n")
    r = runner.invoke(app, ["check", str(f), "--format", "json"])
    by = {d["name"]: d for d in json.loads(r.stdout)["deployments"]}
    assert by["rounded"]["plan"]["host_memory_bytes"] == 128 * GiB and by["rounded"]["status"] == "fail"
    assert by["lmcache"]["plan"]["host_memory_bytes"] == 40 * GiB and by["lmcache"]["status"] == "pass"
