"""``--cross-check``: run the planning functions of a real vLLM on the scenario kvplan simulated,
and compare.

The vLLM is the one importable by an interpreter: ``--vllm-python PATH`` (a serving venv, a
container's Python), else the interpreter running kvplan. Either way the runner
(``vllm_runner.py``) runs in a subprocess on CPU, without weights, network or GPU, and imports
nothing from kvplan, so a failure inside vLLM (an import error, a missing module, a CUDA-only
path) becomes one "could not cross-check: ..." line, never a crash of kvplan.

Importing vLLM's planning modules takes seconds, so answers are cached in kvplan's cache dir
(``$KVPLAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kvplan``, else ``~/.cache/kvplan``; off with
``KVPLAN_NO_CACHE=1``) under ``cross-check/``, keyed by the interpreter's real path, its vLLM
release, the runner's source and the case.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from kvplan.errors import OptionError
from kvplan.results import to_data
from kvplan.results.records import CrossCheck, CrossCheckDifference, CrossCheckScope

if TYPE_CHECKING:
    from kvplan.engines.vllm.plan import Plan

RUNNER = Path(__file__).with_name("vllm_runner.py")
ARCH_RUNNER = Path(__file__).with_name("arch_runner.py")  # the architecture harness's runner
TIMEOUT_S = 600
VERSION_TIMEOUT_S = 60

# What the comparison covers, in words (the report's `scope`).
SCOPE_VERIFIED = (
    "grouping, block sizes after alignment, page sizes, num_blocks per worker and global, KV-cache tensors, "
    "admission need, max_model_len, max concurrency, the model runner and tokens in flight, every engine-core "
    "log line, and the start-up failure (type and text): vLLM's own planning functions on kvplan's per-layer specs"
)
SCOPE_NOT_VERIFIED = (
    "the per-layer specs themselves (kvplan's family rules), the hybrid Mamba alignment and the hybrid-manager "
    "decision (config-time steps kvplan hands to vLLM as inputs), and the KV budget (given, or kvplan's estimate)"
)


class CrossCheckUnavailable(Exception):
    """The cross-check could not run (no interpreter, no vLLM, the runner failed)."""


@dataclass(frozen=True)
class Target:
    python: str  # the interpreter's path as given (or sys.executable)
    vllm_version: str


def _python(vllm_python: str | None) -> str:
    if vllm_python is None:
        return sys.executable
    path = Path(vllm_python).expanduser()
    try:
        usable = path.is_file() and os.access(path, os.X_OK)
    except OSError:  # a name the file system refuses (too long, say)
        usable = False
    if not usable:
        raise OptionError(f"--vllm-python: no executable interpreter at {vllm_python}; "
                          "pass the python of the environment that has vLLM (e.g. /path/to/venv/bin/python)")
    return str(path)


def find_target(vllm_python: str | None) -> Target:
    """The interpreter and the vLLM release it imports (read from the package metadata; vLLM is
    not imported). OptionError for a path that is not an interpreter; CrossCheckUnavailable when
    the interpreter has no vLLM."""
    python = _python(vllm_python)
    if vllm_python is None:
        from kvplan.engines.vllm.releases import installed_vllm

        version = installed_vllm()
        if version is None:
            raise CrossCheckUnavailable(f"vLLM is not installed in this Python ({python}); "
                                        "pass --vllm-python PATH to use another environment's")
        return Target(python, version)
    version = _probe_version(python)
    if not version:
        raise CrossCheckUnavailable(f"vLLM is not installed in {python}")
    return Target(python, version)


@lru_cache(maxsize=None)
def _probe_version(python: str) -> str:
    """The vLLM version ``python`` sees ('' for none), asked once per interpreter and process."""
    code = ("import importlib.metadata as m\ntry:\n    print(m.version('vllm'))\n"
            "except m.PackageNotFoundError:\n    print('')\n")
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CrossCheckUnavailable(f"{python} did not run: {e}") from None
    if proc.returncode != 0:
        raise CrossCheckUnavailable(f"{python} is not a working Python interpreter ({_last_line(proc.stderr)})")
    return proc.stdout.strip()


def cache_dir() -> Path | None:
    """Where answers are kept (None when ``KVPLAN_NO_CACHE`` is set)."""
    from kvplan.model.config_cache import cache_root

    root = cache_root()
    return None if root is None else Path(root).expanduser() / "cross-check"


def cache_key(target: Target, case: dict) -> str:
    runner = hashlib.sha256(RUNNER.read_bytes()).hexdigest()
    payload = json.dumps([os.path.realpath(target.python), target.vllm_version, runner, case], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def _last_line(text: str) -> str:
    lines = [x.strip() for x in (text or "").splitlines() if x.strip()]
    return lines[-1] if lines else "no output"


def run_runner(target: Target, cases: list[dict]) -> list[dict]:
    """The runner's results for ``cases`` (one vLLM import for all of them) in ``target``'s
    interpreter; CrossCheckUnavailable on failure."""
    # the runner drops its own directory from sys.path, so nothing of kvplan's can shadow a module
    env = {k: v for k, v in os.environ.items() if k != "VLLM_USE_V2_MODEL_RUNNER"}
    env.setdefault("CUDA_VISIBLE_DEVICES", "")
    try:
        proc = subprocess.run([target.python, str(RUNNER)], input=json.dumps(cases), capture_output=True,
                              text=True, timeout=TIMEOUT_S, check=False, env=env)
    except subprocess.TimeoutExpired:
        raise CrossCheckUnavailable(f"vLLM's planning functions did not answer within {TIMEOUT_S} s") from None
    except OSError as e:
        raise CrossCheckUnavailable(f"{target.python} did not run: {e}") from None
    if proc.returncode != 0:
        raise CrossCheckUnavailable(f"vLLM {target.vllm_version} failed: {_last_line(proc.stderr)}")
    try:
        results = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise CrossCheckUnavailable(f"vLLM {target.vllm_version}'s runner printed no result "
                                    f"({_last_line(proc.stderr)})") from None
    if not (isinstance(results, list) and len(results) == len(cases)
            and all(isinstance(r, dict) and "vllm_version" in r for r in results)):
        raise CrossCheckUnavailable("the runner's answer is not one result object per case")
    return results


def _cache_path(target: Target, case: dict) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"{cache_key(target, case)}.json"


def _cache_read(path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _cache_write(path: Path | None, result: dict) -> None:
    """Store an answer (a cache that cannot be written is skipped)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(result, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass


def unavailable(reason: str, *, python: str | None = None, release: str | None = None) -> CrossCheck:
    return CrossCheck(ran=False, agree=None, reason=f"could not cross-check: {reason}", vllm_version=release,
                      python=python, fields_compared=0, fields_agree=0, differences=(),
                      scope=CrossCheckScope(None, None, ()), seconds=0.0, cached=False)


def report(plan, result: dict, target: Target, *, seconds: float, cached: bool,
           layers: dict | None = None) -> CrossCheck:
    """The ``cross_check`` object of the result envelope for a runner result (``layers``: the
    architecture runner's record for the served config, see ``layer_record``)."""
    from kvplan.verify.compare import compare, differences

    checks = compare(plan, result)
    notes: list[str] = []
    if layers is not None:
        checks += layer_checks(layers, notes)
    diff = differences(checks)
    simulated = plan.era.release or None
    if simulated and simulated != result["vllm_version"]:
        notes.append(f"kvplan simulated vllm=={simulated}'s rules but checked vLLM {result['vllm_version']}: "
                     "a difference may come from the releases, not from kvplan")
    if result.get("spec_notes"):
        notes += [f"vLLM {result['vllm_version']}: {n}" for n in result["spec_notes"]]
    return CrossCheck(
        ran=True, agree=not diff, reason=None, vllm_version=result["vllm_version"], python=target.python,
        fields_compared=len(checks), fields_agree=len(checks) - len(diff),
        differences=tuple(CrossCheckDifference(c.field, c.kvplan, c.vllm) for c in diff),
        scope=CrossCheckScope(SCOPE_VERIFIED, SCOPE_NOT_VERIFIED, tuple(notes)),
        seconds=round(seconds, 2), cached=cached,
    )


def layer_checks(rec: dict, notes: list[str]) -> list:
    """Every target layer's spec as vLLM's own model class registers it (built on the meta device by
    the checked vLLM, ``arch_runner.py``) against kvplan's rule for the same config, both at
    bfloat16 and TP 1: ``layer_specs[i]`` checks (kind, KV heads, head sizes, dtype, window, chunk,
    Mamba shapes and dtypes). A model class vLLM could not build here is a note, not a difference."""
    from kvplan.errors import KvplanError
    from kvplan.verify.archcheck import _describe, golden_key, kvplan_layers
    from kvplan.verify.compare import FieldCheck

    if rec.get("status") != "built":
        notes.append(f"per-layer specs not compared: vLLM's model class was not built here ({rec.get('reason')})")
        return []
    want = [golden_key(rec["spec_table"][i]) for _, i in rec["layers"]]
    try:
        got, _, _ = kvplan_layers(rec["config"])
    except KvplanError as e:
        notes.append(f"per-layer specs not compared: kvplan refuses the config at bfloat16, TP 1 ({e})")
        return []
    notes.append(f"per-layer specs: vLLM {rec.get('vllm_version')}'s {rec.get('model_class')} built on the meta device "
                 f"(bfloat16, TP 1), {len(want)} layers")
    return [FieldCheck(f"layer_specs[{i}]", _describe(got[i]) if i < len(got) else None,
                       _describe(want[i]) if i < len(want) else None,
                       i < len(got) and i < len(want) and got[i] == want[i])
            for i in range(max(len(got), len(want)))]


def run_layer_runner(target: Target, item: dict) -> dict:
    """``arch_runner.py`` in the checked interpreter on one config: its record, or a failed one."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kvplan-layers-") as d:
        inp, out = Path(d) / "in.json", Path(d) / "out.json"
        inp.write_text(json.dumps([item]))
        try:
            proc = subprocess.run([target.python, str(ARCH_RUNNER), str(inp), str(out)], capture_output=True,
                                  text=True, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return {"status": "failed", "reason": f"the runner did not run ({type(e).__name__})"}
        try:
            return json.loads(out.read_text())[0]
        except (OSError, ValueError, IndexError, KeyError):
            tail = (proc.stderr or "").strip().splitlines()[-1:]
            return {"status": "failed", "reason": "the runner stopped: " + (tail[0][:200] if tail else f"exit {proc.returncode}")}


def layer_record(target: Target, model: str | None) -> dict | None:
    """The architecture runner's record for ``model``'s config.json (cached like the planning answers);
    None without a model."""
    if model is None:
        return None
    from kvplan.errors import KvplanError
    from kvplan.model.source import read_config_json, resolve_model

    try:
        config = read_config_json(resolve_model(model).path)
    except KvplanError as e:
        return {"status": "failed", "reason": f"the config could not be read ({e})"}
    item = {"architecture": (config.get("architectures") or [""])[0], "registry": None, "config": config,
            "config_source": "the served config.json"}
    folder = cache_dir()
    key = hashlib.sha256(json.dumps({"python": str(Path(target.python).resolve()), "vllm": target.vllm_version,
                                     "runner": ARCH_RUNNER.read_text(), "item": item}, sort_keys=True).encode()).hexdigest()
    path = None if folder is None else folder / f"layers-{key}.json"
    cached = _cache_read(path)
    if cached is not None:
        return cached
    rec = run_layer_runner(target, item)
    if rec.get("status") in ("built", "no_kv_cache"):
        _cache_write(path, rec)
    return rec


@dataclass(frozen=True)
class Job:
    """One plan to verify: against ``target`` (None: ``reason`` says why it cannot run)."""

    plan: Plan
    target: Target | None
    name: str
    model: str | None = None
    drafter: str | None = None
    reason: str | None = None


def cross_check_many(jobs: list[Job]) -> list[CrossCheck]:
    """The ``cross_check`` object of each job. Cached answers are reused; the others run in one
    runner process per interpreter (vLLM is imported once for all of them). Never raises for
    vLLM's failures: the object says why it could not run."""
    from kvplan.verify.case import runner_case

    out: dict[int, CrossCheck] = {}  # job index → its object
    todo: dict[Target, list[tuple[int, dict, Path | None]]] = {}
    for i, job in enumerate(jobs):
        t = job.target
        if t is None:
            out[i] = unavailable(job.reason or "no vLLM")
            continue
        f = job.plan.failure
        if f is not None and f.stage == "config":
            out[i] = unavailable(f"the deployment fails at config time ({f.error_type}), before vLLM's planning "
                                 "functions run; nothing to compare", python=t.python, release=t.vllm_version)
            continue
        case = runner_case(job.plan, job.name, model=job.model, drafter=job.drafter)
        path = _cache_path(t, case)
        cached = _cache_read(path)
        if cached is not None:
            out[i] = report(job.plan, cached, t, seconds=0.0, cached=True, layers=layer_record(t, job.model))
        else:
            todo.setdefault(t, []).append((i, case, path))
    for t, items in todo.items():
        start = time.perf_counter()
        try:
            results = run_runner(t, [case for _, case, _ in items])
        except CrossCheckUnavailable as e:
            for i, _, _ in items:
                out[i] = unavailable(str(e), python=t.python, release=t.vllm_version)
            continue
        seconds = time.perf_counter() - start
        for (i, _, path), result in zip(items, results):
            _cache_write(path, result)
            out[i] = report(jobs[i].plan, result, t, seconds=seconds, cached=False,
                            layers=layer_record(t, jobs[i].model))
    return [out[i] for i in range(len(jobs))]


def cross_check(plan, target: Target, *, name: str = "cross-check", model: str | None = None,
                drafter: str | None = None) -> CrossCheck:
    """Run vLLM's planning functions on ``plan``'s scenario and compare (see ``cross_check_many``)."""
    return cross_check_many([Job(plan, target, name, model, drafter)])[0]


def summary_line(cc: CrossCheck | dict) -> str:
    """One line: "verified against vLLM 0.34.0: 57 fields agree" / "... 3 of 57 fields differ" / why not.
    ``cc``: the record, or its plain data (the table renderer has the JSON)."""
    data = to_data(cc)
    if not data["ran"]:
        return data["reason"]
    if data["agree"]:
        return f"verified against vLLM {data['vllm_version']}: {data['fields_agree']} fields agree"
    n = len(data["differences"])
    return (f"cross-check against vLLM {data['vllm_version']}: {n} of {data['fields_compared']} fields differ "
            f"({', '.join(d['field'] for d in data['differences'][:3])}{', ...' if n > 3 else ''})")


@dataclass(frozen=True)
class Prepared:
    """A cross-check about to run: the vLLM found (or why none), and the policy to simulate."""

    target: Target | None
    reason: str | None  # why it cannot run (target None)
    policy: str

    def job(self, plan, *, name: str, model: str | None = None, drafter: str | None = None) -> Job:
        return Job(plan, self.target, name, model, drafter, self.reason)

    def run(self, plan, *, name: str, model: str | None = None, drafter: str | None = None) -> CrossCheck:
        return cross_check_many([self.job(plan, name=name, model=model, drafter=drafter)])[0]


def prepare(vllm_python: str | None, policy: str, *, policy_given: bool) -> Prepared:
    """Find the vLLM to check against; when no policy was given, simulate that vLLM's release
    (``vllm==X``, which kvplan resolves to its era). OptionError only for a --vllm-python path
    that is not an interpreter."""
    try:
        target = find_target(vllm_python)
    except CrossCheckUnavailable as e:
        return Prepared(None, str(e), policy)
    if policy_given:
        return Prepared(target, None, policy)
    from kvplan.engines.vllm.releases import release_era

    try:
        release_era(target.vllm_version)
    except OptionError:  # a release kvplan has no rules for: keep the default, the report says so
        return Prepared(target, None, policy)
    return Prepared(target, None, f"vllm=={target.vllm_version}")


def agreement_failure(cc: CrossCheck) -> str | None:
    """The --require-agreement verdict: None when every field agrees, else a line naming the fields."""
    if not cc.ran:
        return f"--require-agreement: {cc.reason}"
    if cc.agree:
        return None
    fields = [d.field for d in cc.differences]
    shown = ", ".join(fields[:5]) + (f" and {len(fields) - 5} more" if len(fields) > 5 else "")
    n = len(fields)
    return f"--require-agreement: {n} field{' differs' if n == 1 else 's differ'} from vLLM {cc.vllm_version}: {shown}"
