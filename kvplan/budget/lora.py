"""What ``--enable-lora`` costs on the GPU before the KV cache, per rank, from each release's code.

vLLM's V1 runner loads the model, then ``LoRAModelRunnerMixin.load_lora_model`` replaces every supported module by
its ``*WithLoRA`` layer, whose ``create_lora_weights`` allocates the adapter slots on the device (zeros, held for
the engine's life), and builds the punica wrapper's index buffers. The profile run then activates ``max_loras``
dummy LoRAs of rank min(8, max_lora_rank) (``maybe_setup_dummy_loras``); they are made on the CPU
(``create_dummy_lora`` ... ``"cpu"``, lora/model_manager.py) and copied into the slots: no device memory beyond
the slots. So the profile sees, per rank (L = max_loras, r = max_lora_rank, a = the model dtype's bytes,
``lora_dtype`` auto)::

    slots = L · r · a · ( Σ over the linear layers on the rank (out_rank + in_rank)        one per vLLM slice
                         + (V + H) for the embeddings + (V + H) for lm_head               where the class wraps them )

A column-parallel layer's ``lora_a`` is [L, 1, r, in] (the whole input) and ``lora_b`` [L, 1, out/tp, r]; a
row-parallel one's ``lora_a`` [L, 1, r, in/tp] and ``lora_b`` [L, 1, out, r] (base_linear.py
``create_lora_weights``, 0.19.0 lines 35-85; ``fully_sharded_loras`` off); a packed layer (qkv, gate_up) holds one
pair per slice (column_parallel_linear.py ``MergedColumnParallelLinearWithLoRA``): per HF projection, its shape
on the rank, out_rank + in_rank. The embeddings' ``lora_a`` is [L, V, r] and ``lora_b`` [L, 1, H, r]
(vocab_parallel_embedding.py), lm_head's (``LogitsProcessorWithLoRA``) [L, 1, r, H] and [L, 1, V, r], whole on
every rank. Which classes wrap their embeddings is each release's ``embedding_modules``
(``lora_modules.json``, scripts/golden/lora_modules.py: Qwen3 from 0.17, Llama in every release). Up to 0.11.x
the LoRA extra vocabulary (``lora_extra_vocab_size`` 256) widens them: lora_a [L, V + 256, r], lm_head's lora_b
[L, 1, ⌈(V + 256)/256⌉·256, r], and each holds ``embeddings_tensors`` [L, 256, H]; the model's own embedding
grows by 256·L rows and its lm_head to ⌈(V + 256)/256⌉·256 rows (llama.py 0.11.0 lines 348-357, 540-555).

The punica wrapper's buffers (``PunicaWrapperGPU``, int32/int64 indices) are per batched token, per sequence and
fixed: the goldens' bytes (``PUNICA``). Checked exactly against the goldens of ``scripts/golden/profile_terms.py
--lora-all`` (tests/golden/profile_terms/lora/, Llama-3.1-8B and Qwen3-8B at L 4, r 64: 1,477,705,728 B and
1,556,480,000 B of slots in 0.19.0 and 0.34.0; tests/test_lora.py). Not counted: the MoE experts' LoRA slots
(``FusedMoEWithLoRA``) and Mamba mixers' (said in the term's source), the forward's LoRA shrink/expand buffers
(num_slices · T · r fp32 per layer, freed after each layer: 6 MiB at T 8192, r 64, inside the activation's
256 MiB workspace).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kvplan.units import cdiv
from kvplan.version import version_key

TABLE = Path(__file__).with_name("lora_modules.json")
LORA_EXTRA_VOCAB_SIZE = 256  # LoRAConfig.lora_extra_vocab_size's default, 0.11.0 config/lora.py line 47
LORA_VOCAB_PADDING_SIZE = 256  # CudaPlatform's get_lora_vocab_padding_size (platforms/interface.py 0.11.0 l. 417)
LAST_EXTRA_VOCAB = (0, 11, 2)  # the last release with the extra vocabulary (0.12.0's LoRAConfig has none)
# LoRAConfig's allowed ranks: 0.11.x config/lora.py lines 103-108 (possible_max_ranks), 0.12.0+ MaxLoRARanks
RANKS_BEFORE_0_12 = (8, 16, 32, 64, 128, 256, 320, 512)
RANKS_FROM_0_12 = (1, 8, 16, 32, 64, 128, 256, 320, 512)
# LogitsProcessorWithLoRA.create_lora_weights refuses a larger vocabulary: 257024 up to 0.15 (``32000 < v >
# 257024``, 0.11.0 logits_processor.py line 88), 258048 from 0.17 (0.19.0 / 0.34.0 line 91)
MAX_VOCAB_BEFORE_0_17, MAX_VOCAB_FROM_0_17 = 257024, 258048
# The punica wrapper's buffers per golden release (bytes per batched token, per sequence, fixed at max_loras 4):
# tests/golden/profile_terms/lora/<release>.json "punica" (the integer tensors load_lora_model allocates)
PUNICA = (("0.11.0", 48, 32, 128), ("0.15.1", 56, 24, 128), ("0.19.0", 56, 24, 128), ("0.24.0", 56, 24, 128),
          ("0.34.0", 48, 24, 128))
WRAPPED_KINDS = ("attention", "mlp")


@cache
def _table() -> dict:
    return json.loads(TABLE.read_text())


def _in(ranges: list, release: str) -> bool:
    k = version_key(release)
    return any(version_key(a) <= k <= version_key(b) for a, b in ranges)


def class_support(architecture: str, release: str) -> tuple[bool | None, bool, bool]:
    """(implements SupportsLoRA — None when the class is not in the release's model files under that name —,
    wraps its embeddings, wraps lm_head) for ``architecture`` in ``release``."""
    row = _table()["architectures"].get(architecture)
    if row is None:
        return None, False, False
    return _in(row["lora"], release), _in(row.get("embeddings", []), release), _in(row.get("lm_head", []), release)


def allowed_ranks(release: str) -> tuple[int, ...]:
    return RANKS_BEFORE_0_12 if version_key(release) < (0, 12) else RANKS_FROM_0_12


def max_vocab(release: str) -> int:
    return MAX_VOCAB_BEFORE_0_17 if version_key(release) < (0, 17) else MAX_VOCAB_FROM_0_17


def extra_vocab(release: str) -> bool:
    return version_key(release) <= LAST_EXTRA_VOCAB


def punica_row(release: str) -> tuple[tuple, bool]:
    """The punica row of ``release`` (the newest golden release at or before it; the first golden's before it)
    and whether it is the release's own golden."""
    k = version_key(release)
    rows = [r for r in PUNICA if version_key(r[0]) <= k] or [PUNICA[0]]
    return rows[-1], rows[-1][0] == release


@dataclass(frozen=True)
class LoraCost:
    """The LoRA bytes on one rank of one pipeline stage."""

    slot_bytes: int  # the adapter slots (lora_a / lora_b, 0.11's embeddings_tensors)
    vocab_weight_bytes: int  # up to 0.11.x: the model's embedding and lm_head grown for the extra vocabulary
    punica_bytes: int
    num_slices: int  # lora_a / lora_b pairs (a packed qkv layer holds three)
    embeddings: bool  # the class wraps its embeddings / lm_head in this release
    punica_from: str  # the golden release the punica row is from
    not_counted: tuple[str, ...]  # what LoRA wraps on this model that the rule does not count

    @property
    def total_bytes(self) -> int:
        return self.slot_bytes + self.vocab_weight_bytes + self.punica_bytes


def lora_cost(inventory, cfg: dict, architecture: str, release: str, *, dtype_bytes: int, tp: int,
              max_loras: int, max_lora_rank: int, max_num_batched_tokens: int, max_num_seqs: int,
              layers: set[int] | None = None, first: bool = True, last: bool = True) -> LoraCost:
    """The bytes ``--enable-lora`` adds on one rank (rule in the module docstring); ``layers`` the decoder layers
    of the stage (None: all), ``first`` / ``last`` whether it holds the embeddings / lm_head."""
    L, r = max_loras, max_lora_rank
    elems = wrapped = unranked = 0
    skipped: set[str] = set()
    for w in inventory.weights:
        if w.layer is not None and layers is not None and w.layer not in layers:
            continue
        if w.expert and w.linear:
            skipped.add("the MoE experts' LoRA slots (FusedMoEWithLoRA)")
            continue
        if not w.linear or w.kind not in WRAPPED_KINDS or len(w.shape) != 2:
            if w.linear and w.kind == "mixer":
                skipped.add("the Mamba mixers' LoRA slots")
            continue
        out_rank, in_rank = w.rank_shape(tp)
        elems += out_rank + in_rank
        wrapped += 1
    _, embeds, head = class_support(architecture, release)
    V, H = int(cfg.get("vocab_size") or 0), int(cfg.get("hidden_size") or 0)
    extra = LORA_EXTRA_VOCAB_SIZE if extra_vocab(release) else 0
    vocab_weights = 0
    if embeds and first:
        elems += (V + extra) + H
        wrapped += 1
        if extra:
            unranked += extra * H  # embeddings_tensors [L, 256, H]
            # the embedding's added rows (vocab padded to 64, + 256·L), vocab-parallel on the rank
            padded = cdiv(V, 64) * 64
            vocab_weights += (cdiv(padded + extra * L, tp) - cdiv(padded, tp)) * H
    if head and last:
        head_rows = cdiv(V + extra, LORA_VOCAB_PADDING_SIZE) * LORA_VOCAB_PADDING_SIZE if extra else V
        elems += H + head_rows
        wrapped += 1
        if extra:
            unranked += extra * H
            # lm_head padded to 256 rows over vocab + 256 instead of 64 over vocab (vocab-parallel on the rank)
            vocab_weights += (cdiv(head_rows, tp) - cdiv(cdiv(V, 64) * 64, tp)) * H
    row, _ = punica_row(release)
    punica = row[1] * max_num_batched_tokens + row[2] * max_num_seqs + row[3]
    return LoraCost(slot_bytes=(elems * r + unranked) * L * dtype_bytes, vocab_weight_bytes=vocab_weights * dtype_bytes,
                    punica_bytes=punica, num_slices=wrapped, embeddings=bool(embeds or head),
                    punica_from=row[0], not_counted=tuple(sorted(skipped)))
