#!/usr/bin/env python3
"""The dummy sampler pass of vLLM's profile run, measured from a release's own code on the CPU.

Run inside a release environment (imports nothing from kvplan; ``scripts/golden/release_env.sh``)::

    PYTHONPATH=$(RELEASE_BASE=... scripts/golden/release_env.sh 0.19.0 | tail -1 | cut -d= -f2) \\
        $RELEASE_BASE/bin/python scripts/golden/profile_terms.py --out tests/golden/profile_terms

What it runs: the release's ``GPUModelRunner._dummy_sampler_run`` (v1/worker/gpu_model_runner.py, the V1
model runner) on a stand-in runner holding only what that method reads (``model``, ``device``, ``sampler``,
``speculative_config`` None, ``vllm_config`` with no multimodal config), with the release's ``Sampler`` built as
vLLM builds it on CUDA: ``TopKTopPSampler.__init__`` runs with the platform answering ``is_cuda() = True`` and
the release's default environment (so it picks the path a CUDA worker picks: FlashInfer only where the release
uses it by default and it is installed; it is not installed here), and ``apply_top_k_top_p`` sees
``HAS_TRITON = True`` as on CUDA. Triton kernels cannot run on a CPU: every kernel launch is replaced by a
no-op. A Triton kernel allocates no device memory itself (its buffers are the torch tensors its wrapper
allocates, which are measured), so the peak is unchanged; the values it would write are not (no shape in the
sampler depends on them). ``num_compute_units`` (the SM count the Triton top-k/top-p wrapper sizes its
per-program buffer by) answers ``--sms``.

The stand-in model's ``compute_logits`` is ``hidden @ lm_head.T`` in the model dtype (bfloat16), which is what
the release's ``LogitsProcessor`` returns at TP 1 (``lm_head.quant_method.apply`` → ``F.linear``; the gather
is the identity on one rank). The hidden size does not change the logits' shape: 64 is used.

How it measures: a ``TorchDispatchMode`` sees every op; each output tensor's storage not yet seen is added to
the live bytes, and removed when that storage is freed (a ``weakref.finalize`` on the storage). The peak of live
bytes over the call, minus the bytes live before it (the hidden states), is the sampler pass's peak. It runs
at two batch sizes R1 < R2 (both ≥ the SM count, so the Triton buffer is the same size in both) for each
vocabulary size; the difference over (R2 − R1)·V is the bytes per logit the peak grows by, the rest the part
that does not grow with the batch (the Triton buffer: min(next_pow2(min(SMs, R)), SMs) rows of V fp32).

On CUDA an op's kernel may allocate a transient workspace through torch's caching allocator that the CPU kernel does
not (``cuda_workspace_bytes``: torch's CUDA sort, from torch's and cub's source); the tracker adds it to what is
live when the op runs (``LiveBytes.cuda_peak``), measured at two batches of 128 or more requests (``--cuda-reqs``:
the sort's segmented branch) and at R1, R2 (below 128): the golden's ``cuda`` figures, which the table uses.

With ``--runner-v2`` (and on 0.34+, V2 only) the golden's ``persistent`` is what the release's V2
``GPUModelRunner`` keeps on the card after ``profile_run``: the runner built (``__init__``), loaded (``load_model``
with a stand-in loader: the weights are their own term) and profiled on the CPU under the same tracker, on a grid of
max_num_seqs, vocabulary, max_model_len and max_num_batched_tokens (``v2_persistent_fit``), with the allocating
source line of each live buffer; host memory (``UvaBuffer``'s pinned buffers, tensors made with ``device="cpu"`` or
``pin_memory=True``) not counted.

Output: ``<out>/<release>.json``: per vocabulary size the measured peaks, the bytes per logit and the fixed
part, and the path taken (``topk_topp_path``: the TopKTopPSampler method bound, ``triton``: whether
apply_top_k_top_p took the Triton branch). A release whose sampler cannot be run so says why (``derived``
false, ``why``).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys
import types
import weakref
from pathlib import Path

VOCABS = (151936,)  # the slope is the same at 32000, 128256 and 262144 (0.11.0, 0.19.0, 0.27.1)


class LiveBytes:
    """Live bytes of every storage an op created inside the mode, and their peak; ``cuda_peak`` the same peak with
    the transient workspace the op's CUDA kernel allocates through torch's caching allocator on top of what is live
    when it runs (``cuda_workspace_bytes``: the CPU kernel allocates none of it)."""

    def __init__(self, known=()):
        self.known = {t.untyped_storage().data_ptr() for t in known}  # allocated before the call: not counted
        self.live: dict[int, int] = {}
        self.now = 0
        self.peak = 0
        self.cuda_peak = 0
        self.cuda_ops: dict[str, int] = {}  # op -> calls with a CUDA-only workspace

    def op_done(self, func, args, kwargs) -> None:
        ws = cuda_workspace_bytes(func, args, kwargs)
        if ws:
            name = str(func)
            self.cuda_ops[name] = self.cuda_ops.get(name, 0) + 1
        self.cuda_peak = max(self.cuda_peak, self.peak, self.now + ws)

    def add(self, storage) -> None:
        key = storage.data_ptr()
        if key in self.live or key in self.known or storage.nbytes() == 0:
            return
        n = storage.nbytes()
        self.live[key] = n
        self.now += n
        self.peak = max(self.peak, self.now)
        weakref.finalize(storage, self._free, key)

    def _free(self, key: int) -> None:
        n = self.live.pop(key, 0)
        self.now -= n


# torch's CUDA sort (the sampler's top-k/top-p sorts the [R, V] fp32 logits along V): what its kernel allocates
# through the caching allocator beyond the op's outputs (values, int64 indices), from torch's source, the same in
# torch 2.8-2.11 (the releases' pins): aten/src/ATen/native/cuda/Sort.cpp ``sort_cuda_kernel``: a slice of at
# most 4096 (``should_use_small_sort``) is sorted in place in the output, nothing more; a larger one goes to
# SortStable.cu ``launch_stable_sort_kernel`` (a non-contiguous input along ``dim`` first copied), which sorts the
# n = R·V elements by the number of slices R:
#   R ≥ 128  ``segmented_sort_pairs``: an int64 index per element (``reverse_indices``), then cub's
#            DeviceSegmentedRadixSort::SortPairs, not allowed to overwrite its input, whose temporary storage is a
#            third key buffer and a third value buffer (cub dispatch_segmented_radix_sort.cuh ``InvokePasses``:
#            ``num_items * sizeof(KeyT)``, ``num_items * sizeof(ValueT)``): 8 + key + 8 bytes per element;
#   2 ≤ R < 128  ``segmented_sort_pairs_by_full_sort``: two int2 buffers of n (16 B per element), then
#            ``radix_sort_pairs<key, int2>`` with no key output (a key buffer of n allocated) and cub
#            DeviceRadixSort's third key and value buffers (key + 8): 16 + 2·key + 8 bytes per element at its peak
#            (the second pass, a keys-only sort of the int64 pairs, holds 16 + 8);
#   R = 1 (or V ≥ 1,000,000)  ``segmented_sort_large_segments``: V int64 indices and, one slice at a time, cub
#            DeviceRadixSort's third buffers for V elements: (8 + key + 8)·V.
# cub's histogram spine (``spine_length * sizeof(OffsetT)``, under 1 MiB) and the allocator's 512-byte rounding
# are not counted.
SMALL_SORT_MAX = 4096
SEGMENTED_SORT_MIN_SLICES = 128
LARGE_SEGMENT = 1_000_000


def cuda_sort_workspace_bytes(shape, dim: int, key_bytes: int, *, dense_along_dim: bool = True) -> int:
    """The transient bytes torch's CUDA sort of a tensor of ``shape`` along ``dim`` allocates (comment above)."""
    numel = 1
    for s in shape:
        numel *= s
    nsort = shape[dim] if shape else 1
    if numel == 0 or nsort <= SMALL_SORT_MAX:
        return 0
    copy = 0 if dense_along_dim else numel * key_bytes
    slices = numel // nsort
    if slices == 1 or nsort >= LARGE_SEGMENT:
        return copy + (8 + key_bytes + 8) * nsort
    if slices < SEGMENTED_SORT_MIN_SLICES:
        return copy + (16 + 2 * key_bytes + 8) * numel
    return copy + (8 + key_bytes + 8) * numel


def cuda_workspace_bytes(func, args, kwargs) -> int:
    """The CUDA-only workspace of one dispatched op (``aten.sort`` in any overload: the sampler's one op with one);
    0 for every other op."""
    import torch

    if getattr(func, "_overloadpacket", None) is not torch.ops.aten.sort:
        return 0
    self = args[0]
    dim = kwargs.get("dim", -1)
    for a in args[1:]:  # sort(self, dim, descending) / sort.stable(self, *, stable, dim, descending)
        if isinstance(a, int) and not isinstance(a, bool):
            dim = a
            break
    dim = dim % max(self.dim(), 1)
    try:  # Sort.cpp: no copy where the input is non-overlapping and dense with unit stride along dim
        from torch._prims_common import is_non_overlapping_and_dense
    except ImportError:
        is_non_overlapping_and_dense = torch.Tensor.is_contiguous
    dense = self.dim() == 0 or (self.stride(dim) == 1 and is_non_overlapping_and_dense(self))
    return cuda_sort_workspace_bytes(tuple(self.shape), dim, self.element_size(), dense_along_dim=dense)


def tracking_mode(counter: LiveBytes, devices=("cpu",)):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Track(TorchDispatchMode):
        def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.device.type in devices:
                    if hasattr(counter, "add_tensor"):
                        counter.add_tensor(t)
                    else:
                        counter.add(t.untyped_storage())
            if hasattr(counter, "op_done"):  # the op's outputs are live: its CUDA kernel's workspace on top
                counter.op_done(func, args, kwargs or {})
            return out

    return Track()


class KernelStub:
    """A Triton kernel's launch, as a no-op (``kernel[grid](...)`` and ``kernel(...)``)."""

    def __init__(self, name: str):
        self.name = name
        self.launches = 0

    def __getitem__(self, grid):
        return self

    def __call__(self, *args, **kwargs):
        self.launches += 1
        return None

    def __getattr__(self, name):  # a kernel wrapper's helpers (register_warmup, …): no-ops
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: None


def stub_kernels(module, kernels_only: bool = False) -> list[str]:
    """Replace the module's Triton kernels (functions using ``tl``: with Triton's placeholder decorators they are
    plain functions) by no-op launches. ``kernels_only`` (the forward and encoder runs): only functions that read
    ``tl.program_id``, which every kernel does and no host wrapper does: a host wrapper that names ``tl`` (0.11's
    ``fused_experts_impl`` picks its compute type as ``tl.bfloat16``) runs, allocating its caches as on the card."""
    out = []
    for name, obj in list(vars(module).items()):
        code = getattr(obj, "__code__", None)
        if code is not None and getattr(obj, "__module__", "") == module.__name__ and "tl" in code.co_names \
                and (not kernels_only or "program_id" in code.co_names):
            setattr(module, name, KernelStub(name))
            out.append(name)
    return out


class CudaPlatform:
    """``current_platform`` as a CUDA worker sees it, for the sampler's path choice only."""

    capability = (9, 0)  # Hopper: FlashInfer's sampler supports it in every release

    def __init__(self, real):
        self._real = real

    def is_cuda(self):
        return True

    def is_cpu(self):
        return False

    def is_rocm(self):
        return False

    def is_xpu(self):
        return False

    def num_compute_units(self, device_id=0):
        return 132  # an H100 SXM: the path choice (0.33+ refuses FlashInfer's top-k on ≤ 16 SMs) sees a real card

    def get_device_capability(self, device_id=0):
        from vllm.platforms.interface import DeviceCapability

        return DeviceCapability(*self.capability)

    def __getattr__(self, name):
        return getattr(self._real, name)


class _StubFinder:
    """``flashinfer`` and its submodules as stand-ins: the package is a CUDA one (not installed here). Its sampling
    entry points return the sampled ids (``int32`` per row) and allocate nothing else: FlashInfer's own
    workspace in those calls is not measured (stated in the golden's notes)."""

    def __init__(self, *roots):
        self.roots = roots

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.roots:
            import importlib.machinery

            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        m = _AnyModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        if module.__name__ == "flashinfer":
            module.__version__ = "0.7.3"


def _sampled(logits, *args, **kwargs):
    import torch

    SAMPLED_CALLS.append(tuple(logits.shape))
    return torch.zeros(logits.shape[0], dtype=torch.int32)


SAMPLED_CALLS: list = []


class _AnyModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name.endswith(("_from_logits", "_from_probs")):
            return _sampled
        if name in ("sampling", "utils", "decode", "prefill", "jit"):
            import importlib

            return importlib.import_module(f"{self.__name__}.{name}")
        return type(name, (), {"__init__": lambda self, *a, **k: None,
                               "__getattr__": lambda self, n: (lambda *a, **k: None)})


def install_stubs(flashinfer: bool = True) -> list[str]:
    notes = []
    if not flashinfer:
        notes.append("without FlashInfer (as a pip install where FlashInfer is an extra)")
        return notes + install_numba()
    try:
        import flashinfer  # noqa: F401
    except ImportError:
        sys.meta_path.insert(0, _StubFinder("flashinfer"))
        notes.append("flashinfer stood in for (a CUDA package): its sampling calls return the sampled ids and "
                     "allocate nothing else; FlashInfer's own workspace is not measured")
    return notes + install_numba()


def install_numba() -> list[str]:
    notes = []
    try:
        import mistral_common  # noqa: F401
    except ImportError:  # the tokenizer module's import (0.14-0.15 import it on the runner's path); unused here
        sys.meta_path.append(_StubFinder("mistral_common"))
        notes.append("mistral_common stood in for (imported by the tokenizers, not used by the sampler)")
    try:
        import numba  # noqa: F401
    except ImportError:  # the n-gram proposer's import only; the sampler does not use it
        m = types.ModuleType("numba")
        for n in ("jit", "njit", "prange", "get_num_threads", "set_num_threads"):
            setattr(m, n, (lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))))
        sys.modules["numba"] = m
        notes.append("numba stubbed (imported by the n-gram proposer, not by the sampler)")
    return notes


def build(sms: int):
    """The release's runner method and a Sampler built as on CUDA."""
    import torch  # noqa: F401
    from vllm.v1.sample.ops import topk_topp_sampler as tts

    notes = []
    tts.current_platform = CudaPlatform(tts.current_platform)
    try:
        torch.accelerator.current_device_index()
    except Exception:  # no accelerator: the index the CUDA worker would read (device 0), a no-op cache flush
        torch.accelerator.current_device_index = lambda: 0
        torch.accelerator.empty_cache = lambda: None
        notes.append("torch.accelerator.current_device_index answers 0, empty_cache is a no-op (no device here)")
    kernels = []
    try:
        from vllm.v1.sample.ops import topk_topp_triton as ttt
    except ImportError:
        ttt = None
    if ttt is not None:
        kernels += stub_kernels(ttt)
        if hasattr(ttt, "num_compute_units"):
            ttt.num_compute_units = lambda *a, **k: sms
        tts.HAS_TRITON = True
        for name in dir(ttt):  # what the sampler module's `if HAS_TRITON:` import block brings in
            if not name.startswith("__") and not hasattr(tts, name):
                setattr(tts, name, getattr(ttt, name))
        notes.append(f"HAS_TRITON forced True as on CUDA; kernels stubbed: {', '.join(kernels)}; "
                     f"num_compute_units = {sms}")
    from vllm.v1.sample.sampler import Sampler
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    sampler = Sampler()
    path = getattr(sampler.topk_topp_sampler.forward, "__name__", str(sampler.topk_topp_sampler.forward))
    return GPUModelRunner._dummy_sampler_run, sampler, path, notes, ttt


class V2Sampler:
    """The V2 model runner's sampler (0.34+: ``vllm/v1/worker/gpu/sample/sampler.py``, the V1 runner removed), built
    per batch as the runner builds it (``GPUModelRunner.__init__``: ``RequestState`` and ``Sampler(vllm_config,
    max_num_reqs, vocab_size, device, req_states)``, ``InputBuffers``), for the runner's ``_dummy_sampler_run``:
    the default pass, then the warmup-parameter pass (``SamplingParams.for_sampler_warmup()``: the fp32 logits
    pipeline the profile pays for). Stand-ins: the pinned host buffers (``UvaBuffer``, ``async_tensor_h2d``) are
    plain CPU tensors (host memory: not on the card either way), the model state's own dummy pass answers no. What
    the runner keeps allocated is measured on the whole runner instead (``v2_runner_persistent``)."""

    def __init__(self, vllm_config):
        self.vc = vllm_config

    def stand_in(self, vocab: int, reqs: int, dtype):
        import torch

        states, sampler, buffers = self.build(vocab, reqs, 4096)
        lm_head = torch.randn(vocab, 64, dtype=dtype)

        class Model:
            def compute_logits(self, hidden_states, *args):
                return hidden_states @ lm_head.t()

        return lm_head, types.SimpleNamespace(sampler=sampler, model=Model(), input_buffers=buffers,
                                              model_state=types.SimpleNamespace(dummy_sampler_run=lambda *a: False))

    def build(self, vocab: int, reqs: int, max_model_len: int):
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.v1.worker.gpu.input_batch import InputBuffers
        from vllm.v1.worker.gpu.sample.sampler import Sampler
        from vllm.v1.worker.gpu.states import RequestState

        dev = torch.device("cpu")
        with set_current_vllm_config(self.vc):
            states = RequestState(max_num_reqs=reqs, max_model_len=max_model_len, max_num_batched_tokens=reqs,
                                  num_speculative_steps=0, vocab_size=vocab, device=dev)
            # the arguments the release's runner passes (0.22.1 model_runner.py 215-223: no vllm_config before
            # 0.31, whose Sampler takes it first; logprobs_mode and use_fp64_gumbel from the model config)
            mc = self.vc.model_config
            given = {"vllm_config": self.vc, "logprobs_mode": getattr(mc, "logprobs_mode", None),
                     "use_fp64_gumbel": getattr(mc, "use_fp64_gumbel", None)}
            takes = inspect.signature(Sampler.__init__).parameters
            sampler = Sampler(max_num_reqs=reqs, vocab_size=vocab, device=dev, req_states=states,
                              **{k: v for k, v in given.items() if k in takes and v is not None})
            buffers = InputBuffers(reqs, reqs, dev)
        return states, sampler, buffers


def unpin_host_staging() -> list:
    """Host staging buffers (pinned on a CUDA worker; no pinned allocator on this CPU) made plain host memory, which
    the tracker does not count either way (only meta-device tensors are the card's): ``PIN_MEMORY`` (read at import)
    False and ``is_pin_memory_available()`` (0.32+'s ``async_tensor_h2d`` asks it per call, which the stand-in CUDA
    platform answers True) answering False in every loaded vllm module that holds them, the device copy unchanged.
    The vllm modules, for further stand-ins."""
    mods = [mod for name, mod in list(sys.modules.items()) if name.startswith("vllm") and mod is not None]
    for mod in mods:
        if getattr(mod, "PIN_MEMORY", None) is True:
            mod.PIN_MEMORY = False
        if callable(getattr(mod, "is_pin_memory_available", None)):  # a function or its @cache wrapper
            mod.is_pin_memory_available = lambda: False
    return mods


def warmup_sampler_pass(runner, hidden_states) -> None:
    """The V2 runner's sampler as its warm-up samples, after the KV cache is sized (``warmup_kernels``: 0.29.0
    v1/worker/gpu/warmup.py lines 267-291 and 336, called from gpu_worker.py line 866): every dummy request added
    with ``SamplingParams.for_sampler_warmup()`` (temperature, top-p, top-k, min-p, the three penalties, a logit
    bias, bad words, 5 logprobs), the staged writes applied, then the sampler over one logits row a request. This
    is the pass 0.33.0 moved into ``_dummy_sampler_run`` (model_runner.py lines 1056-1062) so the profile pays
    for it; before 0.33.0 it runs in what the profile left. The release's own ``Sampler.add_request`` (before
    0.32 it also takes the prompt length: the warm-up's ``decode_query_len + 1``, 2 without a drafter). The
    warm-up's prompt logprobs (``prompt_logprobs=1`` on its prefill step) are not part of this pass."""
    from vllm import SamplingParams
    from vllm.v1.worker.gpu.input_batch import InputBatch

    # the staged writes' host copies; before 0.32 async_tensor_h2d's pin_memory default is bound to PIN_MEMORY at
    # import, so it is passed False here
    for mod in unpin_host_staging():
        h2d = getattr(mod, "async_tensor_h2d", None)
        if callable(h2d) and "pin_memory" in inspect.signature(h2d).parameters:
            mod.async_tensor_h2d = lambda *x, _h2d=h2d, **k: _h2d(*x, **{**k, "pin_memory": False})
    num_reqs = hidden_states.shape[0]
    logits = runner.model.compute_logits(hidden_states)
    batch = InputBatch.make_dummy(num_reqs, num_reqs, runner.input_buffers)
    params = SamplingParams.for_sampler_warmup()
    add = runner.sampler.add_request
    with_prompt_len = "prompt_len" in inspect.signature(add).parameters
    for i in range(num_reqs):
        add(i, 2, params) if with_prompt_len else add(i, params)
    runner.sampler.apply_staged_writes()
    runner.sampler(logits, batch)


def warmup_prompt_logprobs_pass(runner, hidden_states) -> None:
    """The warm-up's prompt logprobs (``prompt_logprobs=1`` on its prefill step: ``PromptLogprobsWorker``'s
    ``compute_prompt_logprobs``, 0.29.0 v1/worker/gpu/sample/prompt_logprob.py lines 36-90), over one hidden row per
    scheduled prompt token, through the release's own ``compute_prompt_logprobs_with_chunking`` (1,024 rows a
    chunk, each chunk's logits from the model's ``compute_logits``), in the default ``raw_logprobs`` mode. Every V2
    release runs it after the KV cache is sized, 0.33+ too (their profile's warm-up-parameter pass is the
    sampler's alone)."""
    import torch
    from vllm.v1.worker.gpu.sample.prompt_logprob import compute_prompt_logprobs_with_chunking

    rows = hidden_states.shape[0]
    token_ids = torch.zeros(rows, dtype=torch.int32)
    takes = inspect.signature(compute_prompt_logprobs_with_chunking).parameters
    # 0.19.x: the prompt token's own logprob only (no count); before 0.26: no mode (raw logprobs)
    more = ([1] if "num_prompt_logprobs" in takes else []) + (["raw_logprobs"] if "logprobs_mode" in takes else [])
    out = compute_prompt_logprobs_with_chunking(token_ids, hidden_states, runner.model.compute_logits, *more)
    del out


UVA_STORAGES: set = set()  # the pinned host buffers' storages (the V2 runner's UvaBuffer stand-in)


def persistent_counted() -> bool:
    """Whether the release's profile counts what stays allocated from the runner's creation on: from 0.27.1
    ``memory_profiling`` (vllm/utils/mem_utils.py) takes the non-KV memory as ``total_consumed`` (the free memory's
    drop since the instance was created, ``mem_get_info``) plus the transient peak over what is allocated after the
    profile, so the runner's persistent states count; before, ``weights + torch peak increase + non-torch
    increase``, which leave out torch allocations made before the profile outside the weights' load."""
    import inspect

    from vllm.utils import mem_utils

    return "total_consumed" in inspect.getsource(mem_utils.memory_profiling)


# The V2 runner's persistent buffers: the release's own GPUModelRunner built as the GPU worker builds it
# (``__init__``, then ``load_model`` with a stand-in loader, then ``profile_run``), on the CPU under the tracker;
# what is still allocated after the profile run is what the release's memory_profiling counts beside the weights
# (total_consumed, from 0.27.1). A grid of (max_num_seqs R, vocabulary V, max_model_len L, max_num_batched_tokens T)
# fits ``R·(V·per_logit + L·per_token_slot + per_req) + T·per_token + V·per_vocab + fixed``, checked at one more
# point.
PERSISTENT_GRID = {"R": (32, 64), "V": (151936, 32000), "L": (4096, 8192), "T": (2048, 4096)}
PERSISTENT_CHECK = (48, 262144, 6144, 3072)  # (R, V, L, T): predicted by the fit, measured
HOST_STORAGES: set = set()  # tensors the runner creates on the host (device="cpu" spelled out, or pinned)
STAND_IN_HIDDEN = 64  # the stand-in model's hidden width (its hidden states are transient)
# a multimodal model's runner keeps its encoder runner's inputs_embeds [T, hidden] (model dtype) beside the text
# model's buffers; Qwen3-VL (M-RoPE's positions) does not import here (torchvision), so it is not in this list
PERSISTENT_SPEC_DRAFTER = "configs/RedHatAI/Qwen3-8B-speculator.eagle3"  # the dense model's EAGLE-3 drafter
PERSISTENT_SPEC_TOKENS = (2, 4)  # num_speculative_tokens: two, so each term's growth per speculative token is fitted
PERSISTENT_MM_MODELS = {"Gemma4ForConditionalGeneration": "configs/google/gemma-4-26B-A4B/config.json"}


