#!/usr/bin/env python3
"""Run vLLM's own KV-cache layout functions on one case (CPU only, no model, no GPU).

This script runs INSIDE an environment that has vLLM (a golden venv made by
``scripts/golden/setup_venvs.sh``, or the user's for ``kvplan simulate --cross-check``), as a
standalone script: it imports nothing from kvplan (that interpreter need not have kvplan), and
kvplan never imports it. It builds the release's real
``KVCacheSpec`` objects from kvplan-style layer descriptions, a minimal
``VllmConfig`` (no model is loaded: ``model_config`` is a stand-in that carries
only ``max_model_len``/``original_max_model_len``), then calls the same functions,
in the same order, as ``EngineCore._initialize_kv_caches`` of that release:

* 0.33-style (``vllm/v1/core/kv_cache_planning.py`` present):
  ``resolve_kv_cache_layout`` -> ``get_global_kv_cache_groups`` ->
  ``get_kv_cache_configs(vllm_config, specs, memory, global_groups)`` ->
  ``generate_scheduler_kv_cache_config`` -> ``update_kv_cache_capacity`` (logs).
* 0.12 .. 0.32-style: ``get_kv_cache_configs(vllm_config, specs, memory)`` (it logs
  the capacity itself) -> ``generate_scheduler_kv_cache_config``.
* 0.11-style (no auto-fit): same call; the admission check runs per layer first.

Afterwards, with logging muted, it asks the same release for diagnostics that the
engine does not print: the global groups, each worker's admission-check need (the
release's own ``_max_memory_usage_bytes_from_groups`` or ``max_memory_usage_bytes``),
the estimated max length, ``get_max_concurrency_for_kv_cache_config`` per worker,
and the EAGLE proposer's ``validate_same_kv_cache_group`` on the drafter layers.

Usage::

    python vllm_runner.py < case.json > result.json       # one case object
    python vllm_runner.py < cases.json > results.json     # a JSON list of cases
    python vllm_runner.py --check-imports                  # smoke test (setup)

Case format (JSON object)
-------------------------
``case``                      str, a name (echoed back).
``spec_table``                optional list of spec dicts (see below). When present,
                              a layer may be written compactly as ``[name, spec_index]``
                              or ``[name, spec_index, source]``.
``workers``                   list (one entry per worker / PP rank, in rank order) of
                              lists of layers, in registration order. A layer is either
                              a kvplan layer dict (``kvplan inspect --format json``
                              ``layers`` entry: ``name``, ``kind``, ``block_size``,
                              ``num_kv_heads``, ``head_size``, ``head_size_v``, ``dtype``,
                              ``sliding_window``, ``attention_chunk_size``,
                              ``cache_dtype_str``, ``page_size_padded``, ``shapes``,
                              ``dtypes``, ``mamba_type``, ``num_speculative_blocks``;
                              ``source`` optional, "target"|"drafter"; ``index`` and
                              ``page_size_bytes`` are ignored) or the compact list form.
``available_memory_bytes``    int (every worker) or list of ints (one per worker).
``max_model_len``             int, or -1 for auto-fit (``--max-model-len -1``).
``derived_max_model_len``     int, the model's own context length; required with -1
                              (vLLM first sets max_model_len to it, then auto-fits).
``max_num_batched_tokens``    int (default 8192).
``async_scheduling``          bool (default true; null: the release's own default, as its VllmConfig
                              resolves it for one worker without a drafter, reported back as
                              ``async_scheduling`` in the result). Matters from ~0.32: sliding-window and
                              chunked reservations use 2 x max_num_batched_tokens.
``disable_hybrid_kv_cache_manager``  bool (default false). Set on the scheduler config
                              AFTER VllmConfig is built (the CPU platform forces it on).
``num_gpu_blocks_override``   int or null (default null).
``mamba_cache_mode``          "none" | "align" | "all" (default "none"), the cache
                              config's mode (MambaSpec reservations read it).
``enable_prefix_caching``     bool (default false).
``pipeline_parallel_size``    int (default 1); ``tensor_parallel_size`` int (default 1);
``decode_context_parallel_size`` int (default 1; the specs keep the release's default
                              ``dcp_sharded``).
``data_parallel_size``        int (default 1) and ``enable_expert_parallel`` bool (default false): set
                              on the parallel config; the case is one DP rank's engine core.
``use_v2_model_runner``       bool or null (default null = the release decides; with the
                              stand-in model config 0.33 picks V2). Sets the env var
                              ``VLLM_USE_V2_MODEL_RUNNER``. Matters only with PP > 1 and
                              async scheduling in 0.33 (max_concurrent_batches = pp + 1).
``model_runner_probe``        optional ``{"speculative_method": str|null, "parallel_drafting": bool}``:
                              ask the release's own ``VllmConfig.use_v2_model_runner`` and
                              ``max_concurrent_batches`` (the env var unset, Triton assumed
                              present as on a GPU host, a stand-in speculative config) and run
                              the case on the runner it picks; recorded as ``model_runner``.
``supported_kv_cache_layouts`` optional list of layout names (0.33+); default: vLLM's
                              default preference (what FlashAttention on Hopper reports).

Spec dict: the layer keys above without ``name``/``source``. ``kind`` is one of
``full_attention, sliding_window, chunked_local, mla, mamba, cross_attention``;
``dtype``/``dtypes`` are torch dtype names (``bfloat16``, ``float16``, ``float32``,
``uint8``, ``int8``, ``float8_e4m3fn``); ``mamba_type`` is kvplan's name (``gdn`` is
mapped to the release's gated-delta-net name). Keys the release's spec class lacks
are dropped and listed in ``result.spec_notes`` (e.g. ``head_size_v`` before 0.12).
MLA specs are built without ``head_size_v`` (the release's default), as vLLM's MLA
layer does.

Result format (JSON object; keys sorted when printed)
-----------------------------------------------------
``case``, ``vllm_version``, ``api`` ("planning" | "projected" | "legacy" | "per_worker": 0.10.x),
``threshold`` (float from ``_get_kv_cache_groups_uniform_page_size``, or null = min rule),
``groups``: global groups, each ``{layer_names, spec: {class, block_size,
page_size_bytes, ...non-null spec fields}, num_layers}``,
``workers``: per worker ``{num_blocks, kv_cache_tensors, group_layer_counts,
max_concurrency, admission: {needed_bytes, checked_available_bytes,
estimated_max_model_len}}``. Tensors are ``{size, shared_by}`` up to 0.32 and
``{size, layers, layer_stride, block_stride, offset}`` from 0.33,
``num_blocks`` (scheduler config), ``max_concurrency`` (what vLLM logs),
``max_model_len`` (after auto-fit), ``kv_cache_layout`` (0.33+),
``max_in_flight_tokens`` (0.33: ``VllmConfig.max_in_flight_tokens``),
``block_size`` (cache_config.block_size after init, 0.18+ / 0.33),
``logs``: every vLLM log record (INFO and above) emitted by the engine-side calls,
as ``{level, logger, message}`` in order,
``drafter_check``: ``null`` without drafter layers, else ``{ok, error}`` from the
proposer's ``validate_same_kv_cache_group``,
``error``: ``null`` or ``{type, message, where}`` for the exception the engine-side
sequence raised (``where`` = innermost vLLM function),
``spec_notes``: list of strings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import inspect
import json
import logging
import os
import re
import sys
import traceback
import types

# Run as a script, this file's directory (kvplan/verify) is first on sys.path; nothing there may
# shadow a module vLLM imports.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != _HERE]

os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Everything vLLM prints goes to stderr; stdout carries only the result JSON.
_REAL_STDOUT = sys.stdout


@contextlib.contextmanager
def _stdout_to_stderr():
    old = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout = old


if "--engine-defaults" in sys.argv[1:]:
    # EngineArgs.create_engine_config as on a CUDA GPU: the CUDA platform is made current before any vLLM
    # module binds ``current_platform`` (its compiled-op module is stood in for; nothing from it runs)
    with _stdout_to_stderr():
        import importlib
        import importlib.util as _ilu

        for _m in ("vllm._C", "vllm._C_stable_libtorch"):  # vllm._C: cuda.py imports it up to 0.23
            if _ilu.find_spec(_m) is None:
                sys.modules[_m] = types.ModuleType(_m)
        # FlashInfer's import queries the device (the 0.7 wheel in the transformers-4 base asks
        # torch.cuda for the SM count and raises AssertionError on CPU torch): it is made to fail as
        # an ImportError, as the backend selector expects of a backend whose module cannot load
        try:
            import flashinfer  # noqa: F401
        except ImportError:
            pass
        except Exception:  # noqa: BLE001
            for _m in [m for m in sys.modules if m == "flashinfer" or m.startswith("flashinfer.")]:
                del sys.modules[_m]
            sys.modules["flashinfer"] = None  # type: ignore[assignment]  # None: importing it raises ImportError
        import vllm.platforms as _VP
        from vllm.platforms import cuda as _CUDA
        from vllm.platforms.interface import DeviceCapability as _DC

        _CUDA.CudaPlatform.get_device_capability = classmethod(lambda cls, device_id=0: _DC(9, 0))  # per case below
        _VP._current_platform = _CUDA.CudaPlatform()
        # the attention backends' modules import as on a machine without the CUDA FlashAttention build
        # (fa_utils imports vllm_flash_attn's compiled extensions when the platform is CUDA)
        _CUDA.CudaPlatform.is_cuda = lambda self: False
        try:
            # (and the modules that query compiled ops at import: quantization utils, the probed models)
            for _m in ("vllm.v1.attention.backends.flash_attn", "vllm.model_executor.layers.quantization.utils.w8a8_utils",
                       "vllm.model_executor.models.nemotron_h", "vllm.model_executor.models.gpt_oss"):
                try:
                    importlib.import_module(_m)
                except ImportError:
                    pass
        finally:
            del _CUDA.CudaPlatform.is_cuda
        # the model-class inspection runs in this process (vLLM uses a subprocess to keep CUDA uninitialised;
        # there is no CUDA here, and a subprocess would not have the stand-ins above)
        from vllm.model_executor.models import registry as _REG

        _REG._run_in_subprocess = lambda fn: fn()
        # Transformers 4 has no Nemotron-H config: the checkpoints load it as remote code
        # (configuration_nemotron_h.py, which configs/ does not carry); the release's own copy of that
        # class (vllm/transformers_utils/configs/nemotron_h.py) is registered in its place
        from transformers import AutoConfig as _AC
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING as _CM

        if "nemotron_h" not in _CM and _ilu.find_spec("vllm.transformers_utils.configs.nemotron_h") is not None:
            from vllm.transformers_utils.configs.nemotron_h import NemotronHConfig as _NH

            _AC.register("nemotron_h", _NH)

with _stdout_to_stderr():
    import importlib.metadata as _md

    import torch

    VLLM_VERSION = _md.version("vllm")
    import importlib.util

    from vllm.config import DeviceConfig, VllmConfig
    from vllm.v1 import kv_cache_interface as I
    from vllm.v1.core import kv_cache_utils as U

    # The V2 model runner refuses to be selected without Triton (0.22+ validation); these
    # functions run no kernel, so the check is satisfied here (PP cases pin the runner).
    if importlib.util.find_spec("vllm.config.vllm") is not None:  # vllm/config/__init__.py in 0.11.0
        import vllm.config.vllm as _vllm_config_module

        if hasattr(_vllm_config_module, "HAS_TRITON"):
            _vllm_config_module.HAS_TRITON = True

    if importlib.util.find_spec("vllm.v1.core.kv_cache_planning") is not None:
        from vllm.v1.core import kv_cache_planning as P
    else:  # before 0.33
        P = None


def _ver() -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", VLLM_VERSION)[:3])


if P is not None:
    API = "planning"
elif hasattr(U, "_project_kv_cache_groups_to_worker"):
    API = "projected"
elif not hasattr(U, "get_kv_cache_configs"):
    # 0.10.x: EngineCore._initialize_kv_caches calls get_kv_cache_config(vllm_config, spec,
    # memory) per worker (the admission check and the HMA-off unification inside it), then
    # unify_kv_cache_configs (the smallest num_blocks) and takes worker 0's as the scheduler's
    API = "per_worker"
else:
    API = "legacy"

_DTYPES = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "half": torch.float16,
    "float32": torch.float32,
    "float": torch.float32,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
}

_KIND_CLASS = {
    "full_attention": "FullAttentionSpec",
    "sliding_window": "SlidingWindowSpec",
    "chunked_local": "ChunkedLocalAttentionSpec",
    "mla": "MLAAttentionSpec",
    "mamba": "MambaSpec",
    "cross_attention": "CrossAttentionSpec",
    "sliding_window_mla": "SlidingWindowMLASpec",  # 0.34: DeepSeek-V4's window and compressor-state caches
}

_LAYER_KEYS = (
    "block_size",
    "num_kv_heads",
    "head_size",
    "head_size_v",
    "dtype",
    "sliding_window",
    "attention_chunk_size",
    "cache_dtype_str",
    "page_size_padded",
    "shapes",
    "dtypes",
    "mamba_type",
    "num_speculative_blocks",
    "num_prefill_checkpoint_blocks",
    # 0.34 (DeepSeek-V4): tokens one stored state covers, the page's padding multiple, the bytes per
    # (slot, state) of a packed page, and the model version the V4 specs assert on
    "tokens_per_state",
    "alignment",
    "state_content_bytes",
    "model_version",
)


# ----------------------------------------------------------------------------- helpers


def find_threshold() -> float | None:
    mod = P if P is not None else U
    fn = getattr(mod, "_get_kv_cache_groups_uniform_page_size", None)
    if fn is None:  # 0.10.x: the grouping lives in _get_kv_cache_config_uniform_page_size
        fn = mod._get_kv_cache_config_uniform_page_size
    src = inspect.getsource(fn)
    m = re.search(r"max_num_layers\s*<\s*min_num_layers\s*\*\s*([0-9.]+)", src)
    return float(m.group(1)) if m else None


def _mamba_type(name: str):
    """kvplan's mamba_type -> the release's value (str up to 0.32, enum in 0.33)."""
    gdn_str = "gdn_attention"
    if API in ("legacy", "per_worker"):
        gdn_str = "linear_attention"  # 0.11 Qwen3-Next reported linear_attention
    aliases = {"gdn": gdn_str, "gdn_attention": gdn_str, "linear": "linear_attention"}
    value = aliases.get(name, name)
    fields = {f.name: f for f in dataclasses.fields(I.MambaSpec)}
    default = fields["mamba_type"].default
    if isinstance(default, str):
        return value
    if not isinstance(default, enum.Enum):
        raise TypeError(f"MambaSpec.mamba_type of vLLM {VLLM_VERSION} defaults to {default!r}, neither str nor enum")
    enum_cls = type(default)
    by_name = {
        "mamba1": "MAMBA1",
        "mamba2": "MAMBA2",
        "short_conv": "SHORT_CONV",
        "linear_attention": "LINEAR",
        "gdn_attention": "GDN_ATTN",
    }
    return enum_cls[by_name.get(value, value.upper())]


def build_spec(layer: dict, case: dict, notes: list[str]):
    kind = layer["kind"]
    # 0.10.x has no MLAAttentionSpec: an MLA layer is a FullAttentionSpec with use_mla=True
    cls = getattr(I, _KIND_CLASS[kind], None) or I.FullAttentionSpec
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    kwargs: dict = {}
    for key in _LAYER_KEYS:
        value = layer.get(key)
        if value is None:
            continue
        if key == "head_size_v" and kind in ("mla", "sliding_window_mla"):
            continue  # vLLM's MLA layer never passes it
        if key in ("num_speculative_blocks", "num_prefill_checkpoint_blocks") and kind != "mamba":
            continue
        if key == "num_prefill_checkpoint_blocks" and value == 0 and key not in fields:
            continue  # before 0.33 the field did not exist (and was 0 in effect)
        if key not in fields:
            if key == "head_size_v" and value == layer.get("head_size"):
                continue  # same as the implicit K=V head size
            notes.append(
                f"{kind}: {key}={value!r} not a field of {cls.__name__} in {VLLM_VERSION}; dropped"
            )
            continue
        if key == "dtype":
            value = _DTYPES[value]
        elif key == "dtypes":
            value = tuple(_DTYPES[d] for d in value)
        elif key == "shapes":
            value = tuple(tuple(s) for s in value)
        elif key == "mamba_type":
            value = _mamba_type(value)
        kwargs[key] = value
    if kind == "mamba" and "mamba_cache_mode" in fields:
        kwargs["mamba_cache_mode"] = case.get("mamba_cache_mode", "none")
    if "use_mla" in fields:  # 0.10.x: every attention spec says whether it caches one latent
        kwargs["use_mla"] = kind == "mla"
    return cls(**kwargs)


def expand_workers(case: dict) -> list[list[dict]]:
    table = case.get("spec_table") or []
    out = []
    for worker in case["workers"]:
        layers = []
        for entry in worker:
            if isinstance(entry, dict):
                layers.append(entry)
            else:
                name, idx = entry[0], entry[1]
                layer = dict(table[idx])
                layer["name"] = name
                layer["source"] = entry[2] if len(entry) > 2 else "target"
                layers.append(layer)
        out.append(layers)
    return out


class _StandInModelConfig(types.SimpleNamespace):
    """The stand-in ``model_config``: the fields set here, and None for any other attribute a
    release reads on the config path (later releases read more of them, e.g. logits_processors
    in 0.29); none of them reaches the layout functions."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def probe_model_runner(case: dict, probe: dict) -> dict:
    """The release's own choice of model runner and in-flight batches for this deployment."""
    if importlib.util.find_spec("vllm.config.vllm") is None:
        return {"use_v2_model_runner": None, "max_concurrent_batches": None}  # 0.10.x: one config module
    import vllm.config.vllm as vc

    os.environ.pop("VLLM_USE_V2_MODEL_RUNNER", None)
    if not isinstance(getattr(VllmConfig, "use_v2_model_runner", None), property):
        if importlib.util.find_spec("vllm.v1.worker.gpu_model_runner") is not None:
            return {"use_v2_model_runner": None, "max_concurrent_batches": None}  # before the V2 runner
        # 0.34+: the V1 runner is gone (the GPU model runner is the former V2, vllm/v1/worker/gpu/)
        with _stdout_to_stderr():
            cfg = VllmConfig(device_config=DeviceConfig(device="cuda"))
            cfg.parallel_config.pipeline_parallel_size = int(case.get("pipeline_parallel_size", 1))
            _set_async_scheduling(cfg.scheduler_config, case)
            return {"use_v2_model_runner": True, "max_concurrent_batches": int(cfg.max_concurrent_batches)}
    saved = getattr(vc, "HAS_TRITON", None)
    vc.HAS_TRITON = True  # a CPU venv lacks Triton; a GPU host has it
    try:
        with _stdout_to_stderr():
            cfg = VllmConfig(device_config=DeviceConfig(device="cuda"))
            cfg.parallel_config.pipeline_parallel_size = int(case.get("pipeline_parallel_size", 1))
            _set_async_scheduling(cfg.scheduler_config, case)
            method = probe.get("speculative_method")
            cfg.speculative_config = None if method is None else types.SimpleNamespace(
                method=method, parallel_drafting=bool(probe.get("parallel_drafting")),
                use_heterogeneous_vocab=False)
            # VllmConfig.max_concurrent_batches from 0.23 (0.22.x chooses the runner without it)
            batches = getattr(cfg, "max_concurrent_batches", None)
            return {"use_v2_model_runner": bool(cfg.use_v2_model_runner),
                    "max_concurrent_batches": None if batches is None else int(batches)}
    finally:
        if saved is not None:
            vc.HAS_TRITON = saved


