"""Existence and counting of binary matrices with given margins (compiled, ``cache=True``).

Row sums are ``r`` (items per user), column sums ``c`` (users per item), both ``int64``.  A
*row-sum histogram* ``h`` has ``h[k - 1]`` = number of users with exactly ``k`` items,
``k = 1..m`` (every user has at least one item).

* :func:`gale_ryser_violation`, :func:`histogram_feasible`: does a binary matrix with the
  margins exist (Gale-Ryser)?
* :func:`log_count_row_sums`, :func:`log_count_cost`: the log number of sorted row-sum vectors
  compatible with ``c`` for every number of users ``n`` (one dynamic programme).
* :func:`start_histogram`: a feasible row-sum histogram with ``n`` users, in ``O(m log m)``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numba import njit

from .model_checks import ArrayLike, _int_scalar, _int_vector

__all__ = ["gale_ryser_violation", "histogram_feasible", "log_count_cost", "log_count_row_sums", "start_histogram"]


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


def start_histogram(c: ArrayLike, n: int) -> np.ndarray:
    """A feasible row-sum histogram with ``n`` users: the conjugate of ``c``, then split rows.

    The same histogram as :func:`hybridpriv.families.user_item.model_step.initial_histogram` (the
    conjugate ``c*_i = #{j: c_j >= i}`` meets the Gale-Ryser conditions with equality; ``s = n -
    len(c*)`` times, one item of a largest row moves into a new row of 1 item, which keeps
    feasibility), in ``O(m log m)`` instead of ``s`` sorts: taking one item ``s`` times from a
    largest row lowers the rows above some level ``L`` to ``L``, and ``s - excess(L)`` of the rows at
    ``L`` to ``L - 1`` (``excess(L) = sum_i max(r_i - L, 0)``, ``L`` the lowest level with
    ``excess(L) <= s``).  ``n < len(c*)`` (infeasible) gives the conjugate's histogram, as there.

    Parameters
    ----------
    c
        Non-negative integer column sums, not all 0 (any order; ``m = len(c)``).
    n
        The number of users, ``max(c) <= n <= sum(c)`` for a feasible start.

    Returns
    -------
    numpy.ndarray
        ``int64[m]``: ``h[k - 1]`` users with ``k`` items.
    """
    cc = _int_vector(c, "c")
    n = _int_scalar(n, "n", 0)
    m = cc.size
    if m == 0 or cc.max() == 0:
        raise ValueError(f"c must hold a positive column sum, got {cc!r:.80}")
    if n > int(cc.sum()):
        raise ValueError(f"n must be <= sum(c) = {int(cc.sum())} (every user has an item), got {n}")
    cmax = int(cc.max())
    # g[v] = #{i: c*_i = v}, v = 0..m: c*_i = v iff c_(v+1) < i <= c_(v) (c_(v) the v-th largest, c_(m+1) = 0)
    cs = np.sort(cc)[::-1]
    g = np.concatenate(([0], cs - np.concatenate((cs[1:], [0])))).astype(np.int64)
    s = n - cmax  # rows to split off
    if s <= 0:
        return g[1:].copy()
    v = np.arange(m + 1, dtype=np.int64)
    above = np.concatenate((np.cumsum(g[::-1])[::-1][1:], [0]))  # above[L] = #{i: c*_i > L}
    weight = np.concatenate((np.cumsum((v * g)[::-1])[::-1][1:], [0]))  # sum of c*_i > L
    excess = weight - v * above  # excess(L), non-increasing in L
    L = int(np.argmax(excess <= s))  # excess(m) = 0 <= s
    k = s - int(excess[L])  # rows at level L that go down to L - 1 (fewer than #{c*_i >= L})
    h = g.copy()
    h[L + 1 :] = 0
    h[L] = int(above[L - 1]) - k
    h[L - 1] += k
    h[1] += s
    return h[1:].copy()


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


#: Values of ``p`` per vectorised block of :func:`log_count_cost` (bounds its temporary arrays).
_COST_BLOCK = 1 << 16
#: Below this ``sum(c)`` :func:`log_count_cost` computes in int64 (every term is below ``2**62``).
_COST_INT64_SUMS = 2**31


def _floor_sum(T, p):
    """``sum_{S=0}^{T} floor(S / p)`` for ``T >= -1`` (0 at ``T = -1``), elementwise."""
    q = T // p
    return p * q * (q - 1) // 2 + q * (T - q * p + 1)


def _cost_terms(Cpref: np.ndarray, N: int, nx: int, p: np.ndarray) -> np.ndarray:
    """Cells of sweep ``p`` of the programme (``p = 2..m``, int64; exact while ``N < 2**31``):
    ``sum_{S=C_p}^{N} (min(x_p, S // p) + 1)`` with ``x_p = min(nx, N // p)``, in closed form."""
    a = Cpref[p]
    x = np.minimum(nx, N // p)
    split = x * p  # S // p >= x_p from here on (split <= N)
    t = np.minimum(N, split - 1)
    below = np.where(t >= a, _floor_sum(t, p) - _floor_sum(a - 1, p), 0)  # S in [a, t]: S // p
    above = x * (N - np.maximum(a, split) + 1)  # S in [max(a, split), N]: x_p
    return below + above + (N - a + 1)


def log_count_cost(c: ArrayLike, n_max: int, limit: int | None = None) -> int:
    """Number of cells :func:`log_count_row_sums` visits for ``n`` up to ``n_max``.

    Run time is proportional to it (about 30-40 ns per cell); peak memory is about
    ``16 (min(n_max, N // 2) + 1) (N + 1)`` bytes with ``N = sum(c)``.  Callers can refuse
    problems that are too large before running the programme.

    Computed in closed form, ``O(m)`` (sweep ``p`` of the programme visits
    ``sum_{S=C_p}^{N} (min(x_p, S // p) + 1)`` cells, ``x_p = min(n_max, N // p)``, a sum of
    floors with a formula), in blocks of ``p``, so temporary memory stays small.

    Parameters
    ----------
    c
        Non-negative integer column sums.
    n_max
        The largest number of users asked for.
    limit
        ``None`` (the exact count) or a bound: once the count is known to exceed ``limit`` the
        function stops and returns the part counted so far, a number ``> limit`` (a lower bound
        of the count), so a guard decides without the rest of the work.

    Returns
    -------
    int
        The exact count, or (with ``limit``) a lower bound of it above ``limit``.
    """
    cc = _int_vector(c, "c")
    n_max = _int_scalar(n_max, "n_max", 0)
    if limit is not None:
        limit = _int_scalar(limit, "limit", 0)
    m = cc.size
    cost = max(m, 1) * (n_max + 1)  # the last sweep, over the n asked for (all of it for m < 2)
    if m < 2 or (limit is not None and cost > limit):
        return cost
    if float(cc.sum(dtype=np.float64)) < _COST_INT64_SUMS:  # int64 arithmetic is exact (terms < 2**62)
        Cpref = _c_prefix(cc)
        N = int(Cpref[-1])
        nx = min(n_max, N)
        for start in range(2, m + 1, _COST_BLOCK):
            terms = _cost_terms(Cpref, N, nx, np.arange(start, min(m + 1, start + _COST_BLOCK), dtype=np.int64))
            cost += (int(np.sum(terms >> 31)) << 31) + int(np.sum(terms & (2**31 - 1)))  # exact: no overflow
            if limit is not None and cost > limit:
                return cost
        return cost
    # huge sums (no caller runs this programme there): the same closed form with Python integers
    Cp = [0, *itertools.accumulate(sorted(cc.tolist(), reverse=True))]
    N = Cp[-1]
    nx = min(n_max, N)
    for p in range(2, m + 1):
        a, x = Cp[p], min(nx, N // p)
        split = x * p
        t = min(N, split - 1)
        below = _floor_sum(t, p) - _floor_sum(a - 1, p) if t >= a else 0
        cost += below + x * (N - max(a, split) + 1) + (N - a + 1)
        if limit is not None and cost > limit:
            return cost
    return cost


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
