"""`kvplan check` results as the JSON body, JUnit XML and GitHub workflow annotations."""

from __future__ import annotations

import json
import os
from typing import Any

from kvplan.results import Outcome, outcome
from kvplan.results.check import CheckBody, CheckSummary, DeploymentRow, ExpectationRow
from kvplan.results.envelope import Envelope
from kvplan.usecases.check.evaluate import DeploymentResult
from kvplan.usecases.check.schema import ERROR, FAIL, FileIssue
from kvplan.units import plural

# ---------------------------------------------------------------------------
# Report data, JUnit XML, GitHub annotations


def _outcome(r: DeploymentResult) -> Outcome:
    """The deployment's outcome: ``ok`` = passed; an ``error`` status is kvplan's failure to simulate,
    otherwise the engine's start-up outcome."""
    if r.status == ERROR:
        return outcome(ok=False, stage="kvplan", error_type=r.error_type, error=r.error)
    p = r.plan
    if p is None:
        return outcome(ok=r.passed)
    return outcome(ok=r.passed, starts=p.starts, stage=p.stage, error_type=p.error_type, error=p.error, fix=p.fix)


def deployment_row(r: DeploymentResult) -> DeploymentRow:
    d, s = r.deployment, r.deployment.scenario
    return DeploymentRow(
        name=d.name, file=d.file, line=d.line, model=s.model, drafter=s.drafter, policy=r.policy or s.policy,
        threshold=s.threshold, status=r.status, passed=r.passed, failed_expectations=tuple(o.key for o in r.failed),
        outcome=_outcome(r),
        expectations=tuple(ExpectationRow(o.key, o.limit, o.measured, o.passed, o.message, o.line)
                           for o in r.outcomes),
        plan=r.plan, cross_check=r.cross_check, seconds=round(r.seconds, 3),
    )


def check_result(files: list[str], results: list[DeploymentResult]) -> Envelope:
    """``kvplan check``'s result: every deployment's verdict; ``outcome.ok`` when all pass."""
    from kvplan.usecases.envelope import envelope

    num_errors = sum(r.status == ERROR for r in results)
    num_failed = sum(r.status == FAIL for r in results)
    passed = num_errors == 0 and num_failed == 0
    problem = None if passed else f"{num_failed + num_errors} of {plural(len(results), 'deployment')} failed"
    verdict = outcome(ok=passed, stage=None if passed else "check", error_type=None if passed else "CheckFailed",
                      error=problem)
    body = CheckBody(
        files=tuple(files), passed=passed,
        summary=CheckSummary(len(results), len(results) - num_errors - num_failed, num_failed, num_errors),
        deployments=tuple(deployment_row(r) for r in results))
    return envelope("check", outcome=verdict, body=body,
                    warnings=[f"deployment '{r.deployment.name}': {w}" for r in results for w in r.warnings])


def failure_messages(dep: dict) -> list[str]:
    """The lines that explain why one deployment (from check_result's data) did not pass."""
    if dep["status"] == ERROR:
        return [f"error: {dep['outcome']['error']}"]
    return [f"{e['key']}: {e['message']}" for e in dep["expectations"] if not e["passed"]]


def _numbers_line(dep: dict) -> str:
    p = dep.get("plan")
    if not p:
        return ""
    return (f"group_size={p['group_size']} num_groups={p['num_groups']} padding_waste_pct={p['padding_waste_pct']:.2f} "
            f"max_concurrency={p['max_concurrency']:.2f} "
            f"steady_state_concurrency={p.get('steady_state_concurrency', 0.0):.2f} kv_tokens={p['kv_tokens']} max_model_len={p['max_model_len']} "
            f"starts={str(p['starts']).lower()}")