def _set_async_scheduling(sc, case: dict) -> None:
    """The case's async scheduling; where it is null, what the release's VllmConfig resolved on construction
    (SchedulerConfig's default False up to 0.13; from 0.14 None, turned on unless an option is incompatible)."""
    given = case.get("async_scheduling", True)
    sc.async_scheduling = bool(sc.async_scheduling if given is None else given)


def build_vllm_config(case: dict, max_model_len: int, original: int):
    cfg = VllmConfig(device_config=DeviceConfig(device="cuda"))
    sc, cc, pc = cfg.scheduler_config, cfg.cache_config, cfg.parallel_config
    t = int(case.get("max_num_batched_tokens", 8192))
    sc.max_num_batched_tokens = t
    if hasattr(sc, "max_num_encoder_input_tokens"):
        sc.max_num_encoder_input_tokens = t
    if (
        hasattr(sc, "max_num_scheduled_tokens")
        and getattr(sc, "max_num_scheduled_tokens", None) is not None
    ):
        sc.max_num_scheduled_tokens = t
    if hasattr(sc, "max_model_len"):
        sc.max_model_len = max_model_len
    sc.disable_hybrid_kv_cache_manager = bool(
        case.get("disable_hybrid_kv_cache_manager", False)
    )
    if hasattr(sc, "async_scheduling"):
        _set_async_scheduling(sc, case)
    cc.num_gpu_blocks_override = case.get("num_gpu_blocks_override")
    if hasattr(cc, "mamba_cache_mode"):
        cc.mamba_cache_mode = case.get("mamba_cache_mode", "none")
    cc.enable_prefix_caching = bool(case.get("enable_prefix_caching", False))
    cc.block_size = int(case.get("cache_block_size", 16))
    pc.pipeline_parallel_size = int(case.get("pipeline_parallel_size", 1))
    pc.tensor_parallel_size = int(case.get("tensor_parallel_size", 1))
    if hasattr(pc, "decode_context_parallel_size"):
        pc.decode_context_parallel_size = int(case.get("decode_context_parallel_size", 1))
    # data parallelism (one engine core per DP rank, each with its own KV cache: the case is one engine's)
    pc.data_parallel_size = int(case.get("data_parallel_size", 1))
    if hasattr(pc, "data_parallel_size_local"):
        pc.data_parallel_size_local = pc.data_parallel_size
    pc.enable_expert_parallel = bool(case.get("enable_expert_parallel", False))
    model = _StandInModelConfig(
        max_model_len=max_model_len,
        original_max_model_len=original,
        architectures=["KvplanGoldenStandIn"],
        supports_kv_cache_grouping=False,
        is_hybrid=False,
        is_diffusion=False,  # read by use_v2_model_runner from 0.26
        runner_type="generate",  # _is_default_v2_model_runner_model (0.26-0.28)
        is_moe=False,
        is_attention_free=False,
        multimodal_config=None,
        dtype=torch.bfloat16,
    )
    cfg.model_config = model  # plain setattr: no pydantic validation on assignment
    return cfg


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.records: list[dict] = []
        self.enabled = True

    def emit(self, record: logging.LogRecord) -> None:
        if not self.enabled:
            return
        try:
            msg = record.getMessage()
        except Exception as e:  # noqa: BLE001 - never lose a record
            msg = f"<unformattable: {e}>"
        self.records.append(
            {"level": record.levelname, "logger": record.name, "message": msg}
        )


