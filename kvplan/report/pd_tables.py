"""``kvplan vllm --line PREFILL --decode-line DECODE``: each side's verdict line, then the pair's rules."""

from __future__ import annotations

from rich.text import Text

from kvplan.report import width
from kvplan.report.width import Col, fitted_table


def render_pd(d: dict) -> None:
    c = width.console()
    for role in ("prefill", "decode"):
        side = d[role]
        o = side["outcome"] if "outcome" in side else None
        m = side["memory"]
        starts = side["workers"] and m["num_blocks"] > 0
        c.print(f"{role}: {side['model']['id']} on vllm=={side['policy']['vllm_release'] or side['policy']['name']}, "
                f"tp {side['serving']['tensor_parallel_size']}, block {min(g['block_size'] for g in side['groups']) if side['groups'] else '?'}"
                + (f": {m['num_blocks']:,} blocks, max_concurrency {m['max_concurrency']:.2f}" if starts else
                   f": {o['error_type']}: {o['error']}" if o else ""), markup=False)
    p = d["pair"]
    if not p["modelled"]:
        c.print(f"pair: {p['kv_connector'] or 'no KV connector given'}: {p['note']} (each side simulated alone)",
                markup=False)
    else:
        rows = [[r["rule"], r["prefill"], r["decode"], "ok" if r["ok"] else "fails"] for r in p["rules"]]
        c.print(fitted_table(f"Pair: what {p['kv_connector']} requires of prefill and decode (vLLM 0.34.0's checks)",
                             [Col("rule"), Col("prefill"), Col("decode"), Col("")], rows))
    if p.get("decode_max_num_inflight_kv_loads") is not None:
        c.print(f"decode: --max-num-inflight-kv-loads {p['decode_max_num_inflight_kv_loads']}: the running batch keeps "
                f"{p['decode_running_concurrency_with_loads']:.2f} requests of the pool while loads wait "
                "(kvplan's estimate: each load a max_model_len prompt)", markup=False)
    o = d["outcome"]
    if o["starts"] and not p["modelled"]:
        c.print(Text("Outcome: both engines start; whether the pair can hand KV over is not checked.",
                     style="bold yellow"))
    elif o["starts"]:
        c.print(Text("Outcome: both engines start and the pair can hand KV over.", style="bold green"))
    else:
        c.print(Text(f"Outcome: the pair fails ({o['stage']}): {o['error_type']}: {o['error']}", style="bold red"))
    if p.get("fix"):
        c.print(f"  fix (verified by re-simulating both sides): {p['fix']}", markup=False)
