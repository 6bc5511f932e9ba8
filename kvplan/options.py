"""Every option kvplan takes, defined once: name, flags, type, bounds, choices, default, help.

The Typer options (``kvplan.cli.params``), the deployments-file validator
(``kvplan.usecases.check.schema``), the library's keyword arguments (``kvplan.simulate(...,
kv_cache_memory="40GiB")``) and the ``vllm serve`` reader all come from this table, and every
value is parsed here, once, into a typed value (``Option.parse``).

Names are vLLM's: the Python name is the long flag with underscores; where vLLM spells the flag
differently (``--kv-cache-memory-bytes``), that spelling is an alias. Like vLLM's
``FlexibleArgumentParser``, the command line also accepts ``--tensor_parallel_size`` spellings
(``normalize_argv``). Sizes and token counts follow vLLM's ``human_readable_int``
(``units.parse_human_int``): ``40G`` = 40 GiB, ``40g`` = 40 GB, ``128k`` = 128,000.

Nothing here imports Typer, Rich or the engines (policies are checked lazily through the era
registry, which is pure).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from kvplan.errors import OptionError
from kvplan.units import CACHE_DTYPES, MODEL_DTYPES, GiB, parse_human_int

# Which commands take an option. "check" = a key of a deployments-file entry (the scenario options).
INSPECT, SIMULATE, FIT, COMPARE, CHECK = "inspect", "simulate", "fit", "compare", "check"
MODEL_CMDS = frozenset({INSPECT, SIMULATE, FIT, COMPARE, CHECK})
PLAN_CMDS = frozenset({SIMULATE, FIT, COMPARE, CHECK})

# Help panels (sections of --help).
SERVING = "Model and serving (vLLM's flags)"
BUDGET = "Memory budget and scheduler (vLLM's flags)"
HARDWARE = "Budget from hardware (when --kv-cache-memory is not given)"
POLICY = "Grouping policy"
CHECKS = "Checks (exit 3 when violated)"
DEVICE = "Allocate on a real device"
WORKLOAD = "Workload"
ENGINES = "Other engines' knobs"
ASK = "Questions"

# Value kinds, each with one parser below.
STR, INT, FLOAT, SIZE, GIB, LENGTH, BOOL, TRISTATE, CHOICE, JSON, POLICY_NAME = (
    "str", "int", "float", "size", "gib", "length", "bool", "tristate", "choice", "json", "policy")


@dataclass(frozen=True)
class Option:
    name: str  # Python name: the keyword of kvplan.simulate(...) and the key in deployments files
    flag: str  # the long flag
    kind: str
    help: str
    default: Any = None  # None = decided later (by the era, the card, the model), see `default_doc`
    aliases: tuple[str, ...] = ()  # other spellings (vLLM's flag name, short forms)
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    commands: frozenset = MODEL_CMDS
    panel: str = SERVING
    metavar: str | None = None
    default_doc: str | None = None  # the default in words when it depends on era/card/model
    scenario: bool = True  # part of one simulation (a Scenario field, a deployments-file key)
    vllm: bool = True  # a flag of `vllm serve` (same name and meaning)
    hidden: bool = False

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.flag, *self.aliases)

    def parse(self, raw: Any) -> Any:
        """``raw`` (a command-line string, a YAML value, a Python value) → the typed value.
        ``None`` stays ``None`` (not given). Raises OptionError naming the flag."""
        if raw is None:
            return None
        try:
            value = _PARSERS[self.kind](self, raw)
        except OptionError:
            raise
        except (ValueError, TypeError) as e:
            raise OptionError(f"{self.flag}: {e}") from None
        self._check_bounds(value)
        return value

    def _check_bounds(self, value: Any) -> None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return
        if self.kind == LENGTH and value == -1:
            return
        if self.minimum is not None and value < self.minimum:
            raise OptionError(f"{self.flag} must be at least {self.minimum:g}, got {value:g}")
        if self.maximum is not None and value > self.maximum:
            raise OptionError(f"{self.flag} must be at most {self.maximum:g}, got {value:g}")


def _str(opt: Option, raw: Any) -> str:
    if not isinstance(raw, str):
        raise ValueError(f"expected a string, got {type_name(raw)}")
    if not raw.strip():
        raise ValueError("must not be empty")
    return raw.strip()


def _int(opt: Option, raw: Any) -> int:
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise ValueError(f"expected an integer, got {type_name(raw)}")
    try:
        return parse_human_int(raw)
    except ValueError as e:
        if "binary suffixes" in str(e):
            raise
        if opt.kind == SIZE:
            raise ValueError(f"cannot read {raw!r} as a size; write e.g. 40GiB, 40G (2**30 each), 40g (10**9 "
                             "each), or bytes") from None
        raise ValueError(f"expected an integer (8192, 8k), got {type_name(raw)}") from None


def _float(opt: Option, raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ValueError(f"expected a number, got {type_name(raw)}")
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"expected a number, got {type_name(raw)}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {raw}")
    return value


def _size(opt: Option, raw: Any) -> int:
    value = _int(opt, raw)
    if value < 0 or (value == 0 and opt.minimum != 0):
        raise ValueError(f"must be positive, got {raw!r}")
    return value


def _gib(opt: Option, raw: Any) -> float:
    """A GPU's memory: a bare number is GiB (``80``), anything with a unit is a size (``80GiB``)."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    text = str(raw).strip()
    try:
        return float(text)
    except ValueError:
        return _size(opt, text) / GiB


