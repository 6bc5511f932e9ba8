export VLLM_USE_V1=1 \
# export VLLM_ATTENTION_BACKEND=FLASHINFER \
vllm serve Qwen/Qwen3-8B --max-model-len 4096
