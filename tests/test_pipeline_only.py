"""Every command runs its deployments through one module, ``kvplan/usecases/pipeline.py``.

The stages' entry points (the layout builders, the budget estimate, vLLM's simulation) are called from the
pipeline alone: no other module above the engines imports them, and none changes a plan's engine options to
plan again (``pipeline.replan`` does that, for a use case's counterfactual). Read from the source (every
import counts, function-level ones included, as in tests/test_layering.py), so a command that grows its own
path around the pipeline fails here. The commands (simulate and its sweeps, vllm, check, fit, compare,
explain-log, inspect, emit, export, diff, disagg) are use cases, so this covers each of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "kvplan"
PIPELINE = "kvplan/usecases/pipeline.py"

# module → the stage entry points it holds (types such as Plan, ModelLayout or ModelFacts may be imported anywhere)
STAGE_ENTRIES = {
    "kvplan.model.layout": {"build_model_layout", "draft_model_layout", "finish_model_layout"},
    "kvplan.budget.estimate": {"kv_budget"},
    "kvplan.engines.vllm.plan": {"simulate", "failed_before_kv_cache"},
}
# the layers that implement the stages (below the use cases), and one adapter that is no deployment
BELOW = ("kvplan/model/", "kvplan/budget/", "kvplan/engines/")
EXEMPT = {
    # the architecture goldens' harness: a config's layers beside vLLM's model classes, no deployment, no plan
    "kvplan/verify/archcheck.py": {"build_model_layout"},
}


def _stage_imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in STAGE_ENTRIES:
            found |= {a.name for a in node.names} & STAGE_ENTRIES[node.module]
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in STAGE_ENTRIES}  # the module itself: anything in it
    return found


def _options_changed(tree: ast.AST) -> list[int]:
    """Lines that call ``replace`` on a plan's options (``plan.options`` itself, or a name bound to it)."""
    bound = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
             and isinstance(node.value, ast.Attribute) and node.value.attr == "options"
             for t in node.targets if isinstance(t, ast.Name)}
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
        first = node.args[0]
        if name in ("replace", "with_") and (
                (isinstance(first, ast.Attribute) and first.attr == "options")
                or (isinstance(first, ast.Name) and first.id in bound)):
            lines.append(node.lineno)
    return lines


def offenders(sources: dict[str, str]) -> list[str]:
    out = []
    for path, text in sorted(sources.items()):
        if path == PIPELINE or path.startswith(BELOW):
            continue
        tree = ast.parse(text, path)
        entries = _stage_imports(tree) - EXEMPT.get(path, set())
        if entries:
            out.append(f"{path} imports {', '.join(sorted(entries))}: run the deployment through the pipeline")
        out += [f"{path}:{line} changes a plan's options: ask pipeline.replan" for line in _options_changed(tree)]
    return out


def _tree() -> dict[str, str]:
    root = PKG.parent
    return {str(p.relative_to(root)): p.read_text() for p in PKG.rglob("*.py") if "configs" not in p.parts}


def test_only_the_pipeline_runs_the_stages():
    assert offenders(_tree()) == []


def test_the_check_finds_a_path_around_the_pipeline():
    # guards the test itself: a use case that builds its own layout, estimates its own budget, simulates
    # itself, or re-plans with changed options is found; importing the records' types is not
    around = {
        "kvplan/usecases/own.py": "def f():\n    from kvplan.model.layout import ModelLayout, build_model_layout\n",
        "kvplan/usecases/budget.py": "from kvplan.budget.estimate import kv_budget\n",
        "kvplan/report/x.py": "import kvplan.engines.vllm.plan\n",
        "kvplan/usecases/traps.py": "def g(sim):\n    o = sim.plan.options\n    return replace(o, kv_events=False)\n",
        "kvplan/usecases/fine.py": "from kvplan.engines.vllm.plan import Plan, ModelFacts\nreplace(d, x=1)\n",
        PIPELINE: "from kvplan.engines.vllm.plan import simulate\n",
        "kvplan/engines/vllm/compare.py": "from kvplan.engines.vllm.plan import simulate\n",
    }
    assert offenders(around) == [
        "kvplan/report/x.py imports kvplan.engines.vllm.plan: run the deployment through the pipeline",
        "kvplan/usecases/budget.py imports kv_budget: run the deployment through the pipeline",
        "kvplan/usecases/own.py imports build_model_layout: run the deployment through the pipeline",
        "kvplan/usecases/traps.py:3 changes a plan's options: ask pipeline.replan",
    ]
