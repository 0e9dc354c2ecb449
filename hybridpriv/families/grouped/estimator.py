"""The grouped estimators' base class, :class:`Estimator` (a :class:`~hybridpriv.core.mechanism.Mechanism`
reading one array per privacy group), and the shared statistics its built-in subclasses release from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ...core.mechanism import Mechanism
from ...core.privacy import (
    NEIGHBOUR_RELATIONS,
    Bounds,
    Group,
    check_group_data,
    check_groups,
    check_positive,
)
from ...core.validation import check_rng, check_trials

__all__ = ["Estimator", "GroupedStatistics", "grouped_statistics", "per_trial", "resolve_sigma2"]


def resolve_sigma2(sigma2: object) -> float:
    """``sigma2`` as a float: a number, or a fitted model exposing ``variance_posterior_mean``.

    Plugging in the posterior mean of the records' variance is the Bayes choice for the
    mixed mean: its variance is linear in ``sigma2`` (see ``docs/theory.md``).
    """
    if hasattr(sigma2, "variance_posterior_mean"):
        sigma2 = sigma2.variance_posterior_mean  # type: ignore[union-attr]
    return check_positive(sigma2, "sigma2")


class GroupedStatistics:
    """Validated grouped data and the statistics the grouped estimators compute from it.

    Every array has a leading axis of ``rows``: 1 for one dataset (what :meth:`Estimator.release`
    builds; its statistics broadcast against the trial axis of the noise, so a release costs its
    noise draw plus O(groups)), or ``trials`` for one dataset per trial (:meth:`Estimator.estimate`
    on batched data).  The statistics are computed once, when first asked for.

    Parameters
    ----------
    values
        One validated float array per group, each of shape ``(rows, n_i)``.
    """

    def __init__(self, values: Sequence[np.ndarray]) -> None:
        self.values = list(values)
        self.rows = int(self.values[0].shape[0])
        self._sums: np.ndarray | None = None

    @property
    def sums(self) -> np.ndarray:
        """Each group's sum, shape ``(rows, groups)``."""
        if self._sums is None:
            self._sums = np.stack([x.sum(axis=1) for x in self.values], axis=1)
        return self._sums

    def pooled(self, groups: Sequence[int] | None = None) -> np.ndarray:
        """The records of ``groups`` (indices; default all) side by side, shape ``(rows, n)``."""
        idx = range(len(self.values)) if groups is None else groups
        return np.concatenate([self.values[k] for k in idx], axis=1)

    def broadcast(self, trials: int) -> list[np.ndarray]:
        """The values with ``trials`` rows (read-only views when ``rows`` is 1)."""
        return [np.broadcast_to(x, (trials, x.shape[-1])) for x in self.values]


def per_trial(values: np.ndarray, trials: int) -> np.ndarray:
    """A release computed once per row of :class:`GroupedStatistics` (shape ``(rows,)``) as ``(trials,)``."""
    values = np.asarray(values, dtype=float)
    return np.repeat(values, trials) if values.shape == (1,) and trials != 1 else values


def grouped_statistics(
    data: Any, groups: Sequence[Group], bounds: Bounds, clamp: bool = False
) -> GroupedStatistics:
    """:class:`GroupedStatistics` of one dataset (one row), validated for the setting.

    ``data`` is one 1-D array per group or a :class:`~hybridpriv.families.grouped.GroupedDataset`; for the
    latter the result is kept in the dataset's ``statistics_cache`` (by the groups' names and sizes,
    the bounds and ``clamp``: values given by group name are ordered by the estimator's groups), so
    every candidate evaluated on the dataset validates, sums and sorts it once.
    """
    values = getattr(data, "values", data)
    cache = getattr(data, "statistics_cache", None)
    if isinstance(values, Mapping):  # ordered by the groups' names, not by position: keep nothing
        cache = None
    key = (tuple((g.name, g.size) for g in groups), bounds.lower, bounds.upper, clamp)
    if cache is not None and key in cache:
        return cache[key]
    arrays, batched = check_group_data(values, groups, bounds, clamp)
    if batched:
        raise ValueError("release takes one dataset (one 1-D array per group); pass trials= for repeats")
    stats = GroupedStatistics(arrays)
    if cache is not None:
        cache[key] = stats
    return stats


