"""`compare`: one model, budget and workload through vLLM (eras and proposals), SGLang,
TensorRT-LLM, llama.cpp and the exact windowed need, plus knob advice, as a result dict."""

from __future__ import annotations

from dataclasses import replace

from kvplan.errors import OptionError, UnsupportedError
from kvplan.options import COMPARE, resolve
from kvplan.results import Outcome
from kvplan.results.envelope import Envelope
from kvplan.results.records import CompareBody, EngineVersions
from kvplan.usecases.records import engine_row, model_record, serving_record, speculative_record
from kvplan.usecases.envelope import envelope
from kvplan.engines.vllm.eras import Era
from kvplan.usecases.deployment import changed, under
from kvplan.usecases.scenario import run_deployment, run_scenario, scenario_from, serving_options


def parse_policies(text: str | None, main: str) -> list[Era]:
    """The eras of ``--policies``: ``proposals`` (every proposal), ``none``, or a comma list of eras /
    releases / proposals (each once, the main policy's left out)."""
    from kvplan.engines.vllm import get_era
    from kvplan.engines.vllm.proposals import proposal_names

    if text is None or text.strip().lower() == "none":
        return []
    eras: list[Era] = []
    seen = {get_era(main).name}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        for e in [get_era(n) for n in proposal_names()] if item == "proposals" else [get_era(item)]:
            if e.name not in seen:
                seen.add(e.name)
                eras.append(e)
    return eras


def _length(r) -> int | None:
    mml, target = r["max_model_len"], r["target_len"]
    if mml == -1 or target == -1:
        raise OptionError("compare evaluates every engine at one fixed length: pass --target-len (or a number "
                          "for --max-model-len), not 'auto'")
    if target is not None and mml is not None and target != mml:
        raise OptionError(f"--target-len {target} and --max-model-len {mml} differ; compare evaluates every "
                          "engine at one length, pass one of them")
    return target or mml


def compare(model: str, **options) -> Envelope:
    from kvplan.engines.advice import advise, advise_vllm, vllm_thresholds
    from kvplan.engines.compare import CompareInputs
    from kvplan.engines.compare import compare as compare_engines
    from kvplan.engines.layer_costs import layer_costs
    from kvplan.engines.llamacpp import LLAMACPP_BUILD
    from kvplan.engines.sglang import SGLANG_VERSION
    from kvplan.engines.stages import require_version
    from kvplan.engines.trtllm import TRTLLM_COMMIT, TRTLLM_MAMBA_HYBRIDS, TRTLLM_VERSION, parse_shares

    r = resolve(COMPARE, options)
    if r["pipeline_parallel_size"] > 1:
        raise UnsupportedError("compare models one GPU per tensor-parallel rank; --pipeline-parallel-size > 1 is "
                               "not supported (use `kvplan simulate` for vLLM's pipeline stages)")
    length = _length(r)
    shares = parse_shares(r["trtllm_window_shares"]) if r["trtllm_window_shares"] else None
    versions = EngineVersions(
        sglang=require_version("--sglang-version", r["sglang_version"], SGLANG_VERSION, "SGLang"),
        trtllm=require_version("--trtllm-version", r["trtllm_version"], TRTLLM_VERSION, "TensorRT-LLM"),
        trtllm_commit=TRTLLM_COMMIT,
        llamacpp=require_version("--llamacpp-build", r["llamacpp_build"], LLAMACPP_BUILD, "llama.cpp"))
    extra = parse_policies(r["policies"], r["policy"])
    main = run_scenario(replace(scenario_from(model, r.values), max_model_len=length))
    layout, plan = main.layout, main.plan
    length = length or plan.max_model_len
    # the budget is now fixed (the sizing mode, if any, is spent)
    d = changed(main.deployment, max_model_len=length, kv_cache_memory=plan.options.kv_cache_memory_bytes,
                enable_extensible_kv_cache=None)
    plans = [plan] + [run_deployment(under(d, e), layout=layout).plan for e in extra]

    inputs = CompareInputs(
        kv_cache_memory_bytes=plan.options.kv_cache_memory_bytes, target_len_tokens=length,
        target_concurrency=r["target_concurrency"], max_num_batched_tokens=plan.options.max_num_batched_tokens,
        swa_full_tokens_ratio=r["swa_full_tokens_ratio"], sglang_page_size=r["sglang_page_size"],
        trtllm_window_shares=shares, trtllm_tokens_per_block=r["trtllm_tokens_per_block"],
        llamacpp_n_seq=r["llamacpp_n_seq"], llamacpp_n_ubatch=r["llamacpp_n_ubatch"], swa_full=r["swa_full"],
        llamacpp_kv_unified=r["llamacpp_kv_unified"],
        sglang_disable_overlap_schedule=r["sglang_disable_overlap_schedule"],
        sglang_swa_eviction_interval=r["sglang_swa_eviction_interval"],
        trtllm_scheduler_policy=r["trtllm_scheduler_policy"], trtllm_max_num_tokens=r["trtllm_max_num_tokens"],
        context_len_tokens=layout.target.max_position_embeddings,
        num_speculative_tokens=layout.num_speculative_tokens or 0,
        trtllm_max_attention_window=r["trtllm_max_attention_window"],
        trtllm_max_batch_size=r["trtllm_max_batch_size"], trtllm_enable_block_reuse=r["trtllm_enable_block_reuse"],
    )
    architecture = layout.target.architecture
    costs = layer_costs(layout.layers)
    comparison = compare_engines(costs, architecture, inputs, plans)

    tried = {t: run_deployment(under(d, d.policy_era, t), layout=layout).plan for t in vllm_thresholds(plan)}
    advice = advise(costs, architecture, inputs, advise_vllm(plan, tried, inputs.target_concurrency))
    warnings = list(layout.warnings)
    tp = r["tensor_parallel_size"]
    if tp > 1:
        warnings.append(f"every engine is modelled on one tensor-parallel rank's share (tp {tp}): "
                        "KV heads per rank as vLLM splits them")
    if r["decode_context_parallel_size"] > 1 or r["pipeline_parallel_size"] > 1:
        warnings.append("pipeline and decode-context parallelism are modelled for vLLM only; the other engines' "
                        "rows keep every layer and every token on one rank")
    if any(ls.spec.kind == "mamba" for ls in layout.layers) and architecture not in TRTLLM_MAMBA_HYBRIDS:
        warnings.append(f"TensorRT-LLM {TRTLLM_VERSION} builds its Mamba hybrid cache (MambaHybridCacheManager) for "
                        "Nemotron-H and Qwen3-Next only (_util.py get_kv_cache_manager_cls); its row applies those "
                        f"rules to {architecture}")
    body = CompareBody(
        model=model_record(layout.target), drafter=model_record(layout.drafter), speculative=speculative_record(layout),
        serving=serving_record(serving_options(d.serving, d.era), layout), engine_versions=versions, workload=comparison.inputs,
        lower_bound=comparison.lower_bound, engines=tuple(engine_row(row) for row in comparison.rows), advice=advice, budget=main.budget)
    return envelope("compare", options=r, outcome=Outcome(ok=True), body=body, model=layout.target,
                    drafter=layout.drafter, era=plan.era,
                    warnings=[*warnings, *(main.budget.warnings if main.budget is not None else ())])
