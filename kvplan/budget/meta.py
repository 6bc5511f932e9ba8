"""The meta-device parameter count: transformers builds the model on ``torch.device("meta")``.

The only module of ``kvplan.budget`` that imports torch or transformers, and only inside
``meta_param_counts`` (``--exact-params`` and the tests): no memory, no weights, no download,
never remote code. The analytic count (``kvplan.model.inventory``) needs neither.
"""

from __future__ import annotations

from kvplan.errors import UnsupportedError
from kvplan.model.hfconfig import (
    build_config_object,
    config_class,
    quiet_transformers,
    validate_sizes,
    without_remote_code,
)

_VISION_PREFIXES = ("model.vision_tower", "vision_tower", "model.multi_modal_projector", "multi_modal_projector",
                    "model.embed_vision", "model.visual", "visual", "model.vision_model", "vision_model")


def meta_param_counts(config: dict, *, path: str = "<config>") -> dict[str, int]:
    """``{"text": n, "vision": m, "total": n + m}``: the parameters transformers builds for
    ``config`` on torch's meta device (no memory, no weights, no remote code).

    Needs torch (``pip install torch``); raises UnsupportedError for a model type transformers
    does not know (kvplan never runs remote code)."""
    try:
        import torch
    except ImportError:
        raise UnsupportedError("--exact-params needs torch (pip install torch); the analytic count needs nothing") from None
    from transformers import AutoModelForCausalLM

    with quiet_transformers():
        # transformers' own class for the model type when it has one (DeepseekV32 builds
        # the indexer); else the alias vLLM registers (kimi_k2 → DeepseekV3Config).
        model_type = config.get("model_type")
        cls = config_class(model_type, vllm_aliases=False) if isinstance(model_type, str) else None
        if cls is not None:
            validate_sizes(config, path)
            obj = cls(**without_remote_code(config))
        else:
            obj = build_config_object(config, path)
            real = getattr(obj, "_real_obj", None)  # a recorded view (config_cache): the model needs the class
            if callable(real):
                obj = real()
        if obj is None:
            raise UnsupportedError(
                f"transformers does not know model type {config.get('model_type')!r}; use the analytic count"
            )
        try:
            with torch.device("meta"):
                model = AutoModelForCausalLM.from_config(obj)
        except Exception as e:  # pragma: no cover - depends on the transformers release
            raise UnsupportedError(
                f"transformers cannot build {config.get('model_type')!r} on the meta device: {e}"
            ) from None
    text = vision = 0
    for name, p in model.named_parameters():  # parameters() dedups tied weights
        if name.startswith(_VISION_PREFIXES):
            vision += p.numel()
        else:
            text += p.numel()
    return {"text": text, "vision": vision, "total": text + vision}


