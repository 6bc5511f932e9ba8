"""`kvplan explain-log`: read a vLLM start-up log, rebuild the deployment, re-simulate it with
the logged release, set each logged figure beside kvplan's, and name the traps.

Missing lines are fine: ``missing`` lists what could not be recovered and ``rebuild.assumed``
what kvplan had to assume; nothing is filled in silently.
"""

from __future__ import annotations

from kvplan.logs import facts_of, read_log, read_records
from kvplan.logs.compare import figures, logged_starts
from kvplan.logs.release import infer_release
from kvplan.usecases.explain_log.rebuild import deployment, resimulate
from kvplan.usecases.explain_log.traps import find_traps
from kvplan.options import EXPLAIN, resolve
from kvplan.results import UNSET, outcome
from kvplan.results.envelope import Envelope
from kvplan.results.explain_log import ExplainLogBody, FactRow, FigureRow, LogSummary, Rebuild, SimulationSummary
from kvplan.results.recovered import (
    LoggedAdmissionError,
    LoggedAutofit,
    LoggedEngineConfig,
    LoggedOverride,
    LoggedPadding,
    LoggedServeCommand,
    Recovered,
)
from kvplan.usecases.envelope import envelope
from kvplan.units import plural

# what the rebuild and the cross-check need, and the line that gives it
_WANTED = (
    ("release", ("release", "engine_config"), "the vLLM release ('vLLM API server version ...')"),
    ("model", ("non_default_args", "engine_config", "serve_command", "model_name"),
     "the model ('non-default args: {...}', the engine config line or the vllm serve command)"),
    ("available_kv_memory", ("kv_cache_measured", "available_kv_memory", "kv_cache_memory_reserved", "memory_profile"),
     "the KV memory ('Available KV cache memory: ... GiB')"),
    ("capacity", ("kv_cache_size", "concurrency", "capacity", "admission_error", "admission_error_tokens",
                  "no_memory_error", "drafter_split", "page_error", "autofit_none", "exception", "engine_failed",
                  "num_gpu_blocks", "padding"),
     "the KV cache sizing ('GPU KV cache size', 'Maximum concurrency' or a start-up error)"),
)


def _first(facts, kind: str, key: str):
    """``key`` of the first ``kind`` fact (None: no such fact, or it does not show the key)."""
    f = facts.first(kind)
    return f.values.get(key) if f is not None else None


def _either(*values):
    """The first value shown (a figure more than one line gives: the first line's kind wins)."""
    return next((v for v in values if v is not None), None)


