"""`kvplan fit`: what fits on a GPU (max_model_len, utilization for N requests, which GPU)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kvplan.cli import options as o
from kvplan.cli.app import EXIT_FAILED, EXIT_USAGE, app, fail, handle_errors

HW = "GPU and memory budget (estimates; docs/fit.md)"
ASK = "Questions"

Gpu = Annotated[Optional[str], typer.Option("--gpu", help="GPU preset (see --list-gpus), e.g. H100-80GB, H200-141GB.", rich_help_panel=HW)]
GpuMemory = Annotated[Optional[float], typer.Option("--gpu-memory", min=1.0, help="GPU memory in GiB, for a card without a preset (overrides the preset's figure).", rich_help_panel=HW)]
GpuMemoryUtilization = Annotated[Optional[float], typer.Option("--gpu-memory-utilization", min=0.01, max=1.0, help="Fraction of the GPU vLLM may use (default: the era's, 0.92 latest, 0.9 before).", rich_help_panel=HW)]
WeightsMemory = Annotated[Optional[str], typer.Option("--weights-memory", help="Weights per GPU instead of kvplan's count (e.g. 14.96GiB, from vLLM's 'Model loading took' line).", rich_help_panel=HW)]
ActivationMemory = Annotated[Optional[str], typer.Option("--activation-memory", help="Peak activation per GPU instead of kvplan's estimate.", rich_help_panel=HW)]
NonTorchMemory = Annotated[Optional[str], typer.Option("--non-torch-memory", help="Non-torch memory per GPU instead of kvplan's estimate.", rich_help_panel=HW)]
CudagraphMemory = Annotated[Optional[str], typer.Option("--cudagraph-memory", help="CUDA-graph reserve per GPU instead of kvplan's estimate (0 for --enforce-eager).", rich_help_panel=HW)]
ExactParams = Annotated[bool, typer.Option("--exact-params", help="Also count parameters on torch's meta device through transformers (needs torch) and report whether the counts agree.", rich_help_panel=HW)]


def budget_overrides(weights_memory, activation_memory, non_torch_memory, cudagraph_memory) -> dict:
    """The override flags as ``Scenario.budget_overrides`` (sizes validated by kv_budget)."""
    pairs = (("weights_memory", weights_memory), ("activation_memory", activation_memory),
             ("non_torch_memory", non_torch_memory), ("cudagraph_memory", cudagraph_memory))
    return {k: v for k, v in pairs if v is not None}


@app.command("fit")
@handle_errors
def fit_command(
    model: Annotated[Optional[str], typer.Argument(help="Model id (bundled catalog or HF cache), a config.json, or a directory holding one.", show_default=False)] = None,
    drafter: o.Drafter = None,
    speculative_method: o.SpeculativeMethod = None,
    num_speculative_tokens: o.NumSpeculativeTokens = None,
    block_size: o.BlockSize = None,
    attention_backend: o.AttentionBackend = None,
    kv_cache_dtype: o.KvCacheDtype = "auto",
    dtype: o.Dtype = "auto",
    tensor_parallel_size: o.TensorParallel = 1,
    pipeline_parallel_size: o.PipelineParallel = 1,
    decode_context_parallel_size: o.DecodeContextParallel = 1,
    revision: o.Revision = None,
    download: o.Download = False,
    policy: o.Policy = "vllm-latest",
    threshold: o.Threshold = None,
    max_model_len: Annotated[Optional[str], typer.Option("--max-model-len", help="Cap for the max_model_len answer, and the length of the GPU table (default: the model's).", rich_help_panel=o.BUDGET)] = None,
    max_num_batched_tokens: o.MaxNumBatchedTokens = None,
    max_num_seqs: o.MaxNumSeqs = None,
    async_scheduling: o.AsyncScheduling = None,
    model_runner: o.ModelRunner = None,
    enable_prefix_caching: o.PrefixCaching = None,
    mamba_cache_mode: o.MambaCacheMode = None,
    disable_hybrid_kv_cache_manager: o.DisableHma = None,
    kv_transfer_config: o.KvTransferConfig = None,
    gpu: Gpu = None,
    gpu_memory: GpuMemory = None,
    gpu_memory_utilization: GpuMemoryUtilization = None,
    weights_memory: WeightsMemory = None,
    activation_memory: ActivationMemory = None,
    non_torch_memory: NonTorchMemory = None,
    cudagraph_memory: CudagraphMemory = None,
    exact_params: ExactParams = False,
    concurrency: Annotated[Optional[float], typer.Option("--concurrency", min=0.01, help="N concurrent requests: alone, the longest context for N requests; with --context-len, the smallest --gpu-memory-utilization; 'enough' in the GPU table (steady-state concurrency, docs/capacity.md).", rich_help_panel=ASK)] = None,
    context_len: Annotated[Optional[int], typer.Option("--context-len", min=1, help="L tokens per request (with --concurrency).", rich_help_panel=ASK)] = None,
    gpus: Annotated[Optional[str], typer.Option("--gpus", help="Presets for the GPU table, comma-separated (default: all).", rich_help_panel=ASK)] = None,
    tp_sizes: Annotated[Optional[str], typer.Option("--tp-sizes", help="Tensor-parallel sizes for the GPU table, e.g. 1,2,4,8.", rich_help_panel=ASK)] = None,
    table: Annotated[Optional[bool], typer.Option("--table/--no-table", help="Draw the GPU table (default: only when no --gpu is given, or when --gpus/--tp-sizes is).", rich_help_panel=ASK, show_default=False)] = None,
    list_gpus: Annotated[bool, typer.Option("--list-gpus", help="List the GPU presets with their memory and its source, then exit.")] = False,
    format: o.OutputFormat = o.Format.table,
) -> None:
    """What fits on a GPU: the largest max_model_len, the smallest --gpu-memory-utilization
    for N requests of L tokens, and max concurrency per GPU preset and TP size.

    Each answer is found by simulating vLLM itself (auto-fit, admission check, grouping) on
    an estimated KV budget (weights exact from the config; activation, non-torch and
    CUDA-graph memory estimated, each with an override). Exit codes: 0 answered; 3 the
    engine would not start on --gpu at any length, or no utilization ≤ 1 reaches
    --concurrency; 1 kvplan error; 2 usage error.
    """
    from kvplan.report.output import emit

    if list_gpus:
        _list_gpus(format.value)
        return
    if model is None:
        raise fail("Missing argument 'MODEL' (or pass --list-gpus)", EXIT_USAGE)
    from kvplan.fit import fit, parse_gpus, parse_tp_sizes
    from kvplan.scenario import Scenario

    overrides = budget_overrides(weights_memory, activation_memory, non_torch_memory, cudagraph_memory)
    if exact_params:
        overrides["exact_params"] = True
    scenario = Scenario(
        model=model, drafter=drafter, speculative_method=speculative_method,
        num_speculative_tokens=num_speculative_tokens, block_size=block_size, attention_backend=attention_backend,
        kv_cache_dtype=kv_cache_dtype, dtype=dtype, tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size, decode_context_parallel_size=decode_context_parallel_size, revision=revision, download=download, policy=policy,
        threshold=threshold, max_model_len=max_model_len, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, async_scheduling=async_scheduling, model_runner=model_runner, enable_prefix_caching=enable_prefix_caching,
        mamba_cache_mode=mamba_cache_mode, disable_hybrid_kv_cache_manager=disable_hybrid_kv_cache_manager,
        kv_transfer_config=kv_transfer_config, gpu=gpu, gpu_memory=gpu_memory,
        gpu_memory_utilization=gpu_memory_utilization, budget_overrides=overrides,
    )
    if table is None and (gpus is not None or tp_sizes is not None):
        table = True
    data = fit(scenario, concurrency=concurrency, context_len=context_len, gpus=parse_gpus(gpus),
               tp_sizes=parse_tp_sizes(tp_sizes), table=table)

    def render(d: dict) -> None:
        from kvplan.report.fit_tables import render_fit

        render_fit(d)

    emit(data, format.value, render)
    failed = []
    mml = data.get("max_model_len")
    if mml is not None and mml["max_model_len"] is None:
        failed.append("the engine would not start on this GPU at any max_model_len")
    util = data.get("min_gpu_memory_utilization")
    if util is not None and util["gpu_memory_utilization"] is None:
        failed.append(util.get("reason") or "no utilization reaches the concurrency")
    ctx = data.get("max_context_len_for_concurrency")
    if ctx is not None and ctx["max_model_len"] is None:
        failed.append(ctx.get("reason") or "no context length reaches the concurrency")
    if failed:
        from kvplan.report.output import hint

        for f in failed:
            hint(f"Not achievable: {f}")
        raise typer.Exit(EXIT_FAILED)


def _list_gpus(fmt: str) -> None:
    from kvplan import __version__
    from kvplan.hardware import GPU_PRESETS
    from kvplan.report import SCHEMA_VERSION
    from kvplan.report.output import emit

    data = {
        "schema_version": SCHEMA_VERSION,
        "kvplan_version": __version__,
        "command": "fit --list-gpus",
        "gpus": [
            {"name": p.name, "memory_bytes": p.memory_bytes, "basis": p.basis, "nominal": p.nominal,
             "aliases": list(p.aliases), "source": p.source}
            for p in GPU_PRESETS.values()
        ],
        "warnings": [],
    }

    def render(d: dict) -> None:
        from kvplan.report.fit_tables import render_gpu_presets

        render_gpu_presets(d)

    emit(data, fmt, render)
