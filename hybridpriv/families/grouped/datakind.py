"""The ``grouped`` data kind: one 1-D array of scalar records per privacy group, sizes fixed (public).

Neighbouring pairs for the audit: ``"replace"``: the record at the lower vs the upper bound.
``"add-remove"``: an absent record vs a record at each bound.  With sizes fixed, "absent" is the value
that adds nothing to the released statistic (:func:`absent_value`): ``0`` for a sum of records, the
estimator's ``centre`` for a sum of offsets from a centre (:class:`~hybridpriv.estimators.PDPSample`
with the expected denominator).  When that value lies outside the bounds the pair is the lower vs the
upper bound, marked ``conservative`` (a smaller change than add/remove allows).
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral
from typing import Any

import numpy as np

from ...core.datakind import DataKind
from ...testing.core import NeighbouringPair

__all__ = ["GROUPED_DATA", "GroupedData", "absent_value", "estimator_mechanism"]


def _int(x: object) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def _base_data(estimator, data: object) -> list[np.ndarray]:
    from ...core.privacy import check_group_data

    arrays, batched = check_group_data(getattr(data, "values", data), estimator.groups, estimator.bounds, clamp=False)
    if batched:
        raise ValueError("data must be one base dataset (one 1-D array per group), got arrays with a trial axis")
    return [np.array(a[0], dtype=float) for a in arrays]


def absent_value(estimator) -> float | None:
    """The record value that adds nothing to a grouped estimator's release, if it lies in the bounds.

    ``estimator.centre`` when the estimator declares one (it sums offsets from that centre),
    else ``0`` (a sum of records); None when that value is outside the bounds (an absent
    record cannot then be written as a record value).
    """
    z = float(getattr(estimator, "centre", 0.0) or 0.0)
    return z if estimator.bounds.lower <= z <= estimator.bounds.upper else None


def _grouped_pairs(estimator, data: object, unit: str, guarantee, record: int) -> list[NeighbouringPair]:
    names = [g.name for g in estimator.groups]
    base = _base_data(estimator, data)
    idx = names.index(unit)
    if not _int(record) or not (0 <= record < base[idx].size):
        raise ValueError(f"record must be an index in [0, {base[idx].size}) of group {unit!r}, got {record!r}")
    a, b = estimator.bounds.lower, estimator.bounds.upper
    relation = guarantee.relation
    if relation == "replace":
        changes = [(a, b, "replace: lower vs upper bound", False)]
    elif relation == "add-remove":
        z = absent_value(estimator)
        if z is None:
            changes = [(a, b, "add-remove, but no absent value lies in the bounds: lower vs upper bound (conservative)",
                        True)]
        else:
            far, near = (b, a) if abs(b - z) >= abs(a - z) else (a, b)
            how = f"add-remove with sizes fixed: absent ({z:g} adds nothing) vs present at "
            changes = [(z, v, how + ("the farther bound" if v == far else "the nearer bound"), False)
                       for v in (far, near) if v != z]
    else:
        raise ValueError(f"guarantee of group {unit!r} has unknown relation {relation!r}")
    out = []
    for v0, v1, how, conservative in changes:
        first = [x.copy() for x in base]
        second = [x.copy() for x in base]
        first[idx][record] = v0
        second[idx][record] = v1
        out.append(NeighbouringPair(first, second, f"record {record} of group {unit!r}: {v0:g} vs {v1:g} ({how})",
                                    conservative))
    return out


def estimator_mechanism(estimator) -> Callable[[object, np.random.Generator, int], np.ndarray]:
    """``mechanism(data, rng, size)`` for :func:`audit`: ``size`` estimates of a grouped estimator on one dataset.

    The dataset (one 1-D array per group) is broadcast over a trial axis of length ``size``
    without copying, and ``estimator.estimate`` runs once, vectorised.
    """
    GROUPED_DATA.check_mechanism(estimator)

    def mechanism(data, rng, size):
        arrays = [np.broadcast_to(np.asarray(x, dtype=float), (size, np.size(x))) for x in data]
        return np.asarray(estimator.estimate(arrays, rng))

    return mechanism


class GroupedData(DataKind):
    """One 1-D array of records per group (:class:`hybridpriv.families.grouped.GroupedDataset`)."""

    name = "grouped"

    def check_mechanism(self, mechanism: Any) -> None:
        if not (hasattr(mechanism, "groups") and hasattr(mechanism, "bounds")):
            raise TypeError(f"a grouped mechanism needs groups and bounds, got {type(mechanism).__name__}")

    def base(self, mechanism: Any, data: Any) -> list[np.ndarray]:
        return _base_data(mechanism, data)

    def sampler(self, mechanism: Any) -> Callable[[Any, Any, int], Any] | None:
        return estimator_mechanism(mechanism) if callable(getattr(mechanism, "estimate", None)) else None

    def neighbouring_pairs(self, mechanism: Any, data: Any, unit: str, guarantee: Any, record: int) -> list:
        return _grouped_pairs(mechanism, data, unit, guarantee, record)

    def default_task(self) -> Any:
        from . import Statistic

        return Statistic()

    def check_candidate(self, mechanism: Any, source: Any, coordinate: Any) -> None:
        groups = getattr(source, "groups", None)
        if groups is not None and [(g.name, g.size) for g in mechanism.groups] != [(g.name, g.size) for g in groups]:
            raise ValueError(f"candidate {coordinate!r} was built for other groups than the source's")


GROUPED_DATA = GroupedData()
