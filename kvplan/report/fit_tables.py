"""Rich rendering of `kvplan fit` results (the plain dicts of ``kvplan.fit``)."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from kvplan.report.tables import _console, _model_line
from kvplan.units import format_bytes


def _b(n) -> str:
    return "" if n is None else format_bytes(n)


def _short(row: dict) -> str:
    kv = row.get("kv_cache_memory_bytes")
    if kv is not None and kv <= 0:
        return "no memory left for the KV cache"
    return row["outcome"]["error"].split(". ")[0][:70]


def render_gpu_presets(d: dict) -> None:
    t = Table(title="GPU presets (memory as CUDA reports it where a printout was found, else nvidia-smi's total)",
              box=box.SIMPLE_HEAD)
    for col in ("name", "memory", "bytes", "basis", "nominal", "aliases", "source"):
        t.add_column(col, justify="right" if col in ("memory", "bytes") else "left", overflow="fold")
    for g in d["gpus"]:
        t.add_row(g["name"], f"{g['memory_bytes'] / (1 << 30):.2f} GiB", f"{g['memory_bytes']:,}", g["basis"],
                  g["nominal"], ", ".join(g["aliases"]), g["source"])
    _console().print(t)


def _budget_table(b: dict) -> Table:
    extensible = b.get("kv_cache_sizing") == "extensible"
    mode = "extensible KV cache, sized after warmup" if extensible else "profiled"
    t = Table(title=f"KV budget per GPU ({mode}; estimated; docs/fit.md)", box=box.SIMPLE_HEAD, show_header=False)
    t.add_column("what")
    t.add_column("bytes", justify="right")
    t.add_column("source")
    gpu = b["gpu"] or "custom"
    t.add_row(f"GPU memory ({gpu})", _b(b["gpu_memory_bytes"]), b["gpu_memory_source"])
    t.add_row("sizing", b.get("kv_cache_sizing", "profiled"), b.get("kv_cache_sizing_source", ""))
    t.add_row(f"× gpu_memory_utilization {b['gpu_memory_utilization']:g}", _b(b["requested_memory_bytes"]),
              b["gpu_memory_utilization_source"])
    t.add_row(f"− weights (tp {b['tensor_parallel_size']}, pp {b['pipeline_parallel_size']})", _b(b["weights_bytes"]),
              b["weights_source"])
    t.add_row("− activation peak", _b(b["activation_peak_bytes"]), b["activation_source"])
    t.add_row("− non-torch memory", _b(b["non_torch_bytes"]), b["non_torch_source"])
    t.add_row("− CUDA-graph reserve", _b(b["cudagraph_bytes"]), b["cudagraph_source"])
    if extensible:
        t.add_row("= reserved (tentative)", _b(b["tentative_kv_cache_memory_bytes"]), "vLLM's profiling estimate")
        t.add_row("CUDA graphs after capture", _b(b["cudagraph_resident_bytes"]),
                  "override" if b["cudagraph_source"] == "override" else "estimate")
        t.add_row("start-up memory in use", _b(b["startup_memory_bytes"]), b["startup_memory_source"])
        t.add_row("transient reserve", _b(b["transient_reserve_bytes"]), "activation peak + CUDA-graph reserve")
        t.add_row("sizing margin", _b(b["sizing_margin_bytes"]),
                  f"max({_b(b['sizing_margin_floor_bytes'])}, 0.75 × transient)")
        t.add_row("measured after warmup", _b(b["measured_kv_cache_memory_bytes"]),
                  "min(requested − used, memory − start-up − used − margin) − transient; "
                  "used = weights + non-torch + graphs after capture")
    t.add_row("= KV cache memory", _b(b["kv_cache_memory_bytes"]), "estimated", style="bold")
    # the full formula and every source line are in the JSON (formula, formula_source) and docs/fit.md
    t.add_row("rule", "", ("min(reserved, measured after warmup): vLLM 0.34.0 extensible_kv_cache.py "
                           "measure_kv_cache_bytes" if extensible else
                           f"requested − the four terms: {b['formula_source'].split(':')[0]} determine_available_memory"))
    w = b.get("weights")
    if w:
        t.add_row("parameters", f"{w['num_params']:,}", f"{w['dtype']}; {w['quantization']}")
    return t


def _layout_line(lay: dict) -> str:
    pad = f", {lay['num_padding_layers']} padding layer(s) ({lay['padding_waste_pct']:.2f}%)" if lay["num_padding_layers"] else ""
    return (f"group_size {lay['group_size']}, {lay['num_groups']} group(s){pad}, page {lay['page_size_bytes']:,} B, "
            f"{lay['num_blocks']:,} blocks, at {lay['max_model_len']:,} tokens: max_concurrency {lay['max_concurrency']:.2f} "
            f"(vLLM's worst case), steady_state_concurrency {lay.get('steady_state_concurrency', 0.0):.2f} (kvplan's estimate)")


def render_fit(d: dict) -> None:
    c = _console()
    c.print(_model_line(d))
    p = d["policy"]
    s = d["serving"]
    from kvplan.report.data import policy_label

    c.print(f"policy {policy_label(p)}; tp {s['tensor_parallel_size']}, pp {s['pipeline_parallel_size']}, "
            f"kv_cache_dtype {s['kv_cache_dtype']}, block_size {s['block_size']}")
    if d.get("budget") and "gpu_memory_bytes" not in d["budget"]:
        c.print(f"KV budget per GPU: {d['budget']['kv_cache_memory_bytes']:,} B, {d['budget']['kv_cache_memory_source']} "
                "(vLLM's --kv-cache-memory-bytes; not estimated)")
    elif d.get("budget"):
        c.print(_budget_table(d["budget"]))
    m = d.get("max_model_len")
    if m:
        if m["max_model_len"] is None:
            f = m["layout"]["outcome"]
            c.print(Text(f"Largest max_model_len: none, the engine would not start ({f['error'] or ''})",
                         style="bold red"))
        else:
            why = "the model's own length" if m["limited_by"] == "limit" and m["limit"] == m["model_max_model_len"] \
                else "the --max-model-len cap" if m["limited_by"] == "limit" else "KV cache memory"
            c.print(Text(f"Largest max_model_len: {m['max_model_len']:,} (limited by {why})", style="bold green"))
            bd = m["boundary"] or {}
            if bd.get("one_more"):
                c.print(f"  checked: {bd['fits']['max_model_len']:,} starts, {bd['one_more']['max_model_len']:,} "
                        f"{'starts' if bd['one_more']['outcome']['starts'] else 'fails'}")
            c.print(f"  layout: {_layout_line(m['layout'])}")
    u = d.get("min_gpu_memory_utilization")
    if u:
        n, L = u["concurrency"], u["context_len"]
        if u["gpu_memory_utilization"] is None:
            c.print(Text(f"Utilization for {n:g} requests of {L:,} tokens: not reachable ({u.get('reason', '')})",
                         style="bold red"))
        else:
            c.print(Text(f"Smallest --gpu-memory-utilization for {n:g} requests of {L:,} tokens: "
                         f"{u['gpu_memory_utilization']:.3f} (KV {_b(u['kv_cache_memory_bytes'])})", style="bold green"))
            bd = u["boundary"]
            less = bd.get("one_step_less")
            if less:
                c.print(f"  checked: {bd['enough']['gpu_memory_utilization']:.3f} gives steady-state "
                        f"{bd['enough']['steady_state_concurrency']:.3f}, {less['gpu_memory_utilization']:.3f} gives "
                        f"{less['steady_state_concurrency']:.3f}")
        c.print(f"  layout: {_layout_line(u['layout'])}")
    x = d.get("max_context_len_for_concurrency")
    if x:
        n = x["concurrency"]
        if x["max_model_len"] is None:
            c.print(Text(f"Longest context for {n:g} requests: none ({x.get('reason', '')})", style="bold red"))
        else:
            c.print(Text(f"Longest context for {n:g} requests (steady state): {x['max_model_len']:,} tokens", style="bold green"))
            one = (x["boundary"] or {}).get("one_more")
            if one:
                c.print(f"  checked: {x['max_model_len'] + 1:,} tokens gives steady-state "
                        f"{one['steady_state_concurrency']:.3f}" + ("" if one["outcome"]["starts"] else " (fails to start)"))
        c.print(f"  layout: {_layout_line(x['layout'])}")
    g = d.get("gpus")
    if g:
        length = f"{g['max_model_len']:,} tokens" if g["max_model_len"] else "the model's max_model_len"
        title = f"Max concurrency per GPU at {length}" + (
            f" (enough = starts and steady-state ≥ {g['concurrency']:g})" if g["concurrency"] is not None else "")
        t = Table(title=title, box=box.SIMPLE_HEAD)
        cols = ("gpu", "tp", "weights/GPU", "KV/GPU", "max conc.", "steady", "group", "groups", "padding", "outcome")
        for col in cols:
            t.add_column(col, justify="left" if col in ("gpu", "outcome") else "right")
        for r in g["rows"]:
            starts = r["outcome"]["starts"]
            outcome = ("enough" if r["enough"] and g["concurrency"] is not None else "starts") if starts else \
                "fails" + (f": {_short(r)}" if r["outcome"]["error"] else "")
            if starts and g["concurrency"] is not None and not r["enough"]:
                outcome = "too few"
            t.add_row(r["gpu"], str(r["tensor_parallel_size"]), _b(r["weights_bytes"]), _b(r["kv_cache_memory_bytes"]),
                      f"{r['max_concurrency']:.2f}", f"{r.get('steady_state_concurrency', 0.0):.2f}", str(r["group_size"] or ""), str(r["num_groups"] or ""),
                      str(r["num_padding_layers"] or ""), outcome,
                      style="green" if r["enough"] else ("dim" if not starts else ""))
        c.print(t)
        sm = g["smallest_enough"]
        if sm:
            c.print(f"Smallest that is enough: {sm['num_gpus']} × {sm['gpu']} (tp {sm['tensor_parallel_size']}), "
                    f"max concurrency {sm['max_concurrency']:.2f}, steady-state {sm['steady_state_concurrency']:.2f}")
        else:
            c.print("No preset and TP size in the table is enough.")
    if d.get("estimated", True):
        ext = (d.get("budget") or {}).get("kv_cache_sizing") == "extensible"
        c.print("Budgets are estimates (weights exact from the config; activation, non-torch"
                + (", CUDA-graph and start-up" if ext else " and CUDA-graph") + " memory "
                "estimated): see docs/fit.md, override with --weights-memory/--activation-memory/--non-torch-memory/"
                "--cudagraph-memory" + ("/--startup-memory." if ext else "."), style="dim")
