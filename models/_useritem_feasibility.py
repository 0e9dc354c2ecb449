"""Existence and counting of binary matrices with given margins (compiled, ``cache=True``).

Row sums are ``r`` (items per user), column sums ``c`` (users per item), both ``int64``.  A
*row-sum histogram* ``h`` has ``h[k - 1]`` = number of users with exactly ``k`` items,
``k = 1..m`` (every user has at least one item).

* :func:`gale_ryser_violation`, :func:`histogram_feasible`: does a binary matrix with the
  margins exist (Gale-Ryser)?
* :func:`log_count_row_sums`, :func:`log_count_cost`: the log number of sorted row-sum vectors
  compatible with ``c`` for every number of users ``n`` (one dynamic programme).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._useritem_checks import ArrayLike, _int_scalar, _int_vector

__all__ = ["gale_ryser_violation", "histogram_feasible", "log_count_cost", "log_count_row_sums"]


# ----------------------------------------------------------------------------------------------
# Gale-Ryser
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _gr_violation(r, c_desc):  # pragma: no cover - compiled
    m = c_desc.shape[0]
    n = r.shape[0]
    sr = 0
    for v in r:
        sr += v
    sc = 0
    for v in c_desc:
        sc += v
    if sr != sc:
        return 0
    cnt = np.zeros(m + 2, np.int64)  # cnt[k] = #{i: r_i = k}, k > m pooled in cnt[m + 1]
    for v in r:
        cnt[min(v, m + 1)] += 1
    return _gr_counts_violation(cnt, n, c_desc)


@njit(cache=True)
def _gr_counts_violation(cnt, n, c_desc):  # pragma: no cover - compiled
    """Gale-Ryser from the row-sum counts ``cnt`` (``cnt[k] = #{i: r_i = k}``) of ``n`` rows: the
    first ``p`` with ``sum_i min(r_i, p) < `` the ``p`` largest column sums, or -1 (sums not checked)."""
    below = 0  # #{i: r_i < p}
    lhs = 0  # sum_i min(r_i, p) = sum_{q <= p} #{i: r_i >= q}
    rhs = 0  # C_p
    for p in range(1, c_desc.shape[0] + 1):
        below += cnt[p - 1]
        lhs += n - below
        rhs += c_desc[p - 1]
        if lhs < rhs:
            return p
    return -1


@njit(cache=True)
def _hist_violation(h, c_desc):  # pragma: no cover - compiled
    m = c_desc.shape[0]
    N = 0
    for v in c_desc:
        N += v
    n = 0
    tot = 0
    for k in range(h.shape[0]):
        n += h[k]
        tot += (k + 1) * h[k]
    if tot != N:
        return 0
    rstar = n  # #{i: r_i >= p}
    lhs = 0
    rhs = 0
    for p in range(1, m + 1):
        lhs += rstar
        rhs += c_desc[p - 1]
        if lhs < rhs:
            return p
        rstar -= h[p - 1]
    return -1


def gale_ryser_violation(r: ArrayLike, c: ArrayLike) -> int:
    """First violated Gale-Ryser condition for row sums ``r`` and column sums ``c``.

    With ``c`` sorted in decreasing order and ``C_p = c_1 + ... + c_p``, a binary matrix with
    row sums ``r`` and column sums ``c`` exists iff ``sum(r) == sum(c)`` and, for every
    ``p = 1..m``, ``sum_i min(r_i, p) >= C_p`` (at ``p = m`` this is an equality, which also
    forces ``r_i <= m``).

    Parameters
    ----------
    r, c
        Non-negative integer row and column sums (any order, zeros allowed).

    Returns
    -------
    int
        ``-1`` if such a matrix exists, ``0`` if the sums differ, else the first violated
        ``p`` (1-based).
    """
    rr = _int_vector(r, "r")
    cc = _int_vector(c, "c")
    return int(_gr_violation(rr, np.sort(cc)[::-1].copy()))


def histogram_feasible(h: ArrayLike, c: ArrayLike) -> bool:
    """Whether row sums with histogram ``h`` are compatible with column sums ``c``.

    The Gale-Ryser conditions in histogram form: ``sum_k k h_k = sum(c)`` and, for every
    ``p = 1..m``, ``sum_k h_k min(k, p) >= C_p`` (``c`` sorted in decreasing order).

    Parameters
    ----------
    h
        ``h[k - 1]`` = number of users with ``k`` items, ``k = 1..m``; length ``m = len(c)``.
    c
        Non-negative integer column sums.

    Returns
    -------
    bool
    """
    cc = _int_vector(c, "c")
    hh = _int_vector(h, "h")
    if hh.size != cc.size:
        raise ValueError(f"h must have length len(c) = {cc.size}, got length {hh.size}")
    return bool(_hist_violation(hh, np.sort(cc)[::-1].copy()) == -1)


# ----------------------------------------------------------------------------------------------
# counting sorted row-sum vectors
# ----------------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _logaddexp(a, b):  # pragma: no cover - compiled
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@njit(cache=True)
def _log_count_kernel(Cpref, n_max, n_values):  # pragma: no cover - compiled
    # Conjugate form: x_p = #{i: r_i >= p}, p = 1..m, x_1 = n >= x_2 >= ... >= x_m >= 0,
    # S_p = x_1 + ... + x_p >= C_p, S_m = N.  F_p(x, S) = number of completions
    # (x_{p+1}, ..., x_m) given x_p = x, S_p = S:
    #   F_m(x, S) = [S == N],  F_p(x, S) = sum_{y <= x} [S + y >= C_{p+1}] F_{p+1}(y, S + y).
    # Only reachable states are kept: S >= p x (earlier parts are >= x), so x <= N // p.
    # The sum over y is a running log-sum-exp along the diagonal (x, S + x): O(1) per cell.
    m = Cpref.shape[0] - 1
    N = Cpref[m]
    out = np.full(n_values.shape[0], -np.inf)
    if m == 0:
        for t in range(n_values.shape[0]):
            if n_values[t] == 0:
                out[t] = 0.0
        return out
    if m == 1:
        for t in range(n_values.shape[0]):
            if n_values[t] == N:
                out[t] = 0.0
        return out
    xprev = min(n_max, N // m)
    prev = np.full((xprev + 1, N + 1), -np.inf)
    for x in range(xprev + 1):
        prev[x, N] = 0.0
    for p in range(m - 1, 1, -1):
        xp = min(n_max, N // p)
        cur = np.full((xp + 1, N + 1), -np.inf)
        for S in range(Cpref[p], N + 1):
            acc = -np.inf
            xmax = min(xp, S // p)
            for x in range(xmax + 1):
                if x <= xprev and S + x <= N:
                    acc = _logaddexp(acc, prev[x, S + x])
                cur[x, S] = acc
        prev = cur
        xprev = xp
    for t in range(n_values.shape[0]):
        n = n_values[t]
        if n < Cpref[1] or n > N:
            continue
        acc = -np.inf
        for y in range(min(n, xprev) + 1):
            if n + y <= N:
                acc = _logaddexp(acc, prev[y, n + y])
        out[t] = acc
    return out


def _c_prefix(c: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(np.sort(c)[::-1]))).astype(np.int64)


def log_count_cost(c: ArrayLike, n_max: int) -> int:
    """Number of cells :func:`log_count_row_sums` visits for ``n`` up to ``n_max``.

    Run time is proportional to it (about 30-40 ns per cell); peak memory is about
    ``16 (min(n_max, N // 2) + 1) (N + 1)`` bytes with ``N = sum(c)``.  Callers can refuse
    problems that are too large before running the programme.

    Parameters
    ----------
    c
        Non-negative integer column sums.
    n_max
        The largest number of users asked for.

    Returns
    -------
    int
    """
    cc = _int_vector(c, "c")
    n_max = _int_scalar(n_max, "n_max", 0)
    Cpref = _c_prefix(cc)
    m, N = cc.size, int(Cpref[-1])
    cost = 0
    for p in range(2, m + 1):
        xp = min(n_max, N // p)
        S = np.arange(int(Cpref[p]), N + 1, dtype=np.int64)
        cost += int(np.minimum(xp, S // p).sum()) + S.size
    return cost + max(m, 1) * (n_max + 1)


def log_count_row_sums(c: ArrayLike, n_values: ArrayLike) -> np.ndarray:
    """Log number of sorted row-sum vectors compatible with ``c``, for each number of users.

    For each ``n`` in ``n_values``: the log of the number of vectors
    ``m >= r_1 >= ... >= r_n >= 1`` with ``sum(r) = sum(c)`` that satisfy the Gale-Ryser
    conditions with ``c`` (``-inf`` where there is none).

    In conjugate form ``x_p = #{i: r_i >= p}`` is a partition with ``x_1 = n``, at most ``m``
    parts, partial sums ``x_1 + ... + x_p >= C_p`` (``c`` sorted decreasing) and total
    ``sum(c)``; a backward dynamic programme over ``p`` with state ``(x_p, x_1 + ... + x_p)``,
    in log space, answers every ``n`` at once.  Cost: :func:`log_count_cost`.

    Parameters
    ----------
    c
        Non-negative integer column sums (``m = len(c)`` items).
    n_values
        Non-negative integer numbers of users.

    Returns
    -------
    numpy.ndarray
        ``float64`` array, one log count per entry of ``n_values``.
    """
    cc = _int_vector(c, "c")
    ns = _int_vector(n_values, "n_values")
    if ns.size == 0:
        return np.zeros(0)
    Cpref = _c_prefix(cc)
    n_max = int(min(ns.max(), Cpref[-1]))
    return _log_count_kernel(Cpref, n_max, ns)
