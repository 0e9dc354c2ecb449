"""Hybrid DP K-means (Avent et al., Appendix E): building blocks against independent computations."""

import math

import numpy as np
import pytest
from scipy import stats

from hybridpriv import kmeans as km
from hybridpriv.accounting import split_budget


def blobs(n_per, centres, sigma, seed, bounds=(0.0, 1.0)):
    rng = np.random.default_rng(seed)
    c = np.asarray(centres, dtype=float)
    x = c[:, None, :] + sigma * rng.standard_normal((len(c), n_per, c.shape[1]))
    return np.clip(x.reshape(-1, c.shape[1]), *bounds)


def lloyd(x, init, iterations):
    """Lloyd's algorithm written independently (broadcasting, no SciPy); empty clusters keep their centre."""
    c = np.array(init, dtype=float)
    history = [c.copy()]
    for _ in range(iterations):
        d2 = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1)
        lab = d2.argmin(1)
        new = c.copy()
        for j in range(len(c)):
            if (lab == j).any():
                new[j] = x[lab == j].mean(0)
        c = new
        history.append(c.copy())
    return np.array(history)


X = blobs(300, [[0.2, 0.2], [0.8, 0.3], [0.5, 0.8]], 0.08, seed=1)
INIT = np.array([[0.1, 0.9], [0.9, 0.9], [0.5, 0.1], [0.05, 0.05]])  # 4 centres: one may go empty


# -- exact limits ------------------------------------------------------------------------------
def test_tcm_with_infinite_epsilon_is_lloyd():
    res = km.tcm_kmeans(X, 4, math.inf, 6, (0, 1), np.random.default_rng(0), init=INIT)
    np.testing.assert_allclose(res.history, lloyd(X, INIT, 6), atol=1e-12)
    assert res.scales == {"b_T": 0.0, "b_L": 0.0}


def test_lm_with_infinite_epsilon_is_lloyd_on_all_users():
    res = km.lm_kmeans(X, 4, math.inf, 5, (0, 1), np.random.default_rng(0), init=INIT)
    np.testing.assert_allclose(res.history, lloyd(X, INIT, 5), atol=1e-12)


def test_shifted_bounds_give_the_same_clustering():
    # the algorithms work on x - lower in [0, m]^d: with epsilon = inf shifting the data and the
    # bounds shifts the centres and nothing else
    res = km.tcm_kmeans(X * 5 - 2, 4, math.inf, 4, (-2, 3), np.random.default_rng(0), init=INIT * 5 - 2)
    np.testing.assert_allclose(res.history, lloyd(X, INIT, 4) * 5 - 2, atol=1e-10)


@pytest.mark.parametrize("pwh_noise", km.PWH_NOISE)
def test_hybrid_first_iteration_is_the_pwh_mix(pwh_noise):
    # epsilon = inf: counts and means are exact, so line 15 can be recomputed by hand
    rng = np.random.default_rng(3)
    xt, xl = X[::10], np.delete(X, np.s_[::10], axis=0)
    tau, m, d = 3, 1.0, 2
    init = INIT[:3]
    res = km.hybrid_kmeans(xt, xl, 3, math.inf, tau, (0, 1), rng, init=init, pwh_noise=pwh_noise)
    lab_t = ((xt[:, None] - init[None]) ** 2).sum(-1).argmin(1)
    lab_l = ((xl[:, None] - init[None]) ** 2).sum(-1).argmin(1)
    b_t, b_l = (m * d + 1) * tau, m * d * (tau + 1)  # line 2 with epsilon = 1 (w only sees the ratio)
    for j in range(3):
        nt, nl = (lab_t == j).sum(), (lab_l == j).sum()
        assert nt >= 1 and nl >= 1
        s_t2 = 2 * b_t**2 / (nt**2 if pwh_noise == "mean" else 1)
        w = 2 * b_l**2 / (2 * b_l**2 + nl * s_t2)  # Definition 5.3 with n = nt + nl, (1 - c) n = nl
        expect = w * xt[lab_t == j].mean(0) + (1 - w) * xl[lab_l == j].mean(0)
        assert res.weights[0, j] == pytest.approx(w, rel=1e-12)
        np.testing.assert_allclose(res.history[1, j], expect, atol=1e-12)


