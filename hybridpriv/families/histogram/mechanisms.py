"""Histograms over public categories for groups with different epsilons: the candidates.

Every mechanism releases the share of records in each category (a vector summing to about 1),
estimating the shares of all records pooled, public groups included.  A record is in one category,
so adding or removing a record changes one count by 1 (L1 sensitivity 1; a replacement, 2).

* :class:`LaplaceHistograms` (``"weighted"``, ``"proportional"``): each private group releases its own
  counts with Laplace noise at its own epsilon; the groups' shares are combined with inverse-variance
  weights (Ferrando et al.'s mixed estimator, applied per category; public groups weigh by their size
  alone) or in proportion to their sizes.
* :class:`AdaptiveHistograms` (``"adaptive"``): the same releases as ``weighted``, combined with weights
  that also guard against groups whose shares differ: how far the released groups' shares disagree
  beyond their sampling and noise estimates the between-group spread, and the weights minimise the
  expected squared error given it (post-processing: the same guarantee as ``weighted``);
  ``"adaptive-1se"`` trusts the disagreement from :data:`EAGER_MARGIN` standard errors rather than
  :data:`MARGIN`.
* :class:`PooledHistogram` (``"pooled"``): every private record's counts summed, one Laplace noise at the
  smallest epsilon (everyone gets the strictest group's protection).
* :class:`SampleHistogram` (``"sample-avg"``, ``"sample-max"``): Jorgensen et al.'s PDP *Sample*
  mechanism: group ``g``'s records are kept with probability ``(e^eps_g - 1) / (e^t - 1)`` (all of
  them when ``eps_g >= t``), the kept records' counts get Laplace(1/t) noise, and the shares divide by
  the public expected number of records (the PDP-valid denominator).  Group ``g`` gets
  ``min(eps_g, t)`` under add/remove.
* :class:`PublicHistogram` (``"public-only"``): the public records' shares; no private record is read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ...core import events
from ...core.mechanism import Mechanism
from ...core.privacy import NEIGHBOUR_RELATIONS, Group, Guarantee, check_groups, check_positive
from ...core.validation import check_rng, check_trials
from ...noise import laplace
from ...theory import bias_aware_weights
from .data import CategoryCounts, check_counts

__all__ = ["EAGER_MARGIN", "MARGIN", "THRESHOLDS", "AdaptiveHistograms", "HistogramMechanism", "LaplaceHistograms",
           "PooledHistogram", "PublicHistogram", "SampleHistogram", "sensitivity"]

#: Standard errors by which the released groups' disagreement must exceed what equal shares explain before
#: :class:`AdaptiveHistograms` trusts it (a heterogeneity test; below it the groups are taken to answer alike).
MARGIN = 3.0
#: The margin of ``"adaptive-1se"``: the same test at one standard error (it takes the groups to differ sooner,
#: so it loses a little where they answer alike and gains where they differ by a little).
EAGER_MARGIN = 1.0
#: Thresholds of :class:`SampleHistogram` by name: over the private groups' (effective) epsilons.
THRESHOLDS = ("avg", "max")


def sensitivity(relation: str) -> float:
    """L1 sensitivity of a group's counts: 1 for add/remove one record, 2 for replace one."""
    if relation not in NEIGHBOUR_RELATIONS:
        raise ValueError(f"relation must be one of {NEIGHBOUR_RELATIONS}, got {relation!r}")
    return 1.0 if relation == "add-remove" else 2.0


