"""Compiled combinatorial core for binary user-item matrices with known margins.

A *matrix* is a binary users x items matrix ``M`` stored CSR-like as ``(indptr, indices)``:
``indptr`` is ``int64[n + 1]`` and ``indices[indptr[i]:indptr[i + 1]]`` are the items of user
``i``, strictly increasing.  Row sums are ``r`` (items per user), column sums ``c`` (users per
item), both ``int64``.  A *row-sum histogram* ``h`` has ``h[k - 1]`` = number of users with
exactly ``k`` items, ``k = 1..m`` (every user has at least one item).

What is here:

* :func:`gale_ryser_violation`, :func:`histogram_feasible`: does a binary matrix with the
  margins exist (Gale-Ryser)?
* :func:`log_count_row_sums`, :func:`log_count_cost`: the log number of sorted row-sum vectors
  compatible with ``c`` for every number of users ``n`` (one dynamic programme).
* :func:`realize_greedy`, :func:`realize_networkx`: one matrix with given margins.
* :func:`curveball`: Curveball trades (Strona et al. 2014), a Markov chain whose stationary
  distribution is uniform over the matrices with the margins.
* :func:`h_chain`: a Metropolis-Hastings kernel over ``(n, h)``.
* :func:`mixing_check`: split R-hat and ESS of parallel Curveball chains.

Randomness comes only from the :class:`numpy.random.Generator` passed in (numba draws from
it directly, advancing its state).  The Python wrappers validate their input and raise
``ValueError`` naming the parameter and value (``r must ..., got VALUE``); the ``@njit``
kernels (``cache=True``) do the work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np
from numba import njit

__all__ = [
    "csr_margins",
    "curveball",
    "gale_ryser_violation",
    "h_chain",
    "histogram_feasible",
    "log_count_cost",
    "log_count_row_sums",
    "mixing_check",
    "realize_greedy",
    "realize_networkx",
]

ArrayLike = Sequence[int] | np.ndarray


# ----------------------------------------------------------------------------------------------
# validation helpers
# ----------------------------------------------------------------------------------------------
def _fmt(value: object, limit: int = 80) -> str:
    text = repr(value)
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=12, separator=", ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _int_vector(x: object, name: str, min_value: int | None = 0) -> np.ndarray:
    """``x`` as a contiguous int64 vector after checking it holds integers >= ``min_value``."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of integers, got {_fmt(x)}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int64)
    elif arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        out = arr.astype(np.int64)
    else:
        raise ValueError(f"{name} must be a 1-D array of integers, got {_fmt(x)}")
    if min_value is not None and out.min() < min_value:
        raise ValueError(f"{name} must have entries >= {min_value}, got {_fmt(x)}")
    return np.ascontiguousarray(out)


def _int_scalar(x: object, name: str, min_value: int | None = None) -> int:
    if isinstance(x, bool) or not isinstance(x, Integral | np.integer):
        raise ValueError(f"{name} must be an integer, got {_fmt(x)}")
    v = int(x)
    if min_value is not None and v < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {v}")
    return v


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {_fmt(rng)}")
    return rng


def _check_csr(indptr: object, indices: object, writeable: bool) -> int:
    """Check a CSR pair (in place use: int64, C-contiguous, writeable); return the row count."""
    for name, arr in (("indptr", indptr), ("indices", indices)):
        if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype != np.int64:
            raise ValueError(f"{name} must be a 1-D numpy int64 array, got {_fmt(arr)}")
        if not arr.flags.c_contiguous or (writeable and not arr.flags.writeable):
            raise ValueError(f"{name} must be a C-contiguous writeable array, got {_fmt(arr)}")
    assert isinstance(indptr, np.ndarray) and isinstance(indices, np.ndarray)
    if indptr.size < 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise ValueError(f"indptr must start at 0 and be non-decreasing, got {_fmt(indptr)}")
    if indptr[-1] != indices.size:
        raise ValueError(f"indptr[-1] must equal len(indices) = {indices.size}, got {int(indptr[-1])}")
    if indices.size and indices.min() < 0:
        raise ValueError(f"indices must be >= 0, got {_fmt(indices)}")
    if not _rows_strictly_sorted(indptr, indices):
        raise ValueError(f"indices must be strictly increasing within each row, got {_fmt(indices)}")
    return indptr.size - 1


