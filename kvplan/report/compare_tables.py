"""Terminal rendering of `kvplan compare`'s dict (one engine per row, then the advice)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from kvplan.engines.registry import titles
from kvplan.report import width
from kvplan.report.width import Col, fill, fitted_table
from kvplan.units import format_bytes, plural

# each engine's name as the tables show it, from the registry (kvplan.engines.registry: one line per engine)
ENGINE_NAMES = titles()


def _console() -> Console:
    return width.console()


def _num(v) -> str:
    return "" if v is None else f"{v:,}"


def knobs_text(row: dict) -> str:
    k, e = row["knobs"], row["engine"]
    if e == "vllm":
        thr = "none" if k["threshold"] is None else f"{k['threshold']:g}"
        d = row["details"]
        text = f"threshold {thr}, group size {d['group_size']}, {plural(d['num_groups'], 'group')}, {d['num_padding_layers']} padding"
        if k["hybrid_kv_cache_manager"] is False:
            text += ", HMA off"
        return text
    if e == "sglang":
        if not k["hybrid_swa_memory"]:
            return f"one pool (hybrid SWA off), page {k['page_size']}"
        return (f"--swa-full-tokens-ratio {k['swa_full_tokens_ratio']:g}, page {k['page_size']}"
                + (", no overlap" if k.get("disable_overlap_schedule") else "")
                + (f", --mamba-full-memory-ratio {k['mamba_full_memory_ratio']:g}" if k.get("mamba_full_memory_ratio")
                   else ""))
    if e == "trtllm":
        windows = "/".join(str(w) for w in k["windows_tokens"])
        shares = "/".join(f"{s:g}" for s in k["window_shares"])
        mamba = (f"max_batch_size {k['max_batch_size']}, block reuse {'on' if k['enable_block_reuse'] else 'off'}, "
                 f"Mamba SSM cache {k['mamba_ssm_cache_dtype']}, " if k.get("mamba_ssm_cache_dtype") else "")
        return (f"windows {windows}, shares {shares}{'' if k['window_shares_given'] else ' (equal)'}, "
                f"{k['tokens_per_block']} tok/block, {k.get('scheduler_policy', '')}, max_attention_window "
                f"{'= the model windows' if k.get('max_attention_window') else 'unset'}, {mamba}chunked prefill on "
                f"(assumed); TensorRT-LLM {k.get('release', '')}")
    if e == "llamacpp":
        return (f"-c {k['n_ctx_tokens']} -np {k['n_seq']} -ub {k['n_ubatch']}"
                + (" --swa-full" if k["swa_full"] else "") + (" (unified KV)" if k["kv_unified"] else " (KV per slot)"))
    return "full L, window min(L, W), state once"


def render_compare(d: dict) -> None:
    c = _console()
    m = d["model"]
    line = f"{m['id']}  ({m['architecture']})"
    if d.get("drafter"):
        line += f" + drafter {d['drafter']['id']}"
    c.print(line)
    w = d["workload"]
    target = f", target concurrency {w['target_concurrency']}" if w["target_concurrency"] else ""
    c.print(f"KV budget {format_bytes(w['kv_cache_memory_bytes'])} per GPU, requests of {w['target_len_tokens']:,} "
            f"tokens{target}")
    cols = [Col("engine"), Col("config", drop=1), Col("starts"), Col("KV tokens", right=True),
            Col("max conc (engine's own)", right=True), Col("steady (kvplan's estimate)", right=True),
            Col("per request", justify="right", drop=2), Col("waste", right=True, drop=3)]
    rows = []
    for r in d["engines"]:
        name = r["name"] + (" [proposal]" if r["is_proposal"] else "")
        starts = Text("yes", style="green") if r["outcome"]["starts"] else Text("no", style="bold red")
        per = r["reserved_per_request_bytes"]
        waste = "" if r["waste_pct"] is None else f"{r['waste_pct']:.1f}%"
        if r["engine"] == "lower_bound":
            waste = "—"
        rows.append([ENGINE_NAMES[r["engine"]], Text(name), starts, _num(r["kv_tokens"]), f"{r['max_concurrency']:.2f}",
                     f"{r['steady_state_concurrency']:.2f}", "" if per is None else format_bytes(per), waste])
    c.print(fitted_table(f"Engines on the same inputs (per GPU), max concurrency at {w['target_len_tokens']:,} "
                         "tokens (the lower bound's figures are kvplan's own)", cols, rows))
    render_stages(c, d)
    for r in d["engines"]:
        lines = [f"knobs: {knobs_text(r)}"] if r["engine"] != "lower_bound" else []
        lines += [f"fails: {r['outcome']['error']}"] if r["outcome"]["error"] else []
        if r["engine"] not in ("vllm", "lower_bound"):
            lines += r["notes"]
        if lines:
            title = ENGINE_NAMES[r["engine"]] + (f" {r['name']}" if r["engine"] == "vllm" else "")
            c.print(title + ":", markup=False)
            for n in lines:
                c.print(fill(n, "  - ", "    "), markup=False)
    a = d.get("advice")
    if a:
        render_advice(c, a)


def render_advice(c: Console, a: dict) -> None:
    title = (f"Advice for {a['target_len_tokens']:,}-token requests"
             + (f" × {a['target_concurrency']}" if a["target_concurrency"] else "")
             + " (max conc: kvplan's simulation of each engine's own rules)")
    rows: list[list] = []
    why: list[str] = []

    def reach(x) -> str:
        return "" if x is None else ("yes" if x else "no")

    def row(*cells) -> None:  # plain text, never Rich markup (flags may contain brackets); the reason below
        rows.append([Text(str(c)) for c in cells[:-1]])
        why.append(f"{cells[0]}: {cells[-1]}")

    v = a.get("vllm")
    if v:
        if v["applicable"] and v.get("threshold") is not None:
            if v.get("code_change"):
                knob, reason = f"code change: threshold {v['threshold']:g}", f"{v['reason']}; {v['code_change']}"
            else:
                knob, reason = f"no change (shipped {v['current']['threshold']:g})", v["reason"]
            row("vLLM", knob, f"{v['max_concurrency']:.2f}", reach(v["reaches_target"]),
                f"{reason} (kvplan simulates it with {v['kvplan_flag']})")
        else:
            row("vLLM", "(threshold)", "", "", v["reason"])
    s = a["sglang"]
    if s["applicable"] and s.get("swa_full_tokens_ratio") is not None:
        row("SGLang", s["flag"], f"{s['max_concurrency']:.2f}", reach(s["reaches_target"]),
            f"default {s['default_swa_full_tokens_ratio']:g} gives {s['default_max_concurrency']:.2f}; "
            f"+{plural(s['gain_requests'], 'request')} (best of {s['candidates_tried']:,} ratios); "
            f"smallest pool margin {s['margin']:.3f}")
    else:
        row("SGLang", "(swa-full-tokens-ratio)", f"{s['max_concurrency']:.2f}", reach(s["reaches_target"]),
            s["reason"])
    tr = a["trtllm"]
    if tr.get("settings"):
        knob = tr["settings_text"] + (f" {tr['env']}" if tr.get("window_shares") else "")
        row("TensorRT-LLM", knob, f"{tr['max_concurrency']:.2f}", reach(tr["reaches_target"]),
            f"defaults serve {plural(tr['default_requests'], 'request')}"
            + (f" (they fail: {tr['default_fails']})" if tr.get("default_fails") else "")
            + f"; +{plural(tr['gain_requests'], 'request')}")
    elif tr["applicable"] and tr.get("window_shares"):
        row("TensorRT-LLM", tr["env"], f"{tr['max_concurrency']:.2f}", reach(tr["reaches_target"]),
            f"equal shares give {tr['equal_shares_max_concurrency']:.2f}; +{plural(tr['gain_requests'], 'request')} "
            f"(best of {tr['candidates_tried']:,} splits); smallest pool margin {tr['margin']:.3f}")
    elif tr["applicable"] and tr.get("default_requests") is not None:
        row("TensorRT-LLM", "(window shares)", f"{tr['max_concurrency']:.2f}", reach(tr["reaches_target"]),
            tr["reason"])
    elif tr["applicable"]:
        row("TensorRT-LLM", "(window shares)", "0.00", reach(tr["reaches_target"]), tr["reason"])
    else:
        row("TensorRT-LLM", "(window shares)", f"{tr['max_concurrency']:.2f}", reach(tr["reaches_target"]),
            tr["reason"])
    lc = a["llamacpp"]
    row("llama.cpp", lc["flags"] or "(-np / -c)", f"{lc['n_seq']}", reach(lc["reaches_target"]),
        lc.get("reason") or f"unified {lc['n_seq_unified']}, per slot {lc['n_seq_non_unified']}, "
        f"with --swa-full {plural(lc['n_seq_with_swa_full'], 'sequence')}")
    c.print(fitted_table(title, [Col("engine"), Col("knob"), Col("max conc", right=True), Col("reaches target")], rows))
    for line in why:
        c.print(fill(line, "  - ", "    "), markup=False)


STAGE_COLUMNS = (("kv_tokens", "KV tokens"), ("longest_prompt_tokens", "longest prompt"),
                 ("admission_concurrency", "conc admit"), ("steady_concurrency", "conc steady"))


def _stage_cell(fig: dict, label: str) -> str:
    v = fig["value"]
    if v is None:
        text = "—"
    elif isinstance(v, float) and not v.is_integer():
        text = f"{v:,.2f}"
    else:
        text = f"{int(v):,}"
    return f"{text} [{label}]"


def render_stages(c: Console, d: dict) -> None:
    """Each non-vLLM engine through admission, prefill and steady decode; every figure carries
    a letter naming the rule (and source) it comes from, listed under the table."""
    rows = [r for r in d["engines"] if "stages" in r["details"]]
    if not rows:
        return
    w = d["workload"]
    rules: dict[str, str] = {}
    legend: list[tuple[str, str, str]] = []

    def label(engine: str, rule: str) -> str:
        if rule not in rules:
            rules[rule] = chr(ord("a") + len(rules))
            legend.append((rules[rule], engine, rule))
        return rules[rule]

    table_rows = []
    for r in rows:
        st = r["details"]["stages"]
        name = f"{ENGINE_NAMES[r['engine']]} {st['engine_version']}"
        cells = [_stage_cell(st[key], label(name, st[key]["rule"])) for key, _ in STAGE_COLUMNS]
        starts = "yes" if st["starts"]["value"] else "no"
        # a prompt is only "too long" for an engine that starts; one that fails says why in its notes
        too_long = starts == "yes" and not st["prefills_prompt"]
        table_rows.append([name, *cells, Text(starts + (", prompt too long" if too_long else ""),
                                              style="green" if starts == "yes" and st["prefills_prompt"] else "bold red")])
    cols = [Col("engine"), *(Col(title, right=True) for _, title in STAGE_COLUMNS), Col("starts")]
    c.print(fitted_table(f"Through each engine, {w['target_len_tokens']:,}-token requests (each engine's own rules, "
                         "as kvplan simulates them; [x] names the rule below)", cols, table_rows))
    for key, engine, rule in legend:
        c.print(fill(f"{key}. {engine}: {rule}", "", "   "), markup=False)
