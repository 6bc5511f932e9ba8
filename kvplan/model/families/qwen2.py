"""Qwen2/Qwen3 (+MoE) (vLLM ``qwen2.py``, ``qwen3.py``): the ``use_sliding_window`` / ``max_window_layers``
rule; the weights are Llama's (``llama.llama_like``)."""

from __future__ import annotations

from kvplan.errors import ConfigError
from kvplan.model.families.base import (
    FULL, SLIDING, Built, Context, FamilyResult, attn_spec, check_attention_heads, head_size, kv_heads_per_rank,
    layer_prefix, layer_types, n_layers, window_value,
)
from kvplan.model.families.llama import llama_like
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView
from kvplan.specs import SlidingWindowSpec


QWEN2_SOME_BUT_NOT_ALL = (
    "Sliding window for some but all layers is not supported. This model uses sliding window but "
    "`max_window_layers` = {} is less than `num_hidden_layers` = {}. Please open an issue to discuss this feature."
)


def build_qwen2(view: HFView, ctx: Context) -> FamilyResult:
    """Qwen2/Qwen3 (+MoE): transformers keeps ``sliding_window`` only with
    ``use_sliding_window`` and types layers ``i >= max_window_layers`` as sliding; vLLM asserts
    the result is not interleaved unless ``max_window_layers == num_hidden_layers`` (reference
    §7.2, §12.8). Qwen2 head size is ``hidden_size // num_attention_heads`` (``head_dim`` is
    ignored); Qwen3 uses ``head_dim``."""
    n = n_layers(view)
    heads = view.int("num_attention_heads")
    check_attention_heads(view, ctx, heads)
    kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads", heads))
    is_qwen2 = ctx.model_type.startswith("qwen2")
    hd = view.int("hidden_size") // heads if is_qwen2 else head_size(view)
    use_sw = bool(view.get("use_sliding_window", False))
    w = window_value(view) if use_sw else None  # Qwen2Config: sliding_window = None unless use_sliding_window
    lt = layer_types(view, n, {SLIDING, FULL})
    if lt is None:  # Qwen2Config's derivation
        mwl = view.int("max_window_layers", n, minimum=0)
        lt = [SLIDING if (w is not None and i >= mwl) else FULL for i in range(n)]
    if len(set(lt[:n])) > 1:
        mwl = view.get("max_window_layers", None)
        if mwl != n:
            raise ConfigError(
                view.path, view.field("max_window_layers"), QWEN2_SOME_BUT_NOT_ALL.format(mwl, n),
                "vLLM refuses it; set use_sliding_window false (or max_window_layers 0 for all layers sliding)",
            )
    if ctx.disable_sliding_window:
        w = None
    window = w if all(t == SLIDING for t in lt[:n]) else None  # cache_config.sliding_window (§12.1)
    prefix = layer_prefix(ctx.architecture)
    layers = []
    for i in range(n):
        per_layer = w if lt[i] == SLIDING else None
        win = per_layer if per_layer is not None else window
        layers.append(Built(f"{prefix}.layers.{i}.self_attn.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd, window=win), i))
    n_sw = sum(1 for b in layers if isinstance(b.spec, SlidingWindowSpec))
    ctx.notes.append(
        f"{ctx.model_type}: head size {hd}"
        + (" (hidden_size / num_attention_heads; Qwen2 ignores head_dim)" if is_qwen2 else "")
        + f"; {n_sw} sliding + {n - n_sw} full (use_sliding_window={use_sw})"
    )
    return FamilyResult(layers, model_window=window, num_hidden_layers=n)


FAMILY = Family(
    "qwen2", build_qwen2,
    weights=llama_like,
    architectures=("Qwen2ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"),
    model_types=("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"),
    config_keys=(
        "hidden_size", "max_window_layers", "num_attention_heads", "num_key_value_heads", "use_sliding_window",
    ),
)
