"""`compare`: one model, budget and workload through every engine of the registry (``kvplan.engines.registry``:
vLLM's eras and proposals, SGLang, TensorRT-LLM, llama.cpp) and the exact windowed need, plus knob advice, as a
result record.

The options are read once, at the edge (each engine reads its own knobs: ``Engine.inputs``); vLLM's plans come from the
scenario use case (the main policy's, then ``plans_under`` for the other policies and the threshold
advice's candidates); every engine then answers once, its row and its advice from its own module
(``compare_engines``); the body is filled from those answers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.engines.compare import CompareInputs, EngineRow
from kvplan.engines.engine import CompareRun
from kvplan.engines.lower_bound import LowerBound
from kvplan.engines.vllm.eras import Era
from kvplan.errors import OptionError, UnsupportedError
from kvplan.options import COMPARE, resolve
from kvplan.results import Outcome
from kvplan.results.advice import Advice
from kvplan.results.envelope import Envelope
from kvplan.results.compare import CompareBody, EngineVersions
from kvplan.usecases.envelope import envelope
from kvplan.usecases.records import engine_row, model_record, serving_record, speculative_record
from kvplan.usecases.pipeline import plans_under, serving_options
from kvplan.usecases.scenario import run_scenario, scenario_from

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


@dataclass(frozen=True)
class Comparison:
    """Every engine on one workload, each engine's answer in its place."""

    run: CompareRun  # what every engine answered from: the layers' costs, the workload and the knobs, vLLM's plans
    lower_bound: LowerBound  # the floor: the exact windowed need
    rows: tuple[EngineRow, ...]  # vLLM's (one per policy, the main policy's first), SGLang's, TensorRT-LLM's, ...
    advice: Advice  # each engine's knob for the workload

    def row(self, engine: str, name: str | None = None) -> EngineRow:
        return next(r for r in self.rows if r.engine == engine and (name is None or r.name == name))


def compare_engines(costs, architecture: str | None, inputs: CompareInputs, vllm_plans=(),
                    vllm_tried: dict | None = None, *, has_mamba: bool = False) -> Comparison:
    """Every engine of the registry (``kvplan.engines.registry.ENGINES``) on the same layers (their ``layer_costs``),
    budget and length, each asked once for its row and its advice. ``vllm_plans``: ready plans, the main policy's
    first (compare runs them through the pipeline, so they match ``simulate`` exactly); ``vllm_tried``: the main plan
    under each of ``vllm_thresholds(vllm_plans[0])`` (None: no vLLM advice)."""
    from kvplan.engines.lower_bound import lower_bound, lower_bound_row
    from kvplan.engines.registry import ENGINES

    lb = lower_bound(costs, inputs.target_len_tokens, inputs.kv_cache_memory_bytes)
    run = CompareRun(tuple(costs), architecture, inputs, lb, tuple(vllm_plans), vllm_tried, has_mamba)
    answers = {e.name: e.compared(run) for e in ENGINES}
    rows = (*(row for a in answers.values() for row in a.rows), lower_bound_row(lb))
    advice = Advice(target_len_tokens=inputs.target_len_tokens, target_concurrency=inputs.target_concurrency,
                    engines={name: a.advice for name, a in answers.items()})
    return Comparison(run, lb, rows, advice)


def compare(model: str, **options) -> Envelope:
    from kvplan.engines.layer_costs import layer_costs
    from kvplan.engines.registry import ENGINES
    from kvplan.engines.vllm.compare import vllm_thresholds

    # the edge: every option read and checked once, before anything runs
    r = resolve(COMPARE, options)
    if r["pipeline_parallel_size"] > 1:
        raise UnsupportedError("compare models one GPU per tensor-parallel rank; --pipeline-parallel-size > 1 is "
                               "not supported (use `kvplan simulate` for vLLM's pipeline stages)")
    length = _length(r)
    knobs = {e.name: e.inputs(r.values) for e in ENGINES}  # each engine reads its own options into its record
    versions = EngineVersions({k: v for e in ENGINES
                               for k, v in e.versions(r[e.version_option] if e.version_option else None).items()})
    extra = parse_policies(r["policies"], r["policy"])
    scenario = replace(scenario_from(model, r.values), max_model_len=length)

    # vLLM: the main policy's run (compare shows no fixes: none are searched), then the same deployment on
    # the budget it resolved under the other policies and the threshold advice's candidates
    main = run_scenario(scenario, fixes=False)
    layout, plan, d = main.layout, main.plan, main.deployment
    length = length or plan.max_model_len
    extra_plans, tried = plans_under(main, extra, vllm_thresholds(plan), max_model_len=length)

    inputs = CompareInputs(
        kv_cache_memory_bytes=plan.options.kv_cache_memory_bytes, target_len_tokens=length,
        max_num_batched_tokens=plan.options.max_num_batched_tokens, target_concurrency=r["target_concurrency"],
        context_len_tokens=layout.target.max_position_embeddings,
        num_speculative_tokens=layout.num_speculative_tokens or 0, engines=knobs,
    )
    architecture = layout.target.architecture
    has_mamba = any(ls.spec.kind == "mamba" for ls in layout.layers)
    comparison = compare_engines(layer_costs(layout.layers), architecture, inputs, [plan, *extra_plans], tried,
                                 has_mamba=has_mamba)

    warnings = list(layout.warnings)
    tp = d.serving.tensor_parallel_size
    if tp > 1:
        warnings.append(f"every engine is modelled on one tensor-parallel rank's share (tp {tp}): "
                        "KV heads per rank as vLLM splits them")
    if d.serving.decode_context_parallel_size > 1 or d.serving.pipeline_parallel_size > 1:
        warnings.append("pipeline and decode-context parallelism are modelled for vLLM only; the other engines' "
                        "rows keep every layer and every token on one rank")
    for e in ENGINES:  # what each engine's rows do not model for this model
        warnings += e.warnings(comparison.run)
    body = CompareBody(
        model=model_record(layout.target), drafter=model_record(layout.drafter), speculative=speculative_record(layout),
        serving=serving_record(serving_options(d.serving, d.era), layout), engine_versions=versions,
        workload=comparison.run.inputs, lower_bound=comparison.lower_bound,
        engines=tuple(engine_row(row) for row in comparison.rows), advice=comparison.advice, budget=main.budget)
    return envelope("compare", options=r, outcome=Outcome(ok=True), body=body, model=layout.target,
                    drafter=layout.drafter, era=plan.era,
                    warnings=[*warnings, *(main.budget.warnings if main.budget is not None else ())])
