"""kvplan's simulation as a case of the vLLM runner (``vllm_runner.py``), and back.

``runner_case(plan)`` writes down exactly the scenario kvplan simulated, in the runner's case
format (its docstring): the per-layer specs vLLM's ``get_kv_cache_groups`` receives (after the
config-time Mamba alignment, which vLLM does from the model config before the engine core runs;
the K/V head sizes as the model gives them, so a release whose spec class lacks ``head_size_v``
drops it itself), the pipeline stages, each stage's budget, and every setting the layout
functions read, as kvplan resolved it (the batch size, async scheduling, the model runner, the
hybrid manager, prefix caching and the Mamba cache mode). ``--cross-check`` and
``scripts/golden/make_goldens.py`` both build their cases here.

``plan_from_case(case, era)`` is the inverse: kvplan's simulation of a recorded case (the
goldens, the random differential).
"""

from __future__ import annotations

import json
from dataclasses import replace

from kvplan.specs import SPEC_KEYS, KVCacheSpec, LayerSpec, spec_from_dict, spec_to_dict

# the spec keys a case carries (the page size is derived, not an input of vLLM's spec classes)
CASE_SPEC_KEYS = tuple(k for k in SPEC_KEYS if k != "page_size_bytes")
# spec fields carried only where a spec has them (older releases have no such fields): a backend's packing
# (num_head_slots, state_content_bytes) and DeepSeek-V4's (0.34.0)
OPTIONAL_SPEC_KEYS = frozenset({"num_head_slots", "state_content_bytes", "tokens_per_state", "alignment",
                                "model_version"})


def case_specs(plan) -> dict[str, KVCacheSpec]:
    """Each layer's spec as vLLM's grouping receives it: Mamba-aligned (kvplan's config-time
    step), with the model's own ``head_size_v`` (an era that predates the field drops it inside
    kvplan; the runner drops it where the release's class has no such field)."""
    aligned = plan.engine_specs
    out = {}
    for ls in plan.layers:
        spec = aligned.get(ls.name, ls.spec)
        raw_v = getattr(ls.spec, "head_size_v", None)
        if raw_v is not None and getattr(spec, "head_size_v", raw_v) != raw_v:
            spec = replace(spec, head_size_v=raw_v)
        out[ls.name] = spec
    return out


def prefix_caching(plan) -> bool:
    """Prefix caching as vLLM runs the deployment: as given, else on (vLLM's default), except for
    hybrid Mamba models before 0.33 (the era's ``hybrid_prefix_caching_default``)."""
    given = plan.options.enable_prefix_caching
    if given is not None:
        return bool(given)
    return bool(plan.era.hybrid_prefix_caching_default) if plan.mamba is not None else True


def runner_case(plan, name: str, *, model: str | None = None, drafter: str | None = None) -> dict:
    """The runner case for ``plan`` (compact form: ``spec_table`` + ``[name, index, source]``)."""
    o, facts = plan.options, plan.facts
    specs = case_specs(plan)
    stages = plan.ranks or (tuple(ls.name for ls in plan.layers),)
    source = {ls.name: ls.source for ls in plan.layers}
    table: list[dict] = []
    index: dict[str, int] = {}
    workers = []
    for names in stages:
        w = []
        for n in names:
            d = spec_to_dict(specs[n])
            spec = {k: d.get(k) for k in CASE_SPEC_KEYS if k not in OPTIONAL_SPEC_KEYS or d.get(k) is not None}
            key = json.dumps(spec, sort_keys=True)
            if key not in index:
                index[key] = len(table)
                table.append(spec)
            w.append([n, index[key], source[n]])
        workers.append(w)
    per_worker = o.kv_cache_memory_bytes_per_worker
    memory = list(per_worker) if per_worker is not None and len(per_worker) == len(workers) else o.kv_cache_memory_bytes
    runner_given = o.use_v2_model_runner is not None
    case = {
        "case": name,
        "model": model,
        "drafter": drafter,
        "spec_table": table,
        "workers": workers,
        "available_memory_bytes": memory,
        "max_model_len": -1 if o.max_model_len == -1 else plan.original_max_model_len,
        "max_num_batched_tokens": o.max_num_batched_tokens,
        "async_scheduling": plan.runner.async_scheduling if plan.runner else o.async_scheduling is not False,
        "disable_hybrid_kv_cache_manager": bool(plan.hma.disabled) if plan.hma else False,
        "num_gpu_blocks_override": o.num_gpu_blocks_override,
        "mamba_cache_mode": plan.mamba.mamba_cache_mode if plan.mamba else (o.mamba_cache_mode or "none"),
        "enable_prefix_caching": prefix_caching(plan),
        "pipeline_parallel_size": len(workers),
        "tensor_parallel_size": o.tensor_parallel_size,
        **({"decode_context_parallel_size": o.decode_context_parallel_size}
           if o.decode_context_parallel_size != 1 else {}),
        # the runner kvplan resolved when it was given; else the release picks it (and the
        # comparison checks that both picked the same)
        "use_v2_model_runner": o.use_v2_model_runner if runner_given else None,
        "model_runner_probe": None if runner_given else {"speculative_method": facts.speculative_method,
                                                         "parallel_drafting": plan.parallel_drafting},
        "layer_source": "kvplan simulate",
    }
    if o.max_model_len == -1:
        case["derived_max_model_len"] = facts.max_model_len
    if plan.decision is not None and plan.decision.path == "packed":
        # what the workers report: DeepSeek-V4's indexer backend declares BLHNC, BLNHC and no other backend
        # of the model declares any (0.34.0 v1/attention/backends/mla/indexer.py lines 297-301)
        case["supported_kv_cache_layouts"] = ["BLHNC", "BLNHC"]
    if plan.mamba is not None:
        m = plan.mamba
        case["alignment"] = {"mamba_cache_mode": m.mamba_cache_mode, "enable_prefix_caching": case["enable_prefix_caching"],
                             "kernel_alignment": m.kernel_alignment_tokens,
                             "attention_bytes_per_token": m.attention_bytes_per_token,
                             "mamba_state_bytes": m.mamba_page_bytes, "attention_block_size": m.attention_block_size,
                             "mamba_block_size": m.mamba_block_size, "page_size_bytes": m.attention_page_bytes}
    return case


