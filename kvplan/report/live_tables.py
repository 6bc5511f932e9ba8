"""Terminal rendering of `kvplan check --live` (kvplan.usecases.live): per server, each figure
predicted beside the server's."""

from __future__ import annotations

from kvplan.report.tables import _console
from kvplan.report.width import Col, fitted_table


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.6g}"
    return str(v)


def render_live(d: dict) -> None:
    c = _console()
    for s in d["servers"]:
        engine = f" engine {s['engine']}" if s.get("engine") not in (None, "") else ""
        title = (f"{s['url']}{engine}: deployment '{s['deployment']}' ({s['matched_by']}), "
                 f"kvplan under {s['policy']}: {'agrees' if s['agrees'] else 'DISAGREES'}")
        rows = [[f["figure"], _cell(f["predicted"]), _cell(f["served"]),
                 {True: "yes", False: "NO", None: "-"}[f["agrees"]], f["note"] or ""] for f in s["figures"]]
        cols = [Col("figure"), Col("kvplan", right=True), Col("server", right=True), Col("agrees"),
                Col("note", drop=1)]
        c.print(fitted_table(title, cols, rows))
