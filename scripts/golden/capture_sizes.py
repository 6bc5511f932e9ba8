#!/usr/bin/env python3
"""The CUDA-graph capture sizes each release derives, by running its own ``VllmConfig._set_cudagraph_sizes``.

Run inside a release environment (``--run``: imports vLLM, never kvplan) it reads the points as JSON on stdin,
calls the release's ``VllmConfig._set_cudagraph_sizes`` on a stand-in config (the release's own
``CompilationConfig`` and, before 0.11.2, its own ``SchedulerConfig``, whose ``cuda_graph_sizes`` held the sizes
then; a model config that is not eager; TP 1; no speculative config; the point's ``performance_mode``, else balanced;
the CUDA-graph mode FULL_AND_PIECEWISE where the stand-in's is unresolved, as 0.34's -O2 default resolves it) and prints,
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

The CUDA-graph mode: a point with ``optimization_level`` (``--optimization-level``, a VllmConfig field from 0.12.0;
an earlier release's own refusal is its missing field) and/or ``cudagraph_mode`` (the compilation config's) runs the
release's resolution of the mode: the compilation mode the level sets when unset (VLLM_COMPILE above -O0, NONE at
-O0: 0.12.0 config/vllm.py:631-636), the release's ``_apply_optimization_level_defaults`` with its own
``OPTIMIZATION_LEVEL_TO_CONFIG[level]``'s ``cudagraph_mode`` (the table's other entries, compile passes, are not
CUDA-graph facts and need a whole model config), then a mode other than NONE without VLLM_COMPILE overridden to NONE
(0.12.0 vllm.py:648-658; 0.29.0 vllm.py:1469-1480, VLLM_USE_BREAKABLE_CUDAGRAPH unset) or, from 0.30.0, the
release's own ``_normalize_piecewise_cudagraph_mode`` (the mode without its piecewise part; breakable CUDA graphs
off), before ``_set_cudagraph_sizes``; it records the resolved ``cudagraph_mode`` by name.
"""

from __future__ import annotations

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
# the CUDA-graph mode: each -O level (0.12.0+; the eval-best case of tests/logs/budget, 122: -O1, max 179, R 451,
# T 16384), a cudagraph_mode given, alone and under -O0 / -O1
POINTS += [{"R": 256, "T": 2048, "optimization_level": level} for level in (0, 1, 2, 3)]
POINTS += [
    {"R": 451, "T": 16384, "max_cudagraph_capture_size": 179, "optimization_level": 1},
    {"R": 256, "T": 2048, "cudagraph_mode": "PIECEWISE"},
    {"R": 256, "T": 2048, "cudagraph_mode": "FULL_AND_PIECEWISE", "optimization_level": 1},
    {"R": 256, "T": 2048, "cudagraph_mode": "PIECEWISE", "optimization_level": 0},
    {"R": 256, "T": 2048, "cudagraph_mode": "FULL_AND_PIECEWISE", "optimization_level": 0},
]

