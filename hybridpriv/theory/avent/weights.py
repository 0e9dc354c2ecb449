"""The hybrid's weights (Definitions 4.1, 5.3, 6.1) and the critical values of the baselines (Lemmas 3.6, 3.8)."""

from __future__ import annotations

import numpy as np

from .._xarray import xarray_aware
from ._checks import _finite_result, _arr, _divide, _nc, _out, _real, _var

__all__ = ["c_crit", "c_crit_laplace", "kvh_weight", "kvh_weight_heterogeneous", "n_crit", "n_crit_laplace",
           "pwh_weight"]


@xarray_aware
@_finite_result()
def kvh_weight(n: object, c: object, sigma2: object, s_T2: object, s_L2: object) -> float | np.ndarray:
    """KVH weight, homogeneous setting (Definition 4.1): the ``w`` minimising :func:`hybrid_mse`.

    ``w* = c (sigma2 + s_L2) / (sigma2 + c ((1-c) n s_T2 + s_L2))``.  When every variance is 0
    every ``w`` has zero risk and ``c`` is returned.
    """
    n_, c_ = _nc(n, c)
    v, sT, sL = _var(sigma2, "sigma2"), _var(s_T2, "s_T2"), _var(s_L2, "s_L2")
    num = c_ * (v + sL)
    den = v + c_ * ((1 - c_) * n_ * sT + sL)
    return _out(_divide(num, den, c_ + 0.0 * num))


@xarray_aware
@_finite_result()
def kvh_weight_heterogeneous(
    n: object,
    c: object,
    sigma_T2: object,
    sigma_L2: object,
    s_T2: object,
    s_L2: object,
    mu_T: object = 0.0,
    mu_L: object = 0.0,
) -> float | np.ndarray:
    """KVH weight, heterogeneous setting (Definition 6.1): the ``w`` minimising :func:`hybrid_mse`.

    With ``d = mu_T - mu_L`` and ``V = (1-c) sigma_T2 + c sigma_L2 + c (1-c) n d^2``:
    ``w* = c (V + s_L2) / (V + c (1-c) n s_T2 + c s_L2)`` (the printed form, with
    ``(mu_L - mu)(mu_L - mu_T) = c d^2``).  All variances 0 and ``d = 0``: ``c``.
    """
    n_, c_ = _nc(n, c)
    vT, vL = _var(sigma_T2, "sigma_T2"), _var(sigma_L2, "sigma_L2")
    sT, sL = _var(s_T2, "s_T2"), _var(s_L2, "s_L2")
    d = _real(mu_T, "mu_T") - _real(mu_L, "mu_L")
    V = (1 - c_) * vT + c_ * vL + c_ * (1 - c_) * n_ * d**2
    num = c_ * (V + sL)
    den = V + c_ * (1 - c_) * n_ * sT + c_ * sL
    return _out(_divide(num, den, c_ + 0.0 * num))


@xarray_aware
@_finite_result()
def pwh_weight(n: object, c: object, s_T2: object, s_L2: object) -> float | np.ndarray:
    """PWH weight (Definition 5.3): ``s_L2 / (s_L2 + (1-c) n s_T2)``, minimising the privacy error alone.

    Both noise variances 0: ``c`` (no privacy error for any ``w``; the sampling error is then
    smallest at ``c``).
    """
    n_, c_ = _nc(n, c)
    sT, sL = _var(s_T2, "s_T2"), _var(s_L2, "s_L2")
    den = sL + (1 - c_) * n_ * sT
    return _out(_divide(sL, den, c_ + 0.0 * sL))



@xarray_aware
@_finite_result()
def c_crit(sigma_T2: object, sigma_L2: object, s_L2: object) -> float | np.ndarray:
    """Critical TCM fraction (Lemma 3.6) for noise whose ``s_T2`` does not depend on ``n``.

    ``E_T <= E_F`` needs ``N(c) = c s_L2 - (1-c)^2 sigma_T2 - c (1-c) sigma_L2 > 0``; ``N`` is a
    quadratic with ``N(0) = -sigma_T2 <= 0 < N(1) = s_L2``, and ``c_crit`` is its root in
    ``[0, 1)``: ``sigma_L2 / (sigma_L2 + s_L2)`` when ``sigma_T2 = sigma_L2``, otherwise the printed
    ``(2 sigma_T2 - sigma_L2 + s_L2 - sqrt((sigma_L2 - s_L2)^2 + 4 s_L2 sigma_T2)) / (2 (sigma_T2 - sigma_L2))``,
    computed here in a cancellation-free form.  ``s_L2`` must be > 0.
    """
    vT, vL = _var(sigma_T2, "sigma_T2"), _var(sigma_L2, "sigma_L2")
    sL = _arr(s_L2, "s_L2", lo=0.0, lo_open=True)
    b = sL + 2 * vT - vL
    D = np.sqrt((vL - sL) ** 2 + 4 * sL * vT)
    a = vL - vT
    with np.errstate(divide="ignore", invalid="ignore"):
        root_pos = 2 * vT / (b + D)  # b >= 0
        root_neg = (D - b) / (2 * a)  # b < 0 (then a > 0)
    out = np.where(b >= 0, np.where(b + D > 0, root_pos, 0.0), root_neg)
    return _out(out)


