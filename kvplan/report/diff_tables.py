"""Terminal rendering of `kvplan diff` (kvplan.usecases.diff): the figures that change, with the
era decisions behind each, then the decisions that differ and what each moves."""

from __future__ import annotations

from kvplan.report.tables import _console
from kvplan.report.width import Col, fitted_table


def _cell(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.6g}"
    if isinstance(v, list):
        return "\n".join(map(str, v))
    return str(v)


def render_diff(d: dict) -> None:
    c = _console()
    a, b = d["from_release"], d["to_release"]
    where = f" ({d['where']})" if d.get("where") else ""
    rows = []
    for x in d["changes"]:
        a_v, b_v = x["from_value"], x["to_value"]
        if isinstance(a_v, list) and isinstance(b_v, list):  # lines (logs, groups): only the ones that differ
            a_v, b_v = [v for v in a_v if v not in b_v], [v for v in b_v if v not in a_v]
        rows.append([x["figure"], _cell(a_v), _cell(b_v), "\n".join(x["because"]) or "", x["note"] or ""])
    title = f"kvplan diff: {d['model']}{where}, vllm=={a} ({d['from_era']}) -> vllm=={b} ({d['to_era']})"
    if rows:
        cols = [Col("figure"), Col(f"vllm=={a}", justify="right"), Col(f"vllm=={b}", justify="right"),
                Col("because (era decision)"), Col("note", drop=1)]
        c.print(fitted_table(title, cols, rows))
    else:
        c.print(f"{title}: no figure changes")
    era_rows = [[e["field"], f"{_cell(e['from_value'])} -> {_cell(e['to_value'])}", e["first_release"],
                 ", ".join(e["moves"]) or "nothing on this deployment"] for e in d["era_changes"]]
    if era_rows:
        cols = [Col("era decision"), Col(f"{a} -> {b}"), Col("changed in"), Col("moves")]
        c.print(fitted_table("era decisions that differ", cols, era_rows))
    cap = d["capacity"]
    limit = f", limit {cap['max_loss_pct']:g}%" if cap["max_loss_pct"] is not None else ""
    c.print(f"capacity: KV tokens {cap['from_kv_tokens']:,} -> {cap['to_kv_tokens']:,} "
            f"({0.0 - cap['loss_pct'] + 0.0:+.2f}%{limit}); max concurrency {cap['from_max_concurrency']:.2f} -> "
            f"{cap['to_max_concurrency']:.2f}")
