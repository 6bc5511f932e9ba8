#!/usr/bin/env python3
"""Generate golden files from real vLLM releases (CPU only) for kvplan's tests.

Runs in kvplan's own environment. For each case it gets the layer list from
``python -m kvplan inspect MODEL [--drafter D] [-tp N] [-pp N] --format json`` (the
``layers`` list, split per pipeline rank with ``ranks``), turns it into a runner case
(see ``vllm_runner.py`` for the case format), feeds all cases of one release to
``.golden-venvs/vllm-<version>/bin/python scripts/golden/vllm_runner.py`` in one batch,
and writes ``tests/golden/<case>__<version>.json``::

    {"vllm_version": "...", "case": <runner input>, "result": <runner output>}

with sorted keys (stable across runs). Cases are stored in the compact form
(``spec_table`` + ``[name, spec_index, source]`` per layer).

Hybrid-Mamba cases (Qwen3-Next) are aligned HERE, per release, before they reach
vLLM's grouping (that alignment happens at config time in vLLM, from model-level
numbers, reference §7.6/§12.4): releases up to 0.18 run hybrid models with prefix
caching off (Mamba mode "none", kernel alignment 16, Mamba block = max_model_len);
0.33 runs them with prefix caching on (mode "align", alignment lcm(16, 64) for
gated-delta-net, Mamba block = attention block). The aligned numbers are recorded
in the case (``alignment``) so a test can reproduce them.

Usage::

    python scripts/golden/make_goldens.py                     # every release with a venv
    python scripts/golden/make_goldens.py --releases 0.33.0   # one release
    python scripts/golden/make_goldens.py --only gpt-oss-20b  # case names containing this
    python scripts/golden/make_goldens.py --list              # print the cases
    python scripts/golden/make_goldens.py --hand-written      # gpt-oss-20b/gemma-3-27b from
                                                              # hand-written layers (no CLI)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kvplan.specs import SPEC_KEYS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "scripts" / "golden" / "vllm_runner.py"
OUT_DIR = REPO / "tests" / "golden"
VENVS = Path(os.environ.get("GOLDEN_VENVS", REPO / ".golden-venvs"))
# release_env.sh's shared environment: one base venv + each release's unpacked sources
RELEASE_BASE = Path(os.environ.get("RELEASE_BASE", REPO / ".golden-venvs" / "rel-base"))
RELEASE_SRC = Path(os.environ.get("RELEASE_SRC", REPO / ".golden-venvs" / "rel-src"))

from kvplan.engines.vllm.releases import GOLDEN_RELEASES, era_of_release  # noqa: E402

RELEASES = GOLDEN_RELEASES

GiB = 1 << 30
T = 8192  # max_num_batched_tokens (the OpenAI server default on >= 70 GiB GPUs)


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
    inspect_args: tuple[str, ...] = ()
    mamba: bool = False  # needs the per-release hybrid alignment
    use_v2_model_runner: bool | None = None
    model_runner_probe: dict | None = None  # let the release pick the runner (vllm_runner.py)
    extra: dict = field(default_factory=dict)


def _cases() -> list[Case]:
    c: list[Case] = []
    eagle_llama = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    oss20, oss120 = "openai/gpt-oss-20b", "openai/gpt-oss-120b"
    eagle20 = "sgl-project/SpecForge--gpt-oss-20B-eagle3"
    peagle20 = "amazon/GPT-OSS-20B-P-EAGLE"
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
    c += _pipeline_cases()
    return c


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
            out.append(Case(f"gpt-oss-20b-peagle__pp{pp}__40gib", "openai/gpt-oss-20b", "amazon/GPT-OSS-20B-P-EAGLE",
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


def _layer_label(name: str) -> str:
    from kvplan.report.data import layer_index  # what `inspect` writes in `ranks`

    return layer_index(name)


def inspect_layers(case: Case) -> tuple[list[dict], list[list[int]], dict]:
    """kvplan inspect -> (layers, per-rank positions into layers, inspect JSON)."""
    cmd = [sys.executable, "-m", "kvplan", "inspect", case.model, "--format", "json"]
    if case.drafter:
        cmd += ["--drafter", case.drafter]
    if case.tp != 1:
        cmd += ["--tensor-parallel-size", str(case.tp)]
    if case.pp != 1:
        cmd += ["--pipeline-parallel-size", str(case.pp)]
    cmd += list(case.inspect_args)
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise SystemExit(
            f"kvplan inspect failed for {case.name}: {' '.join(cmd)}\n{proc.stderr}"
        )
    data = json.loads(proc.stdout)
    layers = data["layers"]
    ranks = data.get("ranks") or [{"layers": None}]
    if len(ranks) <= 1:
        return layers, [list(range(len(layers)))], data
    by_label: dict[str, list[int]] = {}
    for pos, l in enumerate(layers):
        by_label.setdefault(_layer_label(l["name"]), []).append(pos)
    workers = []
    for r in ranks:
        positions: list[int] = []
        for label in r["layers"]:
            positions.extend(by_label[str(label)])
        workers.append(positions)
    assert sorted(p for w in workers for p in w) == list(range(len(layers))), (
        "ranks do not cover layers"
    )
    return layers, workers, data


# ----------------------------------------------------------------------------- alignment


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _dtype_bytes(name: str) -> int:
    return {"bfloat16": 2, "float16": 2, "float32": 4, "uint8": 1, "int8": 1}[name]


def align_mamba(
    layers: list[dict], release: str, max_model_len: int
) -> tuple[list[dict], dict]:
    """Reference §7.6 / §12.4 for non-MLA hybrid models, per release (see module doc)."""
    attn = [l for l in layers if l["kind"] != "mamba"]
    mamba = [l for l in layers if l["kind"] == "mamba"]
    first = attn[0]
    a1 = (
        first["num_kv_heads"]
        * (first["head_size"] + first["head_size_v"])
        * _dtype_bytes(first["dtype"])
    )
    mp = max(
        sum(math.prod(s) * _dtype_bytes(d) for s, d in zip(l["shapes"], l["dtypes"]))
        for l in mamba
    )
    era = era_of_release(release)
    modern = era.hybrid_prefix_caching_default  # prefix caching (mode "align") on by default
    mode = "align" if modern else "none"
    k = 16
    if modern and era.gdn_align_tokens and any(l["mamba_type"] in ("gdn", "gdn_attention") for l in mamba):
        k = math.lcm(k, era.gdn_align_tokens)
    block = max(first["block_size"], k * _cdiv(mp, k * a1))
    m_block = block if mode == "align" else max_model_len
    attn_page = block * a1
    padded = attn_page if attn_page != mp else None
    # 0.33 align mode: Mamba2 and (Hopper) GDN layers export prefill checkpoints
    checkpoints = int(modern and era.mamba_prefill_checkpoints and all(l["mamba_type"] in ("mamba2", "gdn") for l in mamba))
    out = []
    for l in layers:
        l = dict(l)
        if l["kind"] == "mamba":
            l["block_size"] = m_block
            l["page_size_padded"] = padded
            l["num_prefill_checkpoint_blocks"] = checkpoints
        elif l["block_size"] == first["block_size"]:
            l["block_size"] = block
        out.append(l)
    info = {
        "mamba_cache_mode": mode,
        "enable_prefix_caching": modern,
        "kernel_alignment": k,
        "attention_bytes_per_token": a1,
        "mamba_state_bytes": mp,
        "attention_block_size": block,
        "mamba_block_size": m_block,
        "page_size_bytes": attn_page,
    }
    return out, info


# ----------------------------------------------------------------------------- cases


# kvplan's layer JSON keys (the derived page size is not an input to vLLM's specs)
_SPEC_KEYS = tuple(k for k in SPEC_KEYS if k != "page_size_bytes")


def make_runner_case(
    case: Case,
    release: str,
    layers: list[dict],
    workers: list[list[int]],
    inspect_meta: dict,
) -> dict:
    info = None
    mode, prefix = "none", True
    if case.mamba:
        length = (
            case.max_model_len
            if case.max_model_len != -1
            else case.derived_max_model_len
        )
        layers, info = align_mamba(layers, release, length)
        mode, prefix = info["mamba_cache_mode"], info["enable_prefix_caching"]
    table: list[dict] = []
    index: dict[str, int] = {}
    compact_workers = []
    for positions in workers:
        w = []
        for pos in positions:
            l = layers[pos]
            spec = {k: l.get(k) for k in _SPEC_KEYS}
            key = json.dumps(spec, sort_keys=True)
            if key not in index:
                index[key] = len(table)
                table.append(spec)
            w.append([l["name"], index[key], l.get("source", "target")])
        compact_workers.append(w)
    out = {
        "case": case.name,
        "model": case.model,
        "drafter": case.drafter,
        "spec_table": table,
        "workers": compact_workers,
        "available_memory_bytes": int(case.memory_gib * GiB),
        "max_model_len": case.max_model_len,
        "max_num_batched_tokens": T,
        "async_scheduling": case.async_scheduling,
        "disable_hybrid_kv_cache_manager": case.disable_hma,
        "num_gpu_blocks_override": case.num_gpu_blocks_override,
        "mamba_cache_mode": mode,
        "enable_prefix_caching": prefix,
        "pipeline_parallel_size": case.pp,
        "tensor_parallel_size": case.tp,
        **({"decode_context_parallel_size": case.dcp} if case.dcp != 1 else {}),
        "use_v2_model_runner": case.use_v2_model_runner,
        "model_runner_probe": case.model_runner_probe,
        "layer_source": inspect_meta.get("source", "kvplan inspect"),
    }
    if case.max_model_len == -1:
        out["derived_max_model_len"] = case.derived_max_model_len
    if info is not None:
        out["alignment"] = info
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
    ap.add_argument("--only", default=None, help="only cases whose name contains this")
    ap.add_argument("--list", action="store_true")
    ap.add_argument(
        "--hand-written",
        action="store_true",
        help="use hand-written layers for gpt-oss-20b / gemma-3-27b (no CLI)",
    )
    ap.add_argument("--out", default=str(OUT_DIR))
    ap.add_argument("--hooks", action="store_true",
                    help="write tests/golden/hooks/<release>.json (Mamba mode, Nemotron-H ssm dtype) instead")
    args = ap.parse_args()
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

    inspected: dict[tuple, tuple] = {}
    # GOLDEN_INSPECT_CACHE=file: reuse `kvplan inspect` answers across runs (one release at a time)
    cache_path = os.environ.get("GOLDEN_INSPECT_CACHE")
    cache = json.loads(Path(cache_path).read_text()) if cache_path and Path(cache_path).exists() else {}
    for c in cases:
        key = (c.model, c.drafter, c.tp, c.pp, c.inspect_args)
        if key in inspected:
            continue
        hand = (
            _hand_layers(c.model)
            if c.drafter is None and c.pp == 1 and c.tp == 1
            else None
        )
        if args.hand_written:
            if hand is None:
                continue
            inspected[key] = (hand[0], hand[1], {"source": "hand-written"})
            continue
        ckey = json.dumps([c.model, c.drafter, c.tp, c.pp, list(c.inspect_args)])
        if ckey in cache:
            layers, workers = cache[ckey]
        else:
            layers, workers, _ = inspect_layers(c)
            cache[ckey] = [layers, workers]
        if hand is not None and _strip(hand[0]) != _strip(layers):
            print(
                f"WARNING: kvplan inspect {c.model} differs from the hand-written layer list",
                file=sys.stderr,
            )
        inspected[key] = (layers, workers, {"source": "kvplan inspect"})

    if cache_path:
        Path(cache_path).write_text(json.dumps(cache))
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    for release in releases:
        batch = []
        for c in cases:
            key = (c.model, c.drafter, c.tp, c.pp, c.inspect_args)
            if key not in inspected:
                continue
            layers, workers, meta = inspected[key]
            batch.append(make_runner_case(c, release, layers, workers, meta))
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
    base = json.loads((REPO / "configs/nvidia/Nemotron-H-56B-Base-8K/config.json").read_text())
    base.pop("mamba_ssm_cache_dtype", None)
    for value in (None, "float32", "bfloat16"):
        cfg = dict(base) if value is None else {**base, "mamba_ssm_cache_dtype": value}
        cases.append({"case": f"nemotron_h_ssm:{value or 'unset'}", "kind": "nemotron_h_ssm", "hf_config": cfg})
    return cases


def make_hooks(release: str) -> Path:
    found = release_python(release)
    if found is None:
        raise SystemExit(f"no environment for vllm {release}: run scripts/golden/release_env.sh {release}")
    py, env = found
    cases = hook_cases()
    proc = subprocess.run([str(py), str(RUNNER), "--config-hooks"], input=json.dumps(cases), capture_output=True,
                          text=True, cwd=REPO, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"runner --config-hooks failed for vllm {release}:\n{proc.stderr[-4000:]}")
    return write_hooks(release, json.loads(proc.stdout))


def write_hooks(release: str, results: list[dict]) -> Path:
    HOOKS_DIR.mkdir(parents=True, exist_ok=True)
    path = HOOKS_DIR / f"{release}.json"
    doc = {"vllm_version": release,
           "cases": [{"case": c, "result": r} for c, r in zip(hook_cases(), results, strict=True)]}
    path.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    return path


def _strip(layers: list[dict]) -> list[dict]:
    return [{k: l.get(k) for k in ("name", *_SPEC_KEYS)} for l in layers]


if __name__ == "__main__":
    main()