def _length(opt: Option, raw: Any) -> int:
    """max_model_len: tokens, or ``auto``/``-1`` (vLLM's ``human_readable_int_or_auto``)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise ValueError(f"expected a number of tokens or 'auto', got {type_name(raw)}")
    if str(raw).strip().lower() in ("auto", "-1"):
        return -1
    try:
        value = parse_human_int(raw)
    except ValueError:
        raise ValueError(f"must be a number of tokens (131072, 128k) or 'auto', got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"must be positive or 'auto', got {raw!r}")
    return value


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def _bool(opt: Option, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in _TRUE + _FALSE:
        return raw.strip().lower() in _TRUE
    raise ValueError(f"expected true or false, got {type_name(raw)}")


def _choice(opt: Option, raw: Any) -> str:
    text = _str(opt, raw)
    if text not in opt.choices:
        raise ValueError(f"'{text}' is not one of: {', '.join(opt.choices)}")
    return text


def _json(opt: Option, raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    try:
        data = json.loads(str(raw))
    except json.JSONDecodeError as e:
        raise ValueError(f"is not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("must be a JSON object such as '{\"kv_connector\": \"NixlConnector\"}'")
    return data


def _policy(opt: Option, raw: Any) -> str:
    from kvplan.engines.vllm.eras import get_era  # pure registry; lazy to keep this module light

    text = _str(opt, raw)
    get_era(text)  # raises OptionError listing the policies
    return text


def type_name(v: Any) -> str:
    """A value's type in words, for error messages: ``a string ('high')``, ``a list``, ``null``."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"a boolean ({str(v).lower()})"
    if isinstance(v, int):
        return f"an integer ({v})"
    if isinstance(v, float):
        return f"a number ({v:g})"
    if isinstance(v, str):
        return f"a string ({v!r})"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    return f"a {type(v).__name__}"


_PARSERS: dict[str, Callable[[Option, Any], Any]] = {
    STR: _str, INT: _int, FLOAT: _float, SIZE: _size, GIB: _gib, LENGTH: _length, BOOL: _bool,
    TRISTATE: _bool, CHOICE: _choice, JSON: _json, POLICY_NAME: _policy,
}


def _spec_methods() -> tuple[str, ...]:
    from kvplan.model.drafters import SPEC_METHODS  # the library's one list

    return tuple(SPEC_METHODS)


_ALL = frozenset({INSPECT, SIMULATE, FIT, COMPARE})

