"""What vLLM's messages and log lines say, release by release (``Era.messages`` names the
first release of each wording). Wording only: no behaviour depends on it.

Texts read in each release's ``kv_cache_utils.py`` / ``kv_cache_planning.py``,
``config/vllm.py`` and EAGLE proposer, and checked against the goldens.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.frozen import dataclass

DOCS_URL = "https://docs.vllm.ai/en/latest/configuration/conserving_memory/"
_SEE = f"See {DOCS_URL} for more details."
_TRY = "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
_CPU_TRY = ("Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
            "decreasing `max_model_len` when initializing the engine.")
_NOMEM = "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine"
_HINT_034 = ("Try increasing `gpu_memory_utilization` when initializing the engine (this flag also controls CPU "
             "memory reservation on the CPU backend, despite its name).")

KV_TRANSFER_WARNING_011 = (
    "Turning off hybrid kv cache manager because `--kv-transfer-config` is set. This will "
    "reduce the performance of vLLM on LLMs with sliding window attention or Mamba attention. "
    "If you are a developer of kv connector, please consider supporting hybrid kv cache "
    "manager for your connector by making sure your connector is a subclass of `SupportsHMA` "
    "defined in kv_connector/v1/base.py."
)
KV_TRANSFER_WARNING_013 = KV_TRANSFER_WARNING_011[:-1] + " and use --no-disable-hybrid-kv-cache-manager to start vLLM."
KV_TRANSFER_WARNING_022 = (
    "Turning off hybrid kv cache manager because connector {connector} does not subclass `SupportsHMA`. "
    "This will reduce performance on models with sliding window or Mamba attention. See "
    "kv_connector/v1/base.py for details."
)
KV_TRANSFER_WARNING_023 = (
    "Turning off hybrid kv cache manager because `--kv-transfer-config` selects a KV connector that does not "
    "support it. Impact: hybrid SSM models (e.g. Jamba, Bamba) require HMA and will fail at startup without it; "
    "models with sliding window attention will run with reduced performance. To add HMA support to a KV "
    "connector, subclass `SupportsHMA` defined in kv_connector/v1/base.py (for MultiConnector, all child "
    "connectors must support HMA)."
)


# Decode-context-parallel config checks (run in each release: tests/data/prechecks_vllm.json; every
# one reaches the user as pydantic's ValidationError). ``tp``: ParallelConfig._validate_parallel_config
# (0.18.0 config/parallel.py lines 416-420, whose f-strings join without a space: "divisible bydcp_size";
# 0.33.0 line 600; 0.34.0 line 641). The others: ModelConfig.verify_with_parallel_config for GQA/MQA
# (MLA is exempt): bare asserts in 0.18.0 (config/model.py lines 1090-1113), ValueErrors with new texts
# in 0.33.0 (lines 1578-1607) and 0.34.0 (lines 1598-1627). Pinned at the checked releases, not bisected.
DCP_TEXTS = {
    "0.18": {
        "tp": "tp_size={tp} must be divisible bydcp_size={dcp}.",
        "tp_gt_kv": ("tensor parallel size {tp} must be greater than total num kv heads {kv} when enable decode "
                     "context parallel for GQA/MQA"),
        "max": ("decode context parallel size must less than or equal to (tensor parallel size {tp} // total num kv "
                "heads {kv}) = {max_dcp}, but got {dcp}"),
        "q_per_kv": ("Total number of q per kv attn heads ({q}) must be divisible by dcp world size when enable "
                     "decode context parallel for GQA ({dcp})."),
    },
    "0.33": {
        "tp": "tp_size={tp} must be divisible by dcp_size={dcp}.",
        "tp_gt_kv": ("Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` ({tp}) to be greater "
                     "than the model's total number of KV heads ({kv}). Increase `--tensor-parallel-size` or set "
                     "`--decode-context-parallel-size 1`."),
        "max": ("`--decode-context-parallel-size` ({dcp}) exceeds the maximum supported value ({max_dcp}) for "
                "`--tensor-parallel-size` ({tp}) and {kv} model KV heads."),
        "q_per_kv": ("The model's number of query heads per KV head ({q}) must be divisible by "
                     "`--decode-context-parallel-size` ({dcp}) for GQA/MQA."),
    },
}


@dataclass(frozen=True)
class Wording:
    possessive: str  # "models's" (to 0.21) | "model's"
    gib: str  # "%.2f" (to 0.13) | "round" (format_gib: round(x, 2))
    # to 0.13 the estimate sentence had no trailing space and the template put one after it
    estimate_trailing_space: bool
    admission_hint: str  # after the estimate
    no_memory: str
    drafter_split: str
    kv_transfer_warning: str
    hma_flag: str
    autofit: str  # "0.14" | "0.32" | "0.34"
    autofit_none: str  # the "Cannot auto-fit" error
    # SpeculativeConfig with a draft model and no num_speculative_tokens/n_predict (run in each
    # release: tests/data/prechecks_vllm.json): 0.18.0 also names speculative_token_tree
    # (speculative.py line 567); 0.33.0 line 1617; 0.34.0 spec_decode/speculator_config.py line 223.
    # Pinned at the checked releases, not bisected.
    spec_tokens_missing: str = ("A speculative model was provided, but neither `speculative_token_tree` nor "
                                "`num_speculative_tokens` was provided")
    dcp: str = "0.18"  # DCP_TEXTS


WORDINGS: dict[str, Wording] = {}
WORDINGS["0.10"] = Wording(
    possessive="models's", gib="%.2f", estimate_trailing_space=False, admission_hint=_TRY,
    no_memory=_NOMEM + ".", drafter_split="All eagle layers should belong to the same kv cache group",
    kv_transfer_warning=KV_TRANSFER_WARNING_011, hma_flag="--no-disable-hybrid-kv-cache-manager", autofit="0.14",
    autofit_none="Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. "
                 "Try increasing `gpu_memory_utilization`.",
)
WORDINGS["0.13"] = replace(WORDINGS["0.10"], admission_hint=f"{_TRY} {_SEE}", no_memory=f"{_NOMEM}. {_SEE}",
                           kv_transfer_warning=KV_TRANSFER_WARNING_013)
WORDINGS["0.14"] = replace(WORDINGS["0.13"], gib="round", estimate_trailing_space=True)
WORDINGS["0.15"] = replace(WORDINGS["0.14"], drafter_split="All drafting layers should belong to the same kv cache group")
WORDINGS["0.22"] = replace(
    WORDINGS["0.15"], possessive="model's", admission_hint=f"{_CPU_TRY} {_SEE}",
    no_memory=_NOMEM + " (this flag also controls CPU memory reservation on the CPU backend, despite its name). "
    + _SEE, kv_transfer_warning=KV_TRANSFER_WARNING_022)
WORDINGS["0.23"] = replace(WORDINGS["0.22"], kv_transfer_warning=KV_TRANSFER_WARNING_023)
WORDINGS["0.32"] = replace(WORDINGS["0.23"], autofit="0.32")
WORDINGS["0.33"] = replace(WORDINGS["0.32"], hma_flag="--enable-hybrid-kv-cache-manager",
                           spec_tokens_missing="A speculative model was provided, but `num_speculative_tokens` was not "
                                               "provided", dcp="0.33")
WORDINGS["0.34"] = replace(
    WORDINGS["0.33"], autofit="0.34",
    admission_hint=f"{_HINT_034} Decreasing `max_model_len` also reduces what is needed. {_SEE}",
    no_memory=f"No available memory for the cache blocks. {_HINT_034} {_SEE}",
    autofit_none="Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. "
                 + _HINT_034,
)


def wording(era) -> Wording:
    return WORDINGS[era.messages]


def dcp_text(era, key: str, **values) -> str:
    """A decode-context-parallel check's text in ``era``'s release (``DCP_TEXTS``)."""
    return DCP_TEXTS[wording(era).dcp][key].format(**values)


def _gib(w: Wording, n: int) -> str:
    return f"{n / 2**30:.2f}" if w.gib == "%.2f" else str(round(n / 2**30, 2))


def not_enough_memory(era, max_model_len: int, needed: int, available: int, estimate: int) -> str:
    w = wording(era)
    est = f"Based on the available memory, the estimated maximum model length is {estimate}." if estimate > 0 else ""
    est = (est + " " if est else "") if w.estimate_trailing_space else est + " "
    return (
        f"To serve at least one request with the {w.possessive} max seq len ({max_model_len}), "
        f"({_gib(w, needed)} GiB KV cache is needed, which is larger than the available KV cache memory "
        f"({_gib(w, available)} GiB). {est}{w.admission_hint}"
    )


def autofit_lines(era, original: int, best: int, avail_gib: float) -> tuple[str, ...]:
    """The auto-fit log line(s): full length fits (best >= original) or reduced."""
    w = wording(era)
    if w.autofit == "0.14":
        if best >= original:
            return (f"Auto-fit max_model_len: full model context length {original} fits in available GPU memory",)
        return (f"Auto-fit max_model_len: reduced from {original} to {best} to fit in available GPU memory "
                f"({avail_gib} GiB available for KV cache)",)
    mem = f"{avail_gib} GiB GPU"
    if best >= original:
        return (f"Auto-fit max_model_len: full model context length {original} fits in available KV cache memory "
                f"({mem})",)
    if w.autofit == "0.32":
        return (f"Auto-fit max_model_len: reduced from {original} to {best} to fit in available KV cache memory "
                f"({mem})",)
    line = f"--max-model-len auto reduced max_model_len from {original} to {best} ({mem} available for the KV cache)."
    if best >= 8192:  # AUTO_FIT_SHORT_MAX_MODEL_LEN
        return (line,)
    return (f"{line} Requests longer than {best} tokens will be rejected. Increase `gpu_memory_utilization` or set "
            "--max-model-len explicitly.",)


def log_line_meanings(era) -> dict[str, str]:
    """What each start-up log line vLLM prints about the KV cache means in ``era``'s releases,
    keyed by the kind ``kvplan.logs.extract`` gives the line. Built from the era's decision
    fields (``kv_size_log``, ``admission``, ``null_block_in_check``, ``in_flight_batches``,
    ``override_before_check``, ``cudagraph_memory_in_profile``), so a meaning changes exactly
    where the registry says the behaviour did."""
    span = f"{era.releases[0]}-{era.releases[-1]}" if len(era.releases) > 1 else (era.releases or ("?",))[0]
    window = ("window + max_concurrent_batches x max_num_batched_tokens" if era.in_flight_batches
              else "window + max_num_batched_tokens")
    if era.kv_size_log == "concurrency":
        size = (f"int(max_concurrency x max_model_len) in {span}: the tokens of max-length requests that fit, "
                "not the pool (it counts a sliding layer's reservation, not its blocks)")
    else:
        size = (f"num_blocks // num_groups x block_size in {span}: one group's blocks in tokens (the pool's "
                "size, padding slots included), not what requests can use")
    if era.admission == "per_layer":
        need = "the sum of every layer's own reservation for one max_model_len request, before grouping"
    elif era.admission == "first_group":
        need = "group_size x page_size x the first group's blocks for one max_model_len request"
    else:
        need = "bytes_per_block x the blocks one max_model_len request takes in every group"
    if era.null_block_in_check:
        need += "; available = the KV memory minus one block (the null block)"
    override = ("--num-gpu-blocks-override becomes the available memory before auto-fit and the admission check"
                if era.override_before_check else "--num-gpu-blocks-override replaces num_blocks after the check")
    available = ("per GPU: gpu_memory_utilization x total - weights - peak activation - non-torch memory"
                 + (" - the CUDA-graph estimate" if era.cudagraph_memory_in_profile else ""))
    if era.extensible_kv_cache:
        available += ("; with the extensible KV cache (the default) only the reservation, at utilization 1.0: "
                      "the size is the 'Memory after warmup' line's")
    return {
        "available_kv_memory": available,
        "kv_cache_measured": ("the extensible KV cache's size, measured after warmup and CUDA-graph capture: "
                              "min(requested - used, free + committed - margin) - the transient reserve, in whole "
                              "blocks (docs/fit.md)"),
        "kv_cache_memory_reserved": "per GPU, as --kv-cache-memory-bytes gave it (no profiling)",
        "kv_cache_size": size,
        "concurrency": ("num_blocks / the blocks one max_model_len request reserves in every group "
                        f"(full: the length; sliding/chunked: {window}); a prefill-time figure"),
        "padding": ("group_size - the layers of a bucket, as empty slots in every block; P = padding / layers x 100, "
                    "an upper bound"),
        "override": f"num_blocks computed from the available memory; {override}",
        "autofit": "the largest max_model_len whose admission need fits the available KV memory (binary search)",
        "admission_error": f"needed = {need}",
        "admission_error_tokens": "the pool in tokens is smaller than one max_model_len request",
        "num_gpu_blocks": "blocks in the pool (V0 and early V1 logs)",
        "drafter_split": "the EAGLE proposer's check that every drafting layer is in one KV cache group",
        "hma_off": "the hybrid KV cache manager is turned off: sliding/chunked layers keep the whole length",
        "hma_off_converted": "every layer became full attention (one group type): no sliding-window savings",
        "dcp_multiply": "the size line is multiplied by the decode-context-parallel world size",
        "exception": "the exception start-up ended with (its type; the text is in the facts)",
        "cuda_graph": "CUDA graph memory captured after the KV cache was sized",
        "cuda_graph_profiled": "CUDA graph memory counted in the profile, so taken from the KV budget",
    }