def _reset_once_caches() -> None:
    import vllm.logger as vl

    for name in dir(vl):
        fn = getattr(vl, name)
        if name.startswith("_print_") and hasattr(fn, "cache_clear"):
            fn.cache_clear()


def _error(exc: BaseException) -> dict:
    where = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if "/vllm/" in frame.filename.replace("\\", "/"):
            mod = frame.filename.replace("\\", "/").split("/vllm/", 1)[1]
            where = f"vllm/{mod}:{frame.name}"
    return {"type": type(exc).__name__, "message": str(exc), "where": where}


def _spec_summary(spec) -> dict:
    out = {
        "class": type(spec).__name__,
        "block_size": spec.block_size,
        "page_size_bytes": spec.page_size_bytes,
    }
    if hasattr(I, "UniformTypeKVCacheSpecs") and isinstance(spec, I.UniformTypeKVCacheSpecs):
        members = list(spec.kv_cache_specs.values())
        out["num_members"] = len(members)
        out["member_classes"] = sorted({type(s).__name__ for s in members})
        out["member_page_sizes"] = sorted({s.page_size_bytes for s in members})
        return out
    for key in (
        "sliding_window",
        "attention_chunk_size",
        "num_kv_heads",
        "head_size",
        "head_size_v",
        "page_size_padded",
        "cache_dtype_str",
        "num_speculative_blocks",
    ):
        value = getattr(spec, key, None)
        if value is not None:
            out[key] = value
    dtype = getattr(spec, "dtype", None)
    if dtype is not None:
        out["dtype"] = str(dtype).replace("torch.", "")
    return out


def _group_summary(group) -> dict:
    return {
        "layer_names": list(group.layer_names),
        "num_layers": len(group.layer_names),
        "spec": _spec_summary(group.kv_cache_spec),
    }


def _tensor_summary(t) -> dict:
    if hasattr(t, "shared_by"):
        return {"size": t.size, "shared_by": list(t.shared_by)}
    out = {
        "size": t.size,
        "layers": list(t.layers),
        "layer_stride": t.layer_stride,
        "block_stride": t.block_stride,
        "offset": t.offset,
    }
    if getattr(t, "host_resident", False):
        out["host_resident"] = True
    return out


_PROPOSER_MODULES = (
    "vllm.v1.spec_decode.llm_base_proposer",
    "vllm.v1.spec_decode.eagle",
)


def _find_validate_same_kv_cache_group(strict: bool = False):
    """EAGLE proposer's ``validate_same_kv_cache_group`` (base proposer from 0.2x)."""
    import importlib.util

    for modname in _PROPOSER_MODULES:
        if importlib.util.find_spec(modname) is None:
            continue
        try:
            with _stdout_to_stderr():
                mod = __import__(modname, fromlist=["x"])
        except Exception:
            if strict:
                raise
            continue
        for _, obj in inspect.getmembers(mod, inspect.isclass):
            if (
                obj.__module__ == mod.__name__
                and "validate_same_kv_cache_group" in obj.__dict__
            ):
                return obj.__dict__["validate_same_kv_cache_group"]
    return None


def _drafter_check(config, drafter_names: list[str]):
    """The proposer's own validate_same_kv_cache_group, with a stand-in self."""
    if not drafter_names:
        return None
    fn = _find_validate_same_kv_cache_group()
    if fn is None and not _has_proposer_module():
        # 0.34 removed the V1 EAGLE proposer: the V2 speculators walk every attention group
        # (v1/worker/gpu/spec_decode/speculator.py), so drafting layers may span groups.
        return {"ok": True, "error": None, "note": "no validate_same_kv_cache_group in this release"}
    if fn is None:
        return {
            "ok": None,
            "error": {
                "type": "RunnerNote",
                "message": "proposer not importable",
                "where": None,
            },
        }
    self = types.SimpleNamespace(
        _draft_attn_layer_names=set(drafter_names), attn_layer_names=list(drafter_names)
    )
    try:
        fn(self, config)
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": _error(e)}
    return {"ok": True, "error": None}


# ----------------------------------------------------------------------------- main


class _Sized:
    """What the engine-side calls returned: the per-worker configs, the scheduler's config, the global groups
    (each None when the calls did not get that far)."""

    def __init__(self) -> None:
        self.configs: list | None = None
        self.sched = None
        self.global_groups: list | None = None