_TABLE: tuple[Option, ...] = (
    # ------------------------------------------------------------------ model and serving
    Option("drafter", "--drafter", STR, metavar="MODEL", vllm=False,
           help="Speculative-decoding drafter (EAGLE, EAGLE3, P-EAGLE head or draft model): id, config.json or dir."),
    Option("speculative_method", "--speculative-method", CHOICE, choices=_spec_methods(), vllm=False,
           help="Speculative method; inferred from the drafter when omitted."),
    Option("num_speculative_tokens", "--num-speculative-tokens", INT, minimum=1, metavar="N",
           help="Tokens proposed per step (MTP layers, Mamba speculative blocks)."),
    Option("block_size", "--block-size", INT, minimum=1, metavar="TOKENS",
           default_doc="the attention backend's preferred size (16; MLA backends 64/128/32)",
           help="Tokens per KV block."),
    Option("attention_backend", "--attention-backend", STR, metavar="NAME",
           help="FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLASHMLA, FLASHMLA_SPARSE, CUTLASS_MLA, FLASHINFER_MLA, TRITON_MLA."),
    Option("kv_cache_dtype", "--kv-cache-dtype", CHOICE, default="auto", choices=tuple(CACHE_DTYPES),
           help="auto (model dtype), bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla, int8, ..."),
    Option("dtype", "--dtype", CHOICE, default="auto", choices=("auto", *MODEL_DTYPES),
           help="Model dtype: auto (config's torch_dtype; bfloat16 when absent), bfloat16, float16, float32."),
    Option("tensor_parallel_size", "--tensor-parallel-size", INT, default=1, minimum=1, aliases=("-tp",), metavar="N",
           help="Tensor-parallel ranks: KV heads per rank = max(1, heads // tp)."),
    Option("pipeline_parallel_size", "--pipeline-parallel-size", INT, default=1, minimum=1, aliases=("-pp",),
           metavar="N", help="Pipeline stages: layers split as vLLM's get_pp_indices."),
    Option("decode_context_parallel_size", "--decode-context-parallel-size", INT, default=1, minimum=1,
           aliases=("-dcp",), metavar="N", commands=PLAN_CMDS,
           help="Decode-context-parallel ranks (within TP): each keeps 1/N of a request's tokens in full and MLA "
           "layers."),
    Option("disable_sliding_window", "--disable-sliding-window", BOOL, default=False,
           help="Every layer becomes full attention, and max_model_len is capped at the window."),
    Option("revision", "--revision", STR, metavar="REV",
           help="Branch, tag or commit for HF-cache or downloaded configs."),
    Option("download", "--download", BOOL, default=False, vllm=False,
           help="Allow fetching config.json from the Hugging Face Hub (network)."),
    # ------------------------------------------------------------------ policy
    Option("policy", "--policy", POLICY_NAME, default="vllm-latest", panel=POLICY, vllm=False, metavar="POLICY",
           commands=PLAN_CMDS,
           help="vLLM era or release: vllm-latest, vllm-1.5, vllm-1.25, vllm-min, vllm==0.18.0, or a proposal."),
    Option("threshold", "--threshold", FLOAT, minimum=0.0, panel=POLICY, vllm=False, metavar="X", commands=PLAN_CMDS,
           help="Override the era's grouping threshold (group size = largest bucket when largest < smallest x X)."),
    # ------------------------------------------------------------------ memory budget and scheduler
    Option("kv_cache_memory", "--kv-cache-memory", SIZE, aliases=("--kv-cache-memory-bytes",), panel=BUDGET,
           commands=PLAN_CMDS, metavar="SIZE",
           help="KV-cache budget per GPU: 40GiB, 40G (=GiB), 40g (=10^9), or bytes."),
    Option("max_model_len", "--max-model-len", LENGTH, panel=BUDGET, commands=PLAN_CMDS, metavar="TOKENS",
           default_doc="the model's derived length",
           help="Tokens per request (131072, 128k, 128K), or 'auto' to fit the budget (vLLM's -1)."),
    Option("max_num_batched_tokens", "--max-num-batched-tokens", INT, minimum=1, panel=BUDGET, commands=PLAN_CMDS,
           metavar="TOKENS", default_doc="vllm serve's for the card: 8192 on H100/H200, 16384 on >=160 GiB (0.33+), "
           "2048 on A100 and smaller",
           help="Tokens per scheduler step."),
    Option("max_num_seqs", "--max-num-seqs", INT, minimum=1, panel=BUDGET, commands=PLAN_CMDS, metavar="N",
           default_doc="vllm serve's for the card: 1024 on >=70 GiB non-A100 cards, 256 otherwise",
           help="Concurrent sequences the scheduler admits."),
    Option("async_scheduling", "--async-scheduling", TRISTATE, panel=BUDGET, commands=PLAN_CMDS,
           default_doc="on, unless vLLM turns it off (the V1 model runner with PP > 1)",
           help="Async scheduling: vLLM >=0.32 reserves 2 x max_num_batched_tokens in sliding/chunked layers "
           "(PP + 1 batches on the V2 runner, PP on V1)."),
    Option("model_runner", "--model-runner", CHOICE, choices=("v1", "v2"), panel=BUDGET, commands=PLAN_CMDS,
           vllm=False, metavar="v1|v2",
           default_doc="the release's: 0.33 V2 unless P-EAGLE's parallel drafting forces V1; V1 before",
           help="vLLM's model runner (VLLM_USE_V2_MODEL_RUNNER); decides the batches in flight with PP."),
    Option("enable_prefix_caching", "--enable-prefix-caching", TRISTATE, panel=BUDGET, commands=PLAN_CMDS,
           default_doc="the era's (hybrid Mamba models: on in 0.33, off before)",
           help="Prefix caching."),
    Option("mamba_cache_mode", "--mamba-cache-mode", CHOICE, choices=("none", "align", "all"), panel=BUDGET,
           commands=PLAN_CMDS, default_doc="from prefix caching",
           help="Mamba/GDN state caching: none, align or all."),
    Option("disable_hybrid_kv_cache_manager", "--disable-hybrid-kv-cache-manager", TRISTATE, panel=BUDGET,
           commands=PLAN_CMDS, default_doc="vLLM decides",
           help="Force the hybrid KV-cache manager off (or explicitly on)."),
    Option("kv_transfer_config", "--kv-transfer-config", JSON, panel=BUDGET, commands=PLAN_CMDS, metavar="JSON",
           help="vLLM's --kv-transfer-config; its kv_connector decides whether the hybrid manager stays on."),
    Option("num_gpu_blocks_override", "--num-gpu-blocks-override", INT, minimum=1, panel=BUDGET,
           commands=frozenset({SIMULATE, CHECK}), metavar="N",
           help="Replace the computed num_blocks."),
    Option("kv_events", "--kv-events", BOOL, default=False, panel=BUDGET, commands=frozenset({SIMULATE, FIT, CHECK}),
           vllm=False, help="vLLM's --kv-events-config is set (turns the hybrid manager off before vLLM PR #37688)."),
    # ------------------------------------------------------------------ hardware budget
    Option("gpu", "--gpu", STR, panel=HARDWARE, commands=PLAN_CMDS, vllm=False, metavar="PRESET",
           help="GPU preset, e.g. H100-80GB, H200-141GB (see `kvplan fit --list-gpus`)."),
    Option("gpu_memory", "--gpu-memory", GIB, minimum=1.0, panel=HARDWARE, commands=PLAN_CMDS, vllm=False,
           metavar="SIZE", help="GPU memory for a card without a preset: 80GiB, or a bare number of GiB."),
    Option("gpu_memory_utilization", "--gpu-memory-utilization", FLOAT, minimum=0.01, maximum=1.0, panel=HARDWARE,
           commands=PLAN_CMDS, metavar="FRACTION", default_doc="the era's: 0.92 from 0.33, 0.9 before",
           help="Fraction of the GPU vLLM may use."),
    Option("weights_memory", "--weights-memory", SIZE, minimum=0, panel=HARDWARE, commands=PLAN_CMDS, vllm=False, metavar="SIZE",
           help="Weights per GPU instead of kvplan's count (vLLM's 'Model loading took' figure)."),
    Option("activation_memory", "--activation-memory", SIZE, minimum=0, panel=HARDWARE, commands=PLAN_CMDS, vllm=False,
           metavar="SIZE", help="Peak activation per GPU instead of kvplan's estimate."),
    Option("non_torch_memory", "--non-torch-memory", SIZE, minimum=0, panel=HARDWARE, commands=PLAN_CMDS, vllm=False,
           metavar="SIZE", help="Non-torch memory per GPU instead of kvplan's estimate."),
    Option("cudagraph_memory", "--cudagraph-memory", SIZE, minimum=0, panel=HARDWARE, commands=PLAN_CMDS, vllm=False,
           metavar="SIZE", help="CUDA-graph reserve per GPU instead of kvplan's estimate (0 for --enforce-eager)."),
    Option("exact_params", "--exact-params", BOOL, default=False, panel=HARDWARE, commands=frozenset({FIT, CHECK}),
           vllm=False, help="Also count parameters on torch's meta device (needs torch) and compare."),
    # ------------------------------------------------------------------ simulate only
    Option("sweep_threshold", "--sweep-threshold", STR, panel=POLICY, commands=frozenset({SIMULATE}), scenario=False,
           vllm=False, metavar="SPEC", help="Thresholds to sweep: start:stop:step (1.0:2.0:0.05) or a list (1.25,1.5)."),
    Option("plot", "--plot", STR, panel=POLICY, commands=frozenset({SIMULATE}), scenario=False, vllm=False,
           metavar="PNG", help="With --sweep-threshold: draw the sweep to this PNG (needs kvplan\\[plot])."),
    Option("explain", "--explain", BOOL, default=False, commands=frozenset({SIMULATE}), scenario=False, vllm=False,
           panel=CHECKS, help="Explain the decision chain in words, with its numbers."),
    Option("require_start", "--require-start", BOOL, default=False, panel=CHECKS, commands=frozenset({SIMULATE}),
           scenario=False, vllm=False, help="Exit 3 if the engine would fail at start-up."),
    Option("fail_on_padding", "--fail-on-padding", FLOAT, minimum=0.0, panel=CHECKS, commands=frozenset({SIMULATE}),
           scenario=False, vllm=False, metavar="PCT", help="Exit 3 if vLLM's padding waste (%) exceeds this."),
    Option("min_concurrency", "--min-concurrency", FLOAT, minimum=0.0, panel=CHECKS, commands=frozenset({SIMULATE}),
           scenario=False, vllm=False, metavar="X", help="Exit 3 if max concurrency is below this."),
    Option("allocate", "--allocate", BOOL, default=False, panel=DEVICE, commands=frozenset({SIMULATE}),
           scenario=False, vllm=False,
           help="Allocate the predicted tensors on a device and verify the layout (needs kvplan\\[gpu])."),
    Option("device", "--device", STR, default="cuda", panel=DEVICE, commands=frozenset({SIMULATE}), scenario=False,
           vllm=False, metavar="DEV", help="cuda, cuda:N or cpu."),
    Option("budget_from_device", "--budget-from-device", BOOL, default=False, panel=DEVICE,
           commands=frozenset({SIMULATE}), scenario=False, vllm=False,
           help="KV budget = free device memory x --gpu-memory-utilization - --reserve."),
    Option("reserve", "--reserve", SIZE, minimum=0, panel=DEVICE, commands=frozenset({SIMULATE}), scenario=False, vllm=False,
           metavar="SIZE", help="With --budget-from-device: memory to leave free (e.g. 2GiB)."),
    # ------------------------------------------------------------------ compare only
    Option("policies", "--policies", STR, default="proposals", panel=POLICY, commands=frozenset({COMPARE}),
           scenario=False, vllm=False, metavar="LIST",
           help="More vLLM rows: 'proposals', 'none', or a comma list of eras, releases and proposals."),
    Option("target_len", "--target-len", LENGTH, panel=WORKLOAD, commands=frozenset({COMPARE}), scenario=False,
           vllm=False, metavar="TOKENS", default_doc="--max-model-len, else the model's length",
           help="Tokens per request of the workload (every engine is evaluated at this length)."),
    Option("target_concurrency", "--target-concurrency", INT, minimum=1, panel=WORKLOAD,
           commands=frozenset({COMPARE}), scenario=False, vllm=False, metavar="N",
           help="Requests of --target-len served at once; the advice says which knobs reach it."),
    Option("swa_full_tokens_ratio", "--swa-full-tokens-ratio", FLOAT, default=0.8, minimum=0.0, maximum=1.0,
           panel=ENGINES, commands=frozenset({COMPARE}), scenario=False, vllm=False, metavar="R",
           help="SGLang: SWA pool tokens per full pool token."),
    Option("sglang_page_size", "--sglang-page-size", INT, default=1, minimum=1, panel=ENGINES,
           commands=frozenset({COMPARE}), scenario=False, vllm=False, metavar="TOKENS",
           help="SGLang: tokens per page (pools are rounded down to it)."),
    Option("trtllm_window_shares", "--trtllm-window-shares", STR, panel=ENGINES, commands=frozenset({COMPARE}),
           scenario=False, vllm=False, metavar="LIST", default_doc="equal shares",
           help="TensorRT-LLM: memory share per window, ascending windows, summing to 1 (e.g. 0.1,0.9)."),
    Option("trtllm_tokens_per_block", "--trtllm-tokens-per-block", INT, default=32, minimum=1, panel=ENGINES,
           commands=frozenset({COMPARE}), scenario=False, vllm=False, metavar="TOKENS",
           help="TensorRT-LLM: tokens per KV block."),
    Option("llamacpp_n_seq", "--llamacpp-n-seq", INT, minimum=1, panel=ENGINES, commands=frozenset({COMPARE}),
           scenario=False, vllm=False, metavar="N",
           default_doc="--target-concurrency, else llama-server's auto (4 slots, unified, sharing n_ctx = L)",
           help="llama.cpp: sequences (-np); n_ctx = target length x n_seq."),
    Option("llamacpp_n_ubatch", "--llamacpp-n-ubatch", INT, default=512, minimum=1, panel=ENGINES,
           commands=frozenset({COMPARE}), scenario=False, vllm=False, metavar="N",
           help="llama.cpp: physical batch (-ub); the SWA cache keeps this much extra."),
    Option("swa_full", "--swa-full", BOOL, default=False, panel=ENGINES, commands=frozenset({COMPARE}),
           scenario=False, vllm=False, help="llama.cpp: full-size SWA cache (every window layer keeps n_ctx cells)."),
    Option("llamacpp_kv_unified", "--llamacpp-kv-unified", TRISTATE, panel=ENGINES, commands=frozenset({COMPARE}),
           scenario=False, vllm=False, default_doc="as llama-server decides: unified for -np auto, per slot for -np N",
           help="llama.cpp: one KV stream shared by all slots (--kv-unified), or one per slot."),
    Option("sglang_disable_overlap_schedule", "--sglang-disable-overlap-schedule", BOOL, default=False,
           panel=ENGINES, commands=frozenset({COMPARE}), scenario=False, vllm=False,
           help="SGLang: --disable-overlap-schedule (one prefill chunk in flight instead of two)."),
    Option("sglang_swa_eviction_interval", "--sglang-swa-eviction-interval", INT, default=128, minimum=1,
           panel=ENGINES, commands=frozenset({COMPARE}), scenario=False, vllm=False, metavar="TOKENS",
           help="SGLang: SGLANG_SWA_EVICTION_INTERVAL (tokens slid out of the window before eviction)."),
    Option("trtllm_scheduler_policy", "--trtllm-scheduler-policy", CHOICE, default="GUARANTEED_NO_EVICT",
           choices=("GUARANTEED_NO_EVICT", "MAX_UTILIZATION"), panel=ENGINES, commands=frozenset({COMPARE}),
           scenario=False, vllm=False, help="TensorRT-LLM: capacity scheduler policy."),
    Option("trtllm_max_num_tokens", "--trtllm-max-num-tokens", INT, default=8192, minimum=1, panel=ENGINES,
           commands=frozenset({COMPARE}), scenario=False, vllm=False, metavar="TOKENS",
           help="TensorRT-LLM: max_num_tokens (sets the temporary attention window of sliding pools)."),
    Option("sglang_version", "--sglang-version", STR, panel=ENGINES, commands=frozenset({COMPARE}), scenario=False,
           vllm=False, metavar="VERSION", default_doc="0.5.23, the release the rules were read from",
           help="SGLang release the rules come from (only 0.5.23 is modelled)."),
    Option("trtllm_version", "--trtllm-version", STR, panel=ENGINES, commands=frozenset({COMPARE}), scenario=False,
           vllm=False, metavar="VERSION", default_doc="1.2.0rc2, the release the rules were read from",
           help="TensorRT-LLM release the rules come from (only 1.2.0rc2 is modelled)."),
    Option("llamacpp_build", "--llamacpp-build", STR, panel=ENGINES, commands=frozenset({COMPARE}), scenario=False,
           vllm=False, metavar="COMMIT", default_doc="0c1e57098, the build the rules were read from",
           help="llama.cpp commit the rules come from (only 0c1e57098 is modelled)."),
    # ------------------------------------------------------------------ fit only
    Option("concurrency", "--concurrency", FLOAT, minimum=0.01, panel=ASK, commands=frozenset({FIT}), scenario=False,
           vllm=False, metavar="N",
           help="N concurrent requests: alone, the longest context for N; with --context-len, the smallest "
           "--gpu-memory-utilization; 'enough' in the GPU table (steady-state concurrency, docs/capacity.md)."),
    Option("context_len", "--context-len", LENGTH, panel=ASK, commands=frozenset({FIT}), scenario=False, vllm=False,
           metavar="TOKENS", help="L tokens per request (needs --concurrency)."),
    Option("gpus", "--gpus", STR, panel=ASK, commands=frozenset({FIT}), scenario=False, vllm=False, metavar="LIST",
           help="Presets for the GPU table, comma-separated (default: all)."),
    Option("tp_sizes", "--tp-sizes", STR, panel=ASK, commands=frozenset({FIT}), scenario=False, vllm=False,
           metavar="LIST", help="Tensor-parallel sizes for the GPU table, e.g. 1,2,4,8."),
    Option("table", "--table", TRISTATE, panel=ASK, commands=frozenset({FIT}), scenario=False, vllm=False,
           default_doc="only when no --gpu is given, or when --gpus/--tp-sizes is",
           help="Draw the GPU table."),
)

