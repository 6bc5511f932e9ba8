"""From groups and a memory budget to blocks, tensors and the admission check.

Reference §4 (``get_kv_cache_config_from_groups``, the admission check, the
estimated maximum model length, auto-fit, concurrency and the two log lines)
and §11 for what changed between releases.
"""

from __future__ import annotations

from dataclasses import field

from kvplan.frozen import dataclass
from kvplan.engines.vllm.eras import Era
from kvplan.engines.vllm.grouping import EngineFailure, Group
from kvplan.specs import KVCacheSpec, UniformTypeKVCacheSpecs, Workload
from kvplan.units import Bisection, cdiv

from kvplan.engines.vllm.wording import DOCS_URL, not_enough_memory, wording  # noqa: F401  (DOCS_URL re-exported)


@dataclass(frozen=True)
class KVTensor:
    """One allocation: ``size_bytes`` = page · num_blocks, used by the layers in ``shared_by``
    (the i-th layer of every group that has more than i layers)."""

    size_bytes: int
    shared_by: tuple[str, ...]


def project_groups(groups: list[Group], layer_names: set[str]) -> list[Group]:
    """A global group seen from one worker: filtered layers, empty groups kept."""
    if all(n in layer_names for g in groups for n in g.layer_names):
        return list(groups)  # the worker holds every layer (no pipeline parallelism)
    out = []
    for g in groups:
        names = tuple(n for n in g.layer_names if n in layer_names)
        spec = g.spec
        if isinstance(spec, UniformTypeKVCacheSpecs) and names:
            spec = UniformTypeKVCacheSpecs(
                block_size=spec.block_size,
                kv_cache_specs=tuple((n, s) for n, s in spec.kv_cache_specs if n in layer_names),
            )
        out.append(Group(names, spec))
    return out


def group_size_of(groups: list[Group]) -> int:
    return max((len(g.layer_names) for g in groups), default=0)


def single_uniform_spec(groups: list[Group]) -> UniformTypeKVCacheSpecs | None:
    """The spec of a single uniform-type group (one group whose layers differ in spec but not in type), else None."""
    spec = groups[0].spec if len(groups) == 1 else None
    return spec if isinstance(spec, UniformTypeKVCacheSpecs) else None


def is_single_uniform_type(groups: list[Group]) -> bool:
    return single_uniform_spec(groups) is not None


def is_packed(groups: list[Group]) -> bool:
    """Several groups of per-layer pages (``_get_packed_kv_cache_groups``, block-outermost layouts)."""
    return len(groups) > 1 and any(isinstance(g.spec, UniformTypeKVCacheSpecs) for g in groups)


def _layers_by_spec(g: Group) -> dict[KVCacheSpec, list[str]]:
    by_spec: dict[KVCacheSpec, list[str]] = {}
    members = g.spec.kv_cache_specs if isinstance(g.spec, UniformTypeKVCacheSpecs) else \
        tuple((name, g.spec) for name in g.layer_names)
    for name, spec in members:
        by_spec.setdefault(spec, []).append(name)
    return by_spec


def bytes_per_block(groups: list[Group]) -> int:
    """Bytes one block id costs across the pool: page · group_size (general path),
    or the sum of member pages for a single uniform-type group."""
    if not groups:
        return 0
    if is_single_uniform_type(groups):
        return groups[0].spec.page_size_bytes
    if is_packed(groups):
        # packed groups (0.34.0 block-outermost, ``_get_kv_cache_bytes_per_block`` lines 620-648): the widest
        # group's pages side by side. Every V4 spec's block stride alignment is 1, also after the GPU runner's
        # customize_attention_spec (v1/worker/utils.py lines 469-479): the sparse MLA and indexer backends'
        # only kernel block is 256 = the block, the window and compressor backends declare MultipleOf(32)/(1)
        return max(g.spec.page_size_bytes for g in groups)
    return groups[0].spec.page_size_bytes * group_size_of(groups)


def blocks_per_request(groups: list[Group], w: Workload) -> list[int]:
    """Blocks one max-length request reserves in each group: cdiv(max_memory_usage, page)."""
    return [cdiv(g.spec.max_memory_usage_bytes(w), g.spec.page_size_bytes) for g in groups]


