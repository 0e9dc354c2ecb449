"""The ``public-private`` data kind: a private design beside public records
(:class:`~hybridpriv.families.public_private.wang.HybridDesign`; unit ``"private"``, replace one record).

Neighbouring pair for the audit: the first private record at the column-wise minimum vs the
column-wise maximum of all records.
"""

from __future__ import annotations

import dataclasses
from numbers import Integral
from typing import Any

import numpy as np

from ...core.datakind import DataKind
from ...testing.core import NeighbouringPair

__all__ = ["DESIGN_DATA", "DesignData"]


def _int(x: object) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def _design_pairs(data: Any, unit: str, record: int) -> list[NeighbouringPair]:
    from .wang import HybridDesign

    if not isinstance(data, HybridDesign):
        raise TypeError(f"data must be a HybridDesign for a public-private mechanism, got {type(data).__name__}")
    if not _int(record) or not (0 <= record < data.private.shape[0]):
        raise ValueError(f"record must be an index in [0, {data.private.shape[0]}) of the private records, got {record!r}")
    allx = np.vstack([data.private, data.public])
    lo, hi = np.array(data.private), np.array(data.private)
    lo[record], hi[record] = allx.min(axis=0), allx.max(axis=0)
    return [NeighbouringPair(dataclasses.replace(data, private=lo), dataclasses.replace(data, private=hi),
                             f"{unit}: private record {record} at the column minima vs maxima")]


class DesignData(DataKind):
    name = "public-private"

    def neighbouring_pairs(self, mechanism: Any, data: Any, unit: str, guarantee: Any, record: int) -> list:
        return _design_pairs(data, unit, record)


DESIGN_DATA = DesignData()
