"""One simulation described as the user states it (CLI flags or a `check` YAML entry),
and the run that turns it into a layout, a plan and the report dict.

Field names are the long CLI flags with underscores, so `kvplan check` files use
the same words as `kvplan simulate`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

from kvplan.errors import OptionError


@dataclass(frozen=True)
class Scenario:
    model: str
    drafter: str | None = None
    speculative_method: str | None = None
    num_speculative_tokens: int | None = None
    block_size: int | None = None
    attention_backend: str | None = None
    kv_cache_dtype: str = "auto"
    dtype: str = "auto"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    decode_context_parallel_size: int = 1
    disable_sliding_window: bool = False
    revision: str | None = None
    download: bool = False
    policy: str = "vllm-latest"
    threshold: float | None = None
    kv_cache_memory: str | int | None = None
    max_model_len: str | int | None = None
    max_num_batched_tokens: int | None = None  # None: vLLM's default for the GPU (8192 on H100/H200)
    max_num_seqs: int | None = None  # None: vLLM's default for the GPU (1024 on H100/H200)
    async_scheduling: bool | None = None  # None: vLLM's default (on, unless the V1 runner runs PP > 1)
    model_runner: str | None = None  # "v1" | "v2" (VLLM_USE_V2_MODEL_RUNNER); None: the release's default
    enable_prefix_caching: bool | None = None
    mamba_cache_mode: str | None = None
    disable_hybrid_kv_cache_manager: bool | None = None
    kv_transfer_config: str | dict | None = None
    num_gpu_blocks_override: int | None = None
    kv_events: bool = False
    # hardware budget (used when kv_cache_memory is not given)
    gpu: str | None = None
    gpu_memory: float | None = None  # GiB
    gpu_memory_utilization: float | None = None
    budget_overrides: dict = field(default_factory=dict)

    def batch_sizes(self) -> tuple[int, int]:
        """``(max_num_batched_tokens, max_num_seqs)``: as given, else what ``vllm serve`` picks
        for the card (``--gpu``/``--gpu-memory``), else the H100/H200 defaults (8192, 1024)."""
        tokens, seqs = self.max_num_batched_tokens, self.max_num_seqs
        if tokens is None or seqs is None:
            from kvplan.api import resolve_era
            from kvplan.hardware import vllm_batch_defaults

            large = resolve_era(self.policy, None).messages == "0.33"  # the ≥160 GiB tier is 0.33's
            d_tokens, d_seqs = vllm_batch_defaults(self.gpu, self.gpu_memory, large_tier=large)
            tokens, seqs = tokens or d_tokens, seqs or d_seqs
        return tokens, seqs

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


@dataclass
class ScenarioResult:
    scenario: Scenario
    layout: object
    plan: object
    data: dict
    budget: dict | None = None


def serving_of(s: Scenario):
    from kvplan.cli.common import serving_options

    return serving_options(
        block_size=s.block_size, attention_backend=s.attention_backend, kv_cache_dtype=s.kv_cache_dtype,
        dtype=s.dtype, tensor_parallel_size=s.tensor_parallel_size, pipeline_parallel_size=s.pipeline_parallel_size,
        speculative_method=s.speculative_method, num_speculative_tokens=s.num_speculative_tokens,
        disable_sliding_window=s.disable_sliding_window,
    )


def _size(value, flag: str) -> int:
    from kvplan.cli.common import parse_size

    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise OptionError(f"{flag} must be positive, got {value}")
        return value
    return parse_size(str(value), flag)


MODEL_RUNNERS = ("v1", "v2")


def model_runner_flag(value: str | None) -> bool | None:
    """``--model-runner v1|v2`` → vLLM's ``VLLM_USE_V2_MODEL_RUNNER`` (None: not set)."""
    if value is None:
        return None
    v = str(value).strip().lower()
    if v not in MODEL_RUNNERS:
        raise OptionError(f"--model-runner must be v1 or v2, got {value!r}")
    return v == "v2"


