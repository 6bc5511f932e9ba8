"""What each ``vllm serve`` flag does to the KV cache, and what kvplan does with it.

Every flag of every generated list (``kvplan.engines.vllm.serve_flags``) falls in one class
(tests/test_serve.py checks that none is left out):

* ``applied``: it shapes the KV cache (or its budget) and maps onto a kvplan option
  (``OPTION_OF``) or a handler in ``kvplan.serve.reader`` (``HANDLED``);
* ``no effect``: ports, parsers, served names, logging, tokenizer, loader, kernels ...: accepted
  and listed as "no effect on the KV cache";
* ``estimate``: changes memory outside the KV cache that kvplan estimates (CUDA graphs, LoRA
  and multimodal buffers, redundant experts): accepted; the budget estimate does not read it,
  which the output says (exact when --kv-cache-memory-bytes fixes the budget);
* ``refused``: it would change the KV cache and kvplan does not model it: a one-line error
  naming the flag (``UNLESS`` lists the values that leave the cache as it is).

Facts from vLLM 0.34.0's config classes (vllm/config/*.py) unless a line says otherwise.
"""

from __future__ import annotations

APPLIED, NO_EFFECT, ESTIMATE, REFUSED = "applied", "no effect", "estimate", "refused"
NOT_MODELLED = "not modelled"  # accepted with a warning: simulated without it (the reader says how it differs)

# vLLM dest → kvplan option (same meaning; the value goes through the option's parser).
OPTION_OF: dict[str, str] = {
    "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size",
    "decode_context_parallel_size": "decode_context_parallel_size",
    "max_model_len": "max_model_len",
    "kv_cache_dtype": "kv_cache_dtype",
    "block_size": "block_size",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "enable_extensible_kv_cache": "enable_extensible_kv_cache",
    "kv_cache_memory_bytes": "kv_cache_memory",
    "num_gpu_blocks_override": "num_gpu_blocks_override",
    "mamba_cache_mode": "mamba_cache_mode",
    "max_num_seqs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "enable_prefix_caching": "enable_prefix_caching",
    "async_scheduling": "async_scheduling",
    "dtype": "dtype",
    "disable_hybrid_kv_cache_manager": "disable_hybrid_kv_cache_manager",
    "kv_transfer_config": "kv_transfer_config",
    "kv_offloading_size": "kv_offloading_size",
    "kv_offloading_backend": "kv_offloading_backend",
    "attention_backend": "attention_backend",
    "disable_sliding_window": "disable_sliding_window",
    "revision": "revision",
    "data_parallel_size": "data_parallel_size",
    "enable_expert_parallel": "enable_expert_parallel",
    "quantization": "quantization",
    "cpu_offload_gb": "cpu_offload_gb",
    "hf_overrides": "hf_overrides",
    "enable_chunked_prefill": "enable_chunked_prefill",
    # 0.10.1-0.11.1's SchedulerConfig.cuda_graph_sizes (0.11.0 config/scheduler.py:72), 0.11.2-0.12's deprecated
    # spelling of --cudagraph-capture-sizes (0.11.2 engine/arg_utils.py:1118-1122): kvplan's option holds either
    "cuda_graph_sizes": "cudagraph_capture_sizes",
}

# Applied through a handler of kvplan.serve.reader (one kvplan option from several flags, or a
# JSON value read key by key).
HANDLED: dict[str, str] = {
    "model": "the model (vLLM moves --model to the positional model_tag)",
    "model_tag": "the model",
    "config": "the YAML file's keys are read as flags",
    "speculative_config": "drafter, method and num_speculative_tokens",
    "spec_method": "speculative_config.method",
    "spec_model": "speculative_config.model",
    "spec_tokens": "speculative_config.num_speculative_tokens",
    "speculative_model": "speculative_config.model (releases before the JSON flag)",
    "num_speculative_tokens": "speculative_config.num_speculative_tokens (releases before the JSON flag)",
    "kv_events_config": "the hybrid KV-cache manager decision (kv_events)",
    "enforce_eager": "no CUDA graphs: the budget's CUDA-graph reserve is 0",
    "optimization_level": "the CUDA-graph mode (-O0 none, -O1 piecewise only, -O2/-O3 piecewise and full)",
    "attention_config": "attention_config.backend is --attention-backend",
    "eplb_config": "eplb_config.num_redundant_experts is --num-redundant-experts",
}

