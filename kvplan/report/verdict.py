"""The verdict: the one line every table output starts with, for a person or ``grep``.

``OK starts: 81,920 blocks, 8.88 × 131,072 tokens (vLLM 0.34.0, H100-80GB)``, or
``FAILS at <stage>: <the engine's text> — fix: <flag>``. ``verdict_line`` reads the result dict
of any command (the envelope's ``outcome`` and the body's figures); ``emit`` prints it first.
The figures are vLLM's own (num_blocks, max_concurrency, max_model_len) for the release shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from kvplan.results import Outcome, shown
from kvplan.results.envelope import Envelope, Inputs
from kvplan.results.records import PlanBody, PolicyRecord, SimulateBody

if TYPE_CHECKING:  # the bodies are told apart by the command (a plan's run imports none of their modules)
    from kvplan.results.budget import BudgetBand
    from kvplan.results.check import CheckBody
    from kvplan.results.disagg import PdBody
    from kvplan.results.fit import FitBody

def _first_sentence(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text.split(". ")[0].rstrip(".")


def _where(policy: PolicyRecord | None, inputs: Inputs) -> str:
    """`` (vLLM 0.34.0, H100-80GB)``: the release (or the policy) and the card given."""
    parts = [f"vLLM {policy.vllm_release}" if policy and policy.vllm_release else (policy.name if policy else "")]
    gpu = _option(inputs, "gpu")
    if gpu:
        parts.append(str(gpu))
    parts = [x for x in parts if x]
    return f" ({', '.join(parts)})" if parts else ""


def _option(inputs: Inputs, name: str, what: str = "value"):
    """An option of the envelope's inputs: its value, or (``what="given"``) whether it was given; None if absent."""
    o = inputs.options.get(name)
    return getattr(o, what) if o is not None else None


def _fails(o: Outcome) -> str:
    stage = o.stage or "start-up"
    text = _first_sentence(o.error) or o.error_type or "failed"
    fix = f" — fix: {o.fix}" if o.fix else ""
    return f"FAILS at {stage}: {text}{fix}"


def _assumed(plan: PlanBody, inputs: Inputs) -> str:
    """The batch sizes the user did not give: with no card, kvplan takes an H100's (vLLM's defaults for it),
    which move a hybrid model's concurrency against another card's, so the verdict names them."""
    batched = plan.scheduler.max_num_batched_tokens
    if not batched or _option(inputs, "max_num_batched_tokens", "given") or _option(inputs, "gpu") \
            or _option(inputs, "gpu_memory"):
        return ""
    return f"; assumed an H100's {batched:,} batched tokens (no --gpu)"


def _may_fail(d: Envelope, plan: PlanBody, band: BudgetBand) -> str:
    stage = band.failure_at_low or "admission"
    fix = f" — fix: {plan.fixes[0].flag}" if plan.fixes else ""
    where = _where(plan.policy, d.inputs)
    if stage == "warm-up" and band.warmup_need_bytes is not None:
        gib = 1 << 30
        return (f"MAY FAIL at warm-up: starts at kvplan's estimate ({plan.memory.num_blocks:,} blocks), but at its "
                f"pessimistic end the CUDA graphs and the sampler's warm-up after the KV cache need "
                f"{band.warmup_need_bytes / gib:.2f} GiB, the 1 − utilization headroom holds "
                f"{(band.warmup_headroom_bytes or 0) / gib:.2f} GiB{where}{fix}")
    return (f"MAY FAIL at {stage}: starts at kvplan's estimate ({plan.memory.num_blocks:,} blocks), not at its "
            f"pessimistic end ({band.kv_cache_memory_low_bytes / (1 << 30):.2f} GiB of KV cache){where}{fix}")


def _plan(d: Envelope, plan: PlanBody, checks_failed: Sequence[str]) -> str:
    """A plan's verdict (``simulate``, ``vllm``): its blocks and concurrency (the band's ends with an estimated
    budget), the release and card, a scheduler cap; a failed check of the command first."""
    o, m, sch = d.outcome, plan.memory, plan.scheduler
    if not o.starts:
        return _fails(o)
    band: BudgetBand | None = getattr(plan.budget, "band", None)  # an estimated budget's (--gpu)
    if band and band.starts_at_low is False:
        return _may_fail(d, plan, band)
    max_conc = shown(m, "max_concurrency")  # the figures as the JSON shows them
    blocks, conc = f"{m.num_blocks:,} blocks", f"{max_conc:.2f}"
    if band and band.num_gpu_blocks_low is not None:
        blocks += f" ({band.num_gpu_blocks_low:,}-{band.num_gpu_blocks_high:,})"
        conc += f" ({shown(band, 'max_concurrency_low'):.2f}-{shown(band, 'max_concurrency_high'):.2f})"
    line = (f"OK starts: {blocks}, {conc} × {sch.max_model_len:,} tokens{_where(plan.policy, d.inputs)}"
            f"{_assumed(plan, d.inputs)}")
    # the scheduler's cap on requests in flight: min(KV-limited max_concurrency, max_num_seqs)
    if sch.max_num_seqs and sch.max_num_seqs < max_conc:
        line += f"; scheduler cap {float(sch.max_num_seqs):,.0f} (max_num_seqs)"
    if not o.ok:  # it starts, but a check of the command failed
        line = "FAILS check: " + "; ".join(checks_failed or ["a check failed"]) + " — " + line
    return line


