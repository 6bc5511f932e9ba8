"""``kvplan models``'s records: the bundled catalog."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CatalogRow:
    """One bundled config (``kvplan.model.list_catalog``; configs/INDEX.json's fields, None where the
    index does not list the config)."""

    id: str
    family: str | None
    role: str | None  # target, drafter
    provenance: str | None  # genuine, reconstructed
    path: str
    target: str | None  # a drafter's target model
    layer_mix: str | None


@dataclass(frozen=True)
class ModelsBody:
    """``kvplan models``: the bundled catalog."""

    models: tuple[CatalogRow, ...]
