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


class _Rows:
    """The objective, gradient and Hessian of the fits ``idx`` of a block at ``theta`` ``(len(idx), d)``."""

    def __init__(self, X: np.ndarray, y: np.ndarray, W: np.ndarray, l2: float) -> None:
        self.X, self.y, self.W, self.l2 = X, y, W, l2
        self.shared = X.ndim == 2

    def parts(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.shared:
            return self.X, self.y, self.W[idx]
        return self.X[idx], self.y[idx], self.W[idx]

    def eta(self, idx: np.ndarray, theta: np.ndarray) -> np.ndarray:
        X = self.X if self.shared else self.X[idx]
        return theta @ X.T if self.shared else np.matmul(X, theta[:, :, None])[:, :, 0]

    def fun(self, idx: np.ndarray, theta: np.ndarray, eta: np.ndarray) -> np.ndarray:
        _, y, w = self.parts(idx)
        return np.sum(w * (np.logaddexp(0.0, eta) - y * eta), axis=1) + 0.5 * self.l2 * np.sum(theta * theta, axis=1)

    def separates(self, idx: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """Fits whose ``theta`` (as ``eta``) separates their positively weighted points, without a ridge."""
        if self.l2:
            return np.zeros(len(idx), dtype=bool)
        _, y, w = self.parts(idx)
        return np.all(((2.0 * y - 1.0) * eta > 0) | (w <= 0), axis=1)

    def jac_hess(self, idx: np.ndarray, theta: np.ndarray, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X, y, w = self.parts(idx)
        s = special.expit(eta)
        r, v = w * (s - y), w * s * (1.0 - s)
        if self.shared:
            g = r @ X
            h = np.matmul(X.T[None, :, :] * v[:, None, :], X)
        else:
            g = np.matmul(r[:, None, :], X)[:, 0, :]
            h = np.matmul(np.swapaxes(X, 1, 2) * v[:, None, :], X)
        d = theta.shape[1]
        if self.l2:
            g = g + self.l2 * theta
            h[:, np.arange(d), np.arange(d)] += self.l2
        return g, h


def _newton_block(X: np.ndarray, y: np.ndarray, W: np.ndarray, l2: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~hybridpriv.families.public_private.wang.contrasts._newton` on every fit of a block at once, from 0.
    ``(thetas, accepted)``: a fit not accepted is left for ``fit_logistic``."""
    B, d = W.shape[0], X.shape[-1]
    rows = _Rows(X, y, W, l2)
    theta = np.zeros((B, d))
    accepted = np.zeros(B, dtype=bool)
    act = np.arange(B)
    eta = rows.eta(act, theta)
    f = rows.fun(act, theta, eta)
    g_prev = np.full(B, math.inf)
    for _ in range(_NEWTON_MAXITER):
        if act.size == 0:
            break
        th = theta[act]
        keep = ~rows.separates(act, eta)
        act, th, eta = act[keep], th[keep], eta[keep]
        g, h = rows.jac_hess(act, th, eta)
        g_norm = np.linalg.norm(g, axis=1)
        done = g_norm < GTOL
        accepted[act[done]] = (g_prev[act[done]] == math.inf) | (g_prev[act[done]] >= 100.0 * g_norm[done])
        go = ~done
        act, th, g, h, g_norm = act[go], th[go], g[go], h[go], g_norm[go]
        if act.size == 0:
            break
        g_prev[act] = g_norm
        ok = np.isfinite(h).all(axis=(1, 2)) & np.isfinite(g_norm)  # eigvalsh fails on the whole stack otherwise
        act, th, g, h = act[ok], th[ok], g[ok], h[ok]
        lam = np.linalg.eigvalsh(h)
        ok = (lam[:, 0] > 0) & (lam[:, 0] > _RATIO_MIN * lam[:, -1])
        act, th, g, h = act[ok], th[ok], g[ok], h[ok]
        step = np.linalg.solve(h, -g[:, :, None])[:, :, 0]
        slope = np.sum(g * step, axis=1)
        ok = slope < 0
        act, th, step, slope = act[ok], th[ok], step[ok], slope[ok]
        f0 = f[act]
        tol = 8.0 * _EPS * np.abs(f0)
        t = np.ones(act.size)
        new, f_new, eta_new = th.copy(), f0.copy(), np.empty((act.size, W.shape[1]))
        pending = np.ones(act.size, dtype=bool)
        while pending.any():
            p = np.flatnonzero(pending)
            cand = th[p] + t[p, None] * step[p]
            e = rows.eta(act[p], cand)
            fc = rows.fun(act[p], cand, e)
            good = fc <= f0[p] + 1e-4 * t[p] * slope[p] + tol[p]
            q = p[good]
            new[q], f_new[q], eta_new[q] = cand[good], fc[good], e[good]
            pending[q] = False
            bad = p[~good]
            t[bad] *= 0.5
            pending[bad[t[bad] < 1e-10]] = False  # no acceptable step: refused below
        moved = t >= 1e-10
        act, new, f_new, eta_new = act[moved], new[moved], f_new[moved], eta_new[moved]
        theta[act], f[act], eta = new, f_new, eta_new
    return theta, accepted
