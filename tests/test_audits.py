"""Audit every built-in DP-claiming mechanism and estimator, and catch deliberately broken variants.

Every built-in that claims differential privacy is audited with :mod:`hybridpriv.testing` at two
epsilons, on neighbouring datasets chosen to make it leak (records elsewhere at 0 or tied, so
nothing else adds randomness; the changed record moved as far as the declared relation allows),
and must pass.  Broken variants (built here, the library is not touched) must be caught:

* Laplace and Gaussian noise for half the sensitivity, and contribution-bounded counts with
  sensitivity 1 instead of ``k``;
* ``WeightedMean`` whose strictest group's noise is calibrated to the loosest group's
  epsilon (the promise ``epsilon_i`` is broken for that group); the hybrid whose curator's noise on
  the TCM mean, and ``LMOnly`` whose LM users' local noise, is calibrated to the other group's
  epsilon;
* ``PDPSample`` whose keep-probabilities swap ``epsilon_i`` and the threshold ``t``
  (``(e^t - 1)/(e^epsilon_i - 1)``, clipped at 1: every record is kept) while still
  promising ``min(epsilon_i, t)``;
* the exponential mechanism and Smith's quantile without the factor 2 in the exponent;
* ``HybridKMeans`` released at twice the epsilon it declares (each unit audited), and randomized
  response at twice its claim;
* Wang et al.'s ``Algorithm1`` released at twice the epsilon it declares.

``CORRECT`` and ``BROKEN`` are registries (name -> ``run(seed)`` returning reports by group);
``benchmarks/audit_rates.py`` imports them to measure the false-alarm and detection rates at
exactly these settings (``docs/audit.md``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import numpy as np
import pytest

import hybridpriv.estimators as estimators_module
from hybridpriv import mechanisms as M
from hybridpriv.estimators.wang import (Algorithm1, Algorithm2, HybridDesign, HybridMEstimator, LeiHistogram,
                                        PublicOnly, representation_counts, representation_weights)
from hybridpriv.estimators import (
    ContributionBoundedCounts,
    Estimator,
    FullLM,
    Hybrid,
    LMOnly,
    PDPSample,
    PEMedian,
    PublicMean,
    PublicMedian,
    TCMOnly,
    UniformMean,
    UniformMedian,
    WeightedMean,
    WeightedMedian,
)
from hybridpriv.estimators.base import Mechanism
from hybridpriv.estimators.kmeans import HybridKMeans, LMKMeans, PointCloud, TCMKMeans
from hybridpriv.privacy import Bounds, Group
from hybridpriv.testing import AuditReport, audit, audit_estimator

#: Outputs per dataset in every audit (half select the event, half bound it).
SAMPLES = 50_000
#: Confidence of every audit: a correct mechanism is flagged with probability at most 1%.
CONFIDENCE = 0.99

Run = Callable[[int], dict[str, AuditReport]]
#: name -> run(seed): built-ins that must pass.
CORRECT: dict[str, Run] = {}
#: name -> (run(seed), the group whose promise is broken): variants that must be caught.
BROKEN: dict[str, tuple[Run, str]] = {}
#: What each correct case audits (names of mechanisms / estimator classes), for the coverage test.
COVERS: dict[str, str] = {}


def _one(report: AuditReport) -> dict[str, AuditReport]:
    return {"mechanism": report}


# ---------------------------------------------------------------------------------------
# basic mechanisms
# ---------------------------------------------------------------------------------------
def _laplace_run(epsilon: float, sensitivity_used: float) -> Run:
    """A count (0 vs 1: sensitivity 1) released with Laplace noise of scale ``sensitivity_used / epsilon``."""

    def mech(d, rng, size):
        return M.laplace(np.full(size, d), sensitivity_used / epsilon, rng)

    return lambda seed: _one(audit(mech, (0.0, 1.0), epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


def _gaussian_run(epsilon: float, delta: float, sensitivity_used: float) -> Run:
    sigma = M.gaussian_sigma(epsilon, delta, sensitivity_used)

    def mech(d, rng, size):
        return M.gaussian(np.full(size, d), sigma, rng)

    return lambda seed: _one(audit(mech, (0.0, 1.0), epsilon, delta, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


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

    return lambda seed: _one(audit(mech, (0, 1), epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


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

    return lambda seed: _one(audit(mech, _SMITH_PAIR, epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


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

    return lambda seed: _one(
        audit(mech, (base, plus_user), epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed, statistic=statistic)
    )


for _eps in (0.5, 2.0):
    CORRECT[f"laplace eps={_eps:g}"] = _laplace_run(_eps, 1.0)
    COVERS[f"laplace eps={_eps:g}"] = "laplace"
    BROKEN[f"laplace, half the sensitivity, eps={_eps:g}"] = (_laplace_run(_eps, 0.5), "mechanism")
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


# ---------------------------------------------------------------------------------------
# estimators: personalised guarantees, audited group by group
# ---------------------------------------------------------------------------------------
N = 10  # records per group: small, so 50,000 runs of an estimator are cheap
BOUNDS = Bounds(-1.0, 1.0)
SIGMA2 = 1.0 / 3.0  # variance of Uniform(-1, 1), for the weights


def _groups(strict: float, loose: float) -> list[Group]:
    return [Group("strict", N, strict), Group("loose", N, loose), Group("public", N, math.inf)]


#: The two epsilon settings every estimator is audited at.
SETTINGS = {"eps=(0.5, 4)": (0.5, 4.0), "eps=(1, 2)": (1.0, 2.0)}
ZEROS = [np.zeros(N)] * 3  # means: other records at 0 add nothing random (a sum's worst case)
TIED = [np.full(N, 0.8)] * 3  # medians: other records tied near the upper bound
ZEROS2 = ZEROS[:2]  # hybrid-model estimators take two groups: (TCM users, LM users)


class StrictNoiseAtLoosestEpsilon(WeightedMean):
    """Broken: every private group's Laplace noise is calibrated to the loosest finite epsilon.

    The weights and the promise (``epsilon_i`` for group ``i``) are those of the correct
    estimator; the strict group gets far less noise than its epsilon needs.
    """

    def _estimate(self, data, rng):
        sums = np.stack([x.sum(axis=1) for x in data], axis=1)
        eps = self.epsilons
        loosest = eps[np.isfinite(eps)].max()
        scale = np.where(np.isinf(eps), 0.0, self.sensitivity / loosest)
        return ((sums + scale * rng.laplace(size=sums.shape)) / self.sizes) @ self.weights


class TCMNoiseAtLMEpsilon(Hybrid):
    """Broken: the curator's noise on the TCM mean is calibrated to the LM group's epsilon."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._scale_T = self.tcm_sensitivity / self.groups[1].epsilon


