"""What the K-means family's model assumes about the users' points, and how to break it.

The model (a Bayesian bootstrap of the pilot, :class:`~hybridpriv.families.kmeans.model.KMeansPilotModel`)
resamples the public pilot points: the users' points are where the pilot's are.  A pilot that is not a
random sample of the users (recruited elsewhere, earlier, from some clusters more than others) breaks it,
and the public start, placed by the pilot, is then off.  One departure: every user's point shifted by
``delta`` along each coordinate (clipped into the box), the start and the pilot kept.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...core.assumptions import Assumption
from ...core.params import Parametrized
from ...core.privacy import Bounds

__all__ = ["ShiftPoints", "kmeans_assumptions"]


class ShiftPoints(Parametrized):
    """``data -> data``: every point moved by ``delta`` along every coordinate, clipped into ``bounds``; the
    public start (``init``) stays, and generating centres are dropped (they no longer generate the points)."""

    def __init__(self, bounds: Bounds | tuple[float, float]) -> None:
        self.bounds = Bounds.from_pair(bounds)

    def __call__(self, data, delta: float):
        from .algorithms import PointCloud

        if not isinstance(data, PointCloud):
            raise ValueError(f"data must be a PointCloud, got {type(data).__name__}")
        moved = np.clip(data.points + delta, self.bounds.lower, self.bounds.upper)
        return dataclasses.replace(data, points=moved, centres=None)


def kmeans_assumptions(bounds: tuple[float, float]) -> list[Assumption]:
    """The departures a K-means SPEC's decision is checked against (scale: the box's width)."""
    box = Bounds.from_pair(bounds)
    return [Assumption("pilot", "the users' points lie where the pilot's do",
                       "a shift of every user's point along each coordinate, against the pilot", float(box.width),
                       ShiftPoints(box))]
