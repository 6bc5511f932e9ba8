"""Turn layouts and plans into plain, ordered dicts: the one source for JSON, YAML and tables.

Keys use vLLM's vocabulary (block_size, page_size_bytes, num_blocks, group_size,
shared_by, sliding_window, attention_chunk_size, max_concurrency), sizes are
integer bytes with ``_bytes`` names, token counts end in ``_tokens``.
"""

from __future__ import annotations

import re
from collections import Counter

from dataclasses import dataclass

from kvplan.results import to_data, view
from kvplan.specs import AttentionSpec, MambaSpec, UniformTypeKVCacheSpecs, spec_to_dict

_INDEX_RE = re.compile(r"layers\.(\d+)\.")


def layer_index(name: str) -> str:
    """A short label for a layer name: its decoder index, ``mtp0`` for MTP layers."""
    m = _INDEX_RE.search(name)
    if name.startswith("mtp.") or ".mtp." in name:
        return f"mtp{m.group(1) if m else ''}"
    if m:
        suffix = "i" if "indexer" in name else ""
        return m.group(1) + suffix
    return name


def kind_label(spec) -> str:
    """``sliding(128)``, ``chunked(8192)``, ``full``, ``mla``, ``mamba:gdn``…"""
    if isinstance(spec, UniformTypeKVCacheSpecs):
        return "uniform-type"
    d = spec_to_dict(spec)
    if d["kind"] == "sliding_window":
        return f"sliding({d['sliding_window']})"
    if d["kind"] == "chunked_local":
        return f"chunked({d['attention_chunk_size']})"
    if d["kind"] == "mamba":
        return f"mamba:{d['mamba_type']}"
    if d["kind"] == "full_attention":
        extra = ""
        if d["sliding_window"]:
            extra = f"[window {d['sliding_window']}]"
        elif d["attention_chunk_size"]:
            extra = f"[chunk {d['attention_chunk_size']}]"
        return "full" + extra
    if d["kind"] == "mla":
        return f"mla({d['head_size']})"  # the latent (576) and V3.2's indexer cache (132) differ
    return d["kind"].replace("_attention", "")


# the model layer's ModelInfo (kvplan.model) as results show it
MODEL_INFO = {"id": "source.model_id", "source": "source.kind", "path": "source.path", "revision": "source.revision",
              **{k: k for k in ("provenance", "architecture", "model_type", "family", "num_hidden_layers", "dtype")}}


def model_info_dict(info) -> dict | None:
    return view(info, MODEL_INFO)


def serving_dict(serving, layout=None) -> dict:
    """The serving options as resolved: with a layout, its block size (before any hybrid Mamba alignment)
    and the attention backend the engine's block-size decision picked (--attention-backend or the GPU's)."""
    decision = getattr(layout, "block_size_decision", None)
    return {
        "block_size": layout.block_size if layout is not None else serving.block_size,
        "attention_backend": decision.attention_backend if decision is not None else serving.attention_backend,
        # what the backend choice assumed (no --gpu: an H100), else None
        "attention_backend_note": getattr(decision, "note", None),
        "kv_cache_dtype": serving.kv_cache_dtype,
        "dtype": serving.dtype,
        "tensor_parallel_size": serving.tensor_parallel_size,
        "pipeline_parallel_size": serving.pipeline_parallel_size,
    }


def layer_dict(ls, spec=None) -> dict:
    return {"index": ls.index, "name": ls.name, "source": ls.source, **spec_to_dict(spec or ls.spec)}


def bytes_per_token(spec) -> int | None:
    """KV bytes one token costs in this layer (None for state layers, which do not grow)."""
    if isinstance(spec, AttentionSpec):
        return spec.page_size_bytes // spec.block_size
    return None


