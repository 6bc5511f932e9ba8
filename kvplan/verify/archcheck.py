"""kvplan's layers against the architecture goldens (``tests/golden/architectures/<release>/``).

Each golden (``kvplan/verify/arch_runner.py``, driven by ``scripts/golden/make_goldens.py
--architectures``) holds the config vLLM built and every layer's ``get_kv_cache_spec``. Here
kvplan builds the same config (``--dtype bfloat16``, as the runner did) and the two ordered
layer lists are compared on what the config decides: the spec kind, KV heads, head sizes
(K and V), dtype, sliding window, attention chunk, and for Mamba layers the state shapes,
dtypes and kind; and the number of KV-sharing layers. Block sizes and padded pages are the
engine's (backend preference and hybrid alignment, ``kvplan.engines.vllm``), not the model's,
and the runner's Triton backends are not the ones a GPU picks, so they are not compared.

Verdicts: ``exact`` (equal), ``differs`` (kvplan built other layers: a bug to fix),
``refused`` (kvplan refuses the config, with its one-line reason). Goldens that vLLM itself
could not build here carry no verdict.

    python -m kvplan.verify.archcheck [--release 0.34.0] [--show differs]
    python -m kvplan.verify.archcheck --kv-cache-dtype fp8   # the goldens built with vLLM's --kv-cache-dtype fp8

With ``--kv-cache-dtype`` the goldens of ``<release>-kv-<dtype>/`` (the same architectures built with that
cache dtype) are compared with kvplan's layers under the same ``--kv-cache-dtype``: the cache tensor dtype,
the per-layer skips, DeepSeek-V3.2's fp8 → fp8_ds_mla switch.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kvplan.errors import KvplanError

GOLDEN_ROOT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "architectures"
RELEASE = "0.34.0"

# vLLM spec class -> kvplan kind
CLASS_KIND = {
    "FullAttentionSpec": "full_attention", "SlidingWindowSpec": "sliding_window",
    "ChunkedLocalAttentionSpec": "chunked_local", "MLAAttentionSpec": "mla", "MambaSpec": "mamba",
    "CrossAttentionSpec": "cross_attention", "SlidingWindowMLASpec": "sliding_window_mla",
}
_LATENT = ("mla", "sliding_window_mla")  # one latent vector a state: no separate V head size
# vLLM's MambaAttentionBackendEnum names (lower-cased) and kvplan's mamba_type
MAMBA_TYPES = {"gdn_attn": "gdn", "gdn_attention": "gdn"}


@dataclass(frozen=True)
class Verdict:
    architecture: str
    status: str  # golden status: built / no_kv_cache / failed / no_config
    verdict: str | None  # exact / differs / refused / None (no golden layers)
    detail: str  # the first difference, kvplan's refusal, or vLLM's failure
    family: str | None = None  # kvplan's rule (families key)


def golden_dir(release: str = RELEASE, kv_cache_dtype: str | None = None) -> Path:
    """The release's goldens; with ``kv_cache_dtype`` those built with vLLM's --kv-cache-dtype
    (``make_goldens.py --architectures --kv-cache-dtype fp8``: ``<release>-kv-fp8``)."""
    return GOLDEN_ROOT / (f"{release}-kv-{kv_cache_dtype}" if kv_cache_dtype else release)


def load_goldens(release: str = RELEASE, kv_cache_dtype: str | None = None) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(golden_dir(release, kv_cache_dtype).glob("*.json"))]


def golden_key(spec: dict) -> tuple:
    """The compared fields of a golden spec dict (arch_runner's ``spec_table`` entry)."""
    kind = CLASS_KIND.get(spec["class"], spec["class"])
    if kind == "mamba":
        mt = str(spec.get("mamba_type")).lower()
        return (kind, tuple(tuple(s) for s in spec["shapes"]), tuple(spec["dtypes"]), MAMBA_TYPES.get(mt, mt))
    hv = None if kind in _LATENT else spec.get("head_size_v", spec.get("head_size"))
    key: tuple = (kind, spec["num_kv_heads"], spec["head_size"], hv, spec["dtype"], spec.get("sliding_window"),
           spec.get("attention_chunk_size"))
    if kind == "sliding_window_mla" or (spec.get("tokens_per_state") or 1) != 1:
        # DeepSeek-V4's caches carry their own block sizes and packed pages: compare those too
        key += (spec["block_size"], spec.get("tokens_per_state") or 1, spec["page_size_bytes"])
    return key


def kvplan_key(spec) -> tuple:
    kind = spec.kind
    if kind == "mamba":
        mt = spec.mamba_type
        return (kind, tuple(tuple(s) for s in spec.shapes), tuple(spec.dtypes), MAMBA_TYPES.get(mt, mt))
    hv = None if kind in _LATENT else spec.head_size_v
    key: tuple = (kind, spec.num_kv_heads, spec.head_size, hv, spec.dtype, getattr(spec, "sliding_window", None),
           getattr(spec, "attention_chunk_size", None))
    if kind == "sliding_window_mla" or getattr(spec, "tokens_per_state", 1) != 1:
        key += (spec.block_size, spec.tokens_per_state, spec.page_size_bytes)
    return key


def _describe(key: tuple) -> str:
    if key[0] == "mamba":
        return f"mamba {key[3]} shapes {key[1]} dtypes {key[2]}"
    kind, kv, hd, hv, dt, w, c = key[:7]
    s = f"{kind} {kv} KV x {hd}" + (f"/{hv}" if hv not in (None, hd) else "") + f" {dt}"
    s += (f" window {w}" if w else "") + (f" chunk {c}" if c else "")
    if len(key) > 7:
        s += f" block {key[7]}, {key[8]} tokens a state, page {key[9]} B"
    return s


def _runs(keys: list[tuple]) -> str:
    out, prev, n = [], None, 0
    for k in keys + [None]:
        if k == prev:
            n += 1
            continue
        if prev is not None:
            out.append(f"{n} x {_describe(prev)}")
        prev, n = k, 1
    return "; ".join(out)


def _write(d: str, name: str, config: dict | None) -> str:
    """``config`` as ``d/name/config.json`` (None writes JSON null, which kvplan's reader refuses as it would a user's)."""
    os.makedirs(os.path.join(d, name))
    with open(os.path.join(d, name, "config.json"), "w") as f:
        json.dump(config, f)
    return os.path.join(d, name, "config.json")


def kvplan_layers(config: dict | None, target_config: dict | None = None,
                  speculative: dict | None = None, kv_cache_dtype: str = "auto") -> tuple[list[tuple], int, str]:
    """kvplan's compared keys for ``config`` (target layers), its KV-sharing count and family; for a
    speculative head's golden (``target_config`` and vLLM's ``speculative`` config, ``config`` the
    drafter checkpoint's or None for MTP), the drafter's layers beside that target."""
    from kvplan.model.layout import build_model_layout
    from kvplan.model.options import ServingOptions

    with tempfile.TemporaryDirectory(prefix="kvplan-arch-") as d:
        if speculative is None:
            layout = build_model_layout(_write(d, "target", config),
                                        options=ServingOptions(dtype="bfloat16", kv_cache_dtype=kv_cache_dtype))
            source, family = "target", None
        else:
            drafter = _write(d, "draft", config) if config is not None else None
            options = ServingOptions(dtype="bfloat16", speculative_method=speculative["method"],
                                     num_speculative_tokens=speculative.get("num_speculative_tokens"),
                                     kv_cache_dtype=kv_cache_dtype)
            layout = build_model_layout(_write(d, "target", target_config), drafter, options=options)
            source, family = "drafter", f"drafter ({speculative['method']})"
    keys = [kvplan_key(ls.spec) for ls in layout.layers if ls.source == source]
    sharing = layout.kv_sharing_layers if speculative is None else ()
    return keys, len(sharing), family or layout.target.family


def check(golden: dict) -> Verdict:
    arch, status = golden["architecture"], golden["status"]
    if status != "built":
        return Verdict(arch, status, None, golden.get("reason") or "")
    table = golden["spec_table"]
    want = [golden_key(table[i]) for _, i in golden["layers"]]
    want_sharing = len(golden.get("kv_sharing") or {})
    try:
        got, sharing, family = kvplan_layers(golden["config"], golden.get("target_config"),
                                             golden.get("speculative_config"), golden.get("kv_cache_dtype") or "auto")
    except KvplanError as e:
        return Verdict(arch, status, "refused", " ".join(str(e).split()))
    if got == want and sharing == want_sharing:
        return Verdict(arch, status, "exact", _runs(want), family)
    if got != want:
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        detail = (f"{len(got)} layers vs vLLM's {len(want)}; first difference at layer {first}: kvplan "
                  f"{_describe(got[first]) if first < len(got) else '-'}, vLLM "
                  f"{_describe(want[first]) if first < len(want) else '-'}")
    else:
        detail = f"{sharing} KV-sharing layers vs vLLM's {want_sharing}"
    return Verdict(arch, status, "differs", detail, family)


def check_all(release: str = RELEASE, kv_cache_dtype: str | None = None) -> list[Verdict]:
    return [check(g) for g in load_goldens(release, kv_cache_dtype)]


def summary(verdicts: list[Verdict]) -> str:
    built = [v for v in verdicts if v.status == "built"]
    exact = sum(1 for v in built if v.verdict == "exact")
    refused = sum(1 for v in built if v.verdict == "refused")
    differs = sum(1 for v in built if v.verdict == "differs")
    rate = 100.0 * exact / len(built) if built else 0.0
    return (f"{len(verdicts)} architectures recorded, {len(built)} built by vLLM here; kvplan exact on {exact} "
            f"({rate:.1f} %), refused {refused}, differs {differs}")


_CATEGORY = {"text": "text generation", "multimodal": "multimodal", "speculative": "speculative head",
             "transformers": "Transformers backend"}


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kvplan_status(v: Verdict) -> str:
    if v.verdict == "exact":
        rule = "generic rule" if v.family == "generic" else f"family rule `{v.family}`"
        return f"exact ({rule}), verified"
    if v.verdict == "refused":
        return "refused"
    if v.verdict == "differs":
        return "DIFFERS"
    return "refused (no golden to check a rule against)"


def markdown(release: str = RELEASE) -> str:
    """docs/architectures.md, generated from the goldens, kvplan's verdicts and the registry
    (``tests/test_architectures.py`` keeps it in sync)."""
    from kvplan.model.families import vllm_registry

    goldens = load_goldens(release)
    verdicts = {v.architecture: v for v in (check(g) for g in goldens)}
    reg = vllm_registry()
    lines = [
        "# Architectures vLLM registers, and what kvplan does with each",
        "",
        "Generated by `python -m kvplan.verify.archcheck --markdown > docs/architectures.md` from the goldens in",
        f"`tests/golden/architectures/{release}/` (made by `scripts/golden/make_goldens.py --architectures`: vLLM",
        f"{release}'s own model class built on the meta device, every layer's `get_kv_cache_spec`; the stubs are",
        "listed in `kvplan/verify/arch_runner.py`) and kvplan's family table (`kvplan/model/families/`, one module per family).",
        "",
        "* **vLLM here**: `built` (layers recorded), `no KV cache` (built, no layer caches), `failed` (the",
        "  class could not be built on this CPU-only machine: the reason), `no config` (no genuine config and no",
        "  config class to take defaults from).",
        "* **config**: where the built config came from (a genuine config.json, or a config class's defaults).",
        "* **kvplan**: `exact` (kvplan's layers equal vLLM's: kind, KV heads, head sizes, dtype, window, chunk,",
        "  Mamba state shapes and dtypes, KV sharing), `refused` (kvplan refuses the config, one-line reason).",
        "  kvplan refuses every architecture without a verified rule.",
        "",
        summary(list(verdicts.values())),
        "",
    ]
    for cat in ("text", "multimodal", "speculative", "transformers"):
        archs = [g for g in goldens if g.get("registry") == cat]
        if not archs:
            continue
        lines += [f"## {_CATEGORY[cat]} ({len(archs)})", "", "| architecture | vLLM here | config | kvplan | detail |",
                  "| --- | --- | --- | --- | --- |"]
        for g in archs:
            v = verdicts[g["architecture"]]
            here = {"built": "built", "no_kv_cache": "no KV cache", "failed": "failed", "no_config": "no config"}[g["status"]]
            src = g.get("config_source") or ""
            src = "genuine" if src.startswith("genuine") else ("defaults" if "defaults" in src else "-")
            if v.verdict is None:
                detail = g.get("reason") or ""
            elif v.verdict == "exact":
                detail = v.detail
            else:
                detail = v.detail.split(": ", 1)[-1] if v.verdict == "refused" else v.detail
            lines.append(f"| `{g['architecture']}` | {here} | {src} | {_kvplan_status(v)} | {_cell(detail)} |")
        lines.append("")
    removed = reg.get("removed", {})
    if removed:
        lines += ["## Removed from vLLM (refused, naming the release)", "",
                  "| architecture | removed in |", "| --- | --- |"]
        lines += [f"| `{a}` | {r} |" for a, r in sorted(removed.items())]
        lines.append("")
    return "\n".join(lines)


def candidates(release: str = RELEASE) -> list[tuple[str, str]]:
    """For each built architecture kvplan has no rule for: the first family rule (generic first)
    whose layers equal the golden's. A development aid for ``families.ARCH_FAMILY`` /
    ``GENERIC_ARCHS``; kvplan itself never guesses."""
    from kvplan.model import families as F

    order = [F.GENERIC] + [k for k in F.FAMILIES if k != F.GENERIC]
    out = []
    for g in load_goldens(release):
        a = g["architecture"]
        if g["status"] != "built" or F.family_of(a, None) is not None or g.get("speculative_config"):
            continue
        for fam in order:
            F.ARCH_FAMILY[a] = fam
            try:
                v = check(g)
            finally:
                del F.ARCH_FAMILY[a]
            if v.verdict == "exact":
                out.append((a, fam))
                break
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m kvplan.verify.archcheck", description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", default=RELEASE)
    ap.add_argument("--kv-cache-dtype", default=None, help="the goldens built with this --kv-cache-dtype (fp8)")
    ap.add_argument("--show", nargs="*", default=["differs"], help="verdicts to list (exact refused differs)")
    ap.add_argument("--markdown", action="store_true", help="print docs/architectures.md")
    ap.add_argument("--candidates", action="store_true", help="which family rule reproduces each unassigned architecture")
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown(args.release))
        return 0
    if args.candidates:
        for a, fam in candidates(args.release):
            print(f"{a}: {fam}")
        return 0
    verdicts = check_all(args.release, args.kv_cache_dtype)
    for v in verdicts:
        if v.verdict in args.show:
            print(f"{v.architecture}: {v.verdict}: {v.detail}")
    print(summary(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
