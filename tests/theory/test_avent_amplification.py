"""hybridpriv.theory.avent.amplification (Section 8, Appendix D): the amplified epsilon against the exact
Gaussian privacy profile integrated numerically, the Bessel density against Fourier inversion by
quadrature, numerical convolution, scipy.special.kv and the Edgeworth expansion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from hybridpriv.theory.avent import (
    amplified_epsilon,
    laplace_amplified_epsilon,
    laplace_sum_density,
    laplace_sum_log_ratio,
    noise_variances,
)

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

    from hybridpriv.theory.avent.amplification import _log_kv_half_integer

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

