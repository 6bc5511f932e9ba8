docker run --gpus all vllm/vllm-openai:v0.10.1 python3 -m vllm.entrypoints.api_server --model Qwen/Qwen2.5-7B