def host_factories():
    """``torch.zeros`` and the other factories the runner calls, wrapped so a tensor created with ``device="cpu"``
    spelled out or ``pin_memory=True`` is marked host memory (on the card's worker it is not on the card; here every
    tensor is a CPU one). Returns the undo."""
    import torch

    names = ("zeros", "empty", "ones", "full", "arange", "tensor", "as_tensor", "randn", "rand")
    saved = {n: getattr(torch, n) for n in names}

    def wrap(f):
        def call(*args, **kwargs):
            out = f(*args, **kwargs)
            d = kwargs.get("device")
            if (isinstance(d, str) and d == "cpu") or kwargs.get("pin_memory"):
                HOST_STORAGES.add(out.untyped_storage().data_ptr())
            return out
        return call

    for n, f in saved.items():
        setattr(torch, n, wrap(f))
    return lambda: [setattr(torch, n, f) for n, f in saved.items()]


class SiteBytes(LiveBytes):
    """``LiveBytes`` that also keeps, per live storage, the release's source line that allocated it (the innermost
    frame under vllm/ and the runner's call that led there)."""

    def __init__(self, known=()):
        super().__init__(known)
        self.site: dict[int, str] = {}

    def add(self, storage) -> None:
        key = storage.data_ptr()
        if key in self.live or key in self.known or storage.nbytes() == 0:
            return
        super().add(storage)
        import traceback

        frames = [f"{f.filename.split('/vllm/', 1)[-1]}:{f.lineno}" for f in traceback.extract_stack()
                  if "/vllm/" in f.filename and "/scripts/" not in f.filename]
        self.site[key] = " < ".join(reversed(frames[-2:])) if frames else "?"

    def device(self) -> dict[int, int]:
        return {k: n for k, n in self.live.items() if k not in UVA_STORAGES and k not in HOST_STORAGES}


def v2_runner_persistent(reqs: int, vocab: int, max_model_len: int, tokens: int,
                         config: str | None = None, spec: int = 0) -> tuple[int, dict, object]:
    """The card bytes the release's V2 ``GPUModelRunner`` keeps after ``profile_run`` (beyond the weights), by
    allocating source line, and the runner. Built as ``Worker.init_device`` / ``load_model`` /
    ``determine_available_memory`` build it: the engine config from ``EngineArgs`` (the dense forward model's
    config.json, or ``config``, with ``vocab_size`` V, ``max_num_seqs`` R, ``max_num_batched_tokens`` T,
    ``max_model_len`` L; the config's own runner choice is V1 here, "Model Runner V2 requires Triton", which
    changes no buffer the runner sizes), the runner on the CPU. Stand-ins (stated in the golden's notes): the
    model loader returns a module with no parameters on the tracker (its lm_head made before) whose forward
    returns [tokens, 64] hidden states (the forward's own memory is the forward term); ``DeviceMemoryProfiler``
    reports 0 (the weights' figure); ``torch.cuda.Stream`` a no-op stream, ``torch.accelerator.synchronize`` a
    no-op."""
    import tempfile

    import torch
    import torch.nn as nn

    import arch_runner as AR
    import vllm.v1.worker.gpu.model_runner as mr
    from vllm.config import set_current_vllm_config
    from vllm.engine.arg_utils import EngineArgs

    cfg = json.loads((Path(__file__).resolve().parents[2] / (config or FORWARD_MODELS["dense"])).read_text())
    (cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg)["vocab_size"] = vocab
    d = tempfile.mkdtemp(prefix="v2r_")
    # a multimodal model: its encoder's dummy pass skipped (--skip-mm-profiling; the encoder term is measured on its
    # own, and the profile frees the encoder cache after it), the runner's buffers for it kept
    mm = {"skip_mm_profiling": True} if config else {}
    if spec:  # an EAGLE-3 drafter for the dense model (its config only: the drafter's weights are their own term)
        mm["speculative_config"] = {"method": "eagle3", "num_speculative_tokens": spec,
                                    "model": str(Path(__file__).resolve().parents[2] / PERSISTENT_SPEC_DRAFTER)}
    vc = EngineArgs(model=AR._write_config(str(Path(d) / "m"), cfg, None), skip_tokenizer_init=True,
                    dtype="bfloat16", max_num_seqs=reqs, max_num_batched_tokens=tokens,
                    max_model_len=max_model_len, **mm).create_engine_config()
    forward_dist(AR, vc)
    lm_head = torch.zeros(vocab, STAND_IN_HIDDEN, dtype=torch.bfloat16)

    from vllm.model_executor.models.interfaces import SupportsEagle3

    class Model(nn.Module, *((SupportsEagle3,) if spec else ())):  # a target an EAGLE-3 drafter can hang on
        requires_raw_input_tokens = False  # SupportsMultiModal's default (0.28.0's runner reads it)
        aux_layers: tuple = ()

        def set_aux_hidden_state_layers(self, layers):  # EAGLE-3: the target returns its aux hidden states too
            self.aux_layers = tuple(layers)

        def get_eagle3_default_aux_hidden_state_layers(self):
            return (2, 18, 33)  # SupportsEagle3's rule for a 36-layer model (the count sizes no runner buffer)

        def compute_logits(self, hidden_states, *args):
            return hidden_states @ lm_head.t()

        def embed_input_ids(self, input_ids, *args, **kwargs):
            return torch.zeros(input_ids.shape[0], STAND_IN_HIDDEN, dtype=torch.bfloat16)

        def forward(self, input_ids=None, positions=None, *args, **kwargs):
            n = (input_ids if input_ids is not None else positions).shape[-1]
            h = torch.zeros(n, STAND_IN_HIDDEN, dtype=torch.bfloat16)
            return (h, [torch.zeros_like(h) for _ in self.aux_layers]) if self.aux_layers else h

    class Loader:
        def load_model(self, **kwargs):
            return Model()

    class NoProfiler:
        consumed_memory = 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class NoStream:
        def __init__(self, *args, **kwargs):
            pass

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return lambda *a, **k: None

    mr.get_model_loader = lambda *a, **k: Loader()
    if spec:  # the release's speculator as the runner builds it, its drafter a parameter-free stand-in (the
        # drafter's weights are their own term) and its dummy propose not run (what it allocates is freed after it)
        real_init = mr.init_speculator

        def init_speculator(*args, **kwargs):
            speculator = real_init(*args, **kwargs)
            speculator.load_draft_model = lambda *a, **k: Model()
            speculator.propose = lambda *a, **k: None
            return speculator

        mr.init_speculator = init_speculator
    mr.DeviceMemoryProfiler = NoProfiler
    torch.cuda.Stream = NoStream
    torch.accelerator.synchronize = lambda *a, **k: None
    UVA_STORAGES.clear()
    HOST_STORAGES.clear()
    counter = SiteBytes(known=(lm_head,))
    undo = host_factories()
    try:
        with set_current_vllm_config(vc), torch.inference_mode(), tracking_mode(counter):
            runner_ = mr.GPUModelRunner(vc, torch.device("cpu"))
            runner_.load_model()
            runner_.profile_run()
    finally:
        undo()
    import gc

    gc.collect()
    live = counter.device()
    sites: dict[str, int] = {}
    for k, n in live.items():
        sites[counter.site.get(k, "?")] = sites.get(counter.site.get(k, "?"), 0) + n
    return sum(live.values()), dict(sorted(sites.items(), key=lambda x: (-x[1], x[0]))), runner_


def v2_persistent_fit(extra: tuple[str, ...] = ()) -> dict:
    """``v2_runner_persistent`` on ``PERSISTENT_GRID`` (each point in a fresh process: the runner's modules keep
    per-process caches), fitted as ``R·(V·per_logit + L·per_token_slot + per_req) + T·per_token + V·per_vocab +
    fixed`` and checked at ``PERSISTENT_CHECK`` (``prompt_bin_mask`` and the grammar bitmask are ⌈V/32⌉ wide: every
    V here is a multiple of 32, so the fit is exact)."""
    (r1, r2), (v1, v2), (l1, l2), (t1, t2) = (PERSISTENT_GRID[k] for k in "RVLT")
    points = [(r1, v1, l1, t1), (r2, v1, l1, t1), (r1, v2, l1, t1), (r2, v2, l1, t1), (r1, v1, l2, t1),
              (r2, v1, l2, t1), (r1, v1, l1, t2), PERSISTENT_CHECK]
    b, sites = {}, {}
    for p in points:
        rec = run_persistent_point(p, extra)
        b[p], sites[p] = rec["bytes"], rec["sites"]

    def slope(v, m):
        return (b[(r2, v, m, t1)] - b[(r1, v, m, t1)]) / (r2 - r1)

    per_logit = (slope(v1, l1) - slope(v2, l1)) / (v1 - v2)
    per_slot = (slope(v1, l2) - slope(v1, l1)) / (l2 - l1)
    per_req = slope(v1, l1) - v1 * per_logit - l1 * per_slot
    per_token = (b[(r1, v1, l1, t2)] - b[(r1, v1, l1, t1)]) / (t2 - t1)

    def rest(v):  # what grows with neither R nor T, at V = v
        return b[(r1, v, l1, t1)] - r1 * slope(v, l1) - t1 * per_token

    per_vocab = (rest(v1) - rest(v2)) / (v1 - v2)
    fixed = rest(v1) - v1 * per_vocab
    fit = {"bytes_per_logit": per_logit, "bytes_per_token_slot": per_slot, "bytes_per_req": per_req,
           "bytes_per_token": per_token, "bytes_per_vocab": per_vocab, "fixed_bytes": fixed}
    r, v, m, t = PERSISTENT_CHECK
    predicted = r * (v * per_logit + m * per_slot + per_req) + t * per_token + v * per_vocab + fixed

    def text(r_, v_, m_, t_):  # the text model's fit at a point
        return r_ * (v_ * per_logit + m_ * per_slot + per_req) + t_ * per_token + v_ * per_vocab + fixed

    mm = {}
    for arch, path in PERSISTENT_MM_MODELS.items():  # what a multimodal model adds: the fit's T slope beyond text's
        try:
            at = {tt: run_persistent_point((r1, v1, l1, tt), (*extra, "--persistent-config", path)) for tt in (t1, t2)}
        except Exception as e:  # noqa: BLE001 - the release does not build this architecture here: recorded
            # no machine path in a golden: the repository's own files by their relative path
            why = f"{type(e).__name__}: {e}".replace(str(Path(__file__).resolve().parents[2]) + "/", "")
            mm[arch] = {"derived": False, "why": why}
            continue
        more = {tt: at[tt]["bytes"] - text(r1, v1, l1, tt) for tt in (t1, t2)}
        slope_t = (more[t2] - more[t1]) / (t2 - t1)
        mm[arch] = {"derived": True, "config": path, "inputs_embeds_size": at[t1]["inputs_embeds_size"],
                    "bytes": {f"{r1}x{v1}x{l1}x{tt}": at[tt]["bytes"] for tt in (t1, t2)},
                    "bytes_per_token": slope_t, "fixed_bytes": more[t1] - t1 * slope_t,
                    "sites": {f"{r1}x{v1}x{l1}x{t1}": {k: n for k, n in at[t1]["sites"].items()
                                                       if k not in sites[(r1, v1, l1, t1)]}}}
    spec = {}
    for k in PERSISTENT_SPEC_TOKENS:  # what an EAGLE-3 drafter proposing k tokens adds, fitted like the text model
        try:
            pts = [(r1, v1, l1, t1), (r2, v1, l1, t1), (r1, v2, l1, t1), (r2, v2, l1, t1), (r1, v1, l1, t2)]
            at = {q: run_persistent_point(q, (*extra, "--persistent-spec", str(k))) for q in pts}
        except Exception as e:  # noqa: BLE001 - the release does not build this speculator here: recorded
            why = f"{type(e).__name__}: {e}".replace(str(Path(__file__).resolve().parents[2]) + "/", "")
            spec[str(k)] = {"derived": False, "why": why}
            continue
        more = {q: at[q]["bytes"] - text(*q) for q in pts}

        def slope_r(v):
            return (more[(r2, v, l1, t1)] - more[(r1, v, l1, t1)]) / (r2 - r1)

        k_logit = (slope_r(v1) - slope_r(v2)) / (v1 - v2)
        k_token = (more[(r1, v1, l1, t2)] - more[(r1, v1, l1, t1)]) / (t2 - t1)

        def rest_k(v):
            return more[(r1, v, l1, t1)] - r1 * slope_r(v) - t1 * k_token

        k_vocab = (rest_k(v1) - rest_k(v2)) / (v1 - v2)
        spec[str(k)] = {"derived": True, "drafter": PERSISTENT_SPEC_DRAFTER, "method": "eagle3",
                        "draft_hidden_size": at[pts[0]]["draft_hidden_size"],
                        "bytes": {"x".join(map(str, q)): at[q]["bytes"] for q in pts},
                        "bytes_per_logit": k_logit, "bytes_per_req": slope_r(v1) - v1 * k_logit,
                        "bytes_per_token": k_token, "bytes_per_vocab": k_vocab,
                        "fixed_bytes": rest_k(v1) - v1 * k_vocab,
                        "sites": {"x".join(map(str, pts[0])): {
                            key: n - sites[pts[0]].get(key, 0) for key, n in at[pts[0]]["sites"].items()
                            if n != sites[pts[0]].get(key, 0)}}}
    return {**fit, "multimodal": mm, "speculative": spec,
            "bytes": {"x".join(map(str, p)): n for p, n in b.items()}, "grid": "RxVxLxT",
            "check": {"at": "x".join(map(str, PERSISTENT_CHECK)), "measured": b[PERSISTENT_CHECK],
                      "predicted": predicted},
            "sites": {"x".join(map(str, (r1, v1, l1, t1))): sites[(r1, v1, l1, t1)]},
            "what": "GPUModelRunner.__init__, load_model (after the weights) and profile_run, run on the CPU: the "
                    "card bytes still allocated after the profile run"}


