"""Terminal rendering of `kvplan fit` results (the data of ``kvplan.fit``'s record, as ``--format json`` prints it)."""

from __future__ import annotations

from typing import Sequence

from rich.text import Text

from kvplan.report.tables import _console, model_line
from kvplan.report.width import Col, fitted_table
from kvplan.results import shown
from kvplan.results.envelope import Envelope
from kvplan.results.budget import Budget, GivenBudget
from kvplan.results.fit import (ContextAnswer, FitBody, GoalAnswer, GpuTable, GpuTableRow, LayoutDecision,
                                MaxModelLenAnswer, UtilizationAnswer)
from kvplan.units import format_bytes, plural


def _b(n) -> str:
    return "" if n is None else format_bytes(n)


def render_gpu_presets(d: dict) -> None:
    cols = [Col("name"), Col("memory", right=True), Col("bytes", right=True, drop=1), Col("basis", drop=2),
            Col("cc", drop=2), Col("nominal", drop=3), Col("aliases", drop=4), Col("source", drop=5)]
    rows = [[g["name"], f"{g['memory_bytes'] / (1 << 30):.2f} GiB", f"{g['memory_bytes']:,}", g["basis"],
             (".".join(map(str, g["compute_capability"])) if g.get("compute_capability") else "")
             + (" rocm" if g.get("platform") == "rocm" else ""),
             g["nominal"], ", ".join(g["aliases"]), g["source"]] for g in d["gpus"]]
    _console().print(fitted_table("GPU presets (memory as CUDA reports it, the figure vLLM logs; basis "
                                  "nvidia-smi: no CUDA printout found)", cols, rows))


def dp_versus_tp(rows: Sequence[GpuTableRow]) -> list[str]:
    """Where the same card count starts as TP N and as DP N (one GPU each): how much more the DP engines hold
    in all (their pools add up; TP ranks share one engine's pool)."""
    out = []
    for r in rows:
        n = r.num_gpus
        if r.data_parallel_size != n or n <= 1 or not r.outcome.starts:
            continue
        tp = next((t for t in rows if t.gpu == r.gpu and t.tensor_parallel_size == n
                   and t.data_parallel_size == 1 and t.outcome.starts), None)
        base = (tp.total_kv_tokens or tp.kv_tokens) if tp is not None else 0
        if base:
            out.append(f"{n} × {r.gpu}: DP {n} holds {r.total_kv_tokens:,} KV tokens in {n} engines, "
                       f"{r.total_kv_tokens / base:.1f}× TP {n}'s {base:,} in one (kvplan's sums)")
    return out


