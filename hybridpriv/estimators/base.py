"""The estimator base class: parameters in the constructor, a declared guarantee, a vectorised estimate."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from ..mechanisms import check_rng
from ..privacy import NEIGHBOUR_RELATIONS, Bounds, Group, Guarantee, check_group_data, check_groups, check_positive

__all__ = ["Estimator", "resolve_sigma2"]


def resolve_sigma2(sigma2: object) -> float:
    """``sigma2`` as a float: a number, or a fitted model exposing ``variance_posterior_mean``.

    Plugging in the posterior mean of the records' variance is the Bayes choice for the
    mixed mean: its variance is linear in ``sigma2`` (see ``docs/theory.md``).
    """
    if hasattr(sigma2, "variance_posterior_mean"):
        sigma2 = sigma2.variance_posterior_mean  # type: ignore[union-attr]
    return check_positive(sigma2, "sigma2")


class Estimator(ABC):
    """Base class of every estimator.

    Subclasses set ``statistic`` (what they estimate: ``"mean"`` or ``"median"``), a
    ``label`` (used as the coordinate in results), implement :meth:`_estimate` on validated
    arrays and declare :attr:`guarantee`.

    Parameters
    ----------
    groups
        The privacy groups, in the order data arrays are given.
    bounds
        Declared range of every record, a :class:`~hybridpriv.privacy.Bounds` or a pair.
    clamp
        Clip records into the bounds (the documented clamping step) instead of raising.
    """

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
    @property
    @abstractmethod
    def guarantee(self) -> dict[str, Guarantee]:
        """What the estimator promises each group, by group name."""

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
        out = np.asarray(self._estimate(arrays, check_rng(rng)), dtype=float)
        if out.shape != (arrays[0].shape[0],):
            raise RuntimeError(f"{type(self).__name__}._estimate returned shape {out.shape}, expected ({arrays[0].shape[0]},)")
        if np.isnan(out).any():
            raise RuntimeError(f"{type(self).__name__} produced NaN")
        return out if batched else float(out[0])

    @abstractmethod
    def _estimate(self, data: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        """Compute on validated float arrays of shape ``(trials, n_i)``; return shape ``(trials,)``."""

    def describe_guarantee(self) -> str:
        """The guarantee as one readable line: ``group: promise; ...``."""
        return "; ".join(f"{name}: {g}" for name, g in self.guarantee.items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(label={self.label!r}, groups={[g.name for g in self.groups]})"
