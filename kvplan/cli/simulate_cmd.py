"""`kvplan simulate`: vLLM's grouping, padding, memory and start-up outcome."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kvplan.cli import options as o
from kvplan.cli.app import EXIT_FAILED, app, fail, handle_errors

HW = "Budget from hardware (when --kv-cache-memory is not given)"
DEV = "Allocate on a real device"


@app.command("simulate")
@handle_errors
def simulate_command(
    model: o.Model,
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
    disable_sliding_window: o.DisableSlidingWindow = False,
    revision: o.Revision = None,
    download: o.Download = False,
    policy: o.Policy = "vllm-latest",
    threshold: o.Threshold = None,
    kv_cache_memory: o.KvCacheMemory = None,
    max_model_len: o.MaxModelLen = None,
    max_num_batched_tokens: o.MaxNumBatchedTokens = None,
    max_num_seqs: o.MaxNumSeqs = None,
    async_scheduling: o.AsyncScheduling = None,
    model_runner: o.ModelRunner = None,
    enable_prefix_caching: o.PrefixCaching = None,
    mamba_cache_mode: o.MambaCacheMode = None,
    disable_hybrid_kv_cache_manager: o.DisableHma = None,
    kv_transfer_config: o.KvTransferConfig = None,
    num_gpu_blocks_override: o.NumGpuBlocksOverride = None,
    kv_events: o.KvEvents = False,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPU preset, e.g. H100-80GB, H200-141GB (see `kvplan fit --list-gpus`).", rich_help_panel=HW)] = None,
    gpu_memory: Annotated[Optional[float], typer.Option("--gpu-memory", min=1.0, help="GPU memory in GiB, for a card without a preset.", rich_help_panel=HW)] = None,
    gpu_memory_utilization: Annotated[Optional[float], typer.Option("--gpu-memory-utilization", min=0.01, max=1.0, help="Fraction of the GPU vLLM may use (default: the era's, 0.92 latest, 0.9 before).", rich_help_panel=HW)] = None,
    weights_memory: Annotated[Optional[str], typer.Option("--weights-memory", help="Weights per GPU instead of kvplan's count (e.g. 14.96GiB).", rich_help_panel=HW)] = None,
    activation_memory: Annotated[Optional[str], typer.Option("--activation-memory", help="Peak activation per GPU instead of kvplan's estimate.", rich_help_panel=HW)] = None,
    non_torch_memory: Annotated[Optional[str], typer.Option("--non-torch-memory", help="Non-torch memory per GPU instead of kvplan's estimate.", rich_help_panel=HW)] = None,
    cudagraph_memory: Annotated[Optional[str], typer.Option("--cudagraph-memory", help="CUDA-graph reserve per GPU instead of kvplan's estimate.", rich_help_panel=HW)] = None,
    sweep_threshold: Annotated[Optional[str], typer.Option("--sweep-threshold", help="Thresholds to sweep: start:stop:step (1.0:2.0:0.05) or a list (1.25,1.5).", rich_help_panel=o.POLICY)] = None,
    plot: Annotated[Optional[str], typer.Option("--plot", help="With --sweep-threshold: draw the sweep to this PNG (needs kvplan\\[plot]).", rich_help_panel=o.POLICY)] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Explain the decision chain in words, with its numbers.")] = False,
    require_start: Annotated[bool, typer.Option("--require-start", help="Exit 3 if the engine would fail at start-up.", rich_help_panel=o.CHECKS)] = False,
    fail_on_padding: Annotated[Optional[float], typer.Option("--fail-on-padding", min=0.0, help="Exit 3 if vLLM's padding waste (%) exceeds this.", rich_help_panel=o.CHECKS)] = None,
    min_concurrency: Annotated[Optional[float], typer.Option("--min-concurrency", min=0.0, help="Exit 3 if max concurrency is below this.", rich_help_panel=o.CHECKS)] = None,
    allocate: Annotated[bool, typer.Option("--allocate", help="Allocate the predicted tensors on a device and verify the layout (needs kvplan\\[gpu]).", rich_help_panel=DEV)] = False,
    device: Annotated[str, typer.Option("--device", help="cuda, cuda:N or cpu.", rich_help_panel=DEV)] = "cuda",
    budget_from_device: Annotated[bool, typer.Option("--budget-from-device", help="KV budget = free device memory × --gpu-memory-utilization − --reserve.", rich_help_panel=DEV)] = False,
    reserve: Annotated[Optional[str], typer.Option("--reserve", help="With --budget-from-device: memory to leave free (e.g. 2GiB).", rich_help_panel=DEV)] = None,
    format: o.OutputFormat = o.Format.table,
) -> None:
    """Group layers, size the KV cache and predict start-up, as a vLLM era would.

    Exit codes: 0 the engine would start; 3 it would fail (or a check failed); 1 kvplan error.
    """
    from kvplan.report.output import emit
    from kvplan.scenario import Scenario, run_scenario

    scenario = Scenario(
        model=model, drafter=drafter, speculative_method=speculative_method,
        num_speculative_tokens=num_speculative_tokens, block_size=block_size, attention_backend=attention_backend,
        kv_cache_dtype=kv_cache_dtype, dtype=dtype, tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size, decode_context_parallel_size=decode_context_parallel_size, disable_sliding_window=disable_sliding_window,
        revision=revision, download=download, policy=policy,
        threshold=threshold, kv_cache_memory=kv_cache_memory, max_model_len=max_model_len,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        async_scheduling=async_scheduling, model_runner=model_runner, enable_prefix_caching=enable_prefix_caching,
        mamba_cache_mode=mamba_cache_mode, disable_hybrid_kv_cache_manager=disable_hybrid_kv_cache_manager,
        kv_transfer_config=kv_transfer_config, num_gpu_blocks_override=num_gpu_blocks_override, kv_events=kv_events,
        gpu=gpu, gpu_memory=gpu_memory, gpu_memory_utilization=gpu_memory_utilization,
        budget_overrides=_budget_overrides(weights_memory, activation_memory, non_torch_memory, cudagraph_memory),
    )
    if budget_from_device:
        if kv_cache_memory is not None:
            raise fail("--budget-from-device and --kv-cache-memory are exclusive; pass one of them", 2)
        from kvplan.cli.common import parse_size
        from kvplan.device import budget_from_device as device_budget

        reserve_bytes = parse_size(reserve, "--reserve") if reserve else 0
        utilization = gpu_memory_utilization or 0.92
        budget = device_budget(device, utilization, reserve_bytes)
        from dataclasses import replace

        scenario = replace(scenario, kv_cache_memory=budget)
        device_budget_note = {"source": "device", "device": device, "gpu_memory_utilization": utilization,
                              "reserve_bytes": reserve_bytes, "kv_cache_memory_bytes": budget}
    else:
        device_budget_note = None

    if sweep_threshold is not None:
        _sweep(scenario, sweep_threshold, plot, format.value)
        return

    result = run_scenario(scenario, explain=explain)
    data = result.data
    if device_budget_note is not None:
        data["budget"] = device_budget_note
    if result.budget:
        data["warnings"] += [w for w in result.budget.get("warnings", []) if w not in data["warnings"]]
    exit_code = 0 if result.plan.starts else EXIT_FAILED
    checks = []
    if require_start and not result.plan.starts:
        checks.append(f"--require-start: the engine would fail ({result.plan.failure.message})")
    if fail_on_padding is not None and result.plan.padding_waste_pct > fail_on_padding:
        checks.append(f"--fail-on-padding {fail_on_padding:g}: padding waste {result.plan.padding_waste_pct:.2f}%")
    if min_concurrency is not None and result.plan.max_concurrency < min_concurrency:
        checks.append(f"--min-concurrency {min_concurrency:g}: max concurrency {result.plan.max_concurrency:.2f}")
    data["checks_failed"] = checks
    if allocate:
        if not result.plan.starts:
            f = result.plan.failure
            raise fail(f"--allocate: the engine would not start ({f.stage}: {f.error_type}: {f.message}); "
                       "nothing to allocate", EXIT_FAILED)
        from kvplan.device import allocate_and_verify

        report = allocate_and_verify(result.plan, device)
        data["allocation"] = report
        if not report.get("ok", False):
            exit_code = EXIT_FAILED

    def table(d: dict) -> None:
        from kvplan.report.tables import render_plan

        render_plan(d)
        if d.get("allocation"):
            from kvplan.report.tables import render_allocation

            render_allocation(d["allocation"])
        if d.get("budget"):
            from kvplan.report.tables import render_budget

            render_budget(d["budget"])

    emit(data, format.value, table)
    if checks:
        from kvplan.report.output import hint

        for c in checks:
            hint(f"Check failed: {c}")
        exit_code = EXIT_FAILED
    if exit_code:
        raise typer.Exit(exit_code)


def _budget_overrides(weights, activation, non_torch, cudagraph) -> dict:
    """--weights-memory & co. for kvplan.hardware.kv_budget (only the ones given)."""
    sizes = {"weights_memory": weights, "activation_memory": activation, "non_torch_memory": non_torch,
             "cudagraph_memory": cudagraph}
    return {k: v for k, v in sizes.items() if v is not None}


def _sweep(scenario, spec: str, plot: str | None, fmt: str) -> None:
    from dataclasses import replace

    from kvplan import __version__
    from kvplan.engines.vllm.sweep import critical_thresholds, parse_thresholds, sweep_row
    from kvplan.report import SCHEMA_VERSION
    from kvplan.report.data import era_dict, model_info_dict
    from kvplan.report.output import emit
    from kvplan.scenario import run_scenario

    thresholds = parse_thresholds(spec)
    first = run_scenario(replace(scenario, threshold=thresholds[0]))
    rows = [sweep_row(thresholds[0], first.plan)]
    for t in thresholds[1:]:
        r = run_scenario(replace(scenario, threshold=t), layout=first.layout)
        rows.append(sweep_row(t, r.plan))
    data = {
        "schema_version": SCHEMA_VERSION, "kvplan_version": __version__, "command": "simulate --sweep-threshold",
        "model": model_info_dict(first.layout.target), "drafter": model_info_dict(first.layout.drafter),
        "policy": era_dict(first.plan.era), "rows": rows, "critical_thresholds": critical_thresholds(first.plan),
        "warnings": list(first.layout.warnings),
    }
    if plot:
        from kvplan.report.plot import plot_sweep

        plot_sweep(data, plot)
        data["plot"] = plot

    def table(d: dict) -> None:
        from kvplan.report.tables import render_rows

        cols = ["threshold", "group_size", "groups", "padding layers", "padding %", "num_blocks",
                "KV tokens", "max_concurrency", "outcome"]
        render_rows(
            f"Threshold sweep ({d['policy']['name']})", cols,
            [[r["threshold"], r["group_size"], r["num_groups"], r["num_padding_layers"],
              f"{r['padding_waste_pct']:.2f}", f"{r['num_blocks']:,}", f"{r['kv_tokens']:,}",
              f"{r['max_concurrency']:.2f}", "starts" if r["starts"] else f"fails ({r['failure_stage']})"]
             for r in d["rows"]],
            right=set(cols[:-1]),
        )
        for msg in dict.fromkeys(r["failure"] for r in d["rows"] if r["failure"]):
            print(f"fails: {msg}")
        for c in d["critical_thresholds"]:
            print(f"Critical threshold {c['threshold']:g} ({c['ratio']}): group size {c['group_size_at_or_below']} "
                  f"at or below, {c['group_size_above']} above.")
        if d.get("plot"):
            print(f"Plot written to {d['plot']}")

    emit(data, fmt, table)
