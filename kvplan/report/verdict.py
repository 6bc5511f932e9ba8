"""The verdict: the one line every table output starts with, for a person or ``grep``.

``OK starts: 81,920 blocks, 8.88 × 131,072 tokens (vLLM 0.34.0, H100-80GB)``, or
``FAILS at <stage>: <the engine's text> — fix: <flag>``. ``verdict_line`` reads the result dict
of any command (the envelope's ``outcome`` and the body's figures); ``emit`` prints it first.
The figures are vLLM's own (num_blocks, max_concurrency, max_model_len) for the release shown.
"""

from __future__ import annotations

def _first_sentence(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text.split(". ")[0].rstrip(".")


def _where(d: dict) -> str:
    p = d.get("policy") or {}
    release = p.get("vllm_release")
    parts = [f"vLLM {release}" if release else (p.get("name") or "")]
    gpu = ((d.get("inputs") or {}).get("options") or {}).get("gpu") or {}
    if gpu.get("value"):
        parts.append(str(gpu["value"]))
    parts = [x for x in parts if x]
    return f" ({', '.join(parts)})" if parts else ""


def effective_concurrency(memory: dict, scheduler: dict) -> float | None:
    """The scheduler's cap on requests in flight: ``min(KV-limited max_concurrency, max_num_seqs)``
    (vLLM's scheduler admits at most max_num_seqs running requests, whatever the KV cache holds)."""
    conc, seqs = memory.get("max_concurrency"), scheduler.get("max_num_seqs")
    if conc is None:
        return None
    return float(min(conc, seqs)) if seqs else float(conc)


def _fails(o: dict) -> str:
    stage = o.get("stage") or "start-up"
    text = _first_sentence(o.get("error")) or o.get("error_type") or "failed"
    fix = f" — fix: {o['fix']}" if o.get("fix") else ""
    return f"FAILS at {stage}: {text}{fix}"


def _assumed(d: dict) -> str:
    """The batch sizes the user did not give: with no card, kvplan takes an H100's (vLLM's defaults for it),
    which move a hybrid model's concurrency against another card's, so the verdict names them."""
    sch = d.get("scheduler") or {}
    opts = (d.get("inputs") or {}).get("options") or {}
    if not sch.get("max_num_batched_tokens") or (opts.get("max_num_batched_tokens") or {}).get("given") \
            or (opts.get("gpu") or {}).get("value") or opts.get("gpu_memory", {}).get("value"):
        return ""
    return f"; assumed an H100's {sch['max_num_batched_tokens']:,} batched tokens (no --gpu)"


def _may_fail(d: dict, band: dict, o: dict) -> str:
    stage = band.get("failure_at_low") or "admission"
    fixes = d.get("fixes") or []
    fix = f" — fix: {fixes[0]['flag']}" if fixes else ""
    if stage == "warm-up" and band.get("warmup_need_bytes") is not None:
        gib = 1 << 30
        return (f"MAY FAIL at warm-up: starts at kvplan's estimate ({d['memory']['num_blocks']:,} blocks), but at its "
                f"pessimistic end the CUDA graphs and the sampler's warm-up after the KV cache need "
                f"{band['warmup_need_bytes'] / gib:.2f} GiB, the 1 − utilization headroom holds "
                f"{band['warmup_headroom_bytes'] / gib:.2f} GiB{_where(d)}{fix}")
    return (f"MAY FAIL at {stage}: starts at kvplan's estimate ({d['memory']['num_blocks']:,} blocks), not at its "
            f"pessimistic end ({band['kv_cache_memory_low_bytes'] / (1 << 30):.2f} GiB of KV cache){_where(d)}{fix}")


def _plan(d: dict) -> str:
    o, m, sch = d["outcome"], d["memory"], d.get("scheduler") or {}
    if not o.get("starts"):
        return _fails(o)
    band = (d.get("budget") or {}).get("band")
    if band and band.get("starts_at_low") is False:
        return _may_fail(d, band, o)
    blocks = f"{m['num_blocks']:,} blocks"
    conc = f"{m['max_concurrency']:.2f}"
    if band and band.get("num_gpu_blocks_low") is not None:
        blocks += f" ({band['num_gpu_blocks_low']:,}-{band['num_gpu_blocks_high']:,})"
        conc += f" ({band['max_concurrency_low']:.2f}-{band['max_concurrency_high']:.2f})"
    line = f"OK starts: {blocks}, {conc} × {sch['max_model_len']:,} tokens{_where(d)}{_assumed(d)}"
    eff = effective_concurrency(m, sch)
    if eff is not None and sch.get("max_num_seqs") and eff < m["max_concurrency"]:
        line += f"; scheduler cap {eff:,.0f} (max_num_seqs)"
    if not o.get("ok"):  # it starts, but a check of the command failed
        line = "FAILS check: " + "; ".join(d.get("checks_failed") or ["a check failed"]) + " — " + line
    return line


def _pd(d: dict) -> str:
    """A prefill/decode pair (``kvplan vllm --line P --decode-line D``)."""
    o, p = d["outcome"], d["pair"]
    if not o.get("starts"):
        return _fails(o)
    sides = ", ".join(f"{r} {d[r]['memory']['num_blocks']:,} blocks" for r in ("prefill", "decode"))
    rules = "its pair rules pass" if p["modelled"] else "the pair's rules are not checked"
    return f"OK pair starts: {sides}; {p['kv_connector'] or 'no KV connector given'}: {rules}"


def _check(d: dict) -> str:
    s = d["summary"]
    n = s["num_deployments"]
    if d["outcome"]["ok"]:
        return f"OK {s['num_passed']}/{n} deployments pass"
    bad = [r for r in d["deployments"] if r["status"] != "pass"]
    first = bad[0] if bad else None
    why = ""
    if first is not None:
        o = first.get("outcome") or {}
        why = f"; {first['name']}: " + (_fails(o) if o.get("starts") is False or o.get("stage") else
                                        ", ".join(first.get("failed_expectations") or ["failed"]))
    return f"FAILS {n - s['num_passed']}/{n} deployments{why}"


def _fit(d: dict) -> str:
    o = d["outcome"]
    if not o.get("ok"):
        return _fails(o)
    parts = []
    mml = d.get("max_model_len") or {}
    if mml.get("max_model_len"):
        lay = mml.get("layout") or {}
        parts.append(f"max_model_len {mml['max_model_len']:,}" + (
            f" ({lay['num_blocks']:,} blocks, {lay['max_concurrency']:.2f} × {mml['max_model_len']:,} tokens)"
            if lay.get("num_blocks") else ""))
    if d.get("min_gpu_memory_utilization"):
        u = d["min_gpu_memory_utilization"]
        value = u.get("gpu_memory_utilization") if isinstance(u, dict) else u
        if value is not None:
            parts.append(f"--gpu-memory-utilization {value}")
    if d.get("max_context_len_for_concurrency"):
        c = d["max_context_len_for_concurrency"]
        value = c.get("max_model_len") if isinstance(c, dict) else c
        if value is not None:
            parts.append(f"longest context {value:,}" if isinstance(value, int) else f"longest context {value}")
    rows = (d.get("gpus") or {}).get("rows") or []
    if rows:
        ok = [r for r in rows if (r.get("outcome") or {}).get("starts")]
        parts.append(f"starts on {len(ok)} of {len(rows)} GPU × TP rows at {rows[0]['max_model_len']:,} tokens"
                     if rows[0].get("max_model_len") else f"starts on {len(ok)} of {len(rows)} GPU × TP rows")
    return "OK fits: " + ("; ".join(parts) if parts else "answered") + _where(d)


def verdict_line(d: dict) -> str | None:
    """The first line of ``d``'s table output; None for a result without a verdict (models, policies)."""
    o = d.get("outcome")
    if not isinstance(o, dict):
        return None
    cmd = d.get("command")
    if cmd == "explain-log":
        return None  # its table starts with its own verdict (the log's outcome, not the re-simulation's "ok")
    if cmd == "check" and "summary" in d:
        return _check(d)
    if cmd == "fit":
        return _fit(d)
    if isinstance(d.get("pair"), dict):
        return _pd(d)
    if isinstance(d.get("memory"), dict) and "num_blocks" in d["memory"]:
        return _plan(d)
    if cmd in ("inspect", "models", "policies", "compare") and o.get("ok"):
        return None
    return ("OK" if o.get("ok") else _fails(o)) if o.get("ok") is not None else None


SUMMARY_LINES = 20  # --summary: the verdict and at most 19 more lines


def verdict_text(d: dict) -> str | None:
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
