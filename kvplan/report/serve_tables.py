"""`kvplan vllm`: the serve line as kvplan read it (release, flag list, each flag's effect)."""

from __future__ import annotations

import json

from typing import TYPE_CHECKING

from kvplan.report import width

if TYPE_CHECKING:
    from kvplan.results.envelope import Envelope
    from kvplan.results.serve import ServeRecord


def _shown(value) -> str:
    if value is None or value is True:
        return ""
    if value is False:
        return "off"
    if isinstance(value, (list, tuple)):  # a list in the JSON: a tuple or list in the record
        return " ".join(value)
    text = str(value)
    if text.startswith("{"):
        try:  # spaces after , and : let a JSON value wrap
            return json.dumps(json.loads(text))
        except ValueError:
            pass
    return text


def render_serve(d: Envelope) -> None:
    s: ServeRecord = d.body.serve
    c = width.console()
    where = f" ({s.image})" if s.image else ""
    c.print(f"{s.form} line{where}: vllm=={s.release} ({s.release_source}), flag list of "
            f"{s.flag_list.release}", markup=False)
    rows = []
    for f in s.flags:
        what = f.effect if f.effect != "applied" else f"applied → {f.applied_as or 'kvplan'}"
        rows.append([f.flag, _shown(f.value), what, f.note or ""])
    if rows:
        cols = [width.Col("flag"), width.Col("value"), width.Col("kvplan"), width.Col("note", drop=1)]
        if not any(r[3] for r in rows):
            cols, rows = cols[:3], [r[:3] for r in rows]
        c.print(width.fitted_table("vllm serve flags as kvplan read them", cols, rows))
        c.print("")
    if s.environment:
        applied = "applied" if s.environment_applied else "read, not applied"
        env = ", ".join(f"{k}={v}" for k, v in s.environment.items())
        c.print(f"environment ({applied}): {env}", markup=False)
