"""vLLM's environment variables that change the KV layout or whether the engine starts, and
how kvplan applies them (``--env VAR=VALUE``, a deployments entry's ``env:`` mapping, and
the same names in kvplan's own process environment; a value given explicitly wins).

Read in the wheels' ``vllm/envs.py`` (``environment_variables``) of vLLM 0.18.0, 0.23.0, 0.33.0
and 0.34.0; ``env_names.py`` lists every name each of those releases reads
(``scripts/golden/env_names.py``). A release between two checked ones is taken to read
what the next checked release reads (0.10.1-0.18.0 → 0.18.0, 0.18.1-0.23.0 → 0.23.0,
0.23.1-0.33.0 → 0.33.0; 0.23.0 is checked for VLLM_MXFP4_USE_MARLIN, which 0.19-0.23 read
and 0.24 dropped).

==============================================  ===============================================
variable (vLLM's parse, default)                 what kvplan does with it
==============================================  ===============================================
VLLM_ALLOW_LONG_MAX_MODEL_LEN                    --max-model-len above the derived maximum is a
  (``strip().lower() in ("1", "true")``, off)    warning instead of vLLM's ValueError
                                                 (``config/model.py _get_and_verify_max_len``)
VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_       0 turns the hybrid manager off for chunked-local
  KV_CACHE (``bool(int(v))``; 0 to 0.13.0,       attention models (``config/vllm.py``)
  1 from 0.14.0: Era.chunked_local_hma_by_default)
VLLM_PP_LAYER_PARTITION (a string, unset)        the layers per pipeline stage, ``"10,11,11"``
                                                 (``distributed/utils.py get_pp_indices``)
VLLM_USE_V2_MODEL_RUNNER (``bool(int(v))``;      the model runner, when --model-runner is not
  0.33.0: unset = the release decides; gone      given (``config/vllm.py use_v2_model_runner``)
  in 0.34.0)
VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS         whether the memory profile subtracts CUDA-graph
  (``bool(int(v))``; 0 in 0.18.0, 1 in 0.33.0)   memory from the KV budget
                                                 (``v1/worker/gpu_worker.py``)
VLLM_MLA_DISABLE (``bool(int(v))``, 0)           1 on an MLA model is refused: vLLM then caches
                                                 full K/V per head, which kvplan does not model
VLLM_USE_SIMPLE_KV_OFFLOAD (``bool(int(v))``, 0) 1: ``--kv-offloading-backend native`` installs
                                                 SimpleCPUOffloadConnector instead of the
                                                 OffloadingConnector (``config/vllm.py``)
VLLM_MXFP4_USE_MARLIN (``bool(int(v))``, unset)  1: MXFP4 MoE experts on the Marlin backend (its
                                                 padded layout) where the release reads it
                                                 (``weights.mxfp4_padding_for``); 0 and unset:
                                                 the release's own choice
==============================================  ===============================================

Names that do not start with ``VLLM_`` are ignored (``CUDA_VISIBLE_DEVICES=0 vllm serve …``).
A ``VLLM_*`` name no checked release reads is a warning (vLLM ignores it: usually a typo), as
is one the selected release does not read. Others vLLM reads (logging, ports, kernels) do not
touch the KV cache and are only shown in the inputs.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from kvplan.frozen import dataclass
from kvplan.engines.vllm.env_names import ENV_NAMES
from kvplan.engines.vllm.versions import version_key
from kvplan.errors import OptionError, UnsupportedError

CHECKED = tuple(sorted(ENV_NAMES, key=version_key))

ALLOW_LONG = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
CHUNKED_LOCAL = "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE"
PP_PARTITION = "VLLM_PP_LAYER_PARTITION"
V2_RUNNER = "VLLM_USE_V2_MODEL_RUNNER"
CUDAGRAPH_PROFILE = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"
MLA_DISABLE = "VLLM_MLA_DISABLE"
SIMPLE_KV_OFFLOAD = "VLLM_USE_SIMPLE_KV_OFFLOAD"
MXFP4_MARLIN = "VLLM_MXFP4_USE_MARLIN"


@dataclass(frozen=True)
class EnvVar:
    name: str
    parse: str  # "true_or_1" (strip/lower in ("1", "true")), "int_bool" (bool(int(v))), "text"
    effect: str  # what it changes, in words (kvplan's docs and inputs)


APPLIED: dict[str, EnvVar] = {v.name: v for v in (
    EnvVar(ALLOW_LONG, "true_or_1", "allows --max-model-len above the model's derived maximum (a warning)"),
    EnvVar(CHUNKED_LOCAL, "int_bool", "0: chunked-local attention turns the hybrid KV-cache manager off"),
    EnvVar(PP_PARTITION, "text", "layers per pipeline stage, comma-separated"),
    EnvVar(V2_RUNNER, "int_bool", "the model runner (1 = V2, 0 = V1) when --model-runner is not given"),
    EnvVar(CUDAGRAPH_PROFILE, "int_bool", "whether the memory profile subtracts CUDA-graph memory"),
    EnvVar(MLA_DISABLE, "int_bool", "1: MLA models cache full K/V per head (not modelled: refused)"),
    EnvVar(SIMPLE_KV_OFFLOAD, "int_bool", "1: --kv-offloading-backend native installs SimpleCPUOffloadConnector"),
    EnvVar(MXFP4_MARLIN, "int_bool", "1: MXFP4 MoE experts on the Marlin backend where the release reads it"),
)}


def checked_release(version: str | None) -> str:
    """The checked release whose ``envs.py`` stands for ``version``: the first checked release
    at or after it (the newest checked one for newer or unknown releases)."""
    if not version:
        return CHECKED[-1]
    key = version_key(version)
    return next((c for c in CHECKED if version_key(c) >= key), CHECKED[-1])


def reads(era, name: str) -> bool:
    """Whether the release behind ``era`` reads ``name`` (its envs.py, or the next checked one's)."""
    return name in ENV_NAMES[checked_release(era.stands_for)]


def with_process_environment(given: Mapping[str, str] | None,
                             environ: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """``given`` plus the applied variables set in the process environment that ``given`` does
    not name (given wins). None when neither sets anything."""
    environ = os.environ if environ is None else environ
    out = dict(given or {})
    for name in APPLIED:
        if name not in out and name in environ:
            out[name] = environ[name]
    return out or None


def _value(env: Mapping[str, str] | None, era, name: str) -> str | None:
    if not env or name not in env or not reads(era, name):
        return None
    return env[name]


def _int_bool(name: str, raw: str) -> bool:
    try:
        return bool(int(raw))
    except ValueError:
        raise OptionError(f"--env {name}={raw}: vLLM reads it with int(); write 0 or 1") from None


def flag(env: Mapping[str, str] | None, era, name: str) -> bool | None:
    """A boolean variable as the release would read it; None when unset or not read."""
    raw = _value(env, era, name)
    if raw is None:
        return None
    if APPLIED[name].parse == "true_or_1":
        return raw.strip().lower() in ("1", "true")
    return _int_bool(name, raw)


def allow_long_max_model_len(env, era) -> bool:
    return bool(flag(env, era, ALLOW_LONG))


def allow_chunked_local_with_hma(env, era) -> bool:
    value = flag(env, era, CHUNKED_LOCAL)
    # unset: the release's default (Era.chunked_local_hma_by_default: "0" to 0.13.0, "1" from 0.14.0, PR #29627)
    return era.chunked_local_hma_by_default if value is None else value


def use_v2_model_runner(env, era) -> bool | None:
    return flag(env, era, V2_RUNNER)


def cudagraph_memory_in_profile(env, era) -> bool | None:
    return flag(env, era, CUDAGRAPH_PROFILE)


def simple_kv_offload(env, era) -> bool:
    return bool(flag(env, era, SIMPLE_KV_OFFLOAD))


def mxfp4_use_marlin(env, era) -> bool:
    """``VLLM_MXFP4_USE_MARLIN=1`` as the release reads it (``maybe_convert_bool``: ``bool(int(v))``); which cards
    it moves to Marlin is the release's MXFP4 oracle's (``kvplan.budget.weights.mxfp4_padding_for``)."""
    return bool(flag(env, era, MXFP4_MARLIN))


def pp_layer_partition(env, era) -> str | None:
    """``VLLM_PP_LAYER_PARTITION`` as given (``get_pp_indices`` parses and checks it)."""
    return _value(env, era, PP_PARTITION)


def refuse_unmodelled(env, era, *, use_mla: bool) -> None:
    if use_mla and flag(env, era, MLA_DISABLE):
        raise UnsupportedError(f"--env {MLA_DISABLE}=1: vLLM then serves this MLA model with full per-head K/V "
                               f"caches, which kvplan does not model; unset {MLA_DISABLE}")


def warnings(env: Mapping[str, str] | None, era) -> list[str]:
    """One line per ``VLLM_*`` variable vLLM would ignore: no checked release reads it (a typo?),
    or the selected release does not."""
    out = []
    release = era.stands_for
    checked = checked_release(release)
    for name in env or {}:
        if name.startswith("LMCACHE_"):  # LMCache's own (its connector reads them; kvplan.engines.vllm.offload)
            continue
        if not any(name in names for names in ENV_NAMES.values()):
            out.append(f"{name} is not an environment variable of vLLM (not in vllm/envs.py of "
                       f"{', '.join(CHECKED)}); vLLM ignores it")
        elif name not in ENV_NAMES[checked]:
            read_by = [c for c in CHECKED if name in ENV_NAMES[c]]
            out.append(f"vLLM {release} does not read {name} (vllm/envs.py of {checked}; read by "
                       f"{', '.join(read_by)}); ignored")
    return out


def describe(env: Mapping[str, Any] | None) -> list[dict]:
    """The variables in effect, each with whether kvplan applies it (for reports)."""
    return [{"name": k, "value": v, "effect": APPLIED[k].effect if k in APPLIED else None}
            for k, v in (env or {}).items()]
