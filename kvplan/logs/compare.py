"""Each figure the log shows beside kvplan's, with what the line means in that release, and
the traps the deployment falls into.

kvplan's figures are read from its own predicted log lines (``Plan.logs`` and the failure
message) by the same extractor that read the log, so the two sides are always the same
quantity printed the same way. With a budget printed to 0.01 GiB, kvplan's figure is also
computed at both ends of the rounding interval: a logged figure inside that range agrees.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.logs.extract import Facts, facts_of
from kvplan.logs.reader import Record
from kvplan.results.explain_log import FigureRow

# (fact kind, value key, figure name as shown), in the order a log prints them
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("override", "num_blocks", "num_gpu_blocks (before the override)"),
    ("autofit", "max_model_len", "auto-fit max_model_len"),
    ("padding", "num_padding_layers", "padding layers"),
    ("padding", "waste_pct", "padding waste at most (%)"),
    ("kv_cache_size", "kv_cache_size_tokens", "GPU KV cache size (tokens)"),
    ("concurrency", "max_model_len", "max_model_len of the concurrency line"),
    ("concurrency", "max_concurrency", "maximum concurrency (x)"),
    ("admission_error", "max_model_len", "max seq len of the admission error"),
    ("admission_error", "needed_gib", "KV cache needed (GiB)"),
    ("admission_error", "available_gib", "available KV cache memory in the check (GiB)"),
    ("admission_error", "estimated_max_model_len", "estimated maximum model length"),
    ("exception", "error_type", "start-up exception"),
)
# facts whose presence is the figure (a warning or an error)
PRESENCE: tuple[tuple[str, str], ...] = (
    ("hma_off_converted", "hybrid manager off: layers converted to full attention"),
    ("drafter_split", "drafting layers split across KV cache groups (AssertionError)"),
    ("page_error", "page sizes that do not divide (NotImplementedError)"),
    ("autofit_none", "auto-fit finds no length that fits"),
)


def split_capacity(facts: Facts) -> Facts:
    """The one-line capacity log (0.28+) as the two facts older releases print."""
    from kvplan.logs.extract import Fact

    out = []
    for f in facts.items:
        if f.kind == "capacity":
            out.append(Fact("kv_cache_size", {"kv_cache_size_tokens": f["kv_cache_size_tokens"]}, f.line, f.text))
            out.append(Fact("concurrency", {"max_model_len": f["max_model_len"],
                                            "max_concurrency": f["max_concurrency"]}, f.line, f.text))
        else:
            out.append(f)
    return Facts(out)


def predicted_facts(result) -> Facts:
    """The facts of kvplan's own predicted log lines (and its failure, as vLLM words it)."""
    lines = list(result.plan.logs)
    if result.plan.failure is not None:
        lines.append(f"{result.plan.failure.error_type}: {result.plan.failure.message}")
    return split_capacity(facts_of([Record(0, line) for line in lines]))


def _values(facts: Facts, kind: str, key: str) -> list:
    return [f.values.get(key) for f in facts.all(kind)]


def _agrees(logged, mid: list, low: list | None, high: list | None, index: int) -> tuple[bool, str]:
    if logged in mid:
        return True, "agrees"
    if low is not None and high is not None and index < len(low) and index < len(high):
        a, b = low[index], high[index]
        if a is not None and b is not None and min(a, b) <= logged <= max(a, b):
            return True, "agrees within the rounding of the logged KV memory"
    return False, "disagrees"


# what a layout-only re-simulation (no KV memory in the log) can compare
LAYOUT_KINDS = frozenset({"padding", "hma_off_converted", "drafter_split", "page_error"})