class LMNoiseAtTCMEpsilon(LMOnly):
    """Broken: every LM user's local noise is calibrated to the TCM group's epsilon (their local promise)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._scale_L = self.local_sensitivity / self.groups[0].epsilon


class SwappedKeepProbabilities(PDPSample):
    """Broken: keep-probabilities ``(e^t - 1)/(e^eps_i - 1)`` (eps_i and t swapped), clipped at 1.

    With ``t`` above a group's epsilon that keeps every record of the group, while the
    guarantee still promises ``min(eps_i, t) = eps_i``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        eps = self.epsilons
        finite = np.where(np.isinf(eps), 1.0, eps)
        with np.errstate(over="ignore"):
            p = np.minimum(1.0, np.expm1(self.threshold) / np.expm1(finite))
        self.keep_probabilities = np.where(np.isinf(eps), 1.0, p)
        self.expected_kept = float(np.sum(self.sizes * self.keep_probabilities))


def _estimator_run(make: Callable[[list[Group]], Estimator], eps: tuple[float, float], data) -> Run:
    est = make(_groups(*eps))
    return lambda seed: audit_estimator(est, data, samples=SAMPLES, confidence=CONFIDENCE, seed=seed)


_ESTIMATOR_CASES: dict[str, tuple[Callable[[list[Group]], Estimator], list, str]] = {
    "WeightedMean": (lambda g: WeightedMean(g, BOUNDS, SIGMA2), ZEROS, "WeightedMean"),
    "WeightedMean replace": (lambda g: WeightedMean(g, BOUNDS, SIGMA2, relation="replace"), ZEROS, "WeightedMean"),
    "WeightedMedian": (lambda g: WeightedMedian(g, BOUNDS, SIGMA2), TIED, "WeightedMedian"),
    "PDPSample kept, t=min": (lambda g: PDPSample(g, BOUNDS, "min"), ZEROS, "PDPSample"),
    "PDPSample kept, t=max": (lambda g: PDPSample(g, BOUNDS, "max"), ZEROS, "PDPSample"),
    "PDPSample kept, t=avg, replace": (lambda g: PDPSample(g, BOUNDS, "avg", relation="replace"), ZEROS, "PDPSample"),
    "PDPSample expected, t=max": (lambda g: PDPSample(g, BOUNDS, "max", denominator="expected"), ZEROS, "PDPSample"),
    "PDPSample expected, t=opt": (
        lambda g: PDPSample(g, BOUNDS, "opt", sigma2=SIGMA2, denominator="expected", mean_square=0.0),
        ZEROS,
        "PDPSample",
    ),
    "PEMedian": (lambda g: PEMedian(g, BOUNDS), TIED, "PEMedian"),
    "UniformMean": (lambda g: UniformMean(g, BOUNDS), ZEROS, "UniformMean"),
    "UniformMedian": (lambda g: UniformMedian(g, BOUNDS), TIED, "UniformMedian"),
    "PublicMean": (lambda g: PublicMean(g, BOUNDS), ZEROS, "PublicMean"),
    "PublicMedian": (lambda g: PublicMedian(g, BOUNDS), TIED, "PublicMedian"),
    "TCMOnly": (lambda g: TCMOnly(g[:2], BOUNDS), ZEROS2, "TCMOnly"),
    "TCMOnly gaussian": (lambda g: TCMOnly(g[:2], BOUNDS, noise="gaussian", delta=1e-5), ZEROS2, "TCMOnly"),
    "FullLM": (lambda g: FullLM(g[:2], BOUNDS), ZEROS2, "FullLM"),
    "FullLM gaussian": (lambda g: FullLM(g[:2], BOUNDS, noise="gaussian", delta=1e-5), ZEROS2, "FullLM"),
    "LMOnly": (lambda g: LMOnly(g[:2], BOUNDS), ZEROS2, "LMOnly"),
    "Hybrid kvh": (lambda g: Hybrid(g[:2], BOUNDS, "kvh", sigma2=SIGMA2), ZEROS2, "Hybrid"),
    "Hybrid kvh, loose group in TCM": (lambda g: Hybrid(g[1::-1], BOUNDS, "kvh", sigma2=SIGMA2), ZEROS2, "Hybrid"),
    "Hybrid pwh gaussian replace": (
        lambda g: Hybrid(g[:2], BOUNDS, "pwh", noise="gaussian", delta=1e-5, relation="replace"),
        ZEROS2,
        "Hybrid",
    ),
    "Hybrid w=0.5": (lambda g: Hybrid(g[:2], BOUNDS, 0.5), ZEROS2, "Hybrid"),
}