def run_case(case: dict) -> dict:
    _reset_once_caches()
    notes: list[str] = []
    result = _new_result(case, notes)
    requested = int(case["max_model_len"])
    if requested == -1 and API in ("legacy", "per_worker"):
        result["error"] = {
            "type": "RunnerSkip",
            "where": None,
            "message": f"max_model_len=-1 (auto-fit) does not exist in vLLM {VLLM_VERSION}",
        }
        return result
    max_model_len = int(case["derived_max_model_len"]) if requested == -1 else requested
    result["max_model_len"] = max_model_len

    layers_per_worker = expand_workers(case)
    n = len(layers_per_worker)
    mem = case["available_memory_bytes"]
    memory = [int(m) for m in mem] if isinstance(mem, list) else [int(mem)] * n
    _choose_model_runner(case, result)

    with _stdout_to_stderr():
        cfg = build_vllm_config(case, max_model_len, requested)
        _config_facts(case, cfg, result)
        worker_specs = [
            {l["name"]: build_spec(l, case, notes) for l in layers}
            for layers in layers_per_worker
        ]
        # dedupe notes
        notes[:] = sorted(set(notes))
        drafter_names = [
            l["name"]
            for layers in layers_per_worker
            for l in layers
            if l.get("source") == "drafter"
        ]
        vlog, cap = _capture_vllm_logs()
        sized = _Sized()
        try:
            _size(cfg, case, worker_specs, memory, result, sized)
        except Exception as e:  # noqa: BLE001 - engine failures are results
            result["error"] = _error(e)
        cap.enabled = False
        result["logs"] = cap.records
        if result["error"] is None:
            result["max_model_len"] = cfg.model_config.max_model_len  # after auto-fit
        else:
            # 0.11's estimate_max_model_len leaves its last probe in max_model_len; the
            # diagnostics below must see the length the check ran with.
            cfg.model_config.max_model_len = max_model_len

        # ---- diagnostics (logging muted) -------------------------------------------
        vlog.disabled = True
        try:
            _diagnose(cfg, case, layers_per_worker, memory, drafter_names, sized, result)
        finally:
            vlog.disabled = False
            vlog.removeHandler(cap)
    return result


def _new_result(case: dict, notes: list[str]) -> dict:
    return {
        "case": case.get("case"),
        "vllm_version": VLLM_VERSION,
        "api": API,
        "threshold": find_threshold(),
        "error": None,
        "groups": None,
        "workers": None,
        "num_blocks": None,
        "max_concurrency": None,
        "logs": [],
        "drafter_check": None,
        "spec_notes": notes,
    }


def _choose_model_runner(case: dict, result: dict) -> None:
    """``VLLM_USE_V2_MODEL_RUNNER`` as the case pins it, or as the release's own probe picks it (recorded)."""
    v2 = case.get("use_v2_model_runner")
    probe = case.get("model_runner_probe")
    if probe is not None:
        result["model_runner"] = probe_model_runner(case, probe)
        v2 = result["model_runner"]["use_v2_model_runner"]
    if v2 is None:
        os.environ.pop("VLLM_USE_V2_MODEL_RUNNER", None)
    else:
        os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "1" if v2 else "0"


def _config_facts(case: dict, cfg, result: dict) -> None:
    """What the release's VllmConfig resolved: its async-scheduling default (case: null) and tokens in flight."""
    if case.get("async_scheduling", True) is None:  # the release's own default
        result["async_scheduling"] = bool(cfg.scheduler_config.async_scheduling)
    if hasattr(type(cfg), "max_in_flight_tokens"):
        # what sliding-window / chunked reservations add to the window (0.32+)
        result["max_in_flight_tokens"] = cfg.max_in_flight_tokens


def _capture_vllm_logs():
    """The ``vllm`` logger at INFO, its records captured (and not printed)."""
    vlog = logging.getLogger("vllm")
    vlog.setLevel(logging.INFO)
    vlog.propagate = False
    for h in list(vlog.handlers):
        vlog.removeHandler(h)
    cap = _Capture()
    vlog.addHandler(cap)
    return vlog, cap


def _size(cfg, case: dict, worker_specs: list[dict], memory: list[int], result: dict, sized: _Sized) -> None:
    """The engine core's sizing calls of this release, in its order (``sized`` keeps what each returned)."""
    if API == "planning":
        _size_planning(cfg, case, worker_specs, memory, result, sized)
    elif API == "per_worker":
        sized.configs = [
            U.get_kv_cache_config(cfg, specs_w, mem_w)
            for specs_w, mem_w in zip(worker_specs, memory)
        ]
        U.unify_kv_cache_configs(sized.configs)
        sized.sched = sized.configs[0]
    else:
        _size_projected(cfg, case, worker_specs, memory, result, sized)


def _resolve_layout(resolve, supported, cfg, case: dict, worker_specs: list[dict], result: dict) -> None:
    """The KV cache layout the engine core resolves before sizing (0.29+), recorded."""
    names = case.get("supported_kv_cache_layouts")
    if names is None:
        names = [l.name for l in supported([])]
    layout = resolve(cfg, [list(names)] * len(worker_specs), [s for d in worker_specs for s in d.values()])
    result["kv_cache_layout"] = layout.name


def _size_planning(cfg, case: dict, worker_specs: list[dict], memory: list[int], result: dict,
                   sized: _Sized) -> None:
    """0.33+: layout, global groups, per-worker configs, the scheduler's config, the capacity log."""
    from vllm.v1.attention.backends.utils import (
        get_supported_kv_cache_layouts,
        resolve_kv_cache_layout,
    )

    _resolve_layout(resolve_kv_cache_layout, get_supported_kv_cache_layouts, cfg, case, worker_specs, result)
    sized.global_groups = P.get_global_kv_cache_groups(cfg, worker_specs)
    sized.configs = configs = P.get_kv_cache_configs(
        cfg, worker_specs, memory, sized.global_groups
    )
    for c in configs:
        c.kv_cache_layout = cfg.cache_config.kv_cache_layout
    sized.sched = sched = U.generate_scheduler_kv_cache_config(configs)
    cfg.cache_config.num_gpu_blocks = sched.num_blocks
    if sched.kv_cache_groups:
        participating = [
            g.kv_cache_spec.block_size
            for g in sched.kv_cache_groups
            if g.kv_cache_spec.prefix_cacheable
        ]
        cfg.cache_config.block_size = min(
            participating
            or [g.kv_cache_spec.block_size for g in sched.kv_cache_groups]
        )
        U.update_kv_cache_capacity(cfg, sched)


def _size_projected(cfg, case: dict, worker_specs: list[dict], memory: list[int], result: dict,
                    sized: _Sized) -> None:
    """0.11-0.32: (0.29-0.32: the layout first) per-worker configs, the scheduler's config, its block size (0.18+)
    and capacity log (0.28+)."""
    from vllm.v1.attention.backends import utils as backend_utils

    if hasattr(backend_utils, "resolve_kv_cache_layout"):
        # 0.29-0.32: the engine core resolves the layout before sizing
        _resolve_layout(backend_utils.resolve_kv_cache_layout, backend_utils.get_supported_kv_cache_layouts,
                        cfg, case, worker_specs, result)
    sized.configs = configs = U.get_kv_cache_configs(cfg, worker_specs, memory)
    sized.sched = sched = U.generate_scheduler_kv_cache_config(configs)
    if _ver() >= (0, 18) and sched.kv_cache_groups:
        cfg.cache_config.block_size = min(
            g.kv_cache_spec.block_size for g in sched.kv_cache_groups
        )
    if hasattr(U, "update_kv_cache_capacity") and sched.kv_cache_groups:
        # 0.28-0.32: the engine core logs the capacity (one line) after sizing
        cfg.cache_config.num_gpu_blocks = sched.num_blocks
        U.update_kv_cache_capacity(cfg, sched)


def _diagnose(cfg, case: dict, layers_per_worker: list, memory: list[int], drafter_names: list[str],
              sized: _Sized, result: dict) -> None:
    """What the engine does not print, asked of the same release: groups, each worker's admission need, blocks,
    tensors and concurrency, the totals, the host tier and the drafter check."""
    def fresh_specs():
        return [
            {l["name"]: build_spec(l, case, []) for l in layers}
            for layers in layers_per_worker
        ]

    configs, sched = sized.configs, sized.sched
    global_groups = sized.global_groups
    if global_groups is None:
        global_groups = _groups_after_failure(cfg, configs, fresh_specs)
    specs_now = None
    if global_groups is not None:
        result["groups"] = [_group_summary(g) for g in global_groups]
        specs_now = fresh_specs()
        result["workers"] = [_worker_out(cfg, global_groups, configs, w, specs_w, avail)
                             for w, (specs_w, avail) in enumerate(zip(specs_now, memory))]
    if sched is not None:
        result["num_blocks"] = sched.num_blocks
        if sched.kv_cache_groups:
            result["max_concurrency"] = (
                U.get_max_concurrency_for_kv_cache_config(cfg, sched)
            )
        if API not in ("legacy", "per_worker"):
            result["block_size"] = cfg.cache_config.block_size
    off = case.get("kv_offloading")
    if off is not None and sched is not None and result["error"] is None:
        result["kv_offloading"] = _offloading(cfg, sched, {**off, "_spec_table": case.get("spec_table")})
    if configs is not None and drafter_names:
        # The proposer lives on the rank that holds the drafter layers (the last
        # PP stage) and validates that rank's config.
        owner = next(
            (i for i, d in enumerate(specs_now if specs_now is not None else fresh_specs())
             if drafter_names[0] in d), 0
        )
        result["drafter_check"] = _drafter_check(configs[owner], drafter_names)


def _groups_after_failure(cfg, configs: list | None, fresh_specs) -> list | None:
    """The global groups when the sizing calls did not return them: asked again (None: the same error)."""
    merged: dict = {}
    for d in fresh_specs():
        for k, v in d.items():
            merged.setdefault(k, v)
    try:
        if API == "planning":
            return P.get_global_kv_cache_groups(cfg, fresh_specs())
        if API == "per_worker":
            # 0.10.x groups inside get_kv_cache_config: worker 0's groups are the
            # scheduler's (EngineCore takes kv_cache_configs[0])
            return list(configs[0].kv_cache_groups) if configs else None
        return U.get_kv_cache_groups(cfg, merged)
    except Exception:  # noqa: BLE001 - the same error as above
        return None


