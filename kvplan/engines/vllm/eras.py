"""vLLM's behaviour, era by era: a registry of named, versioned policies.

Each era is the set of decisions that changed between vLLM releases (reference
§9 and §11). The numbers of an era were checked by running that release's own
functions (``scripts/golden``); ``releases`` lists the wheels checked.
"""

from __future__ import annotations

from kvplan.frozen import dataclass
from kvplan.engines.vllm.versions import VERSIONS, version_key
from kvplan.version import stands_for


@dataclass(frozen=True)
class Era:
    name: str
    description: str
    # Grouping threshold: group_size = max bucket when max < min · threshold.
    # None = before vLLM PR #29303: group size is always the smallest bucket.
    # Chain: None from 0.10.1; 1.25 from 0.12.0; 1.5 from 0.18.0.
    threshold: float | None
    # Admission check: "per_layer" (Σ layer reservations, before #29431),
    # "first_group" (#29431 to #36030), "summed".
    # Chain: 'per_layer' from 0.10.1; 'first_group' from 0.14.0; 'summed' from 0.19.0.
    admission: str
    # Capacity log: "blocks" = num_blocks // num_groups · min block_size,
    # "concurrency" = int(max_concurrency · max_model_len).
    # Chain: 'blocks' from 0.10.1; 'concurrency' from 0.20.1.
    kv_size_log: str
    # Sliding/chunked reservations use max_num_batched_tokens (False) or
    # max_concurrent_batches · max_num_batched_tokens (True).
    # Chain: False from 0.10.1; True from 0.26.0.
    in_flight_batches: bool
    # True: the null block is kept out of the admission check and auto-fit.
    # Chain: False from 0.10.1; True from 0.29.0.
    null_block_in_check: bool
    # Different page sizes: "none" (no unification, bare NotImplementedError),
    # "raise" when they do not divide, or "pad" the smaller ones.
    # Chain: 'none' from 0.10.1; 'raise' from 0.12.0; 'pad' from 0.24.0.
    page_mismatch: str
    # Prefix caching default for hybrid Mamba/GDN models (True: on, "align" mode).
    # Chain: False from 0.10.1; True from 0.28.0.
    hybrid_prefix_caching_default: bool
    # GDN (Qwen gated delta net) 64-token block alignment in "align" mode.
    # Chain: 0 from 0.10.1; 64 from 0.33.0.
    gdn_align_tokens: int
    # Message wording only, by the release that printed it (checked against the goldens):
    # "0.11" (admission error with 2-decimal GiB, no docs link; "All eagle layers …"),
    # "0.17" ("models's", docs link), "0.33" ("model's", CPU note, auto-fit lines naming
    # "KV cache memory", --enable-hybrid-kv-cache-manager). No behaviour keys on it.
    # Chain: '0.10' from 0.10.1; '0.13' from 0.13.0; '0.14' from 0.14.0; '0.15' from 0.15.0;
    #   '0.22' from 0.22.0; '0.23' from 0.23.0; '0.32' from 0.32.0; '0.33' from 0.33.0; '0.34' from 0.34.0.
    messages: str
    # KV-connector rule: "always" disables HMA, "supports_hma" (only connectors that support it keep it).
    # Chain: 'always' from 0.10.1; 'supports_hma' from 0.22.0.
    kv_transfer_rule: str
    # Whether sliding/chunked/cross specs carry their own head_size_v (PR #40045, 2026-04-24:
    # page = bs·h·(hk + hv)·b). Before it their page was 2·bs·h·hk·b, so MiMo-V2-Flash's
    # sliding layers (K 192, V 128) had a page that does not divide the full one (golden:
    # NotImplementedError on 0.17.1 and 0.18.0).
    # Chain: False from 0.10.1; True from 0.20.0.
    window_head_size_v: bool = False
    # Whether full-attention specs carry head_size_v (FullAttentionSpec.head_size_v, first in
    # the 0.14.0 wheel); before, a full layer cached V at the K head size too.
    # Chain: False from 0.10.1; True from 0.14.0.
    full_head_size_v: bool = True
    # 0.26+: a Mamba page smaller than the largest page is padded to it in page unification
    # (before, vLLM's bare AssertionError).
    # Chain: False from 0.10.1; True from 0.26.0.
    mamba_page_pad: bool = False
    # KV events (--kv-events-config) turned the hybrid manager off until PR #37688 (2026-04-12).
    # Chain: True from 0.10.1; False from 0.20.0.
    kv_events_disable_hma: bool = True
    # Align mode: Mamba2 and (Hopper, FlashInfer prefill) GDN layers export prefill
    # checkpoints and reserve one more block per request (read in 0.33.0's mamba_mixer2.py,
    # gdn/qwen_gdn_linear_attn.py and kv_cache_interface.MambaSpec.max_memory_usage_bytes).
    # Chain: False from 0.10.1; True from 0.29.0.
    mamba_prefill_checkpoints: bool = False
    # Which groups the admission check and auto-fit see: "worker" (each worker's projected
    # groups, 0.17+) or "global" (0.14-0.16: the global groups once, with min(available)).
    # Chain: 'worker' from 0.10.1; 'global' from 0.14.0; 'worker' from 0.17.0.
    admission_scope: str = "worker"
    # --max-model-len -1 (auto-fit, PR #29431): absent from 0.11.
    # Chain: False from 0.10.1; True from 0.14.0.
    auto_fit: bool = True
    # 0.11: a Mamba layer reserved cdiv(max_model_len, block_size) blocks in "none" mode
    # and no speculative blocks (MambaSpec.max_memory_usage_bytes of that release).
    # Chain: True from 0.10.1; False from 0.15.0.
    mamba_legacy_reservation: bool = False
    # How a worker's KV memory is allocated: "per_slot" (one tensor per group slot,
    # KVCacheTensor.shared_by) or "lbnhc" (one buffer, per-group records, and the
    # "Using LBNHC KV cache layout." line).
    # Chain: 'per_slot' from 0.10.1; 'lbnhc' from 0.29.0.
    kv_buffer_layout: str = "per_slot"
    # Block-outermost packing of mixed page sizes (``_get_packed_kv_cache_groups``, 0.34.0
    # v1/core/kv_cache_planning.py lines 958-1085), taken when a backend declares only block-outermost
    # layouts (DeepSeek-V4's indexer: BLHNC, BLNHC). Only 0.34.0 is checked against the wheel here.
    # Chain: False from 0.10.1; True from 0.34.0.
    packed_kv_groups: bool = False
    # The capacity log: "per_worker_both" (to 0.11.0: both lines with plain logger.info, once
    # per worker), "per_worker" (0.11.1: the concurrency line only), "two_lines" (info_once: size line + concurrency line), "one_line"
    # (update_kv_cache_capacity: both on one line).
    # Chain: 'per_worker_both' from 0.10.1; 'per_worker' from 0.11.1; 'two_lines' from 0.12.0;
    #   'one_line' from 0.28.0.
    capacity_log: str = "two_lines"
    # --num-gpu-blocks-override becomes the available memory before auto-fit and the
    # admission check (logged there), instead of replacing num_blocks at config time.
    # Chain: False from 0.10.1; True from 0.20.1.
    override_before_check: bool = False
    # Mamba kernel alignment: "fixed" (16, or 64 for MLA) or "at_least_block" (0.33: the
    # backend's smallest kernel block, at least the cache block size).
    # Chain: 'fixed' from 0.10.1; 'at_least_block' from 0.33.0.
    mamba_kernel_alignment: str = "fixed"
    # How --mamba-cache-mode is resolved against prefix caching (hybrid.resolve_mamba_mode):
    # "as_given", "reconcile" (model config reconciles it), "reconcile_align" (0.28), "align_default" (0.32) or "prefix_caching" (the flag has
    # no effect: prefix caching decides).
    # Chain: 'as_given' from 0.10.1; 'reconcile' from 0.15.0; 'reconcile_align' from 0.28.0;
    #   'align_default' from 0.32.0; 'prefix_caching' from 0.33.0.
    mamba_cache_mode_rule: str = "as_given"
    # vllm serve defaults: --gpu-memory-utilization, the >= 160 GiB batch tier of
    # get_batch_defaults (16384 tokens), and whether the profile counts CUDA-graph memory.
    # Chain: 0.9 from 0.10.1; 0.92 from 0.20.0.
    gpu_memory_utilization: float = 0.9
    # Chain: False from 0.10.1; True from 0.28.0.
    large_batch_tier: bool = False
    # Chain: False from 0.10.1; True from 0.20.0.
    cudagraph_memory_in_profile: bool = False
    # Whether the V2 model runner's profile_cudagraph_memory estimates the graphs (what cudagraph_memory_in_profile
    # subtracts): it returns 0 up to 0.28 ("It is TBD whether we keep this API or not": v1/worker/gpu/model_runner.py
    # 0.19.0 line 540, 0.22.1 620, 0.27.1 749, 0.28.0 843), so a V2 deployment's graphs are captured after the KV
    # cache is sized, in the 1 − utilization headroom, as before 0.20; from 0.29.0 it runs _profile_cudagraph_memory
    # (0.29.0 line 896, 0.33.0 line 1069), as the V1 runner's estimate does.
    # Chain: False from 0.10.1; True from 0.29.0.
    v2_runner_estimates_cudagraphs: bool = False
    # How a --gpu budget sizes the KV cache by default (CacheConfig.enable_extensible_kv_cache, 0.34.0:
    # on for CUDA/ROCm): False = from the profiling estimate (determine_available_memory); True = the
    # extensible KV cache, reserved from that estimate and committed from the memory measured after
    # warmup and CUDA-graph capture (v1/worker/extensible_kv_cache.py measure_kv_cache_bytes).
    # Chain: False from 0.10.1; True from 0.34.0.
    extensible_kv_cache: bool = False
    # --gpu-memory-utilization default with the extensible KV cache (resolved_gpu_memory_utilization:
    # 1.0 in 0.34.0); gpu_memory_utilization stays the default without it.
    # Chain: None from 0.10.1; 1.0 from 0.34.0.
    extensible_gpu_memory_utilization: float | None = None
    # Nemotron-H's Mamba2 ssm state when the config sets no mamba_ssm_cache_dtype:
    # "model" (<= 0.12: no config hook, the model dtype), "float16" (0.13 hook default),
    # "float32" (0.20: NemotronHForCausalLMConfig.DEFAULT_MAMBA_SSM_CACHE_DTYPE).
    # Chain: 'model' from 0.10.1; 'float16' from 0.13.0; 'float32' from 0.20.0.
    nemotron_h_ssm_cache_dtype: str = "model"
    # The EAGLE proposer's validate_same_kv_cache_group (every drafting layer in one group):
    # gone in 0.34.0, whose V2 speculators walk every attention group.
    # Chain: True from 0.10.1; False from 0.34.0.
    drafter_single_group_check: bool = True
    # The model runner a release picks when nothing forces one (VLLM_USE_V2_MODEL_RUNNER unset):
    # "v1" up to 0.28 (read in 0.18.0's envs.py: default 0; 0.22.0-0.28.0 V1 unless the model is one
    # v2_runner_by_model picks), "v2" (VllmConfig.use_v2_model_runner) from 0.29.0:
    # the engine config each release resolves on the CUDA platform with options unset says V2 for 0.29.0,
    # 0.30.0, 0.31.0, 0.32.0 and 0.33.0 (tests/golden/defaults/); "v2_only"
    # from 0.34.0, which removed V1 (platforms/interface.py validate_environ), so P-EAGLE runs on it with async
    # scheduling.
    # Chain: 'v1' from 0.10.1; 'v2' from 0.29.0; 'v2_only' from 0.34.0.
    default_model_runner: str = "v1"
    # Where the default runner is "v1", the models that get V2 anyway (VllmConfig.use_v2_model_runner ->
    # _is_default_v2_model_runner_model, for a generate model; runner.v2_by_model):
    # "listed_dense": an architecture in the release's list (v2_runner_architectures), not MoE, not
    # quantized (0.22.0 vllm/config/vllm.py:518-531; same in 0.23.0 lines 544-557);
    # "listed": an architecture in the list, MoE and quantized ones too (0.24.0 lines 550-562);
    # "listed_or_dense": neither hybrid nor attention-free, and listed or not MoE (0.25.0 lines
    # 557-575, 0.26.0 lines 605-623);
    # "hybrid_if_listed": as "listed_or_dense", but a listed hybrid gets V2 (0.27.0 lines 637-657,
    # 0.28.0 lines 691-711). None: no such rule (before 0.22, and from 0.29.0, where V2 is the default).
    # tests/golden/defaults/ (0.23.0 to 0.28.0) record V2 for Llama-3.1-8B and Mistral-7B, V1 for the Nemotron-H
    # hybrids (tests/test_block_size.py).
    # Chain: None from 0.10.1; 'listed_dense' from 0.22.0; 'listed' from 0.24.0; 'listed_or_dense' from
    # 0.25.0; 'hybrid_if_listed' from 0.27.0; None from 0.29.0.
    v2_runner_by_model: str | None = None
    # Which DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES the release has (runner.V2_RUNNER_ARCHITECTURES, by the
    # release that set it; "" where v2_runner_by_model is None).
    # Chain: '' from 0.10.1; '0.22' from 0.22.0; '0.23' from 0.23.0; '0.24' from 0.24.0; '0.25' from
    # 0.25.0; '0.26' from 0.26.0; '0.27' from 0.27.0; '0.28' from 0.28.0; '' from 0.29.0.
    v2_runner_architectures: str = ""
    # The attention backends' kernel block sizes (get_supported_kernel_block_sizes), by the release whose
    # table it is (block_size.KERNEL_BLOCK_SIZES_BEFORE; "0.21" = KERNEL_BLOCK_SIZES). No backend has the
    # method before 0.12.0 (kvplan uses 0.12.0's table there); 0.14.0 gives ROCM_ATTN [16, 32, 544], 0.16.0
    # ROCM_AITER_FA [16, 32], 0.18.0 TRITON_MLA and ROCM_ATTN MultipleOf(16), 0.21.0 FLEX_ATTENTION
    # MultipleOf(16) (tests/golden/defaults/, "block_size_backends").
    # Chain: '0.12' from 0.10.1; '0.14' from 0.14.0; '0.16' from 0.16.0; '0.18' from 0.18.0; '0.21' from 0.21.0.
    kernel_block_sizes: str = "0.21"
    # AttentionBackend.get_preferred_block_size exists (0.18.0 vllm/v1/attention/backend.py:189); before,
    # the backends state no preference and platforms/cuda.py's check_and_update_config fits the block to
    # the MLA kernels (block_size.decide_block_size).
    # Chain: False from 0.10.1; True from 0.18.0.
    preferred_block_size_hook: bool = True
    # ROCM_AITER_UNIFIED_ATTN asks for 64 (0.19.0 rocm_aiter_unified_attn.py:33-37, "Setting kv cache block
    # size to 64"); 0.18.x keeps the default.
    # Chain: False from 0.10.1; True from 0.19.0.
    rocm_aiter_unified_prefers_64: bool = True
    # The SM 10.x MLA priority (cuda.py _get_backend_priorities): "cutlass_first" (CUTLASS_MLA, FLASHINFER_MLA,
    # ...: 0.11.2 lines 56-57, 0.14.1 lines 53-54), "flashinfer_first" (FLASHINFER_MLA, CUTLASS_MLA: 0.15.0
    # lines 53-54, 0.34.0).
    # Chain: 'cutlass_first' from 0.10.1; 'flashinfer_first' from 0.15.0.
    mla_sm100_order: str = "flashinfer_first"
    # Async scheduling with --async-scheduling unset: SchedulerConfig.async_scheduling defaults to False up to
    # 0.13 (0.13.0 vllm/config/scheduler.py line 133: ``async_scheduling: bool = False``), None from 0.14, which
    # VllmConfig turns on unless an option is incompatible (0.14.1 vllm/config/vllm.py line 589: "Enable async
    # scheduling unless there is an incompatible option"); tests/golden/defaults/ (0.11.0 to 0.14.1).
    # Chain: False from 0.10.1; True from 0.14.0.
    async_scheduling_by_default: bool = True
    # VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE unset: "0" up to 0.13.0 (vllm/envs.py: 0.10.1 line 1140,
    # 0.11.0 line 1389, 0.13.0 line 1432, ``bool(int(os.getenv(..., "0")))``; vLLM PR #21761), so VllmConfig turns
    # the hybrid manager off for chunked-local attention models (Llama 4) with its "latency regression" warning
    # (0.10.1 config/__init__.py line 3674, 0.13.0 config/vllm.py line 916); "1" from 0.14.0 (envs.py line 1469;
    # PR #29627). Read in the 0.10.1, 0.10.1.1, 0.10.2, 0.11.0-0.11.2, 0.12.0, 0.13.0 and 0.14.0 wheels.
    # Chain: False from 0.10.1; True from 0.14.0.
    chunked_local_hma_by_default: bool = True
    # The derived max_model_len of YaRN models (``_get_and_verify_max_len``): "original_times_factor"
    # (0.18.0: original_max_position_embeddings x factor) or "factor_in_length" (0.33.0: YaRN's
    # max_position_embeddings is already scaled; pinned at the checked release, not bisected).
    # Chain: 'original_times_factor' from 0.10.1; 'factor_in_length' from 0.33.0.
    yarn_max_len: str = "original_times_factor"
    # get_pp_indices refuses negative VLLM_PP_LAYER_PARTITION entries (0.34.0 line 237; not in 0.33.0)
    # Chain: False from 0.10.1; True from 0.34.0.
    pp_partition_negative_check: bool = False
    # VllmConfig._reject_mismatched_float_kv_cache: --kv-cache-dtype float16/bfloat16 other than the
    # model dtype is refused (0.33.0 and 0.34.0; accepted by 0.18.0: tests/data/prechecks_vllm.json;
    # pinned at 0.33.0, not bisected)
    # Chain: False from 0.10.1; True from 0.33.0.
    float_kv_cache_check: bool = False
    # A speculators checkpoint served as the model (maybe_override_with_speculators): 0.33.0 and 0.34.0
    # update the checkpoint's speculative config with the user's --speculative-config (method locked);
    # 0.18.0 replaces the user's dict with the checkpoint's (transformers_utils/config.py 0.18.0 lines
    # 584-598). Pinned at 0.33.0, the release checked, not bisected.
    # Chain: False from 0.10.1; True from 0.33.0.
    speculators_user_config: bool = False
    # num_speculative_tokens of suffix decoding when none is given: suffix_decoding_max_tree_depth
    # (24; config/speculative.py _validate_suffix_decoding, 0.18.0 line 615, 0.33.0 line 1735),
    # min(8, that) in 0.34.0 (v1/worker/gpu/spec_decode/suffix/config.py line 28; pinned, not bisected)
    # Chain: 24 from 0.10.1; 8 from 0.34.0.
    suffix_default_tokens: int = 24
    # speculative_config.parallel_drafting: "opt_in" (a bool, default False, set only by the user or, in
    # 0.33.0, for the dflash/dspark methods: 0.18.0 config/speculative.py line 132, 0.33.0 lines 511 and
    # 1581-1582; releases before 0.18.0 not checked), "deprecated" (0.34.0 line 559: None by default;
    # lines 1688-1697: an explicit True with a method other than dflash/dspark is a ValueError, any
    # explicit value otherwise a warning; EAGLE heads always draft sequentially). Pinned at 0.34.0,
    # the release checked, not bisected.
    # Chain: 'opt_in' from 0.10.1; 'deprecated' from 0.34.0.
    parallel_drafting_option: str = "opt_in"
    # CacheConfig.DEFAULT_BLOCK_SIZE (vllm/config/cache.py line 185: 16 in 0.33.0, 64 in 0.34.0), the size
    # update_block_size_for_backend starts from (block_size.py). Pinned at 0.34.0, the release checked.
    # Chain: 16 from 0.10.1; 64 from 0.34.0.
    default_block_size: int = 16
    # The attention backend follows the GPU (cuda.py/rocm.py _get_backend_priorities, read in 0.33.0 and
    # 0.34.0); False: kvplan assumes an H100's defaults (FlashAttention, FlashAttention-MLA, FlashMLA-sparse),
    # as before the selector was read (releases before 0.33.0 not checked).
    # Chain: False from 0.10.1; True from 0.33.0.
    backend_by_device: bool = False
    # The attention backends' packed KV pages (customize_spec: per-token-head scales, NVFP4, TurboQuant) and
    # the block alignment for layers that keep the model dtype (interface.py _align_heterogeneous_kv_block_size),
    # read in 0.34.0 (kvplan.engines.vllm.kv_packing); before, a packed --kv-cache-dtype is "not modelled yet".
    # Chain: False from 0.10.1; True from 0.34.0.
    kv_cache_packing: bool = False
    # ROCM_ATTN.get_preferred_block_size returns 16 (rocm_attn.py 0.34.0 line 167; absent in 0.33.0).
    # Chain: False from 0.10.1; True from 0.34.0.
    rocm_attn_prefers_16: bool = False
    # KV offloading to host memory (--kv-offloading-size / --kv-offloading-backend), as each release's
    # VllmConfig wires it and its CPUOffloadingSpec sizes it (kvplan/engines/vllm/offload.py; goldens
    # tests/golden/*__offload-* from every release 0.12.0-0.34.0): "none" (no such flags);
    # "backend_flag" (the backend turns it on; native asks for num_cpu_blocks, which the post-init
    # sets to 0: the connector fails); "blocks" (one offloaded block = every worker's blocks,
    # unaligned, host tensors from torch's pinned caching allocator); "aligned_chunks" (chunks
    # rounded up to the host page, one shared mmap region on CUDA, a single MLA copy under TP);
    # "cpu_chunks" (build_offloading_config with windows in chunks, CPUOffloadingInfo's figures).
    # "chunks" (0.26: build_offloading_config, blocks_per_chunk, still unaligned pinned tensors);
    # Chain: 'none' from 0.10.1; 'backend_flag' from 0.12.0; 'blocks' from 0.14.0; 'chunks' from 0.26.0; 'aligned_chunks' from 0.27.0; 'cpu_chunks' from 0.33.0.
    kv_offloading: str = "none"
    # An extra-config block_size that is not a multiple of the GPU block: a bare assert, or from 0.32.0 the
    # ValueError that names the multiple to use (0.32.0 offloading/config.py:68-77; 0.30.0 and 0.31.0,
    # in the vllm-0.29 era, already raise it and are not modelled here).
    # Chain: 'assert' from 0.10.1; 'value_error' from 0.32.0.
    offload_chunk_check: str = "assert"
    # The offloading spec's check that every group's block divides by the hash block: "none" (0.14-0.17: one
    # offloaded block size from the cache config), "assert" (0.18-0.19 vllm/v1/kv_offload/spec.py:44-50: the
    # cache config's block size, a bare assert), "message" (0.20-0.21: the same with "Hybrid models ... need
    # --enable-prefix-caching"), "resolved" (0.22 on: the hash block resolve_kv_cache_block_sizes picks).
    # Chain: 'none' from 0.10.1; 'assert' from 0.18.0; 'message' from 0.20.0; 'resolved' from 0.22.0.
    offload_hash_check: str = "none"
    # The connector --kv-offloading-backend lmcache installs: LMCacheConnectorV1 with
    # lmcache.max_local_cpu_size = size / (TP x PP) GB per rank, or LMCacheMPConnector without a size.
    # Chain: 'LMCacheConnectorV1' from 0.10.1; 'LMCacheMPConnector' from 0.23.0.
    lmcache_offloading_connector: str = "LMCacheConnectorV1"
    releases: tuple[str, ...] = ()
    # How the uniform-page path picks the group size: "threshold" (shipped) or a
    # proposal's name (see proposals.py); proposals are marked, never the default.
    grouping: str = "threshold"
    is_proposal: bool = False
    first_release: str = ""
    # Set when the era was selected through a release (``vllm==0.24.0``): that release, a
    # note for the header ("installed", "unchecked") and a one-line warning, if any.
    release: str = ""
    release_note: str = ""
    warning: str = ""

    @property
    def stands_for(self) -> str:
        """The vLLM release this era stands for: the one selected (``vllm==X``), else the newest
        release of the era, else (a proposal: no release of its own) the release it builds on."""
        return stands_for(self.release, self.releases, self.first_release)


