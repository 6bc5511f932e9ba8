"""Config-time decisions that come before grouping: is the hybrid KV-cache manager
(HMA) on, and how the hybrid Mamba page alignment raises the attention block size.

Reference §5 (HMA on/off), §7.6 and §12.4 (Mamba alignment).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from kvplan.frozen import dataclass
from kvplan.engines.vllm.eras import Era
from kvplan.engines.vllm.grouping import EngineFailure
from kvplan.engines.vllm.wording import wording
from kvplan.specs import AttentionSpec, KVCacheSpec, MambaSpec, MLAAttentionSpec
from kvplan.units import cdiv
from kvplan.version import newest_at_or_before

# speculative methods for which vLLM's SpeculativeConfig.use_eagle() is true
EAGLE_METHODS = frozenset({"eagle", "eagle3", "mtp"})

CHUNKED_LOCAL_WARNING = (
    "There is a latency regression when using chunked local attention with the hybrid KV cache manager. "
    "Disabling it, by default. To enable it, set the environment VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1."
)
def hma_explicit_failure(era: Era) -> str:
    return (
        "Hybrid KV cache manager was explicitly enabled but is not supported in this configuration. "
        f"Consider omitting the {wording(era).hma_flag} flag to let vLLM decide automatically."
    )


def registered_connectors(era: Era) -> dict:
    """The KV connectors the release behind ``era`` registers, each ``{"class", "module", "supports_hma"}``
    (``kv_connectors.json``, read from every checked wheel's ``KVConnectorFactory`` by
    ``scripts/golden/kv_connectors.py``); a release between two checked ones reads the older one's."""
    table = _connector_table()
    row = newest_at_or_before(table, era.stands_for or "0")
    return table[row] if row is not None else {}


@lru_cache(maxsize=1)
def _connector_table() -> dict:
    return json.loads((Path(__file__).parent / "kv_connectors.json").read_text())


def connector_supports_hma(config: dict, era: Era) -> bool:
    """The release's ``KVConnectorFactory.supports_hma_config``: the registered class subclasses
    ``SupportsHMA``; MultiConnector only when every child connector does."""
    name = str(config.get("kv_connector", ""))
    if name != "MultiConnector":
        return bool((registered_connectors(era).get(name) or {}).get("supports_hma"))
    children = (config.get("kv_connector_extra_config") or {}).get("connectors") or []
    return bool(children) and all(isinstance(c, dict) and connector_supports_hma(c, era) for c in children)


def check_connector_registered(config: dict, era: Era) -> None:
    """``KVConnectorFactory.get_connector_class``: a connector name the release does not register, and no
    ``kv_connector_module_path`` to import it from, is vLLM's ValueError (0.34.0 factory.py:133)."""
    name = config.get("kv_connector")
    if name is None or config.get("kv_connector_module_path"):
        return
    if str(name) not in registered_connectors(era):
        raise EngineFailure("ValueError", f"Unsupported connector type: {name}", "config")


@dataclass(frozen=True)
class HmaDecision:
    disabled: bool
    reasons: tuple[str, ...]


def decide_hma(
    era: Era,
    *,
    user_disable: bool | None,
    attention_chunk_size: int | None,
    speculative_method: str | None,
    allow_chunked_local_with_hma: bool,
    kv_transfer_config: dict | None,
    logs: list[str],
    kv_events: bool = False,
) -> HmaDecision:
    """``VllmConfig.__post_init__``'s rule for ``disable_hybrid_kv_cache_manager``
    (checked in the 0.18.0 and 0.33.0 wheels)."""
    reasons: list[str] = []
    if kv_events and era.kv_events_disable_hma:
        reasons.append("--kv-events-config is set (KV events disable the hybrid manager before PR #37688)")
    if attention_chunk_size is not None:
        if speculative_method in EAGLE_METHODS:
            reasons.append("chunked local attention with an EAGLE/MTP drafter")
        elif not allow_chunked_local_with_hma:
            logs.append(CHUNKED_LOCAL_WARNING)
            reasons.append("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0")
    if kv_transfer_config is not None:
        check_connector_registered(kv_transfer_config, era)
    if user_disable is None and kv_transfer_config is not None:
        connector = str(kv_transfer_config.get("kv_connector", "")) or "(none)"
        if era.kv_transfer_rule == "always":
            reasons.append("--kv-transfer-config is set")
            logs.append(wording(era).kv_transfer_warning)
        elif not connector_supports_hma(kv_transfer_config, era):
            reasons.append(f"connector {connector} does not support the hybrid manager (SupportsHMA)")
            logs.append(wording(era).kv_transfer_warning.format(connector=connector))
    if user_disable is True:
        return HmaDecision(True, ("--disable-hybrid-kv-cache-manager",))
    if user_disable is False and reasons:
        raise EngineFailure("ValueError", hma_explicit_failure(era), "config")
    return HmaDecision(bool(reasons), tuple(reasons))


