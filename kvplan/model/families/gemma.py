"""Gemma 2/3/3n, Cohere2, EXAONE-4: ``layer_types`` picks sliding or full per layer (the ``layer_types`` family)."""

from __future__ import annotations

from collections.abc import Callable

from kvplan.errors import ConfigError, UnsupportedError
from kvplan.model.families.base import (
    FULL, SLIDING, Built, Context, FamilyResult, attn_spec, check_attention_heads, head_size, kv_heads_per_rank,
    layer_prefix, layer_types, model_wide_window, n_layers, window_value,
)
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView
from kvplan.specs import KVCacheSpec


# the multimodal wrappers whose decoder vLLM builds under ``language_model``
LANGUAGE_MODEL_ARCHS = frozenset(("Gemma3ForConditionalGeneration", "Gemma3nForConditionalGeneration"))


def _default_layer_types(ctx: Context, view: HFView, n: int) -> list[str]:
    """transformers' derivation when the class is unavailable: Gemma 2 (and Cohere2 style)
    even index = sliding; Gemma 3 ``(i + 1) % sliding_window_pattern != 0`` = sliding."""
    if ctx.model_type.startswith("gemma2"):
        return [SLIDING if i % 2 == 0 else FULL for i in range(n)]
    pattern = view.int("sliding_window_pattern", 6)
    return [SLIDING if (i + 1) % pattern else FULL for i in range(n)]


def _kv_shared_from(view: HFView, n: int) -> int:
    """First KV-sharing layer: ``num_hidden_layers - num_kv_shared_layers`` (Gemma 3n/4)."""
    shared = view.int("num_kv_shared_layers", 0, minimum=0)
    if shared > n:
        raise ConfigError(view.path, view.field("num_kv_shared_layers"), f"{shared} > num_hidden_layers {n}", "fix it")
    return n - shared


def build_layer_types(view: HFView, ctx: Context) -> FamilyResult:
    """Gemma 2/3/3n, Cohere2, Exaone4: ``layer_types[i] == "sliding_attention"`` → window
    ``sliding_window``; transformers derives ``layer_types`` when the config omits it.
    Gemma 3n's last ``num_kv_shared_layers`` layers share KV and register no spec."""
    n = n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", view.int("num_attention_heads")))
    hd = head_size(view)
    lt = layer_types(view, n, {SLIDING, FULL}) or _default_layer_types(ctx, view, n)
    w = None if ctx.disable_sliding_window else window_value(view)
    if w is not None and ctx.model_type.startswith("cohere2"):
        # commandr.py (vLLM 0.33.0 and 0.34.0, line 244): a Cohere2 sliding layer sees
        # [pos - sliding_window, pos], so vLLM passes sliding_window + 1
        w += 1
    layers, shared = gemma_layers(
        view, ctx, n, lambda i: attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=w if lt[i] == SLIDING else None),
        LANGUAGE_MODEL_ARCHS,
    )
    n_sw = sum(1 for t in lt[:n] if t == SLIDING)
    ctx.notes.append(f"{ctx.model_type}: layer_types gives {n_sw} sliding (window {w}) + {n - n_sw} full")
    if shared:
        ctx.notes.append(f"{len(shared)} KV-sharing layers (num_kv_shared_layers) register no KV cache")
    return FamilyResult(layers, shared, model_window=model_wide_window(view, ctx), num_hidden_layers=n)


def gemma_layers(view: HFView, ctx: Context, n: int, spec_of: Callable[[int], KVCacheSpec],
                 language_model_archs: frozenset[str]) -> tuple[list[Built], list[str]]:
    """Layers ``0..n-1`` with ``spec_of(i)``; the last ``num_kv_shared_layers`` share another
    layer's KV (Gemma 3n/4) and register no spec: they come back as names only. ``language_model_archs``: the
    family's wrappers (``layer_prefix``)."""
    first_shared = _kv_shared_from(view, n)
    prefix = layer_prefix(ctx.architecture, language_model_archs)
    names = [f"{prefix}.layers.{i}.self_attn.attn" for i in range(n)]
    layers = [Built(names[i], spec_of(i), i) for i in range(min(first_shared, n))]
    return layers, names[first_shared:]


def gemma(cfg: WeightView, b: Builder) -> None:
    """Gemma 2 and Gemma 3 text decoders: four RMSNorms per layer (input, post-attention,
    pre- and post-feed-forward), Gemma 3 adds per-head q/k norms; embeddings tied."""
    mt = cfg.text_model_type
    if mt not in ("gemma2", "gemma3", "gemma3_text"):
        raise UnsupportedError(f"weight count for model type {mt!r} is not modelled; pass --weights-memory")
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.head_dim()
    bias = cfg.flag("attention_bias")
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=bias, o_bias=bias)
        if mt != "gemma2":
            b.norm(f"{p}.self_attn.q_norm", hd, i)
            b.norm(f"{p}.self_attn.k_norm", hd, i)
        b.mlp(f"{p}.mlp", cfg.int("intermediate_size"), H, i)
        for nm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm"):
            b.norm(f"{p}.{nm}", H, i)
    b.final(cfg, V, H)


FAMILY = Family(
    "layer_types", build_layer_types,
    weights=gemma,
    architectures=(
        "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3nForCausalLM",
        "Gemma3nForConditionalGeneration", "Cohere2ForCausalLM", "Exaone4ForCausalLM", "Cohere2MoeForCausalLM",
        "Cohere2VisionForConditionalGeneration",
    ),
    model_types=("gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "cohere2", "exaone4"),
    config_keys=(
        "attention_bias", "hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers",
        "num_key_value_heads", "num_kv_shared_layers", "sliding_window_pattern", "vocab_size",
    ),
    language_model_archs=LANGUAGE_MODEL_ARCHS,
)
