"""Speculative-decoding layers: EAGLE/EAGLE-3/P-EAGLE heads, MTP layers, a separate draft model.

vLLM loads the drafter with the target's ``VllmConfig`` (reference §6, §12.10): same cache
config, so the same block size and cache dtype (``auto`` → the target's model dtype). Its
attention layers register after the target's, so they come last in registration order.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.errors import OptionError
from kvplan.model.families import (
    EAGLE1_ARCHS,
    FAMILIES,
    EAGLE3_ARCHS,
    Built,
    Context,
    FamilyResult,
    attn_spec,
    head_size,
    kv_heads_per_rank,
    llama_layers,
    mla_layer,
)
from kvplan.model.hfconfig import HFView
from kvplan.model.methods import SPEC_METHODS


def infer_method(draft_view: HFView, architecture: str) -> tuple[str, str]:
    """``(method, why)`` for a drafter given without ``--speculative-method``.

    - EAGLE-3 / P-EAGLE architectures (``LlamaForCausalLMEagle3``, ``Eagle3LlamaForCausalLM``,
      ``PEagleDraftModel``) → ``eagle3``;
    - EAGLE-1 heads (``EagleLlamaForCausalLM``, ``LlamaForCausalLMEagle``) → ``eagle``;
    - a ``LlamaForCausalLM`` that carries EAGLE-3 head fields (``draft_vocab_size`` or
      ``eagle_config``; e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B) → ``eagle3``;
    - any other causal LM → ``draft_model`` (a separate draft model).
    """
    if architecture in EAGLE3_ARCHS:
        return "eagle3", f"{architecture} is an EAGLE-3 head"
    if architecture in EAGLE1_ARCHS:
        return "eagle", f"{architecture} is an EAGLE head"
    if architecture == "LlamaForCausalLM" and (
        draft_view.raw.get("draft_vocab_size") is not None or draft_view.raw.get("eagle_config") is not None
    ):
        return "eagle3", "a Llama head with draft_vocab_size/eagle_config (EAGLE-3 layout)"
    return "draft_model", f"{architecture} is an ordinary causal LM: a separate draft model"


def eagle_layers(draft_view: HFView, ctx: Context, *, target_layers: int, target_window: int | None,
                 last_index: int) -> list[Built]:
    """EAGLE/EAGLE-3/P-EAGLE Llama layers, named ``model.layers.{N+i}.self_attn.attn``
    (``start_layer_id = N``, the target's layer count). Sliding only when the drafter's own
    ``layer_types`` says so (window from the drafter config), else the target's model-wide
    window (``cache_config.sliding_window``: an all-sliding target such as Mistral-7B-v0.1)."""
    layers, _ = llama_layers(
        draft_view, ctx, start=target_layers, inherited_window=target_window, prefix="model",
        layer_index_base=last_index,
    )
    return layers


def draft_model_layers(draft_view: HFView, dctx: Context, family: str, last_index: int) -> FamilyResult:
    """A separate draft model: its own family rules and its own window, the target's block
    size and cache dtype. vLLM builds it as its own module tree; kvplan prefixes its names
    with ``draft_model.`` so they cannot collide with the target's (the exact prefix vLLM
    uses here is not verified)."""
    res = FAMILIES[family].layers(draft_view, dctx)
    res.layers = [Built(f"draft_model.{b.name}", b.spec, last_index) for b in res.layers]
    res.kv_sharing = [f"draft_model.{n}" for n in res.kv_sharing]
    return res


def mtp_count(view: HFView, family: str) -> int:
    """How many MTP layers vLLM builds: DeepSeek ``num_nextn_predict_layers``; Qwen3-Next
    ``num_nextn_predict_layers`` (vLLM's default 1); Qwen3.5 ``mtp_num_hidden_layers``."""
    if family == "deepseek":
        return view.int("num_nextn_predict_layers", 0, minimum=0)
    if family == "gdn":
        v = view.get("mtp_num_hidden_layers", None)
        if v is not None:
            return view.check_int("mtp_num_hidden_layers", v, minimum=0)
        return view.int("num_nextn_predict_layers", 1, minimum=0)
    return 0


def mtp_layers(view: HFView, ctx: Context, family: str, target_layers: int, last_index: int) -> list[Built]:
    """MTP layers are target-architecture layers (reference §6):
    DeepSeek: an MLA decoder layer identical to the target's (V3.2: with its indexer), named
    ``model.layers.{N+i}...``; Qwen3-Next/3.5: a ``full_attention`` decoder layer with the
    target's full-attention heads, named ``mtp.layers.{i}.self_attn.attn``."""
    count = mtp_count(view, family)
    out: list[Built] = []
    if family == "deepseek":
        for i in range(count):
            out += [replace(b, layer_index=last_index) for b in mla_layer(view, ctx, target_layers + i, "model")]
    elif family == "gdn":
        kv = kv_heads_per_rank(view, ctx, view.int("num_key_value_heads"))
        hd = head_size(view)
        for i in range(count):
            out.append(Built(f"mtp.layers.{i}.self_attn.attn", attn_spec(ctx, num_kv_heads=kv, head_size=hd), last_index))
    return out


def check_method(method: str | None) -> str | None:
    if method is None:
        return None
    m = method.strip().lower().strip("[]")
    if m not in SPEC_METHODS:
        raise OptionError(f"--speculative-method {method!r} is not known; use one of {', '.join(SPEC_METHODS)}")
    return m