def _budget_table(b: Budget):
    gpu = b.gpu or "custom"
    extensible = b.kv_cache_sizing == "extensible"
    rows = [
        [f"GPU memory ({gpu})", _b(b.gpu_memory_bytes), b.gpu_memory_source],
        ["sizing", b.kv_cache_sizing, b.kv_cache_sizing_source],
        [f"× gpu_memory_utilization {b.gpu_memory_utilization:g}", _b(b.requested_memory_bytes),
         b.gpu_memory_utilization_source],
        [f"− weights (tp {b.tensor_parallel_size}, pp {b.pipeline_parallel_size})", _b(b.weights_bytes),
         b.weights_source],
        ["− activation peak", _b(b.activation_peak_bytes), b.activation_source],
        ["− non-torch memory", _b(b.non_torch_bytes), b.non_torch_source],
        ["− CUDA-graph reserve", _b(b.cudagraph_bytes), b.cudagraph_source],
    ]
    if extensible:
        rows += [
            ["= reserved (tentative)", _b(b.tentative_kv_cache_memory_bytes), "vLLM's profiling estimate"],
            ["CUDA graphs after capture", _b(b.cudagraph_resident_bytes),
             "override" if b.cudagraph_source == "override" else "estimate"],
            ["start-up memory in use", _b(b.startup_memory_bytes), b.startup_memory_source],
            ["transient reserve", _b(b.transient_reserve_bytes), "activation peak + CUDA-graph reserve"],
            ["sizing margin", _b(b.sizing_margin_bytes),
             f"max({_b(b.sizing_margin_floor_bytes)}, 0.75 × transient)"],
            ["measured after warmup", _b(b.measured_kv_cache_memory_bytes),
             "min(requested − used, memory − start-up − used − margin) − transient; "
             "used = weights + non-torch + graphs after capture"],
        ]
    total_row = len(rows)
    rows.append(["= KV cache memory", _b(b.kv_cache_memory_bytes), "estimated"])
    # the full formula and every source line are in the JSON (formula, formula_source) and docs/fit.md
    rows.append(["rule", "", ("min(reserved, measured after warmup): vLLM 0.34.0 extensible_kv_cache.py "
                              "measure_kv_cache_bytes" if extensible else
                              f"requested − the four terms: {b.formula_source.split(':')[0]} "
                              "determine_available_memory")])
    w = b.weights
    if w:
        rows.append(["parameters", f"{w.num_params:,}", f"{w.dtype}; {w.quantization}"])
    styles = [None] * total_row + ["bold"] + [None] * (len(rows) - total_row - 1)
    mode = "extensible KV cache, sized after warmup" if extensible else "profiled"
    return fitted_table(f"KV budget per GPU ({mode}; kvplan's estimate; docs/fit.md)",
                        [Col("what"), Col("bytes", right=True), Col("source")], rows, show_header=False,
                        row_styles=styles)


def _layout_line(lay: LayoutDecision) -> str:
    pad = (f", {plural(lay.num_padding_layers, 'padding layer')} ({shown(lay, 'padding_waste_pct'):.2f}%)"
           if lay.num_padding_layers else "")
    return (f"group_size {lay.group_size}, {plural(lay.num_groups, 'group')}{pad}, page {lay.page_size_bytes:,} B, "
            f"{lay.num_blocks:,} blocks, at {lay.max_model_len:,} tokens: max_concurrency "
            f"{shown(lay, 'max_concurrency'):.2f} (vLLM's worst case), steady_state_concurrency "
            f"{shown(lay, 'steady_state_concurrency'):.2f} (kvplan's estimate)")


def _gpu_row(r: GpuTableRow, g: GpuTable, dp: bool, host: bool, reasons: list[str]) -> tuple[list[str], str | None]:
    """One row of the GPU table and its style (a failing row's reason added to ``reasons``)."""
    o = r.outcome
    outcome = ("enough" if r.enough and g.concurrency is not None else "starts") if o.starts else \
        "fails" + (f" ({o.stage})" if o.stage else "")
    if not o.starts and (o.error or (r.kv_cache_memory_bytes or 1) <= 0):
        kv = r.kv_cache_memory_bytes
        short = "no memory left for the KV cache" if kv is not None and kv <= 0 else (o.error or "").split(". ")[0]
        reasons.append(f"{r.gpu} tp {r.tensor_parallel_size}: {short}")
    if o.starts and g.concurrency is not None and not r.enough:
        outcome = "too few"
    conc, steady = (("total_max_concurrency", "total_steady_state_concurrency") if dp else
                    ("max_concurrency", "steady_state_concurrency"))
    cells = [r.gpu, str(r.tensor_parallel_size), *([str(r.data_parallel_size)] if dp else []),
             _b(r.weights_bytes), _b(r.kv_cache_memory_bytes), f"{shown(r, conc):.2f}", f"{shown(r, steady):.2f}",
             str(r.group_size or ""), str(r.num_groups or ""), str(r.num_padding_layers or ""),
             *([_b(r.host_memory_bytes)] if host else []), outcome]
    return cells, "green" if r.enough else ("dim" if not o.starts else None)


Lines = list  # of what a console prints: str (never read as markup) or Text (styled)


