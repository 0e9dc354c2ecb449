"""Privacy amplification of the hybrid release against output-viewing adversaries (Theorem 8.1, Appendix D)."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from .._xarray import xarray_aware
from ._checks import _finite_result, AMPLIFICATION_GROUPS, CALIBRATIONS, _arr, _check_w, _choice, _nc, _out, _real, _var

__all__ = ["amplified_epsilon", "gaussian_delta", "laplace_amplified_epsilon", "laplace_sum_density",
           "laplace_sum_log_ratio"]


@xarray_aware
@_finite_result()
def gaussian_delta(epsilon: object, ratio: object) -> float | np.ndarray:
    """Exact delta(epsilon) of the Gaussian mechanism with ``ratio = sensitivity / sigma`` (Balle & Wang, Thm 8):

    ``Phi(ratio/2 - epsilon/ratio) - e^epsilon Phi(-ratio/2 - epsilon/ratio)``.
    """
    e = _arr(epsilon, "epsilon", lo=0.0)
    r = _arr(ratio, "ratio", lo=0.0, lo_open=True)
    a = r / 2 - e / r
    b = -r / 2 - e / r
    return _out(special.ndtr(a) - np.exp(e + special.log_ndtr(b)))


def _analytic_epsilon(ratio: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Smallest epsilon >= 0 with gaussian_delta(epsilon, ratio) <= delta, elementwise."""
    r, d = np.broadcast_arrays(ratio, delta)
    out = np.empty(r.shape)
    for idx in np.ndindex(r.shape):
        rr, dd = float(r[idx]), float(d[idx])
        if rr == 0.0:
            out[idx] = 0.0
        elif math.isinf(rr):
            out[idx] = math.inf
        elif float(gaussian_delta(0.0, rr)) <= dd:
            out[idx] = 0.0
        else:
            hi = 1.0
            while float(gaussian_delta(hi, rr)) > dd:
                hi *= 2.0
            out[idx] = optimize.brentq(lambda e: float(gaussian_delta(e, rr)) - dd, 0.0, hi, xtol=1e-12, rtol=1e-12)
    return out


