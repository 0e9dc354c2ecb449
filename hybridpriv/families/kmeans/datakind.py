"""The ``points`` data kind: a point cloud whose users trust the curator or not
(:class:`~hybridpriv.families.kmeans.algorithms.PointCloud`; units ``"tcm"`` and ``"lm"``).

Neighbouring pairs for the audit: ``"add-remove"``: a new user of the unit at the lower corner, and at
the upper corner, of the box; ``"replace"``: the unit's first user at the lower vs the upper corner.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ...core.datakind import DataKind
from ...testing.core import NeighbouringPair

__all__ = ["POINTS_DATA", "PointsData"]


def _point_pairs(data: Any, unit: str, guarantee, record: int) -> list[NeighbouringPair]:
    from .algorithms import PointCloud

    if not isinstance(data, PointCloud):
        raise TypeError(f"data must be a PointCloud for a points mechanism, got {type(data).__name__}")
    if unit not in ("tcm", "lm"):
        raise ValueError(f"unit of a points mechanism must be 'tcm' or 'lm', got {unit!r}")
    trusted = unit == "tcm"
    d = data.points.shape[1]
    corners = {"lower": np.full(d, data.bounds.lower), "upper": np.full(d, data.bounds.upper)}

    def cloud(points, mask):
        return dataclasses.replace(data, points=np.asarray(points), trusted=np.asarray(mask, dtype=bool))

    if guarantee.relation == "add-remove":
        return [NeighbouringPair(data, cloud(np.vstack([data.points, c]), np.append(data.trusted, trusted)),
                                 f"{unit}: add a user at the {name} corner") for name, c in corners.items()]
    mine = np.flatnonzero(data.trusted == trusted)
    if mine.size <= record:
        raise ValueError(f"data must hold more than {record} users of unit {unit!r} for a replace pair, got {mine.size}")
    i = mine[record]
    lo, hi = data.points.copy(), data.points.copy()
    lo[i], hi[i] = corners["lower"], corners["upper"]
    return [NeighbouringPair(cloud(lo, data.trusted), cloud(hi, data.trusted),
                             f"{unit}: user {i} at the lower vs the upper corner")]


class PointsData(DataKind):
    name = "points"

    def neighbouring_pairs(self, mechanism: Any, data: Any, unit: str, guarantee: Any, record: int) -> list:
        return _point_pairs(data, unit, guarantee, record)


POINTS_DATA = PointsData()
