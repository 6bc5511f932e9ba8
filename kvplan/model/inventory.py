"""The weights of a model as the model stage hands them to the budget: every tensor vLLM loads, counted by the
family's weight rule (``kvplan/model/families/<family>.py``; the ``Family`` record holds its layer and weight rules).

``analytic_inventory(config)`` counts one config (the text decoder of a multimodal one; MTP layers on request),
``drafter_inventory`` a drafter's own weights, and ``layout_inventory(layout)`` what a budget reads of a
``ModelLayout``: the target as vLLM loads it, what its checkpoint stores, and the drafter. The model stage builds
that once, from the views of the configs its family rules read, when a budget is asked for
(``finish_model_layout(..., inventory=True)``), so the budget reads values and never calls back into the model
layer.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.frozen import dataclass
from kvplan.errors import UnsupportedError
from kvplan.model.families import FAMILIES, Family, config_views, family_of, is_v32, mtp_count
from kvplan.model.hfconfig import HFView
from kvplan.model.families.record import inventory_of
from kvplan.model.families.weights import WeightView, eagle_inventory
from kvplan.tensors import KINDS, Inventory, Weight

__all__ = ["KINDS", "Inventory", "ModelInventory", "Weight", "analytic_inventory", "drafter_inventory",
           "layout_inventory", "model_inventory"]


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


def _weights(text: HFView, config: dict, *, include_mtp: bool, family: str | None, num_mtp_layers: int | None,
             sparse_mla: bool | None, stored: bool = False) -> tuple[Inventory, Inventory]:
    """The weights of the config ``text`` reads (``config``: the whole of it), by its family's rules: what vLLM
    loads and (``stored``: counted) what the checkpoint stores, MTP layers included."""
    rules = _family(config, family)
    cfg = WeightView(text, config, sparse_mla=is_v32(text) if sparse_mla is None else sparse_mla)
    count = 0
    if (include_mtp or stored) and rules.mtp_weights is not None:
        count = num_mtp_layers if num_mtp_layers is not None else mtp_count(cfg, rules.key)
    return inventory_of(cfg, rules, count, include_mtp=include_mtp)


def analytic_inventory(config: dict, *, include_mtp: bool = False, path: str = "<config>",
                       family: str | None = None, num_mtp_layers: int | None = None,
                       sparse_mla: bool | None = None) -> Inventory:
    """The weights vLLM loads for ``config`` (the text decoder of a multimodal config); ``family``,
    ``num_mtp_layers`` and ``sparse_mla``: the model stage's decisions (``ModelInfo``'s fields), else read
    from the config by the family rules (``family_of``, ``mtp_count``, ``is_v32``)."""
    return _weights(config_views(config, path)[1], config, include_mtp=include_mtp, family=family,
                    num_mtp_layers=num_mtp_layers, sparse_mla=sparse_mla)[0]


def _drafter(text: HFView, config: dict, method: str, target: HFView, info=None) -> Inventory:
    """``info``: the drafter's ``ModelInfo`` (its family and sparse-MLA test), when the model stage has one."""
    if method in ("eagle", "eagle3"):
        return eagle_inventory(WeightView(text, config), method, target)
    inv = _weights(text, config, include_mtp=False, family=info.family if info else None, num_mtp_layers=None,
                   sparse_mla=info.sparse_mla if info else None)[0]
    return replace(inv, weights=tuple(replace(w, kind="drafter", stage="last", layer=None) for w in inv.weights))


def drafter_inventory(draft_config: dict, method: str, target_config: dict, *, path: str = "<drafter>") -> Inventory:
    """A drafter's own weights as vLLM loads them: an EAGLE / EAGLE-3 / P-EAGLE head's (``eagle_inventory``; its
    ``fc`` reads the target's hidden size), else (``draft_model``) the draft model's whole inventory, held on
    the last stage."""
    return _drafter(config_views(draft_config, path)[1], draft_config, method, config_views(target_config, "<config>")[1])


@dataclass(frozen=True)
class ModelInventory:
    """What the budget stage counts of a ``ModelLayout``, built by the model stage: plain values."""

    target: Inventory  # the target as vLLM loads it: its MTP layers only when MTP is on
    # what the checkpoint stores (every MTP layer it holds, which vLLM skips when MTP is off): the figure its
    # index's metadata.total_size gives; the same object as ``target`` when the two agree
    stored: Inventory
    drafter: Inventory | None  # the drafter's own weights (--drafter), None without one


def model_inventory(text: HFView, target, method: str | None, drafter=None) -> ModelInventory:
    """The weights a budget counts: the target's (``target``: its ``ModelInfo``, whose family, MTP layer count
    and sparse-MLA test the model stage decided; ``text``: its text config as the family rules read it), and
    ``drafter``'s, a ``(text view, ModelInfo)`` pair, under the speculative ``method``."""
    facts = {"family": target.family, "num_mtp_layers": target.num_mtp_layers, "sparse_mla": target.sparse_mla}
    counted, stored = _weights(text, target.config, include_mtp=method == "mtp", stored=True, **facts)
    own = None
    if drafter is not None:
        dtext, d = drafter
        own = _drafter(dtext, d.config, method or "draft_model", text, d)
    return ModelInventory(counted, stored, own)


def layout_inventory(layout) -> ModelInventory:
    """The weights of a ``ModelLayout`` built without them (the library's ``build_model_layout``), its configs
    read again through the family rules' view."""
    def text(info) -> HFView:
        source = getattr(info, "source", None)
        return config_views(info.config, source.path if source is not None else "<config>")[1]

    d = layout.drafter
    return model_inventory(text(layout.target), layout.target, layout.speculative_method,
                           (text(d), d) if d is not None else None)

