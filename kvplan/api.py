"""The library entry points the CLI (and scripts) call: model → layout → plan.

Pure functions over frozen inputs; nothing here prints, parses options or imports
Typer, Rich or torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.engines.vllm import Era, ModelFacts, Plan, SimulateOptions, get_era, simulate
from kvplan.model import ModelLayout, ServingOptions, build_model_layout

_MAX_LEN_KEYS = (
    "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
    "max_sequence_length", "max_seq_length", "seq_len",
)


def _text_config(config: dict) -> dict:
    inner = config.get("text_config")
    return inner if isinstance(inner, dict) else config


def derive_max_model_len(config: dict, *, disable_sliding_window: bool = False) -> int:
    """vLLM's default ``max_model_len`` (``_get_and_verify_max_len``): the smallest of the
    length keys, scaled by the RoPE factor unless the rope type already accounts for it
    (su, longrope, llama3), with YaRN starting from ``original_max_position_embeddings``.
    Gemma 3 lengths are already scaled, so vLLM skips the factor for them."""
    cfg = _text_config(config)
    lengths = [cfg[k] for k in _MAX_LEN_KEYS if isinstance(cfg.get(k), int)]
    derived = min(lengths) if lengths else 2048
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    model_type = str(cfg.get("model_type", "")) + str(config.get("model_type", ""))
    if isinstance(rope, dict) and "factor" in rope and "gemma3" not in model_type:
        rope_type = rope.get("rope_type", rope.get("type"))
        if rope_type not in ("su", "longrope", "llama3", "default", None):
            if rope_type == "yarn" and "original_max_position_embeddings" in rope:
                derived = rope["original_max_position_embeddings"]
            derived = int(derived * rope["factor"])
    if disable_sliding_window:
        # --disable-sliding-window: max_model_len may not exceed the (smallest) window
        window = cfg.get("sliding_window_size", cfg.get("sliding_window"))
        windows = [w for w in (window if isinstance(window, list) else [window]) if isinstance(w, int) and w > 0]
        if windows:
            derived = min(derived, min(windows))
    return derived


def model_facts(layout: ModelLayout, *, disable_sliding_window: bool = False) -> ModelFacts:
    return ModelFacts(
        max_model_len=derive_max_model_len(layout.target.config, disable_sliding_window=disable_sliding_window),
        attention_chunk_size=layout.target.attention_chunk_size,
        speculative_method=layout.speculative_method,
        num_speculative_tokens=layout.num_speculative_tokens,
        mamba_chunk_size=layout.target.mamba_chunk_size,
        parallel_drafting=uses_parallel_drafting(layout),
        use_mla=any(ls.spec.kind == "mla" for ls in layout.layers),
        total_num_kv_heads=_opt_int(_text_config(layout.target.config), "num_key_value_heads",
                                    "num_attention_heads"),
        total_num_attention_heads=_opt_int(_text_config(layout.target.config), "num_attention_heads"),
    )


def _opt_int(cfg: dict, *keys: str) -> int | None:
    """The first integer among ``keys`` in a config (None when none is)."""
    return next((cfg[k] for k in keys if isinstance(cfg.get(k), int) and not isinstance(cfg.get(k), bool)), None)


def uses_parallel_drafting(layout: ModelLayout) -> bool:
    """P-EAGLE heads are served with ``speculative_config.parallel_drafting``: their config
    carries the masked-slot token (``ptd_token_id``, read by vLLM 0.33.0's
    ``_init_parallel_drafting_params``); an EAGLE head without it drafts sequentially."""
    d = layout.drafter
    return bool(d is not None and layout.speculative_method in ("eagle", "eagle3")
                and isinstance(d.config, dict) and d.config.get("ptd_token_id") is not None)


@dataclass(frozen=True)
class PlanRequest:
    """Everything one simulation needs, as a user states it."""

    model: str
    drafter: str | None = None
    serving: ServingOptions = ServingOptions()
    policy: str = "vllm-latest"
    threshold: float | None = None  # overrides the era's threshold when set
    revision: str | None = None
    download: bool = False


def resolve_era(policy: str, threshold: float | None) -> Era:
    era = get_era(policy)
    return era.with_threshold(threshold) if threshold is not None else era


def plan_layout(layout: ModelLayout, era: Era, options: SimulateOptions, *, disable_sliding_window: bool = False) -> Plan:
    facts = model_facts(layout, disable_sliding_window=disable_sliding_window)
    return simulate(layout.layers, layout.ranks, facts, era, options)


def plan(request: PlanRequest, options: SimulateOptions) -> tuple[ModelLayout, Plan]:
    layout = build_model_layout(
        request.model, request.drafter, request.serving, revision=request.revision, download=request.download
    )
    return layout, plan_layout(layout, resolve_era(request.policy, request.threshold), options)
