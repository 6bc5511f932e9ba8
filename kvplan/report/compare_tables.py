"""Terminal rendering of `kvplan compare`'s dict (one engine per row, then the advice). Each engine words its own
knobs, heading and advice line (``kvplan.engines.engine.Engine``); this module draws them in the registry's order."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from kvplan.engines import registry
from kvplan.report import width
from kvplan.report.width import Col, fill, fitted_table
from kvplan.results import shown
from kvplan.results.compare import CompareBody, EngineRowRecord
from kvplan.results.envelope import Envelope
from kvplan.units import format_bytes


def _engines() -> dict:
    """Each engine by its name, from the registry as it is when the table is drawn (kvplan.engines.registry: one line
    per engine); each words its own table text (kvplan.engines.engine.Engine)."""
    return {e.name: e for e in registry.ENGINES}


def _console() -> Console:
    return width.console()


def _num(v) -> str:
    return "" if v is None else f"{v:,}"


def knobs_text(row: dict) -> str:
    """A row's knobs in one line, in its engine's words (``Engine.knobs_text``)."""
    if row["engine"] == "lower_bound":
        return "full L, window min(L, W), state once"
    return _engines()[row["engine"]].knobs_text(row)


def _engine_cells(r: EngineRowRecord) -> list:
    """One engine's row of the table (its figures as the JSON shows them)."""
    name = r.name + (" [proposal]" if r.is_proposal else "")
    starts = Text("yes", style="green") if r.outcome.starts else Text("no", style="bold red")
    per = r.reserved_per_request_bytes
    waste = "—" if r.engine == "lower_bound" else ("" if r.waste_pct is None else f"{shown(r, 'waste_pct'):.1f}%")
    return [registry.titles()[r.engine], Text(name), starts, _num(r.kv_tokens), f"{shown(r, 'max_concurrency'):.2f}",
            f"{shown(r, 'steady_state_concurrency'):.2f}", "" if per is None else format_bytes(per), waste]


def _engine_notes(c: Console, r: EngineRowRecord, row: dict) -> None:
    """An engine's knobs, failure and notes under the table (``row``: the serialized row its engine words)."""
    lines = [f"knobs: {knobs_text(row)}"] if r.engine != "lower_bound" else []
    lines += [f"fails: {r.outcome.error}"] if r.outcome.error else []
    engine = _engines().get(r.engine)  # None: the lower bound
    if engine is not None and engine.shows_notes:
        lines += r.notes
    if lines:
        c.print((engine.heading(row) if engine is not None else registry.titles()[r.engine]) + ":", markup=False)
        for n in lines:
            c.print(fill(n, "  - ", "    "), markup=False)


def render_compare(d: Envelope) -> None:
    body: CompareBody = d.body
    c = _console()
    line = f"{body.model.id}  ({body.model.architecture})"
    if body.drafter:
        line += f" + drafter {body.drafter.id}"
    c.print(line)
    w = d["workload"]  # kvplan.engines.compare.CompareInputs, as its DATA view words it
    target = f", target concurrency {w['target_concurrency']}" if w["target_concurrency"] else ""
    c.print(f"KV budget {format_bytes(w['kv_cache_memory_bytes'])} per GPU, requests of {w['target_len_tokens']:,} "
            f"tokens{target}")
    cols = [Col("engine"), Col("config", drop=1), Col("starts"), Col("KV tokens", right=True),
            Col("max conc (engine's own)", right=True), Col("steady (kvplan's estimate)", right=True),
            Col("per request", justify="right", drop=2), Col("waste", right=True, drop=3)]
    c.print(fitted_table(f"Engines on the same inputs (per GPU), max concurrency at {w['target_len_tokens']:,} "
                         "tokens (the lower bound's figures are kvplan's own)", cols,
                         [_engine_cells(r) for r in body.engines]))
    render_stages(c, d)
    for r, row in zip(body.engines, d["engines"]):
        _engine_notes(c, r, row)
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

    for e in _engines().values():  # each engine's advice in its own words (Engine.advice_cells), the registry's order
        if a.get(e.name) is not None:
            knob, max_conc, reaches, reason = e.advice_cells(a[e.name])
            row(e.title, knob, max_conc, reach(reaches), reason)
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
        name = f"{registry.titles()[r['engine']]} {st['engine_version']}"
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
