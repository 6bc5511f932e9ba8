docker run --gpus all vllm/vllm-openai:v0.6.3 --model Qwen/Qwen2.5-7B --tokenizer-pool-size 0
