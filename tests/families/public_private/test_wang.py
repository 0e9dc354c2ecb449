"""Wang et al. (2018) hybrid DP M-estimators: every formula against an independent computation.

Independent references used here: full distance matrices (the module uses a KD-tree), a
Newton/IRLS logistic fit written in this file (the module uses SciPy), sorting-based weighted
medians (the module uses a linear program), ``np.histogramdd`` (the module uses
``ravel_multi_index`` + ``bincount``), Monte Carlo variances with z = 4 intervals.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import expit

from hybridpriv.accounting import Accountant, BudgetExceededError
from hybridpriv.core.privacy import Group
from hybridpriv.families.public_private.wang import (
    TIE_ATOL,
    TIE_RTOL,
    CustomContrast,
    HybridMEstimator,
    LogisticContrast,
    algorithm1,
    algorithm2,
    brier_criterion,
    criterion_sensitivity_bound,
    distance,
    hybrid_oracle,
    lei_m_estimator,
    load_hybrid_csv,
    m_estimate,
    nearest_public,
    prediction_error,
    private_fit,
    public_only,
    representation_counts,
    representation_weights,
    rescale,
    weights_from_counts,
)

Z = 4.0  # width of every Monte Carlo interval, in standard errors


# ---------------------------------------------------------------------------------------
# independent references
# ---------------------------------------------------------------------------------------
def brute_nearest(P, E):
    """Full distance matrix; ties (within the documented tolerance) to the lowest index."""
    P, E = np.atleast_2d(P.T).T if P.ndim == 1 else P, np.atleast_2d(E.T).T if E.ndim == 1 else E
    d = np.sqrt(((P[:, None, :] - E[None, :, :]) ** 2).sum(axis=2))
    dmin = d.min(axis=1, keepdims=True)
    tied = d <= dmin + TIE_RTOL * dmin + TIE_ATOL
    return np.argmax(tied, axis=1)  # first True = lowest index


def irls_logistic(X, y, w, l2=0.0, iters=100):
    """Newton-Raphson (IRLS) for sum w_i loglik / sum w + l2/2 ||b||^2, written independently."""
    w = w / w.sum()
    b = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-X @ b))
        g = X.T @ (w * (p - y)) + l2 * b
        H = X.T @ (X * (w * p * (1 - p))[:, None]) + l2 * np.eye(X.shape[1])
        step = np.linalg.solve(H, g)
        b -= step
        if np.abs(step).max() < 1e-13:
            break
    return b


def weighted_median_interval(x, w):
    """All minimisers of sum w |x - t|: [lo, hi] from sorted cumulative weights."""
    o = np.argsort(x)
    xs, cw = x[o], np.cumsum(w[o]) / w.sum()
    lo = xs[np.argmax(cw >= 0.5 - 1e-12)]
    hi = xs[np.argmax(cw > 0.5 + 1e-12)]
    return lo, hi


def simulate(n_d, n_e, p, rng):
    """Section 5.1's design (p covariates, no intercept), small."""
    XD = rng.normal(size=(n_d, p))
    XE = rng.normal(size=(n_e, p)) * np.sqrt(np.r_[0.5, np.ones(p - 1)])
    bD, bE = rng.uniform(-1, 1, p), rng.uniform(0, 0.5, p)
    yD = rng.binomial(1, expit(XD @ bD))
    yE = rng.binomial(1, expit(XE @ bE))
    return np.column_stack([XD, yD]), np.column_stack([XE, yE])


# ---------------------------------------------------------------------------------------
# nearest public point, counts, weights
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1, 2, 5, 20])
def test_nearest_and_counts_match_a_full_distance_matrix(p):
    rng = np.random.default_rng(p)
    P, E = rng.normal(size=(300, p)), rng.normal(size=(40, p))
    ref = brute_nearest(P, E)
    for method in ("auto", "kdtree", "chunked"):
        np.testing.assert_array_equal(nearest_public(P, E, method), ref)
    np.testing.assert_array_equal(representation_counts(P, E), np.bincount(ref, minlength=40))
    w = representation_weights(P, E, math.inf, None)
    np.testing.assert_allclose(w, np.bincount(ref, minlength=40) / 300)
    assert w.sum() == pytest.approx(1.0)
    # the noise step on precomputed counts: the same draws in the same order
    for eps, trunc, size in ((0.7, True, None), (2.0, False, 3), (math.inf, True, None)):
        a = representation_weights(P, E, eps, np.random.default_rng(5), truncate=trunc, size=size)
        b = weights_from_counts(representation_counts(P, E), 300, eps, np.random.default_rng(5), trunc, size)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["kdtree", "chunked"])
