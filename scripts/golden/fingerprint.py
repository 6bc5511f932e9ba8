#!/usr/bin/env python3
"""Read each unpacked vLLM release's source and report the behaviour markers kvplan's eras
track, one row per release, so that each change can be pinned to the first release that
has it (the goldens then confirm the numbers by running the same releases).

Usage::

    python scripts/golden/fingerprint.py RELEASE_SRC [--json]

``RELEASE_SRC`` holds one directory per release (``<RELEASE_SRC>/0.24.0/vllm/...``), as
``release_env.sh`` unpacks them. No vLLM import: plain text and regular expressions over the
layout modules. A marker that cannot be read prints ``?``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def _read(tree: Path, *rels: str) -> str:
    return "\n".join((tree / r).read_text() for r in rels if (tree / r).exists())


def _function(src: str, name: str) -> str:
    """The text of ``def name`` up to the next top-level ``def``/``class``."""
    m = re.search(rf"^def {name}\(.*?(?=^(?:def|class|@) )", src, re.S | re.M)
    return m.group(0) if m else ""


def fingerprint(tree: Path) -> dict:
    v = tree / "vllm"
    core = _read(v, "v1/core/kv_cache_utils.py", "v1/core/kv_cache_planning.py")
    iface = _read(v, "v1/kv_cache_interface.py")
    cache = _read(v, "config/cache.py")
    vcfg = _read(v, "config/vllm.py")
    args = _read(v, "engine/arg_utils.py")
    models = _read(v, "model_executor/models/config.py")
    spec_dec = "\n".join(p.read_text() for p in (v / "v1/spec_decode").glob("*.py")) if (v / "v1/spec_decode").is_dir() \
        else ""
    out: dict = {}
    m = re.search(r"max_num_layers\s*<\s*min_num_layers\s*\*\s*([0-9.]+)", core)
    out["threshold"] = float(m.group(1)) if m else None
    groups_fn = _function(core, "_max_memory_usage_bytes_from_groups")
    if not groups_fn:
        out["admission"] = "per_layer"
    elif re.search(r"blocks_needed = sum\(|total_blocks", groups_fn):
        out["admission"] = "summed"
    else:
        out["admission"] = "first_group"
    out["auto_fit"] = "_auto_fit_max_model_len" in core
    out["kv_size_log"] = "concurrency" if re.search(
        r"int\(max_concurrency \* max_model_len\)|get_kv_cache_capacity|update_kv_cache_capacity", core) else "blocks"
    out["capacity_log"] = (
        "one_line" if re.search(r"GPU KV cache size: %s tokens, Maximum concurrency", core + _read(v, "v1/engine/core.py"))
        else "per_worker" if re.search(r"logger\.info\(\s*\"Maximum concurrency", core) else "two_lines")
    out["in_flight_batches"] = "max_concurrent_batches" in iface or "max_in_flight_tokens" in iface
    out["null_block_in_check"] = bool(re.search(r"Reserve the null block|available_memory\s*-\s*_pool_bytes", core))
    unify = _function(core, "unify_kv_cache_spec_page_size")
    out["page_mismatch"] = "none" if not unify else ("pad" if "page_size_padded" in unify or "pad" in unify.lower()
                                                     and "NotImplementedError" not in unify else "raise")
    sw = re.search(r"class SlidingWindowSpec.*?(?=^class )", iface, re.S | re.M)
    out["window_head_size_v"] = bool(sw and "head_size_v" in sw.group(0))
    out["kv_buffer_layout"] = "lbnhc" if "LBNHC" in core else "per_slot"
    out["override_before_check"] = bool(re.search(
        r"def get_kv_cache_configs\(.*?Overriding num_gpu_blocks.*?_check_enough_kv_cache_memory", core, re.S))
    out["supports_hma_connectors"] = "supports_hma" in vcfg.lower() or "SupportsHMA" in vcfg
    out["kv_events_disable_hma"] = bool(re.search(r"kv_events_config[^\n]*\n[^\n]*(?:enable_kv_cache_events)?.*?"
                                                  r"disable_hybrid_kv_cache_manager = True", vcfg[:0] + vcfg, re.S)) \
        and bool(re.search(r"kv_events", _function_block(vcfg, "disable_hybrid_kv_cache_manager")))
    out["hma_flag"] = "--enable-hybrid-kv-cache-manager" if "--enable-hybrid-kv-cache-manager" in vcfg \
        else "--no-disable-hybrid-kv-cache-manager" if "disable-hybrid-kv-cache-manager" in vcfg else None
    m = re.search(r"gpu_memory_utilization: float(?: \| None)? = (?:Field\(default=)?([0-9.]+|None)", cache)
    out["gpu_memory_utilization"] = m.group(1) if m else "?"
    out["large_batch_tier"] = "160 * GiB" in args
    out["mamba_cache_mode"] = "mamba_cache_mode" in cache
    mc = re.search(r"class MambaModelConfig.*?(?=^class )", models, re.S | re.M)
    mc_text = mc.group(0) if mc else ""
    out["mamba_mode_rule"] = (
        "none" if "mamba_cache_mode" not in mc_text
        else "reconcile_all" if "supports_mamba_prefix_caching" in mc_text
        else "prefix_caching" if re.search(r"_MAMBA_CACHE_MODE_DEPRECATION_MESSAGE\)", args)
        else "align_default")
    out["mamba_flag_no_effect"] = bool(re.search(r"has no effect", cache + vcfg + args + models)
                                       and "mamba" in (re.search(r"[^\n]*has no effect[^\n]*", cache + vcfg + args
                                                                 + models) or [""])[0].lower())
    m = re.search(r"getattr\(\s*hf_config, \"mamba_ssm_cache_dtype\", (\"\w+\"|cls\.DEFAULT_MAMBA_SSM_CACHE_DTYPE)",
                  models)
    nem = None
    if m:
        nem = m.group(1).strip('"')
        if nem.startswith("cls."):
            d = re.search(r"DEFAULT_MAMBA_SSM_CACHE_DTYPE(?:: \"?\w+\"?)? = \"(\w+)\"", models)
            nem = d.group(1) if d else "?"
    out["nemotron_h_ssm_default"] = nem
    out["nemotron_h_own_config"] = (v / "transformers_utils/configs/nemotron_h.py").exists()
    out["hybrid_prefix_caching_default"] = "Generative hybrid models support prefix caching" in _read(v, "config/model.py")
    out["mamba_prefill_checkpoints"] = "num_prefill_checkpoint_blocks" in iface
    out["gdn_align"] = bool(re.search(r"lcm\([^)]*64|gdn.*?64", models + _read(v, "config/cache.py"), re.S)) \
        if "mamba_cache_mode" in cache else False
    msgs = core + spec_dec
    out["msg_possessive"] = "models's" if "models's max seq len" in msgs else "model's" \
        if "model's max seq len" in msgs else "?"
    out["msg_drafter"] = "eagle" if "All eagle layers" in msgs else "drafting" if "All drafting layers" in msgs else "?"
    out["msg_cpu_note"] = "which also controls CPU memory" in msgs
    out["msg_autofit"] = "kv_cache_memory" if "to fit in available KV cache memory" in msgs else "gpu" \
        if "Auto-fit max_model_len" in msgs else None
    out["msg_more_memory_hint"] = "_more_kv_cache_memory_hint" in core
    return out


def _function_block(src: str, needle: str) -> str:
    """A few lines around each place ``needle`` is set to True."""
    return "\n".join(src[max(0, m.start() - 600):m.end()] for m in re.finditer(needle + r" = True", src))


def _key(name: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    trees = sorted((p for p in args.src.iterdir() if (p / "vllm").is_dir()), key=lambda p: _key(p.name))
    rows = {t.name: fingerprint(t) for t in trees}
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    keys = list(next(iter(rows.values()), {}))
    prev: dict = {}
    for name, row in rows.items():
        changed = {k: row[k] for k in keys if prev and prev.get(k) != row[k]}
        print(f"{name:10} " + (" ".join(f"{k}={v}" for k, v in changed.items()) if prev else
                               " ".join(f"{k}={v}" for k, v in row.items())))
        prev = row
    return 0


if __name__ == "__main__":
    sys.exit(main())
