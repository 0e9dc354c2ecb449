"""Closed forms of hybridpriv.theory checked against independent computations.

Every expected value here is computed in the test itself from the paper's formulas
(Ferrando et al., Section 2; Jorgensen et al.'s Sample mechanism), by brute force on small
cases, by a generic numerical optimiser, or by Monte Carlo of the estimators with a
confidence interval stated in the assertion.  Seeds are fixed (SeedSequence-derived).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import optimize

from hybridpriv.core.privacy import Group
from hybridpriv.estimators import PDPSample, WeightedMean
from hybridpriv.theory import (
    group_mean_variances,
    mixed_mean_variance,
    mixed_mean_weights,
    pdp_count_pmf,
    pdp_keep_probabilities,
    pdp_optimal_threshold,
    pdp_sample_variance,
)

ROOT_SEED = 0x7E0_12


def make_rng(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([ROOT_SEED, key]))


def hand_group_variance(n: float, eps: float, sigma2: float, r: float) -> float:
    """Paper, Section 2: Var_i = (n_i sigma^2 + 2 r^2 / eps_i^2) / n_i^2 (no noise when public)."""
    noise = 0.0 if math.isinf(eps) else 2.0 * r * r / (eps * eps)
    return (n * sigma2 + noise) / (n * n)


def assert_variance_matches(samples: np.ndarray, exact: float, z: float = 4.0) -> None:
    """|S^2 - exact| < z * SE(S^2), SE from the sample fourth central moment (kurtosis-aware).

    The delta-method standard error of the sample variance is sqrt((mu4 - sigma^4) / N).
    """
    x = np.asarray(samples, dtype=float)
    n = x.size
    c = x - x.mean()
    s2 = float(np.sum(c**2) / (n - 1))
    m4 = float(np.mean(c**4))
    se = math.sqrt(max(m4 - s2**2, 0.0) / n)
    assert abs(s2 - exact) < z * se, f"MC variance {s2:.6g} vs exact {exact:.6g}: |diff|={abs(s2 - exact):.3g} >= {z}*SE={z * se:.3g}"


def assert_mean_matches(samples: np.ndarray, exact: float, z: float = 4.0) -> None:
    x = np.asarray(samples, dtype=float)
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    assert abs(x.mean() - exact) < z * se, f"MC mean {x.mean():.6g} vs {exact:.6g}: >= {z}*SE={z * se:.3g}"


# --------------------------------------------------------------------------------------
# 1. mixed mean weights and variance
# --------------------------------------------------------------------------------------

SIZES = [40, 25, 300, 10]
EPS = [math.inf, 0.5, 0.05, 3.0]
SIGMA2 = 2.5
R = 4.0


def test_group_mean_variances_by_hand():
    expected = [hand_group_variance(n, e, SIGMA2, R) for n, e in zip(SIZES, EPS)]
    np.testing.assert_allclose(group_mean_variances(SIZES, EPS, SIGMA2, R), expected, rtol=1e-13)


def test_weights_sum_to_one_and_match_paper_formula():
    w = mixed_mean_weights(SIZES, EPS, SIGMA2, R)
    assert w.shape == (4,)
    assert abs(w.sum() - 1.0) < 1e-12
    assert (w > 0).all()
    # paper: beta_i = (n_i^2 / (n_i sigma^2 + 2 r^2/eps_i^2)) / sum_j (...), public: n_i / sigma^2
    tilde = []
    for n, e in zip(SIZES, EPS):
        tilde.append(n / SIGMA2 if math.isinf(e) else n * n / (n * SIGMA2 + 2 * R * R / (e * e)))
    expected = np.array(tilde) / sum(tilde)
    np.testing.assert_allclose(w, expected, rtol=1e-12)


def test_public_groups_weight_proportional_to_n_over_sigma2():
    sizes = [30, 90, 50]
    eps = [math.inf, math.inf, 1.0]
    w = mixed_mean_weights(sizes, eps, 4.0, 2.0)
    # two public groups: ratio of weights is the ratio of sizes
    assert w[1] / w[0] == pytest.approx(3.0, rel=1e-12)
    tilde_private = 50**2 / (50 * 4.0 + 2 * 2.0**2 / 1.0**2)
    total = 30 / 4.0 + 90 / 4.0 + tilde_private
    assert w[0] == pytest.approx((30 / 4.0) / total, rel=1e-12)
    # all public groups: weights are n_i / N whatever sigma2 and the sensitivity
    np.testing.assert_allclose(mixed_mean_weights([1, 3, 6], [math.inf] * 3, 7.0, 100.0), [0.1, 0.3, 0.6], rtol=1e-12)


def test_optimal_variance_is_inverse_of_sum_of_precisions_and_weights_path():
    var = [hand_group_variance(n, e, SIGMA2, R) for n, e in zip(SIZES, EPS)]
    assert mixed_mean_variance(SIZES, EPS, SIGMA2, R) == pytest.approx(1.0 / sum(1.0 / v for v in var), rel=1e-12)
    w = np.array([0.1, 0.2, 0.3, 0.4])
    assert mixed_mean_variance(SIZES, EPS, SIGMA2, R, weights=w) == pytest.approx(
        sum(wi**2 * vi for wi, vi in zip(w, var)), rel=1e-12
    )
    with pytest.raises(ValueError, match=r"weights must have one entry per group \(4\), got 3"):
        mixed_mean_variance(SIZES, EPS, SIGMA2, R, weights=[0.5, 0.25, 0.25])


@pytest.mark.parametrize(
    "sizes, eps, sigma2, r",
    [
        (SIZES, EPS, SIGMA2, R),
        ([5, 500, 50], [0.1, 0.01, 10.0], 25.0, 1.0),
        ([1000, 100, 500, 1000, 5000, 10000], [10.0, 0.05, 0.1, 0.01, 0.25, 0.15], 25.0, 10.0),
    ],
)
def test_optimal_weights_minimise_variance_over_simplex(sizes, eps, sigma2, r):
    """Independent: a generic constrained optimiser of sum w_i^2 Var_i over the simplex."""
    var = np.array([hand_group_variance(n, e, sigma2, r) for n, e in zip(sizes, eps)])
    scale = 1.0 / var.min()  # conditioning for SLSQP

    def objective(w):
        return float(np.sum(w**2 * var) * scale)

    k = len(sizes)
    res = optimize.minimize(
        objective,
        np.full(k, 1.0 / k),
        jac=lambda w: 2 * w * var * scale,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * k,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones_like(w)}],
        options={"ftol": 1e-15, "maxiter": 500},
    )
    assert res.success, res.message
    best = res.fun / scale
    v_opt = mixed_mean_variance(sizes, eps, sigma2, r)
    assert v_opt <= best * (1 + 1e-9)
    assert v_opt == pytest.approx(best, rel=1e-6)
    np.testing.assert_allclose(mixed_mean_weights(sizes, eps, sigma2, r), res.x, atol=1e-5)
    # and random points of the simplex never do better
    dirichlet = make_rng(11).dirichlet(np.ones(k), size=20000)
    assert (dirichlet**2 @ var >= v_opt * (1 - 1e-12)).all()


def test_weighted_mean_uses_paper_weights():
    groups = [Group("pub", 40, math.inf), Group("a", 25, 0.5), Group("b", 300, 0.05), Group("c", 10, 3.0)]
    bounds = (-4.0, 1.0)  # r = max(|a|, |b|) = 4
    est = WeightedMean(groups, bounds, SIGMA2)
    tilde = [40 / SIGMA2] + [n * n / (n * SIGMA2 + 2 * 16.0 / e**2) for n, e in [(25, 0.5), (300, 0.05), (10, 3.0)]]
    np.testing.assert_allclose(est.weights, np.array(tilde) / sum(tilde), rtol=1e-12)
    # replace-one neighbours: Delta = b - a = 5
    est_r = WeightedMean(groups, bounds, SIGMA2, relation="replace")
    tilde_r = [40 / SIGMA2] + [n * n / (n * SIGMA2 + 2 * 25.0 / e**2) for n, e in [(25, 0.5), (300, 0.05), (10, 3.0)]]
    np.testing.assert_allclose(est_r.weights, np.array(tilde_r) / sum(tilde_r), rtol=1e-12)


def _weighted_mean_mc(sigma2_for_weights: float, key: int) -> tuple[np.ndarray, WeightedMean, float]:
    lo, hi = -1.0, 3.0
    groups = [Group("pub", 20, math.inf), Group("a", 30, 0.5), Group("b", 10, 2.0)]
    true_sigma2 = (hi - lo) ** 2 / 12.0  # uniform records on the bounds
    est = WeightedMean(groups, (lo, hi), sigma2_for_weights)
    rng = make_rng(key)
    trials = 40000
    data = [rng.uniform(lo, hi, size=(trials, g.size)) for g in groups]  # fresh data every trial
    return est.estimate(data, rng), est, true_sigma2


def test_weighted_mean_monte_carlo_variance_matches_closed_form():
    out, est, s2 = _weighted_mean_mc((4.0) ** 2 / 12.0, key=21)
    exact = mixed_mean_variance([20, 30, 10], [math.inf, 0.5, 2.0], s2, 3.0)
    assert_variance_matches(out, exact)
    assert_mean_matches(out, 1.0)  # unbiased for the uniform mean (a + b)/2
    # power: equal weights would give a clearly different variance
    equal = mixed_mean_variance([20, 30, 10], [math.inf, 0.5, 2.0], s2, 3.0, weights=[1 / 3] * 3)
    assert equal > 1.15 * exact  # more than 4 SE away at 40000 trials


def test_weighted_mean_monte_carlo_with_misspecified_sigma2():
    """With a wrong sigma2 the weights are suboptimal; the variance is sum w_i^2 Var_i (true sigma2)."""
    out, est, s2 = _weighted_mean_mc(50.0, key=22)
    exact = mixed_mean_variance([20, 30, 10], [math.inf, 0.5, 2.0], s2, 3.0, weights=est.weights)
    assert exact > 1.05 * mixed_mean_variance([20, 30, 10], [math.inf, 0.5, 2.0], s2, 3.0)
    assert_variance_matches(out, exact)


def test_theory_bad_input():
    with pytest.raises(ValueError, match=r"sigma2 must be > 0, got 0"):
        mixed_mean_weights([10], [1.0], 0, 1.0)
    with pytest.raises(ValueError, match=r"sigma2 must be > 0, got -1"):
        mixed_mean_variance([10], [1.0], -1, 1.0)
    with pytest.raises(ValueError, match=r"sensitivity must be > 0, got 0"):
        mixed_mean_weights([10], [1.0], 1.0, 0)
    with pytest.raises(ValueError, match=r"sizes must be >= 1.*\[10, 0\]"):
        mixed_mean_weights([10, 0], [1.0, 1.0], 1.0, 1.0)
    with pytest.raises(ValueError, match=r"sizes must be whole numbers.*2\.5"):
        mixed_mean_weights([10, 2.5], [1.0, 1.0], 1.0, 1.0)
    with pytest.raises(ValueError, match=r"epsilons\[1\] must be > 0, got -0\.5"):
        mixed_mean_weights([10, 2], [1.0, -0.5], 1.0, 1.0)
    with pytest.raises(ValueError, match=r"epsilons\[0\] must be > 0, got nan"):
        mixed_mean_weights([10], [float("nan")], 1.0, 1.0)
    with pytest.raises(ValueError, match=r"same length, got 2 and 1"):
        mixed_mean_weights([10, 2], [1.0], 1.0, 1.0)
    with pytest.raises(ValueError, match=r"at least one group"):
        mixed_mean_weights([], [], 1.0, 1.0)
    with pytest.raises(ValueError, match=r"threshold must be > 0, got 0"):
        pdp_keep_probabilities([1.0], 0)
    with pytest.raises(ValueError, match=r"threshold must be finite, got inf"):
        pdp_keep_probabilities([1.0], math.inf)
    with pytest.raises(ValueError, match=r"threshold must be > 0, got nan"):
        pdp_sample_variance([3], [1.0], float("nan"), 1.0, 1.0)


# --------------------------------------------------------------------------------------
# 2. Jorgensen et al.'s Sample mechanism
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", [0.05, 0.5, 1.0, 3.0, 10.0, 40.0])
def test_keep_probabilities_match_direct_formula(t):
    eps = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 35.0, math.inf]
    direct = [1.0 if math.isinf(e) else min(1.0, math.expm1(e) / math.expm1(t)) for e in eps]
    np.testing.assert_allclose(pdp_keep_probabilities(eps, t), direct, rtol=1e-10)


def test_keep_probabilities_large_thresholds_no_overflow():
    eps = [0.01, 1.0, 450.0, 499.0, math.inf]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = pdp_keep_probabilities(eps, 500.0)
        p_far = pdp_keep_probabilities([1.0, 999.5, 1000.0], 1000.0)
    direct = [math.expm1(e) / math.expm1(500.0) for e in eps[:4]] + [1.0]  # expm1(500) ~ 1.4e217 is finite
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p, direct, rtol=1e-10)
    # t = 1000 overflows a double; second derivation in logs: p = exp(eps - t) (1 - e^-eps)/(1 - e^-t)
    assert p_far[0] == 0.0 or p_far[0] < 1e-300
    assert p_far[1] == pytest.approx(math.exp(-0.5), rel=1e-10)
    assert p_far[2] == 1.0


def _brute_force_count_pmf(sizes, probs):
    per_record = [p for n, p in zip(sizes, probs) for _ in range(n)]
    pmf = np.zeros(len(per_record) + 1)
    for pattern in itertools.product([0, 1], repeat=len(per_record)):
        prob = 1.0
        for kept, p in zip(pattern, per_record):
            prob *= p if kept else 1.0 - p
        pmf[sum(pattern)] += prob
    return pmf


@pytest.mark.parametrize(
    "sizes, probs",
    [([2, 1, 3, 2], [0.3, 1.0, 0.65, 0.0]), ([4, 3], [0.1, 0.9]), ([1, 1, 1, 5], [1.0, 0.5, 0.2, 0.37])],
)
def test_count_pmf_brute_force(sizes, probs):
    np.testing.assert_allclose(pdp_count_pmf(sizes, probs), _brute_force_count_pmf(sizes, probs), atol=1e-13)


def test_count_pmf_monte_carlo():
    sizes, probs = [3, 2, 4], [0.25, 1.0, 0.6]
    rng = make_rng(31)
    trials = 200000
    m = sum(rng.binomial(n, p, size=trials) for n, p in zip(sizes, probs))
    pmf = pdp_count_pmf(sizes, probs)
    freq = np.bincount(m, minlength=pmf.size) / trials
    se = np.sqrt(pmf * (1 - pmf) / trials)
    assert (np.abs(freq - pmf) <= 4 * se + 1e-12).all(), (freq, pmf)


def _pdp_mc_setting():
    groups = [Group("pub", 1, math.inf), Group("a", 6, 0.3), Group("b", 2, 1.2)]
    return groups, (-1.0, 2.0), 0.8  # threshold t: group a subsampled, b kept


def test_pdp_sample_variance_monte_carlo():
    groups, (lo, hi), t = _pdp_mc_setting()
    est = PDPSample(groups, (lo, hi), threshold=t)
    sizes = [g.size for g in groups]
    eps = [g.epsilon for g in groups]
    sigma2 = (hi - lo) ** 2 / 12.0
    r = max(abs(lo), abs(hi))
    exact = pdp_sample_variance(sizes, eps, t, sigma2, r)

    # independent re-derivation: E over M of sigma2/M + 2 r^2/(t^2 M^2), M by brute force
    p_a = math.expm1(0.3) / math.expm1(t)
    pmf = _brute_force_count_pmf(sizes, [1.0, p_a, 1.0])
    hand = sum(pmf[m] * (sigma2 / m + 2 * r * r / (t * t * m * m)) for m in range(1, pmf.size))
    assert exact == pytest.approx(hand, rel=1e-10)

    rng = make_rng(41)
    trials = 200000
    data = [rng.uniform(lo, hi, size=(trials, n)) for n in sizes]
    out = est.estimate(data, rng)
    assert_variance_matches(out, exact)
    assert_mean_matches(out, 0.5)
    # power: the plug-in E[M] formula (ignoring the randomness of M) is excluded by the CI
    em = sum(m * pmf[m] for m in range(pmf.size))
    naive = sigma2 / em + 2 * r * r / (t * t * em * em)
    c = out - out.mean()
    se = math.sqrt((np.mean(c**4) - np.var(c) ** 2) / trials)
    assert abs(np.var(out, ddof=1) - naive) > 4 * se


@pytest.mark.slow
def test_pdp_optimal_threshold_beats_dense_grid():
    sizes, eps, sigma2, r = [50, 20, 30, 40, 15], [5.0, 0.1, 0.5, 1.0, math.inf], 2.0, 3.0
    t_opt = pdp_optimal_threshold(sizes, eps, sigma2, r)
    assert 0.1 <= t_opt <= 5.0
    v_opt = pdp_sample_variance(sizes, eps, t_opt, sigma2, r)
    grid = np.concatenate([np.geomspace(0.1, 5.0, 1500), np.linspace(0.1, 5.0, 1500), [0.1, 0.5, 1.0, 5.0]])
    v_grid = np.array([pdp_sample_variance(sizes, eps, t, sigma2, r) for t in grid])
    assert v_opt <= v_grid.min() * (1 + 1e-9), (t_opt, v_opt, grid[np.argmin(v_grid)], v_grid.min())


def test_pdp_optimal_threshold_degenerate_cases():
    # a single finite epsilon: the documented search range is that point
    assert pdp_optimal_threshold([10, 5], [math.inf, 0.7], 1.0, 1.0) == 0.7
    # only public groups: threshold irrelevant, 1.0 is returned
    assert pdp_optimal_threshold([10, 5], [math.inf, math.inf], 1.0, 1.0) == 1.0


def test_pdp_sample_variance_equals_mixed_variance_when_nothing_is_subsampled():
    """t <= every epsilon: all records kept, M = N; V = sigma2/N + 2 r^2/(t^2 N^2)."""
    sizes, eps = [10, 20], [2.0, 3.0]
    v = pdp_sample_variance(sizes, eps, 1.5, 4.0, 2.0)
    assert v == pytest.approx(4.0 / 30 + 2 * 4.0 / (1.5**2 * 900), rel=1e-12)


def test_keep_probabilities_tiny_epsilon_no_warnings_and_validation():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = pdp_keep_probabilities([1e-20, 1e-12, 0.5], 1.0)
    np.testing.assert_allclose(p, [1e-20 / math.expm1(1.0), math.expm1(1e-12) / math.expm1(1.0), math.expm1(0.5) / math.expm1(1.0)], rtol=1e-10)
    with pytest.raises(ValueError, match=r"epsilons\[0\] must be > 0, got -1"):
        pdp_keep_probabilities([-1.0, 0.5], 1.0)
    with pytest.raises(ValueError, match=r"epsilons\[1\] must be > 0, got nan"):
        pdp_keep_probabilities([1.0, float("nan")], 1.0)


def test_count_pmf_support_and_validation():
    # support is always 0..sum(n_i), also when a group is never kept
    assert pdp_count_pmf([3, 4], [0.0, 0.5]).size == 8
    assert pdp_count_pmf([3], [0.0]).tolist() == [1.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"same length, got 2 and 1"):
        pdp_count_pmf([3, 4], [0.5])
    with pytest.raises(ValueError, match=r"probabilities must be in \[0, 1\], got \[0.5, 1.5\]"):
        pdp_count_pmf([3, 4], [0.5, 1.5])


def test_optimal_threshold_searches_above_the_largest_epsilon_when_a_public_group_exists():
    # 100 public records beside 100 at epsilon = 0.01: keeping the private records costs noise
    # Lap(1/0.01) on the pooled sum, so the best threshold all but drops them (t >> 0.01)
    sizes, eps = [100, 100], [math.inf, 0.01]
    t = pdp_optimal_threshold(sizes, eps, 1.0, 1.0)
    v = pdp_sample_variance(sizes, eps, t, 1.0, 1.0)
    brute = min(pdp_sample_variance(sizes, eps, s, 1.0, 1.0) for s in np.geomspace(0.01, 20, 400))
    assert t > 1.0
    # V(t) keeps falling towards the public-only limit as t grows (the one noise draw shrinks
    # like 1/t); the search stops at max eps + ln N + 5 = 10.3, within 0.1% of that limit
    assert v <= brute * 1.001
    # the public-only mean (variance sigma2 / n_pub = 0.01) bounds it from below
    assert 0.01 <= v < 0.0105