def simulate_options(s: Scenario, kv_bytes: int, max_model_len: int | None):
    """The engine's options for ``s`` with a resolved budget and length (-1 = auto-fit)."""
    from kvplan.cli.common import mamba_cache_mode, parse_kv_transfer_config
    from kvplan.engines.vllm import SimulateOptions

    batched, seqs = s.batch_sizes()
    ktc = s.kv_transfer_config
    ktc = parse_kv_transfer_config(ktc) if isinstance(ktc, str) else ktc
    return SimulateOptions(
        kv_cache_memory_bytes=kv_bytes,
        max_model_len=max_model_len,
        max_num_batched_tokens=batched,
        max_num_seqs=seqs,
        async_scheduling=s.async_scheduling,
        use_v2_model_runner=model_runner_flag(s.model_runner),
        decode_context_parallel_size=s.decode_context_parallel_size,
        tensor_parallel_size=s.tensor_parallel_size,
        enable_prefix_caching=s.enable_prefix_caching,
        mamba_cache_mode=mamba_cache_mode(s.mamba_cache_mode),
        disable_hybrid_kv_cache_manager=s.disable_hybrid_kv_cache_manager,
        kv_transfer_config=ktc,
        num_gpu_blocks_override=s.num_gpu_blocks_override,
        kv_events=s.kv_events,
        # the same environment variable vLLM reads (default 1 since vLLM PR #29627)
        allow_chunked_local_with_hma=os.environ.get("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE", "1") != "0",
    )


def plan_scenario(s: Scenario, layout, era, kv_bytes: int, max_model_len: int | None):
    """One vLLM simulation of ``s`` on a built layout and a resolved budget."""
    from kvplan.api import plan_layout

    return plan_layout(layout, era, simulate_options(s, kv_bytes, max_model_len),
                       disable_sliding_window=s.disable_sliding_window)


def hardware_budget(s: Scenario, layout, era) -> dict:
    """The estimated KV budget per GPU for ``s`` on its card (``kvplan.hardware.kv_budget``)."""
    from kvplan.hardware import kv_budget

    overrides = dict(s.budget_overrides or {})
    exact = bool(overrides.pop("exact_params", False))
    batched, seqs = s.batch_sizes()
    return kv_budget(
        layout, era, gpu=s.gpu, gpu_memory_gib=s.gpu_memory, gpu_memory_utilization=s.gpu_memory_utilization,
        overrides=overrides, tensor_parallel_size=s.tensor_parallel_size,
        max_num_batched_tokens=batched, max_num_seqs=seqs, exact_params=exact,
    )


def deployment_fixes(s: Scenario, layout, era, plan, budget: dict | None) -> list[dict]:
    """The smallest verified changes that make a failing deployment start (none when it starts)."""
    if plan.starts:
        return []
    from kvplan.api import plan_layout
    from kvplan.engines.vllm.fixes import smallest_fixes

    fixes = smallest_fixes(plan, lambda o: plan_layout(layout, era, o, disable_sliding_window=s.disable_sliding_window))
    if budget is not None and s.kv_cache_memory is None:
        from kvplan.fit import utilization_fix

        fix = utilization_fix(s, layout, era, budget, plan)
        if fix is not None:
            fixes.append(fix)
    return fixes


def run_scenario(s: Scenario, *, explain: bool = False, layout=None) -> ScenarioResult:
    """Build the layout (unless given), resolve the budget, simulate, and report."""
    from kvplan.api import resolve_era
    from kvplan.cli.common import parse_max_model_len
    from kvplan.model import build_model_layout
    from kvplan.report.data import plan_dict
    from kvplan.report.explain import explain as explain_plan

    serving = serving_of(s)
    era = resolve_era(s.policy, s.threshold)
    if layout is None:
        layout = build_model_layout(s.model, s.drafter, serving, revision=s.revision, download=s.download)
    budget = None
    if s.kv_cache_memory is not None:
        kv_bytes = _size(s.kv_cache_memory, "--kv-cache-memory")
    elif s.gpu is not None or s.gpu_memory is not None:
        budget = hardware_budget(s, layout, era)
        kv_bytes = budget["kv_cache_memory_bytes"]
    else:
        raise OptionError("no KV-cache budget: pass --kv-cache-memory (e.g. 40GiB) or --gpu (e.g. H100-80GB)")
    mml = s.max_model_len
    mml = parse_max_model_len(str(mml)) if mml is not None else None
    plan = plan_scenario(s, layout, era, kv_bytes, mml)
    fixes = deployment_fixes(s, layout, era, plan, budget)
    data = plan_dict(layout, plan, serving, explain_plan(plan) if explain else None, fixes)
    if budget is not None:
        data["budget"] = budget
    return ScenarioResult(s, layout, plan, data, budget)