def _worker_out(cfg, global_groups: list, configs: list | None, w: int, specs_w: dict, avail: int) -> dict:
    """One worker: its available memory, admission need and, when sized, its blocks, tensors, group sizes and
    max concurrency."""
    wout: dict = {"available_memory_bytes": avail}
    wout["admission"] = _admission(cfg, global_groups, specs_w, avail)
    if configs is not None:
        c = configs[w]
        wout["num_blocks"] = c.num_blocks
        wout["kv_cache_tensors"] = [
            _tensor_summary(t) for t in c.kv_cache_tensors
        ]
        wout["group_layer_counts"] = [
            len(g.layer_names) for g in c.kv_cache_groups
        ]
        if c.kv_cache_groups:
            wout["max_concurrency"] = (
                U.get_max_concurrency_for_kv_cache_config(cfg, c)
            )
    return wout


def _admission(cfg, global_groups, specs_w: dict, avail: int) -> dict | None:
    """The release's own need for one worker, at the final max_model_len."""
    try:
        if API == "legacy" and hasattr(U, "_max_memory_usage_bytes_from_groups"):
            # 0.14-0.16: one check on the global groups with min(available) (no projection)
            needed = U._max_memory_usage_bytes_from_groups(cfg, global_groups)
            est = U._estimate_max_model_len_from_groups(cfg, global_groups, avail) if needed > avail else None
            return {
                "needed_bytes": needed,
                "checked_available_bytes": avail,
                "estimated_max_model_len": est,
                "rule": "global groups",
            }
        if API in ("legacy", "per_worker"):
            needed = U.max_memory_usage_bytes(cfg, specs_w.values())
            est = (
                U.estimate_max_model_len(cfg, specs_w, avail)
                if needed > avail
                else None
            )
            return {
                "needed_bytes": needed,
                "checked_available_bytes": avail,
                "estimated_max_model_len": est,
                "rule": "sum over layers",
            }
        if API == "projected":
            groups = U._project_kv_cache_groups_to_worker(global_groups, specs_w)
            if not groups:
                return None
            override = cfg.cache_config.num_gpu_blocks_override
            if (override is not None and hasattr(U, "_pool_bytes_per_block")
                    and "num_gpu_blocks_override" in inspect.getsource(U.get_kv_cache_configs)):
                # from 0.20.1 get_kv_cache_configs turns the override into the available
                # memory (override x bytes per block) before auto-fit and the check
                avail = override * U._pool_bytes_per_block(cfg, groups)
            if "Reserve the null block" in inspect.getsource(U.get_kv_cache_configs):
                # 0.29-0.32: the check and auto-fit plan against available - bytes_per_block
                avail = avail - U._pool_bytes_per_block(cfg, groups)
            needed = U._max_memory_usage_bytes_from_groups(cfg, groups)
            est = U._estimate_max_model_len_from_groups(cfg, groups, avail)
            return {
                "needed_bytes": needed,
                "checked_available_bytes": avail,
                "estimated_max_model_len": est,
                "rule": "groups",
            }
        from vllm.v1.core.kv_cache_config_builder import get_kv_cache_config_builder

        builder = get_kv_cache_config_builder(cfg)
        groups = P._project_kv_cache_groups_to_worker(global_groups, specs_w)
        if not groups:
            return None
        bpb = P._pool_bytes_per_block_from_builder(builder, cfg, groups)
        override = cfg.cache_config.num_gpu_blocks_override
        eff = override * bpb if override is not None else avail
        checked = eff - bpb
        needed = P._max_memory_usage_bytes_from_groups(builder, cfg, groups)
        est = P._estimate_max_model_len_from_groups(builder, cfg, groups, checked)
        return {
            "needed_bytes": needed,
            "checked_available_bytes": checked,
            "bytes_per_block": bpb,
            "estimated_max_model_len": est,
            "rule": "groups",
        }
    except Exception as e:  # noqa: BLE001
        return {"error": _error(e)}


def _offloading(cfg, kv_cache_config, off: dict) -> dict:
    """The host tier the release's native KV offloading builds for this KV cache config.

    ``off``: ``{"size_gib": float, "backend": "native"|"lmcache", "extra_config": {...}}``
    (``--kv-offloading-size`` / ``--kv-offloading-backend`` and extra connector keys). Runs
    the release's own ``VllmConfig._post_init_kv_transfer_config`` (the connector it installs
    and ``cpu_bytes_to_use``), then, for the OffloadingConnector, the same calls as the
    connector's constructor: from 0.26 ``build_offloading_config(vllm_config, kv_cache_config)``
    and ``OffloadingSpecFactory.create_spec(config)``; 0.14-0.25
    ``create_spec(vllm_config, kv_cache_config)``; 0.12-0.13 ``create_spec(vllm_config)``. The
    scheduler's KV cache config is used, as the scheduler-side connector is built with it.
    On this CPU host ``CPUOffloadingSpec._uses_shared_region`` is false, so a replicated
    (single-copy) MLA layout is not taken; it needs TP > 1 and is reported as a flag.
    Figures a release's spec does not hold are left out (``cpu_kv_cache_size_*`` from 0.33,
    ``kv_bytes_per_chunk`` from 0.23, ``cpu_page_size_per_worker`` from 0.22).
    """
    try:
        from vllm.v1.kv_offload.factory import OffloadingSpecFactory
    except ImportError as e:
        return {"error": {"type": "RunnerSkip", "where": None,
                          "message": f"vLLM {VLLM_VERSION} has no OffloadingSpecFactory ({e})"}}
    try:
        from vllm.distributed.kv_transfer.kv_connector.v1.offloading.config import (
            build_offloading_config,
        )
    except ImportError:  # before 0.26 the spec reads the vLLM config itself
        build_offloading_config = None
    pc = cfg.parallel_config
    # ParallelConfig computes world_size once, when built; the case sets TP/PP afterwards
    pc.world_size = pc.tensor_parallel_size * pc.pipeline_parallel_size
    cc = cfg.cache_config
    cc.kv_offloading_size = float(off["size_gib"])
    cc.kv_offloading_backend = off.get("backend", "native")
    cfg.kv_transfer_config = None
    type(cfg)._post_init_kv_transfer_config(cfg)
    ktc = cfg.kv_transfer_config
    out: dict = {
        "kv_connector": ktc.kv_connector,
        "kv_role": ktc.kv_role,
        "kv_connector_extra_config": dict(ktc.kv_connector_extra_config),
    }
    try:  # whether the hybrid manager stays on with it (VllmConfig's rule, 0.22+)
        from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

        out["supports_hma"] = bool(KVConnectorFactory.supports_hma_config(ktc))
    except Exception as e:  # noqa: BLE001 - e.g. the lmcache package is not installed here
        out["supports_hma"] = {"error": f"{type(e).__name__}: {e}"}
    if ktc.kv_connector != "OffloadingConnector":
        return out
    ktc.kv_connector_extra_config.update(off.get("extra_config") or {})
    if ktc.engine_id is None:
        ktc.engine_id = "golden"
    if isinstance(cfg.model_config, _StandInModelConfig):
        # 0.28-0.29 build_offloading_config asks whether one full-attention group's heads are sharded exactly
        # (is_parallelism_agnostic, which sizes nothing): the model's KV heads, the spec's per-rank count x TP
        heads = next((int(r["num_kv_heads"]) for r in off.get("_spec_table") or [] if r.get("num_kv_heads")), 1)
        total = heads * pc.tensor_parallel_size
        cfg.model_config.get_total_num_kv_heads = lambda: total
    config = None
    try:
        if build_offloading_config is not None:
            config = build_offloading_config(cfg, kv_cache_config)
            spec = OffloadingSpecFactory.create_spec(config)
        elif len(inspect.signature(OffloadingSpecFactory.create_spec).parameters) >= 2:
            spec = OffloadingSpecFactory.create_spec(cfg, kv_cache_config)
        else:
            spec = OffloadingSpecFactory.create_spec(cfg)
    except Exception as e:  # noqa: BLE001 - an engine failure is a result
        out["error"] = _error(e)
        return out
    out["world_size"] = pc.world_size
    info = getattr(spec, "cpu_info", None)
    if config is not None:
        out.update(
            groups=[
                {  # group_id from 0.30, the window's reach from 0.33
                    "group_id": getattr(g, "group_id", i),
                    "tokens_per_block": g.tokens_per_block,
                    "num_layers": len(g.layer_names),
                    "sliding_window_size_in_chunks": getattr(g, "sliding_window_size_in_chunks", None),
                }
                for i, g in enumerate(config.groups)
            ],
            tokens_per_hash=getattr(getattr(config, "cache", None), "tokens_per_hash", None),
            worker_kv_bytes_per_block=config.worker_kv_bytes_per_block,
            world_size=config.parallel.world_size,
            replicated_layout=bool(getattr(config, "replicated_layout", False)),
        )
    if info is not None:
        out.update(
            blocks_per_chunk=info.cpu_blocks_per_chunk,
            num_chunks=info.cpu_num_chunks,
            cpu_kv_cache_size_bytes=info.cpu_kv_cache_size_bytes,
            cpu_kv_cache_size_tokens=info.cpu_kv_cache_size_tokens,
        )
    else:
        # 0.14-0.32: the spec's own attributes (num_blocks up to 0.29, num_chunks from 0.30;
        # block_size_factor 0.18-0.25, blocks_per_chunk from 0.26; offloaded_block_size up to 0.17)
        num = getattr(spec, "num_chunks", None)
        out["num_chunks"] = num if num is not None else getattr(spec, "num_blocks", None)
        factor = getattr(spec, "blocks_per_chunk", None) or getattr(spec, "block_size_factor", None)
        if factor is None and hasattr(spec, "offloaded_block_size"):
            factor = spec.offloaded_block_size // spec.gpu_block_size
        out["blocks_per_chunk"] = factor
    kv_chunk = getattr(spec, "kv_bytes_per_chunk", None)
    if kv_chunk is None:
        kv_chunk = getattr(spec, "kv_bytes_per_offloaded_block", None)
    if kv_chunk is not None:
        out["kv_bytes_per_chunk"] = kv_chunk
    if getattr(spec, "cpu_page_size_per_worker", None) is not None:
        out["cpu_page_size_per_worker"] = spec.cpu_page_size_per_worker
    return out