@dataclass(frozen=True)
class MambaAlignment:
    """What the hybrid alignment did (reference §7.6): all sizes per TP rank."""

    mamba_cache_mode: str  # "none" | "align" | "all"
    attention_bytes_per_token: int  # a1
    mamba_page_bytes: int  # mp, the raw state
    kernel_alignment_tokens: int  # k
    attention_block_size: int  # after alignment
    mamba_block_size: int
    attention_page_bytes: int
    padded_pct: float  # how much the Mamba page was padded


MAMBA_FLAG_NO_EFFECT_033 = (
    "--mamba-cache-mode is deprecated and will be removed in v0.33.0. "
    "It has no effect: Mamba prefix caching follows --enable-prefix-caching."
)
MAMBA_NONE_WITHOUT_PREFIX = "Mamba cache mode is set to 'none' when prefix caching is disabled"
MAMBA_ALL_FALLBACK = (
    "Hybrid or mamba-based model detected without support for prefix caching with Mamba cache 'all' mode: "
    "falling back to 'align' mode."
)


def resolve_mamba_cache_mode(
    era: Era, *, enable_prefix_caching: bool | None, mamba_cache_mode: str | None, supports_all: bool,
    logs: list[str],
) -> str:
    """The Mamba cache mode a release ends up with for a hybrid model (``Era.mamba_cache_mode_rule``).

    * ``as_given`` (before 0.15, no --mamba-cache-mode): the mode asked, else "align" with
      prefix caching and "none" without (hybrid models ran without prefix caching by default).
    * ``reconcile`` (0.15 to 0.32, ``MambaModelConfig.verify_and_update_config``): prefix
      caching off forces "none"; on, "none" becomes "all" where the model supports Mamba
      prefix caching (Mamba1/Mamba2 models: ``SupportsMambaPrefixCaching``) else "align",
      and "all" falls back to "align" on the others (Qwen's gated delta net).
    * ``reconcile_align`` (0.28 to 0.31): the same, but "none" always becomes "align".
    * ``align_default`` (0.32): prefix caching off forces "none"; on, "none" becomes "align"
      and an explicit "align" or "all" is kept (no Mamba-prefix-caching support check).
    * ``prefix_caching`` (0.33+): --mamba-cache-mode is ignored, with a deprecation warning;
      prefix caching on gives "align", off "none".
    """
    prefix = era.hybrid_prefix_caching_default if enable_prefix_caching is None else enable_prefix_caching
    rule = era.mamba_cache_mode_rule
    if rule == "prefix_caching":
        if mamba_cache_mode is not None:
            logs.append(MAMBA_FLAG_NO_EFFECT_033)
        return "align" if prefix else "none"
    if rule == "align_default":
        mode = mamba_cache_mode or "none"
        if not prefix:
            if mode != "none":
                logs.append(MAMBA_NONE_WITHOUT_PREFIX)
            return "none"
        return "align" if mode == "none" else mode
    if rule in ("reconcile", "reconcile_align"):
        mode = mamba_cache_mode or "none"
        if not prefix:
            if mode != "none":
                logs.append(MAMBA_NONE_WITHOUT_PREFIX)
            return "none"
        if mode == "none":
            mode = "all" if supports_all and rule == "reconcile" else "align"
        if mode == "all" and not supports_all:
            logs.append(MAMBA_ALL_FALLBACK)
            mode = "align"
        return mode
    if mamba_cache_mode is not None:
        return mamba_cache_mode
    return "align" if prefix else "none"