OPTIONS: dict[str, Option] = {o.name: o for o in _TABLE}
_BY_FLAG: dict[str, Option] = {f: o for o in _TABLE for f in o.flags}


def find_option(flag_or_name: str) -> Option | None:
    """The option a flag (``--kv-cache-memory-bytes``, ``--tensor_parallel_size``, ``-tp``) or a
    Python name (``kv_cache_memory``) stands for."""
    key = flag_or_name.split("=", 1)[0]
    if key in OPTIONS:
        return OPTIONS[key]
    if key.startswith("--"):
        key = "--" + key[2:].replace("_", "-")
    return _BY_FLAG.get(key)


def options_for(command: str) -> list[Option]:
    return [o for o in _TABLE if command in o.commands]


def scenario_options() -> list[Option]:
    """The options of one simulation: the fields of ``Scenario`` and the keys of a deployments entry."""
    return [o for o in _TABLE if o.scenario]


@dataclass(frozen=True)
class Resolved:
    """Options as a command received them: typed values, and which were given."""

    command: str
    values: dict[str, Any]
    given: frozenset = field(default_factory=frozenset)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def to_dict(self) -> dict:
        """``{name: {"value": v, "given": bool}}`` for the result envelope (table order)."""
        return {name: {"value": _jsonable(v), "given": name in self.given} for name, v in self.values.items()}