def test_exact_ties_go_to_the_lowest_public_index(method, monkeypatch):
    import hybridpriv.families.public_private.wang as wang
    import hybridpriv.families.public_private.wang.weights as weights

    monkeypatch.setattr(weights, "_CHUNK_ENTRIES", 64)  # several blocks in the chunked search
    real = wang.nearest_public
    nearest_public = lambda P, E, m="auto": real(P, E, method)  # noqa: E731
    square = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    centre = np.array([[0.5, 0.5]])  # 4-way exact tie (dyadic: exact arithmetic)
    for perm in ([0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]):
        assert nearest_public(centre, square[perm])[0] == 0  # lowest index whatever the point
    # two-way ties on an edge midpoint, and duplicate public points (first copy wins)
    E = np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    P = np.array([[0.5, 0.0], [0.0, 0.0], [0.0, 0.1], [1.0, 0.5]])
    np.testing.assert_array_equal(nearest_public(P, E), [1, 1, 1, 0])
    # ties that floating point does not represent exactly: |0.3-0.1| = 0.19999999999999998, |0.5-0.3| = 0.2
    assert nearest_public(np.array([0.3]), np.array([0.5, 0.1]))[0] == 0
    assert nearest_public(np.array([0.3]), np.array([0.1, 0.5]))[0] == 0
    # many-way ties among binary records (clinical-style data): against the brute force
    rng = np.random.default_rng(3)
    E = np.unique(rng.integers(0, 2, size=(60, 9)).astype(float), axis=0)
    E = E[rng.permutation(len(E))]
    P = rng.integers(0, 2, size=(500, 9)).astype(float)
    np.testing.assert_array_equal(nearest_public(P, E), brute_nearest(P, E))
    # distances of the chunked and KD-tree searches agree with the brute force
    d = np.sqrt(((P[:, None] - E[None]) ** 2).sum(axis=2)).min(axis=1).mean()
    assert wang.distance(P, E, method) == pytest.approx(d)
    with pytest.raises(ValueError, match="method must be"):
        real(P, E, "ball")


def test_laplace_noise_on_counts_has_scale_two_over_epsilon():
    rng = np.random.default_rng(11)
    P, E = rng.uniform(size=(50, 2)), rng.uniform(size=(8, 2))
    counts = np.bincount(brute_nearest(P, E), minlength=8)
    eps, n_mc = 0.7, 20_000
    noisy = representation_weights(P, E, eps, rng, truncate=False, size=n_mc) * 50  # back to counts
    err = noisy - counts
    b = 2.0 / eps
    var_hat = (err**2).mean()  # mean known (0): E Z^2 = 2 b^2, Var Z^2 = 20 b^4
    se = math.sqrt(20 * b**4 / err.size)
    assert abs(var_hat - 2 * b**2) < Z * se, (var_hat, 2 * b**2, se)
    assert abs(err.mean()) < Z * math.sqrt(2 * b**2 / err.size)
    # a scale of 1/epsilon (sensitivity 1) would be far outside the interval
    assert abs(var_hat - 2 * (1 / eps) ** 2) > 10 * se


def test_truncation_sets_negative_weights_to_zero_and_nothing_else():
    P, E = np.random.default_rng(0).uniform(size=(20, 2)), np.random.default_rng(1).uniform(size=(30, 2))
    raw = representation_weights(P, E, 0.3, np.random.default_rng(5), truncate=False)
    cut = representation_weights(P, E, 0.3, np.random.default_rng(5), truncate=True)
    assert (raw < 0).any() and (raw > 0).any()
    np.testing.assert_array_equal(cut, np.where(raw < 0, 0.0, raw))


def test_count_vector_moves_by_at_most_two_in_l1_when_one_record_is_replaced():
    """Proposition 1 by brute force: replace each record by many values, recount with a distance matrix."""
    rng = np.random.default_rng(7)
    E = rng.uniform(size=(15, 2))
    P = rng.uniform(size=(40, 2))
    base = np.bincount(brute_nearest(P, E), minlength=15)
    seen = []
    for i in range(P.shape[0]):
        for new in rng.uniform(-0.2, 1.2, size=(25, 2)):
            Q = P.copy()
            Q[i] = new
            seen.append(np.abs(np.bincount(brute_nearest(Q, E), minlength=15) - base).sum())
    seen = np.array(seen)
    assert seen.max() == 2 and set(np.unique(seen)) <= {0, 2}
    # and under add/remove (not offered) it would be 1:
    assert np.abs(np.bincount(brute_nearest(P[1:], E), minlength=15) - base).sum() == 1


