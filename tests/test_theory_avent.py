"""hybridpriv.theory.avent (Avent et al.'s hybrid model) checked against independent computations.

* Monte Carlo of the estimators (hybridpriv.estimators.avent) with groups drawn from different
  Beta distributions on [0, 1] and on [0, 2], Laplace and Gaussian noise: the mean squared error
  agrees with every lemma within z = 4 Monte Carlo standard errors (of the mean of the squared
  errors), against the empirical mean (the paper) and the population mean.
* Second derivations: weights against a numerical minimiser of the risk, closed forms against
  the general lemma, critical values against root finding and brute-force regime maps, the
  bound against a brute-force grid, the amplified epsilon against the exact Gaussian privacy
  profile integrated numerically, the Bessel density against Fourier inversion by quadrature.

Expected values are computed in the tests from hand-coded formulas or numerically, never by
the function under test.  Seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy import integrate, optimize, stats

from hybridpriv.estimators.avent import FullLM, Hybrid, LMOnly, TCMOnly
from hybridpriv.privacy import Group
from hybridpriv.theory.avent import (
    amplified_epsilon,
    appendix_b_instance,
    c_crit,
    c_crit_laplace,
    full_lm_mse,
    gaussian_delta,
    hybrid_mse,
    kvh_improvement_limit,
    kvh_mse,
    kvh_weight,
    kvh_weight_heterogeneous,
    laplace_amplified_epsilon,
    laplace_sum_density,
    laplace_sum_log_ratio,
    lm_only_mse,
    max_kvh_improvement,
    mixture_variance,
    n_crit,
    n_crit_laplace,
    noise_variances,
    pwh_beats_both_laplace,
    pwh_mse,
    pwh_weight,
    relative_improvement,
    relative_improvement_laplace,
    tcm_only_mse,
)

ROOT = 0xA7E4
Z = 4.0


def rng_for(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([ROOT, key]))


def beta_moments(a: float, b: float, scale: float = 1.0) -> tuple[float, float]:
    mean = a / (a + b)
    var = a * b / ((a + b) ** 2 * (a + b + 1))
    return scale * mean, scale**2 * var


def assert_mc(sq_errors: np.ndarray, exact: float, what: str) -> None:
    """|mean(sq) - exact| < Z * SE, SE = sd(sq)/sqrt(N) (CLT interval for the MSE)."""
    x = np.asarray(sq_errors, dtype=float)
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    diff = abs(float(x.mean()) - exact)
    assert diff < Z * se, f"{what}: MC {x.mean():.6g} vs exact {exact:.6g}, |diff|={diff:.3g} >= {Z}*SE={Z * se:.3g}"


# --------------------------------------------------------------------------------------
# Monte Carlo of the estimators vs Lemmas 3.2, 3.4, 3.11, 3.13 (both benchmarks)
# --------------------------------------------------------------------------------------
N_T, N_L, TRIALS = 24, 136, 12_000
# TCM users: Beta(2, 5) (mean 0.29), LM users: Beta(5, 2) (mean 0.71): different means and variances
BETA_T, BETA_L = (2.0, 5.0), (5.0, 2.0)


def _simulate(make, key: int, scale: float = 1.0, betas=(BETA_T, BETA_L)):
    """Squared errors of an estimator against the empirical and the population mean, and the moments."""
    rng = rng_for(key)
    (aT, bT), (aL, bL) = betas
    xT = scale * rng.beta(aT, bT, size=(TRIALS, N_T))
    xL = scale * rng.beta(aL, bL, size=(TRIALS, N_L))
    est = make()
    out = est.estimate([xT, xL], rng)
    mu_hat = np.concatenate([xT, xL], axis=1).mean(axis=1)
    mT, vT = beta_moments(aT, bT, scale)
    mL, vL = beta_moments(aL, bL, scale)
    c = N_T / (N_T + N_L)
    mu = c * mT + (1 - c) * mL
    return est, (out - mu_hat) ** 2, (out - mu) ** 2, (vT, vL, mT, mL)


GROUPS = [Group("tcm", N_T, 1.0), Group("lm", N_L, 0.5)]  # different epsilons per group too
GROUPS_G = [Group("tcm", N_T, 0.8, 1e-5), Group("lm", N_L, 0.8, 1e-5)]

_CASES = {
    "tcm laplace": (lambda: TCMOnly(GROUPS, (0, 1)), 1.0),
    "lm laplace": (lambda: LMOnly(GROUPS, (0, 1)), 1.0),
    "full-lm laplace": (lambda: FullLM(GROUPS, (0, 1)), 1.0),
    "hybrid w=0.35 laplace": (lambda: Hybrid(GROUPS, (0, 1), 0.35), 1.0),
    "hybrid kvh-het laplace [0,2]": (
        lambda: Hybrid(
            GROUPS, (0, 2), "kvh-heterogeneous", sigma_T2=4 * beta_moments(*BETA_T)[1],
            sigma_L2=4 * beta_moments(*BETA_L)[1], mu_T=2 * 2 / 7, mu_L=2 * 5 / 7,
        ),
        2.0,
    ),
    "tcm gaussian": (lambda: TCMOnly(GROUPS_G, (0, 1), noise="gaussian"), 1.0),
    "full-lm gaussian": (lambda: FullLM(GROUPS_G, (0, 1), noise="gaussian"), 1.0),
    "hybrid pwh gaussian classic": (lambda: Hybrid(GROUPS_G, (0, 1), "pwh", noise="gaussian", calibration="classic"), 1.0),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_lemmas_match_monte_carlo_of_the_estimators(name):
    make, scale = _CASES[name]
    key = sorted(_CASES).index(name)
    est, sq_emp, sq_pop, (vT, vL, mT, mL) = _simulate(make, key, scale)
    n, c = est.n, est.c
    for benchmark, sq in (("empirical", sq_emp), ("population", sq_pop)):
        if isinstance(est, TCMOnly):
            exact = tcm_only_mse(n, c, vT, est.s_T2, sigma_L2=vL, mu_T=mT, mu_L=mL, benchmark=benchmark)
        elif isinstance(est, LMOnly):
            exact = lm_only_mse(n, c, vL, est.s_L2, sigma_T2=vT, mu_T=mT, mu_L=mL, benchmark=benchmark)
        elif isinstance(est, FullLM):
            exact = full_lm_mse(n, c, vT, vL, est.s_L2, mT, mL, s_LT2=est.s_LT2, benchmark=benchmark)
        else:
            exact = hybrid_mse(est.w, n, c, vT, vL, est.s_T2, est.s_L2, mT, mL, benchmark=benchmark)
        assert_mc(sq, exact, f"{name} ({benchmark})")
        # the estimator's own mse() is the same lemma
        assert est.mse(vT, vL, mT, mL, benchmark=benchmark) == pytest.approx(exact)


def test_noise_variances_match_the_estimators_and_hand_formulas():
    n, c = N_T + N_L, N_T / (N_T + N_L)
    # Laplace: Var Lap(b) = 2 b^2, b = m/eps (one user), m/(c n eps) (the TCM mean)
    sT, sL = noise_variances("laplace", 0.7, 2.0, n, c)
    assert sL == pytest.approx(2 * (2.0 / 0.7) ** 2) and sT == pytest.approx(2 * (2.0 / (0.7 * N_T)) ** 2)
    g = [Group("tcm", N_T, 0.7), Group("lm", N_L, 0.7)]
    est = Hybrid(g, (0, 2), 0.5)
    assert (est.s_T2, est.s_L2) == pytest.approx((sT, sL))
    # Gaussian, classic: s = sqrt(2 ln(1.25/delta)) m / eps
    sT, sL = noise_variances("gaussian", 0.7, 2.0, n, c, delta=1e-6)
    assert sL == pytest.approx(2 * math.log(1.25e6) * (2.0 / 0.7) ** 2)
    assert sT == pytest.approx(sL / N_T**2)
    gg = [Group("tcm", N_T, 0.7, 1e-6), Group("lm", N_L, 0.7, 1e-6)]
    est = Hybrid(gg, (0, 2), 0.5, noise="gaussian", calibration="classic")
    assert (est.s_T2, est.s_L2) == pytest.approx((sT, sL))
    # analytic: the exact profile at the calibrated sigma equals delta
    sT_a, sL_a = noise_variances("gaussian", 0.7, 2.0, n, c, delta=1e-6, calibration="analytic")
    assert float(gaussian_delta(0.7, 2.0 / math.sqrt(sL_a))) == pytest.approx(1e-6, rel=1e-6)
    assert sL_a < sL  # the analytic calibration needs less noise
    est = Hybrid(gg, (0, 2), 0.5, noise="gaussian")
    assert (est.s_T2, est.s_L2) == pytest.approx((sT_a, sL_a), rel=1e-9)


def test_hybrid_noise_variance_and_amplification_noise_by_monte_carlo():
    """On one fixed dataset the hybrid's spread is the joint noise s'^2 of Theorem 8.1 (no coalition)."""
    rng = rng_for(99)
    g = [Group("tcm", 20, 0.9, 1e-5), Group("lm", 180, 0.9, 1e-5)]
    est = Hybrid(g, (0, 1), 0.3, noise="gaussian", calibration="classic")
    x = [np.broadcast_to(rng.random(20), (40_000, 20)), np.broadcast_to(rng.random(180), (40_000, 180))]
    out = est.estimate(x, rng)
    s2 = 0.3**2 * est.s_T2 + (0.7 / 180) ** 2 * 180 * est.s_L2
    x4 = (out - out.mean()) ** 2
    se = x4.std(ddof=1) / math.sqrt(x4.size)
    assert abs(x4.mean() - s2) < Z * se
    # epsilon' from that variance, by hand, for the worst-off group
    k = math.sqrt(2 * math.log(1.25 / 1e-5))
    expected = k * max(0.3 / (0.1 * 200), 0.7 / (0.9 * 200)) / math.sqrt(s2)
    assert amplified_epsilon(0.3, 200, 0.1, 1.0, est.s_T2, est.s_L2, 1e-5, 0.0) == pytest.approx(expected)


# --------------------------------------------------------------------------------------
# closed forms vs the general lemma and a numerical minimiser
# --------------------------------------------------------------------------------------
POINTS = [
    # n, c, sigma_T2, sigma_L2, s_T2, s_L2, mu_T, mu_L
    (1000.0, 0.05, 0.02, 0.08, 3e-3, 2.0, 0.3, 0.5),
    (250.0, 0.3, 0.06, 0.01, 1e-4, 0.4, 0.6, 0.55),
    (1e5, 0.005, 0.2, 0.2, 2e-5, 8.0, 0.5, 0.5),
]


@pytest.mark.parametrize("p", POINTS)
def test_kvh_weights_minimise_the_risk(p):
    n, c, vT, vL, sT, sL, mT, mL = p

    def risk(w):
        return hybrid_mse(w, n, c, vT, vL, sT, sL, mT, mL)

    w_num = optimize.minimize_scalar(risk, bounds=(0, 1), method="bounded", options={"xatol": 1e-12}).x
    assert kvh_weight_heterogeneous(n, c, vT, vL, sT, sL, mT, mL) == pytest.approx(w_num, abs=1e-6)
    # Definition 6.1 as printed (mu = c mu_T + (1-c) mu_L)
    mu = c * mT + (1 - c) * mL
    printed = c * (sL + c * vL + (1 - c) * (n * (mL - mu) * (mL - mT) + vT)) / (
        c * sL + (1 - c) * c * n * ((mL - mT) ** 2 + sT) + c * vL + (1 - c) * vT
    )
    assert kvh_weight_heterogeneous(n, c, vT, vL, sT, sL, mT, mL) == pytest.approx(printed)
    # homogeneous: Definition 4.1 printed, the numerical minimiser, Lemma 4.2 and Theorem 4.3's "gamma"
    hom = optimize.minimize_scalar(
        lambda w: hybrid_mse(w, n, c, vT, vT, sT, sL), bounds=(0, 1), method="bounded", options={"xatol": 1e-12}
    ).x
    w = kvh_weight(n, c, vT, sT, sL)
    assert w == pytest.approx(hom, abs=1e-6)
    assert w == pytest.approx(c * (vT + sL) / (vT + c * (n * sT * (1 - c) + sL)))
    lemma42 = (w - c) ** 2 / (c * (1 - c) * n) * vT + w**2 * sT + (1 - w) ** 2 * sL / ((1 - c) * n)
    assert kvh_mse(n, c, vT, sT, sL) == pytest.approx(lemma42)
    gamma_printed = ((1 - c) * vT * sL + c * n * (c * vT + sL) * sT) / (n * (vT + c * sL) + (1 - c) * c * n**2 * sT)
    assert kvh_mse(n, c, vT, sT, sL) == pytest.approx(gamma_printed)  # the printed gamma IS the MSE


@pytest.mark.parametrize("p", POINTS)
def test_pwh_weight_and_lemma_5_4(p):
    n, c, vT, _, sT, sL, _, _ = p
    priv = optimize.minimize_scalar(
        lambda w: w**2 * sT + (1 - w) ** 2 * sL / ((1 - c) * n), bounds=(0, 1), method="bounded", options={"xatol": 1e-12}
    ).x
    w = pwh_weight(n, c, sT, sL)
    assert w == pytest.approx(priv, abs=1e-6)
    assert pwh_mse(n, c, vT, sT, sL) == pytest.approx(hybrid_mse(w, n, c, vT, vT, sT, sL))


@pytest.mark.parametrize("p", POINTS)
def test_end_points_of_the_hybrid_family_are_the_group_estimators(p):
    n, c, vT, vL, sT, sL, mT, mL = p
    for b in ("empirical", "population"):
        assert hybrid_mse(1.0, n, c, vT, vL, sT, sL, mT, mL, benchmark=b) == pytest.approx(
            tcm_only_mse(n, c, vT, sT, sigma_L2=vL, mu_T=mT, mu_L=mL, benchmark=b)
        )
        assert hybrid_mse(0.0, n, c, vT, vL, sT, sL, mT, mL, benchmark=b) == pytest.approx(
            lm_only_mse(n, c, vL, sL, sigma_T2=vT, mu_T=mT, mu_L=mL, benchmark=b)
        )


def test_mixture_variance_by_sampling_a_mixture():
    rng = rng_for(7)
    c = 0.3
    comp = rng.random(400_000) < c
    x = np.where(comp, rng.normal(1.0, 0.5, comp.size), rng.normal(-0.5, 2.0, comp.size))
    assert mixture_variance(c, 0.25, 4.0, 1.0, -0.5) == pytest.approx(x.var(), rel=0.01)


# --------------------------------------------------------------------------------------
# relative improvement, critical values (Lemmas 3.6, 3.8; Definitions 3.5, 3.9, 5.1)
# --------------------------------------------------------------------------------------
def test_relative_improvement_is_min_and_max_of_the_baselines_over_mse():
    n, c, v, eps, m = 5000.0, 0.02, 0.04, 0.5, 1.0
    sT, sL = 2 * m**2 / (c * n * eps) ** 2, 2 * m**2 / eps**2
    eT = (1 - c) * v / (c * n) + sT  # Definition 3.9, homogeneous Laplace
    eF = sL / n
    e = 1e-4
    R, r = relative_improvement(e, n, c, v, v, sT, sL)
    assert (R, r) == pytest.approx((min(eT, eF) / e, max(eT, eF) / e))
    assert relative_improvement_laplace(e, n, c, eps, m, v) == pytest.approx((R, r))


def _N(c, vT, vL, sL):
    """cn (E_F - E_T) at fixed s_T, without the n-dependent part: positive iff n_crit > 0."""
    return c * sL - (1 - c) ** 2 * vT - c * (1 - c) * vL


@pytest.mark.parametrize("vT,vL,sL", [(0.05, 0.05, 2.0), (0.01, 0.2, 0.5), (0.2, 0.01, 0.5), (0.0, 0.5, 0.1), (0.3, 0.1, 0.05)])
def test_c_crit_is_the_root_of_the_n_crit_numerator(vT, vL, sL):
    root = optimize.brentq(lambda c: _N(c, vT, vL, sL), 1e-15, 1 - 1e-15, xtol=1e-15) if _N(1e-15, vT, vL, sL) < 0 else 0.0
    if vT == 0.0 and vL > sL:  # N(c) = c (c vL + sL - vL): roots 0 and 1 - sL/vL
        root = 1 - sL / vL
    assert c_crit(vT, vL, sL) == pytest.approx(root, abs=1e-9)
    if vT != vL and vT > 0:
        D = math.sqrt((vL - sL) ** 2 + 4 * sL * vT)
        printed = (2 * vT - vL + sL - D) / (2 * (vT - vL))
        assert c_crit(vT, vL, sL) == pytest.approx(printed, rel=1e-9)


def test_n_crit_is_where_the_baselines_cross_and_the_printed_sign_is_wrong():
    c, vT, vL, sT, sL, mT, mL = 0.2, 0.03, 0.06, 1e-4, 2.0, 0.4, 0.45
    nc = n_crit(c, vT, vL, sT, sL, mT, mL)
    assert nc > 0
    diff = lambda n: tcm_only_mse(n, c, vT, sT, sigma_L2=vL, mu_T=mT, mu_L=mL) - full_lm_mse(n, c, vT, vL, sL)  # noqa: E731
    assert diff(nc) == pytest.approx(0.0, abs=1e-12)
    assert diff(0.9 * nc) < 0 < diff(1.1 * nc)  # TCM-only wins for n <= n_crit (fixed s_T)
    mu = c * mT + (1 - c) * mL
    printed = (c * sL + (1 - c) * ((1 - c) * vT - c * vL)) / (c * ((mT - mu) ** 2 + sT))
    assert abs(diff(printed)) > 1e-6  # the printed numerator does not give the crossing


def test_laplace_regimes_by_brute_force():
    """E_T <= E_F exactly when c > c_crit and n >= n_crit (Lemma 3.8), on a grid."""
    eps, m, v = 0.7, 1.0, 0.05
    n = np.geomspace(10, 1e6, 90)[:, None]
    c = np.geomspace(1e-4, 0.9, 110)[None, :]
    sT, sL = 2 * m**2 / (c * n * eps) ** 2, 2 * m**2 / eps**2
    tcm_better = (1 - c) * v / (c * n) + sT <= sL / n
    predicted = (c > c_crit_laplace(eps, m, v)) & (n >= n_crit_laplace(c, eps, m, v))
    assert np.array_equal(tcm_better, predicted)
    assert tcm_better.any() and (~tcm_better).any()
    assert c_crit_laplace(eps, m, v) == pytest.approx(c_crit(v, v, 2 * m**2 / eps**2))


def test_pwh_region_by_brute_force_and_printed_conditions_fail():
    rng = rng_for(11)
    k = 60_000
    eps = np.exp(rng.uniform(math.log(0.05), math.log(20), k))
    v = rng.uniform(0.001, 0.25, k)
    c = rng.uniform(5e-4, 0.5, k)
    n = np.exp(rng.uniform(math.log(10), math.log(1e7), k))
    sT, sL = 2 / (c * n * eps) ** 2, 2 / eps**2
    e = ((1 - c) * c * n**2 * sT**2 * (c * v + sL) + c * n * sL * sT * (2 * (c - 1) * v + sL) + (1 - c) * v * sL**2) / (
        c * n * (sL + (1 - c) * n * sT) ** 2
    )
    eT, eF = (1 - c) * v / (c * n) + sT, sL / n
    R, r = np.minimum(eT, eF) / e, np.maximum(eT, eF) / e
    assert np.array_equal(pwh_beats_both_laplace(n, c, eps, 1.0, v), R > 1)
    assert r.min() >= 1.0  # r(PWH) >= 1 (Section 5): confirmed on the sample
    printed = (eps >= math.sqrt(2) / np.sqrt(v)) | (c <= eps**2 * v / 2) | (n < 2 * (1 + c) / (c * (2 * c - eps**2 * v)))
    assert (printed & (R < 1)).sum() > 1000  # the printed conditions claim R > 1 where it is not


def test_kvh_beats_both_baselines_when_there_is_a_tcm_user():
    rng = rng_for(12)
    k = 50_000
    eps = np.exp(rng.uniform(math.log(0.05), math.log(20), k))
    v = rng.uniform(0.0, 0.25, k)
    n = np.exp(rng.uniform(math.log(10), math.log(1e7), k))
    c = rng.uniform(1 / n, 0.9)
    sT, sL = noise_variances("laplace", eps, 1.0, n, c)
    R, _ = relative_improvement(kvh_mse(n, c, v, sT, sL), n, c, v, v, sT, sL)
    assert R.min() >= 1 - 1e-9


# --------------------------------------------------------------------------------------
# the bound of Corollary 4.4 and Appendix B
# --------------------------------------------------------------------------------------
def _R_kvh_grid(n, c, v, eps=1.0, m=1.0):
    """R(KVH) from hand-coded Definitions 3.9 / Lemma 4.2 (Laplace)."""
    sL = 2 * m**2 / eps**2
    sT = sL / (c * n) ** 2
    w = c * (v + sL) / (v + c * (n * sT * (1 - c) + sL))
    e = (w - c) ** 2 / (c * (1 - c) * n) * v + w**2 * sT + (1 - w) ** 2 * sL / ((1 - c) * n)
    return np.minimum((1 - c) * v / (c * n) + sT, sL / n) / e


def test_kvh_bound_brute_force():
    c = np.concatenate([np.geomspace(1e-5, 0.999, 3000), np.linspace(0.1, 0.125, 2001)])[:, None, None]
    v = np.linspace(0.0, 0.25, 26)[None, :, None]  # variance of data on [0, 1]: at most 1/4
    ns = np.array([10.0, 100.0, 1e3, 1e4, 1e5, 1e7])[None, None, :]
    grid = _R_kvh_grid(ns, c, v)
    per_n = grid.max(axis=(0, 1))
    assert np.all(np.diff(per_n) > 0)  # the maximum grows with n ...
    assert per_n.max() < 17 / 8  # ... stays below 17/8 ...
    assert per_n[-1] > 17 / 8 - 1e-4  # ... and approaches it
    assert max_kvh_improvement(1.0) == (17 / 8, 1 / 9, 0.25, math.inf)
    for n_, brute in zip(ns.ravel(), per_n):
        found = max_kvh_improvement(1.0, n=n_)
        assert found.R >= brute - 1e-9 and found.R < 17 / 8
        assert found.R == pytest.approx(float(_R_kvh_grid(n_, found.c, found.sigma2)))
    # the paper's intermediate bound R <= 2(2-c)/(2-(1-c) y), y = eps^2 sigma^2/m^2, holds for c <= 0.8
    # on the grid but not near c = 1 (the final 16/7 is still an upper bound: R < 17/8 everywhere)
    inter = 2 * (2 - c) / (2 - (1 - c) * v)
    assert np.all((grid <= inter + 1e-12)[c[:, 0, 0] <= 0.8])
    assert float(_R_kvh_grid(1e7, 0.999, 0.25)) > 1.12 > float(2 * (2 - 0.999) / (2 - 0.001 * 0.25))
    # smaller epsilon: supremum 2 + eps^2/8
    for eps in (0.25, 0.5):
        u = eps**2 / 8
        cs = np.append(np.linspace(0.001, 0.1, 20001), u / (1 + u))
        brute = _R_kvh_grid(1e9, cs, 0.25, eps=eps).max()
        assert 2 + u - 5e-5 < brute < 2 + u
        assert max_kvh_improvement(eps).R == pytest.approx(2 + eps**2 / 8)


def test_appendix_b_instance():
    n = np.array([1e2, 1e4, 1e6, 1e9])
    inst = appendix_b_instance(n)
    assert inst.c == pytest.approx((1 + np.sqrt((288 + n) / n)) / 18)
    c = inst.c
    assert (1 - c) * 0.25 / (c * n) + 2 / (c * n) ** 2 == pytest.approx(2 / n)  # E_T = E_F there
    assert inst.R == pytest.approx(_R_kvh_grid(n, c, 0.25))
    assert np.all(np.diff(inst.R) > 0) and abs(inst.R[-1] - 17 / 8) < 1e-6


def test_kvh_limit_and_peak_at_the_critical_fraction():
    c = np.sort(np.append(np.geomspace(1e-3, 0.9, 4001), 1 / 9))
    lim = kvh_improvement_limit(c, 1.0, 1.0, 0.25)
    assert lim == pytest.approx(_R_kvh_grid(1e10, c, 0.25), rel=1e-4)
    assert c[np.argmax(lim)] == pytest.approx(c_crit_laplace(1.0, 1.0, 0.25), rel=2e-3)
    assert lim.max() == pytest.approx(17 / 8, rel=1e-5)


# --------------------------------------------------------------------------------------
# amplification (Theorem 8.1, Appendix D)
# --------------------------------------------------------------------------------------
def _delta_by_quadrature(eps: float, sens: float, s: float) -> float:
    """delta(eps) = int max(0, p(x) - e^eps q(x)) dx, p = N(0, s^2), q = N(sens, s^2) (hockey stick)."""
    f = lambda x: max(0.0, stats.norm.pdf(x, 0, s) - math.exp(eps) * stats.norm.pdf(x, sens, s))  # noqa: E731
    # p > e^eps q left of the crossing x* = sens/2 - eps s^2/sens
    x_star = sens / 2 - eps * s**2 / sens
    return integrate.quad(f, x_star - 40 * s, x_star, epsabs=1e-14, limit=200)[0]


@pytest.mark.parametrize("w,c,f", [(0.3, 0.01, 0.0), (0.005, 0.01, 0.5), (0.9, 0.05, 0.9)])
def test_gaussian_amplification(w, c, f):
    n, m, delta = 252_540, 2_349_033.0, 1e-7
    sT, sL = noise_variances("gaussian", 1.0, m, n, c, delta=delta)
    k = math.sqrt(2 * math.log(1.25 / delta))
    a = (1 - w) / ((1 - c) * n)
    s_t = math.sqrt(w**2 * sT + a**2 * (1 - f) * (1 - c) * n * sL)
    s_l = math.sqrt(w**2 * sT + a**2 * max((1 - f) * (1 - c) * n, 1.0) * sL)
    eT, eL = k * w * m / (c * n * s_t), k * (1 - w) * m / ((1 - c) * n * s_l)
    assert amplified_epsilon(w, n, c, m, sT, sL, delta, f, group="tcm") == pytest.approx(eT)
    assert amplified_epsilon(w, n, c, m, sT, sL, delta, f, group="lm") == pytest.approx(eL)
    assert amplified_epsilon(w, n, c, m, sT, sL, delta, f) == pytest.approx(max(eT, eL))
    printed = k * m / (n * s_t) * (w / c if w <= c else (1 - w) / (1 - c))
    assert amplified_epsilon(w, n, c, m, sT, sL, delta, f, group="paper") == pytest.approx(printed)
    assert max(eT, eL) <= 1.0 + 1e-12  # never worse than the unamplified epsilon = 1
    # exact epsilon': the hockey-stick divergence integrated numerically equals delta there
    for group, sens, s in (("tcm", w * m / (c * n), s_t), ("lm", (1 - w) * m / ((1 - c) * n), s_l)):
        ea = amplified_epsilon(w, n, c, m, sT, sL, delta, f, group=group, method="analytic")
        assert _delta_by_quadrature(ea, sens, s) == pytest.approx(delta, rel=1e-4)
        ec = amplified_epsilon(w, n, c, m, sT, sL, delta, f, group=group)
        if ec < 1:
            assert ea <= ec  # the classic formula is a valid (if loose) bound below 1


def test_laplace_sum_density_by_fourier_inversion():
    for n, b in ((1, 0.7), (3, 1.0), (12, 0.4)):
        for x in (0.0, 0.3, 2.5, 6.0):
            f = lambda t: 1.0 / (1 + (b * t) ** 2) ** n  # noqa: E731
            if x == 0:
                inv = integrate.quad(f, 0, math.inf)[0] / math.pi
            else:  # QAWF: Fourier integral over [0, inf)
                inv = integrate.quad(f, 0, math.inf, weight="cos", wvar=x)[0] / math.pi
            assert laplace_sum_density(x, n, b) == pytest.approx(inv, rel=1e-6, abs=1e-14)
    assert laplace_sum_density(1.3, 1, 0.5) == pytest.approx(math.exp(-1.3 / 0.5) / (2 * 0.5))


def test_laplace_sum_is_not_amplified():
    x = np.linspace(0, 3000, 3001)
    lr = laplace_sum_log_ratio(x, 20, 1.0, 1.0)  # b = m/eps with m = eps = 1
    assert np.all(np.diff(lr) >= -1e-12) and lr[-1] == pytest.approx(1.0, abs=0.01) and lr.max() <= 1.0


def test_half_integer_bessel_series_matches_scipy_kv():
    """The finite series of K_(n-1/2) in log space against scipy.special.kv wherever kv is finite."""
    from scipy import special

    from hybridpriv.theory.avent import _log_kv_half_integer

    for n, z in ((1, 0.3), (3, 1.0), (12, 2.5), (100, 1.0), (50, 40.0), (2, 1e-5), (150, 200.0), (40, 1e-3)):
        ref = special.kv(n - 0.5, z)
        assert np.isfinite(ref) and ref > 0
        assert math.exp(_log_kv_half_integer(n, z)) == pytest.approx(ref, rel=1e-12)
    # orders where kv overflows: compare with the recurrence K_(v+1) = K_(v-1) + (2v/z) K_v in log space
    z = 1.0
    lk = [math.log(special.kv(0.5, z)), math.log(special.kv(1.5, z))]  # orders 1/2, 3/2
    for v in np.arange(1.5, 2999.0):  # builds K_(v+1) for v + 1 up to 2999.5
        lk.append(lk[-1] + math.log(math.exp(lk[-2] - lk[-1]) + 2 * v / z))
    for n in (200, 1000, 3000):
        assert float(_log_kv_half_integer(n, z)) == pytest.approx(lk[n - 1], rel=1e-12)


def test_laplace_sum_density_at_and_near_zero_by_numerical_convolution():
    """x = 0 is regular: a grid convolution of Laplace densities (step h = 2e-3, error O(h^2) ~ 3e-6)."""
    from scipy import signal

    b, h, half = 0.8, 2e-3, 30.0
    grid = np.arange(-half, half + h / 2, h)
    p1 = np.exp(-np.abs(grid) / b) / (2 * b)
    p = p1.copy()
    for n in range(2, 6):
        p = signal.fftconvolve(p, p1) * h  # density of the n-fold sum on the grid -n*half + i*h
        for x in (0.0, 0.5, -1.7):
            i = round((x + n * half) / h)
            assert laplace_sum_density(x, n, b) == pytest.approx(p[i], rel=2e-5)
    # the closed form p(0) = Gamma(n - 1/2) / (2 sqrt(pi) b Gamma(n)), and continuity at 0
    for n in (1, 2, 7, 150, 5000):
        p0 = math.exp(math.lgamma(n - 0.5) - math.lgamma(n)) / (2 * math.sqrt(math.pi) * b)
        assert laplace_sum_density(0.0, n, b) == pytest.approx(p0, rel=1e-11)
        assert laplace_sum_density(1e-300, n, b) == pytest.approx(p0, rel=1e-11)
        assert laplace_sum_density(-1e-9, n, b) == pytest.approx(p0, rel=1e-7)


@pytest.mark.parametrize("n, b", [(2000, 1.0), (5000, 0.3)])
def test_laplace_sum_density_for_thousands_of_users(n, b):
    """Appendix D sums over thousands of LM users: the density (which overflowed to inf for n >= ~150
    through log(kve)) integrates to 1 and matches the Normal(0, 2 n b^2) near the centre.

    Tolerances from the Edgeworth expansion (Laplace excess kurtosis 3, so 3/n for the sum):
    p/phi = 1 + He4(u)/(8n) + O(1/n^2), |He4(u)| <= 3 on |u| <= 2 standard deviations, so the
    plain Normal is within 1/n (observed 0.75/n) and the corrected one within 2/n^2 (observed 1.49/n^2).
    The log ratio log p(x) - log p(x + k) is the Normal's (2 x k + k^2)/(2 s^2) up to
    d/dx log(1 + He4/(8n)) k <= k/(n s): tolerance 2 k/(n s).
    """
    s = math.sqrt(2 * n) * b
    total, _err = integrate.quad(lambda x: laplace_sum_density(x, n, b), -60 * s, 60 * s, points=[0.0], limit=200, epsabs=1e-13)
    assert total == pytest.approx(1.0, abs=1e-9)
    x = np.linspace(-2 * s, 2 * s, 41)
    p = laplace_sum_density(x, n, b)
    assert np.all(np.isfinite(p))
    phi = stats.norm.pdf(x, scale=s)
    u = x / s
    assert np.max(np.abs(p / phi - 1)) <= 1.0 / n
    assert np.max(np.abs(p / (phi * (1 + (u**4 - 6 * u**2 + 3) / (8 * n))) - 1)) <= 2.0 / n**2
    k = 1.0
    lr = laplace_sum_log_ratio(x, n, b, k)
    assert np.all(np.isfinite(lr))
    np.testing.assert_allclose(lr, (2 * x * k + k**2) / (2 * s**2), rtol=0, atol=2 * k / (n * s))
    # far tail: still finite, non-decreasing and at most k/b (log-concavity; the Appendix D statement)
    far = np.array([0.0, 10 * s, 1e3 * s, 1e5 * s])
    lr_far = laplace_sum_log_ratio(far, n, b, k)
    assert np.all(np.isfinite(lr_far)) and np.all(np.diff(lr_far) > 0) and lr_far[-1] <= k / b
    assert lr_far[-1] == pytest.approx(k / b, rel=0.02)


def test_laplace_sum_density_raises_when_not_representable():
    with pytest.raises(ValueError, match=r"n=3 Laplace\(b=1e-10\) variables at x=1e\+308 is not finite"):
        laplace_sum_density(1e308, 3, 1e-10)
    with pytest.raises(ValueError, match="not finite"):
        laplace_sum_log_ratio(1.0, 5, 1e-310, 1.0)


def test_laplace_hybrid_amplification_by_two_component_density():
    """One TCM noise + one honest LM user's noise: the density has a closed form; its log-ratio sup is Delta/b_max."""
    n, c, m, eps = 10, 0.5, 1.0, 1.0
    f = 0.8  # (1 - f)(1 - c) n = 1 honest LM user
    for w in (0.2, 0.5, 0.8):
        a = (1 - w) / ((1 - c) * n)
        b1, b2 = w * m / (c * n * eps), a * m / eps

        hi, lo = max(b1, b2), min(b1, b2)

        def logp(x):
            """log of (hi e^(-x/hi) - lo e^(-x/lo)) / (2 (hi^2 - lo^2)), or (b + x) e^(-x/b)/(4 b^2) if equal."""
            x = np.abs(x)
            if math.isclose(hi, lo):
                return np.log(hi + x) - x / hi - math.log(4 * hi**2)
            return -x / hi + np.log(hi - lo * np.exp(-x * (1 / lo - 1 / hi))) - math.log(2 * (hi**2 - lo**2))

        xs = np.concatenate([np.linspace(0, 60 * hi, 100_001), np.geomspace(60 * hi, 1e7 * hi, 2000)])
        for group, d in (("tcm", w * m / (c * n)), ("lm", a * m)):
            sup = float(np.max(logp(xs) - logp(xs + d)))
            assert laplace_amplified_epsilon(w, n, c, m, eps, f, group=group) == pytest.approx(sup, rel=1e-3)
        assert laplace_amplified_epsilon(w, n, c, m, eps, f) == pytest.approx(eps)  # worst-off user: no amplification


