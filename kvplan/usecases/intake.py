"""One deployment from whichever intake it is given in, as a ``Scenario`` under a chosen release.

``kvplan diff`` and ``kvplan export`` (and ``check --live``) take a deployment the way the other
commands do: a model id with kvplan's options (``simulate``'s), the words of a ``vllm serve`` line,
one pasted line (``--line``), a manifest (``--file``: compose, Kubernetes, KServe, production-stack,
llm-d values) or an entry of a ``check`` deployments file (``--check FILE --entry NAME``). The
readers are the existing ones (``usecases.serve.serve_request``, the check loader); this module only
picks one and hands back a function from a policy to the scenario, so a serve line is read again
as each release reads it (its flag table is the release's).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from kvplan.errors import OptionError
from kvplan.usecases.scenario import Scenario


@dataclass(frozen=True)
class DeploymentIntake:
    """A deployment read once: what it was (``kind``, ``where``), its model, and ``scenario(policy)``
    (None: the deployment's own policy)."""

    kind: str  # "model", "vllm serve", "manifest", "check entry"
    where: str | None  # the manifest's FILE:LINE, the check file's FILE:LINE, the line itself
    model: str
    scenario: Callable[[str | None], Scenario]
    warnings: tuple[str, ...] = ()


def _scenario(model: str, options: dict, policy: str | None) -> Scenario:
    from kvplan.options import SIMULATE, resolve
    from kvplan.usecases.scenario import scenario_from

    run = dict(options)
    if policy is not None:
        run["policy"] = policy
    return scenario_from(model, resolve(SIMULATE, run).values)


def _from_check(path: str, entry: str | None) -> DeploymentIntake:
    from kvplan.usecases.check import load_deployments

    found = load_deployments([path])
    if entry is not None:
        picked = [d for d in found if d.name == entry] or [d for d in found if entry in d.name]
        if not picked:
            names = ", ".join(d.name for d in found)
            raise OptionError(f"--entry {entry}: no deployment of {path} has that name; its deployments: {names}")
        found = picked
    if len(found) != 1:
        names = ", ".join(f"'{d.name}' (line {d.line})" for d in found)
        raise OptionError(f"{path} holds {len(found)} deployments: {names}; pick one with --entry NAME")
    d = found[0]
    base = d.scenario

    def scenario(policy: str | None) -> Scenario:
        return base if policy is None else replace(base, policy=policy, threshold=None)

    return DeploymentIntake("check entry", f"{d.file}:{d.line} ({d.name})", base.model, scenario, tuple(d.notes))


def read_deployment(model: str | None = None, *, args: list[str] | None = None, line: str | None = None,
                    file: str | None = None, container: str | None = None, check: str | None = None,
                    entry: str | None = None, **options) -> DeploymentIntake:
    """The one deployment given: ``model`` (with ``options``), ``args`` (the words after ``vllm
    serve``), ``line``, ``file`` (a manifest; ``container`` picks one) or ``check`` (a deployments
    file; ``entry`` picks one). Exactly one of them; kvplan's own ``options`` apply to all but a
    check entry (which holds its own)."""
    given = [n for n, v in (("MODEL", model), ("serve words", args), ("--line", line), ("--file", file),
                            ("--check", check)) if v]
    if len(given) != 1:
        what = f" (got {', '.join(given)})" if given else ""
        raise OptionError(f"give one deployment: MODEL, `serve MODEL ...`, --line, --file or --check{what}")
    if check is not None:
        if options:
            raise OptionError(f"--check {check}: the entry holds its own options; "
                              f"drop {', '.join('--' + k.replace('_', '-') for k in options)}")
        return _from_check(check, entry)
    if model is not None:
        return DeploymentIntake("model", None, model, lambda policy: _scenario(model, options, policy))
    from kvplan.usecases.serve import serve_request

    def read(policy: str | None):
        mine = dict(options)
        if policy is not None:
            mine["policy"] = policy
        return serve_request(args, line=line, file=file, container=container, **mine)

    first = read(options.get("policy"))
    kind = "manifest" if file is not None else "vllm serve"

    def scenario(policy: str | None) -> Scenario:
        sr = first if policy is None else read(policy)
        return _scenario(sr.req.model, sr.run, policy)

    return DeploymentIntake(kind, first.where or (line.strip() if line else None), first.req.model, scenario,
                            first.warnings)


def run_started(command: str, consequence: str, model: str | None = None, **given):
    """``(intake, scenario, result)`` of the deployment ``read_deployment`` reads, simulated under its own release (no
    fixes searched); a deployment that would not start is an OptionError naming the failure and, in
    ``consequence``, what ``command`` then cannot do (``kvplan emit``, ``kvplan export``)."""
    from kvplan.usecases.scenario import run_scenario

    intake = read_deployment(model, **given)
    scenario = intake.scenario(None)
    result = run_scenario(scenario, fixes=False)
    f = result.plan.failure
    if f is not None:  # the engine would not start
        raise OptionError(f"{command}: the engine would not start ({f.stage}: {f.error_type}: {f.message}); "
                          f"{consequence} (`kvplan simulate` shows the fixes)")
    return intake, scenario, result
