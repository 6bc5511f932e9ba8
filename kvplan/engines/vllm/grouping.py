"""vLLM's ``get_kv_cache_groups``: which layers share a KV-cache group.

Reference §3. The branches are tried in vLLM's order and the first match wins:
hybrid manager off → conversion; no layers → no groups; every spec merges →
one group; one type → one uniform-type group; otherwise page sizes are unified
and the era's group-size rule (``group_size.py``: the shipped threshold heuristic or a
proposal's) splits buckets into groups of that size.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import field, replace

from kvplan.frozen import dataclass
from kvplan.engines.vllm.group_size import THRESHOLD, dedicated_layers, group_size_of
from kvplan.errors import EngineFailure, SpecMergeAssertion
from kvplan.specs import (
    AttentionSpec,
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
    UniformTypeKVCacheSpecs,
)
from kvplan.units import cdiv


@dataclass(frozen=True)
class Bucket:
    spec: KVCacheSpec
    layer_names: tuple[str, ...]


@dataclass(frozen=True)
class Group:
    layer_names: tuple[str, ...]
    spec: KVCacheSpec


@dataclass(frozen=True)
class GroupingDecision:
    """What the heuristic saw and chose; kept for --explain, tables and sweeps."""

    path: str  # "hma_off_uniform", "uniform", "uniform_type", "uniform_page", "attention_free"
    buckets: tuple[Bucket, ...] = ()
    min_count: int = 0
    max_count: int = 0
    threshold: float | None = None
    group_size: int = 0
    padding: tuple[tuple[int, int], ...] = ()  # per bucket: (padding layers, bucket size)
    page_size_bytes: int = 0
    block_size_changes: tuple[tuple[str, int, int], ...] = ()  # (kind, old, new) from page unification
    num_padding_layers: int = field(init=False)  # the padding layers over every bucket

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_padding_layers", sum(p for p, _ in self.padding))


# --- merge rules (reference §1.4): on the spec classes (kvplan.specs), as vLLM's merge() ---------


def merge_specs(specs: list[KVCacheSpec]) -> KVCacheSpec:
    """The group spec, ``type(specs[0]).merge(specs)``; raises SpecMergeAssertion or
    EngineFailure(ValueError) exactly where vLLM asserts or raises."""
    return type(specs[0]).merge(specs)


def is_uniform(specs: dict[str, KVCacheSpec]) -> bool:
    """``is_kv_cache_spec_uniform``: True when the first spec's merge accepts them all.
    Only assertions mean "not uniform"; a window conflict (ValueError) propagates."""
    if not specs:
        return True
    try:
        merge_specs(list(specs.values()))
    except SpecMergeAssertion:
        return False
    return True


def is_uniform_type(specs: dict[str, KVCacheSpec]) -> bool:
    """``UniformTypeKVCacheSpecs.is_uniform_type``: one layer type, one block size."""
    values = list(specs.values())
    if len({s.block_size for s in values}) != 1:
        return False
    first = values[0]
    return all(first.same_type(s) for s in values)


# --- hybrid manager off (reference §3.1) ------------------------------------------------

HMA_OFF_WARNING = (
    "Hybrid KV cache manager is disabled for this hybrid model, This means we do not enable any "
    "optimizations for saving KV cache memory (e.g., dropping the KV cache outside the sliding window). "
    "The compute of layers like sliding window is still saved."
)
HMA_OFF_FAILURE = "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one unified type."


def unify_hybrid_kv_cache_specs(specs: dict[str, KVCacheSpec], logs: list[str]) -> dict[str, KVCacheSpec]:
    """Sliding and chunked layers become full layers that remember their window."""
    if is_uniform(specs) or is_uniform_type(specs):
        return specs
    logs.append(HMA_OFF_WARNING)
    values = specs.values()
    has_full = any(isinstance(s, FullAttentionSpec) for s in values)
    has_sw = any(isinstance(s, SlidingWindowSpec) for s in values)
    has_chunked = any(isinstance(s, ChunkedLocalAttentionSpec) for s in values)
    out = dict(specs)
    if has_full and (has_sw or has_chunked):
        for name, s in specs.items():
            if isinstance(s, SlidingWindowSpec):
                out[name] = FullAttentionSpec(
                    block_size=s.block_size, num_kv_heads=s.num_kv_heads, head_size=s.head_size,
                    head_size_v=s.head_size_v, dtype=s.dtype, page_size_padded=s.page_size_padded,
                    sliding_window=s.sliding_window,
                )
            elif isinstance(s, ChunkedLocalAttentionSpec):
                # The chunked conversion does not copy head_size_v (it falls back to head_size).
                out[name] = FullAttentionSpec(
                    block_size=s.block_size, num_kv_heads=s.num_kv_heads, head_size=s.head_size,
                    dtype=s.dtype, page_size_padded=s.page_size_padded,
                    attention_chunk_size=s.attention_chunk_size,
                )
    if not (is_uniform(out) or is_uniform_type(out)):
        raise EngineFailure("ValueError", HMA_OFF_FAILURE, "grouping")
    return out


# --- page unification (reference §3.7, §11 item 6) --------------------------------------

PAGE_NOT_DIVISIBLE = (
    "The page size of the layer is not divisible by the maximum page size. Cannot unify by adjusting block_size."
)


def unify_page_sizes(
    specs: dict[str, KVCacheSpec], page_mismatch: str, mamba_page_pad: bool = False
) -> tuple[dict[str, KVCacheSpec], list[tuple[str, int, int]]]:
    """Scale smaller pages' block_size by the page ratio (or pad, 0.33, when it does not divide)."""
    pages = {s.page_size_bytes for s in specs.values()}
    if len(pages) <= 1:
        return specs, []
    if page_mismatch == "none":
        # 0.11 had no page-size unification: get_kv_cache_groups raised a bare NotImplementedError.
        raise EngineFailure("NotImplementedError", "", "page_unification")
    top = max(pages)
    out: dict[str, KVCacheSpec] = {}
    changes: dict[tuple[str, int, int], None] = {}
    for name, s in specs.items():
        p = s.page_size_bytes
        if p == top:
            out[name] = s
            continue
        if mamba_page_pad and isinstance(s, MambaSpec):
            # 0.26+: a Mamba page (fixed by its state shapes) is padded to the largest page,
            # e.g. when a drafter's attention page exceeds the aligned Mamba page
            out[name] = replace(s, page_size_padded=top)
            continue
        if top % p != 0:
            if page_mismatch == "pad" and isinstance(s, AttentionSpec) and not isinstance(s, MLAAttentionSpec):
                out[name] = replace(s, page_size_padded=top)
                continue
            raise EngineFailure("NotImplementedError", PAGE_NOT_DIVISIBLE, "page_unification")
        if isinstance(s, MambaSpec) or getattr(s, "page_size_padded", None) is not None:
            # The re-sized page cannot reach the maximum: vLLM's bare assertion.
            raise EngineFailure("AssertionError", "", "page_unification")
        new = s.with_block_size(s.block_size * (top // p))
        assert new.page_size_bytes == top
        out[name] = new
        changes[(s.kind, s.block_size, new.block_size)] = None
    return out, list(changes)


# --- the uniform-page heuristic (reference §3.8) ----------------------------------------


def bucket_layers(specs: dict[str, KVCacheSpec], dedicated: frozenset[str] = frozenset()) -> list[Bucket]:
    """Buckets keyed by full spec equality, in first-appearance order. Layers named in
    ``dedicated`` (a proposal's drafter layers, PR #35062: ``group_size.dedicated_layers``) get buckets
    of their own."""
    if not dedicated:
        buckets: dict[KVCacheSpec, list[str]] = {}
        for name, s in specs.items():
            buckets.setdefault(s, []).append(name)
        return [Bucket(spec, tuple(names)) for spec, names in buckets.items()]
    keyed: dict[tuple[KVCacheSpec, bool], list[str]] = {}
    for name, s in specs.items():
        keyed.setdefault((s, name in dedicated), []).append(name)
    return [Bucket(spec, tuple(names)) for (spec, _), names in keyed.items()]


def split_buckets(buckets: list[Bucket], group_size: int) -> tuple[list[Group], list[tuple[int, int]]]:
    """Each bucket of n layers → cdiv(n, group_size) groups, striped: group i = bucket[i::k]."""
    groups: list[Group] = []
    padding: list[tuple[int, int]] = []
    for b in buckets:
        n = len(b.layer_names)
        pad = group_size - n % group_size
        padding.append((0 if pad == group_size else pad, n))
        k = cdiv(n, group_size)
        for i in range(k):
            groups.append(Group(b.layer_names[i::k], b.spec))
    return groups, padding


def padding_warning(pad: int, n: int) -> str:
    return f"Add {pad} padding layers, may waste at most {pad / n * 100:.2f}% KV cache memory"


def get_kv_cache_groups(
    specs: dict[str, KVCacheSpec],
    *,
    hma_disabled: bool,
    threshold: float | None,
    page_mismatch: str,
    mamba_page_pad: bool = False,
    logs: list[str],
    rule: str = THRESHOLD,
    drafter_layers: frozenset[str] = frozenset(),
    packed: bool = False,
) -> tuple[list[Group], GroupingDecision, dict[str, KVCacheSpec]]:
    """Returns the global groups, the decision record, and the specs after any
    conversion or page unification (what each layer's cache really is). ``rule``: the era's
    group-size rule (``Era.grouping``: the shipped threshold rule or a proposal's,
    ``group_size.py``); ``drafter_layers``: the drafter's layer names, which a proposal may group apart."""
    if hma_disabled:
        specs = unify_hybrid_kv_cache_specs(specs, logs)
    if not specs:
        return [], GroupingDecision(path="attention_free"), specs
    if is_uniform(specs):
        merged = merge_specs(list(specs.values()))
        path = "hma_off_uniform" if hma_disabled else "uniform"
        decision = GroupingDecision(
            path=path, buckets=tuple(bucket_layers(specs)), group_size=len(specs),
            page_size_bytes=merged.page_size_bytes,
        )
        return [Group(tuple(specs), merged)], decision, specs
    if is_uniform_type(specs):
        container = UniformTypeKVCacheSpecs(
            block_size=next(iter(specs.values())).block_size, kv_cache_specs=tuple(specs.items())
        )
        decision = GroupingDecision(
            path="uniform_type", buckets=tuple(bucket_layers(specs)), group_size=len(specs),
            page_size_bytes=container.page_size_bytes,
        )
        return [Group(tuple(specs), container)], decision, specs
    if packed and (groups := packed_kv_cache_groups(specs)):
        # the layout is block-outermost (0.34.0): mixed pages pack side by side in each block
        decision = GroupingDecision(path="packed", buckets=tuple(bucket_layers(specs)),
                                    group_size=max(len(g.layer_names) for g in groups))
        return groups, decision, specs
    specs, changes = unify_page_sizes(specs, page_mismatch, mamba_page_pad)
    buckets = bucket_layers(specs, dedicated_layers(rule, drafter_layers))
    counts = [len(b.layer_names) for b in buckets]
    size = group_size_of(rule, [b.layer_names for b in buckets], threshold, drafter_layers)
    groups, padding = split_buckets(buckets, size)
    for pad, n in padding:
        if pad:
            logs.append(padding_warning(pad, n))
    decision = GroupingDecision(
        path="uniform_page",
        buckets=tuple(buckets),
        min_count=min(counts),
        max_count=max(counts),
        threshold=threshold,
        group_size=size,
        padding=tuple(padding),
        page_size_bytes=next(iter(specs.values())).page_size_bytes,
        block_size_changes=tuple(changes),
    )
    return groups, decision, specs


# --- block-outermost packing (vLLM 0.34.0 kv_cache_planning.py lines 923-1085) ------------------------


def block_outermost(specs: dict[str, KVCacheSpec]) -> bool:
    """Whether the resolved KV cache layout is block-outermost (BLHNC): a backend of the model declares
    only such layouts. In 0.34.0 that is ``DeepseekV4IndexerBackend`` (v1/attention/backends/mla/indexer.py
    lines 297-301: BLHNC, BLNHC), the backend of DeepSeek-V4's indexer cache, the MLA spec that compresses
    tokens (``tokens_per_state`` > 1) without a model version (models/deepseek_v4/attention.py lines 868-881)."""
    return any(isinstance(s, MLAAttentionSpec) and s.tokens_per_state > 1 and s.model_version is None
               for s in specs.values())


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """``_approximate_gcd``: the chunk d in [lower_bound, max(values)] that pads the values least when each
    is rounded up to a multiple of d; ties go to the larger d."""
    best, best_pad = max(1, lower_bound), None
    for d in range(max(1, lower_bound), max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad is None or pad <= best_pad:
            best, best_pad = d, pad
    return best


def packed_kv_cache_groups(specs: dict[str, KVCacheSpec]) -> list[Group] | None:
    """``_get_packed_kv_cache_groups``: layers bucketed greedily into uniform-type sets; buckets with one
    layer of each page size per repeat are split into groups of the same number of repeats (chosen by
    ``approximate_gcd``), state buckets (Mamba, and unsplit sliding windows) split to fit the widest block
    the others need. None when every layer has one page size."""
    if len({s.page_size_bytes for s in specs.values()}) <= 1:
        return None
    buckets: list[dict[str, KVCacheSpec]] = []
    for name, s in specs.items():
        for b in buckets:
            if is_uniform_type({**b, name: s}):
                b[name] = s
                break
        else:
            buckets.append({name: s})
    info = []
    for b in buckets:
        by_page: dict[int, list[str]] = defaultdict(list)
        for name, s in b.items():
            by_page[s.page_size_bytes].append(name)
        most = Counter(s.page_size_bytes for s in b.values()).most_common(1)[0][1]
        info.append((b, by_page, len({len(v) for v in by_page.values()}) == 1, most))
    floor = max((m for _, by_page, bal, m in info if bal and len(by_page) > 1), default=0)
    repeats = approximate_gcd([m for _, _, bal, m in info if bal], floor) if floor else None

    def n_groups(bal: bool, most: int) -> int:
        return cdiv(most, repeats) if bal and repeats is not None else 1

    def is_state(b: dict[str, KVCacheSpec]) -> bool:
        first = next(iter(b.values()))
        return isinstance(first, MambaSpec) or (repeats is None and isinstance(first, SlidingWindowSpec))

    anchor = max((sum(cdiv(len(names), len(b) if is_state(b) else n_groups(bal, m)) * page
                      for page, names in by_page.items()) for b, by_page, bal, m in info), default=0)
    groups: list[Group] = []
    for b, by_page, bal, m in info:
        k = n_groups(bal, m)
        first = next(iter(b.values()))
        if anchor and is_state(b):
            k = max(k, cdiv(len(b), max(anchor // first.page_size_bytes, 1)))
        if k == 1:
            groups.append(Group(tuple(b), UniformTypeKVCacheSpecs(block_size=first.block_size,
                                                                  kv_cache_specs=tuple(b.items()))))
            continue
        pattern = list(zip(*by_page.values()))
        for i in range(k):
            names = tuple(n for rep in pattern[i::k] for n in rep)
            groups.append(Group(names, UniformTypeKVCacheSpecs(block_size=first.block_size,
                                                               kv_cache_specs=tuple((n, b[n]) for n in names))))
    return groups
