"""What vLLM's ``ModelConfig`` says about a model beside its layers, as the engine's choices read it:
its kind (0.22.0-0.28.0 pick the model runner by these: ``VllmConfig._is_default_v2_model_runner_model``,
kvplan.engines.vllm.runner.v2_by_model), its lengths, hidden size and head counts, and what the
drafter's config says to the target. The model stage works them out once (``config_facts``) and the
layout carries them as values (``ModelLayout.config_facts``)."""

from __future__ import annotations

from kvplan.frozen import dataclass
from kvplan.model.limits import MaxLength, max_lengths, text_config
from kvplan.specs import MAMBA, LayerSpec

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


def model_traits(config: dict, architecture: str, target: list[LayerSpec]) -> ModelTraits:
    """The traits of a target model from its config and the layers it registers (``target``).
    ``is_hybrid`` / ``is_attention_free`` are vLLM's model-class interfaces (IsHybrid, IsAttentionFree),
    read here from those layers: state layers beside attention layers (a hybrid config whose layers are
    all attention, granite-4.0-micro, is not hybrid: 0.22.0 vllm/config/model.py lines 1631-1639), or
    state layers only."""
    state = sum(ls.spec.kind == MAMBA for ls in target)
    archs = config.get("architectures")
    return ModelTraits(
        architectures=tuple(a for a in archs if isinstance(a, str)) if isinstance(archs, list)
        else (architecture,),
        is_moe=num_experts(config) > 0,
        is_quantized=config.get("quantization_config") is not None,
        is_hybrid=0 < state < len(target),
        is_attention_free=bool(target) and state == len(target),
    )


@dataclass(frozen=True)
class ConfigFacts:
    """What the engine reads from the configs besides the layer specs, worked out once by the model
    stage: the target's traits, lengths, hidden size and head counts, and what an EAGLE drafter's
    config says about its target."""

    traits: ModelTraits
    # the target's lengths by (Era.yarn_max_len, --disable-sliding-window): limits.max_lengths
    max_lengths: dict[tuple[str, bool], MaxLength]
    hidden_size: int | None  # the target text config's hidden_size
    total_num_kv_heads: int | None  # num_key_value_heads, else num_attention_heads
    total_num_attention_heads: int | None
    # the hidden size an EAGLE/EAGLE-3 drafter expects from its target: the draft config's
    # ``target_hidden_size``, else its own ``hidden_size`` (vLLM's llama_eagle3.py / llama_eagle.py);
    # None for other methods (a draft model runs on its own)
    drafter_target_hidden_size: int | None
    # a P-EAGLE head: its config carries the masked-slot token (``ptd_token_id``) vLLM reads once
    # ``speculative_config.parallel_drafting`` is on (0.33.0 ``get_parallel_drafting_token_id``,
    # v1/worker/gpu/spec_decode/utils.py); the token alone does not turn parallel drafting on
    drafter_ptd_token: bool


def _opt_int(cfg: dict, *keys: str) -> int | None:
    """The first integer among ``keys`` in a config (None when none is)."""
    return next((cfg[k] for k in keys if isinstance(cfg.get(k), int) and not isinstance(cfg.get(k), bool)), None)


def config_facts(config: dict, architecture: str, layers: tuple[LayerSpec, ...], speculative_method: str | None,
                 drafter_config: dict | None) -> ConfigFacts:
    """The ``ConfigFacts`` of a target ``config`` (``architecture``: the one the layout was built for)
    whose layout registers ``layers`` (target and drafter), with ``drafter_config`` as its drafter's."""
    text = text_config(config)
    eagle = drafter_config if speculative_method in ("eagle", "eagle3") and isinstance(drafter_config, dict) else None
    return ConfigFacts(
        traits=model_traits(config, architecture, [ls for ls in layers if ls.source == "target"]),
        max_lengths=max_lengths(config),
        hidden_size=_opt_int(text, "hidden_size"),
        total_num_kv_heads=_opt_int(text, "num_key_value_heads", "num_attention_heads"),
        total_num_attention_heads=_opt_int(text, "num_attention_heads"),
        drafter_target_hidden_size=_opt_int(text_config(eagle), "target_hidden_size", "hidden_size")
        if eagle is not None else None,
        drafter_ptd_token=eagle is not None and eagle.get("ptd_token_id") is not None,
    )