@njit(cache=True)
def _rows_strictly_sorted(indptr, indices):  # pragma: no cover - compiled
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i] + 1, indptr[i + 1]):
            if indices[p] <= indices[p - 1]:
                return False
    return True


def csr_margins(indptr: np.ndarray, indices: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column sums of a CSR binary matrix.

    Parameters
    ----------
    indptr, indices
        The matrix (see the module docstring).
    n_items
        The number of items ``m`` (columns); every index must be ``< n_items``.

    Returns
    -------
    r, c : numpy.ndarray
        ``int64`` row sums (length ``n``) and column sums (length ``m``).
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    m = _int_scalar(n_items, "n_items", 0)
    if indices.size and indices.max() >= m:
        raise ValueError(f"n_items must exceed every index ({int(indices.max())}), got {m}")
    return np.diff(indptr), np.bincount(indices, minlength=m).astype(np.int64)


# ----------------------------------------------------------------------------------------------
# 1-2. Gale-Ryser
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
    below = 0  # #{i: r_i < p}
    lhs = 0  # sum_i min(r_i, p) = sum_{q <= p} #{i: r_i >= q}
    rhs = 0  # C_p
    for p in range(1, m + 1):
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
# 3. counting sorted row-sum vectors
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


# ----------------------------------------------------------------------------------------------
# 4. realizations
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _greedy_kernel(r, c):  # pragma: no cover - compiled
    n = r.shape[0]
    m = c.shape[0]
    indptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        indptr[i + 1] = indptr[i] + r[i]
    indices = np.empty(indptr[n], np.int64)
    cap = c.copy()
    # items ordered by (remaining capacity desc, index asc); after a row takes the first k,
    # both the first k (all decremented) and the rest stay sorted: merge them in O(m).
    order = np.argsort(-cap, kind="mergesort")
    tmp = np.empty(m, np.int64)
    for i in range(n):
        k = r[i]
        if k > m:
            return indptr, indices, False
        base = indptr[i]
        for t in range(k):
            j = order[t]
            if cap[j] <= 0:
                return indptr, indices, False
            cap[j] -= 1
            indices[base + t] = j
        indices[base : base + k] = np.sort(indices[base : base + k])
        a = 0
        b = k
        t = 0
        while a < k and b < m:
            ja = order[a]
            jb = order[b]
            if cap[ja] > cap[jb] or (cap[ja] == cap[jb] and ja < jb):
                tmp[t] = ja
                a += 1
            else:
                tmp[t] = jb
                b += 1
            t += 1
        while a < k:
            tmp[t] = order[a]
            a += 1
            t += 1
        while b < m:
            tmp[t] = order[b]
            b += 1
            t += 1
        order[:] = tmp
    for j in range(m):
        if cap[j] != 0:
            return indptr, indices, False
    return indptr, indices, True


def _check_margins(r: object, c: object) -> tuple[np.ndarray, np.ndarray]:
    rr = _int_vector(r, "r")
    cc = _int_vector(c, "c")
    v = int(_gr_violation(rr, np.sort(cc)[::-1].copy()))
    if v == 0:
        raise ValueError(f"sum(r) must equal sum(c) = {int(cc.sum())}, got {int(rr.sum())}")
    if v > 0:
        raise ValueError(
            f"r must satisfy the Gale-Ryser condition with c (sum_i min(r_i, p) >= sum of the p largest "
            f"c_j), violated at p = {v}, got r = {_fmt(rr)}"
        )
    return rr, cc


def realize_greedy(r: ArrayLike, c: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """A binary matrix with row sums ``r`` and column sums ``c`` (constructive Gale-Ryser).

    Rows are processed in the given order; each row takes its ``r_i`` items among those with
    the largest remaining column capacity (ties to the lower item index).  This succeeds for
    any row order whenever the margins are feasible.  ``O(n m)`` after an ``O(m log m)`` sort.

    Parameters
    ----------
    r, c
        Non-negative integer row and column sums.

    Returns
    -------
    indptr, indices : numpy.ndarray
        The matrix in CSR form (``int64``, each row's items sorted).

    Raises
    ------
    ValueError
        If no binary matrix has these margins (naming the violated condition).
    """
    rr, cc = _check_margins(r, c)
    indptr, indices, ok = _greedy_kernel(rr, cc)
    if not ok:  # pragma: no cover - Gale-Ryser guarantees success
        raise RuntimeError("greedy realization failed on feasible margins")
    return indptr, indices


def realize_networkx(r: ArrayLike, c: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """A binary matrix with row sums ``r`` and column sums ``c`` built by networkx.

    Uses :func:`networkx.bipartite.havel_hakimi_graph` (simple graph), then converts the
    bipartite graph to CSR and checks its margins.

    Parameters
    ----------
    r, c
        Non-negative integer row and column sums.

    Returns
    -------
    indptr, indices : numpy.ndarray
        The matrix in CSR form.

    Raises
    ------
    ValueError
        If no binary matrix has these margins.
    """
    import networkx as nx

    rr, cc = _check_margins(r, c)
    n = rr.size
    g = nx.bipartite.havel_hakimi_graph(rr.tolist(), cc.tolist(), create_using=nx.Graph())
    indptr = np.zeros(n + 1, dtype=np.int64)
    rows = []
    for i in range(n):
        items = sorted(v - n for v in g.adj[i])
        rows.append(items)
        indptr[i + 1] = indptr[i] + len(items)
    indices = np.fromiter((j for row in rows for j in row), dtype=np.int64, count=int(indptr[-1]))
    r2, c2 = csr_margins(indptr, indices, cc.size)
    if not (np.array_equal(r2, rr) and np.array_equal(c2, cc)):  # pragma: no cover
        raise RuntimeError("networkx Havel-Hakimi construction returned wrong margins")
    return indptr, indices


# ----------------------------------------------------------------------------------------------
# 5. Curveball
# ----------------------------------------------------------------------------------------------
_TWO53 = 9007199254740992.0  # 2**53


@njit(cache=True, inline="always")
def _randint(rng, k):  # pragma: no cover - compiled
    """Exactly uniform integer in [0, k) from ``rng.random()`` (``j / 2**53``, ``j`` uniform on
    53 bits) by rejection; ~10x faster than ``rng.integers`` inside numba."""
    limit = 9007199254740992 - 9007199254740992 % k
    while True:
        x = np.int64(rng.random() * _TWO53)
        if x < limit:
            return x % k


@njit(cache=True)
def _curveball_kernel(indptr, indices, n_trades, rng, shuffle):  # pragma: no cover - compiled
    n = indptr.shape[0] - 1
    if n < 2:
        return
    maxr = 0
    for i in range(n):
        maxr = max(maxr, indptr[i + 1] - indptr[i])
    common = np.empty(maxr, np.int64)
    pool = np.empty(2 * maxr, np.int64)
    slot = np.empty(2 * maxr, np.int64)
    to_a = np.zeros(2 * maxr, np.bool_)
    for _ in range(n_trades):
        i = _randint(rng, n)
        j = _randint(rng, n - 1)
        if j >= i:
            j += 1
        a0 = indptr[i]
        a1 = indptr[i + 1]
        b0 = indptr[j]
        b1 = indptr[j + 1]
        p = a0
        q = b0
        nc = 0
        ns = 0
        na = 0
        while p < a1 and q < b1:
            x = indices[p]
            y = indices[q]
            if x == y:
                common[nc] = x
                nc += 1
                p += 1
                q += 1
            elif x < y:
                pool[ns] = x
                ns += 1
                na += 1
                p += 1
            else:
                pool[ns] = y
                ns += 1
                q += 1
        while p < a1:
            pool[ns] = indices[p]
            ns += 1
            na += 1
            p += 1
        while q < b1:
            pool[ns] = indices[q]
            ns += 1
            q += 1
        if na == 0 or na == ns:
            continue
        # A keeps a uniformly random na-subset of the (sorted) pool: partial Fisher-Yates.
        if shuffle:
            for s in range(ns):
                slot[s] = s
            for s in range(na):
                u = s + _randint(rng, ns - s)
                t = slot[s]
                slot[s] = slot[u]
                slot[u] = t
                to_a[slot[s]] = True
        else:  # deliberately broken variant (tests only): A takes the na smallest items
            for s in range(na):
                to_a[s] = True
        # rewrite both rows as sorted merges of the common items and their share of the pool
        for side in range(2):
            w = a0 if side == 0 else b0
            want = side == 0
            cpos = 0
            s = 0
            while True:
                while s < ns and to_a[s] != want:
                    s += 1
                if cpos < nc and (s >= ns or common[cpos] < pool[s]):
                    indices[w] = common[cpos]
                    cpos += 1
                elif s < ns:
                    indices[w] = pool[s]
                    s += 1
                else:
                    break
                w += 1
        for s in range(ns):
            to_a[s] = False


def curveball(indptr: np.ndarray, indices: np.ndarray, n_trades: int, rng: np.random.Generator) -> None:
    """Run ``n_trades`` Curveball trades on a binary matrix, in place.

    Each trade (Strona et al. 2014) picks two distinct users uniformly; the items held by
    exactly one of them are pooled and redistributed uniformly at random, each user keeping
    its number of items.  Row and column sums are preserved, rows stay sorted, and the
    chain's stationary distribution is uniform over all binary matrices with these margins
    (the trade kernel is symmetric and the chain is irreducible).

    Parameters
    ----------
    indptr, indices
        The matrix (CSR, ``int64``, C-contiguous, writeable, rows strictly increasing);
        ``indices`` is modified in place.
    n_trades
        Number of trades (>= 0).
    rng
        The source of randomness (its state advances).
    """
    _check_csr(indptr, indices, writeable=True)
    n_trades = _int_scalar(n_trades, "n_trades", 0)
    _check_rng(rng)
    _curveball_kernel(indptr, indices, n_trades, rng, True)


# ----------------------------------------------------------------------------------------------
# 6. Metropolis-Hastings over (n, h)
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _level_of(h, u):  # pragma: no cover - compiled
    """Level (1-based) of the u-th user when users are listed by level."""
    acc = 0
    for k in range(h.shape[0]):
        acc += h[k]
        if u < acc:
            return k + 1
    return -1


@njit(cache=True)
def _kth_occupied(h, idx):  # pragma: no cover - compiled
    """The level (1-based) of the idx-th (0-based) occupied level of h."""
    seen = 0
    for k in range(h.shape[0]):
        if h[k] > 0:
            if seen == idx:
                return k + 1
            seen += 1
    return -1


@njit(cache=True)
def _hist_ok(h, n, Cpref):  # pragma: no cover - compiled
    # sum_k k h_k = N is preserved by every move; check sum_{q <= p} #{r_i >= q} >= C_p.
    rstar = n
    lhs = 0
    for p in range(1, h.shape[0] + 1):
        lhs += rstar
        if lhs < Cpref[p]:
            return False
        rstar -= h[p - 1]
    return True


@njit(cache=True)
def _log_g(h, n, log_f, use_f):  # pragma: no cover - compiled
    if not use_f:
        return 0.0
    v = math.lgamma(n + 1.0)
    for k in range(h.shape[0]):
        if h[k] > 0:
            v += h[k] * log_f[k] - math.lgamma(h[k] + 1.0)
    return v


@njit(cache=True)
def _h_chain_kernel(  # pragma: no cover - compiled
    h, n, Cpref, log_target_n, log_f, use_f, steps, rng, n_lo, n_hi, hastings
):
    m = h.shape[0]
    g = _log_g(h, n, log_f, use_f)
    vary = n_lo < n_hi
    accepted = 0
    for _ in range(steps):
        u = rng.random() if vary else 0.5 * rng.random()
        if u < 0.25:
            # (c) within n, by levels: donor and receiver levels uniform among the occupied
            # levels (moves the rare large rows far more often than picking users does)
            if n < 2:
                continue
            occ = 0
            for k in range(m):
                if h[k] > 0:
                    occ += 1
            a = _kth_occupied(h, _randint(rng, occ))
            b = _kth_occupied(h, _randint(rng, occ))
            if a < 2 or b >= m or b == a - 1 or (a == b and h[a - 1] < 2):
                continue
            h[a - 1] -= 1
            h[a - 2] += 1
            h[b - 1] -= 1
            h[b] += 1
            occ_new = 0
            for k in range(m):
                if h[k] > 0:
                    occ_new += 1
            if _hist_ok(h, n, Cpref):
                g_new = _log_g(h, n, log_f, use_f)
                log_alpha = g_new - g
                if hastings:
                    log_alpha += 2.0 * (math.log(occ) - math.log(occ_new))
                if log_alpha >= 0.0 or math.log(rng.random()) < log_alpha:
                    g = g_new
                    accepted += 1
                    continue
            h[b] -= 1
            h[b - 1] += 1
            h[a - 2] -= 1
            h[a - 1] += 1
        elif u < 0.5:
            # (a) within n: donor level a -> a - 1, receiver level b -> b + 1
            if n < 2:
                continue
            a = _level_of(h, _randint(rng, n))
            h[a - 1] -= 1
            b = _level_of(h, _randint(rng, n - 1))
            h[a - 1] += 1
            if a < 2 or b >= m or b == a - 1:  # out of range, or the identity in h-space
                continue
            q_fwd = h[a - 1] * (h[b - 1] - 1) if a == b else h[a - 1] * h[b - 1]
            h[a - 1] -= 1
            h[a - 2] += 1
            h[b - 1] -= 1
            h[b] += 1
            q_rev = h[a - 2] * (h[a - 2] - 1) if b + 1 == a - 1 else h[b] * h[a - 2]
            ok = _hist_ok(h, n, Cpref)
            if ok:
                g_new = _log_g(h, n, log_f, use_f)
                log_alpha = g_new - g
                if hastings:
                    log_alpha += math.log(q_rev) - math.log(q_fwd)
                if log_alpha >= 0.0 or math.log(rng.random()) < log_alpha:
                    g = g_new
                    accepted += 1
                    continue
            h[b] -= 1
            h[b - 1] += 1
            h[a - 2] -= 1
            h[a - 1] += 1
        elif u < 0.75:
            # (b) birth: a user at level a >= 2 gives one item to a new user (level 1)
            if n >= n_hi:
                continue
            a = _level_of(h, _randint(rng, n))
            if a < 2:
                continue
            q_fwd = 0.25 * h[a - 1] / n
            h[a - 1] -= 1
            h[a - 2] += 1
            h[0] += 1
            # reverse death from n + 1: the dying user is one of h'_1 at level 1, the receiver
            # one of the other n users at level a - 1
            q_rev = 0.25 * h[0] / (n + 1) * (h[a - 2] - (1 if a == 2 else 0)) / n
            if _hist_ok(h, n + 1, Cpref):
                g_new = _log_g(h, n + 1, log_f, use_f)
                log_alpha = log_target_n[n + 1 - n_lo] - log_target_n[n - n_lo] + g_new - g
                if hastings:
                    log_alpha += math.log(q_rev) - math.log(q_fwd)
                if log_alpha >= 0.0 or math.log(rng.random()) < log_alpha:
                    g = g_new
                    n += 1
                    accepted += 1
                    continue
            h[0] -= 1
            h[a - 2] -= 1
            h[a - 1] += 1
        else:
            # (b) death: a user at level 1 leaves, its item goes to another user (b -> b + 1)
            if n <= n_lo or n < 2:
                continue
            a = _level_of(h, _randint(rng, n))
            if a != 1:
                continue
            h[0] -= 1
            b = _level_of(h, _randint(rng, n - 1))
            h[0] += 1
            if b >= m:
                continue
            q_fwd = 0.25 * h[0] / n * (h[b - 1] - (1 if b == 1 else 0)) / (n - 1)
            h[0] -= 1
            h[b - 1] -= 1
            h[b] += 1
            # reverse birth from n - 1: the donor is one of h''_{b+1} users at level b + 1
            q_rev = 0.25 * h[b] / (n - 1)
            if _hist_ok(h, n - 1, Cpref):
                g_new = _log_g(h, n - 1, log_f, use_f)
                log_alpha = log_target_n[n - 1 - n_lo] - log_target_n[n - n_lo] + g_new - g
                if hastings:
                    log_alpha += math.log(q_rev) - math.log(q_fwd)
                if log_alpha >= 0.0 or math.log(rng.random()) < log_alpha:
                    g = g_new
                    n -= 1
                    accepted += 1
                    continue
            h[b] -= 1
            h[b - 1] += 1
            h[0] += 1
    return n, accepted


def h_chain(
    h: ArrayLike,
    n: int,
    c: ArrayLike,
    log_target_n: ArrayLike,
    log_f: ArrayLike | None,
    steps: int,
    rng: np.random.Generator,
    n_lo: int,
    n_hi: int,
) -> tuple[np.ndarray, int, int]:
    r"""Metropolis-Hastings steps over the number of users and their row-sum histogram.

    The target is

    .. math::

        \log \pi(n, h) = \mathrm{log\_target\_n}[n - n_{lo}] + g(h)

    on histograms ``h`` with ``sum_k h_k = n``, ``sum_k k h_k = sum(c)`` that satisfy the
    Gale-Ryser conditions with ``c``, and ``n_lo <= n <= n_hi``.  Without ``log_f``,
    ``g = 0``: uniform over sorted row sums given ``n`` (pass ``-log count(n)`` from
    :func:`log_count_row_sums` in ``log_target_n`` for a given prior on ``n``).  With ``log_f``,
    ``g(h) = log(n! / prod_k h_k!) + sum_k h_k log_f[k - 1]``: row sums iid with (unnormalised)
    pmf ``f``, conditioned on feasibility.

    Moves (a user is one of the ``n`` units of the histogram; "pick a user" means uniformly):

    (c) within ``n`` by levels (probability 1/2, or 1/4 when ``n_lo < n_hi``): donor level
        ``a`` and receiver level ``b`` uniform among the ``L(h)`` occupied levels (``a = b``
        needs ``h_a >= 2``); the same ``h'`` as in (a); ``q(h -> h') = 1/L(h)^2``,
        ``q(h' -> h) = 1/L(h')^2``.  Rare large rows move as often as common small ones.

    (a) within ``n`` (probability 1/2, or 1/4 when ``n_lo < n_hi``): pick a donor at level ``a``
        and a distinct receiver at level ``b``; propose ``a -> a - 1`` (needs ``a >= 2``) and
        ``b -> b + 1`` (needs ``b < m``), i.e. ``h' = h - e_a + e_{a-1} - e_b + e_{b+1}``.
        ``b = a - 1`` gives ``h' = h`` (stay).  Each other ``h'`` comes from one ``(a, b)``,
        and the reverse move is donor ``b + 1``, receiver ``a - 1``.  In histogram space
        (``n (n - 1)`` cancels)::

            q(h -> h')  ∝ h_a h_b               (a != b)     h_a (h_a - 1)         (a == b)
            q(h' -> h)  ∝ h'_{b+1} h'_{a-1}     (b+1 != a-1)  h'_{a-1} (h'_{a-1} - 1) (b == a-2)

    (b) birth (probability 1/4 when ``n_lo < n_hi``): pick a user at level ``a >= 2``; it goes
        to ``a - 1`` and a new user at level 1 appears: ``h' = h - e_a + e_{a-1} + e_1``,
        ``n' = n + 1`` (rejected if ``n = n_hi``)::

            q(h -> h')  = 1/4 * h_a / n
            q(h' -> h)  = 1/4 * h'_1 / (n + 1) * (h'_{a-1} - [a = 2]) / n     (a death)

    (c) death (probability 1/4): pick a user; if at level 1 (else stay) it leaves, and a
        distinct receiver at level ``b < m`` gains its item:
        ``h' = h - e_1 - e_b + e_{b+1}``, ``n' = n - 1`` (rejected if ``n = n_lo``)::

            q(h -> h')  = 1/4 * h_1 / n * (h_b - [b = 1]) / (n - 1)
            q(h' -> h)  = 1/4 * h'_{b+1} / (n - 1)                              (a birth)

    Every proposal is accepted with probability
    ``min(1, pi(n', h') q(h' -> h) / (pi(n, h) q(h -> h')))``; infeasible proposals (Gale-Ryser
    fails) are rejected, so ``log_target_n`` is never read at an ``n`` without a feasible
    histogram (entries there may be ``±inf``).

    Parameters
    ----------
    h
        Current histogram, length ``m = len(c)``, feasible; not modified.
    n
        Current number of users, ``sum(h)``.
    c
        Column sums (any order).
    log_target_n
        Log target of ``n`` (unnormalised), length ``n_hi - n_lo + 1``; finite at ``n``.
    log_f
        ``None`` (or empty) for uniform sorted row sums given ``n``, else ``log f(k)`` for
        ``k = 1..m`` (``-inf`` allowed).
    steps
        Number of proposals.
    rng
        The source of randomness.
    n_lo, n_hi
        Bounds on ``n`` (``n_lo == n_hi``: ``n`` fixed, only move (a)).

    Returns
    -------
    h : numpy.ndarray
        The new histogram (a new ``int64`` array).
    n : int
        The new number of users.
    accepted : int
        Number of accepted proposals.
    """
    return _h_chain(h, n, c, log_target_n, log_f, steps, rng, n_lo, n_hi, True)


def _h_chain(h, n, c, log_target_n, log_f, steps, rng, n_lo, n_hi, hastings):  # type: ignore[no-untyped-def]
    cc = _int_vector(c, "c")
    m = cc.size
    hh = _int_vector(h, "h").copy()
    if hh.size != m:
        raise ValueError(f"h must have length len(c) = {m}, got length {hh.size}")
    n = _int_scalar(n, "n", 1)
    n_lo = _int_scalar(n_lo, "n_lo", 1)
    n_hi = _int_scalar(n_hi, "n_hi", n_lo)
    steps = _int_scalar(steps, "steps", 0)
    _check_rng(rng)
    if not n_lo <= n <= n_hi:
        raise ValueError(f"n must lie in [n_lo, n_hi] = [{n_lo}, {n_hi}], got {n}")
    if int(hh.sum()) != n:
        raise ValueError(f"h must sum to n = {n}, got sum {int(hh.sum())}")
    v = int(_hist_violation(hh, np.sort(cc)[::-1].copy()))
    if v != -1:
        what = "sum_k k h_k must equal sum(c)" if v == 0 else f"the Gale-Ryser condition fails at p = {v}"
        raise ValueError(f"h must be feasible with c ({what}), got {_fmt(hh)}")
    lt = np.ascontiguousarray(np.asarray(log_target_n, dtype=np.float64))
    if lt.ndim != 1 or lt.size != n_hi - n_lo + 1 or np.isnan(lt).any():
        raise ValueError(
            f"log_target_n must be a 1-D float array of length n_hi - n_lo + 1 = {n_hi - n_lo + 1} "
            f"without nan, got {_fmt(log_target_n)}"
        )
    if not np.isfinite(lt[n - n_lo]):
        raise ValueError(f"log_target_n must be finite at the current n = {n}, got {lt[n - n_lo]}")
    use_f = log_f is not None and np.asarray(log_f).size > 0
    if use_f:
        lf = np.ascontiguousarray(np.asarray(log_f, dtype=np.float64))
        if lf.ndim != 1 or lf.size != m or np.isnan(lf).any() or np.isposinf(lf).any():
            raise ValueError(
                f"log_f must be None or a 1-D float array of length m = {m} without nan or +inf, "
                f"got {_fmt(log_f)}"
            )
        if not np.isfinite(_log_g(hh, n, lf, True)):
            raise ValueError(f"log_f must be finite at every level that h occupies, got {_fmt(log_f)}")
    else:
        lf = np.zeros(0)
    Cpref = _c_prefix(cc)
    n_new, accepted = _h_chain_kernel(hh, n, Cpref, lt, lf, use_f, steps, rng, n_lo, n_hi, bool(hastings))
    return hh, int(n_new), int(accepted)


# ----------------------------------------------------------------------------------------------
# 7. mixing check
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _statistic(indptr, indices, j1, j2):  # pragma: no cover - compiled
    total = 0
    for i in range(indptr.shape[0] - 1):
        h1 = False
        h2 = False
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] == j1:
                h1 = True
            elif indices[p] == j2:
                h2 = True
        if h1:
            total += indptr[i + 1] - indptr[i]
            if h2:
                total += 1
    return total


@njit(cache=True)
def _run_chain(indptr, indices, trades_between, samples, rng, j1, j2):  # pragma: no cover
    out = np.empty(samples, np.float64)
    for s in range(samples):
        _curveball_kernel(indptr, indices, trades_between, rng, True)
        out[s] = _statistic(indptr, indices, j1, j2)
    return out


@njit(cache=True)
def _sort_rows(indptr, indices):  # pragma: no cover - compiled
    for i in range(indptr.shape[0] - 1):
        indices[indptr[i] : indptr[i + 1]] = np.sort(indices[indptr[i] : indptr[i + 1]])


def _permuted_start(
    r: np.ndarray, c: np.ndarray, row_perm: np.ndarray, col_perm: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy realization with rows processed in ``row_perm`` order and items relabelled by
    ``col_perm`` (item ``col_perm[j]`` plays the role of greedy item ``j``)."""
    ip, ix = realize_greedy(r[row_perm], c[col_perm])
    ix = col_perm[ix]
    indptr = np.concatenate(([0], np.cumsum(r))).astype(np.int64)
    indices = np.empty_like(ix)
    for k, i in enumerate(row_perm):  # k-th greedy row is user i
        indices[indptr[i] : indptr[i + 1]] = ix[ip[k] : ip[k + 1]]
    _sort_rows(indptr, indices)
    return indptr, indices


def mixing_check(
    indptr: np.ndarray,
    indices: np.ndarray,
    trades_between: int,
    rng: np.random.Generator,
    chains: int = 4,
    samples: int = 200,
    n_items: int | None = None,
) -> dict[str, Any]:
    """Split R-hat and ESS of parallel Curveball chains from different starting matrices.

    ``chains`` chains over the matrices with the margins of ``(indptr, indices)`` start from
    different realizations, in this order: greedy (rows in order), greedy (rows reversed),
    networkx Havel-Hakimi, greedy (items reversed), the given matrix, then greedy with random
    row and item orders.  Every ``trades_between`` trades each chain records
    ``T(M) = sum_i r_i M[i, j1] + #{i: M[i, j1] = M[i, j2] = 1}``, with ``j1, j2`` the two most
    popular items; rank-normalised split R-hat and bulk ESS (:mod:`arviz_stats`) of ``T``
    over the ``(chains, samples)`` draws tell whether ``trades_between`` trades between kept
    samples mix (R-hat < 1.01-1.05).

    Parameters
    ----------
    indptr, indices
        A matrix (CSR); not modified.
    trades_between
        Trades between recorded samples (>= 0; 0 records the starting points).
    rng
        The source of randomness.
    chains
        Number of chains (>= 2).
    samples
        Samples per chain (>= 4).
    n_items
        Number of items ``m``; default: largest index + 1.

    Returns
    -------
    dict
        ``rhat`` (float; ``inf`` if chains are constant but differ, ``1.0`` if ``T`` is the same
        everywhere, e.g. a unique matrix), ``ess`` (float), ``draws`` (``(chains, samples)``
        array of ``T``), ``trades_between``, ``starts`` (names of the starting points).
    """
    n = _check_csr(indptr, indices, writeable=False)
    trades_between = _int_scalar(trades_between, "trades_between", 0)
    chains = _int_scalar(chains, "chains", 2)
    samples = _int_scalar(samples, "samples", 4)
    _check_rng(rng)
    m_default = int(indices.max()) + 1 if indices.size else 0
    m = m_default if n_items is None else _int_scalar(n_items, "n_items", m_default)
    r, c = csr_margins(indptr, indices, m)
    order = np.argsort(-c, kind="stable")
    j1 = int(order[0]) if m > 0 else -1
    j2 = int(order[1]) if m > 1 else -1

    ident_r, ident_c = np.arange(n), np.arange(m)
    starts: list[tuple[str, tuple[np.ndarray, np.ndarray]]] = []
    for k in range(chains):
        if k == 0:
            name, start = "greedy", _permuted_start(r, c, ident_r, ident_c)
        elif k == 1:
            name, start = "greedy rows reversed", _permuted_start(r, c, ident_r[::-1].copy(), ident_c)
        elif k == 2:
            name, start = "networkx", realize_networkx(r, c)
        elif k == 3:
            name, start = "greedy items reversed", _permuted_start(r, c, ident_r, ident_c[::-1].copy())
        elif k == 4:
            name, start = "given", (indptr.copy(), indices.copy())
        else:
            name = "greedy random orders"
            start = _permuted_start(r, c, rng.permutation(n), rng.permutation(m))
        starts.append((name, start))

    draws = np.empty((chains, samples))
    for k, (_, (ip, ix)) in enumerate(starts):
        draws[k] = _run_chain(ip, ix, trades_between, samples, rng, j1, j2)

    if np.all(draws == draws.flat[0]):
        rhat, ess = 1.0, float(draws.size)
    elif np.all(draws.var(axis=1) == 0):
        rhat, ess = math.inf, float(chains)
    else:
        import arviz_stats

        rhat = float(arviz_stats.rhat(draws, method="rank"))
        ess = float(arviz_stats.ess(draws, method="bulk"))
    return {
        "rhat": rhat,
        "ess": ess,
        "draws": draws,
        "trades_between": trades_between,
        "starts": [name for name, _ in starts],
    }