class Estimator(Mechanism):
    """Base class of the grouped estimators (a scalar release from one array per group).

    Subclasses set ``statistic`` (what they estimate: ``"mean"`` or ``"median"``), a
    ``label`` (used as the coordinate in results), implement :meth:`_estimate` on validated
    arrays and declare :attr:`privacy` (one :class:`~hybridpriv.core.privacy.Guarantee` per group).
    The built-in estimators implement :meth:`_release` on :class:`GroupedStatistics` instead: a
    release on one dataset then reads the dataset's statistics (shared by every candidate) and
    draws only the noise for each trial.  A subclass that overrides :meth:`_estimate` is run on
    the records repeated for every trial, as before.

    Parameters
    ----------
    groups
        The privacy groups, in the order data arrays are given.
    bounds
        Declared range of every record, a :class:`~hybridpriv.core.privacy.Bounds` or a pair.
    clamp
        Clip records into the bounds (the documented clamping step) instead of raising.
    """

    data_kind: ClassVar[str] = "grouped"
    statistic: ClassVar[str] = "mean"
    label: str = "estimator"

    def __init__(self, groups: Sequence[Group], bounds: Bounds | tuple[float, float], clamp: bool = False) -> None:
        self.groups = check_groups(groups)
        self.bounds = Bounds.from_pair(bounds)
        if not isinstance(clamp, bool):
            raise TypeError(f"clamp must be True or False, got {clamp!r}")
        self.clamp = clamp

    # -- helpers for subclasses -------------------------------------------------
    @property
    def sizes(self) -> np.ndarray:
        return np.array([g.size for g in self.groups])

    @property
    def epsilons(self) -> np.ndarray:
        return np.array([g.epsilon for g in self.groups])

    @staticmethod
    def _check_relation(relation: str) -> str:
        if relation not in NEIGHBOUR_RELATIONS:
            raise ValueError(f"relation must be one of {NEIGHBOUR_RELATIONS}, got {relation!r}")
        return relation

    # -- public API -------------------------------------------------------------
    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """``trials`` independent estimates on one dataset (one 1-D array per group, or a
        :class:`~hybridpriv.families.grouped.GroupedDataset`); shape ``(trials,)``."""
        trials = check_trials(trials)
        stats = grouped_statistics(data, self.groups, self.bounds, self.clamp)
        rng = check_rng(rng)
        if type(self)._estimate is Estimator._estimate:  # the statistics path (every built-in)
            return self._checked(self._release(stats, rng, trials), trials)
        return self._checked(self._estimate(stats.broadcast(trials), rng), trials)

    #: Largest noise scale of a released value, in units of the bounds' width: a mechanism whose noise
    #: is a trillion times the data range releases nothing useful, and its squared loss would
    #: overflow; such settings are refused at construction, naming the parameters.
    MAX_NOISE_WIDTHS = 1e12

    def _check_noise(self, scale: float, what: str) -> float:
        """``scale`` (a released value's noise scale) after checking it is finite and not absurdly large."""
        limit = self.MAX_NOISE_WIDTHS * self.bounds.width
        if not np.isfinite(scale) or scale > limit:
            raise ValueError(
                f"{what} gives a noise scale of {scale:.3g} on the released value with bounds "
                f"[{self.bounds.lower:g}, {self.bounds.upper:g}] (more than {self.MAX_NOISE_WIDTHS:.0e} times their "
                "width): nothing useful would be released and its error would overflow; raise epsilon or narrow the bounds"
            )
        return float(scale)

    def _checked(self, out: object, trials: int) -> np.ndarray:
        out = np.asarray(out, dtype=float)
        if out.shape != (trials,):
            raise RuntimeError(f"{type(self).__name__}._estimate returned shape {out.shape}, expected ({trials},)")
        if not np.isfinite(out).all():
            raise RuntimeError(f"{type(self).__name__} produced a non-finite release ({out[~np.isfinite(out)][0]!r})")
        return out

    def estimate(
        self, data: Sequence[np.ndarray] | Mapping[str, np.ndarray], rng: np.random.Generator
    ) -> np.ndarray | float:
        """Release the estimate.

        Parameters
        ----------
        data
            One array per group (sequence in group order or mapping by name), each of shape
            ``(n_i,)`` or ``(trials, n_i)``; with a leading trial axis every row is an
            independent run (rows may repeat one dataset via ``numpy.broadcast_to``).
        rng
            The random generator; the only source of randomness.

        Returns
        -------
        A float, or an array of shape ``(trials,)`` when the data have a trial axis.
        """
        arrays, batched = check_group_data(data, self.groups, self.bounds, self.clamp)
        out = self._checked(self._estimate(arrays, check_rng(rng)), arrays[0].shape[0])
        return out if batched else float(out[0])

    def _estimate(self, data: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """Compute on validated float arrays of shape ``(trials, n_i)``; return shape ``(trials,)``.

        Subclasses implement this or :meth:`_release`; by default it is :meth:`_release` on the
        statistics of the rows."""
        return self._release(GroupedStatistics(data), rng, data[0].shape[0])

    def _release(self, stats: GroupedStatistics, rng: np.random.Generator, trials: int) -> np.ndarray:
        """``trials`` releases from ``stats`` (``stats.rows`` is 1, or ``trials``: one dataset per
        trial); shape ``(trials,)``.  Draw the same noise whatever ``stats.rows`` is."""
        raise NotImplementedError(f"{type(self).__name__} must implement _estimate(data, rng) or _release(stats, rng, trials)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(label={self.label!r}, groups={[g.name for g in self.groups]})"