# -- WCSS and the nearest-centre search --------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3, 70])  # 70 centres: the cKDTree path
def test_wcss_and_nearest_centre_against_brute_force(k):
    rng = np.random.default_rng(k)
    x, c = rng.random((200, 3)), rng.random((k, 3))
    best = [min(sum((xi[j] - cj[j]) ** 2 for j in range(3)) for cj in c) for xi in x]
    assert km.wcss(x, c) == pytest.approx(sum(best), rel=1e-12)
    idx, d2 = km.nearest_centre(x, c)
    np.testing.assert_allclose(d2, best, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(((x - c[idx]) ** 2).sum(1), best, rtol=1e-9, atol=1e-15)


def test_nearest_centre_ties_go_to_the_lower_index():
    idx, _ = km.nearest_centre(np.array([[0.5, 0.5]]), np.array([[0.0, 0.5], [1.0, 0.5], [0.5, 0.0]]))
    assert idx.tolist() == [0]


# -- randomized response (line 7) --------------------------------------------------------------
@pytest.mark.parametrize("k,eps", [(4, 7 / 6), (5, 0.3), (2, 3.0)])
def test_randomized_response_frequencies_chi_square(k, eps):
    n = 60_000
    true = np.arange(n) % k
    rep = km.randomized_response(true, k, eps, np.random.default_rng(11))
    keep = (math.exp(eps) - 1) / (k + math.exp(eps) - 1)  # line 7, as printed
    q, r = keep + (1 - keep) / k, (1 - keep) / k  # independent of rr_probabilities
    assert km.rr_probabilities(eps, k) == pytest.approx((q, r), rel=1e-12)
    assert math.log(q / r) == pytest.approx(eps, rel=1e-12)  # the local epsilon of one report
    table = np.zeros((k, k))
    np.add.at(table, (true, rep), 1)
    expected = np.full((k, k), r) + np.eye(k) * (q - r)
    expected *= (n / k)
    chi2 = ((table - expected) ** 2 / expected).sum()
    p = stats.chi2.sf(chi2, df=k * (k - 1))  # k rows, each with k - 1 free cells
    assert p > 1e-3, (chi2, p)


def test_randomized_response_edge_cases():
    lab = np.array([0, 1, 2, 1])
    assert km.randomized_response(lab, 3, math.inf, np.random.default_rng(0)).tolist() == lab.tolist()
    assert km.rr_probabilities(1e6, 3) == (1.0, 0.0)


def test_debiased_counts_and_sums_are_unbiased():
    # Monte Carlo over 4000 independent report rounds of 300 users; truth = counts/sums by true label
    k, eps, reps = 4, 0.8, 4000
    rng = np.random.default_rng(5)
    true = rng.integers(0, k, 300)
    vals = rng.random((300, 2))
    rep = km.randomized_response(np.broadcast_to(true, (reps, 300)), k, eps, rng)
    onehot = rep[..., None] == np.arange(k)  # (reps, n, K)
    counts = onehot.sum(1).astype(float)
    sums = np.einsum("rnk,nd->rkd", onehot, vals)
    n_hat = km.debias_counts(counts, 300, eps, k)
    s_hat = km.debias_sums(sums, vals.sum(0), eps, k)
    n_true = np.bincount(true, minlength=k)
    s_true = np.stack([vals[true == j].sum(0) for j in range(k)])
    for est, truth in ((n_hat, n_true), (s_hat, s_true)):
        mean, se = est.mean(0), est.std(0, ddof=1) / np.sqrt(reps)
        assert (np.abs(mean - truth) < 4 * se).all(), (mean, truth, se)
    # and the raw counts the pseudocode uses are biased (the test can fail)
    raw = counts.mean(0)
    assert (np.abs(raw - n_true) > 10 * counts.std(0).max() / np.sqrt(reps)).any()


# -- noise scales (line 2): Monte Carlo on one cluster, one iteration ---------------------------
def test_lm_noise_scale_monte_carlo():
    # K = 1, tau = 1: the LM centre is mean(x) + mean of n Laplace(b_L), b_L = m d (tau+1)/eps = 2
    x = np.full((1000, 1), 0.5)
    c = np.array([
        km.lm_kmeans(x, 1, 1.0, 1, (0, 1), np.random.default_rng(s), init=[[0.1]]).centres[0, 0]
        for s in range(1500)
    ])
    var_theory = 2 * 2.0**2 / 1000
    var, se = c.var(ddof=1), np.sqrt((np.mean((c - c.mean()) ** 4) - c.var() ** 2) / c.size)
    assert abs(var - var_theory) < 4 * se, (var, var_theory, se)
    assert abs(c.mean() - 0.5) < 4 * c.std() / np.sqrt(c.size)


def test_tcm_noise_scale_monte_carlo():
    # K = 1, tau = 1: centre = (S + Y2)/(N + Y1), Y ~ Lap(b_T), b_T = (m d + 1) tau / eps = 2;
    # delta method: Var ~= 2 b^2 (1 + mu^2) / N^2 (error O(b / N) = 0.2%)
    n, mu = 1000, 0.5
    x = np.full((n, 1), mu)
    c = np.array([
        km.tcm_kmeans(x, 1, 1.0, 1, (0, 1), np.random.default_rng(s), init=[[0.1]]).centres[0, 0]
        for s in range(1500)
    ])
    var_theory = 2 * 2.0**2 * (1 + mu**2) / n**2
    var, se = c.var(ddof=1), np.sqrt((np.mean((c - c.mean()) ** 4) - c.var() ** 2) / c.size)
    assert abs(var - var_theory) < 4 * se + 0.01 * var_theory, (var, var_theory, se)


# -- budget accounting ----------------------------------------------------------------------------
@pytest.mark.parametrize("tau,d,bounds", [(1, 2, (0, 1)), (3, 1, (0, 2)), (7, 3, (-1, 1))])
def test_budget_is_split_as_the_pseudocode_and_sums_to_epsilon(tau, d, bounds):
    eps, m = 2.5, bounds[1] - bounds[0]
    rng = np.random.default_rng(0)
    x = bounds[0] + m * rng.random((60, d))
    res = km.hybrid_kmeans(x[:20], x[20:], 3, eps, tau, bounds, rng)
    assert res.spent_epsilon["tcm"] == pytest.approx(eps, rel=1e-12)
    assert res.spent_epsilon["lm"] == pytest.approx(eps, rel=1e-12)
    assert res.scales["b_T"] == pytest.approx((m * d + 1) * tau / eps)
    assert res.scales["b_L"] == pytest.approx(m * d * (tau + 1) / eps)
    ledger = res.accountant.releases
    tcm = [r.epsilon["tcm"] for r in ledger if "tcm" in r.epsilon]
    lm = [r.epsilon["lm"] for r in ledger if "lm" in r.epsilon]
    # independent split: per iteration, counts and sums in the ratio 1 : m d (lines 9-10);
    # LM: tau + 1 equal parts (line 4 once, line 7 every iteration)
    np.testing.assert_allclose(tcm, split_budget(eps, [1.0, m * d] * tau), rtol=1e-12)
    np.testing.assert_allclose(lm, split_budget(eps, [1.0] * (tau + 1)), rtol=1e-12)
    assert ledger[0].label.startswith("line 4")
    assert km.tcm_kmeans(x, 3, eps, tau, bounds, rng).spent_epsilon == pytest.approx({"tcm": eps})
    assert km.lm_kmeans(x, 3, eps, tau, bounds, rng).spent_epsilon == pytest.approx({"lm": eps})
    assert res.guarantee["tcm"].epsilon == res.guarantee["lm"].epsilon == eps


@pytest.mark.parametrize("eps", [5000.0, 1e300])
def test_large_epsilon_is_accounted_in_log_space(eps):
    """epsilon/(tau+1) > ~700 made r = 1/(K + e^eps' - 1) underflow to 0 and budget_parts divide by it
    (ZeroDivisionError already at epsilon = 5000 with tau = 2).  log(q/r) = eps' exactly."""
    tau, d, m = 2, 2, 1.0
    parts = km.budget_parts(eps, tau, m, d, 3)
    assert parts["rr"] == pytest.approx(eps / (tau + 1), rel=1e-12)
    assert parts["count"] == pytest.approx(eps / ((m * d + 1) * tau), rel=1e-12)
    rng = np.random.default_rng(3)
    res = km.hybrid_kmeans(X[:90], X[90:], 3, eps, tau, (0, 1), rng)
    assert res.spent_epsilon["tcm"] == pytest.approx(eps, rel=1e-12)
    assert res.spent_epsilon["lm"] == pytest.approx(eps, rel=1e-12)
    lm = [r.epsilon["lm"] for r in res.accountant.releases if "lm" in r.epsilon]
    np.testing.assert_allclose(lm, split_budget(eps, [1.0] * (tau + 1)), rtol=1e-12)
    assert np.isfinite(res.history).all() and ((res.history >= 0) & (res.history <= 1)).all()
    # at a moderate epsilon the log-space value agrees with the probabilities themselves
    q, r = km.rr_probabilities(2.5 / 4, 3)
    assert km.budget_parts(2.5, 3, 1.0, 2, 3)["rr"] == pytest.approx(math.log(q / r), rel=1e-12)


@pytest.mark.parametrize(
    "eps,m,match",
    [
        (1e-308, 1.0, r"epsilon=1e-308 with m=1 \(data range\), tau=2, d=2 gives noise scales b_T=inf"),
        (1e300, 1e-300, r"epsilon=1e\+300 with m=1e-300 .* b_L=0"),
        (1e-300, 1e10, r"epsilon=1e-300 with m=1e\+10 .* b_T=inf"),
    ],
)
def test_extreme_epsilon_or_range_raises(eps, m, match):
    with pytest.raises(ValueError, match=match):
        km.noise_scales(eps, 2, m, 2)
    with pytest.raises(ValueError, match=match):
        km.budget_parts(eps, 2, m, 2)
    with pytest.raises(ValueError, match=match):
        km.hybrid_kmeans(X[:90] * m, X[90:] * m, 3, eps, 2, (0, m), np.random.default_rng(0))
    assert km.noise_scales(math.inf, 2, m, 2) == (0.0, 0.0)  # public: no noise, no error


# -- properties ------------------------------------------------------------------------------------
def test_same_seed_same_result_and_centres_stay_in_bounds():
    xt, xl = km.split_users(X, 0.1, np.random.default_rng(2))
    a = km.hybrid_kmeans(xt, xl, 4, 0.5, 5, (0, 1), np.random.default_rng(9))
    b = km.hybrid_kmeans(xt, xl, 4, 0.5, 5, (0, 1), np.random.default_rng(9))
    c = km.hybrid_kmeans(xt, xl, 4, 0.5, 5, (0, 1), np.random.default_rng(10))
    np.testing.assert_array_equal(a.history, b.history)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert not np.array_equal(a.centres, c.centres)
    # heavy noise (epsilon = 0.5 over 5 iterations): centres still inside the square
    assert ((a.history >= 0) & (a.history <= 1)).all()
    assert ((a.weights >= 0) & (a.weights <= 1)).all()


def test_split_users():
    xt, xl = km.split_users(X, 0.1, np.random.default_rng(0))
    assert len(xt) == 90 and len(xl) == 810
    np.testing.assert_array_equal(np.sort(np.concatenate([xt, xl]), axis=0), np.sort(X, axis=0))


def test_debiased_lm_is_closer_than_the_pseudocode_lm():
    # with strong randomized response the raw LM means are pulled towards the other clusters;
    # debiasing removes the pull (one iteration from the true centres, 3600 users)
    centres = [[0.2, 0.2], [0.8, 0.2], [0.5, 0.8]]
    x = blobs(1200, centres, 0.03, seed=4)
    raw = km.lm_kmeans(x, 3, 2.0, 1, (0, 1), np.random.default_rng(1), init=centres)
    deb = km.lm_kmeans(x, 3, 2.0, 1, (0, 1), np.random.default_rng(1), init=centres, debias=True)
    assert km.wcss(x, deb.centres) < km.wcss(x, raw.centres)


# -- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"k": 0}, ValueError, "k must be an integer >= 1, got 0"),
        ({"k": 2.5}, TypeError, "k must be an integer"),
        ({"epsilon": 0}, ValueError, "epsilon must be > 0, got 0"),
        ({"epsilon": -1.0}, ValueError, "epsilon must be > 0"),
        ({"tau": 0}, ValueError, "tau must be an integer >= 1, got 0"),
        ({"tau": True}, TypeError, "tau must be an integer"),
        ({"init": [[0.5, 0.5]]}, ValueError, "init must hold k=2"),
        ({"init": [[0.5, 0.5], [1.5, 0.5]]}, ValueError, "outside bounds"),
        ({"pwh_noise": "sum"}, ValueError, "pwh_noise must be one of"),
        ({"debias": 1}, TypeError, "debias must be True or False"),
        ({"bounds": (1, 0)}, ValueError, "lower < upper"),
    ],
)
def test_bad_input(kwargs, exc, match):
    args = {"k": 2, "epsilon": 1.0, "tau": 2, "bounds": (0, 1), "rng": np.random.default_rng(0)}
    with pytest.raises(exc, match=match):
        km.hybrid_kmeans(X[:10], X[10:], **{**args, **kwargs})