# Flags that would change the KV cache (or what kvplan can read of the model) and are not
# modelled. Value lists in UNLESS leave the cache as the default does.
REFUSED_WHY: dict[str, str] = {
    # vLLM 0.11.0 config/model.py l.103-104, 460-473: the deprecated --task turns a model into a pooling
    # model (embed, classify, reward, score), whose runner kvplan does not model
    "task": "runs the model as a pooling model (the deprecated --task of releases up to 0.11)",
    # 0.11.0 config/model.py: rope_scaling enters the derived max_model_len (get_rope / _get_and_verify_max_len)
    "rope_scaling": "changes the derived max_model_len (the --rope-scaling of releases up to 0.11)",
    # 0.11.0 config/scheduler.py: slots reserved per request beyond the tokens it holds
    "num_lookahead_slots": "reserves lookahead slots per request (releases up to 0.11)",
    "prefill_context_parallel_size": "prefill context parallelism shards each request's KV over ranks",
    "cp_kv_cache_interleave_size": "interleaves KV tokens over context-parallel ranks",
    "dcp_kv_cache_interleave_size": "interleaves KV tokens over decode-context-parallel ranks",
    "kv_cache_dtype_skip_layers": "keeps the named layers' KV in the model dtype",
    "mamba_cache_dtype": "changes the Mamba state's dtype (page size)",
    "mamba_ssm_cache_dtype": "changes the Mamba SSM state's dtype (page size)",
    "use_replayssm": "adds ReplaySSM history buffers to the Mamba state",
    "replayssm_buffer_len": "sizes the ReplaySSM history buffers",
    "enable_mamba_shared_prefix_checkpoint": "registers extra Mamba checkpoints",
    # 0.30.0 only (vllm/config/cache.py:187, v1/core/kv_cache_manager.py:189): an extra Mamba "align"
    # checkpoint at the shared-prefix junction
    "enable_mamba_fine_grained_prefix_cache": "registers extra Mamba checkpoints at the shared-prefix junction",
    "swa_bounded_replay": "keeps sliding-window KV out of prefix caching (DeepSeek-V4.1)",
    "kv_sharing_fast_prefill": "changes how KV-sharing layers prefill (YOCO models)",
    "hf_config_path": "reads the model config from another repository",
    "config_format": "reads the model config from a non-HF format (mistral params.json)",
    "model_impl": "another model implementation (Transformers backend) registers its own layers",
    "model_class_overrides": "another model class registers its own layers",
    "runner": "pooling runners allocate no decoder KV cache",
    "convert": "converts the model to a pooling model",
    "quantization_config": "overrides the checkpoint's quantization",
    "mm_encoder_only": "runs the vision encoder only (no decoder KV cache)",
    "diffusion_config": "diffusion language models",
    "engram_config": "n-gram embedding storage",
        "override_attention_dtype": "changes the attention dtype (up to 0.27)",
}
UNLESS: dict[str, tuple] = {
    "task": ("auto", "generate", "none"),  # generation, as without the flag
    "num_lookahead_slots": ("0",),
    "prefill_context_parallel_size": ("1",),
    "cp_kv_cache_interleave_size": ("1",),
    "dcp_kv_cache_interleave_size": ("1",),
    "kv_cache_dtype_skip_layers": ((),),
    "mamba_cache_dtype": ("auto",),
    "mamba_ssm_cache_dtype": ("auto",),
    "use_replayssm": (False,),
    "replayssm_buffer_len": ("16",),  # only read with --use-replayssm
    "enable_mamba_shared_prefix_checkpoint": (False,),
    "enable_mamba_fine_grained_prefix_cache": (False,),
    "swa_bounded_replay": (True,),
    "kv_sharing_fast_prefill": (False,),
    "config_format": ("auto", "hf"),
    "model_impl": ("auto", "vllm"),
    "runner": ("auto", "generate"),
    "convert": ("auto", "none"),
    "mm_encoder_only": (False,),
}

