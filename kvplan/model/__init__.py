"""Model intake: a model argument → config.json → the ordered per-layer specs vLLM registers.

Public API: ``ServingOptions``, ``ModelSource``, ``ModelInfo``, ``ModelLayout``,
``resolve_model``, ``load_model_info``, ``build_model_layout``, ``list_catalog``.
Importing this package imports neither transformers nor torch; transformers is loaded
lazily when a config is parsed.
"""

from kvplan.model.catalog import list_catalog
from kvplan.model.layout import ModelInfo, ModelLayout, build_model_layout, get_pp_indices, load_model_info
from kvplan.model.options import ServingOptions
from kvplan.model.source import ModelSource, resolve_model

__all__ = [
    "ModelInfo",
    "ModelLayout",
    "ModelSource",
    "ServingOptions",
    "build_model_layout",
    "get_pp_indices",
    "list_catalog",
    "load_model_info",
    "resolve_model",
]
