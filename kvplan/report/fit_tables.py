"""Terminal rendering of `kvplan fit` results (the data of ``kvplan.fit``'s record, as ``--format json`` prints it)."""

from __future__ import annotations

from rich.text import Text

from kvplan.report.tables import _console, _model_line
from kvplan.report.width import Col, fitted_table
from kvplan.results import shown
from kvplan.results.envelope import Envelope
from kvplan.results.fit import FitBody, GpuTable, GpuTableRow, LayoutDecision
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


def dp_versus_tp(rows: list[dict]) -> list[str]:
    """Where the same card count starts as TP N and as DP N (one GPU each): how much more the DP engines hold
    in all (their pools add up; TP ranks share one engine's pool)."""
    out = []
    for r in rows:
        n = r["num_gpus"]
        if r.get("data_parallel_size", 1) != n or n <= 1 or not r["outcome"]["starts"]:
            continue
        tp = next((t for t in rows if t["gpu"] == r["gpu"] and t["tensor_parallel_size"] == n
                   and t.get("data_parallel_size", 1) == 1 and t["outcome"]["starts"]), None)
        base = (tp["total_kv_tokens"] or tp["kv_tokens"]) if tp is not None else 0
        if base:
            out.append(f"{n} × {r['gpu']}: DP {n} holds {r['total_kv_tokens']:,} KV tokens in {n} engines, "
                       f"{r['total_kv_tokens'] / base:.1f}× TP {n}'s {base:,} in one (kvplan's sums)")
    return out


def _budget_table(b: dict):
    gpu = b["gpu"] or "custom"
    extensible = b.get("kv_cache_sizing") == "extensible"
    rows = [
        [f"GPU memory ({gpu})", _b(b["gpu_memory_bytes"]), b["gpu_memory_source"]],
        ["sizing", b.get("kv_cache_sizing", "profiled"), b.get("kv_cache_sizing_source", "")],
        [f"× gpu_memory_utilization {b['gpu_memory_utilization']:g}", _b(b["requested_memory_bytes"]),
         b["gpu_memory_utilization_source"]],
        [f"− weights (tp {b['tensor_parallel_size']}, pp {b['pipeline_parallel_size']})", _b(b["weights_bytes"]),
         b["weights_source"]],
        ["− activation peak", _b(b["activation_peak_bytes"]), b["activation_source"]],
        ["− non-torch memory", _b(b["non_torch_bytes"]), b["non_torch_source"]],
        ["− CUDA-graph reserve", _b(b["cudagraph_bytes"]), b["cudagraph_source"]],
    ]
    if extensible:
        rows += [
            ["= reserved (tentative)", _b(b["tentative_kv_cache_memory_bytes"]), "vLLM's profiling estimate"],
            ["CUDA graphs after capture", _b(b["cudagraph_resident_bytes"]),
             "override" if b["cudagraph_source"] == "override" else "estimate"],
            ["start-up memory in use", _b(b["startup_memory_bytes"]), b["startup_memory_source"]],
            ["transient reserve", _b(b["transient_reserve_bytes"]), "activation peak + CUDA-graph reserve"],
            ["sizing margin", _b(b["sizing_margin_bytes"]),
             f"max({_b(b['sizing_margin_floor_bytes'])}, 0.75 × transient)"],
            ["measured after warmup", _b(b["measured_kv_cache_memory_bytes"]),
             "min(requested − used, memory − start-up − used − margin) − transient; "
             "used = weights + non-torch + graphs after capture"],
        ]
    total_row = len(rows)
    rows.append(["= KV cache memory", _b(b["kv_cache_memory_bytes"]), "estimated"])
    # the full formula and every source line are in the JSON (formula, formula_source) and docs/fit.md
    rows.append(["rule", "", ("min(reserved, measured after warmup): vLLM 0.34.0 extensible_kv_cache.py "
                              "measure_kv_cache_bytes" if extensible else
                              f"requested − the four terms: {b['formula_source'].split(':')[0]} "
                              "determine_available_memory")])
    w = b.get("weights")
    if w:
        rows.append(["parameters", f"{w['num_params']:,}", f"{w['dtype']}; {w['quantization']}"])
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