for _name, (_make, _data, _cls) in _ESTIMATOR_CASES.items():
    for _label, _eps in SETTINGS.items():
        CORRECT[f"{_name} {_label}"] = _estimator_run(_make, _eps, _data)
        COVERS[f"{_name} {_label}"] = _cls

for _label, _eps in SETTINGS.items():
    BROKEN[f"WeightedMean, strict group's noise at the loosest epsilon, {_label}"] = (
        _estimator_run(lambda g: StrictNoiseAtLoosestEpsilon(g, BOUNDS, SIGMA2), _eps, ZEROS),
        "strict",
    )
    BROKEN[f"Hybrid, TCM noise at the LM group's epsilon, w=0.9, {_label}"] = (
        _estimator_run(lambda g: TCMNoiseAtLMEpsilon(g[:2], BOUNDS, 0.9), _eps, ZEROS2),
        "strict",
    )
    BROKEN[f"PDPSample expected, keep-probabilities with eps_i and t swapped, t=max, {_label}"] = (
        _estimator_run(lambda g: SwappedKeepProbabilities(g, BOUNDS, "max", denominator="expected"), _eps, ZEROS),
        "strict",
    )

# the local promise: a mean of 10 reports dilutes one report's leak, so only the wide setting (0.5 vs 4) is in reach
BROKEN["LMOnly, the strict LM users' local noise at the loose TCM group's epsilon, eps=(0.5, 4)"] = (
    _estimator_run(lambda g: LMNoiseAtTCMEpsilon(g[1::-1], BOUNDS), SETTINGS["eps=(0.5, 4)"], ZEROS2),
    "strict",
)


