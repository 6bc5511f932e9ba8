"""Rich rendering of `kvplan compare`'s dict (one engine per row, then the advice)."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kvplan.units import format_bytes

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", "llamacpp": "llama.cpp",
                "lower_bound": "lower bound"}


def _console() -> Console:
    return Console(highlight=False, soft_wrap=False, width=200)


def _num(v) -> str:
    return "" if v is None else f"{v:,}"


def knobs_text(row: dict) -> str:
    k, e = row["knobs"], row["engine"]
    if e == "vllm":
        thr = "none" if k["threshold"] is None else f"{k['threshold']:g}"
        d = row["details"]
        text = f"threshold {thr}, group size {d['group_size']}, {d['num_groups']} groups, {d['num_padding_layers']} padding"
        if k["hybrid_kv_cache_manager"] is False:
            text += ", HMA off"
        return text
    if e == "sglang":
        if not k["hybrid_swa_memory"]:
            return f"one pool (hybrid SWA off), page {k['page_size']}"
        return f"--swa-full-tokens-ratio {k['swa_full_tokens_ratio']:g}, page {k['page_size']}"
    if e == "trtllm":
        windows = "/".join(str(w) for w in k["windows_tokens"])
        shares = "/".join(f"{s:g}" for s in k["window_shares"])
        return f"windows {windows}, shares {shares}{'' if k['window_shares_given'] else ' (equal)'}, {k['tokens_per_block']} tok/block"
    if e == "llamacpp":
        return (f"-c {k['n_ctx_tokens']} -np {k['n_seq']} -ub {k['n_ubatch']}"
                + (" --swa-full" if k["swa_full"] else "") + " (unified KV)")
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
    t = Table(title="Engines on the same inputs (per GPU)", box=box.SIMPLE_HEAD)
    cols = ("engine", "policy / config", "starts", "KV tokens", f"max conc @ {w['target_len_tokens']:,}",
            "steady", "per request", "waste vs need", "knobs")
    for col in cols:
        t.add_column(col, justify="right" if col in ("KV tokens", "steady", "per request", "waste vs need")
                     or col.startswith("max")
                     else "left")
    for r in d["engines"]:
        name = r["name"] + (" [proposal]" if r["is_proposal"] else "")
        starts = Text("yes", style="green") if r["outcome"]["starts"] else Text("no", style="bold red")
        per = r["reserved_per_request_bytes"]
        waste = "" if r["waste_pct"] is None else f"{r['waste_pct']:.1f}%"
        if r["engine"] == "lower_bound":
            waste = "—"
        t.add_row(ENGINE_NAMES[r["engine"]], Text(name), starts, _num(r["kv_tokens"]), f"{r['max_concurrency']:.2f}",
                  f"{r['steady_state_concurrency']:.2f}", "" if per is None else format_bytes(per), waste, Text(knobs_text(r)))
    c.print(t)
    for r in d["engines"]:
        lines = [f"fails: {r['outcome']['error']}"] if r["outcome"]["error"] else []
        if r["engine"] not in ("vllm", "lower_bound"):
            lines += r["notes"]
        if lines:
            title = ENGINE_NAMES[r["engine"]] + (f" {r['name']}" if r["engine"] == "vllm" else "")
            c.print(title + ":", markup=False)
            for n in lines:
                c.print(f"  - {n}", markup=False)
    a = d.get("advice")
    if a:
        render_advice(c, a)


def render_advice(c: Console, a: dict) -> None:
    t = Table(title=f"Advice for {a['target_len_tokens']:,}-token requests"
                    + (f" × {a['target_concurrency']}" if a["target_concurrency"] else ""),
              box=box.SIMPLE_HEAD)
    for col in ("engine", "knob", "max concurrency", "reaches target", "why"):
        t.add_column(col, justify="right" if col == "max concurrency" else "left")

    def reach(x) -> str:
        return "" if x is None else ("yes" if x else "no")

    def row(*cells) -> None:  # plain text, never Rich markup (flags may contain brackets)
        t.add_row(*(Text(str(c)) for c in cells))

    v = a.get("vllm")
    if v:
        if v["applicable"] and v.get("threshold") is not None:
            row("vLLM", v["flag"], f"{v['max_concurrency']:.2f}", reach(v["reaches_target"]), v["reason"])
        else:
            row("vLLM", "(threshold)", "", "", v["reason"])
    s = a["sglang"]
    if s["applicable"] and s.get("swa_full_tokens_ratio") is not None:
        row("SGLang", s["flag"], f"{s['max_concurrency']:.2f}", reach(s["reaches_target"]),
            f"default {s['default_swa_full_tokens_ratio']:g} gives {s['default_max_concurrency']:.2f}")
    else:
        row("SGLang", "(swa-full-tokens-ratio)", f"{s['max_concurrency']:.2f}", reach(s["reaches_target"]),
            s["reason"])
    tr = a["trtllm"]
    if tr["applicable"]:
        row("TensorRT-LLM", tr["env"], f"{tr['max_concurrency']:.2f}", reach(tr["reaches_target"]),
            f"equal shares give {tr['equal_shares_max_concurrency']:.2f}")
    else:
        row("TensorRT-LLM", "(window shares)", f"{tr['max_concurrency']:.2f}", reach(tr["reaches_target"]),
            tr["reason"])
    lc = a["llamacpp"]
    row("llama.cpp", lc["flags"], f"{lc['n_seq']}", reach(lc["reaches_target"]),
        f"with --swa-full: {lc['n_seq_with_swa_full']} sequence(s)")
    c.print(t)