def render_fit(d: Envelope) -> None:
    body: FitBody = d.body
    c = _console()
    c.print(_model_line(d))
    p = d["policy"]
    s = d["serving"]
    from kvplan.results.data import policy_label

    c.print(f"policy {policy_label(p)}; tp {s['tensor_parallel_size']}, pp {s['pipeline_parallel_size']}, "
            f"kv_cache_dtype {s['kv_cache_dtype']}, block_size {s['block_size']}")
    if d.get("budget") and "gpu_memory_bytes" not in d["budget"]:
        c.print(f"KV budget per GPU: {d['budget']['kv_cache_memory_bytes']:,} B, {d['budget']['kv_cache_memory_source']} "
                "(vLLM's --kv-cache-memory-bytes; not estimated)")
    elif d.get("budget"):
        c.print(_budget_table(d["budget"]))
    m = body.max_model_len
    if m:
        if m.max_model_len is None:
            c.print(Text(f"Largest max_model_len: none, the engine would not start ({m.layout.outcome.error or ''})",
                         style="bold red"))
        else:
            why = "the model's own length" if m.limited_by == "limit" and m.limit == m.model_max_model_len \
                else "the --max-model-len cap" if m.limited_by == "limit" else "KV cache memory"
            c.print(Text(f"Largest max_model_len: {m.max_model_len:,} (limited by {why})", style="bold green"))
            bd = m.boundary
            if bd is not None and bd.one_more is not None:
                c.print(f"  checked: {bd.fits.max_model_len:,} starts, {bd.one_more.max_model_len:,} "
                        f"{'starts' if bd.one_more.outcome.starts else 'fails'}")
            c.print(f"  layout: {_layout_line(m.layout)}")
    u = body.min_gpu_memory_utilization
    if u:
        n, L = u.concurrency, u.context_len
        if u.gpu_memory_utilization is None:
            c.print(Text(f"Utilization for {plural(float(n), 'request')} of {L:,} tokens: not reachable ({u.reason or ''})",
                         style="bold red"))
        else:
            c.print(Text(f"Smallest --gpu-memory-utilization for {plural(float(n), 'request')} of {L:,} tokens: "
                         f"{u.gpu_memory_utilization:.3f} (KV {_b(u.kv_cache_memory_bytes)})", style="bold green"))
            ub = u.boundary
            less = ub.one_step_less if ub is not None else None
            if ub is not None and less is not None:
                c.print(f"  checked: {ub.enough.gpu_memory_utilization:.3f} gives steady-state "
                        f"{shown(ub.enough.capacity, 'steady_state_concurrency'):.3f}, "
                        f"{less.gpu_memory_utilization:.3f} gives "
                        f"{shown(less.capacity, 'steady_state_concurrency'):.3f}")
        c.print(f"  layout: {_layout_line(u.layout)}")
    x = body.max_context_len_for_concurrency
    if x:
        n = x.concurrency
        if x.max_model_len is None:
            c.print(Text(f"Longest context for {plural(float(n), 'request')}: none ({x.reason or ''})", style="bold red"))
        else:
            c.print(Text(f"Longest context for {plural(float(n), 'request')} (steady state): {x.max_model_len:,} tokens",
                         style="bold green"))
            one = x.boundary.one_more if x.boundary is not None else None
            if one:
                c.print(f"  checked: {x.max_model_len + 1:,} tokens gives steady-state "
                        f"{shown(one, 'steady_state_concurrency'):.3f}" + ("" if one.outcome.starts else " (fails to start)"))
        c.print(f"  layout: {_layout_line(x.layout)}")
    goal = d.get("goal")
    if goal:
        want = f"{plural(float(goal['concurrency']), 'request')} of {goal['max_model_len']:,} tokens"
        if not goal["reached"]:
            c.print(Text(f"Flags for {want}: none found ({goal.get('reason', '')})", style="bold red"))
        else:
            changes = ", ".join(ch["flag"] for ch in goal["changes"]) or "none (the deployment as given)"
            c.print(Text(f"Flags for {want}: {changes} on {goal['num_gpus']} × {goal['gpu']}", style="bold green"))
            c.print(f"  vllm serve {d['model']['id']} {' '.join(goal['vllm_flags'])}".rstrip(), markup=False)
            c.print(f"  at the budget band's pessimistic end: {goal['num_gpu_blocks_low']:,} blocks, steady-state "
                    f"{goal['total_steady_state_concurrency_low']:.2f} (vLLM's max_concurrency "
                    f"{goal['max_concurrency_low']:.2f} per engine); {goal['candidates_simulated']} candidates "
                    "simulated; --emit FORMAT writes it")
    g = body.gpus
    if g:
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
        c.print(fitted_table(title + " (budgets: kvplan's estimate)", cols, rows, row_styles=styles))
        for line in reasons:
            c.print(f"  {line}", markup=False)
        for line in dp_versus_tp(d["gpus"]["rows"]):
            c.print(line, markup=False)
        sm = g.smallest_enough
        if sm:
            c.print(f"Smallest that is enough: {sm.num_gpus} × {sm.gpu} (tp {sm.tensor_parallel_size}"
                    + (f", dp {sm.data_parallel_size}" if sm.data_parallel_size > 1 else "") + "), "
                    f"max concurrency {shown(sm, 'max_concurrency'):.2f}, "
                    f"steady-state {shown(sm, 'steady_state_concurrency'):.2f}")
        else:
            c.print("No preset and TP size in the table is enough.")
    if d.get("estimated", True):
        ext = (d.get("budget") or {}).get("kv_cache_sizing") == "extensible"
        c.print("Budgets are estimates (weights exact from the config; activation, non-torch"
                + (", CUDA-graph and start-up" if ext else " and CUDA-graph") + " memory "
                "estimated): see docs/fit.md, override with --weights-memory/--activation-memory/--non-torch-memory/"
                "--cudagraph-memory" + ("/--startup-memory." if ext else "."), style="dim")