# The eras as a chain: each starts at the first release that has its changes (pinned by
# reading the wheels with scripts/golden/fingerprint.py and running them with the golden
# runner) and inherits every other decision from the era before it. ``kvplan policies``
# and docs/releases.md print these changes.
_BASE = dict(
    threshold=None,
    admission="per_layer",
    kv_size_log="blocks",
    in_flight_batches=False,
    null_block_in_check=False,
    page_mismatch="none",
    hybrid_prefix_caching_default=False,
    gdn_align_tokens=0,
    messages="0.10",
    kv_transfer_rule="always",
    auto_fit=False,
    mamba_legacy_reservation=True,
    capacity_log="per_worker_both",
    full_head_size_v=False,
    async_scheduling_by_default=False,
    chunked_local_hma_by_default=False,
    kernel_block_sizes="0.12",
    preferred_block_size_hook=False,
    rocm_aiter_unified_prefers_64=False,
    mla_sm100_order="cutlass_first",
)

# (name, first release, description, changes from the previous era)
CHAIN: tuple[tuple[str, str, str, dict], ...] = (
    ("vllm-0.10", "0.10.1",
     "group size = smallest bucket (before PR #29303), per-layer admission before grouping, "
     "no page-size unification, no auto-fit", {}),
    ("vllm-0.11.1", "0.11.1", "the size line is logged once (info_once); the concurrency line still per worker",
     dict(capacity_log="per_worker")),
    ("vllm-0.12", "0.12.0",
     "PR #29303: threshold 1.25; page sizes unified (raise when they do not divide); capacity lines logged once; "
     "--kv-offloading-size / --kv-offloading-backend install a KV offloading connector",
     dict(threshold=1.25, page_mismatch="raise", capacity_log="two_lines", kv_offloading="backend_flag")),
    ("vllm-0.13", "0.13.0",
     "Nemotron-H's config hook: the ssm state defaults to float16 when the config does not set it",
     dict(nemotron_h_ssm_cache_dtype="float16", messages="0.13")),
    ("vllm-0.14", "0.14.0",
     "PR #29431: admission counts the first group only; --max-model-len auto (auto-fit); full-attention "
     "pages with their own V head size; chunked-local attention keeps the hybrid manager by default (PR #29627); "
     "--kv-offloading-size alone turns native offloading on, sized in blocks of every worker's KV",
     dict(admission="first_group", auto_fit=True, messages="0.14", full_head_size_v=True, admission_scope="global",
          async_scheduling_by_default=True, kernel_block_sizes="0.14", chunked_local_hma_by_default=True,
          kv_offloading="blocks")),
    ("vllm-0.15", "0.15.0",
     "--mamba-cache-mode, reconciled with prefix caching by the model config; a Mamba layer reserves "
     "1 + speculative blocks (was cdiv(max_model_len, block)); drafter check says 'drafting'",
     dict(mamba_cache_mode_rule="reconcile", mamba_legacy_reservation=False, messages="0.15",
          mla_sm100_order="flashinfer_first")),
    ("vllm-0.16", "0.16.0", "ROCM_AITER_FA's kernel blocks are 16 and 32 (was any multiple of 16)",
     dict(kernel_block_sizes="0.16")),
    ("vllm-0.17", "0.17.0", "the admission check and auto-fit run per worker on its projected groups",
     dict(admission_scope="worker")),
    ("vllm-0.18", "0.18.0", "PR #36684: threshold 1.5; attention backends state a preferred block size; "
     "the offloading spec asserts every group's block divides by the cache block",
     dict(threshold=1.5, kernel_block_sizes="0.18", preferred_block_size_hook=True, offload_hash_check="assert")),
    ("vllm-0.19", "0.19.0", "PR #36030: admission sums every group's blocks",
     dict(admission="summed", rocm_aiter_unified_prefers_64=True)),
    # The profile subtracts the CUDA-graph estimate from 0.20.0: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults
    # to 1 (0.20.0 vllm/envs.py:1724-1726) and determine_available_memory takes cudagraph_memory_estimate off the
    # KV budget unless cudagraph_mode is NONE (0.20.0 vllm/v1/worker/gpu_worker.py:379-425); 0.19.1 only logs the
    # estimate ("In v0.19, CUDA graph memory profiling will be enabled by default", gpu_worker.py:470).
    ("vllm-0.20", "0.20.0",
     "PR #40045: sliding/chunked pages with their own V head size; KV events keep the hybrid manager (PR #37688); "
     "--gpu-memory-utilization 0.92; CUDA-graph memory in the profile",
     dict(window_head_size_v=True, kv_events_disable_hma=False, gpu_memory_utilization=0.92,
          nemotron_h_ssm_cache_dtype="float32", cudagraph_memory_in_profile=True, offload_hash_check="message")),
    ("vllm-0.20.1", "0.20.1",
     "capacity log = max_concurrency x max_model_len; --num-gpu-blocks-override applied before auto-fit and admission",
     dict(kv_size_log="concurrency", override_before_check=True)),
    ("vllm-0.21", "0.21.0", "FLEX_ATTENTION's kernel blocks are multiples of 16 (was any size)",
     dict(kernel_block_sizes="0.21")),
    ("vllm-0.22", "0.22.0",
     "a KV connector turns the hybrid manager off only when its class does not subclass SupportsHMA; "
     "messages say \"model's\" and that gpu_memory_utilization also controls CPU memory; the V2 model runner "
     "for Qwen3ForCausalLM (not MoE, not quantized)",
     dict(kv_transfer_rule="supports_hma", messages="0.22", v2_runner_by_model="listed_dense",
          v2_runner_architectures="0.22", offload_hash_check="resolved")),
    ("vllm-0.23", "0.23.0", "KVConnectorFactory.supports_hma_config (MultiConnector: every child); new warning text; "
     "the V2 model runner also for Llama and Mistral; --kv-offloading-backend lmcache installs LMCacheMPConnector",
     dict(messages="0.23", v2_runner_architectures="0.23", lmcache_offloading_connector="LMCacheMPConnector")),
    ("vllm-0.24", "0.24.0", "page sizes that do not divide are padded to the largest (no NotImplementedError); the "
     "V2 model runner for every listed architecture, MoE or quantized too",
     dict(page_mismatch="pad", v2_runner_by_model="listed", v2_runner_architectures="0.24")),
    ("vllm-0.25", "0.25.0", "V2 model runner for every model that is neither MoE, hybrid nor attention-free",
     dict(v2_runner_by_model="listed_or_dense", v2_runner_architectures="0.25")),
    ("vllm-0.26", "0.26.0",
     "async scheduling: sliding/chunked layers reserve max_concurrent_batches x max_num_batched_tokens; "
     "a smaller Mamba page is padded to the largest; build_offloading_config sizes the host tier (blocks_per_chunk)",
     dict(in_flight_batches=True, mamba_page_pad=True, v2_runner_architectures="0.26", kv_offloading="chunks")),
    ("vllm-0.27", "0.27.0", "V2 model runner also for hybrids whose architecture is on the list; the native "
     "host tier in page-aligned chunks of one shared region",
     dict(v2_runner_by_model="hybrid_if_listed", v2_runner_architectures="0.27", kv_offloading="aligned_chunks")),
    # hybrid prefix caching by default from 0.28.0: ModelConfig.is_prefix_caching_supported answers True for
    # attn_type "hybrid" (0.28.0 vllm/config/model.py:2072; False "since the feature is still experimental" up
    # to 0.25.1), and 0.26.0-0.27.1's EngineArgs keep it opt-in (arg_utils.py:2518 in 0.26.0: "Hybrid models
    # support prefix caching but keep it opt-in for now"); tests/golden/defaults/ (0.24.0 to 0.28.0)
    ("vllm-0.28", "0.28.0",
     "hybrid models get prefix caching (Mamba align mode) by default; with prefix caching the Mamba cache mode "
     "defaults to align (no longer all); the engine core logs the capacity on one line; >= 160 GiB batch tier "
     "in get_batch_defaults",
     dict(mamba_cache_mode_rule="reconcile_align", capacity_log="one_line", large_batch_tier=True,
          hybrid_prefix_caching_default=True, v2_runner_architectures="0.28")),
    ("vllm-0.29", "0.29.0",
     "the null block is kept out of the admission check and auto-fit; one backing buffer per worker (LBNHC "
     "records, resolve_kv_cache_layout); Mamba2/GDN align mode reserves a prefill checkpoint block",
     dict(null_block_in_check=True, mamba_prefill_checkpoints=True, kv_buffer_layout="lbnhc",
          default_model_runner="v2", v2_runner_by_model=None, v2_runner_architectures="",
          v2_runner_estimates_cudagraphs=True)),
    ("vllm-0.32", "0.32.0",
     "auto-fit lines name the KV cache memory and the device (\"(4.0 GiB GPU)\"); with prefix caching the Mamba "
     "cache mode defaults to align and an explicit mode is kept",
     dict(messages="0.32", mamba_cache_mode_rule="align_default", offload_chunk_check="value_error")),
    ("vllm-0.33", "0.33.0",
     "0.33.0: GDN align 64 and kernel alignment >= block, "
     "--mamba-cache-mode ignored, --enable-hybrid-kv-cache-manager; the attention "
     "backend (and its block size) follows the GPU; the native host tier keeps a window's reach in chunks and "
     "reports its bytes and tokens (CPUOffloadingInfo)",
     dict(gdn_align_tokens=64, messages="0.33", mamba_kernel_alignment="at_least_block",
          mamba_cache_mode_rule="prefix_caching",
          yarn_max_len="factor_in_length", float_kv_cache_check=True, speculators_user_config=True,
          backend_by_device=True, kv_offloading="cpu_chunks")),
    ("vllm-0.34", "0.34.0",
     "0.34.0: no single-group check on drafting layers (V1 EAGLE proposer removed); reworded admission hint "
     "and auto-fit lines; the extensible KV cache, sized after warmup and CUDA-graph capture (utilization 1.0), "
     "is on by default; suffix decoding defaults to 8 speculative tokens (was 24); speculative_config.parallel_drafting "
     "deprecated (refused with EAGLE methods); CacheConfig.DEFAULT_BLOCK_SIZE 64 (was 16)",
     dict(drafter_single_group_check=False, messages="0.34", pp_partition_negative_check=True,
          default_model_runner="v2_only", extensible_kv_cache=True, extensible_gpu_memory_utilization=1.0,
          suffix_default_tokens=8, parallel_drafting_option="deprecated", default_block_size=64,
          rocm_attn_prefers_16=True, kv_cache_packing=True, packed_kv_groups=True)),
)