def test_representation_weights_rejects_bad_input():
    P, E = np.zeros((3, 2)), np.ones((4, 2))
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        representation_weights(P, E, -1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        representation_weights(P, E, 1.0, 42)
    with pytest.raises(ValueError, match="same number of columns"):
        representation_weights(P, np.ones((4, 3)), 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="NaN"):
        representation_weights(np.array([[np.nan, 0.0]]), E, 1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="truncate must be True or False"):
        representation_weights(P, E, 1.0, np.random.default_rng(0), truncate="yes")
    with pytest.raises(TypeError, match="numeric"):
        representation_weights([["a", "b"]], E, 1.0, np.random.default_rng(0))


# ---------------------------------------------------------------------------------------
# rescaling
# ---------------------------------------------------------------------------------------
def test_rescale_uses_the_public_range_truncates_private_and_one_hots_categories():
    E = np.array([[0.0, 10.0, 2.0, 5.0], [2.0, 20.0, 0.0, 5.0], [1.0, 15.0, 1.0, 5.0]])
    P = np.array([[-1.0, 30.0, 1.0, 7.0], [1.5, 12.5, 3.0, 5.0]])
    p01, e01, s = rescale(P, E, categorical=[2])
    # continuous: (clip(z, a, b) - a) / (b - a); the constant public column maps to 0
    np.testing.assert_allclose(e01[:, [0, 1]], [[0, 0], [1, 1], [0.5, 0.5]])
    np.testing.assert_allclose(p01[:, [0, 1]], [[0, 1], [0.75, 0.25]])
    np.testing.assert_allclose(p01[:, -1], 0.0)
    # categorical column 2 (levels 0, 1, 2): one-hot / sqrt(2), distance 1 between levels;
    # the private level 3 is not public: all zeros
    np.testing.assert_allclose(e01[:, 2:5] * math.sqrt(2), [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_allclose(p01[:, 2:5] * math.sqrt(2), [[0, 1, 0], [0, 0, 0]])
    assert np.linalg.norm(e01[0, 2:5] - e01[1, 2:5]) == pytest.approx(1.0)
    assert ((p01 >= 0) & (p01 <= 1)).all() and ((e01 >= 0) & (e01 <= 1)).all()
    np.testing.assert_allclose(s.inverse(e01)[:, :3], E[:, :3])
    assert "categorical" in s.describe()
    with pytest.raises(ValueError, match="categorical column index"):
        rescale(P, E, categorical=[4])
    with pytest.raises(TypeError, match="categorical"):
        rescale(P, E, categorical="2")


# ---------------------------------------------------------------------------------------
# M-estimation
# ---------------------------------------------------------------------------------------
def test_weighted_mean_and_median_match_closed_forms():
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=(200, 3)), rng.exponential(size=200)
    np.testing.assert_allclose(m_estimate(x, w, "mean"), np.average(x, axis=0, weights=w), atol=1e-9)
    # signed weights with a positive sum are allowed for the squared loss (Definition 5)
    ws = w - 0.3
    np.testing.assert_allclose(m_estimate(x, ws, "mean"), ws @ x / ws.sum(), atol=1e-8)
    theta = m_estimate(x, w, "median")
    for j in range(3):
        lo, hi = weighted_median_interval(x[:, j], w)
        assert lo - 1e-9 <= theta[j] <= hi + 1e-9
    # a tie: two points of equal weight; every point of [1, 3] is a minimiser
    t = m_estimate(np.array([1.0, 3.0]), np.array([1.0, 1.0]), "median")[0]
    assert 1.0 <= t <= 3.0
    # custom contrast = the squared loss given as a callable
    custom = CustomContrast(lambda pts, th: ((pts - th) ** 2).sum(axis=1), theta0=np.zeros(3))
    np.testing.assert_allclose(m_estimate(x, w, custom), np.average(x, axis=0, weights=w), atol=1e-6)
    np.testing.assert_allclose(m_estimate(x, w, lambda pts, th: ((pts - th) ** 2).sum(axis=1)),
                               np.average(x, axis=0, weights=w), atol=1e-6)


@pytest.mark.parametrize("intercept,l2", [(False, 0.0), (True, 0.0), (True, 0.05)])
def test_logistic_matches_an_independent_newton_fit(intercept, l2):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 3))
    y = rng.binomial(1, expit(X @ [0.5, -1.0, 0.3] + 0.2))
    w = rng.exponential(size=400)
    theta = m_estimate(np.column_stack([X, y]), w, LogisticContrast(intercept=intercept, l2=l2))
    design = np.column_stack([np.ones(400), X]) if intercept else X
    np.testing.assert_allclose(theta, irls_logistic(design, y, w, l2), atol=1e-6)


