"""hybridpriv.noise against independent computations (exact probabilities, numerical
integration of the privacy profile, chi-square and variance confidence intervals)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from hybridpriv.core.privacy import Bounds
from hybridpriv.noise import (
    check_rng,
    exponential_mechanism,
    gaussian,
    gaussian_sigma,
    interval_exponential_mechanism,
    laplace,
    laplace_sum,
    randomized_response,
    rr_debias_counts,
    rr_debias_sums,
    rr_probabilities,
    sample_log_weights,
    smith_quantile,
)

ROOT_SEED = 0x3EC_4A


def make_rng(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([ROOT_SEED, key]))


def assert_variance_matches(samples: np.ndarray, exact: float, z: float = 4.0) -> None:
    """|S^2 - exact| < z * SE, SE = sqrt((m4 - S^4)/N) (kurtosis-aware delta method)."""
    x = np.ravel(samples)
    c = x - x.mean()
    s2 = float(np.sum(c**2) / (x.size - 1))
    se = math.sqrt(max(float(np.mean(c**4)) - s2**2, 0.0) / x.size)
    assert abs(s2 - exact) < z * se, f"MC variance {s2:.6g} vs exact {exact:.6g}, {z}*SE={z * se:.3g}"


def assert_frequencies(indices: np.ndarray, probs: np.ndarray, min_p: float = 1e-3) -> None:
    """Chi-square goodness of fit of sampled indices against exact probabilities (p > min_p).

    Outcomes of probability 0 must never occur; they are left out of the chi-square.
    """
    probs = np.asarray(probs, dtype=float)
    counts = np.bincount(np.ravel(indices), minlength=probs.size)
    assert counts.size == probs.size, f"index out of range: {counts.size} > {probs.size}"
    zero = probs == 0
    assert counts[zero].sum() == 0, f"impossible outcomes occurred: {np.flatnonzero(zero & (counts > 0))}"
    obs = counts[~zero]
    exp = probs[~zero] / probs[~zero].sum() * obs.sum()
    p = stats.chisquare(obs, exp).pvalue
    assert p > min_p, f"chi-square p={p:.3g}; observed {obs.tolist()}, expected {np.round(exp, 1).tolist()}"


def chisquare_p(indices: np.ndarray, probs: np.ndarray) -> float:
    counts = np.bincount(np.ravel(indices), minlength=len(probs))
    return float(stats.chisquare(counts, np.asarray(probs) / np.sum(probs) * counts.sum()).pvalue)


# --------------------------------------------------------------------------------------
# Laplace and Gaussian
# --------------------------------------------------------------------------------------


def test_laplace_variance_is_two_b_squared():
    rng = make_rng(1)
    b = 1.7
    out = laplace(np.full(200000, 3.0), b, rng)
    assert_variance_matches(out, 2 * b * b)
    se = math.sqrt(2 * b * b / out.size)
    assert abs(out.mean() - 3.0) < 4 * se


@pytest.mark.parametrize("count", [1, 3, 40])
def test_laplace_sum_is_the_sum_of_count_laplace_draws(count):
    """One draw per entry against ``count`` Laplace draws summed (brute force): two-sample KS, the variance
    ``2 count b^2`` within 4 SE (a 5% bias is over 10 SE at 200,000 draws) and the fourth moment
    (excess kurtosis ``3 / count``) within 4 SE of its own estimate."""
    b, n = 0.7, 200_000
    fast = laplace_sum(np.full(n, 5.0), b, count, make_rng(60 + count)) - 5.0
    brute = make_rng(70 + count).laplace(0.0, b, size=(n, count)).sum(axis=1)
    assert stats.ks_2samp(fast, brute).pvalue > 1e-3
    var = 2.0 * count * b**2
    assert_variance_matches(fast, var)
    assert abs(fast.mean()) < 4.0 * math.sqrt(var / n)
    m4 = fast**4
    exact_m4 = var**2 * (3.0 + 3.0 / count)
    assert abs(m4.mean() - exact_m4) < 4.0 * m4.std(ddof=1) / math.sqrt(n)


def test_laplace_sum_edge_cases_and_bad_input():
    rng = make_rng(80)
    values = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(laplace_sum(values, 1.0, 0, rng), values)  # nothing summed
    assert np.array_equal(laplace_sum(values, 0.0, 9, rng), values)  # a public group's scale 0
    out = laplace_sum(values, np.array([0.0, 1.0, 2.0]), 4, rng)  # scale broadcasts as in laplace
    assert out.shape == (2, 3) and np.array_equal(out[:, 0], values[:, 0]) and (out[:, 1:] != values[:, 1:]).all()
    for bad in (-1, 2.5, True, "3", None):
        with pytest.raises(ValueError, match=r"count must be an integer >= 0.*got " + repr(bad).replace(".", r"\.")):
            laplace_sum(values, 1.0, bad, rng)
    with pytest.raises(ValueError, match="scale must be finite and >= 0"):
        laplace_sum(values, -1.0, 3, rng)
    with pytest.raises(TypeError):
        laplace_sum(values, 1.0, 3, np.random.RandomState(0))


def test_laplace_broadcast_zero_scale_and_bad_scale():
    rng = make_rng(2)
    values = np.zeros((50000, 3))
    out = laplace(values, np.array([0.0, 1.0, 4.0]), rng)
    assert out.shape == (50000, 3)
    assert (out[:, 0] == 0.0).all()  # scale 0 (public) adds nothing
    assert_variance_matches(out[:, 2], 2 * 16.0)
    with pytest.raises(ValueError, match=r"scale must be finite and >= 0, got -1"):
        laplace(1.0, -1.0, rng)
    with pytest.raises(ValueError, match=r"scale must be finite and >= 0, got nan"):
        laplace(1.0, float("nan"), rng)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator.*got RandomState"):
        laplace(1.0, 1.0, np.random.RandomState(0))


def _hockey_stick_delta(sigma: float, eps: float, sens: float) -> float:
    """delta(eps) of N(0, s^2) vs N(sens, s^2) by numerical integration of the definition
    integral max(0, p(x) - e^eps q(x)) dx (independent of the closed form)."""

    def integrand(x: float) -> float:
        return max(0.0, stats.norm.pdf(x, 0.0, sigma) - math.exp(eps) * stats.norm.pdf(x, sens, sigma))

    lo, hi = -40 * sigma - sens, 40 * sigma + sens
    val, _ = integrate.quad(integrand, lo, hi, points=[0.0, sens / 2, sens], limit=400, epsabs=1e-14, epsrel=1e-10)
    return val


@pytest.mark.parametrize("eps, delta, sens", [(0.1, 1e-5, 1.0), (0.5, 1e-6, 2.0), (0.9, 1e-3, 0.5), (3.0, 1e-5, 1.0)])
def test_gaussian_sigma_analytic_satisfies_balle_wang_and_is_tight(eps, delta, sens):
    s = gaussian_sigma(eps, delta, sens)
    # Balle & Wang (2018) Theorem 8, written out here with scipy.stats
    bw = stats.norm.cdf(sens / (2 * s) - eps * s / sens) - math.exp(eps) * stats.norm.cdf(-sens / (2 * s) - eps * s / sens)
    assert bw <= delta * (1 + 1e-6)
    # independent: the privacy profile by numerical integration
    assert _hockey_stick_delta(s, eps, sens) <= delta * (1 + 1e-4)
    # tight: 1 % less noise violates the guarantee
    assert _hockey_stick_delta(0.99 * s, eps, sens) > delta
    if eps < 1:
        classic = sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
        assert gaussian_sigma(eps, delta, sens, method="classic") == pytest.approx(classic, rel=1e-12)
        assert s < classic


def test_gaussian_sigma_bad_input():
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got 0"):
        gaussian_sigma(0, 1e-5, 1.0)
    with pytest.raises(ValueError, match=r"epsilon must be finite, got inf"):
        gaussian_sigma(math.inf, 1e-5, 1.0)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\), got 0"):
        gaussian_sigma(1.0, 0, 1.0)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\), got 1.5"):
        gaussian_sigma(1.0, 1.5, 1.0)
    with pytest.raises(ValueError, match=r"sensitivity must be > 0, got -2"):
        gaussian_sigma(1.0, 1e-5, -2)
    with pytest.raises(ValueError, match=r"classic Gaussian calibration needs epsilon < 1, got 2"):
        gaussian_sigma(2, 1e-5, 1.0, method="classic")
    with pytest.raises(ValueError, match=r"method must be 'analytic' or 'classic', got 'exact'"):
        gaussian_sigma(0.5, 1e-5, 1.0, method="exact")


def test_gaussian_noise_variance():
    rng = make_rng(3)
    out = gaussian(np.zeros(100000), 2.5, rng)
    assert_variance_matches(out, 6.25)
    with pytest.raises(ValueError, match=r"sigma must be finite and >= 0, got -1"):
        gaussian(0.0, -1.0, rng)


# --------------------------------------------------------------------------------------
# exponential mechanism
# --------------------------------------------------------------------------------------


def softmax_probs(scores, eps, sens, base=None):
    """exp(eps s / (2 sens)) * base, normalised -- computed by subtracting the max by hand."""
    z = [eps * s / (2 * sens) for s in scores]
    top = max(z)
    w = [math.exp(v - top) * (1.0 if base is None else b) for v, b in zip(z, base or [1.0] * len(z))]
    tot = sum(w)
    return np.array([v / tot for v in w])


@pytest.mark.parametrize("eps, sens", [(1.0, 1.0), (0.3, 2.0), (4.0, 0.5)])
def test_exponential_mechanism_frequencies(eps, sens):
    scores = np.array([0.0, 1.0, 2.0, 2.0, 5.0, -3.0])
    rng = make_rng(10)
    trials = 30000
    idx = exponential_mechanism(np.broadcast_to(scores, (trials, scores.size)), eps, sens, rng)
    assert idx.shape == (trials,)
    probs = softmax_probs(scores, eps, sens)
    assert_frequencies(idx, probs)
    # power: forgetting the factor 1/2 in the exponent is rejected by the same test
    if eps == 1.0:
        assert chisquare_p(idx, softmax_probs(scores, 2 * eps, sens)) < 1e-6


def test_exponential_mechanism_repeated_utilities_equal_frequencies():
    scores = np.array([3.0, 3.0, 3.0, 0.0])
    rng = make_rng(11)
    idx = exponential_mechanism(np.broadcast_to(scores, (30000, 4)), 2.0, 1.0, rng)
    assert_frequencies(idx, softmax_probs(scores, 2.0, 1.0))


def test_exponential_mechanism_huge_scores_no_underflow():
    rng = make_rng(12)
    # naive exp(eps * 1e6 / 2) overflows; only differences matter
    scores = np.array([1e6, 1e6 + 1.0, 1e6 + 2.0])
    idx = exponential_mechanism(np.broadcast_to(scores, (30000, 3)), 1.0, 1.0, rng)
    assert_frequencies(idx, softmax_probs([0.0, 1.0, 2.0], 1.0, 1.0))
    # large epsilon: the argmax, always
    scores = np.array([1e6 - 1.0, 1e6, 2e5, -1e6])
    idx = exponential_mechanism(np.broadcast_to(scores, (5000, 4)), 80.0, 1.0, rng)
    assert (idx == 1).all()
    # scalar row (no trial axis) returns a 0-d index
    assert int(exponential_mechanism(scores, 80.0, 1.0, rng)) == 1


def test_exponential_mechanism_base_measure_and_infinite_epsilon():
    rng = make_rng(13)
    idx = exponential_mechanism(np.zeros((30000, 3)), 1.0, 1.0, rng, log_base_measure=np.log([1.0, 2.0, 3.0]))
    assert_frequencies(idx, np.array([1.0, 2.0, 3.0]) / 6.0)
    # epsilon = inf: uniform over the maximisers only
    scores = np.array([1.0, 4.0, 4.0, 2.0, 4.0])
    idx = exponential_mechanism(np.broadcast_to(scores, (30000, 5)), math.inf, 1.0, rng)
    assert_frequencies(idx, np.array([0, 1, 1, 0, 1]) / 3.0)


def test_exponential_mechanism_bad_input():
    rng = make_rng(14)
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got 0"):
        exponential_mechanism(np.zeros(3), 0, 1.0, rng)
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got nan"):
        exponential_mechanism(np.zeros(3), float("nan"), 1.0, rng)
    with pytest.raises(ValueError, match=r"sensitivity must be > 0, got 0"):
        exponential_mechanism(np.zeros(3), 1.0, 0, rng)
    with pytest.raises(ValueError, match=r"scores must not contain NaN"):
        exponential_mechanism(np.array([0.0, np.nan]), 1.0, 1.0, rng)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator"):
        exponential_mechanism(np.zeros(3), 1.0, 1.0, 42)


def test_sample_log_weights_impossible_outcomes_and_errors():
    rng = make_rng(15)
    lw = np.broadcast_to(np.array([-np.inf, 0.0, math.log(3.0), -np.inf]), (20000, 4))
    idx = sample_log_weights(lw, rng)
    assert_frequencies(idx, np.array([0.0, 0.25, 0.75, 0.0]))
    with pytest.raises(ValueError, match=r"all log_weights are -inf"):
        sample_log_weights(np.full((2, 3), -np.inf), rng)
    with pytest.raises(ValueError, match=r"NaN or \+inf"):
        sample_log_weights(np.array([0.0, np.inf]), rng)
    with pytest.raises(ValueError, match=r"at least one outcome"):
        sample_log_weights(np.zeros((3, 0)), rng)


def test_interval_exponential_mechanism_uniform_inside_interval():
    rng = make_rng(16)
    edges = np.array([0.0, 1.0, 1.0, 4.0, 10.0])
    lw = np.array([0.0, 5.0, -1.0, -2.0])  # interval 1 has zero length: never chosen
    out = interval_exponential_mechanism(np.broadcast_to(edges, (40000, 5)), np.broadcast_to(lw, (40000, 4)), rng)
    lengths = np.diff(edges)
    probs = lengths * np.exp(lw)
    k = np.searchsorted(edges, out, side="right") - 1
    assert_frequencies(k, probs / probs.sum())
    inside = out[k == 3]
    assert stats.kstest((inside - 4.0) / 6.0, "uniform").pvalue > 1e-3
    with pytest.raises(ValueError, match=r"one more entry"):
        interval_exponential_mechanism(edges, lw[:3], rng)
    with pytest.raises(ValueError, match=r"non-decreasing"):
        interval_exponential_mechanism(np.array([0.0, 2.0, 1.0]), np.zeros(2), rng)


# --------------------------------------------------------------------------------------
# Smith's quantile
# --------------------------------------------------------------------------------------


def smith_interval_probs(data, q, eps, lo, hi):
    """Exact: interval j (j records below) has probability ∝ (x_{j+1} - x_j) exp(-eps |j - q n| / 2)."""
    x = [lo] + sorted(data) + [hi]
    n = len(data)
    w = [(x[j + 1] - x[j]) * math.exp(-eps * abs(j - q * n) / 2) for j in range(n + 1)]
    return np.array(w) / sum(w)


@pytest.mark.parametrize(
    "data, q, eps",
    [
        ([0.1, 0.2, 0.5, 0.55, 0.9], 0.5, 1.0),
        ([0.1, 0.2, 0.5, 0.55, 0.9], 0.25, 3.0),
        ([0.3, 0.05, 0.7, 0.71, 0.95, 0.4], 0.5, 0.5),
        ([0.6, 0.2, 0.8], 0.9, 8.0),
    ],
)
def test_smith_quantile_interval_distribution(data, q, eps):
    rng = make_rng(20)
    trials = 40000
    x = np.broadcast_to(np.array(data), (trials, len(data)))
    out = smith_quantile(x, q, eps, Bounds(0.0, 1.0), rng)
    assert out.shape == (trials,)
    assert ((out >= 0.0) & (out <= 1.0)).all()
    j = np.searchsorted(np.sort(data), out)  # number of records below the output
    probs = smith_interval_probs(data, q, eps, 0.0, 1.0)
    assert_frequencies(j, probs)
    if (q, eps) == (0.5, 1.0):
        # power: using exp(-eps |j - qn|) (no 1/2) is rejected
        wrong = smith_interval_probs(data, q, 2 * eps, 0.0, 1.0)
        assert chisquare_p(j, wrong) < 1e-6


def test_smith_quantile_fresh_data_rows_are_independent_runs():
    rng = make_rng(21)
    data = rng.uniform(-2.0, 3.0, size=(2000, 7))
    out = smith_quantile(data, 0.5, 2.0, Bounds(-2.0, 3.0), rng)
    assert out.shape == (2000,)
    assert ((out >= -2.0) & (out <= 3.0)).all()
    # each row's output lies in an interval of its own data: probability of landing in the
    # central interval, averaged over rows, matches the exact per-row probabilities
    srt = np.sort(data, axis=1)
    central = (out >= srt[:, 2]) & (out <= srt[:, 3])  # j = 3 = q n rounded: 3 records below
    p_rows = np.array([smith_interval_probs(row, 0.5, 2.0, -2.0, 3.0)[3] for row in data])
    se = math.sqrt(np.sum(p_rows * (1 - p_rows))) / data.shape[0]
    assert abs(central.mean() - p_rows.mean()) < 4 * se


def test_smith_quantile_scalar_and_infinite_epsilon():
    rng = make_rng(22)
    out = smith_quantile(np.array([0.2, 0.4, 0.8]), 0.5, 1.0, Bounds(0.0, 1.0), rng)
    assert np.ndim(out) == 0 and 0.0 <= float(out) <= 1.0
    # epsilon = inf, n = 3, q n = 1.5: intervals j = 1 and j = 2 tie; chosen ∝ their lengths
    x = np.broadcast_to(np.array([0.2, 0.4, 0.8]), (20000, 3))
    out = smith_quantile(x, 0.5, math.inf, Bounds(0.0, 1.0), rng)
    j = np.searchsorted([0.2, 0.4, 0.8], out)
    assert_frequencies(j, np.array([0.0, 0.2, 0.4, 0.0]) / 0.6)


def test_smith_quantile_bad_input():
    rng = make_rng(23)
    b = Bounds(0.0, 1.0)
    with pytest.raises(ValueError, match=r"q must be in \[0, 1\], got 1.5"):
        smith_quantile(np.array([0.5]), 1.5, 1.0, b, rng)
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got -1"):
        smith_quantile(np.array([0.5]), 0.5, -1, b, rng)
    with pytest.raises(ValueError, match=r"outside bounds \[0, 1\] \(first: 2\)"):
        smith_quantile(np.array([0.5, 2.0]), 0.5, 1.0, b, rng)
    with pytest.raises(ValueError, match=r"contains NaN"):
        smith_quantile(np.array([0.5, np.nan]), 0.5, 1.0, b, rng)
    with pytest.raises(ValueError, match=r"at least one record"):
        smith_quantile(np.zeros((3, 0)), 0.5, 1.0, b, rng)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator"):
        smith_quantile(np.array([0.5]), 0.5, 1.0, b, None)


def test_check_rng_and_determinism():
    g = make_rng(30)
    assert check_rng(g) is g
    with pytest.raises(TypeError, match=r"got int"):
        check_rng(5)
    x = np.broadcast_to(np.array([0.1, 0.5, 0.7]), (100, 3))
    a = smith_quantile(x, 0.5, 1.0, Bounds(0, 1), make_rng(31))
    b = smith_quantile(x, 0.5, 1.0, Bounds(0, 1), make_rng(31))
    c = smith_quantile(x, 0.5, 1.0, Bounds(0, 1), make_rng(32))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(laplace(np.zeros(10), 1.0, make_rng(33)), laplace(np.zeros(10), 1.0, make_rng(33)))


# -- K-ary randomized response ---------------------------------------------------------------------
@pytest.mark.parametrize("k,eps", [(4, 7 / 6), (5, 0.3), (2, 3.0)])
def test_randomized_response_frequencies_chi_square(k, eps):
    n = 60_000
    true = np.arange(n) % k
    rep = randomized_response(true, k, eps, make_rng(40 + k))
    keep = (math.exp(eps) - 1) / (k + math.exp(eps) - 1)  # Avent et al. Algorithm 1, line 7, as printed
    q, r = keep + (1 - keep) / k, (1 - keep) / k  # independent of rr_probabilities
    assert rr_probabilities(eps, k) == pytest.approx((q, r), rel=1e-12)
    assert math.log(q / r) == pytest.approx(eps, rel=1e-12)  # the local epsilon of one report
    table = np.zeros((k, k))
    np.add.at(table, (true, rep), 1)
    expected = (np.full((k, k), r) + np.eye(k) * (q - r)) * (n / k)
    chi2 = ((table - expected) ** 2 / expected).sum()
    p = stats.chi2.sf(chi2, df=k * (k - 1))  # k rows, each with k - 1 free cells
    assert p > 1e-3, (chi2, p)


def test_randomized_response_keeps_shape_and_edge_cases():
    lab = np.array([[0, 1, 2, 1], [2, 2, 0, 0]])
    out = randomized_response(lab, 3, 0.5, make_rng(45))
    assert out.shape == lab.shape and out.dtype.kind == "i" and ((out >= 0) & (out < 3)).all()
    assert randomized_response(lab, 3, math.inf, make_rng(46)).tolist() == lab.tolist()
    assert rr_probabilities(1e6, 3) == (1.0, 0.0)
    assert rr_probabilities(0.7, 1) == (1.0, 0.0)


def test_rr_debiased_counts_and_sums_are_unbiased():
    # 4000 independent report rounds of 300 users; truth = counts/sums by true label
    k, eps, reps = 4, 0.8, 4000
    rng = make_rng(47)
    true = rng.integers(0, k, 300)
    vals = rng.random((300, 2))
    rep = randomized_response(np.broadcast_to(true, (reps, 300)), k, eps, rng)
    onehot = rep[..., None] == np.arange(k)  # (reps, n, K)
    counts = onehot.sum(1).astype(float)
    sums = np.einsum("rnk,nd->rkd", onehot, vals)
    n_hat = rr_debias_counts(counts, 300, eps, k)
    s_hat = rr_debias_sums(sums, vals.sum(0), eps, k)
    n_true = np.bincount(true, minlength=k)
    s_true = np.stack([vals[true == j].sum(0) for j in range(k)])
    for est, truth in ((n_hat, n_true), (s_hat, s_true)):
        mean, se = est.mean(0), est.std(0, ddof=1) / np.sqrt(reps)
        assert (np.abs(mean - truth) < 4 * se).all(), (mean, truth, se)
    # the raw counts are biased (so the test can fail)
    assert (np.abs(counts.mean(0) - n_true) > 10 * counts.std(0).max() / np.sqrt(reps)).any()
    # a batch of rounds with its own totals: (reps, K, d) sums against (reps, d) totals
    per_round = rr_debias_sums(sums, np.broadcast_to(vals.sum(0), (reps, 2)), eps, k)
    np.testing.assert_allclose(per_round, s_hat, rtol=1e-12)


def test_randomized_response_bad_input():
    rng = make_rng(48)
    with pytest.raises(ValueError, match=r"labels must lie in 0..2"):
        randomized_response(np.array([0, 3]), 3, 1.0, rng)
    with pytest.raises(TypeError, match=r"labels must be integers"):
        randomized_response(np.array([0.5]), 3, 1.0, rng)
    with pytest.raises(ValueError, match=r"k must be an integer >= 1, got 0"):
        randomized_response(np.array([0]), 0, 1.0, rng)
    with pytest.raises(ValueError, match=r"epsilon must be > 0"):
        rr_probabilities(-1.0, 3)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator"):
        randomized_response(np.array([0]), 2, 1.0, 0)
    with pytest.raises(ValueError, match=r"epsilon=1e-300 is too small"):
        rr_debias_counts(np.array([1.0, 2.0]), 3, 1e-300, 2)


def test_audit_of_randomized_response():
    from hybridpriv.testing import audit

    k, eps = 4, 7 / 6  # Algorithm 1, line 7, with epsilon = 7, tau = 5

    def rr(label, rng, size):
        return randomized_response(np.full(size, label), k, eps, rng)

    ok = audit(rr, (0, 2), epsilon=eps, samples=40_000, seed=1)
    assert ok.verdict == "pass"
    assert ok.epsilon_lower_bound > 0.8 * eps  # the audit sees most of the claimed loss (it has power)
    assert audit(rr, (0, 2), epsilon=0.7 * eps, samples=40_000, seed=1).verdict == "violation"