def kind_summary(layers) -> list[dict]:
    """Per distinct spec and source: layer count, bytes per token per layer and in total."""
    rows: dict[tuple, dict] = {}
    for ls in layers:
        label = kind_label(ls.spec)
        key = (ls.spec, ls.source)
        row = rows.setdefault(
            key,
            {"kind": ls.spec.kind, "label": label, "source": ls.source, "num_layers": 0,
             "page_size_bytes": ls.spec.page_size_bytes, "kv_bytes_per_token": bytes_per_token(ls.spec),
             "state_bytes": ls.spec.page_size_bytes if isinstance(ls.spec, MambaSpec) else None},
        )
        row["num_layers"] += 1
    out = []
    for row in rows.values():
        per = row["kv_bytes_per_token"]
        row["kv_bytes_per_token_total"] = per * row["num_layers"] if per is not None else None
        out.append(row)
    return out


def inspect_dict(layout, serving) -> dict:
    layers = layout.layers
    summary = kind_summary(layers)
    return {
        "model": model_info_dict(layout.target),
        "drafter": model_info_dict(layout.drafter),
        "speculative": {
            "method": layout.speculative_method,
            "num_speculative_tokens": layout.num_speculative_tokens,
        },
        "serving": serving_dict(serving, layout),
        "num_layers": len(layers),
        "layers": [layer_dict(ls) for ls in layers],
        "summary": summary,
        "kv_bytes_per_token": sum(r["kv_bytes_per_token_total"] or 0 for r in summary),
        "state_bytes_per_request": sum((r["state_bytes"] or 0) * r["num_layers"] for r in summary),
        "ranks": [
            {"rank": i, "num_layers": len(names), "layers": [layer_index(n) for n in names]}
            for i, names in enumerate(layout.ranks)
        ],
        "kv_sharing_layers": list(layout.kv_sharing_layers),
        "notes": list(layout.notes),
        "warnings": list(layout.warnings),
    }


@dataclass(frozen=True)
class PolicyRecord:
    """An era as results show it: the one serialisation of ``Era`` (a plan's ``policy``; the
    envelope's ``inputs.policy`` is its ``INPUT_KEYS``)."""

    name: str
    vllm_release: str | None  # the release asked for (vllm==X) or installed
    release_note: str | None  # "installed", "unchecked"
    warning: str | None
    threshold: float | None
    description: str
    vllm_releases: tuple[str, ...]
    grouping: str
    is_proposal: bool

    INPUT_KEYS = ("name", "vllm_release", "release_note", "vllm_releases", "threshold", "is_proposal")

    @classmethod
    def of(cls, era) -> "PolicyRecord":
        return cls(era.name, era.release or None, era.release_note or None, era.warning or None, era.threshold,
                   era.description, tuple(era.releases), era.grouping, era.is_proposal)


def era_dict(era) -> dict:
    return to_data(PolicyRecord.of(era))


def policy_label(p: dict) -> str:
    """``vllm==0.24.0 (installed)`` for a release, else the era or proposal name."""
    if p.get("vllm_release"):
        note = f" ({p['release_note']})" if p.get("release_note") else ""
        return f"vllm=={p['vllm_release']}{note}"
    return p["name"]


def _group_rows(plan) -> list[dict]:
    drafter_names = {ls.name for ls in plan.layers if ls.source == "drafter"}
    G = plan.group_size  # the global decision: every group has group_size slots, short ones are padded
    bpr = plan.blocks_per_request or [None] * len(plan.groups)
    check = _binding_check(plan)
    ranks = [set(r) for r in plan_ranks(plan)]
    rows = []
    for i, (g, blocks) in enumerate(zip(plan.groups, bpr)):
        row = {
            "index": i,
            "kind": g.spec.kind,
            "label": kind_label(g.spec),
            "block_size": g.spec.block_size,
            "page_size_bytes": g.spec.page_size_bytes,
            "num_layers": len(g.layer_names),
            "padding_slots": max(G - len(g.layer_names), 0) if g.spec.kind != "uniform_type" else 0,
            "layers": [layer_index(n) for n in g.layer_names],
            "layer_names": list(g.layer_names),
            "has_drafter_layers": any(n in drafter_names for n in g.layer_names),
            "drafter_layers": [layer_index(n) for n in g.layer_names if n in drafter_names],
            "blocks_per_request": blocks,
            # one max-length request's blocks in this group, priced at the pool's bytes per block
            "needed_bytes": blocks * check.bytes_per_block if (blocks is not None and check) else None,
            "steady_blocks_per_request": plan.steady.blocks_per_request[i] if plan.steady else None,
        }
        if len(ranks) > 1:
            row["num_layers_per_worker"] = [sum(1 for n in g.layer_names if n in r) for r in ranks]
        rows.append(row)
    return rows