def _fit_head(body: FitBody) -> Lines:
    """The model, the policy and serving, and the KV budget (given, or the estimate's table)."""
    from kvplan.results.data import policy_label

    s = body.serving
    lines: Lines = [model_line(body),
                    f"policy {policy_label(body.policy)}; tp {s.tensor_parallel_size}, pp {s.pipeline_parallel_size}, "
                    f"kv_cache_dtype {s.kv_cache_dtype}, block_size {s.block_size}"]
    b = body.budget
    if isinstance(b, GivenBudget):
        lines.append(f"KV budget per GPU: {b.kv_cache_memory_bytes:,} B, {b.kv_cache_memory_source} "
                     "(vLLM's --kv-cache-memory-bytes; not estimated)")
    elif b:
        lines.append(_budget_table(b))
    return lines


def _max_len_lines(m: MaxModelLenAnswer) -> Lines:
    if m.max_model_len is None:
        return [Text(f"Largest max_model_len: none, the engine would not start ({m.layout.outcome.error or ''})",
                     style="bold red")]
    why = "the model's own length" if m.limited_by == "limit" and m.limit == m.model_max_model_len \
        else "the --max-model-len cap" if m.limited_by == "limit" else "KV cache memory"
    lines: Lines = [Text(f"Largest max_model_len: {m.max_model_len:,} (limited by {why})", style="bold green")]
    bd = m.boundary
    if bd is not None and bd.one_more is not None:
        lines.append(f"  checked: {bd.fits.max_model_len:,} starts, {bd.one_more.max_model_len:,} "
                     f"{'starts' if bd.one_more.outcome.starts else 'fails'}")
    return lines + [f"  layout: {_layout_line(m.layout)}"]


def _utilization_lines(u: UtilizationAnswer) -> Lines:
    n, L = u.concurrency, u.context_len
    if u.gpu_memory_utilization is None:
        lines: Lines = [Text(f"Utilization for {plural(float(n), 'request')} of {L:,} tokens: not reachable "
                             f"({u.reason or ''})", style="bold red")]
    else:
        lines = [Text(f"Smallest --gpu-memory-utilization for {plural(float(n), 'request')} of {L:,} tokens: "
                      f"{u.gpu_memory_utilization:.3f} (KV {_b(u.kv_cache_memory_bytes)})", style="bold green")]
        ub = u.boundary
        less = ub.one_step_less if ub is not None else None
        if ub is not None and less is not None:
            lines.append(f"  checked: {ub.enough.gpu_memory_utilization:.3f} gives steady-state "
                         f"{shown(ub.enough.capacity, 'steady_state_concurrency'):.3f}, "
                         f"{less.gpu_memory_utilization:.3f} gives "
                         f"{shown(less.capacity, 'steady_state_concurrency'):.3f}")
    return lines + [f"  layout: {_layout_line(u.layout)}"]


def _context_lines(x: ContextAnswer) -> Lines:
    n = x.concurrency
    if x.max_model_len is None:
        lines: Lines = [Text(f"Longest context for {plural(float(n), 'request')}: none ({x.reason or ''})",
                             style="bold red")]
    else:
        lines = [Text(f"Longest context for {plural(float(n), 'request')} (steady state): {x.max_model_len:,} tokens",
                      style="bold green")]
        one = x.boundary.one_more if x.boundary is not None else None
        if one:
            lines.append(f"  checked: {x.max_model_len + 1:,} tokens gives steady-state "
                         f"{shown(one, 'steady_state_concurrency'):.3f}" + ("" if one.outcome.starts else
                                                                            " (fails to start)"))
    return lines + [f"  layout: {_layout_line(x.layout)}"]


def _goal_lines(goal: GoalAnswer, model_id: str) -> Lines:
    want = f"{plural(float(goal.concurrency), 'request')} of {goal.max_model_len:,} tokens"
    if not goal.reached:
        return [Text(f"Flags for {want}: none found ({goal.reason or ''})", style="bold red")]
    changes = ", ".join(ch.flag for ch in goal.changes) or "none (the deployment as given)"
    return [Text(f"Flags for {want}: {changes} on {goal.num_gpus} × {goal.gpu}", style="bold green"),
            f"  vllm serve {model_id} {' '.join(goal.vllm_flags)}".rstrip(),
            f"  at the budget band's pessimistic end: {goal.num_gpu_blocks_low:,} blocks, steady-state "
            f"{shown(goal, 'total_steady_state_concurrency_low'):.2f} (vLLM's max_concurrency "
            f"{shown(goal, 'max_concurrency_low'):.2f} per engine); {goal.candidates_simulated} candidates "
            "simulated; --emit FORMAT writes it"]


