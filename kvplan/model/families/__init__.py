"""Per-family rules: a (text) config → the attention/Mamba layers vLLM registers, in order, and every weight
tensor vLLM loads. One module per family (``kvplan/model/families/<family>.py``), each the rule of that family's
vLLM model file and holding all of it: its layer rule, its weight rules, the architectures and model types it
serves and the config keys it reads, exported as one ``Family`` record (``FAMILY``). The family table
(``registry``: ``FAMILIES``, ``ARCH_FAMILY``, ``MODEL_TYPE_FAMILY``, ``HYBRID_FAMILIES``) is derived from those
records; adding a family is one module and one entry in ``registry.MODULES``.

Each layer rule reads the config as vLLM does (``HFView``: transformers object first) and returns ``Built``
layers in registration order with the decoder-layer index each belongs to (for the PP partition) and the
per-rank (TP-split) spec. Layer names follow the module prefixes of vLLM's model files:

==========================  =============================================================
family                      registered names
==========================  =============================================================
Llama-style, Gemma, Qwen    ``model.layers.{i}.self_attn.attn``
gpt-oss                     ``model.layers.{i}.attn.attn`` (``TransformerBlock.attn`` = OAIAttention)
multimodal wrappers         ``language_model.model.layers.{i}...`` (Gemma 3/3n/4, Llama 4, Qwen3.5)
Qwen3-Next / Qwen3.5 GDN    ``model.layers.{i}.linear_attn`` (the GatedDeltaNet module)
Nemotron-H                  ``model.layers.{i}.mixer`` (Mamba2), ``model.layers.{i}.mixer.attn``
Jamba                       ``model.layers.{i}.mamba``, ``model.layers.{i}.attn``
DeepSeek V2/V3 (MLA)        ``model.layers.{i}.self_attn.attn``
DeepSeek-V3.2               ``model.layers.{i}.self_attn.indexer.k_cache`` then ``...self_attn.attn``
Whisper                     ``model.decoder.layers.{i}.self_attn.attn`` / ``.encoder_attn.attn``
==========================  =============================================================

A name only labels a layer; the grouping depends on the order and the specs.

Shared parts: ``base`` (``Built``, ``Context``, ``FamilyResult`` and the attention helpers), ``record`` (the
``Family`` record and ``inventory_of``), ``weights`` (``WeightView``, ``Builder``, the EAGLE heads' weights),
``mamba_state`` (the recurrent-state helpers of the Mamba hybrids).
"""

from __future__ import annotations

from kvplan.model.families.base import Built, Context, FamilyResult
from kvplan.model.families.record import Family
from kvplan.model.families.deepseek import is_v32
from kvplan.model.families.deepseek_v4 import dspark_block_size, dspark_layers
from kvplan.model.families.llama import EAGLE1_ARCHS, EAGLE3_ARCHS
from kvplan.model.families.registry import (
    ARCH_FAMILY, CACHE_CONFIG_NOT_PASSED, FAMILIES, GENERIC, GENERIC_ARCHS, HYBRID_FAMILIES, MODEL_TYPE_FAMILY,
    MODULES, TextFacts, config_views, draft_model_layers, draft_n_predict, eagle_layers, family_of, kv_dtype_counts, mtp_count,
    mtp_layers, refusal, selector_head_size, text_facts, vllm_registry,
)

__all__ = [
    "ARCH_FAMILY", "CACHE_CONFIG_NOT_PASSED", "EAGLE1_ARCHS", "EAGLE3_ARCHS", "FAMILIES", "GENERIC", "GENERIC_ARCHS",
    "HYBRID_FAMILIES", "MODEL_TYPE_FAMILY", "MODULES", "Built", "Context", "Family", "FamilyResult", "TextFacts", "config_views",
    "draft_model_layers", "draft_n_predict", "dspark_block_size", "dspark_layers", "eagle_layers", "family_of", "is_v32", "kv_dtype_counts", "mtp_count",
    "mtp_layers", "refusal", "selector_head_size", "text_facts", "vllm_registry",
]
