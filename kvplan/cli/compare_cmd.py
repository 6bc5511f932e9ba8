"""`kvplan compare`: the same model, budget and workload through vLLM (eras and proposals),
SGLang, TensorRT-LLM, llama.cpp and the exact windowed need, plus knob advice."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kvplan.cli import options as o
from kvplan.cli.app import app, handle_errors

ENGINES = "Other engines' knobs"
HW = "Budget from hardware (when --kv-cache-memory is not given)"
WORKLOAD = "Workload"


def parse_policies(text: str | None, main: str) -> list[str]:
    """``proposals`` (every proposal), ``none``, or a comma list of eras / releases / proposals."""
    from kvplan.engines.vllm import get_era
    from kvplan.engines.vllm.proposals import proposal_names

    if text is None or text.strip().lower() == "none":
        return []
    names: list[str] = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        expanded = proposal_names() if item == "proposals" else [get_era(item).name]
        names += [n for n in expanded if n not in names and n != get_era(main).name]
    return names


@app.command("compare")
@handle_errors
def compare_command(
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
    revision: o.Revision = None,
    download: o.Download = False,
    policy: o.Policy = "vllm-latest",
    threshold: o.Threshold = None,
    policies: Annotated[Optional[str], typer.Option(
        "--policies", help="More vLLM rows: 'proposals' (every grouping proposal), 'none', or a comma list of "
        "eras, releases and proposals (pr56445-gcd, pr49472-cost, pr35062-drafter-group, pr51742-skip-singletons).",
        rich_help_panel=o.POLICY)] = "proposals",
    kv_cache_memory: o.KvCacheMemory = None,
    gpu: Annotated[Optional[str], typer.Option(
        "--gpu", help="GPU preset for the budget when --kv-cache-memory is not given (as `kvplan simulate`).",
        rich_help_panel=HW)] = None,
    gpu_memory: Annotated[Optional[float], typer.Option(
        "--gpu-memory", min=1.0, help="GPU memory in GiB, for a card without a preset.", rich_help_panel=HW)] = None,
    gpu_memory_utilization: Annotated[Optional[float], typer.Option(
        "--gpu-memory-utilization", min=0.01, max=1.0, help="Fraction of the GPU vLLM may use (default: the era's).",
        rich_help_panel=HW)] = None,
    max_model_len: o.MaxModelLen = None,
    max_num_batched_tokens: o.MaxNumBatchedTokens = None,
    max_num_seqs: o.MaxNumSeqs = None,
    async_scheduling: o.AsyncScheduling = True,
    enable_prefix_caching: o.PrefixCaching = None,
    mamba_cache_mode: o.MambaCacheMode = None,
    disable_hybrid_kv_cache_manager: o.DisableHma = None,
    target_len: Annotated[Optional[int], typer.Option(
        "--target-len", min=1, help="Tokens per request of the workload (every engine is evaluated at this length; "
        "vLLM's --max-model-len). Default: --max-model-len, else the model's length.", rich_help_panel=WORKLOAD)] = None,
    target_concurrency: Annotated[Optional[int], typer.Option(
        "--target-concurrency", min=1, help="Requests of --target-len served at once; the advice says which knobs "
        "reach it (also llama.cpp's default -np).", rich_help_panel=WORKLOAD)] = None,
    swa_full_tokens_ratio: Annotated[float, typer.Option(
        "--swa-full-tokens-ratio", min=0.0, max=1.0, help="SGLang: SWA pool tokens per full pool token.",
        rich_help_panel=ENGINES)] = 0.8,
    sglang_page_size: Annotated[int, typer.Option(
        "--sglang-page-size", min=1, help="SGLang: tokens per page (pools are rounded down to it).",
        rich_help_panel=ENGINES)] = 1,
    trtllm_window_shares: Annotated[Optional[str], typer.Option(
        "--trtllm-window-shares", help="TensorRT-LLM: memory share per window, ascending windows, summing to 1 "
        "(TRTLLM_WINDOW_SIZE_SHARES, e.g. 0.1,0.9). Default: equal shares.", rich_help_panel=ENGINES)] = None,
    trtllm_tokens_per_block: Annotated[int, typer.Option(
        "--trtllm-tokens-per-block", min=1, help="TensorRT-LLM: tokens per KV block.", rich_help_panel=ENGINES)] = 32,
    llamacpp_n_seq: Annotated[Optional[int], typer.Option(
        "--llamacpp-n-seq", min=1, help="llama.cpp: sequences (-np); n_ctx = target length × n_seq. "
        "Default: --target-concurrency, else 1.", rich_help_panel=ENGINES)] = None,
    llamacpp_n_ubatch: Annotated[int, typer.Option(
        "--llamacpp-n-ubatch", min=1, help="llama.cpp: physical batch (-ub); the SWA cache keeps this much extra.",
        rich_help_panel=ENGINES)] = 512,
    swa_full: Annotated[bool, typer.Option(
        "--swa-full", help="llama.cpp: full-size SWA cache (every window layer keeps n_ctx cells).",
        rich_help_panel=ENGINES)] = False,
    llamacpp_kv_unified: Annotated[Optional[bool], typer.Option(
        "--llamacpp-kv-unified/--llamacpp-no-kv-unified", help="llama.cpp: one KV stream shared by all slots, or "
        "one per slot. Default: as llama-server decides (unified for -np auto, per slot for an explicit -np).",
        rich_help_panel=ENGINES, show_default=False)] = None,
    sglang_disable_overlap_schedule: Annotated[bool, typer.Option(
        "--sglang-disable-overlap-schedule", help="SGLang: --disable-overlap-schedule (one prefill chunk in flight "
        "instead of two).", rich_help_panel=ENGINES)] = False,
    sglang_swa_eviction_interval: Annotated[int, typer.Option(
        "--sglang-swa-eviction-interval", min=1, help="SGLang: SGLANG_SWA_EVICTION_INTERVAL (tokens slid out of the "
        "window before eviction).", rich_help_panel=ENGINES)] = 128,
    trtllm_scheduler_policy: Annotated[str, typer.Option(
        "--trtllm-scheduler-policy", help="TensorRT-LLM: capacity scheduler policy, GUARANTEED_NO_EVICT or "
        "MAX_UTILIZATION.", rich_help_panel=ENGINES)] = "GUARANTEED_NO_EVICT",
    trtllm_max_num_tokens: Annotated[int, typer.Option(
        "--trtllm-max-num-tokens", min=1, help="TensorRT-LLM: max_num_tokens (sets the temporary attention window "
        "of sliding pools).", rich_help_panel=ENGINES)] = 8192,
    sglang_version: Annotated[Optional[str], typer.Option(
        "--sglang-version", help="SGLang release the rules come from (read from 0.5.23).",
        rich_help_panel=ENGINES, show_default=False)] = None,
    trtllm_version: Annotated[Optional[str], typer.Option(
        "--trtllm-version", help="TensorRT-LLM release the rules come from (read from 1.2.0rc2).",
        rich_help_panel=ENGINES, show_default=False)] = None,
    llamacpp_build: Annotated[Optional[str], typer.Option(
        "--llamacpp-build", help="llama.cpp commit the rules come from (read from 0c1e57098).",
        rich_help_panel=ENGINES, show_default=False)] = None,
    format: o.OutputFormat = o.Format.table,
) -> None:
    """Compare vLLM, SGLang, TensorRT-LLM and llama.cpp on one model, budget and workload.

    One row per engine: KV tokens, max concurrency at the target length, memory per request,
    waste against the exact windowed need, whether it starts, and the knobs used; then the
    knobs that maximise concurrency for the workload. Exit code 0 unless kvplan itself fails.
    """
    from dataclasses import replace

    from kvplan import __version__
    from kvplan.cli.common import parse_max_model_len
    from kvplan.engines.advice import advise
    from kvplan.engines.compare import CompareInputs, compare
    from kvplan.engines.layer_costs import layer_costs
    from kvplan.engines.llamacpp import LLAMACPP_BUILD
    from kvplan.engines.sglang import SGLANG_VERSION
    from kvplan.engines.stages import require_version
    from kvplan.engines.trtllm import SCHEDULER_POLICIES, TRTLLM_VERSION, parse_shares
    from kvplan.errors import OptionError, UnsupportedError
    from kvplan.report import SCHEMA_VERSION
    from kvplan.report.data import model_info_dict, serving_dict
    from kvplan.report.output import emit
    from kvplan.scenario import Scenario, run_scenario, serving_of

    if pipeline_parallel_size > 1:
        raise UnsupportedError("compare models one GPU per tensor-parallel rank; --pipeline-parallel-size > 1 is "
                               "not supported (use `kvplan simulate` for vLLM's pipeline stages)")
    mml = parse_max_model_len(max_model_len)
    if mml == -1:
        raise OptionError("compare evaluates every engine at one fixed length: pass --target-len (or a number "
                          "for --max-model-len), not 'auto'")
    if target_len is not None and mml is not None and target_len != mml:
        raise OptionError(f"--target-len {target_len} and --max-model-len {mml} differ; compare evaluates every "
                          "engine at one length, pass one of them")
    length = target_len or mml
    shares = parse_shares(trtllm_window_shares) if trtllm_window_shares else None
    versions = {"sglang": require_version("--sglang-version", sglang_version, SGLANG_VERSION, "SGLang"),
                "trtllm": require_version("--trtllm-version", trtllm_version, TRTLLM_VERSION, "TensorRT-LLM"),
                "llamacpp": require_version("--llamacpp-build", llamacpp_build, LLAMACPP_BUILD, "llama.cpp")}
    policy_name = trtllm_scheduler_policy.strip().upper()
    if policy_name not in SCHEDULER_POLICIES:
        raise OptionError(f"--trtllm-scheduler-policy {trtllm_scheduler_policy}: choose "
                          f"{' or '.join(SCHEDULER_POLICIES)}")
    extra = parse_policies(policies, policy)

    scenario = Scenario(
        model=model, drafter=drafter, speculative_method=speculative_method,
        num_speculative_tokens=num_speculative_tokens, block_size=block_size, attention_backend=attention_backend,
        kv_cache_dtype=kv_cache_dtype, dtype=dtype, tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size, revision=revision, download=download, policy=policy,
        threshold=threshold, kv_cache_memory=kv_cache_memory, max_model_len=length,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        async_scheduling=async_scheduling, enable_prefix_caching=enable_prefix_caching,
        mamba_cache_mode=mamba_cache_mode, disable_hybrid_kv_cache_manager=disable_hybrid_kv_cache_manager,
        gpu=gpu, gpu_memory=gpu_memory, gpu_memory_utilization=gpu_memory_utilization,
    )
    main = run_scenario(scenario)
    layout, plan = main.layout, main.plan
    length = length or plan.max_model_len
    scenario = replace(scenario, max_model_len=length, kv_cache_memory=plan.options.kv_cache_memory_bytes)
    plans = [plan] + [run_scenario(replace(scenario, policy=p, threshold=None), layout=layout).plan for p in extra]

    inputs = CompareInputs(
        kv_cache_memory_bytes=plan.options.kv_cache_memory_bytes, target_len_tokens=length,
        target_concurrency=target_concurrency, max_num_batched_tokens=plan.options.max_num_batched_tokens,
        swa_full_tokens_ratio=swa_full_tokens_ratio, sglang_page_size=sglang_page_size,
        trtllm_window_shares=shares, trtllm_tokens_per_block=trtllm_tokens_per_block,
        llamacpp_n_seq=llamacpp_n_seq, llamacpp_n_ubatch=llamacpp_n_ubatch, swa_full=swa_full,
        llamacpp_kv_unified=llamacpp_kv_unified, sglang_disable_overlap_schedule=sglang_disable_overlap_schedule,
        sglang_swa_eviction_interval=sglang_swa_eviction_interval, trtllm_scheduler_policy=policy_name,
        trtllm_max_num_tokens=trtllm_max_num_tokens,
    )
    architecture = layout.target.architecture
    comparison = compare(layout.layers, architecture, inputs, plans)

    def simulate_at(t: float):
        return run_scenario(replace(scenario, threshold=t), layout=layout).plan

    advice = advise(layer_costs(layout.layers), architecture, inputs, plan, simulate_at)
    warnings = list(layout.warnings)
    if tensor_parallel_size > 1:
        warnings.append(f"every engine is modelled on one tensor-parallel rank's share (tp {tensor_parallel_size}): "
                        "KV heads per rank as vLLM splits them")
    if any(ls.spec.kind == "mamba" for ls in layout.layers):
        warnings.append("recurrent state pools of SGLang and TensorRT-LLM are approximated (state set aside for "
                        "the number of requests that serves the most)")
    serving = serving_of(scenario)
    data = {
        "schema_version": SCHEMA_VERSION,
        "kvplan_version": __version__,
        "command": "compare",
        "model": model_info_dict(layout.target),
        "drafter": model_info_dict(layout.drafter),
        "speculative": {"method": layout.speculative_method, "num_speculative_tokens": layout.num_speculative_tokens},
        "serving": {**serving_dict(serving), "block_size": layout.block_size},
        "engine_versions": versions,
        **comparison.to_dict(),
        "advice": advice,
        "budget": main.budget,
        "warnings": warnings + list((main.budget or {}).get("warnings", [])),
    }

    def table(d: dict) -> None:
        from kvplan.report.compare_tables import render_compare

        render_compare(d)

    emit(data, format.value, table)
