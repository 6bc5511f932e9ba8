"""`kvplan diff`: one deployment under two vLLM releases: every figure of the plan that changes
(block size, groups, budget terms, admission, KV tokens, concurrency, the capacity line) and the
era decision behind each change, with a CI verdict on the capacity lost.

The decisions are found by running, not by a table: the deployment is simulated under the first
release's era with one differing decision set to the second release's value, each in turn; a
figure that moves with a decision alone names it (``FigureChange.because``). Data keyed by the
release itself (its flag table, its wording) is tried the same way (``release``); a figure that no
single change moves is marked as moved by the decisions together.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvplan.errors import OptionError
from kvplan.results import outcome
from kvplan.results.diff import Capacity, DiffBody, EraChange, FigureChange
from kvplan.results.envelope import Envelope
from kvplan.usecases.capacity import capacity_change
from kvplan.usecases.envelope import envelope

# The body's sections that hold figures (simulate's JSON keys), and keys that are words about a
# figure rather than one (sources, notes, the per-layer lists).
_SECTIONS = ("serving", "scheduler", "hybrid_kv_cache_manager", "mamba_alignment", "grouping", "memory", "budget")
_SKIP_SUFFIXES = ("_source", "_basis", "_note", "_reason", "notes", "layer_names", "layers", "stages", "buckets",
                  "block_size_changes", "formula")
RELEASE = "release"  # the pseudo-decision: the release's own data (flag table, wording) with the era unchanged


def _release(text: str) -> str:
    v = text.strip()
    v = v[len("vllm=="):] if v.startswith("vllm==") else v
    if not v or not v[0].isdigit():
        raise OptionError(f"--from/--to {text}: give a vLLM release (vllm==0.34.0 or 0.34.0)")
    return v


def _flatten(prefix: str, value, out: dict) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if not k.endswith(_SKIP_SUFFIXES) and k != "weights":
                _flatten(f"{prefix}.{k}", v, out)
    elif isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            out[prefix] = value
    else:
        out[prefix] = value


def figures(result) -> dict[str, Any]:
    """Every figure of a run, by its dotted path in simulate's JSON; groups as one line each."""
    from kvplan.results import to_data

    data = to_data(result.body)
    out: dict[str, Any] = {}
    for section in _SECTIONS:
        if data.get(section) is not None:
            _flatten(section, data[section], out)
    out["groups"] = [f"{g['label']} x{g['num_layers']} block {g['block_size']} page {g['page_size_bytes']}"
                     for g in data["groups"]]
    plan = result.plan
    out["outcome.starts"] = plan.starts
    if not plan.starts:
        out["outcome.error"] = f"{plan.failure.stage}: {plan.failure.error_type}"
    out["logs"] = list(data["logs"])
    return out


def _moved(base: dict, other: dict) -> set[str]:
    return {k for k in base.keys() | other.keys() if base.get(k) != other.get(k)}