# --performance-mode (a VllmConfig field from 0.17.0; an earlier release's own refusal is its missing field): the
# interactivity grid (M 512, above 32; M 16 given, below 32; M 20 from R 10), sizes given (the mode changes nothing),
# throughput (no size changes here: its doubled batch defaults are arg_utils', not this method's), balanced
POINTS += [
    {"R": 256, "T": 2048, "performance_mode": "interactivity"},
    {"R": 256, "T": 2048, "max_cudagraph_capture_size": 16, "performance_mode": "interactivity"},
    {"R": 10, "T": 8192, "performance_mode": "interactivity"},
    {"R": 256, "T": 2048, "cudagraph_capture_sizes": [1, 2, 4, 16], "performance_mode": "interactivity"},
    {"R": 256, "T": 2048, "performance_mode": "throughput"},
    {"R": 256, "T": 2048, "performance_mode": "balanced"},
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
        level, mode = p.get("optimization_level"), p.get("cudagraph_mode")
        perf = p.get("performance_mode")
        try:
            if level is not None and "optimization_level" not in getattr(VllmConfig, "__dataclass_fields__", {}):
                raise TypeError("no optimization_level before 0.12.0")
            if perf is not None and "performance_mode" not in getattr(VllmConfig, "__dataclass_fields__", {}):
                raise TypeError("no performance_mode before 0.17.0")
            if old:
                if cap is not None:
                    raise TypeError("no max_cudagraph_capture_size before 0.11.2")
                from vllm.config import SchedulerConfig

                sched = SchedulerConfig(max_num_seqs=p["R"], max_num_batched_tokens=p["T"],
                                        max_model_len=p["T"], cuda_graph_sizes=list(sizes or []))
                comp = CompilationConfig(**({"cudagraph_mode": _mode(mode)} if mode else {}))
            else:
                sched = SimpleNamespace(max_num_seqs=p["R"], max_num_batched_tokens=p["T"])
                kw = {k: v for k, v in (("cudagraph_capture_sizes", sizes), ("max_cudagraph_capture_size", cap),
                                        ("cudagraph_mode", _mode(mode) if mode else None)) if v is not None}
                comp = CompilationConfig(**kw)
            me = Config(
                model_config=SimpleNamespace(enforce_eager=False), compilation_config=comp, scheduler_config=sched,
                parallel_config=SimpleNamespace(tensor_parallel_size=1), speculative_config=None,
                uniform_decode_query_len=1, num_speculative_tokens=0, performance_mode=perf or "balanced")
            if level is not None:
                from vllm.config.compilation import CompilationMode, CUDAGraphMode
                from vllm.config.vllm import OPTIMIZATION_LEVEL_TO_CONFIG, OptimizationLevel

                me.optimization_level = OptimizationLevel(level)
                if comp.mode is None:
                    comp.mode = CompilationMode.VLLM_COMPILE if level > 0 else CompilationMode.NONE
                table = OPTIMIZATION_LEVEL_TO_CONFIG[OptimizationLevel(level)]["compilation_config"]
                VllmConfig._apply_optimization_level_defaults(
                    me, {"compilation_config": {"cudagraph_mode": table["cudagraph_mode"]}})
                if hasattr(VllmConfig, "_normalize_piecewise_cudagraph_mode"):  # 0.30+: the release's own method
                    VllmConfig._normalize_piecewise_cudagraph_mode(me, breakable_cudagraph_enabled=False)
                elif comp.cudagraph_mode != CUDAGraphMode.NONE and comp.mode != CompilationMode.VLLM_COMPILE:
                    comp.cudagraph_mode = CUDAGraphMode.NONE
            if getattr(comp, "cudagraph_mode", "") is None:  # resolved later by the -O level (0.34: FULL_AND_PIECEWISE)
                from vllm.config.compilation import CUDAGraphMode

                comp.cudagraph_mode = CUDAGraphMode.FULL_AND_PIECEWISE
            VllmConfig._set_cudagraph_sizes(me)
            split = {k: sorted(getattr(comp, k)) for k in ("decode_cudagraph_capture_request_sizes",
                                                           "prefill_cudagraph_capture_token_sizes")
                     if getattr(comp, k, None) is not None}  # 0.34's split of the sizes, recorded as it is
            resolved = {"resolved_mode": comp.cudagraph_mode.name} if level is not None or mode else {}
            out.append({**p, "sizes": sorted(comp.cudagraph_capture_sizes or []), **split, **resolved})
        except Exception as e:  # noqa: BLE001 - the release's own refusal is the answer for that point
            out.append({**p, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"})
    return out


def _mode(name: str):
    """The release's own CUDAGraphMode member of that name."""
    try:
        from vllm.config.compilation import CUDAGraphMode
    except ImportError:  # 0.10.x: vllm/config/compilation.py has it too, re-exported by vllm.config
        from vllm.config import CUDAGraphMode
    return CUDAGraphMode[name]


def main() -> None:
    from config_defaults import points_main  # this script's folder: sys.path[0]

    points_main(__file__, run, POINTS, GOLDEN,
                "scripts/golden/capture_sizes.py (each release's VllmConfig._set_cudagraph_sizes, on CPU)")


if __name__ == "__main__":
    main()
