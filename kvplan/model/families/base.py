"""What every family rule shares: the ``Built`` layer, the ``Context`` a rule reads besides the config, the
``FamilyResult`` it returns, and the attention helpers
(vLLM's common ``Attention.get_kv_cache_spec``, TP splits, windows)."""

from __future__ import annotations

from dataclasses import field

from kvplan.frozen import dataclass
from kvplan.errors import ConfigError, OptionError
from kvplan.model.hfconfig import HFView
from kvplan.specs import ChunkedLocalAttentionSpec, FullAttentionSpec, KVCacheSpec, SlidingWindowSpec
from kvplan.units import plural


SLIDING = "sliding_attention"
FULL = "full_attention"


@dataclass(frozen=True)
class Built:
    name: str
    spec: KVCacheSpec
    layer_index: int  # decoder-layer index (target numbering) for the PP partition


@dataclass
class Context:
    """What every builder needs besides the config."""

    path: str
    architecture: str
    model_type: str
    tp: int
    block_size: int
    cache_dtype: str  # cache tensor dtype (auto → model dtype; fp8 → uint8)
    cache_dtype_str: str  # resolved --kv-cache-dtype string (MLA's cache_dtype_str)
    model_dtype: str
    disable_sliding_window: bool = False
    num_spec: int = 0  # speculative tokens: Mamba num_speculative_blocks and conv growth
    nemotron_h_ssm_cache_dtype: str = "float32"  # ServingOptions.nemotron_h_ssm_cache_dtype
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # head counts vLLM splits over TP: ("heads" | "kv_heads", total, config field); the engine's
    # pre-KV-cache checks decide whether TP divides them (kvplan.engines.vllm.prechecks)
    tp_checks: list[tuple[str, int, str]] = field(default_factory=list)


@dataclass
class FamilyResult:
    layers: list[Built]
    kv_sharing: list[str] = field(default_factory=list)
    model_window: int | None = None  # cache_config.sliding_window (what a drafter inherits)
    is_hybrid_mamba: bool = False
    mamba_chunk_size: int | None = None
    attention_chunk_size: int | None = None  # model_config.attention_chunk_size (HMA decision)
    num_hidden_layers: int = 0


def window_value(view: HFView, key: str = "sliding_window") -> int | None:
    """A window as vLLM uses it: None when absent, null or 0 (vLLM normalises 0 to None)."""
    w = view.get(key, None)
    if w is None:
        return None
    w = view.check_int(key, w, minimum=0)
    return w or None


def model_wide_window(view: HFView, ctx: Context) -> int | None:
    """``cache_config.sliding_window`` (reference §12.1): the config's window, set only when
    ``layer_types`` is missing or is all ``sliding_attention``; ``--disable-sliding-window``
    clears it."""
    if ctx.disable_sliding_window:
        return None
    lt = view.get("layer_types", None)
    if lt is not None and not (isinstance(lt, (list, tuple)) and all(t == SLIDING for t in lt)):
        return None
    return window_value(view)


def layer_types(view: HFView, n: int, allowed: set[str]) -> list[str] | None:
    lt = view.str_list("layer_types")
    if lt is None:
        return None
    if len(lt) < n:
        raise ConfigError(
            view.path, view.field("layer_types"), f"has {plural(len(lt), 'entry', 'entries')} for {plural(n, 'layer')}",
            "give one entry per layer (num_hidden_layers)",
        )
    for i, t in enumerate(lt[:n]):
        if t not in allowed:
            raise ConfigError(
                view.path, view.field("layer_types"), f"unknown value {t!r} at index {i}",
                f"use one of {', '.join(sorted(allowed))}",
            )
    return lt


def head_size(view: HFView) -> int:
    """``head_dim`` when set, else ``hidden_size // num_attention_heads`` (Llama's rule)."""
    hd = view.opt_int("head_dim")
    if hd is not None:
        return hd
    hidden = view.int("hidden_size")
    heads = view.int("num_attention_heads")
    return hidden // heads


