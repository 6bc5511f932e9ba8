"""Terminal rendering of a command's result as data (``kvplan.results.to_data``: what ``--format json`` prints),
drawn by Rich, widths from report.width."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rich.console import Console
from rich.text import Text

from kvplan.report import width
from kvplan.report.width import Col, fitted_table, key_value_table, terminal_width
from kvplan.results import Outcome, shown
from kvplan.results.envelope import Envelope
from kvplan.results.records import GroupRow, Grouping, InspectBody, PlanBody, SimulateBody, TensorRow, WorkerRow
from kvplan.units import compact_ranges, format_bytes, plural

if TYPE_CHECKING:  # imported where built: a plan without them does not pay their import
    from kvplan.results.fit import FitBody
    from kvplan.results.host_tier import DeploymentTotals, HostTier

MAX_SLOTS_SHOWN = 24
MAX_TENSOR_ROWS = 48
# What the figures of a table are: vLLM's own formulas, replayed by kvplan (tests/golden checks
# them against vLLM's code), unlike kvplan's estimates (steady_state_concurrency, budgets).
VLLM_OWN = "vLLM's own figures"


def _console() -> Console:
    # $COLUMNS when set (piped output too), else the terminal's width, else 100 when piped
    return width.console()


def _num(x) -> str:
    return "—" if x is None else f"{x:,}"


def _idx(labels: list[str]) -> str:
    ints = [int(x) for x in labels if x.isdigit()]
    rest = [x for x in labels if not x.isdigit()]
    return ", ".join(filter(None, [compact_ranges(ints), ", ".join(rest)]))


def model_line(body: PlanBody | InspectBody | FitBody) -> str:
    """The model (and drafter, speculative method) a result is about, as its first lines."""
    model, drafter, sp = body.model, body.drafter, body.speculative
    text = f"{model.id}  ({model.architecture}, {model.source}"
    text += f", {model.provenance})" if model.provenance else ")"
    if drafter:
        text += f"\ndrafter {drafter.id}  ({drafter.architecture}, {drafter.source})"
    if sp.method:
        n = sp.num_speculative_tokens
        text += f"\nspeculative method {sp.method}, " + (
            plural(n, "speculative token") if n else "num_speculative_tokens not given")
        if getattr(sp, "parallel_drafting", None):  # the plan's record only (PlanSpeculative)
            text += ", parallel drafting"
        if getattr(sp, "note", None):
            text += f"\nnote: {getattr(sp, 'note')}"
    return text


def _window(layer: dict) -> str:
    if layer.get("sliding_window"):
        return f"window {layer['sliding_window']}"
    if layer.get("attention_chunk_size"):
        return f"chunk {layer['attention_chunk_size']}"
    return ""


def _layer_cells(layer: dict) -> list[str]:
    heads = layer["num_kv_heads"]
    hs = layer["head_size"]
    head = "" if hs is None else (f"{hs}/{layer['head_size_v']}" if layer["head_size_v"] != hs else str(hs))
    if layer["kind"] == "mamba":
        head = " ".join("x".join(map(str, s)) for s in layer["shapes"])
    return [layer["source"], layer["kind"], _window(layer), "" if heads is None else str(heads), head,
            layer["dtype"] or "/".join(layer["dtypes"] or []), str(layer["block_size"]), f"{layer['page_size_bytes']:,}"]


def _name_pattern(name: str, index: str) -> str:
    """``model.layers.7.self_attn.attn`` → ``model.layers.*.self_attn.attn`` (the layer's own index)."""
    return name.replace(f".{index}.", ".*.", 1) if index.isdigit() else name


MAX_PERIOD = 8  # the longest repeating layer pattern inspect folds (gemma-3: 5 sliding + 1 full = 6)


def collapse_layers(layers: list[dict]) -> list[list[str]]:
    """Rows of the layer table: a stretch of consecutive layers that repeats a pattern of ``p``
    layers (identical but for their index) at least 3 times is ``p`` rows, one per position
    in the pattern, indices ``a-b/p`` (a uniform dense model is one row ``0-79``, gpt-oss's
    alternating sliding/full layers two rows); the rest keep a row each."""
    keys = [(_layer_cells(x), _name_pattern(x["name"], str(x["index"]))) for x in layers]
    nums = [int(x["index"]) if str(x["index"]).isdigit() else None for x in layers]
    rows: list[list[str]] = []
    i = 0
    while i < len(layers):
        best = (0, 1, i)  # (layers saved, period, end of the stretch)
        for period in range(1, MAX_PERIOD + 1):
            end = i
            while end + 1 < len(layers) and (n := nums[end]) is not None and nums[end + 1] == n + 1 \
                    and (end + 1 - period < i or keys[end + 1] == keys[end + 1 - period]):
                end += 1
            span = end - i + 1
            if span >= 3 * period and span - period > best[0]:
                best = (span - period, period, end)
        saved, period, end = best
        if not saved:
            x = layers[i]
            rows.append([str(x["index"]), x["name"], *keys[i][0]])
            i += 1
            continue
        for k in range(i, i + period):
            members = list(range(k, end + 1, period))
            # a stretch is numbered layers only (the loop above stops at a name without a number)
            rows.append([compact_ranges([n for m in members if (n := nums[m]) is not None]), keys[k][1], *keys[k][0]])
        i = end + 1
    return rows


def render_inspect(d: Envelope) -> None:
    c = _console()
    c.print(model_line(d.body), markup=False)
    s = d["serving"]
    c.print(
        f"block_size {s['block_size']}, kv_cache_dtype {s['kv_cache_dtype']}, "
        f"tp {s['tensor_parallel_size']}, pp {s['pipeline_parallel_size']}"
    )
    cols = [Col("index", right=True), Col("name", drop=4), Col("source", drop=5), Col("kind"),
            Col("window/ chunk"), Col("kv heads", right=True), Col("head size", right=True), Col("dtype", drop=2),
            Col("block", right=True, drop=1), Col("page bytes", right=True)]
    c.print(fitted_table("Layers (registration order; a-b/s = every s-th index from a to b; the specs vLLM "
                         "registers)", cols,
                         collapse_layers(d["layers"])))
    cols = [Col("kind"), Col("source", drop=2), Col("layers", right=True), Col("page bytes", right=True),
            Col("KV bytes/ token/layer", right=True, drop=1), Col("KV bytes/ token", right=True),
            Col("state bytes/ request", right=True)]
    rows = []
    for r in d["summary"]:
        per, tot, st = r["kv_bytes_per_token"], r["kv_bytes_per_token_total"], r["state_bytes"]
        rows.append([r["label"], r["source"], str(r["num_layers"]), f"{r['page_size_bytes']:,}",
                     "" if per is None else f"{per:,}", "" if tot is None else f"{tot:,}",
                     "" if st is None else f"{st * r['num_layers']:,}"])
    rows.append(["total", "", str(d["num_layers"]), "", "", f"{d['kv_bytes_per_token']:,}",
                 f"{d['state_bytes_per_request']:,}" if d["state_bytes_per_request"] else ""])
    c.print(fitted_table("Summary by kind (page bytes: vLLM's own; per-token and per-request bytes: kvplan's "
                         "arithmetic on them)", cols, rows, row_styles=[None] * (len(rows) - 1) + ["bold"]))
    if len(d["ranks"]) > 1 or s["tensor_parallel_size"] > 1:
        rows = [[str(r["rank"]), str(r["num_layers"]), _idx(r["layers"])] for r in d["ranks"]]
        c.print(fitted_table(
            f"Per rank (tp {s['tensor_parallel_size']} × pp {s['pipeline_parallel_size']}; specs are per TP rank)",
            [Col("pp stage", right=True), Col("layers", right=True), Col("indices")], rows))
    if d["kv_sharing_layers"]:
        c.print(f"KV-sharing layers (no cache of their own): {len(d['kv_sharing_layers'])}")


def _tensor_step(a: tuple, b: tuple) -> int | None:
    """The common step between two consecutive tensors' layers (same size, same number of
    layers, every layer index moved by the same amount), else None."""
    (ia, sa, la), (ib, sb, lb) = a, b
    if ib != ia + 1 or sa != sb or len(la) != len(lb) or not all(x.isdigit() for x in la + lb):
        return None
    steps = {int(y) - int(x) for x, y in zip(la, lb)}
    return steps.pop() if len(steps) == 1 and min(steps | {1}) > 0 else None


def tensor_rows(tensors: Sequence[TensorRow]) -> list[list[str]]:
    """``[tensor, size_bytes, shared_by]`` rows; a run of 3+ tensors of one size whose layers
    move by a common step is one row (a uniform dense model's 80 tensors: ``0-79``)."""
    from kvplan.results.data import layer_index

    items = [(t.index, t.size_bytes, [layer_index(n) for n in t.shared_by]) for t in tensors]
    rows: list[list[str]] = []
    i = 0
    while i < len(items):
        j = i
        step = _tensor_step(items[i], items[i + 1]) if i + 1 < len(items) else None
        while step is not None and j + 1 < len(items) and _tensor_step(items[j], items[j + 1]) == step:
            j += 1
        if j - i >= 2:
            first, last = items[i][2], items[j][2]
            if len(first) == 1:
                shared = compact_ranges([int(x[0]) for _i, _s, x in items[i:j + 1]]) + " (one layer each)"
            else:
                shared = f"{', '.join(first)} to {', '.join(last)} (+{step} per tensor)"
            rows.append([f"{items[i][0]}-{items[j][0]}", f"{items[i][1]:,}", shared])
            i = j + 1
        else:
            rows.append([str(items[i][0]), f"{items[i][1]:,}", ", ".join(items[i][2])])
            i += 1
    return rows


def layout_picture(plan: PlanBody, columns: int | None = None) -> Text:
    """Tensor slots (columns) × groups (rows): each cell is the layer using that slot; ░ = padding.
    As many slots as fit in ``columns`` (the terminal width), at most MAX_SLOTS_SHOWN."""
    groups = plan.groups
    G = plan.memory.group_size
    width = max([len(x) for g in groups for x in g.layers] + [2, len(str(G - 1))])
    label = max(len(g.label) for g in groups) if groups else 0
    room = (columns or terminal_width()) - 10 - 2 - label
    shown = min(G, MAX_SLOTS_SHOWN)
    if shown * (width + 1) + (len(f" +{G - shown} more") if G > shown else 0) > room:
        shown = max(1, (room - len(f" +{G} more")) // (width + 1))
    more = f" +{G - shown} more" if G > shown else ""
    text = Text()
    text.append("slot      " + " ".join(str(i).rjust(width) for i in range(shown)) + more + "\n")
    for g in groups:
        text.append(f"group {g.index:<3} ")
        for i in range(shown):
            if i < len(g.layers):
                style = "bold magenta" if g.has_drafter_layers and g.layers[i] in g.drafter_layers else ""
                text.append(g.layers[i].rjust(width), style=style)
            else:
                text.append("░" * width, style="dim red")
            text.append(" ")
        text.append(" " * len(more))
        text.append(f"  {g.label}\n")
    return text


def plan_of(result: Envelope) -> PlanBody:
    """The plan record of a ``simulate`` or ``vllm`` result (its envelope: typed records beside its keys)."""
    body = result.body
    return body.plan if isinstance(body, SimulateBody) else body.simulate.plan  # else: ServeBody


def _workers(plan: PlanBody) -> list[WorkerRow]:
    """The workers with an admission check (``WorkerRow``; not the attention-free summary rows)."""
    return [w for w in plan.workers if isinstance(w, WorkerRow)]


def _not_allocated(plan: PlanBody, o: Outcome) -> bool:
    """Nothing was allocated: the engine failed before its KV cache configs (memory, config stage)."""
    return not o.starts and not plan.memory.num_blocks


def _out_of_memory_loading(o: Outcome) -> bool:
    """Out of device memory loading the weights or profiling (the budget's load stages): no KV-cache figures."""
    if o.stage is None:
        return False
    from kvplan.budget.load import STAGES as LOAD_STAGES

    return o.stage in LOAD_STAGES


def _refused_at_config(plan: PlanBody, o: Outcome) -> bool:
    """Refused at config time (vLLM's config or model-construction checks): nothing was sized."""
    from kvplan.engines.vllm.prechecks import before_kv_cache

    return _not_allocated(plan, o) and before_kv_cache(o.stage)


def _policy_lines(plan: PlanBody) -> list[str | Text]:
    from kvplan.results.data import policy_label

    p = plan.policy
    thr = "none (min)" if p.threshold is None else f"{p.threshold:g}"
    if p.is_proposal:
        lines: list[str | Text] = [f"policy {p.name} ({p.description})  [proposal, not shipped vLLM behaviour]"]
    elif p.vllm_release:
        lines = [f"policy {policy_label(p)}: era {p.name}, threshold {thr}"]
    else:
        rels = p.vllm_releases
        span = f"{rels[0]} to {rels[-1]}" if len(rels) > 1 else ", ".join(rels)
        lines = [f"policy {p.name} (threshold {thr}; vLLM {span})"]
    if p.warning:
        lines.append(Text(f"Warning: {p.warning}", style="yellow"))
    return lines


def _plan_head(plan: PlanBody) -> list[str | Text]:
    """The lines above the tables: the model, the policy, the attention backend, the hybrid manager's state."""
    lines: list[str | Text] = [model_line(plan), *_policy_lines(plan)]
    sv = plan.serving
    if sv.attention_backend:
        why = " (no --gpu: an H100 is assumed)" if sv.attention_backend_note else ""
        lines.append(f"attention backend {sv.attention_backend}{why}, block size {sv.block_size}")
    hma = plan.hybrid_kv_cache_manager
    if hma.enabled is False:
        lines.append(f"hybrid KV-cache manager: off ({'; '.join(hma.reasons_disabled)})")
    return lines


def _bucket_table(gr: Grouping):
    cols = [Col("bucket", right=True), Col("kind"), Col("layers", right=True), Col("block", right=True, drop=1),
            Col("page bytes", right=True), Col("padding", right=True), Col("indices")]
    rows = [[str(b.index), b.label, str(b.num_layers), str(b.spec.block_size), f"{b.spec.page_size_bytes:,}",
             str(b.padding_layers or ""), _idx(list(b.layers))] for b in gr.buckets]
    return fitted_table(f"Buckets (identical specs, first-appearance order; {VLLM_OWN})", cols, rows)


def _group_row(g: GroupRow, failed: bool) -> list[str]:
    layers = str(g.num_layers)
    if g.num_layers_per_worker:
        layers += " (" + "+".join(map(str, g.num_layers_per_worker)) + ")"
    row = [str(g.index), g.label + (" +drafter" if g.has_drafter_layers else ""),
           layers, str(g.padding_slots or ""), str(g.block_size), _num(g.blocks_per_request)]
    row += [format_bytes(g.needed_bytes) if g.needed_bytes is not None else "—"] if failed else []
    return row + [_idx(list(g.layers))]


def _group_table(plan: PlanBody, workers: list[WorkerRow], failed: bool):
    title = f"KV cache groups (group_size {plan.memory.group_size}"
    if len(workers) > 1:
        title += ", global; slots per stage " + "/".join(str(w.group_size) for w in workers)
    cols = [Col("group", right=True), Col("kind"), Col("layers", right=True), Col("padding slots", right=True),
            Col("block", right=True, drop=1), Col("blocks/ request", right=True)]
    cols += [Col("need (1 request)", justify="right")] if failed else []
    cols += [Col("indices")]
    return fitted_table(f"{title}; {VLLM_OWN})", cols, [_group_row(g, failed) for g in plan.groups])


def _stage_table(workers: list[WorkerRow]):
    cols = [Col("stage", right=True), Col("layers", right=True), Col("slots", right=True),
            Col("bytes/ block", right=True), Col("own blocks", right=True, drop=1), Col("num_blocks", right=True),
            Col("need / available", justify="right"), Col("padding at full load", justify="right")]
    rows = [[str(w.rank), str(w.num_layers), str(w.group_size), f"{w.bytes_per_block:,}",
             f"{w.own_num_blocks:,}", f"{w.num_blocks:,}" if w.allocated else "—",
             f"{format_bytes(w.needed_bytes)} / {format_bytes(w.checked_available_bytes)}",
             f"{format_bytes(w.padding.padding_waste_bytes)} ({shown(w.padding, 'padding_waste_pct_of_pool'):.2f}%)"]
            for w in workers]
    return fitted_table("Per pipeline stage (one KV cache config each; num_blocks = the minimum over stages; "
                        f"{VLLM_OWN})", cols, rows)


def _tensor_table(plan: PlanBody, workers: list[WorkerRow]):
    title = "KV tensors (one per slot; shared_by = the i-th layer of each group"
    if len(workers) > 1:
        title = "KV tensors of stage 0 (one per slot; shared_by = the i-th layer of each group there"
    rows = tensor_rows(plan.tensors)
    if len(rows) > MAX_TENSOR_ROWS:
        rows = rows[:MAX_TENSOR_ROWS] + [["", "", f"and {plural(len(rows) - MAX_TENSOR_ROWS, 'more row')}"]]
    return fitted_table(f"{title}; {VLLM_OWN})",
                        [Col("tensor", right=True), Col("size_bytes", right=True), Col("shared_by")], rows)


def _plan_tables(plan: PlanBody, workers: list[WorkerRow], failed: bool) -> list:
    """The tables of the layout: buckets, groups, pipeline stages, tensors, the slots × groups picture."""
    gr = plan.grouping
    out: list = []
    if gr and gr.buckets:
        out.append(_bucket_table(gr))
    if plan.groups:
        out.append(_group_table(plan, workers, failed))
    if len(workers) > 1:
        out.append(_stage_table(workers))
    if plan.tensors:
        out.append(_tensor_table(plan, workers))
    if plan.groups and gr and gr.path == "uniform_page":
        out += ["Layout (tensor slots × groups; ░ = padding):", layout_picture(plan)]
    return out


def _size_rows(plan: PlanBody, workers: list[WorkerRow], failed: bool) -> list[tuple[str, str]]:
    """The memory table's first rows: the pool, its blocks, the length and the admission check."""
    m, sch = plan.memory, plan.scheduler
    num_blocks = f"{m.num_blocks:,}" if not failed else (
        f"not allocated (the pool: {m.pool_num_blocks:,})" if m.pool_num_blocks else "not allocated")
    rows = [
        ("available (per GPU)", f"{m.available_bytes:,} B ({format_bytes(m.available_bytes)})"),
        ("page_size_bytes", f"{m.page_size_bytes:,}"),
        ("bytes per block (all slots)", f"{m.bytes_per_block:,}" + (
            f" (stage {m.binding_rank}: {m.slots_per_block} slots)" if len(workers) > 1 else "")),
        ("num_blocks", num_blocks),
        ("max_model_len", f"{sch.max_model_len:,}" + (
            f" (auto-fit from {sch.original_max_model_len:,})" if sch.max_model_len != sch.original_max_model_len else "")),
        ("blocks reserved per request", " + ".join(_num(g.blocks_per_request) for g in plan.groups)
         + f" = {m.blocks_per_request:,}" if plan.groups else "0"),
        ("needed vs available (admission)", f"{format_bytes(m.needed_bytes)} / {format_bytes(m.checked_available_bytes)}"),
    ]
    if m.estimated_max_model_len is not None:
        rows.append(("vLLM's estimated maximum model length", f"{m.estimated_max_model_len:,}"))
    return rows


def _capacity_rows(plan: PlanBody, failed: bool) -> list[tuple[str, str]]:
    """The memory table's last rows: padding, KV tokens and concurrency (the figures as the JSON shows them)."""
    m, gr, sch = plan.memory, plan.grouping, plan.scheduler
    rows = [("padding layers", f"{gr.num_padding_layers if gr else 0} (vLLM: may waste at most "
                               f"{shown(gr, 'padding_waste_pct') if gr else 0:.2f}%)")]
    if not failed:
        rows.append(("padding at full load", f"{format_bytes(m.padding_waste_bytes)} "
                                           f"({shown(m, 'padding_waste_pct_of_pool'):.2f}% of pool)"))
    max_conc, steady, effective = (shown(m, k) for k in ("max_concurrency", "steady_state_concurrency",
                                                          "effective_concurrency"))
    capped = f" (max_num_seqs {sch.max_num_seqs:,} caps it)" if sch.max_num_seqs and effective < max_conc else ""
    return rows + [
        ("KV tokens (max_concurrency × max_model_len)", f"{m.kv_tokens:,}"),
        ('"GPU KV cache size", ≤0.20 (blocks)', f"{m.kv_cache_size_tokens_blocks_meaning:,}"),
        ('"GPU KV cache size", 0.33 (conc. × len)', f"{m.kv_cache_size_tokens_concurrency_meaning:,}"),
        ("max_concurrency (vLLM's figure: worst case)", f"{max_conc:.2f}"),
        ("steady_state_concurrency (kvplan's estimate)", f"{steady:.2f}"),
        ("effective concurrency (min(KV, max_num_seqs))", f"{effective:.2f}" + capped),
    ]


def _plan_figures(d: Envelope, plan: PlanBody, workers: list[WorkerRow], failed: bool) -> list:
    """The key/value tables: memory (unless nothing was sized), the host tier, every engine's totals."""
    o = d.outcome
    out: list = []
    if not _refused_at_config(plan, o) and not _out_of_memory_loading(o):
        out.append(key_value_table(f"Memory ({VLLM_OWN}, except where marked kvplan's estimate)",
                                   _size_rows(plan, workers, failed) + _capacity_rows(plan, failed)))
    if plan.host_tier:
        out.append(key_value_table(f"Host tier: KV offloading ({VLLM_OWN})", host_tier_rows(plan.host_tier)))
    if plan.totals:
        out.append(key_value_table("Every engine (kvplan's sums of one engine's figures)", totals_rows(plan.totals)))
    return out


def _plan_tail(plan: PlanBody, o: Outcome) -> list[str | Text]:
    """The log lines, the reasons, the outcome and the verified fixes (plain lines: never read as markup)."""
    lines: list[str | Text] = []
    if plan.logs:
        lines += ["vLLM log lines:", *(f"  {line}" for line in plan.logs)]
    if plan.explain:
        lines += ["Why:", *(f"  - {line}" for line in plan.explain)]
    if o.starts:
        lines.append(Text("Outcome: the engine would start.", style="bold green"))
    else:
        lines.append(Text(f"Outcome: the engine would fail at start-up ({o.stage}): {o.error_type}: {o.error}",
                          style="bold red"))
    return lines + [f"  fix (verified by re-simulating): {f.flag}  → {f.result}" for f in plan.fixes]


def render_plan(d: Envelope) -> None:
    """A ``simulate`` or ``vllm`` plan: its head lines, the layout's tables, the figures, then the outcome."""
    plan = plan_of(d)
    workers = _workers(plan)
    failed = _not_allocated(plan, d.outcome)
    c = _console()
    for part in [*_plan_head(plan), *_plan_tables(plan, workers, failed), *_plan_figures(d, plan, workers, failed),
                 *_plan_tail(plan, d.outcome)]:
        c.print(part)


def host_tier_rows(h: HostTier) -> list[tuple[str, str]]:
    """The host tier of a KV offloading connector (``kvplan.results.host_tier``) as label/value rows."""
    rows = [("connector", h.kv_connector + (f" ({h.backend})" if h.backend else "")),
            ("hybrid KV-cache manager", "on" if h.hybrid_kv_cache_manager else "off")]
    if not h.sized:
        return rows + [("host tier", h.note or "not sized")]
    if h.basis is not None:
        rows.append(("sized by", h.basis))
    if h.cpu_bytes_to_use is not None:
        rows.append(("cpu_bytes_to_use (all TP ranks)", format_bytes(h.cpu_bytes_to_use)))
    if h.kv_bytes_per_chunk is not None:
        rows.append(("chunk (blocks × workers)", f"{h.blocks_per_chunk} × {h.world_size}: "
                                                 f"{h.kv_bytes_per_chunk:,} B"))
    if h.num_chunks is not None:
        rows.append(("num_chunks", f"{h.num_chunks:,}"))
    if h.cpu_kv_cache_size_bytes is not None:
        rows.append(("cpu_kv_cache_size_bytes", f"{h.cpu_kv_cache_size_bytes:,} B"))
    if h.host_bytes_allocated is not None:
        rows.append(("host memory allocated", f"{h.host_bytes_allocated:,} B"))
    rows.append(("cpu_kv_cache_size_tokens", _num(h.cpu_kv_cache_size_tokens)))
    if h.host_to_gpu_tokens_ratio is not None:
        rows.append(("tokens beside the GPU pool's", f"{h.host_to_gpu_tokens_ratio:g}×"))
    for g in h.groups:
        reach = "all chunks" if g.sliding_window_size_in_chunks is None else \
            f"{g.sliding_window_size_in_chunks} chunks/request"
        rows.append((f"group {g.group_id}", f"{g.num_layers} layers, {g.tokens_per_block}-token blocks, {reach}"))
    if h.note:
        rows.append(("note", h.note))
    return rows


def _replicas(t: DeploymentTotals) -> str:
    return f" × {t.replicas} replicas" if t.replicas > 1 else ""


def totals_rows(t: DeploymentTotals) -> list[tuple[str, str]]:
    """``DeploymentTotals`` as label/value rows."""
    rows = [("GPUs", f"{t.gpus:,} = {t.engines:,} engine(s) (DP {t.data_parallel_size}{_replicas(t)}) × "
                     f"{t.gpus_per_engine} GPU(s) each"),
            ("KV tokens", f"{t.kv_tokens:,}"),
            ("max_concurrency", f"{t.max_concurrency:,.2f}"),
            ("effective concurrency", f"{t.effective_concurrency:,.2f}")]
    if t.host_memory_bytes is not None:
        rows += [("host memory (KV tiers)", format_bytes(t.host_memory_bytes)),
                 ("host tier tokens", f"{t.host_kv_tokens:,}")]
    return rows


def _decision_lines(plan: PlanBody, failed: bool) -> list[str]:
    """``--summary``'s grouping decision and its padding."""
    gr, m = plan.grouping, plan.memory
    if gr and gr.buckets:
        buckets = " + ".join(f"{b.num_layers} {b.label}" for b in gr.buckets)
        rule = ""
        if gr.threshold is not None and gr.path == "uniform_page":
            big, small = gr.max_count, gr.min_count
            rule = f"; {big} {'<' if big < small * gr.threshold else '≥'} {small} × {gr.threshold:g}"
        pad = (f"padding: {plural(gr.num_padding_layers, 'layer')} (vLLM: may waste at most "
               f"{shown(gr, 'padding_waste_pct'):.2f}%)")
        if not failed:
            pad += (f", {format_bytes(m.padding_waste_bytes)} at full load "
                    f"({shown(m, 'padding_waste_pct_of_pool'):.2f}% of pool)")
        return [f"decision: {buckets}{rule} → group_size {gr.group_size}, {plural(gr.num_groups, 'group')}", pad]
    if gr and plan.groups:  # one spec (or HMA off): every layer in one group
        g = plan.groups[0]
        return [f"decision: {plural(g.num_layers, 'layer')} of one spec ({g.label}) → one group, "
                f"group_size {gr.group_size} ({gr.path})"]
    return []


def _pool_lines(plan: PlanBody, o: Outcome, failed: bool) -> list[str]:
    """``--summary``'s KV cache: its blocks, length, tokens and concurrency, or why it was not sized."""
    m, sch = plan.memory, plan.scheduler
    if _refused_at_config(plan, o):
        return ["KV cache: not sized (vLLM refuses the configuration before it)"]
    if not o.starts and _out_of_memory_loading(o):
        return [f"KV cache: not sized (vLLM runs out of memory in the {o.stage} stage before it)"]
    workers = _workers(plan)
    stages = f" (the minimum over {len(workers)} pipeline stages)" if len(workers) > 1 else ""
    est = m.estimated_max_model_len
    max_conc, effective = shown(m, "max_concurrency"), shown(m, "effective_concurrency")
    lines = [f"num_blocks: {m.num_blocks:,}{stages}; {format_bytes(m.available_bytes)} available per GPU"
             if not failed else f"num_blocks: not allocated; {format_bytes(m.needed_bytes)} needed, "
             f"{format_bytes(m.checked_available_bytes)} available",
             f"max_model_len: {sch.max_model_len:,}" + (
                 f" (vLLM's estimated maximum: {est:,})" if est is not None else "") + f"; KV tokens: {m.kv_tokens:,}",
             f"max_concurrency: {max_conc:.2f} (vLLM's own, worst case); "
             f"steady_state_concurrency: {shown(m, 'steady_state_concurrency'):.2f} (kvplan's estimate)"]
    if sch.max_num_seqs and effective < max_conc:
        lines.append(f"effective concurrency: {effective:,.0f} (the scheduler's cap, "
                     f"max_num_seqs {sch.max_num_seqs:,})")
    return lines


def _host_tier_line(h: HostTier, o: Outcome) -> str:
    """``--summary``'s host tier: its size and tokens (whose count), or why it was not sized."""
    if not (h.sized and o.starts and h.cpu_kv_cache_size_bytes is not None):
        return f"host tier: {h.kv_connector} ({h.note or 'not sized'})"
    whose = "vLLM's own" if h.num_chunks is not None and "kvplan's count" not in (h.note or "") \
        else "kvplan's count"
    chunks = f"{h.num_chunks:,} chunks, " if h.num_chunks is not None else ""
    taken = (f" ({format_bytes(h.host_bytes_allocated)} allocated)"
             if h.host_bytes_allocated not in (None, h.cpu_kv_cache_size_bytes) else "")
    return (f"host tier: {h.kv_connector}, {format_bytes(h.cpu_kv_cache_size_bytes)} of host memory"
            f"{taken}, {chunks}{h.cpu_kv_cache_size_tokens or 0:,} tokens ({whose})")


def _deployment_lines(plan: PlanBody, o: Outcome) -> list[str]:
    """``--summary``'s every-engine totals and host tier."""
    lines = []
    t = plan.totals
    if t and t.engines > 1:
        lines.append(f"every engine: {t.engines} (DP{_replicas(t)}) × {t.gpus_per_engine} GPU(s): KV tokens "
                     f"{t.kv_tokens:,}, max_concurrency {t.max_concurrency:,.2f} (kvplan's sums)")
    if plan.host_tier:
        lines.append(_host_tier_line(plan.host_tier, o))
    return lines


def _outcome_lines(plan: PlanBody, o: Outcome) -> list[str]:
    if o.starts:
        lines = ["outcome: the engine would start"]
    else:
        first = (o.error or "").split(". ")[0]
        lines = [f"outcome: the engine would fail at start-up ({o.stage}): {o.error_type}: {first}"]
    return lines + [f"fix (verified by re-simulating): {f.flag} → {f.result}" for f in plan.fixes[:2]]


def summary_lines(d: Envelope) -> list[str]:
    """``--summary``: the decision and its consequences in at most 12 logical lines."""
    from kvplan.results.data import policy_label

    plan = plan_of(d)
    o = d.outcome
    who = plan.model.id + (f" + drafter {plan.drafter.id}" if plan.drafter else "")
    p = plan.policy
    thr = "no threshold" if p.threshold is None else f"threshold {p.threshold:g}"
    failed = _not_allocated(plan, o)
    return [f"{who} on {policy_label(p) if p.vllm_release else p.name} ({thr})", *_decision_lines(plan, failed),
            *_pool_lines(plan, o, failed), *_deployment_lines(plan, o), *_outcome_lines(plan, o)]


def render_summary(d: Envelope) -> None:
    c = _console()
    for line in summary_lines(d):
        c.print(width.fill(line, "", "  "), markup=False, soft_wrap=True,
                style="bold red" if line.startswith("outcome: the engine would fail") else None)


def render_rows(title: str, columns: list, rows: list[list], right: set[str] | None = None) -> None:
    """A plain table for list-shaped results (models, policies); ``columns`` are names or ``Col``s."""
    right = right or set()
    cols = [col if isinstance(col, Col) else Col(col, right=col in right) for col in columns]
    _console().print(fitted_table(title, cols, [["" if v is None else str(v) for v in r] for r in rows]))


def render_mapping(title: str, data: dict) -> None:
    """A two-column table for flat result dicts (scalars; nested lists/dicts shown as counts)."""
    rows = []
    for k, v in data.items():
        if isinstance(v, (list, dict)):
            continue
        if isinstance(v, bool) or v is None:
            text = str(v)
        elif isinstance(v, (int, float)) and k.endswith("_bytes_per_s"):
            text = f"{format_bytes(v)}/s"
        elif isinstance(v, int) and (k.endswith("_bytes") or "_bytes_" in k):
            text = f"{v:,} ({format_bytes(v)})"
        elif isinstance(v, int):
            text = f"{v:,}"
        elif isinstance(v, float):
            text = f"{v:,.4g}" if abs(v) < 1000 else f"{v:,.1f}"
        else:
            text = str(v)
        rows.append([k, text])
    _console().print(key_value_table(title, rows))


def render_allocation(report: dict) -> None:
    render_mapping("Allocation on device", report)
    for f in report.get("failures", [])[:20]:
        _console().print(f"  mismatch: {f}", markup=False)


def render_budget(budget: dict) -> None:
    # the extensible sizing's terms are None under the profiled one: not shown there
    render_mapping("KV budget from hardware (estimated)" if budget.get("estimated") else "KV budget",
                   {k: v for k, v in budget.items() if v is not None})


def render_sweep(d: dict) -> None:
    """``simulate --sweep-threshold``: one row per threshold, then the messages and flip points."""
    cols = [Col("threshold", right=True), Col("group_size", right=True), Col("groups", right=True, drop=3),
            Col("padding layers", right=True, drop=2), Col("padding %", right=True), Col("num_blocks", right=True),
            Col("KV tokens", right=True, drop=1), Col("max_concurrency (vLLM's own)", right=True), Col("outcome")]
    rows = [[f"{r['threshold']}", str(r["group_size"]), str(r["num_groups"]), str(r["num_padding_layers"]),
             f"{r['padding_waste_pct']:.2f}", f"{r['num_blocks']:,}", f"{r['kv_tokens']:,}", f"{r['max_concurrency']:.2f}",
             "starts" if r["outcome"]["starts"] else f"fails ({r['outcome']['stage']})"] for r in d["rows"]]
    _console().print(fitted_table(f"Threshold sweep ({d['policy']['name']}; {VLLM_OWN}, each threshold simulated)",
                                  cols, rows))
    for msg in dict.fromkeys(r["outcome"]["error"] for r in d["rows"] if r["outcome"]["error"]):
        print(f"fails: {msg}")
    for c in d["critical_thresholds"]:
        print(f"Critical threshold {c['threshold']:g} ({c['ratio']}): group size {c['group_size_at_or_below']} "
              f"at or below, {c['group_size_above']} above.")
    if d.get("plot"):
        print(f"Plot written to {d['plot']}")
