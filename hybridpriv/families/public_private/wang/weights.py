"""Algorithm 1, steps 2-3: each private point's nearest public point and the noisy representation weights.

Every private record is assigned to its nearest public point (Euclidean, on the rescaled sets;
ties to the lowest public index); ``|D_{y_i}|`` counts the records of public point ``i`` and the
weights are ``(|D_{y_i}| + Laplace(2 / epsilon)) / n_D``, truncated at 0 (Definitions 5-6).
The search never builds the ``n_D x n_E`` distance matrix: a KD-tree in low dimension, an exact
blocked search by matrix products above :data:`KDTREE_MAX_COLUMNS` columns.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from ....core.privacy import check_epsilon, check_integer
from ....core.validation import check_rng
from ....noise import laplace
from ._checks import check_bool, points, same_width

__all__ = [
    "KDTREE_MAX_COLUMNS",
    "TIE_ATOL",
    "TIE_RTOL",
    "distance",
    "nearest_public",
    "representation_counts",
    "representation_weights",
    "weights_from_counts",
]

#: Two public points are tied for a private point when their distances differ by at most
#: ``TIE_RTOL * d_min + TIE_ATOL`` (``d_min`` the nearest distance); the lowest public index wins.
TIE_RTOL = 1e-9
TIE_ATOL = 1e-12

#: ``nearest_public(method="auto")`` uses the KD-tree up to this many columns and the chunked
#: exact search above.  KD-trees degrade in high dimension; measured for ``n_D = n_E = 10^4``
#: uniform points on a loaded 2-core machine: KD-tree 0.05 s (p = 2), 2 s (p = 10), 10 s
#: (p = 16), 54 s (p = 101); chunked search 3-5 s whatever ``p``.
KDTREE_MAX_COLUMNS = 12
_CHUNK_ENTRIES = 1 << 22  # distances held at once by the chunked search (32 MB)


def _nearest_kdtree(P: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    tree = cKDTree(E)
    if E.shape[0] == 1:
        d, _ = tree.query(P, k=1)
        return np.zeros(P.shape[0], dtype=np.intp), np.asarray(d, dtype=float)
    d, idx = tree.query(P, k=2)
    dmin = d[:, 0]
    tol = TIE_RTOL * dmin + TIE_ATOL
    best = idx[:, 0].astype(np.intp)
    tied = np.flatnonzero(d[:, 1] <= dmin + tol)
    if tied.size:
        balls = tree.query_ball_point(P[tied], r=dmin[tied] + tol[tied])
        best[tied] = [min(b) for b in balls]  # only the tied records
    return best, dmin.astype(float)


def _nearest_chunked(P: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact nearest points by blocks of private rows: ``||y||^2 - 2 x.y`` by a matrix product
    (bounded memory: ``_CHUNK_ENTRIES`` at a time); records whose second-best point lies within a
    generous slack of the best have all their candidates re-measured exactly as
    ``sqrt(sum (x - y)^2)`` and the tie rule applied."""
    n, m = P.shape[0], E.shape[0]
    e2 = np.einsum("ij,ij->i", E, E)
    rows = max(1, _CHUNK_ENTRIES // m)
    best = np.empty(n, dtype=np.intp)
    dist = np.empty(n)
    for s in range(0, n, rows):  # blocks of rows, not single records
        X = P[s : s + rows]
        r = np.arange(X.shape[0])
        x2 = np.einsum("ij,ij->i", X, X)
        g = X @ E.T
        g *= -2.0
        g += e2  # squared distance minus ||x||^2: same order along each row
        j = np.argmin(g, axis=1)
        low = g[r, j]
        low2 = np.maximum(low + x2, 0.0)
        slack = 1e-9 * (x2 + e2.max()) + 3 * TIE_RTOL * low2 + 3 * TIE_ATOL * np.sqrt(low2) + 2 * TIE_ATOL**2
        g[r, j] = np.inf
        near = np.flatnonzero(g.min(axis=1) <= low + slack)
        b = j.astype(np.intp)
        d = np.sqrt(np.sum((X - E[j]) ** 2, axis=1))
        if near.size:  # possible ties: every candidate re-measured exactly
            g[near, j[near]] = low[near]
            rr, cc = np.nonzero(g[near] <= (low + slack)[near, None])
            rr = near[rr]
            dd = np.sqrt(np.sum((X[rr] - E[cc]) ** 2, axis=1))
            dmin = np.full(X.shape[0], np.inf)
            np.minimum.at(dmin, rr, dd)
            tied = dd <= dmin[rr] * (1 + TIE_RTOL) + TIE_ATOL
            bb = np.full(X.shape[0], m, dtype=np.intp)
            np.minimum.at(bb, rr[tied], cc[tied])
            b[near], d[near] = bb[near], dmin[near]
        best[s : s + rows] = b
        dist[s : s + rows] = d
    return best, dist


def nearest_search(P: np.ndarray, E: np.ndarray, method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """:func:`nearest_public` on validated arrays: ``(index, distance)`` of each row of ``P``."""
    if not isinstance(method, str) or method not in ("auto", "kdtree", "chunked"):
        raise ValueError(f"method must be 'auto', 'kdtree' or 'chunked', got {method!r}")
    if method == "kdtree" or (method == "auto" and E.shape[1] <= KDTREE_MAX_COLUMNS):
        return _nearest_kdtree(P, E)
    return _nearest_chunked(P, E)


def _nearest(private: object, public: object, method: str, pname: str = "public") -> tuple[np.ndarray, np.ndarray]:
    P = points(private, "private")
    E = points(public, pname)
    same_width(P, E, "private", pname)
    return nearest_search(P, E, method)


def nearest_public(
    private: object, public: object, method: str = "auto", *, return_distance: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Index of each private point's nearest public point (Euclidean).

    Tie rule: public points whose distance is within ``TIE_RTOL * d_min + TIE_ATOL`` of the
    nearest distance ``d_min`` are tied and the **lowest public index** wins.  The rule depends
    on the record and on ``E`` only, which is what Proposition 1 needs.

    ``method``: ``"kdtree"`` (``scipy.spatial.cKDTree``; asked for the two nearest points, a
    record whose second point is tied is resolved with a ball query of radius
    ``d_min + tolerance``, so exact ties follow the rule whatever order the tree returns them in);
    ``"chunked"`` (exact search by blocks of private rows against all public points, memory
    bounded by the block, never the full ``n_D x n_E`` matrix; faster in high dimension);
    ``"auto"`` (default): the KD-tree up to ``KDTREE_MAX_COLUMNS`` columns, chunked above.
    Both give the same indices (tested).

    ``return_distance``: also return each private point's distance to that public point (one
    search gives :func:`representation_counts` and :func:`distance` together).
    """
    best, dist = _nearest(private, public, method)
    return (best, dist) if check_bool(return_distance, "return_distance") else best


def representation_counts(private: object, public: object, method: str = "auto") -> np.ndarray:
    """``|D_{y_i}|``: how many private points have public point ``i`` as their nearest (length ``n_E``)."""
    E = points(public, "public")
    return np.bincount(nearest_public(private, E, method), minlength=E.shape[0]).astype(float)


def representation_weights(
    private: object,
    public: object,
    epsilon: float,
    rng: np.random.Generator | None,
    truncate: bool = True,
    size: int | None = None,
    method: str = "auto",
) -> np.ndarray:
    """Noisy representation weights of the public points (Definitions 5 and 6), on rescaled arrays.

    ``w_i = (|D_{y_i}| + Z_i) / n_D`` with ``Z_i ~ Laplace(2 / epsilon)`` iid; with ``truncate``
    negative weights are set to 0 (Definition 6).  ``epsilon = math.inf`` gives the noise-free
    weights (``rng`` may then be None).

    Guarantee: ``epsilon``-DP for the private records under replace-one neighbours (L1
    sensitivity of the count vector 2, Proposition 1); the public set is public.

    Parameters
    ----------
    private, public
        Already rescaled arrays (see :func:`~hybridpriv.families.public_private.wang.rescale`), shapes
        ``(n_D, p)``, ``(n_E, p)``.
    epsilon
        Privacy parameter (> 0, ``inf`` = no noise).
    rng
        The random generator.
    truncate
        Set negative weights to 0.
    size
        Number of independent noisy draws; the result then has shape ``(size, n_E)``.
    method
        Nearest-point search, see :func:`nearest_public`.

    Returns
    -------
    Array of shape ``(n_E,)`` (or ``(size, n_E)``).
    """
    eps = check_epsilon(epsilon)
    truncate = check_bool(truncate, "truncate")
    P = points(private, "private")
    counts = representation_counts(P, public, method)
    size = None if size is None else check_integer(size, "size")
    return weights_from_counts(counts, P.shape[0], eps, rng, truncate, size)


def weights_from_counts(
    counts: np.ndarray,
    n_private: int,
    epsilon: float,
    rng: np.random.Generator | None,
    truncate: bool = True,
    size: int | None = None,
) -> np.ndarray:
    """Definitions 5-6 from precomputed counts: ``max((counts + Laplace(2 / epsilon)) / n_D, 0)``.

    The noise step of :func:`representation_weights` (same draws in the same order): use it to
    add fresh noise many times to counts computed once (:func:`representation_counts`).
    ``counts`` may hold one count vector ``(n,)`` or one per trial ``(trials, n)``; with ``size``
    one vector is repeated ``size`` times.  ``counts`` and ``size`` are not validated here.
    """
    eps = check_epsilon(epsilon)
    c = counts if size is None else np.broadcast_to(counts, (size, counts.shape[-1]))
    noisy = np.array(c, dtype=float) if math.isinf(eps) else laplace(c, 2.0 / eps, check_rng(rng))
    w = noisy / n_private
    return np.maximum(w, 0.0) if truncate else w


def distance(private: object, public_subset: object, method: str = "auto") -> float:
    """``d(D, E') = (1 / n_D) sum_{x in D} min_{y in E'} ||x - y||_2`` (eq. 5), by the nearest-point
    search of :func:`nearest_public`.

    The paper plots it on the rescaled sets (Figure 4); pass
    :func:`~hybridpriv.families.public_private.wang.rescale`'s output.
    """
    return float(_nearest(private, public_subset, method, "public_subset")[1].mean())


__all__ += ["nearest_search"]
