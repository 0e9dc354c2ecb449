"""The ``category-counts`` data kind: each privacy group's records as counts over public categories.

A :class:`CategoryCounts` holds one row of counts per group (in the groups' order) and one column per
category.  The group sizes are public (a mechanism turns counts into shares with them), so a dataset
whose rows sum to other sizes is a neighbour, not an error: adding a record to a group adds 1 to one
count.

Neighbouring pairs for the audit (:class:`CategoryData`): ``"add-remove"``: the base counts vs one more
record of the unit in the first category, and in the last; ``"replace"``: one record of the unit moved
from the first category to the last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ...core.datakind import DataKind
from ...testing.core import NeighbouringPair

__all__ = ["BETWEEN", "CATEGORY_DATA", "SHARED_PRIOR", "CategoryCounts", "CategoryData", "check_counts"]

# The model's defaults (:mod:`.model`), here so that the SPEC reads them without importing the model's stack.
#: The default prior scale of the between-group spread ``tau`` (``HalfNormal(BETWEEN)``, when the groups differ): a
#: share's standard deviation across groups over ``sqrt(p (1 - p))``.  Real groups that differ by an attribute
#: (Swiss women by age beside a foreign-born panel; Mroz's women by age beside a college panel) spread by 0.16-0.32
#: on average, one group by up to 0.55; groups assigned at random, by 0.  Scale 0.3 puts the average spreads in
#: the prior's bulk (median 0.2); the calibration measured 0.2, 0.3 and 0.45 (docs/calibration-history.md).
BETWEEN = 0.3
#: The default prior probability that the private groups answer alike (``tau = 0``).
SHARED_PRIOR = 0.5


@dataclass(frozen=True)
class CategoryCounts:
    """Counts of records per (group, category): an integer array of shape ``(groups, categories)``."""

    counts: np.ndarray
    data_kind: ClassVar[str] = "category-counts"
    statistics_cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", check_counts(self.counts))

    @property
    def records(self) -> np.ndarray:
        """Records per category over all groups."""
        return self.counts.sum(axis=0)


def check_counts(counts: Any, shape: tuple[int, int] | None = None, name: str = "counts") -> np.ndarray:
    """``counts`` as a read-only int64 array of shape ``shape`` (if given), every entry a whole number >= 0."""
    arr = np.asarray(counts)
    if arr.dtype.kind not in "iuf" or arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of counts (groups x categories), got shape {arr.shape}, "
                         f"dtype {arr.dtype}")
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape} (groups x categories), got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.round(arr)):
        raise ValueError(f"{name} must hold whole numbers >= 0")
    out = np.array(arr, dtype=np.int64)
    out.setflags(write=False)
    return out


class CategoryData(DataKind):
    """Counts over public categories, one row per privacy group."""

    name = "category-counts"

    def check_mechanism(self, mechanism: Any) -> None:
        if not (hasattr(mechanism, "groups") and hasattr(mechanism, "categories")):
            raise TypeError(f"a category-counts mechanism needs groups and categories, got {type(mechanism).__name__}")

    def base(self, mechanism: Any, data: Any) -> CategoryCounts:
        counts = getattr(data, "counts", data)
        return CategoryCounts(check_counts(counts, (len(mechanism.groups), len(mechanism.categories)), "data"))

    def neighbouring_pairs(self, mechanism: Any, data: Any, unit: str, guarantee: Any, record: int) -> list:
        base = self.base(mechanism, data).counts
        g = [x.name for x in mechanism.groups].index(unit)
        last = base.shape[1] - 1

        def changed(*moves: tuple[int, int]) -> CategoryCounts:
            out = np.array(base)
            for c, delta in moves:
                out[g, c] += delta
            return CategoryCounts(out)

        if guarantee.relation == "add-remove":
            return [NeighbouringPair(CategoryCounts(base), changed((c, 1)), f"{unit}: one more record in category {c}")
                    for c in (0, last)]
        if base[g, 0] < 1:
            raise ValueError(f"data must hold a record of unit {unit!r} in the first category for a replace pair")
        return [NeighbouringPair(CategoryCounts(base), changed((0, -1), (last, 1)),
                                 f"{unit}: one record moved from category 0 to {last}")]


CATEGORY_DATA = CategoryData()