def test_bad_data():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="outside bounds"):
        km.tcm_kmeans(X + 0.5, 2, 1.0, 1, (0, 1), rng)
    with pytest.raises(ValueError, match="NaN"):
        km.lm_kmeans(np.array([[0.1, np.nan]]), 2, 1.0, 1, (0, 1), rng)
    with pytest.raises(ValueError, match=r"shape \(n, d\)"):
        km.lm_kmeans(X[:, 0], 2, 1.0, 1, (0, 1), rng)
    with pytest.raises(ValueError, match="at least one point"):
        km.tcm_kmeans(np.zeros((0, 2)), 2, 1.0, 1, (0, 1), rng)
    with pytest.raises(ValueError, match="2 coordinate"):
        km.hybrid_kmeans(X, np.zeros((5, 3)), 2, 1.0, 1, (0, 1), rng)
    with pytest.raises(TypeError, match="numeric"):
        km.wcss([["a", "b"]], [[0.0, 0.0]])
    with pytest.raises(TypeError, match="Generator"):
        km.tcm_kmeans(X, 2, 1.0, 1, (0, 1), 0)
    for c in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="c .* must be in \\(0, 1\\)"):
            km.split_users(X, c, rng)
    with pytest.raises(ValueError, match="both groups need at least one user"):
        km.split_users(X[:10], 0.01, rng)
    with pytest.raises(ValueError, match="labels must lie in 0..2"):
        km.randomized_response(np.array([0, 3]), 3, 1.0, rng)
    with pytest.raises(ValueError, match="m \\(data range\\)"):
        km.noise_scales(1.0, 2, 0.0, 2)