def plan_ranks(plan) -> list[tuple[str, ...]]:
    """Layer names per worker (one worker without pipeline parallelism)."""
    return list(getattr(plan, "ranks", ()) or ()) or [tuple(ls.name for ls in plan.layers)]


def _binding_check(plan):
    """The worker whose numbers the memory section shows: the one that fails the admission
    check, else the one whose own pool is smallest (it sets the engine-wide num_blocks)."""
    checks = plan.worker_checks
    if not checks:
        return None
    return plan.failing_worker or min(checks, key=lambda c: (c.num_blocks, c.rank))


def worker_padding(check, blocks_per_request: list[int], num_blocks: int) -> dict:
    """Padding on one worker: each block id of group g holds ``group_size − n_g`` unused
    pages there (``n_g`` = the group's layers on this worker). With the pool full of
    max-length requests, that is the share Σ b_g·(G − n_g) / (G · Σ b_g) of the pool.
    Never negative: G is the largest n_g on the worker."""
    G = check.group_size
    counts = [len(g.layer_names) for g in check.groups]
    pool = check.bytes_per_block * num_blocks
    total = sum(blocks_per_request)
    uniform_type = len(check.groups) == 1 and check.groups[0].spec.kind == "uniform_type"
    slots = sum(max(G - n, 0) for n in counts)
    if uniform_type or not total or not G:
        return {"padding_slots_per_block": 0, "padding_waste_bytes": 0, "padding_waste_pct_of_pool": 0.0}
    held = sum(b * max(G - n, 0) for b, n in zip(blocks_per_request, counts))
    waste = pool * held // (G * total)
    return {
        "padding_slots_per_block": slots,
        "padding_waste_bytes": waste,
        "padding_waste_pct_of_pool": round(waste / pool * 100, 4) if pool else 0.0,
    }


def padding_waste_bytes(plan) -> int:
    """Padding bytes at full load on the worker the memory section shows (see worker_padding)."""
    check = _binding_check(plan)
    if check is None or not plan.blocks_per_request:
        return 0
    return worker_padding(check, plan.blocks_per_request, plan.num_blocks)["padding_waste_bytes"]


def _blocks_meaning(plan) -> int:
    """num_blocks // num_groups · min block_size (vLLM ≤ 0.20): pool size in tokens, padding included."""
    if not plan.groups or not plan.num_blocks:
        return 0
    tokens = plan.num_blocks // len(plan.groups) * min(g.spec.block_size for g in plan.groups)
    return tokens * max(plan.options.decode_context_parallel_size, 1)


def _tensor_rows(tensors) -> list[dict]:
    return [{"index": i, "size_bytes": t.size_bytes, "shared_by": list(t.shared_by)} for i, t in enumerate(tensors)]