@xarray_aware
@_finite_result(allow_inf=True)
def n_crit(
    c: object,
    sigma_T2: object,
    sigma_L2: object,
    s_T2: object,
    s_L2: object,
    mu_T: object = 0.0,
    mu_L: object = 0.0,
) -> float | np.ndarray:
    """Critical number of users (Lemma 3.6, sign corrected) for noise whose ``s_T2`` does not depend on ``n``.

    ``E_T <= E_F`` iff ``n <= n_crit`` with
    ``n_crit = (c s_L2 - (1-c)^2 sigma_T2 - c (1-c) sigma_L2) / (c ((mu_T - mu)^2 + s_T2))``
    (the paper prints ``+ (1-c)((1-c) sigma_T2 - c sigma_L2)`` in the numerator).  ``n_crit > 0``
    exactly when ``c > c_crit``.  With a zero denominator: ``+inf`` when the numerator is >= 0,
    ``-inf`` otherwise.
    """
    c_ = _arr(c, "c", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    vT, vL = _var(sigma_T2, "sigma_T2"), _var(sigma_L2, "sigma_L2")
    sT, sL = _var(s_T2, "s_T2"), _var(s_L2, "s_L2")
    bias = (1 - c_) * (_real(mu_T, "mu_T") - _real(mu_L, "mu_L"))
    num = c_ * sL - (1 - c_) ** 2 * vT - c_ * (1 - c_) * vL
    den = c_ * (bias**2 + sT)
    return _out(_divide(num, den, np.where(num >= 0, np.inf, -np.inf)))


@xarray_aware
@_finite_result()
def c_crit_laplace(epsilon: object, m: object, sigma2: object) -> float | np.ndarray:
    """Critical TCM fraction with Laplace noise, homogeneous (Lemma 3.8): ``eps^2 sigma2 / (2 m^2 + eps^2 sigma2)``.

    Equal to :func:`c_crit` with ``s_L2 = 2 m^2/eps^2``; the same for any noise with
    ``s_T2 = s_L2/(c n)^2`` (Gaussian too).
    """
    eps = _arr(epsilon, "epsilon", lo=0.0, lo_open=True)
    m_ = _arr(m, "m", lo=0.0, lo_open=True)
    v = _var(sigma2, "sigma2")
    # as 1 / (1 + 2 (m/eps)^2 / sigma2): (m/eps)^2 may underflow (c_crit -> 1) or overflow (-> 0), both right
    inv_u = 2.0 * (m_ / eps) ** 2 / np.where(v > 0, v, 1.0)
    return _out(np.where(v > 0, 1.0 / (1.0 + inv_u), 0.0))


@xarray_aware
@_finite_result(allow_inf=True)
def n_crit_laplace(c: object, epsilon: object, m: object, sigma2: object) -> float | np.ndarray:
    """Critical number of users with Laplace noise, homogeneous (Lemma 3.8).

    ``E_T <= E_F`` iff ``c > c_crit`` and ``n >= n_crit = 2 m^2 / (c (2 c m^2 - (1-c) eps^2 sigma2))``
    (here ``s_T2 = s_L2/(c n)^2`` shrinks with ``n``, so the inequality on ``n`` is the reverse of
    Lemma 3.6's).  Returns ``+inf`` when ``c <= c_crit`` (the TCM-only estimator never wins).
    """
    c_ = _arr(c, "c", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    eps = _arr(epsilon, "epsilon", lo=0.0, lo_open=True)
    m_ = _arr(m, "m", lo=0.0, lo_open=True)
    v = _var(sigma2, "sigma2")
    den = c_ * (2 * c_ * m_**2 - (1 - c_) * eps**2 * v)
    return _out(_divide(2 * m_**2, den, np.inf))