def run_persistent_point(point: tuple, extra: tuple[str, ...] = ()) -> dict:
    """One grid point in its own process (``--persistent-point``; ``extra``: the variant's flags)."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        run = subprocess.run([sys.executable, __file__, "--persistent-point", *map(str, point), *extra,
                              "--variant-out", f.name], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode:  # the last line the point's process wrote: why it could not build the runner
            raise RuntimeError((run.stderr.strip().splitlines() or ["no output"])[-1])
        return json.loads(Path(f.name).read_text())


def persistent_point_main(a) -> int:
    import torch  # noqa: F401

    install_stubs(flashinfer=not a.no_flashinfer)
    build_v2(a.sms)
    total, sites, runner_ = v2_runner_persistent(*a.persistent_point, config=a.persistent_config,
                                                 spec=a.persistent_spec)
    # an architecture that did not import as multimodal here: not measured as one
    if a.persistent_config and not getattr(runner_, "supports_mm_inputs", False):
        raise SystemExit(f"{a.persistent_config}: the runner does not see a multimodal model")
    speculator = getattr(runner_, "speculator", None)
    a.variant_out.write_text(json.dumps({"bytes": total, "sites": sites,
                                         "inputs_embeds_size": runner_.model_config.get_inputs_embeds_size(),
                                         "draft_hidden_size": getattr(speculator, "hidden_size", None)}))
    return 0


def triton_placeholders() -> None:
    """vLLM's Triton placeholder modules (no Triton on this platform) given the host-side helpers and dtype names
    the kernels' Python wrappers read when sizing their buffers (``triton.cdiv``, ``next_power_of_2``)."""
    import vllm.triton_utils as vtu

    if not hasattr(vtu.triton, "next_power_of_2"):
        vtu.triton.next_power_of_2 = lambda n: 1 << max(0, (int(n) - 1).bit_length())
    if not hasattr(vtu.triton, "cdiv"):
        vtu.triton.cdiv = lambda x, y: -(-int(x) // int(y))
    for dt in ("bfloat16", "float16", "float32", "float64", "int32", "int64", "float8e4nv", "uint8", "int8"):
        if not hasattr(vtu.tl, dt):
            setattr(vtu.tl, dt, dt)
    if not isinstance(getattr(vtu.triton, "Config", None), type):
        # an autotuner's configs, read at import by the Mamba SSD kernels' Hopper filter (0.3x ssd_chunk_scan.py):
        # their fields, as ``triton.Config`` keeps them (no kernel is tuned here)
        class Config:
            def __init__(self, kwargs=None, num_warps=4, num_stages=3, **more):
                self.kwargs, self.num_warps, self.num_stages = dict(kwargs or {}), num_warps, num_stages

        vtu.triton.Config = Config
    if not hasattr(vtu.triton, "runtime"):
        # the autotuner class the JIT warm-up decorator checks its kernels against at import (0.34's
        # model_executor/warmup/jit_warmup_triton_helper.py line 503, reached through get_quantization_config's
        # model imports): a class nothing is an instance of (no kernel is tuned here)
        import types

        class Autotuner:
            pass

        vtu.triton.runtime = types.SimpleNamespace(autotuner=types.SimpleNamespace(Autotuner=Autotuner))


def build_v2(sms: int):
    """``build`` for a release whose V1 runner is gone: the V2 runner's ``_dummy_sampler_run`` and sampler."""
    import tempfile

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kvplan" / "verify"))
    import arch_runner as AR  # its stubs let the engine config be built on this platform

    AR.setup()
    import vllm.utils.torch_utils as tu
    import vllm.v1.worker.gpu.buffer_utils as bu
    from vllm.engine.arg_utils import EngineArgs
    from vllm.v1.sample.ops import topk_topp_sampler as tts

    def plain(self, size, dtype):
        self.cpu = torch.zeros(size, dtype=dtype, device="cpu")
        UVA_STORAGES.add(self.cpu.untyped_storage().data_ptr())  # pinned host memory: not on the card
        self.np = self.cpu.numpy()
        self._uva = self.cpu
        if not callable(getattr(type(self), "uva", None)):  # an attribute before 0.30 (0.27.1 buffer_utils.py 50)
            self.uva = self.cpu

    bu.UvaBuffer.__init__ = plain
    tu.PIN_MEMORY = False
    notes = ["V2 model runner (vllm/v1/worker/gpu): RequestState/Sampler/InputBuffers built per batch; pinned "
             "host buffers as plain CPU tensors (host memory)"]
    tts.current_platform = CudaPlatform(tts.current_platform)
    import vllm.v1.worker.gpu.model_runner as mr
    import vllm.v1.worker.gpu.sample.gumbel  # noqa: F401 - its kernels stubbed below
    import vllm.v1.worker.gpu.sample.sampler as v2s

    if hasattr(mr, "current_platform"):  # read by _dummy_sampler_run's CPU early return (0.33+)
        mr.current_platform = CudaPlatform(mr.current_platform)
    triton_placeholders()
    try:
        from vllm.v1.sample.ops import topk_topp_triton as ttt
    except ImportError:
        ttt = None
    kernels = []
    for name, mod in list(sys.modules.items()):
        if name.startswith("vllm.v1") and mod is not None and mod is not ttt:
            try:
                kernels += stub_kernels(mod)
            except Exception:  # noqa: BLE001 - a module whose globals cannot be walked
                pass
    if ttt is not None:
        kernels += stub_kernels(ttt)
        if hasattr(ttt, "num_compute_units"):
            ttt.num_compute_units = lambda *x, **k: sms
    notes.append(f"Triton kernels stubbed (no-op launches): {len(kernels)}; num_compute_units = {sms}")
    d = tempfile.mkdtemp(prefix="v2s_")
    cfg = json.loads((Path(__file__).resolve().parents[2] / FORWARD_MODELS["dense"]).read_text())
    vc = EngineArgs(model=AR._write_config(str(Path(d) / "m"), cfg, None), skip_tokenizer_init=True,
                    dtype="bfloat16").create_engine_config()
    path = "V2 Sampler"  # the call it takes (FlashInfer's or the Gumbel kernel) is named after the measure
    del v2s
    return mr.GPUModelRunner._dummy_sampler_run, V2Sampler(vc), path, notes, ttt


def runner(sampler, vocab: int, dtype):
    import torch

    lm_head = torch.randn(vocab, 64, dtype=dtype)

    class Model:
        def compute_logits(self, hidden_states, *args):
            return hidden_states @ lm_head.t()

    mm = types.SimpleNamespace(multimodal_config=None)
    return lm_head, types.SimpleNamespace(model=Model(), device=torch.device("cpu"), sampler=sampler,
                                 speculative_config=None, rejection_sampler=None,
                                 vllm_config=types.SimpleNamespace(model_config=mm))


def clear_caches() -> None:
    """Empty the sampler modules' per-device caches (the Triton wrapper's buffer and tables), so every measured
    call allocates them as the profile run's first call does."""
    for name, mod in list(sys.modules.items()):
        if name.startswith(("vllm.v1.sample", "vllm.v1.worker.gpu.sample")) and mod is not None:
            for attr, val in vars(mod).items():
                if "CACHE" in attr.upper() and isinstance(val, dict):
                    val.clear()


def measure(method, sampler, vocab: int, reqs: int, dtype, sms: int | None = None, ttt=None) -> int:
    import torch

    clear_caches()
    if ttt is not None and sms is not None and hasattr(ttt, "num_compute_units"):
        ttt.num_compute_units = lambda *a, **k: sms
    torch.manual_seed(0)
    lm_head, stand_in = (sampler.stand_in(vocab, reqs, dtype) if isinstance(sampler, V2Sampler)
                         else runner(sampler, vocab, dtype))
    hidden = torch.rand(reqs, 64, dtype=dtype)
    counter = LiveBytes(known=(lm_head, hidden))
    with torch.inference_mode(), tracking_mode(counter):
        out = method(stand_in, hidden)
        del out
    CUDA_PEAKS[(vocab, reqs, sms)] = counter.cuda_peak
    for op, n in counter.cuda_ops.items():
        CUDA_OPS[op] = max(CUDA_OPS.get(op, 0), n)
    return counter.peak


def cuda_record(peaks: dict, small: tuple[int, int], large: tuple[int, int], vocab: int) -> dict:
    """A golden's ``cuda`` figures from the peaks with the kernels' workspaces at two batches under 128 requests
    (``small``) and two of 128 or more (``large``): the bytes per logit in each of the sort's branches."""
    (r1, r2), (q1, q2) = small, large
    return {"peak_bytes": {str(r): peaks[r] for r in (r1, r2, q1, q2)},
            "bytes_per_logit": (peaks[q2] - peaks[q1]) / ((q2 - q1) * vocab),
            "bytes_per_logit_under_128": (peaks[r2] - peaks[r1]) / ((r2 - r1) * vocab)}


CUDA_PEAKS: dict = {}  # (vocab, reqs, sms) -> the last measure's peak with the CUDA kernels' workspaces
CUDA_OPS: dict = {}  # op -> calls per pass with a CUDA-only workspace


# FlashInfer's top_k_top_p_sampling_from_logits (the FlashInfer path's one call) masks the logits to the top k and
# takes their softmax before sampling: two fp32 [R, V] tensors of its own, not measured here (the package is a CUDA
# one). The table's high end adds them to a release whose CUDA path calls it.
FLASHINFER_UNMEASURED_BYTES_PER_LOGIT = 8
TABLE_VOCAB = 151936  # the vocabulary the table's per-logit figures are read at (the slope is the same at 32000)


def cuda_per_logit(at: dict, key: str) -> float:
    """A golden row's bytes per logit on CUDA (``cuda``: with the kernels' workspaces) for the batch range ``key``
    names; a golden made before the CUDA figures has only the CPU one."""
    return (at.get("cuda") or {}).get(key, at["bytes_per_logit"])


SHARED_KEYS = ("forward", "forward_models", "parallel", "encoder", "drafter")


def share_tables(full: dict) -> dict:
    """Each release's ``forward``, ``forward_models``, ``parallel`` and ``encoder`` rows stored once: a release whose row is the same as
    an earlier release's (a release without its own golden takes the newest measured one's) names that release
    (``kvplan.budget.profile`` resolves the name when it reads the table)."""
    shared: dict = {k: {} for k in SHARED_KEYS}
    first: dict = {k: {} for k in SHARED_KEYS}
    for release, row in full.items():
        for k in SHARED_KEYS:
            if k not in row:
                continue
            ref = first[k].setdefault(json.dumps(row[k], sort_keys=True), release)
            if ref == release:
                shared[k][release] = row[k]
            row[k] = ref
    return shared


def sampler_table_row(variants: dict, required: bool) -> dict:
    """One runner's sampler row of the table from a golden's variants (``sampler``: the V1 runner's, 0.34: the V2
    runner's; ``v2``: the V2 runner's where the release has both): the bytes per logit on the path a CUDA install
    takes (FlashInfer where the wheel requires it, else without), the other variant's figure as the band's other
    end, the Triton buffer's bytes per SM row and vocabulary entry, the fixed bytes; not run: why."""
    pick = "flashinfer" if required else "no_flashinfer"
    v = variants[pick]
    if not v.get("derived"):
        return {"derived": False, "why": v.get("why", "")}
    at = {r["vocab_size"]: r for r in v["sampler"]}[TABLE_VOCAB]
    row = {"derived": True, "runner": "v2" if v.get("runner") == "V2 GPUModelRunner" else "v1", "variant": pick,
           "topk_topp_path": v["topk_topp_path"], "triton": v["triton"],
           "cuda_workspace_ops": v.get("cuda_workspace_ops", {})}
    # per batch range (torch's CUDA sort changes branch at 128 slices: cuda_workspace_bytes) the bytes per logit
    # on CUDA, the other variant's figure the band's other end
    for suffix, key in (("", "bytes_per_logit"), ("_under_128", "bytes_per_logit_under_128")):
        per = {k: cuda_per_logit({r["vocab_size"]: r for r in x["sampler"]}[TABLE_VOCAB], key)
               for k, x in variants.items() if x.get("derived")}
        # a variant that called FlashInfer's sampler: its high end adds what FlashInfer allocates itself
        high = {k: b + (FLASHINFER_UNMEASURED_BYTES_PER_LOGIT if variants[k].get("flashinfer_sampling_calls")
                        else 0) for k, b in per.items()}
        row[f"bytes_per_logit{suffix}"] = round(cuda_per_logit(at, key), 3)
        row[f"bytes_per_logit_low{suffix}"] = round(min(per.values()), 3)
        row[f"bytes_per_logit_high{suffix}"] = round(max(high.values()), 3)
    row["bytes_per_logit_cpu"] = round(at["bytes_per_logit"], 3)
    if v.get("persistent"):  # the V2 runner's per-request states, allocated from its creation on
        pers = v["persistent"]
        row["persistent"] = {"counted": pers["counted"], "bytes_per_logit": round(pers["bytes_per_logit"], 4),
                             "bytes_per_req": round(pers["bytes_per_req"]), "fixed_bytes": round(pers["fixed_bytes"]),
                             **({"bytes_per_token": round(pers["bytes_per_token"], 4),
                                 "bytes_per_token_slot": round(pers["bytes_per_token_slot"], 4),
                                 "bytes_per_vocab": round(pers["bytes_per_vocab"], 4), "scope": "runner"}
                                if "bytes_per_token" in pers else {})}
        # a multimodal model's encoder runner's inputs_embeds: the measured bytes per batched token over its
        # inputs_embeds_size in the run's dtype (bfloat16), i.e. how many [T, inputs_embeds_size] buffers it keeps
        mm = {a: m for a, m in (pers.get("multimodal") or {}).items() if m.get("derived")}
        if mm:
            arch, m = sorted(mm.items())[0]
            row["persistent"]["multimodal"] = {"from": arch, "inputs_embeds_per_token": round(
                m["bytes_per_token"] / (m["inputs_embeds_size"] * 2), 4), "fixed_bytes": round(m["fixed_bytes"])}
        row["persistent"].update(speculative_row(pers.get("speculative") or {}))
    row["flashinfer_unmeasured"] = bool(v.get("flashinfer_sampling_calls"))
    row["sm_row_bytes_per_vocab"] = round(at["bytes_per_sm_row_per_vocab"], 3)
    row["fixed_bytes"] = at["fixed_bytes"]
    return row


SPEC_TERMS = ("bytes_per_logit", "bytes_per_req", "bytes_per_token", "bytes_per_vocab", "fixed_bytes")


def speculative_row(spec: dict) -> dict:
    """The table's ``speculative`` part from a golden's EAGLE-3 fits at two num_speculative_tokens k: each term as
    ``base + k · per_spec_token`` (the two fits' difference over their k's), the per-token base without the
    drafter's ``hidden_states`` [T, draft hidden] (bf16 in the run: one buffer, the golden's allocating line), which
    kvplan adds at the deployment's drafter's hidden size; none where either fit was not derived."""
    fits = {int(k): f for k, f in spec.items() if f.get("derived")}
    if len(fits) < 2:
        return {}
    (k1, f1), (k2, f2) = sorted(fits.items())[:2]
    out = {}
    for term in SPEC_TERMS:
        per = (f2[term] - f1[term]) / (k2 - k1)
        out[term] = {"base": round(f1[term] - k1 * per, 4), "per_spec_token": round(per, 4)}
    out["bytes_per_token"]["base"] = round(out["bytes_per_token"]["base"] - 2 * f1["draft_hidden_size"], 4)
    return {"speculative": {"method": f1["method"], "drafter": f1["drafter"], "draft_hidden_buffers": 1, **out}}


def table(goldens: Path, out: Path) -> int:
    """kvplan's run-time table (``kvplan/budget/profile_terms.json``) from the goldens: per release the sampler row
    of the runner it has (``sampler_table_row``; the V1 runner's up to 0.33, the V2 runner's from 0.34) and, where
    the release has both runners and its golden ran the V2 runner's too, the V2 runner's row under ``v2``; a release
    whose sampler was not run says why."""
    rows, rows_v2 = {}, {}
    for f in sorted(goldens.glob("*.json"), key=lambda p: tuple(int(x) for x in p.stem.split("."))):
        g = json.loads(f.read_text())
        required = bool(g.get("flashinfer_required"))
        rows[g["vllm_version"]] = sampler_table_row(g["sampler"], required)
        if "v2" in g:
            rows_v2[g["vllm_version"]] = sampler_table_row(g["v2"], required)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from kvplan.engines.vllm.versions import VERSIONS, version_key

    derived = [r for r in rows if rows[r]["derived"]]
    full = {}
    for release in VERSIONS:  # every release kvplan accepts: its own row, else the newest derived one before it
        own = rows.get(release)
        if own is not None and own["derived"]:
            full[release] = {**own, "basis": "derived", "from": release}
            continue
        before = [r for r in derived if version_key(r) <= version_key(release)] or derived[:1]
        why = own["why"] if own is not None else "no golden for this release (not a golden release)"
        full[release] = {**rows[before[-1]], "basis": "assumed", "from": before[-1], "why": why}
    # the V2 runner's row where the release has both runners: its own golden's, else the newest V2 row before it
    # (assumed); none before the first release whose V2 runner ran, none where the release's row is the V2 runner's
    derived_v2 = [r for r in rows_v2 if rows_v2[r]["derived"]]
    for release in VERSIONS:
        if full[release].get("runner") == "v2" or not derived_v2:
            continue
        own = rows_v2.get(release)
        if own is not None and own["derived"]:
            full[release]["v2"] = {**own, "basis": "derived", "from": release}
            continue
        before = [r for r in derived_v2 if version_key(r) <= version_key(release)]
        if before:
            why = own["why"] if own is not None else "the V2 runner's sampler not run for this release"
            full[release]["v2"] = {**rows_v2[before[-1]], "basis": "assumed", "from": before[-1], "why": why}
    warmup_table(goldens, full)
    forward_table(goldens / "forward", full)
    parallel_table(goldens / "parallel", full)
    encoder_table(goldens / "encoder", full)
    drafter_table(goldens / "drafter", full)
    shared = share_tables(full)
    out.write_text(json.dumps({"source": "scripts/golden/profile_terms.py --table (from tests/golden/profile_terms)",
                               "releases": full, "shared": shared}, indent=1) + "\n")
    rows = full
    print(f"{out}: {len(rows)} releases, {sum(r['derived'] for r in rows.values())} derived")
    return 0


# 0.33.0's _dummy_sampler_run adds the warm-up-parameter pass (model_runner.py lines 1056-1062): from it the profile
# pays for the sampler's part of the V2 warm-up, before it the warm-up runs it in what the profile left
WARMUP_SAMPLER_IN_PROFILE_FROM = (0, 33, 0)


def warmup_row(golden: dict) -> dict:
    """The V2 runner's warm-up row of a golden's ``v2_warmup`` (``--runner-v2 --warmup-pass``): the sampler's pass
    over the warm-up's parameters (``sampler_table_row``, its high end with FlashInfer's unmeasured part) and the
    prompt logprobs' bytes per logit, on the variant a CUDA install takes; not run: why."""
    variants = golden["v2_warmup"]
    row = sampler_table_row(variants, bool(golden.get("flashinfer_required")))
    if not row["derived"]:
        return row
    pick = variants[row["variant"]]
    at = {r["vocab_size"]: r for r in pick["prompt_logprobs"]}[TABLE_VOCAB]
    keep = ("bytes_per_logit", "bytes_per_logit_high", "bytes_per_logit_under_128", "bytes_per_logit_high_under_128",
            "fixed_bytes", "topk_topp_path")
    return {"derived": True, "sampler": {k: row[k] for k in keep},
            "prompt_logprobs": {"bytes_per_logit": round(at["bytes_per_logit"], 3), "fixed_bytes": at["fixed_bytes"]}}


def warmup_table(goldens: Path, full: dict) -> None:
    """Each release with the V2 runner (its ``v2`` row, or its own row from 0.34): the warm-up's row
    (``warmup_row``) under ``v2_warmup``, its own golden's, else the newest derived one before it (assumed)."""
    from kvplan.engines.vllm.versions import version_key

    own = {}
    for f in goldens.glob("*.json"):
        g = json.loads(f.read_text())
        if "v2_warmup" in g:
            own[g["vllm_version"]] = warmup_row(g)
    derived = sorted((r for r in own if own[r]["derived"]), key=version_key)
    for release, row in full.items():
        if not (row.get("v2") or row.get("runner") == "v2"):
            continue
        in_profile = {"sampler_in_profile": version_key(release) >= WARMUP_SAMPLER_IN_PROFILE_FROM}
        mine = own.get(release)
        if mine is not None and mine["derived"]:
            row["v2_warmup"] = {**mine, **in_profile, "basis": "derived", "from": release}
            continue
        before = [r for r in derived if version_key(r) <= version_key(release)] or derived[:1]
        if before:
            why = mine["why"] if mine is not None else "the V2 runner's warm-up not run for this release"
            row["v2_warmup"] = {**own[before[-1]], **in_profile, "basis": "assumed", "from": before[-1], "why": why}


# ----------------------------------------------------------------------------- the forward's activation peak

# label -> config; a label's family is its first word (``moe-mixtral``: MoE): the table's factor for a family is the
# largest of its models' at that release (a second MoE model, so the MoE factor is not one model's)
FORWARD_MODELS = {"dense": "configs/Qwen/Qwen3-8B/config.json", "moe": "configs/openai/gpt-oss-20b/config.json",
                  "moe-mixtral": "configs/mistralai/Mixtral-8x7B-Instruct-v0.1/config.json"}


# architecture -> config: models measured for their own row (``architectures`` in a release's forward golden), not
# for their family's factor: kvplan takes such a model's own measured bytes per token where the release measured its
# architecture (``kvplan.budget.profile.forward_factors``), its family's factor otherwise. Gemma 4 26B-A4B: a MoE
# block (128 experts, top 8, moe_intermediate 704) beside a dense MLP in every layer, sliding 256-dim and global
# 512-dim heads with attention_k_eq_v; the text model as Gemma4ForConditionalGeneration builds it (its vision tower
# built, not run).
OWN_FORWARD_MODELS = {"Gemma4ForConditionalGeneration": "configs/google/gemma-4-26B-A4B-it/config.json"}


def label_family(label: str) -> str:
    return label.split("-")[0]
FORWARD_TOKENS = (256, 512)


def forward_main(a) -> int:
    """``--forward``: the dummy forward of vLLM's ``profile_run`` (``_dummy_run(max_num_batched_tokens)``: the model
    class's ``forward`` over ``T`` dummy tokens) for one model, measured on the meta device, in its own process per
    path (``--forward-path``):

    * ``custom_ops``: the path of vLLM's CUDA custom ops (``enforce_eager``: ``custom_ops = ['all']``), each
      ``forward_cuda`` running as on CUDA: the Python wrapper allocates its output exactly as on the card, and the
      compiled kernel it launches (``torch.ops._C`` / ``_moe_C``: rotary embedding, SiLU-and-mul, RMSNorm, MoE
      align/top-k/sum) is a no-op here, as is every Triton launch (fused MoE): a kernel that writes into the
      buffers its wrapper gave it allocates nothing itself, so the live bytes are the card's; the values are not
      computed (no shape depends on them). The compiled graph vLLM runs by default (Inductor) fuses the same
      elementwise ops into kernels with the same outputs: the path's peak is the value.
    * ``native``: the graph Inductor is handed (``custom_ops = ['none']``, every op's ``forward_native``):
      unfused, its intermediates (SiLU's output beside the product, RMSNorm's fp32 copy) live; the band's high end.

    vLLM's custom ops (``direct_register_custom_op``: the MoE forward, all-reduce, …) run their Python
    implementation (what the CUDA dispatch key runs) except attention, which runs its registered fake (the
    attention kernel writes into the output buffer the layer allocated; FlashAttention's own softmax LSE, heads × T
    fp32, is not counted: < 0.1 % of the peak). The model is built by ``kvplan/verify/arch_runner.py``'s stubs (its
    STUBS), on a platform answering CUDA (an H100: capability 9.0). Quantization configs are dropped (bf16 weights):
    gpt-oss's experts run the unquantized Triton MoE, whose workspace is per token the same in bf16 as the MXFP4
    path's activations (both bf16)."""
    import torch  # noqa: F401

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kvplan" / "verify"))
    ops = {}
    try:
        import vllm.utils.torch_utils as tu
    except ImportError:
        tu = None
    import vllm.utils as vu

    mods = [m for m in (tu, vu) if m is not None and hasattr(m, "direct_register_custom_op")]
    orig = mods[0].direct_register_custom_op

    def record(op_name, op_func, *args, **kwargs):
        ops[op_name] = op_func
        if kwargs.get("fake_impl") is not None:
            FAKES[op_name] = (op_func, kwargs["fake_impl"])
        return orig(op_name, op_func, *args, **kwargs)

    for m in mods:
        m.direct_register_custom_op = record
    import logging

    logging.disable(logging.WARNING)
    import arch_runner as AR

    import torch

    for ns in ("_C", "_moe_C", "_C_cache_ops"):
        setattr(torch.ops, ns, CompiledKernels(ns))
    register_fake = torch.library.register_fake

    def fake_of_compiled(op, *args, **kwargs):  # a fake for a compiled kernel that is not loaded: nothing to attach
        if isinstance(op, str) and op.split("::")[0] in ("_C", "_moe_C", "_C_cache_ops"):
            return lambda fn=None: fn
        return register_fake(op, *args, **kwargs)

    torch.library.register_fake = fake_of_compiled
    # auxiliary CUDA streams and events a layer creates (shared experts' overlap): inert here, as arch_runner's
    # stub makes them where its setup reaches that far (it does not in releases before 0.2x)
    torch.cuda.Stream = AR_INERT("Stream")
    torch.cuda.Event = AR_INERT("Event")
    AR._stub_torchvision()  # before vLLM's config imports transformers' image utilities (torchvision's fakes)
    flash_attn_stand_in()
    cuda_platform()  # before the layers import: older releases pick their CUDA kernels' wrappers at import
    import vllm.triton_utils as vtu

    if not vtu.HAS_TRITON and not a.encoder:  # as on CUDA (the encoder runs no MoE: the placeholders, as arch_runner): the modules that import their Triton kernels under `if HAS_TRITON:` (the
        vtu.HAS_TRITON = True  # fused-MoE package's TritonExperts, fused_experts) import them; their launches no-op
    try:
        from vllm.model_executor.layers.fused_moe.oracle import unquantized as uq

        select = uq.select_unquantized_moe_backend
    except ImportError:
        uq = select = None
    AR.setup()
    def stub_fits() -> bool:  # arch_runner's stub reads 0.3x's oracle: one argument, a list of kernel classes
        try:
            uq.backend_to_kernel_cls(uq.UnquantizedMoeBackend.TRITON)[0]
        except Exception:  # noqa: BLE001 - an older oracle
            return False
        return len(inspect.signature(select).parameters) == 1

    if select is not None and not stub_fits():
        # arch_runner's MoE stub is 0.34.0's one-argument oracle; an older oracle (moe_config, use_ep, use_dp) runs
        # as the release wrote it, on the CUDA platform answered here
        import vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method as ufm

        uq.select_unquantized_moe_backend = ufm.select_unquantized_moe_backend = select
    if any(x.startswith("_stub_attention_backend") for x in AR.SETUP_SKIPPED):
        # an older release's selector: its Triton attention backend (imports without compiled kernels; the layer's
        # attention op runs as its fake here, so the backend only has to construct)
        from vllm.platforms import current_platform as cp

        type(cp).get_attn_backend_cls = classmethod(
            lambda cls, *x, **k: "vllm.v1.attention.backends.triton_attn.TritonAttentionBackend")
    record_out = {"path": a.forward_path, "setup_skipped": list(AR.SETUP_SKIPPED), "python_ops": sorted(ops)}
    try:
        record_out.update(drafter_measure(a, AR, ops) if a.drafter_label else
                          weights_measure(a, AR, ops) if a.whole_weights else
                          parallel_measure(a, AR, ops) if a.parallel_run else encoder_measure(a, AR, ops) if a.encoder
                          else lora_measure(a, AR) if a.lora else forward_measure(a, AR, ops))
        record_out["derived"] = True
    except Exception as e:  # noqa: BLE001 - the release's model did not run here: recorded, one line
        import traceback

        traceback.print_exc()  # the whole trace on stderr; the golden keeps one line
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{f.filename.split('/vllm/')[-1]}:{f.lineno}" for f in reversed(tb) if "/vllm/" in f.filename),
                     "")
        record_out.update(derived=False, why=f"{type(e).__name__}: {' '.join(str(e).split())[:300]} [{where}]")
    if record_out.get("why"):  # no machine path in a golden: the file names from vllm/ on
        record_out["why"] = re.sub(r"(?:/[\w.+-]+)+/", "", record_out["why"])
    record_out["setup_skipped"] = [re.sub(r"(?:/[\w.+-]+)+/", "", x) for x in record_out["setup_skipped"]]
    a.variant_out.write_text(json.dumps(record_out, sort_keys=True))
    return 0


FAKES: dict = {}  # custom op name -> (its Python implementation, its registered fake), as the release registers them


