"""Model intake: a model argument → config.json → the ordered per-layer specs vLLM registers.

Public API: ``ServingOptions``, ``ModelSource``, ``ModelInfo``, ``ModelLayout``,
``resolve_model``, ``load_model_info``, ``build_model_layout``, ``list_catalog``.
Importing this package imports neither transformers nor torch; transformers is loaded
lazily when a config is parsed.
"""

# Resolved lazily (PEP 562): importing one submodule (kvplan.model.methods for the option table)
# must not load the whole model layer.
_EXPORTS = {
    "list_catalog": "catalog",
    "ModelInfo": "layout", "ModelLayout": "layout", "build_model_layout": "layout", "get_pp_indices": "layout",
    "load_model_info": "layout",
    "ServingOptions": "options",
    "ModelSource": "source", "resolve_model": "source",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f"kvplan.model.{_EXPORTS[name]}"), name)
    raise AttributeError(name)


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
