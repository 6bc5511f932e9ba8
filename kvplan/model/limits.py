"""Model facts vLLM derives from a config before any KV decision: the default ``max_model_len``."""

from __future__ import annotations

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
