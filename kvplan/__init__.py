"""kvplan: predict how an inference engine lays out the KV cache of a model, offline.

Library API (imports nothing heavy; transformers loads only when a config is parsed), one
function per command, each returning the dict ``--format json`` prints::

    import kvplan
    r = kvplan.simulate("openai/gpt-oss-20b", drafter="amazon/GPT-OSS-20B-P-EAGLE", kv_cache_memory="40GiB")

See kvplan.api for every function and kvplan.options for every option.
"""

__version__ = "0.1.0"

_API = ("inspect", "simulate", "sweep", "compare", "fit", "gpus", "check", "models", "explain_log")


def __getattr__(name: str):
    # Lazy re-exports keep `import kvplan` (and `kvplan --help`) cheap.
    if name in _API:
        from kvplan import api

        return getattr(api, name)
    if name in {"ServingOptions", "build_model_layout", "ModelLayout"}:
        from kvplan import model

        return getattr(model, name)
    raise AttributeError(name)


__all__ = ["__version__", *_API]