def _gpu_table(g: GpuTable) -> Lines:
    """The GPU × TP table, the failing rows' reasons, DP against TP, and the smallest that is enough."""
    length = f"{g.max_model_len:,} tokens" if g.max_model_len else "the model's max_model_len"
    title = f"Max concurrency per GPU at {length}" + (
        f" (enough = starts and steady-state ≥ {g.concurrency:g})" if g.concurrency is not None else "")
    dp = any(r.data_parallel_size > 1 for r in g.rows)
    host = any(r.host_memory_bytes for r in g.rows)
    if dp:
        title += "; DP ranks are engines: concurrency summed over them"
    cols = [Col("gpu"), Col("tp", right=True), *([Col("dp", right=True)] if dp else []),
            Col("weights/ GPU", right=True, drop=3),
            Col("KV/GPU", right=True, drop=2), Col("max conc. (vLLM's own)", right=True),
            Col("steady (kvplan's estimate)", right=True), Col("group", right=True, drop=1),
            Col("groups", right=True, drop=4), Col("padding", right=True, drop=5),
            *([Col("host RAM (KV tier)", right=True)] if host else []), Col("outcome")]
    rows: list[list[str]] = []
    styles: list[str | None] = []
    reasons: list[str] = []
    for r in g.rows:
        cells, style = _gpu_row(r, g, dp, host, reasons)
        rows.append(cells)
        styles.append(style)
    lines: Lines = [fitted_table(title + " (budgets: kvplan's estimate)", cols, rows, row_styles=styles),
                    *(f"  {line}" for line in reasons), *dp_versus_tp(g.rows)]
    sm = g.smallest_enough
    if sm:
        lines.append(f"Smallest that is enough: {sm.num_gpus} × {sm.gpu} (tp {sm.tensor_parallel_size}"
                     + (f", dp {sm.data_parallel_size}" if sm.data_parallel_size > 1 else "") + "), "
                     f"max concurrency {shown(sm, 'max_concurrency'):.2f}, "
                     f"steady-state {shown(sm, 'steady_state_concurrency'):.2f}")
    else:
        lines.append("No preset and TP size in the table is enough.")
    return lines


def _estimate_note(body: FitBody) -> Lines:
    if not body.estimated:
        return []
    ext = isinstance(body.budget, Budget) and body.budget.kv_cache_sizing == "extensible"
    return [Text("Budgets are estimates (weights exact from the config; activation, non-torch"
                 + (", CUDA-graph and start-up" if ext else " and CUDA-graph") + " memory "
                 "estimated): see docs/fit.md, override with --weights-memory/--activation-memory/--non-torch-memory/"
                 "--cudagraph-memory" + ("/--startup-memory." if ext else "."), style="dim")]


def render_fit(d: Envelope) -> None:
    """``kvplan fit``: the deployment and its budget, each answer asked for, the GPU table, then the caveat."""
    body: FitBody = d.body
    parts: Lines = _fit_head(body)
    if body.max_model_len:
        parts += _max_len_lines(body.max_model_len)
    if body.min_gpu_memory_utilization:
        parts += _utilization_lines(body.min_gpu_memory_utilization)
    if body.max_context_len_for_concurrency:
        parts += _context_lines(body.max_context_len_for_concurrency)
    if body.goal:
        parts += _goal_lines(body.goal, body.model.id)
    if body.gpus:
        parts += _gpu_table(body.gpus)
    c = _console()
    for part in parts + _estimate_note(body):
        c.print(part)