def figures(logged: Facts, sim, meanings: dict[str, str], *, layout_only: bool = False) -> list[FigureRow]:
    """One row per figure the log shows: logged value, kvplan's, the range, the meaning, the verdict.
    ``layout_only``: the budget is unknown, so only the figures that do not depend on it are compared."""
    logged = split_capacity(logged)
    rows: list[FigureRow] = []
    mid = predicted_facts(sim.result) if sim and sim.result else None
    low = predicted_facts(sim.low) if sim and sim.low else None
    high = predicted_facts(sim.high) if sim and sim.high else None
    for kind, key, name in FIGURES:
        # a figure every worker prints (TP over Ray or multiprocessing) is one figure, with its count
        seen: dict = {}  # logged value -> its row's index in rows
        for f in logged.all(kind):
            if key not in f.values:
                continue
            if f[key] in seen:
                at = seen[f[key]]
                rows[at] = replace(rows[at], count=rows[at].count + 1)
                continue
            i = len(seen)  # the distinct figure's place among kvplan's lines of this kind
            seen[f[key]] = len(rows)
            kv = kv_range = agrees = None
            verdict = "not re-simulated"
            if mid is not None and layout_only and kind not in LAYOUT_KINDS:
                verdict = "needs the KV memory, which the log does not show"
            elif mid is not None:
                mv = _values(mid, kind, key)
                kv = mv[min(i, len(mv) - 1)] if mv else None
                lv = _values(low, kind, key) if low else None
                hv = _values(high, kind, key) if high else None
                if lv and hv and i < len(lv) and i < len(hv) and lv[i] is not None and hv[i] is not None:
                    kv_range = (min(lv[i], hv[i]), max(lv[i], hv[i]))
                if not mv:
                    agrees, verdict = False, _absent(kind, sim)
                else:
                    agrees, verdict = _agrees(f[key], mv, lv, hv, i)
            rows.append(FigureRow(name, kind, key, f.line, f[key], 1, kv, kv_range, meanings.get(kind), agrees,
                                  verdict))
    for kind, name in PRESENCE:
        for f in logged.all(kind):
            kv = agrees = None
            verdict = "not re-simulated"
            if mid is not None and layout_only and kind not in LAYOUT_KINDS:
                verdict = "needs the KV memory, which the log does not show"
            elif mid is not None:
                kv = agrees = mid.has(kind)
                verdict = "agrees" if kv else "kvplan does not predict it"
            rows.append(FigureRow(name, kind, None, f.line, True, 1, kv, None, meanings.get(kind), agrees, verdict))
    if mid is not None and not layout_only:
        rows += _outcome_row(logged, sim)
    return rows


def _absent(kind: str, sim) -> str:
    plan = sim.result.plan
    if plan.failure is not None:
        return f"kvplan predicts a failure instead ({plan.failure.error_type}: {plan.failure.message[:80]})"
    if kind.startswith("admission"):
        return "kvplan predicts that the engine starts"
    return "kvplan prints no such line"


def logged_starts(logged: Facts) -> bool | None:
    """Whether the logged engine started: a failure line says no, a capacity line yes, else unknown
    (an exception line counts as a failure when the engine says it failed or sized nothing)."""
    if any(logged.has(k) for k in ("admission_error", "admission_error_tokens", "no_memory_error", "drafter_split",
                                   "page_error", "autofit_none")):
        return False
    sized = any(logged.has(k) for k in ("kv_cache_size", "concurrency", "capacity"))
    if logged.has("engine_failed") or (logged.has("exception") and not sized):
        return False
    return True if sized else None


def _outcome_row(logged: Facts, sim) -> list[FigureRow]:
    starts = logged_starts(logged)
    if starts is None:
        return []
    k = sim.result.plan.starts
    ends = {r.plan.starts for r in (sim.low, sim.high) if r is not None}
    if starts == k:
        verdict = "agrees"
    elif starts in ends:
        verdict = "agrees within the rounding of the logged KV memory"
    else:
        verdict = "disagrees"
    return [FigureRow("engine starts", "outcome", "starts", None, starts, 1, k, None,
                      "a capacity line means the KV cache was sized; an error line that start-up failed",
                      verdict != "disagrees", verdict)]
