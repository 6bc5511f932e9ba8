"""Glue shared by commands: option values → library inputs."""

from __future__ import annotations

import json

from kvplan.errors import OptionError
from kvplan.units import parse_bytes


def serving_options(*, block_size, attention_backend, kv_cache_dtype, dtype, tensor_parallel_size,
                    pipeline_parallel_size, speculative_method, num_speculative_tokens,
                    disable_sliding_window=False):
    from kvplan.model import ServingOptions
    from kvplan.units import CACHE_DTYPES, MODEL_DTYPES

    if kv_cache_dtype not in CACHE_DTYPES:
        raise OptionError(f"--kv-cache-dtype '{kv_cache_dtype}' is not one of: {', '.join(CACHE_DTYPES)}")
    if dtype != "auto" and dtype not in MODEL_DTYPES:
        raise OptionError(f"--dtype '{dtype}' is not one of: auto, {', '.join(MODEL_DTYPES)}")
    methods = ("eagle", "eagle3", "mtp", "draft_model")
    if speculative_method is not None and speculative_method not in methods:
        raise OptionError(f"--speculative-method '{speculative_method}' is not one of: {', '.join(methods)}")
    return ServingOptions(
        block_size=block_size,
        attention_backend=attention_backend,
        kv_cache_dtype=kv_cache_dtype,
        dtype=dtype,
        tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size,
        speculative_method=speculative_method,
        num_speculative_tokens=num_speculative_tokens,
        disable_sliding_window=disable_sliding_window,
    )


def parse_size(value: str, flag: str) -> int:
    try:
        n = parse_bytes(value)
    except ValueError as e:
        raise OptionError(f"{flag}: {e}") from None
    if n <= 0:
        raise OptionError(f"{flag} must be positive, got {value!r}")
    return n


def parse_max_model_len(value: str | None) -> int | None:
    if value is None:
        return None
    if value.strip().lower() in ("auto", "-1"):
        return -1
    try:
        n = int(value.replace("_", "").replace(",", ""))
    except ValueError:
        raise OptionError(f"--max-model-len must be a number of tokens or 'auto', got {value!r}") from None
    if n <= 0:
        raise OptionError(f"--max-model-len must be positive or 'auto', got {value!r}")
    return n


def parse_kv_transfer_config(value: str | None) -> dict | None:
    if value is None:
        return None
    try:
        data = json.loads(value)
    except json.JSONDecodeError as e:
        raise OptionError(f"--kv-transfer-config is not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(data, dict):
        raise OptionError("--kv-transfer-config must be a JSON object such as '{\"kv_connector\": \"NixlConnector\"}'")
    return data


def mamba_cache_mode(value: str | None) -> str | None:
    if value is not None and value not in ("none", "align", "all"):
        raise OptionError(f"--mamba-cache-mode '{value}' is not one of: none, align, all")
    return value
