"""`kvplan vllm`: a ``vllm serve`` line (or the words after ``serve``) simulated as ``simulate`` does.

The result is simulate's envelope (``command`` "vllm") plus a ``serve`` section: the form of
the line, the release it is read with and why, the flag list used, every flag with what kvplan
did with it, and the environment variables the line sets.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kvplan.errors import OptionError
from kvplan.options import OPTIONS, VLLM_SERVE, options_for
from kvplan.results import Outcome
from kvplan.results.envelope import Envelope, unique
from kvplan.results.records import Fix
from kvplan.results.serve import FlagList, ServeBody, ServeFlagRow, ServeRecord

if TYPE_CHECKING:
    from kvplan.serve.reader import ServeRequest as ReadRequest


class ServeRequest(NamedTuple):
    """A deployment read from a serve line or a manifest (``serve_request``)."""

    req: ReadRequest  # the line as kvplan.serve.reader reads it: model, release, flags, environment
    run: dict  # the options to simulate with
    where: str | None  # FILE:LINE of the manifest's container (None for a line)
    warnings: tuple[str, ...]  # how the manifest and its line were read
    env_vllm: dict
    env_other: dict
    replicas: int = 1  # copies of the manifest's container (1 for a line)


def _kvplan_options(options: dict) -> dict:
    """kvplan's own options (given before ``serve``); vLLM's flags belong on the serve line."""
    known = {o.name for o in options_for(VLLM_SERVE)}
    for name in options:
        if name not in known:
            opt = OPTIONS.get(name)
            if opt is not None and opt.vllm:
                raise OptionError(f"{opt.flag} is a vllm serve flag: write it on the serve line (after `serve`)")
            raise OptionError(f"vllm: unknown option {name}; known: {', '.join(sorted(known))}")
    return {k: v for k, v in options.items() if v is not None}


def _env_split(env: dict) -> tuple[dict, dict]:
    read = ("VLLM_", "LMCACHE_")  # vLLM's variables, and LMCache's, which its connector reads in vLLM's process
    vllm = {k: v for k, v in env.items() if k.startswith(read)}
    other = {k: v for k, v in env.items() if not k.startswith(read)}
    return vllm, other


def spec_config_flag(flags: list[ServeFlagRow], key: str, value) -> str | None:
    """The line's own --speculative-config with ``key`` set to ``value`` (dropped when None);
    None when the line has no --speculative-config."""
    for row in flags:
        if row.dest == "speculative_config":
            given = row.value if isinstance(row.value, dict) else json.loads(str(row.value))
            changed = {k: v for k, v in {**given, key: value}.items() if not (k == key and value is None)}
            return f"--speculative-config '{json.dumps(changed)}'"
    return None


def spec_tokens_flag(flags: list[ServeFlagRow], n: int) -> str:
    """num_speculative_tokens as the serve line gives it: a key added to the line's own
    --speculative-config, else --spec-tokens (0.33.0+, next to --spec-method/--spec-model)."""
    return spec_config_flag(flags, "num_speculative_tokens", n) or f"--spec-tokens {n}"


def _serve_fixes(fixes: tuple[Fix, ...], verdict: Outcome, flags: list[ServeFlagRow]) -> tuple[tuple[Fix, ...], Outcome]:
    """simulate's fixes written as serve-line flags where kvplan's flag is not one (the outcome's
    fix with them)."""
    out = []
    for fix in fixes:
        flag = None
        if fix.option == "num_speculative_tokens" and isinstance(fix.value, int):
            flag = spec_tokens_flag(flags, fix.value)
        elif fix.option == "parallel_drafting":  # the key is only read from --speculative-config
            flag = spec_config_flag(flags, "parallel_drafting", None)
        if flag is not None:
            if verdict.fix == fix.flag:
                verdict = replace(verdict, fix=flag)
            fix = replace(fix, flag=flag)
        out.append(fix)
    return tuple(out), verdict


def manifest_line(file: str | Path, container: str | None = None):
    """``--file``: the one vLLM container of a docker-compose file, Kubernetes or KServe manifest,
    production-stack or llm-d Helm values (``container`` picks one of several by a part of its name);
    ``-`` reads standard input (``helm template ... | kvplan vllm --file -``)."""
    from kvplan.readfile import STDIN, read_text
    from kvplan.serve.manifests import read_manifests

    text = read_text(file, "manifest", "--file")
    file = "<stdin>" if str(file) == STDIN else str(file)
    found = read_manifests(text, file)
    if container is not None:
        found = [c for c in found if container in c.name.split(": ", 1)[-1]]
        if not found:
            raise OptionError(f"--container {container}: no vLLM container of {file} has that in its name")
    if len(found) > 1:
        names = ", ".join(f"'{c.name.split(': ', 1)[-1]}' (line {c.line})" for c in found)
        raise OptionError(f"{file} runs vLLM in {len(found)} containers: {names}; pick one with --container NAME, "
                          "or check them all with `kvplan check` (a deployments file with manifest: FILE)")
    c = found[0]
    if c.serve is None:
        raise OptionError(f"{c.path}:{c.line}: {c.name}: {c.problem}")
    return c


def serve_request(args: list[str] | tuple[str, ...] | None = None, *, line: str | None = None,
                  file: str | Path | None = None, container: str | None = None,
                  base: str | Path | None = None, **options) -> ServeRequest:
    """A serve line, its words or a manifest read as the release reads it: the model, the options to
    simulate with (the line's flags and kvplan's own ``options``), where it was read and how
    (``vllm_serve`` simulates it; ``kvplan diff`` and ``kvplan export`` read deployments through it)."""
    from kvplan.serve import parse_line, read_serve

    mine = _kvplan_options(options)
    serve_line = parse_line(line) if line is not None else None
    where, read_as, replicas = None, (), 1
    if file is not None:
        if line is not None or args is not None:
            raise OptionError("vllm: give one of the serve arguments, --line or --file")
        found = manifest_line(file, container)
        serve_line, where, read_as = found.serve, f"{found.path}:{found.line}", found.warnings
        replicas = found.replicas
        base = base or Path(file).resolve().parent
    if serve_line is None and args is None:
        raise OptionError("vllm: give the serve arguments (`kvplan vllm serve MODEL ...`) or --line 'TEXT'")
    if serve_line is None and args is not None and list(args[:1]) == ["serve"]:
        args = list(args[1:])
    try:
        req = read_serve(args, line=serve_line, policy=mine.get("policy"), base=Path(base) if base else None)
    except OptionError as e:
        if where is None:
            raise
        raise OptionError(f"{where}: {e.message}") from None
    if req.refused:  # vLLM's demo server, an image for another accelerator: the answer, not a simulation
        raise OptionError(f"{where}: {req.refused}" if where else req.refused)
    run = dict(req.options)
    for name, value in mine.items():
        if name in run and name != "policy":
            raise OptionError(f"{OPTIONS[name].flag} given before `serve` and set by the serve line; give it once")
        run[name] = value
    if "policy" in req.options:
        run["policy"] = req.options["policy"]
    env_vllm, env_other = _env_split(req.env)
    warnings = [*read_as, *req.warnings]  # how the manifest was read, then how its line was
    if env_vllm:  # kvplan's --env (given before `serve`) and the line's: the line names what vLLM reads
        run["env"] = {**OPTIONS["env"].parse(mine.get("env") or {}), **env_vllm}
    return ServeRequest(req, run, where, tuple(warnings), env_vllm, env_other, replicas)


def vllm_serve(args: list[str] | tuple[str, ...] | None = None, *, line: str | None = None,
               file: str | Path | None = None, container: str | None = None,
               base: str | Path | None = None, **options) -> Envelope:
    """Simulate a ``vllm serve`` deployment: ``args`` are the words after ``vllm serve``
    (``["openai/gpt-oss-20b", "--max-model-len", "32k"]``), or ``line`` is one pasted command
    (``vllm serve ...``, ``python -m vllm.entrypoints.openai.api_server ...``, ``docker run ...
    vllm/vllm-openai:TAG ...``, with ``VAR=value`` prefixes and ``-e VAR=value``). ``options``
    are kvplan's own (``gpu``, ``policy``, ``weights_memory``, ...). ``base``: the folder a
    relative ``--config FILE.yaml`` is read from (default: the working directory)."""
    from kvplan.errors import KvplanError
    from kvplan.usecases.records import replicated
    from kvplan.usecases.simulate import simulate

    sr = serve_request(args, line=line, file=file, container=container, base=base, **options)
    req, run, where, warnings, env_vllm, env_other = sr.req, sr.run, sr.where, list(sr.warnings), sr.env_vllm, sr.env_other
    try:
        result = simulate(req.model, **run)
    except KvplanError as e:
        if where is not None:  # every problem names the manifest's file and line
            e.message = f"{where}: {e.message}"
            e.args = (e.message,)
        raise
    serve = ServeRecord(
        form=req.line.form if req.line else "vllm serve",
        line=req.line.text if req.line else None,
        image=req.line.image if req.line else None,
        manifest=where,
        model=req.model,
        release=req.release,
        release_source=req.release_source,
        flag_list=FlagList(req.table.release, req.table.source, req.table.note),
        flags=tuple(req.flags),
        environment=env_vllm,
        environment_applied=bool(env_vllm),
        environment_ignored=tuple(sorted(env_other)),
    )
    simulated = result.body
    fixes, verdict = _serve_fixes(simulated.plan.fixes, result.outcome, req.flags)
    totals = replicated(simulated.plan, sr.replicas) if sr.replicas > 1 else simulated.plan.totals
    simulated = replace(simulated, plan=replace(simulated.plan, fixes=fixes, totals=totals))
    return replace(result, command="vllm", outcome=verdict, body=ServeBody(simulated, serve),
                   warnings=unique(warnings, result.warnings))