# Memory outside the KV cache that kvplan estimates; the estimate does not read these.
ESTIMATE_WHY: dict[str, str] = {
    # its cudagraph_capture_sizes, max_cudagraph_capture_size and cudagraph_mode keys are read (kvplan.serve.reader),
    # not the rest
    "compilation_config": "compilation and the FULL / FULL_DECODE_ONLY CUDA-graph modes",
    # LoRA flags of 0.11.0's list (LoRAConfig there); kvplan's slots are the default dtype and extra vocabulary
    "enable_lora_bias": "LoRA adapter weights",
    "lora_extra_vocab_size": "LoRA adapter weights",
    "fully_sharded_loras": "LoRA adapter sharding (kvplan's LoRA slots are the default half-sharded ones)",
    "lora_dtype": "LoRA adapter weights",
    "lora_target_modules": "LoRA adapter weights",
    "enable_moe_shared_loras": "LoRA adapter weights",
    "enable_tower_connector_lora": "LoRA adapter weights",
    "enable_mixed_moe_lora_format": "LoRA adapter weights",
    "specialize_active_lora": "LoRA kernels",
    "max_lora_cls_labels": "LoRA classification heads",
    "default_mm_loras": "LoRA adapters",
    "skip_mm_profiling": "the multimodal profiling run (activation peak)",
    "mm_ipc_gpu_memory_gb": "GPU memory for multimodal inputs",
    "mm_encoder_tp_mode": "vision-encoder weights per GPU",
    "offload_backend": "weight offloading (weights per GPU)",
    "offload_group_size": "weight offloading (weights per GPU)",
    "offload_num_in_group": "weight offloading (weights per GPU)",
    "offload_prefetch_step": "weight offloading (weights per GPU)",
    "offload_params": "weight offloading (weights per GPU)",
    "cpu_offload_params": "weight offloading (weights per GPU)",
    "enable_sleep_mode": "the CuMem allocator's pools",
    "enable_cumem_allocator": "the CuMem allocator's pools",
    "enable_dbo": "dual-batch overlap buffers (activation)",
    "ubatch_size": "micro-batch buffers (activation)",
    "enable_prompt_embeds": "prompt-embedding buffers (activation)",
    "sleep_mode_offload_cudagraph": "CUDA-graph memory in sleep mode",
}

# Groups whose every flag leaves the KV cache as it is (the API server, logging, metrics,
# structured outputs, kernel choice, weight loading).
NO_EFFECT_GROUPS = frozenset({
    "Frontend", "LoggingConfig", "ObservabilityConfig", "StructuredOutputsConfig", "KernelConfig", "LoadConfig",
    "MambaConfig",
})

