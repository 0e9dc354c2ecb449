"""Ferrando et al.'s mixed estimators: one DP release per group, mixed with inverse-variance weights."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core import events
from ...core.privacy import Bounds, Group, Guarantee
from ...noise import smith_quantile
from ...theory import mixed_mean_weights
from .estimator import Estimator, GroupedStatistics, resolve_sigma2

__all__ = ["WeightedMean", "WeightedMedian"]


class _Mixed(Estimator):
    """Shared set-up: sensitivity of a group sum and the mixing weights."""

    def __init__(
        self,
        groups: Sequence[Group],
        bounds: Bounds | tuple[float, float],
        sigma2: object,
        relation: str = "add-remove",
        clamp: bool = False,
    ) -> None:
        super().__init__(groups, bounds, clamp)
        self.relation = self._check_relation(relation)
        self.sigma2 = resolve_sigma2(sigma2)
        self.sensitivity = self.bounds.sum_sensitivity(self.relation)
        self.weights = mixed_mean_weights(self.sizes, self.epsilons, self.sigma2, self.sensitivity)
        for g in self.groups:
            if not g.is_public:
                self._check_noise(self.sensitivity / g.epsilon / g.size, f"group {g.name!r}: epsilon={g.epsilon:g}")

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {g.name: Guarantee(g.epsilon, 0.0, self.relation) for g in self.groups}


class WeightedMean(_Mixed):
    """Inverse-variance mixture of per-group Laplace means (Ferrando et al. 2020).

    Group ``i`` releases ``(Sigma_i + z_i)/n_i`` with ``z_i ~ Lap(Delta/epsilon_i)`` (no noise
    for public groups); the releases are combined with
    :func:`hybridpriv.theory.mixed_mean_weights`.

    Parameters
    ----------
    groups, bounds
        The setting.
    sigma2
        Variance of the records: a number, or a fitted model (its ``variance_posterior_mean``
        is plugged in, the Bayes choice; see ``docs/theory.md``).
    relation
        ``"add-remove"`` (the paper's ``Delta = r = max(|a|, |b|)``) or ``"replace"``
        (``Delta = b - a``, for group sizes treated as public).
    clamp
        Clip records into the bounds instead of raising.

    Guarantee
    ---------
    ``epsilon_i``-DP for every record of group ``i`` under ``relation`` (parallel composition:
    each record enters one group's sum only).
    """

    statistic = "mean"
    label = "weighted"

    @property
    def privacy_events(self) -> dict[str, Any]:
        """Each private group: Laplace(``Delta / eps_i``) on its sum of sensitivity ``Delta``."""
        return {g.name: events.epsilon_delta(math.inf) if g.is_public else events.laplace(self.sensitivity / g.epsilon,
                                                                                           self.sensitivity)
                for g in self.groups}

    def _release(self, stats: GroupedStatistics, rng: np.random.Generator, trials: int) -> np.ndarray:
        eps = self.epsilons
        scale = np.where(np.isinf(eps), 0.0, self.sensitivity / np.where(np.isinf(eps), 1.0, eps))
        noisy = stats.sums + scale * rng.laplace(size=(trials, len(self.groups)))  # (T, G)
        return (noisy / self.sizes) @ self.weights


class WeightedMedian(_Mixed):
    """Per-group exponential-mechanism medians mixed with the mean weights (Ferrando et al.).

    Group ``i`` releases Smith's ``epsilon_i``-DP median over the bounds
    (:func:`hybridpriv.noise.smith_quantile`; public groups release their exact median);
    the releases are combined with the weights of :class:`WeightedMean`.

    Parameters
    ----------
    groups, bounds, sigma2, relation, clamp
        As for :class:`WeightedMean` (``sigma2`` and ``relation`` only set the weights).

    Guarantee
    ---------
    ``epsilon_i``-DP for every record of group ``i`` (the rank utility has sensitivity 1
    under both relations).
    """

    statistic = "median"
    label = "weighted-median"

    def _release(self, stats: GroupedStatistics, rng: np.random.Generator, trials: int) -> np.ndarray:
        medians = np.empty((trials, len(self.groups)))
        for k, (g, x) in enumerate(zip(self.groups, stats.values)):
            if g.is_public:
                medians[:, k] = np.median(x, axis=1)
            else:
                medians[:, k] = smith_quantile(x, 0.5, g.epsilon, self.bounds, rng, trials=trials)
        return medians @ self.weights