def _pd(d: Envelope, body: PdBody) -> str:
    """A prefill/decode pair (``kvplan vllm --line P --decode-line D``)."""
    if not d.outcome.starts:
        return _fails(d.outcome)
    sides = ", ".join(f"{r} {side.simulate.plan.memory.num_blocks:,} blocks"
                      for r, side in (("prefill", body.prefill), ("decode", body.decode)))
    p = body.pair
    rules = "its pair rules pass" if p.modelled else "the pair's rules are not checked"
    return f"OK pair starts: {sides}; {p.kv_connector or 'no KV connector given'}: {rules}"


def _check(d: Envelope, body: CheckBody) -> str:
    s = body.summary
    n = s.num_deployments
    if d.outcome.ok:
        return f"OK {s.num_passed}/{n} deployments pass"
    bad = [r for r in body.deployments if r.status != "pass"]
    why = ""
    if bad:
        first, o = bad[0], bad[0].outcome
        why = f"; {first.name}: " + (_fails(o) if o.starts is False or o.stage else
                                     ", ".join(first.failed_expectations or ["failed"]))
    return f"FAILS {n - s.num_passed}/{n} deployments{why}"


def _fit(d: Envelope, body: FitBody) -> str:
    if not d.outcome.ok:
        return _fails(d.outcome)
    parts = []
    mml = body.max_model_len
    if mml and mml.max_model_len:
        lay = mml.layout
        parts.append(f"max_model_len {mml.max_model_len:,}" + (
            f" ({lay.num_blocks:,} blocks, {shown(lay, 'max_concurrency'):.2f} × {mml.max_model_len:,} tokens)"
            if lay.num_blocks else ""))
    u = body.min_gpu_memory_utilization
    if u and u.gpu_memory_utilization is not None:
        parts.append(f"--gpu-memory-utilization {u.gpu_memory_utilization}")
    c = body.max_context_len_for_concurrency
    if c and c.max_model_len is not None:
        parts.append(f"longest context {c.max_model_len:,}")
    rows = body.gpus.rows if body.gpus else ()
    if rows:
        ok = [r for r in rows if r.outcome.starts]
        parts.append(f"starts on {len(ok)} of {len(rows)} GPU × TP rows at {rows[0].max_model_len:,} tokens"
                     if rows[0].max_model_len else f"starts on {len(ok)} of {len(rows)} GPU × TP rows")
    return "OK fits: " + ("; ".join(parts) if parts else "answered") + _where(body.policy, d.inputs)


def verdict_line(d: Envelope | dict) -> str | None:
    """The first line of ``d``'s table output; None for a result without a verdict (models, policies).

    ``d`` is a command's result record (an ``Envelope``: its typed body is read); the data of a result that is
    not one (a sweep's, with its plot added) gets the outcome's verdict alone."""
    if not isinstance(d, Envelope):
        o = d.get("outcome")
        if not isinstance(o, dict) or o.get("ok") is None:
            return None
        return "OK" if o["ok"] else _fails(Outcome(**o))
    body, cmd, o = d.body, d.command, d.outcome
    if cmd == "explain-log":
        return None  # its table starts with its own verdict (the log's outcome, not the re-simulation's "ok")
    if cmd == "check":  # CheckBody (``check --live`` is the command check-live)
        return _check(d, body)
    if cmd == "fit":  # FitBody
        return _fit(d, body)
    if hasattr(body, "pair"):  # PdBody: `kvplan vllm` on a prefill/decode pair
        return _pd(d, body)
    sim = getattr(body, "simulate", body)  # a ServeBody holds simulate's body
    if isinstance(sim, SimulateBody):
        return _plan(d, sim.plan, sim.checks_failed)
    if cmd in ("inspect", "models", "policies", "compare") and o.ok:
        return None
    return "OK" if o.ok else _fails(o)


SUMMARY_LINES = 20  # --summary: the verdict and at most 19 more lines


def verdict_text(d: Envelope | dict) -> str | None:
    """The verdict wrapped to the terminal (continuation lines indented: the first line starts with
    OK or FAILS, for grep)."""
    from kvplan.report.width import fill

    line = verdict_line(d)
    return None if line is None else fill(line, "", "  ")


def render_short(render, d: dict, limit: int | None = None) -> None:
    """``--summary`` for a command without a summary of its own (fit, check): its table output cut to
    ``limit`` lines (the verdict line comes first), and a last line saying how many were left out."""
    import contextlib
    import io
    import sys

    if limit is None:
        limit = SUMMARY_LINES - len((verdict_text(d) or "").splitlines())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        render(d)
    lines = [line for line in buf.getvalue().splitlines() if line.strip()]
    if len(lines) > limit:
        lines = lines[:limit - 1] + [f"… {len(lines) - limit + 1} more lines (drop --summary for the whole report)"]
    sys.stdout.write("".join(line + "\n" for line in lines))