@xarray_aware
@_finite_result(allow_inf=True)
def amplified_epsilon(
    w: object,
    n: object,
    c: object,
    m: object,
    s_T2: object,
    s_L2: object,
    delta: object,
    adversarial_fraction: object,
    group: str = "worst",
    method: str = "classic",
) -> float | np.ndarray:
    """Amplified epsilon' of the Gaussian hybrid against output-viewing adversaries (Theorem 8.1).

    The release is ``mu_hat_H(w) + w Y_T + (1-w)/((1-c) n) sum_L Y_L,i``; a coalition ``A`` of
    ``|A| = adversarial_fraction * (1-c) n`` LM users knows (and subtracts) its own noise, leaving
    Gaussian noise of variance ``s'^2 = w^2 s_T2 + ((1-w)/((1-c) n))^2 |L \\ A| s_L2``.  One
    record moves the release by at most ``Delta_T = w m/(c n)`` (a TCM user) or
    ``Delta_L = (1-w) m/((1-c) n)`` (an LM user).

    group
        ``"tcm"``: epsilon' of TCM users, ``"lm"``: of honest LM users (their own noise always
        stays, so ``|L \\ A| >= 1`` for them), ``"worst"`` (default): the larger of the two, the
        guarantee every user gets.  ``"paper"``: the printed case formula, which takes
        ``Delta = w m/(c n)`` when ``w <= c`` -- the *smaller* of the two sensitivities, i.e. the
        better-off group's epsilon' (with the TCM group's ``s'``); kept to reproduce the paper.
    method
        ``"classic"`` (the paper): ``epsilon' = sqrt(2 ln(1.25/delta)) Delta / s'``, a valid
        (epsilon', delta) guarantee when it is < 1.  ``"analytic"``: the exact smallest epsilon'
        for that ``delta`` (Balle & Wang), valid for any value.

    ``s_T2`` and ``s_L2`` are the noise variances (:func:`noise_variances` with
    ``noise="gaussian"``).  ``adversarial_fraction`` is in ``[0, 1]``.  Returns ``inf`` when a
    group's records move the release and no noise is left (``s' = 0``).
    """
    group = _choice(group, "group", AMPLIFICATION_GROUPS)
    method = _choice(method, "method", CALIBRATIONS)
    w_ = _check_w(w)
    n_, c_ = _nc(n, c)
    m_ = _arr(m, "m", lo=0.0, lo_open=True)
    sT, sL = _var(s_T2, "s_T2"), _var(s_L2, "s_L2")
    d = _arr(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    f = _arr(adversarial_fraction, "adversarial_fraction", lo=0.0, hi=1.0)
    a = (1 - w_) / ((1 - c_) * n_)
    honest = (1 - f) * (1 - c_) * n_
    s_tcm = np.sqrt(w_**2 * sT + a**2 * honest * sL)
    s_lm = np.sqrt(w_**2 * sT + a**2 * np.maximum(honest, 1.0) * sL)
    dT = w_ * m_ / (c_ * n_)
    dL = (1 - w_) * m_ / ((1 - c_) * n_)

    def eps_of(delta_, s):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(delta_ > 0, delta_ / s, 0.0)
        ratio = np.where((delta_ > 0) & (s == 0), np.inf, ratio)
        if method == "classic":
            return np.sqrt(2 * np.log(1.25 / d)) * ratio
        return _analytic_epsilon(ratio, d)

    if group == "paper":
        dP = np.where(w_ <= c_, dT, dL)
        return _out(eps_of(dP, s_tcm))
    eT = eps_of(dT, s_tcm)
    eL = eps_of(dL, s_lm)
    if group == "tcm":
        return _out(eT + 0.0 * eL)
    if group == "lm":
        return _out(eL + 0.0 * eT)
    return _out(np.maximum(eT, eL))


@xarray_aware
def laplace_sum_density(x: object, n: object, b: object) -> float | np.ndarray:
    """Density of the sum of ``n`` i.i.d. Laplace(``b``) variables (Appendix D, via the Bessel K function):

    ``p(x) = 2^(1/2 - n) |x|^(n - 1/2) K_(n - 1/2)(|x|/b) / (sqrt(pi) b^(n + 1/2) Gamma(n))``,
    ``p(0) = Gamma(n - 1/2) / (2 sqrt(pi) b Gamma(n))``.  ``n`` is a positive integer, so the
    order ``n - 1/2`` is a half-integer and ``K`` has an exact finite series; it is summed in
    log space (log-sum-exp), so the result is finite for every ``n`` (thousands of LM users
    included) and every ``x`` -- no overflow of ``K`` at large order, no underflow in the tails.
    Raises ``ValueError`` if ``|x|/b`` itself is out of floating-point range.
    """
    return _out(np.exp(_laplace_sum_logpdf(x, n, b)))


#: Cap on the number of (point, term) pairs evaluated at once by the finite Bessel sum.
_BESSEL_CHUNK = 1 << 20


def _log_bessel_half_terms_lse(n: np.ndarray, logz: np.ndarray) -> np.ndarray:
    """``log sum_{k=0}^{n-1} (n-1+k)! / (k! (n-1-k)! 2^k) z^(n-1-k)`` (``logz = log z``, may be ``-inf``).

    The exact finite series of the half-integer Bessel function,
    ``K_(n-1/2)(z) = sqrt(pi/(2z)) e^-z sum_k (n-1+k)!/(k! (n-1-k)!) (2z)^-k``, multiplied by
    ``z^(n-1)`` so that ``z = 0`` is regular (only ``k = n - 1`` survives).  Evaluated as a
    log-sum-exp over ``k`` (no overflow for any order), in blocks of ``k`` to bound memory.
    """
    n, logz = np.broadcast_arrays(n, logz)
    shape = n.shape
    n_flat, lz_flat = n.ravel(), logz.ravel()
    out = np.full(n_flat.shape, -np.inf)
    if n_flat.size == 0:
        return out.reshape(shape)
    n_max = int(n_flat.max())
    block = max(1, _BESSEL_CHUNK // max(n_flat.size, 1))
    for k0 in range(0, n_max, block):
        k = np.arange(k0, min(k0 + block, n_max), dtype=float)[:, None]
        j = n_flat[None, :] - 1.0 - k  # power of z
        valid = j >= 0
        jj = np.where(valid, j, 0.0)
        with np.errstate(invalid="ignore"):
            zpow = np.where(jj > 0, jj * lz_flat[None, :], 0.0)
        terms = (
            special.gammaln(n_flat[None, :] + k)
            - special.gammaln(k + 1.0)
            - special.gammaln(jj + 1.0)
            - k * math.log(2.0)
            + zpow
        )
        terms = np.where(valid, terms, -np.inf)
        out = np.logaddexp(out, special.logsumexp(terms, axis=0))
    return out.reshape(shape)


def _log_kv_half_integer(n: object, z: object) -> np.ndarray:
    """``log K_(n - 1/2)(z)`` for integer ``n >= 1`` and ``z > 0``, by the exact finite sum in log space."""
    n_ = np.asarray(n, dtype=float)
    z_ = np.asarray(z, dtype=float)
    logz = np.log(z_)
    return 0.5 * np.log(math.pi / 2.0) - 0.5 * logz - z_ - (n_ - 1.0) * logz + _log_bessel_half_terms_lse(n_, logz)


def _laplace_sum_logpdf(x, n, b):
    """``log p(x)`` for the sum of ``n`` Laplace(``b``): with ``z = |x|/b``,

    ``log p = -n log 2 - log b - log Gamma(n) - z + log sum_k (n-1+k)!/(k!(n-1-k)! 2^k) z^(n-1-k)``,
    the Bessel form with ``K_(n-1/2)`` replaced by its finite series (finite for every ``n``
    and ``x``, including ``x = 0``: ``p(0) = Gamma(2n-1) / (2^(2n-1) b Gamma(n)^2)``).
    """
    x_ = np.abs(_real(x, "x"))
    n_ = _arr(n, "n", lo=1.0)
    if np.any(n_ != np.round(n_)):
        raise ValueError(f"n must be a positive integer, got {float(n_[n_ != np.round(n_)].flat[0]):g}")
    b_ = _arr(b, "b", lo=0.0, lo_open=True)
    with np.errstate(over="ignore", divide="ignore"):
        z = x_ / b_
        logz = np.log(z)
    x_, n_, b_, z, logz = np.broadcast_arrays(x_, n_, b_, z, logz)
    with np.errstate(over="ignore", invalid="ignore"):
        out = -n_ * math.log(2.0) - np.log(b_) - special.gammaln(n_) - z + _log_bessel_half_terms_lse(n_, logz)
    bad = ~np.isfinite(out)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise ValueError(
            f"the log density of a sum of n={n_[i]:g} Laplace(b={b_[i]:g}) variables at x={x_[i]:g} is not finite "
            f"({out[i]}): |x|/b = {z[i]:g} is out of floating-point range"
        )
    return out


@xarray_aware
def laplace_sum_log_ratio(x: object, n: object, b: object, k: object) -> float | np.ndarray:
    """``log p(x) - log p(x + k)`` for the sum of ``n`` Laplace(``b``) (Appendix D).

    The density is log-concave, so this is non-decreasing in ``x`` (for ``k > 0``) and tends
    to ``k / b`` as ``x -> inf``: with ``k = m`` and ``b = m/epsilon`` the joint noise gives
    exactly ``epsilon`` -- no amplification of the plain sum.
    """
    k_ = _real(k, "k")
    return _out(_laplace_sum_logpdf(x, n, b) - _laplace_sum_logpdf(_real(x, "x") + k_, n, b))


@xarray_aware
@_finite_result()
def laplace_amplified_epsilon(
    w: object,
    n: object,
    c: object,
    m: object,
    epsilon: object,
    adversarial_fraction: object = 0.0,
    group: str = "worst",
) -> float | np.ndarray:
    """Exact pure-DP epsilon' of the Laplace hybrid against output-viewing adversaries (Appendix D, generalised).

    The joint noise ``w Y_T + a sum_{L \\ A} Y_L,i`` (``a = (1-w)/((1-c) n)``, ``Y_T ~ Lap(m/(c n eps))``,
    ``Y_L,i ~ Lap(m/eps)``) is a sum of independent Laplace variables; its density is
    log-concave with tail ``exp(-|x|/b_max)``, ``b_max`` the largest scale present, so the
    privacy loss of a shift ``Delta`` is at most -- and tends to -- ``Delta / b_max``.  Hence
    ``epsilon'_T = eps min(1, w/(a c n))`` (``eps`` when no honest LM user is left) and
    ``epsilon'_LM = eps min(1, a c n / w)``: one group is amplified unless ``w = c``, and the
    worst-off user (``group="worst"``, default) keeps exactly ``eps``, which is the paper's
    "no amplification" statement.  ``group`` in ``{"worst", "tcm", "lm"}``.
    """
    group = _choice(group, "group", ("worst", "tcm", "lm"))
    w_ = _check_w(w)
    n_, c_ = _nc(n, c)
    m_ = _arr(m, "m", lo=0.0, lo_open=True)
    eps = _arr(epsilon, "epsilon", lo=0.0, lo_open=True)
    f = _arr(adversarial_fraction, "adversarial_fraction", lo=0.0, hi=1.0)
    a = (1 - w_) / ((1 - c_) * n_)
    bT = w_ * m_ / (c_ * n_ * eps)
    bL = a * m_ / eps
    honest = (1 - f) * (1 - c_) * n_ > 0
    dT = w_ * m_ / (c_ * n_)
    dL = a * m_
    bmax_T = np.maximum(bT, np.where(honest, bL, 0.0))
    bmax_L = np.maximum(bT, bL)
    with np.errstate(divide="ignore", invalid="ignore"):
        eT = np.where(dT > 0, dT / np.where(bmax_T > 0, bmax_T, 1.0), 0.0)
        eL = np.where(dL > 0, dL / np.where(bmax_L > 0, bmax_L, 1.0), 0.0)
    if group == "tcm":
        return _out(eT + 0.0 * eL)
    if group == "lm":
        return _out(eL + 0.0 * eT)
    return _out(np.maximum(eT, eL))
