"""The histogram family's task: the error of the released shares against the shares of all records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...core.tasks import Task
from .data import CategoryCounts

__all__ = ["HISTOGRAM_LOSSES", "HistogramError"]

#: ``"squared"``: the squared error summed over categories; ``"max"``: the largest absolute error.
HISTOGRAM_LOSSES = ("squared", "max")


class HistogramError(Task):
    """Score released shares against the shares of every record pooled (public groups included).

    ``truth(data)``: ``records`` (how many) and ``top_share`` (the largest category's share).  The
    squared loss has an exact risk given the counts for every candidate whose release has a closed-form
    mean and variance (:meth:`~hybridpriv.families.histogram.mechanisms.HistogramMechanism.mean_and_variance`):
    ``||mean - shares||^2 + total variance``; the others (PDP Sample's coins) are run.
    """

    data_kind = "category-counts"

    def __init__(self, loss: str = "squared") -> None:
        if loss not in HISTOGRAM_LOSSES:
            raise ValueError(f"loss must be one of {HISTOGRAM_LOSSES}, got {loss!r}")
        self.loss_kind = loss
        self.loss_name = {"squared": "squared error of the shares, summed over categories",
                          "max": "largest absolute error of a share"}[loss]

    @staticmethod
    def shares(data: Any) -> np.ndarray:
        counts = data.counts if isinstance(data, CategoryCounts) else np.asarray(data)
        total = counts.sum(axis=0).astype(float)
        return total / total.sum()

    def truth(self, data: Any) -> dict[str, float]:
        counts = data.counts if isinstance(data, CategoryCounts) else np.asarray(data)
        p = self.shares(data)
        return {"records": float(counts.sum()), "top_share": float(p.max())}

    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Mapping[str, float]) -> np.ndarray:
        err = np.asarray(releases, dtype=float) - self.shares(data)
        return np.sum(err ** 2, axis=1) if self.loss_kind == "squared" else np.max(np.abs(err), axis=1)

    def exact_risk(self, mechanisms: Sequence[Any], data: Any, truth: Mapping[str, float]) -> np.ndarray | None:
        if self.loss_kind != "squared":
            return None
        counts = (data.counts if isinstance(data, CategoryCounts) else np.asarray(data)).astype(float)
        p = self.shares(data)
        out = np.full(len(mechanisms), np.nan)
        from .mechanisms import LaplaceHistograms, PooledHistogram, PublicHistogram

        for i, mech in enumerate(mechanisms):
            # exactly these classes (a subclass may change the release): their mean and variance are closed forms
            mv = mech.mean_and_variance(counts) if type(mech) in (LaplaceHistograms, PooledHistogram,
                                                                   PublicHistogram) else None
            if mv is not None:
                mean, var = mv
                out[i] = float(np.sum((mean - p) ** 2) + var)
        return out