def case_layers(case: dict) -> tuple[tuple[LayerSpec, ...], tuple[tuple[str, ...], ...]]:
    """A case's layers (registration order) and layer names per worker."""
    table: list[dict] = case.get("spec_table") or []  # a compact layer [name, index, source] indexes it
    seen: dict[str, LayerSpec] = {}
    ranks = []
    for worker in case["workers"]:
        names = []
        for entry in worker:
            if isinstance(entry, list):
                name, idx, source = entry
                spec = spec_from_dict(table[idx])
            else:
                name, source, spec = entry["name"], entry["source"], spec_from_dict(entry)
            if name not in seen:
                seen[name] = LayerSpec(name, spec, source, len(seen))
            names.append(name)
        ranks.append(tuple(names))
    return tuple(seen.values()), tuple(ranks)


def case_parallel_drafting(case: dict, era) -> bool | None:
    """The probe's ``parallel_drafting`` as the user's ``speculative_config.parallel_drafting``
    (the probe set it on the stand-in speculative config, 0.33.0 and earlier). From 0.34.0 the
    runner's probe builds no speculative config (V1 is gone, nothing to choose), so the case
    records the runner choice only; 0.34.0 would refuse an explicit True with eagle3, so there
    the case stands for the key not given."""
    probe = case.get("model_runner_probe") or {}
    given = probe.get("parallel_drafting")
    if given is None or era.parallel_drafting_option != "opt_in":
        return None
    return bool(given)


def plan_from_case(case: dict, era):
    """kvplan's simulation of a runner case under ``era``."""
    from kvplan.engines.vllm import ModelFacts, SimulateOptions, simulate

    layers, ranks = case_layers(case)
    mem = case["available_memory_bytes"]
    per_worker = tuple(mem) if isinstance(mem, list) else None
    mml = case["max_model_len"]
    probe = case.get("model_runner_probe")
    drafter = any(x.source == "drafter" for x in layers)
    facts = ModelFacts(
        max_model_len=case.get("derived_max_model_len", mml) if mml == -1 else mml,
        speculative_method="eagle3" if drafter else None,
    )
    options = SimulateOptions(
        kv_cache_memory_bytes=min(mem) if per_worker else mem,
        kv_cache_memory_bytes_per_worker=per_worker,
        max_model_len=mml,
        max_num_batched_tokens=case["max_num_batched_tokens"],
        async_scheduling=case.get("async_scheduling", True),
        enable_prefix_caching=case.get("enable_prefix_caching"),
        mamba_cache_mode=case.get("mamba_cache_mode"),
        disable_hybrid_kv_cache_manager=case.get("disable_hybrid_kv_cache_manager"),
        num_gpu_blocks_override=case.get("num_gpu_blocks_override"),
        # with a probe the release picked the runner itself, and so does kvplan
        use_v2_model_runner=None if probe else bool(case.get("use_v2_model_runner")),
        decode_context_parallel_size=case.get("decode_context_parallel_size", 1),
        tensor_parallel_size=case.get("tensor_parallel_size", 1),
        parallel_drafting=case_parallel_drafting(case, era),
        **_offloading_options(case.get("kv_offloading"), era,
                              case.get("tensor_parallel_size", 1) * case.get("pipeline_parallel_size", 1)),
    )
    return simulate(layers, ranks if len(ranks) > 1 else (), facts, era, options)


def _offloading_options(off: dict | None, era=None, num_kv_ranks: int = 1) -> dict:
    """A case's ``kv_offloading`` (``--kv-offloading-size`` / ``--kv-offloading-backend`` and extra connector keys)
    as the engine's options: the transfer config vLLM's post-init makes of them."""
    if not off:
        return {}
    from kvplan.engines.vllm.offload import transfer_config

    backend = off.get("backend", "native")
    # the runner sets the backend explicitly, as --kv-offloading-backend does (0.12-0.13 need it)
    config = transfer_config(None, off["size_gib"], backend, era=era, num_kv_ranks=num_kv_ranks)
    assert config is not None, "a size always makes a transfer config"
    if config.get("kv_connector") != "LMCacheConnectorV1":  # 0.12-0.22 replace its extra config
        config["kv_connector_extra_config"].update(off.get("extra_config") or {})
    return {"kv_transfer_config": config, "kv_offloading_backend": backend}