# Wang et al.: the representation weights (Proposition 1, sensitivity 2 under replace-one) and Algorithm 1.
_RW_PUBLIC = np.array([[0.0], [1.0]])
_RW_PAIR = (np.array([[0.0], [0.0], [0.0]]), np.array([[1.0], [0.0], [0.0]]))  # counts (3,0) -> (2,1)


def _rw_statistic(out):  # increasing in the log-likelihood ratio (post-processing)
    c = 3 * out
    return np.clip(c[:, 0] - 2.0, 0.0, 1.0) + np.clip(1.0 - c[:, 1], 0.0, 1.0)


def _rw_run(epsilon, broken):
    def mech(d, rng, size):
        if broken:  # sensitivity 1 instead of 2
            counts = np.broadcast_to(representation_counts(d, _RW_PUBLIC), (size, 2))
            return np.maximum(M.laplace(counts, 1.0 / epsilon, rng) / d.shape[0], 0.0)
        return representation_weights(d, _RW_PUBLIC, epsilon, rng, size=size)

    return lambda seed: _one(
        audit(mech, _RW_PAIR, epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed, statistic=_rw_statistic)
    )


def _hybrid_m_run(contrast, eps):
    est = HybridMEstimator([Group("private", N, eps), Group("public", N, math.inf)], BOUNDS, contrast)
    data = [np.zeros(N), np.linspace(-1.0, 1.0, N)]
    return lambda seed: audit_estimator(est, data, samples=SAMPLES, confidence=CONFIDENCE, seed=seed)


for _eps in (0.5, 2.0):
    CORRECT[f"representation_weights eps={_eps:g}"] = _rw_run(_eps, False)
    COVERS[f"representation_weights eps={_eps:g}"] = "representation_weights"
    BROKEN[f"representation_weights, sensitivity 1 instead of 2, eps={_eps:g}"] = (_rw_run(_eps, True), "mechanism")
    for _c in ("mean", "median"):
        CORRECT[f"HybridMEstimator {_c} eps={_eps:g}"] = _hybrid_m_run(_c, _eps)
        COVERS[f"HybridMEstimator {_c} eps={_eps:g}"] = "HybridMEstimator"


# Wang et al. as mechanisms on a HybridDesign (replace one private record, audited at each mechanism's
# declaration of the "private" unit): one column in [0, 1], three private records at 0, the first
# moved to 1 (public points 0 and 1: the counts go from (3, 0) to (2, 1)).  Algorithm 2 with a proven
# selection step: a criterion that sums one term in [0, 1] per private record (sensitivity 1).
_W_PUBLIC = np.array([[0.0], [1.0]])
_W_PAIR = (HybridDesign(np.zeros((3, 1)), _W_PUBLIC), HybridDesign(np.array([[1.0], [0.0], [0.0]]), _W_PUBLIC))
_W_PUBLIC3 = np.array([[0.0], [0.5], [1.0]])
_W_PAIR3 = (HybridDesign(np.zeros((4, 1)), _W_PUBLIC3), HybridDesign(np.array([[1.0], [0.0], [0.0], [0.0]]), _W_PUBLIC3))


def _bounded_criterion(thetas, private):  # each record adds min(1, |x - theta|): sensitivity 1 under replace-one
    return np.minimum(1.0, np.abs(private[None, :, 0] - thetas[:, None, 0])).sum(axis=1)


def _wang_run(mech: Mechanism, pair) -> Run:
    g = mech.privacy["private"]
    return lambda seed: {"private": audit(lambda d, rng, size: mech.release(d, rng, size), pair, g.epsilon, g.delta,
                                          samples=SAMPLES, confidence=CONFIDENCE, seed=seed,
                                          statistic=lambda out: out[:, 0])}


