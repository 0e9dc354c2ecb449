"""Compiled inner loops of one K-means run: nearest centre, randomized response, cluster sums, line 4's reports.

They do what the NumPy path does (SciPy's ``cdist`` matrix and a running minimum over its ``K``
rows, :func:`~hybridpriv.noise.randomized_response`'s reports from its uniforms, one
``bincount`` per coordinate, ``Generator.laplace``), with the same floating-point operations in
the same order, so the results are the same bit for bit:

* squared distance ``(c_0 - x_0)^2 + (c_1 - x_1)^2``: points in the plane (:data:`D`; other
  dimensions keep SciPy's ``cdist``), one addition, so no order question arises; no fast-math, so
  no fused multiply-add;
* nearest centre: the running strict minimum over centres ``0..K-1`` (ties to the lower index).
  The search runs on the points transposed (``xt``, shape ``(2, n)``: all first coordinates, then
  all second ones) with the centres padded to a power of two ``K' >= K`` (:func:`pad`) by copies
  of centre 0, so the loop over centres has a length fixed at compile time (one kernel per
  ``K'``, :func:`scans`), is unrolled, and the loop over points runs in SIMD lanes: ~4x faster than
  one point at a time with a loop over ``K`` of run-time length.  A copy of centre 0 never wins: its
  distance is the same double as centre 0's, and the running minimum is already at most that;
* randomized response (:func:`hybridpriv.noise.randomized_response`, given its uniforms ``u``):
  keep the label when ``u < keep``, else ``min(int((u - keep) / (1 - keep) * K), K - 1)``;
* cluster sums: ``sums[label] += value`` point by point in order, as ``numpy.bincount`` with
  weights accumulates; counts as integers;
* line 4's reports ``x + b * Lap(1)`` (:func:`laplace_reports`): ``Generator.laplace(0, 1)`` turns
  one uniform ``U`` of the generator (the doubles ``Generator.random`` gives) into
  ``0 - 1 * log(2 - U - U)`` if ``U >= 0.5``, else ``0 + 1 * log(U + U)`` (NumPy's
  ``random_laplace``, C library ``log``), and redraws when ``U == 0``; the kernel does the same
  arithmetic on uniforms the caller drew and reports a zero so the caller can fall back.  With the
  uniforms, ~1.7x faster than ``laplace`` and then ``*= b``, ``+= x`` (one pass, branch-free).

Randomness never enters here: the uniforms are drawn by the caller from its generator.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

__all__ = ["D", "add", "assign", "assign_sums", "assign_t", "laplace_reports", "pad", "rr_assign_sums", "scans",
           "sum_rows", "take_rows", "transpose"]

#: The dimension the kernels serve: a squared distance of two terms has one order of addition.
D = 2


def transpose(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Points ``(n, 2)`` as the kernels read them: ``(2, n)``, C-contiguous (into ``out`` if given)."""
    out = np.empty((2, x.shape[0])) if out is None else out
    _transpose(x, out)
    return out


def pad(c: np.ndarray) -> np.ndarray:
    """Centres ``(K, 2)`` padded by copies of centre 0 to ``K'``, the least power of two ``>= K``, C-contiguous."""
    k = c.shape[0]
    kp = 1 << (k - 1).bit_length()
    out = np.empty((kp, c.shape[1]))
    out[:k] = c
    out[k:] = c[0]
    return out


@functools.cache
def scans(kp: int):
    """``(nearest, rr_labels)``: the search over exactly ``kp`` centres (a power of two), compiled once
    per ``kp`` (numba keys its disk cache by the closure's constant too)."""

    @njit(cache=True, nogil=True, error_model="numpy", inline="always")
    def one(a0, a1, c):
        """Nearest of the ``kp`` centres ``c`` to the point ``(a0, a1)`` and its squared distance."""
        d0, d1 = c[0, 0] - a0, c[0, 1] - a1
        b = d0 * d0 + d1 * d1
        ix = 0
        for j in range(1, kp):
            d0, d1 = c[j, 0] - a0, c[j, 1] - a1
            s = d0 * d0 + d1 * d1
            closer = s < b  # strict: ties go to the lower index
            ix = j if closer else ix
            b = s if closer else b
        return ix, b

    @njit(cache=True, nogil=True, error_model="numpy")
    def nearest(xt, c, idx, best):
        """Nearest of the ``kp`` centres ``c`` to every point of ``xt`` ``(2, n)``: ``idx[i]``, ``best[i]``."""
        x0, x1 = xt[0], xt[1]
        for i in range(x0.shape[0]):
            idx[i], best[i] = one(x0[i], x1[i], c)

    @njit(cache=True, nogil=True, error_model="numpy")
    def rr_labels(xt, c, u, keep, k, labels):
        """Each point's nearest centre reported by randomized response over ``k`` labels (uniform
        ``u[i]``, keep probability ``keep``): ``labels[i]``."""
        spread = 1.0 - keep if keep < 1.0 else 1.0  # keep >= 1 (epsilon = inf): every label is kept, spread unused
        x0, x1 = xt[0], xt[1]
        for i in range(x0.shape[0]):
            ix, _ = one(x0[i], x1[i], c)
            ui = u[i]
            other = min(int((ui - keep) / spread * k), k - 1)
            labels[i] = ix if ui < keep else other

    return nearest, rr_labels


