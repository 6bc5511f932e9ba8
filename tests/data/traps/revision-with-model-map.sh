vllm serve /models/qwen3-8b --revision 0123456789abcdef0123456789abcdef01234567 --max-model-len 4096
