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
from kvplan.results import outcome
from kvplan.results.envelope import Envelope
from kvplan.results.records import ExplainLogBody, FactRow, LogSummary, Rebuild, SimulationSummary
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


def recovered(facts) -> dict:
    """The facts as one summary (first occurrence of each; every occurrence is in ``facts``)."""
    out: dict = {}
    rel = facts.first("release") or facts.first("engine_config")
    if rel and rel.values.get("version"):
        out["release"] = rel["version"]
    nda = facts.first("non_default_args")
    if nda:
        out["non_default_args"] = nda["args"]
    cmd = facts.first("serve_command")
    if cmd:
        out["serve_command"] = dict(cmd.values)
    cfg = facts.first("engine_config")
    if cfg:
        for k, v in cfg.values.items():
            if k != "version":
                out.setdefault(k if k != "max_seq_len" else "max_model_len", v)
    for kind, key, name in (("architecture", "architecture", "architecture"),
                            ("max_model_len", "max_model_len", "max_model_len"),
                            ("max_num_batched_tokens", "max_num_batched_tokens", "max_num_batched_tokens"),
                            ("async_scheduling", "async_scheduling", "async_scheduling"),
                            ("model_loading", "weights_gib", "model_loading_gib"),
                            ("available_kv_memory", "gib", "available_kv_cache_memory_gib"),
                            ("kv_cache_measured", "gib", "kv_cache_measured_gib"),
                            ("kv_cache_measured", "num_blocks", "kv_cache_measured_num_blocks"),
                            ("kv_cache_memory_reserved", "gib", "kv_cache_memory_bytes_gib"),
                            ("num_gpu_blocks", "num_blocks", "num_gpu_blocks"),
                            ("num_gpu_blocks", "num_cpu_blocks", "num_cpu_blocks"),
                            ("memory_profile", "kv_cache_gib", "kv_cache_size_gib"),
                            ("attention_backend", "attention_backend", "attention_backend"),
                            ("override", "num_blocks", "num_gpu_blocks"),
                            ("override", "override", "num_gpu_blocks_override"),
                            ("kv_cache_size", "kv_cache_size_tokens", "kv_cache_size_tokens"),
                            ("capacity", "kv_cache_size_tokens", "kv_cache_size_tokens"),
                            ("concurrency", "max_concurrency", "max_concurrency"),
                            ("capacity", "max_concurrency", "max_concurrency"),
                            ("hybrid_block_size", "block_size", "attention_block_size"),
                            ("mamba_page_padding", "padding_pct", "mamba_page_padding_pct"),
                            ("memory_account", "consumed_gib", "consumed_gib"),
                            ("cuda_graph", "gib", "cuda_graph_gib"),
                            ("cuda_graph_pool", "actual_gib", "cuda_graph_gib"),
                            ("memory_account", "cuda_graph_gib", "cuda_graph_gib"),
                            ("memory_account", "weights_gib", "weights_gib"),
                            ("memory_account", "kv_cache_memory_bytes_to_fit", "kv_cache_memory_bytes_to_fit"),
                            ("cuda_graph_profiled", "without_cuda_graphs", "gpu_memory_utilization_without_cuda_graphs")):
        f = facts.first(kind)
        if f is not None and key in f.values:
            out.setdefault(name, f[key])
    for kind in ("concurrency", "capacity"):
        f = facts.first(kind)
        if f is not None:
            out.setdefault("concurrency_max_model_len", f["max_model_len"])
    af = facts.first("autofit")
    if af:
        out["autofit"] = dict(af.values)
    pads = facts.all("padding")
    if pads:
        out["padding"] = [dict(f.values) for f in pads]
    hma = [f["reason"] for f in facts.all("hma_off")] + (["converted"] if facts.has("hma_off_converted") else [])
    if hma:
        out["hybrid_manager_off"] = hma
    err = facts.first("admission_error") or facts.first("admission_error_tokens")
    if err:
        out["admission_error"] = dict(err.values)
    for kind in ("no_memory_error", "drafter_split", "page_error", "autofit_none"):
        if facts.has(kind):
            out[kind] = True
    return out


def missing(facts, dep) -> list[str]:
    """What the rebuild and the cross-check need and the log does not show (the budget may come
    from kv_cache_memory_bytes in the args, the model from a --model override)."""
    known = {"model": dep.model is not None, "available_kv_memory": dep.budget is not None}
    return [f"{what}: no line found" for key, kinds, what in _WANTED
            if not known.get(key) and not any(facts.has(k) for k in kinds)]


def verdict(status: str, rows: list[dict], detail: str) -> str:
    if status not in ("simulated", "layout only"):
        return f"{status}: recovered facts only" + (f" ({detail})" if detail else "")
    compared = [r for r in rows if r["agrees"] is not None]
    if not compared:
        return ("layout only (no KV memory in the log); " if status == "layout only" else "re-simulated; ") + \
            "the log shows no figure to compare"
    if status == "layout only":
        bad = [r for r in compared if not r["agrees"]]
        head = "layout only (no KV memory in the log): "
        return (head + f"disagrees on {len(bad)} of {plural(len(compared), 'figure')}" if bad
                else head + f"agrees on {'the' if len(compared) == 1 else 'all'} {plural(len(compared), 'figure')}")
    bad = [r for r in compared if not r["agrees"]]
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
    simulated = result is not None and sim.status == "simulated"
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
        simulation=SimulationSummary.of(result.body) if simulated else None,
    )
    warnings = list(result.warnings) if simulated else []
    disagree = ran is not None and any(row["agrees"] is False for row in rows)
    starts = result.plan.starts if simulated else logged_starts(facts)
    failure = result.plan.failure if simulated else None
    fixes = result.body.fixes if simulated else ()
    out = outcome(ok=not disagree, starts=starts, stage=failure.stage if failure else None,
                  error_type=failure.error_type if failure else None, error=failure.message if failure else None,
                  fix=fixes[0].flag if fixes else None)
    if era is not None and era.warning:
        warnings.append(era.warning)
    return envelope("explain-log", options=r, outcome=out, body=body,
                    model=result.layout.target if result is not None else None,
                    drafter=result.layout.drafter if result is not None else None, era=era, warnings=warnings)
