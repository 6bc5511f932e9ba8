"""The ``Family`` record each family module exports (``FAMILY``), and ``inventory_of``, which runs a family's
weight rules (and its vision tower) into an ``Inventory``."""

from __future__ import annotations

from collections.abc import Callable

from kvplan.frozen import dataclass
from kvplan.errors import UnsupportedError
from kvplan.model.families.base import Context, FamilyResult
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView
from kvplan.tensors import Inventory


LayerRule = Callable[[HFView, Context], FamilyResult]
WeightRule = Callable[[WeightView, Builder], None]
MtpWeightRule = Callable[[WeightView, Builder, int], None]
VisionRule = Callable[[HFView, WeightView, Builder], None]


@dataclass(frozen=True)
class Family:
    """One family, as its module (``kvplan/model/families/<family>.py``) exports it in ``FAMILY``: its rules, each
    the function itself, and what the family table (``registry``) derives from it.

    ``layers``: the KV layers vLLM registers. ``weights`` / ``mtp_weights``: the weight rules for the decoder and
    for the MTP layers (None: kvplan has no weight count). ``architectures``: the ``architectures[0]`` values vLLM
    serves with this rule (the primary key, as vLLM picks the model class by architecture); ``model_types``: the
    fallback when the architecture is unknown. ``config_keys``: the config keys the module's rules read
    (``tests/test_families.py`` holds them equal to the reads in its source; the shared helpers of ``base`` read
    ``num_hidden_layers``, ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``, ``hidden_size``,
    ``sliding_window`` and ``layer_types`` besides). ``hybrid``: Mamba / GDN / linear-state layers
    (``ModelInfo.is_hybrid_mamba`` for a drafter read without its layers). ``language_model_archs``: the
    multimodal wrappers that build the decoder under ``language_model``. ``vision``: architecture → (the vision
    tower's weight rule, its note), for the multimodal checkpoints whose tower kvplan counts."""

    key: str
    layers: LayerRule
    weights: WeightRule | None = None
    mtp_weights: MtpWeightRule | None = None
    architectures: tuple[str, ...] = ()
    model_types: tuple[str, ...] = ()
    config_keys: tuple[str, ...] = ()
    hybrid: bool = False
    language_model_archs: frozenset[str] = frozenset()
    vision: tuple[tuple[str, VisionRule, str], ...] = ()

    @property
    def mtp(self) -> bool:
        return self.mtp_weights is not None


def inventory_of(cfg: WeightView, family: Family, num_mtp_layers: int = 0, *,
                 include_mtp: bool = True) -> tuple[Inventory, Inventory]:
    """The weights of the config ``cfg`` reads, by the family's rules (``Family.weights``, and ``mtp_weights``
    for ``num_mtp_layers`` MTP layers), with the family's vision tower (``Family.vision``) when the config is a
    multimodal one: ``(loaded, stored)``, what vLLM loads (the MTP layers when ``include_mtp``) and what the
    checkpoint stores (every MTP layer), from one pass of the rules (an MTP rule only appends)."""
    if family.weights is None:
        raise UnsupportedError(f"kvplan has no weight count for the {family.key} family; pass --weights-memory")
    b = Builder()
    family.weights(cfg, b)
    decoder = list(b.weights)
    if family.mtp_weights is not None and num_mtp_layers:
        family.mtp_weights(cfg, b, num_mtp_layers)
    mtp = b.weights[len(decoder):]
    notes, tail = [], Builder()
    config = cfg.top_raw
    if cfg.raw is not config:
        arch = (config.get("architectures") or [""])[0]
        tower = next(((rule, note) for a, rule, note in family.vision if a == arch), None)
        vision = config.get("vision_config")
        if tower is not None and isinstance(vision, dict):
            tower[0](HFView(vision, None, path=cfg.path, prefix="vision_config."), cfg, tail)
            notes.append(tower[1])
        else:
            notes.append("text decoder only: the vision tower of this multimodal checkpoint is not counted")
    n = cfg.opt_int("num_hidden_layers", minimum=0) or len(str(cfg.get("hybrid_override_pattern", "")))

    def inventory(with_mtp: bool) -> Inventory:
        note = ["MTP weights included (embedding and lm_head shared with the target, as vLLM loads them)"]
        return Inventory(family.key, cfg.text_model_type, tuple(decoder + (mtp if with_mtp else []) + tail.weights), n,
                         cfg.tie(), tuple((note if with_mtp and mtp else []) + notes))

    stored = inventory(True)
    return (stored if include_mtp or not mtp else inventory(False)), stored
