#!/usr/bin/env python3
"""Run vLLM's own configuration checks (``EngineArgs.create_engine_config``: ModelConfig,
CacheConfig, ParallelConfig, SpeculativeConfig, SchedulerConfig, VllmConfig) for kvplan's
pre-KV-cache cases, and record what each release says: the exception the process would die
with and vLLM's text, or the values it settled on.

Usage (inside a vLLM venv; CPU only, no GPU, no network)::

    .golden-venvs/vllm-0.34.0/bin/python scripts/golden/precheck_runner.py tests/data/prechecks_vllm.json

Reads ``cases`` from the file and writes ``results[<release>]`` back into it. A case is
``{"name", "model", "options", "env"}`` in kvplan's vocabulary: ``model`` a catalog id (its
``configs/<id>/config.json`` is the model directory), ``options`` kvplan option names (most are
EngineArgs fields of the same name; ``drafter``/``speculative_method``/``num_speculative_tokens``/
``parallel_drafting`` become ``speculative_config``; ``hf_overrides`` is passed as vLLM's and kvplan's --hf-overrides),
``env`` the VLLM_* variables set for that case only. The light venvs lack ``compressed_tensors``,
which vLLM imports to verify any quantization method: cases on quantized checkpoints (gpt-oss,
DeepSeek-V3) give ``hf_overrides: {"quantization_config": null}`` for checks that do not read it.

The platform is forced to vLLM's CpuPlatform (the wheels detect no device here) without its
``check_and_update_config``: the checks recorded are platform-independent and run before it
(``VllmConfig.__post_init__`` ends with ``current_platform.check_and_update_config``). Cases
give the H100 batch defaults explicitly where the scheduler matters (the CPU defaults differ). The
model is never built and no weights are read, so checks made while the model is constructed
(``get_pp_indices``, per-layer asserts) are not run here.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
_ENGINE_KEYS = ("tensor_parallel_size", "pipeline_parallel_size", "max_model_len", "max_num_batched_tokens",
                "max_num_seqs", "kv_cache_dtype", "enable_chunked_prefill", "dtype",
                "decode_context_parallel_size", "disable_sliding_window", "hf_overrides")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.lines.append(record.getMessage())


def _engine_args(case: dict) -> dict:
    opts = dict(case.get("options", {}))
    args = {k: opts.pop(k) for k in _ENGINE_KEYS if k in opts}
    drafter = opts.pop("drafter", None)
    method = opts.pop("speculative_method", None)
    n = opts.pop("num_speculative_tokens", None)
    parallel = opts.pop("parallel_drafting", None)
    if drafter or method:
        spec = {"model": str(CONFIGS / drafter) if drafter else None, "method": method,
                "num_speculative_tokens": n, "parallel_drafting": parallel}
        args["speculative_config"] = {k: v for k, v in spec.items() if v is not None}
    elif n is not None:
        args["speculative_config"] = {"num_speculative_tokens": n}
    opts.pop("kv_cache_memory", None)  # not a config-time value
    if opts:
        raise SystemExit(f"{case['name']}: options the runner does not map: {sorted(opts)}")
    return {"model": str(CONFIGS / case["model"]), "skip_tokenizer_init": True, **args}


def _error(e: BaseException) -> dict:
    out = {"ok": False, "error_type": type(e).__name__, "error": str(e)}
    errors = getattr(e, "errors", None)
    if callable(errors):  # pydantic's ValidationError: vLLM's own exception and text inside
        first = errors()[0]
        inner = (first.get("ctx") or {}).get("error")
        out["inner_type"] = type(inner).__name__ if isinstance(inner, BaseException) else None
        msg = first.get("msg", "")
        out["error"] = str(inner) if isinstance(inner, BaseException) else msg
    return out


def run_case(case: dict) -> dict:
    from vllm.engine.arg_utils import EngineArgs

    saved = {k: os.environ.get(k) for k in case.get("env", {})}
    os.environ.update(case.get("env", {}))
    handler = _Collect()
    logging.getLogger("vllm").addHandler(handler)
    try:
        cfg = EngineArgs(**_engine_args(case)).create_engine_config()
        sched = cfg.scheduler_config
        spec = cfg.speculative_config
        out = {"ok": True, "max_model_len": cfg.model_config.max_model_len,
               "max_num_batched_tokens": sched.max_num_batched_tokens, "max_num_seqs": sched.max_num_seqs,
               "speculative_method": getattr(spec, "method", None),
               "num_speculative_tokens": getattr(spec, "num_speculative_tokens", None)}
        if spec is not None:
            # the field as the config holds it, and whether the drafter drafts in parallel: 0.34.0's
            # speculator config (its ClassVar; dflash's True), else the field itself
            out["parallel_drafting"] = getattr(spec, "parallel_drafting", None)
            speculator = getattr(spec, "speculator_config", None)
            out["drafts_in_parallel"] = bool(getattr(speculator, "parallel_drafting", out["parallel_drafting"]))
    except BaseException as e:  # noqa: BLE001 - every failure is the answer
        out = _error(e)
    finally:
        logging.getLogger("vllm").removeHandler(handler)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    # the checkout's path (a config given by path shows in vLLM's messages) is no part of the answer
    root = str(Path(__file__).resolve().parents[2]) + os.sep
    out["warnings"] = [line.replace(root, "") for line in handler.lines]
    if isinstance(out.get("error"), str):
        out["error"] = out["error"].replace(root, "")
    return out


def main() -> None:
    path = Path(sys.argv[1])
    data = json.loads(path.read_text())
    only = set(sys.argv[2:])
    # a multimodal target's model file imports torchvision, whose CUDA-only build registers fake kernels for ops
    # that cannot load here: kvplan/verify/arch_runner.py's stub skips those registrations (nothing the config
    # checks read), as pp_support.py's cross-check does; the registry inspects the model class in this process
    # (its _run_in_subprocess would import the model file without the stubs)
    sys.path.insert(0, str(REPO))
    from kvplan.verify import arch_runner

    arch_runner._stub_torchvision()
    import vllm
    import vllm.model_executor.models.registry as model_registry

    try:  # where the release has what it patches (vllm.utils.import_utils, the platform's module)
        arch_runner._stub_cuda_only_packages()
    except (ImportError, KeyError):
        pass
    model_registry._run_in_subprocess = lambda fn: fn()
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    class ConfigOnlyCpuPlatform(CpuPlatform):
        """vLLM's CPU platform without its final adjustments (it refuses x86 CPUs without
        triton-cpu); every check recorded here runs before them."""

        @classmethod
        def check_and_update_config(cls, vllm_config) -> None:
            return None

    platforms._current_platform = ConfigOnlyCpuPlatform()
    results = data.setdefault("results", {}).setdefault(vllm.__version__, {})
    for case in data["cases"]:
        if only and case["name"] not in only:
            continue
        results[case["name"]] = run_case(case)
        print(case["name"], json.dumps(results[case["name"]])[:300], file=sys.stderr)
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main()
