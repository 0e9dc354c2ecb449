"""Exact risk of the hybrid-model mean estimators of Avent, Dubey & Korolova (PETS 2020).

``n`` users, a fraction ``c`` of them (``c n`` users, the *TCM group*) trust the curator, the
other ``(1 - c) n`` (the *LM group*) randomise locally.  Records lie in ``[0, m]``; TCM records
have mean ``mu_T`` and variance ``sigma_T2``, LM records ``mu_L`` and ``sigma_L2``.

``s_T2`` is the variance of the noise the curator adds to the TCM users' *mean*; ``s_L2`` the
variance of the noise *one* LM user adds to their own value.

Risk (the paper's Definition 2.2): every MSE is ``E[(estimate - mu_hat)^2]`` against the
non-private empirical mean ``mu_hat`` of all ``n`` records (``benchmark="empirical"``, the
default).  ``benchmark="population"`` gives ``E[(estimate - mu)^2]`` against the mixture mean
``mu = c mu_T + (1 - c) mu_L`` instead.  Expectations are over the records (drawn i.i.d. from
the group's distribution) and the noise.

Every function broadcasts over NumPy arrays and, given :class:`xarray.DataArray` arguments,
returns DataArrays (dimensions broadcast by name).  Derivations and the discrepancies with the
printed paper are in ``docs/theory-avent.md``; checks in ``tests/test_theory_avent.py``.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import xarray as xr
from scipy import optimize, special

from ..privacy import check_real_array

__all__ = [
    "AMPLIFICATION_GROUPS",
    "AppendixBInstance",
    "BENCHMARKS",
    "CALIBRATIONS",
    "KVHMaximum",
    "NOISES",
    "amplified_epsilon",
    "appendix_b_instance",
    "c_crit",
    "c_crit_laplace",
    "full_lm_mse",
    "gaussian_delta",
    "hybrid_mse",
    "kvh_improvement_limit",
    "kvh_mse",
    "kvh_weight",
    "kvh_weight_heterogeneous",
    "laplace_amplified_epsilon",
    "laplace_sum_density",
    "laplace_sum_log_ratio",
    "lm_only_mse",
    "max_kvh_improvement",
    "mixture_variance",
    "n_crit",
    "n_crit_laplace",
    "noise_variances",
    "pwh_beats_both_laplace",
    "pwh_mse",
    "pwh_weight",
    "relative_improvement",
    "relative_improvement_laplace",
    "tcm_only_mse",
]

#: Noise distributions of :func:`noise_variances`.
NOISES = ("laplace", "gaussian")
#: Gaussian calibrations: ``"classic"`` ``s = sqrt(2 ln(1.25/delta)) Delta / epsilon`` (the paper's,
#: proven for epsilon < 1), ``"analytic"`` (Balle & Wang 2018, exact, any epsilon).
CALIBRATIONS = ("classic", "analytic")
#: What the MSE is measured against: the empirical mean of all records (the paper) or the mixture mean.
BENCHMARKS = ("empirical", "population")
#: Whose amplified epsilon :func:`amplified_epsilon` returns.
AMPLIFICATION_GROUPS = ("worst", "tcm", "lm", "paper")


# --------------------------------------------------------------------------------------
# validation and the xarray wrapper
# --------------------------------------------------------------------------------------
def _fmt_interval(lo, hi, lo_open, hi_open) -> str:
    left = "(" if lo_open else "["
    right = ")" if hi_open else "]"
    lo_s = "-inf" if lo is None else f"{lo:g}"
    hi_s = "inf" if hi is None else f"{hi:g}"
    return f"{left}{lo_s}, {hi_s}{right}"


def _arr(
    x: object,
    name: str,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    allow_inf: bool = False,
) -> np.ndarray:
    """``x`` as a float array after checking it is real, not NaN, (finite) and inside the interval."""
    a = check_real_array(x, name)
    if np.isnan(a).any():
        raise ValueError(f"{name} must not be NaN, got nan")
    if not allow_inf and np.isinf(a).any():
        raise ValueError(f"{name} must be finite, got {float(a[np.isinf(a)].flat[0]):g}")
    bad = np.zeros(a.shape, dtype=bool)
    if lo is not None:
        bad |= (a <= lo) if lo_open else (a < lo)
    if hi is not None:
        bad |= (a >= hi) if hi_open else (a > hi)
    if bad.any():
        raise ValueError(f"{name} must be in {_fmt_interval(lo, hi, lo_open, hi_open)}, got {float(a[bad].flat[0]):g}")
    return a


def _choice(value: object, name: str, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def _out(x: np.ndarray) -> float | np.ndarray:
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def _xarray_aware(n_out: int = 1) -> Callable:
    """Let a NumPy-broadcasting function take :class:`xarray.DataArray` arguments.

    When any argument is a DataArray, the function runs through :func:`xarray.apply_ufunc`
    over those arguments (dimensions broadcast by name); the others must be scalars or strings.
    """

    def deco(func: Callable) -> Callable:
        sig = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if not any(isinstance(v, xr.DataArray) for v in (*args, *kwargs.values())):
                return func(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            names = [k for k, v in bound.arguments.items() if isinstance(v, xr.DataArray)]
            fixed = {k: v for k, v in bound.arguments.items() if k not in names}
            for k, v in fixed.items():
                if isinstance(v, np.ndarray) and v.ndim > 0:
                    raise TypeError(
                        f"{k}: mix DataArrays only with scalars (got a NumPy array of shape {v.shape}); "
                        "wrap it in an xarray.DataArray with named dimensions"
                    )

            def inner(*vals):
                res = func(**fixed, **dict(zip(names, vals)))
                if n_out == 1:
                    return np.asarray(res)
                return tuple(np.asarray(r) for r in res)

            out_dims = [[]] * n_out if n_out > 1 else [[]]
            res = xr.apply_ufunc(
                inner,
                *[bound.arguments[k] for k in names],
                output_core_dims=out_dims,
                dask="allowed",
            )
            return res

        wrapper.__signature__ = sig  # type: ignore[attr-defined]
        return wrapper

    return deco


def _nc(n: object, c: object) -> tuple[np.ndarray, np.ndarray]:
    return _arr(n, "n", lo=0.0, lo_open=True), _arr(c, "c", lo=0.0, hi=1.0, lo_open=True, hi_open=True)


def _var(x: object, name: str) -> np.ndarray:
    return _arr(x, name, lo=0.0)


def _real(x: object, name: str) -> np.ndarray:
    return _arr(x, name)


def _divide(num: object, den: np.ndarray, fallback: object) -> np.ndarray:
    """``num / den`` where ``den > 0``, ``fallback`` elsewhere (no division by zero is evaluated)."""
    positive = den > 0
    return np.where(positive, num / np.where(positive, den, 1.0), fallback)


# --------------------------------------------------------------------------------------
# noise
# --------------------------------------------------------------------------------------
def _analytic_ratio(epsilon: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``sigma / sensitivity`` of the analytic Gaussian mechanism, per (epsilon, delta) pair."""
    from ..mechanisms import gaussian_sigma

    e, d = np.broadcast_arrays(epsilon, delta)
    pairs = np.stack([e.ravel(), d.ravel()], axis=1)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    vals = np.array([gaussian_sigma(float(a), float(b), 1.0) for a, b in uniq])
    return vals[inv.ravel()].reshape(e.shape)


