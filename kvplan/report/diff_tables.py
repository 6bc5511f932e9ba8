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
    rows = [[x["figure"], _cell(x["from_value"]), _cell(x["to_value"]),
             "\n".join(x["because"]) or "", x["note"] or ""] for x in d["changes"]]
    title = f"kvplan diff: {d['model']}{where}, vllm=={a} ({d['from_era']}) -> vllm=={b} ({d['to_era']})"
    if rows:
        cols = [Col("figure"), Col(f"vllm=={a}", right=True), Col(f"vllm=={b}", right=True),
                Col("era decision behind it"), Col("note", drop=1)]
        c.print(fitted_table(title, cols, rows))
    else:
        c.print(f"{title}: no figure changes")
    era_rows = [[e["field"], _cell(e["from_value"]), _cell(e["to_value"]), e["first_release"],
                 ", ".join(e["moves"]) or "nothing on this deployment"] for e in d["era_changes"]]
    if era_rows:
        cols = [Col("era decision"), Col(f"vllm=={a}"), Col(f"vllm=={b}"), Col("changed in"), Col("moves")]
        c.print(fitted_table("era decisions that differ", cols, era_rows))
    cap = d["capacity"]
    limit = f", limit {cap['max_loss_pct']:g}%" if cap["max_loss_pct"] is not None else ""
    c.print(f"capacity: KV tokens {cap['from_kv_tokens']:,} -> {cap['to_kv_tokens']:,} "
            f"({0.0 - cap['loss_pct'] + 0.0:+.2f}%{limit}); max concurrency {cap['from_max_concurrency']:.2f} -> "
            f"{cap['to_max_concurrency']:.2f}")
