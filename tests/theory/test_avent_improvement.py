"""hybridpriv.theory.avent.improvement and the critical values: R and r, where each estimator wins,
and the 17/8 .. 16/7 bound, against hand-coded definitions, root finding and brute-force grids."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from hybridpriv.theory.avent import (
    appendix_b_instance,
    c_crit,
    c_crit_laplace,
    full_lm_mse,
    kvh_improvement_limit,
    kvh_mse,
    max_kvh_improvement,
    n_crit,
    n_crit_laplace,
    noise_variances,
    pwh_beats_both_laplace,
    relative_improvement,
    relative_improvement_laplace,
    tcm_only_mse,
)

ROOT = 0xA7E4
Z = 4.0


def rng_for(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([ROOT, key]))


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