def diff(model: str | None = None, *, from_release: str, to_release: str, max_loss: float | None = None,
         **given) -> Envelope:
    """The deployment (``usecases.intake.read_deployment``'s arguments) under ``from_release`` and
    ``to_release``. ``outcome.ok`` is False when the KV tokens fall by more than ``max_loss`` percent
    (the second release not starting where the first does is a 100 % loss)."""
    from kvplan.engines.vllm.eras import decision_fields
    from kvplan.usecases.deployment import under
    from kvplan.usecases.intake import read_deployment
    from kvplan.usecases.pipeline import run_deployment
    from kvplan.usecases.scenario import run_scenario

    a_rel, b_rel = _release(from_release), _release(to_release)
    intake = read_deployment(model, **given)
    a = run_scenario(intake.scenario(f"vllm=={a_rel}"), fixes=False)
    b = run_scenario(intake.scenario(f"vllm=={b_rel}"), fixes=False)
    fa, fb = figures(a), figures(b)
    changed = sorted(_moved(fa, fb), key=lambda k: list(fa).index(k) if k in fa else len(fa))

    a_era, b_era = a.deployment.policy_era, b.deployment.policy_era
    threshold = a.deployment.policy.threshold
    differing = [f for f in decision_fields() if getattr(a_era, f) != getattr(b_era, f)]
    moved_by: dict[str, set[str]] = {}
    for name in [*differing, RELEASE]:
        values = {"release": b_era.stands_for} if name == RELEASE else {name: getattr(b_era, name)}
        try:
            alone = run_deployment(under(a.deployment, replace(a_era, **values), threshold))
            moved_by[name] = _moved(fa, figures(alone))
        except Exception:  # a decision that cannot stand alone (its partner decision missing) moves nothing alone
            moved_by[name] = set()
    alone_causes = {k: tuple(n for n in [*differing, RELEASE] if k in moved_by[n]) for k in changed}
    pairs = _pair_causes([k for k in changed if not alone_causes[k]], differing, a, a_era, b_era, threshold, fa)
    changes = []
    for k in changed:
        because, note = alone_causes[k], None
        if not because and pairs.get(k):
            because, note = tuple(" + ".join(p) for p in pairs[k]), "moved by two decisions together"
        elif not because:
            note = "moved by the decisions together (no single one or pair moves it)"
        changes.append(FigureChange(k, fa.get(k), fb.get(k), because, note))
    era_changes = tuple(
        EraChange(f, getattr(a_era, f), getattr(b_era, f), changed_at(f, a_era.stands_for, b_era.stands_for),
                  tuple(sorted(moved_by[f] & set(changed), key=changed.index)))
        for f in differing)

    ka, kb, loss = capacity_change(a, b)
    passed = max_loss is None or loss <= max_loss
    capacity = Capacity(ka, kb, a.plan.max_concurrency if a.plan.starts else 0.0,
                        b.plan.max_concurrency if b.plan.starts else 0.0, round(loss, 4), max_loss, passed)
    body = DiffBody(intake.kind, intake.where, a.body.model.id, a_era.stands_for, b_era.stands_for, a_era.name,
                    b_era.name, a.plan.starts, b.plan.starts, tuple(changes), era_changes, capacity)
    error = None if passed else (f"KV tokens fall {loss:.2f}% from vllm=={a_rel} to vllm=={b_rel} "
                                 f"({ka:,} -> {kb:,}), more than --max-loss {max_loss:g}%")
    return envelope("diff", outcome=outcome(ok=passed, starts=b.plan.starts, stage=None if passed else "upgrade",
                                            error=error), body=body,
                    model=a.layout.target, drafter=a.layout.drafter, era=b_era,
                    warnings=[*intake.warnings, *a.warnings, *(w for w in b.warnings if w not in a.warnings)])


def _pair_causes(unexplained: list[str], differing: list[str], a, a_era, b_era, threshold, fa) -> dict:
    """For figures no single decision moves: the pairs of decisions that, changed together, do."""
    from itertools import combinations

    from kvplan.usecases.deployment import under
    from kvplan.usecases.pipeline import run_deployment

    out: dict[str, list[tuple[str, str]]] = {}
    if not unexplained:
        return out
    for pair in combinations(differing, 2):
        values = {f: getattr(b_era, f) for f in pair}
        try:
            moved = _moved(fa, figures(run_deployment(under(a.deployment, replace(a_era, **values), threshold))))
        except Exception:
            continue
        for k in unexplained:
            if k in moved:
                out.setdefault(k, []).append(pair)
    return out


def changed_at(field: str, a: str, b: str) -> str:
    """The release between ``a`` and ``b`` (either order) where the era chain last changed ``field``."""
    from kvplan.engines.vllm.eras import transitions
    from kvplan.engines.vllm.versions import version_key

    lo, hi = sorted((a, b), key=version_key)
    inside = [first for first, _ in transitions(field) if version_key(lo) < version_key(first) <= version_key(hi)]
    return inside[-1] if inside else hi
