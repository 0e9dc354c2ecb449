"""Nearest public points in every prefix of a public order, from one pass over the public points.

Algorithm 1 on the first ``n`` points of a public order, Algorithm 2's ``k`` nested candidates and
the budget-free size choice all ask the same question for many ``n``: each private point's nearest
point among the first ``n`` of one order.  Searching every prefix afresh costs the sum of the sizes;
one pass costs ``n_E``.  For a private point ``x`` call position ``j`` of the order a **record**
when its distance is strictly below every earlier one.  The nearest point of the prefix of size
``n`` (ties: the earliest, within ``TIE_RTOL * d_min + TIE_ATOL``, as
:func:`~hybridpriv.families.public_private.wang.nearest_public`) is always a record:

* the earliest point within the tie tolerance of ``d_min`` has every earlier point beyond the
  tolerance, hence farther: it is a record;
* the records before ``n`` have strictly decreasing distances, so those within the tolerance of
  ``d_min`` (the last record's distance) are the last few, and the answer is the first of them.

A random order has about ``ln n_E`` records per private point (10 for ``n_E = 10^4``), so the
records of one order answer every prefix size in ``O(n_D log n_E)`` memory.  The pass computes
squared distances by blocks of private rows with one matrix product, keeps every position within
a generous slack of the running minimum, re-measures those exactly as ``sqrt(sum (x - y)^2)``, and
keeps the strict running minima of the exact distances.

In low dimension (at most ``KDTREE_MAX_COLUMNS`` columns) :class:`ScanPrefix` finds the same records
without the matrix product: it measures every distance exactly along the order, and only as far as
the largest size asked so far (the study's p = 2 grid stops at 2,960 of 10,000 points), extending
the records when a larger size comes.  Its distances are computed as SciPy's KD-tree computes them
(four partial sums, then the rest), so they equal the per-size KD-tree search's bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ....core.privacy import check_integer
from .weights import _CHUNK_ENTRIES, TIE_ATOL, TIE_RTOL

__all__ = ["PrefixNearest", "ScanPrefix", "prefix_nearest"]


@dataclass(frozen=True, eq=False)
class PrefixNearest:
    """Each private point's records along one public order (see the module); :meth:`query` answers a prefix.

    ``row``, ``position`` and ``distance`` list the records sorted by private row, then position;
    ``start[i]:start[i + 1]`` are row ``i``'s (at least one: position 0 is always a record).
    """

    length: int
    row: np.ndarray
    position: np.ndarray
    distance: np.ndarray
    start: np.ndarray

    @property
    def n_private(self) -> int:
        return self.start.size - 1

    def query(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, distances)``: each private point's nearest point among the order's first ``size``
        (positions in the order; ties to the earliest) and its distance, as ``nearest_search`` on that prefix."""
        size = check_integer(size, "size", 1)
        if size > self.length:
            raise ValueError(f"size must be at most the order's length {self.length}, got {size}")
        before = (self.position < size).astype(np.intp)
        first = self.start[:-1]
        last = first + np.add.reduceat(before, first) - 1  # the last record before `size`: the minimum
        dmin = self.distance[last]
        tied = before.astype(bool) & (self.distance <= (dmin * (1 + TIE_RTOL) + TIE_ATOL)[self.row])
        earliest = last - np.add.reduceat(tied.astype(np.intp), first) + 1  # tied records end at `last`
        return self.position[earliest], dmin


