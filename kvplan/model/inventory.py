"""The weights of a model as the model stage hands them to the budget: every tensor vLLM loads, counted by the
family's weight rule (``kvplan.model.weight_rules``; the ``Family`` record holds its layer and weight rules).

``analytic_inventory(config)`` counts one config (the text decoder of a multimodal one; MTP layers on request),
``drafter_inventory`` a drafter's own weights, and ``layout_inventory(layout)`` what a budget reads of a
``ModelLayout``: the target as vLLM loads it, what its checkpoint stores, and the drafter. The model stage builds
that once, when a budget is asked for (``with_inventory``), so the budget reads values and never calls back into
the model layer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.errors import UnsupportedError
from kvplan.model.families import FAMILIES, Family, family_of, is_v32, mtp_count
from kvplan.model.weight_rules import WeightView, eagle_inventory, inventory_of
from kvplan.tensors import KINDS, Inventory, Weight

__all__ = ["KINDS", "Inventory", "ModelInventory", "Weight", "analytic_inventory", "drafter_inventory",
           "layout_inventory", "with_inventory"]


def _family(config: dict, key: str | None = None) -> Family:
    """The model layer's family record for ``config`` (``key``: the family the model stage found,
    ``ModelInfo.family``), when kvplan counts its weights."""
    archs = config.get("architectures") or [""]
    key = key or family_of(archs[0], config.get("model_type"))
    family = FAMILIES.get(key) if key else None
    if family is None or family.weights is None:
        raise UnsupportedError(
            f"kvplan has no weight count for {archs[0] or config.get('model_type')!r}; "
            "pass --weights-memory (e.g. 16GiB per GPU)"
        )
    return family


def analytic_inventory(config: dict, *, include_mtp: bool = False, path: str = "<config>",
                       family: str | None = None, num_mtp_layers: int | None = None,
                       sparse_mla: bool | None = None) -> Inventory:
    """The weights vLLM loads for ``config`` (the text decoder of a multimodal config); ``family``,
    ``num_mtp_layers`` and ``sparse_mla``: the model stage's decisions (``ModelInfo``'s fields), else read
    from the config by the family rules (``family_of``, ``mtp_count``, ``is_v32``)."""
    family = _family(config, family)
    cfg = WeightView(config, path)
    cfg.sparse_mla = is_v32(cfg) if sparse_mla is None else sparse_mla
    count = 0
    if include_mtp and family.mtp_weights is not None:
        count = num_mtp_layers if num_mtp_layers is not None else mtp_count(cfg, family.key)
    return inventory_of(cfg, family.key, family.weights, family.mtp_weights, count)


def drafter_inventory(draft_config: dict, method: str, target_config: dict, *, path: str = "<drafter>") -> Inventory:
    """A drafter's own weights as vLLM loads them: an EAGLE / EAGLE-3 / P-EAGLE head's (``eagle_inventory``; its
    ``fc`` reads the target's hidden size), else (``draft_model``) the draft model's whole inventory, held on
    the last stage."""
    if method in ("eagle", "eagle3"):
        return eagle_inventory(draft_config, method, target_config, path)
    inv = analytic_inventory(draft_config, path=path)
    return replace(inv, weights=tuple(replace(w, kind="drafter", stage="last", layer=None) for w in inv.weights))


@dataclass(frozen=True)
class ModelInventory:
    """What the budget stage counts of a ``ModelLayout``, built by the model stage: plain values."""

    target: Inventory  # the target as vLLM loads it: its MTP layers only when MTP is on
    # what the checkpoint stores (every MTP layer it holds, which vLLM skips when MTP is off): the figure its
    # index's metadata.total_size gives; the same object as ``target`` when the two agree
    stored: Inventory
    drafter: Inventory | None  # the drafter's own weights (--drafter), None without one


def layout_inventory(layout) -> ModelInventory:
    """The weights of a ``ModelLayout`` as the budget counts them, from the model stage's own decisions
    (``ModelInfo``'s family, MTP layer count and sparse-MLA test) and the configs it read."""
    t = layout.target
    path = t.source.path if getattr(t, "source", None) is not None else "<config>"
    facts = {"path": path, "family": t.family, "num_mtp_layers": t.num_mtp_layers, "sparse_mla": t.sparse_mla}
    mtp = layout.speculative_method == "mtp"
    target = analytic_inventory(t.config, include_mtp=mtp, **facts)
    holds_mtp = FAMILIES[t.family].mtp_weights is not None and t.num_mtp_layers > 0
    stored = analytic_inventory(t.config, include_mtp=True, **facts) if holds_mtp and not mtp else target
    drafter = None
    if layout.drafter is not None:
        d = layout.drafter
        dpath = d.source.path if getattr(d, "source", None) is not None else "<drafter>"
        drafter = drafter_inventory(d.config, layout.speculative_method or "draft_model", t.config, path=dpath)
    return ModelInventory(target, stored, drafter)


def with_inventory(layout):
    """``layout`` with its ``ModelInventory``: the model stage's answer when a budget is asked for."""
    return replace(layout, inventory=layout_inventory(layout))