def test_m_estimate_refuses_zero_and_negative_weights():
    x = np.column_stack([np.arange(4.0), [0, 1, 0, 1]])
    with pytest.raises(ValueError, match="positive sum"):
        m_estimate(x, np.zeros(4), "logistic")
    with pytest.raises(ValueError, match="must be >= 0 for the logistic contrast"):
        m_estimate(x, np.array([1.0, -0.1, 1.0, 1.0]), "logistic")
    with pytest.raises(ValueError, match="must hold 0/1"):
        m_estimate(np.column_stack([np.arange(4.0), [0, 2, 0, 1]]), np.ones(4), "logistic")
    with pytest.raises(ValueError, match="shape"):
        m_estimate(x, np.ones(3), "mean")
    with pytest.raises(ValueError, match="contrast must be one of"):
        m_estimate(x, np.ones(4), "mode")
    with pytest.raises(TypeError, match="contrast must be"):
        m_estimate(x, np.ones(4), 3)


# ---------------------------------------------------------------------------------------
# Algorithm 1 and the baselines
# ---------------------------------------------------------------------------------------
def test_algorithm1_equals_weights_from_brute_force_then_the_closed_form():
    rng = np.random.default_rng(8)
    P, E = rng.normal(1.0, 1.0, size=(300, 2)), rng.normal(0.0, 0.7, size=(50, 2))
    p01, e01, _ = rescale(P, E)
    counts = np.bincount(brute_nearest(p01, e01), minlength=50)
    np.testing.assert_allclose(hybrid_oracle(P, E, "mean"), counts @ E / counts.sum(), atol=1e-9)
    # with noise: same seed, same Laplace draws reproduced here
    theta, w = algorithm1(P, E, "mean", 2.0, np.random.default_rng(1), return_weights=True)
    z = np.random.default_rng(1).laplace(0.0, 1.0, size=50) * (2.0 / 2.0)
    w_ref = np.maximum((counts + z) / 300, 0.0)
    np.testing.assert_allclose(w, w_ref, atol=1e-12)
    np.testing.assert_allclose(theta, w_ref @ E / w_ref.sum(), atol=1e-9)
    np.testing.assert_allclose(public_only(E, "mean"), E.mean(axis=0), atol=1e-9)
    np.testing.assert_allclose(private_fit(P, "mean"), P.mean(axis=0), atol=1e-9)


def test_algorithm1_all_zero_weights_raise_or_fall_back():
    P, E = np.zeros((2, 1)), np.array([[0.0], [1.0], [2.0]])
    rng = np.random.default_rng(0)
    # epsilon tiny: almost surely some weight is positive, so find a seed where all are truncated
    seed = next(s for s in range(200) if (representation_weights(
        rescale(P, E)[0], rescale(P, E)[1], 1e-3, np.random.default_rng(s)) == 0).all())
    with pytest.raises(ValueError, match="positive sum"):
        algorithm1(P, E, "mean", 1e-3, np.random.default_rng(seed))
    theta = algorithm1(P, E, "mean", 1e-3, np.random.default_rng(seed), on_zero_weights="uniform")
    assert theta[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="on_zero_weights"):
        algorithm1(P, E, "mean", 1.0, rng, on_zero_weights="skip")


def test_hybrid_m_estimator_is_algorithm1_for_scalar_means_and_medians():
    groups = [Group("private", 60, 1.5), Group("public", 25, math.inf)]
    rng = np.random.default_rng(9)
    priv, pub = rng.uniform(0, 1, 60), rng.uniform(0.2, 0.8, 25)
    counts = np.bincount(brute_nearest(priv[:, None], pub[:, None]), minlength=25)
    for contrast in ("mean", "median"):
        est = HybridMEstimator(groups, (0.0, 1.0), contrast)
        assert est.privacy["private"].epsilon == 1.5 and est.privacy["private"].relation == "replace"
        assert math.isinf(est.privacy["public"].epsilon)
        out = est.estimate([np.broadcast_to(priv, (4, 60)), np.broadcast_to(pub, (4, 25))], np.random.default_rng(3))
        z = np.random.default_rng(3).laplace(0.0, 1.0, size=(4, 25)) * (2.0 / 1.5)
        for t in range(4):
            w = np.maximum((counts + z[t]) / 60, 0.0)
            ref = m_estimate(pub, w, contrast)[0]
            if contrast == "mean":
                assert out[t] == pytest.approx(ref, abs=1e-9)
            else:  # the closed form picks the lower weighted median; same objective value
                obj = lambda th: w @ np.abs(pub - th)  # noqa: E731
                assert obj(out[t]) == pytest.approx(obj(ref), abs=1e-9)
                lo, hi = weighted_median_interval(pub, w)
                assert out[t] == pytest.approx(lo)
    # rows with different datasets: per-trial KD-trees give the same as one by one
    est = HybridMEstimator(groups, (0.0, 1.0), "mean")
    data = [rng.uniform(size=(3, 60)), rng.uniform(size=(3, 25))]
    both = est.estimate(data, np.random.default_rng(4))
    z = np.random.default_rng(4).laplace(size=(3, 25)) * (2 / 1.5)
    for t in range(3):
        c = np.bincount(brute_nearest(data[0][t][:, None], data[1][t][:, None]), minlength=25)
        w = np.maximum((c + z[t]) / 60, 0)
        assert both[t] == pytest.approx(w @ data[1][t] / w.sum())
    with pytest.raises(ValueError, match="exactly one private group and one public"):
        HybridMEstimator([Group("a", 5, 1.0), Group("b", 5, 2.0)], (0, 1))
    with pytest.raises(ValueError, match="contrast must be 'mean' or 'median'"):
        HybridMEstimator(groups, (0, 1), "mode")