def _jsonable(v: Any) -> Any:
    return v if v is None or isinstance(v, (str, int, float, bool, dict, list)) else str(v)


def resolve(command: str, given: dict[str, Any]) -> Resolved:
    """Parse the options a caller gave (by Python name; ``None`` = not given) for ``command``.
    Unknown names are refused with the list of known ones; every value goes through its
    option's parser, so a library call, a flag and a deployments key behave the same."""
    known = {o.name: o for o in options_for(command)}
    unknown = [k for k in given if k not in known]
    if unknown:
        raise OptionError(f"{command}: unknown option(s) {', '.join(sorted(unknown))}; "
                          f"known: {', '.join(sorted(known))}")
    values: dict[str, Any] = {}
    names: set[str] = set()
    for name, opt in known.items():
        raw = given.get(name)
        if raw is None:
            values[name] = opt.default
        else:
            values[name] = opt.parse(raw)
            names.add(name)
    return Resolved(command, values, frozenset(names))


def normalize_argv(argv: list[str]) -> list[str]:
    """vLLM's FlexibleArgumentParser rule: ``--tensor_parallel_size=2`` is ``--tensor-parallel-size=2``
    (only the flag name changes; values keep their underscores)."""
    out = []
    for arg in argv:
        if arg.startswith("--") and "_" in arg.split("=", 1)[0]:
            name, sep, value = arg.partition("=")
            arg = "--" + name[2:].replace("_", "-") + sep + value
        out.append(arg)
    return out
