#!/usr/bin/env python3
"""Generate golden files from real vLLM releases (CPU only) for kvplan's tests.

Runs in kvplan's own environment. Each case is a kvplan scenario (model, drafter, budget,
options); kvplan simulates it under the release's rules and ``kvplan.verify.case.runner_case``
writes down exactly what it simulated as a runner case (the same builder ``kvplan simulate
--cross-check`` uses; see ``kvplan/verify/vllm_runner.py`` for the case format). All cases of one
release go to ``.golden-venvs/vllm-<version>/bin/python kvplan/verify/vllm_runner.py`` in one
batch, and each result is written to ``tests/golden/<case>__<version>.json``::

    {"vllm_version": "...", "case": <runner input>, "result": <runner output>}

with sorted keys (stable across runs). Cases are stored in the compact form
(``spec_table`` + ``[name, spec_index, source]`` per layer).

Hybrid-Mamba cases (Qwen3-Next) reach vLLM's grouping already aligned by kvplan, per release
(vLLM aligns at config time, from model-level numbers, reference §7.6/§12.4): releases up to
0.18 run hybrid models with prefix caching off (Mamba mode "none", kernel alignment 16, Mamba
block = max_model_len); 0.33 runs them with prefix caching on (mode "align", alignment
lcm(16, 64) for gated-delta-net, Mamba block = attention block). The aligned numbers are
recorded in the case (``alignment``).

Usage::

    python scripts/golden/make_goldens.py                     # every release with a venv
    python scripts/golden/make_goldens.py --releases 0.33.0   # one release
    python scripts/golden/make_goldens.py --only gpt-oss-20b  # case names containing this
    python scripts/golden/make_goldens.py --list              # print the cases
    python scripts/golden/make_goldens.py --hand-written      # gpt-oss-20b/gemma-3-27b from
                                                              # hand-written layers (no catalog)
    python scripts/golden/make_goldens.py --architectures     # every architecture vLLM 0.34.0
                                                              # registers, built on the meta device
    python scripts/golden/make_goldens.py --architectures --only Qwen3   # some of them

``--architectures`` (issue #23) runs ``kvplan/verify/arch_runner.py`` (its docstring lists the
stubs) with ``ARCH_BASE`` (default ``.golden-venvs/rel-base5-arch``: a copy of rel-base5 plus ``pip install --no-deps``
torchvision 0.28.0 (the CUDA wheel, the only one for torch 2.13: its ops are never loaded),
compressed-tensors 0.17.0, loguru, mistral_common, timm, jsonschema, pydantic-extra-types, pycountry
and tiktoken, which model files import) and the release's
sources, over every architecture of vLLM's registry (text generation, multimodal, speculative
heads), in ``--jobs`` processes. Configs: the catalog's (``configs/``), then ``$SHARED_CONFIGS``
(default ``shared/configs`` beside the checkout), then the runner's transformers defaults. One file per architecture:
``tests/golden/architectures/<release>/<Architecture>.json`` (sorted keys, compact).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kvplan.options import find_option  # noqa: E402
from kvplan.specs import LayerSpec, spec_from_dict, spec_to_dict  # noqa: E402
from kvplan.verify.case import CASE_SPEC_KEYS, runner_case  # noqa: E402
from kvplan.verify.crosscheck import RUNNER  # noqa: E402 - the one runner (also --cross-check's)

REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "tests" / "golden"
VENVS = Path(os.environ.get("GOLDEN_VENVS", REPO / ".golden-venvs"))
# release_env.sh's shared environment: one base venv + each release's unpacked sources
RELEASE_BASE = Path(os.environ.get("RELEASE_BASE", REPO / ".golden-venvs" / "rel-base"))
RELEASE_SRC = Path(os.environ.get("RELEASE_SRC", REPO / ".golden-venvs" / "rel-src"))

from kvplan.engines.vllm.releases import GOLDEN_RELEASES  # noqa: E402

RELEASES = GOLDEN_RELEASES

GiB = 1 << 30
T = 8192  # max_num_batched_tokens (the OpenAI server default on >= 70 GiB GPUs)
PEAGLE_20B = "amazon/GPT-OSS-20B-P-EAGLE"


@dataclass(frozen=True)
class Case:
    name: str
    model: str
    drafter: str | None = None
    memory_gib: float = 40
    max_model_len: int = 131072
    derived_max_model_len: int | None = None  # required with max_model_len == -1
    disable_hma: bool = False
    async_scheduling: bool = True
    num_gpu_blocks_override: int | None = None
    pp: int = 1
    tp: int = 1
    dcp: int = 1  # decode-context parallel size (0.33: attention specs are dcp_sharded by default)
    dp: int = 1  # data-parallel ranks: the golden is one rank's engine core
    ep: bool = False  # --enable-expert-parallel
    inspect_args: tuple[str, ...] = ()  # more kvplan flags (--num-speculative-tokens 3, ...)
    mamba: bool = False  # a hybrid Mamba model (kvplan aligns it per release)
    use_v2_model_runner: bool | None = None  # None: the release picks (the runner asks it)
    model_runner_probe: dict | None = None  # kept for the case list; the builder always probes when unpinned
    extra: dict = field(default_factory=dict)


def _cases() -> list[Case]:
    c: list[Case] = []
    eagle_llama = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    oss20, oss120 = "openai/gpt-oss-20b", "openai/gpt-oss-120b"
    eagle20 = "sgl-project/SpecForge--gpt-oss-20B-eagle3"
    peagle20 = PEAGLE_20B
    eagle120 = "sgl-project/SpecForge--gpt-oss-120B-eagle3"
    # (case prefix, model, drafter, small budget GiB, max_model_len)
    table = [
        ("gpt-oss-20b", oss20, None, 2, 131072),
        ("gpt-oss-20b-eagle3", oss20, eagle20, 2, 131072),
        ("gpt-oss-20b-peagle", oss20, peagle20, 2, 131072),
        ("gpt-oss-120b-eagle3", oss120, eagle120, 2, 131072),
        ("gemma-3-27b", "google/gemma-3-27b-it", None, 2, 131072),
        ("gemma-2-9b", "google/gemma-2-9b", None, 2, 8192),
        ("gemma-4-26b-a4b", "google/gemma-4-26B-A4B", None, 2, 131072),
        ("llama-4-scout", "meta-llama/Llama-4-Scout-17B-16E-Instruct", None, 2, 131072),
        ("qwen3-next", "Qwen/Qwen3-Next-80B-A3B-Thinking", None, 2, 131072),
        ("mistral-7b", "mistralai/Mistral-7B-v0.1", None, 1, 32768),
        ("deepseek-v3", "deepseek-ai/DeepSeek-V3", None, 2, 131072),
        ("llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B", None, 2, 131072),
    ]
    for prefix, model, drafter, small, length in table:
        mamba = prefix.startswith("qwen3-next")
        c.append(Case(f"{prefix}__40gib", model, drafter, 40, length, mamba=mamba))
        c.append(
            Case(f"{prefix}__{small}gib", model, drafter, small, length, mamba=mamba)
        )
    # Llama 4 with the hybrid manager off (what an EAGLE drafter or the env var forces)
    scout = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
    c.append(
        Case("llama-4-scout__hma-off__40gib", scout, None, 40, 131072, disable_hma=True)
    )
    c.append(
        Case("llama-4-scout__hma-off__20gib", scout, None, 20, 131072, disable_hma=True)
    )
    # sliding + full collapse into one group when HMA is off
    c.append(
        Case("gpt-oss-20b__hma-off__40gib", oss20, None, 40, 131072, disable_hma=True)
    )
    # auto-fit (--max-model-len -1)
    c.append(
        Case(
            "gpt-oss-20b-peagle__autofit__2gib",
            oss20,
            peagle20,
            2,
            -1,
            derived_max_model_len=131072,
        )
    )
    c.append(
        Case(
            "gemma-3-27b__autofit__40gib",
            "google/gemma-3-27b-it",
            None,
            40,
            -1,
            derived_max_model_len=131072,
        )
    )
    c.append(
        Case(
            "llama-3.1-8b__autofit__4gib",
            "meta-llama/Meta-Llama-3.1-8B",
            None,
            4,
            -1,
            derived_max_model_len=131072,
        )
    )
    # scheduler knobs
    c.append(
        Case(
            "gpt-oss-20b__sync-sched__40gib",
            oss20,
            None,
            40,
            131072,
            async_scheduling=False,
        )
    )
    c.append(
        Case(
            "gpt-oss-20b__override-10000__40gib",
            oss20,
            None,
            40,
            131072,
            num_gpu_blocks_override=10000,
        )
    )
    # pipeline parallel: the drafter sits on the last stage. In 0.33 the in-flight
    # tokens are max_concurrent_batches x T: pp + 1 with async scheduling on the V2
    # model runner, pp otherwise (P-EAGLE's parallel drafting needs the V1 runner,
    # which refuses PP with async scheduling, so that case runs without it).
    c.append(
        Case(
            "gpt-oss-20b-peagle__pp2__40gib",
            oss20,
            peagle20,
            40,
            131072,
            pp=2,
            async_scheduling=False,
            use_v2_model_runner=False,
        )
    )
    # PP 2 and 3 with an EAGLE-3 drafter on the last stage (async scheduling, V2 runner)
    for pp in (2, 3):
        c.append(Case(f"gpt-oss-20b-eagle3__pp{pp}__40gib", oss20, eagle20, 40, 131072, pp=pp,
                      use_v2_model_runner=True))
    c.append(Case("llama-3.1-8b-eagle3__pp3__2gib", "meta-llama/Meta-Llama-3.1-8B", eagle_llama, 2, 131072, pp=3,
                  use_v2_model_runner=True, inspect_args=("--num-speculative-tokens", "3")))
    c.append(
        Case(
            "gemma-3-27b__pp2__40gib",
            "google/gemma-3-27b-it",
            None,
            40,
            131072,
            pp=2,
            use_v2_model_runner=True,
        )
    )
    # more families: K/V head sizes that differ (MiMo), the V3.2 uniform-type path,
    # fp32 GDN state (Qwen3.5), Mamba2 (Nemotron), tensor parallelism
    c.append(Case("mimo-v2-flash__40gib", "XiaomiMiMo/MiMo-V2-Flash", None, 40, 131072))
    c.append(Case("deepseek-v3.2__40gib", "deepseek-ai/DeepSeek-V3.2", None, 40, 131072))
    # DeepSeek-V4 (0.34.0: block-outermost packed groups), at its own context length (1,048,576)
    c.append(Case("deepseek-v4-flash__40gib", "deepseek-ai/DeepSeek-V4-Flash", None, 40, 1048576))
    c.append(Case("deepseek-v4-pro__40gib", "tests/data/arch_configs/nvidia/DeepSeek-V4-Pro-NVFP4", None, 40, 1048576))
    c.append(Case("deepseek-v4-flash__32k__4gib", "deepseek-ai/DeepSeek-V4-Flash", None, 4, 32768))
    c.append(Case("deepseek-v4-flash__pp2__40gib", "deepseek-ai/DeepSeek-V4-Flash", None, 40, 1048576, pp=2))
    c.append(Case("deepseek-v4-flash__tp2-dcp2__40gib", "deepseek-ai/DeepSeek-V4-Flash", None, 40, 1048576, tp=2, dcp=2))
    # DeepSeek-V4's own MTP layer and its DSpark drafter (stages in the target checkpoint; 5 tokens from
    # dspark_block_size), and data parallelism with and without expert parallelism (one rank's engine)
    v4f, v4p = "deepseek-ai/DeepSeek-V4-Flash", "tests/data/arch_configs/nvidia/DeepSeek-V4-Pro-NVFP4"
    v4ds = "tests/data/arch_configs/deepseek-ai/DeepSeek-V4-Flash-DSpark"
    mtp1 = ("--speculative-method", "mtp", "--num-speculative-tokens", "1")
    c.append(Case("deepseek-v4-flash-mtp1__40gib", v4f, None, 40, 1048576, inspect_args=mtp1))
    c.append(Case("deepseek-v4-flash-mtp3__32k__4gib", v4f, None, 4, 32768,
                  inspect_args=("--speculative-method", "mtp", "--num-speculative-tokens", "3")))
    c.append(Case("deepseek-v4-pro-mtp1__40gib", v4p, None, 40, 1048576, inspect_args=mtp1))
    c.append(Case("deepseek-v4-flash-dspark__40gib", v4ds, None, 40, 1048576,
                  inspect_args=("--speculative-method", "dspark")))
    c.append(Case("deepseek-v4-flash-dspark__32k__4gib", v4ds, None, 4, 32768,
                  inspect_args=("--speculative-method", "dspark")))
    c.append(Case("deepseek-v4-flash-dspark__tp2-dcp2__40gib", v4ds, None, 40, 1048576, tp=2, dcp=2,
                  inspect_args=("--speculative-method", "dspark")))
    c.append(Case("deepseek-v4-pro-dspark__40gib", "tests/data/arch_configs/deepseek-ai/DeepSeek-V4-Pro-DSpark", None,
                  40, 1048576, inspect_args=("--speculative-method", "dspark")))
    c.append(Case("deepseek-v4-flash__dp2__40gib", v4f, None, 40, 1048576, dp=2))
    c.append(Case("deepseek-v4-flash__dp8-ep__40gib", v4f, None, 40, 1048576, dp=8, ep=True))
    c.append(Case("deepseek-v4-flash__tp2-dp4-ep__40gib", v4f, None, 40, 1048576, tp=2, dp=4, ep=True))
    c.append(Case("deepseek-v4-pro__dp8-ep__40gib", v4p, None, 40, 1048576, dp=8, ep=True))
    c.append(Case("deepseek-v4-flash-mtp1__dp8-ep__40gib", v4f, None, 40, 1048576, dp=8, ep=True, inspect_args=mtp1))
    # IndexCache: 57 of GLM-5.3's 78 layers share the preceding indexer's top-k and own no indexer cache
    c.append(Case("glm-5.3-indexshare__40gib", "tests/data/arch_configs/HawkBearPig/GLM-5.3-Int4-Int8Mix-RTN-g64",
                  None, 40, 131072))
    c.append(Case("qwen3.5-27b__40gib", "Qwen/Qwen3.5-27B", None, 40, 131072, mamba=True))
    c.append(Case("nemotron-3-nano__40gib", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", None, 40, 131072,
                  mamba=True))
    c.append(Case("gpt-oss-20b-peagle__tp2__40gib", oss20, peagle20, 40, 131072, tp=2))
    # speculative decoding beyond gpt-oss: MTP on a GDN hybrid (conv state grows by the speculative
    # tokens, the MTP layer joins the full bucket), and EAGLE-3 heads on all-full and all-sliding targets
    c.append(Case("qwen3-next-mtp2__40gib", "Qwen/Qwen3-Next-80B-A3B-Thinking", None, 40, 131072, mamba=True,
                  inspect_args=("--speculative-method", "mtp", "--num-speculative-tokens", "2")))
    c.append(Case("llama-3.1-8b-eagle3__40gib", "meta-llama/Meta-Llama-3.1-8B", eagle_llama, 40, 131072,
                  inspect_args=("--num-speculative-tokens", "3")))
    c.append(Case("mistral-7b-eagle3__40gib", "mistralai/Mistral-7B-v0.1", eagle_llama, 40, 32768,
                  inspect_args=("--num-speculative-tokens", "3")))
    # a speculators-format EAGLE-3 checkpoint served as the model (vLLM serves its verifier with it as the
    # drafter, 3 tokens from its speculators_config), and a ModelOpt checkpoint whose hf_quant_config.json
    # makes --kv-cache-dtype auto an fp8_e4m3 cache (Mamba hybrid: the attention page halves)
    c.append(Case("llama-3.1-8b-speculator__40gib", "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3", None, 40,
                  131072))
    c.append(Case("nemotron-3-nano-nvfp4__40gib", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4", None, 40, 131072,
                  mamba=True))
    c += _offloading_cases()
    c += _pipeline_cases()
    return c


def _offloading_cases() -> list[Case]:
    """KV offloading to host memory (``--kv-offloading-size``/``--kv-offloading-backend``, issue 36): the
    connector the release installs and, for the native OffloadingConnector, the host tier its CPU spec
    builds (chunks, padding, bytes, tokens). The runner records nothing for releases without
    ``build_offloading_config``. Dense, sliding-window hybrid, MLA, GDN hybrid (its assertion without
    prefix caching), TP 2, chunking by blocks and by tokens, and the lmcache backend."""
    oss20, llama = "openai/gpt-oss-20b", "meta-llama/Meta-Llama-3.1-8B"

    def off(size: float, backend: str = "native", **extra) -> dict:
        return {"kv_offloading": {"size_gib": size, "backend": backend, "extra_config": extra}}

    return [
        Case("llama-3.1-8b__offload-64__40gib", llama, None, 40, 131072, extra=off(64)),
        Case("llama-3.1-8b__offload-64-lmcache__40gib", llama, None, 40, 131072, extra=off(64, "lmcache")),
        Case("llama-3.1-8b__offload-10.5-chunk4__40gib", llama, None, 40, 131072,
             extra=off(10.5, blocks_per_chunk=4)),
        Case("llama-3.1-8b__offload-64-tokens256__40gib", llama, None, 40, 131072, extra=off(64, block_size=256)),
        Case("llama-3.1-8b__offload-64__tp2__40gib", llama, None, 40, 131072, tp=2, extra=off(64)),
        Case("gpt-oss-20b__offload-64__40gib", oss20, None, 40, 131072, extra=off(64)),
        Case("gpt-oss-20b__offload-64-chunk8__40gib", oss20, None, 40, 131072, extra=off(64, blocks_per_chunk=8)),
        Case("gpt-oss-20b__offload-64-tokens100__40gib", oss20, None, 40, 131072, extra=off(64, block_size=100)),
        Case("gpt-oss-20b__offload-64-lmcache__40gib", oss20, None, 40, 131072, extra=off(64, "lmcache")),
        Case("deepseek-v3__offload-100__40gib", "deepseek-ai/DeepSeek-V3", None, 40, 131072, extra=off(100)),
        Case("gemma-3-27b__offload-64__40gib", "google/gemma-3-27b-it", None, 40, 131072, extra=off(64)),
        Case("qwen3-next__offload-64__40gib", "Qwen/Qwen3-Next-80B-A3B-Thinking", None, 40, 131072, mamba=True,
             extra=off(64)),
    ]


def _pipeline_cases() -> list[Case]:
    """PP 2, 3 and 4 (issue 13): the release picks the model runner itself
    (``model_runner_probe``): V2 with async scheduling (PP + 1 batches in flight) for plain
    models; V1 for P-EAGLE, whose parallel drafting V2 does not support, and V1 turns async
    scheduling off with PP > 1 (vLLM's default when it is not given). The drafter sits on the
    last stage. One failing case keeps each stage's admission numbers."""
    out = []
    plain = (("gemma-3-27b", "google/gemma-3-27b-it"), ("gpt-oss-120b", "openai/gpt-oss-120b"),
             ("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct"))
    for pp in (2, 3, 4):
        for prefix, model in plain:
            if (prefix, pp) == ("gemma-3-27b", 2):
                continue  # gemma-3-27b__pp2__40gib above (runner given)
            out.append(Case(f"{prefix}__pp{pp}__40gib", model, None, 40, 131072, pp=pp,
                            model_runner_probe={"speculative_method": None}))
        if pp > 2:  # gpt-oss-20b-peagle__pp2__40gib above (runner given)
            out.append(Case(f"gpt-oss-20b-peagle__pp{pp}__40gib", "openai/gpt-oss-20b", PEAGLE_20B,
                            40, 131072, pp=pp, async_scheduling=False,
                            model_runner_probe={"speculative_method": "eagle3", "parallel_drafting": True}))
    out.append(Case("gemma-3-27b__pp3__2gib", "google/gemma-3-27b-it", None, 2, 131072, pp=3,
                    model_runner_probe={"speculative_method": None}))
    # decode-context parallelism: each DCP rank keeps 1/dcp of a request's tokens (full and MLA
    # layers); sliding-window layers cannot be sharded ("DCP not support sliding window."). GQA
    # needs TP > the KV heads (8 here), DCP ≤ TP // 8 (vLLM's ModelConfig checks); MLA does not.
    llama = "meta-llama/Llama-3.3-70B-Instruct"
    probe = {"speculative_method": None}
    out.append(Case("llama-3.3-70b__tp16__dcp2__40gib", llama, None, 40, 131072, tp=16, dcp=2,
                    model_runner_probe=probe))
    out.append(Case("llama-3.3-70b__pp2__tp16__dcp2__40gib", llama, None, 40, 131072, pp=2, tp=16, dcp=2,
                    model_runner_probe=probe))
    out.append(Case("deepseek-v3__tp8__dcp8__40gib", "deepseek-ai/DeepSeek-V3", None, 40, 131072, tp=8, dcp=8,
                    model_runner_probe=probe))
    out.append(Case("gpt-oss-120b__tp16__dcp2__40gib", "openai/gpt-oss-120b", None, 40, 131072, tp=16, dcp=2,
                    model_runner_probe=probe))
    return out


# ----------------------------------------------------------------------------- layers


def _hand_layers(model: str) -> tuple[list[dict], list[list[int]]] | None:
    """Hand-written layer lists (cross-check of ``kvplan inspect``; ``--hand-written``)."""

    def layer(i: int, name: str, kind: str, heads: int, hs: int, **kw) -> dict:
        d = {
            "index": i,
            "name": name,
            "source": kw.pop("source", "target"),
            "kind": kind,
            "block_size": 16,
            "num_kv_heads": heads,
            "head_size": hs,
            "head_size_v": hs,
            "dtype": "bfloat16",
            "sliding_window": None,
            "attention_chunk_size": None,
            "cache_dtype_str": None,
            "page_size_padded": None,
            "shapes": None,
            "dtypes": None,
            "mamba_type": None,
            "num_speculative_blocks": None,
        }
        d.update(kw)
        return d

    if model == "openai/gpt-oss-20b":
        layers = [
            layer(
                i,
                f"model.layers.{i}.attn.attn",
                "sliding_window" if i % 2 == 0 else "full_attention",
                8,
                64,
                sliding_window=128 if i % 2 == 0 else None,
            )
            for i in range(24)
        ]
        return layers, [list(range(24))]
    if model == "google/gemma-3-27b-it":
        layers = [
            layer(
                i,
                f"language_model.model.layers.{i}.self_attn.attn",
                "full_attention" if (i + 1) % 6 == 0 else "sliding_window",
                16,
                128,
                sliding_window=None if (i + 1) % 6 == 0 else 1024,
            )
            for i in range(62)
        ]
        return layers, [list(range(62))]
    return None


def scenario_of(case: Case, release: str):
    """The kvplan scenario a case stands for, under ``release``'s rules."""
    from kvplan.options import OPTIONS
    from kvplan.usecases.scenario import Scenario

    extra, args = {}, list(case.inspect_args)
    while args:
        flag, value = args.pop(0), args.pop(0)
        extra[find_option(flag).name] = value
    runner = None if case.use_v2_model_runner is None else ("v2" if case.use_v2_model_runner else "v1")
    # The P-EAGLE cases stand for the amazon model card's line, which sets
    # speculative_config.parallel_drafting; 0.34.0 refuses that with eagle3, so there it is not given.
    from kvplan.engines.vllm import get_era

    opt_in = get_era(f"vllm=={release}").parallel_drafting_option == "opt_in"
    parallel = True if case.drafter == PEAGLE_20B and opt_in else None
    return Scenario(
        model=case.model, drafter=case.drafter, kv_cache_memory=int(case.memory_gib * GiB),
        max_model_len=case.max_model_len, max_num_batched_tokens=T,
        async_scheduling=None if case.async_scheduling else False,  # vLLM's default unless turned off
        disable_hybrid_kv_cache_manager=True if case.disable_hma else None,
        num_gpu_blocks_override=case.num_gpu_blocks_override, tensor_parallel_size=case.tp,
        pipeline_parallel_size=case.pp, decode_context_parallel_size=case.dcp, model_runner=runner,
        data_parallel_size=case.dp, enable_expert_parallel=case.ep,
        policy=f"vllm=={release}", parallel_drafting=parallel, **{k: OPTIONS[k].parse(v) for k, v in extra.items()},
    )


_LAYOUTS: dict = {}


def layout_of(scenario, hand_written: bool = False):
    """kvplan's layout for a scenario (cached by model and serving options); with
    ``hand_written``, the hand-written layer list instead of kvplan's catalog rules."""
    from kvplan.usecases import pipeline

    d = scenario.deployment
    key = (scenario.model, scenario.drafter, pipeline.serving_options(d.serving, d.era), hand_written)
    if key not in _LAYOUTS:
        layout = pipeline.layout_of(d)
        hand = _hand_layers(scenario.model) if scenario.drafter is None and len(layout.ranks) <= 1 else None
        if hand is not None:
            mine = [{"name": ls.name, **spec_to_dict(ls.spec)} for ls in layout.layers]
            if _strip(hand[0]) != _strip(mine):
                print(f"WARNING: kvplan's layers for {scenario.model} differ from the hand-written list",
                      file=sys.stderr)
            if hand_written:
                layout = replace(layout, layers=tuple(LayerSpec(x["name"], spec_from_dict(x), x["source"], x["index"])
                                                      for x in hand[0]))
        elif hand_written:
            layout = None
        _LAYOUTS[key] = layout
    return _LAYOUTS[key]


def make_runner_case(case: Case, release: str, hand_written: bool = False) -> dict | None:
    """kvplan's simulation of ``case`` under ``release``, as the runner case (the shared builder)."""
    from kvplan.usecases.pipeline import engine_stage

    s = scenario_of(case, release)
    if case.use_v2_model_runner is False and s.era.default_model_runner == "v2_only":
        # 0.34.0 refuses VLLM_USE_V2_MODEL_RUNNER=0 at start-up (platforms/interface.py validate_environ),
        # whatever else the case would fail on first: no planning functions run, so no golden
        print(f"  {case.name}: skipped for {release} (the V1 model runner was removed)", file=sys.stderr)
        return None
    layout = layout_of(s, hand_written)
    if layout is None:
        return None
    if any(ls.spec.kind == "sliding_window_mla" for ls in layout.layers) and not s.era.packed_kv_groups:
        # DeepSeek-V4's specs as kvplan builds them are 0.34.0's (SlidingWindowMLASpec, tokens_per_state)
        print(f"  {case.name}: skipped for {release} (DeepSeek-V4 is checked on 0.34.0 only)", file=sys.stderr)
        return None
    d = s.deployment
    plan = engine_stage(layout, d.scheduler, d.serving, d.policy_era, kv_bytes=s.kv_cache_memory,
                        max_model_len=s.max_model_len)
    if plan.failure is not None and plan.failure.stage == "config":
        # vLLM refuses it at config time (e.g. the V1 runner pinned on 0.34, which removed it):
        # its planning functions never run, so there is no golden to make
        print(f"  {case.name}: skipped for {release} (config: {plan.failure.message})", file=sys.stderr)
        return None
    out = runner_case(plan, case.name, model=case.model, drafter=case.drafter)
    if case.dp != 1 or case.ep:  # one DP rank's engine: kvplan's per-engine plan does not read them
        out.update(data_parallel_size=case.dp, enable_expert_parallel=case.ep)
    if hand_written:
        out["layer_source"] = "hand-written"
    out.update(case.extra)
    return out


def release_python(release: str) -> tuple[Path, dict] | None:
    """The interpreter (and environment) that runs ``release``: its own venv under VENVS, else
    the shared base venv with the release's unpacked sources first on PYTHONPATH."""
    own = VENVS / f"vllm-{release}" / "bin" / "python"
    if own.exists():
        return own, dict(os.environ)
    tree = RELEASE_SRC / release
    base = RELEASE_BASE / "bin" / "python"
    if (tree / ".done").exists() and base.exists():
        return base, {**os.environ, "PYTHONPATH": str(tree)}
    return None


def run_release(release: str, cases: list[dict], hooks: list[dict] | None = None):
    """The runner's results for ``cases``; with ``hooks``, ``(results, hook_results)`` from
    the same process (one vLLM import per release)."""
    found = release_python(release)
    if found is None:
        raise SystemExit(f"no environment for vllm {release}: run scripts/golden/release_env.sh {release}")
    py, env = found
    proc = subprocess.run(
        [str(py), str(RUNNER)],
        input=json.dumps({"cases": cases, "hooks": hooks} if hooks is not None else cases),
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"runner failed for vllm {release}:\n{proc.stderr[-4000:]}")
    out = json.loads(proc.stdout)
    return (out["results"], out["hooks"]) if hooks is not None else out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--releases", nargs="*", default=None)
    ap.add_argument("--only", default=None,
                    help="only cases whose name contains this (--architectures: a comma-separated list of parts)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument(
        "--hand-written",
        action="store_true",
        help="use hand-written layers for gpt-oss-20b / gemma-3-27b (not kvplan's catalog rules)",
    )
    ap.add_argument("--out", default=str(OUT_DIR))
    ap.add_argument("--hooks", action="store_true",
                    help="write tests/golden/hooks/<release>.json (Mamba mode, Nemotron-H ssm dtype) instead")
    ap.add_argument("--architectures", action="store_true",
                    help="build every registered architecture on the meta device (tests/golden/architectures/)")
    ap.add_argument("--jobs", type=int, default=2, help="with --architectures: runner processes")
    ap.add_argument("--kv-cache-dtype", default=None,
                    help="with --architectures: build with vLLM's --kv-cache-dtype (tests/golden/architectures/"
                         "<release>-kv-<dtype>/)")
    ap.add_argument("--parameters", action="store_true",
                    help="with --architectures: also record every parameter of the constructed class (name, shape, "
                         "dtype; unquantized: the harness drops quantization_config) into tests/golden/architectures/"
                         "<release>-params/")
    ap.add_argument("--exact", action="store_true",
                    help="with --architectures: --only names whole architectures (comma-separated), not parts")
    ap.add_argument("--built-in", default=None, metavar="DIR",
                    help="with --architectures: only those built in tests/golden/architectures/DIR (e.g. 0.34.0) "
                         "and not yet in the output folder (a long run resumed in chunks)")
    ap.add_argument("--limit", type=int, default=None, help="with --built-in: at most this many architectures")
    ap.add_argument("--drafter-variants", action="store_true",
                    help="build the speculative heads of SPEC_VARIANTS (more targets per head architecture) into "
                         "tests/golden/architectures/<release>-drafters/")
    ap.add_argument("--defaults", action="store_true",
                    help="write tests/golden/defaults/<release>.json: the engine config and block size vLLM resolves "
                         "with options unset (and --block-size set), per model and GPU class")
    ap.add_argument("--kv-dtypes", action="store_true",
                    help="write tests/golden/kv_dtypes/<release>.json: every --kv-cache-dtype of the release on a dense, "
                         "an MLA and a hybrid model (backend, spec, page size, num_blocks at 40 GiB)")
    ap.add_argument("--weights", action="store_true",
                    help="write tests/golden/quant_weights/<release>.json: quantized linear layers' bytes as the release "
                         "allocates and keeps them, per card capability (scripts/golden/quant_weights.py)")
    ap.add_argument("--moe", action="store_true",
                    help="with --weights: quantized FusedMoE layers instead, into tests/golden/quant_weights/moe/")
    ap.add_argument("--triton-kernels", action="store_true",
                    help="with --weights --moe: MXFP4 experts at SM 9.0 with the release's vendored triton_kernels "
                         "importable, into tests/golden/quant_weights/moe/triton_kernels/ (TRITON_KERNELS_RELEASES)")
    ap.add_argument("--models", action="store_true",
                    help="with --weights: whole models per tensor-parallel rank (WEIGHTS_MODELS at TP 1/2/4), into "
                         "tests/golden/quant_weights/models/<release>/")
    args = ap.parse_args()
    if args.weights:
        if args.models:
            for release in args.releases or list(WEIGHTS_MODEL_RELEASES):
                for path in make_model_weights(release):
                    print(f"  {path.relative_to(REPO)}", file=sys.stderr)
            return
        if args.moe and args.triton_kernels:
            for release in args.releases or list(TRITON_KERNELS_RELEASES):
                print(f"  {make_weights(release, moe=True, triton_kernels=True).relative_to(REPO)}", file=sys.stderr)
            return
        if args.moe:
            for release in args.releases or list(WEIGHTS_RELEASES):
                print(f"  {make_weights(release, only=args.only, moe=True).relative_to(REPO)}", file=sys.stderr)
            return
        for release in args.releases or list(WEIGHTS_RELEASES):
            print(f"  {make_weights(release, only=args.only).relative_to(REPO)}", file=sys.stderr)
        return
    if args.kv_dtypes:
        for release in args.releases or ["0.34.0"]:
            print(f"  {make_kv_dtypes(release, only=args.only).relative_to(REPO)}", file=sys.stderr)
        return
    if args.drafter_variants:
        for release in args.releases or ["0.34.0"]:
            make_drafter_variants(release)
        return
    if args.architectures:
        for release in args.releases or ["0.34.0"]:
            only, exact = args.only, args.exact
            if args.built_in:
                only, exact = built_todo(release, args.built_in, kv_cache_dtype=args.kv_cache_dtype, limit=args.limit), True
                if not only:
                    print(f"  nothing left: every architecture built in {args.built_in} has a golden", file=sys.stderr)
                    continue
            make_architectures(release, only=only, jobs=args.jobs, kv_cache_dtype=args.kv_cache_dtype, exact=exact,
                               parameters=args.parameters)
        return
    if args.defaults:
        for release in args.releases or [r for r in RELEASES if release_python(r) is not None]:
            print(f"  {make_defaults(release).relative_to(REPO)}", file=sys.stderr)
        return
    if args.hooks:
        for release in args.releases or [r for r in RELEASES if release_python(r) is not None]:
            print(f"  {make_hooks(release).relative_to(REPO)}", file=sys.stderr)
        return

    cases = [c for c in _cases() if not args.only or args.only in c.name]
    if args.list:
        for c in cases:
            print(c.name)
        return
    releases = args.releases or [r for r in RELEASES if release_python(r) is not None]
    if not releases:
        raise SystemExit(
            f"no vLLM venvs under {VENVS}; run scripts/golden/setup_venvs.sh"
        )

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    for release in releases:
        batch = [x for x in (make_runner_case(c, release, args.hand_written) for c in cases) if x is not None]
        print(f"vllm {release}: {len(batch)} cases", file=sys.stderr)
        try:
            results, hook_results = run_release(release, batch, hook_cases())
            write_hooks(release, hook_results)
        except RuntimeError as e:  # one release failing does not stop the others
            print(str(e), file=sys.stderr)
            failed.append(release)
            continue
        for case_in, result in zip(batch, results):
            if (result.get("error") or {}).get("type") == "RunnerSkip":
                print(
                    f"  {case_in['case']}: skipped ({result['error']['message']})",
                    file=sys.stderr,
                )
                continue
            path = out_dir / f"{case_in['case']}__{release}.json"
            doc = {
                "vllm_version": result["vllm_version"],
                "case": case_in,
                "result": result,
            }
            path.write_text(
                json.dumps(doc, sort_keys=True, indent=None, separators=(",", ":"))
                + "\n"
            )
            err = result.get("error")
            status = (
                f"{err['type']}" if err else f"num_blocks={result.get('num_blocks')}"
            )
            print(
                f"  {path.relative_to(REPO) if path.is_relative_to(REPO) else path}: {status}",
                file=sys.stderr,
            )
    if failed:
        raise SystemExit(f"runner failed for: {', '.join(failed)}")


HOOKS_DIR = OUT_DIR / "hooks"


def hook_cases() -> list[dict]:
    """Config-hook cases (``vllm_runner.py --config-hooks``): the Mamba cache mode each
    release resolves (Qwen3-Next: no Mamba prefix caching support; Nemotron-H: supports it),
    and Nemotron-H's ssm state dtype with and without ``mamba_ssm_cache_dtype`` in config.json."""
    cases = []
    for arch, supports in (("Qwen3NextForCausalLM", False), ("NemotronHForCausalLM", True)):
        for prefix in (False, True):
            for mode in ("none", "align", "all"):
                cases.append({"case": f"mamba_mode:{arch}:prefix={prefix}:{mode}", "kind": "mamba_mode",
                              "architecture": arch, "supports_mamba_prefix_caching": supports,
                              "enable_prefix_caching": prefix, "mamba_cache_mode": mode})
    # the NIXL connector's TransferTopology on prefill/decode pairs (decode local): TP and block sizes that
    # divide, and those that do not (kvplan.engines.vllm.disagg)
    for d_tp, p_tp, d_block, p_block, heads, mla in ((1, 1, 64, 64, 8, False), (1, 1, 64, 128, 8, False),
                                                     (1, 1, 128, 64, 8, False), (4, 2, 64, 64, 8, False),
                                                     (2, 4, 64, 64, 8, False), (3, 2, 64, 64, 8, False),
                                                     (2, 3, 64, 64, 8, False), (8, 1, 64, 64, 1, True),
                                                     (16, 16, 16, 48, 8, False)):
        cases.append({"case": f"nixl_topology:dtp{d_tp}:ptp{p_tp}:db{d_block}:pb{p_block}", "kind": "nixl_topology",
                      "local_tp": d_tp, "remote_tp": p_tp, "local_block": d_block, "remote_block": p_block,
                      "total_num_kv_heads": heads, "is_mla": mla})
    base = json.loads((REPO / "configs/nvidia/Nemotron-H-56B-Base-8K/config.json").read_text())
    base.pop("mamba_ssm_cache_dtype", None)
    for value in (None, "float32", "bfloat16"):
        cfg = dict(base) if value is None else {**base, "mamba_ssm_cache_dtype": value}
        cases.append({"case": f"nemotron_h_ssm:{value or 'unset'}", "kind": "nemotron_h_ssm", "hf_config": cfg})
    return cases


def run_runner_mode(release: str, mode: str, cases: list[dict]) -> list[dict]:
    """``vllm_runner.py <mode>`` (``--config-hooks``, ``--engine-defaults``) on ``cases`` in ``release``'s
    environment, one process."""
    found = release_python(release)
    if found is None:
        raise SystemExit(f"no environment for vllm {release}: run scripts/golden/release_env.sh {release}")
    py, env = found
    proc = subprocess.run([str(py), str(RUNNER), mode], input=json.dumps(cases), capture_output=True,
                          text=True, cwd=REPO, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"runner {mode} failed for vllm {release}:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


def make_hooks(release: str) -> Path:
    return write_hooks(release, run_runner_mode(release, "--config-hooks", hook_cases()))


def write_hooks(release: str, results: list[dict]) -> Path:
    HOOKS_DIR.mkdir(parents=True, exist_ok=True)
    path = HOOKS_DIR / f"{release}.json"
    doc = {"vllm_version": release,
           "cases": [{"case": c, "result": r} for c, r in zip(hook_cases(), results, strict=True)]}
    path.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    return path


ARCH_DIR = OUT_DIR / "architectures"
ARCH_RUNNER = REPO / "kvplan" / "verify" / "arch_runner.py"
ARCH_BASE = Path(os.environ.get("ARCH_BASE", REPO / ".golden-venvs" / "rel-base5-arch"))
SHARED_CONFIGS = Path(os.environ.get("SHARED_CONFIGS", REPO.parent / "shared" / "configs"))
ARCH_CONFIGS = REPO / "tests" / "data" / "arch_configs"  # public copies for classes without usable defaults (README.md)
CONFIG_ROOTS = ((REPO / "configs", "kvplan catalog configs/"), (ARCH_CONFIGS, "public copy tests/data/arch_configs/"))


def genuine_configs() -> dict[str, tuple[dict, str]]:
    """``architectures[0]`` -> (config, where): the catalog's configs first, then the public copies in
    ``tests/data/arch_configs/``, then the shared folder's (the first id in sorted order wins)."""
    out: dict[str, tuple[dict, str]] = {}
    for root, label in (*CONFIG_ROOTS, (SHARED_CONFIGS, "shared configs ")):
        for p in sorted(root.glob("*/*/config.json")):
            try:
                cfg = json.loads(p.read_text())
            except ValueError:
                continue
            archs = cfg.get("architectures") or []
            if archs and isinstance(archs[0], str) and archs[0] not in out:
                how = f"genuine: {label}{p.parent.parent.name}/{p.parent.name}"
                read_as = p.with_name("read_as.json")
                if read_as.exists():  # the config class is remote code: its transformers base class reads it
                    ra = json.loads(read_as.read_text())
                    how += f"; read as model_type {ra['model_type']!r} ({ra['why']})"
                    cfg = {**cfg, "__read_as__": ra}
                out[archs[0]] = (cfg, how)
    return out


# Speculative heads built beside a target (arch_runner: the drafter as the GPU worker's speculator loads it):
# architecture -> (target config dir, drafter config dir or None, vLLM's --speculative-config). Dirs are
# ids under configs/ or tests/data/arch_configs/ (the first that has it).
SPEC_CASES = {
    "Eagle3LlamaForCausalLM": ("meta-llama/Llama-3.1-8B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                               {"method": "eagle3", "num_speculative_tokens": 3}),
    "LlamaForCausalLMEagle3": ("openai/gpt-oss-20b", "sgl-project/SpecForge--gpt-oss-20B-eagle3",
                               {"method": "eagle3", "num_speculative_tokens": 3}),
    "DeepSeekMTPModel": ("deepseek-ai/DeepSeek-V3", None, {"method": "mtp", "num_speculative_tokens": 1}),
    "DeepseekV32MTPModel": ("deepseek-ai/DeepSeek-V3.2", None, {"method": "mtp", "num_speculative_tokens": 1}),
    "MiMoMTPModel": ("XiaomiMiMo/MiMo-7B-Base", None, {"method": "mtp", "num_speculative_tokens": 1}),
    "Qwen3_5MTP": ("Qwen/Qwen3.5-27B", None, {"method": "mtp", "num_speculative_tokens": 1}),
    "Qwen3_5MoeMTP": ("Qwen/Qwen3.5-35B-A3B", None, {"method": "mtp", "num_speculative_tokens": 1}),
    "Qwen3NextMTP": ("Qwen/Qwen3-Next-80B-A3B-Instruct", None, {"method": "mtp", "num_speculative_tokens": 1}),
    # DeepSeek-V4's own MTP layer (hf_config_override: deepseek_v4 -> DeepSeekV4MTPModel) and its DSpark drafter,
    # whose stages ship inside the target checkpoint (DSparkSpeculatorConfig.default_model: the target itself;
    # num_speculative_tokens defaults to dspark_block_size)
    "DeepSeekV4MTPModel": ("deepseek-ai/DeepSeek-V4-Flash", None, {"method": "mtp", "num_speculative_tokens": 1}),
    "DSparkDraftModel": ("deepseek-ai/DeepSeek-V4-Flash-DSpark", None, {"method": "dspark"}),
}


# More targets for a speculative head than SPEC_CASES' one per architecture (--drafter-variants): each built the same
# way, written to tests/golden/architectures/<release>-drafters/<name>.json
SPEC_VARIANTS = {
    "deepseek-v4-pro-mtp": ("DeepSeekV4MTPModel", "nvidia/DeepSeek-V4-Pro-NVFP4", None,
                            {"method": "mtp", "num_speculative_tokens": 1}),
    "deepseek-v4-pro-dspark": ("DSparkDraftModel", "deepseek-ai/DeepSeek-V4-Pro-DSpark", None, {"method": "dspark"}),
}


def make_drafter_variants(release: str) -> None:
    tree, py = RELEASE_SRC / release, ARCH_BASE / "bin" / "python"
    if not py.exists() or not tree.exists():
        raise SystemExit(f"need {py} and {tree} (see --architectures in this script's docstring)")
    items = []
    for name, (arch, target, drafter, spec) in SPEC_VARIANTS.items():
        saved = SPEC_CASES.get(arch)
        SPEC_CASES[arch] = (target, drafter, spec)
        try:
            items.append({**spec_item(arch), "variant": name})
        finally:
            SPEC_CASES[arch] = saved
    with tempfile.TemporaryDirectory(prefix="archgold_") as tmp:
        (Path(tmp) / "in.json").write_text(json.dumps(items))
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run([str(py), str(ARCH_RUNNER), str(Path(tmp) / "in.json"), str(Path(tmp) / "out.json")], env=env,
                       cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out_dir = ARCH_DIR / f"{release}-drafters"
        out_dir.mkdir(parents=True, exist_ok=True)
        for item, rec in zip(items, json.loads((Path(tmp) / "out.json").read_text()), strict=True):
            (out_dir / f"{item['variant']}.json").write_text(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
            print(f"  {out_dir.relative_to(REPO)}/{item['variant']}.json: {rec['status']}", file=sys.stderr)


def _config_dir(model_id: str) -> tuple[Path, str]:
    for root, label in CONFIG_ROOTS:
        if (root / model_id / "config.json").exists():
            return root / model_id, f"genuine: {label}{model_id}"
    raise SystemExit(f"SPEC_CASES names {model_id}, which neither configs/ nor {ARCH_CONFIGS} holds")


def spec_item(arch: str) -> dict:
    """The runner's item for a speculative head of ``SPEC_CASES``."""
    target, drafter, spec = SPEC_CASES[arch]
    tdir, thow = _config_dir(target)
    item = {"architecture": arch, "registry": "speculative", "config": None, "speculative_config": spec,
            "target_config": json.loads((tdir / "config.json").read_text()), "read_as": None}
    if (tdir / "read_as.json").exists():
        item["read_as"] = json.loads((tdir / "read_as.json").read_text())
    how = f"target {thow}"
    if drafter:
        ddir, dhow = _config_dir(drafter)
        item["config"] = json.loads((ddir / "config.json").read_text())
        how += f"; drafter {dhow}"
    item["config_source"] = f"{how}; --speculative-config {json.dumps(spec, sort_keys=True)}"
    return item


def built_todo(release: str, built_in: str, kv_cache_dtype: str | None, limit: int | None) -> str:
    """The architectures ``tests/golden/architectures/<built_in>/`` records as built and the output folder
    does not hold yet (comma-separated, for ``--only --exact``)."""
    src = ARCH_DIR / built_in
    if not src.is_dir():
        raise SystemExit(f"--built-in {built_in}: no folder {src.relative_to(REPO)}; name one under tests/golden/architectures/")
    out_dir = ARCH_DIR / (f"{release}-kv-{kv_cache_dtype}" if kv_cache_dtype else release)
    have = {p.stem for p in out_dir.glob("*.json")} if out_dir != src else set()
    todo = sorted(p.stem for p in src.glob("*.json")
                  if p.stem not in have and json.loads(p.read_text())["status"] == "built")
    return ",".join(todo[:limit] if limit else todo)


def make_architectures(release: str, only: str | None = None, jobs: int = 2, kv_cache_dtype: str | None = None,
                       exact: bool = False, parameters: bool = False) -> None:
    tree = RELEASE_SRC / release
    py = ARCH_BASE / "bin" / "python"
    if not py.exists() or not tree.exists():
        raise SystemExit(f"need {py} and {tree} (see --architectures in this script's docstring)")
    # ARCH_EXTRA_PATH: a `pip install --no-deps --target` folder searched after the release's tree
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(tree), os.environ.get("ARCH_EXTRA_PATH")) if p)}
    if kv_cache_dtype:
        env["ARCH_KV_CACHE_DTYPE"] = kv_cache_dtype
    if parameters:  # every parameter the constructed class holds: name, shape, dtype (the weight rules' check)
        env["ARCH_PARAMETERS"] = "1"
    listed = json.loads(subprocess.run([str(py), str(ARCH_RUNNER), "--list"], capture_output=True, text=True,
                                       env=env, cwd=REPO, check=True).stdout)
    removed = listed.pop("removed")
    if not only and not kv_cache_dtype and not parameters:  # the registry itself, as kvplan's refusals name it (kvplan/model/vllm_registry.json)
        reg = {"release": release, "source": "vllm/model_executor/models/registry.py", **listed, "removed": removed}
        (REPO / "kvplan" / "model" / "vllm_registry.json").write_text(json.dumps(reg, sort_keys=True, indent=0) + "\n")
    genuine = genuine_configs()
    items = []
    for registry, archs in listed.items():
        for a in archs:
            if only and not (a in only.split(",") if exact else any(o in a for o in only.split(","))):
                continue
            if a in SPEC_CASES:
                items.append(spec_item(a))
                continue
            cfg, how = genuine.get(a, (None, None))
            read_as = cfg.pop("__read_as__", None) if cfg else None
            items.append({"architecture": a, "registry": registry, "config": cfg, "config_source": how,
                          "read_as": read_as})
    print(f"vllm {release}: {len(items)} architectures, {jobs} processes", file=sys.stderr)
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="archgold_"))
    procs = []
    for j in range(jobs):
        chunk = items[j::jobs]
        (tmp / f"in{j}.json").write_text(json.dumps(chunk))
        procs.append(subprocess.Popen([str(py), str(ARCH_RUNNER), str(tmp / f"in{j}.json"), str(tmp / f"out{j}.json")],
                                      env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                                      stderr=open(tmp / f"log{j}.txt", "w")))
    for p in procs:
        p.wait()
    out_dir = ARCH_DIR / (f"{release}-kv-{kv_cache_dtype}" if kv_cache_dtype else
                          f"{release}-params" if parameters else release)
    out_dir.mkdir(parents=True, exist_ok=True)
    done = set()
    for j in range(jobs):
        f = tmp / f"out{j}.json"
        for rec in json.loads(f.read_text()) if f.exists() else []:
            done.add(rec["architecture"])
            (out_dir / f"{rec['architecture']}.json").write_text(
                json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
    for it in items:  # a runner process that died (a crash in native code) loses the rest of its chunk
        if it["architecture"] not in done:
            rec = {"architecture": it["architecture"], "registry": it["registry"], "status": "failed",
                   "reason": "runner process died while building it", "config_source": it["config_source"],
                   "config": it["config"], "layers": [], "spec_table": [], "kv_sharing": {}, "vllm_version": release}
            (out_dir / f"{it['architecture']}.json").write_text(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
    counts: dict[str, int] = {}
    for p in out_dir.glob("*.json"):
        st = json.loads(p.read_text())["status"]
        counts[st] = counts.get(st, 0) + 1
    if os.environ.get("ARCH_KEEP_LOGS") == "1":
        print(f"  {out_dir.relative_to(REPO)}: {counts} (logs in {tmp})", file=sys.stderr)
    else:  # every reason is in the goldens; ARCH_KEEP_LOGS=1 keeps the runners' logs
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"  {out_dir.relative_to(REPO)}: {counts}", file=sys.stderr)


DEFAULTS_DIR = OUT_DIR / "defaults"
# Representative models per GPU class for the options-unset golden (config directories under configs/):
# dense GQA, sliding window, Mamba2 hybrids (gpt-oss is left out: its import needs compressed_tensors,
# absent from the base environment).
DEFAULTS_MODELS = ("meta-llama/Meta-Llama-3.1-8B", "mistralai/Mistral-7B-v0.1", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
                   "nvidia/Nemotron-H-56B-Base-8K")
DEFAULTS_GPUS = ("A100-80GB", "L4-24GB", "H100-80GB")  # Ampere (two memory tiers) and Hopper: FlashInfer
# (Blackwell's first choice) does not import on CPU, so SM 10.x/12.x are not probed
DEFAULTS_BACKENDS = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "FLASH_ATTN_MLA", "FLASHMLA",
                     "FLASHMLA_SPARSE", "CUTLASS_MLA", "FLASHINFER_MLA", "TRITON_MLA", "ROCM_ATTN", "ROCM_AITER_FA",
                     "ROCM_AITER_UNIFIED_ATTN", "ROCM_AITER_MLA")