def _has_proposer_module() -> bool:
    import importlib.util

    return any(importlib.util.find_spec(m) is not None for m in _PROPOSER_MODULES)


def _check_imports() -> None:
    if _find_validate_same_kv_cache_group(strict=True) is None and _has_proposer_module():
        raise SystemExit("validate_same_kv_cache_group not found")
    with _stdout_to_stderr():
        case = {
            "case": "smoke",
            "workers": [
                [
                    {
                        "name": f"l{i}",
                        "kind": "sliding_window" if i % 2 == 0 else "full_attention",
                        "block_size": 16,
                        "num_kv_heads": 8,
                        "head_size": 64,
                        "head_size_v": 64,
                        "dtype": "bfloat16",
                        "sliding_window": 128 if i % 2 == 0 else None,
                    }
                    for i in range(4)
                ]
            ],
            "available_memory_bytes": 1 << 30,
            "max_model_len": 4096,
        }
        res = run_case(case)
    if res["error"] is not None or res["num_blocks"] is None:
        print(json.dumps(res, indent=1, default=str), file=sys.stderr)
        raise SystemExit(f"smoke case failed: {res['error']}")
    print(
        f"imports ok: vllm {VLLM_VERSION} api={API} threshold={res['threshold']} "
        f"num_blocks={res['num_blocks']}"
    )


def _engine_args_pass_mamba_mode() -> bool:
    """Whether ``EngineArgs.create_engine_config`` hands --mamba-cache-mode to CacheConfig
    (0.15 to 0.32 do; 0.33 only warns that the flag has no effect)."""
    from vllm.engine.arg_utils import EngineArgs

    return "mamba_cache_mode=self.mamba_cache_mode" in inspect.getsource(EngineArgs.create_engine_config)


def run_hook(case: dict) -> dict:
    """One config-hook case, run through the release's own model-config hooks.

    ``{"kind": "mamba_mode", "architecture", "supports_mamba_prefix_caching",
    "enable_prefix_caching", "mamba_cache_mode"}``: the mode EngineArgs hands to CacheConfig
    (the flag where the release passes it on, else CacheConfig's default), then
    ``MambaModelConfig.verify_and_update_config``; returns the resulting ``mamba_cache_mode``.

    ``{"kind": "nemotron_h_ssm", "hf_config": {...}}``: the release's Nemotron-H config class
    (vLLM's own where it ships one, else transformers') built from the dict, then
    ``NemotronHForCausalLMConfig.verify_and_update_config``; returns ``mamba_ssm_cache_dtype``
    (``"auto"`` where the release has no such hook: the state then takes the model dtype).
    """
    out: dict = {"case": case.get("case"), "vllm_version": VLLM_VERSION, "logs": [], "error": None}
    cap = _Capture()
    root = logging.getLogger("vllm")
    root.addHandler(cap)
    root.setLevel(logging.INFO)
    try:
        with _stdout_to_stderr():
            from vllm.model_executor.models import config as MC

            cfg = VllmConfig(device_config=DeviceConfig(device="cuda"))
            cc = cfg.cache_config
            if case["kind"] == "mamba_mode":
                if not hasattr(cc, "mamba_cache_mode"):
                    out["mamba_cache_mode"] = None  # no Mamba cache modes in this release
                    return out
                cc.enable_prefix_caching = bool(case["enable_prefix_caching"])
                cc.mamba_cache_mode = case["mamba_cache_mode"] if _engine_args_pass_mamba_mode() else "none"
                if hasattr(cc, "mamba_block_size"):
                    cc.mamba_block_size = None
                cfg.scheduler_config.enable_chunked_prefill = True
                cfg.model_config = types.SimpleNamespace(
                    architecture=case["architecture"], architectures=[case["architecture"]],
                    supports_mamba_prefix_caching=bool(case["supports_mamba_prefix_caching"]),
                    max_model_len=4096, is_hybrid=True,
                )
                MC.MambaModelConfig.verify_and_update_config(cfg)
                out["mamba_cache_mode"] = cc.mamba_cache_mode
                out["engine_args_pass_mamba_cache_mode"] = _engine_args_pass_mamba_mode()
            elif case["kind"] == "nemotron_h_ssm":
                hook = getattr(MC, "NemotronHForCausalLMConfig", None)
                try:
                    from vllm.transformers_utils.configs import NemotronHConfig as H
                except ImportError:
                    from transformers import NemotronHConfig as H
                out["hf_config_class"] = f"{H.__module__}.{H.__name__}"
                cc.mamba_ssm_cache_dtype = "auto"
                cfg.model_config = types.SimpleNamespace(hf_config=H(**case["hf_config"]))
                if hook is not None:
                    hook.verify_and_update_config(cfg)
                out["mamba_ssm_cache_dtype"] = str(cc.mamba_ssm_cache_dtype)
            elif case["kind"] == "nixl_topology":
                out.update(_nixl_topology(case))
            elif case["kind"] == "block_size_backends":
                out.update(_block_size_backends(case))
            elif case["kind"] == "engine_defaults":
                out.update(_block_size_decision(case))
            elif case["kind"] == "kv_dtype":
                _cuda_wheel_standins(case)
                out.update(_block_size_decision(case, then=lambda cfg, sel: _kv_dtype_layout(case, cfg, sel)))
            else:
                raise ValueError(f"unknown hook kind {case['kind']!r}")
    except Exception as e:  # noqa: BLE001 - the release's own failure is the result
        out["error"] = {"type": type(e).__name__, "message": str(e)}
    finally:
        root.removeHandler(cap)
        out["logs"] = cap.records
    return out


def _nixl_topology(case: dict) -> dict:
    """``{"kind": "nixl_topology", "local_tp", "remote_tp", "local_block", "remote_block",
    "total_num_kv_heads", "is_mla"}``: the NIXL connector's ``TransferTopology`` (the decode worker is
    local in pull mode) asked for ``tp_ratio`` and ``block_size_ratio``, each its value or its
    AssertionError text. Releases without the class answer ``{"topology": None}``."""
    try:
        from vllm.distributed.kv_transfer.kv_connector.utils import TransferTopology
    except ImportError:
        return {"topology": None}
    topo = TransferTopology(tp_rank=0, tp_size=case["local_tp"], block_size=case["local_block"],
                            engine_id="decode", is_mla=case["is_mla"], is_mamba=False,
                            total_num_kv_heads=case["total_num_kv_heads"], attn_backends=[])
    out: dict = {"topology": "TransferTopology"}
    for name, arg in (("tp_ratio", case["remote_tp"]), ("block_size_ratio", case["remote_block"])):
        try:
            out[name] = getattr(topo, name)(arg)
        except AssertionError as e:
            out[name] = {"error": {"type": "AssertionError", "message": str(e)}}
    return out


def _kernel_sizes(backend_cls) -> list:
    """``get_supported_kernel_block_sizes()`` as JSON: ints, and ``{"multiple_of": n}`` for MultipleOf."""
    return [{"multiple_of": x.base} if hasattr(x, "base") else int(x) for x in backend_cls.get_supported_kernel_block_sizes()]


@contextlib.contextmanager
def _cuda_platform(capability, total_memory: int | None = None, name: str | None = None):
    """The release's CudaPlatform importable on CPU and current, reporting the GPU's ``capability``, total
    memory and name: its compiled-op module is stood in for (nothing from it runs)."""
    import importlib

    import vllm.platforms as VP

    stubs = [m for m in ("vllm._C", "vllm._C_stable_libtorch") if m not in sys.modules and importlib.util.find_spec(m) is None]
    for m in stubs:
        sys.modules[m] = types.ModuleType(m)
    from vllm.platforms import cuda as C
    from vllm.platforms.interface import DeviceCapability

    cap = DeviceCapability(*capability)
    answers = {"get_device_capability": cap, "get_device_total_memory": total_memory, "get_device_name": name}
    saved = {n: C.CudaPlatform.__dict__.get(n) for n in answers}
    for n, v in answers.items():
        setattr(C.CudaPlatform, n, classmethod(lambda cls, device_id=0, _v=v: _v))
    old_platform = VP.__dict__.get("_current_platform")
    if not isinstance(old_platform, C.CudaPlatform):
        VP._current_platform = C.CudaPlatform()
    try:
        yield C, cap
    finally:
        if not isinstance(old_platform, C.CudaPlatform):
            VP._current_platform = old_platform
        for n, f in saved.items():
            if f is None:
                delattr(C.CudaPlatform, n)
            else:
                setattr(C.CudaPlatform, n, f)
        for m in stubs:
            sys.modules.pop(m, None)