# ---------------------------------------------------------------------------------------
# distance, prediction error, the criterion's sensitivity
# ---------------------------------------------------------------------------------------
def test_distance_is_the_mean_nearest_distance():
    rng = np.random.default_rng(12)
    P, E = rng.uniform(size=(100, 3)), rng.uniform(size=(20, 3))
    d = np.sqrt(((P[:, None] - E[None]) ** 2).sum(axis=2)).min(axis=1).mean()
    assert distance(P, E) == pytest.approx(d)
    assert distance(P, E[:5]) >= distance(P, E)  # a subset is never closer
    # one search gives the indices of nearest_public and the distances behind distance()
    for method in ("kdtree", "chunked"):
        idx, dmin = nearest_public(P, E, method, return_distance=True)
        np.testing.assert_array_equal(idx, nearest_public(P, E, method))
        assert float(dmin.mean()) == distance(P, E, method)
    with pytest.raises(TypeError, match="return_distance"):
        nearest_public(P, E, return_distance=1)


def test_prediction_error_and_brier_match_direct_computation():
    rng = np.random.default_rng(13)
    X = rng.normal(size=(300, 2))
    y = rng.binomial(1, expit(X @ [0.6, -0.4]))
    thetas = rng.normal(size=(4, 2))
    ref = irls_logistic(X, y, np.ones(300))
    direct = np.sqrt(((expit(thetas @ X.T) - expit(X @ ref)) ** 2).sum(axis=1))
    np.testing.assert_allclose(prediction_error(thetas, X, y), direct, rtol=1e-6)
    assert prediction_error(thetas[0], X, reference=ref) == pytest.approx(direct[0], rel=1e-9)
    np.testing.assert_allclose(brier_criterion(thetas, X, y), ((y - expit(thetas @ X.T)) ** 2).sum(axis=1))
    with pytest.raises(ValueError, match="needs y"):
        prediction_error(thetas, X)


def test_prediction_error_rejects_non_finite_theta_and_reference():
    """A NaN/inf coefficient used to give a silent nan; now a ValueError naming the entry."""
    rng = np.random.default_rng(14)
    X = rng.normal(size=(50, 2))
    y = rng.binomial(1, expit(X @ [0.6, -0.4]))
    ref = irls_logistic(X, y, np.ones(50))
    with pytest.raises(ValueError, match=r"theta must be finite, got theta\[1\] = nan"):
        prediction_error([0.1, np.nan], X, y)
    with pytest.raises(ValueError, match=r"theta must be finite, got theta\[1, 0\] = inf"):
        prediction_error([[0.1, 0.2], [np.inf, 0.0]], X, reference=ref)
    with pytest.raises(ValueError, match=r"reference must be finite, got reference\[0\] = nan"):
        prediction_error([0.1, 0.2], X, reference=[np.nan, 0.0])
    # finite inputs still work (and are unchanged)
    assert np.isfinite(prediction_error([0.1, 0.2], X, reference=ref))


