"""`kvplan check`: deployments files → scenarios → expectations → verdicts (a CI gate).

schema (keys, expectations, the option table's parsers) → loader (YAML with lines) →
evaluate (simulate, measure) → outputs (the result record, JUnit XML, GitHub annotations).
"""

from __future__ import annotations

from kvplan.results.envelope import Envelope
from kvplan.usecases.check.evaluate import run_deployment, run_deployments
from kvplan.usecases.check.loader import load_deployments, load_deployments_text
from kvplan.usecases.check.outputs import (
    annotation, annotation_path, check_result, failure_messages, format_limit, github_annotations, issue_annotations,
    junit_xml,
)
from kvplan.usecases.check.schema import DeploymentsFileError


def check(files: list[str] | str, *, reraise: bool = False, vllm_python: str | None = None) -> Envelope:
    """Load every deployment of ``files`` (raises DeploymentsFileError listing every problem of
    a malformed file; nothing runs then), simulate each and check its expectations.

    ``vllm_python``: the interpreter of the cross-checks that entries ask for (``cross_check: true``,
    ``require_agreement: true``), given by the person running kvplan (``--vllm-python``): a file
    never names a program (docs/security.md)."""
    from dataclasses import replace

    files = [files] if isinstance(files, str) else list(files)
    deployments = load_deployments(files)
    if vllm_python is not None:
        deployments = [replace(d, scenario=replace(d.scenario, vllm_python=vllm_python))
                       if d.scenario.cross_check or d.scenario.require_agreement else d for d in deployments]
    return check_result(files, run_deployments(deployments, reraise=reraise))


__all__ = ["DeploymentsFileError", "annotation", "annotation_path", "check", "failure_messages", "format_limit", "check_result", "github_annotations", "issue_annotations", "junit_xml",
           "load_deployments", "load_deployments_text", "run_deployment", "run_deployments"]
