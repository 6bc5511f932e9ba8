"""The family table and what the model stage asks it, derived from the family modules (each exports one
``FAMILY`` record): architecture → family, model_type → family, the hybrid families, the MTP and drafter
layers, the facts read beside the layers, and vLLM's registry for refusals."""

from __future__ import annotations

from dataclasses import replace

from kvplan.frozen import dataclass
from kvplan.model.families import (
    bagel, beam, deepseek, deepseek_v4, falcon_h1, gdn, gemma, gemma4, generic, gpt_oss, granite_hybrid, hy_v4, jamba,
    kimi_linear, lfm, llama, llama4, mamba, mamba2, mimo_v2_flash, minicpm3, nemotron_h, qwen2, whisper, zaya, zamba2,
)
from kvplan.model.families.base import Built, Context, FamilyResult, full_attention_spec
from kvplan.model.families.record import Family
from kvplan.model.families.deepseek import is_v32, mla_layer
from kvplan.model.families.llama import llama_layers
from kvplan.model.families.mamba_state import mamba_chunk_size
from kvplan.model.hfconfig import HFView, build_config_object, text_view


# Every family module, in the order of the family table (vLLM picks the model class by architecture: each
# architecture names one family; the first architecture a family lists names it where a config has only a
# model_type).
MODULES = (gpt_oss, gemma, gemma4, llama, qwen2, llama4, gdn, nemotron_h, jamba, deepseek, mimo_v2_flash, whisper,
           deepseek_v4, generic, mamba, mamba2, falcon_h1, granite_hybrid, zamba2, lfm, kimi_linear, beam, hy_v4,
           minicpm3, zaya, bagel)
FAMILIES: dict[str, Family] = {m.FAMILY.key: m.FAMILY for m in MODULES}
GENERIC = generic.GENERIC
GENERIC_ARCHS = generic.GENERIC_ARCHS


