"""Audit cases of the noise primitives (:mod:`hybridpriv.noise`) and contribution-bounded counts.

Each case runs on neighbouring datasets chosen to make the mechanism leak: a count moved by 1;
two exponential-mechanism scores moving in opposite directions (the case the factor 2 is for);
Smith's median with ties so that only two output intervals have positive length; a new user
with ``k + 2`` items for contribution-bounded counts.  Broken variants: half the sensitivity,
no factor 2, sensitivity 1 instead of ``k``.
"""

from __future__ import annotations

import numpy as np

from ... import noise as M
from ...core.privacy import Bounds
from ...families.user_item.mechanisms import ContributionBoundedCounts
from ...families.user_item.plan import ItemsHistogramProbe
from ..core import audit
from ._registry import BROKEN, CONFIDENCE, CORRECT, COVERS, SAMPLES, Run, one

__all__: list[str] = []


def _laplace_run(epsilon: float, sensitivity_used: float) -> Run:
    """A count (0 vs 1: sensitivity 1) released with Laplace noise of scale ``sensitivity_used / epsilon``."""

    def mech(d, rng, size):
        return M.laplace(np.full(size, d), sensitivity_used / epsilon, rng)

    return lambda seed: one(audit(mech, (0.0, 1.0), epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


def _laplace_sum_run(epsilon: float, count: int, sensitivity_used: float) -> Run:
    """A sum of ``count`` values, one of them moved by 1, each value with its own Laplace noise of scale
    ``sensitivity_used / epsilon`` (every user's local noise), drawn as one sum: epsilon-DP by post-processing
    of the users' reports (``count = 1`` is :func:`_laplace_run`)."""

    def mech(d, rng, size):
        return M.laplace_sum(np.full(size, d), sensitivity_used / epsilon, count, rng)

    return lambda seed: one(audit(mech, (0.0, 1.0), epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


def _gaussian_run(epsilon: float, delta: float, sensitivity_used: float) -> Run:
    sigma = M.gaussian_sigma(epsilon, delta, sensitivity_used)

    def mech(d, rng, size):
        return M.gaussian(np.full(size, d), sigma, rng)

    return lambda seed: one(audit(mech, (0.0, 1.0), epsilon, delta, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


# Exponential mechanism over two outcomes: scores (0, 0) on D and (1, -1) on D' (each score
# moves by 1 = the sensitivity, in opposite directions: the case the factor 2 is for), with a
# data-independent base measure favouring outcome 0 by e^epsilon.
_EM_SCORES = {0: np.array([0.0, 0.0]), 1: np.array([1.0, -1.0])}


def _exponential_run(epsilon: float, factor_two: bool) -> Run:
    log_base = np.array([epsilon, 0.0])

    def mech(d, rng, size):
        scores = np.broadcast_to(_EM_SCORES[d], (size, 2))
        if factor_two:
            return M.exponential_mechanism(scores, epsilon, 1.0, rng, log_base)
        return M.sample_log_weights(epsilon * scores + log_base, rng)  # broken: exp(eps u), not exp(eps u / 2)

    return lambda seed: one(audit(mech, (0, 1), epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


# Smith's median on [0, 1]: four records tied at 0.9 and one moved from 0 to 1 (replace-one).
# Only [0, 0.9] and [0.9, 1] have positive length and their utilities swap, so the output
# interval's odds change by e^(epsilon) -- or e^(2 epsilon) without the factor 2.
_SMITH_BOUNDS = Bounds(0.0, 1.0)
_SMITH_PAIR = (np.array([0.0, 0.9, 0.9, 0.9, 0.9]), np.array([1.0, 0.9, 0.9, 0.9, 0.9]))


def _smith_run(epsilon: float, factor_two: bool) -> Run:
    # smith_quantile uses exp(eps u / 2); passing 2 eps gives exp(eps u): the missing factor 2
    used = epsilon if factor_two else 2.0 * epsilon

    def mech(d, rng, size):
        return M.smith_quantile(np.broadcast_to(d, (size, d.size)), 0.5, used, _SMITH_BOUNDS, rng)

    return lambda seed: one(audit(mech, _SMITH_PAIR, epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


# Contribution-bounded counts: four users over eight items; the neighbour adds a user with
# k + 2 items (so the user's items are subsampled, k of them kept).  The released vector is
# reduced to one number (post-processing: it cannot create a violation): the sum over that
# user's items of the count's excess over the base count, clipped to [0, 1] -- the shape of
# the log-likelihood ratio of a unit shift under Laplace noise, which keeps most of the
# vector's privacy loss (a plain sum of the counts dilutes it with the noise of every item).
def _cbc_pair(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    base = np.zeros((4, 8))
    base[0, :3] = 1
    base[1, 2:6] = 1
    base[2, [0, 7]] = 1
    user = np.zeros((1, 8))
    user[0, : k + 2] = 1
    return base, np.vstack([base, user]), np.arange(k + 2)


def _cbc_run(k: int, epsilon: float, broken: bool) -> Run:
    cbc = ContributionBoundedCounts(k, epsilon)
    base, plus_user, items = _cbc_pair(k)

    def mech(d, rng, size):
        if broken:  # sensitivity 1 instead of k
            return M.laplace(cbc.bounded_counts(d, rng, size), 1.0 / epsilon, rng)
        return cbc.release(d, rng, size)

    base_counts = base.sum(axis=0)[items]

    def statistic(out):
        return np.clip(out[:, items] - base_counts, 0.0, 1.0).sum(axis=1)

    return lambda seed: one(
        audit(mech, (base, plus_user), epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed, statistic=statistic)
    )


for _eps in (0.5, 2.0):
    CORRECT[f"laplace eps={_eps:g}"] = _laplace_run(_eps, 1.0)
    COVERS[f"laplace eps={_eps:g}"] = "laplace"
    BROKEN[f"laplace, half the sensitivity, eps={_eps:g}"] = (_laplace_run(_eps, 0.5), "mechanism")
    _count = 1 if _eps < 1 else 3
    CORRECT[f"laplace_sum count={_count} eps={_eps:g}"] = _laplace_sum_run(_eps, _count, 1.0)
    COVERS[f"laplace_sum count={_count} eps={_eps:g}"] = "laplace_sum"
    CORRECT[f"exponential_mechanism eps={_eps:g}"] = _exponential_run(_eps, True)
    COVERS[f"exponential_mechanism eps={_eps:g}"] = "exponential_mechanism"
    BROKEN[f"exponential_mechanism without the factor 2, eps={_eps:g}"] = (_exponential_run(_eps, False), "mechanism")
    CORRECT[f"smith_quantile (median) eps={_eps:g}"] = _smith_run(_eps, True)
    COVERS[f"smith_quantile (median) eps={_eps:g}"] = "smith_quantile"
    BROKEN[f"smith_quantile without the factor 2, eps={_eps:g}"] = (_smith_run(_eps, False), "mechanism")
    for _k in (1, 3):
        CORRECT[f"ContributionBoundedCounts k={_k} eps={_eps:g}"] = _cbc_run(_k, _eps, False)
        COVERS[f"ContributionBoundedCounts k={_k} eps={_eps:g}"] = "ContributionBoundedCounts"
    BROKEN[f"ContributionBoundedCounts k=3, sensitivity 1 instead of k, eps={_eps:g}"] = (_cbc_run(3, _eps, True), "mechanism")

for _eps, _delta in ((0.5, 1e-3), (2.0, 1e-5)):
    CORRECT[f"gaussian eps={_eps:g} delta={_delta:g}"] = _gaussian_run(_eps, _delta, 1.0)
    COVERS[f"gaussian eps={_eps:g} delta={_delta:g}"] = "gaussian"
BROKEN["gaussian, half the sensitivity, eps=0.5 delta=0.001"] = (_gaussian_run(0.5, 1e-3, 0.5), "mechanism")
BROKEN["laplace_sum count=1, half the sensitivity, eps=2"] = (_laplace_sum_run(2.0, 1, 0.5), "mechanism")



# The two-stage plan's items-per-user histogram: the neighbour adds a user with 3 items, who adds 1 to bin 3-4
# (index 2); the statistic is that bin (post-processing of the released vector).
def _histogram_probe_run(epsilon: float, share: float) -> Run:
    probe = ItemsHistogramProbe(8, epsilon, share)
    base, plus_user, _ = _cbc_pair(1)

    def mech(d, rng, size):
        return probe.release(d, rng, size)

    return lambda seed: one(audit(mech, (base, plus_user), share * epsilon, samples=SAMPLES, confidence=CONFIDENCE,
                                  seed=seed, statistic=lambda out: out[:, 2]))


for _eps, _share in ((1.0, 0.5), (4.0, 0.25)):
    CORRECT[f"ItemsHistogramProbe eps={_eps:g} share={_share:g}"] = _histogram_probe_run(_eps, _share)
    COVERS[f"ItemsHistogramProbe eps={_eps:g} share={_share:g}"] = "ItemsHistogramProbe"