# --------------------------------------------------------------------------------------
# xarray in, xarray out
# --------------------------------------------------------------------------------------
def test_xarray_in_xarray_out():
    n = xr.DataArray(np.geomspace(1e3, 1e5, 4), dims="n", coords={"n": np.geomspace(1e3, 1e5, 4)})
    c = xr.DataArray([0.005, 0.05], dims="c", coords={"c": [0.005, 0.05]})
    eps = xr.DataArray([0.1, 1.0], dims="epsilon")
    sT, sL = noise_variances("laplace", eps, 1.0, n, c)
    assert isinstance(sT, xr.DataArray) and set(sT.dims) == {"n", "c", "epsilon"}
    e = kvh_mse(n, c, 0.05, sT, sL)
    R, r = relative_improvement(e, n, c, 0.05, 0.05, sT, sL)
    assert isinstance(R, xr.DataArray) and set(R.dims) == {"n", "c", "epsilon"}
    Rn, _ = relative_improvement(
        kvh_mse(n.values[2], 0.05, 0.05, float(sT.sel(c=0.05).isel(n=2, epsilon=1)), 2.0), n.values[2], 0.05, 0.05, 0.05,
        float(sT.sel(c=0.05).isel(n=2, epsilon=1)), 2.0,
    )
    assert float(R.sel(c=0.05).isel(n=2, epsilon=1)) == pytest.approx(Rn)
    assert list(R.coords["c"].values) == [0.005, 0.05]
    with pytest.raises(TypeError, match="DataArray"):
        kvh_weight(n, np.array([0.1, 0.2]), 0.05, 1e-4, 2.0)


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call,err,match",
    [
        (lambda: hybrid_mse(0.5, 100, 0.0, 0.1, 0.1, 1e-3, 1.0), ValueError, r"c must be in \(0, 1\), got 0"),
        (lambda: hybrid_mse(0.5, 100, 1.0, 0.1, 0.1, 1e-3, 1.0), ValueError, "c must be in"),
        (lambda: hybrid_mse(1.5, 100, 0.2, 0.1, 0.1, 1e-3, 1.0), ValueError, r"w must be in \[0, 1\], got 1.5"),
        (lambda: hybrid_mse(0.5, 0, 0.2, 0.1, 0.1, 1e-3, 1.0), ValueError, "n must be in"),
        (lambda: hybrid_mse(0.5, 100, 0.2, -0.1, 0.1, 1e-3, 1.0), ValueError, "sigma_T2 must be in"),
        (lambda: hybrid_mse(0.5, 100, 0.2, 0.1, 0.1, float("nan"), 1.0), ValueError, "s_T2 must not be NaN"),
        (lambda: hybrid_mse(0.5, 100, 0.2, 0.1, 0.1, 1e-3, "1"), TypeError, "s_L2"),
        (lambda: hybrid_mse(0.5, 100, 0.2, 0.1, 0.1, 1e-3, 1.0, benchmark="x"), ValueError, "benchmark"),
        (lambda: kvh_weight([100, -1], 0.2, 0.1, 1e-3, 1.0), ValueError, "n must be in .*got -1"),
        (lambda: noise_variances("cauchy", 1.0, 1.0, 100, 0.1), ValueError, "noise must be one of"),
        (lambda: noise_variances("gaussian", 1.0, 1.0, 100, 0.1), ValueError, "needs delta"),
        (lambda: noise_variances("laplace", 1.0, 1.0, 100, 0.1, delta=1e-5), ValueError, "delta is only used"),
        (lambda: noise_variances("gaussian", 1.0, 1.0, 100, 0.1, delta=1.0), ValueError, "delta must be in"),
        (lambda: noise_variances("laplace", 0.0, 1.0, 100, 0.1), ValueError, "epsilon must be in"),
        (lambda: noise_variances("laplace", 1.0, -1.0, 100, 0.1), ValueError, "m must be in"),
        (lambda: relative_improvement(0.0, 100, 0.1, 0.1, 0.1, 1e-3, 1.0), ValueError, "mse must be in"),
        (lambda: c_crit(0.1, 0.1, 0.0), ValueError, "s_L2 must be in"),
        (lambda: amplified_epsilon(0.3, 100, 0.1, 1.0, 1e-3, 1.0, 1e-5, 1.5), ValueError, "adversarial_fraction"),
        (lambda: amplified_epsilon(0.3, 100, 0.1, 1.0, 1e-3, 1.0, 1e-5, 0.1, group="all"), ValueError, "group must be"),
        (lambda: laplace_sum_density(1.0, 2.5, 1.0), ValueError, "positive integer"),
        # extreme epsilon / m: the variance over- or underflows (was (inf, inf) / (0, 0) silently)
        (lambda: noise_variances("laplace", 1e-200, 1.0, 100, 0.5), ValueError, r"s_L2 = inf .* epsilon=1e-200, m=1"),
        (lambda: noise_variances("laplace", 1e200, 1.0, 100, 0.5), ValueError, r"s_L2 = 0 .* epsilon=1e\+200"),
        (lambda: noise_variances("laplace", 1.0, 1e300, 100, 0.5), ValueError, r"s_L2 = inf .* m=1e\+300"),
        (lambda: noise_variances("gaussian", 1e-200, 1.0, 100, 0.5, 1e-5, "classic"), ValueError, "epsilon=1e-200"),
        (lambda: noise_variances("laplace", [1.0, 1e-200], 1.0, 100, 0.5), ValueError, "s_L2 = inf .* epsilon=1e-200"),
        (lambda: noise_variances("laplace", 1.0, 1e-150, 1e10, 0.5), ValueError, r"s_T2 = .* m=1e-150, n=1e\+10"),
        (lambda: max_kvh_improvement(-1.0), ValueError, "epsilon must be in"),
        (lambda: appendix_b_instance(1.0), ValueError, "too small"),
    ],
)
def test_bad_input(call, err, match):
    with pytest.raises(err, match=match):
        call()