def needed_bytes(groups: list[Group], era: Era, w: Workload, layer_specs: list[KVCacheSpec]) -> int:
    """Memory the admission check asks for one max-length request (reference §4.1, §11)."""
    if not groups:
        return 0
    if era.admission == "per_layer":
        return sum(s.max_memory_usage_bytes(w) for s in layer_specs)
    if (uniform := single_uniform_spec(groups)) is not None:
        return sum(s.max_memory_usage_bytes(w) for _, s in uniform.kv_cache_specs)
    G = group_size_of(groups)
    page = groups[0].spec.page_size_bytes
    if era.admission == "first_group":
        return G * page * cdiv(groups[0].spec.max_memory_usage_bytes(w), page)
    return bytes_per_block(groups) * sum(blocks_per_request(groups, w))


def checked_memory(groups: list[Group], era: Era, available: int) -> int:
    """0.33 keeps the null block out of the check: available − bytes_per_block."""
    if era.null_block_in_check and groups:
        return available - bytes_per_block(groups)
    return available


def no_memory_message(era: Era) -> str:
    return wording(era).no_memory


def not_enough_memory_message(era: Era, max_model_len: int, needed: int, available: int, estimate: int) -> str:
    return not_enough_memory(era, max_model_len, needed, available, estimate)


def estimate_max_model_len(
    groups: list[Group], era: Era, w: Workload, layer_specs: list[KVCacheSpec], available: int
) -> int:
    """Binary search for the largest max_model_len in [1, w.max_model_len] that fits; 0 if none."""
    from dataclasses import replace

    def fits(length: int) -> bool:
        return needed_bytes(groups, era, replace(w, max_model_len=length), layer_specs) <= available

    if not fits(1):
        return 0
    search = Bisection(1, w.max_model_len)
    for length in search:
        search.answer(fits(length))
    return search.largest


def check_per_layer_memory(era: Era, w: Workload, layer_specs: list[KVCacheSpec], available: int) -> int:
    """0.11's ``check_enough_kv_cache_memory``: Σ of every layer's own reservation, on the
    specs as the model registered them (before grouping, before any HMA-off conversion)."""
    if not layer_specs:
        return 0
    marker = [Group((), layer_specs[0])]  # needed_bytes ignores groups for per-layer admission
    return check_enough_memory(marker, era, w, layer_specs, available)


def check_enough_memory(
    groups: list[Group], era: Era, w: Workload, layer_specs: list[KVCacheSpec], available: int
) -> int:
    """``_check_enough_kv_cache_memory``: returns the needed bytes or raises EngineFailure."""
    checked = checked_memory(groups, era, available)
    if available <= 0:
        raise EngineFailure("ValueError", no_memory_message(era), "admission")
    need = needed_bytes(groups, era, w, layer_specs)
    if need > checked:
        est = estimate_max_model_len(groups, era, w, layer_specs, checked)
        raise EngineFailure(
            "ValueError", not_enough_memory_message(era, w.max_model_len, need, checked, est), "admission"
        )
    return need


@dataclass(frozen=True)
class WorkerConfig:
    """``KVCacheConfig`` of one worker (one pipeline stage; TP ranks are identical)."""

    rank: int
    available_bytes: int
    groups: tuple[Group, ...]
    group_size: int
    bytes_per_block: int
    num_blocks: int
    tensors: tuple[KVTensor, ...]