class HistogramMechanism(Mechanism):
    """Base of the histogram candidates: ``groups`` (public ones have ``epsilon = inf``), ``categories``
    (their names, in the order of the counts' columns) and the neighbouring ``relation``."""

    data_kind: ClassVar[str] = "category-counts"
    label = "histogram"

    def __init__(self, groups: Sequence[Group], categories: Sequence[str], relation: str = "add-remove") -> None:
        self.groups = check_groups(groups)
        if isinstance(categories, str) or len(categories) < 2:
            raise ValueError(f"categories must name at least 2 categories, got {categories!r}")
        self.categories = tuple(str(c) for c in categories)
        if len(set(self.categories)) != len(self.categories):
            raise ValueError(f"categories must be distinct, got {list(categories)!r}")
        self.relation = relation
        self._delta = sensitivity(relation)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([g.size for g in self.groups], dtype=float)

    @property
    def private(self) -> list[int]:
        return [k for k, g in enumerate(self.groups) if not g.is_public]

    def _counts(self, data: Any) -> np.ndarray:
        counts = getattr(data, "counts", data)
        return check_counts(counts, (len(self.groups), len(self.categories)), "data").astype(float)

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """``trials`` released share vectors, shape ``(trials, categories)``."""
        trials = check_trials(trials)
        counts = self._counts(data)
        out = np.asarray(self._release(counts, check_rng(rng), trials), dtype=float)
        if out.shape != (trials, len(self.categories)) or not np.isfinite(out).all():
            raise RuntimeError(f"{type(self).__name__} released shape {out.shape} or non-finite values")
        return out

    def _release(self, counts: np.ndarray, rng: np.random.Generator, trials: int) -> np.ndarray:
        raise NotImplementedError

    def mean_and_variance(self, counts: np.ndarray) -> tuple[np.ndarray, float] | None:
        """The release's mean (per category) and its total variance (summed over categories) given the counts,
        where they have a closed form (``None`` otherwise): the task's exact risk reads them."""
        return None


class LaplaceHistograms(HistogramMechanism):
    """Each private group's counts with Laplace(Delta/eps_g) noise, combined per category.

    Parameters
    ----------
    groups, categories, relation
        As :class:`HistogramMechanism`.
    weights
        ``"inverse-variance"`` (label ``weighted``): group ``g`` weighs ``1/v_g`` with
        ``v_g = s2/n_g + 2 (Delta/eps_g)^2 / n_g^2`` (sampling variance of a share plus the noise's);
        ``"size"`` (label ``proportional``): ``n_g``.
    s2
        The records' variance of a category indicator, ``p (1 - p)`` averaged over categories: a number,
        or a fitted model exposing ``category_variance`` (its posterior mean).  Only the inverse-variance
        weights read it.

    Guarantee: group ``g`` ``eps_g``-DP under ``relation``.
    """

    def __init__(self, groups: Sequence[Group], categories: Sequence[str], relation: str = "add-remove",
                 weights: str = "inverse-variance", s2: Any = 0.25) -> None:
        super().__init__(groups, categories, relation)
        if weights not in ("inverse-variance", "size"):
            raise ValueError(f"weights must be 'inverse-variance' or 'size', got {weights!r}")
        self.weights = weights
        self.s2 = s2
        value = getattr(s2, "category_variance", s2)
        self._s2 = check_positive(value, "s2")
        self.label = "weighted" if weights == "inverse-variance" else "proportional"
        eps = np.array([g.epsilon for g in self.groups])
        self.scales = np.where(np.isinf(eps), 0.0, self._delta / np.where(np.isinf(eps), 1.0, eps))
        n = self.sizes
        v = self._s2 / n + 2.0 * self.scales ** 2 / n ** 2
        w = 1.0 / v if weights == "inverse-variance" else n
        self.group_weights = w / w.sum()

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {g.name: Guarantee(g.epsilon, 0.0, self.relation) for g in self.groups}

    @property
    def privacy_events(self) -> dict[str, Any]:
        """Each private group: Laplace(``Delta / eps_g``) on its count vector, whose L1 sensitivity is ``Delta``
        (one record moves one count by 1, or two counts by 1 for a replacement)."""
        return {g.name: events.epsilon_delta(math.inf) if g.is_public else events.laplace(float(s), self._delta)
                for g, s in zip(self.groups, self.scales)}

    def _noisy(self, counts: np.ndarray, rng: np.random.Generator, trials: int) -> np.ndarray:
        """``trials`` noisy count tables ``(trials, groups, categories)``: Laplace(``Delta / eps_g``) per count."""
        return laplace(np.broadcast_to(counts, (trials, *counts.shape)), self.scales[None, :, None], rng)

    def _release(self, counts: np.ndarray, rng: np.random.Generator, trials: int) -> np.ndarray:
        return np.einsum("g,tgc->tc", self.group_weights / self.sizes, self._noisy(counts, rng, trials))

    def mean_and_variance(self, counts: np.ndarray) -> tuple[np.ndarray, float]:
        c = len(self.categories)
        mean = (self.group_weights / self.sizes) @ counts
        var = c * float(np.sum((self.group_weights / self.sizes) ** 2 * 2.0 * self.scales ** 2))
        return mean, var