def junit_xml(data: dict) -> str:
    """JUnit XML (one <testsuite> per file, one <testcase> per deployment) for CI test reporters.

    An expectation that does not hold is a <failure>; a deployment that could not be
    simulated (unknown model, …) is an <error>. The message attribute holds the first
    reason, the element text all of them."""
    import xml.etree.ElementTree as ET

    deployments = data["deployments"]
    root = ET.Element("testsuites", {
        "name": "kvplan check",
        "tests": str(len(deployments)),
        "failures": str(sum(d["status"] == FAIL for d in deployments)),
        "errors": str(sum(d["status"] == ERROR for d in deployments)),
        "time": f"{sum(d['seconds'] for d in deployments):.3f}",
    })
    by_file: dict[str, list[dict]] = {}
    for d in deployments:
        by_file.setdefault(d["file"], []).append(d)
    for path, deps in by_file.items():
        suite = ET.SubElement(root, "testsuite", {
            "name": path,
            "tests": str(len(deps)),
            "failures": str(sum(d["status"] == FAIL for d in deps)),
            "errors": str(sum(d["status"] == ERROR for d in deps)),
            "skipped": "0",
            "time": f"{sum(d['seconds'] for d in deps):.3f}",
        })
        for d in deps:
            case = ET.SubElement(suite, "testcase", {
                "classname": "kvplan.check." + _suite_stem(path),
                "name": d["name"],
                "file": path,
                "line": str(d["line"]),
                "time": f"{d['seconds']:.3f}",
            })
            reasons = failure_messages(d)
            if d["status"] == ERROR:
                el = ET.SubElement(case, "error", {"message": d["outcome"]["error"] or "",
                                                          "type": d["outcome"]["error_type"] or "error"})
                el.text = "\n".join(reasons)
            elif d["status"] == FAIL:
                el = ET.SubElement(case, "failure", {"message": reasons[0], "type": d["failed_expectations"][0]})
                el.text = "\n".join(reasons)
            out = ET.SubElement(case, "system-out")
            out.text = _numbers_line(d)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _suite_stem(path: str) -> str:
    base = os.path.basename(path)
    for ext in (".yaml", ".yml"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    return base.replace(".", "_") or "deployments"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def annotation_path(path: str, workspace: str | None = None) -> str:
    """The file as GitHub wants it: relative to the workspace (the repository root) when inside it."""
    root = workspace or os.getcwd()
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.path.abspath(root))
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def annotation(file: str, line: int | None, title: str, message: str, level: str = "error") -> str:
    """One GitHub Actions workflow command: ``::error file=F,line=L,title=T::message``."""
    props = [f"file={_escape_property(file)}"]
    if line is not None:
        props.append(f"line={line}")
    props.append(f"title={_escape_property(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(message)}"


def github_annotations(data: dict, workspace: str | None = None) -> list[str]:
    """One ``::error`` per failing expectation (at the line that sets its limit) or errored deployment."""
    out = []
    for d in data["deployments"]:
        file = annotation_path(d["file"], workspace)
        if d["status"] == ERROR:
            out.append(annotation(file, d["line"], f"kvplan check: {d['name']}", f"error: {d['outcome']['error']}"))
            continue
        for e in d["expectations"]:
            if not e["passed"]:
                out.append(annotation(file, e["line"] or d["line"], f"kvplan check: {d['name']} ({e['key']})",
                                      e["message"]))
    return out


def issue_annotations(issues: list[FileIssue], workspace: str | None = None) -> list[str]:
    """``::error`` lines for the problems of a bad deployments file."""
    out = []
    for i in issues:
        title = "kvplan check: bad deployments file"
        message = ": ".join(filter(None, [i.entry, f"key '{i.key}'" if i.key else None, i.problem]))
        out.append(annotation(annotation_path(i.file, workspace), i.line, title, message))
    return out


def format_limit(key: str, value: Any) -> str:
    """A limit or measurement in words for tables (raw values stay in JSON)."""
    if value is None:
        return ""
    if key == "starts":
        return "starts" if value else "fails"
    if key == "max_padding_waste_pct":
        return f"{value:.2f}%" if isinstance(value, float) else f"{value}%"
    if key in ("min_concurrency", "min_steady_concurrency"):
        return f"{value:.2f}" if isinstance(value, float) else str(value)
    if key in ("min_max_model_len", "min_kv_tokens"):
        return f"{value:,}"
    if key == "same_layout_as" and isinstance(value, dict):
        return "; ".join(value["differences"]) or "same"
    return str(value) if not isinstance(value, (dict, list)) else json.dumps(value)