@_xarray_aware(n_out=2)
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
      (:func:`hybridpriv.mechanisms.gaussian_sigma`), valid for every epsilon, which the
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


# --------------------------------------------------------------------------------------
# MSE of the four estimators (Lemmas 3.2, 3.4, 3.11, 3.13, 4.2, 5.4)
# --------------------------------------------------------------------------------------
@_xarray_aware()
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


@_xarray_aware()
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


@_xarray_aware()
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


def _check_w(w: object) -> np.ndarray:
    return _arr(w, "w", lo=0.0, hi=1.0)


@_xarray_aware()
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


# --------------------------------------------------------------------------------------
# weights (Definitions 4.1, 5.3, 6.1)
# --------------------------------------------------------------------------------------
@_xarray_aware()
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


@_xarray_aware()
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


@_xarray_aware()
def pwh_weight(n: object, c: object, s_T2: object, s_L2: object) -> float | np.ndarray:
    """PWH weight (Definition 5.3): ``s_L2 / (s_L2 + (1-c) n s_T2)``, minimising the privacy error alone.

    Both noise variances 0: ``c`` (no privacy error for any ``w``; the sampling error is then
    smallest at ``c``).
    """
    n_, c_ = _nc(n, c)
    sT, sL = _var(s_T2, "s_T2"), _var(s_L2, "s_L2")
    den = sL + (1 - c_) * n_ * sT
    return _out(_divide(sL, den, c_ + 0.0 * sL))


