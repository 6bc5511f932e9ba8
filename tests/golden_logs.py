"""Start-up logs built from the vLLM golden runner's output (tests/golden/*.json).

``result.logs`` holds every log line the release printed while planning the KV cache; the
case holds what a user passes to ``vllm serve``. ``golden_log`` prints both as vLLM's logger
would (process prefix, level, date, file:line) around the lines vLLM itself wrote: the
release line, the ``non-default args`` dict, the available KV memory (or
``kv_cache_memory_bytes``), the batch-size line, then the planning lines verbatim and the
start-up error as the engine core prints it.
"""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"
GiB = 1 << 30

# speculative settings the golden generator passed to `kvplan inspect` (scripts/golden/make_goldens.py
# inspect_args); the case JSON keeps only the drafter id
_SPEC_ARGS = {
    "qwen3-next-mtp2": {"method": "mtp", "num_speculative_tokens": 2},
    "llama-3.1-8b-eagle3": {"num_speculative_tokens": 3},
    "mistral-7b-eagle3": {"num_speculative_tokens": 3},
    # The gpt-oss drafter goldens were planned from `kvplan inspect` without tokens: the attention
    # layout, and so every figure vLLM printed, does not depend on them. vLLM refuses a draft model
    # without num_speculative_tokens at start-up, so the serve args a real log shows carry them:
    # 5 for P-EAGLE (the README's examples), 3 for EAGLE-3 heads (as the Llama goldens).
    "gpt-oss-20b-peagle": {"num_speculative_tokens": 5},
    "gpt-oss-20b-eagle3": {"num_speculative_tokens": 3},
    "gpt-oss-120b-eagle3": {"num_speculative_tokens": 3},
}


def golden_cases() -> list[Path]:
    return sorted(p for p in GOLDEN_DIR.glob("*__*.json") if "case" in json.loads(p.read_text()))


def _line(level: str, where: str, message: str, proc: str = "EngineCore_DP0 pid=4242") -> str:
    return f"({proc}) {level} 12-03 07:00:00 [{where}] {message}"


def _args(case: dict, exact_budget: bool, version: str) -> dict:
    from kvplan.engines.vllm.releases import era_of_release
    from kvplan.verify.case import case_parallel_drafting

    args: dict = {"model_tag": case["model"], "model": case["model"], "max_model_len": case["max_model_len"]}
    name = case["case"].split("__")[0]
    spec = dict(_SPEC_ARGS.get(name, {}))
    if case.get("drafter"):
        spec["model"] = case["drafter"]
    parallel = case_parallel_drafting(case, era_of_release(version))
    if parallel is not None:  # the serve line set speculative_config.parallel_drafting (the probe ran with it)
        spec["parallel_drafting"] = parallel
    if spec:
        args["speculative_config"] = spec
    for key in ("tensor_parallel_size", "pipeline_parallel_size", "decode_context_parallel_size"):
        if case.get(key, 1) != 1:
            args[key] = case[key]
    args["enable_prefix_caching"] = case["enable_prefix_caching"]
    args["async_scheduling"] = case["async_scheduling"]
    if case.get("disable_hybrid_kv_cache_manager"):
        args["disable_hybrid_kv_cache_manager"] = True
    if case.get("mamba_cache_mode") not in (None, "none"):
        args["mamba_cache_mode"] = case["mamba_cache_mode"]
    if case.get("num_gpu_blocks_override") is not None:
        args["num_gpu_blocks_override"] = case["num_gpu_blocks_override"]
    if exact_budget:
        args["kv_cache_memory_bytes"] = case["available_memory_bytes"]
    return args


def golden_log(golden: dict, *, exact_budget: bool = False) -> str:
    case, result = golden["case"], golden["result"]
    version = golden["vllm_version"]
    mem = case["available_memory_bytes"]
    mem = mem if isinstance(mem, int) else mem[0]
    api = "APIServer pid=1"
    lines = [
        _line("INFO", "api_server.py:1839", f"vLLM API server version {version}", api),
        _line("INFO", "utils.py:328", f"non-default args: {_args(case, exact_budget, version)!r}", api),
        _line("INFO", "scheduler.py:220",
              f"Chunked prefill is enabled with max_num_batched_tokens={case['max_num_batched_tokens']}."),
    ]
    if not exact_budget:
        lines.append(_line("INFO", "gpu_worker.py:298", f"Available KV cache memory: {round(mem / GiB, 2)} GiB"))
    for entry in result["logs"]:
        where = entry["logger"].rsplit(".", 1)[-1] + ".py:900"
        lines.append(_line(entry["level"], where, entry["message"]))
    error = result.get("error") or (result.get("drafter_check") or {}).get("error")
    if error:
        path, _, func = error["where"].partition(":")
        lines.append(_line("ERROR", "core.py:708", "EngineCore failed to start."))
        lines.append("(EngineCore_DP0 pid=4242) Traceback (most recent call last):")
        lines.append(f'(EngineCore_DP0 pid=4242)   File "/usr/lib/python3.12/site-packages/{path}", line 700, in {func}')
        lines.append(f"(EngineCore_DP0 pid=4242) {error['type']}: {error['message']}")
    return "\n".join(lines) + "\n"
