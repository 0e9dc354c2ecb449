"""Neighbouring datasets for any :class:`~hybridpriv.estimators.base.Mechanism`, and its audit by unit.

A mechanism promises each protected unit (a group, or every user) a
:class:`~hybridpriv.privacy.Guarantee` under a neighbouring relation.  :func:`audit_estimator`
audits every unit with a finite promised epsilon on the neighbouring pairs of
:func:`neighbouring_pairs`: one record (or user) of that unit changed as much as its relation
allows.  Which change is worst can depend on the bounds (a record moving from ``a`` to ``b``; a
record present at ``a`` or at ``b`` against an absent one), so every candidate is audited, with
the Bonferroni split of :func:`~hybridpriv.testing.audit` over them.  Public units
(``epsilon = inf``) promise nothing and are skipped.

The pairs, by data kind:

* ``"grouped"`` (one 1-D array per group, sizes fixed): ``"replace"``: the record at the lower
  vs the upper bound.  ``"add-remove"``: an absent record vs a record at each bound.  With sizes
  fixed, "absent" is the value that adds nothing to the released statistic
  (:func:`absent_value`): ``0`` for a sum of records, the estimator's ``centre`` for a sum of
  offsets from a centre (:class:`~hybridpriv.estimators.PDPSample` with the expected
  denominator).  When that value lies outside the bounds the pair is the lower vs the upper
  bound, marked ``conservative`` (a smaller change than add/remove allows).
* ``"user-item"`` (a users x items matrix; add/remove one user): the matrix vs the matrix with a
  new user who holds every item.
* ``"points"`` (a :class:`~hybridpriv.estimators.kmeans.PointCloud`; unit ``"tcm"`` or ``"lm"``):
  ``"add-remove"``: a new user of the unit at the lower corner, and at the upper corner, of the
  box; ``"replace"``: the unit's first user at the lower vs the upper corner.
* ``"public-private"`` (a :class:`~hybridpriv.estimators.wang.HybridDesign`; unit ``"private"``,
  replace one record): the first private record at the column-wise minimum vs the column-wise
  maximum of all records.

A release with more than one number is reduced to one coordinate per pair: the one whose mean
differs most (in standard deviations) between the two datasets on a small pilot run drawn from
its own stream (independent of the audit's samples, so the choice costs no confidence).  Pass
``statistic=`` for a better reduction (post-processing: it can cost power, never validity).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral
from typing import Any

import numpy as np

from .core import AuditReport, NeighbouringPair, _check_common, audit

__all__ = [
    "Coordinate",
    "absent_value",
    "audit_estimator",
    "estimator_mechanism",
    "mechanism_sampler",
    "neighbouring_pair",
    "neighbouring_pairs",
]

#: Outputs per dataset of the pilot run that picks a coordinate of a vector release.
PILOT_SAMPLES = 2_000


def _int(x: object) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def _declaration(mechanism: object) -> dict:
    guarantee = getattr(mechanism, "privacy", None)
    if not isinstance(guarantee, Mapping) or not (callable(getattr(mechanism, "release", None))
                                                  or callable(getattr(mechanism, "estimate", None))):
        raise TypeError(
            "mechanism must follow the hybridpriv Mechanism protocol (release(data, rng, trials) and a privacy "
            f"dict by unit), got {type(mechanism).__name__}; audit other mechanisms with audit()"
        )
    return dict(guarantee)


def _kind(mechanism: object) -> str:
    kind = getattr(mechanism, "data_kind", "grouped")
    if kind == "grouped" and not (hasattr(mechanism, "groups") and hasattr(mechanism, "bounds")):
        raise TypeError(f"a grouped mechanism needs groups and bounds, got {type(mechanism).__name__}")
    return kind


# ---------------------------------------------------------------------------------------
# grouped data
# ---------------------------------------------------------------------------------------
def _base_data(estimator, data: object) -> list[np.ndarray]:
    from ..privacy import check_group_data

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


# ---------------------------------------------------------------------------------------
# the other data kinds
# ---------------------------------------------------------------------------------------
def _user_item_pairs(data: object, unit: str) -> list[NeighbouringPair]:
    import scipy.sparse as sp

    m = np.asarray(data.toarray() if sp.issparse(data) else data, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"data must be a users x items matrix, got shape {m.shape}")
    plus = np.vstack([m, np.ones((1, m.shape[1]))])
    return [NeighbouringPair(m, plus, f"{unit}: add a user who holds all {m.shape[1]} items")]


def _point_pairs(data: Any, unit: str, guarantee, record: int) -> list[NeighbouringPair]:
    from ..estimators.kmeans import PointCloud

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


def _design_pairs(data: Any, unit: str, record: int) -> list[NeighbouringPair]:
    from ..estimators.wang import HybridDesign

    if not isinstance(data, HybridDesign):
        raise TypeError(f"data must be a HybridDesign for a public-private mechanism, got {type(data).__name__}")
    if not _int(record) or not (0 <= record < data.private.shape[0]):
        raise ValueError(f"record must be an index in [0, {data.private.shape[0]}) of the private records, got {record!r}")
    allx = np.vstack([data.private, data.public])
    lo, hi = np.array(data.private), np.array(data.private)
    lo[record], hi[record] = allx.min(axis=0), allx.max(axis=0)
    return [NeighbouringPair(dataclasses.replace(data, private=lo), dataclasses.replace(data, private=hi),
                             f"{unit}: private record {record} at the column minima vs maxima")]


def neighbouring_pairs(mechanism, data: object, unit: str, record: int = 0) -> list[NeighbouringPair]:
    """Every candidate neighbouring pair that changes one record (or user) of ``unit`` (see the module docstring).

    Parameters
    ----------
    mechanism
        A :class:`~hybridpriv.estimators.base.Mechanism` (its ``data_kind`` and ``privacy[unit]``
        are read; grouped ones also their ``groups`` and ``bounds``).
    data
        The base dataset, of the mechanism's data kind.
    unit
        The protected unit (a key of ``mechanism.privacy``).
    record
        Index of the record (or, for points, of the unit's user) that changes.

    Returns
    -------
    list of NeighbouringPair
        Worst candidate first.
    """
    guarantee = _declaration(mechanism)
    if unit not in guarantee:
        raise ValueError(f"group must be one of {list(guarantee)}, got {unit!r}")
    kind = _kind(mechanism)
    if kind == "grouped":
        return _grouped_pairs(mechanism, data, unit, guarantee[unit], record)
    if kind == "user-item":
        return _user_item_pairs(data, unit)
    if kind == "points":
        return _point_pairs(data, unit, guarantee[unit], record)
    if kind == "public-private":
        return _design_pairs(data, unit, record)
    raise ValueError(f"no neighbouring pairs for data kind {kind!r}")


def neighbouring_pair(mechanism, data: object, group: str, record: int = 0) -> NeighbouringPair:
    """The first (worst) pair of :func:`neighbouring_pairs`.

    For a grouped estimator: ``"replace"``: the lower vs the upper bound; ``"add-remove"``
    (group sizes fixed): the absent value (:func:`absent_value`) vs the bound farthest from it,
    or, when no absent value lies in the bounds, the lower vs the upper bound marked
    ``conservative``.
    """
    return neighbouring_pairs(mechanism, data, group, record)[0]


# ---------------------------------------------------------------------------------------
# running a mechanism for the audit
# ---------------------------------------------------------------------------------------
def estimator_mechanism(estimator) -> Callable[[object, np.random.Generator, int], np.ndarray]:
    """``mechanism(data, rng, size)`` for :func:`audit`: ``size`` estimates of a grouped estimator on one dataset.

    The dataset (one 1-D array per group) is broadcast over a trial axis of length ``size``
    without copying, and ``estimator.estimate`` runs once, vectorised.
    """
    _declaration(estimator)
    _kind(estimator)

    def mechanism(data, rng, size):
        arrays = [np.broadcast_to(np.asarray(x, dtype=float), (size, np.size(x))) for x in data]
        return np.asarray(estimator.estimate(arrays, rng))

    return mechanism


def mechanism_sampler(mechanism) -> Callable[[object, np.random.Generator, int], np.ndarray]:
    """``sampler(data, rng, size)`` for :func:`audit`: ``mechanism.release(data, rng, size)`` (any data kind)."""
    _declaration(mechanism)
    if _kind(mechanism) == "grouped" and callable(getattr(mechanism, "estimate", None)):
        return estimator_mechanism(mechanism)
    return lambda data, rng, size: mechanism.release(data, rng, size)


@dataclasses.dataclass(frozen=True)
class Coordinate:
    """Reduce each release to one coordinate of its flattened value (picklable)."""

    index: int

    def __call__(self, out: np.ndarray) -> np.ndarray:
        out = np.asarray(out)
        return out.reshape(out.shape[0], -1)[:, self.index]


def _pilot_coordinate(sampler, pair: NeighbouringPair, ss: np.random.SeedSequence) -> Coordinate | None:
    """The coordinate whose mean differs most between the pair's datasets (None: scalar releases)."""
    s0, s1, s_probe = ss.spawn(3)
    if np.ndim(sampler(pair.first, np.random.default_rng(s_probe), 2)) <= 1:
        return None
    x0 = np.asarray(sampler(pair.first, np.random.default_rng(s0), PILOT_SAMPLES), dtype=float)
    x1 = np.asarray(sampler(pair.second, np.random.default_rng(s1), PILOT_SAMPLES), dtype=float)
    x0, x1 = x0.reshape(PILOT_SAMPLES, -1), x1.reshape(PILOT_SAMPLES, -1)
    spread = np.sqrt((x0.var(axis=0) + x1.var(axis=0)) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.abs(x0.mean(axis=0) - x1.mean(axis=0)) / np.where(spread > 0, spread, np.inf)
    return Coordinate(int(np.argmax(np.nan_to_num(score, nan=0.0))))


def audit_estimator(
    estimator,
    data: object,
    samples: int = 50_000,
    confidence: float = 0.99,
    seed: int | np.random.SeedSequence = 0,
    groups: Sequence[str] | None = None,
    grid: int = 100,
    batch: int = 25_000,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    record: int = 0,
) -> dict[str, AuditReport]:
    """Audit a mechanism's declaration unit by unit (any data kind).

    For every unit with a finite promised epsilon (public units, ``epsilon = inf``, promise
    nothing and are skipped) the pairs of :func:`neighbouring_pairs` are audited against that
    unit's ``(epsilon, delta)``; the unit with the smallest epsilon is always among them.

    Parameters
    ----------
    estimator
        A :class:`~hybridpriv.estimators.base.Mechanism` (a grouped estimator, contribution-bounded
        counts, a K-means mechanism, a Wang et al. mechanism, ...).
    data
        The base dataset of the mechanism's kind (grouped: one 1-D array per group, inside the
        bounds).  Power depends on it: datasets on which the mechanism leaks most (e.g. other
        records at 0, so that nothing else adds randomness) find violations first.
    samples, confidence, grid, batch
        As for :func:`~hybridpriv.testing.audit`.  ``confidence`` is for the whole mechanism:
        each of the ``G`` audited units is audited at ``1 - (1 - confidence)/G``.
    seed
        Integer or :class:`numpy.random.SeedSequence`; each unit gets a spawned stream.
    groups
        Names of the units to audit (default: every unit with a finite epsilon).
    statistic
        Reduction of a vector release to one number; default: a pilot-chosen coordinate per pair
        (see the module docstring).  Scalar releases need none.
    record
        Index of the record (or user) that changes.

    Returns
    -------
    dict
        Unit name -> :class:`~hybridpriv.testing.AuditReport`, in declaration order.
    """
    guarantee = _declaration(estimator)
    root = _check_common(samples, confidence, seed, grid, batch)
    if statistic is not None and not callable(statistic):
        raise TypeError(f"statistic must be callable or None, got {type(statistic).__name__}")
    if groups is None:
        names = [n for n, g in guarantee.items() if math.isfinite(g.epsilon)]
    else:
        if isinstance(groups, str) or not isinstance(groups, Iterable):
            raise TypeError(f"groups must be a sequence of group names or None, got {groups!r}")
        names = list(groups)
        for n in names:
            if n not in guarantee:
                raise ValueError(f"groups must name groups of the estimator {list(guarantee)}, got {n!r}")
            if not math.isfinite(guarantee[n].epsilon):
                raise ValueError(f"groups: group {n!r} is public (epsilon = inf) and promises nothing to audit")
        if len(set(names)) != len(names):
            raise ValueError(f"groups must not repeat a name, got {names}")
    if not names:
        raise ValueError("estimator promises no group a finite epsilon: nothing to audit")
    if _kind(estimator) == "grouped":
        data = _base_data(estimator, data)
    level = 1.0 - (1.0 - float(confidence)) / len(names)
    sampler = mechanism_sampler(estimator)
    reports = {}
    for name, ss in zip(names, root.spawn(len(names))):
        audit_ss, pilot_ss = ss.spawn(2)
        pairs = neighbouring_pairs(estimator, data, name, record)
        if statistic is None:
            pairs = [dataclasses.replace(p, statistic=_pilot_coordinate(sampler, p, s))
                     for p, s in zip(pairs, pilot_ss.spawn(len(pairs)))]
        g = guarantee[name]
        reports[name] = audit(sampler, pairs, g.epsilon, g.delta, samples=samples, confidence=level, seed=audit_ss,
                              grid=grid, batch=batch, statistic=statistic)
    return reports