def with_defaults(op_func, fake):
    """``fake`` called with the arguments bound to ``op_func``'s signature, its defaults applied."""
    sig = inspect.signature(op_func)

    def call(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return fake(*bound.args, **bound.kwargs)
    return call


def flat_gemma4_text_config() -> bool:
    """Gemma 4's text config as a release that predates transformers' per-layer configs reads it.

    vLLM 0.27.1 (``transformers>=5.5.3``) reads Gemma 4's attention shapes off flat attributes: ``head_dim`` for a
    sliding layer, ``global_head_dim`` for a full one and ``num_global_key_value_heads`` there with
    ``attention_k_eq_v`` (``model_executor/models/gemma4.py`` 572-590, ``Gemma4ModelArchConfigConvertor.get_head_size``
    ``transformers_utils/model_arch_config_convertor.py`` 604-610: ``max(head_dim, global_head_dim)``), as
    transformers 5.5-5.14's ``Gemma4TextConfig`` holds them. transformers 5.15+ (the base venv's 5.22) pops
    ``global_head_dim`` / ``num_global_key_value_heads`` into ``per_layer_config`` overrides of the full layers and
    refuses a global read of ``head_dim`` (AmbiguousGlobalPerLayerAttributeError). From 0.28 vLLM resolves the
    per-layer configs itself (0.28-0.31 ``transformers_utils/configs/gemma4.py`` ``gemma4_layer_config``; 0.32+ read
    ``config.per_layer_config[layer_idx]``, requiring transformers>=5.16.1); a release whose Gemma 4 model file reads
    neither gets the flat config back here: the full layers' override read from the config's own
    ``per_layer_config`` into the flat attributes, the overrides dropped (no value changed). True where the release
    needs it."""
    import importlib.util

    vllm_spec = importlib.util.find_spec("vllm")  # the release's tree, read without importing the model file
    model_file = Path(vllm_spec.origin).parent / "model_executor" / "models" / "gemma4.py" if vllm_spec else None
    if model_file is None or not model_file.exists():
        return False
    source = model_file.read_text()
    if "per_layer_config" in source or "gemma4_layer_config" in source:
        return False
    try:
        from transformers.models.gemma4 import configuration_gemma4 as cg
    except ImportError:
        return False
    cls = cg.Gemma4TextConfig
    post = cls.__post_init__

    def flat(self, **kwargs):
        post(self, **kwargs)
        if getattr(self, "is_heterogeneous", False):
            full = [i for i, t in enumerate(self.layer_types or ()) if t == "full_attention"]
            layer = self.per_layer_config[full[0]] if full else None
            self.per_layer_config = None  # transformers' setter: the per-layer overrides gone, reads flat again
            if layer is not None:
                self.global_head_dim = layer.head_dim
                self.num_global_key_value_heads = layer.num_key_value_heads

    cls.__post_init__ = flat
    return True


def build_on_meta(AR, ops, config: str, path: str, *, after_loading: bool) -> tuple:
    """The model class vLLM resolves for ``config``, built on the meta device under a CUDA worker's engine config
    (``enforce_eager`` on the custom-op path), eagerly run, vLLM's custom ops as their Python implementation
    (attention as its fake), then every Triton kernel stubbed: (config dict, vllm config, model, kernels stubbed)."""
    import torch

    triton_placeholders()
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.models.registry import ModelRegistry

    cfg, vc = engine_on_meta(AR, ops, config, path)
    cls, _ = ModelRegistry.resolve_model_cls(vc.model_config.architectures, model_config=vc.model_config)
    with set_current_vllm_config(vc), AR._meta_device():
        torch.set_default_dtype(torch.bfloat16)
        model = cls(vllm_config=vc, prefix="")
        torch.set_default_dtype(torch.float32)
        if after_loading:
            from vllm.model_executor.model_loader.utils import process_weights_after_loading

            # a quantized engine's online-quantized parameters may be made on the CPU: processed where they are;
            # 0.17-0.18's online FP8 methods materialize meta weights on the layer's ``_load_device`` (the default
            # device at create_weights, the CPU here): kept on the meta device instead
            # (their dummy values, ``initialize_single_dummy_weight``, are left out: a meta tensor has none)
            for m in model.modules() if HELD_QUANTIZATION else ():
                if hasattr(m, "_load_device"):
                    m._load_device = torch.device("meta")
            fp8_module = sys.modules.get("vllm.model_executor.layers.quantization.fp8")
            if HELD_QUANTIZATION and hasattr(fp8_module, "initialize_single_dummy_weight"):
                fp8_module.initialize_single_dummy_weight = lambda *a, **k: None
            process_weights_after_loading(model, vc.model_config,
                                          torch.device("cpu" if HELD_QUANTIZATION else "meta"))
    for name in [n for n in FAKES if "sdpa" in n]:  # a ViT SDPA wrapper whose module the tower imported while it
        setattr(torch.ops.vllm, name, with_defaults(*FAKES[name]))  # was built (0.14.1): its fake, with the defaults
    return cfg, vc, model, stub_vllm_kernels()


def stub_vllm_kernels() -> list[str]:
    """Every Triton kernel of the vLLM modules imported so far stubbed (``stub_kernels``): their names."""
    kernels = []
    for mname, mod in list(sys.modules.items()):
        if mname.startswith("vllm") and mod is not None:
            try:
                kernels += stub_kernels(mod, kernels_only=True)
            except Exception:  # noqa: BLE001 - a module whose globals cannot be walked
                pass
    return kernels


def engine_on_meta(AR, ops, config: str, path: str, read_as: dict | None = None, **engine_args) -> tuple:
    """``config``'s engine config as a CUDA worker makes it (``EngineArgs.create_engine_config``; ``enforce_eager``
    on the custom-op path; ``engine_args``: more of vLLM's engine arguments, e.g. ``speculative_config``), its
    device the meta device, run eagerly, the world-size-1 groups made and vLLM's custom ops as their Python
    implementation (attention as its fake); ``read_as``: a remote-code config written as its base class's
    (``kvplan/verify/arch_runner.py`` ``_write_config``): (config dict, vllm config)."""
    import tempfile

    import torch
    from vllm.engine.arg_utils import EngineArgs

    triton_placeholders()
    cfg = json.loads(Path(config).read_text())
    flat_gemma4_text_config()
    d = tempfile.mkdtemp(prefix="fwd_")
    written = AR._write_config(str(Path(d) / "m"), cfg, read_as)
    vc = EngineArgs(model=written, skip_tokenizer_init=True, dtype="bfloat16", enforce_eager=path == "custom_ops",
                    **({"quantization": HELD_QUANTIZATION[0]} if HELD_QUANTIZATION else {}),
                    **engine_args).create_engine_config()
    vc.device_config.device = torch.device("meta")
    try:
        from vllm.config import CompilationMode

        vc.compilation_config.mode = CompilationMode.NONE  # the graph is not compiled here: run eagerly
    except ImportError:
        vc.compilation_config.level = 0
    forward_dist(AR, vc)
    for name, fn in ops.items():  # vLLM's custom ops as their Python implementation, attention as its fake
        if "attention" not in name and "attn" not in name and "sdpa" not in name:
            setattr(torch.ops.vllm, name, OpPacket(fn))
        elif "sdpa" in name and name in FAKES:
            # the ViT's SDPA wrapper as its registered fake, called with the op's own defaults filled in (0.29's
            # fake names ``cu_seqlens`` without the default its op has, which a caller may leave out)
            setattr(torch.ops.vllm, name, with_defaults(*FAKES[name]))
    return cfg, vc


def forward_once(model, vc, T: int, collect: bool = False):
    """The model's forward over ``T`` dummy tokens on the meta device under a tracker of meta allocations (the
    output dropped inside it; ``collect``: a garbage collection too, so only what something still holds stays
    live): the tracker (``MetaLiveBytes``)."""
    import gc

    import torch
    from vllm.config import set_current_vllm_config
    from vllm.forward_context import set_forward_context

    counter = MetaLiveBytes()
    ids = torch.zeros(T, dtype=torch.long, device="meta")
    pos = torch.zeros(T, dtype=torch.long, device="meta")
    with set_current_vllm_config(vc), set_forward_context(None, vc), torch.inference_mode(), \
            tracking_mode(counter, devices=("meta",)):
        out = model(ids, pos)
        del out
        if collect:
            gc.collect()
    return counter


def forward_measure(a, AR, ops) -> dict:
    import torch

    calls = COMPILED_CALLS
    cfg, vc, model, kernels = build_on_meta(AR, ops, a.forward, a.forward_path, after_loading=True)
    custom_ops = list(vc.compilation_config.custom_ops)

    def run(T):
        return forward_once(model, vc, T)

    first = run(a.forward_tokens[0])
    peaks, at_peak = {}, {}
    for T in a.forward_tokens:
        c = run(T)
        peaks[T] = c.peak
        at_peak[T] = sorted(([list(s), dt, n] for n, s, dt in c.at_peak), key=lambda x: -x[2])
    t1, t2 = a.forward_tokens
    moe = any(int(cfg.get(k) or 0) > 1 for k in ("num_experts", "num_local_experts", "n_routed_experts"))
    launched = {k: v for k, v in calls.items() if v} | {
        s.name: s.launches for m in list(sys.modules.values()) if m is not None
        for s in list(vars(m).values()) if isinstance(s, KernelStub) and s.launches}
    if moe and not any("moe" in k.lower() and "topk" not in k.lower() and "softmax" not in k.lower()
                       for k in launched):
        raise RuntimeError("the fused-experts kernels were not reached here (no MoE kernel launch): the experts' "
                           "intermediate caches would be missing from the peak")
    per_token = (peaks[t2] - peaks[t1]) / (t2 - t1)
    # the class whose forward ran the text: a multimodal class's language model (Gemma4ForConditionalGeneration's
    # language_model is the registered Gemma4ForCausalLM, gemma4_mm.py), else the class itself
    text = getattr(model, "language_model", None)
    # the model's own compute_logits at TP 1 (its LogitsProcessor: a soft cap divides, tanh-s and multiplies out of
    # place, each step a new [R, V] tensor beside the previous one), what the dummy sampler pass starts from
    logits = parallel_logits(vc, model, int(cfg.get("hidden_size") or cfg.get("text_config", {}).get("hidden_size")))
    return {"model": a.forward, "architecture": type(model).__name__, "logits": logits,
            "text_architecture": type(text).__name__ if isinstance(text, torch.nn.Module) else type(model).__name__,
            "custom_ops": custom_ops, "tokens": list(a.forward_tokens),
            "peak_bytes": {str(t): p for t, p in peaks.items()}, "bytes_per_token": per_token,
            "fixed_bytes": peaks[t1] - round(per_token * t1),
            "first_call_bytes": first.peak - peaks[t1], "live_at_peak": {str(t): v for t, v in at_peak.items()},
            "kernel_launches": launched, "kernels_stubbed": len(kernels),
            "config": {k: cfg.get(k) for k in ("hidden_size", "intermediate_size", "moe_intermediate_size",
                                               "num_attention_heads", "num_key_value_heads", "head_dim",
                                               "num_experts_per_tok", "num_hidden_layers", "vocab_size")}}


# ----------------------------------------------------------------------------- the drafter's dummy run

# label -> (target config, drafter config or None for the target's own MTP layers, vLLM's --speculative-config):
# the catalog's speculative drafters whose forward the profile's dummy run calls. EAGLE-3: Llama-3.1-8B's head
# (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, one decoder layer, H 4,096, draft vocabulary 32,000) and gpt-oss-20b's
# P-EAGLE head (amazon/GPT-OSS-20B-P-EAGLE, four decoder layers, H 2,880), both vLLM's Eagle3LlamaForCausalLM
# (llama_eagle3.py); MTP: Qwen3.5-27B's own MTP layer (Qwen3_5MTP: one full-attention decoder layer with a dense MLP,
# fed the target's inputs_embeds as the multimodal target's proposer does).
DRAFTER_MODELS = {
    "eagle3-llama": ("configs/meta-llama/Llama-3.1-8B-Instruct/config.json",
                     "configs/yuhuili/EAGLE3-LLaMA3.1-Instruct-8B/config.json",
                     {"method": "eagle3", "num_speculative_tokens": 3}),
    "eagle3-peagle-gpt-oss": ("configs/openai/gpt-oss-20b/config.json",
                              "configs/amazon/GPT-OSS-20B-P-EAGLE/config.json",
                              {"method": "eagle3", "num_speculative_tokens": 5}),
    "mtp-qwen3.5": ("configs/Qwen/Qwen3.5-27B/config.json", None, {"method": "mtp", "num_speculative_tokens": 1}),
}


def build_drafter_on_meta(AR, ops, label: str, path: str) -> tuple:
    """The drafter of ``DRAFTER_MODELS[label]`` as the release's proposer loads it, on the meta device: the engine
    config made with vLLM's ``--speculative-config`` (``engine_on_meta``), then the draft model config's class built
    by ``initialize_model`` under the ``eagle_head`` model tag with the draft vLLM config (0.34: the speculative
    config's ``apply_draft_overrides``, as ``load_eagle_model`` takes it; before, the engine's, as the V1
    ``EagleProposer._get_model`` takes it but for its MoE backend), then every Triton kernel stubbed:
    (target config dict, draft vllm config, drafter model, draft model config, kernels stubbed)."""
    import tempfile

    import torch
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.model_loader.utils import initialize_model

    root = Path(__file__).resolve().parents[2]
    target, drafter, spec = DRAFTER_MODELS[label]
    spec = dict(spec)
    if drafter:  # a separate drafter checkpoint: its config written beside the target's
        d = tempfile.mkdtemp(prefix="draft_")
        spec["model"] = AR._write_config(str(Path(d) / "draft"), json.loads((root / drafter).read_text()), None)
    read_as = root / Path(target).parent / "read_as.json"
    cfg, vc = engine_on_meta(AR, ops, str(root / target), path,
                             read_as=json.loads(read_as.read_text()) if read_as.exists() else None,
                             speculative_config=spec)
    sc = vc.speculative_config
    dmc = sc.draft_model_config
    dvc = sc.apply_draft_overrides(vc) if hasattr(sc, "apply_draft_overrides") else vc
    try:
        from vllm.compilation.backends import set_model_tag

        tag = set_model_tag("eagle_head")
    except ImportError:  # a release without model tags
        import contextlib

        tag = contextlib.nullcontext()
    with set_current_vllm_config(dvc), tag, AR._meta_device():
        torch.set_default_dtype(torch.bfloat16)
        model = initialize_model(vllm_config=dvc, model_config=dmc)
        torch.set_default_dtype(torch.float32)
    return cfg, dvc, model, dmc, stub_vllm_kernels()


def flashinfer_norm_stand_in() -> bool:
    """``flashinfer.norm``'s Gemma RMSNorm pair where FlashInfer is not installed, made after the model is built:
    0.34's Qwen3.5 model files (``vllm/models/qwen3_5/nvidia/model.py`` 204) import it inside the norm's forward.
    ``gemma_rmsnorm`` allocates its output as FlashInfer's wrapper does (``out = torch.empty_like(input)`` where none
    is given; its kernel, not run, writes it), ``gemma_fused_add_rmsnorm`` works in place (no allocation). True
    where the stand-in was made."""
    import importlib.util

    if "flashinfer" in sys.modules or importlib.util.find_spec("flashinfer") is not None:
        return False
    import torch

    norm = types.ModuleType("flashinfer.norm")
    norm.gemma_rmsnorm = lambda input, weight, eps=1e-6, out=None, enable_pdl=None: (
        torch.empty_like(input) if out is None else out)
    norm.gemma_fused_add_rmsnorm = lambda input, residual, weight, eps=1e-6, enable_pdl=None: None
    pkg = types.ModuleType("flashinfer")
    pkg.norm = norm
    sys.modules["flashinfer"], sys.modules["flashinfer.norm"] = pkg, norm
    return True


def drafter_forward_once(model, dvc, T: int, hidden: int, mm: bool = False):
    """The drafter's forward as the release's dummy run calls it (V1 ``EagleProposer.dummy_run`` /
    ``llm_base_proposer.py``: ``self.model(input_ids=self.input_ids[:T], positions=self._get_positions(T),
    inputs_embeds=None, hidden_states=self.hidden_states[:T])``; V2 ``_run_model``: the same keywords), the
    inputs the proposer's persistent buffers (made before the tracker: allocated when the runner is created),
    ``hidden_states`` ``[T, draft hidden]``; the output dropped inside the tracker (the V1 dummy run discards it).
    ``mm``: the target takes multimodal inputs (the proposer's ``supports_mm_inputs``): the V1 dummy run passes
    ``input_ids=None`` and its persistent ``inputs_embeds[:T]`` (0.19.0 eagle.py 1523-1528; the V2 speculator
    embeds into the same buffer before the forward), so the drafter embeds nothing itself."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.forward_context import set_forward_context

    ids = torch.zeros(T, dtype=torch.int32, device="meta")
    pos = torch.zeros(T, dtype=torch.long, device="meta")
    hs = torch.zeros(T, hidden, dtype=torch.bfloat16, device="meta")
    kwargs = {"input_ids": None if mm else ids, "positions": pos, "hidden_states": hs}
    if "inputs_embeds" in inspect.signature(model.forward).parameters:
        kwargs["inputs_embeds"] = torch.zeros(T, hidden, dtype=torch.bfloat16, device="meta") if mm else None
    counter = MetaLiveBytes()
    with set_current_vllm_config(dvc), set_forward_context(None, dvc), torch.inference_mode(), \
            tracking_mode(counter, devices=("meta",)):
        out = model(**kwargs)
        del out
    return counter


def drafter_combine_once(model, dvc, T: int, target_hidden: int, aux: int):
    """EAGLE-3's combination of the target's auxiliary hidden states as the V2 runner's speculator runs it before
    the drafter's prefill (``self.model.combine_hidden_states(torch.cat(aux_hidden_states, dim=-1))``: 0.19.0
    ``v1/worker/gpu/spec_decode/eagle/speculator.py`` 354, 0.29.0 ``autoregressive/speculator.py`` 248, 0.34.0
    ``target_dependent_ar/speculator.py`` 150), the ``aux`` ``[T, target hidden]`` states made before the tracker
    (the target's outputs, held by the runner) and the combined states kept (``propose`` holds them through the
    prefill): the tracker."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.forward_context import set_forward_context

    states = [torch.zeros(T, target_hidden, dtype=torch.bfloat16, device="meta") for _ in range(aux)]
    counter = MetaLiveBytes()
    with set_current_vllm_config(dvc), set_forward_context(None, dvc), torch.inference_mode(), \
            tracking_mode(counter, devices=("meta",)):
        combined = model.combine_hidden_states(torch.cat(states, dim=-1))
        counter.kept = counter.now
        del combined
    return counter


def drafter_measure(a, AR, ops) -> dict:
    """``--drafter``: the drafter's forward of the profile's dummy run (``_dummy_run``: after the target's forward,
    V1 ``self.drafter.dummy_run(num_tokens, ...)``, 0.19.0 gpu_model_runner.py 5521; V2
    ``self.speculator.propose(..., dummy_run=True)``, 0.29.0 model_runner.py 803-822) at two token counts, and for an
    EAGLE-3 head the V2 speculator's combination of the aux hidden states."""
    from vllm.multimodal import MULTIMODAL_REGISTRY

    cfg, dvc, model, dmc, kernels = build_drafter_on_meta(AR, ops, a.drafter_label, a.forward_path)
    hidden = int(dmc.get_hidden_size())
    target_hidden = int((cfg.get("text_config") or cfg).get("hidden_size") or 0)
    # the proposer's supports_mm_inputs: the target takes multimodal inputs (V1: the registry's
    # supports_multimodal_inputs, 0.24.0 llm_base_proposer.py 135; 0.34.0: the model config's, speculator.py 307)
    # and the drafter embeds them (0.34.0 supports_multimodal_embeddings, 308; before, load_model's fallback)
    reg = getattr(MULTIMODAL_REGISTRY, "supports_multimodal_inputs", None)
    target_mm = reg(dvc.model_config) if reg else getattr(dvc.model_config, "supports_multimodal_inputs", False)
    try:
        from vllm.model_executor.models.interfaces import supports_multimodal_embeddings

        draft_mm = supports_multimodal_embeddings(model)
    except ImportError:
        draft_mm = hasattr(model, "embed_input_ids")
    mm = bool(target_mm) and bool(draft_mm)
    stood_in = flashinfer_norm_stand_in() if "flashinfer.norm" in "".join(
        inspect.getsource(sys.modules[type(m).__module__]) for m in {type(m): m for m in model.modules()}.values()
        if type(m).__module__.startswith("vllm")) else False
    peaks, at_peak = {}, {}
    drafter_forward_once(model, dvc, a.forward_tokens[0], hidden, mm)  # a first call (lazy buffers) not measured
    for T in a.forward_tokens:
        c = drafter_forward_once(model, dvc, T, hidden, mm)
        peaks[T] = c.peak
        at_peak[T] = sorted(([list(s), dt, n] for n, s, dt in c.at_peak), key=lambda x: -x[2])
    t1, t2 = a.forward_tokens
    per_token = (peaks[t2] - peaks[t1]) / (t2 - t1)
    target, drafter, spec = DRAFTER_MODELS[a.drafter_label]
    out = {"label": a.drafter_label, "target": target, "drafter": drafter, "speculative_config": spec,
           "architecture": (dmc.architectures or [""])[0], "model_class": type(model).__name__,
           "custom_ops": list(dvc.compilation_config.custom_ops), "tokens": list(a.forward_tokens),
           "draft_hidden_size": hidden, "target_hidden_size": target_hidden, "multimodal_inputs": mm,
           **({"stand_ins": ["flashinfer.norm: gemma_rmsnorm allocates empty_like(input), gemma_fused_add_rmsnorm "
                             "in place"]} if stood_in else {}),
           "draft_layers": int(getattr(dmc.hf_config, "num_hidden_layers", 0) or 0),
           "peak_bytes": {str(t): p for t, p in peaks.items()}, "bytes_per_token": per_token,
           "fixed_bytes": peaks[t1] - round(per_token * t1), "kernels_stubbed": len(kernels),
           "live_at_peak": {str(t): v for t, v in at_peak.items()},
           "call": f"model(input_ids={'None' if mm else '[T] int32'}, positions=[T] int64, hidden_states=[T, "
                   "draft hidden] bf16" + ((", inputs_embeds=[T, draft hidden] bf16)" if mm else ", inputs_embeds=None)")
                                          if "inputs_embeds" in inspect.signature(model.forward).parameters else ")")}
    fc = getattr(getattr(model, "model", None), "fc", None)
    if spec["method"] == "eagle3" and hasattr(model, "combine_hidden_states") and fc is not None and target_hidden:
        width = int(fc.weight.shape[1])
        aux = width // target_hidden
        comb = {T: drafter_combine_once(model, dvc, T, target_hidden, aux) for T in a.forward_tokens}
        out["combine"] = {"aux_hidden_states": aux, "fc_in_features": width,
                          "peak_bytes": {str(t): c.peak for t, c in comb.items()},
                          "bytes_per_token": (comb[t2].peak - comb[t1].peak) / (t2 - t1),
                          "kept_bytes_per_token": (comb[t2].kept - comb[t1].kept) / (t2 - t1)}
    return out


# The multimodal encoder's dummy pass (profile_run: ``_get_mm_dummy_batch`` then ``embed_multimodal``, the outputs
# kept in the encoder cache under the text forward). Per architecture: the config it is measured on and the dummy
# items as the release's processor makes them at their largest (Gemma 3: every image is resized to the tower's
# image_size; pan-and-scan off by default, so one crop: num_patches 1).
ENCODER_MODELS = {"Gemma3ForConditionalGeneration": "configs/google/gemma-3-4b-it/config.json",
                  "Qwen3VLMoeForConditionalGeneration": "tests/logs/budget/configs/Qwen/Qwen3-VL-30B-A3B-Instruct/config.json",
                  "Qwen3_5ForConditionalGeneration": "configs/Qwen/Qwen3.5-27B/config.json",
                  "Llama4ForConditionalGeneration": "configs/meta-llama/Llama-4-Scout-17B-16E-Instruct/config.json",
                  "Gemma4ForConditionalGeneration": "configs/google/gemma-4-26B-A4B-it/config.json"}
ENCODER_ITEMS = (1, 2)


def gemma3_dummy(model, cfg: dict, n: int) -> dict:
    """``n`` images, one crop each (host-side counts: the model splits its output by them with ``.tolist()``):
    ``num_patches`` 1 from 0.14 (the processor's count), ``num_crops`` 0 before (the model adds the 1 itself; the
    inputs batched per item, ``[items, 1, ...]``)."""
    import torch

    size = int(cfg["vision_config"]["image_size"])
    pixels = torch.empty(n, 3, size, size, dtype=torch.bfloat16, device="meta")
    if 'pop("num_crops"' in inspect.getsource(type(model)._parse_and_validate_image_input):
        # batched per item as that release's runner hands them ([items, crops + 1, ...]), flattened by the model
        return {"pixel_values": pixels.unsqueeze(1), "num_crops": torch.zeros(n, 1, dtype=torch.long)}
    return {"pixel_values": pixels, "num_patches": torch.ones(n, dtype=torch.long)}


# Qwen3-VL's tower (Qwen3-VL, Qwen3-VL-MoE, Qwen3.5 and Qwen3.6 dense/MoE: ``Qwen3_VisionTransformer``): ``n`` square
# images of QWEN_GRID × QWEN_GRID patches each (a multiple of the merge size; the dummy image's 128 × 128 merged
# patches, 4096 × 4096 pixels at patch 16, are too many for a CPU run of the tracker, and the tower's bytes grow
# with the patches: the per-patch figure is the growth over the items)
QWEN_GRID = 32


def qwen3_vl_dummy(model, cfg: dict, n: int) -> dict:
    """``pixel_values`` ``[patches, 3 · temporal_patch · patch²]`` (flattened as the processor flattens them) and
    ``image_grid_thw`` ``[[1, g, g]] × n``, a host tensor (the model reads it with ``.tolist()``)."""
    import torch

    v = cfg["vision_config"]
    row = int(v.get("in_channels", 3)) * int(v.get("temporal_patch_size", 2)) * int(v["patch_size"]) ** 2
    pixels = torch.empty(n * QWEN_GRID * QWEN_GRID, row, dtype=torch.bfloat16, device="meta")
    return {"pixel_values": pixels, "image_grid_thw": torch.tensor([[1, QWEN_GRID, QWEN_GRID]] * n)}


def qwen3_vl_patches(cfg: dict) -> int:
    return QWEN_GRID * QWEN_GRID


# Llama 4's tower encodes the image's tiles (chunks of image_size², each (image_size / patch)² patches and a class
# token); the dummy item here has LLAMA4_CHUNKS chunks (the per-patch figure is the growth over the items)
LLAMA4_CHUNKS = 2


def llama4_dummy(model, cfg: dict, n: int) -> dict:
    """``pixel_values`` ``[items · chunks, 3, size, size]``, ``patches_per_image`` (chunks per image) and
    ``aspect_ratios`` as host tensors (the model splits its output with ``.tolist()``)."""
    import torch

    size = int(cfg["vision_config"]["image_size"])
    pixels = torch.empty(n * LLAMA4_CHUNKS, 3, size, size, dtype=torch.bfloat16, device="meta")
    return {"pixel_values": pixels, "patches_per_image": torch.tensor([LLAMA4_CHUNKS] * n),
            "aspect_ratios": torch.tensor([[LLAMA4_CHUNKS, 1]] * n)}


def llama4_patches(cfg: dict) -> int:
    return LLAMA4_CHUNKS * square_patches(cfg)


