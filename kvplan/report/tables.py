"""Rich rendering of the plain dicts from report.data (the only module importing Rich)."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kvplan.units import compact_ranges, format_bytes

MAX_SLOTS_SHOWN = 24


def _console() -> Console:
    # A fixed width when piped (README snapshots, CI logs); the terminal's own otherwise.
    import sys

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 140)


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


def render_inspect(d: dict) -> None:
    c = _console()
    c.print(_model_line(d))
    s = d["serving"]
    c.print(
        f"block_size {s['block_size']}, kv_cache_dtype {s['kv_cache_dtype']}, "
        f"tp {s['tensor_parallel_size']}, pp {s['pipeline_parallel_size']}"
    )
    t = Table(title="Layers (registration order)", box=box.SIMPLE_HEAD)
    for col in ("index", "name", "source", "kind", "window/chunk", "kv heads", "head size", "dtype", "block", "page bytes"):
        t.add_column(col, justify="right" if col in ("index", "kv heads", "block", "page bytes") else "left")
    for layer in d["layers"]:
        heads = layer["num_kv_heads"]
        hs = layer["head_size"]
        head = "" if hs is None else (f"{hs}/{layer['head_size_v']}" if layer["head_size_v"] != hs else str(hs))
        if layer["kind"] == "mamba":
            head = " ".join("x".join(map(str, s)) for s in layer["shapes"])
        t.add_row(
            str(layer["index"]), layer["name"], layer["source"], layer["kind"], _window(layer),
            "" if heads is None else str(heads), head, layer["dtype"] or "/".join(layer["dtypes"] or []),
            str(layer["block_size"]), f"{layer['page_size_bytes']:,}",
        )
    c.print(t)
    t = Table(title="Summary by kind", box=box.SIMPLE_HEAD)
    for col in ("kind", "source", "layers", "page bytes", "KV bytes/token/layer", "KV bytes/token", "state bytes/request"):
        t.add_column(col, justify="left" if col in ("kind", "source") else "right")
    for r in d["summary"]:
        per, tot, st = r["kv_bytes_per_token"], r["kv_bytes_per_token_total"], r["state_bytes"]
        t.add_row(r["label"], r["source"], str(r["num_layers"]), f"{r['page_size_bytes']:,}",
                  "" if per is None else f"{per:,}", "" if tot is None else f"{tot:,}",
                  "" if st is None else f"{st * r['num_layers']:,}")
    t.add_row("total", "", str(d["num_layers"]), "", "", f"{d['kv_bytes_per_token']:,}",
              f"{d['state_bytes_per_request']:,}" if d["state_bytes_per_request"] else "", style="bold")
    c.print(t)
    if len(d["ranks"]) > 1 or s["tensor_parallel_size"] > 1:
        t = Table(title=f"Per rank (tp {s['tensor_parallel_size']} × pp {s['pipeline_parallel_size']}; specs are per TP rank)",
                  box=box.SIMPLE_HEAD)
        t.add_column("pp stage", justify="right")
        t.add_column("layers", justify="right")
        t.add_column("indices")
        for r in d["ranks"]:
            t.add_row(str(r["rank"]), str(r["num_layers"]), _idx(r["layers"]))
        c.print(t)
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
    c = _console()
    c.print(_model_line(d))
    p = d["policy"]
    thr = "none (min)" if p["threshold"] is None else f"{p['threshold']:g}"
    if p["is_proposal"]:
        c.print(f"policy {p['name']} ({p['description']})  [proposal, not shipped vLLM behaviour]")
    else:
        c.print(f"policy {p['name']} (threshold {thr}; vLLM {', '.join(p['vllm_releases'])})")
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
    if d["groups"]:
        t = Table(title=f"KV cache groups (group_size {d['memory']['group_size']})", box=box.SIMPLE_HEAD)
        for col in ("group", "kind", "layers", "padding slots", "block", "blocks/request", "indices"):
            t.add_column(col, justify="left" if col in ("kind", "indices") else "right")
        for g in d["groups"]:
            t.add_row(str(g["index"]), g["label"] + (" +drafter" if g["has_drafter_layers"] else ""),
                      str(g["num_layers"]), str(g["padding_slots"] or ""), str(g["block_size"]),
                      str(g["blocks_per_request"]), _idx(g["layers"]))
        c.print(t)
    if d["tensors"]:
        t = Table(title="KV tensors (one per slot; shared_by = the i-th layer of each group)", box=box.SIMPLE_HEAD)
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
    rows = [
        ("available (per GPU)", f"{m['available_bytes']:,} B ({format_bytes(m['available_bytes'])})"),
        ("page_size_bytes", f"{m['page_size_bytes']:,}"),
        ("bytes per block (all slots)", f"{m['bytes_per_block']:,}"),
        ("num_blocks", f"{m['num_blocks']:,}"),
        ("max_model_len", f"{sch['max_model_len']:,}" + (
            f" (auto-fit from {sch['original_max_model_len']:,})" if sch["max_model_len"] != sch["original_max_model_len"] else "")),
        ("blocks reserved per request", " + ".join(str(g["blocks_per_request"]) for g in d["groups"]) + f" = {m['blocks_per_request']:,}"),
        ("needed vs available (admission)", f"{format_bytes(m['needed_bytes'])} / {format_bytes(m['checked_available_bytes'])}"),
        ("padding", f"{gr['num_padding_layers'] if gr else 0} layers (vLLM: may waste at most {gr['padding_waste_pct'] if gr else 0:.2f}%); "
                    f"{format_bytes(m['padding_waste_bytes'])} at full load ({m['padding_waste_pct_of_pool']:.2f}% of pool)"),
        ("KV tokens (max_concurrency × max_model_len)", f"{m['kv_tokens']:,}"),
        ('"GPU KV cache size" meanings', f"{m['kv_cache_size_tokens_blocks_meaning']:,} (≤0.20: blocks // groups × block) / "
                                         f"{m['kv_cache_size_tokens_concurrency_meaning']:,} (0.33: concurrency × length)"),
        ("max_concurrency", f"{m['max_concurrency']:.2f}"),
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
    render_mapping("KV budget from hardware (estimated)" if budget.get("estimated") else "KV budget", budget)


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