# Flags of other groups with no effect on the KV cache (scheduling policy, topology, tokenizer,
# sampling, multimodal preprocessing, prefix-cache hashing, ...).
NO_EFFECT_DESTS = frozenset({
    # CacheConfig.swap_space (vLLM 0.11.0 config/cache.py l.51-52, 152, 212): CPU swap space per GPU, in
    # host memory; the GPU KV cache is sized without it (the flag is gone after 0.11)
    "swap_space",
    # other flags of 0.11.0's list without a KV-cache effect: multimodal preprocessing and encoder placement,
    # EPLB statistics and stepping, logits processors, the pooler, RoPE's base frequency (positions only)
    "disable_mm_preprocessor_cache", "enable_multimodal_encoder_data_parallel", "eplb_log_balancedness",
    "eplb_step_interval", "eplb_window_size", "logits_processor_pattern", "override_pooler_config", "rope_theta",
    # options of make_arg_parser
    "aggregate_engine_logging", "api_server_count", "disable_log_stats", "enable_log_requests",
    "fail_on_environ_validation", "grpc", "headless", "headless_client_handshake_address", "gdn_prefill_backend",
    "kda_decode_backend", "kda_prefill_backend", "shutdown_timeout", "disable_log_requests",
    # VllmConfig
    "additional_config", "aux_output_config", "ec_manager_config", "ec_transfer_config", "kernel_config",
    "profiler_config", "reasoning_config", "structured_outputs_config", "watchdog_config", "watermark_config",
    "weight_transfer_config",
    # ParallelConfig: topology, communication, placement
    "all2all_backend", "cpu_distributed_timeout_seconds", "data_parallel_address", "data_parallel_backend",
    "data_parallel_external_lb", "data_parallel_hybrid_lb", "data_parallel_multi_port_external_lb",
    "data_parallel_rank", "data_parallel_rpc_port", "data_parallel_size_local", "data_parallel_start_rank", "dbo_decode_token_threshold",
    "dbo_prefill_token_threshold", "dcp_comm_backend", "dcp_q_replicate", "device_ids", "disable_custom_all_reduce",
    "disable_nccl_for_dp_synchronization", "distributed_executor_backend", "distributed_timeout_seconds",
    "dp_sync_interval", "elastic_ep_max_dp_size", "enable_batch_sharded_sampling", "enable_elastic_ep",
    "enable_ep_weight_filter", "enable_fault_tolerance", "enable_hc_sp", "enable_shm_tensor_arena",
    "expert_placement_strategy", "fault_tolerance_config", "master_addr", "master_port",
    "max_parallel_loading_workers", "nnodes", "node_rank", "numa_bind", "numa_bind_cpus", "numa_bind_nodes",
    "ray_workers_use_nsight", "worker_cls", "worker_extension_cls",
    # ModelConfig: tokenizer, sampling, serving names, remote code, generation defaults
    "allow_deprecated_quantization", "allowed_local_media_path", "allowed_media_domains",
    "checkpoint_prepare_on_startup", "code_revision", "disable_cascade_attn", "enable_nccl_comm_suspend",
    "enable_return_routed_experts", "enable_trace_replay", "generation_config", "hf_token", "io_processor_plugin",
    "logits_processors", "logprobs_mode", "max_logprobs", "override_generation_config", "pooler_config",
    "renderer_num_workers", "return_sampling_mask", "seed", "served_model_name", "skip_tokenizer_init",
    "sleep_mode_backend", "sleep_preserve_parameter_names", "tokenizer", "tokenizer_mode", "tokenizer_revision",
    "trust_remote_code", "use_fp64_gumbel",
    # SchedulerConfig: admission and ordering, not the cache's shape
    "cache_aware_admission_threshold", "cache_aware_admission_window", "disable_chunked_mm_input",
    "long_prefill_token_threshold", "long_prefill_token_threshold_adaptive", "max_num_active_seqs",
    "max_num_inflight_kv_loads", "max_num_queued_reqs", "max_num_queued_tokens", "max_num_scheduled_tokens",
    "prefill_schedule_interval", "scheduler_cls", "scheduler_reserve_full_isl", "scheduling_policy",
    "stream_interval", "watermark", "max_long_partial_prefills", "max_num_partial_prefills",
    # CacheConfig: prefix-cache hashing and retention
    "prefix_cache_retention_interval", "prefix_caching_hash_algo", "prefix_match_unit",
    "calculate_kv_scales",  # fp8 scales computed at run time; the cache's dtype and shape stay
    # MultiModalConfig: preprocessing on CPU, caches in host memory, encoder attention kernels
    "enable_mm_embeds", "interleave_mm_strings", "media_io_kwargs", "mm_device_do_normalize",
    "mm_encoder_attn_backend", "mm_encoder_attn_dtype", "mm_encoder_fp8_scale_path",
    "mm_encoder_fp8_scale_save_margin", "mm_encoder_fp8_scale_save_path", "mm_hasher_algorithm",
    "mm_processor_cache_gb", "mm_processor_cache_type", "mm_processor_device", "mm_processor_kwargs",
    "mm_shm_cache_max_object_size_mb", "mm_tensor_ipc", "video_pruning_method", "video_pruning_rate",
})


def option_of(dest: str) -> str | None:
    """The kvplan option a ``vllm serve`` flag sets: ``OPTION_OF``'s, or an option of the table declared with its
    deployment part (``Option.part``) under vLLM's own name."""
    from kvplan.options import OPTIONS

    if dest in OPTION_OF:
        return OPTION_OF[dest]
    o = OPTIONS.get(dest)
    return dest if o is not None and o.part is not None and o.vllm and o.scenario else None


def effect_of(dest: str, group: str | None) -> str | None:
    """The class of a flag (None: not classified; the reader refuses it as unknown)."""
    if option_of(dest) is not None or dest in HANDLED:
        return APPLIED
    if dest in REFUSED_WHY:
        return REFUSED
    if dest in ESTIMATE_WHY:
        return ESTIMATE
    if dest in NO_EFFECT_DESTS or group in NO_EFFECT_GROUPS:
        return NO_EFFECT
    return None


def is_default(dest: str, value) -> bool:
    """Whether a refused flag's value is one that leaves the KV cache as the default does."""
    allowed = UNLESS.get(dest)
    if allowed is None:
        return False
    if isinstance(value, list):
        return tuple(value) in allowed or (not value and () in allowed)
    if isinstance(value, bool):
        return value in allowed
    return str(value).strip().lower() in allowed