def _logged(cls, values: dict):
    """A fact's values as the record ``cls`` (its lists as tuples); a key the record does not
    know is an error, not a key dropped."""
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def recovered(facts) -> Recovered:
    """The facts as one summary (first occurrence of each; every occurrence is in ``facts``)."""
    rel = facts.first("release") or facts.first("engine_config")
    cmd = facts.first("serve_command")
    cfg = facts.first("engine_config")
    config = None
    if cfg:
        config = _logged(LoggedEngineConfig, {("max_model_len" if k == "max_seq_len" else k): v
                                              for k, v in cfg.values.items() if k != "version"})
    num_gpu_blocks = _first(facts, "num_gpu_blocks", "num_blocks")
    override = facts.first("override")
    af = facts.first("autofit")
    pads = facts.all("padding")
    hma = [f["reason"] for f in facts.all("hma_off")] + (["converted"] if facts.has("hma_off_converted") else [])
    err = facts.first("admission_error") or facts.first("admission_error_tokens")
    concurrency = facts.first("concurrency") or facts.first("capacity")
    # the engine config line's max_seq_len (a None too) comes before "Using max model len"
    max_model_len = _first(facts, "max_model_len", "max_model_len") if config is None or \
        config.max_model_len is UNSET else None
    return Recovered(
        release=(rel.values.get("version") or None) if rel else None,
        non_default_args=_first(facts, "non_default_args", "args"),
        serve_command=_logged(LoggedServeCommand, cmd.values) if cmd else None,
        engine_config=config,
        architecture=_first(facts, "architecture", "architecture"),
        max_model_len=max_model_len,
        max_num_batched_tokens=_first(facts, "max_num_batched_tokens", "max_num_batched_tokens"),
        async_scheduling=_first(facts, "async_scheduling", "async_scheduling"),
        model_loading_gib=_first(facts, "model_loading", "weights_gib"),
        available_kv_cache_memory_gib=_first(facts, "available_kv_memory", "gib"),
        kv_cache_measured_gib=_first(facts, "kv_cache_measured", "gib"),
        kv_cache_measured_num_blocks=_first(facts, "kv_cache_measured", "num_blocks"),
        kv_cache_memory_bytes_gib=_first(facts, "kv_cache_memory_reserved", "gib"),
        num_gpu_blocks=num_gpu_blocks,
        num_cpu_blocks=_first(facts, "num_gpu_blocks", "num_cpu_blocks"),
        kv_cache_size_gib=_first(facts, "memory_profile", "kv_cache_gib"),
        attention_backend=_first(facts, "attention_backend", "attention_backend"),
        override=LoggedOverride(num_gpu_blocks=override["num_blocks"] if num_gpu_blocks is None else None,
                                num_gpu_blocks_override=override["override"]) if override else None,
        kv_cache_size_tokens=_either(_first(facts, "kv_cache_size", "kv_cache_size_tokens"),
                                     _first(facts, "capacity", "kv_cache_size_tokens")),
        max_concurrency=_either(_first(facts, "concurrency", "max_concurrency"),
                                _first(facts, "capacity", "max_concurrency")),
        attention_block_size=_first(facts, "hybrid_block_size", "block_size"),
        mamba_page_padding_pct=_first(facts, "mamba_page_padding", "padding_pct"),
        consumed_gib=_first(facts, "memory_account", "consumed_gib"),
        cuda_graph_gib=_either(_first(facts, "cuda_graph", "gib"), _first(facts, "cuda_graph_pool", "actual_gib"),
                               _first(facts, "memory_account", "cuda_graph_gib")),
        weights_gib=_first(facts, "memory_account", "weights_gib"),
        kv_cache_memory_bytes_to_fit=_first(facts, "memory_account", "kv_cache_memory_bytes_to_fit"),
        gpu_memory_utilization_without_cuda_graphs=_first(facts, "cuda_graph_profiled", "without_cuda_graphs"),
        concurrency_max_model_len=concurrency["max_model_len"] if concurrency else None,
        autofit=_logged(LoggedAutofit, af.values) if af else None,
        padding=tuple(_logged(LoggedPadding, f.values) for f in pads) or None,
        hybrid_manager_off=tuple(hma) or None,
        admission_error=_logged(LoggedAdmissionError, err.values) if err else None,
        no_memory_error=facts.has("no_memory_error") or None,
        drafter_split=facts.has("drafter_split") or None,
        page_error=facts.has("page_error") or None,
        autofit_none=facts.has("autofit_none") or None,
    )


def missing(facts, dep) -> list[str]:
    """What the rebuild and the cross-check need and the log does not show (the budget may come
    from kv_cache_memory_bytes in the args, the model from a --model override)."""
    known = {"model": dep.model is not None, "available_kv_memory": dep.budget is not None}
    return [f"{what}: no line found" for key, kinds, what in _WANTED
            if not known.get(key) and not any(facts.has(k) for k in kinds)]


