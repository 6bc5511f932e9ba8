"""The exact windowed need (engines.md §3.1) and the property that makes it a lower bound:
no engine model reserves less per request, or serves more requests, than an ideal allocator."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factories import chunked, full, gdn, gemma3_27b, gpt_oss_20b, layers, sw
from kvplan.engines.registry import compare_inputs
from kvplan.engines.layer_costs import layer_costs
from kvplan.engines.lower_bound import lower_bound
from kvplan.engines.vllm import ModelFacts, SimulateOptions, get_era, simulate
from kvplan.units import GiB
from kvplan.usecases.compare import compare_engines as compare

L128K = 131072


def test_gpt_oss_20b_need():
    # 12 full · 131072 · 2048 B + 12 sliding · min(131072, 128) · 2048 B = 3,221,225,472 + 3,145,728
    lb = lower_bound(layer_costs(gpt_oss_20b()), L128K, 40 * GiB)
    assert (lb.full_bytes, lb.window_bytes) == (3_221_225_472, 3_145_728)
    assert lb.per_request_bytes == 3_224_371_200 and f"{lb.per_request_bytes / GiB:.2f}" == "3.00"
    # 40 GiB / 3,224,371,200 B = 13.32 requests; tokens 42,949,672,960 · 131072 // 3,224,371,200 = 1,745,921
    assert f"{lb.max_concurrency:.2f}" == "13.32" and lb.kv_tokens == 1_745_921


def test_gemma3_27b_need():
    # 10 · 131072 · 8192 + 52 · 1024 · 8192 = 10,737,418,240 + 436,207,616 = 11,173,625,856 B (10.41 GiB)
    lb = lower_bound(layer_costs(gemma3_27b()), L128K, 40 * GiB)
    assert lb.per_request_bytes == 11_173_625_856 and f"{lb.per_request_bytes / GiB:.2f}" == "10.41"


def test_short_requests_keep_only_their_tokens():
    # L = 100 < W = 128: the window layers keep 100 tokens, like the full ones
    lb = lower_bound(layer_costs(gpt_oss_20b()), 100, GiB)
    assert lb.per_request_bytes == 24 * 100 * 2048


def test_state_counts_once():
    lb = lower_bound(layer_costs(layers([gdn(), full(2, 256)])), 1000, GiB)
    assert lb.state_bytes == 1_097_728 and lb.per_request_bytes == 1_097_728 + 1000 * 2 * 512 * 2


# --- the property ------------------------------------------------------------------------

HEADS, HEAD = 8, 64  # one geometry for every attention layer, so vLLM's pages always unify

attention = st.one_of(
    st.just("full"),
    st.integers(1, 300_000).map(lambda w: ("sw", w)),
    st.integers(1, 300_000).map(lambda c: ("chunked", c)),
)


def build(kinds, mamba: int, drafter: list) -> tuple:
    specs = []
    for k in kinds:
        if k == "full":
            specs.append(full(HEADS, HEAD))
        elif k[0] == "sw":
            specs.append(sw(k[1], HEADS, HEAD))
        else:
            specs.append(chunked(k[1], HEADS, HEAD))
    specs += [gdn()] * mamba
    first = len(specs)
    for k in drafter:
        specs.append(full(HEADS, HEAD) if k == "full" else sw(k[1], HEADS, HEAD))
    return layers(specs, first_drafter=first if drafter else None)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=st.lists(attention, min_size=1, max_size=14),
    mamba=st.integers(0, 3),
    drafter=st.lists(st.one_of(st.just("full"), st.integers(1, 4096).map(lambda w: ("sw", w))), max_size=4),
    length=st.integers(1, 300_000),
    budget=st.integers(1 << 20, 80 * GiB),
    arch=st.sampled_from(["GptOssForCausalLM", "Gemma3ForConditionalGeneration", None]),
    concurrency=st.one_of(st.none(), st.integers(1, 64)),
    ratio=st.sampled_from([0.001, 0.1, 0.8, 1.0]),
    n_ubatch=st.sampled_from([1, 512, 4096]),
    swa_full=st.booleans(),
    policy=st.sampled_from(["GUARANTEED_NO_EVICT", "MAX_UTILIZATION"]),
    overlap=st.booleans(),
    unified=st.sampled_from([None, True, False]),
)
def test_lower_bound_never_exceeds_any_engine(kinds, mamba, drafter, length, budget, arch, concurrency, ratio,
                                              n_ubatch, swa_full, policy, overlap, unified):
    ls = build(kinds, mamba, drafter)
    facts = ModelFacts(length, speculative_method="eagle3" if drafter else None)
    plan = simulate(ls, (), facts, get_era("vllm-latest"),
                    SimulateOptions(kv_cache_memory_bytes=budget, max_model_len=length))
    inputs = compare_inputs(budget, length, target_concurrency=concurrency, swa_full_tokens_ratio=ratio,
                           llamacpp_n_ubatch=n_ubatch, swa_full=swa_full, trtllm_scheduler_policy=policy,
                           sglang_disable_overlap_schedule=not overlap, llamacpp_kv_unified=unified)
    c = compare(layer_costs(ls), arch, inputs, [plan])
    need, best = c.lower_bound.per_request_bytes, c.lower_bound.max_concurrency
    for row in c.rows:
        if row.reserved_per_request_bytes is not None:
            assert row.reserved_per_request_bytes >= need, (row.engine, row.name)
        assert row.max_concurrency <= best * engine_bytes(row, budget) / budget * (1 + 1e-12), (row.engine, row.name)


def engine_bytes(row, budget: int) -> int:
    """The memory an engine's pools really hold. TensorRT-LLM 1.2.0rc2 rounds each pool's blocks
    up (``tc::ceilDiv(maxTokens, tokensPerBlock)`` in calculateMaxNumBlocks), so its pools may hold
    up to one block per pool more than the budget: 2 full + 3 drafter layers of 2,048 B/token at
    1 MiB hold 1,048,576 // 10,240 = 102 tokens, ceilDiv(102, 32) = 4 blocks = 128 tokens, i.e.
    4 requests of 26 tokens where budget / need = 1,048,576 / (26 · 10,240) = 3.94 (the example
    Hypothesis found). Every other engine stays within the budget."""
    if row.engine != "trtllm":
        return budget
    d = row.details  # TrtllmDetails
    pools = sum(p.kv_tokens * p.per_token_bytes for p in d.pools) + d.state_bytes
    return max(budget, pools)