def _block_size_backends(case: dict) -> dict:
    """Each named backend's kernel block sizes and ``get_preferred_block_size(DEFAULT_BLOCK_SIZE)`` with no
    current config (where its module imports on CPU), ``CacheConfig.DEFAULT_BLOCK_SIZE``, and CUDA's
    backend priority lists (``_get_backend_priorities``) for ``case["priorities"]`` = [[use_mla, [major, minor]], ...]."""
    from vllm.config.cache import CacheConfig

    registry = next((m for m in ("vllm.v1.attention.backends.registry", "vllm.attention.backends.registry")
                     if importlib.util.find_spec(m) is not None), None)  # the second in 0.11.2-0.13; none in 0.11.0
    if registry is None:
        raise ImportError("no attention backend registry in this release (AttentionBackendEnum: 0.11.2+)")
    AttentionBackendEnum = importlib.import_module(registry).AttentionBackendEnum
    default = int(getattr(CacheConfig, "DEFAULT_BLOCK_SIZE", 16))
    backends: dict = {}
    for name in case["backends"]:
        try:
            cls = AttentionBackendEnum[name].get_class()
            # get_supported_kernel_block_sizes from 0.12, get_preferred_block_size from 0.19: None before
            backends[name] = {
                "kernel_block_sizes": _kernel_sizes(cls) if hasattr(cls, "get_supported_kernel_block_sizes") else None,
                "preferred_block_size": (int(cls.get_preferred_block_size(default))
                                         if hasattr(cls, "get_preferred_block_size") else None)}
        except Exception as e:  # noqa: BLE001 - e.g. flashinfer is not installed on CPU
            backends[name] = {"error": f"{type(e).__name__}: {e}"}
    priorities = []
    for use_mla, capability in case.get("priorities", []):
        with _cuda_platform(capability) as (C, cap):
            order = C._get_backend_priorities(use_mla=use_mla, device_capability=cap)
        priorities.append({"use_mla": use_mla, "capability": capability, "order": [b.name for b in order]})
    return {"default_block_size": default, "backends": backends, "cuda_priorities": priorities}


_ENGINE_FIELDS = (("cache_config", ("block_size", "user_specified_block_size", "enable_prefix_caching",
                                     "gpu_memory_utilization", "enable_extensible_kv_cache", "mamba_cache_mode",
                                     "mamba_block_size", "mamba_page_size_padded", "cache_dtype")),
                  ("scheduler_config", ("max_num_batched_tokens", "max_num_seqs", "async_scheduling",
                                        "enable_chunked_prefill")),
                  ("model_config", ("max_model_len", "dtype")))


def _engine_config_fields(cfg) -> dict:
    out: dict = {}
    for section, names in _ENGINE_FIELDS:
        obj = getattr(cfg, section)
        for n in names:
            if hasattr(obj, n):
                v = getattr(obj, n)
                out[f"{section}.{n}"] = v if isinstance(v, (bool, int, float, type(None))) else str(v)
    runner = getattr(type(cfg), "use_v2_model_runner", None)
    if isinstance(runner, property):
        out["use_v2_model_runner"] = bool(cfg.use_v2_model_runner)
    return out


def _block_size_decision(case: dict, then=None) -> dict:
    """What the release itself resolves from defaults for a model on a CUDA GPU: ``EngineArgs(model=<the
    config directory>, **case["args"])`` -> ``create_engine_config`` with the CUDA platform current (the
    GPU's capability, total memory and name from ``case``), then the attention backend CUDA's selector picks
    (``get_valid_backends``: the first valid one) and ``update_block_size_for_backend`` (the default or
    ``--block-size``, the backend's preference, the hybrid alignment), as the executor runs it.

    Stand-ins, since the compiled libraries are absent on CPU: ``get_flash_attn_version`` answers what the
    CUDA wheel reports on that SM (3 on SM 9.x, 2 below), and ``_find_non_ssm_backends`` (which reads the
    built model's attention layers) answers the selected backend. Backends whose module does not import on
    CPU (FlashInfer) are reported invalid with the ImportError: read ``invalid_backends``.

    ``then(cfg, selector)``, when given, runs last under the same platform and current config (the
    ``kv_dtype`` cases' layer specs and sizing); its dict joins the result."""
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    out: dict = {}
    fa = 3 if case["capability"][0] == 9 else 2
    fa_utils = importlib.import_module(next(  # moved to vllm/v1/attention/backends/ in 0.14
        m for m in ("vllm.v1.attention.backends.fa_utils", "vllm.attention.utils.fa_utils")
        if importlib.util.find_spec(m) is not None))

    names = ("get_flash_attn_version", "is_flash_attn_varlen_func_available", "flash_attn_supports_sinks",
             "flash_attn_supports_kv_cache_dtype")
    saved = {n: getattr(fa_utils, n) for n in names[:2] if hasattr(fa_utils, n)}
    try:
        with _cuda_platform(case["capability"], case.get("total_memory"), case.get("device_name")) as (C, cap):
            selector = importlib.import_module(next(  # vllm/attention/selector.py before 0.14
                m for m in ("vllm.v1.attention.selector", "vllm.attention.selector")
                if importlib.util.find_spec(m) is not None))
            import vllm.v1.attention.backends.flash_attn as FA  # imported before the stand-ins below

            vars(fa_utils).update(get_flash_attn_version=lambda *a, **k: fa,
                                  is_flash_attn_varlen_func_available=lambda: True)
            fa_saved = {n: FA.__dict__.get(n) for n in names}
            for n in names:
                if hasattr(fa_utils, n):
                    setattr(FA, n, getattr(fa_utils, n))  # the release's functions, reading the version above
            try:
                args = EngineArgs(model=case["model_dir"], skip_tokenizer_init=True, load_format="dummy",
                                  **case.get("args", {}))
                cfg = args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
                out["engine_config"] = _engine_config_fields(cfg)
                cache, mc = cfg.cache_config, cfg.model_config
                out["default_block_size"] = int(getattr(type(cache), "DEFAULT_BLOCK_SIZE", 16))
                P = C.CudaPlatform
                if not hasattr(P, "_align_hybrid_block_size"):
                    # before 0.20: HybridAttentionMambaModelConfig aligns a hybrid's block size inside
                    # create_engine_config (0.19.1 vllm/config/vllm.py line 1613), so the engine config
                    # above already carries the aligned size
                    out["hybrid_alignment_in"] = "create_engine_config"
                if not hasattr(P, "update_block_size_for_backend"):  # before 0.22: see _older_release_backend
                    out.update(_older_release_backend(selector, cfg))
                    out["block_size"] = cache.block_size
                    out["mamba_block_size"] = getattr(cache, "mamba_block_size", None)
                    out["mamba_page_size_padded"] = getattr(cache, "mamba_page_size_padded", None)
                    return out
                sel = selector.AttentionSelectorConfig(
                    head_size=mc.get_head_size(), dtype=mc.dtype, kv_cache_dtype=cache.cache_dtype,
                    block_size=case.get("args", {}).get("block_size"), has_sink=bool(case.get("has_sink")),
                    use_mla=bool(getattr(mc, "use_mla", False)))
                # the selector and update_block_size_for_backend run under the engine's config, as in the
                # worker (0.24.0's FlashAttention kernel block sizes read get_current_vllm_config())
                try:
                    from vllm.config import set_current_vllm_config
                except ImportError:
                    set_current_vllm_config = None
                current = set_current_vllm_config(cfg) if set_current_vllm_config else contextlib.nullcontext()
                current.__enter__()
                try:
                    valid, invalid = C.CudaPlatform.get_valid_backends(cap, sel)
                    # (backend, priority) pairs before 0.24 (0.22.0 cuda.py line 288), candidates from 0.24
                    valid = [c if hasattr(c, "priority") else types.SimpleNamespace(
                        backend=c[0], priority=c[1], backend_class=c[0].get_class()) for c in valid]
                    if not valid:  # the selector's own refusal ("No valid attention backend found ...")
                        C.CudaPlatform.get_attn_backend_cls(None, sel)
                    best = min(valid, key=lambda c: c.priority)
                    out["attention_backend"] = best.backend.name
                    out["valid_backends"] = [c.backend.name for c in valid]
                    out["invalid_backends"] = {b.name: r for b, (_, r) in invalid.items()}
                    backend_cls = best.backend_class
                    # (_find_non_ssm_backend, one backend, before 0.31)
                    answers = {"_find_non_ssm_backends": [backend_cls], "_find_non_ssm_backend": backend_cls}
                    found = {n: P.__dict__.get(n) for n in answers}
                    for n, v in answers.items():
                        setattr(P, n, classmethod(lambda cls, vc, _v=v: _v))
                    try:
                        P.update_block_size_for_backend(cfg)
                    finally:
                        for n, f in found.items():
                            if f is not None:
                                setattr(P, n, f)
                            else:
                                delattr(P, n)
                    if then is not None:
                        out.update(then(cfg, selector))
                finally:
                    current.__exit__(None, None, None)
                out["block_size"] = cache.block_size
                out["mamba_block_size"] = getattr(cache, "mamba_block_size", None)
                out["mamba_page_size_padded"] = getattr(cache, "mamba_page_size_padded", None)
            finally:
                for n, f in fa_saved.items():
                    if f is None:
                        if n in FA.__dict__:
                            delattr(FA, n)
                    else:
                        setattr(FA, n, f)
    finally:
        for n, f in saved.items():
            setattr(fa_utils, n, f)
    return out