def square_patches(cfg: dict) -> int:
    v = cfg["vision_config"]
    return (int(v["image_size"]) // int(v["patch_size"])) ** 2


# Gemma 4's tower is transformers' ``Gemma4VisionModel`` (vLLM builds it with ``AutoModel.from_config``, its linears
# replaced by vLLM's: 0.34.0 model_executor/models/gemma4_mm.py 1118-1132). It takes the padding from the position ids
# (``(pixel_position_ids == -1).all(-1)``), transformers' mask builder probes ``padding_mask.all()`` on the host and the
# pooler keeps ``pooled[valid_mask]``: data-dependent, which the meta device cannot run. The modules vLLM's encoder pass
# runs are made real on the CPU with random values (``tower_on_cpu``) and run there under the same tracker, counting
# the CPU storages the pass makes (the weights, made before, are not counted).
H100_BYTES = 80 * 2**30
ENCODER_ON_CPU = {"Gemma4ForConditionalGeneration": ("vision_tower", "vision_input_norm", "embed_vision")}
# The dummy is a video (32 frames of 70 soft tokens: 2,496 tokens, more than the image's 280; kvplan
# gemma4_encoder_dummy), every frame padded to ``max_patches`` = 70 · pooling² = 630 patches (transformers'
# Gemma4VideoProcessor ``pad_to_max_patches``, position ids -1 on the padding); vLLM's dummy frame is 224 × 224
# (Gemma4DummyInputsBuilder: the image processor's size is None), which ``get_aspect_ratio_preserving_size`` makes
# 384 × 384: 24 × 24 real patches (64 soft tokens), 54 padding. An item here is one frame: the video's frames are
# encoded together in one chunk when ``_encoder_chunk`` allows it (gemma4_mm.py 1700-1735), so the pass grows by frame.
GEMMA4_VIDEO_SOFT_TOKENS = 70  # a frame's soft tokens (gemma4_mm.py 137: _VIDEO_MAX_SOFT_TOKENS)


def gemma4_frame_grid(cfg: dict) -> tuple[int, int]:
    """The dummy frame's real patches per side and its padded patch count (``max_patches``), as the processor makes
    them (transformers image_processing_gemma4.py ``get_aspect_ratio_preserving_size`` on a square frame: the side
    ``sqrt(max_patches) · patch`` pixels, whatever the frame's size, rounded down to a multiple of pooling · patch)."""
    import math

    v = cfg["vision_config"]
    patch, pool = int(v["patch_size"]), int(v.get("pooling_kernel_size") or 1)
    max_patches = GEMMA4_VIDEO_SOFT_TOKENS * pool * pool
    side = math.floor(math.sqrt(max_patches * patch * patch) / (pool * patch)) * pool
    return side, max_patches


def gemma4_dummy(model, cfg: dict, n: int) -> dict:
    """One video of ``n`` frames on the CPU: ``pixel_values_videos`` ``[n, max_patches, 3 · patch²]`` (bf16, as the
    runner casts floating inputs to the model dtype), ``pixel_position_ids_videos`` ``[n, max_patches, 2]`` (the real
    patches' (x, y), -1 on the padding) and ``video_frame_counts`` ``[n]``."""
    import torch

    side, max_patches = gemma4_frame_grid(cfg)
    v = cfg["vision_config"]
    row = int(v.get("num_channels", 3)) * int(v["patch_size"]) ** 2
    pixels = torch.rand(n, max_patches, row, dtype=torch.bfloat16)
    ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    real = torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=-1)
    pos = torch.cat([real, torch.full((max_patches - side * side, 2), -1, dtype=real.dtype)])
    return {"pixel_values_videos": pixels, "pixel_position_ids_videos": pos.unsqueeze(0).repeat(n, 1, 1),
            "video_frame_counts": torch.tensor([n])}


def gemma4_patches(cfg: dict) -> int:
    return gemma4_frame_grid(cfg)[1]


def transformers_in_pin() -> None:
    """A tower that is transformers' own class (``ENCODER_ON_CPU``) is the release's only under a transformers its
    wheel admits (its ``Requires-Dist: transformers`` pin, read from the unpacked release's metadata): a
    LookupError naming both otherwise (0.31.0 pins < 5.18, 0.33.0 < 5.21; the arch base has 5.22.2)."""
    from importlib.metadata import requires, version

    from packaging.requirements import Requirement

    have = version("transformers")
    for line in requires("vllm") or ():
        req = Requirement(line)
        if req.name == "transformers" and req.marker is None and not req.specifier.contains(have, prereleases=True):
            raise LookupError(f"the tower is transformers' class and transformers {have} (this environment) is "
                              f"outside this release's pin ({req.specifier})")


def tower_on_cpu(model, names: tuple[str, ...]) -> set:
    """The named modules (built on the meta device) made real on the CPU, parameters drawn from N(0, 0.02) and
    buffers filled with ones (their values do not change what the pass allocates); the storages they hold, which
    the tracker leaves out."""
    import torch

    gen = torch.Generator().manual_seed(0)
    known = set()
    for name in names:
        mod = getattr(model, name, None)
        if mod is None:
            continue
        mod.to_empty(device="cpu")
        with torch.no_grad():
            for t in mod.parameters():
                t.normal_(0.0, 0.02, generator=gen) if t.is_floating_point() else t.zero_()
                known.add(t.untyped_storage()._cdata)
            for t in mod.buffers():
                t.fill_(1)
                known.add(t.untyped_storage()._cdata)
            # a tensor held as a plain attribute, neither parameter nor buffer, stays on the meta device under
            # to_empty: filled with ones on the CPU as a buffer is (0.20.x's RMSNorm(has_weight=False) keeps
            # ``self.weight = torch.ones(hidden_size)`` and passes it to the op: 0.20.2 layers/layernorm.py 129)
            for sub in mod.modules():
                for key, t in list(vars(sub).items()):
                    if isinstance(t, torch.Tensor) and t.is_meta:
                        setattr(sub, key, torch.ones(t.shape, dtype=t.dtype))
                        known.add(getattr(sub, key).untyped_storage()._cdata)
    return known


ENCODER_DUMMY_INPUTS = {"Gemma3ForConditionalGeneration": gemma3_dummy,
                        "Gemma4ForConditionalGeneration": gemma4_dummy,
                        "Qwen3VLMoeForConditionalGeneration": qwen3_vl_dummy,
                        "Qwen3_5ForConditionalGeneration": qwen3_vl_dummy,
                        "Llama4ForConditionalGeneration": llama4_dummy}
ENCODER_PATCHES = {"Gemma3ForConditionalGeneration": square_patches,
                   "Gemma4ForConditionalGeneration": gemma4_patches,
                   "Qwen3VLMoeForConditionalGeneration": qwen3_vl_patches,
                   "Qwen3_5ForConditionalGeneration": qwen3_vl_patches,
                   "Llama4ForConditionalGeneration": llama4_patches}


def encoder_measure(a, AR, ops) -> dict:
    """``--encoder``: the model's ``embed_multimodal`` (older releases: ``get_multimodal_embeddings``) over 1 and 2
    dummy items on the meta device, the pixel values made inside the tracker (they are on the card during the pass);
    the peak's growth per item, per patch, and the outputs the encoder cache keeps per item; with ``--encoder-tp``
    the same per TP size (``encoder_tp_measure``)."""
    from vllm.model_executor.models.registry import ModelRegistry

    wanted = json.loads(Path(a.encoder).read_text())["architectures"][0]
    if wanted not in ModelRegistry.get_supported_archs():
        raise LookupError(f"{wanted} is not in this release's model registry (the model came later)")
    if wanted in ENCODER_ON_CPU:
        transformers_in_pin()
    cfg, vc, model, _ = build_on_meta(AR, ops, a.encoder, a.forward_path, after_loading=False)
    arch = cfg["architectures"][0]
    on_cpu = arch in ENCODER_ON_CPU
    known = tower_on_cpu(model, ENCODER_ON_CPU[arch]) if on_cpu else None
    if on_cpu:
        import torch

        try:
            torch.accelerator.get_memory_info()
        except RuntimeError:  # no accelerator here: the H100's 80 GiB, free and total (Gemma 4's frame chunking reads
            # min(free / 2, total / 10) over 4 · patches · position_embedding_size · 8 B a frame: every frame of the
            # dummy in one chunk, as on the card with its weights loaded)
            torch.accelerator.get_memory_info = lambda *x, **k: (H100_BYTES, H100_BYTES)
        # 0.24.0 asks the platform instead (gemma4_mm.py 1386 ``current_platform.mem_get_info()``, on CUDA
        # ``torch.cuda.mem_get_info`` through the platform's ``__getattr__``; the stand-in's device type has none)
        from vllm.platforms import current_platform

        if not callable(getattr(current_platform, "mem_get_info", None)):
            type(current_platform).mem_get_info = classmethod(lambda cls, *x, **k: (H100_BYTES, H100_BYTES))
    unpin_host_staging()
    backends = sorted({str(getattr(m, "attn_backend", "")) for m in model.modules() if hasattr(m, "attn_backend")})
    rec = {"model": a.encoder, "architecture": type(model).__name__, "attn_backends": backends,
           **encoder_peaks(model, cfg, vc, arch, known)}
    if on_cpu:
        rec["run_on"] = ("cpu: " + ", ".join(ENCODER_ON_CPU[arch]) + " made real with random values (data-dependent "
                         "padding probes and boolean indexing); CPU storages the pass makes counted, weights not")
        # the tower is transformers' class: the transformers it ran with (inside the release's pin,
        # ``transformers_in_pin``), which a later run on another version may not reproduce
        from importlib.metadata import version

        rec["transformers"] = version("transformers")
    v = cfg["vision_config"]
    rec["config"] = {k: v.get(k) for k in ("hidden_size", "intermediate_size", "num_attention_heads", "num_heads",
                                           "num_hidden_layers", "depth", "image_size", "patch_size",
                                           "spatial_merge_size", "out_hidden_size") if k in v}
    if a.encoder_tp:
        rec["tp"] = encoder_tp_measure(a, AR, ops)
    return rec


def encoder_peaks(model, cfg: dict, vc, arch: str, known: set | None = None) -> dict:
    """The encoder pass of ``model`` over ``ENCODER_ITEMS`` dummy items (the first run once before, warming the
    release's caches): the peaks, the growth per item and per patch, the part that does not grow, the outputs kept
    per item, what was live at each peak and the weights of each top-level module. ``known``: the tower runs on
    the CPU (``ENCODER_ON_CPU``), these storages (its weights) not counted."""
    import torch
    from vllm.config import set_current_vllm_config

    embed = getattr(model, "embed_multimodal", None) or model.get_multimodal_embeddings
    device = "meta" if known is None else "cpu"

    def run(n):
        counter = MetaLiveBytes() if known is None else CpuLiveBytes(known)
        with set_current_vllm_config(vc), torch.inference_mode(), tracking_mode(counter, devices=(device,)):
            out = embed(**ENCODER_DUMMY_INPUTS[arch](model, cfg, n))
            kept = sum(t.numel() * t.element_size() for t in out)
            del out
        return counter, kept

    run(ENCODER_ITEMS[0])
    peaks, kept, at_peak = {}, {}, {}
    for n in ENCODER_ITEMS:
        c, k = run(n)
        peaks[n], kept[n] = c.peak, k
        at_peak[n] = sorted(([list(s), dt, b] for b, s, dt in c.at_peak), key=lambda x: -x[2])
    n1, n2 = ENCODER_ITEMS
    per_item = (peaks[n2] - peaks[n1]) / (n2 - n1)
    patches = ENCODER_PATCHES[arch](cfg)
    return {"items": list(ENCODER_ITEMS),
            "peak_bytes": {str(n): p for n, p in peaks.items()}, "bytes_per_item": per_item,
            "patches_per_item": patches, "bytes_per_patch": per_item / patches,
            "fixed_bytes": peaks[n1] - round(per_item * n1),
            "output_bytes_per_item": (kept[n2] - kept[n1]) // (n2 - n1),
            "live_at_peak": {str(n): v for n, v in at_peak.items()},
            # the weights each top-level module holds as the release builds it (its tower: what loading it costs)
            "param_bytes_by_module": {name: sum(p.numel() * p.element_size() for p in m.parameters())
                                      for name, m in model.named_children()}}


def encoder_tp_measure(a, AR, ops) -> dict:
    """``--encoder-tp``: the encoder pass (``encoder_peaks``) on rank 0 of a TP group of each size, the model class
    rebuilt with the release's parallel-state getters answering that rank and its collectives through the release's
    own ``CudaCommunicator`` with pynccl faked (``parallel_groups``, as ``--parallel-all``), under the release's
    default ``mm_encoder_tp_mode`` ("weights": the tower's QKV / column / row-parallel linears split over the
    group; 0.19.0 config/multimodal.py line 144, 0.34.0 line 384). Per size: the figures and the collectives one
    pass calls."""
    calls: dict = {}
    fake_collectives(calls)
    orig_dist = forward_dist
    out = {}
    for tp in a.encoder_tp:
        def dist(AR_, vc, tp=tp):
            orig_dist(AR_, vc)
            parallel_groups(vc, tp, 1, 0, calls)

        globals()["forward_dist"] = dist
        try:
            cfg, vc, model, _ = build_on_meta(AR, ops, a.encoder, a.forward_path, after_loading=False)
        finally:
            globals()["forward_dist"] = orig_dist
        mode = getattr(getattr(vc.model_config, "multimodal_config", None), "mm_encoder_tp_mode", None)
        before = dict(calls)
        rec = encoder_peaks(model, cfg, vc, cfg["architectures"][0])
        runs = 1 + len(ENCODER_ITEMS)
        rec["collectives_per_pass"] = {k: (n - before.get(k, 0)) // runs for k, n in calls.items()
                                       if n - before.get(k, 0)}
        out[str(tp)] = {"tp": tp, "mm_encoder_tp_mode": mode, **rec}
    return out


def lora_measure(a, AR) -> dict:
    """``--lora``: what ``--enable-lora`` allocates on the GPU before the KV cache, from the release's own code: the
    model class built on the meta device (as ``--forward`` builds it, vLLM config with ``enable_lora``,
    ``max_loras``, ``max_lora_rank``), then the V1 runner's ``LoRAModelRunnerMixin.load_lora_model`` (every
    supported module replaced by its ``*WithLoRA`` layer, whose ``create_lora_weights`` allocates the stacked
    ``lora_a`` / ``lora_b`` slots, and the punica wrapper's index buffers) under the memory-tracking mode on the meta
    device: every tensor allocated there, by module and shape. The profile run's dummy LoRAs
    (``maybe_setup_dummy_loras``: ``max_loras`` of them at rank min(8, max_lora_rank)) are made on the CPU
    (``create_dummy_lora`` ... ``"cpu"``) and copied into the slots: no device memory beyond the slots."""
    import tempfile

    import torch

    triton_placeholders()
    try:  # the CUDA platform answered here makes the attention utils import FlashAttention's compiled extension
        import vllm.vllm_flash_attn  # noqa: F401
    except ImportError:  # not loaded on a CPU: an empty stand-in (no attention kernel runs in this measure)
        fa = types.ModuleType("vllm.vllm_flash_attn")
        fa.__getattr__ = lambda name: (lambda *x, **k: None)
        sys.modules["vllm.vllm_flash_attn"] = fa
    from vllm.config import set_current_vllm_config
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.models.registry import ModelRegistry

    cfg = json.loads(Path(a.forward).read_text())
    d = tempfile.mkdtemp(prefix="lora_")
    path = AR._write_config(str(Path(d) / "m"), cfg, None)
    vc = EngineArgs(model=path, skip_tokenizer_init=True, dtype="bfloat16", enforce_eager=True, enable_lora=True,
                    max_loras=a.lora[0], max_lora_rank=a.lora[1], max_num_seqs=a.lora[2],
                    max_num_batched_tokens=a.lora[3]).create_engine_config()
    vc.device_config.device = torch.device("meta")
    try:
        from vllm.config import CompilationMode

        vc.compilation_config.mode = CompilationMode.NONE
    except ImportError:
        vc.compilation_config.level = 0
    forward_dist(AR, vc)
    from vllm.platforms import current_platform as cp

    # the CUDA platform's punica wrapper (platforms/cuda.py get_punica_wrapper, the same class in every release)
    type(cp).get_punica_wrapper = classmethod(lambda cls: "vllm.lora.punica_wrapper.punica_gpu.PunicaWrapperGPU")
    import vllm.lora.ops.triton_ops as lora_ops
    import vllm.lora.punica_wrapper.punica_gpu as pg

    # what punica_gpu imports when HAS_TRITON (true on CUDA; no Triton here): the release's own names
    for name in lora_ops.__all__:
        if not hasattr(pg, name):
            setattr(pg, name, getattr(lora_ops, name))
    cls, _ = ModelRegistry.resolve_model_cls(vc.model_config.architectures, model_config=vc.model_config)
    with set_current_vllm_config(vc), AR._meta_device():
        torch.set_default_dtype(torch.bfloat16)
        model = cls(vllm_config=vc, prefix="")
        torch.set_default_dtype(torch.float32)
    from vllm.v1.worker.lora_model_runner_mixin import LoRAModelRunnerMixin

    counter = MetaLiveBytes()
    allocated = []
    orig_add = counter.add_tensor

    def add(t):
        before = counter.now
        orig_add(t)
        if counter.now > before:
            allocated.append([list(t.shape), str(t.dtype).replace("torch.", ""), counter.now - before])

    counter.add_tensor = add
    runner = LoRAModelRunnerMixin()
    with set_current_vllm_config(vc), torch.inference_mode(), tracking_mode(counter, devices=("meta",)):
        lora_model = runner.load_lora_model(model, vc, torch.device("meta"))
    slots, slot_bytes = {}, 0
    for name, mod in lora_model.named_modules():
        own = {}
        for attr in ("lora_a_stacked", "lora_b_stacked", "embeddings_tensors", "lora_bias_stacked",
                     "w13_lora_a_stacked", "w13_lora_b_stacked", "w2_lora_a_stacked", "w2_lora_b_stacked"):
            ts = getattr(mod, attr, None)
            if ts is None:
                continue
            ts = ts if isinstance(ts, (list, tuple)) else [ts]
            ts = [t for t in ts if isinstance(t, torch.Tensor)]
            if ts:
                own[attr] = [[list(t.shape), str(t.dtype).replace("torch.", "")] for t in ts]
                slot_bytes += sum(t.numel() * t.element_size() for t in ts)
        if own:
            slots[name] = {"class": type(mod).__name__, "tensors": own}
    lc = vc.lora_config
    punica = getattr(runner.lora_manager._adapter_manager, "punica_wrapper", None)
    punica_bytes = 0
    if punica is not None:
        seen = set()
        for obj in (punica, getattr(punica, "token_mapping_meta", None), getattr(punica, "prompt_mapping_meta", None)):
            for v in vars(obj).values() if obj is not None else ():
                if isinstance(v, torch.Tensor) and id(v) not in seen:
                    seen.add(id(v))
                    punica_bytes += v.numel() * v.element_size()
    return {"model": a.forward, "architecture": cls.__name__,
            "lora_config": {"max_loras": lc.max_loras, "max_lora_rank": lc.max_lora_rank,
                            "lora_dtype": str(lc.lora_dtype).replace("torch.", ""),
                            "max_num_seqs": a.lora[2], "max_num_batched_tokens": a.lora[3],
                            "lora_extra_vocab_size": getattr(lc, "lora_extra_vocab_size", None)},
            "allocated_bytes": counter.peak, "slot_bytes": slot_bytes, "punica_wrapper_class": type(punica).__name__,
            "punica_bytes": punica_bytes, "num_wrapped_modules": len(slots),
            "modules": {n: v for i, (n, v) in enumerate(slots.items()) if ".layers." not in n or ".layers.0." in n},
            "allocations_by_shape": _by_shape(allocated),
            "config": {k: cfg.get(k) for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                               "num_key_value_heads", "head_dim", "num_hidden_layers", "vocab_size",
                                               "tie_word_embeddings")}}


def _by_shape(allocated: list) -> list:
    """Every allocation, counted by (shape, dtype, bytes)."""
    counts: dict = {}
    for shape, dt, n in allocated:
        k = (tuple(shape), dt, n)
        counts[k] = counts.get(k, 0) + 1
    return [[list(k[0]), k[1], k[2], c] for k, c in sorted(counts.items(), key=lambda kv: -kv[0][2] * kv[1])]


COMPILED_CALLS: dict[str, int] = {}


def AR_INERT(name: str):
    """A CUDA-only class (``torch.cuda.Stream``/``Event``) whose instances accept every call and do nothing."""
    return type(name, (), {"__init__": lambda self, *a, **k: None,
                           "__getattr__": lambda self, n: (lambda *a, **k: None)})


class CompiledKernels:
    """``torch.ops._C`` / ``_moe_C`` / ``_C_cache_ops`` (vLLM's compiled CUDA kernels, absent here): each call a
    no-op counted in ``COMPILED_CALLS``; a capability query answers None (not supported)."""

    def __init__(self, ns):
        self.ns = ns

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def launch(*args, **kwargs):
            COMPILED_CALLS[f"{self.ns}.{name}"] = COMPILED_CALLS.get(f"{self.ns}.{name}", 0) + 1
        return OpPacket(launch)