def workers_dict(plan) -> list[dict]:
    """One entry per worker (pipeline stage; TP ranks are identical): its layers, pool,
    tensors, admission numbers and padding. ``num_blocks`` is the engine-wide figure
    (the minimum over workers); ``own_num_blocks`` what the worker's memory alone gives."""
    configs = {w.rank: w for w in plan.workers}
    ranks = plan_ranks(plan)
    out = []
    for c in plan.worker_checks:
        w = configs.get(c.rank)
        allocated = w is not None  # configs exist once the admission check passed (a drafter check fails after)
        num_blocks = w.num_blocks if allocated else c.num_blocks
        pool = c.bytes_per_block * num_blocks
        names = ranks[c.rank] if c.rank < len(ranks) else ()
        out.append({
            "rank": c.rank,
            "available_bytes": c.available_bytes,
            "group_size": c.group_size,
            "num_layers": sum(len(g.layer_names) for g in c.groups),
            "layers": [layer_index(n) for n in names],
            "group_layer_counts": [len(g.layer_names) for g in c.groups],
            "bytes_per_block": c.bytes_per_block,
            "own_num_blocks": c.num_blocks,
            "num_blocks": num_blocks,
            "allocated": allocated,
            "allocated_bytes": pool if allocated else 0,
            "unused_bytes": max(c.available_bytes - pool, 0) if allocated else c.available_bytes,
            "needed_bytes": c.needed_bytes,
            "checked_available_bytes": c.checked_available_bytes,
            "fits": c.fits,
            "estimated_max_model_len": c.estimated_max_model_len,
            # at full load of the allocated pool (nothing is allocated when the engine fails)
            **worker_padding(c, plan.blocks_per_request, num_blocks if allocated else 0),
            "num_tensors": len(w.tensors) if w else 0,
            "tensors": _tensor_rows(w.tensors) if allocated else [],
        })
    if not out:  # attention-free, or an era that checks before grouping (0.11)
        out = [{"rank": w.rank, "available_bytes": w.available_bytes, "group_size": w.group_size,
                "num_layers": sum(len(g.layer_names) for g in w.groups), "num_blocks": w.num_blocks,
                "num_tensors": len(w.tensors)} for w in plan.workers]
    return out