def test_papers_criterion_sensitivity_one_ignores_the_reference_fit():
    """Counterexample to Section 5.1's sensitivity 1: replacing one record moves beta_hat(D) and with it
    every coordinate of h_D.  With a ridge reference the bound 1 + R^2 / (2 lambda sqrt(n)) holds."""
    rng = np.random.default_rng(14)
    n = 100
    x = np.linspace(-1, 1, n)[:, None]
    y = (x[:, 0] > 0).astype(float)
    y[n // 2], y[n // 2 - 1] = 0.0, 1.0  # overlap at the boundary: the MLE exists (beta ~ 65)
    y2 = y.copy()
    y2[0] = 1.0  # replace record 0 by (x_0, 1): the MLE is still finite (beta ~ 9)
    b1, b2 = irls_logistic(x, y, np.ones(n)), irls_logistic(x, y2, np.ones(n))
    assert 50 < b1[0] < 80 and 5 < b2[0] < 15
    theta = b2  # any fixed candidate; this one makes t(D') = 0
    t, t2 = prediction_error(theta, x, y), prediction_error(theta, x, y2)
    assert t2 == pytest.approx(0.0, abs=1e-6)
    assert abs(t - t2) > 1.15, (t, t2)  # the paper's claimed sensitivity 1 is exceeded
    n = 30
    # ridge reference: the proven bound holds on random neighbour pairs (covariates in [-1, 1])
    lam = 0.5
    c = LogisticContrast(l2=lam)
    R = 1.0
    bound = criterion_sensitivity_bound(n, R, lam)
    worst = 0.0
    for _ in range(60):
        X = rng.uniform(-1, 1, size=(n, 1))
        yy = rng.binomial(1, 0.5, n).astype(float)
        th = rng.normal(size=1) * 3
        X2, y2 = X.copy(), yy.copy()
        j = rng.integers(n)
        X2[j], y2[j] = rng.uniform(-1, 1), 1 - yy[j]
        a = prediction_error(th, X, yy, contrast=c)
        b = prediction_error(th, X2, y2, contrast=c)
        worst = max(worst, abs(a - b))
    assert worst <= bound
    # brier: one term in [0, 1] changes
    X = rng.uniform(-1, 1, size=(n, 1))
    yy = rng.binomial(1, 0.5, n).astype(float)
    diffs = []
    for j in range(n):
        X2, y2 = X.copy(), yy.copy()
        X2[j], y2[j] = -X[j], 1 - yy[j]
        diffs.append(abs(brier_criterion(np.array([2.0]), X, yy) - brier_criterion(np.array([2.0]), X2, y2)))
    assert 0 < max(diffs) <= 1.0


# ---------------------------------------------------------------------------------------
# Algorithm 2
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_sets():
    return simulate(300, 120, 2, np.random.default_rng(21))


def test_algorithm2_warns_when_the_criterion_sensitivity_is_not_proven(small_sets):
    D, E = small_sets
    args = (D, E, "logistic", (0.4, 0.1, 0.5), [30, 120])
    with pytest.warns(UserWarning, match="not a proven guarantee"):
        assert algorithm2(*args, np.random.default_rng(2)).sensitivity_proven is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert algorithm2(*args, np.random.default_rng(2), reference_ridge=1.0).sensitivity_proven is True
        assert algorithm2(*args, np.random.default_rng(2), criterion="brier").sensitivity_proven is True


@pytest.mark.filterwarnings("ignore:algorithm2. criterion='paper':UserWarning")
@pytest.mark.parametrize("selection,factor", [("noisy_min", 1), ("curve", 1), ("exponential", 1), ("paper", None)])
def test_algorithm2_budget_is_the_accountants_total(small_sets, selection, factor):
    D, E = small_sets
    sizes = [10, 30, 60, 120]
    eps = (0.4, 0.1, 0.5)
    r = algorithm2(D, E, "logistic", eps, sizes, np.random.default_rng(2), selection=selection)
    k = len(sizes)
    expected = 0.4 + 0.1 + (0.5 if factor else k * 0.5)  # the paper's curve costs k * epsilon_3
    ledger = r.ledger
    assert r.total_epsilon == pytest.approx(expected)
    assert float(ledger["release_epsilon"].sum()) == pytest.approx(expected)
    assert ledger.sizes["release"] == 1 + k + (1 if factor else k)
    # each candidate's weights at epsilon_2 / k
    np.testing.assert_allclose(ledger["release_epsilon"].values[1 : 1 + k, 0], 0.1 / k)
    assert r.chosen_size == sizes[r.chosen_index] and r.subset.size == r.chosen_size
    np.testing.assert_array_equal(r.subset, r.order[: r.chosen_size])
    np.testing.assert_array_equal(r.theta, r.thetas[r.chosen_index])
    assert r.weights.shape == (r.chosen_size,) and (r.weights >= 0).all()
    assert r.sensitivity_proven is False and r.criterion_sensitivity == 1.0
    if selection == "exponential":
        assert r.noisy_criterion is None
    else:
        assert r.chosen_index == int(np.argmin(r.noisy_criterion))
        assert r.criterion_scale == pytest.approx({"noisy_min": 2 / 0.5, "curve": k / 0.5, "paper": 1 / 0.5}[selection])
    # a shared accountant refuses to overspend
    acc = Accountant({"private": (0.9, 0.0)})
    with pytest.raises(BudgetExceededError):
        algorithm2(D, E, "logistic", eps, sizes, np.random.default_rng(2), selection=selection, accountant=acc)
    assert acc.releases == () and acc.spent_epsilon() == {"private": 0.0}  # all or nothing, before reading D


@pytest.mark.filterwarnings("ignore:algorithm2. criterion='paper':UserWarning")
def test_algorithm2_steps_match_an_independent_recomputation(small_sets):
    D, E = small_sets
    sizes = [20, 50, 100]
    r = algorithm2(D, E, "logistic", (0.8, 0.2, 1.0), sizes, np.random.default_rng(5))
    # the same noise, drawn in the documented order: eps1 weights, k candidate weights, criterion noise
    g = np.random.default_rng(5)
    d01, e01, _ = rescale(D, E)
    c1 = np.bincount(brute_nearest(d01, e01), minlength=len(E))
    w1 = (c1 + g.laplace(size=len(E)) * 2 / 0.8) / len(D)
    order = np.argsort(-w1, kind="stable")
    np.testing.assert_array_equal(r.order, order)
    lab = 2
    Xd = np.clip(D[:, :2], E[:, :2].min(0), E[:, :2].max(0))
    ref = irls_logistic(Xd, D[:, lab], np.ones(len(D)))
    t = []
    for i, n_i in enumerate(sizes):
        sub = order[:n_i]
        c = np.bincount(brute_nearest(d01, e01[sub]), minlength=n_i)
        w = np.maximum((c + g.laplace(size=n_i) * 2 / (0.2 / 3)) / len(D), 0)
        np.testing.assert_allclose(r.candidate_weights[i], w, atol=1e-12)
        if w.sum() > 0:
            th = irls_logistic(E[sub, :2], E[sub, lab], w)
            np.testing.assert_allclose(r.thetas[i], th, atol=1e-5)
        t.append(np.sqrt(((expit(Xd @ r.thetas[i]) - expit(Xd @ ref)) ** 2).sum()))
    np.testing.assert_allclose(r.criterion, t, rtol=1e-6)
    noisy = np.array(t) + g.laplace(size=3) * 2 * 1.0 / 1.0
    np.testing.assert_allclose(r.noisy_criterion, noisy, rtol=1e-6)


def test_algorithm2_criterion_noise_scale_by_monte_carlo():
    """noisy - exact criterion, divided by the documented scale, is standard Laplace (variance 2)."""
    D, E = simulate(80, 30, 2, np.random.default_rng(31))
    rng = np.random.default_rng(32)
    draws = []
    for _ in range(120):
        r = algorithm2(D, E, "logistic", (1.0, 1.0, 0.5), [5, 15, 30], rng, selection="curve", criterion="brier")
        draws.append((r.noisy_criterion - r.criterion) / (3 * 1.0 / 0.5))
    z = np.concatenate(draws)
    se = math.sqrt(20 / z.size)
    assert abs((z**2).mean() - 2.0) < Z * se
    assert abs((z**2).mean() - 2.0 / 9) > Z * se  # the paper's scale S / epsilon_3 is k = 3 times smaller


def test_algorithm2_proven_sensitivity_and_custom_criteria(small_sets):
    D, E = small_sets
    r = algorithm2(D, E, "logistic", (0.8, 0.2, 1.0), [20, 60], np.random.default_rng(0), reference_ridge=1.0)
    lo, hi = E[:, :2].min(0), E[:, :2].max(0)
    R2 = float(np.sum(np.maximum(lo**2, hi**2)))
    assert r.sensitivity_proven and r.criterion_sensitivity == pytest.approx(1 + R2 / (2 * 1.0 * math.sqrt(300)))
    r = algorithm2(D, E, "logistic", (0.8, 0.2, 1.0), [20, 60], np.random.default_rng(0), criterion="brier")
    assert r.sensitivity_proven and r.criterion_sensitivity == 1.0
    crit = lambda th, priv: np.abs(th).sum(axis=1)  # noqa: E731
    r = algorithm2(D, E, "logistic", (0.8, 0.2, 1.0), [20, 60], np.random.default_rng(0), criterion=crit,
                   criterion_sensitivity=0.5)
    np.testing.assert_allclose(r.criterion, np.abs(r.thetas).sum(axis=1))
    with pytest.raises(ValueError, match="criterion_sensitivity"):
        algorithm2(D, E, "logistic", (0.8, 0.2, 1.0), [20, 60], np.random.default_rng(0), criterion=crit)


def test_algorithm2_rejects_bad_input(small_sets):
    D, E = small_sets
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="strictly increasing"):
        algorithm2(D, E, "logistic", (1, 1, 1), [30, 20], rng)
    with pytest.raises(ValueError, match=r"subset_sizes must lie in \[1, n_E=120\]"):
        algorithm2(D, E, "logistic", (1, 1, 1), [10, 500], rng)
    with pytest.raises(ValueError, match="epsilons must be"):
        algorithm2(D, E, "logistic", (1, 1), [10], rng)
    with pytest.raises(ValueError, match=r"epsilons\[2\] must be finite"):
        algorithm2(D, E, "logistic", (1, 1, math.inf), [10], rng)
    with pytest.raises(ValueError, match="selection must be one of"):
        algorithm2(D, E, "logistic", (1, 1, 1), [10], rng, selection="best")
    with pytest.raises(ValueError, match="for the logistic contrast"):
        algorithm2(D, E, "mean", (1, 1, 1), [10], rng)