class OpPacket:
    """A function standing for a ``torch.ops`` op packet: called, it runs the function; its overloads (``.default``,
    ``.out``, …, which the compilation passes' pattern tables read at import, 0.3x ``matcher_utils``) are itself."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self


def rotary_stand_in(x, cos, sin, interleaved=False, inplace=False, *args, **kwargs):
    """flash-attn's ``apply_rotary_emb``: its ``apply_rotary`` allocates the output ``torch.empty_like(x)`` (in place:
    none) and the Triton kernel writes into it; the same here, no kernel."""
    import torch

    return x if inplace else torch.empty_like(x)


def flash_attn_stand_in() -> None:
    """``vllm.vllm_flash_attn`` (its compiled extensions are absent: the package raises at import) as a module whose
    kernels are no-ops and whose version checks answer supported, as on an H100: on the CUDA platform the layers'
    modules (0.24+: ``fa_utils`` through ``mm_encoder_attention``) import it. No kernel of it runs here: the
    attention op runs as its fake."""
    try:
        import vllm.vllm_flash_attn  # noqa: F401
    except ImportError:
        pass
    else:  # the package imports (0.14.1): its Triton rotary's host code asks torch.cuda for the meta tensor's device
        try:
            import vllm.vllm_flash_attn.layers.rotary as rotary_module
        except ImportError:
            return
        rotary_module.apply_rotary_emb = rotary_stand_in
        return
    m = types.ModuleType("vllm.vllm_flash_attn")
    m.__path__ = []
    m.FA2_AVAILABLE = m.FA3_AVAILABLE = True
    m.is_fa_version_supported = lambda *a, **k: True
    m.fa_version_unsupported_reason = lambda *a, **k: None

    def kernel(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: None

    m.__getattr__ = kernel
    sys.modules["vllm.vllm_flash_attn"] = m
    sys.modules["vllm.vllm_flash_attn.flash_attn_interface"] = m
    # the Triton rotary the vision towers' rotary embedding takes on CUDA (0.3x ``forward_cuda``:
    # ``vllm.vllm_flash_attn.layers.rotary.apply_rotary_emb``): flash-attn's ``apply_rotary`` allocates its output
    # ``torch.empty_like(x)`` (in place: none) and the kernel writes into it; the same here, no kernel
    layers = types.ModuleType("vllm.vllm_flash_attn.layers")
    layers.__path__ = []
    rotary = types.ModuleType("vllm.vllm_flash_attn.layers.rotary")

    rotary.apply_rotary_emb = rotary_stand_in
    m.layers, layers.rotary = layers, rotary
    sys.modules["vllm.vllm_flash_attn.layers"] = layers
    sys.modules["vllm.vllm_flash_attn.layers.rotary"] = rotary


def cuda_platform() -> None:
    """The platform answers as a CUDA worker on an H100 (capability 9.0) for the kernel choices the layers make."""
    from vllm.platforms import current_platform as cp
    from vllm.platforms.interface import DeviceCapability

    type(cp).is_cuda_alike = lambda self: True
    type(cp).is_cuda = lambda self: True
    type(cp).get_device_name = classmethod(lambda cls, *x, **k: "NVIDIA H100 80GB HBM3")
    type(cp).get_device_capability = classmethod(lambda cls, *x, **k: DeviceCapability(9, 0))
    # 0.10.x's ModelConfig asks the platform (config/__init__.py 1273); CUDA answers True under V1 (cuda.py 101-108)
    if hasattr(type(cp), "is_async_output_supported"):
        type(cp).is_async_output_supported = classmethod(lambda cls, enforce_eager: True)
    if HELD_QUANTIZATION:  # a quantized engine: the FP8 kernels' choices read the platform's enum and capability
        from vllm.platforms.interface import PlatformEnum

        P = type(cp)
        P._enum = PlatformEnum.CUDA
        P.has_device_capability = classmethod(lambda cls, capability, device_id=0: 90 >= (
            capability if isinstance(capability, int) else capability[0] * 10 + capability[1]))
        P.is_device_capability = classmethod(lambda cls, capability, device_id=0: 90 == (
            capability if isinstance(capability, int) else capability[0] * 10 + capability[1]))
        P.supports_fp8 = classmethod(lambda cls: True)


def forward_dist(AR, vc) -> None:
    """A world-size-1 gloo group and the model-parallel groups (arch_runner's, else the same calls without the
    0.3x workspace manager, which older releases do not have)."""
    try:
        AR._dist(vc)
        return
    except ImportError:
        pass
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.distributed.parallel_state import model_parallel_is_initialized

    with set_current_vllm_config(vc):
        if not torch.distributed.is_initialized():
            init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                         distributed_init_method=f"tcp://127.0.0.1:{29500 + os.getpid() % 1000}")
        if not model_parallel_is_initialized():
            initialize_model_parallel(1, 1)


class MetaLiveBytes(LiveBytes):
    """Live bytes of meta-device storages (their data pointer is 0: keyed by the storage itself), and the tensors
    live at the peak (bytes, shape, dtype)."""

    def __init__(self):
        super().__init__()
        self.at = {}
        self.at_peak = []

    def add_tensor(self, t) -> None:
        st = t.untyped_storage()
        key = st._cdata
        if key in self.live or st.nbytes() == 0:
            return
        n = st.nbytes()
        self.live[key] = n
        self.at[key] = (n, tuple(t.shape), str(t.dtype).replace("torch.", ""))
        self.now += n
        if self.now > self.peak:
            self.peak = self.now
            self.at_peak = list(self.at.values())
        weakref.finalize(st, self._free, key)

    def _free(self, key: int) -> None:
        self.at.pop(key, None)
        super()._free(key)


class CpuLiveBytes(MetaLiveBytes):
    """``MetaLiveBytes`` over CPU storages, the ``known`` ones (the tower's weights and buffers) left out."""

    def __init__(self, known: set):
        super().__init__()
        self.known_cdata = known

    def add_tensor(self, t) -> None:
        if t.untyped_storage()._cdata not in self.known_cdata:
            super().add_tensor(t)


def both_paths(label: str, flag: str, cfg: str, shown: tuple[str, ...], extra: tuple[str, ...] = ()) -> dict:
    """One model's run (``--forward`` / ``--encoder``) on each path in its own process: the records by path (a run
    whose release's modules did not import here records why, in one line)."""
    import subprocess
    import tempfile

    root = Path(__file__).resolve().parents[2]
    paths = {}
    for path in ("custom_ops", "native"):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            done = subprocess.run([sys.executable, __file__, flag, str(root / cfg), "--forward-path", path,
                                   "--variant-out", f.name, *extra], capture_output=True, text=True)
            text = Path(f.name).read_text()
            if done.returncode or not text:
                last = [ln for ln in done.stderr.splitlines() if ln.strip() and not ln.startswith(" ")]
                r = {"derived": False, "path": path,
                     "why": re.sub(r"(?:/[\w.+-]+)+/", "", f"the run failed: {(last or ['?'])[-1][:200]}")}
            else:
                r = json.loads(text)
        r["model"] = cfg
        paths[path] = r
        print(label, path, json.dumps({k: r.get(k) for k in ("derived", *shown, "why")}))
    return paths


def write_release(out: Path, key: str, models: dict, **more: dict) -> None:
    """``<out>/<release>.json``: ``{vllm_version, key: models}`` and any non-empty ``more`` keys (the forward's
    ``architectures``)."""
    import vllm

    out.mkdir(parents=True, exist_ok=True)
    body = {"vllm_version": vllm.__version__, key: models, **{k: v for k, v in more.items() if v}}
    (out / f"{vllm.__version__}.json").write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")


def forward_both(a) -> int:
    """Each model on each path in its own process, into ``<out>/forward/<release>.json``: ``forward`` the family
    reference models (``FORWARD_MODELS``), ``architectures`` the models measured for their own row
    (``OWN_FORWARD_MODELS``)."""
    import vllm

    previous = a.out / "forward" / f"{vllm.__version__}.json"
    # --forward-only: these labels run, the release's other recorded ones are kept as they are
    kept = json.loads(previous.read_text()) if a.forward_only and previous.exists() else {}
    models, own = kept.get("forward", {}), kept.get("architectures", {})
    for into, table_ in ((models, FORWARD_MODELS), (own, OWN_FORWARD_MODELS)):
        for label, cfg in table_.items():
            if not a.forward_only or label in a.forward_only:
                into[label] = both_paths(label, "--forward", cfg, ("bytes_per_token", "fixed_bytes"))
    write_release(a.out / "forward", "forward", models, architectures=own)
    return 0


def encoder_both(a) -> int:
    """Each multimodal model's encoder pass on each path in its own process, into ``<out>/encoder/<release>.json``."""
    import vllm

    previous = a.out / "encoder" / f"{vllm.__version__}.json"
    # --encoder-only: these architectures run, the release's other recorded ones are kept as they are
    models = json.loads(previous.read_text())["encoder"] if a.encoder_only and previous.exists() else {}
    for arch, cfg in ENCODER_MODELS.items():
        if not a.encoder_only or arch in a.encoder_only:
            tps = ("--encoder-tp", ",".join(map(str, a.encoder_tp))) if a.encoder_tp else ()
            models[arch] = both_paths(arch, "--encoder", cfg, ("bytes_per_item", "bytes_per_patch",
                                                               "output_bytes_per_item", "attn_backends"), tps)
    write_release(a.out / "encoder", "encoder", models)
    return 0


def drafter_both(a) -> int:
    """Each ``DRAFTER_MODELS`` drafter on each path in its own process, into ``<out>/drafter/<release>.json``."""
    import vllm

    previous = a.out / "drafter" / f"{vllm.__version__}.json"
    # --drafter-only: these labels run, the release's other recorded ones are kept as they are
    models = json.loads(previous.read_text())["drafter"] if a.drafter_only and previous.exists() else {}
    for label, (target, drafter, _) in DRAFTER_MODELS.items():
        if not a.drafter_only or label in a.drafter_only:
            models[label] = both_paths(label, "--drafter", drafter or target, ("bytes_per_token", "fixed_bytes"),
                                       ("--drafter-label", label))
    write_release(a.out / "drafter", "drafter", models)
    return 0


SPEC_REQS = (32, 64)
SPEC_CUDA_REQS = (128, 192)  # torch's CUDA sort in its segmented branch (cuda_workspace_bytes)


def spec_all(a) -> int:
    """``--spec-all``: the dummy sampler pass with a speculative config, into ``<out>/spec/<release>.json``. The V1
    runner's ``_dummy_sampler_run`` (0.11-0.33) ends, when ``self.speculative_config`` is set (any method: EAGLE,
    MTP, a draft model, n-gram), with a rejection-sampler pass: ``SpecDecodeMetadata.make_dummy`` of one draft token
    per request, ``torch.randn(num_tokens + num_reqs, V)`` target logits in the model dtype and
    ``self.rejection_sampler(...)`` over them (0.19.0 gpu_model_runner.py lines 5609-5631). Measured as the sampler
    pass is (the same stand-in runner, the release's ``RejectionSampler`` built as the runner builds it around its
    ``Sampler``, its Triton kernels stubbed as no-op launches: they write into buffers their wrappers allocate), at
    two batch sizes: the bytes per logit (R·V) of the whole call's peak, beside the same call without a
    speculative config. The V2 runner (0.34) has no such pass: recorded as not run, with why."""
    import torch
    import vllm

    release = vllm.__version__
    record: dict = {"vllm_version": release, "reqs": list(SPEC_REQS), "vocab_size": TABLE_VOCAB}
    try:
        # FlashInfer as every CUDA install of the release has it (installed where its wheel requires it): the
        # rejection pass's probabilities do not go through it (compute_probs: apply_top_k_top_p, then softmax)
        record["flashinfer"] = flashinfer_required()
        install_stubs(flashinfer=record["flashinfer"])
        method, sampler, path, notes, ttt = build(a.sms)
        try:
            torch.accelerator.synchronize()
        except Exception:  # no accelerator: 0.28+'s dummy run ends with a synchronize, a no-op here
            torch.accelerator.synchronize = lambda *x, **k: None
            notes.append("torch.accelerator.synchronize is a no-op (no device here)")
        import vllm.v1.sample.rejection_sampler as rs

        kernels = stub_kernels(rs)
        expand = getattr(rs, "expand_batch_to_tokens", None)
        if expand is not None:
            def filled(x, *args, **kwargs):
                # the stubbed expand kernel leaves its output unwritten; the dummy metadata's per-request values are
                # all equal (dummy_tensors), so the expansion is x[0] everywhere: written in place, no new storage
                out = expand(x, *args, **kwargs)
                return out.fill_(x[0])

            rs.expand_batch_to_tokens = filled
        triton_mod = getattr(rs, "triton", None)
        if triton_mod is not None and not hasattr(triton_mod, "next_power_of_2"):
            # Triton's pure-Python helper (absent from the CPU placeholder module): the block size the wrapper picks
            triton_mod.next_power_of_2 = lambda n: 1 << max(0, int(n) - 1).bit_length()
        spec_config = _spec_config_defaults()
        try:
            rej = rs.RejectionSampler(sampler, spec_config)
        except TypeError:  # releases whose RejectionSampler takes only the sampler, or nothing
            try:
                rej = rs.RejectionSampler(sampler)
            except TypeError:
                rej = rs.RejectionSampler()
    except Exception as e:  # noqa: BLE001 - no V1 runner / sampler here: recorded, one line
        record.update(derived=False, why=f"{type(e).__name__}: {' '.join(str(e).split())[:200]}")
    else:
        def run(reqs: int, spec: bool) -> int:
            clear_caches()
            torch.manual_seed(0)
            lm_head, stand_in = runner(sampler, TABLE_VOCAB, torch.bfloat16)
            if spec:
                stand_in.speculative_config = spec_config
                stand_in.rejection_sampler = rej
            hidden = torch.rand(reqs, 64, dtype=torch.bfloat16)
            counter = LiveBytes(known=(lm_head, hidden))
            with torch.inference_mode(), tracking_mode(counter):
                out = method(stand_in, hidden)
                del out
            return counter.peak, counter.cuda_peak

        r1, r2 = SPEC_REQS
        runs = {name: {r: run(r, spec) for r in (r1, r2, *SPEC_CUDA_REQS)} for name, spec in (("spec", True),
                                                                                               ("no_spec", False))}
        peaks = {name: (x[r1][0], x[r2][0]) for name, x in runs.items()}
        per = {name: (p[1] - p[0]) / ((r2 - r1) * TABLE_VOCAB) for name, p in peaks.items()}
        # on CUDA (cuda_workspace_bytes: the sorts' workspaces): from 128 requests, and below at the CPU batches
        q1, q2 = SPEC_CUDA_REQS
        cuda = {name: cuda_record({r: x[r][1] for r in (r1, r2, q1, q2)}, (r1, r2), (q1, q2), TABLE_VOCAB)
                for name, x in runs.items()}
        record.update(derived=True, topk_topp_path=path, kernels_stubbed=kernels, notes=notes,
                      peak_bytes={k: {str(r1): v[0], str(r2): v[1]} for k, v in peaks.items()},
                      bytes_per_logit=per["spec"], bytes_per_logit_no_spec=per["no_spec"],
                      fixed_bytes=peaks["spec"][0] - round(per["spec"] * r1 * TABLE_VOCAB), cuda=cuda,
                      cuda_workspace_ops=dict(CUDA_OPS))
    out = a.out / "spec"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{release}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(release, json.dumps({k: record.get(k) for k in ("derived", "bytes_per_logit", "bytes_per_logit_no_spec",
                                                            "why")}))
    return 0


def _spec_config_defaults():
    """A speculative config holding the release's ``SpeculativeConfig`` field defaults (what the dummy sampler run
    reads of it: ``rejection_sample_method`` 'standard', ``draft_sample_method`` 'greedy' where they exist), with
    one speculative token and the EAGLE method."""
    import dataclasses

    values = {"num_speculative_tokens": 1, "method": "eagle"}
    try:
        from vllm.config.speculative import SpeculativeConfig
    except ImportError:
        return types.SimpleNamespace(**values)
    fields = getattr(SpeculativeConfig, "__dataclass_fields__", {})
    for name, f in fields.items():
        if name not in values and f.default is not dataclasses.MISSING:
            values[name] = f.default
    return types.SimpleNamespace(**values)


def spec_table(goldens: Path, out: Path) -> int:
    """kvplan's run-time table of the V1 runner's rejection-sampler dummy pass (``kvplan/budget/spec_sampler.json``)
    from the ``--spec-all`` goldens: per golden release, the bytes per logit of the whole dummy sampler call with a
    speculative config and its fixed part."""
    rows = {}
    for p in sorted(goldens.glob("*.json"), key=lambda q: tuple(int(x) for x in q.stem.split("."))):
        g = json.loads(p.read_text())
        if g.get("derived"):
            # on CUDA (the sorts' workspaces added) where the golden has the figures, else the CPU's
            cuda = g.get("cuda") or {}
            spec, no_spec = cuda.get("spec", {}), cuda.get("no_spec", {})
            rows[p.stem] = {"bytes_per_logit": round(spec.get("bytes_per_logit", g["bytes_per_logit"]), 4),
                            "bytes_per_logit_under_128": round(spec.get("bytes_per_logit_under_128",
                                                                        g["bytes_per_logit"]), 4),
                            "bytes_per_logit_no_spec": round(no_spec.get("bytes_per_logit",
                                                                         g["bytes_per_logit_no_spec"]), 4),
                            "bytes_per_logit_cpu": round(g["bytes_per_logit"], 4),
                            "fixed_bytes": g["fixed_bytes"]}
        else:
            rows[p.stem] = {"why": g["why"]}
    out.write_text(json.dumps({"source": "scripts/golden/profile_terms.py --spec-table tests/golden/profile_terms/spec",
                               "vocab_size": TABLE_VOCAB, "releases": rows}, indent=1, sort_keys=True) + "\n")
    return 0


LORA_MODELS = {"llama": "configs/meta-llama/Llama-3.1-8B-Instruct/config.json", "qwen3": "configs/Qwen/Qwen3-8B/config.json"}
LORA_SETTINGS = (4, 64, 256, 2048)  # max_loras, max_lora_rank, max_num_seqs, max_num_batched_tokens (distinct sizes)


def lora_all(a) -> int:
    """Each LoRA model in its own process (``lora_measure``), into ``<out>/lora/<release>.json``. The punica
    wrapper's buffers are the integer tensors allocated (their sizes name max_num_batched_tokens, max_num_seqs or
    neither: bytes per token, per sequence, fixed). ``allocated_bytes`` on the meta device also counts a view of
    0.11's grown embedding as a new storage (a meta tensor's view has its own storage object): ``slot_bytes``, read
    from the wrapped modules' tensors, is the slots' figure."""
    root = Path(__file__).resolve().parents[2]
    models = {}
    for family, cfg in LORA_MODELS.items():
        r = run_variant(["--forward", str(root / cfg), "--lora", *map(str, LORA_SETTINGS)])
        if "setup_skipped" in r:  # the run wrote its record (derived or not): a failed process has none
            r["model"] = cfg
            # no machine path in a golden: the file names from vllm/ on (as forward_main does for "why")
            r["setup_skipped"] = [re.sub(r"(?:/[\w.+-]+)+/", "", x) for x in r.get("setup_skipped", [])]
            if r.get("derived"):
                T, S = LORA_SETTINGS[3], LORA_SETTINGS[2]
                ints = [(sh, n * c) for sh, dt, n, c in r["allocations_by_shape"] if dt.startswith(("int", "uint"))]
                r["punica"] = {"bytes_per_token": sum(b for sh, b in ints if T in sh) / T,
                               "bytes_per_seq": sum(b for sh, b in ints if S in sh and T not in sh) / S,
                               "fixed_bytes": sum(b for sh, b in ints if S not in sh and T not in sh)}
        models[family] = r
        print(family, json.dumps({k: r.get(k) for k in ("derived", "slot_bytes", "num_wrapped_modules", "punica",
                                                           "why")}))
    import vllm

    out = a.out / "lora"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{vllm.__version__}.json").write_text(json.dumps({"vllm_version": vllm.__version__, "lora": models},
                                                             indent=1, sort_keys=True) + "\n")
    return 0


def rule_bytes_per_token(model_dir: Path) -> int:
    """kvplan's activation rule per token, (4·H + W)·a at TP 1, for a catalog model (kvplan's environment)."""
    return parallel_rule_bytes_per_token(model_dir, 1, True)


def measured_row(custom: dict, native: dict, rule: dict) -> dict:
    """One model's forward figures on both paths over kvplan's rule for it (``rule``: model config -> rule bytes per
    token, filled as models come): the value's and the high end's factors."""
    model = custom["model"]
    if model not in rule:
        rule[model] = rule_bytes_per_token(Path(__file__).resolve().parents[2] / Path(model).parent)
    r = rule[model]
    logits = custom.get("logits")  # the model's own compute_logits at TP 1 (forward_measure), where recorded
    return {"model": model, "bytes_per_token": custom["bytes_per_token"],
            "bytes_per_token_native": native["bytes_per_token"], "rule_bytes_per_token": r,
            "factor": round(custom["bytes_per_token"] / r, 4),
            "factor_high": round(max(custom["bytes_per_token"], native["bytes_per_token"]) / r, 4),
            **({"logits_bytes_per_logit": logits["bytes_per_logit"]} if logits else {})}


def model_family(config: str) -> str:
    """The forward family (dense / moe) kvplan gives a repository config (its text config where it has one)."""
    from kvplan.budget.profile import forward_family

    cfg = json.loads((Path(__file__).resolve().parents[2] / config).read_text())
    return forward_family(cfg.get("text_config") or cfg)


def forward_table(goldens: Path, rows: dict) -> None:
    """Each release's ``forward`` row: per family (dense, MoE) the measured bytes per token of the dummy forward's
    peak on the custom-op path (the value) and on the native path (the high end), over kvplan's rule per token
    for the same model: the factor kvplan scales its rule by for any model of that family. A family a release's
    golden could not measure takes the newest measured release's before it (else the oldest), marked assumed with
    the reason."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from kvplan.engines.vllm.versions import version_key

    rule: dict = {}
    measured: dict = {}  # family -> release -> row or {"why"}
    for f in sorted(goldens.glob("*.json"), key=lambda p: version_key(p.stem)):
        g = json.loads(f.read_text())
        per_family: dict = {}  # family -> label -> the model's figures or {"why"}
        for label, paths in sorted(g["forward"].items()):
            v, n = paths["custom_ops"], paths["native"]
            if not (v.get("derived") and n.get("derived")):
                per_family.setdefault(label_family(label), {})[label] = {"why": v.get("why") or n.get("why")}
                continue
            per_family.setdefault(label_family(label), {})[label] = measured_row(v, n, rule)
        for family, by_label in per_family.items():
            ok = {k: x for k, x in by_label.items() if "why" not in x}
            if not ok:  # the family's first model's reason
                measured.setdefault(family, {})[g["vllm_version"]] = next(iter(by_label.values()))
                continue
            # the family's factor: its largest model's at this release (the value never below a measured model's)
            top = max(ok.values(), key=lambda x: x["factor"])
            row = {**top, "factor_high": max(x["factor_high"] for x in ok.values())}
            if len(by_label) > 1:
                row["models"] = {k: {kk: x[kk] for kk in ("model", "bytes_per_token", "bytes_per_token_native",
                                                          "rule_bytes_per_token", "factor")} if "why" not in x
                                 else {"why": x["why"]} for k, x in by_label.items()}
            measured.setdefault(family, {})[g["vllm_version"]] = row
    # the high end: the largest native-graph factor any release measured for the family (a release whose native run
    # kept its custom ops, 0.11's level-0 dispatch, measured the custom-op path twice)
    for family, by in measured.items():
        top = max((x["factor_high"] for x in by.values() if "why" not in x), default=None)
        for x in by.values():
            if "why" not in x:
                x["factor_high"] = max(x["factor_high"], top)
    for release, row in rows.items():
        row["forward"] = {family: release_row(by, release, "forward")
                          or {"basis": "assumed", "why": by.get(release, {}).get("why") or "not measured"}
                          for family, by in measured.items()}
    forward_models_table(goldens, rows, rule)


def measured_by_release(goldens: Path, key: str, make_row) -> dict:
    """``label -> release -> row`` over the goldens in ``goldens`` (in release order) under their ``key``:
    ``make_row(label, custom_ops, native)`` where both paths ran, else ``{"why"}`` (the custom-op path's reason
    first)."""
    from kvplan.engines.vllm.versions import version_key

    measured: dict = {}
    for f in sorted(goldens.glob("*.json"), key=lambda p: version_key(p.stem)) if goldens.is_dir() else []:
        g = json.loads(f.read_text())
        for label, paths in sorted((g.get(key) or {}).items()):
            v, n = paths["custom_ops"], paths["native"]
            measured.setdefault(label, {})[g["vllm_version"]] = (
                make_row(label, v, n) if v.get("derived") and n.get("derived") else {"why": v.get("why") or n.get("why")})
    return measured


def widen_to_top_native(measured: dict) -> None:
    """The high end of each label's measured rows: the largest native-graph factor any release measured for it."""
    for by in measured.values():
        top = max((x["factor_high"] for x in by.values() if "why" not in x), default=None)
        for x in by.values():
            if "why" not in x:
                x["factor_high"] = max(x["factor_high"], top)


def forward_models_table(goldens: Path, rows: dict, rule: dict) -> None:
    """Each release's ``forward_models`` rows: per architecture a golden measured for its own row
    (``OWN_FORWARD_MODELS``, the golden's ``architectures``), the measured bytes per token on the custom-op path (the
    value) and the native path (the high end) over kvplan's rule for that model, as ``forward_table`` does for a
    family. A release that did not measure the architecture takes the newest measured release's before it, assumed
    with the reason; a release before the first one measured has no row (kvplan takes the family's factor there).
    ``architectures``: the measured class and the class whose forward ran its text (a multimodal class's language
    model), the names kvplan looks the row up by."""
    from kvplan.engines.vllm.versions import version_key

    by_arch = measured_by_release(goldens, "architectures", lambda _, v, n: {  # architecture -> release -> row
        **measured_row(v, n, rule), "architectures": sorted({v["architecture"], v["text_architecture"]}),
        "family": model_family(v["model"])})
    widen_to_top_native(by_arch)  # as a family's
    for release, row in rows.items():
        own = {}
        for arch, by in by_arch.items():
            first = min((r for r, x in by.items() if "why" not in x), key=version_key, default=None)
            if first is None or version_key(release) < version_key(first):
                continue
            own[arch] = release_row(by, release, f"{arch} forward")
        if own:
            row["forward_models"] = own


def parallel_rule_bytes_per_token(model_dir: Path, tp: int, first_stage: bool) -> int:
    """kvplan's per-rank forward rule per token (``forward_rule_bytes_per_token``) for a catalog model (kvplan's
    environment)."""
    from kvplan.budget.estimate import forward_rule_bytes_per_token
    from kvplan.budget.weights import layout_weights
    from kvplan.model.layout import build_model_layout
    from kvplan.units import dtype_size_bytes

    layout = build_model_layout(str(model_dir))
    return forward_rule_bytes_per_token(layout_weights(layout).target, layout.target.text_config,
                                        dtype_size_bytes(layout.target.dtype), tp=tp, first_stage=first_stage)