class AdaptiveHistograms(LaplaceHistograms):
    """``weighted``'s releases (each private group's counts with Laplace(Delta/eps_g) noise), combined with
    weights adapted to how far the released groups disagree.

    The between-group spread ``tau`` (a share's standard deviation across groups, over ``sqrt(p (1 - p))``)
    is estimated from the released shares ``q~_g`` by moments: with ``pbar = sum_g s_g q~_g`` and
    ``S = sum_{g,c} (q~_gc - pbar_c)^2``,
    ``E S = sum_g c_g sum_c [v_c (tau^2 (1 - 1/n_g) + 1/n_g) + b_g]``, ``c_g = 1 - 2 s_g + G s_g^2``,
    ``v_c = pbar_c (1 - pbar_c)``, ``b_g = 2 (Delta/eps_g)^2 / n_g^2`` (Dirichlet-multinomial groups).  The
    estimate counts only once ``S`` exceeds its expectation under equal shares by ``margin`` standard
    errors (:meth:`moments`: the sampling taken as Gaussian with the multinomial's covariance, the noise as
    Laplace); then :func:`hybridpriv.theory.bias_aware_weights` at spread ``s2 (tau^2 + 1/n_g)`` per group
    combine the released shares (``s2`` as ``weighted``).  All of it reads only the released counts:
    post-processing, so the guarantee is ``weighted``'s.
    """

    def __init__(self, groups: Sequence[Group], categories: Sequence[str], relation: str = "add-remove",
                 s2: Any = 0.25, margin: float = MARGIN) -> None:
        super().__init__(groups, categories, relation, "inverse-variance", s2)
        self.margin = check_positive(margin, "margin", allow_zero=True)
        self.label = "adaptive" if self.margin == MARGIN else f"adaptive-{self.margin:g}se"
        self.noise = 2.0 * self.scales ** 2 / self.sizes ** 2

    def moments(self, shares: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(excess, slope, sd)`` per trial from released shares ``(trials, groups, categories)``: ``S`` minus its
        expectation under equal shares, the coefficient of ``tau^2`` in ``E S``, and the standard error of ``S``
        under equal shares (so ``excess / slope`` is the moment estimate of ``tau^2``)."""
        n, b = self.sizes, self.noise
        s = n / n.sum()
        pbar = np.einsum("g,tgc->tc", s, shares)
        v = np.clip(pbar * (1.0 - pbar), 0.0, 0.25)
        c = 1.0 - 2.0 * s + n.size * s ** 2
        dev = np.sum((shares - pbar[:, None, :]) ** 2, axis=(1, 2))
        cats = shares.shape[2]
        t1 = v.sum(axis=1)  # tr A, A = diag(p) - p p' (a multinomial share's covariance times n)
        q = np.clip(pbar, 0.0, None)
        q = q / np.where(q.sum(axis=1, keepdims=True) > 0, q.sum(axis=1, keepdims=True), 1.0)
        t2 = np.sum(q ** 2, axis=1) - 2.0 * np.sum(q ** 3, axis=1) + np.sum(q ** 2, axis=1) ** 2  # tr A^2
        mean = np.einsum("g,tg->t", c, t1[:, None] / n[None, :] + cats * b[None, :])
        # d = (I - 1 s') q~ per category: Var S = 2 sum_gh K_gh^2 tr(V_g V_h) + 3 C sum_g c_g^2 b_g^2, with
        # K = (I - 1 s')'(I - 1 s'), V_g = A / n_g + b_g I (sampling taken as Gaussian; Laplace's excess kurtosis 3)
        k2 = (np.eye(n.size) - s[:, None] - s[None, :] + n.size * np.outer(s, s)) ** 2
        tr_vv = (t2[:, None, None] / np.outer(n, n)[None]
                 + t1[:, None, None] * (b[:, None] / n[None, :] + b[None, :] / n[:, None])[None]
                 + cats * np.outer(b, b)[None])
        sd = np.sqrt(2.0 * np.einsum("gh,tgh->t", k2, tr_vv) + 3.0 * cats * np.sum(c ** 2 * b ** 2))
        slope = np.einsum("g,tc->t", c * (1.0 - 1.0 / n), v)
        return dev - mean, slope, sd

    def between(self, shares: np.ndarray) -> np.ndarray:
        """The between-group spread ``tau`` estimated from released shares ``(trials, groups, categories)``
        (0 where the disagreement is within ``margin`` standard errors of equal shares)."""
        excess, slope, sd = self.moments(shares)
        excess = excess - self.margin * sd
        tau2 = np.where(slope > 0, np.clip(excess, 0.0, None) / np.where(slope > 0, slope, 1.0), 0.0)
        return np.sqrt(np.minimum(tau2, 1.0))

    def _release(self, counts: np.ndarray, rng: np.random.Generator, trials: int) -> np.ndarray:
        shares = self._noisy(counts, rng, trials) / self.sizes[None, :, None]
        spread = self._s2 * (self.between(shares)[:, None] ** 2 + 1.0 / self.sizes)
        w = bias_aware_weights(self.sizes, spread, self.noise)
        return np.einsum("tg,tgc->tc", w, shares)

    def mean_and_variance(self, counts: np.ndarray) -> None:
        return None  # the weights depend on the noise: the task runs it


class PooledHistogram(HistogramMechanism):
    """All records' counts summed, one Laplace(Delta/eps_min) noise on the private part; shares over all
    ``n`` records.  Guarantee: every private group ``eps_min``-DP under ``relation``."""

    def __init__(self, groups: Sequence[Group], categories: Sequence[str], relation: str = "add-remove") -> None:
        super().__init__(groups, categories, relation)
        self.label = "pooled"
        private = [self.groups[k].epsilon for k in self.private]
        if not private:
            raise ValueError("PooledHistogram needs a private group")
        self.epsilon = float(min(private))
        self.scale = self._delta / self.epsilon

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {g.name: Guarantee(math.inf if g.is_public else self.epsilon, 0.0, self.relation) for g in self.groups}

    @property
    def privacy_events(self) -> dict[str, Any]:
        """Each private group's records: one Laplace(``Delta / eps_min``) on the summed count vector."""
        return {g.name: events.epsilon_delta(math.inf) if g.is_public else events.laplace(self.scale, self._delta)
                for g in self.groups}

    def _release(self, counts: np.ndarray, rng: np.random.Generator, trials: int) -> np.ndarray:
        total = counts.sum(axis=0)
        return laplace(np.broadcast_to(total, (trials, total.size)), self.scale, rng) / self.sizes.sum()

    def mean_and_variance(self, counts: np.ndarray) -> tuple[np.ndarray, float]:
        n = self.sizes.sum()
        return counts.sum(axis=0) / n, len(self.categories) * 2.0 * self.scale ** 2 / n ** 2


class SampleHistogram(HistogramMechanism):
    """Jorgensen et al.'s PDP Sample mechanism on counts (see the module docstring).

    ``threshold``: ``"avg"`` or ``"max"`` of the private groups' effective epsilons, or a number.
    With ``relation="replace"`` each group's effective epsilon is half its own: the mechanism is then
    ``eps_g / 2``-DP under add/remove, which is ``eps_g`` for a replacement (a removal and an addition).
    A release keeps records by comparing a uniform draw per record with the keep probability (no binomial
    sampler: a release draws uniforms from a cryptographically secure generator, whose adapter refuses
    ``binomial``).  A simulation (a plain :class:`numpy.random.Generator`) draws each category's kept count
    from ``Binomial(count, keep)`` instead: the same distribution, without a uniform per record
    (``tests/families/test_histogram_groups_differ.py`` compares the two).
    """

    def __init__(self, groups: Sequence[Group], categories: Sequence[str], relation: str = "add-remove",
                 threshold: str | float = "max") -> None:
        super().__init__(groups, categories, relation)
        eff = {k: self.groups[k].epsilon / (1.0 if relation == "add-remove" else 2.0) for k in self.private}
        if not eff:
            raise ValueError("SampleHistogram needs a private group")
        if isinstance(threshold, str):
            if threshold not in THRESHOLDS:
                raise ValueError(f"threshold must be one of {THRESHOLDS} or a number > 0, got {threshold!r}")
            t = float(np.mean(list(eff.values()))) if threshold == "avg" else float(max(eff.values()))
            self.label = f"sample-{threshold}"
        else:
            t = check_positive(threshold, "threshold")
            self.label = f"sample-{t:g}"
        self.threshold = threshold
        self.t = t
        self.keep = np.ones(len(self.groups))
        for k, e in eff.items():
            self.keep[k] = 1.0 if e >= t else math.expm1(e) / math.expm1(t)
        self._effective = eff
        self.expected_records = float(np.sum(self.sizes * self.keep))

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {g.name: Guarantee(math.inf, 0.0, "add-remove") if g.is_public
                else Guarantee(min(self._effective[k], self.t), 0.0, "add-remove")
                for k, g in enumerate(self.groups)}

    @property
    def privacy_events(self) -> dict[str, Any]:
        """Each private group's records Poisson-sampled with its keep probability, then Laplace(``1 / t``) on the
        kept counts (L1 sensitivity 1 under add/remove-one): amplified to ``log(1 + keep (e^t - 1))``, which is the
        group's effective epsilon (or ``t`` when every record is kept)."""
        noise = events.laplace(1.0 / self.t, 1.0)
        return {g.name: events.epsilon_delta(math.inf) if g.is_public else events.poisson_sampled(float(self.keep[k]), noise)
                for k, g in enumerate(self.groups)}

    def _release(self, counts: np.ndarray, rng: np.random.Generator, trials: int) -> np.ndarray:
        c = counts.shape[1]
        kept = np.zeros((trials, c))
        for k, g in enumerate(self.groups):
            x = counts[k].astype(np.int64)
            if g.is_public or self.keep[k] >= 1.0:
                kept += x
                continue
            n = int(x.sum())
            if n == 0:
                continue
            if type(rng) is np.random.Generator:  # a simulation: the kept counts directly
                kept += rng.binomial(np.broadcast_to(x, (trials, c)), self.keep[k])
                continue
            u = rng.random((trials, n)) < self.keep[k]  # one coin per record, records in category order
            run = np.concatenate((np.zeros((trials, 1)), np.cumsum(u, axis=1)), axis=1)
            ends = np.cumsum(x)
            kept += run[:, ends] - run[:, ends - x]  # each category's block of records
        return laplace(kept, 1.0 / self.t, rng) / self.expected_records  # the public expected number kept


class PublicHistogram(HistogramMechanism):
    """The public records' shares; the private groups are never read (they are promised epsilon 0)."""

    def __init__(self, groups: Sequence[Group], categories: Sequence[str], relation: str = "add-remove") -> None:
        super().__init__(groups, categories, relation)
        self.label = "public-only"
        self._public = [k for k, g in enumerate(self.groups) if g.is_public]
        if not self._public:
            raise ValueError("PublicHistogram needs a public group (epsilon = inf)")

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {g.name: Guarantee(g.epsilon if g.is_public else 0.0, 0.0, self.relation) for g in self.groups}

    def _release(self, counts: np.ndarray, rng: np.random.Generator, trials: int) -> np.ndarray:
        share = counts[self._public].sum(axis=0) / self.sizes[self._public].sum()
        return np.broadcast_to(share, (trials, share.size)).copy()

    def mean_and_variance(self, counts: np.ndarray) -> tuple[np.ndarray, float]:
        return counts[self._public].sum(axis=0) / self.sizes[self._public].sum(), 0.0


def as_counts(data: Any) -> CategoryCounts:
    """``data`` as :class:`CategoryCounts` (counts or a ``CategoryCounts``)."""
    return data if isinstance(data, CategoryCounts) else CategoryCounts(getattr(data, "counts", data))