def align_hybrid_mamba(
    specs: dict[str, KVCacheSpec],
    era: Era,
    *,
    enable_prefix_caching: bool | None,
    mamba_cache_mode: str | None,
    mamba_block_size: int | None,
    mamba_chunk_size: int | None,
    max_model_len: int,
    logs: list[str],
    kernel_block_size: int | None = None,
) -> tuple[dict[str, KVCacheSpec], MambaAlignment | None]:
    distinct = list({id(s): s for s in specs.values()}.values())  # layouts share spec objects
    mamba = [s for s in distinct if isinstance(s, MambaSpec)]
    attn = [s for s in distinct if isinstance(s, AttentionSpec)]
    if not mamba or not attn:
        return specs, None
    first = attn[0]
    cache_block = first.block_size
    a1 = first.real_page_size_bytes // first.block_size
    mp = max(s.real_page_size_bytes for s in mamba)
    mamba_cache_mode = resolve_mamba_cache_mode(
        era, enable_prefix_caching=enable_prefix_caching, mamba_cache_mode=mamba_cache_mode,
        supports_all=all(s.mamba_type in ("mamba1", "mamba2") for s in mamba), logs=logs,
    )
    # the backend's smallest kernel block (block_size.smallest_kernel_block: 16 for FlashAttention/
    # FlashInfer/Triton, 64 for FlashMLA); without a decision, those defaults
    smallest = kernel_block_size or (64 if isinstance(first, MLAAttentionSpec) else 16)
    if era.mamba_kernel_alignment == "at_least_block":
        # 0.33/0.34 (interface.py 0.34.0 lines 1079-1086): at least the cache block
        k = max(smallest, cache_block)
    else:
        k = smallest
    if mamba_cache_mode == "align" and era.gdn_align_tokens and any(s.mamba_type == "gdn" for s in mamba):
        k = math.lcm(k, era.gdn_align_tokens)
    if mamba_cache_mode == "all":
        base = mamba_block_size or mamba_chunk_size or k
        chunk = math.lcm(base, k)
        ab = chunk * cdiv(cdiv(mp, a1), chunk)
    else:
        ab = k * cdiv(mp, k * a1)
    block = cache_block
    if block < ab:
        block = ab
        logs.append(
            f"Setting attention block size to {block} tokens to ensure that attention page size is >= mamba page size."
        )
    if mamba_cache_mode == "all":
        m_block = ab
    elif mamba_cache_mode == "align":
        m_block = block
    else:
        m_block = max_model_len
    attn_page = block * a1
    assert attn_page >= mp
    checkpoints = int(
        era.mamba_prefill_checkpoints and mamba_cache_mode == "align"
        and all(s.mamba_type in ("mamba2", "gdn") for s in mamba)
    )
    padded = None
    pct = 0.0
    if attn_page != mp:
        padded = attn_page
        pct = (attn_page - mp) / mp * 100
        logs.append(
            f"Padding mamba page size by {pct:.2f}% to ensure that mamba page size and attention page size are exactly equal."
        )
    out: dict[str, KVCacheSpec] = {}
    memo: dict[int, KVCacheSpec] = {}  # one new spec per distinct spec object (layouts share them)
    for name, s in specs.items():
        new = memo.get(id(s))
        if new is None:
            if isinstance(s, MambaSpec):
                new = replace(s, block_size=m_block, page_size_padded=padded,
                              num_prefill_checkpoint_blocks=checkpoints)
            elif s.block_size == cache_block:
                new = s.with_block_size(block)
            else:
                new = s
            memo[id(s)] = new
        out[name] = new
    return out, MambaAlignment(
        mamba_cache_mode=mamba_cache_mode,
        attention_bytes_per_token=a1,
        mamba_page_bytes=mp,
        kernel_alignment_tokens=k,
        attention_block_size=block,
        mamba_block_size=m_block,
        attention_page_bytes=attn_page,
        padded_pct=pct,
    )
