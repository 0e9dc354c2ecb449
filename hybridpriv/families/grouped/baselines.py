"""Plain baselines a reader expects: everyone at the smallest epsilon, and public records only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core import events
from ...core.privacy import Bounds, Group, Guarantee, smallest_private_epsilon
from ...noise import smith_quantile
from .estimator import Estimator, GroupedStatistics, per_trial

__all__ = ["PublicMean", "PublicMedian", "UniformMean", "UniformMedian"]


class _Uniform(Estimator):
    def __init__(
        self, groups: Sequence[Group], bounds: Bounds | tuple[float, float], relation: str = "add-remove", clamp: bool = False
    ) -> None:
        super().__init__(groups, bounds, clamp)
        self.relation = self._check_relation(relation)
        self.epsilon = smallest_private_epsilon(self.groups)
        if np.isfinite(self.epsilon):
            self._check_noise(self.bounds.sum_sensitivity(self.relation) / self.epsilon / int(self.sizes.sum()),
                              f"epsilon={self.epsilon:g} (the smallest group epsilon)")

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {g.name: Guarantee(self.epsilon, 0.0, self.relation) for g in self.groups}


class UniformMean(_Uniform):
    """Every record treated at the smallest epsilon: ``(sum of all + Lap(Delta/epsilon_min)) / N``.

    Guarantee: ``epsilon_min``-DP for every record (public records included).
    """

    statistic = "mean"
    label = "uniform-mean"

    @property
    def privacy_events(self) -> dict[str, Any]:
        """Every group: one Laplace(``Delta / eps_min``) on the sum of all records (sensitivity ``Delta``)."""
        if np.isinf(self.epsilon):
            return super().privacy_events
        d = self.bounds.sum_sensitivity(self.relation)
        return {g.name: events.laplace(d / self.epsilon, d) for g in self.groups}

    def _release(self, stats: GroupedStatistics, rng: np.random.Generator, trials: int) -> np.ndarray:
        total = sum(stats.sums[:, k] for k in range(len(self.groups)))
        n = float(self.sizes.sum())
        if np.isinf(self.epsilon):
            return per_trial(total / n, trials)
        scale = self.bounds.sum_sensitivity(self.relation) / self.epsilon
        return (total + scale * rng.laplace(size=trials)) / n


class UniformMedian(_Uniform):
    """Smith's median of all records pooled, at the smallest epsilon.

    Guarantee: ``epsilon_min``-DP for every record.
    """

    statistic = "median"
    label = "uniform-median"

    def _release(self, stats: GroupedStatistics, rng: np.random.Generator, trials: int) -> np.ndarray:
        x = stats.pooled()
        if np.isinf(self.epsilon):
            return per_trial(np.median(x, axis=1), trials)
        return smith_quantile(x, 0.5, self.epsilon, self.bounds, rng, trials=trials)


class _Public(Estimator):
    def __init__(self, groups: Sequence[Group], bounds: Bounds | tuple[float, float], clamp: bool = False) -> None:
        super().__init__(groups, bounds, clamp)
        self._public = [k for k, g in enumerate(self.groups) if g.is_public]
        if not self._public:
            raise ValueError(f"{type(self).__name__} needs at least one public group (epsilon=inf), got none")

    @property
    def privacy(self) -> dict[str, Guarantee]:
        # private records are never read: the release does not depend on them at all
        return {g.name: Guarantee(g.epsilon if g.is_public else 0.0) for g in self.groups}


class PublicMean(_Public):
    """Mean of the public records only (no noise); private records are ignored."""

    statistic = "mean"
    label = "public-mean"

    def _release(self, stats: GroupedStatistics, rng: np.random.Generator, trials: int) -> np.ndarray:
        return per_trial(stats.pooled(self._public).mean(axis=1), trials)


class PublicMedian(_Public):
    """Median of the public records only (no noise); private records are ignored."""

    statistic = "median"
    label = "public-median"

    def _release(self, stats: GroupedStatistics, rng: np.random.Generator, trials: int) -> np.ndarray:
        return per_trial(np.median(stats.pooled(self._public), axis=1), trials)