def prefix_nearest(P: np.ndarray, E: np.ndarray, order: np.ndarray) -> PrefixNearest:
    """The records of every row of ``P`` along ``E[order]`` (validated float arrays, ``order`` distinct indices)."""
    E = np.ascontiguousarray(E[np.asarray(order, dtype=np.intp)])
    P = np.ascontiguousarray(P, dtype=float)
    n, m = P.shape[0], E.shape[0]
    e2 = np.einsum("ij,ij->i", E, E)
    rows = max(1, _CHUNK_ENTRIES // m)
    count, parts = np.zeros(n, dtype=np.intp), []
    for s in range(0, n, rows):
        X = P[s : s + rows]
        g = X @ E.T
        g *= -2.0
        g += e2  # squared distance minus ||x||^2: the same order along each row
        c = count[s : s + X.shape[0]]
        pos, dist = _block(X, E, g, float(e2.max()), c, _CAP)
        if c.max() > _CAP:  # more records than the buffer (many exact ties, an adversarial order): again, wider
            pos, dist = _block(X, E, g, float(e2.max()), c, int(c.max()))
        keep = np.arange(pos.shape[1]) < c[:, None]
        parts.append((pos[keep], dist[keep]))
    start = np.concatenate(([0], np.cumsum(count))).astype(np.intp)
    return PrefixNearest(m, np.repeat(np.arange(n, dtype=np.intp), count), np.concatenate([p[0] for p in parts]),
                         np.concatenate([p[1] for p in parts]), start)


_CAP = 32  # records kept per row in the first pass (a random order of 10^4 points has about 10)


def _block(X: np.ndarray, E: np.ndarray, g: np.ndarray, e2max: float, count: np.ndarray, cap: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """One block's records, at most ``cap`` per row (``count`` gets every row's number, which may exceed it)."""
    x2 = np.einsum("ij,ij->i", X, X)
    pos, dist = np.zeros((X.shape[0], cap), np.intp), np.zeros((X.shape[0], cap))
    _records(X, E, g, x2, e2max, cap, count, pos, dist)
    return pos, dist


@njit(cache=True)
def _records(X, E, g, x2, e2max, cap, count, pos, dist):  # pragma: no cover  (compiled)
    """Per row: the positions whose approximate squared distance is within the slack of the running
    minimum of the earlier ones (every exact record is among them), re-measured exactly; the strict
    running minima of the exact distances are the records.  Writes the first ``cap`` of row ``r`` into
    ``pos[r]`` and ``dist[r]`` and their number into ``count[r]``."""
    for r in range(g.shape[0]):
        run, best, found = np.inf, np.inf, 0
        for j in range(g.shape[1]):
            v = g[r, j]
            keep = run == np.inf
            if not keep:
                low2 = max(run + x2[r], 0.0)
                slack = 1e-9 * (x2[r] + e2max) + 3 * TIE_RTOL * low2 + 3 * TIE_ATOL * np.sqrt(low2) + 2 * TIE_ATOL**2
                keep = v <= run + slack
            if keep:
                acc = 0.0
                for t in range(X.shape[1]):
                    diff = X[r, t] - E[j, t]
                    acc += diff * diff
                d = np.sqrt(acc)
                if d < best:
                    best = d
                    if found < cap:
                        pos[r, found] = j
                        dist[r, found] = d
                    found += 1
            if v < run:
                run = v
        count[r] = found


class ScanPrefix:
    """Each private point's records along one public order (see the module), measured directly and kept
    only up to the largest size asked so far; :meth:`query` answers a prefix as :class:`PrefixNearest`
    does.  For low dimension, where a distance costs a few operations and no matrix product is needed:
    asking for sizes up to ``L`` costs ``n_D * L`` distances in all, whatever the number of sizes.

    Parameters
    ----------
    P, E
        Validated float arrays ``(n_D, q)`` and ``(n_E, q)`` (the rescaled points).
    order
        Distinct public indices (the order; its length bounds the sizes).
    """

    def __init__(self, P: np.ndarray, E: np.ndarray, order: np.ndarray) -> None:
        self.P = np.ascontiguousarray(P, dtype=float)
        self.E = np.ascontiguousarray(E[np.asarray(order, dtype=np.intp)], dtype=float)
        self.length = self.E.shape[0]
        self.done = 0  # positions scanned so far
        self._allocate(_SCAN_CAP)

    def _allocate(self, cap: int) -> None:
        n = self.P.shape[0]
        self.cap, self.done = cap, 0
        self.best2 = np.full(n, np.inf)  # squared distance of the last record
        self.count = np.zeros(n, dtype=np.intp)
        self.position = np.zeros((n, cap), dtype=np.intp)
        self.distance = np.zeros((n, cap))

    def _extend(self, size: int) -> None:
        if size <= self.done:
            return
        _scan(self.P, self.E, self.done, size, self.best2, self.count, self.position, self.distance, self.cap)
        if self.count.max() > self.cap:  # more records than kept (an adversarial order): again, wider
            self._allocate(int(self.count.max()) * 2)
            _scan(self.P, self.E, 0, size, self.best2, self.count, self.position, self.distance, self.cap)
        self.done = size

    def query(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, distances)``: each private point's nearest point among the order's first ``size``
        (positions in the order; ties to the earliest) and its distance, as ``nearest_search`` on that prefix."""
        size = check_integer(size, "size", 1)
        if size > self.length:
            raise ValueError(f"size must be at most the order's length {self.length}, got {size}")
        self._extend(size)
        return _answer(self.position, self.distance, self.count, size, TIE_RTOL, TIE_ATOL)


_SCAN_CAP = 16  # records kept per row before widening (a random order of 10^4 points has about 10)


@njit(cache=True)
def _scan(P, E, start, stop, best2, count, pos, dist, cap):  # pragma: no cover  (compiled)
    """Extend every row's records over positions ``start..stop`` of the ordered ``E``: a position is a record
    when its exact distance is strictly below every earlier one.  The squared distance is summed as SciPy's
    ``cKDTree`` sums it (four partial sums over blocks of four columns, added, then the remaining columns),
    so the distances equal its own.  Only a squared distance below the last record's can be one (``sqrt`` is
    monotone), so ``sqrt`` is taken for those only."""
    q = P.shape[1]
    for r in range(P.shape[0]):
        b2, c = best2[r], count[r]
        b = np.sqrt(b2)
        for j in range(start, stop):
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            i = 0
            while i + 4 <= q:
                d0 = P[r, i] - E[j, i]
                d1 = P[r, i + 1] - E[j, i + 1]
                d2 = P[r, i + 2] - E[j, i + 2]
                d3 = P[r, i + 3] - E[j, i + 3]
                a0 += d0 * d0
                a1 += d1 * d1
                a2 += d2 * d2
                a3 += d3 * d3
                i += 4
            s = a0 + a1 + a2 + a3
            while i < q:
                d = P[r, i] - E[j, i]
                s += d * d
                i += 1
            if s < b2:
                d = np.sqrt(s)
                if d < b:
                    b, b2 = d, s
                    if c < cap:
                        pos[r, c] = j
                        dist[r, c] = d
                    c += 1
        best2[r], count[r] = b2, c


@njit(cache=True)
def _answer(pos, dist, count, size, rtol, atol):  # pragma: no cover  (compiled)
    """Per row: the last record before ``size`` (the minimum) and the earliest record tied with it."""
    n = pos.shape[0]
    best = np.empty(n, dtype=np.intp)
    dmin = np.empty(n)
    for r in range(n):
        last = 0
        while last + 1 < count[r] and pos[r, last + 1] < size:
            last += 1
        d = dist[r, last]
        limit = d * (1 + rtol) + atol
        k = last
        while k > 0 and dist[r, k - 1] <= limit:
            k -= 1
        best[r], dmin[r] = pos[r, k], d
    return best, dmin
