"""A drafter in emitted deployments (issue 37): kvplan emit writes the deployment's speculative decoding as vLLM's
--speculative-config JSON in every format, and kvplan's intake reads it back to the same drafter, method, tokens and
plan."""

from __future__ import annotations

import json

import pytest

import kvplan
from kvplan.usecases.emit import FORMATS, emit

DEPLOYMENTS = [
    # an EAGLE3 head whose method vLLM infers from its config (no "method" written)
    ("meta-llama/Llama-3.1-8B-Instruct", dict(drafter="RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
                                              num_speculative_tokens="3", kv_cache_memory="20GiB",
                                              policy="vllm==0.34.0")),
    # the method named, on a card with TP 2
    ("openai/gpt-oss-120b", dict(drafter="nvidia/gpt-oss-120b-Eagle3", speculative_method="eagle3",
                                 num_speculative_tokens="3", gpu="H100-80GB", tensor_parallel_size="2",
                                 max_model_len="65536", policy="vllm==0.34.0")),
    # n-gram drafting: no draft network, the tokens per step still size the pool
    ("meta-llama/Llama-3.1-8B-Instruct", dict(speculative_method="ngram", num_speculative_tokens="4",
                                              kv_cache_memory="20GiB", policy="vllm==0.33.0")),
]


def figures(d: dict) -> tuple:
    return (d["memory"]["num_blocks"], d["serving"]["block_size"], d["memory"]["max_concurrency"],
            d["speculative"]["method"], d["speculative"]["num_speculative_tokens"],
            (d.get("drafter") or {}).get("id"), d["outcome"]["starts"])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("model, options", DEPLOYMENTS, ids=["llama-eagle3-head", "gpt-oss-eagle3-tp2", "ngram"])
def test_the_drafter_is_written_and_read_back(tmp_path, fmt, model, options):
    simulated = kvplan.simulate(model, **options)
    out = emit(model, as_=fmt, **options)
    i = out["vllm_args"].index("--speculative-config")
    spec = json.loads(out["vllm_args"][i + 1])
    assert spec["num_speculative_tokens"] == int(options["num_speculative_tokens"])
    assert spec.get("model") == options.get("drafter") and spec.get("method") == options.get("speculative_method")
    mine = {k: v for k, v in options.items() if k in ("gpu", "policy")}
    if fmt == "serve":
        back = kvplan.vllm_serve(line=out["text"], **mine)
    else:
        f = tmp_path / f"{fmt}.yaml"
        f.write_text(out["text"])
        back = kvplan.vllm_serve(file=f, **{**mine, "policy": options["policy"]})
    assert figures(back) == figures(simulated)
