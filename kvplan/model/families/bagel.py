"""BAGEL (vLLM 0.34.0 ``model_executor/models/bagel.py``): a Qwen2 language model built from the config's
``llm_config`` under ``language_model``, beside vision and generation towers that keep no KV cache."""

from __future__ import annotations

from dataclasses import replace

from kvplan.errors import ConfigError
from kvplan.model.families.base import Built, Context, FamilyResult
from kvplan.model.families.qwen2 import build_qwen2
from kvplan.model.families.record import Family
from kvplan.model.hfconfig import HFView, build_config_object


def build_bagel(view: HFView, ctx: Context) -> FamilyResult:
    """``BagelForConditionalGeneration.__init__`` (bagel.py lines 357-365) builds ``init_vllm_registered_model(
    hf_config=config.llm_config, prefix="language_model", architectures=["Qwen2ForCausalLM"])``, and vLLM's
    ``BagelConfig`` reads ``llm_config`` as a ``Qwen2Config`` (transformers_utils/configs/bagel.py lines 31-35):
    Qwen2's rule on that config, its layers named ``language_model.model.layers.{i}.self_attn.attn``."""
    sub = view.get("llm_config", None)
    if not isinstance(sub, dict):
        raise ConfigError(view.path, view.field("llm_config"), "required key is missing or not an object",
                          "give the language model's Qwen2 config as llm_config")
    sub_view = HFView(sub, build_config_object({**sub, "model_type": "qwen2"}, view.path), path=view.path,
                      prefix="llm_config.")
    res = build_qwen2(sub_view, replace(ctx, architecture="Qwen2ForCausalLM", model_type="qwen2"))
    res.layers = [Built(f"language_model.{b.name}", b.spec, b.layer_index) for b in res.layers]
    return res


FAMILY = Family(
    "bagel", build_bagel,
    architectures=("BagelForConditionalGeneration",),
    model_types=("bagel",),
    config_keys=("llm_config",),
)
