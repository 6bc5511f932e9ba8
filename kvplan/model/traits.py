"""What vLLM's ``ModelConfig`` says about a model's kind, as the engine's choices read it
(0.22.0-0.28.0 pick the model runner by these: ``VllmConfig._is_default_v2_model_runner_model``,
kvplan.engines.vllm.runner.v2_by_model)."""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.model.limits import text_config
from kvplan.specs import MAMBA

# ModelArchConfigConvertorBase.get_num_experts: the first of these the text config has (0.22.0
# vllm/transformers_utils/model_arch_config_convertor.py lines 113-131; the same in 0.28.0 lines 186-203)
NUM_EXPERTS_KEYS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")


@dataclass(frozen=True)
class ModelTraits:
    architectures: tuple[str, ...]  # hf_config.architectures
    is_moe: bool  # ModelConfig.is_moe: get_num_experts() > 0
    is_quantized: bool  # ModelConfig.is_quantized: hf_config.quantization_config is set
    is_hybrid: bool  # ModelConfig.is_hybrid: Mamba-style layers beside attention layers
    is_attention_free: bool  # ModelConfig.is_attention_free: no attention layer at all


def num_experts(config: dict) -> int:
    """``get_num_experts``: the first expert-count key the text config has (a list: its first entry);
    when that is unset or 0, the most routed experts of a ``block_configs`` "moe" block (NemotronH-style)."""
    cfg = text_config(config)
    key = next((k for k in NUM_EXPERTS_KEYS if k in cfg), None)
    n = cfg[key] if key else 0
    if isinstance(n, list):
        return n[0] if n else 0
    if not n:
        blocks = cfg.get("block_configs")
        n = max((b.get("n_routed_experts", 0) or 0 for b in blocks or () if isinstance(b, dict)
                 and b.get("block_type", "") == "moe"), default=0)
    return n if isinstance(n, int) else 0


def model_traits(layout) -> ModelTraits:
    """The traits of a ModelLayout's target model. ``is_hybrid`` / ``is_attention_free`` are vLLM's
    model-class interfaces (IsHybrid, IsAttentionFree), read here from the layers the target registers:
    state layers beside attention layers (a hybrid config whose layers are all attention, granite-4.0-micro,
    is not hybrid: 0.22.0 vllm/config/model.py lines 1631-1639), or state layers only."""
    config = layout.target.config
    target = [ls for ls in layout.layers if ls.source == "target"]
    state = sum(ls.spec.kind == MAMBA for ls in target)
    archs = config.get("architectures")
    return ModelTraits(
        architectures=tuple(a for a in archs if isinstance(a, str)) if isinstance(archs, list)
        else (layout.target.architecture,),
        is_moe=num_experts(config) > 0,
        is_quantized=config.get("quantization_config") is not None,
        is_hybrid=0 < state < len(target),
        is_attention_free=bool(target) and state == len(target),
    )