def defaults_cases() -> list[dict]:
    """Engine-defaults cases (``vllm_runner.py --engine-defaults``): every model x GPU with every option
    unset, and --block-size set (a user's size the hybrid alignment still overrides)."""
    from kvplan.budget.hardware import get_gpu

    cases: list[dict] = [{"case": "backends", "kind": "block_size_backends", "backends": list(DEFAULTS_BACKENDS),
                          "priorities": [[False, [8, 0]], [False, [9, 0]], [False, [10, 0]], [False, [12, 0]],
                                         [True, [9, 0]], [True, [10, 0]], [True, [12, 0]]]}]

    def case(model: str, gpu: str, **args) -> dict:
        preset = get_gpu(gpu)
        name = f"{model}@{gpu}" + "".join(f":{k}={v}" for k, v in args.items())
        return {"case": name, "kind": "engine_defaults", "model": model, "gpu": gpu,
                "model_dir": str(REPO / "configs" / model), "capability": list(preset.compute_capability),
                "total_memory": preset.memory_bytes, "device_name": preset.name, "args": args}

    for gpu in DEFAULTS_GPUS:
        cases += [case(m, gpu) for m in DEFAULTS_MODELS]
    cases.append(case("meta-llama/Meta-Llama-3.1-8B", "H100-80GB", block_size=16))
    cases.append(case("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "H100-80GB", block_size=16))
    return cases


def without_machine_paths(text: str, release: str) -> str:
    """The release's source tree and the repository named by role, not by this machine's paths (the
    ImportError messages of backends that do not import on CPU carry them)."""
    found = release_python(release)
    tree = found[1].get("PYTHONPATH") if found else None
    for path, name in ((tree, f"<vllm-{release}>"), (str(REPO), "<repo>")):
        if path:
            text = text.replace(path, name)
    return text


def make_defaults(release: str) -> Path:
    cases = defaults_cases()
    results = run_runner_mode(release, "--engine-defaults", cases)
    for c, r in zip(cases, results, strict=True):
        # the block-size lines: update_block_size_for_backend's, and before 0.20 the hybrid alignment's in
        # HybridAttentionMambaModelConfig (vllm/model_executor/models/config.py)
        r["logs"] = [x for x in r.get("logs", []) if x["logger"] == "vllm.platforms.interface" or (
            x["logger"] == "vllm.model_executor.models.config" and x["message"].startswith(("Setting ", "Padding mamba")))]
        c.pop("model_dir", None)  # machine-specific
    DEFAULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = DEFAULTS_DIR / f"{release}.json"
    doc = {"vllm_version": release, "cases": [{"case": c, "result": r} for c, r in zip(cases, results)]}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    path.write_text(without_machine_paths(text, release) + "\n")
    for c, r in zip(cases, results):
        err = r.get("error")
        print(f"  {c['case']}: {err['type'] + ': ' + err['message'][:100] if err else r.get('block_size')}",
              file=sys.stderr)
    return path


KV_DTYPES_DIR = OUT_DIR / "kv_dtypes"
# A dense, an MLA and a hybrid (sliding window) model, each as kvplan's catalog config (issue #35)
KV_DTYPES_MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-V3", "google/gemma-3-1b-it")
KV_DTYPES_MEMORY = 40 << 30
# --kv-cache-dtype-skip-layers cases: layer indices, and the attention-type name vLLM also reads
KV_DTYPES_SKIP = (("meta-llama/Llama-3.1-8B-Instruct", "nvfp4", ["0", "31"]),
                  ("meta-llama/Llama-3.1-8B-Instruct", "fp8", ["0"]),
                  ("google/gemma-3-1b-it", "fp8", ["sliding_window"]),
                  ("google/gemma-3-1b-it", "nvfp4", ["sliding_window"]))


def kv_dtypes_cases(release: str) -> list[dict]:
    """``kv_dtype`` runner cases: every value of the release's ``CacheDType``
    (``kvplan/model/cache_dtypes.json``) on each model of ``KV_DTYPES_MODELS``, on an H100, plus the
    skip-layer cases. The layer list (kind, window, name) is kvplan's, as ``kvplan inspect`` gives it."""
    from kvplan.budget.hardware import get_gpu
    from kvplan.model.cache_dtypes import accepted_cache_dtypes
    from kvplan.model.layout import build_model_layout
    from kvplan.model.options import ServingOptions

    preset = get_gpu("H100-80GB")

    def layers_of(model: str) -> list:
        layout = build_model_layout(model, options=ServingOptions())
        return [["mla" if l.spec.kind == "mla" else "attention", getattr(l.spec, "sliding_window", None), l.name]
                for l in layout.layers if l.source == "target"]

    def model_dir(model: str) -> str:
        """The catalog config; a weight-quantized one (DeepSeek-V3's fp8 blocks) without its
        quantization_config, whose kernels need CUDA at config time (it names no KV cache scheme)."""
        path = REPO / "configs" / model
        cfg = json.loads((path / "config.json").read_text())
        quant = cfg.get("quantization_config")
        if not isinstance(quant, dict) or quant.get("kv_cache_scheme") or quant.get("kv_cache_quant_algo"):
            return str(path)
        out = Path(tempfile.mkdtemp(prefix="kvd-")) / model.replace("/", "--")
        out.mkdir(parents=True)
        cfg.pop("quantization_config")
        (out / "config.json").write_text(json.dumps(cfg))
        return str(out)

    def case(model: str, dtype: str, layers: list, **args) -> dict:
        name = f"{model}@H100-80GB:kv_cache_dtype={dtype}" + "".join(f":{k}={v}" for k, v in args.items())
        return {"case": name, "kind": "kv_dtype", "model": model, "gpu": "H100-80GB",
                "model_dir": dirs[model], "capability": list(preset.compute_capability),
                "total_memory": preset.memory_bytes, "device_name": preset.name,
                "args": {"kv_cache_dtype": dtype, **args}, "available_memory_bytes": KV_DTYPES_MEMORY,
                "layers": layers, "quantization_config_dropped": dirs[model] != str(REPO / "configs" / model)}

    dirs = {m: model_dir(m) for m in {*KV_DTYPES_MODELS, *(m for m, _, _ in KV_DTYPES_SKIP)}}
    cases = []
    for model in KV_DTYPES_MODELS:
        layers = layers_of(model)
        cases += [case(model, d, layers) for d in accepted_cache_dtypes(release)]
    for model, dtype, skip in KV_DTYPES_SKIP:
        cases.append(case(model, dtype, layers_of(model), kv_cache_dtype_skip_layers=skip))
    return cases


def make_kv_dtypes(release: str, only: str | None = None) -> Path:
    """``tests/golden/kv_dtypes/<release>.json`` from ``vllm_runner.py --engine-defaults`` (kind ``kv_dtype``).
    FlashInfer's module must import on CPU for its validation to run: ``KV_DTYPES_EXTRA_PATH`` names a
    ``pip install --no-deps --target`` folder with ``flashinfer-python`` and ``nvidia-ml-py`` (README)."""
    cases = [c for c in kv_dtypes_cases(release) if not only or only in c["case"]]
    extra = os.environ.get("KV_DTYPES_EXTRA_PATH")
    found = release_python(release)
    if found is None:
        raise SystemExit(f"no environment for vllm {release}: run scripts/golden/release_env.sh {release}")
    py, env = found
    if extra:
        env = {**env, "PYTHONPATH": os.pathsep.join(p for p in (env.get("PYTHONPATH"), extra) if p)}
    proc = subprocess.run([str(py), str(RUNNER), "--engine-defaults"], input=json.dumps(cases), capture_output=True,
                          text=True, cwd=REPO, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"runner --engine-defaults failed for vllm {release}:\n{proc.stderr[-4000:]}")
    results = json.loads(proc.stdout)
    keep = ("attention_backend", "block_size", "num_blocks", "max_concurrency", "max_model_len", "spec_table",
            "groups", "skip_layers", "skip_page_size_padded", "kv_cache_layout", "error", "vllm_version")
    for c in cases:
        c.pop("model_dir", None)  # machine-specific
        c["layers"] = len(c["layers"])  # kvplan's list, rebuilt by the test
    KV_DTYPES_DIR.mkdir(parents=True, exist_ok=True)
    path = KV_DTYPES_DIR / f"{release}.json"
    doc = {"vllm_version": release, "flashinfer_for_validation": _dist_version(extra, "flashinfer_python"),
           "cases": [{"case": c, "result": {k: r.get(k) for k in keep}} for c, r in zip(cases, results, strict=True)]}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    path.write_text(without_machine_paths(text, release) + "\n")
    for c, r in zip(cases, results):
        err = r.get("error")
        print(f"  {c['case']}: {err['type'] + ': ' + err['message'][:90] if err else (r.get('attention_backend'), r.get('num_blocks'))}",
              file=sys.stderr)
    return path


WEIGHTS_DIR = OUT_DIR / "quant_weights"
WEIGHTS_RUNNER = REPO / "scripts" / "golden" / "quant_weights.py"
WEIGHTS_RELEASES = ("0.11.0", "0.19.0", "0.34.0")
# T4, A100, L40S / RTX 4090, H100, B200, RTX 5090 (compute capabilities)
WEIGHTS_CAPABILITIES = ("7.5", "8.0", "8.9", "9.0", "10.0", "12.0")


# releases whose wheel vendors triton_kernels (vllm/third_party/triton_kernels, 0.12.0+) and whose MXFP4 MoE takes
# the Triton backend on Hopper: the swizzled layouts' padding (kvplan.budget.weights.mxfp4_padding_for)
TRITON_KERNELS_RELEASES = ("0.19.0", "0.29.0", "0.34.0")


# whole models per tensor-parallel rank (quant_weights.py --model-config): the parts kvplan counts beside the experts
WEIGHTS_MODELS = ("openai/gpt-oss-20b", "openai/gpt-oss-120b")
WEIGHTS_MODEL_RELEASES = ("0.19.0",)
WEIGHTS_MODEL_TP = "1,2,4"


def _weights_python(release: str) -> tuple[Path, dict]:
    """The interpreter and environment ``quant_weights.py`` runs in for ``release``: releases from 0.24 on
    ``ARCH_BASE`` (transformers 5 with compressed-tensors, which their quantization registry imports), older ones on
    ``RELEASE_BASE``."""
    found = release_python(release)
    if found is None:
        raise SystemExit(f"no environment for vllm {release}: run scripts/golden/release_env.sh {release}")
    py, env = found
    if tuple(int(x) for x in release.split(".")[:2]) >= (0, 24) and (ARCH_BASE / "bin" / "python").exists():
        py = ARCH_BASE / "bin" / "python"
    return py, env


def make_model_weights(release: str) -> list[Path]:
    """``tests/golden/quant_weights/models/<release>/<model>.json``: every parameter and buffer of one rank of
    each ``WEIGHTS_MODELS`` at TP 1, 2 and 4, as the release constructs the model class (meta device)."""
    py, env = _weights_python(release)
    out_paths = []
    for model in WEIGHTS_MODELS:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.json"
            cmd = [str(py), str(WEIGHTS_RUNNER), str(out), "--capability", "9.0", "--model-config",
                   str(REPO / "configs" / model / "config.json"), "--tp", WEIGHTS_MODEL_TP]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False, env=env)
            if proc.returncode != 0 or not out.exists():
                raise SystemExit(f"quant_weights.py --model-config failed for vllm {release}, {model}:\n"
                                 f"{proc.stderr[-3000:]}")
            doc = json.loads(out.read_text())
        path = WEIGHTS_DIR / "models" / release / f"{model.split('/')[-1]}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        doc["model"] = model
        path.write_text(without_machine_paths(json.dumps(doc, sort_keys=True, separators=(",", ":")), release) + "\n")
        out_paths.append(path)
    return out_paths


def make_weights(release: str, only: str | None = None, moe: bool = False, triton_kernels: bool = False) -> Path:
    """``tests/golden/quant_weights/<release>.json`` (issue 34): ``quant_weights.py`` in the release's environment
    once per capability of ``WEIGHTS_CAPABILITIES``. Releases from 0.24 run on ``ARCH_BASE`` (transformers 5 with
    compressed-tensors, which their quantization registry imports), older ones on ``RELEASE_BASE``."""
    py, env = _weights_python(release)
    by_cc: dict[str, list] = {}
    schemes: dict = {}
    version = release
    for cc in ("9.0",) if triton_kernels else WEIGHTS_CAPABILITIES:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.json"
            cmd = [str(py), str(WEIGHTS_RUNNER), str(out), "--capability", cc] + (["--only", only] if only else []) + (
                ["--moe"] if moe else []) + (["--triton-kernels"] if triton_kernels else [])
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False, env=env)
            if proc.returncode != 0 or not out.exists():
                raise SystemExit(f"quant_weights.py failed for vllm {release} at {cc}:\n{proc.stderr[-3000:]}")
            doc = json.loads(out.read_text())
        version = doc["vllm_version"]
        for c in doc["cases"]:
            schemes[c["scheme"]] = c.pop("config")
        by_cc[cc] = doc["cases"]
        for c in doc["cases"]:
            print(f"  {release} {cc} {c['case']}: {c.get('kernel') or c.get('linear_method')} "
                  f"{c.get('created_bytes')} -> {c.get('kept_bytes')} {c.get('error') or c.get('kept_error') or ''}"[:220],
                  file=sys.stderr)
    folder = WEIGHTS_DIR / "moe" / "triton_kernels" if triton_kernels else WEIGHTS_DIR / "moe" if moe else WEIGHTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{release}.json"
    text = json.dumps({"vllm_version": version, "schemes": schemes, "by_capability": by_cc}, sort_keys=True,
                      separators=(",", ":"))
    path.write_text(without_machine_paths(text, release) + "\n")
    return path


def _dist_version(folder: str | None, name: str) -> str | None:
    if not folder:
        return None
    hits = sorted(Path(folder).glob(f"{name}-*.dist-info"))
    return hits[0].name[len(name) + 1:-len(".dist-info")] if hits else None


def _strip(layers: list[dict]) -> list[dict]:
    return [{k: l.get(k) for k in ("name", *CASE_SPEC_KEYS)} for l in layers]


if __name__ == "__main__":
    main()
