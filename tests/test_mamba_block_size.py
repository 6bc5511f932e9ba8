"""``--mamba-block-size`` (vLLM's CacheConfig.mamba_block_size, a flag since 0.11.2): declared once in the option
table (``Option.part``) and read by the engine's config check (``prechecks.check_mamba_block_size``) and, in the
releases with ``mamba_cache_mode='all'``, by the Mamba alignment (``hybrid.align_hybrid_mamba``)."""

from __future__ import annotations

import kvplan

NEMOTRON_H = "nvidia/Nemotron-H-56B-Base-8K"  # Mamba2 hybrid: 'all' mode applies (GDN models take 'align' only)
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Thinking"
REFUSAL = "--mamba-block-size can only be set with --enable-prefix-caching"  # config/vllm.py 0.34.0 line 3592


def test_refused_without_prefix_caching():
    # VllmConfig.validate_mamba_block_size (config/vllm.py 0.34.0 lines 3582-3594): given, not max_model_len,
    # prefix caching off -> ValueError in a model validator (pydantic's ValidationError)
    r = kvplan.simulate(QWEN3_NEXT, kv_cache_memory="40GiB", policy="vllm==0.34.0", mamba_block_size=256,
                        enable_prefix_caching=False)
    o = r["outcome"]
    assert (o["starts"], o["stage"], o["error_type"], o["error"]) == (
        False, "config.mamba_block_size", "ValidationError", REFUSAL)


def test_the_config_length_is_exempt_and_the_hybrid_default_is_prefix_caching_on():
    # == the config's max_model_len: not "set" (line 3588); a hybrid model's default is prefix caching on from
    # 0.28.0 (Era.hybrid_prefix_caching_default; ModelConfig.is_prefix_caching_supported, config/model.py 2321)
    assert kvplan.simulate(QWEN3_NEXT, kv_cache_memory="40GiB", policy="vllm==0.34.0", max_model_len=32768,
                           mamba_block_size=32768, enable_prefix_caching=False)["outcome"]["starts"]
    plain = kvplan.simulate(QWEN3_NEXT, kv_cache_memory="40GiB", policy="vllm==0.34.0", max_model_len=32768)
    given = kvplan.simulate(QWEN3_NEXT, kv_cache_memory="40GiB", policy="vllm==0.34.0", max_model_len=32768,
                            mamba_block_size=256)
    assert given["outcome"]["starts"]
    # align mode sets mamba_block_size to the block size (platforms/interface.py 0.34.0 line 1127): no change
    assert given["mamba_alignment"] == plain["mamba_alignment"]
    assert given["memory"]["num_blocks"] == plain["memory"]["num_blocks"]


def test_all_mode_aligns_the_attention_block_to_it():
    # 0.31.0 platforms/interface.py lines 942-975, mamba_cache_mode 'all': base = the user's mamba_block_size,
    # else the model's mamba chunk size (Nemotron-H: 128); chunk = lcm(base, kernel alignment 16);
    # attention block = chunk * cdiv(cdiv(mamba page, attention bytes per token), chunk), where
    # cdiv(16,900,096, 4,096) = 4,126 tokens: default 128 * cdiv(4126, 128) = 128 * 33 = 4,224;
    # with 1024: 1024 * cdiv(4126, 1024) = 1024 * 5 = 5,120
    kw = dict(kv_cache_memory="40GiB", policy="vllm==0.31.0", enable_prefix_caching=True, mamba_cache_mode="all",
              max_model_len=8192)
    default = kvplan.simulate(NEMOTRON_H, **kw)["mamba_alignment"]
    given = kvplan.simulate(NEMOTRON_H, mamba_block_size=1024, **kw)
    assert (default["attention_bytes_per_token"], default["mamba_page_bytes"]) == (4096, 16_900_096)
    assert (default["attention_block_size"], given["mamba_alignment"]["attention_block_size"]) == (4224, 5120)
    # the page grows with the block: 5,120 tokens * 4,096 bytes
    assert given["mamba_alignment"]["attention_page_bytes"] == 5120 * 4096


def test_a_serve_line_applies_it():
    r = kvplan.vllm_serve(line=f"vllm serve {QWEN3_NEXT} --mamba-block-size 256 --no-enable-prefix-caching "
                               "--kv-cache-memory-bytes 40GiB", policy="vllm==0.34.0")
    assert (r["outcome"]["stage"], r["outcome"]["error"]) == ("config.mamba_block_size", REFUSAL)