# ---------------------------------------------------------------------------------------
# Lei (2011)
# ---------------------------------------------------------------------------------------
def test_lei_histogram_counts_match_histogramdd_and_noise_is_laplace_two_over_eps():
    rng = np.random.default_rng(15)
    X = rng.uniform(-1, 2, size=(500, 2))
    lo, hi, m = np.array([-1.0, -1.0]), np.array([2.0, 2.0]), 6
    _, centres, counts = lei_m_estimator(X, "mean", math.inf, m, None, lower=lo, upper=hi, return_histogram=True)
    ref, edges = np.histogramdd(X, bins=m, range=list(zip(lo, hi)))
    np.testing.assert_array_equal(counts.reshape(m, m), ref)
    np.testing.assert_allclose(np.unique(centres[:, 0]), (edges[0][:-1] + edges[0][1:]) / 2)
    # with the label column discrete (levels 0, 1) for the logistic contrast; out-of-box values truncated
    y = rng.binomial(1, 0.4, 500)
    Xo = X * 1.2
    _, _, counts = lei_m_estimator(np.column_stack([Xo, y]), "logistic", math.inf, m, None,
                                   lower=np.r_[lo, 0], upper=np.r_[hi, 1], return_histogram=True)
    ref, _ = np.histogramdd(np.column_stack([np.clip(Xo, lo, hi), y]), bins=[m, m, 2], range=[(-1, 2), (-1, 2), (-0.5, 1.5)])
    np.testing.assert_array_equal(counts.reshape(m, m, 2), ref)
    # noise: the same draws reproduced here, scale 2 / epsilon, truncated at 0
    theta, _, noisy = lei_m_estimator(X, "mean", 0.8, m, np.random.default_rng(4), lower=lo, upper=hi, return_histogram=True)
    ref, _ = np.histogramdd(X, bins=m, range=list(zip(lo, hi)))
    z = np.random.default_rng(4).laplace(size=m * m) * 2 / 0.8
    np.testing.assert_allclose(noisy, np.maximum(ref.ravel() + z, 0))
    ctr = (np.arange(m) + 0.5) / m * 3 - 1
    grid = np.column_stack([np.repeat(ctr, m), np.tile(ctr, m)])
    np.testing.assert_allclose(theta, noisy @ grid / noisy.sum(), atol=1e-8)
    with pytest.raises(ValueError, match="infeasible"):
        lei_m_estimator(rng.uniform(size=(10, 100)), "mean", 1.0, 10, rng)
    with pytest.raises(ValueError, match="lower <= upper"):
        lei_m_estimator(X, "mean", 1.0, 4, rng, lower=[1, 1], upper=[0, 0])