def plan_dict(layout, plan, serving, explain: list[str] | None = None, fixes: list[dict] | None = None) -> dict:
    d = plan.decision
    w0 = plan.workers[0] if plan.workers else None
    check = _binding_check(plan)
    workers = workers_dict(plan)
    shown = next((w for w in workers if check is not None and w["rank"] == check.rank), None)
    pool = shown["allocated_bytes"] if shown else (w0.bytes_per_block * w0.num_blocks if w0 else 0)
    waste = shown["padding_waste_bytes"] if shown else 0
    steady = plan.steady
    return {
        "engine": "vllm",
        "policy": era_dict(plan.era),
        "model": model_info_dict(layout.target),
        "drafter": model_info_dict(layout.drafter),
        "speculative": {"method": layout.speculative_method, "num_speculative_tokens": layout.num_speculative_tokens,
                        # speculative_config.parallel_drafting as the release holds it (given or its default)
                        "parallel_drafting": plan.parallel_drafting, "parallel_drafting_given": plan.options.parallel_drafting,
                        "note": plan.parallel_drafting_note},
        "serving": serving_dict(serving, layout),
        "scheduler": {
            "max_model_len": plan.max_model_len,
            "original_max_model_len": plan.original_max_model_len,
            "max_num_batched_tokens": plan.options.max_num_batched_tokens,
            "max_in_flight_tokens": plan.workload.max_in_flight_tokens if plan.workload else None,
            "max_num_seqs": plan.options.max_num_seqs,
            "async_scheduling": plan.runner.async_scheduling if plan.runner else plan.options.async_scheduling,
            "model_runner": plan.runner.runner if plan.runner else None,
            "model_runner_reason": plan.runner.reason if plan.runner else None,
            "enable_prefix_caching": plan.options.enable_prefix_caching,
            "mamba_cache_mode": plan.workload.mamba_cache_mode if plan.workload else plan.options.mamba_cache_mode,
            "num_gpu_blocks_override": plan.options.num_gpu_blocks_override,
            "decode_context_parallel_size": plan.options.decode_context_parallel_size,
        },
        "hybrid_kv_cache_manager": {
            "enabled": (not plan.hma.disabled) if plan.hma else None,
            "reasons_disabled": list(plan.hma.reasons) if plan.hma else [],
        },
        "mamba_alignment": None if plan.mamba is None else {
            "mamba_cache_mode": plan.mamba.mamba_cache_mode,
            "attention_bytes_per_token": plan.mamba.attention_bytes_per_token,
            "mamba_page_bytes": plan.mamba.mamba_page_bytes,
            "kernel_alignment_tokens": plan.mamba.kernel_alignment_tokens,
            "attention_block_size": plan.mamba.attention_block_size,
            "mamba_block_size": plan.mamba.mamba_block_size,
            "attention_page_bytes": plan.mamba.attention_page_bytes,
            "mamba_padding_pct": round(plan.mamba.padded_pct, 4),
        },
        "grouping": None if d is None else {
            "path": d.path,
            "min_count": d.min_count,
            "max_count": d.max_count,
            "threshold": d.threshold,
            "group_size": d.group_size,
            "num_groups": plan.num_groups,
            "num_padding_layers": d.num_padding_layers,
            "padding_waste_pct": round(plan.padding_waste_pct, 4),
            "block_size_changes": [
                {"kind": k, "from_block_size": a, "to_block_size": b} for k, a, b in d.block_size_changes
            ],
            "buckets": [
                {"index": i, **spec_to_dict(b.spec), "label": kind_label(b.spec), "num_layers": len(b.layer_names),
                 "padding_layers": d.padding[i][0] if i < len(d.padding) else 0,
                 "layers": [layer_index(n) for n in b.layer_names]}
                for i, b in enumerate(d.buckets)
            ] if d.path == "uniform_page" else [],
        },
        "groups": _group_rows(plan),
        "tensors": _tensor_rows(w0.tensors) if w0 else [],
        "memory": {
            "available_bytes": plan.options.kv_cache_memory_bytes,
            "checked_available_bytes": plan.checked_available_bytes,
            "needed_bytes": plan.needed_bytes,
            "page_size_bytes": plan.page_size_bytes,
            "group_size": plan.group_size,
            # the worker shown (binding_rank): slots per block id there, and what one block costs
            "binding_rank": check.rank if check else 0,
            "slots_per_block": check.group_size if check else (w0.group_size if w0 else 0),
            "bytes_per_block": check.bytes_per_block if check else (w0.bytes_per_block if w0 else 0),
            "num_blocks": plan.num_blocks,
            "pool_num_blocks": check.num_blocks if check else plan.num_blocks,
            "allocated_bytes": pool,
            "blocks_per_request": sum(plan.blocks_per_request),
            "bytes_per_request": (check.bytes_per_block * sum(plan.blocks_per_request)) if check else 0,
            "estimated_max_model_len": check.estimated_max_model_len if check else None,
            "kv_tokens": plan.kv_tokens,
            "kv_cache_size_tokens": plan.kv_cache_size_tokens,
            # the two meanings the "GPU KV cache size" log line has had (reference §4.7, §11 item 4)
            "kv_cache_size_tokens_blocks_meaning": _blocks_meaning(plan),
            "kv_cache_size_tokens_concurrency_meaning": int(plan.max_concurrency * plan.max_model_len),
            "max_concurrency": round(plan.max_concurrency, 6),
            "steady_state_concurrency": round(plan.steady_state_concurrency, 6),
            # the scheduler runs at most max_num_seqs requests: min(KV-limited, max_num_seqs)
            "effective_concurrency": round(min(plan.max_concurrency, plan.options.max_num_seqs or plan.max_concurrency), 6),
            "steady_blocks_per_request": sum(steady.blocks_per_request) if steady else 0,
            "prefill_reserve_blocks": steady.prefill_reserve_blocks if steady else 0,
            "padding_waste_bytes": waste,
            "padding_waste_pct_of_pool": round(waste / pool * 100, 4) if pool else 0.0,
        },
        "workers": workers,
        "logs": list(plan.logs),
        "explain": explain or [],
        "fixes": fixes or [],
        "warnings": list(layout.warnings),
    }


def layer_counts(layers) -> str:
    """``12 sliding(128) + 16 full`` in registration order of first appearance."""
    c = Counter(kind_label(ls.spec) for ls in layers)
    return " + ".join(f"{n} {k}" for k, n in c.items())
