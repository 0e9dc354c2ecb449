"""Neighbouring datasets for any :class:`~hybridpriv.core.mechanism.Mechanism`, and its audit by unit.

A mechanism promises each protected unit (a group, or every user) a
:class:`~hybridpriv.core.privacy.Guarantee` under a neighbouring relation.  :func:`audit_estimator`
audits every unit with a finite promised epsilon on the neighbouring pairs of
:func:`neighbouring_pairs`: one record (or user) of that unit changed as much as its relation
allows.  Which change is worst can depend on the bounds (a record moving from ``a`` to ``b``; a
record present at ``a`` or at ``b`` against an absent one), so every candidate is audited, with
the Bonferroni split of :func:`~hybridpriv.testing.audit` over them.  Public units
(``epsilon = inf``) promise nothing and are skipped.

The pairs are the data kind's (:meth:`hybridpriv.core.datakind.DataKind.neighbouring_pairs`): each
family documents those of the kinds it defines.

A release with more than one number is reduced to one coordinate per pair: the one whose mean
differs most (in standard deviations) between the two datasets on a small pilot run drawn from
its own stream (independent of the audit's samples, so the choice costs no confidence).  Pass
``statistic=`` for a better reduction (post-processing: it can cost power, never validity).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from .core import AuditReport, NeighbouringPair, _check_common, audit

__all__ = [
    "Coordinate",
    "audit_estimator",
    "mechanism_sampler",
    "neighbouring_pair",
    "neighbouring_pairs",
]

#: Outputs per dataset of the pilot run that picks a coordinate of a vector release.
PILOT_SAMPLES = 2_000


def _declaration(mechanism: object) -> dict:
    guarantee = getattr(mechanism, "privacy", None)
    if not isinstance(guarantee, Mapping) or not (callable(getattr(mechanism, "release", None))
                                                  or callable(getattr(mechanism, "estimate", None))):
        raise TypeError(
            "mechanism must follow the hybridpriv Mechanism protocol (release(data, rng, trials) and a privacy "
            f"dict by unit), got {type(mechanism).__name__}; audit other mechanisms with audit()"
        )
    return dict(guarantee)


def _data_kind(mechanism: object):
    """The registered :class:`~hybridpriv.core.datakind.DataKind` of ``mechanism``, checked for it."""
    from ..families import data_kind

    kind = data_kind(getattr(mechanism, "data_kind", None) or "")
    kind.check_mechanism(mechanism)
    return kind


def neighbouring_pairs(mechanism, data: object, unit: str, record: int = 0) -> list[NeighbouringPair]:
    """Every candidate neighbouring pair that changes one record (or user) of ``unit`` (see the module docstring).

    Parameters
    ----------
    mechanism
        A :class:`~hybridpriv.core.mechanism.Mechanism` (its ``data_kind`` and ``privacy[unit]``
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
    return _data_kind(mechanism).neighbouring_pairs(mechanism, data, unit, guarantee[unit], record)


def neighbouring_pair(mechanism, data: object, group: str, record: int = 0) -> NeighbouringPair:
    """The first (worst) pair of :func:`neighbouring_pairs`.

    Which pair is worst is the data kind's to say (e.g. for a grouped estimator under ``"replace"``:
    the lower vs the upper bound).
    """
    return neighbouring_pairs(mechanism, data, group, record)[0]


# ---------------------------------------------------------------------------------------
# running a mechanism for the audit
# ---------------------------------------------------------------------------------------
def mechanism_sampler(mechanism) -> Callable[[object, np.random.Generator, int], np.ndarray]:
    """``sampler(data, rng, size)`` for :func:`audit`: ``mechanism.release(data, rng, size)`` (any data kind), or its
    data kind's faster sampler (grouped estimators: one vectorised ``estimate`` on broadcast records)."""
    _declaration(mechanism)
    fast = _data_kind(mechanism).sampler(mechanism)
    return fast if fast is not None else (lambda data, rng, size: mechanism.release(data, rng, size))


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
        A :class:`~hybridpriv.core.mechanism.Mechanism` (a grouped estimator, contribution-bounded
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
    data = _data_kind(estimator).base(estimator, data)
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
