"""hybridpriv.theory.avent.risk and .weights (Avent et al.'s hybrid model) against independent computations.

* Monte Carlo of the estimators (hybridpriv.families.hybrid_trust.mechanisms) with groups drawn from different
  Beta distributions on [0, 1] and on [0, 2], Laplace and Gaussian noise: the mean squared error
  agrees with every lemma within z = 4 Monte Carlo standard errors (of the mean of the squared
  errors), against the empirical mean (the paper) and the population mean.
* Second derivations: weights against a numerical minimiser of the risk, closed forms against
  the general lemma, the mixture variance against sampling a mixture.

Expected values are computed in the tests from hand-coded formulas or numerically, never by
the function under test.  Seeds are fixed (the same streams as before the split of the module).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from hybridpriv.core.privacy import Group
from hybridpriv.families.hybrid_trust.mechanisms import FullLM, Hybrid, LMOnly, TCMOnly
from hybridpriv.theory.avent import (
    amplified_epsilon,
    full_lm_mse,
    gaussian_delta,
    hybrid_mse,
    kvh_mse,
    kvh_weight,
    kvh_weight_heterogeneous,
    lm_only_mse,
    mixture_variance,
    noise_variances,
    pwh_mse,
    pwh_weight,
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