def _table(pairs: list[tuple[str, str]], what: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for name, key in pairs:
        if table.setdefault(name, key) != key:  # pragma: no cover - a development error, caught by the tests
            raise RuntimeError(f"{what} {name!r} is claimed by the {table[name]} and {key} families")
    return table


# ``architectures[0]`` → family key: the primary key (the generic rule's architectures apart, ``GENERIC_ARCHS``,
# tried after every named family); ``model_type`` → family key: the fallback.
ARCH_FAMILY = _table([(a, f.key) for f in FAMILIES.values() if f.key != GENERIC for a in f.architectures],
                     "architecture")
MODEL_TYPE_FAMILY = _table([(t, f.key) for f in FAMILIES.values() for t in f.model_types], "model_type")
HYBRID_FAMILIES = frozenset(f.key for f in FAMILIES.values() if f.hybrid)


def vllm_registry() -> dict:
    """vLLM's model registry as the architecture harness read it (``kvplan/model/vllm_registry.json``,
    written by ``scripts/golden/make_goldens.py --architectures`` from
    ``vllm/model_executor/models/registry.py``): the architectures of each category and the removed
    ones with the release that removed them."""
    import json
    from pathlib import Path

    try:
        return json.loads((Path(__file__).parent.parent / "vllm_registry.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):  # pragma: no cover - package data
        return {}


def refusal(arch: str, model_type: str | None, has_auto_map: bool) -> tuple[str, str]:
    """Why kvplan refuses an architecture it has no rule for, and the fix (one line each).
    ``auto_map`` (remote code) only matters when vLLM does not register the architecture."""
    reg = vllm_registry()
    release = reg.get("release", "?")
    value = arch or model_type
    docs = "docs/architectures.md lists every architecture vLLM registers and kvplan's status for it"
    if arch and arch in reg.get("removed", {}):
        return (f"{arch!r} was removed from vLLM in {reg['removed'][arch]} (vllm/model_executor/models/registry.py "
                "_PREVIOUSLY_SUPPORTED_MODELS); vLLM refuses it at start-up",
                "serve it with a release before that, or pick a supported model")
    registered = arch and any(arch in reg.get(k, ()) for k in ("text", "multimodal", "speculative", "transformers"))
    if registered:
        return (f"vLLM {release} registers {arch!r}, but kvplan has no layer rule checked against its model class",
                docs)
    if has_auto_map:
        return (f"{value!r} is not in vLLM {release}'s registry and the config names remote code in auto_map "
                "(vLLM needs --trust-remote-code for it; kvplan never runs remote code)", docs)
    return f"{value!r} is not an architecture vLLM {release} registers", docs


def config_views(raw: dict, path: str) -> tuple[HFView, HFView]:
    """The config as the family rules read it (``HFView``): the whole of it and its text (decoder)
    part, each seen through transformers' configuration class when ``model_type`` names one."""
    obj = build_config_object(raw, path) if raw.get("model_type") else None
    return HFView(raw, obj, path=path), text_view(raw, obj, path)


@dataclass(frozen=True)
class TextFacts:
    """What the model stage reads from a text config beside the layers (``layout.ModelInfo``'s fields)."""

    num_hidden_layers: int
    max_position_embeddings: int | None
    attention_chunk_size: int | None  # model_config.attention_chunk_size: vLLM's HMA decision reads it (§5)
    is_hybrid_mamba: bool  # has Mamba / GDN / linear-state layers
    mamba_chunk_size: int | None  # for vLLM's "all"-mode alignment


def text_facts(view: HFView, family: str, res: FamilyResult | None = None) -> TextFacts:
    """A model's ``TextFacts``: from its family rule's result ``res`` where it has one (the target),
    else read from the config (a drafter, ``load_model_info``). ``model_config.attention_chunk_size``
    is the text config's ``attention_chunk_size``; MiMo-V2-Flash's is dropped by vLLM (reference §12.6)."""
    n = res.num_hidden_layers if res else (
        view.int("decoder_layers") if family == "whisper" else view.int("num_hidden_layers")
    )
    hybrid = res.is_hybrid_mamba if res else family in HYBRID_FAMILIES
    return TextFacts(
        num_hidden_layers=n,
        max_position_embeddings=view.opt_int("max_position_embeddings"),
        attention_chunk_size=None if family == "mimo_v2_flash" else view.opt_int("attention_chunk_size"),
        is_hybrid_mamba=hybrid,
        mamba_chunk_size=(res.mamba_chunk_size if res else mamba_chunk_size(view)) if hybrid else None,
    )


# Model classes whose attention layers are built without the cache config, so vLLM's Attention takes the
# "auto" cache dtype (the model dtype) whatever --kv-cache-dtype says (model_executor/layers/attention/
# attention.py 0.34.0 lines 292-295): FalconAttention's rotary and ALiBi branches (falcon.py lines 173-196; the
# third branch, neither, never runs: FalconConfig.rotary is ``not alibi``). The only such calls among 0.34.0's
# decoder model files (tests/golden/architectures/0.34.0-kv-fp8/FalconForCausalLM.json: bfloat16 under fp8).
CACHE_CONFIG_NOT_PASSED = frozenset({"FalconForCausalLM"})


def draft_n_predict(view: HFView) -> int | None:
    """A draft config's ``n_predict``: vLLM's default ``num_speculative_tokens`` for a draft model
    (``SpeculativeConfig``, 0.18.0-0.34.0); None when the config has none."""
    return view.opt_int("n_predict")


def selector_head_size(view: HFView) -> int | None:
    """The attention head size vLLM's selector reads (model_config.get_head_size: head_dim, else
    hidden_size // num_attention_heads); None when neither is there (``head_size`` refuses that)."""
    head_dim = view.opt_int("head_dim")
    if head_dim:
        return head_dim
    hidden, heads = view.opt_int("hidden_size"), view.opt_int("num_attention_heads")
    return hidden // heads if hidden and heads else None


def kv_dtype_counts(view: HFView) -> tuple[int | None, int | None, int]:
    """``(MLA latent head or None, KV heads, decoder layers)``: what the KV cache dtype's rules read before the
    layers are built (the MLA selector's head size ``kv_lora_rank + qk_rope_head_dim``, 576 for DeepSeek-V3;
    the per-token page of a skipped layer; TurboQuant's boundary layers)."""
    rank = view.opt_int("kv_lora_rank")
    latent = rank + (view.opt_int("qk_rope_head_dim") or 0) if rank else None
    kv = view.opt_int("num_key_value_heads") or view.opt_int("num_attention_heads")
    return latent, kv, view.opt_int("num_hidden_layers") or 0


def family_of(architecture: str | None, model_type: str | None) -> str | None:
    if architecture and architecture in ARCH_FAMILY:
        return ARCH_FAMILY[architecture]
    if architecture and architecture in GENERIC_ARCHS:
        return GENERIC
    if model_type and model_type in MODEL_TYPE_FAMILY:
        return MODEL_TYPE_FAMILY[model_type]
    return None


# MTP heads that are more decoder layers of the target's own full attention, numbered after its layers:
# vLLM's mimo_mtp.py builds ``num_nextn_predict_layers`` Qwen2 decoder layers from ``num_hidden_layers`` on
# (checked: tests/golden/architectures/0.34.0/MiMoMTPModel.json).
MTP_DECODER_ARCHS = frozenset({"MiMoForCausalLM"})


def mtp_count(view: HFView, family: str, architecture: str | None = None) -> int:
    """How many MTP layers vLLM builds: DeepSeek and MiMo ``num_nextn_predict_layers``; Qwen3-Next
    ``num_nextn_predict_layers`` (vLLM's default 1); Qwen3.5 ``mtp_num_hidden_layers``."""
    if family in ("deepseek", "deepseek_v4") or architecture in MTP_DECODER_ARCHS:
        return view.int("num_nextn_predict_layers", 0, minimum=0)
    if family == "gdn":
        v = view.get("mtp_num_hidden_layers", None)
        if v is not None:
            return view.check_int("mtp_num_hidden_layers", v, minimum=0)
        return view.int("num_nextn_predict_layers", 1, minimum=0)
    return 0


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


def mtp_layers(view: HFView, ctx: Context, family: str, target_layers: int, last_index: int,
               architecture: str | None = None) -> list[Built]:
    """MTP layers are target-architecture layers (reference §6):
    DeepSeek: an MLA decoder layer identical to the target's (V3.2: with its indexer), named
    ``model.layers.{N+i}...``; Qwen3-Next/3.5: a ``full_attention`` decoder layer with the
    target's full-attention heads, named ``mtp.layers.{i}.self_attn.attn``; MiMo: the same
    attention named ``model.layers.{N+i}.self_attn.attn``. The target's family rules build them, as vLLM builds
    them from the target's config."""
    count = mtp_count(view, family, architecture)
    out: list[Built] = []
    if architecture in MTP_DECODER_ARCHS:
        spec = full_attention_spec(view, ctx)
        for i in range(count):
            out.append(Built(f"model.layers.{target_layers + i}.self_attn.attn", spec, last_index))
    elif family == "deepseek":
        for i in range(count):
            out += [replace(b, layer_index=last_index) for b in mla_layer(view, ctx, target_layers + i, "model")]
    elif family == "gdn":
        spec = full_attention_spec(view, ctx)
        for i in range(count):
            out.append(Built(f"mtp.layers.{i}.self_attn.attn", spec, last_index))
    elif family == "deepseek_v4":  # DeepSeekV4MTP: a V4 decoder layer past num_hidden_layers, its swa_cache only
        out += deepseek_v4.mtp_layers(view, count, target_layers, last_index)
    return out