_BOUNDARIES = tuple((version_key(first), name) for name, first, _, _ in CHAIN)


def era_name_of(version: str) -> str:
    """The era a release belongs to: the last in CHAIN whose first release is not newer."""
    key = version_key(version)
    name = CHAIN[0][0]
    for first, era_name in _BOUNDARIES:
        if first <= key:
            name = era_name
    return name


def _build_chain() -> dict[str, Era]:
    out: dict[str, Era] = {}
    fields: dict = dict(_BASE)
    era_of = {v: era_name_of(v) for v in VERSIONS}
    for name, first, description, changes in CHAIN:
        fields.update(changes)
        releases = tuple(v for v in VERSIONS if era_of[v] == name)
        out[name] = Era(name=name, description=description, releases=releases, first_release=first, **fields)
    return out


ERAS: dict[str, Era] = _build_chain()

# Era fields that are not behaviour decisions (identity, provenance, selection); every other field is
# one, and docs/releases.md tabulates it per era.
NOT_DECISIONS = frozenset({"name", "description", "releases", "grouping", "is_proposal", "first_release",
                           "release", "release_note", "warning"})


def decision_fields() -> tuple[str, ...]:
    """Every decision field of Era, in declaration order."""
    from dataclasses import fields

    return tuple(f.name for f in fields(Era) if f.name not in NOT_DECISIONS)


def transitions(field_name: str) -> list[tuple[str, object]]:
    """(first release, value) each time the chain changes ``field_name``, from the first era on."""
    out: list[tuple[str, object]] = []
    for name, first, _, _ in CHAIN:
        value = getattr(ERAS[name], field_name)
        if not out or out[-1][1] != value:
            out.append((first, value))
    return out


def first_release(field_name: str, value) -> str:
    """The first release whose era gives ``field_name`` this value (option help names it from here)."""
    for first, v in transitions(field_name):
        if v == value:
            return first
    raise KeyError(f"no era sets {field_name} = {value!r}")

# The policy names kvplan had before every release was selectable; they stay accepted.
LEGACY_NAMES = {"vllm-min": "vllm-0.11.1", "vllm-1.25": "vllm-0.17", "vllm-1.5": "vllm-0.18"}

DEFAULT_ERA = "vllm-latest"
