"""The result records of ``kvplan check --live``: each running server's cache configuration beside
kvplan's prediction for the deployment it serves (filled by ``kvplan.usecases.live``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LiveFigure:
    """One figure: kvplan's prediction, the server's label, and whether they agree (None: not
    compared; ``note`` says why)."""

    figure: str  # the cache_config_info label
    predicted: Any
    served: Any
    agrees: bool | None
    note: str | None


@dataclass(frozen=True)
class LiveServer:
    url: str
    engine: str | None
    model_names: tuple[str, ...]  # the model_name labels the server's metrics carry
    deployment: str  # the deployments-file entry it was matched with
    matched_by: str  # how: the model name, or the only deployment of the files
    policy: str  # the release kvplan simulated
    figures: tuple[LiveFigure, ...]
    agrees: bool


@dataclass(frozen=True)
class LiveBody:
    files: tuple[str, ...]
    tolerance_pct: float
    servers: tuple[LiveServer, ...]
