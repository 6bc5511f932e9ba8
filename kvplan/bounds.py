"""Plausibility bounds: inputs above them are refused with one line, so every run answers in
about a second (kvplan's work grows with the number of layers and pipeline stages; a config
with 2**31 layers would otherwise build 2**31 layer specs).

Each bound is far above any released model (the catalog peaks at 118 layers, 128 heads,
head size 576, 10,485,760 tokens of context) and documented in docs/reference.md "Plausibility bounds".
"""

from __future__ import annotations

MAX_LAYERS = 512  # num_hidden_layers (and MTP, drafter, decoder layers); also the most pipeline stages
MAX_HEADS = 1024  # attention / KV / linear-attention / Mamba heads; also the most TP or DCP ranks
MAX_HEAD_SIZE = 4096  # head_dim, MLA latent and rope dims, state sizes
MAX_HIDDEN = MAX_HEADS * MAX_HEAD_SIZE  # hidden_size / d_model (a head size is hidden_size // heads)
MAX_TOKENS = 1 << 30  # max_model_len, sliding window, attention chunk, batched tokens: 1,073,741,824
MAX_SWEEP_POINTS = 1000  # thresholds of one --sweep-threshold
MAX_BYTES = 1 << 60  # any size (a KV budget, a GPU's memory, weights): 1 EiB, ~7,000 times an H200
MAX_INT = (1 << 63) - 1  # any integer option: vLLM's counts and sizes end in C/torch int64
MAX_NAME_CHARS = 4096  # a model id or path: PATH_MAX on Linux (a Hugging Face repo id is at most 96)

LAYER_KEYS = ("num_hidden_layers", "decoder_layers", "encoder_layers", "num_layers", "n_layer",
              "num_nextn_predict_layers", "mtp_num_hidden_layers", "num_kv_shared_layers")
HEAD_KEYS = ("num_attention_heads", "num_key_value_heads", "n_head", "num_heads", "decoder_attention_heads",
             "swa_num_key_value_heads", "num_global_key_value_heads", "linear_num_key_heads",
             "linear_num_value_heads", "mamba_num_heads", "n_groups")
HEAD_SIZE_KEYS = ("head_dim", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "swa_head_dim",
                  "swa_v_head_dim", "global_head_dim", "attention_head_dim", "index_head_dim",
                  "linear_key_head_dim", "linear_value_head_dim", "mamba_head_dim", "ssm_state_size",
                  "mamba_d_state")
HIDDEN_KEYS = ("hidden_size", "d_model")
WINDOW_KEYS = ("sliding_window", "sliding_window_size", "attention_chunk_size")
LIST_KEYS = ("layer_types", "hybrid_override_pattern", "hybrid_layer_pattern", "no_rope_layers")

# (keys, bound, what one unit is called)
CONFIG_BOUNDS = (
    (LAYER_KEYS, MAX_LAYERS, "layers"),
    (HEAD_KEYS, MAX_HEADS, "heads"),
    (HEAD_SIZE_KEYS, MAX_HEAD_SIZE, "head size"),
    (HIDDEN_KEYS, MAX_HIDDEN, "hidden size"),
    (WINDOW_KEYS, MAX_TOKENS, "tokens"),
)


def _ints(value) -> list[int]:
    items = value if isinstance(value, list) else [value]
    return [v for v in items if isinstance(v, int) and not isinstance(v, bool)]


def config_out_of_bounds(cfg: dict) -> tuple[str, str] | None:
    """``(field, problem)`` for the first value of ``cfg`` (one config level) above its bound."""
    for keys, bound, unit in CONFIG_BOUNDS:
        for key in keys:
            for v in _ints(cfg.get(key)):
                if v > bound:
                    return key, f"{v:,} is above kvplan's plausibility bound of {bound:,} ({unit})"
    for key in LIST_KEYS:
        entries = cfg.get(key)
        if isinstance(entries, (list, str)) and len(entries) > MAX_LAYERS:
            return key, f"{len(entries):,} entries is above kvplan's plausibility bound of {MAX_LAYERS:,} layers"
    return None
