"""vLLM's checks before the KV cache: configurations ``vllm serve`` refuses while it builds its
config or the model, predicted as start-up failures (``EngineFailure``; exit 3) with vLLM's own
text, for every command (simulate, fit, check and compare all run ``plan.simulate``).

Each check names where vLLM raises it (file and line in the 0.18.0, 0.33.0 and 0.34.0 wheels)
and the exception the process dies with. ``ModelConfig`` is a pydantic dataclass: a
``ValueError`` raised while it validates reaches the user as pydantic's ``ValidationError``
("1 validation error for ModelConfig / Value error, <vLLM's text>"), so ``error_type`` is
``ValidationError`` there and ``error`` vLLM's text; the stage names the check.

Checks run in the order vLLM meets them: ``ModelConfig`` (max_model_len), then the model's
construction (``get_pp_indices`` and ``VLLM_PP_LAYER_PARTITION``).
"""

from __future__ import annotations

from kvplan.errors import EngineFailure, OptionError

STAGE_MAX_MODEL_LEN = "config.max_model_len"
STAGE_PP_PARTITION = "model_init.pp_layer_partition"

LONG_MAX_MODEL_LEN_WARNING = (
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position "
    "encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute position "
    "encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error."
)


def before_kv_cache(stage: str | None) -> bool:
    """Whether a failure stage is one of vLLM's config or model-construction checks (no memory
    budget changes it), as opposed to the KV-cache stages (grouping, admission, auto-fit)."""
    return bool(stage) and (stage == "config" or stage.startswith(("config.", "model_init.")))


def _fmt(value) -> str:
    """A number as Python's f-string prints it (``131072.0`` after RoPE scaling, ``4096``)."""
    return str(value)


def check_max_model_len(facts, options, logs: list[str]) -> None:
    """``_get_and_verify_max_len`` (config/model.py, the message at 0.18.0 line 2066, 0.33.0 line
    2664, 0.34.0 line 2708; the same text in all three): a given --max-model-len above the derived
    maximum (and above the config's own model_max_length) is a ValueError, unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN is set, when it is a warning."""
    derived = facts.derived_max_len
    mml = options.max_model_len
    if derived is None or mml in (None, -1) or not mml > derived.value:
        return
    model_max_length = derived.model_max_length
    if model_max_length is not None and mml <= model_max_length:
        return
    msg = (f"User-specified max_model_len ({mml}) is greater than the derived max_model_len ({derived.key}="
           f"{_fmt(derived.value)} or model_max_length={model_max_length} in model's config.json).")
    if options.allow_long_max_model_len:
        logs.append(f"{msg} {LONG_MAX_MODEL_LEN_WARNING}")
        return
    raise EngineFailure("ValidationError", f"{msg} To allow overriding this maximum, set the env var "
                        f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. {LONG_MAX_MODEL_LEN_WARNING}", STAGE_MAX_MODEL_LEN)


def check_pp_partition(facts, era) -> None:
    """``get_pp_indices`` with ``VLLM_PP_LAYER_PARTITION`` (distributed/utils.py: 0.18.0 lines
    110-121, 0.34.0 lines 227-238), called while the model is built: not integers, not one entry
    per stage, or not summing to the layer count is a ValueError; 0.34.0 also refuses negative
    entries. Before 0.34.0 a negative entry gave stages with negative ranges (not modelled)."""
    if facts.pp_partition_error:
        raise EngineFailure("ValueError", facts.pp_partition_error, STAGE_PP_PARTITION)
    parts = facts.pp_partition
    if parts is None or all(p >= 0 for p in parts):
        return
    text = ",".join(map(str, parts))
    if era.pp_partition_negative_check:
        raise EngineFailure("ValueError", f"Negative layer count in partition_list_str={text!r}.", STAGE_PP_PARTITION)
    raise OptionError(f"--env VLLM_PP_LAYER_PARTITION={text}: negative layer counts are not modelled for "
                      f"{era.release or era.name} (vLLM 0.34.0 refuses them); give each stage 0 or more layers")


def check_config(facts, options, era, logs: list[str]) -> None:
    """Every check, in vLLM's order; raises ``EngineFailure`` at the first that fails."""
    check_max_model_len(facts, options, logs)
    check_pp_partition(facts, era)
