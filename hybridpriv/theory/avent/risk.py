"""The noise variances and the exact MSE of the four estimators (Lemmas 3.2, 3.4, 3.11, 3.13, 4.2, 5.4).

Risk (the paper's Definition 2.2): ``E[(estimate - mu_hat)^2]`` against the non-private empirical
mean ``mu_hat`` of all ``n`` records (``benchmark="empirical"``, the default), or against the
mixture mean ``mu = c mu_T + (1 - c) mu_L`` (``benchmark="population"``).
"""

from __future__ import annotations

import numpy as np

from .._xarray import xarray_aware
from ._checks import (
    BENCHMARKS,
    CALIBRATIONS,
    NOISES,
    _arr,
    _check_w,
    _choice,
    _divide,
    _finite_result,
    _nc,
    _out,
    _real,
    _var,
)

__all__ = ["full_lm_mse", "hybrid_mse", "kvh_mse", "lm_only_mse", "mixture_variance", "noise_variances", "pwh_mse",
           "tcm_only_mse"]


def _analytic_ratio(epsilon: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``sigma / sensitivity`` of the analytic Gaussian mechanism, per (epsilon, delta) pair."""
    from ...noise import gaussian_sigma

    e, d = np.broadcast_arrays(epsilon, delta)
    pairs = np.stack([e.ravel(), d.ravel()], axis=1)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    vals = np.array([gaussian_sigma(float(a), float(b), 1.0) for a, b in uniq])
    return vals[inv.ravel()].reshape(e.shape)


@xarray_aware(n_out=2)
def noise_variances(
    noise: str,
    epsilon: object,
    m: object,
    n: object,
    c: object,
    delta: object = None,
    calibration: str = "classic",
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """``(s_T2, s_L2)``: variances of the TCM mean's noise and of one LM user's noise.

    Records lie in ``[0, m]``: the TCM mean of ``c n`` records has sensitivity ``m / (c n)``,
    one LM user's value sensitivity ``m`` (both under add/remove-with-fixed-size and replace-one).

    * ``"laplace"`` (epsilon-DP): ``s_L2 = 2 m^2 / epsilon^2``, ``s_T2 = s_L2 / (c n)^2``.
    * ``"gaussian"`` ((epsilon, delta)-DP), ``calibration="classic"`` (the paper, Section 2.1):
      ``s_L2 = 2 ln(1.25/delta) m^2 / epsilon^2``; this is proven only for ``epsilon < 1`` but the
      paper also uses it at ``epsilon = 1`` (Figure 7), so it is computed for every epsilon here.
      ``calibration="analytic"``: Balle & Wang's exact calibration
      (:func:`hybridpriv.noise.gaussian_sigma`), valid for every epsilon, which the
      estimators use by default.  In both, ``s_T2 = s_L2 / (c n)^2``.

    Examples
    --------
    >>> noise_variances("laplace", 1.0, 1.0, 1000, 0.1)
    (0.0002, 2.0)
    """
    noise = _choice(noise, "noise", NOISES)
    calibration = _choice(calibration, "calibration", CALIBRATIONS)
    eps = _arr(epsilon, "epsilon", lo=0.0, lo_open=True)
    m_ = _arr(m, "m", lo=0.0, lo_open=True)
    n_, c_ = _nc(n, c)
    if noise == "laplace":
        if delta is not None:
            raise ValueError(f"delta is only used with noise='gaussian', got delta={delta!r} with noise='laplace'")
        with np.errstate(over="ignore", under="ignore"):
            s_L2 = 2.0 * (m_ / eps) ** 2
    else:
        if delta is None:
            raise ValueError("noise='gaussian' needs delta in (0, 1), got None")
        d = _arr(delta, "delta", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        if calibration == "classic":
            with np.errstate(over="ignore", under="ignore"):
                s_L2 = 2.0 * np.log(1.25 / d) * (m_ / eps) ** 2
        else:
            s_L2 = (_analytic_ratio(eps, d) * m_) ** 2
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        s_T2 = s_L2 / (c_ * n_) ** 2
    s_T2, s_L2 = np.broadcast_arrays(s_T2, s_L2)
    eps_b, m_b, n_b, c_b = np.broadcast_arrays(eps, m_, n_, c_)
    eps_b, m_b, n_b, c_b = (np.broadcast_to(v, s_T2.shape) for v in (eps_b, m_b, n_b, c_b))
    for name, var in (("s_L2", s_L2), ("s_T2", s_T2)):
        bad = ~(np.isfinite(var) & (var >= np.finfo(float).tiny))  # subnormal: precision lost
        if bad.any():
            i = tuple(np.argwhere(bad)[0]) if var.ndim else ()
            raise ValueError(
                f"noise variance {name} = {float(var[i]):g} is not a finite (normal) number > 0 for epsilon={float(eps_b[i]):g}, "
                f"m={float(m_b[i]):g}, n={float(n_b[i]):g}, c={float(c_b[i]):g} ({noise} noise): epsilon or m is "
                "too extreme for floating point"
            )
    return _out(s_T2), _out(s_L2)



@xarray_aware
@_finite_result()
def tcm_only_mse(
    n: object,
    c: object,
    sigma_T2: object,
    s_T2: object,
    sigma_L2: object = None,
    mu_T: object = 0.0,
    mu_L: object = 0.0,
    benchmark: str = "empirical",
) -> float | np.ndarray:
    """MSE of the TCM-only estimator ``mu_T_tilde = mean(TCM records) + Y_T`` (Lemma 3.2).

    ``benchmark="empirical"`` (the paper):
    ``(1-c)^2 sigma_T2/(c n) + (1-c) sigma_L2/n + s_T2 + (mu_T - mu)^2`` with
    ``mu_T - mu = (1-c)(mu_T - mu_L)``.  ``"population"``: ``sigma_T2/(c n) + s_T2 + (mu_T - mu)^2``.
    ``sigma_L2`` defaults to ``sigma_T2`` (the homogeneous setting).
    """
    benchmark = _choice(benchmark, "benchmark", BENCHMARKS)
    n_, c_ = _nc(n, c)
    vT = _var(sigma_T2, "sigma_T2")
    vL = vT if sigma_L2 is None else _var(sigma_L2, "sigma_L2")
    sT = _var(s_T2, "s_T2")
    bias = (1.0 - c_) * (_real(mu_T, "mu_T") - _real(mu_L, "mu_L"))
    if benchmark == "empirical":
        out = (1 - c_) ** 2 * vT / (c_ * n_) + (1 - c_) * vL / n_ + sT + bias**2
    else:
        out = vT / (c_ * n_) + sT + bias**2 + 0.0 * vL
    return _out(out)


@xarray_aware
@_finite_result()
def full_lm_mse(
    n: object,
    c: object,
    sigma_T2: object,
    sigma_L2: object,
    s_L2: object,
    mu_T: object = 0.0,
    mu_L: object = 0.0,
    s_LT2: object = None,
    benchmark: str = "empirical",
) -> float | np.ndarray:
    """MSE of the Full-LM estimator: every user adds local noise, the curator averages (Lemma 3.4).

    ``benchmark="empirical"`` (the paper): ``s_L2 / n`` -- or ``(c s_LT2 + (1-c) s_L2)/n`` when
    the TCM users' local noise has its own variance ``s_LT2`` (their own epsilon).
    ``"population"`` adds ``Var(mu_hat) = (c sigma_T2 + (1-c) sigma_L2)/n``.  No bias either way.
    """
    benchmark = _choice(benchmark, "benchmark", BENCHMARKS)
    n_, c_ = _nc(n, c)
    vT, vL = _var(sigma_T2, "sigma_T2"), _var(sigma_L2, "sigma_L2")
    sL = _var(s_L2, "s_L2")
    sLT = sL if s_LT2 is None else _var(s_LT2, "s_LT2")
    _real(mu_T, "mu_T"), _real(mu_L, "mu_L")
    out = (c_ * sLT + (1 - c_) * sL) / n_
    if benchmark == "population":
        out = out + (c_ * vT + (1 - c_) * vL) / n_
    else:
        out = out + 0.0 * (vT + vL)
    return _out(out)


@xarray_aware
@_finite_result()
def lm_only_mse(
    n: object,
    c: object,
    sigma_L2: object,
    s_L2: object,
    sigma_T2: object = None,
    mu_T: object = 0.0,
    mu_L: object = 0.0,
    benchmark: str = "empirical",
) -> float | np.ndarray:
    """MSE of the LM-only estimator: the mean of the LM users' noisy reports (Lemma 3.11).

    ``benchmark="empirical"`` (the paper):
    ``c^2 sigma_L2/((1-c) n) + c sigma_T2/n + s_L2/((1-c) n) + (mu_L - mu)^2`` with
    ``mu_L - mu = c (mu_L - mu_T)``.  ``"population"``:
    ``(sigma_L2 + s_L2)/((1-c) n) + (mu_L - mu)^2``.  ``sigma_T2`` defaults to ``sigma_L2``.
    """
    benchmark = _choice(benchmark, "benchmark", BENCHMARKS)
    n_, c_ = _nc(n, c)
    vL = _var(sigma_L2, "sigma_L2")
    vT = vL if sigma_T2 is None else _var(sigma_T2, "sigma_T2")
    sL = _var(s_L2, "s_L2")
    bias = c_ * (_real(mu_L, "mu_L") - _real(mu_T, "mu_T"))
    if benchmark == "empirical":
        out = c_**2 * vL / ((1 - c_) * n_) + c_ * vT / n_ + sL / ((1 - c_) * n_) + bias**2
    else:
        out = (vL + sL) / ((1 - c_) * n_) + bias**2 + 0.0 * vT
    return _out(out)



@xarray_aware
@_finite_result()
def hybrid_mse(
    w: object,
    n: object,
    c: object,
    sigma_T2: object,
    sigma_L2: object,
    s_T2: object,
    s_L2: object,
    mu_T: object = 0.0,
    mu_L: object = 0.0,
    benchmark: str = "empirical",
) -> float | np.ndarray:
    """MSE of the convex hybrid ``w mu_T_tilde + (1 - w) mu_L_tilde`` (Lemma 3.13).

    ``benchmark="empirical"`` (the paper)::

        (w-c)^2 sigma_T2/(c n) + (w-c)^2 sigma_L2/((1-c) n) + w^2 s_T2 + (1-w)^2 s_L2/((1-c) n)
        + ((w - c)(mu_T - mu_L))^2

    (the printed bias ``w mu_T + (1-w) mu_L - mu`` equals ``(w - c)(mu_T - mu_L)``).
    ``"population"`` replaces the two sampling terms by ``w^2 sigma_T2/(c n) + (1-w)^2 sigma_L2/((1-c) n)``.

    Examples
    --------
    >>> round(hybrid_mse(0.5, 1000, 0.1, 0.05, 0.05, 2e-4, 2.0), 8)
    0.00164444
    """
    benchmark = _choice(benchmark, "benchmark", BENCHMARKS)
    w_ = _check_w(w)
    n_, c_ = _nc(n, c)
    vT, vL = _var(sigma_T2, "sigma_T2"), _var(sigma_L2, "sigma_L2")
    sT, sL = _var(s_T2, "s_T2"), _var(s_L2, "s_L2")
    d = _real(mu_T, "mu_T") - _real(mu_L, "mu_L")
    if benchmark == "empirical":
        sampling = (w_ - c_) ** 2 * (vT / (c_ * n_) + vL / ((1 - c_) * n_))
    else:
        sampling = w_**2 * vT / (c_ * n_) + (1 - w_) ** 2 * vL / ((1 - c_) * n_)
    privacy = w_**2 * sT + (1 - w_) ** 2 * sL / ((1 - c_) * n_)
    return _out(sampling + privacy + ((w_ - c_) * d) ** 2)



@xarray_aware
@_finite_result()
def kvh_mse(n: object, c: object, sigma2: object, s_T2: object, s_L2: object) -> float | np.ndarray:
    """MSE of KVH, homogeneous (Lemma 4.2), in closed form:

    ``((1-c) sigma2 s_L2 + c n (c sigma2 + s_L2) s_T2) / (n (sigma2 + c s_L2) + (1-c) c n^2 s_T2)``.

    This is the quantity printed as ``gamma`` in Theorem 4.3 (where ``R = min(E_T, E_F) / gamma``;
    the theorem prints ``gamma * min``, see the docs).
    """
    n_, c_ = _nc(n, c)
    v, sT, sL = _var(sigma2, "sigma2"), _var(s_T2, "s_T2"), _var(s_L2, "s_L2")
    num = (1 - c_) * v * sL + c_ * n_ * (c_ * v + sL) * sT
    den = n_ * (v + c_ * sL) + (1 - c_) * c_ * n_**2 * sT
    return _out(_divide(num, den, 0.0))


@xarray_aware
@_finite_result()
def pwh_mse(n: object, c: object, sigma2: object, s_T2: object, s_L2: object) -> float | np.ndarray:
    """MSE of PWH, homogeneous (Lemma 5.4, as printed):

    ``[(1-c) c n^2 s_T2^2 (c sigma2 + s_L2) + c n s_L2 s_T2 (2 (c-1) sigma2 + s_L2) + (1-c) sigma2 s_L2^2]
    / [c n (s_L2 + (1-c) n s_T2)^2]``.  Both noise variances 0: the PWH weight is ``c`` and the MSE 0.
    """
    n_, c_ = _nc(n, c)
    v, sT, sL = _var(sigma2, "sigma2"), _var(s_T2, "s_T2"), _var(s_L2, "s_L2")
    num = (1 - c_) * c_ * n_**2 * sT**2 * (c_ * v + sL) + c_ * n_ * sL * sT * (2 * (c_ - 1) * v + sL) + (1 - c_) * v * sL**2
    den = c_ * n_ * (sL + (1 - c_) * n_ * sT) ** 2
    return _out(_divide(num, den, 0.0))


@xarray_aware
@_finite_result()
def mixture_variance(c: object, sigma_T2: object, sigma_L2: object, mu_T: object = 0.0, mu_L: object = 0.0) -> float | np.ndarray:
    """Variance of the mixture ``c D_T + (1-c) D_L``:

    ``c (mu_T^2 + sigma_T2) + (1-c)(mu_L^2 + sigma_L2) - mu^2`` (Section 2.2 prints it without ``- mu^2``).
    """
    c_ = _arr(c, "c", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    vT, vL = _var(sigma_T2, "sigma_T2"), _var(sigma_L2, "sigma_L2")
    mT, mL = _real(mu_T, "mu_T"), _real(mu_L, "mu_L")
    return _out(c_ * vT + (1 - c_) * vL + c_ * (1 - c_) * (mT - mL) ** 2)