def assign(x: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre ``(n,)`` and squared distance ``(n,)`` of every point of ``x`` ``(n, 2)`` to ``c`` ``(K, 2)``."""
    return assign_t(transpose(x), c)


def assign_t(xt: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`assign` of transposed points ``xt`` ``(2, n)``."""
    n = xt.shape[1]
    idx, best = np.empty(n, dtype=np.intp), np.empty(n)
    cp = pad(c)
    scans(cp.shape[0])[0](xt, cp, idx, best)
    return idx, best


@njit(cache=True, nogil=True, error_model="numpy")
def add(labels, values, counts, sums):
    """``counts[labels[i]] += 1`` and ``sums[labels[i]] += values[i]`` for ``i`` in order (as ``bincount``)."""
    for i in range(labels.shape[0]):
        j = labels[i]
        counts[j] += 1
        sums[j, 0] += values[i, 0]
        sums[j, 1] += values[i, 1]


def assign_sums(x, c, counts, sums):
    """Add every point of ``x`` ``(n, 2)`` to the count ``(K,)`` and coordinate sums ``(K, 2)`` of its nearest centre."""
    add(assign(x, c)[0], x, counts, sums)


def rr_assign_sums(x, c, u, keep, values, counts, sums):
    """Each point's nearest centre reported by randomized response (uniform ``u[i]``, keep probability
    ``keep``); ``values[i]`` ``(2,)`` added to the count and sums of the reported cluster."""
    labels = np.empty(x.shape[0], dtype=np.intp)
    cp = pad(c)
    scans(cp.shape[0])[1](transpose(x), cp, u, keep, c.shape[0], labels)
    add(labels, values, counts, sums)


@njit(cache=True, nogil=True, error_model="numpy")
def laplace_reports(u, x, b, out):
    """``out[t, i, j] = Lap(u[(t n + i) d + j]) * b + x[i, j]`` for ``out`` ``(T, n, d)``, ``x`` ``(n, d)``,
    ``u`` ``(T n d,)``: ``Generator.laplace(0, 1)``'s draw from each uniform, scaled, plus the point
    (``laplace`` then ``*= b`` then ``+= x``, the same doubles).  False (``out`` then meaningless) if
    some ``u`` is 0, where ``laplace`` would have drawn another uniform.

    Branch-free (a branch taken half the time at random costs more than the ``log``): with
    ``f = 1.0`` if ``U >= 0.5`` else ``0.0``, the argument ``f (2 - U - U) + (1 - f) (U + U)`` is
    exactly the chosen one (both are finite and >= 0, so the other term is ``+0.0`` and adding it
    changes nothing), and ``0 + (1 - 2 f) log(.)`` is exactly ``0 - log(.)`` or ``0 + log(.)``
    (at ``U = 0.5``, ``log(1) = 0``: ``0 + (-0.0) = +0.0 = 0 - 0``)."""
    d = x.shape[1]
    m = x.shape[0] * d
    xf = x.ravel()
    of = out.reshape(-1)
    zero = False
    for t in range(out.shape[0]):
        for k in range(m):
            v = u[t * m + k]
            zero |= v == 0.0
            f = np.float64(v >= 0.5)
            w = math.log(f * (2.0 - v - v) + (1.0 - f) * (v + v))
            of[t * m + k] = (0.0 + (1.0 - 2.0 * f) * w) * b + xf[k]
    return not zero


@njit(cache=True, nogil=True, error_model="numpy")
def _transpose(x, out):
    for i in range(x.shape[0]):
        out[0, i] = x[i, 0]
        out[1, i] = x[i, 1]


@njit(cache=True, nogil=True, error_model="numpy")
def take_rows(x, mask, want, out, out_t):
    """``out[:] = x[mask == want]``, rows in order (``out`` has exactly that many rows), and ``out_t`` the same
    transposed."""
    r = 0
    for i in range(x.shape[0]):
        if mask[i] == want:
            for j in range(x.shape[1]):
                out[r, j] = out_t[j, r] = x[i, j]
            r += 1


@njit(cache=True, nogil=True, error_model="numpy")
def sum_rows(r, out):
    """``out[t] = r[t].sum(axis=0)`` for ``r`` ``(T, n, d)``: ``r.sum(axis=1)``'s doubles.  NumPy reduces
    a C-contiguous ``(T, n, d)`` array over axis 1 row by row (its inner loop runs over the ``d``
    contiguous coordinates) from its identity ``+0.0``: a running sum in row order, not its pairwise
    summation (which it keeps for a contiguous reduction axis)."""
    for t in range(r.shape[0]):
        for j in range(r.shape[2]):
            s = 0.0
            for i in range(r.shape[1]):
                s += r[t, i, j]
            out[t, j] = s
    return out