def verdict(status: str, rows: list[FigureRow], detail: str) -> str:
    if status not in ("simulated", "layout only"):
        return f"{status}: recovered facts only" + (f" ({detail})" if detail else "")
    compared = [r for r in rows if r.agrees is not None]
    if not compared:
        return ("layout only (no KV memory in the log); " if status == "layout only" else "re-simulated; ") + \
            "the log shows no figure to compare"
    if status == "layout only":
        bad = [r for r in compared if not r.agrees]
        head = "layout only (no KV memory in the log): "
        return (head + f"disagrees on {len(bad)} of {plural(len(compared), 'figure')}" if bad
                else head + f"agrees on {'the' if len(compared) == 1 else 'all'} {plural(len(compared), 'figure')}")
    bad = [r for r in compared if not r.agrees]
    if bad:
        return f"disagrees on {len(bad)} of {plural(len(compared), 'figure')}"
    return f"agrees on {'the' if len(compared) == 1 else 'all'} {plural(len(compared), 'figure')}"


def explain_log(source: str, **options) -> Envelope:
    r = resolve(EXPLAIN, options)
    text, name = read_log(source)
    records = read_records(text)
    facts = facts_of(records)
    given_policy = r["policy"] if "policy" in r.given else None
    banner = facts.first("release") or facts.first("engine_config")
    guess = infer_release(records, banner.values.get("version") if banner else None)
    dep = deployment(facts, model=r["model"], drafter=r["drafter"], policy=given_policy,
                     model_runner=r["model_runner"], guess=guess, settings=r["settings"])
    sim = resimulate(dep)
    era = sim.era  # None when the logged release is not in kvplan's registry
    from kvplan.engines.vllm.wording import log_line_meanings

    meanings = log_line_meanings(era) if era is not None else {}
    ran = sim if sim.status in ("simulated", "layout only") else None
    rows = figures(facts, ran, meanings, layout_only=sim.status == "layout only")
    traps = find_traps(facts, sim if sim.status == "simulated" else None,
                       layout=sim if sim.status == "layout only" else None)
    notes = list(dep.assumed)
    negative = [f for f in facts.all("available_kv_memory") if f["gib"] <= 0]
    if negative:
        notes.append(f"the available KV memory is {negative[0]['gib']} GiB (line {negative[0].line}): the weights and "
                     "the profiled activations leave nothing for the KV cache, so there is nothing to size")
    if dep.policy is None:
        notes.append("the release: not in the log; kvplan used its default policy "
                     f"({era.name if era else 'vllm-latest'}), so the meanings may not be the logged release's")
    result = sim.result
    simulated = result if result is not None and sim.status == "simulated" else None  # a full simulation
    policy_used = (f"{era.name} (vllm=={era.release})" if era is not None and era.release
                   else (era.name if era is not None else None))
    body = ExplainLogBody(
        log=LogSummary(name, len(text.splitlines()), len(records), len(facts.items)),
        release=guess,
        recovered=recovered(facts),
        facts=tuple(FactRow(f.kind, f.line, dict(f.values), f.text) for f in facts.items),
        missing=tuple(missing(facts, dep)),
        rebuild=Rebuild(dep, policy_used, sim.status, sim.detail, tuple(notes)),
        figures=tuple(rows),
        verdict=verdict(sim.status, rows, sim.detail),
        traps=tuple(traps),
        simulation=SimulationSummary.of(simulated.body) if simulated else None,
    )
    warnings = list(simulated.warnings) if simulated else []
    disagree = ran is not None and any(row.agrees is False for row in rows)
    starts = simulated.plan.starts if simulated else logged_starts(facts)
    failure = simulated.plan.failure if simulated else None
    fixes = simulated.body.fixes if simulated else ()
    out = outcome(ok=not disagree, starts=starts, stage=failure.stage if failure else None,
                  error_type=failure.error_type if failure else None, error=failure.message if failure else None,
                  fix=fixes[0].flag if fixes else None)
    if era is not None and era.warning:
        warnings.append(era.warning)
    return envelope("explain-log", options=r, outcome=out, body=body,
                    model=result.layout.target if result is not None else None,
                    drafter=result.layout.drafter if result is not None else None, era=era, warnings=warnings)
