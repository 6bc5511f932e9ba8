#!/usr/bin/env python3
"""The default max_num_seqs / max_num_batched_tokens each release resolves, by running its own ``EngineArgs`` code.

Run inside a release environment (``--run``: imports vLLM, never kvplan) it reads the points as JSON on stdin and, per
point, calls the release's ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`` (``vllm serve``'s usage
context, OPENAI_API_SERVER) on a stand-in for the engine arguments (TP 1, PP 1, the point's batch sizes, chunked prefill
and ``performance_mode``), with the release's own ``EngineArgs.get_batch_defaults`` reading a stand-in platform: a card
of the point's memory (bytes) and name, neither a TPU nor the CPU (the card tables are the GPU ones). The model config
is a stand-in too: the point's max_model_len, not multimodal; the parallel config (0.29+): no batched DP MoE. It prints
the ``max_num_batched_tokens`` and ``max_num_seqs`` the method leaves, or the error it raises. Run from kvplan's
environment it runs every release named (``make_goldens.release_python``) and writes
``tests/golden/scheduler/batch_defaults.json``::

    RELEASE_BASE=.golden-venvs/rel-base RELEASE_SRC=.golden-venvs/rel-src \\
        python scripts/golden/batch_defaults.py 0.17.0 0.20.2 0.23.0
    RELEASE_BASE=.golden-venvs/rel-base5 RELEASE_SRC=.golden-venvs/rel-src \\
        python scripts/golden/batch_defaults.py 0.24.0 0.29.0 0.34.0

(each run merges its releases into the file). A point: ``card`` (a kvplan GPU preset: its memory and name feed the
stand-in platform), ``L`` (max_model_len), ``R`` / ``T`` (max_num_seqs / max_num_batched_tokens as given, None: the
default), ``chunked`` (enable_chunked_prefill) and ``performance_mode`` (0.17.0+: throughput doubles a default).
"""

from __future__ import annotations

from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "scheduler" / "batch_defaults.json"

# the card presets' memory as kvplan holds it (kvplan.budget.hardware.GPU_PRESETS), bytes
CARDS = {"H100-80GB": 85027979264, "A100-80GB": 85169201480, "L40S-48GB": 47803531264, "B200-180GB": 191514017792}
POINTS = [{"card": card, "L": 4096, "R": None, "T": None, "chunked": True, "performance_mode": mode}
          for card in CARDS for mode in ("balanced", "throughput")]
POINTS += [
    # a given size is kept, the other doubled
    {"card": "H100-80GB", "L": 4096, "R": 256, "T": None, "chunked": True, "performance_mode": "throughput"},
    {"card": "H100-80GB", "L": 4096, "R": None, "T": 2048, "chunked": True, "performance_mode": "throughput"},
    # the caps after the doubling: tokens ≤ seqs · max_model_len (2048 · 4 = 8192 < 16384), seqs ≤ tokens
    {"card": "H100-80GB", "L": 4, "R": None, "T": None, "chunked": True, "performance_mode": "throughput"},
    {"card": "H100-80GB", "L": 4, "R": 100, "T": None, "chunked": True, "performance_mode": "throughput"},
    # without chunked prefill the token default is raised to max_model_len (40960 > 16384)
    {"card": "H100-80GB", "L": 40960, "R": None, "T": None, "chunked": False, "performance_mode": "throughput"},
    {"card": "L40S-48GB", "L": 40960, "R": None, "T": None, "chunked": False, "performance_mode": "balanced"},
]


def run(points: list[dict]) -> list[dict]:
    """Inside a release environment: each point's batch sizes by the release's own code."""
    import inspect
    from types import SimpleNamespace

    import vllm.engine.arg_utils as arg_utils
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    class Platform(SimpleNamespace):
        """The stand-in platform: the card's answers; a query it lacks is recorded (the release's code swallows it)."""

        def __init__(self, missing: list, **kw):
            super().__init__(**kw)
            self._missing = missing

        def __getattr__(self, name):
            self._missing.append(name)
            raise AttributeError(name)

    method = EngineArgs._set_default_max_num_seqs_and_batched_tokens_args
    out = []
    for p in points:
        card = p["card"]
        missing: list[str] = []
        arg_utils.current_platform = Platform(
            missing, get_device_total_memory=lambda device_id=0, m=CARDS[card]: m,
            get_device_name=lambda device_id=0, n=card: n, is_tpu=lambda: False, is_cpu=lambda: False,
            is_device_capability=lambda capability, device_id=0: False)  # 0.34: GB10 (12.1) only
        try:
            if "performance_mode" not in getattr(EngineArgs, "__dataclass_fields__", {}):
                raise TypeError("no performance_mode before 0.17.0")
            me = SimpleNamespace(pipeline_parallel_size=1, tensor_parallel_size=1, max_num_seqs=p["R"],
                                 max_num_batched_tokens=p["T"], enable_chunked_prefill=p["chunked"],
                                 performance_mode=p["performance_mode"],
                                 get_batch_defaults=EngineArgs.get_batch_defaults)
            model = SimpleNamespace(max_model_len=p["L"], is_multimodal_model=False, is_mm_prefix_lm=False)
            args = [me, UsageContext.OPENAI_API_SERVER, model]
            if "parallel_config" in inspect.signature(method).parameters:
                args.append(SimpleNamespace(use_batched_dp_moe=False))
            method(*args)
            if missing:  # get_batch_defaults swallows a failing platform query (memory 0): not a stand-in's answer
                raise RuntimeError(f"the stand-in platform lacks {', '.join(missing)}")
            out.append({**p, "max_num_batched_tokens": me.max_num_batched_tokens, "max_num_seqs": me.max_num_seqs})
        except Exception as e:  # noqa: BLE001 - the release's own refusal is the answer for that point
            out.append({**p, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"})
    return out


def main() -> None:
    from config_defaults import points_main  # this script's folder: sys.path[0]

    points_main(__file__, run, POINTS, GOLDEN,
                "scripts/golden/batch_defaults.py (each release's "
                "EngineArgs._set_default_max_num_seqs_and_batched_tokens_args, on CPU)")


if __name__ == "__main__":
    main()
