#!/usr/bin/env python3
"""Build vLLM's own model classes on the meta device and record every layer's KV-cache spec.

The architecture conformance harness (issue #23). Like ``vllm_runner.py`` this runs INSIDE an
environment that has vLLM (a golden release env: the base venv's interpreter with the release's
unpacked sources first on ``PYTHONPATH``), as a standalone script: it imports nothing from kvplan,
and kvplan never imports it. ``scripts/golden/make_goldens.py --architectures`` drives it.

For each architecture vLLM's registry lists (``vllm/model_executor/models/registry.py``:
``_TEXT_GENERATION_MODELS``, ``_MULTIMODAL_MODELS``, ``_SPECULATIVE_DECODING_MODELS``):

1. the config: the genuine ``config.json`` the driver passes (kvplan's catalog,
   the shared ``configs`` folder beside the checkout), else the defaults of the transformers configuration class of a
   ``model_type`` whose transformers model mappings name the architecture, with
   ``architectures`` set (``config_source`` says which);
2. vLLM's own ``EngineArgs(model=<dir>, dtype="bfloat16", skip_tokenizer_init=True, trust_remote_code=False).create_engine_config()`` (the CLI's path:
   the model config, the cache config with the model-wide sliding window of
   ``engine/arg_utils.py``, the model-config hooks of ``VllmConfig.__post_init__``,
   ``HybridAttentionMambaModelConfig`` included), a world-size-1 gloo process group and
   ``initialize_model_parallel(1, 1)`` (again for every model: the EP group exists only for MoE);
3. ``ModelRegistry.resolve_model_cls`` and the class constructed under ``torch.device("meta")``
   (no weights);
4. ``Platform.update_block_size_for_backend`` (the base-platform classmethod the executors call
   after loading: backend block-size preference, then the hybrid Mamba/attention alignment);
5. the layer walk of ``vllm/v1/worker/gpu/attn_utils.py::get_kv_cache_spec``: every
   ``AttentionLayerBase`` of the static forward context, KV-sharing layers skipped (recorded with
   their target), ``get_kv_cache_spec(vllm_config)`` on the others.

STUBS (what would need CUDA; nothing else is replaced):

* ``get_attn_backend_cls`` of the (unspecified, no-CUDA) platform: returns vLLM's Triton
  backends, the ones that import without compiled kernels: ``TRITON_ATTN`` for attention,
  ``TRITON_MLA`` for MLA, ``FLASHMLA_SPARSE`` for sparse MLA. The backend chooses the block
  size vLLM prefers (phase 1 of ``update_block_size_for_backend``) and the sliding-window block
  size, so ``block_size`` and ``page_size_bytes`` are those of these backends; heads, head sizes,
  windows, chunks, dtypes and Mamba state shapes do not depend on it.
* ``customize_attention_spec(backend, spec)`` (the GPU runner's per-backend repacking) is not
  applied: the specs are recorded as the layers return them.

Input (a file): a JSON list of ``{"architecture", "registry", "config" (dict or null),
"config_source", "read_as"}``. A speculative head's item adds ``target_config`` and
``speculative_config`` (vLLM's ``--speculative-config``; ``config`` is then the drafter checkpoint's,
or null for MTP heads, which vLLM derives from the target's config): the target is built, then the
drafter as the GPU worker's speculator loads it, and the record holds the drafter's layers.
Output (a file, rewritten after each record): a JSON list of records ``{"architecture", "registry",
"status", "reason", "config_source", "config", "model_class", "block_size", "layers",
"spec_table", "kv_sharing", "vllm_version"}``: ``status`` is ``built`` (layers recorded),
``no_kv_cache`` (built, no layer has a KV cache), ``failed`` (``reason``: the exception, one
line, and where) or ``no_config`` (no genuine config and no transformers class names it).
``layers`` is ``[[name, spec_index], ...]`` in registration order; ``spec_table`` holds the
distinct specs: ``class``, ``kind``, the dataclass fields (dtypes as torch names, shapes as
lists) and ``page_size_bytes``.

Usage::

    python arch_runner.py --list                  # the registry: {"text": [...], ...}
    python arch_runner.py items.json out.json
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import sys
import tempfile
import traceback

STUBS = [
    "fused_moe select_unquantized_moe_backend -> TRITON experts (the oracle checks CUDA kernels)",
    "config quantization_config dropped (weight-quantization kernels need CUDA; kv_cache_scheme kept in "
    "'config' but not applied: the cache dtype is auto = bfloat16)",
    "torch.accelerator.current_device_index -> 0 (sparse MLA reads the SM count of the current device)",
    "torch.accelerator.empty_cache -> no-op (the workspace manager calls it before growing a meta buffer)",
    "vllm_config.device_config.device -> meta after VllmConfig is built (DeviceConfig('cuda') is given; the "
    "Transformers backend materialises parameters there)",
    "platform.current_device -> meta and platform.device_type -> 'meta' (buffers allocated on the device)",
    "mla_attention.get_mla_prefill_backend and platform.get_mla_prefill_backend_cls -> CPUSDPAMLAPrefillBackend "
    "(FlashAttention varlen is compiled-only)",
    "registry._run_in_subprocess -> in-process call (the subprocess only shields CUDA; same _ModelInfo)",
    "platform.num_compute_units -> 132 (an H100/H200's SM count; MLA workspace sizing)",
    "torchvision fake-kernel registrations skipped (CUDA-only wheel; image processors are imported, never run)",
    "platform.get_attn_backend_cls -> TRITON_ATTN / TRITON_MLA / FLASHMLA_SPARSE (no CUDA platform here)",
    "customize_attention_spec (GPU runner repacking per backend) not applied",
    "torch.tensor(<a Python number>) during construction -> a CPU tensor (constants a layer reads back with "
    ".item(): Gemma3n's activation sparsity, xIELU's alpha/beta; everything else stays on the meta device)",
    "CUDA-only kernel packages cutlass (CuTe DSL), quack (CuTe DSL kernels), tilelang (JIT kernels: mHC) and "
    "cuda.bindings: imports resolve to inert placeholders "
    "(kernel modules the model files import at load; no kernel runs) and vllm has_cutedsl() -> False",
    "torch.cuda.Stream / torch.cuda.Event -> inert placeholders (auxiliary CUDA streams and events a model "
    "creates for overlapping GEMMs)",
    "deepseek_v4 o_proj's current_platform.get_device_capability -> 9.0 (its FP8 einsum recipe asserts a CUDA "
    "device; that module only)",
    "fused_moe config's current_platform.is_cuda_alike -> True (non-gated MoE activations are refused off "
    "CUDA/XPU/ROCm; that module only)",
    "triton.set_allocator -> no-op where the installed Triton lacks it (OLMo-hybrid's gated delta net "
    "registers the device allocator its kernels use; no kernel runs)",
    "the model module's _get_alibi_slopes runs on the CPU (BLOOM: the slopes are read back with .tolist(), "
    "as on a GPU; that function only)",
]
REGISTRY_DICTS = {
    "text": "_TEXT_GENERATION_MODELS",
    "multimodal": "_MULTIMODAL_MODELS",
    "speculative": "_SPECULATIVE_DECODING_MODELS",
    "transformers": "_TRANSFORMERS_SUPPORTED_MODELS",
}
_SUFFIXES = ("ForConditionalGeneration", "ForCausalLM", "LMHeadModel", "ForCausalLMV", "Model", "Generation")
TIMEOUT_S = int(os.environ.get("ARCH_RUNNER_TIMEOUT", "120"))


def registry_lists() -> dict:
    """The registry's architectures by category, and the removed ones with the release that
    removed them (``_PREVIOUSLY_SUPPORTED_MODELS``)."""
    from vllm.model_executor.models import registry as R

    out: dict[str, list | dict] = {k: sorted(getattr(R, v)) for k, v in REGISTRY_DICTS.items()}
    out["removed"] = dict(sorted(R._PREVIOUSLY_SUPPORTED_MODELS.items()))
    return out


def _arch_to_model_type() -> dict:
    """transformers' auto mappings inverted: architecture class name -> model_type. A ``*ForCausalLM``
    class named under both a composite model_type and its ``<model_type>_text`` (Llama4ForCausalLM:
    ``llama4`` and ``llama4_text``) reads the text one: the class is the language model alone, and a
    text-only checkpoint of it carries the text config."""
    from transformers.models.auto import modeling_auto as MA

    named: dict = {}
    for name in dir(MA):
        m = getattr(MA, name)
        if name.endswith("_MAPPING_NAMES") and isinstance(m, dict):
            for mt, cls in m.items():
                for c in (cls if isinstance(cls, (list, tuple)) else [cls]):
                    if isinstance(c, str) and mt not in named.setdefault(c, []):
                        named[c].append(mt)
    out = {}
    for c, mts in named.items():
        text = [mt for mt in mts if mt.endswith("_text") and mt.removesuffix("_text") in mts]
        out[c] = text[0] if c.endswith("ForCausalLM") and text else mts[0]
    return out


def _norm(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


def default_config(arch: str, a2mt: dict) -> tuple[dict | None, str]:
    """The defaults of the config class vLLM would read for this architecture's model_type:
    vLLM's own config registry first (``_CONFIG_REGISTRY``, as ``get_config`` does), else
    transformers'. The model_type: the one transformers' model mappings name the architecture
    under, else the model_type whose name equals the architecture's without its suffix."""
    from transformers import CONFIG_MAPPING
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    mt, how = a2mt.get(arch), "named by transformers' model mappings"
    if mt is None:
        base = arch
        for suf in _SUFFIXES:
            if base.endswith(suf) and len(base) > len(suf):
                base = base[: -len(suf)]
                break
        known = {_norm(k): k for k in list(CONFIG_MAPPING.keys()) + list(_CONFIG_REGISTRY.keys())}
        mt, how = known.get(_norm(base)), "matched by name"
    if mt is None:
        return None, "no genuine config, and no config class names or matches this architecture"
    try:
        cls = _CONFIG_REGISTRY[mt] if mt in _CONFIG_REGISTRY else CONFIG_MAPPING[mt]
        cfg = cls()
    except Exception as e:  # noqa: BLE001
        return None, f"config class for {mt!r} has no usable defaults: {type(e).__name__}: {e}"
    d = cfg.to_dict()
    d["architectures"] = [arch]
    d["model_type"] = mt
    owner = "vLLM" if mt in _CONFIG_REGISTRY else "transformers"
    return d, f"{owner} {type(cfg).__name__}() defaults (model_type {mt}, {how})"


