"""The grouped family's task: :class:`Statistic`, a scalar estimate of a grouped dataset's mean or median."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.tasks import Task, scalar_loss

__all__ = ["Statistic"]


class Statistic(Task):
    """Scalar estimates of a grouped dataset's mean or median.

    Each mechanism says which statistic it estimates (its ``statistic`` attribute, ``"mean"`` or
    ``"median"``); its releases are scored against that statistic of the dataset.

    Parameters
    ----------
    target
        ``"population"`` (default, the papers' convention): the generating distribution's value
        after clamping; ``"sample"``: the simulated dataset's own pooled statistic.
    loss
        ``"squared"`` or ``"absolute"`` error.
    """

    data_kind = "grouped"

    def __init__(self, target: str = "population", loss: str = "squared") -> None:
        if not isinstance(target, str) or target not in ("population", "sample"):
            raise ValueError(f"target must be 'population' or 'sample', got {target!r}")
        self.target = target
        self._loss = scalar_loss(loss)
        self.loss_name = f"{loss} error"

    def check(self, mechanism: Any) -> None:
        super().check(mechanism)
        stat = getattr(mechanism, "statistic", None)
        if stat not in ("mean", "median"):
            raise ValueError(f"{type(mechanism).__name__} must estimate 'mean' or 'median', got statistic={stat!r}")

    def truth(self, data: Any) -> dict[str, float]:
        from .data import STATISTICS

        if self.target == "sample":
            return {s: data.truth(s, "sample") for s in STATISTICS}
        return {s: float(data.population[s]) for s in STATISTICS if s in data.population}

    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Mapping[str, float]) -> np.ndarray:
        stat = mechanism.statistic
        if stat not in truth:
            raise ValueError(f"the source gives no population {stat!r}; use Statistic(target='sample')")
        return self._loss(np.asarray(releases, dtype=float) - truth[stat])