def full_attention_spec(view: HFView, ctx: Context) -> KVCacheSpec:
    """A full-attention layer of the config's ``num_key_value_heads`` (split over TP, recorded for the
    engine's check) and ``head_size``: the MTP decoder layers of Qwen3-Next/3.5 and MiMo."""
    return attn_spec(ctx, num_kv_heads=kv_heads_per_rank(view, ctx, view.int("num_key_value_heads")),
                     head_size=head_size(view))


def check_attention_heads(view: HFView, ctx: Context, heads: int, key: str = "num_attention_heads") -> None:
    """Record the heads ``ModelConfig.verify_with_parallel_config`` divides by TP (the engine's
    ``prechecks.check_attention_heads`` reports vLLM's refusal as a start-up failure)."""
    ctx.tp_checks.append(("heads", heads, view.field(key)))


def kv_heads_per_rank(view: HFView, ctx: Context, total: int, key: str = "num_key_value_heads") -> int:
    """``max(1, total // tp)``; the divisibility the attention layer asserts (split evenly when
    ``total >= tp``, else replicated, ``tp % total == 0``) is recorded for the engine's
    ``prechecks.check_kv_heads``."""
    ctx.tp_checks.append(("kv_heads", total, view.field(key)))
    return max(1, total // ctx.tp)


def split(view: HFView, ctx: Context, value: int, key: str) -> int:
    """vLLM's ``divide(value, tp)``: an assertion there, an OptionError here."""
    if value % ctx.tp != 0:
        raise OptionError(
            f"{view.path}: '{view.field(key)}' = {value} is not divisible by tensor_parallel_size {ctx.tp}; "
            "pick a --tensor-parallel-size that divides it"
        )
    return value // ctx.tp


def attn_spec(
    ctx: Context, *, num_kv_heads: int, head_size: int, head_size_v: int | None = None,
    window: int | None = None, chunk: int | None = None, dtype: str | None = None,
) -> KVCacheSpec:
    """The generic ``Attention.get_kv_cache_spec``: a window → SlidingWindowSpec, a chunk →
    ChunkedLocalAttentionSpec, else FullAttentionSpec; ``head_size_v`` defaults to ``head_size``."""
    dt = dtype or ctx.cache_dtype
    hv = head_size if head_size_v is None else head_size_v
    if window is not None:
        return SlidingWindowSpec(block_size=ctx.block_size, num_kv_heads=num_kv_heads, head_size=head_size, dtype=dt,
                                 head_size_v=hv, sliding_window=window)
    if chunk is not None:
        return ChunkedLocalAttentionSpec(block_size=ctx.block_size, num_kv_heads=num_kv_heads, head_size=head_size,
                                         dtype=dt, head_size_v=hv, attention_chunk_size=chunk)
    return FullAttentionSpec(block_size=ctx.block_size, num_kv_heads=num_kv_heads, head_size=head_size, dtype=dt,
                             head_size_v=hv)


def n_layers(view: HFView) -> int:
    return view.int("num_hidden_layers")


def generic_kv_heads(view: HFView, heads: int) -> tuple[int, str]:
    """``num_key_value_heads``; without it one head for a multi-query config (``multi_query``),
    else every attention head (multi-head attention), as vLLM's common attention layers read it."""
    kv = view.opt_int("num_key_value_heads")
    if kv is not None:
        return kv, "num_key_value_heads"
    if view.get("multi_query", False) and not view.get("new_decoder_architecture", False):
        return 1, "multi_query"
    return heads, "num_attention_heads"


def layer_prefix(architecture: str, language_model_archs: frozenset[str] = frozenset()) -> str:
    """Where vLLM builds the decoder: ``language_model.model`` for a multimodal wrapper of the family's
    ``language_model_archs`` (Gemma 3/3n/4, Llama 4, Qwen3.5), else ``model``."""
    return "language_model.model" if architecture in language_model_archs else "model"