def _spec_dict(spec) -> dict:
    import torch

    out = {"class": type(spec).__name__}
    for f in dataclasses.fields(spec):
        v = getattr(spec, f.name)
        if isinstance(v, torch.dtype):
            v = str(v).removeprefix("torch.")
        elif isinstance(v, (tuple, list)):
            v = json.loads(json.dumps(v, default=lambda x: str(x).removeprefix("torch.")))
        elif hasattr(v, "name") and hasattr(v, "value"):  # enums
            v = v.name
        elif not isinstance(v, (int, float, str, bool, type(None))):
            v = str(v)
        out[f.name] = v
    try:
        out["page_size_bytes"] = spec.page_size_bytes
    except Exception as e:  # noqa: BLE001
        out["page_size_bytes"] = f"error: {type(e).__name__}"
    return out


def _where(tb) -> str:
    frames = [f for f in traceback.extract_tb(tb) if "/vllm/" in f.filename or "/transformers/" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    path = f.filename
    for key in ("/vllm/", "/transformers/"):
        if key in path:
            path = key.strip("/") + "/" + path.split(key, 1)[1]
    return f"{path}:{f.lineno} {f.name}"


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    if len(msg) > 300:
        msg = msg[:297] + "..."
    return f"{type(e).__name__}: {msg}"


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout(f"construction took over {TIMEOUT_S} s")


SETUP_SKIPPED: list[str] = []  # stubs another release's layout did not allow (--cross-check on any vLLM)


def setup() -> None:
    """Apply the stubs, each on its own: a stub whose target this release lacks is skipped and
    named in ``setup_skipped`` of every record (never the case on 0.34.0)."""
    for fn in (_stub_torchvision, _stub_cuda_only_packages, _stub_attention_backend, _stub_registry_subprocess,
               _stub_mla_prefill, _stub_moe, _stub_devices):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - recorded
            SETUP_SKIPPED.append(f"{fn.__name__}: {type(e).__name__}: {e}")


def _stub_torchvision() -> None:
    import torch.library as L

    # torchvision: the only wheel for this torch is a CUDA build whose compiled ops cannot load;
    # its fake-kernel registrations for those ops are skipped so the pure-Python transforms the
    # multimodal model files import (image processors, never run here) can be imported.
    orig = L.register_fake

    def tolerant(op, *a, **k):
        if isinstance(op, str) and op.startswith("torchvision::"):
            return lambda fn: fn
        return orig(op, *a, **k)

    L.register_fake = tolerant
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - recorded per model when a file needs it
        pass
    finally:
        L.register_fake = orig


class _CudaOnlyName(type):
    """A name imported from a CUDA-only kernel package (CuTe DSL's ``cutlass``, ``cuda.bindings``): a
    class, so it also serves as a base class; calling it with one callable returns that callable (a
    decorator such as ``@cute.jit`` / ``@dsl_user_op``), anything else returns the name itself."""

    def __getattr__(cls, name):
        return _cuda_only_attr(name)

    def __getitem__(cls, item):
        return cls

    def __call__(cls, *args, **kwargs):
        return args[0] if len(args) == 1 and not kwargs and callable(args[0]) else cls

    def __or__(cls, other):
        return cls

    __ror__ = __add__ = __radd__ = __mul__ = __rmul__ = __or__


_CUDA_ONLY_PACKAGES = ("cutlass", "cuda", "quack", "tilelang")


def _cuda_only_attr(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return _CudaOnlyName(name, (), {})


class _CudaOnlyFinder:
    """``import cutlass...`` / ``quack...`` / ``tilelang...`` / ``cuda.bindings...`` (absent here) resolve to
    modules whose every attribute is a ``_CudaOnlyName``."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        import importlib.machinery

        if fullname.split(".")[0] in _CUDA_ONLY_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, cls, is_package=True)
        return None

    @staticmethod
    def create_module(spec):
        import types

        mod = types.ModuleType(spec.name)
        mod.__path__ = []
        mod.__getattr__ = _cuda_only_attr
        return mod

    @staticmethod
    def exec_module(module):
        pass


def _platform_view(module: str, **overrides) -> None:
    """``module``'s ``current_platform`` answers ``overrides``, everything else as the platform does."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ImportError:
        return
    platform = vars(mod)["current_platform"]

    class _View:
        def __getattr__(self, name):
            return overrides[name] if name in overrides else getattr(platform, name)

    vars(mod)["current_platform"] = _View()


def _stub_cuda_only_packages() -> None:
    import importlib.util

    import torch

    # Model files import CUDA-only kernel modules at load time (Kimi-Linear / Kimi-K3 / MiniMax-M3 import
    # CuTe DSL GEMMs); the kernels never run here, so their imports get inert names. vLLM's own
    # availability check still answers "no CuTe DSL", as it would on this machine.
    if importlib.util.find_spec("cutlass") is None:
        sys.meta_path.append(_CudaOnlyFinder)
        from vllm.utils import import_utils

        import_utils.has_cutedsl = lambda: False
    # DeepSeek-V4's output projection picks its FP8 einsum recipe by the GPU's compute capability
    # (asserting one exists): Hopper's, as for the SM count below. Only that module sees it.
    from vllm.platforms.interface import DeviceCapability

    _platform_view("vllm.models.deepseek_v4.nvidia.ops.o_proj",
                   get_device_capability=lambda *a, **k: DeviceCapability(9, 0))
    # Non-gated MoE activations (Nemotron-H's relu2 experts) are refused off CUDA/XPU/ROCm by the MoE
    # config's platform check; the experts' kernel never touches the KV cache. Only that module sees it.
    _platform_view("vllm.model_executor.layers.fused_moe.config", is_cuda_alike=lambda *a, **k: True)
    # Auxiliary streams and their events (DeepSeek-V4 overlaps GEMMs on three) need a CUDA device.
    for name in ("Stream", "Event"):
        setattr(torch.cuda, name, _CudaOnlyName(name, (), {}))


def _stub_attention_backend() -> None:
    from vllm.platforms import current_platform
    from vllm.v1.attention.backends.registry import AttentionBackendEnum as E

    def _sel(cls, selected_backend, attn_selector_config, num_heads=None):
        c = attn_selector_config
        if c.use_mla:
            return (E.FLASHMLA_SPARSE if c.use_sparse else E.TRITON_MLA).get_path()
        return E.TRITON_ATTN.get_path()

    type(current_platform).get_attn_backend_cls = classmethod(_sel)


def _stub_registry_subprocess() -> None:
    # The registry inspects a model class in a subprocess "to avoid initializing CUDA"; there is no
    # CUDA here, so it runs in this process (same _ModelInfo, without a 7 s import per model).
    from vllm.model_executor.models import registry as R

    R._run_in_subprocess = lambda fn: fn()


def _stub_mla_prefill() -> None:
    # MLA's dense prefill backend: vLLM picks FlashAttention's varlen kernel (compiled only); the
    # CPU SDPA one constructs without kernels. The prefill path never touches the KV-cache spec.
    from vllm.model_executor.layers.attention import mla_attention as MA
    from vllm.v1.attention.backends.mla.prefill.cpu_sdpa import CPUSDPAMLAPrefillBackend

    MA.get_mla_prefill_backend = lambda vllm_config=None: CPUSDPAMLAPrefillBackend
    # ... and the platform's own choice, which model files that select a prefill backend themselves
    # (Kimi-Linear / Kimi-K3's MLA) reach through the prefill selector.
    from vllm.platforms import current_platform

    type(current_platform).get_mla_prefill_backend_cls = classmethod(lambda cls, *a, **k: CPUSDPAMLAPrefillBackend)


def _stub_moe() -> None:
    # Unquantized MoE: the platform oracle has no list for an unspecified platform; Triton's
    # experts construct without kernels (weights on meta). The MoE kernel never touches the KV cache.
    from vllm.model_executor.layers.fused_moe import unquantized_fused_moe_method as UFM
    from vllm.model_executor.layers.fused_moe.oracle import unquantized as UQ

    def _triton_moe(moe_config):
        return UQ.UnquantizedMoeBackend.TRITON, UQ.backend_to_kernel_cls(UQ.UnquantizedMoeBackend.TRITON)[0]

    UQ.select_unquantized_moe_backend = UFM.select_unquantized_moe_backend = _triton_moe


def _stub_devices() -> None:
    import torch
    from vllm.platforms import current_platform

    # Modules that allocate on the "current device" (RMSNormGated, ...): the meta device.
    type(current_platform).current_device = classmethod(lambda cls, *a, **k: torch.device("meta"))
    # ... and buffers allocated on ``device=current_platform.device_type`` (DeepSeek-V3.2's top-k
    # indices, ...): the unspecified platform's device type is "", which torch refuses.
    type(current_platform).device_type = "meta"
    # Sparse MLA reads the SM count of torch.accelerator's current device (none here).
    torch.accelerator.current_device_index = lambda *a, **k: 0
    # Workspaces (sparse MLA) release the allocator's cache before growing: nothing to release.
    torch.accelerator.empty_cache = lambda *a, **k: None
    # MLA layers size a workspace by the GPU's SM count: an H100/H200's 132.
    type(current_platform).num_compute_units = classmethod(lambda cls, *a, **k: 132)
    # OLMo-hybrid's gated delta net registers Triton's device allocator (TMA descriptors of its
    # kernels) at construction; the Triton installed here has no set_allocator.
    from vllm.triton_utils import triton

    if not hasattr(triton, "set_allocator"):
        triton.set_allocator = lambda *a, **k: None


_DIST = False


def _dist(vc) -> None:
    """A world-size-1 gloo group, once; the model-parallel groups again for every model (which
    groups exist depends on the config: the EP group only for MoE models)."""
    global _DIST
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.distributed.parallel_state import destroy_model_parallel

    with set_current_vllm_config(vc):
        if not _DIST:
            port = 29500 + os.getpid() % 1000
            init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                         distributed_init_method=f"tcp://127.0.0.1:{port}", backend="gloo")
            _DIST = True
            # what the GPU worker does at init_device (sparse MLA sizes its buffers from it)
            from vllm.v1.worker.workspace import init_workspace_manager

            init_workspace_manager(torch.device("meta"))
        else:
            destroy_model_parallel()
        initialize_model_parallel(1, 1)


@contextlib.contextmanager
def _meta_device():
    """Construction on the meta device (no weights). Tensors made from Python numbers
    (``torch.tensor(0.95)``: an activation's sparsity quantile, xIELU's constants) are made on the CPU,
    as they would be real values on a GPU: the layer reads them back with ``.item()``."""
    import torch

    orig = torch.tensor

    def tensor(data, *args, **kwargs):
        if "device" not in kwargs and isinstance(data, (int, float, bool)):
            kwargs["device"] = "cpu"
        return orig(data, *args, **kwargs)

    torch.tensor = tensor
    try:
        with torch.device("meta"):
            yield
    finally:
        torch.tensor = orig


@contextlib.contextmanager
def _alibi_on_cpu(cls):
    """The model module's ALiBi slope helper (``_get_alibi_slopes``, BLOOM) computed on the CPU: the
    attention layer reads the slopes back as Python numbers (``.tolist()``), which a meta tensor cannot
    give. Nothing else leaves the meta device (see STUBS)."""
    import torch

    mod = sys.modules.get(cls.__module__)
    helper = getattr(mod, "_get_alibi_slopes", None)
    if helper is None:
        yield
        return

    def on_cpu(*args, **kwargs):
        with torch.device("cpu"):
            return helper(*args, **kwargs)

    mod._get_alibi_slopes = on_cpu
    try:
        yield
    finally:
        mod._get_alibi_slopes = helper


def _write_config(path: str, cfg: dict, read_as: dict | None) -> str:
    """``path/config.json`` for vLLM: without ``quantization_config`` (see STUBS); a model_type whose
    config class is remote code written as its base class's (``read_as``)."""
    os.makedirs(path)
    written = {k: v for k, v in cfg.items() if k != "quantization_config"}
    if read_as:
        written["model_type"] = read_as["model_type"]
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(written, f)
    return path


def _construct_drafter(vc, arch: str, rec: dict) -> set:
    """The drafter as ``vllm/v1/worker/gpu/spec_decode/eagle/utils.py::load_eagle_model`` builds it
    (``apply_draft_overrides``, ``get_model`` with the draft model config under the ``eagle_head``
    tag; here ``initialize_model`` on the meta device: no weights), then ``Speculator.load_model``'s
    bookkeeping: the attention layers that appeared are the drafter's, marked ``is_draft_layer``."""
    import torch
    from vllm.compilation.backends import set_model_tag
    from vllm.config import get_layers_from_vllm_config
    from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
    from vllm.model_executor.model_loader.utils import initialize_model

    sc = vc.speculative_config
    dmc = sc.draft_model_config
    drafted = (dmc.architectures or [None])[0]
    rec["drafter_architecture"] = drafted
    if drafted != arch:
        raise ValueError(f"vLLM resolved the drafter as {drafted!r}, not {arch!r}")
    before = set(get_layers_from_vllm_config(vc, AttentionLayerBase))
    dvc = sc.apply_draft_overrides(vc)
    with set_model_tag("eagle_head"), _meta_device():
        model = initialize_model(vllm_config=dvc, model_config=dmc)
    rec["model_class"] = f"{type(model).__module__}.{type(model).__name__}"
    layers = get_layers_from_vllm_config(vc, AttentionLayerBase)
    drafter = set(layers) - before
    for name in drafter:
        layers[name].is_draft_layer = True
    return drafter


def build(item: dict, a2mt: dict) -> dict:
    import torch
    from vllm.config import get_layers_from_vllm_config, set_current_vllm_config
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
    from vllm.model_executor.models.registry import ModelRegistry
    from vllm.platforms import current_platform

    arch = item["architecture"]
    rec = {"architecture": arch, "registry": item.get("registry"), "status": "failed", "reason": None,
           "config_source": item.get("config_source"), "config": item.get("config"), "model_class": None,
           "block_size": None, "layers": [], "spec_table": [], "kv_sharing": {}}
    spec_cfg = item.get("speculative_config")  # a speculative head: built beside its target, as vLLM does
    cfg = item.get("target_config") if spec_cfg else item.get("config")
    if cfg is None and not spec_cfg:
        cfg, how = default_config(arch, a2mt)
        rec["config_source"] = how
        rec["config"] = cfg
    if cfg is None:
        rec["status"] = "no_config"
        rec["reason"] = rec["config_source"] or "no config"
        return rec
    if spec_cfg:
        rec["target_config"], rec["speculative_config"] = cfg, spec_cfg
    stage = "ModelConfig"
    d = None
    try:
        d = tempfile.mkdtemp(prefix="arch_")
        target_dir = _write_config(os.path.join(d, "target"), cfg, item.get("read_as"))
        if spec_cfg and item.get("config") is not None:  # a separate drafter checkpoint (EAGLE, EAGLE-3)
            spec_cfg = {**spec_cfg, "model": _write_config(os.path.join(d, "draft"), item["config"], None)}
        stage = "create_engine_config"
        # vLLM's own path from the CLI arguments to the VllmConfig (engine/arg_utils.py
        # EngineArgs.create_engine_config: the model config, then the cache config with the
        # model-wide sliding window, the hooks in VllmConfig.__post_init__; the speculative config
        # derives the drafter's model config, MTP heads from the target's config)
        # ARCH_KV_CACHE_DTYPE (make_goldens.py --architectures --kv-cache-dtype fp8): vLLM's --kv-cache-dtype
        kv = {"kv_cache_dtype": os.environ["ARCH_KV_CACHE_DTYPE"]} if os.environ.get("ARCH_KV_CACHE_DTYPE") else {}
        rec.update(kv)
        args = EngineArgs(model=target_dir, skip_tokenizer_init=True, dtype="bfloat16", trust_remote_code=False,
                          speculative_config=spec_cfg, **kv)
        vc = args.create_engine_config()
        mc = vc.model_config
        # The Transformers backend materialises parameters on device_config.device: meta here.
        vc.device_config.device = torch.device("meta")
        _dist(vc)
        stage = "resolve_model_cls"
        cls, _ = ModelRegistry.resolve_model_cls(mc.architectures, model_config=mc)
        rec["model_class"] = f"{cls.__module__}.{cls.__name__}"
        stage = "construct (meta device)"
        with set_current_vllm_config(vc), _meta_device(), _alibi_on_cpu(cls):
            model = cls(vllm_config=vc, prefix="")
        if os.environ.get("ARCH_PARAMETERS") == "1":  # make_goldens.py --parameters
            rec["parameters"] = [[n, list(p.shape), str(p.dtype).removeprefix("torch.")]
                                 for n, p in model.named_parameters()]
        wanted = None
        if spec_cfg:
            stage = "construct the drafter (meta device)"
            wanted = _construct_drafter(vc, arch, rec)
        stage = "update_block_size_for_backend"
        with set_current_vllm_config(vc):
            current_platform.update_block_size_for_backend(vc)
        rec["block_size"] = vc.cache_config.block_size
        stage = "get_kv_cache_spec"
        table: list = []
        with set_current_vllm_config(vc):
            for name, layer in get_layers_from_vllm_config(vc, AttentionLayerBase).items():
                if wanted is not None and name not in wanted:
                    continue  # a speculative head's golden holds the drafter's layers
                tgt = getattr(layer, "kv_sharing_target_layer_name", None)
                if tgt:
                    rec["kv_sharing"][name] = tgt
                    continue
                spec = layer.get_kv_cache_spec(vc)
                if not spec:
                    continue
                sd = _spec_dict(spec)
                if sd not in table:
                    table.append(sd)
                rec["layers"].append([name, table.index(sd)])
        rec["spec_table"] = table
        rec["status"] = "built" if rec["layers"] else "no_kv_cache"
        if not rec["layers"]:
            rec["reason"] = "built; no layer registers a KV cache"
    except _Timeout as e:
        rec["reason"] = f"{stage}: {e}"
    except BaseException as e:  # noqa: BLE001 - every failure is recorded, one line
        if isinstance(e, KeyboardInterrupt):
            raise
        where = _where(e.__traceback__)
        # the config's temporary directory named as a role, so a re-run writes the same golden
        text = _one_line(e).replace(d, "<config dir>") if d else _one_line(e)
        rec["reason"] = f"{stage}: {text}" + (f" [{where}]" if where else "")
    finally:
        if d:
            shutil.rmtree(d, ignore_errors=True)
    return rec


def main() -> None:
    import logging

    if os.environ.get("ARCH_RUNNER_DEBUG") != "1":
        logging.disable(logging.WARNING)
    setup()
    if "--list" in sys.argv[1:]:
        print(json.dumps(registry_lists()), end="", file=sys.__stdout__)
        return
    with open(sys.argv[1]) as f:
        items = json.load(f)
    a2mt = _arch_to_model_type()
    import vllm

    out = []
    signal.signal(signal.SIGALRM, _alarm)
    for item in items:
        signal.alarm(TIMEOUT_S)
        try:
            rec = build(item, a2mt)
        finally:
            signal.alarm(0)
        rec["vllm_version"] = vllm.__version__
        rec["stubs"] = STUBS
        if SETUP_SKIPPED:
            rec["setup_skipped"] = SETUP_SKIPPED
        out.append(rec)
        print(f"{rec['architecture']}: {rec['status']} {rec['reason'] or ''}"[:300], file=sys.stderr, flush=True)
        with open(sys.argv[2], "w") as f:  # after each record: a crash keeps the ones before
            json.dump(out, f)


if __name__ == "__main__":
    main()
