"""Tables of ``kvplan explain-log``: what the log says (vLLM's own figures) beside kvplan's
re-simulation, the traps, and what could not be recovered. Every table fits the terminal
(``width.fitted_table``)."""

from __future__ import annotations

from typing import Sequence

from rich.text import Text

from kvplan.report import width
from kvplan.report.width import Col, fitted_table
from kvplan.results import shown, to_data
from kvplan.results.envelope import Envelope
from kvplan.results.explain_log import ExplainLogBody, FigureRow, Rebuild, SimulationSummary
from kvplan.units import format_bytes

_FACT_LABELS = (
    ("release", "vLLM release"), ("model", "model"), ("architecture", "architecture"), ("dtype", "dtype"),
    ("quantization", "quantization"), ("kv_cache_dtype", "kv_cache_dtype"),
    ("tensor_parallel_size", "tensor_parallel_size"), ("pipeline_parallel_size", "pipeline_parallel_size"),
    ("data_parallel_size", "data_parallel_size"), ("max_model_len", "max_model_len"),
    ("speculative_config", "speculative_config"), ("max_num_batched_tokens", "max_num_batched_tokens"),
    ("model_loading_gib", "model loading (GiB)"), ("cuda_graph_gib", "CUDA graphs (GiB)"),
    ("available_kv_cache_memory_gib", "available KV cache memory (GiB)"),
    ("kv_cache_memory_bytes_gib", "kv_cache_memory_bytes (GiB)"), ("num_gpu_blocks", "num_gpu_blocks"),
    ("kv_cache_size_tokens", "GPU KV cache size (tokens)"), ("max_concurrency", "maximum concurrency (x)"),
    ("consumed_gib", "weights + non-torch memory (GiB)"), ("attention_block_size", "attention block size (tokens)"),
    ("mamba_page_padding_pct", "mamba page padding (%)"),
)


def _cell(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return "–".join(_cell(x) for x in v)
    return str(v)


def _starts_line(rec: dict, sim: SimulationSummary | None) -> str:
    """``OK starts: …`` with the log's KV tokens and concurrency (else the re-simulation's)."""
    mem = sim.memory if sim is not None else None
    tokens = rec.get("kv_cache_size_tokens") or (mem.kv_cache_size_tokens if mem else None)
    conc = rec.get("max_concurrency") or (shown(mem, "max_concurrency") if mem else None)
    parts = [f"{tokens:,} KV tokens" if tokens else None,
             f"{conc:.2f}x at {rec.get('concurrency_max_model_len') or '?':,} tokens" if conc else None]
    return "OK starts: " + (", ".join(p for p in parts if p) or "the KV cache was sized")


def summary_lines(d: Envelope) -> list[str]:
    """The verdict first: ``OK starts: …`` / ``FAILS at <stage>: <vLLM's text> — fix: <flag>``, then
    the release and how the logged figures compare (the lead unifies the verdict helper)."""
    body: ExplainLogBody = d.body
    out = d.outcome
    if out.starts is False:
        text = out.error or "the log shows a start-up failure"
        line = f"FAILS at {out.stage or 'start-up'}: {text.split('. ')[0].rstrip('.')}"
        if out.fix:
            line += f" — fix: {out.fix}"
    elif out.starts is True:
        line = _starts_line(d["recovered"], body.simulation)  # the log's facts: keys present where it shows them
    else:
        line = "UNKNOWN: the log shows neither a KV cache size nor a start-up failure"
    release = (d.get("release") or {}).get("release") or "not in the log (kvplan's default rules)"
    return [line, f"release: {release}; figures: {body.verdict}"]


def _facts(rec: dict, rb: dict) -> list[list[str]]:
    """The log's facts (``rec``: Recovered's keys, present where the log shows them) and the re-simulation's
    reading of them (``rb``: the rebuilt deployment's keys, a use case's record)."""
    facts = [[label, _cell(rec.get(k) if k != "model" else rb.get("model"))] for k, label in _FACT_LABELS
             if (rec.get(k) if k != "model" else rb.get("model")) is not None]
    if rb.get("options"):
        facts.append(["options read (for the re-simulation)",
                      ", ".join(f"{k}={v} ({rb['option_sources'].get(k, '')})" for k, v in rb["options"].items())])
    if rb.get("ignored_args"):
        facts.append(["arguments kvplan does not model", ", ".join(rb["ignored_args"])])
    return facts


def _rebuild_head(rebuild: Rebuild, rb: dict) -> str:
    budget = rb.get("budget")
    head = f"Re-simulation: {rebuild.status}"
    if rebuild.status == "simulated":
        head += f" with {rb['policy'] or 'the default policy ' + str(rebuild.policy_used)} on {rb['model']}"
        if budget:
            head += (f", budget {format_bytes(budget['kv_cache_memory_bytes'])} from {budget['source']}"
                     + ("" if budget["exact"] else " (±0.005 GiB: vLLM prints 2 decimals)"))
    elif rebuild.detail:
        head += f" ({rebuild.detail})"
    return head


def _figures_table(figures: Sequence[FigureRow]):
    seen: set[str] = set()
    rows = []
    for r in figures:  # a line's meaning once, on its first figure
        meaning = "" if r.kind in seen else (r.meaning or "")
        seen.add(r.kind)
        rng = to_data(r.kvplan_range)  # the range as the JSON shows it
        figure = r.figure + (f" (printed {r.count} times)" if r.count > 1 else "")
        rows.append([_cell(r.line), figure, _cell(to_data(r.logged)),
                     _cell(to_data(r.kvplan)) + (f" ({_cell(rng)})" if rng and rng[0] != rng[1] else ""),
                     r.verdict, meaning])
    styles = ["red" if r.agrees is False else None for r in figures]
    return fitted_table("Each logged figure (vLLM's own) beside kvplan's estimate; meaning in this release",
                        [Col("line", right=True), Col("figure"), Col("vLLM (log)", right=True),
                         Col("kvplan", right=True), Col("verdict"), Col("meaning", drop=1)], rows,
                        row_styles=styles)


def render_explain_log(d: Envelope) -> None:
    body: ExplainLogBody = d.body
    con = width.console()
    rb = d["rebuild"]  # the rebuilt deployment's keys (a use case's record, flattened into the rebuild)
    first, second = summary_lines(d)
    con.print(Text(first, style="bold"))
    con.print(Text(second))
    con.print(Text(""))
    log = body.log
    con.print(Text(f"Log {log.source}: {log.lines:,} lines, {log.facts} facts recovered", style="bold"))
    con.print(fitted_table("Recovered from the log (vLLM's own lines)", [Col("fact"), Col("value")],
                           _facts(d["recovered"], rb)))
    con.print(Text(""))
    con.print(Text(_rebuild_head(body.rebuild, rb)))
    if body.figures:
        con.print(_figures_table(body.figures))
    con.print(Text(f"Verdict: {body.verdict}", style="bold"))
    if body.traps:
        con.print(fitted_table("Traps", [Col("trap"), Col("what it costs")], [[t.trap, t.detail] for t in body.traps]))
    notes = [*body.missing, *body.rebuild.notes, *(f"not modelled by kvplan: {a}" for a in rb.get("ignored_args", []))]
    if notes:
        con.print(fitted_table("Not recovered or assumed", [Col("note")], [[n] for n in notes]))
