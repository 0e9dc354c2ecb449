"""Relative improvements over the baselines (Definitions 3.5, 3.9, 5.1, 5.2), where PWH beats both,
and the 17/8 .. 16/7 bound of KVH (Corollary 4.4, Appendix B)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import optimize, special

from .._xarray import xarray_aware
from ._checks import _finite_result, _arr, _nc, _out, _var
from .risk import full_lm_mse, kvh_mse, noise_variances, tcm_only_mse

__all__ = ["AppendixBInstance", "KVHMaximum", "appendix_b_instance", "kvh_improvement_limit", "max_kvh_improvement",
           "pwh_beats_both_laplace", "relative_improvement", "relative_improvement_laplace"]


@xarray_aware(n_out=2)
@_finite_result()
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


@xarray_aware(n_out=2)
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



@xarray_aware
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
@xarray_aware
@_finite_result()
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