def _cuda_wheel_standins(case: dict) -> None:
    """For ``kv_dtype`` cases, before any backend is selected: what the CUDA wheel ships, so the selector's
    reasons are the GPU's and not the CPU's (nothing here runs a kernel)."""
    from vllm.v1.attention.backends import fa_utils

    if not hasattr(fa_utils, "flash_attn_varlen_func"):
        # the compiled FlashAttention kernel the TurboQuant backend imports by name (its prefill path):
        # absent without the CUDA build; a stand-in that is never called lets its module import
        def flash_attn_varlen_func(*a, **k):
            raise RuntimeError("no kernel on CPU")

        fa_utils.flash_attn_varlen_func = flash_attn_varlen_func
    if not hasattr(fa_utils, "get_scheduler_metadata"):
        fa_utils.get_scheduler_metadata = fa_utils.flash_attn_varlen_func  # FLASH_ATTN_MLA's compiled import, never called
    # What the CUDA wheel ships on the case's GPU, answered as _block_size_decision answers the FA version:
    # FlashMLA's compiled modules (v1/attention/ops/flashmla.py lines 12-30) and FA3 for MLA
    # (fa_utils.flash_attn_supports_mla reads vllm_flash_attn.flash_attn_interface.is_fa_version_supported)
    from vllm.v1.attention.ops import flashmla

    flashmla._flashmla_C_AVAILABLE = flashmla._flashmla_extension_C_AVAILABLE = True
    fa3 = types.ModuleType("vllm.vllm_flash_attn.flash_attn_interface")
    vars(fa3).update(is_fa_version_supported=lambda v, *a, **k: v == (3 if case["capability"][0] == 9 else 2),
                     flash_attn_varlen_func=fa_utils.flash_attn_varlen_func)  # FLASH_ATTN_MLA_SPARSE's, never called
    sys.modules.setdefault("vllm.vllm_flash_attn", types.ModuleType("vllm.vllm_flash_attn"))
    sys.modules["vllm.vllm_flash_attn.flash_attn_interface"] = fa3


def _kv_dtype_layout(case: dict, cfg, selector) -> dict:
    """A ``kv_dtype`` case: every attention layer's spec as the worker builds it under ``--kv-cache-dtype``
    (and ``--kv-cache-dtype-skip-layers``), then the engine's sizing of ``available_memory_bytes``.

    Per layer, with the engine config ``cfg`` current and the CUDA platform of the case's GPU:
    the layer's cache dtype as ``Attention.__init__`` / ``MLAAttention.__init__`` resolve it (0.34.0
    model_executor/layers/attention/attention.py lines 292-336, mla_attention.py lines 500-512: a skipped
    layer index, or ``sliding_window`` for a windowed layer, keeps ``auto``), the backend the release's
    selector picks for that dtype (``get_attn_backend``: vLLM's own "No valid attention backend" error when
    none takes it), the release's own ``get_kv_cache_spec`` run on a stand-in of the layer that carries only
    the attributes it reads, and ``customize_attention_spec(backend, spec)`` (v1/worker/gpu/attn_utils.py
    line 151: the backend's packing). Then ``get_global_kv_cache_groups`` -> ``get_kv_cache_configs`` ->
    ``generate_scheduler_kv_cache_config`` as ``EngineCore._initialize_kv_caches`` calls them.

    ``case["layers"]``: ``[[kind, sliding_window_or_null, layer_name], ...]`` with kind ``attention`` or
    ``mla`` (the layer index is the release's ``extract_layer_index`` of the name) (kvplan's layer list; heads and head sizes come from vLLM's model config)."""
    from vllm.model_executor.layers.attention.attention import Attention
    from vllm.utils.torch_utils import kv_cache_dtype_str_to_dtype
    from vllm.v1.worker.utils import customize_attention_spec

    cache, mc, pc = cfg.cache_config, cfg.model_config, cfg.parallel_config
    skip = set(getattr(cache, "kv_cache_dtype_skip_layers", None) or [])
    cached = getattr(selector, "_cached_get_attn_backend", None)
    if cached is not None:
        cached.cache_clear()
    backends: dict = {}
    specs: dict = {}
    layer_dtypes: dict = {}
    from vllm.model_executor.models.utils import extract_layer_index

    for kind, window, name in case["layers"]:
        dt = cache.cache_dtype
        if skip and (str(extract_layer_index(name)) in skip or (kind == "attention" and window is not None and "sliding_window" in skip)):
            dt = "auto"
        key = (kind, dt, window is not None)
        if key not in backends:
            if kind == "mla":
                backends[key] = selector.get_attn_backend(mc.get_head_size(), mc.dtype, dt, use_mla=True)
            else:
                backends[key] = selector.get_attn_backend(mc.get_head_size(), mc.dtype, dt,
                                                          has_sliding_window=window is not None)
        backend = backends[key]
        if kind == "mla":
            from vllm.model_executor.layers.attention.mla_attention import MLAAttention

            hf = mc.hf_text_config
            layer = types.SimpleNamespace(
                kv_cache_dtype=dt, head_size=mc.get_head_size(), sliding_window=None, topk_buffer_width=None,
                indexer=None, non_causal_multi_token_decode=False,
                # the backend's impl answers the fp8_ds_mla row (AttentionImpl.get_fp8_ds_mla_row_bytes)
                impl=types.SimpleNamespace(get_fp8_ds_mla_row_bytes=lambda: backend.get_impl_cls()
                                           .get_fp8_ds_mla_row_bytes(types.SimpleNamespace(
                                               kv_lora_rank=hf.kv_lora_rank, qk_rope_head_dim=hf.qk_rope_head_dim))))
            spec = MLAAttention.get_kv_cache_spec(layer, cfg)
        else:
            from vllm.v1.attention.backend import AttentionType

            layer = types.SimpleNamespace(
                attn_type=AttentionType.DECODER, kv_cache_dtype=dt, sliding_window=window, attn_backend=backend,
                num_kv_heads=mc.get_num_kv_heads(pc), head_size=mc.get_head_size(),
                head_size_v=mc.get_head_size(), kv_cache_torch_dtype=kv_cache_dtype_str_to_dtype(dt, mc))
            spec = Attention.get_kv_cache_spec(layer, cfg)
        specs[name] = customize_attention_spec(backend, spec)
        layer_dtypes[name] = dt
    table: list = []
    for name, spec in specs.items():
        row = {"backend": backends[next(k for k in backends if k[1] == layer_dtypes[name])].get_name(),
               "kv_cache_dtype": layer_dtypes[name], **_spec_summary(spec),
               **{k: getattr(spec, k) for k in ("num_head_slots", "state_content_bytes", "real_page_size_bytes")
                  if getattr(spec, k, None) is not None},
               "kv_quant_mode": getattr(getattr(spec, "kv_quant_mode", None), "name", None)}
        if row not in table:
            table.append(row)
    out: dict = {"spec_table": table, "block_size_after_backend": cache.block_size,
                 "skip_layers": sorted(skip), "skip_page_size_padded": getattr(cache, "skip_page_size_padded", None)}
    memory = int(case["available_memory_bytes"])
    from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout

    names = [l.name for l in get_supported_kv_cache_layouts(sorted(set(backends.values()), key=str))]
    out["kv_cache_layout"] = resolve_kv_cache_layout(cfg, [names], list(specs.values())).name
    groups = P.get_global_kv_cache_groups(cfg, [specs])
    configs = P.get_kv_cache_configs(cfg, [specs], [memory], groups)
    sched = U.generate_scheduler_kv_cache_config(configs)
    out["groups"] = [_group_summary(g) for g in groups]
    out["num_blocks"] = sched.num_blocks
    out["max_concurrency"] = U.get_max_concurrency_for_kv_cache_config(cfg, sched)
    out["max_model_len"] = mc.max_model_len
    return out


def _older_release_backend(selector, cfg) -> dict:
    """Before 0.22 (no ``update_block_size_for_backend``): ``create_engine_config`` has already settled the
    block size (``CudaPlatform.check_and_update_config``: 16 when unset, the MLA backends' own sizes; the
    hybrid alignment in ``HybridAttentionMambaModelConfig``), and the backend is the one the release's
    selector (``get_attn_backend``, as the attention layers call it) returns for the model under that config."""
    cache, mc = cfg.cache_config, cfg.model_config
    cached = getattr(selector, "_cached_get_attn_backend", None)
    if cached is not None:
        cached.cache_clear()  # keyed on the arguments, not on the platform's capability
    fn = selector.get_attn_backend
    params = inspect.signature(fn).parameters
    kw = {"head_size": mc.get_head_size(), "dtype": mc.dtype, "kv_cache_dtype": cache.cache_dtype,
          "block_size": cache.block_size, "use_mla": bool(getattr(mc, "use_mla", False)), "has_sink": False}
    try:
        from vllm.config import set_current_vllm_config
    except ImportError:
        set_current_vllm_config = None
    with set_current_vllm_config(cfg) if set_current_vllm_config else contextlib.nullcontext():
        backend_cls = fn(**{k: v for k, v in kw.items() if k in params})
    return {"attention_backend": backend_cls.get_name()}


def main() -> None:
    if "--check-imports" in sys.argv[1:]:
        _check_imports()
        return
    if "--config-hooks" in sys.argv[1:] or "--engine-defaults" in sys.argv[1:]:
        data = json.load(sys.stdin)
        _REAL_STDOUT.write(json.dumps([run_hook(c) for c in data], sort_keys=True, default=str) + "\n")
        _REAL_STDOUT.flush()
        return
    data = json.load(sys.stdin)
    out: dict | list
    if isinstance(data, dict) and "hooks" in data:  # layout cases and config-hook cases in one process
        out = {"results": [run_case(c) for c in data["cases"]], "hooks": [run_hook(c) for c in data["hooks"]]}
    elif isinstance(data, list):
        out = [run_case(c) for c in data]
    else:
        out = run_case(data)
    _REAL_STDOUT.write(json.dumps(out, sort_keys=True, default=str) + "\n")
    _REAL_STDOUT.flush()


if __name__ == "__main__":
    main()
