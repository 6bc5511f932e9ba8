"""Model facts vLLM derives from a config before any KV decision: the derived maximum length
(the default ``max_model_len`` and the ceiling a given one is checked against).

vLLM's ``_get_and_verify_max_len`` (``vllm/config/model.py``: 0.18.0 line 1949, 0.33.0 line
2545, 0.34.0 line 2589) with ``derive_max_model_len_and_key``
(``transformers_utils/model_arch_config_convertor.py``, 0.34.0 line 375):

1. the smallest of the length keys (the first key on a tie); a ``model_max_length`` in the
   config replaces it (Command-R). ``ModelArchitectureConfig.derived_max_model_len_and_key`` is
   typed ``tuple[float, str | None]`` and pydantic makes the number a float, so vLLM's message
   says ``max_position_embeddings=8192.0`` even for a model without RoPE (model_arch.py: 0.18.0
   line 56, 0.33.0 and 0.34.0 line 65; run in 0.34.0 on Nemotron-H-56B-Base-8K and gemma-3-1b-it);
2. ``--disable-sliding-window``: the window when it is smaller (key ``sliding_window``);
3. (the tokenizer's ``model_max_length`` caps it: kvplan reads no tokenizer_config.json);
4. RoPE: every model with RoPE parameters (``rope_theta`` is enough: vLLM's
   ``patch_rope_parameters`` gives it a "default" entry) except Gemma 3 multiplies by the
   scaling factor (a sliding window from step 2 becomes a float here: ``2047.0``). Types whose factor
   is already in ``max_position_embeddings`` are skipped: su, longrope, llama3, and from
   0.33.0 yarn, deepseek_yarn, deepseek_llama_scaling; up to 0.18.0 YaRN started from
   ``original_max_position_embeddings`` and applied the factor (``Era.yarn_max_len``).
"""

from __future__ import annotations

from dataclasses import field
from typing import TypeGuard

from kvplan.frozen import dataclass

_MAX_LEN_KEYS = (
    "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
    "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len",
)
_ROPE_KEYS = ("rope_theta", "rotary_emb_base", "partial_rotary_factor", "rotary_pct", "rotary_emb_fraction",
              "original_max_position_embeddings")
_FACTOR_IN_LENGTH = ("su", "longrope", "llama3")
_FACTOR_IN_LENGTH_033 = (*_FACTOR_IN_LENGTH, "yarn", "deepseek_yarn", "deepseek_llama_scaling")
DEFAULT_MAX_LEN = 2048  # vLLM's default when no key is found


@dataclass(frozen=True)
class DerivedLength:
    """vLLM's derived maximum length: ``value`` as vLLM holds it (a float after RoPE scaling),
    ``key`` the config field it came from, ``model_max_length`` the config's own (vLLM's
    ``getattr(hf_config, "model_max_length", None)``)."""

    value: int | float
    key: str | None
    model_max_length: int | None = None
    tokens: int = field(init=False)  # ``value`` as a whole number of tokens

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", int(self.value))


def text_config(config: dict) -> dict:
    """The text (decoder) part of a raw config: its ``text_config`` when that is a mapping (a
    multimodal checkpoint), else the config itself (the raw-dict form of ``hfconfig.text_view``)."""
    inner = config.get("text_config")
    return inner if isinstance(inner, dict) else config


def _num(v: object) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _rope_entries(cfg: dict) -> list[dict]:
    """The RoPE parameter sets vLLM iterates (one per layer type when nested)."""
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    if isinstance(rope, dict) and rope and all(isinstance(v, dict) for v in rope.values()):
        return list(rope.values())
    if isinstance(rope, dict) and rope:
        return [rope]
    if any(cfg.get(k) is not None for k in _ROPE_KEYS):
        return [{"rope_type": "default"}]
    return []


def derived_max_len(config: dict, *, disable_sliding_window: bool = False,
                    yarn_max_len: str = "factor_in_length") -> DerivedLength:
    """vLLM's derived maximum length for ``config``. ``yarn_max_len``: "factor_in_length"
    (0.33.0+: YaRN lengths are already scaled) or "original_times_factor" (up to 0.18.0)."""
    cfg = text_config(config)
    value: int | float = float("inf")
    key = None
    for k in _MAX_LEN_KEYS:
        v = cfg.get(k)
        if _num(v) and v < value:
            value, key = float(v), k
    model_max_length = cfg.get("model_max_length") if _num(cfg.get("model_max_length")) else None
    if model_max_length:
        value, key = float(model_max_length), "model_max_length"
    if disable_sliding_window:
        window = cfg.get("sliding_window_size", cfg.get("sliding_window"))
        windows = [w for w in (window if isinstance(window, list) else [window]) if _num(w) and w > 0]
        if windows and min(windows) < value:
            value, key = min(windows), "sliding_window"
    if value == float("inf"):
        value = DEFAULT_MAX_LEN
    model_type = str(cfg.get("model_type", "")) + str(config.get("model_type", ""))
    entries = _rope_entries(cfg)
    if entries and "gemma3" not in model_type:
        skipped = _FACTOR_IN_LENGTH if yarn_max_len == "original_times_factor" else _FACTOR_IN_LENGTH_033
        factor = 1.0
        for rp in entries:
            rope_type = rp.get("rope_type", rp.get("type", "default"))
            if rope_type not in skipped:
                factor = rp.get("factor", factor)
                if rope_type == "yarn" and yarn_max_len == "original_times_factor":
                    value = rp.get("original_max_position_embeddings", value)
        value = value * (1.0 if factor is None else factor)
    return DerivedLength(value, key, model_max_length)


def derive_max_model_len(config: dict, *, disable_sliding_window: bool = False,
                         yarn_max_len: str = "factor_in_length") -> int:
    """vLLM's default ``max_model_len``: the derived maximum as an integer; LongRoPE models
    start from ``original_max_position_embeddings`` (fewer tokens than they allow)."""
    cfg = text_config(config)
    if any(rp.get("rope_type", rp.get("type")) == "longrope" for rp in _rope_entries(cfg)) and _num(
            cfg.get("original_max_position_embeddings")):
        return int(cfg["original_max_position_embeddings"])
    return derived_max_len(config, disable_sliding_window=disable_sliding_window, yarn_max_len=yarn_max_len).tokens


# the two readings of YaRN an era can make (``Era.yarn_max_len``)
YARN_MAX_LEN_READINGS = ("factor_in_length", "original_times_factor")


@dataclass(frozen=True)
class MaxLength:
    """vLLM's lengths for a model under one reading of YaRN and one ``--disable-sliding-window``:
    the default ``max_model_len`` (``derive_max_model_len``) and the ceiling a given one is checked
    against (``derived_max_len``)."""

    max_model_len: int
    derived: DerivedLength


def max_lengths(config: dict) -> dict[tuple[str, bool], MaxLength]:
    """The model's lengths under every ``(Era.yarn_max_len, --disable-sliding-window)``: worked out
    once when the model is read, so that a layout simulated under several eras (``compare``) reads
    the one its era makes."""
    return {(yarn, dsw): MaxLength(derive_max_model_len(config, disable_sliding_window=dsw, yarn_max_len=yarn),
                                   derived_max_len(config, disable_sliding_window=dsw, yarn_max_len=yarn))
            for yarn in YARN_MAX_LEN_READINGS for dsw in (False, True)}
