"""The failures before the KV cache: the weights, or the weights and the profile run, do not fit a rank.

vLLM's worker start-up, in order (v1/worker/gpu_worker.py, 0.10-0.34):

1. ``init_device``: the CUDA context (and the NCCL communicators when tp·pp > 1) take memory
   before anything is loaded;
2. ``load_model``: every weight of the rank is allocated on the device. When the rank's weights
   exceed the memory left, torch raises ``torch.OutOfMemoryError`` ("CUDA out of memory") while
   loading; ``--gpu-memory-utilization`` plays no part (it only sizes the KV cache later);
3. ``determine_available_memory`` → ``profile_run``: a forward pass of the dummy batch (and the
   sampler) on top of the weights; when weights + activation peak + non-torch memory exceed the
   device, torch raises ``torch.OutOfMemoryError`` during the profile;
4. only then is the KV budget computed (``kvplan.budget.sizing``); a budget ≤ 0 is vLLM's
   "No available memory for the cache blocks" (``kvplan.engines.vllm.sizing``).

kvplan checks 2 and 3 per pipeline stage against ``gpu_memory − startup``, where ``startup`` is
the start-up memory estimate of ``kvplan.budget.estimate`` (the CUDA context; NCCL when tp·pp > 1)
unless ``--startup-memory`` gives it. The figures are kvplan's estimates and the message is
kvplan's wording (vLLM's is torch's OOM text, with the size of the allocation that failed).
A smaller KV budget cannot fix either: the fix is a deployment change (``kvplan.usecases.fix_search
.load_fixes``: a larger tensor- or pipeline-parallel size, a quantized checkpoint, a larger card).
"""

from __future__ import annotations

from kvplan.results.budget import BudgetStage, LoadFailure
from kvplan.units import GiB

LOAD, PROFILE = "load", "profile"
STAGES = (LOAD, PROFILE)
ERROR_TYPE = "torch.OutOfMemoryError"


def load_failure(stages: list[BudgetStage], *, total: int, startup: int, pp: int) -> LoadFailure | None:
    """The first start-up stage that runs out of device memory, or None.

    ``stages`` are ``kv_budget``'s stages (weights, activation, non-torch bytes)."""
    free = total - startup
    free_text = f"{free / GiB:.2f} GiB free ({total / GiB:.2f} GiB CUDA total − {startup / GiB:.2f} GiB in use at " \
                "start-up; kvplan's estimate)"
    for st in stages:
        w, act, nt = st.weights_bytes, st.activation_peak_bytes, st.non_torch_bytes
        where = f" on pipeline stage {st.stage}" if pp > 1 else ""
        if w > free:
            stage, needed = LOAD, w
            text = f"while loading the model weights{where}: {w / GiB:.2f} GiB of weights per GPU, {free_text}"
        elif w + act + nt > free:
            stage, needed = PROFILE, w + act + nt
            text = (f"in the profile run{where}: {w / GiB:.2f} GiB of weights + {act / GiB:.2f} GiB activation peak "
                    f"+ {nt / GiB:.2f} GiB non-torch memory exceed the {free_text}")
        else:
            continue
        return LoadFailure(stage=stage, pipeline_stage=st.stage, error_type=ERROR_TYPE, needed_bytes=needed,
                           free_bytes=free, message=f"CUDA out of memory {text}")
    return None


def physical_kv_room(stages: list[BudgetStage], *, total: int, startup: int) -> int:
    """The most KV bytes a worker can hold on the device: what is left of ``total − startup``
    after the weights, the activation peak, non-torch and CUDA-graph memory (the smallest stage).
    ``--kv-cache-memory`` above it skips vLLM's profile but runs out of memory allocating the cache."""
    return min(total - startup - st.weights_bytes - st.activation_peak_bytes - st.non_torch_bytes
               - (st.cudagraph_bytes if st.cudagraph_resident_bytes is None else st.cudagraph_resident_bytes)
               for st in stages)