def parallel_table(goldens: Path, rows: dict) -> None:
    """Each release's ``parallel`` row: per family (dense, MoE) and layout (``tp2`` ... ``pp2-last``) the measured
    bytes per token on that rank (custom-op path: the value; native: the high end) over kvplan's per-rank rule, the
    family's factor the largest of its models'; and the logits' bytes per logit on the last stage. A layout a model
    was not run at (the golden's ``layouts_not_run``: the release refuses PP for it) takes the family's other models
    and names it under ``not_run``. A release without a parallel golden takes the newest measured one before it (else
    the oldest), assumed."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from kvplan.engines.vllm.versions import version_key

    root = Path(__file__).resolve().parents[2]
    rules: dict = {}
    measured: dict = {}  # family -> release -> row or {"why"}
    for f in sorted(goldens.glob("*.json"), key=lambda p: version_key(p.stem)) if goldens.is_dir() else []:
        g = json.loads(f.read_text())
        per_family: dict = {}
        for label, paths in sorted(g["parallel"].items()):
            v, n = paths["custom_ops"], paths["native"]
            fam = per_family.setdefault(label_family(label), {})
            if not (v.get("derived") and n.get("derived")):
                fam.setdefault("why", v.get("why") or n.get("why"))
                continue
            for key, lay in v["layouts"].items():
                nat = n["layouts"][key]
                k = (v["model"], lay["tp"], lay["first_stage"])
                if k not in rules:
                    rules[k] = parallel_rule_bytes_per_token(root / Path(v["model"]).parent, lay["tp"],
                                                             lay["first_stage"])
                r = rules[k]
                x = {"model": v["model"], "bytes_per_token": lay["bytes_per_token"],
                     "bytes_per_token_native": nat["bytes_per_token"], "rule_bytes_per_token": r,
                     "factor": round(lay["bytes_per_token"] / r, 4),
                     "factor_high": round(max(lay["bytes_per_token"], nat["bytes_per_token"]) / r, 4)}
                if lay.get("logits"):
                    x["logits_bytes_per_logit"] = lay["logits"]["bytes_per_logit"]
                    x["logits_shape"] = lay["logits"]["shape"]
                best = fam.setdefault("layouts", {}).get(key)
                models = {**(best or {}).get("models", {}), label: x["factor"]}
                if best is None or x["factor"] > best["factor"]:
                    best = {**x, "factor_high": max(x["factor_high"], (best or x)["factor_high"])}
                else:
                    best = {**best, "factor_high": max(x["factor_high"], best["factor_high"])}
                fam["layouts"][key] = {**best, "models": models}
            for key, why in v.get("layouts_not_run", {}).items():  # a PP layout the release refuses for the model
                fam.setdefault("not_run", {}).setdefault(key, {})[v["model"]] = why
        for family, fam in per_family.items():
            for key, by_model in fam.get("not_run", {}).items():
                if key in fam.get("layouts", {}):
                    fam["layouts"][key]["not_run"] = by_model
            measured.setdefault(family, {})[g["vllm_version"]] = (
                {"layouts": fam["layouts"], "model": fam["layouts"]["tp2"]["model"]} if fam.get("layouts")
                else {"why": fam.get("why") or "not measured"})
    for release, row in rows.items():
        par = {family: x for family, by in measured.items()
               if (x := release_row(by, release, "parallel")) is not None}
        if par:
            row["parallel"] = par


def encoder_table(goldens: Path, rows: dict) -> None:
    """Each release's ``encoder`` row: per multimodal architecture measured (``ENCODER_MODELS``) the vision tower's
    bytes per patch of the dummy pass on the custom-op path (the value) and the native path, over kvplan's tower rule
    per patch (``kvplan.budget.encoder.encoder_rule_bytes_per_patch``): the factor kvplan scales its rule by, and the
    encoder outputs the cache keeps per item. A release without its own golden takes the newest measured release's
    before it (else the oldest), marked assumed with the reason."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from kvplan.budget.encoder import encoder_rule_bytes_per_patch

    root = Path(__file__).resolve().parents[2]

    def row_of(_: str, v: dict, n: dict) -> dict:
        cfg = json.loads((root / v["model"]).read_text())
        rule = encoder_rule_bytes_per_patch(cfg["vision_config"], 2)
        row = {"model": v["model"], "bytes_per_patch": v["bytes_per_patch"],
               "bytes_per_patch_native": n["bytes_per_patch"], "rule_bytes_per_patch": rule,
               "output_bytes_per_item": v["output_bytes_per_item"],
               # the run's part that does not grow with the patches (Qwen3-VL: the position table's interpolation)
               "fixed_bytes": v.get("fixed_bytes", 0), "patches_per_item": v["patches_per_item"],
               "tower_param_bytes": tower_param_bytes(v),
               **({"run_on": "cpu"} if v.get("run_on") else {}),  # made real on the CPU (ENCODER_ON_CPU)
               "factor": round(v["bytes_per_patch"] / rule, 4),
               "factor_high": round(max(v["bytes_per_patch"], n["bytes_per_patch"]) / rule, 4)}
        # rank 0 of a TP group (--encoder-tp): the per-rank figures, where both paths ran that size
        tps = {k: {"bytes_per_patch": t["bytes_per_patch"], "fixed_bytes": t["fixed_bytes"],
                   "bytes_per_patch_native": n["tp"][k]["bytes_per_patch"],
                   "mm_encoder_tp_mode": t.get("mm_encoder_tp_mode")}
               for k, t in sorted((v.get("tp") or {}).items()) if k in (n.get("tp") or {})}
        return {**row, "tp": tps} if tps else row

    measured = measured_by_release(goldens, "encoder", row_of)  # architecture -> release -> row or {"why"}
    for release, row in rows.items():
        enc = {arch: x for arch, by in measured.items() if (x := release_row(by, release, "encoder")) is not None}
        if enc:
            row["encoder"] = enc


def drafter_rule_bytes_per_token(label: str) -> int:
    """kvplan's rule per token for a ``DRAFTER_MODELS`` drafter's forward at TP 1
    (``kvplan.budget.estimate.drafter_rule_bytes_per_token``), on the catalog's layout of its target and drafter
    (kvplan's environment)."""
    from kvplan.budget.estimate import drafter_rule_bytes_per_token as rule
    from kvplan.budget.weights import layout_weights
    from kvplan.model.layout import build_model_layout
    from kvplan.model.options import ServingOptions

    root = Path(__file__).resolve().parents[2]
    target, drafter, spec = DRAFTER_MODELS[label]
    options = ServingOptions(speculative_method=spec["method"], num_speculative_tokens=spec["num_speculative_tokens"])
    layout = build_model_layout(str(root / Path(target).parent), str(root / Path(drafter).parent) if drafter else None,
                                options)
    return rule(layout, layout_weights(layout), tp=1)


def drafter_table(goldens: Path, rows: dict) -> None:
    """Each release's ``drafter`` row: per ``DRAFTER_MODELS`` drafter the measured bytes per token of its forward in
    the profile's dummy run on the custom-op path (the value) and the native path (the high end: the largest any
    release measured for it) over kvplan's rule for it (``drafter_rule_bytes_per_token``), the speculative method,
    and an EAGLE-3 head's combination of the
    aux hidden states (V2 runner); a release without its own golden takes the newest measured release's before it
    (else the oldest), assumed with the reason (``release_row``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    rules: dict = {}

    def row_of(label: str, v: dict, n: dict) -> dict:
        if label not in rules:
            rules[label] = drafter_rule_bytes_per_token(label)
        r = rules[label]
        row = {"model": v["model"], "target": v["target"], "method": v["speculative_config"]["method"],
               "architecture": v["architecture"], "bytes_per_token": v["bytes_per_token"],
               "bytes_per_token_native": n["bytes_per_token"], "fixed_bytes": v["fixed_bytes"],
               "rule_bytes_per_token": r, "factor": round(v["bytes_per_token"] / r, 4),
               "factor_high": round(max(v["bytes_per_token"], n["bytes_per_token"]) / r, 4),
               "draft_hidden_size": v["draft_hidden_size"], "target_hidden_size": v["target_hidden_size"]}
        if v.get("combine"):
            c = v["combine"]
            row["combine"] = {k: c[k] for k in ("aux_hidden_states", "bytes_per_token", "kept_bytes_per_token")}
        return row

    measured = measured_by_release(goldens, "drafter", row_of)  # label -> release -> row or {"why"}
    # the high end: the largest native-graph factor any release measured for the drafter (0.11's native run keeps
    # its custom ops under the level-0 dispatch: it measured the custom-op path twice), as forward_table does
    widen_to_top_native(measured)
    for release, row in rows.items():
        dr = {label: x for label, by in measured.items()
              if (x := release_row(by, release, f"{label} drafter")) is not None}
        if dr:
            row["drafter"] = dr


TOWER_MODULES = ("visual", "vision_tower", "vision_model", "multi_modal_projector", "embed_vision")


def tower_param_bytes(run: dict) -> int | None:
    """The weights of the tower's modules as the release built them (``param_bytes_by_module``), None where the run
    did not record them."""
    by = run.get("param_bytes_by_module")
    return None if by is None else sum(b for name, b in by.items() if name in TOWER_MODULES)


def release_row(by: dict, release: str, what: str) -> dict | None:
    """A release's row of a measured term (``by``: release -> the figures, or ``{"why"}``): its own, derived; else the
    newest measured release's before it (else the oldest), assumed with the reason; None when none measured."""
    from kvplan.engines.vllm.versions import version_key

    own = by.get(release)
    if own is not None and "why" not in own:
        return {**own, "basis": "derived", "from": release}
    ok = [r for r, x in by.items() if "why" not in x]
    if not ok:
        return None
    before = [r for r in ok if version_key(r) <= version_key(release)] or ok[:1]
    why = own["why"] if own is not None else f"no {what} golden for this release"
    return {**by[before[-1]], "basis": "assumed", "from": before[-1], "why": why}


# ----------------------------------------------------------------------------- tensor and pipeline parallelism

# (tensor-parallel size, pipeline-parallel size, pipeline rank measured): rank 0 of the TP group; for PP 2 the first
# stage (embeds, sends intermediate tensors) and the last (receives them, runs the norm, the logits, the sampler)
PARALLEL_LAYOUTS = ((1, 1, 0), (2, 1, 0), (4, 1, 0), (8, 1, 0), (1, 2, 0), (1, 2, 1))
PARALLEL_MODELS = ("dense", "moe", "moe-mixtral")  # FORWARD_MODELS labels: Qwen3-8B, gpt-oss-20b, Mixtral-8x7B
LOGITS_REQS = (32, 64)  # dummy requests for the logits (compute_logits) under TP


def parallel_layout_key(tp: int, pp: int, rank: int) -> str:
    return f"tp{tp}" if pp == 1 else f"pp{pp}-{'first' if rank == 0 else 'last' if rank == pp - 1 else rank}"


class FakePyNccl:
    """The release's ``PyNcclCommunicator`` as far as what its collectives allocate: ``all_reduce`` returns a new
    tensor like its input (pynccl.py ``out_tensor = torch.empty_like(in_tensor)``: 0.11.0 line 158, 0.19.0 173,
    0.27.1 184, 0.34.0 291); every other collective writes into the buffer its caller allocated (the caller's
    allocation is the release's own code, run as is). NCCL's own buffers live outside torch's allocator."""

    disabled = False
    nccl_version = 10 ** 9  # newer than any version gate (0.34's direct symmetric reduce-scatter reads it)

    def __init__(self, world_size: int, calls: dict):
        self.world_size = world_size
        self.rank = 0
        self.calls = calls

    def all_reduce(self, in_tensor, out_tensor=None, op=None, stream=None):
        import torch

        self.calls["all_reduce"] = self.calls.get("all_reduce", 0) + 1
        return torch.empty_like(in_tensor) if out_tensor is None else out_tensor

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def collective(*args, **kwargs):  # all_gather / reduce_scatter / send / recv / group_start ...: in place
            self.calls[name] = self.calls.get(name, 0) + 1
        return collective


def fake_communicator(world_size: int, calls: dict):
    """The release's ``CudaCommunicator`` (its own all_reduce / all_gather / reduce_scatter bodies run: the
    allocations they make are the card's) on rank 0 of a group of ``world_size``, with pynccl the only backend: the
    custom all-reduce, quick-reduce, symmetric-memory and FlashInfer communicators absent (each allocates the same
    one output like its input for the sizes it takes: custom_all_reduce.py ``out = torch.empty_like(inp)``, 0.11.0
    line 248, 0.19.0 258, 0.27.1 373, 0.34.0 527). torch.distributed's in-place collectives are no-ops
    (``fake_collectives``)."""
    import torch
    from vllm.distributed.device_communicators.cuda_communicator import CudaCommunicator

    class Fake(CudaCommunicator):
        def __init__(self):  # noqa: D107 - no process group, no NCCL
            pass

        def __getattr__(self, name):  # an optional backend (ca_comm, qr_comm, symm_mem_comm, all2all ...): absent
            if name.startswith("__"):
                raise AttributeError(name)
            return None

    c = Fake()
    c.world_size, c.rank, c.rank_in_group, c.ranks = world_size, 0, 0, list(range(world_size))
    c.device, c.use_all2all = torch.device("meta"), False
    c.pynccl_comm = FakePyNccl(world_size, calls)
    return c


def fake_collectives(calls: dict) -> None:
    """torch.distributed's collectives as no-ops (each writes into tensors its caller allocated)."""
    import torch.distributed as dist

    for name in ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "gather", "broadcast",
                 "all_to_all_single", "all_gather"):
        def op(*args, _n=name, **kwargs):
            calls[f"dist.{_n}"] = calls.get(f"dist.{_n}", 0) + 1
        setattr(dist, name, op)


def parallel_groups(vc, tp: int, pp: int, rank: int, calls: dict) -> None:
    """The world-size-1 groups made by ``forward_dist`` answered as rank 0 of a TP group of ``tp`` and rank ``rank``
    of a PP group of ``pp`` (``GroupCoordinator``'s ``world_size`` / ``rank_in_group`` / ``ranks``, which every
    ``get_tensor_model_parallel_*`` / ``get_pp_group()`` getter and ``make_layers``' ``get_pp_indices`` read), each
    with a fake communicator; the engine config's parallel sizes set to match."""
    import vllm.distributed.parallel_state as ps

    for group, n, r in ((ps.get_tp_group(), tp, 0), (ps.get_pp_group(), pp, rank)):
        if n > 1:
            group.world_size, group.rank_in_group, group.rank, group.ranks = n, r, r, list(range(n))
            group.device_communicator = fake_communicator(n, calls)
    vc.parallel_config.tensor_parallel_size = tp
    vc.parallel_config.pipeline_parallel_size = pp


def _tensor_bytes(x) -> int:
    import torch

    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    tensors = getattr(x, "tensors", None)  # IntermediateTensors
    return sum(_tensor_bytes(t) for t in tensors.values()) if isinstance(tensors, dict) else 0


def release_supports_pp(model) -> bool:
    """Whether the release runs ``model`` under pipeline parallelism: its ``supports_pp`` (the ``SupportsPP``
    interface, which the registry's ``is_pp_supported_model`` reads; ModelConfig raises "Pipeline parallelism is not
    supported for this model" otherwise: 0.10.1 config/__init__.py line 1315, 0.19.0 config/model.py 1126). gpt-oss
    implements it from 0.10.2 (0.10.1 gpt_oss.py line 229 ``class GptOssForCausalLM(nn.Module)``)."""
    from vllm.model_executor.models.interfaces import supports_pp

    return bool(supports_pp(model))


def parallel_measure(a, AR, ops) -> dict:
    """``--parallel-run``: the dummy forward (as ``forward_measure``) of one model on one rank of each layout in
    ``PARALLEL_LAYOUTS``, the model class rebuilt per layout with the release's parallel-state getters answering that
    rank, every collective through the release's own ``CudaCommunicator`` with pynccl faked (``fake_communicator``).
    A non-first PP stage takes its input from the buffers the V1 runner's ``_dummy_run`` makes on its first call
    (``make_empty_intermediate_tensors(batch_size=max_num_tokens)``, 0.11.0 gpu_model_runner.py 3110-3118; 0.34's V2
    runner makes them in ``load_model``, gpu/model_runner.py 563-570), made here inside the tracker at T tokens and
    held under the forward. On the last stage ``compute_logits`` over 32 and 64 dummy rows: the logits the
    sampler gets, after the LogitsProcessor's gather of the vocab-parallel logits (``use_all_gather``: every rank
    gets the full logits in the V1 runner of these releases). A PP layout of a model the release does not run under
    pipeline parallelism (``release_supports_pp``) is not measured: ``layouts_not_run`` names it with the reason."""
    import torch
    from vllm.config import set_current_vllm_config
    from vllm.forward_context import set_forward_context

    calls: dict = {}
    fake_collectives(calls)
    orig_dist = forward_dist
    out, not_run = {}, {}
    for tp, pp, rank in PARALLEL_LAYOUTS:
        def dist(AR_, vc, tp=tp, pp=pp, rank=rank):
            orig_dist(AR_, vc)
            parallel_groups(vc, tp, pp, rank, calls)

        globals()["forward_dist"] = dist
        try:
            cfg, vc, model, _ = build_on_meta(AR, ops, a.parallel_run, a.forward_path, after_loading=True)
        finally:
            globals()["forward_dist"] = orig_dist
        if pp > 1 and not release_supports_pp(model):
            not_run[parallel_layout_key(tp, pp, rank)] = (
                f"{type(model).__name__} does not implement SupportsPP in this release: its ModelConfig refuses "
                "pipeline parallelism for it (NotImplementedError 'Pipeline parallelism is not supported for this "
                "model.')")
            continue
        first, last = rank == 0, rank == pp - 1
        H = int(cfg["hidden_size"])

        def run(T):
            fresh_workspace()
            counter = MetaLiveBytes()
            ids = torch.zeros(T, dtype=torch.long, device="meta")
            pos = torch.zeros(T, dtype=torch.long, device="meta")
            with set_current_vllm_config(vc), set_forward_context(None, vc), torch.inference_mode(), \
                    tracking_mode(counter, devices=("meta",)):
                inter = None if first else model.make_empty_intermediate_tensors(
                    batch_size=T, dtype=torch.bfloat16, device=torch.device("meta"))
                inter_bytes = _tensor_bytes(inter)
                res = model(ids, pos, inter)
                res_bytes = _tensor_bytes(res)
                del res, inter
            return counter, inter_bytes, res_bytes

        run(a.forward_tokens[0])
        before = dict(calls)
        peaks, at_peak, inter, outb = {}, {}, {}, {}
        for T in a.forward_tokens:
            c, inter[T], outb[T] = run(T)
            peaks[T] = c.peak
            at_peak[T] = sorted(([list(s), dt, n] for n, s, dt in c.at_peak), key=lambda x: -x[2])[:12]
        per_call = {k: (v - before.get(k, 0)) // len(a.forward_tokens) for k, v in calls.items()
                    if v - before.get(k, 0)}
        t1, t2 = a.forward_tokens
        per_token = (peaks[t2] - peaks[t1]) / (t2 - t1)
        rec = {"tp": tp, "pp": pp, "pp_rank": rank, "first_stage": first, "last_stage": last,
               "layers_on_rank": sum(1 for m in getattr(getattr(model, "model", model), "layers", ())
                                     if type(m).__name__ != "PPMissingLayer"),
               "peak_bytes": {str(t): p for t, p in peaks.items()}, "bytes_per_token": per_token,
               "fixed_bytes": peaks[t1] - round(per_token * t1),
               "intermediate_bytes_per_token": (inter[t2] - inter[t1]) / (t2 - t1),
               "output_bytes_per_token": (outb[t2] - outb[t1]) / (t2 - t1),
               "collectives_per_forward": per_call, "live_at_peak": at_peak[t2]}
        if last:
            rec["logits"] = parallel_logits(vc, model, H)
        out[parallel_layout_key(tp, pp, rank)] = rec
        print(parallel_layout_key(tp, pp, rank), per_token, rec.get("logits", {}).get("bytes_per_logit"),
              file=sys.stderr)
    return {"model": a.parallel_run, "architecture": type(model).__name__, "tokens": list(a.forward_tokens),
            "layouts": out, **({"layouts_not_run": not_run} if not_run else {}),
            "config": {k: cfg.get(k) for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                               "num_key_value_heads", "head_dim", "num_experts_per_tok",
                                               "num_local_experts", "num_hidden_layers", "vocab_size")}}


WEIGHTS_MODELS = {  # the multimodal checkpoints of the validation corpus whose "Model loading took" kvplan missed by > 2 %
    "gemma-3-4b-it": "configs/google/gemma-3-4b-it/config.json",
    "gemma-3-12b-it": "configs/google/gemma-3-12b-it/config.json",
    "Llama-4-Scout-17B-16E-Instruct": "configs/meta-llama/Llama-4-Scout-17B-16E-Instruct/config.json",
    "Qwen3.5-27B": "configs/Qwen/Qwen3.5-27B/config.json",
    "gemma-4-26B-A4B-it": "configs/google/gemma-4-26B-A4B-it/config.json",  # two RoPE tables: default and proportional
}
WEIGHTS_TP = {"gemma-3-4b-it": (1,), "gemma-3-12b-it": (1,), "Llama-4-Scout-17B-16E-Instruct": (1, 4),
              "Qwen3.5-27B": (1, 4), "gemma-4-26B-A4B-it": (1,)}


def _tensor_rows(tensors) -> tuple[int, dict]:
    """The bytes of distinct storages among ``(name, tensor)`` pairs, and per top-level module."""
    seen, total, by = set(), 0, {}
    for name, t in tensors:
        st = t.untyped_storage()
        if st._cdata in seen:
            continue
        seen.add(st._cdata)
        total += st.nbytes()
        top = name.split(".")[0]
        by[top] = by.get(top, 0) + st.nbytes()
    return total, by


def weights_measure(a, AR, ops) -> dict:
    """``--whole-weights``: what ``GPUModelRunner.load_model`` leaves allocated on rank 0 of a TP group of
    ``--weights-tp`` (its "Model loading took": ``DeviceMemoryProfiler`` is ``torch.cuda.max_memory_allocated`` after
    ``reset_peak_memory_stats`` and ``gc.collect()``, before and after ``model_loader.load_model``: the bytes the
    allocator holds for live tensors; 0.19.0 gpu_model_runner.py 4743-4806, utils/mem_utils.py 44-60, platforms/cuda.py
    206-211). The model class is built on the meta device under the release's engine config for that TP size (the
    parallel-state getters answering rank 0, ``parallel_groups``) and ``process_weights_after_loading`` run, all inside
    a tracker of meta-device allocations; after ``gc.collect()`` the storages still alive are what the card would
    hold (``live_bytes``). The parameters and buffers are listed beside it (``parameter_bytes``, ``buffer_bytes``,
    ``by_module``): the difference, if any, is a tensor the build keeps outside the module tree (a cache)."""
    import gc

    import torch
    import transformers

    calls: dict = {}
    fake_collectives(calls)
    tp = a.weights_tp
    orig_dist = forward_dist

    def dist(AR_, vc):
        orig_dist(AR_, vc)
        parallel_groups(vc, tp, 1, 0, calls)

    globals()["forward_dist"] = dist
    counter = MetaLiveBytes()
    try:
        with tracking_mode(counter, devices=("meta",)):
            cfg, vc, model, _ = build_on_meta(AR, ops, a.whole_weights, a.forward_path, after_loading=True)
    finally:
        globals()["forward_dist"] = orig_dist
    gc.collect()
    params, p_by = _tensor_rows(model.named_parameters())
    bufs, b_by = _tensor_rows(model.named_buffers())
    both, by = _tensor_rows([*model.named_parameters(), *model.named_buffers()])
    buffers = sorted(([n, list(b.shape), str(b.dtype).removeprefix("torch."), b.numel() * b.element_size()]
                      for n, b in model.named_buffers()), key=lambda r: -r[3])
    mm = getattr(vc.model_config, "multimodal_config", None)
    return {"model": a.whole_weights, "architecture": type(model).__name__, "tp": tp,
            "live_bytes": counter.now, "parameter_bytes": params, "buffer_bytes": bufs, "module_bytes": both,
            "by_module": by, "parameters_by_module": p_by, "buffers_by_module": b_by, "buffers": buffers[:20],
            "limit_per_prompt": dict(getattr(mm, "limit_per_prompt", None) or {}) if mm else None,
            "dtype": str(vc.model_config.dtype).removeprefix("torch."), "torch_version": torch.__version__,
            "transformers_version": transformers.__version__}


# The fused-MoE workspace held after the forward (0.13+: ``vllm.v1.worker.workspace``'s WorkspaceManager keeps one
# buffer per micro-batch that only grows; FusedMoEModularKernel._allocate_buffers takes workspace13 and workspace2
# from it with ``get_simultaneous``, 0.19.0 model_executor/layers/fused_moe/modular_kernel.py 1063-1068,
# v1/worker/workspace.py 90-115, 117-180): after profile_run's dummy forward returns, the buffer is still allocated
# while the dummy sampler runs. Measured on the unquantized (bf16) MoE models below: what the forward leaves alive.
HELD_MODELS = {"moe-qwen3": "tests/logs/budget/configs/Qwen/Qwen3-30B-A3B/config.json",
               "moe-mixtral": "configs/mistralai/Mixtral-8x7B-Instruct-v0.1/config.json",
               "dense": "configs/Qwen/Qwen3-8B/config.json"}
# the same MoE model under vLLM's ``--quantization fp8`` (experts quantized online: Fp8MoEMethod's online variant),
# the platform answering CUDA on an H100 (SM 9.0, enum CUDA, FP8 supported): the FP8 MoE oracle's pick there
# (``experts_kernel``) and what its forward leaves held, kept apart from the unquantized factor (``fp8_factor``)
HELD_QUANTIZED = {"moe-qwen3-fp8": ("tests/logs/budget/configs/Qwen/Qwen3-30B-A3B/config.json", "fp8")}


# ``--held-quantization fp8``: the engine built with vLLM's ``--quantization`` (the experts quantized online)
HELD_QUANTIZATION: list[str] = []


