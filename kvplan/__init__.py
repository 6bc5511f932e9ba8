"""kvplan: predict how an inference engine lays out the KV cache of a model, offline.

Public API (imports nothing heavy; transformers loads only when a config is parsed):

    from kvplan import PlanRequest, SimulateOptions, plan
    layout, result = plan(PlanRequest("openai/gpt-oss-20b", drafter="amazon/GPT-OSS-20B-P-EAGLE"),
                          SimulateOptions(kv_cache_memory_bytes=40 << 30))
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    # Lazy re-exports keep `import kvplan` (and `kvplan --help`) cheap.
    if name in {"PlanRequest", "plan", "plan_layout", "resolve_era", "model_facts", "derive_max_model_len"}:
        from kvplan import api

        return getattr(api, name)
    if name in {"SimulateOptions", "ModelFacts", "Plan", "simulate", "get_era"}:
        from kvplan.engines import vllm

        return getattr(vllm, name)
    if name in {"ServingOptions", "build_model_layout", "ModelLayout"}:
        from kvplan import model

        return getattr(model, name)
    raise AttributeError(name)