@_xarray_aware()
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


@_xarray_aware()
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


@_xarray_aware()
def mixture_variance(c: object, sigma_T2: object, sigma_L2: object, mu_T: object = 0.0, mu_L: object = 0.0) -> float | np.ndarray:
    """Variance of the mixture ``c D_T + (1-c) D_L``:

    ``c (mu_T^2 + sigma_T2) + (1-c)(mu_L^2 + sigma_L2) - mu^2`` (Section 2.2 prints it without ``- mu^2``).
    """
    c_ = _arr(c, "c", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    vT, vL = _var(sigma_T2, "sigma_T2"), _var(sigma_L2, "sigma_L2")
    mT, mL = _real(mu_T, "mu_T"), _real(mu_L, "mu_L")
    return _out(c_ * vT + (1 - c_) * vL + c_ * (1 - c_) * (mT - mL) ** 2)


# --------------------------------------------------------------------------------------
# relative improvements and critical values (Definitions 3.5, 3.7, 3.9, 5.1, 5.2; Lemmas 3.6, 3.8)
# --------------------------------------------------------------------------------------
@_xarray_aware(n_out=2)
def relative_improvement(
    mse: object,
    n: object,
    c: object,
    sigma_T2: object,
    sigma_L2: object,
    s_T2: object,
    s_L2: object,
    mu_T: object = 0.0,
    mu_L: object = 0.0,
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """``(R, r)``: ``R = min(E_T, E_F) / mse`` (Definition 3.5), ``r = max(E_T, E_F) / mse`` (5.1).

    ``E_T`` is :func:`tcm_only_mse` and ``E_F`` :func:`full_lm_mse` (the paper's baselines, risk
    against the empirical mean).  ``mse`` must be > 0.
    """
    e = _arr(mse, "mse", lo=0.0, lo_open=True)
    eT = np.asarray(tcm_only_mse(n, c, sigma_T2, s_T2, sigma_L2=sigma_L2, mu_T=mu_T, mu_L=mu_L))
    eF = np.asarray(full_lm_mse(n, c, sigma_T2, sigma_L2, s_L2, mu_T=mu_T, mu_L=mu_L))
    R = np.minimum(eT, eF) / e
    r = np.maximum(eT, eF) / e
    R, r = np.broadcast_arrays(R, r)
    return _out(R), _out(r)


@_xarray_aware(n_out=2)
def relative_improvement_laplace(
    mse: object, n: object, c: object, epsilon: object, m: object, sigma2: object
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """``(R, r)`` with epsilon-DP Laplace noise, homogeneous setting (Definitions 3.9 and 5.2).

    ``E_T = (1-c) sigma2/(c n) + 2 m^2/(c^2 n^2 epsilon^2)``, ``E_F = 2 m^2/(n epsilon^2)``;
    ``R = min(E_T, E_F)/mse``, ``r = max(E_T, E_F)/mse``.  ``E_T <= E_F`` exactly when
    ``c > c_crit`` and ``n >= n_crit`` (:func:`c_crit_laplace`, :func:`n_crit_laplace`).
    """
    s_T2, s_L2 = noise_variances("laplace", epsilon, m, n, c)
    _var(sigma2, "sigma2")
    return relative_improvement(mse, n, c, sigma2, sigma2, s_T2, s_L2)


@_xarray_aware()
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


@_xarray_aware()
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


@_xarray_aware()
def c_crit_laplace(epsilon: object, m: object, sigma2: object) -> float | np.ndarray:
    """Critical TCM fraction with Laplace noise, homogeneous (Lemma 3.8): ``eps^2 sigma2 / (2 m^2 + eps^2 sigma2)``.

    Equal to :func:`c_crit` with ``s_L2 = 2 m^2/eps^2``; the same for any noise with
    ``s_T2 = s_L2/(c n)^2`` (Gaussian too).
    """
    eps = _arr(epsilon, "epsilon", lo=0.0, lo_open=True)
    m_ = _arr(m, "m", lo=0.0, lo_open=True)
    v = _var(sigma2, "sigma2")
    return _out(eps**2 * v / (2 * m_**2 + eps**2 * v))


@_xarray_aware()
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


@_xarray_aware()
def pwh_beats_both_laplace(n: object, c: object, epsilon: object, m: object, sigma2: object) -> bool | np.ndarray:
    """Where ``R(PWH) > 1`` with Laplace noise, homogeneous (derived in the docs; replaces the printed conditions).

    With ``u = eps^2 sigma2 / (2 m^2)`` and ``c_crit = u/(1 + u)``: ``E_PWH < E_T`` whenever
    ``2 c^2 n - 2 c + 1 > 0`` (always for ``c < 1/2``), and ``E_PWH < E_F`` iff ``c n > 1`` and either
    ``c >= c_crit`` or ``n < (1-c)(1+u) / (c ((1-c) u - c))``.  Returns a boolean (array).
    The paper's Section 5 conditions (``eps >= sqrt(2) m/sigma``, or ``c <= eps^2 sigma^2/(2 m^2)``,
    or ``n < 2 m^2 (1+c)/(c (2 c m^2 - eps^2 sigma^2))``) disagree with the exact ``R`` (see the docs).
    """
    n_, c_ = _nc(n, c)
    eps = _arr(epsilon, "epsilon", lo=0.0, lo_open=True)
    m_ = _arr(m, "m", lo=0.0, lo_open=True)
    u = eps**2 * _var(sigma2, "sigma2") / (2 * m_**2)
    den = c_ * ((1 - c_) * u - c_)
    with np.errstate(divide="ignore", invalid="ignore"):
        small_n = np.where(den > 0, n_ < (1 - c_) * (1 + u) / np.where(den > 0, den, 1.0), True)
    below_T = c_ < c_**2 * n_ + 0.5  # E_PWH < E_T (derived: needs 2 c^2 n - 2 c + 1 > 0)
    out = (c_ * n_ > 1) & ((c_ >= u / (1 + u)) | small_n) & below_T
    return bool(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------------------
# the 17/8 .. 16/7 bound (Corollary 4.4, Appendix B)
# --------------------------------------------------------------------------------------
@_xarray_aware()
def kvh_improvement_limit(c: object, epsilon: object, m: object, sigma2: object) -> float | np.ndarray:
    """``lim_{n -> inf} R(KVH)`` with Laplace noise, homogeneous (derived in the docs).

    With ``u = sigma2 / s_L2 = eps^2 sigma2 / (2 m^2)``: ``n E_T -> (1-c) u s_L2/c``,
    ``n E_F = s_L2`` and ``n E_KVH -> (1-c) u s_L2 / (u + c)``, so the limit is
    ``(u + c)/c`` when ``c >= u/(1+u)`` (= c_crit) and ``(u + c)/((1-c) u)`` otherwise; its
    maximum over ``c`` is ``2 + u``, at ``c = c_crit``.
    """
    c_ = _arr(c, "c", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    eps = _arr(epsilon, "epsilon", lo=0.0, lo_open=True)
    m_ = _arr(m, "m", lo=0.0, lo_open=True)
    u = eps**2 * _var(sigma2, "sigma2") / (2 * m_**2)
    tcm_wins = (1 - c_) * u < c_
    with np.errstate(divide="ignore", invalid="ignore"):
        other = (u + c_) / ((1 - c_) * u)
    return _out(np.where(tcm_wins, (u + c_) / c_, other))


class KVHMaximum(NamedTuple):
    """The largest ``R(KVH)`` (Laplace, homogeneous) and where it is reached.

    ``n = inf`` marks a supremum approached as ``n -> inf`` (not attained).
    """

    R: float
    c: float
    sigma2: float
    n: float


def _kvh_R_laplace(n, c, epsilon, m, sigma2):
    s_T2, s_L2 = noise_variances("laplace", epsilon, m, n, c)
    e = kvh_mse(n, c, sigma2, s_T2, s_L2)
    return relative_improvement(e, n, c, sigma2, sigma2, s_T2, s_L2)[0]


def max_kvh_improvement(epsilon: float, m: float = 1.0, n: float | None = None, sigma2_max: float | None = None) -> KVHMaximum:
    """Maximum of ``R(KVH)`` over ``c`` in (0, 1) and ``sigma2`` in ``[0, sigma2_max]`` (Laplace noise).

    ``sigma2_max`` defaults to ``m^2/4``, the largest variance of a distribution on ``[0, m]``
    (Popoviciu).  With ``n`` given the maximum at that ``n`` is found numerically (a grid over
    ``c`` and ``sigma2`` refined by a bounded optimiser).  With ``n=None`` the supremum over all
    ``n`` is returned: ``2 + u_max`` with ``u_max = eps^2 sigma2_max / (2 m^2)``, at
    ``c = u_max/(1 + u_max)`` and ``n -> inf`` (it is approached, never attained: the finite-``n``
    maxima increase towards it, see the tests).  For ``epsilon <= 1`` and ``sigma2_max = m^2/4``
    this is ``2 + eps^2/8 <= 17/8``, the lower end of Corollary 4.4's ``[17/8, 16/7]``.
    """
    eps = float(_arr(epsilon, "epsilon", lo=0.0, lo_open=True))
    m_ = float(_arr(m, "m", lo=0.0, lo_open=True))
    smax = m_**2 / 4 if sigma2_max is None else float(_arr(sigma2_max, "sigma2_max", lo=0.0))
    if np.ndim(epsilon) or np.ndim(m):
        raise TypeError("max_kvh_improvement takes scalar epsilon and m")
    if n is None:
        u = eps**2 * smax / (2 * m_**2)
        return KVHMaximum(2.0 + u, u / (1 + u), smax, math.inf)
    n_ = float(_arr(n, "n", lo=0.0, lo_open=True))
    ss = np.linspace(0.0, smax, 65)
    # R(c) has a kink where E_T = E_F (the crossing, which is where the maximum sits in every
    # case we tried); search a dense logit grid plus the crossing for every sigma2 ...
    lc = np.linspace(-14.0, 14.0, 2801)
    sL = 2 * m_**2 / eps**2
    cross = (n_ * ss + np.sqrt((n_ * ss) ** 2 + 4 * n_ * (sL + ss) * sL)) / (2 * n_ * (sL + ss))
    cands = np.concatenate([np.broadcast_to(special.expit(lc)[:, None], (lc.size, ss.size)), cross[None, :]], axis=0)
    cands = np.clip(cands, 1e-12, 1 - 1e-12)
    grid = _kvh_R_laplace(n_, cands, eps, m_, ss[None, :])
    i, j = np.unravel_index(int(np.argmax(grid)), grid.shape)
    best = (float(grid[i, j]), float(cands[i, j]), float(ss[j]))
    # ... then refine c by bounded Brent searches on both sides of the best candidate
    c0 = best[1]
    lo_c, hi_c = special.expit(special.logit(c0) - 0.02), special.expit(special.logit(c0) + 0.02)
    for a, b in ((lo_c, c0), (c0, hi_c)):
        if b > a:
            res = optimize.minimize_scalar(
                lambda cc: -float(_kvh_R_laplace(n_, cc, eps, m_, best[2])), bounds=(a, b), method="bounded",
                options={"xatol": 1e-12},
            )
            if -res.fun > best[0]:
                best = (float(-res.fun), float(res.x), best[2])
    return KVHMaximum(best[0], best[1], best[2], n_)


class AppendixBInstance(NamedTuple):
    """Appendix B's instance at one ``n``: the ``c`` where ``E_T = E_F`` and ``R(KVH)`` there."""

    c: float | np.ndarray
    R: float | np.ndarray


def appendix_b_instance(n: object, epsilon: float = 1.0, m: float = 1.0, sigma2: float | None = None) -> AppendixBInstance:
    """Appendix B's limiting instance: Laplace noise, ``m = 1``, ``epsilon = 1``, ``sigma2 = 1/4``,
    ``c = (1 + sqrt((288 + n)/n)) / 18``; ``R(KVH) -> 17/8`` as ``n -> inf``.

    That ``c`` is the root of ``E_T = E_F`` (``9 n c^2 - n c - 8 = 0``); in general, with
    ``s_L2 = 2 m^2/eps^2``, ``c = (n sigma2 + sqrt(n^2 sigma2^2 + 4 n (s_L2 + sigma2) s_L2)) / (2 n (s_L2 + sigma2))``.
    ``sigma2`` defaults to ``m^2/4``.
    """
    n_ = _arr(n, "n", lo=0.0, lo_open=True)
    eps = _arr(epsilon, "epsilon", lo=0.0, lo_open=True)
    m_ = _arr(m, "m", lo=0.0, lo_open=True)
    v = m_**2 / 4 if sigma2 is None else _var(sigma2, "sigma2")
    sL = 2 * m_**2 / eps**2
    c = (n_ * v + np.sqrt((n_ * v) ** 2 + 4 * n_ * (sL + v) * sL)) / (2 * n_ * (sL + v))
    if np.any(c >= 1):
        raise ValueError(f"n is too small: the crossing point c = {float(np.max(c)):g} is not in (0, 1)")
    return AppendixBInstance(_out(c), _out(_kvh_R_laplace(n_, c, eps, m_, v)))


# --------------------------------------------------------------------------------------
# amplification (Theorem 8.1, Appendix D)
# --------------------------------------------------------------------------------------
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


@_xarray_aware()
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


@_xarray_aware()
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


@_xarray_aware()
def laplace_sum_log_ratio(x: object, n: object, b: object, k: object) -> float | np.ndarray:
    """``log p(x) - log p(x + k)`` for the sum of ``n`` Laplace(``b``) (Appendix D).

    The density is log-concave, so this is non-decreasing in ``x`` (for ``k > 0``) and tends
    to ``k / b`` as ``x -> inf``: with ``k = m`` and ``b = m/epsilon`` the joint noise gives
    exactly ``epsilon`` -- no amplification of the plain sum.
    """
    k_ = _real(k, "k")
    return _out(_laplace_sum_logpdf(x, n, b) - _laplace_sum_logpdf(_real(x, "x") + k_, n, b))


@_xarray_aware()
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