def held_measure(a, AR, ops) -> dict:
    """``--held``: one model's dummy forward over each of ``--forward-tokens`` on the meta device (custom-op path),
    the fused-MoE workspace manager made anew before each (``fresh_workspace``), and what is still allocated once
    the forward returned and its output was dropped (``held_bytes``: the tracker's live bytes; the tensors in
    ``held``): the memory the profile's sampler pass runs beside. Per token: the growth between the two sizes."""
    cfg, vc, model, _ = build_on_meta(AR, ops, a.forward, a.forward_path, after_loading=True)
    held, shapes = {}, {}
    for T in a.forward_tokens:
        fresh_workspace()
        counter = forward_once(model, vc, T, collect=True)
        held[T] = counter.now
        shapes[T] = sorted(([list(s), dt, n] for n, s, dt in counter.at.values()), key=lambda x: -x[2])[:20]
    t1, t2 = a.forward_tokens
    per_token = (held[t2] - held[t1]) / (t2 - t1)
    import importlib.util

    manager = importlib.util.find_spec("vllm.v1.worker.workspace") is not None
    # the expert layers: their quant method a MoE method (FusedMoE up to 0.26, RoutedExperts from 0.27)
    experts = sorted({_experts_kernel(m) for m in model.modules()
                      if "MoE" in type(getattr(m, "quant_method", None)).__name__} - {""})
    return {"model": a.forward, "architecture": type(model).__name__, "tokens": list(a.forward_tokens),
            "quantization": HELD_QUANTIZATION[0] if HELD_QUANTIZATION else None, "experts_kernel": experts,
            "workspace_manager": manager, "held_bytes": {str(t): v for t, v in held.items()},
            "held_bytes_per_token": per_token, "held_fixed_bytes": held[t1] - round(per_token * t1),
            "held": {str(t): v for t, v in shapes.items()},
            "config": {k: cfg.get(k) for k in ("hidden_size", "moe_intermediate_size", "intermediate_size",
                                               "num_experts_per_tok", "num_experts", "num_local_experts")}}


def _experts_kernel(layer) -> str:
    """A FusedMoE layer's quant method and, where it built one, its modular kernel's experts class and FP8
    backend (what the forward ran): ``Fp8MoEMethod/TRITON/TritonExperts``."""
    qm = getattr(layer, "quant_method", None)
    if qm is None:
        return ""
    kernel = getattr(qm, "kernel", None) or getattr(qm, "moe_mk", None) or getattr(qm, "moe_kernel", None)
    fused = getattr(kernel, "fused_experts", None)
    backend = getattr(qm, "fp8_backend", None)
    return "/".join(x for x in (type(qm).__name__, getattr(backend, "name", None) or "",
                                type(fused).__name__ if fused is not None else "") if x)


def held_all(a) -> int:
    """``--held-all``: each of ``HELD_MODELS`` in its own process (``--held``), into ``<out>/held/<release>.json``."""
    root = Path(__file__).resolve().parents[2]
    models = {}
    for label, cfg in HELD_MODELS.items():
        r = run_variant(["--held", str(root / cfg), "--forward-path", "custom_ops"])
        r["model"] = cfg
        models[label] = r
        print(label, json.dumps({k: r.get(k) for k in ("derived", "held_bytes", "held_bytes_per_token", "why")}))
    for label, (cfg, method) in HELD_QUANTIZED.items():
        r = run_variant(["--held", str(root / cfg), "--forward-path", "custom_ops", "--held-quantization", method])
        r["model"] = cfg
        models[label] = r
        print(label, json.dumps({k: r.get(k) for k in ("derived", "held_bytes_per_token", "experts_kernel", "why")}))
    write_release(a.out / "held", "held", models)
    return 0


def run_variant(args: list[str]) -> dict:
    """This script run with ``args`` in its own process (one model per process): its record without the custom-op
    list, or ``{"derived": False, "why": ...}`` naming the last line of its error (no machine path)."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        done = subprocess.run([sys.executable, __file__, *args, "--variant-out", f.name], capture_output=True,
                              text=True)
        text = Path(f.name).read_text()
    if done.returncode or not text:
        last = [ln for ln in done.stderr.splitlines() if ln.strip() and not ln.startswith(" ")]
        return {"derived": False, "why": re.sub(r"(?:/[\w.+-]+)+/", "", f"the run failed: {(last or ['?'])[-1][:200]}")}
    r = json.loads(text)
    r.pop("python_ops", None)
    return r


def held_rule_bytes_per_token(config: dict) -> int:
    """kvplan's rule for the fused experts' workspace per token at TP 1 in bf16, ``k·(max(I, H) + max(2I, H))·2``
    (``kvplan.budget.estimate.moe_workspace_width``), from a golden's recorded config; 0 for a dense model."""
    k = int(config.get("num_experts_per_tok") or 0)
    if not (config.get("num_experts") or config.get("num_local_experts")) or not k:
        return 0
    H = int(config["hidden_size"])
    inter = int(config.get("moe_intermediate_size") or config["intermediate_size"])
    return k * (max(inter, H) + max(2 * inter, H)) * 2


def held_table(goldens: Path, out: Path) -> int:
    """``--held-table``: kvplan's ``moe_workspace.json`` from ``<goldens>/held/<release>.json``: per release the
    held bytes per token of each MoE model over ``held_rule_bytes_per_token`` (``factor``: the largest, rounded to
    4 places; 0 where the forward leaves nothing per token), beside the dense model's for reference."""
    releases = {}
    for f in sorted((goldens / "held").glob("*.json"), key=lambda p: [int(x) for x in p.stem.split(".")]):
        rec = json.loads(f.read_text())
        models, factors, fp8 = {}, [], {}
        for label, r in sorted(rec["held"].items()):
            if not r.get("derived"):
                models[label] = {"derived": False, "why": r.get("why")}
                continue
            rule = held_rule_bytes_per_token(r["config"])
            per_token = r["held_bytes_per_token"]
            models[label] = {"model": r["model"], "held_bytes_per_token": per_token, "rule_bytes_per_token": rule}
            if r.get("quantization"):  # a quantized run: its own factor, with the experts kernel it ran
                models[label].update(quantization=r["quantization"], experts_kernel=r.get("experts_kernel"))
                if rule and r["quantization"] == "fp8":
                    fp8 = {"fp8_factor": round(per_token / rule, 4), "fp8_kernel": r.get("experts_kernel")}
            elif rule:
                factors.append(round(per_token / rule, 4))
        releases[rec["vllm_version"]] = {"from": rec["vllm_version"], "factor": max(factors) if factors else 0,
                                         **fp8, "models": models}
    out.write_text(json.dumps({"source": "scripts/golden/profile_terms.py --held-table from "
                                         "tests/golden/profile_terms/held/", "releases": releases},
                              indent=1, sort_keys=True) + "\n")
    return 0


def weights_all(a) -> int:
    """``--weights-all``: each of ``WEIGHTS_MODELS`` at each of its ``WEIGHTS_TP`` sizes in its own process (the
    custom-op path: loading does not depend on it), into ``<out>/weights/<release>.json``."""
    root = Path(__file__).resolve().parents[2]
    models = {}
    for label, cfg in WEIGHTS_MODELS.items():
        for tp in WEIGHTS_TP[label]:
            r = run_variant(["--whole-weights", str(root / cfg), "--weights-tp", str(tp)])
            r["model"] = cfg
            models[f"{label}@tp{tp}"] = r
            print(label, tp, json.dumps({k: r.get(k) for k in ("derived", "live_bytes", "module_bytes", "why")}))
    write_release(a.out / "weights", "weights", models)
    return 0


def fresh_workspace() -> None:
    """The fused-MoE workspace of 0.19+ (``vllm.v1.worker.workspace``: one buffer that only grows, kept across
    forwards) made anew, as the profile run's first forward makes it: a buffer left by the previous layout or the
    warm-up would be seen through its views as an allocation of its old size."""
    try:
        import torch
        from vllm.v1.worker import workspace
    except ImportError:  # no workspace manager (0.11-0.1x): the MoE caches are allocated per call
        return
    workspace.reset_workspace_manager()
    workspace.init_workspace_manager(torch.device("meta"))


def runner_logits_args(model) -> tuple:
    """The arguments after the hidden states that the release's V1 runner passes ``compute_logits``: before 0.11
    the models' ``compute_logits`` also takes ``sampling_metadata`` and the V1 runner passes ``None``
    (``_dummy_sampler_run``: 0.10.1 v1/worker/gpu_model_runner.py line 2435, 0.10.2 line 2849); from 0.11.0
    (line 3192) it takes the hidden states alone."""
    import inspect

    return (None,) if "sampling_metadata" in inspect.signature(model.compute_logits).parameters else ()


def parallel_logits(vc, model, H: int) -> dict:
    """``compute_logits`` over ``LOGITS_REQS`` dummy rows on the meta device: its peak (the vocab-parallel logits,
    the gather's buffers, the full logits), the bytes per logit it grows by, and the shape every rank gets."""
    import torch
    from vllm.config import set_current_vllm_config

    peaks, shapes = {}, {}
    for R in LOGITS_REQS:
        hidden = torch.empty(R, H, dtype=torch.bfloat16, device="meta")
        counter = MetaLiveBytes()
        with set_current_vllm_config(vc), torch.inference_mode(), tracking_mode(counter, devices=("meta",)):
            logits = model.compute_logits(hidden, *runner_logits_args(model))
            shapes[R] = list(logits.shape)
            del logits
        peaks[R] = counter.peak
    r1, r2 = LOGITS_REQS
    V = shapes[r2][-1]
    per = (peaks[r2] - peaks[r1]) / ((r2 - r1) * V)
    return {"reqs": list(LOGITS_REQS), "peak_bytes": {str(r): p for r, p in peaks.items()},
            "shape": shapes[r2], "bytes_per_logit": per, "fixed_bytes": peaks[r1] - round(per * r1 * V)}


def parallel_all(a) -> int:
    """``--parallel-all``: ``PARALLEL_MODELS`` on each path in its own process, into ``<out>/parallel/<release>.json``."""
    import vllm

    previous = a.out / "parallel" / f"{vllm.__version__}.json"
    # --forward-only: these labels run, the release's other recorded ones are kept as they are
    models = json.loads(previous.read_text())["parallel"] if a.forward_only and previous.exists() else {}
    for label in PARALLEL_MODELS:
        if not a.forward_only or label in a.forward_only:
            models[label] = both_paths(label, "--parallel-run", FORWARD_MODELS[label], ("architecture",))
            for r in models[label].values():
                r.pop("python_ops", None)
    write_release(a.out / "parallel", "parallel", models)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", nargs=2, type=Path, metavar=("GOLDENS", "OUT"),
                    help="write kvplan's table from the goldens (kvplan's environment; no vLLM)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--sms", type=int, default=8, help="SM count the Triton wrapper sees (≤ the batch sizes)")
    ap.add_argument("--reqs", type=int, nargs=2, default=(32, 64))
    ap.add_argument("--cuda-reqs", type=int, nargs=2, default=(128, 192),
                    help="two batches of ≥ 128 requests: the CUDA sort's segmented branch (cuda_workspace_bytes)")
    ap.add_argument("--vocabs", type=int, nargs="*", default=list(VOCABS))
    ap.add_argument("--no-flashinfer", action="store_true",
                    help="measure as a worker without FlashInfer installed (one variant per process)")
    ap.add_argument("--variant-out", type=Path, help="write this variant's record here (internal)")
    ap.add_argument("--runner-v2", action="store_true",
                    help="run the V2 model runner's _dummy_sampler_run (vllm/v1/worker/gpu) where the release has "
                         "both runners, recorded under the golden's \"v2\" (the V1 variants kept)")
    ap.add_argument("--warmup-pass", action="store_true",
                    help="with --runner-v2: the V2 sampler over the warm-up's SamplingParams.for_sampler_warmup() "
                         "(what the release's warmup_kernels samples after the KV cache is sized), recorded under "
                         "the golden's \"v2_warmup\"")
    ap.add_argument("--forward-all", action="store_true",
                    help="measure the dummy forward's peak (FORWARD_MODELS, both paths) into <out>/forward/")
    ap.add_argument("--forward-only", nargs="*", choices=sorted({*FORWARD_MODELS, *OWN_FORWARD_MODELS}),
                    help="with --forward-all: run these FORWARD_MODELS labels / OWN_FORWARD_MODELS architectures "
                         "only, keeping the release's others")
    ap.add_argument("--encoder-all", action="store_true",
                    help="measure the multimodal encoder's dummy pass (ENCODER_MODELS, both paths) into <out>/encoder/")
    ap.add_argument("--encoder-only", nargs="*", choices=sorted(ENCODER_MODELS),
                    help="with --encoder-all: run these architectures only, keeping the release's others")
    ap.add_argument("--encoder-tp", type=lambda x: [int(t) for t in x.split(",")], default=[],
                    help="with --encoder-all: also run each tower on rank 0 of TP groups of these sizes (e.g. 2,4)")
    ap.add_argument("--encoder", help="one multimodal model's config.json (internal: one path per process)")
    ap.add_argument("--spec-table", nargs=2, type=Path, metavar=("GOLDENS", "OUT"),
                    help="write kvplan's spec_sampler.json from the --spec-all goldens (kvplan's environment)")
    ap.add_argument("--spec-all", action="store_true",
                    help="measure the dummy sampler pass with a speculative config (its rejection-sampler pass) "
                         "into <out>/spec/")
    ap.add_argument("--lora-all", action="store_true",
                    help="measure what --enable-lora allocates (LORA_MODELS, LORA_SETTINGS) into <out>/lora/")
    ap.add_argument("--forward", help="one model's config.json (internal: one path per process)")
    ap.add_argument("--drafter-all", action="store_true",
                    help="measure the drafter's forward of the dummy run (DRAFTER_MODELS, both paths) into "
                         "<out>/drafter/")
    ap.add_argument("--drafter-only", nargs="*", choices=sorted(DRAFTER_MODELS),
                    help="with --drafter-all: run these labels only, keeping the release's others")
    ap.add_argument("--drafter", help="the drafter's (or MTP target's) config.json (internal: one path per process)")
    ap.add_argument("--drafter-label", choices=sorted(DRAFTER_MODELS), help="with --drafter: the DRAFTER_MODELS entry")
    ap.add_argument("--parallel-all", action="store_true",
                    help="measure the dummy forward and the logits on one rank under TP 2/4/8 and PP 2 "
                         "(PARALLEL_MODELS, both paths) into <out>/parallel/")
    ap.add_argument("--parallel-run", help="one model's config.json under PARALLEL_LAYOUTS (internal: one path per "
                                           "process)")
    ap.add_argument("--forward-path", choices=("custom_ops", "native"), default="custom_ops")
    ap.add_argument("--forward-tokens", type=int, nargs=2, default=FORWARD_TOKENS)
    ap.add_argument("--lora", type=int, nargs=4, metavar=("MAX_LORAS", "MAX_LORA_RANK", "MAX_NUM_SEQS", "TOKENS"),
                    help="with --forward: what --enable-lora allocates (lora_measure) instead of the forward")
    ap.add_argument("--held-all", action="store_true",
                    help="record what the dummy forward leaves allocated (HELD_MODELS) into <out>/held/")
    ap.add_argument("--held", help="one model's config.json (internal: one path per process)")
    ap.add_argument("--held-quantization", help="with --held: vLLM's --quantization for the engine (fp8)")
    ap.add_argument("--held-table", nargs=2, type=Path, metavar=("GOLDENS", "OUT"),
                    help="write kvplan's moe_workspace.json from the --held-all goldens (kvplan's environment)")
    ap.add_argument("--weights-all", action="store_true",
                    help="record what loading keeps on one TP rank (WEIGHTS_MODELS at WEIGHTS_TP) into <out>/weights/")
    ap.add_argument("--whole-weights", help="one model's config.json (internal: one path per process)")
    ap.add_argument("--weights-tp", type=int, default=1, help="with --whole-weights: the TP size (rank 0)")
    ap.add_argument("--persistent-point", type=int, nargs=4, metavar=("R", "V", "L", "T"),
                    help="the V2 runner's persistent bytes at one grid point (internal: one point per process)")
    ap.add_argument("--persistent-config", help="with --persistent-point: a multimodal model's config.json "
                                                "(PERSISTENT_MM_MODELS) instead of the dense forward model's")
    ap.add_argument("--persistent-spec", type=int, default=0, metavar="K",
                    help="with --persistent-point: an EAGLE-3 drafter proposing K tokens (PERSISTENT_SPEC_DRAFTER)")
    a = ap.parse_args(argv)
    if a.persistent_point:
        return persistent_point_main(a)
    if a.held_all:
        return held_all(a)
    if a.held_table:
        return held_table(*a.held_table)
    if a.held:  # the forward's set-up (forward_main), measuring what the forward leaves alive instead of its peak
        a.forward = a.held
        globals()["forward_measure"] = held_measure
        if a.held_quantization:
            HELD_QUANTIZATION.append(a.held_quantization)
    if a.table:
        return table(*a.table)
    if a.spec_table:
        return spec_table(*a.spec_table)
    if a.forward_all:
        return forward_both(a)
    if a.parallel_all:
        return parallel_all(a)
    if a.drafter_all:
        return drafter_both(a)
    if a.encoder_all:
        return encoder_both(a)
    if a.lora_all:
        return lora_all(a)
    if a.spec_all:
        return spec_all(a)
    if a.weights_all:
        return weights_all(a)
    if a.forward or a.encoder or a.parallel_run or a.whole_weights or a.drafter_label:
        return forward_main(a)
    if a.variant_out is None:
        return both_variants(a, argv)
    import torch
    import vllm

    release = vllm.__version__
    notes = install_stubs(flashinfer=not a.no_flashinfer)
    record = {"vllm_version": release, "torch_version": torch.__version__, "runner": "V1 GPUModelRunner",
              "logits_dtype": "bfloat16", "sms": a.sms, "reqs": list(a.reqs)}
    try:
        try:
            if a.runner_v2:  # the V2 runner asked for (0.19-0.33 have both: kvplan's runner decision picks one)
                raise ModuleNotFoundError("vllm.v1.sample.sampler: the V2 model runner asked for (--runner-v2)")
            method, sampler, path, more, ttt = build(a.sms)
        except ModuleNotFoundError as e:  # no V1 runner (0.34+): the V2 runner's sampler
            if "vllm.v1.sample.sampler" not in str(e):
                raise
            method, sampler, path, more, ttt = build_v2(a.sms)
            record["runner"] = "V2 GPUModelRunner"
            if a.warmup_pass:
                method = warmup_sampler_pass
                record["pass"] = "warm-up (SamplingParams.for_sampler_warmup)"
    except Exception as e:  # the release's runner does not import or has no such method here
        record.update(derived=False, why=f"{type(e).__name__}: {e}")
        notes_out(a.variant_out, release, record, notes)
        return 0
    notes += more
    record["topk_topp_path"] = path
    rows = []
    r1, r2 = a.reqs
    for v in a.vocabs:
        p1 = measure(method, sampler, v, r1, torch.bfloat16, a.sms, ttt)
        p2 = measure(method, sampler, v, r2, torch.bfloat16, a.sms, ttt)
        # the same batch with twice the SMs: the Triton wrapper's buffer grows by a.sms rows (none without it)
        p3 = measure(method, sampler, v, r2, torch.bfloat16, 2 * a.sms, ttt)
        per_logit = (p2 - p1) / ((r2 - r1) * v)
        per_row = (p3 - p2) / (a.sms * v)
        row = {"vocab_size": v, "peak_bytes": {str(r1): p1, str(r2): p2, f"{r2}@{2 * a.sms}sms": p3},
               "bytes_per_logit": per_logit, "bytes_per_sm_row_per_vocab": per_row,
               "fixed_bytes": p1 - round(per_logit * r1 * v) - round(per_row * a.sms * v)}
        # on CUDA (cuda_workspace_bytes): the peak with the kernels' workspaces, at the CPU batches (< 128 slices)
        # and at two batches of 128 or more, where torch's sort takes its segmented branch
        c1, c2 = CUDA_PEAKS[(v, r1, a.sms)], CUDA_PEAKS[(v, r2, a.sms)]
        q1, q2 = a.cuda_reqs
        big = {q: (measure(method, sampler, v, q, torch.bfloat16, a.sms, ttt), CUDA_PEAKS[(v, q, a.sms)])[1]
               for q in (q1, q2)}
        row["cuda"] = cuda_record({r1: c1, r2: c2, **big}, (r1, r2), (q1, q2), v)
        rows.append(row)
    launches = {} if ttt is None else {k: s.launches for k, s in vars(ttt).items() if isinstance(s, KernelStub)}
    record["triton"] = any(launches.values())
    if record.get("runner") == "V2 GPUModelRunner":
        record["topk_topp_path"] = path + (": flashinfer_sample" if SAMPLED_CALLS else ": gumbel_sample")
    record["flashinfer_sampling_calls"] = len(SAMPLED_CALLS)
    record["kernel_launches"] = launches
    if isinstance(sampler, V2Sampler) and not a.warmup_pass:  # the runner's persistent states (from 0.27.1)
        record["persistent"] = {**v2_persistent_fit(("--no-flashinfer",) if a.no_flashinfer else ()),
                                "counted": persistent_counted()}
        notes.append("persistent: the release's GPUModelRunner built on the CPU (__init__, load_model, profile_run); "
                     "stand-ins: a model loader returning a parameter-free module (the weights are their own term; "
                     "its forward returns [tokens, 64] hidden states), DeviceMemoryProfiler reporting 0, "
                     "torch.cuda.Stream a no-op stream, torch.accelerator.synchronize a no-op; UvaBuffer's pinned "
                     "host buffers and tensors made with device=\"cpu\" or pin_memory=True are host memory, "
                     "not counted")
    if a.warmup_pass:  # the warm-up's prompt logprobs, on their own rows (one hidden row per prompt token)
        record["prompt_logprobs"] = []
        for v in a.vocabs:
            p1, p2 = (measure(warmup_prompt_logprobs_pass, sampler, v, r, torch.bfloat16, a.sms, ttt) for r in (r1, r2))
            per_logit = (p2 - p1) / ((r2 - r1) * v)
            record["prompt_logprobs"].append({"vocab_size": v, "peak_bytes": {str(r1): p1, str(r2): p2},
                                              "bytes_per_logit": per_logit,
                                              "fixed_bytes": p1 - round(per_logit * r1 * v)})
    record["cuda_workspace_ops"] = dict(CUDA_OPS)
    record["derived"] = True
    record["sampler"] = rows
    notes_out(a.variant_out, release, record, notes)
    return 0


def notes_out(out: Path, release: str, record: dict, notes: list[str]) -> None:
    record["notes"] = notes
    out.write_text(json.dumps(record, sort_keys=True))


def flashinfer_required() -> bool:
    """Whether the release's wheel requires flashinfer-python (a Requires-Dist without an extra): then every
    CUDA install has it, and the sampler takes the FlashInfer path wherever the release's default picks it."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        reqs = distribution("vllm").requires or []
    except PackageNotFoundError:
        return False
    return any(r.startswith("flashinfer-python") and "extra ==" not in r for r in reqs)


def both_variants(a, argv) -> int:
    """Each variant in its own process (the modules pick their path at import), into one file per release."""
    import subprocess
    import tempfile

    argv = list(sys.argv[1:] if argv is None else argv)
    variants = {}
    required = flashinfer_required()
    # where the wheel requires FlashInfer every CUDA install has it: the variant without it is no install's
    for name, extra in (("flashinfer", []), ("no_flashinfer", ["--no-flashinfer"]))[:1 if required else 2]:
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.run([sys.executable, __file__, *argv, *extra, "--variant-out", f.name], check=True)
            variants[name] = json.loads(Path(f.name).read_text())
    release = variants["flashinfer"]["vllm_version"]
    a.out.mkdir(parents=True, exist_ok=True)
    out = a.out / f"{release}.json"
    if a.runner_v2:  # the V2 runner's variants beside the V1 runner's, which stay as recorded
        golden = json.loads(out.read_text())
        golden["v2_warmup" if a.warmup_pass else "v2"] = variants
    else:
        golden = {"vllm_version": release, "sampler": variants, "flashinfer_required": required,
                  **({"v2": json.loads(out.read_text())["v2"]} if out.exists() and "v2" in json.loads(
                      out.read_text()) else {})}
    out.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    for name, r in variants.items():
        print(release, name, json.dumps({k: r.get(k) for k in ("derived", "topk_topp_path", "triton", "why")}))
        for row in r.get("sampler", []):
            print("  ", row["vocab_size"], row["bytes_per_logit"], row["bytes_per_sm_row_per_vocab"],
                  row["fixed_bytes"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
