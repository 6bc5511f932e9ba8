vllm serve Qwen/Qwen3-8B `
  --max-model-len 4096