for _eps in (0.5, 2.0):
    for _name, _mech, _pair in (
        ("Algorithm1", Algorithm1("mean", _eps), _W_PAIR),
        ("Algorithm2", Algorithm2("mean", (0.4 * _eps, 0.2 * _eps, 0.4 * _eps), [1, 2, 3], criterion=_bounded_criterion,
                                  criterion_sensitivity=1.0), _W_PAIR3),
        ("LeiHistogram", LeiHistogram("mean", _eps, 2, lower=0.0, upper=1.0), _W_PAIR),
    ):
        CORRECT[f"{_name} eps={_eps:g}"] = _wang_run(_mech, _pair)
        COVERS[f"{_name} eps={_eps:g}"] = _name
CORRECT["PublicOnly (private records never read: epsilon 0)"] = _wang_run(PublicOnly("mean"), _W_PAIR)
COVERS["PublicOnly (private records never read: epsilon 0)"] = "PublicOnly"


def _wang_broken(declared: Mechanism, released: Mechanism, pair) -> Run:
    g = declared.privacy["private"]
    return lambda seed: {"private": audit(lambda d, rng, size: released.release(d, rng, size), pair, g.epsilon, g.delta,
                                          samples=SAMPLES, confidence=CONFIDENCE, seed=seed,
                                          statistic=lambda out: out[:, 0])}


BROKEN["Algorithm1 released at twice the declared epsilon, eps=1"] = (
    _wang_broken(Algorithm1("mean", 1.0), Algorithm1("mean", 2.0), _W_PAIR), "private")


# ---------------------------------------------------------------------------------------
# K-means (Avent et al., Appendix E) and its randomized response (line 7)
# ---------------------------------------------------------------------------------------
# One dimension in [0, 1], K = 2 centres starting at 0.25 and 0.75, tau = 1 (one round of
# randomized response).  Honest neighbours per declared relation: add/remove-one adds a user of
# the unit at 1 (alone in cluster 1) beside one at 0; replace-one moves the unit's only user from
# 0 to 1 (from cluster 0 to cluster 1).  Each unit is audited at the promise the mechanism
# declares for it (read from ``privacy``, not restated here).
_KM_BOUNDS = (0.0, 1.0)


def _km_cloud(points: list[float], unit: str) -> PointCloud:
    return PointCloud(np.array(points)[:, None], np.full(len(points), unit == "tcm"), _KM_BOUNDS, [[0.25], [0.75]])


def _km_added(out):  # add/remove: where the added user's cluster centre went
    return out[:, 1, 0]


def _km_moved(out):  # replace: which centre the user's report moved (the RR label) and where (the noisy report)
    return np.where(out[:, 1, 0] != 0.75, 1.0 + out[:, 1, 0], out[:, 0, 0])


def _kmeans_run(make: Callable[[float], Mechanism], epsilon: float, released_at: float | None = None) -> Run:
    """Audit every unit of ``make(epsilon)``'s declaration; ``released_at``: release with ``make(released_at)`` (broken)."""
    declared = make(epsilon)
    released = make(epsilon if released_at is None else released_at)

    def run(seed):
        out = {}
        for i, (unit, g) in enumerate(declared.privacy.items()):
            add = g.relation == "add-remove"
            pair = (_km_cloud([0.0], unit), _km_cloud([0.0, 1.0] if add else [1.0], unit))
            out[unit] = audit(lambda d, rng, size: released.release(d, rng, size), pair, g.epsilon, g.delta,
                              samples=SAMPLES, confidence=CONFIDENCE, seed=np.random.SeedSequence([seed, i]),
                              statistic=_km_added if add else _km_moved)
        return out

    return run