# ---------------------------------------------------------------------------------------
# CSV loader
# ---------------------------------------------------------------------------------------
def test_load_hybrid_csv_feeds_the_pipeline(tmp_path):
    pub = tmp_path / "public.csv"
    priv = tmp_path / "private.csv"
    pub.write_text("age,sex,pain,mi\n50,F,1,yes\n61,M,0,no\n50,F,1,yes\n70,M,1,yes\n45,F,0,no\n")
    priv.write_text("mi,pain,sex,age,site\nno,0,M,55,a\nyes,1,X,80,b\nyes,1,F,47,c\n")
    data = load_hybrid_csv(priv, pub, label="mi", categorical=["sex", "pain"])
    assert data.columns == ("age", "sex", "pain", "mi")
    assert data.categorical == (1, 2) and data.levels["sex"] == ("F", "M")
    np.testing.assert_array_equal(data.private, [[55, 1, 0, 0], [80, -1, 1, 1], [47, 0, 1, 1]])
    assert data.public_all.shape == (5, 4) and data.public.shape == (4, 4)  # one duplicate removed
    np.testing.assert_array_equal(data.public[:, 0], [50, 61, 70, 45])  # first occurrences, file order
    p01, e01, _ = rescale(data.private, data.public, data.categorical)
    assert p01.shape == (3, 1 + 2 + 2 + 1)
    theta = algorithm1(data.private, data.public, LogisticContrast(l2=0.1), math.inf, None, categorical=data.categorical)
    assert theta.shape == (3,)
    bad = tmp_path / "bad.csv"
    bad.write_text("age,sex,pain,mi\nold,F,1,yes\n")
    with pytest.raises(ValueError, match="column 'age' row 2 is not a number"):
        load_hybrid_csv(bad, pub, label="mi", categorical=["sex", "pain"])
    with pytest.raises(ValueError, match="lacks column"):
        load_hybrid_csv(priv, pub, label="mi", columns=["age", "weight"])
    with pytest.raises(FileNotFoundError, match="private_csv file not found"):
        load_hybrid_csv(tmp_path / "none.csv", pub)
    with pytest.raises(TypeError, match="public_csv must be a path, got int"):
        load_hybrid_csv(priv, 3)