def kv_cache_config_from_groups(
    rank: int, groups: list[Group], available: int, override: int | None, era: Era, logs: list[str]
) -> WorkerConfig:
    if not groups:
        return WorkerConfig(rank, available, (), 0, 0, 1, ())
    if (spec := single_uniform_spec(groups)) is not None:
        num_blocks = available // spec.page_size_bytes
        if override is not None and not era.override_before_check:
            logs.append(f"Overriding num_gpu_blocks={num_blocks} with num_gpu_blocks_override={override}")
            num_blocks = override
        elif override is not None:
            num_blocks = override
        tensors = tuple(KVTensor(s.page_size_bytes * num_blocks, (n,)) for n, s in spec.kv_cache_specs)
        return WorkerConfig(rank, available, tuple(groups), len(groups[0].layer_names), spec.page_size_bytes,
                            num_blocks, tensors)
    G = group_size_of(groups)
    if G <= 0:
        raise EngineFailure("AssertionError", "group_size must be greater than 0", "sizing")
    if is_packed(groups):
        # block-outermost (0.34.0 get_kv_cache_config_from_groups, kv_cache_planning.py lines 685-780): one
        # buffer of bytes_per_block x num_blocks; per group and distinct spec one record over the whole buffer
        bpb = bytes_per_block(groups)
        num_blocks = available // bpb
        if override is not None:
            if not era.override_before_check:
                logs.append(f"Overriding num_gpu_blocks={num_blocks} with num_gpu_blocks_override={override}")
            num_blocks = override
        tensors = tuple(KVTensor(bpb * num_blocks, tuple(names))
                        for g in groups for names in _layers_by_spec(g).values())
        return WorkerConfig(rank, available, tuple(groups), G, bpb, num_blocks, tensors)
    pages = {g.spec.page_size_bytes for g in groups}
    assert len(pages) == 1
    page = pages.pop()
    num_blocks = max(int(available // page // G), 0)
    if override is not None:
        if not era.override_before_check:
            logs.append(f"Overriding num_gpu_blocks={num_blocks} with num_gpu_blocks_override={override}")
        num_blocks = override
    tensors = tuple(
        KVTensor(page * num_blocks, tuple(g.layer_names[i] for g in groups if len(g.layer_names) > i))
        for i in range(G)
    )
    return WorkerConfig(rank, available, tuple(groups), G, page * G, num_blocks, tensors)


def equalise(workers: list[WorkerConfig]) -> list[WorkerConfig]:
    """Every worker gets the smallest num_blocks; tensors shrink (never regrow)."""
    if not workers:
        return workers
    target = min(w.num_blocks for w in workers)
    out = []
    for w in workers:
        if w.num_blocks == target or not w.tensors:
            out.append(WorkerConfig(w.rank, w.available_bytes, w.groups, w.group_size, w.bytes_per_block, target,
                                    w.tensors))
            continue
        tensors = tuple(KVTensor(t.size_bytes // w.num_blocks * target, t.shared_by) for t in w.tensors)
        out.append(WorkerConfig(w.rank, w.available_bytes, w.groups, w.group_size, w.bytes_per_block, target, tensors))
    return out


@dataclass(frozen=True)
class WorkerCheck:
    """What the engine knows about one worker at the admission check, pass or fail:
    its projection of the global groups, its pool, and one max-length request's need."""

    rank: int
    groups: tuple[Group, ...]
    group_size: int  # slots per block on this worker: the most layers any projected group has here
    bytes_per_block: int
    available_bytes: int  # after --num-gpu-blocks-override (0.33 re-expresses the override as bytes)
    checked_available_bytes: int  # what the check compares against (0.33: minus the null block)
    num_blocks: int  # the worker's own pool, before the engine-wide minimum
    blocks_per_request: tuple[int, ...]  # per projected group
    needed_bytes: int
    estimated_max_model_len: int | None  # vLLM's estimate when the check fails
    fits: bool = field(init=False)  # one max-length request's need within what the check compares against

    def __post_init__(self) -> None:
        object.__setattr__(self, "fits", self.needed_bytes <= self.checked_available_bytes)


def worker_check(rank: int, groups: list[Group], era: Era, w: Workload, layer_specs: list[KVCacheSpec],
                 available: int) -> WorkerCheck:
    """The admission check's numbers for one worker, without raising."""
    bpb = bytes_per_block(groups)
    checked = checked_memory(groups, era, available)
    need = needed_bytes(groups, era, w, layer_specs)
    estimate = None
    if need > checked:
        estimate = estimate_max_model_len(groups, era, w, layer_specs, checked) if checked > 0 else 0
    return WorkerCheck(rank, tuple(groups), group_size_of(groups) if not is_single_uniform_type(groups) else
                       len(groups[0].layer_names), bpb, available, checked, max(available // bpb, 0) if bpb else 0,
                       tuple(blocks_per_request(groups, w)), need, estimate)


def max_concurrency(num_blocks: int, groups: list[Group], w: Workload) -> float:
    """``get_max_concurrency_for_kv_cache_config``: num_blocks / Σ_g blocks per request."""
    per_request = sum(blocks_per_request(groups, w))
    return num_blocks / per_request if per_request else 0.0


def kv_cache_size_tokens(era: Era, num_blocks: int, groups: list[Group], concurrency: float, w: Workload) -> int:
    """The number in "GPU KV cache size: N tokens": two meanings across releases (§4.7)."""
    if era.kv_size_log == "concurrency":
        return int(concurrency * w.max_model_len)
    tokens = num_blocks // len(groups) * min(g.spec.block_size for g in groups)
    if w.cp_world_size > 1:
        tokens *= w.cp_world_size
    return tokens


def vllm_tensor_records(w: WorkerConfig) -> list[dict]:
    """0.33's ``kv_cache_tensors`` over one shared buffer of bytes_per_block · num_blocks
    (layout LBNHC): one record per (group, distinct spec), ``layer_stride = page · num_blocks``,
    ``block_stride = page``. Groups share slots, so their records start at offset 0; the
    members of a single uniform-type group sit one spec after the other."""
    size = w.bytes_per_block * w.num_blocks
    if (uniform := single_uniform_spec(list(w.groups))) is not None:
        by_spec: dict = {}
        for name, spec in uniform.kv_cache_specs:
            by_spec.setdefault(spec, []).append(name)
        records, offset = [], 0
        for spec, names in by_spec.items():
            page = spec.page_size_bytes
            records.append({"block_stride": page, "layer_stride": page * w.num_blocks, "layers": names,
                            "offset": offset, "size": size})
            offset += len(names) * page * w.num_blocks
        return records
    records = []
    if is_packed(list(w.groups)):
        # BLHNC: a block holds every layer's page side by side (layer stride = page, block stride =
        # bytes_per_block); within a group, each distinct spec's layers follow the previous ones
        for g in w.groups:
            offset = 0
            for spec, names in (_layers_by_spec(g).items() if g.layer_names else ()):
                page = spec.page_size_bytes
                records.append({"block_stride": w.bytes_per_block, "layer_stride": page, "layers": names,
                                "offset": offset, "size": size})
                offset += len(names) * page
        return records
    for g in w.groups:
        if not g.layer_names:
            continue
        page = g.spec.page_size_bytes
        records.append({"block_stride": page, "layer_stride": page * w.num_blocks, "layers": list(g.layer_names),
                        "offset": 0, "size": size})
    return records


# --- steady state (kvplan's figure, not vLLM's; docs/capacity.md) ------------------------


@dataclass(frozen=True)
class SteadyState:
    """Requests of ``max_model_len`` tokens the pool holds once each is past its prefill.

    ``blocks_per_request[g]``: what one decoding request holds in group g: full/MLA
    layers the whole length, sliding layers the window plus the step's tokens plus one
    block of misalignment (vLLM frees blocks behind the window), chunked layers the
    current chunk plus the step, Mamba layers their state blocks (as vLLM reserves them).
    ``prefill_reserve_blocks``: what the in-flight batches add to the windowed groups
    beyond that (vLLM's reservation minus the steady one), held once for the pool, not
    per request. ``usable_blocks`` leaves out the null block vLLM's BlockPool keeps."""

    blocks_per_request: tuple[int, ...]
    prefill_reserve_blocks: int
    usable_blocks: int
    concurrency: float


def steady_state(num_blocks: int, groups: list[Group], w: Workload, decode_tokens: int = 1) -> SteadyState:
    from dataclasses import replace

    decode = replace(w, max_in_flight_tokens=max(decode_tokens, 1))
    steady = [cdiv(g.spec.max_memory_usage_bytes(decode), g.spec.page_size_bytes) for g in groups]
    reserve = sum(b - s for b, s in zip(blocks_per_request(groups, w), steady))
    usable = max(num_blocks - 1, 0)
    per_request = sum(steady)
    conc = max(usable - reserve, 0) / per_request if per_request and num_blocks else 0.0
    return SteadyState(tuple(steady), reserve, usable, conc)
