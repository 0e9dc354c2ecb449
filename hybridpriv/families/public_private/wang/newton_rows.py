"""Many weighted logistic fits at once: :func:`fit_logistic`'s Newton method vectorised over fits.

Algorithm 2 and Algorithm 1's releases fit one small weighted logistic regression per noisy weight vector: tens
of thousands per calibration truth, each a few numpy calls per Newton step on 4 columns and 19-2,000 rows, so
their time was call overhead, not arithmetic.  :func:`fit_logistic_rows` takes ``B`` fits (on one set of points,
or each on its own points of the same shape) and runs the same damped Newton method on all of them together,
array by array: the same stopping rule (gradient norm below ``GTOL``, reached quadratically), the same Armijo
search, the same refusals (an iterate separating the weighted points without a ridge, a Hessian not numerically
positive definite, no descent, 30 iterations).  Every fit the vectorised loop refuses is handed, alone, to
:func:`~hybridpriv.families.public_private.wang.contrasts.fit_logistic` (Newton's method again, then SciPy
``trust-exact``): those fits get exactly the numbers they got before.  The others agree with it to the stopping
rule's accuracy (both stop within ``GTOL / lambda_min(H)`` of the one minimiser), not to the bit: the products
are summed in another order.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from .contrasts import _EPS, _NEWTON_MAXITER, GTOL, fit_logistic

__all__ = ["fit_logistic_rows"]

#: Accept a Newton step only while ``lambda_min(H) / lambda_max(H)`` exceeds this: stricter than the one-norm
#: reciprocal condition ``fit_logistic`` requires (1e-12; the two differ by at most the dimension), so a fit this
#: loop accepts is one ``fit_logistic`` accepts too.
_RATIO_MIN = 1e-10

#: Fits of more than this many ``rows * columns**2`` run one by one, each from the previous fit's solution (as
#: before the vectorised loop): there BLAS's ``syrk`` on the positively weighted rows beats the stacked products
#: (``benchmarks/wang_logistic_rows.py``: 4 columns, 2,000 rows 0.8-1.0 times the one-by-one speed; 101 columns,
#: 1,500 rows 0.2-0.35 times; 4 columns, 19-388 rows 1.7-2.9 times faster).
_VECTORISE_MAX_WORK = 16_000

#: Fits per block: a block's arrays hold at most this many numbers of ``(fits, rows)`` (about 32 MB each).
_BLOCK_NUMBERS = 1 << 22


def fit_logistic_rows(X: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float = 0.0
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``B`` weighted logistic fits: ``X`` ``(n, d)`` shared by every fit or ``(B, n, d)``, ``y`` ``(n,)`` or
    ``(B, n)``, ``weights`` ``(B, n)`` (>= 0).

    Large fits (``rows * d**2`` above ``_VECTORISE_MAX_WORK``) run one by one through ``fit_logistic``, each
    started from the previous fit's solution.  Returns ``(thetas (B, d), newton (B,))`` as :func:`~hybridpriv.families.public_private.wang.contrasts.fit_logistic`
    row by row would (``newton`` False where ``trust-exact`` gave the answer), to the stopping rule's accuracy.
    """
    W = np.asarray(weights, dtype=float)
    if W.ndim != 2:
        raise ValueError(f"weights must be (fits, rows), got shape {W.shape}")
    if np.any(W < 0):
        raise ValueError(f"logistic weights must be >= 0 (the objective is convex only then), got min {float(W.min())!r}")
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    shared = X.ndim == 2
    if X.shape[-2] != W.shape[1] or (not shared and X.shape[0] != W.shape[0]):
        raise ValueError(f"X {X.shape} and weights {W.shape} do not match")
    B, d = W.shape[0], X.shape[-1]
    thetas, newton = np.zeros((B, d)), np.zeros(B, dtype=bool)
    if W.shape[1] * d * d > _VECTORISE_MAX_WORK:  # arithmetic, not call overhead, dominates: one by one
        start = None
        for b in range(B):
            thetas[b], newton[b] = fit_logistic(X if shared else X[b], y if shared else y[b], W[b], l2, start)
            start = thetas[b] if newton[b] else None
        return thetas, newton
    step = max(1, _BLOCK_NUMBERS // max(1, W.shape[1] * (1 if shared else d)))
    for lo in range(0, B, step):
        sl = slice(lo, min(B, lo + step))
        thetas[sl], newton[sl] = _newton_block(X if shared else X[sl], y if shared else y[sl], W[sl], float(l2))
    for b in np.flatnonzero(~newton):  # refused above: fit_logistic alone, as before
        thetas[b], newton[b] = fit_logistic(X if shared else X[b], y if shared else y[b], W[b], l2)
    return thetas, newton


def _eta(X: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``X theta`` per fit: ``X`` ``(n, d)`` shared or ``(A, n, d)``, ``theta`` ``(A, d)`` -> ``(A, n)``."""
    return theta @ X.T if X.ndim == 2 else np.matmul(X, theta[:, :, None])[:, :, 0]


def _fun(y: np.ndarray, w: np.ndarray, l2: float, theta: np.ndarray, eta: np.ndarray) -> np.ndarray:
    return np.sum(w * (np.logaddexp(0.0, eta) - y * eta), axis=1) + 0.5 * l2 * np.sum(theta * theta, axis=1)


def _jac_hess(X: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float, theta: np.ndarray, eta: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    s = special.expit(eta)
    r, v = w * (s - y), w * s * (1.0 - s)
    if X.ndim == 2:
        g = r @ X
        h = np.matmul(X.T[None, :, :] * v[:, None, :], X)
    else:
        g = np.matmul(r[:, None, :], X)[:, 0, :]
        h = np.matmul(np.swapaxes(X, 1, 2) * v[:, None, :], X)
    if l2:
        d = theta.shape[1]
        g = g + l2 * theta
        h[:, np.arange(d), np.arange(d)] += l2
    return g, h


def _newton_block(X: np.ndarray, y: np.ndarray, W: np.ndarray, l2: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~hybridpriv.families.public_private.wang.contrasts._newton` on every fit of a block at once, from 0.
    ``(thetas, accepted)``: a fit not accepted is left for ``fit_logistic``.

    The fits still iterating are ``act``; each iteration gathers their arrays once (``Xa, ya, wa``: the shared
    points are not copied) and narrows them with ``act`` as fits stop or are refused."""
    B, d = W.shape[0], X.shape[-1]
    shared = X.ndim == 2
    theta = np.zeros((B, d))
    accepted = np.zeros(B, dtype=bool)
    act = np.arange(B)
    eta = _eta(X, theta)
    f = _fun(y, W, l2, theta, eta)
    g_prev = np.full(B, math.inf)
    for _ in range(_NEWTON_MAXITER):
        if act.size == 0:
            break
        Xa, ya, wa, th = (X, y, W[act], theta[act]) if shared else (X[act], y[act], W[act], theta[act])

        def keep(mask: np.ndarray) -> None:  # narrow the iteration's arrays to the fits in mask
            nonlocal act, Xa, ya, wa, th, eta
            act, wa, th, eta = act[mask], wa[mask], th[mask], eta[mask]
            if not shared:
                Xa, ya = Xa[mask], ya[mask]

        if not l2:  # an iterate separating the positively weighted points: no MLE
            keep(~np.all(((2.0 * ya - 1.0) * eta > 0) | (wa <= 0), axis=1))
        g, h = _jac_hess(Xa, ya, wa, l2, th, eta)
        g_norm = np.linalg.norm(g, axis=1)
        done = g_norm < GTOL
        accepted[act[done]] = (g_prev[act[done]] == math.inf) | (g_prev[act[done]] >= 100.0 * g_norm[done])
        ok = ~done & np.isfinite(h).all(axis=(1, 2)) & np.isfinite(g_norm)  # eigvalsh fails on the whole stack else
        g_prev[act[~done]] = g_norm[~done]
        keep(ok)
        g, h = g[ok], h[ok]
        lam = np.linalg.eigvalsh(h)
        ok = (lam[:, 0] > 0) & (lam[:, 0] > _RATIO_MIN * lam[:, -1])
        keep(ok)
        g, h = g[ok], h[ok]
        step = np.linalg.solve(h, -g[:, :, None])[:, :, 0]
        slope = np.sum(g * step, axis=1)
        ok = slope < 0
        keep(ok)
        step, slope = step[ok], slope[ok]
        f0 = f[act]
        tol = 8.0 * _EPS * np.abs(f0)
        t = np.ones(act.size)
        new, f_new, eta_new = th.copy(), f0.copy(), np.empty((act.size, W.shape[1]))
        pending = np.ones(act.size, dtype=bool)
        while pending.any():
            p = np.flatnonzero(pending)
            cand = th[p] + t[p, None] * step[p]
            e = _eta(Xa if shared else Xa[p], cand)
            fc = _fun(ya if shared else ya[p], wa[p], l2, cand, e)
            good = fc <= f0[p] + 1e-4 * t[p] * slope[p] + tol[p]
            q = p[good]
            new[q], f_new[q], eta_new[q] = cand[good], fc[good], e[good]
            pending[q] = False
            bad = p[~good]
            t[bad] *= 0.5
            pending[bad[t[bad] < 1e-10]] = False  # no acceptable step: refused below
        moved = t >= 1e-10
        act, eta = act[moved], eta_new[moved]
        theta[act], f[act] = new[moved], f_new[moved]
    return theta, accepted
