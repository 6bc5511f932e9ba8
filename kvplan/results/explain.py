"""``--explain``: vLLM's decision chain in words, with its numbers."""

from __future__ import annotations

from kvplan.results.data import kind_label
from kvplan.units import format_bytes, plural


def _fmt(x: float) -> str:
    return f"{x:g}"


def explain(plan) -> list[str]:
    lines: list[str] = []
    era = plan.era
    lines.append(f"Policy {era.name}: {era.description}.")
    if plan.hma is not None:
        if plan.hma.disabled:
            lines.append(
                "The hybrid KV-cache manager is off (" + "; ".join(plan.hma.reasons) + "): sliding and chunked "
                "layers are converted to full attention and reserve memory for every token."
            )
        else:
            lines.append("The hybrid KV-cache manager is on: each layer type keeps its own reservation.")
    r = plan.runner
    if r is not None and plan.era.in_flight_batches and plan.workload is not None:
        T = plan.options.max_num_batched_tokens
        lines.append(
            f"{r.reason[0].upper() + r.reason[1:]}, async scheduling {'on' if r.async_scheduling else 'off'}: "
            f"sliding and chunked layers reserve {plan.workload.max_in_flight_tokens // T} × {T} in-flight tokens."
        )
    m = plan.mamba
    if m is not None:
        lines.append(
            f"Hybrid Mamba alignment ({m.mamba_cache_mode} mode): one attention token costs {m.attention_bytes_per_token} B "
            f"and the Mamba state {m.mamba_page_bytes} B, so the attention block becomes "
            f"{m.kernel_alignment_tokens} × cdiv({m.mamba_page_bytes}, {m.kernel_alignment_tokens} × "
            f"{m.attention_bytes_per_token}) = {m.attention_block_size} tokens (page {m.attention_page_bytes} B); "
            f"the Mamba page is padded by {m.padded_pct:.2f}%."
        )
    d = plan.decision
    if d is None:
        return lines
    if d.path == "attention_free":
        lines.append("No layer needs a KV cache: no groups, one null block.")
    elif d.path in ("uniform", "hma_off_uniform"):
        lines.append(
            f"All {plural(d.group_size, 'layer')} have one spec, so they form a single group; "
            f"one tensor per layer, each block costs {d.group_size} pages."
        )
    elif d.path == "uniform_type":
        lines.append(
            f"All {plural(d.group_size, 'layer')} are one type with different shapes: one uniform-type group, "
            f"one tensor per layer, a block costs {d.page_size_bytes} B across them."
        )
    else:
        for kind, old, new in d.block_size_changes:
            lines.append(f"Page sizes differ: {kind} layers go from block_size {old} to {new} so every page is equal.")
        counts = ", ".join(f"{len(b.layer_names)} {kind_label(b.spec)}" for b in d.buckets)
        lines.append(f"Buckets by identical spec, in order of first appearance: {counts}.")
        m_, big = d.min_count, d.max_count
        if d.threshold is None:
            lines.append(f"This era has no threshold: group size = smallest bucket = {d.group_size}.")
        elif big < m_ * d.threshold:
            lines.append(
                f"{big} (largest) vs {m_} (smallest): {big} < {m_} × {_fmt(d.threshold)} = {_fmt(m_ * d.threshold)}, "
                f"so group size {d.group_size}."
            )
        else:
            lines.append(
                f"{big} (largest) vs {m_} (smallest): {big} ≥ {m_} × {_fmt(d.threshold)} = {_fmt(m_ * d.threshold)}, "
                f"so group size {d.group_size} (the smallest)."
            )
        for b, (pad, n) in zip(d.buckets, d.padding):
            k = -(-n // d.group_size)
            sizes = [len(b.layer_names[i::k]) for i in range(k)]
            text = (f"The {kind_label(b.spec)} bucket ({plural(n, 'layer')}) splits into {plural(k, 'group')} of {sizes}, "
                    f"striped layers[i::{k}]")
            if pad:
                text += f"; it is padded by {plural(pad, 'layer')} ({pad / n * 100:.2f}%)"
            lines.append(text + ".")
    page = plan.page_size_bytes
    for c in plan.worker_checks:
        stage = f"Stage {c.rank}: " if len(plan.worker_checks) > 1 else ""
        if c.group_size and page and c.bytes_per_block == c.group_size * page:
            lines.append(
                f"{stage}num_blocks = {format_bytes(c.available_bytes)} // {c.bytes_per_block} B per block "
                f"({plural(c.group_size, 'slot')} × {page} B) = {c.num_blocks}."
            )
        if not c.fits:
            est = f"; vLLM's estimated maximum length is {c.estimated_max_model_len}" if c.estimated_max_model_len else ""
            lines.append(f"{stage}{'o' if stage else 'O'}ne request needs {format_bytes(c.needed_bytes)}, "
                         f"{format_bytes(c.checked_available_bytes)} is available{est}.")
    if len(plan.worker_checks) > 1 and plan.starts:
        lines.append(f"The engine keeps the smallest pool over stages: num_blocks = {plan.num_blocks}.")
    if plan.blocks_per_request and plan.starts:
        total = sum(plan.blocks_per_request)
        lines.append(
            f"A {plan.max_model_len}-token request reserves {' + '.join(map(str, plan.blocks_per_request))} = {total} "
            f"blocks, so max concurrency = {plan.num_blocks} / {total} = {plan.max_concurrency:.2f} (vLLM's figure)."
        )
    st = plan.steady
    if st is not None and plan.starts:
        lines.append(
            f"Past prefill a request holds {' + '.join(map(str, st.blocks_per_request))} = {sum(st.blocks_per_request)} "
            f"blocks; the prefill in flight holds {st.prefill_reserve_blocks} once, so steady-state concurrency = "
            f"({st.usable_blocks} − {st.prefill_reserve_blocks}) / {sum(st.blocks_per_request)} = "
            f"{st.concurrency:.2f} (kvplan's estimate, docs/capacity.md)."
        )
    dg = plan.drafter_groups()
    if any(ls.source == "drafter" for ls in plan.layers):
        if len(dg) == 1:
            lines.append(f"All drafter layers sit in group {dg[0]}, so the drafter check passes.")
        else:
            lines.append(
                f"The drafter layers are striped across groups {dg}: vLLM fails at start-up "
                "('All drafting layers should belong to the same kv cache group')."
            )
    if plan.failure is not None:
        lines.append(f"Predicted start-up failure ({plan.failure.stage}): {plan.failure.error_type}: {plan.failure.message}")
    return lines
