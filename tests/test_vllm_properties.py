"""Property tests of the uniform-page heuristic on random layer mixes (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from factories import full, layers, sw
from kvplan.engines.vllm import ModelFacts, SimulateOptions, get_era, simulate
from kvplan.units import cdiv

# Specs with one page size (8 KV × 64, bf16, block 16 → 32768 B) but distinct buckets:
# full, and sliding windows of different sizes.
KINDS = [full(), sw(128), sw(512), sw(1024), sw(4096)]

mixes = st.lists(st.sampled_from(range(len(KINDS))), min_size=1, max_size=120).filter(lambda x: len(set(x)) >= 2)
thresholds = st.sampled_from([None, 1.0, 1.25, 1.5, 2.0, 3.0])


def plan_for(mix, threshold, mem):
    era = replace(get_era("vllm-1.5"), threshold=threshold)
    ls = layers([KINDS[k] for k in mix])
    return ls, simulate(ls, (), ModelFacts(32768), era, SimulateOptions(kv_cache_memory_bytes=mem, max_model_len=32768))


@settings(max_examples=300, deadline=None)
@given(mix=mixes, threshold=thresholds)
def test_grouping_invariants(mix, threshold):
    ls, p = plan_for(mix, threshold, 8 << 30)
    d = p.decision
    names = [n for g in p.groups for n in g.layer_names]
    # every layer in exactly one group
    assert sorted(names) == sorted(x.name for x in ls)
    # no group larger than the group size, and one group is exactly that size
    assert max(len(g.layer_names) for g in p.groups) == d.group_size
    # padding = Σ over buckets of group_size · k − n
    counts = [len(b.layer_names) for b in d.buckets]
    assert d.num_padding_layers == sum(d.group_size * cdiv(n, d.group_size) - n for n in counts)
    # number of tensors = group size; each shared by at most one layer per group
    assert len(p.workers[0].tensors) == d.group_size
    assert all(len(t.shared_by) <= len(p.groups) for t in p.workers[0].tensors)
    # group size is the smallest or the largest bucket
    assert d.group_size in (min(counts), max(counts))


@settings(max_examples=150, deadline=None)
@given(mix=mixes, threshold=thresholds, a=st.integers(1 << 20, 1 << 36), b=st.integers(1 << 20, 1 << 36))
def test_num_blocks_monotone_in_memory(mix, threshold, a, b):
    lo, hi = sorted((a, b))
    _, p_lo = plan_for(mix, threshold, lo)
    _, p_hi = plan_for(mix, threshold, hi)
    assert p_lo.num_blocks <= p_hi.num_blocks
    assert p_lo.max_concurrency <= p_hi.max_concurrency