# -- privacy audit of the local randomizers (hybridpriv.testing.audit) ------------------------------
def test_audit_of_the_local_randomizers():
    from hybridpriv.testing import audit

    k, eps_rr = 4, 7 / 6  # line 7 with epsilon = 7, tau = 5

    def rr(label, rng, size):
        return km.randomized_response(np.full(size, label), k, eps_rr, rng)

    ok = audit(rr, (0, 2), epsilon=eps_rr, samples=40_000, seed=1)
    assert ok.verdict == "pass"
    assert ok.epsilon_lower_bound > 0.8 * eps_rr  # the audit sees most of the claimed loss (it has power)
    assert audit(rr, (0, 2), epsilon=0.7 * eps_rr, samples=40_000, seed=1).verdict == "violation"

    # line 4: one coordinate of x + Lap^d(b_L); its share of the report's budget is eps/(tau+1) / d
    tau, d, eps = 5, 2, 7.0
    _, b_l = km.noise_scales(eps, tau, 1.0, d)

    def report(x, rng, size):
        return km.laplace(np.full(size, x), b_l, rng)

    per_coordinate = 1.0 / b_l  # sensitivity 1 (the unit interval) per coordinate
    assert per_coordinate * d == pytest.approx(eps / (tau + 1))
    assert audit(report, (0.0, 1.0), epsilon=per_coordinate, samples=40_000, seed=2).verdict == "pass"
