"""Rich rendering of the plain dicts from report.data (the only module importing Rich)."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kvplan.report import width
from kvplan.report.width import Col, fitted_table
from kvplan.units import compact_ranges, format_bytes

MAX_SLOTS_SHOWN = 24


def _console() -> Console:
    # $COLUMNS when set (piped output too), else the terminal's width, else 100 when piped
    return width.console()


def _num(x) -> str:
    return "—" if x is None else f"{x:,}"


def _idx(labels: list[str]) -> str:
    ints = [int(x) for x in labels if x.isdigit()]
    rest = [x for x in labels if not x.isdigit()]
    return ", ".join(filter(None, [compact_ranges(ints), ", ".join(rest)]))


def _model_line(d: dict) -> str:
    m = d["model"]
    text = f"{m['id']}  ({m['architecture']}, {m['source']}"
    text += f", {m['provenance']})" if m.get("provenance") else ")"
    if d.get("drafter"):
        dr = d["drafter"]
        text += f"\ndrafter {dr['id']}  ({dr['architecture']}, {dr['source']})"
    sp = d.get("speculative") or {}
    if sp.get("method"):
        n = sp["num_speculative_tokens"]
        text += f"\nspeculative method {sp['method']}, " + (
            f"{n} speculative token(s)" if n else "num_speculative_tokens not given")
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


def collapse_layers(layers: list[dict]) -> list[list[str]]:
    """One row per run of consecutive layers that differ only in their index (a uniform dense
    model is one row ``0-79``); a run of one or two keeps its own rows."""
    rows: list[list[str]] = []
    i = 0
    while i < len(layers):
        a = layers[i]
        key = (_layer_cells(a), _name_pattern(a["name"], str(a["index"])))
        j = i
        while j + 1 < len(layers) and str(layers[j + 1]["index"]).isdigit() and str(layers[j]["index"]).isdigit() \
                and int(layers[j + 1]["index"]) == int(layers[j]["index"]) + 1 \
                and (_layer_cells(layers[j + 1]), _name_pattern(layers[j + 1]["name"], str(layers[j + 1]["index"]))) == key:
            j += 1
        if j - i >= 2:
            rows.append([f"{a['index']}-{layers[j]['index']}", key[1], *key[0]])
        else:
            rows += [[str(x["index"]), x["name"], *_layer_cells(x)] for x in layers[i:j + 1]]
        i = j + 1
    return rows


def render_inspect(d: dict) -> None:
    c = _console()
    c.print(_model_line(d), markup=False)
    s = d["serving"]
    c.print(
        f"block_size {s['block_size']}, kv_cache_dtype {s['kv_cache_dtype']}, "
        f"tp {s['tensor_parallel_size']}, pp {s['pipeline_parallel_size']}"
    )
    cols = [Col("index", right=True), Col("name", drop=4), Col("source", drop=5), Col("kind"),
            Col("window/ chunk"), Col("kv heads", right=True), Col("head size", right=True), Col("dtype", drop=2),
            Col("block", right=True, drop=1), Col("page bytes", right=True)]
    c.print(fitted_table("Layers (registration order; * = each index of the range)", cols, collapse_layers(d["layers"])))
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
    c.print(fitted_table("Summary by kind", cols, rows, row_styles=[None] * (len(rows) - 1) + ["bold"]))
    if len(d["ranks"]) > 1 or s["tensor_parallel_size"] > 1:
        rows = [[str(r["rank"]), str(r["num_layers"]), _idx(r["layers"])] for r in d["ranks"]]
        c.print(fitted_table(
            f"Per rank (tp {s['tensor_parallel_size']} × pp {s['pipeline_parallel_size']}; specs are per TP rank)",
            [Col("pp stage", right=True), Col("layers", right=True), Col("indices")], rows))
    if d["kv_sharing_layers"]:
        c.print(f"KV-sharing layers (no cache of their own): {len(d['kv_sharing_layers'])}")


def layout_picture(d: dict) -> Text:
    """Tensor slots (columns) × groups (rows): each cell is the layer using that slot; ░ = padding."""
    groups = d["groups"]
    G = d["memory"]["group_size"]
    shown = min(G, MAX_SLOTS_SHOWN)
    width = max([len(x) for g in groups for x in g["layers"]] + [2, len(str(G - 1))])
    text = Text()
    text.append("slot      " + " ".join(str(i).rjust(width) for i in range(shown)) + (" …" if G > shown else "") + "\n")
    for g in groups:
        text.append(f"group {g['index']:<3} ")
        for i in range(shown):
            if i < len(g["layers"]):
                style = "bold magenta" if g["has_drafter_layers"] and _is_drafter(d, g, i) else ""
                text.append(g["layers"][i].rjust(width), style=style)
            else:
                text.append("░" * width, style="dim red")
            text.append(" ")
        if G > shown:
            text.append("…")
        text.append(f"  {g['label']}\n")
    return text


def _is_drafter(d: dict, g: dict, i: int) -> bool:
    return g["layers"][i] in g["drafter_layers"]


def render_plan(d: dict) -> None:
    from kvplan.report.data import policy_label

    c = _console()
    c.print(_model_line(d))
    p = d["policy"]
    thr = "none (min)" if p["threshold"] is None else f"{p['threshold']:g}"
    if p["is_proposal"]:
        c.print(f"policy {p['name']} ({p['description']})  [proposal, not shipped vLLM behaviour]")
    elif p.get("vllm_release"):
        c.print(f"policy {policy_label(p)}: era {p['name']}, threshold {thr}")
    else:
        rels = p["vllm_releases"]
        span = f"{rels[0]} to {rels[-1]}" if len(rels) > 1 else ", ".join(rels)
        c.print(f"policy {p['name']} (threshold {thr}; vLLM {span})")
    if p.get("warning"):
        c.print(f"[yellow]Warning: {p['warning']}[/yellow]")
    hma = d["hybrid_kv_cache_manager"]
    if hma["enabled"] is False:
        c.print(f"hybrid KV-cache manager: off ({'; '.join(hma['reasons_disabled'])})")
    gr = d["grouping"]
    if gr and gr["buckets"]:
        t = Table(title="Buckets (identical specs, first-appearance order)", box=box.SIMPLE_HEAD)
        for col in ("bucket", "kind", "layers", "block", "page bytes", "padding", "indices"):
            t.add_column(col, justify="left" if col in ("kind", "indices") else "right")
        for b in gr["buckets"]:
            t.add_row(str(b["index"]), b["label"], str(b["num_layers"]), str(b["block_size"]),
                      f"{b['page_size_bytes']:,}", str(b["padding_layers"] or ""), _idx(b["layers"]))
        c.print(t)
    workers = [w for w in d["workers"] if "own_num_blocks" in w]
    # nothing was allocated: the engine failed before its KV cache configs (memory, config stage)
    failed = not d["outcome"]["starts"] and not d["memory"]["num_blocks"]
    if d["groups"]:
        title = f"KV cache groups (group_size {d['memory']['group_size']}"
        if len(workers) > 1:
            title += ", global; slots per stage " + "/".join(str(w["group_size"]) for w in workers)
        t = Table(title=title + ")", box=box.SIMPLE_HEAD)
        cols = ["group", "kind", "layers", "padding slots", "block", "blocks/request"]
        cols += ["need (1 request)"] if failed else []
        for col in cols + ["indices"]:
            t.add_column(col, justify="left" if col in ("kind", "indices") else "right")
        for g in d["groups"]:
            layers = str(g["num_layers"])
            if g.get("num_layers_per_worker"):
                layers += " (" + "+".join(map(str, g["num_layers_per_worker"])) + ")"
            row = [str(g["index"]), g["label"] + (" +drafter" if g["has_drafter_layers"] else ""),
                   layers, str(g["padding_slots"] or ""), str(g["block_size"]), _num(g["blocks_per_request"])]
            row += [format_bytes(g["needed_bytes"]) if g.get("needed_bytes") is not None else "—"] if failed else []
            t.add_row(*row, _idx(g["layers"]))
        c.print(t)
    if len(workers) > 1:
        t = Table(title="Per pipeline stage (one KV cache config each; num_blocks = the minimum over stages)",
                  box=box.SIMPLE_HEAD)
        for col in ("stage", "layers", "slots", "bytes/block", "own blocks", "num_blocks", "need / available",
                    "padding at full load"):
            t.add_column(col, justify="right")
        for w in workers:
            t.add_row(str(w["rank"]), str(w["num_layers"]), str(w["group_size"]), f"{w['bytes_per_block']:,}",
                      f"{w['own_num_blocks']:,}", f"{w['num_blocks']:,}" if w["allocated"] else "—",
                      f"{format_bytes(w['needed_bytes'])} / {format_bytes(w['checked_available_bytes'])}",
                      f"{format_bytes(w['padding_waste_bytes'])} ({w['padding_waste_pct_of_pool']:.2f}%)")
        c.print(t)
    if d["tensors"]:
        title = "KV tensors (one per slot; shared_by = the i-th layer of each group)"
        if len(workers) > 1:
            title = "KV tensors of stage 0 (one per slot; shared_by = the i-th layer of each group there)"
        t = Table(title=title, box=box.SIMPLE_HEAD)
        t.add_column("tensor", justify="right")
        t.add_column("size_bytes", justify="right")
        t.add_column("shared_by")
        for tensor in d["tensors"][:MAX_SLOTS_SHOWN * 4]:
            from kvplan.report.data import layer_index

            t.add_row(str(tensor["index"]), f"{tensor['size_bytes']:,}",
                      ", ".join(layer_index(n) for n in tensor["shared_by"]))
        if len(d["tensors"]) > MAX_SLOTS_SHOWN * 4:
            t.add_row("…", "", f"{len(d['tensors'])} tensors in all")
        c.print(t)
    if d["groups"] and gr and gr["path"] == "uniform_page":
        c.print("Layout (tensor slots × groups; ░ = padding):")
        c.print(layout_picture(d))
    m = d["memory"]
    sch = d["scheduler"]
    t = Table(title="Memory", box=box.SIMPLE_HEAD, show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")
    est = m.get("estimated_max_model_len")
    num_blocks = f"{m['num_blocks']:,}" if not failed else (
        f"not allocated (the pool: {m['pool_num_blocks']:,})" if m.get("pool_num_blocks") else "not allocated")
    rows = [
        ("available (per GPU)", f"{m['available_bytes']:,} B ({format_bytes(m['available_bytes'])})"),
        ("page_size_bytes", f"{m['page_size_bytes']:,}"),
        ("bytes per block (all slots)", f"{m['bytes_per_block']:,}" + (
            f" (stage {m['binding_rank']}: {m['slots_per_block']} slots)" if len(workers) > 1 else "")),
        ("num_blocks", num_blocks),
        ("max_model_len", f"{sch['max_model_len']:,}" + (
            f" (auto-fit from {sch['original_max_model_len']:,})" if sch["max_model_len"] != sch["original_max_model_len"] else "")),
        ("blocks reserved per request", " + ".join(_num(g["blocks_per_request"]) for g in d["groups"])
         + f" = {m['blocks_per_request']:,}" if d["groups"] else "0"),
        ("needed vs available (admission)", f"{format_bytes(m['needed_bytes'])} / {format_bytes(m['checked_available_bytes'])}"),
    ]
    if est is not None:
        rows.append(("vLLM's estimated maximum model length", f"{est:,}"))
    rows += [
        ("padding", f"{gr['num_padding_layers'] if gr else 0} layers (vLLM: may waste at most {gr['padding_waste_pct'] if gr else 0:.2f}%)"
                    + ("" if failed else f"; {format_bytes(m['padding_waste_bytes'])} at full load "
                                         f"({m['padding_waste_pct_of_pool']:.2f}% of pool)")),
        ("KV tokens (max_concurrency × max_model_len)", f"{m['kv_tokens']:,}"),
        ('"GPU KV cache size" meanings', f"{m['kv_cache_size_tokens_blocks_meaning']:,} (≤0.20: blocks // groups × block) / "
                                         f"{m['kv_cache_size_tokens_concurrency_meaning']:,} (0.33: concurrency × length)"),
        ("max_concurrency (vLLM's figure: worst case)", f"{m['max_concurrency']:.2f}"),
        ("steady_state_concurrency (kvplan's estimate)", f"{m.get('steady_state_concurrency', 0.0):.2f}"),
    ]
    for r in rows:
        t.add_row(*r)
    c.print(t)
    if d["logs"]:
        c.print("vLLM log lines:")
        for line in d["logs"]:
            c.print(f"  {line}", markup=False)
    if d.get("explain"):
        c.print("Why:")
        for line in d["explain"]:
            c.print(f"  - {line}", markup=False)
    o = d["outcome"]
    if o["starts"]:
        c.print(Text("Outcome: the engine would start.", style="bold green"))
    else:
        c.print(Text(f"Outcome: the engine would fail at start-up ({o['stage']}): {o['error_type']}: {o['error']}",
                     style="bold red"))
    for f in d.get("fixes") or []:
        c.print(f"  fix (verified by re-simulating): {f['flag']}  → {f['result']}", markup=False)


def render_rows(title: str, columns: list[str], rows: list[list], right: set[str] | None = None) -> None:
    """A plain table for list-shaped results (models, sweeps, checks)."""
    right = right or set()
    t = Table(title=title, box=box.SIMPLE_HEAD)
    for col in columns:
        t.add_column(col, justify="right" if col in right else "left")
    for r in rows:
        t.add_row(*["" if v is None else str(v) for v in r])
    _console().print(t)


def render_mapping(title: str, data: dict) -> None:
    """A two-column table for flat result dicts (scalars; nested lists/dicts shown as counts)."""
    t = Table(title=title, box=box.SIMPLE_HEAD, show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")
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
        t.add_row(k, text)
    _console().print(t)


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
    cols = ["threshold", "group_size", "groups", "padding layers", "padding %", "num_blocks",
            "KV tokens", "max_concurrency", "outcome"]
    render_rows(
        f"Threshold sweep ({d['policy']['name']})", cols,
        [[r["threshold"], r["group_size"], r["num_groups"], r["num_padding_layers"],
          f"{r['padding_waste_pct']:.2f}", f"{r['num_blocks']:,}", f"{r['kv_tokens']:,}",
          f"{r['max_concurrency']:.2f}", "starts" if r["outcome"]["starts"] else f"fails ({r['outcome']['stage']})"]
         for r in d["rows"]],
        right=set(cols[:-1]),
    )
    for msg in dict.fromkeys(r["outcome"]["error"] for r in d["rows"] if r["outcome"]["error"]):
        print(f"fails: {msg}")
    for c in d["critical_thresholds"]:
        print(f"Critical threshold {c['threshold']:g} ({c['ratio']}): group size {c['group_size_at_or_below']} "
              f"at or below, {c['group_size_above']} above.")
    if d.get("plot"):
        print(f"Plot written to {d['plot']}")
