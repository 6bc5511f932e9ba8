"""Property: advice is checked. Over random models, budgets and lengths, every knob the advice
names is re-simulated through the same engine model and leaves every pool at least one
request's need; and the advice names only flags or variables the engine has."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factories import full, gdn, layers, sw
from kvplan.results import to_data
from kvplan.engines.compare import CompareInputs
from kvplan.engines.registry import compare_inputs
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.llamacpp import advise_llamacpp, llamacpp_model
from kvplan.engines.sglang import advise_sglang, sglang_result
from kvplan.engines.sglang import knobs_of as sglang_knobs_of
from kvplan.engines.trtllm import MAX_UTILIZATION, SCHEDULER_POLICIES, advise_trtllm, trtllm_result, with_knobs
from kvplan.units import GiB

kinds = st.lists(st.one_of(st.just("full"), st.integers(16, 8192).map(lambda w: ("sw", w))), min_size=2, max_size=10)


def build(ks, mamba: int):
    specs = [full() if k == "full" else sw(k[1]) for k in ks] + [gdn()] * mamba
    return layers(specs)


def trtllm_advised(inputs: CompareInputs, t: dict) -> CompareInputs:
    """The inputs with the settings the TensorRT-LLM advice names, by TensorRT-LLM's own names: a Mamba
    hybrid's kv_cache_config.enable_block_reuse and max_batch_size."""
    s = t.get("settings")
    if not s:
        return inputs
    assert set(s) == {"kv_cache_config.enable_block_reuse", "max_batch_size"}
    assert t["settings_text"].startswith(f"kv_cache_config.enable_block_reuse=false max_batch_size={s['max_batch_size']}")
    return with_knobs(inputs, trtllm_enable_block_reuse=s["kv_cache_config.enable_block_reuse"],
                      trtllm_max_batch_size=s["max_batch_size"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ks=kinds, mamba=st.integers(0, 1), length=st.integers(256, 200_000), budget=st.integers(GiB // 4, 80 * GiB),
       policy=st.sampled_from(SCHEDULER_POLICIES), overlap=st.booleans(), page=st.sampled_from([1, 16, 64]))
def test_no_advised_knob_leaves_a_pool_below_one_request(ks, mamba, length, budget, policy, overlap, page):
    costs = layer_costs(build(ks, mamba))
    inputs = compare_inputs(budget, length, target_concurrency=4, trtllm_scheduler_policy=policy,
                           sglang_disable_overlap_schedule=not overlap, sglang_page_size=page)

    s = to_data(advise_sglang(costs, "GptOssForCausalLM", inputs))
    if s.get("swa_full_tokens_ratio") is not None:
        assert s["flag"] == f"--swa-full-tokens-ratio {s['swa_full_tokens_ratio']:g}"
        r = sglang_result(costs, "GptOssForCausalLM", inputs, s["swa_full_tokens_ratio"])
        assert r.starts and r.max_concurrency >= 1
        assert r.full_tokens >= r.full_need_tokens
        assert r.swa_tokens - r.swa_in_flight_tokens >= r.swa_need_tokens
        assert min(s["pool_margins"].values()) >= 1

    t = to_data(advise_trtllm(costs, inputs))
    if t.get("settings"):  # a Mamba hybrid's start-up settings: it starts and serves at least one request
        r = trtllm_result(costs, trtllm_advised(inputs, t), t.get("window_shares"))
        assert r.starts and r.max_concurrency >= 1 and t["requests"] <= t["settings"]["max_batch_size"]
    if t.get("window_shares"):
        assert t["env"].startswith("TRTLLM_WINDOW_SIZE_SHARES=") and sum(t["window_shares"]) == 1.0
        r = trtllm_result(costs, trtllm_advised(inputs, t), t["window_shares"])
        assert r.starts and r.max_concurrency >= 1
        for p in r.pools:
            per = p.blocks_per_request if policy == MAX_UTILIZATION else p.admission_blocks
            assert p.num_blocks >= max(per, p.prefill_blocks), p
        assert min(t["pool_margins"].values()) >= 1

    lc = to_data(advise_llamacpp(costs, inputs))
    if lc["flags"]:
        words = lc["flags"].split()
        assert words[0] == "-c" and words[2] == "-np" and words[4:] in ([], ["--kv-unified"])
        r = llamacpp_model(costs, budget, length, n_seq=int(words[3]), kv_unified=lc["kv_unified"])
        assert r.starts and r.caches.n_ctx == int(words[1]) and r.caches.n_ctx_seq >= length * (
            1 if not lc["kv_unified"] else int(words[3]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ks=kinds, mamba=st.integers(0, 1), length=st.integers(256, 200_000), budget=st.integers(GiB // 4, 80 * GiB),
       policy=st.sampled_from(SCHEDULER_POLICIES), overlap=st.booleans(), page=st.sampled_from([1, 16, 64]),
       spec=st.integers(0, 5), longer_context=st.booleans(), vswa=st.booleans())
def test_advice_never_loses_to_the_default(ks, mamba, length, budget, policy, overlap, page, spec, longer_context,
                                           vswa):
    """Advised settings never serve fewer requests than the engine's defaults (and are offered only when
    they serve more), and pass the engine's own worst-case admission check at the count they advise:
    SGLang's compute_swa_request_cap (speculative draft tokens included) and full-pool admission;
    TensorRT-LLM's per-pool admission blocks and the prompt's prefill blocks."""
    import math

    from kvplan.engines.sglang import swa_per_request_tokens

    costs = layer_costs(build(ks, mamba))
    inputs = compare_inputs(budget, length, trtllm_scheduler_policy=policy, sglang_disable_overlap_schedule=not overlap,
                           sglang_page_size=page, num_speculative_tokens=spec,
                           context_len_tokens=2 * length if longer_context else length,
                           trtllm_max_attention_window=vswa)
    s = to_data(advise_sglang(costs, "GptOssForCausalLM", inputs))
    default = sglang_result(costs, "GptOssForCausalLM", inputs, sglang_knobs_of(inputs).swa_full_tokens_ratio)
    if s.get("swa_full_tokens_ratio") is None:
        assert s["max_concurrency"] == round(default.max_concurrency, 6)
    else:
        r = sglang_result(costs, "GptOssForCausalLM", inputs, s["swa_full_tokens_ratio"])
        n = math.floor(r.max_concurrency)
        assert n == s["requests"] > math.floor(default.max_concurrency) and s["gain_requests"] >= 1
        assert r.starts and r.admission_concurrency >= n
        per = swa_per_request_tokens(r.window_tokens, length, page, r.swa_eviction_interval, spec, overlap)
        assert n * per + (1 if not overlap else 2) * r.chunked_prefill_size + page <= r.swa_tokens

    t = to_data(advise_trtllm(costs, inputs))
    equal = trtllm_result(costs, inputs)
    if not t.get("window_shares") and not t.get("settings"):
        assert t["max_concurrency"] == round(equal.max_concurrency, 6)
    else:
        r = trtllm_result(costs, trtllm_advised(inputs, t), t.get("window_shares"))
        n = math.floor(r.max_concurrency)
        assert n == t["requests"] > math.floor(equal.max_concurrency) and t["gain_requests"] >= 1
        assert r.starts and n <= r.max_batch_size
        for p in r.pools:
            per = p.blocks_per_request if policy == MAX_UTILIZATION else p.admission_blocks
            assert p.num_blocks >= max(n * per, p.prefill_blocks), p
