#!/usr/bin/env python3
"""The CUDA-graph capture sizes each release derives, by running its own ``VllmConfig._set_cudagraph_sizes``.

Run inside a release environment (``--run``: imports vLLM, never kvplan) it reads the points as JSON on stdin,
calls the release's ``VllmConfig._set_cudagraph_sizes`` on a stand-in config (the release's own
``CompilationConfig`` and, before 0.11.2, its own ``SchedulerConfig``, whose ``cuda_graph_sizes`` held the sizes
then; a model config that is not eager; TP 1; no speculative config; the default performance mode; the
CUDA-graph mode FULL_AND_PIECEWISE where the stand-in's is unresolved, as 0.34's -O2 default resolves it) and prints,
per point, the capture sizes it leaves in ``compilation_config.cudagraph_capture_sizes`` (ascending), or the error
it raises. Run from kvplan's environment it runs every release named (``make_goldens.release_python``: the base
venv + the release's unpacked sources) and writes ``tests/golden/cudagraph/capture_sizes.json``::

    RELEASE_BASE=.golden-venvs/rel-base RELEASE_SRC=.golden-venvs/rel-src \\
        python scripts/golden/capture_sizes.py 0.10.1 0.11.0 0.11.2 0.19.0 0.20.2
    RELEASE_BASE=.golden-venvs/rel-base5 RELEASE_SRC=.golden-venvs/rel-src \\
        python scripts/golden/capture_sizes.py 0.29.0 0.34.0

(each run merges its releases into the file). A point: ``R`` (max_num_seqs), ``T`` (max_num_batched_tokens) and
the flags as kvplan's options name them: ``max_cudagraph_capture_size`` (0.11.2+) and ``cudagraph_capture_sizes``
(vLLM's ``--cudagraph-capture-sizes``; before 0.11.2 the scheduler's ``--cuda-graph-sizes``). The platform is the
CPU, so the default ceiling is 512 (not a data-center Blackwell card's 1024).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "cudagraph" / "capture_sizes.json"

# (R, T, flags): the default, the max alone (below 8, below 256, above 256, above T: T appended from 0.20.2), the
# list alone (repeats, a size above T, one size: the old releases' grid top), both (consistent, inconsistent)
POINTS = [
    {"R": 256, "T": 2048},
    {"R": 256, "T": 2048, "max_cudagraph_capture_size": 16},  # the o3 probe (tests/logs/budget case 102)
    {"R": 256, "T": 2048, "max_cudagraph_capture_size": 6},
    {"R": 64, "T": 8192, "max_cudagraph_capture_size": 600},
    {"R": 1024, "T": 700, "max_cudagraph_capture_size": 1000},
    {"R": 8, "T": 8192, "max_cudagraph_capture_size": 64},
    {"R": 256, "T": 2048, "cudagraph_capture_sizes": [1, 2, 4, 8, 8, 3000, 64, 32]},
    {"R": 256, "T": 8192, "cudagraph_capture_sizes": [96]},
    {"R": 32, "T": 64, "cudagraph_capture_sizes": [100]},
    {"R": 256, "T": 2048, "cudagraph_capture_sizes": [1, 2, 4, 16], "max_cudagraph_capture_size": 16},
    {"R": 256, "T": 2048, "cudagraph_capture_sizes": [1, 2, 4, 16], "max_cudagraph_capture_size": 32},
]


def _release_key(v: str) -> tuple:
    return tuple(int(x) for x in v.split(".")[:3])


def run(points: list[dict]) -> list[dict]:
    """Inside a release environment: each point's capture sizes by the release's own code."""
    import types
    from types import SimpleNamespace

    import vllm
    from vllm.config import CompilationConfig, VllmConfig

    class Config(SimpleNamespace):
        """The stand-in VllmConfig: the fields set here, the release's own methods and properties for the rest."""

        def __getattr__(self, name):
            attr = getattr(VllmConfig, name)
            if isinstance(attr, property):
                return attr.fget(self)
            if callable(attr):
                return types.MethodType(attr, self)
            raise AttributeError(name)

    old = _release_key(vllm.__version__.split("+")[0]) < (0, 11, 2)
    out = []
    for p in points:
        sizes, cap = p.get("cudagraph_capture_sizes"), p.get("max_cudagraph_capture_size")
        try:
            if old:
                if cap is not None:
                    raise TypeError("no max_cudagraph_capture_size before 0.11.2")
                from vllm.config import SchedulerConfig

                sched = SchedulerConfig(max_num_seqs=p["R"], max_num_batched_tokens=p["T"],
                                        max_model_len=p["T"], cuda_graph_sizes=list(sizes or []))
                comp = CompilationConfig()
            else:
                sched = SimpleNamespace(max_num_seqs=p["R"], max_num_batched_tokens=p["T"])
                kw = {k: v for k, v in (("cudagraph_capture_sizes", sizes), ("max_cudagraph_capture_size", cap))
                      if v is not None}
                comp = CompilationConfig(**kw)
            if getattr(comp, "cudagraph_mode", "") is None:  # resolved later by the -O level (0.34: FULL_AND_PIECEWISE)
                from vllm.config.compilation import CUDAGraphMode

                comp.cudagraph_mode = CUDAGraphMode.FULL_AND_PIECEWISE
            me = Config(
                model_config=SimpleNamespace(enforce_eager=False), compilation_config=comp, scheduler_config=sched,
                parallel_config=SimpleNamespace(tensor_parallel_size=1), speculative_config=None,
                uniform_decode_query_len=1, num_speculative_tokens=0, performance_mode="balanced")
            VllmConfig._set_cudagraph_sizes(me)
            split = {k: sorted(getattr(comp, k)) for k in ("decode_cudagraph_capture_request_sizes",
                                                           "prefill_cudagraph_capture_token_sizes")
                     if getattr(comp, k, None) is not None}  # 0.34's split of the sizes, recorded as it is
            out.append({**p, "sizes": sorted(comp.cudagraph_capture_sizes), **split})
        except Exception as e:  # noqa: BLE001 - the release's own refusal is the answer for that point
            out.append({**p, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"})
    return out


def _release_run(release: str) -> list[dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from config_defaults import run_in_release

    return run_in_release(release, __file__, "--run", stdin=json.dumps(POINTS), env_extra={"VLLM_TARGET_DEVICE": "cpu"})


def main() -> None:
    if sys.argv[1:] == ["--run"]:
        real = sys.stdout
        sys.stdout = sys.stderr  # vLLM's import-time prints stay off the JSON
        points = json.loads(sys.stdin.read())
        real.write(json.dumps(run(points)) + "\n")
        return
    if len(sys.argv) < 2:
        raise SystemExit("usage: capture_sizes.py RELEASE...   (or --run inside a release env)")
    data = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {"releases": {}}
    data["made_by"] = "scripts/golden/capture_sizes.py (each release's VllmConfig._set_cudagraph_sizes, on CPU)"
    for release in sys.argv[1:]:
        data["releases"][release] = _release_run(release)
        print(f"vllm {release}: {len(data['releases'][release])} points")
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda kv: _release_key(kv[0])))
    lines = ",\n".join(f"  {json.dumps(r)}: [\n" + ",\n".join(f"   {json.dumps(p)}" for p in pts) + "\n  ]"
                       for r, pts in data["releases"].items())
    GOLDEN.write_text(f'{{"made_by": {json.dumps(data["made_by"])},\n "releases": {{\n{lines}\n }}\n}}\n')


if __name__ == "__main__":
    main()
