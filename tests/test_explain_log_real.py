"""`kvplan explain-log` on real start-up logs from public GitHub issues (tests/logs/INDEX.md has
each log's URL and what it shows). Each test asserts every KV figure the log shows, recovered
exactly (the numbers are the log's own text), and the cross-check verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

import kvplan

LOGS = Path(__file__).parent / "logs"
NO_MODEL = "no model: recovered facts only"
NOT_IN_CATALOG = "model not in catalog: recovered facts only"

EAGLE_COMMAND = {"form": "vllm serve", "env": {}, "argv": [
    "openai/gpt-oss-120b", "--speculative-config",
    '{"method": "eagle3", "model": "nvidia/gpt-oss-120b-Eagle3", "num_speculative_tokens": 1}']}

# file -> (explain_log options, expected facts [(kind, line, values)], verdict prefix)
CASES: dict[str, tuple[dict, list, str]] = {
    "01-vllm-27508-gpt-oss-120b-h100.log": ({}, [
        ("serve_command", 1, {"form": "vllm serve", "env": {}, "argv": [
            "openai/gpt-oss-120b", "--gpu-memory-utilization", "0.95", "--max-num-batched-tokens", "1024"]}),
        ("available_kv_memory", 2, {"gib": 1.71}),
        ("engine_failed", 3, {}),
    ], "agrees on the 1 figure"),
    "02-vllm-23278-gpt-oss-120b-negative-memory.log": ({}, [
        ("model_loading", 1, {"weights_gib": 65.9651, "seconds": 12.799889}),
        ("available_kv_memory", 2, {"gib": -2.14}),
        ("engine_failed", 3, {}),
    ], NO_MODEL),
    "03-vllm-33155-gpt-oss-120b-v0.14.1.log": ({}, [
        ("model_name", 1, {"model": "openai/gpt-oss-120b"}),
        ("attention_backend", 2, {"attention_backend": "FLASH_ATTN"}),
        ("model_loading", 4, {"weights_gib": 64.38, "seconds": 14.380607}),
    ], "layout only (no KV memory in the log); the log shows no figure to compare"),
    "04-lmcache-1739-qwen3-14b.log": ({}, [
        ("available_kv_memory", 1, {"gib": 6.51}),
        ("kv_cache_size", 2, {"kv_cache_size_tokens": 42656}),
        ("concurrency", 3, {"max_model_len": 32768, "max_concurrency": 1.3}),
    ], NO_MODEL),
    "05-vllm-34076-qwen3-coder-pp2-admission.log": ({}, [
        ("serve_command", 1, {"form": "vllm serve", "env": {
            "VLLM_PP_LAYER_PARTITION": "16,32", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0,1"},
            "argv": ["./Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", "--gpu-memory-utilization", "0.9",
                     "--served-model-name", "Qwen3-Coder-30B-A3B-Instruct-FP8", "--pipeline-parallel-size", "2",
                     "--enable-chunked-prefill", "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder"]}),
        ("admission_error", 2, {"max_model_len": 262144, "needed_gib": 24.0, "available_gib": 3.18,
                                "estimated_max_model_len": 34736}),
    ], NOT_IN_CATALOG),
    "06-intel-arc-b70-4-wrapped-admission.log": ({}, [
        # the error is wrapped mid-word ("KV cach" / "e is needed") and cut before the estimate
        ("admission_error", 10, {"max_model_len": 100000, "needed_gib": 4.26, "available_gib": 4.25}),
    ], NO_MODEL),
    "07-gpustack-4660-qwen3-8b-fp8-kv-transfer-v0.13.0.log": ({}, [
        ("hma_off", 1, {"reason": "kv_connector"}),
        ("engine_config", 2, {"version": "0.13.0", "model": "/var/lib/gpustack/cache/huggingface/Qwen/Qwen3-8B-FP8",
                              "speculative_config": None, "dtype": "bfloat16", "max_seq_len": 32768,
                              "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "data_parallel_size": 1,
                              "quantization": "fp8", "kv_cache_dtype": "auto", "enforce_eager": False}),
    ], NOT_IN_CATALOG),
    "08-vllm-41830-deepseek-v4-flash-kv-transfer.log": ({}, [
        ("hma_off", 6, {"reason": "kv_connector"}),
        ("hma_off_converted", 7, {"converted": True}),
        # wrapped onto an indented line and cut before the available memory
        ("admission_error", 8, {"max_model_len": 128000, "needed_gib": 38.87}),
    ], NO_MODEL),
    "09-vllm-44376-deepseek-v4-flash-admission-v0.22.log": ({}, [
        ("admission_error", 1, {"max_model_len": 30000, "needed_gib": 6.66, "available_gib": 5.44,
                                "estimated_max_model_len": 13528}),
    ], NO_MODEL),
    "10-club3090-612-qwen3.6-35b-a3b-v0.24.0.log": ({}, [
        ("available_kv_memory", 1, {"gib": 5.98}),
        ("kv_cache_size", 2, {"kv_cache_size_tokens": 567978}),
        ("concurrency", 3, {"max_model_len": 131072, "max_concurrency": 4.33}),
        ("non_default_args", 4, None),  # checked below
        ("engine_config", 5, {"version": "0.24.0"}),
    ], NOT_IN_CATALOG),
    "11-club3090-295-qwen3.6-27b-mtp-tp2.log": ({}, [
        ("kv_cache_size", 1, {"kv_cache_size_tokens": 620944}),
        ("concurrency", 2, {"max_model_len": 262144, "max_concurrency": 2.37}),
        ("non_default_args", 3, None),
    ], NOT_IN_CATALOG),
    "12-vllm-17469-qwen3-docker-v0.8.5.log": ({}, [
        ("kv_cache_size", 1, {"kv_cache_size_tokens": 198784}),
        ("concurrency", 2, {"max_model_len": 8192, "max_concurrency": 24.27}),
    ], NO_MODEL),
    # PR #29303 landed in 0.12.0: its "before" line is a 0.11 release's, its "after" line 0.12.0's
    "13-vllm-pr29303-gpt-oss-120b-eagle3-before.log": ({"policy": "vllm==0.11.2"}, [
        ("serve_command", 1, EAGLE_COMMAND),
        ("padding", 2, {"num_padding_layers": 17, "waste_pct": 89.47}),
    ], "layout only (no KV memory in the log): agrees on all 2 figures"),
    "14-vllm-pr29303-gpt-oss-120b-eagle3-after.log": ({"policy": "vllm==0.12.0"}, [
        ("serve_command", 1, EAGLE_COMMAND),
        ("padding", 2, {"num_padding_layers": 1, "waste_pct": 5.56}),
    ], "layout only (no KV memory in the log): agrees on all 2 figures"),
    "15-vllm-pr12569-llama-3.1-70b-w8a8-gpu-blocks.log": ({}, [
        ("serve_command", 1, {"form": "vllm serve", "env": {"VLLM_USE_V1": "1"}, "argv": [
            "neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8", "--max-model-len", "2048",
            "--gpu-memory-utilization", "0.98"]}),
        ("model_loading", 3, {"weights_gib": 67.7229}),
        ("num_gpu_blocks", 4, {"num_blocks": 1381}),
        ("concurrency", 5, {"max_model_len": 2048, "max_concurrency": 10.79}),
    ], NOT_IN_CATALOG),
    "16-vllm-10517-llama-3.1-8b-v0-tokens-error.log": ({}, [
        ("model_loading", 1, {"weights_gib": 14.9888}),
        ("memory_profile", 2, {"kv_cache_gib": 2.89, "gpu_memory_utilization": 0.9}),
        ("num_gpu_blocks", 3, {"num_blocks": 1478, "num_cpu_blocks": 2048}),
        ("concurrency", 4, {"max_model_len": 29000, "max_concurrency": 0.82}),
        ("admission_error_tokens", 5, {"max_model_len": 29000, "kv_cache_tokens": 23648}),
    ], NO_MODEL),
    "17-vllm-39734-gemma-4-31b-logo-v0.19.1rc1.log": ({}, [
        ("release", 3, {"version": "0.19.1rc1.dev301+g60995c05b"}),
        ("non_default_args", 7, {"args": {
            "model_tag": "google/gemma-4-31B-it", "default_chat_template_kwargs": {"enable_thinking": True},
            "enable_auto_tool_choice": True, "tool_call_parser": "gemma4", "model": "google/gemma-4-31B-it",
            "load_format": "fastsafetensors", "reasoning_parser": "gemma4"}, "partial": True}),
    ], NOT_IN_CATALOG),
    "18-vllm-21348-qwen3-235b-lmcache.log": ({}, [
        ("serve_command", 1, {"form": "vllm serve", "env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, "argv": [
            "/path/to/Qwen3-235B-A22B-FP8", "--tensor-parallel-size", "4", "--kv-transfer-config",
            '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}']}),
        ("available_kv_memory", 5, {"gib": 8.11}),
        ("kv_cache_size", 6, {"kv_cache_size_tokens": 178880}),
    ], NOT_IN_CATALOG),
    "19-vllm-50722-qwen3.5-35b-a3b-memory-account.log": ({}, [
        ("memory_account", 1, {"free_gib": 77.78, "total_gib": 79.33, "gpu_memory_utilization": 0.85,
                               "requested_gib": 67.43, "weights_gib": 16.92, "activation_gib": 5.66,
                               "non_torch_gib": 0.13, "cuda_graph_gib": 1.34,
                               "kv_cache_memory_bytes_to_fit": 46421742490}),
        ("cuda_graph_pool", 2, {"actual_gib": 1.34, "estimated_gib": 1.32}),
        ("memory_account", 3, None),
    ], NO_MODEL),
    "20-vllm-10517-llama-3.1-8b-v0-20k-ok.log": ({}, [
        # lines pasted without any prefix; "GPU blocks:" lost its "#" in the paste
        ("model_loading", 1, {"weights_gib": 14.9888}),
        ("memory_profile", 2, {"kv_cache_gib": 3.81, "gpu_memory_utilization": 0.9}),
        ("num_gpu_blocks", 3, {"num_blocks": 1952, "num_cpu_blocks": 2048}),
        ("concurrency", 4, {"max_model_len": 20000, "max_concurrency": 1.56}),
    ], NO_MODEL),
    "21-vllm-pr13596-gpu-blocks-before.log": ({}, [
        ("num_gpu_blocks", 1, {"num_blocks": 127626}),
        ("concurrency", 2, {"max_model_len": 2048, "max_concurrency": 997.08}),
    ], NO_MODEL),
    "22-vllm-pr13596-kv-cache-tokens-after.log": ({}, [
        ("kv_cache_size", 1, {"kv_cache_size_tokens": 2042016}),
        ("concurrency", 2, {"max_model_len": 2048, "max_concurrency": 997.08}),
    ], NO_MODEL),
    "23-vllm-42510-llama-3.1-8b-v0.14.1-wrapped-config.log": ({}, [
        ("async_scheduling", 1, {"async_scheduling": True}),
        ("engine_config", 3, {"version": "0.14.1",
                              "model": "/root/.cache/modelscope/hub/models/LLM-Research/Meta-Llama-3___1-8B-Instruct",
                              "speculative_config": None, "dtype": "bfloat16", "max_seq_len": 131072,
                              "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "data_parallel_size": 1,
                              "quantization": None, "enforce_eager": False, "kv_cache_dtype": "auto"}),
    ], NOT_IN_CATALOG),
    "24-vllm-6746-llama-3.1-405b-fp8-v0-workers.log": ({}, [
        *(("model_name", n, {"model": "/models/Meta-Llama-3.1-405B-Instruct-FP8"}) for n in range(1, 7)),
        *(("model_loading", n, {"weights_gib": 57.752}) for n in range(7, 11)),
    ], NOT_IN_CATALOG),
    # issue 26's collection (tests/logs/INDEX.md rows 25-48)
    "25-vllm-25650-pp4-workers-available-kv.log": ({}, [
        ("available_kv_memory", 1, {'gib': 18.22}),
        ("available_kv_memory", 2, {'gib': 18.02}),
        ("available_kv_memory", 3, {'gib': 18.25}),
    ], 'no model: recovered facts only'),
    "26-vllm-32105-pp-admission-models-s.log": ({}, [
        ("admission_error", 4, {'max_model_len': 202752,
             'needed_gib': 71.16,
             'available_gib': 28.57,
             'estimated_max_model_len': 81392}),
    ], 'no model: recovered facts only'),
    "27-vllm-32105-pp0-kv-memory-failed.log": ({}, [
        ("available_kv_memory", 3, {'gib': 9.05}),
        ("engine_failed", 4, {}),
    ], 'no model: recovered facts only'),
    "28-vllm-49878-gemma4-kv-cache-memory-bytes.log": ({}, [
        ("kv_cache_memory_reserved", 3, {'gib': 49.0}),
        ("engine_failed", 4, {}),
    ], 'no model: recovered facts only'),
    "29-vllm-pr57047-one-line-capacity-memory-account.log": ({}, [
        ("capacity", 1, {'kv_cache_size_tokens': 268560, 'max_model_len': 2048, 'max_concurrency': 131.13}),
        ("cuda_graph", 4, {'gib': 0.22, 'seconds': 6.0}),
        ("cuda_graph_pool", 5, {'actual_gib': 0.22, 'estimated_gib': 0.42}),
        ("memory_account", 6, {'free_gib': 46.99,
             'total_gib': 47.37,
             'gpu_memory_utilization': 0.85,
             'requested_gib': 40.27,
             'consumed_gib': 2.81,
             'activation_gib': 0.57,
             'cuda_graph_gib': 0.22,
             'kv_cache_memory_bytes_to_fit': 39207879578,
             'kv_cache_gib': 36.88}),
    ], 'no model: recovered facts only'),
    "30-vllm-pr3120-opt-125m-v0-mb.log": ({}, [
        ("engine_config", 1, {'model': 'facebook/opt-125m',
             'dtype': 'float16',
             'max_seq_len': 2048,
             'tensor_parallel_size': 1,
             'quantization': None,
             'kv_cache_dtype': 'auto',
             'enforce_eager': False}),
        ("model_loading", 3, {'weights_mib': 244.61, 'weights_gib': 0.238876953125}),
        ("num_gpu_blocks", 4, {'num_blocks': 76240, 'num_cpu_blocks': 7281}),
    ], 'model not in catalog: recovered facts only'),
    "31-vllm-13061-r1-distill-qwen-14b-tp2-tokens-error.log": ({}, [
        ("serve_command", 1, {'form': 'vllm serve',
             'argv': ['--trust-remote-code',
                      '--tensor_parallel_size',
                      '2',
                      '--gpu_memory_utilization=0.98',
                      '/root/autodl-tmp/deepseek-ai/DeepSeek-R1-Distill-Qwen-14B'],
             'env': {}}),
        ("admission_error_tokens", 2, {'max_model_len': 131072, 'kv_cache_tokens': 81536}),
        ("model_loading", 4, {'weights_gib': 13.9476}),
    ], 'model not in catalog: recovered facts only'),
    "32-pytorch-serve-3315-torchserve-prefix.log": ({}, [
        ("model_loading", 1, {'weights_gib': 7.5122}),
        ("model_loading", 2, {'weights_gib': 7.5122}),
        ("num_gpu_blocks", 3, {'num_blocks': 61913, 'num_cpu_blocks': 4096}),
    ], 'no model: recovered facts only'),
    "33-vllm-ascend-1007-ray-repeated.log": ({}, [
        ("model_loading", 1, {'weights_gib': 27.6953}),
        ("model_loading", 2, {'weights_gib': 27.6953}),
        ("model_loading", 3, {'weights_gib': 27.6953}),
        ("model_loading", 4, {'weights_gib': 27.6953}),
        ("model_loading", 5, {'weights_gib': 27.6953}),
    ], 'no model: recovered facts only'),
    "34-vllm-5248-deepseek-coder-tp2-v0-blocks.log": ({}, [
        ("num_gpu_blocks", 2, {'num_blocks': 507, 'num_cpu_blocks': 1024}),
    ], 'no model: recovered facts only'),
    "35-qwen-295-qwen1.5-7b-v0-tokens-error.log": ({}, [
        ("serve_command", 1, {'form': 'api_server',
             'argv': ['--served-model-name', 'Qwen1.5-7B-Chat', '--model', '/models--Qwen--Qwen1.5-7B-Chat'],
             'env': {}}),
        ("admission_error_tokens", 2, {'max_model_len': 32768, 'kv_cache_tokens': 7344}),
    ], 'model not in catalog: recovered facts only'),
    "36-gpustack-1800-qwen2.5-vl-v0-tokens-error.log": ({}, [
        ("admission_error_tokens", 5, {'max_model_len': 8192, 'kv_cache_tokens': 2400}),
    ], 'no model: recovered facts only'),
    "37-vllm-49011-qwen3.5-1m-padding.log": ({}, [
        ("padding", 1, {'num_padding_layers': 3, 'waste_pct': 6.25}),
        ("kv_cache_size", 2, {'kv_cache_size_tokens': 1823372}),
        ("concurrency", 3, {'max_model_len': 1048576, 'max_concurrency': 1.74}),
    ], 'no model: recovered facts only'),
    "38-spark-vllm-docker-396-quoted-admission.log": ({}, [
        ("available_kv_memory", 1, {'gib': 22.5}),
        ("admission_error", 2, {'max_model_len': 196608,
             'needed_gib': 23.25,
             'available_gib': 22.5,
             'estimated_max_model_len': 190272}),
    ], 'no model: recovered facts only'),
    "39-vllm-25350-fp8-kv-100k.log": ({}, [
        ("available_kv_memory", 3, {'gib': 10.55}),
        ("kv_cache_size", 4, {'kv_cache_size_tokens': 230528}),
        ("concurrency", 5, {'max_model_len': 100000, 'max_concurrency': 2.31}),
    ], 'no model: recovered facts only'),
    "40-lmcache-3326-cuda-graph-profiled.log": ({}, [
        ("available_kv_memory", 3, {'gib': 111.99}),
        ("cuda_graph_profiled", 4, {'gpu_memory_utilization': 0.9, 'without_cuda_graphs': 0.8981}),
        ("kv_cache_size", 5, {'kv_cache_size_tokens': 229344}),
        ("concurrency", 6, {'max_model_len': 16384, 'max_concurrency': 14.0}),
    ], 'no model: recovered facts only'),
    "41-xinference-4926-kv-memory-failed.log": ({}, [
        ("available_kv_memory", 1, {'gib': 6.94}),
        ("engine_failed", 2, {}),
    ], 'no model: recovered facts only'),
    "42-vllm-omni-469-negative-memory.log": ({}, [
        ("available_kv_memory", 2, {'gib': -2.77}),
        ("engine_failed", 3, {}),
    ], 'no model: recovered facts only'),
    "43-vllm-25350-fp8-kv-221k-admission.log": ({}, [
        ("admission_error", 3, {'max_model_len': 221000,
             'needed_gib': 10.12,
             'available_gib': 5.59,
             'estimated_max_model_len': 122080}),
    ], 'no model: recovered facts only'),
    "44-xinference-1115-v0-engine-config-no-version.log": ({}, [
        ("engine_config", 2, {'model': '/root/.xinference/cache/internlm-chat-20b-pytorch-20b',
             'dtype': 'bfloat16',
             'max_seq_len': 4096,
             'tensor_parallel_size': 1,
             'quantization': None,
             'kv_cache_dtype': 'auto',
             'enforce_eager': False}),
    ], 'model not in catalog: recovered facts only'),
    "45-vllm-gguf-plugin-101-quoted-compose-logo.log": ({}, [
        ("release", 3, {'version': '0.18.0'}),
        ("non_default_args", 7, {'args': {'model_tag': '/models/unsloth/Qwen3-8B-GGUF/Qwen3-8B-Q4_K_M.gguf',
                      'model': '/models/unsloth/Qwen3-8B-GGUF/Qwen3-8B-Q4_K_M.gguf',
                      'tokenizer': '/models/Qwen/Qwen3-8B',
                      'hf_config_path': '/models/Qwen/Qwen3-8B',
                      'max_model_len': 16384,
                      'served_model_name': ['Qwen/Qwen3-8B'],
                      'gpu_memory_utilization': 0.79,
                      'kv_cache_dtype': 'fp8',
                      'kv_offloading_size': 16.0,
                      'max_num_seqs': 16,
                      'disable_hybrid_kv_cache_manager': True,
                      'disable_log_stats': True}}),
        ("architecture", 8, {'architecture': 'Qwen3ForCausalLM'}),
        ("max_model_len", 9, {'max_model_len': 16384}),
    ], 'layout only (no KV memory in the log); the log shows no figure to compare'),
    "46-club3090-1087-tp2-consumed-memory-account.log": ({}, [
        ("memory_account", 1, {'free_gib': 30.27,
             'total_gib': 31.4,
             'gpu_memory_utilization': 0.92,
             'requested_gib': 28.88,
             'consumed_gib': 15.03,
             'activation_gib': 1.59,
             'cuda_graph_gib': 0.09,
             'kv_cache_memory_bytes_to_fit': 12917635953,
             'kv_cache_gib': 12.26}),
        ("cuda_graph_pool", 2, {'actual_gib': 0.09, 'estimated_gib': 0.13}),
        ("memory_account", 3, {'free_gib': 30.5,
             'total_gib': 31.4,
             'gpu_memory_utilization': 0.92,
             'requested_gib': 28.88,
             'consumed_gib': 15.05,
             'activation_gib': 1.59,
             'cuda_graph_gib': 0.09,
             'kv_cache_memory_bytes_to_fit': 12889979761,
             'kv_cache_gib': 12.24}),
    ], 'no model: recovered facts only'),
    "47-syv-ai-39-admission-cpu-backend-hint.log": ({}, [
        ("admission_error", 1, {'max_model_len': 65536,
             'needed_gib': 4.76,
             'available_gib': 1.56,
             'estimated_max_model_len': 15984}),
    ], 'no model: recovered facts only'),
    "48-club3090-1047-qwen3.8-27b-mamba-page.log": ({}, [
        ("model_loading", 1, {'weights_gib': 19.75, 'seconds': 6.356814}),
        ("hybrid_block_size", 2, {'block_size': 1568}),
        ("mamba_page_padding", 3, {'padding_pct': 0.13}),
    ], 'no model: recovered facts only'),
    "49-euroeval-1120-gpt-oss-120b-tp2-v0.10.1.1.log": ({}, [
        ("serve_command", 1, {'form': 'api_server', 'argv': [
            '--model', 'openai/gpt-oss-120b', '--host', '0.0.0.0', '--port', '8000', '--tensor-parallel-size', '2',
            '--gpu-memory-utilization', '0.9'], 'env': {}}),
        ("release", 8, {'version': '0.10.1.1'}),
        ("non_default_args", 9, {'args': {'host': '0.0.0.0', 'model': 'openai/gpt-oss-120b', 'tensor_parallel_size': 2}}),
        ("architecture", 11, {'architecture': 'GptOssForCausalLM'}),
        ("max_model_len", 14, {'max_model_len': 131072}),
    ], 'layout only (no KV memory in the log); the log shows no figure to compare'),
}


def test_every_indexed_log_is_tested():
    files = sorted(p.name for p in LOGS.glob("*.log"))
    index = (LOGS / "INDEX.md").read_text()
    assert files == sorted(CASES) and len(files) >= 12
    assert all(f"| {name} | https://github.com/" in index for name in files)


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_log(name):
    options, expected, verdict = CASES[name]
    r = kvplan.explain_log(str(LOGS / name), **options)
    got = [(f["kind"], f["line"], {k: v for k, v in f.items() if k not in ("kind", "line", "text")})
           for f in r["facts"]]
    assert [(k, line) for k, line, _ in got] == [(k, line) for k, line, _ in expected]
    for (kind, line, values), (_, _, want) in zip(got, expected):
        if want is not None:
            assert values == want, (kind, line)
    assert r["verdict"].startswith(verdict), r["verdict"]


def test_real_log_gpt_oss_120b_on_h100_rebuilt_and_fixed():
    """Issue 27508: the command and 1.71 GiB of KV memory. The log prints no version, but its two
    prefixed lines are 0.11.0's own sites ([gpu_worker.py:298] "Available KV cache memory",
    [core.py:708] "EngineCore failed to start", kvplan/logs/fingerprints.py), so the rebuild runs
    0.11.0's rules without --policy. gpt-oss-120b: 18 full + 18 sliding(128) layers, 8 KV heads x
    64, bf16: page 16 x 8 x (64 + 64) x 2 = 32,768 B, groups of 18, so a block id is 589,824 B. One
    131,072-token request: 8,192 full blocks + cdiv(127 + 1024, 16) + 1 = 73 sliding blocks (0.11
    keeps one batch of --max-num-batched-tokens 1024 in flight), 589,824 x 8,265 = 4,874,895,360 B
    = 4.54 GiB > 1.71 GiB: start-up fails, as the log shows; 4.54 GiB is the figure the thread's
    admission error states (issue #26 of this project; 0.34's two batches in flight give 4.58)."""
    r = kvplan.explain_log(str(LOGS / "01-vllm-27508-gpt-oss-120b-h100.log"))
    assert r["release"]["candidates"] == ["0.11.0"] and r["release"]["lines"] == [2, 3]
    assert r["release"]["release"] == "0.11.0 (from 2 lines' wording and 2 source sites)"
    assert r["rebuild"]["model"] == "openai/gpt-oss-120b" and r["rebuild"]["policy"] == "vllm==0.11.0"
    assert r["rebuild"]["options"]["max_num_batched_tokens"] == 1024
    assert not any(n.startswith("the release: not in the log") for n in r["rebuild"]["notes"])
    assert 589_824 * (8_192 + 73) == 4_874_895_360 and round(4_874_895_360 / (1 << 30), 2) == 4.54
    assert "(4.54 GiB KV cache is needed, which is larger than the available KV cache memory (1.71 GiB)" in \
        r["outcome"]["error"]
    assert r["figures"][0]["figure"] == "engine starts" and r["figures"][0]["logged"] is False
    assert r["verdict"] == "agrees on the 1 figure" and r["outcome"]["ok"] is True
    trap = next(t for t in r["traps"] if t["trap"] == "startup_failure")
    assert trap["fix"]["flag"] == r["outcome"]["fix"] and trap["fix"]["verified"] is True
    # under 0.34's rules: two batches in flight and block 64 (DEFAULT_BLOCK_SIZE, kept by FLASH_ATTN on an
    # H100), so a block id is 18 x 64 x 8 x 128 x 2 = 2,359,296 B; 131,072 / 64 = 2,048 full blocks and
    # cdiv(127 + 2 x 1024, 64) + 1 = 35 sliding blocks: 4.58 GiB
    r34 = kvplan.explain_log(str(LOGS / "01-vllm-27508-gpt-oss-120b-h100.log"), policy="vllm==0.34.0")
    assert r34["simulation"]["memory"]["needed_bytes"] == 2_359_296 * (2_048 + 35) == 4_914_413_568


def test_real_log_release_from_the_logo_is_read_as_its_release():
    r = kvplan.explain_log(str(LOGS / "17-vllm-39734-gemma-4-31b-logo-v0.19.1rc1.log"))
    assert r["recovered"]["release"] == "0.19.1rc1.dev301+g60995c05b"
    assert r["rebuild"]["policy"] == "vllm==0.19.1"
    assert "the release: 0.19.1rc1.dev301+g60995c05b is a development or pre-release build; kvplan reads it as " \
           "0.19.1's rules" in r["rebuild"]["notes"]


def test_real_log_hybrid_manager_off_is_named_from_the_log():
    r = kvplan.explain_log(str(LOGS / "07-gpustack-4660-qwen3-8b-fp8-kv-transfer-v0.13.0.log"))
    assert r["rebuild"]["policy"] == "vllm==0.13.0"
    trap = r["traps"][0]
    assert trap["trap"] == "hybrid_manager_off" and trap["reasons"] == ["a KV connector (--kv-transfer-config)"]
    assert trap["cost"] is None  # not re-simulated: the model is a local path kvplan cannot read


def test_real_log_negative_memory_is_said():
    r = kvplan.explain_log(str(LOGS / "02-vllm-23278-gpt-oss-120b-negative-memory.log"))
    assert r["rebuild"]["budget"] is None and r["outcome"]["starts"] is False
    assert "the available KV memory is -2.14 GiB (line 2)" in " ".join(r["rebuild"]["notes"])


def test_real_log_non_default_args_read_whole():
    r = kvplan.explain_log(str(LOGS / "11-club3090-295-qwen3.6-27b-mtp-tp2.log"))
    args = r["recovered"]["non_default_args"]
    assert args["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 3}
    assert (args["tensor_parallel_size"], args["kv_cache_dtype"], args["max_model_len"]) == (2, "fp8_e5m2", 262144)
    opts = r["rebuild"]["options"]
    assert (opts["speculative_method"], opts["num_speculative_tokens"], opts["tensor_parallel_size"]) == ("mtp", 3, 2)


def test_disagreement_exits_3_on_the_command_line():
    """PR #29303's "before" line under the default (0.34) rules: kvplan's one padding slot disagrees
    with the logged 17, so the command exits 3 (the library's outcome.ok is False)."""
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    res = CliRunner().invoke(ensure_registered(), ["explain-log", str(LOGS / "13-vllm-pr29303-gpt-oss-120b-eagle3-before.log")])
    assert res.exit_code == 3, res.stderr
    assert "disagrees on 2 of 2 figures" in res.stdout


def test_real_log_command_read_by_the_serve_reader():
    """The pasted commands go through kvplan.serve (the `vllm serve` reader): typed options, the
    drafter from --speculative-config, flags without a KV effect listed as not modelled."""
    r = kvplan.explain_log(str(LOGS / "14-vllm-pr29303-gpt-oss-120b-eagle3-after.log"), policy="vllm==0.12.0")
    assert r["rebuild"]["options"] == {"drafter": "nvidia/gpt-oss-120b-Eagle3", "speculative_method": "eagle3",
                                       "num_speculative_tokens": 1}
    r = kvplan.explain_log(str(LOGS / "05-vllm-34076-qwen3-coder-pp2-admission.log"))
    # the command's --enable-chunked-prefill is applied (kvplan.serve maps it onto enable_chunked_prefill)
    assert r["rebuild"]["options"] == {"gpu_memory_utilization": 0.9, "pipeline_parallel_size": 2,
                                       "enable_chunked_prefill": True}
    assert r["rebuild"]["ignored_args"] == ["served_model_name", "enable_auto_tool_choice", "tool_call_parser"]
