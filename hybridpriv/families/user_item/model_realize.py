"""One binary matrix with given row and column sums (a Gale-Ryser realization).

* :func:`realize_greedy`: the compiled constructive rule (microseconds), the start of every
  Curveball chain of :class:`hybridpriv.models.UserItemModel`;
* :func:`realize_networkx`: networkx's bipartite Havel-Hakimi graph, the independent check in
  the tests and one of the starts of the mixing check.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .model_checks import ArrayLike, _fmt, _int_vector, csr_margins
from .model_feasibility import _gr_violation

__all__ = ["realize_greedy", "realize_networkx"]


@njit(cache=True)
def _csr_rows(r):  # pragma: no cover - compiled
    """``indptr`` of a CSR matrix with row sums ``r`` and an uninitialised ``indices`` to fill."""
    indptr = np.zeros(r.shape[0] + 1, np.int64)
    for i in range(r.shape[0]):
        indptr[i + 1] = indptr[i] + r[i]
    return indptr, np.empty(indptr[r.shape[0]], np.int64)


@njit(cache=True)
def _greedy_kernel(r, c):  # pragma: no cover - compiled
    n = r.shape[0]
    m = c.shape[0]
    indptr, indices = _csr_rows(r)
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
