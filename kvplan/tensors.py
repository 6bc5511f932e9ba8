"""The weight vocabulary, as ``kvplan.specs`` is the KV one: one tensor vLLM loads (``Weight``: its shape, the
decoder layer it belongs to, how tensor parallelism splits it) and a model's tensors in load order
(``Inventory``). The model layer's family rules make them (``kvplan/model/families/<family>.py``, ``kvplan.model.families.weights``); the budget sizes them
(``kvplan.budget.weights``).
"""

from __future__ import annotations

import math
from dataclasses import field

from kvplan.frozen import dataclass
from kvplan.units import cdiv

# Categories, in report order.
KINDS = ("embedding", "attention", "mixer", "mlp", "experts", "router", "norm", "mtp", "drafter", "lm_head", "vision",
         "other")

VOCAB_PADDING = 64  # vLLM's DEFAULT_VOCAB_PADDING_SIZE (vocab_parallel_embedding.py)


@dataclass(frozen=True)
class Weight:
    """One tensor as vLLM loads it.

    ``shard_dim`` is the dimension tensor parallelism divides (None: every rank holds it
    whole); ``kv_heads`` > 0 marks a K/V projection whose rows are that many heads, replicated
    when tp exceeds them; ``vocab`` marks vocab-parallel rows (padded to 64).
    """

    name: str
    kind: str
    shape: tuple[int, ...]
    layer: int | None = None  # decoder layer index; None = embedding, final norm, lm_head
    shard_dim: int | None = None
    linear: bool = False  # a matrix a quantization method may convert
    kv_heads: int = 0
    vocab: bool = False
    hf_buffer: bool = False  # a buffer in transformers (not in parameters()), a parameter in vLLM
    stage: str = "layer"  # "first" (embedding), "last" (final norm, lm_head, drafter, MTP), "layer",
    # "every" (a multimodal tower every pipeline stage builds)
    expert: bool = False  # a FusedMoE tensor [E, ...]: split over the MoE ranks (moe_rank_shape)
    # the tensor's own dtype where vLLM's model class fixes it (DeepSeek-V4's float32 hyper-connection and
    # compressor parameters, its int32 hash-routing table); None: the model dtype. Never converted by a method.
    dtype: str | None = None
    # the module the tensor belongs to (its name without ".weight" / ".bias"), which a quantization config's
    # module lists name: set from ``name`` when the tensor is made
    module: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        module = self.name
        for suffix in (".weight", ".bias"):
            if module.endswith(suffix):
                module = module[: -len(suffix)]
                break
        object.__setattr__(self, "module", module)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def rank_shape(self, tp: int) -> tuple[int, ...]:
        s = list(self.shape)
        if self.vocab:
            s[0] = -(-s[0] // VOCAB_PADDING) * VOCAB_PADDING // tp if tp > 1 else -(-s[0] // VOCAB_PADDING) * VOCAB_PADDING
        elif tp > 1 and self.kv_heads:
            s[0] = s[0] // self.kv_heads * max(1, self.kv_heads // tp)
        elif tp > 1 and self.shard_dim is not None:
            s[self.shard_dim] = cdiv(s[self.shard_dim], tp)
        return tuple(s)

    def moe_rank_shape(self, ranks: int, expert_parallel: bool, redundant: int = 0) -> tuple[int, ...]:
        """A FusedMoE tensor on one of ``ranks`` MoE ranks (vLLM's FusedMoEParallelConfig.make:
        tp × dp ranks). Expert parallelism keeps whole experts, ``ceil(E / ranks)`` on the first
        ranks (the linear placement gives the remainder to the lowest ranks); tensor parallelism
        divides each expert's intermediate dimension. ``redundant``: EPLB's redundant experts, physical
        experts beside the E logical ones (``global_num_experts = num_experts + num_redundant_experts``,
        fused_moe/layer.py determine_expert_counts, 0.34.0 lines 77-89; ``determine_expert_map`` gives rank 0
        ``ceil(global / ranks)``, 0.19.0 lines 103-109)."""
        if expert_parallel and ranks > 1:
            return (cdiv(self.shape[0] + redundant, ranks), *self.shape[1:])
        return self.rank_shape(ranks)


@dataclass(frozen=True)
class Inventory:
    """Every weight of one model (target, or a drafter's own) in load order."""

    family: str
    model_type: str
    weights: tuple[Weight, ...]
    num_hidden_layers: int
    tie_word_embeddings: bool
    notes: tuple[str, ...] = ()

    def num_params(self, *, include_buffers: bool = True, kinds: tuple[str, ...] | None = None) -> int:
        return sum(
            w.numel for w in self.weights
            if (include_buffers or not w.hf_buffer) and (kinds is None or w.kind in kinds)
        )

    def by_kind(self, *, include_buffers: bool = True) -> dict[str, int]:
        out = {k: 0 for k in KINDS}
        for w in self.weights:
            if include_buffers or not w.hf_buffer:
                out[w.kind] += w.numel
        return {k: v for k, v in out.items() if v}
