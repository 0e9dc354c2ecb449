"""Jorgensen et al. (2015) personalised-DP baselines: the Sample mechanism and the PE median."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np

from ...core.privacy import Bounds, Group, Guarantee, check_epsilon, check_positive
from ...noise import interval_exponential_mechanism, poisson_subsample_sums, sample_log_weights
from ...theory import PDP_DENOMINATORS, pdp_keep_probabilities, pdp_optimal_threshold, pdp_replace_loss
from .estimator import Estimator, GroupedStatistics, per_trial, resolve_sigma2

__all__ = ["PDPSample", "PEMedian", "THRESHOLD_RULES", "pe_median_costs"]

#: Named threshold rules of :class:`PDPSample`.
THRESHOLD_RULES = ("min", "avg", "max", "opt")


class PDPSample(Estimator):
    """Jorgensen et al.'s Sample mechanism applied to the mean.

    Every record of group ``i`` is kept independently with probability
    ``p_i = min(1, (e^{epsilon_i} - 1)/(e^t - 1))`` (public records always), and a Laplace
    mean of the kept records is released with noise ``Lap(Delta/t)`` on their sum.  The
    subsample of each group is drawn by :func:`hybridpriv.noise.poisson_subsample_sums`
    (skipping between selected records where few are selected: exactly the same law as one coin
    per record, at a cost per trial of about ``n_i min(p_i, 1 - p_i)`` draws instead of ``n_i``).

    Parameters
    ----------
    groups, bounds
        The setting.
    threshold
        ``"min"`` (smallest epsilon), ``"avg"`` (average of the finite epsilons), ``"max"``
        (largest finite epsilon), ``"opt"`` (minimises :func:`hybridpriv.theory.pdp_sample_variance`,
        needs ``sigma2``) or a number ``t > 0``.
    sigma2
        Variance of the records, for ``threshold="opt"`` (a number or a fitted model).
    denominator
        ``"kept"`` (default, the seed paper's form): ``(S_kept + Lap(Delta/t)) / M`` with
        ``M`` the number kept (the midpoint of the bounds if nothing is kept).
        ``"expected"``: ``c + (S_kept - c M + Lap(Delta_c/t)) / E[M]`` with ``c`` the
        midpoint of the bounds and the public constant ``E[M] = sum_i n_i p_i``: the sum of
        the kept records' offsets ``x - c`` is a ``t``-DP release on the sample, so the
        sampling theorem applies (``Delta_c``: the sensitivity of a sum of offsets, ``(b - a)/2``
        under add/remove, ``b - a`` under replace).
    mean_square
        For ``threshold="opt"`` with ``denominator="expected"`` (its variance depends on it):
        ``E[(mu - c)^2]``, the records' mean's squared offset from the midpoint of the bounds
        (``mu^2`` for bounds symmetric about 0); taken from the model when ``sigma2`` is a
        fitted model.
    relation
        Neighbouring relation of the sum's sensitivity ``Delta`` (see :class:`WeightedMean`).
    clamp
        Clip records into the bounds instead of raising.

    Guarantee
    ---------
    ``denominator="expected"``, with ``p_i`` group ``i``'s keep probability (public records:
    ``p = 1``): under ``"add-remove"`` group ``i`` gets ``ln(1 + p_i (e^t - 1)) = min(epsilon_i, t)``
    (sampling amplification); under ``"replace"`` the exact loss
    ``ln((1 - p_i + p_i e^{t/2}) / (1 - p_i + p_i e^{-t/2}))``, which is below ``min(epsilon_i, t)``
    (derivation in ``docs/theory.md``).  Both hold for any bounds because the released sum is
    of offsets from the midpoint: a record that is not kept adds 0, which lies between the
    offsets of any two records.  (Until 2026-11-23 the sum was of the raw records with the
    noise sized to ``b - a`` under ``"replace"``: when the bounds exclude 0, a record that is
    not kept added 0, outside ``[a, b]``, and the promise ``min(epsilon_i, t)`` was false,
    e.g. an exact loss of 1.363 for a promised 0.5 at bounds [10, 20], ``t = 2``.)
    ``denominator="kept"``: dividing by the true count is not covered by the noise under
    add/remove neighbours (the count changes with the record), and under replace-one
    neighbours (same coins, same count) a kept record moves the sum by up to ``b - a``, so
    every group, whatever its epsilon, gets ``t (b - a) / Delta`` under ``"replace"``
    (``2t`` for bounds symmetric around 0).  The seed's form therefore does *not* deliver
    personalised guarantees; see ``docs/limitations.md``.
    """

    statistic = "mean"

    def __init__(
        self,
        groups: Sequence[Group],
        bounds: Bounds | tuple[float, float],
        threshold: str | float = "opt",
        sigma2: object = None,
        denominator: str = "kept",
        mean_square: float | None = None,
        relation: str = "add-remove",
        clamp: bool = False,
    ) -> None:
        super().__init__(groups, bounds, clamp)
        self.relation = self._check_relation(relation)
        if denominator not in PDP_DENOMINATORS:
            raise ValueError(f"denominator must be one of {PDP_DENOMINATORS}, got {denominator!r}")
        self.denominator = denominator
        # "expected" sums offsets from the midpoint: their sensitivity is half the raw one's under add/remove
        self.centre = self.bounds.midpoint if denominator == "expected" else 0.0
        self.sensitivity = (
            self.bounds.sum_sensitivity(self.relation) if denominator == "kept"
            else (self.bounds.width if self.relation == "replace" else self.bounds.width / 2.0)
        )
        eps = self.epsilons
        finite = eps[np.isfinite(eps)]
        suffix = "" if denominator == "kept" else "-expected"
        if isinstance(threshold, str):
            if threshold not in THRESHOLD_RULES:
                raise ValueError(f"threshold must be one of {THRESHOLD_RULES} or a number > 0, got {threshold!r}")
            self.label = f"pdp-{threshold}{suffix}"
            if threshold == "opt":  # checked even when only public groups leave nothing to optimise
                if sigma2 is None:
                    raise ValueError("threshold='opt' needs sigma2 (the records' variance), got None")
                m2 = 0.0
                if denominator == "expected":
                    if mean_square is None:
                        if not hasattr(sigma2, "population_posterior_means"):
                            raise ValueError(
                                "threshold='opt' with denominator='expected' needs mean_square (E[(mu - c)^2], "
                                "c the midpoint of the bounds) or a fitted model as sigma2, got None"
                            )
                        pop = sigma2.population_posterior_means  # type: ignore[union-attr]
                        c = self.centre  # E[(mu - c)^2] = E[mu^2] - 2 c E[mu] + c^2
                        mean_square = max(pop["mean_square"] - 2.0 * c * pop["mean"] + c * c, 0.0)
                    m2 = check_positive(mean_square, "mean_square", allow_zero=True)
                s2 = resolve_sigma2(sigma2)
            if finite.size == 0:
                t = 1.0  # only public groups: nothing is subsampled and t only scales the noise
            elif threshold == "min":
                t = float(finite.min())
            elif threshold == "max":
                t = float(finite.max())
            elif threshold == "avg":
                t = float(finite.mean())
            else:
                t = pdp_optimal_threshold(
                    self.sizes, eps, s2, self.sensitivity, denominator=denominator, mean_square=m2
                )
        elif isinstance(threshold, Real) and not isinstance(threshold, bool):
            t = check_epsilon(threshold, "threshold", allow_inf=False)
            self.label = f"pdp-{t:g}{suffix}"
        else:
            raise TypeError(f"threshold must be one of {THRESHOLD_RULES} or a number > 0, got {threshold!r}")
        self.threshold_rule = threshold
        self.threshold = t
        self.keep_probabilities = pdp_keep_probabilities(eps, t)
        self.expected_kept = float(np.sum(self.sizes * self.keep_probabilities))
        if denominator == "expected" and not self.expected_kept > 0:
            raise ValueError(
                f"threshold = {t:g} keeps no record in expectation (E[M] = 0) with denominator='expected'; "
                "lower the threshold"
            )
        # the noise on the released mean: Delta/t over the (expected, or at least one) kept records
        self._check_noise(self.sensitivity / t / max(self.expected_kept, 1.0), f"threshold t={t:g}")

    @property
    def privacy(self) -> dict[str, Guarantee]:
        t = self.threshold
        if self.denominator == "kept":
            eps = t * self.bounds.width / self.sensitivity
            return {g.name: Guarantee(eps, 0.0, "replace") for g in self.groups}
        if self.relation == "add-remove":
            # ln(1 + p_i (e^t - 1)) = min(eps_i, t), written without overflow for large t
            return {g.name: Guarantee(min(g.epsilon, t), 0.0, self.relation) for g in self.groups}
        return {g.name: Guarantee(pdp_replace_loss(p, t), 0.0, "replace")
                for g, p in zip(self.groups, self.keep_probabilities)}

    @property
    def privacy_events(self) -> dict[str, Any]:
        """With ``denominator="expected"`` and add/remove-one neighbours: each group's records Poisson-sampled with
        its keep probability, then Laplace(``Delta / t``) on the kept sum (sensitivity ``Delta``): amplified to
        ``log(1 + p_i (e^t - 1))``; otherwise (the kept-count denominator, replace-one) the declared labels."""
        from ...core import events

        if self.denominator != "expected" or self.relation != "add-remove":
            return super().privacy_events
        noise = events.laplace(self.sensitivity / self.threshold, self.sensitivity)
        return {g.name: events.poisson_sampled(float(p), noise) for g, p in zip(self.groups, self.keep_probabilities)}

    def _release(self, stats: GroupedStatistics, rng: np.random.Generator, trials: int) -> np.ndarray:
        kept_sum = np.zeros(trials)
        kept_n = np.zeros(trials)
        for x, p in zip(stats.values, self.keep_probabilities):
            s, m = poisson_subsample_sums(x - self.centre if self.centre else x, float(p), trials, rng)
            kept_sum += s
            kept_n += m
        noisy = kept_sum + (self.sensitivity / self.threshold) * rng.laplace(size=trials)
        if self.denominator == "expected":
            return self.centre + noisy / self.expected_kept
        with np.errstate(invalid="ignore", divide="ignore"):
            out = noisy / kept_n
        return np.where(kept_n > 0, out, self.bounds.midpoint)


def pe_median_costs(sorted_eps: np.ndarray) -> np.ndarray:
    """Cost of making a point of each interval the median, for records sorted by value.

    Parameters
    ----------
    sorted_eps
        Shape ``(trials, N)``: the epsilon of each record, records sorted by value
        (``inf`` for public records, which can never change).

    Returns
    -------
    Shape ``(trials, N + 1)``: entry ``j`` is the smallest total epsilon of records that must
    change so that a point strictly between the ``j``-th and ``(j+1)``-th smallest records
    becomes the median (the ``m = ceil(N/2)``-th smallest; the lower median for even ``N``);
    ``inf`` when impossible.  For ``j < m`` the ``m - j`` cheapest records above the point
    must move to it (or below it); for ``j >= m`` the ``j - m + 1`` cheapest records below it.
    """
    eps = np.asarray(sorted_eps, dtype=float)
    trials, n = eps.shape
    m = (n + 1) // 2
    levels = np.unique(eps[np.isfinite(eps)])
    if levels.size == 0:
        costs = np.full((trials, n + 1), np.inf)
        return costs
    onehot = (eps[..., None] == levels).astype(np.int64)  # (T, N, E)
    below = np.concatenate([np.zeros((trials, 1, levels.size), np.int64), np.cumsum(onehot, axis=1)], axis=1)
    above = below[:, -1:, :] - below  # records with rank > j, (T, N+1, E)
    j = np.arange(n + 1)
    need_above = np.maximum(m - j, 0)
    need_below = np.maximum(j - m + 1, 0)
    use_above = j < m
    counts = np.where(use_above[None, :, None], above, below)
    need = np.where(use_above, need_above, need_below)[None, :]
    before = np.cumsum(counts, axis=-1) - counts
    take = np.clip(need[..., None] - before, 0, counts)
    costs = (take * levels).sum(axis=-1).astype(float)
    costs[need > counts.sum(axis=-1)] = np.inf
    return costs


class PEMedian(Estimator):
    """Jorgensen et al.'s personalised exponential mechanism (PE) for the median.

    The score of an output ``o`` is minus the smallest total epsilon of records that must
    change for ``o`` to become the median (public records can never change); ``o`` is drawn
    with density ``∝ exp(score/2)`` over the bounds, exactly, by intervals between the sorted
    records (:func:`pe_median_costs`).

    Parameters
    ----------
    groups, bounds, clamp
        The setting.

    Guarantee
    ---------
    ``epsilon_i``-DP for every record of group ``i`` under replace-one neighbours: changing
    that record changes every score by at most ``epsilon_i``, the normaliser by at most a
    factor ``e^{epsilon_i/2}``.
    """

    statistic = "median"
    label = "pe-median"

    def __init__(self, groups: Sequence[Group], bounds: Bounds | tuple[float, float], clamp: bool = False) -> None:
        super().__init__(groups, bounds, clamp)
        self._record_eps = np.repeat(self.epsilons, self.sizes)

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {g.name: Guarantee(g.epsilon, 0.0, "replace") for g in self.groups}

    def _release(self, stats: GroupedStatistics, rng: np.random.Generator, trials: int) -> np.ndarray:
        x = stats.pooled()
        if np.isinf(self._record_eps).all():
            return per_trial(np.median(x, axis=1), trials)
        # costs and edges once per dataset (stats.rows of them), the draws per trial
        order = np.argsort(x, axis=1, kind="stable")
        xs = np.take_along_axis(x, order, axis=1)
        costs = pe_median_costs(self._record_eps[order])
        rows = x.shape[0]
        edges = np.concatenate(
            [np.full((rows, 1), self.bounds.lower), xs, np.full((rows, 1), self.bounds.upper)], axis=1
        )
        lengths = np.diff(edges, axis=1)
        degenerate = ~((lengths > 0) & np.isfinite(costs)).any(axis=1)
        if not degenerate.any():
            return interval_exponential_mechanism(edges, np.broadcast_to(-costs / 2.0, (trials, costs.shape[1])), rng)
        edges, costs = np.broadcast_to(edges, (trials, edges.shape[1])), np.broadcast_to(costs, (trials, costs.shape[1]))
        degenerate = np.broadcast_to(degenerate, (trials,))
        out = np.empty(trials)
        if (~degenerate).any():
            rows = ~degenerate
            out[rows] = interval_exponential_mechanism(edges[rows], -costs[rows] / 2.0, rng)
        if degenerate.any():
            # ties (e.g. rounded public records) can leave every feasible interval empty: the
            # output distribution is then a point mass at tied values; choose among the empty
            # feasible intervals by exp(-cost/2) and return their (common) end point
            rows = degenerate
            lw = np.where(np.isfinite(costs[rows]), -costs[rows] / 2.0, -np.inf)
            k = sample_log_weights(lw, rng)
            out[rows] = np.take_along_axis(edges[rows], k[:, None], axis=1)[:, 0]
        return out
