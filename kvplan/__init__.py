"""kvplan: predict how an inference engine lays out the KV cache of a model, offline.

Library API (imports nothing heavy; transformers loads only when a config is parsed), one
function per command, each returning the command's result record (``kvplan.results.envelope.Envelope``,
whose ``to_dict()`` is what ``--format json`` prints)::

    import kvplan
    r = kvplan.simulate("openai/gpt-oss-20b", drafter="amazon/GPT-OSS-20B-P-EAGLE", kv_cache_memory="40GiB")

See kvplan.api for every function and kvplan.options for every option.
"""

from kvplan.version import __version__


def __getattr__(name: str):
    # Lazy re-exports keep `import kvplan` (and `kvplan --help`) cheap.
    if not name.startswith("_") and name != "api":
        import importlib

        api = importlib.import_module("kvplan.api")
        if name in api.COMMANDS:
            return getattr(api, name)
    if name in {"ServingOptions", "build_model_layout", "ModelLayout"}:
        from kvplan import model

        return getattr(model, name)
    raise AttributeError(name)


__all__ = ["__version__"]  # plus every name in kvplan.api.COMMANDS, resolved lazily