def _rr_run(epsilon: float, used: float) -> Run:
    def mech(label, rng, size):  # K = 4 labels, one report each; 2 and 0 differ in every cell
        return M.randomized_response(np.full(size, label), 4, used, rng)

    return lambda seed: _one(audit(mech, (0, 2), epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


_KMEANS_CASES: dict[str, Callable[[float], Mechanism]] = {
    "TCMKMeans": lambda eps: TCMKMeans(2, eps, 1, _KM_BOUNDS, d=1),
    "LMKMeans": lambda eps: LMKMeans(2, eps, 1, _KM_BOUNDS, d=1),
    "LMKMeans debiased": lambda eps: LMKMeans(2, eps, 1, _KM_BOUNDS, d=1, debias=True),
    "HybridKMeans": lambda eps: HybridKMeans(2, eps, 1, _KM_BOUNDS, d=1),
    "HybridKMeans printed, debiased": lambda eps: HybridKMeans(2, eps, 1, _KM_BOUNDS, d=1, pwh_noise="printed", debias=True),
}
for _eps in (1.0, 4.0):
    for _name, _make in _KMEANS_CASES.items():
        CORRECT[f"{_name} eps={_eps:g}"] = _kmeans_run(_make, _eps)
        COVERS[f"{_name} eps={_eps:g}"] = _name.split()[0]
    CORRECT[f"randomized_response k=4 eps={_eps:g}"] = _rr_run(_eps, _eps)
    COVERS[f"randomized_response k=4 eps={_eps:g}"] = "randomized_response"
    BROKEN[f"randomized_response at twice the claimed epsilon, eps={_eps:g}"] = (_rr_run(_eps, 2 * _eps), "mechanism")
for _unit in ("tcm", "lm"):
    BROKEN[f"HybridKMeans released at twice the declared epsilon, {_unit} users, eps=1"] = (
        _kmeans_run(_KMEANS_CASES["HybridKMeans"], 1.0, released_at=2.0), _unit)


# ---------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_built_in_mechanism_passes_its_audit(name):
    reports = CORRECT[name](0)
    assert reports, "nothing was audited"
    for group, rep in reports.items():
        assert rep.samples == SAMPLES and rep.confidence >= CONFIDENCE
        assert rep.passed, f"{name}, group {group}: {rep}"


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_variant_is_caught(name):
    run, target = BROKEN[name]
    for seed in (1, 2, 3):
        reports = run(seed)
        rep = reports[target]
        assert rep.verdict == "violation", f"{name} (seed {seed}) was not caught: {rep}"
        assert rep.epsilon_lower_bound > rep.epsilon


def test_estimator_audits_cover_every_group_with_a_finite_promise():
    """Public groups promise nothing and are skipped; every other group is audited, the strictest included."""
    reports = CORRECT["WeightedMean eps=(1, 2)"](0)
    assert set(reports) == {"strict", "loose"}
    assert reports["strict"].epsilon == 1.0 and reports["loose"].epsilon == 2.0
    # estimators that promise the public group something are audited for it too
    assert set(CORRECT["UniformMean eps=(1, 2)"](0)) == {"strict", "loose", "public"}


def _dp_claiming_names() -> set[str]:
    """Every class exported by hybridpriv.estimators that declares a guarantee, plus the noise mechanisms."""
    names = {"laplace", "gaussian", "exponential_mechanism", "smith_quantile", "randomized_response"}
    for name in estimators_module.__all__:
        obj = getattr(estimators_module, name)
        if inspect.isclass(obj) and not inspect.isabstract(obj):
            init_code = getattr(obj.__init__, "__code__", None)
            # K-means: a mechanism with an epsilon parameter promises something (LloydKMeans, without one, does not)
            kmeans = issubclass(obj, Mechanism) and obj.__module__.startswith("hybridpriv.estimators.kmeans")
            takes_epsilon = kmeans and "epsilon" in inspect.signature(obj).parameters
            # Wang et al.: the mechanisms with a budget (epsilon or epsilons) promise the private records something
            wang = issubclass(obj, Mechanism) and obj.__module__.startswith("hybridpriv.estimators.wang")
            takes_epsilon |= wang and bool({"epsilon", "epsilons"} & set(inspect.signature(obj).parameters))
            if issubclass(obj, Estimator) or takes_epsilon or (init_code is not None and "guarantee" in init_code.co_names):
                names.add(name)
    return names


def test_every_dp_claiming_built_in_is_audited_at_two_settings():
    claiming = _dp_claiming_names()
    covered: dict[str, int] = {}
    for case, cls in COVERS.items():
        covered[cls] = covered.get(cls, 0) + 1
    missing = sorted(claiming - set(covered))
    assert not missing, f"add audits to tests/test_audits.py for: {missing}"
    assert all(covered[name] >= 2 for name in claiming), {n: covered[n] for n in claiming}


def test_the_coverage_test_sees_the_wang_mechanisms_with_a_budget():
    assert {"Algorithm1", "Algorithm2", "LeiHistogram", "HybridMEstimator"} <= _dp_claiming_names()
