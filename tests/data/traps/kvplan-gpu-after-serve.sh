vllm serve Qwen/Qwen3-8B --gpu H100-80GB --max-model-len 4096
