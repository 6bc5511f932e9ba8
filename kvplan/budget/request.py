"""What the budget stage asks of the budget layer: the deployment's budget part (``BudgetInput``, one of the
typed deployment's parts, ``kvplan.usecases.deployment``) and the serving facts the estimate reads
(``BudgetRequest``), one record instead of keyword arguments copied field by field."""

from dataclasses import dataclass

from kvplan.budget.hardware import GpuCard


@dataclass(frozen=True)
class BudgetInput:
    """The memory budget: a KV size given, or the card and what shares it (the budget layer's input); the sizes
    ``weights_memory`` … ``startup_memory`` replace their estimates (``kvplan.budget.estimate.OVERRIDE_KEYS``)."""

    kv_cache_memory: int | None = None
    gpu: str | None = None
    gpu_memory: float | None = None
    gpu_memory_utilization: float | None = None
    enable_extensible_kv_cache: bool | None = None
    quantization: str | None = None
    cpu_offload_gb: float | None = None
    weights_memory: int | None = None
    activation_memory: int | None = None
    non_torch_memory: int | None = None
    cudagraph_memory: int | None = None
    startup_memory: int | None = None
    exact_params: bool = False
    # the card of --gpu / --gpu-memory, resolved at the edge (kvplan.budget.hardware.gpu_card); None without
    # either, or for a BudgetInput made by hand (the budget then resolves gpu and gpu_memory itself)
    card: GpuCard | None = None

    @property
    def on_card(self) -> bool:
        """The budget is estimated from a card (``--gpu`` / ``--gpu-memory``)."""
        return self.gpu is not None or self.gpu_memory is not None

    @property
    def counts_weights(self) -> bool:
        """The budget stage will count the weights: a budget estimated from the card (no KV size given) with
        the weights or the activation left to the estimate."""
        return (self.kv_cache_memory is None and self.on_card
                and (self.weights_memory is None or self.activation_memory is None))


@dataclass(frozen=True)
class LoraSlots:
    """``--enable-lora``'s settings the budget reads: the adapters in one batch and their rank."""

    max_loras: int = 1
    max_lora_rank: int = 16


@dataclass(frozen=True)
class BudgetRequest:
    """The budget stage's question (``kvplan.budget.estimate.kv_budget``): the deployment's budget part as given and
    what the estimate reads from the rest of the deployment: the batch vLLM profiles with
    (``max_num_batched_tokens`` dummy tokens, ``max_num_seqs`` dummy requests, after the scheduler's defaults), the
    MoE experts' placement (split over tp × dp ranks with ``enable_expert_parallel``; EPLB's redundant experts), the
    LoRA slots (``lora``), the sizing mode's other input
    (``num_gpu_blocks_override``) and the connector (``kv_transfer_config`` as vLLM holds it, for the extensible
    sizing's warnings). ``tensor_parallel_size``: when given, it must equal the layout's (the budget takes the
    layout's)."""

    budget: BudgetInput
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 1024
    data_parallel_size: int = 1
    enable_expert_parallel: bool = False
    num_gpu_blocks_override: int | None = None
    kv_transfer_config: dict | None = None
    tensor_parallel_size: int | None = None
    # the multimodal profile's inputs (``--limit-mm-per-prompt``, ``--language-model-only``): how many dummy items
    # the encoder pass encodes, none when every modality's limit is 0
    limit_mm_per_prompt: dict | None = None
    language_model_only: bool = False
    # --enable-lora's slots (kvplan.budget.lora): None without LoRA
    lora: LoraSlots | None = None
    # EPLB (--enable-eplb): the redundant experts as given (None: the release's default), each EP rank's share
    enable_eplb: bool = False
    num_redundant_experts: int | None = None
    # the dummy sampler run ends with a rejection-sampler pass: a speculative config on the V1 model runner
    # (kvplan.budget.drafter)
    rejection_sampler: bool = False
    # the MXFP4 MoE backend's inputs the install decides (kvplan.budget.weights.mxfp4_padding_for):
    # VLLM_MXFP4_USE_MARLIN=1 (--env) and whether triton_kernels is installed (--triton-kernels; None: not stated)
    mxfp4_use_marlin: bool = False
    triton_kernels: bool | None = None
    # the model runner vLLM ends up with ("v1" / "v2": the engine's runner decision, kvplan.engines.vllm.runner):
    # whose dummy sampler run the profile sees (kvplan.budget.profile.sampler_row; 0.34+ has the V2 runner only)
    model_runner: str = "v1"
    # --max-cudagraph-capture-size and --cudagraph-capture-sizes as given (None: the release's default rule), the
    # CUDA graphs the budget counts (kvplan.budget.cudagraph.capture_sizes)
    max_cudagraph_capture_size: int | None = None
    cudagraph_capture_sizes: tuple[int, ...] | None = None
    # --optimization-level (0.12.0+) and --compilation-config's cudagraph_mode as given (None: the release's
    # default): the CUDA-graph mode whose graphs the budget counts (kvplan.budget.cudagraph.resolved_mode)
    optimization_level: int | None = None
    cudagraph_mode: str | None = None
    # --performance-mode (0.17.0+; None: balanced): interactivity's capture grid (kvplan.budget.cudagraph.capture_sizes)
    performance_mode: str | None = None
