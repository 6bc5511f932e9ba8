"""Hybrid Mamba/GDN block sizes of the catalog models, as vLLM 0.33.0 chooses them on H100/H200
(reference §12.4, measured by building each model's layers in a real 0.33.0 config), and as the
0.17/0.18 rule (§7.6: prefix caching off, 16-token kernel alignment) gives them.

a1 = attention bytes per token per layer = kv_heads · (head + head_v) · 2 B (bf16);
mp = the Mamba/GDN state of one layer; block = k · cdiv(mp, k · a1).
"""

from __future__ import annotations

import pytest

from kvplan.usecases.scenario import Scenario, run_scenario


def block_size(model: str, policy: str, prefix_caching: bool | None = None) -> int:
    # 32768 tokens for every model: Nemotron-H-56B-Base-8K derives 8192 (max_position_embeddings), so
    # vLLM needs VLLM_ALLOW_LONG_MAX_MODEL_LEN to start with it (prechecks.check_max_model_len)
    r = run_scenario(Scenario(model=model, kv_cache_memory="40GiB", max_model_len=32768, policy=policy,
                              enable_prefix_caching=prefix_caching, env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}))
    return r.plan.mamba.attention_block_size


OFF_018 = {"nvidia/Nemotron-H-56B-Base-8K": 2080}


@pytest.mark.parametrize(
    "model, on, off",
    [
        # GDN: conv (3, 2·16·128 + 32·128) bf16 = 49152 B + ssm (32, 128, 128) bf16 = 1048576 B → mp = 1097728;
        # a1 = 2 · 512 · 2 = 2048 → mp / a1 = 536: 64 · cdiv(536, 64) = 576 on; 16 · cdiv(536, 16) = 544 off
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", 576, 544),
        # conv (3, 2·16·128 + 48·128 = 10240) bf16 = 61440 B + ssm (48, 128, 128) fp32 = 3145728 B;
        # a1 = 4 · 512 · 2 = 4096 → 3207168 / 4096 = 783: 64 · 13 = 832 on; 16 · 49 = 784 off
        ("Qwen/Qwen3.5-27B", 832, 784),
        # ssm fp32 (32, 128, 128) + conv (3, 8192) bf16 = 2146304 B; a1 = 2048 → 1048 → 1088 / 1056
        ("Qwen/Qwen3.5-35B-A3B", 1088, 1056),
        # 64 value heads: conv (3, 12288) bf16 = 73728 + ssm (64, 128, 128) fp32 = 4194304 → 4268032 / 2048
        # = 2084: 64 · 33 = 2112 on; 16 · 131 = 2096 off
        ("Qwen/Qwen3.5-397B-A17B", 2112, 2096),
        # Mamba2 (no GDN alignment), config without mamba_ssm_cache_dtype: 0.33 (float32 hook default):
        # conv (3, 16384 + 2·8·256) bf16 = 122880 + ssm (256, 64, 256) fp32 = 16777216 → 16900096 B;
        # a1 = 8 · 256 · 2 = 4096 → 4126 → 16 · cdiv(4126, 16) = 4128. 0.18 (vllm-1.5: float16 hook
        # default): ssm 8388608 → 8511488 B → 2078 → 16 · cdiv(2078, 16) = 2080
        ("nvidia/Nemotron-H-56B-Base-8K", 4128, 4128),
        # conv (3, 4096 + 2·8·128) bf16 = 36864 + ssm (64, 64, 128) fp32 = 2097152 → 2134016; a1 = 1024
        # → 2084 → 2096
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 2096, 2096),
    ],
)
def test_block_sizes_match_vllm_033_and_the_older_rule(model, on, off):
    # measured on 0.33.0 (DEFAULT_BLOCK_SIZE 16); 0.34.0's (64, so the kernel alignment is 64) are in
    # tests/golden/defaults/0.34.0.json and tests/test_block_size.py (Nemotron-H-56B 4160, Nano 2112)
    assert block_size(model, "vllm==0.33.0") == on  # 0.33 default: prefix caching on → align mode
    assert block_size(model, "vllm==0.33.0", prefix_caching=False) == off
    # 0.18: prefix caching off for hybrids; Nemotron-H's ssm state float16 there (2080, above)
    assert block_size(model, "vllm-1.5") == OFF_018.get(model, off)
