"""DP M-estimators from a private and a public dataset (Wang, Ji, Kim, Wang, Xiong & Jiang, IEEE TKDE 2018).

A trusted party holds a private dataset ``D`` (``n_D`` records) and a related public dataset
``E`` (``n_E`` records, drawn from a different distribution).  It releases an M-estimator of
``D``'s parameter by weighting every public point by the share of private points it
represents, with Laplace noise on those shares.

Pipeline
--------
* :func:`rescale` -- Algorithm 1, step 1: both sets mapped to ``[0, 1]^p`` by the *public*
  per-column range, private values truncated to it; categorical columns one-hot encoded and
  divided by ``sqrt(2)``.
* :func:`nearest_public` / :func:`representation_counts` / :func:`representation_weights` --
  steps 2-3: each private point's nearest public point (``scipy.spatial.cKDTree``, never a full
  distance matrix), the count vector ``|D_{y_i}|``, Laplace noise of scale ``2 / epsilon`` on
  the counts, division by ``n_D``, optional truncation at 0 (Definition 6).
* :func:`m_estimate` -- step 4: ``argmin_theta sum_i w_i m(y_i, theta)`` for a :class:`Contrast`
  (``"mean"``, ``"median"``, ``"logistic"`` or a :class:`CustomContrast`), with SciPy.
* :func:`algorithm1` / :class:`HybridMEstimator` -- Algorithm 1 end to end (the class is the
  toolkit's :class:`~hybridpriv.estimators.base.Estimator` for scalar means and medians).
* :func:`algorithm2` -- Algorithm 2: order the public points by ``epsilon_1``-noisy weights,
  re-weight ``k`` nested candidate subsets with ``epsilon_2 / k`` each, choose a subset with a
  noisy criterion at ``epsilon_3``; the budget is added up by an
  :class:`~hybridpriv.accounting.Accountant`.
* Baselines: :func:`public_only`, :func:`hybrid_oracle` (noise-free weights),
  :func:`private_fit` (non-private fit on ``D``), :func:`lei_m_estimator` (Lei 2011 perturbed
  histogram on ``D`` alone).
* :func:`distance` (the paper's ``d(D, E')``, eq. 5), :func:`prediction_error` (Section 5.1),
  :func:`brier_criterion`, :func:`load_hybrid_csv` (the clinical-data pipeline of Section 5.2).

Privacy
-------
Neighbouring relation: **replace one private record** (the paper's Hamming distance 1, ``n_D``
fixed and public).  The public set ``E`` is public and may be used freely.

*Counts (Proposition 1).*  Every private record is assigned to exactly one public point by a
rule that depends only on that record and on ``E`` (nearest point, ties to the lowest public
index).  Replacing one record moves at most one unit of count from one public point to
another, so ``||T(D) - T(D')||_1 <= 2``: Laplace noise of scale ``2 / epsilon`` on each count
is ``epsilon``-DP, and so is anything computed from the noisy counts and ``E`` (truncation,
division by the public ``n_D``, the M-estimate).  Under add/remove-one neighbours the count
sensitivity would be 1, but ``n_D`` would then be private; this module does not offer it.

*Criterion of Algorithm 2 (Section 5.1).*  See :func:`algorithm2`: the paper's sensitivity 1
bounds the change of the one coordinate of ``h_D`` that belongs to the replaced record, but
not the change of the reference fit ``beta_hat(D)``, which moves every coordinate; with a
ridge ``lambda`` on the reference fit and covariates clipped to the public range the
sensitivity is at most ``1 + R^2 / (2 lambda sqrt(n_D))`` (proved in ``docs/wang-estimators.md``).
Releasing ``k`` noisy criteria with ``Laplace(S / epsilon_3)`` each costs ``k epsilon_3``, not
``epsilon_3``; the default selection releases only the arg-min (report noisy min, noise
``2 S / epsilon_3``), which costs ``epsilon_3``.
"""

from __future__ import annotations

import csv
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path

import numpy as np
import xarray as xr
from scipy import optimize, sparse, special
from scipy.spatial import cKDTree

from ..accounting import Accountant
from ..mechanisms import check_rng, exponential_mechanism, laplace
from ..privacy import Bounds, Group, Guarantee, check_epsilon, check_integer, check_positive, check_real_array
from .base import Estimator

__all__ = [
    "Algorithm2Result",
    "Contrast",
    "CustomContrast",
    "HybridData",
    "HybridMEstimator",
    "LogisticContrast",
    "MeanContrast",
    "MedianContrast",
    "KDTREE_MAX_COLUMNS",
    "SELECTIONS",
    "Scaling",
    "TIE_ATOL",
    "TIE_RTOL",
    "algorithm1",
    "algorithm2",
    "as_contrast",
    "brier_criterion",
    "criterion_sensitivity_bound",
    "distance",
    "hybrid_oracle",
    "lei_m_estimator",
    "load_hybrid_csv",
    "m_estimate",
    "nearest_public",
    "prediction_error",
    "private_fit",
    "public_only",
    "representation_counts",
    "representation_weights",
    "rescale",
    "weights_from_counts",
]

#: Two public points are tied for a private point when their distances differ by at most
#: ``TIE_RTOL * d_min + TIE_ATOL`` (``d_min`` the nearest distance); the lowest public index wins.
TIE_RTOL = 1e-9
TIE_ATOL = 1e-12

#: Selection mechanisms of :func:`algorithm2` for the ``epsilon_3`` step.
SELECTIONS = ("noisy_min", "curve", "paper", "exponential")


# --------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------
def _points(values: object, name: str, min_rows: int = 1) -> np.ndarray:
    """A finite float array of shape (n, p) (1-D input is one column)."""
    arr = check_real_array(values, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n,) or (n, p), got {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} must hold at least {min_rows} record(s), got {arr.shape[0]}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        bad = "NaN" if np.isnan(arr).any() else "an infinite value"
        raise ValueError(f"{name} contains {bad}; remove or impute missing values before the pipeline")
    return arr


def _same_width(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{na} and {nb} must have the same number of columns, got {a.shape[1]} and {b.shape[1]}")


def _check_bool(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


# --------------------------------------------------------------------------------------
# step 1: rescaling
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scaling:
    """The map of Algorithm 1, step 1, fitted on the public set (so it is public).

    Attributes
    ----------
    lower, upper
        Per input column, the public minimum and maximum (``nan`` for categorical columns).
    categorical
        Indices of the categorical input columns.
    levels
        ``{column: sorted public levels}`` of the categorical columns.
    blocks
        For every input column, the ``slice`` of output columns it maps to (one column for a
        continuous variable, one per level for a categorical one).
    """

    lower: np.ndarray
    upper: np.ndarray
    categorical: tuple[int, ...]
    levels: dict[int, np.ndarray]
    blocks: tuple[slice, ...]

    @property
    def n_inputs(self) -> int:
        return len(self.blocks)

    @property
    def n_outputs(self) -> int:
        return self.blocks[-1].stop

    def transform(self, values: object, name: str = "values") -> np.ndarray:
        """Map records to ``[0, 1]^q``: continuous columns ``(clip(z, a, b) - a) / (b - a)``, categorical
        columns one-hot / ``sqrt(2)`` (a level the public set does not have maps to all zeros)."""
        x = _points(values, name)
        if x.shape[1] != self.n_inputs:
            raise ValueError(f"{name} must have {self.n_inputs} columns, got {x.shape[1]}")
        out = np.empty((x.shape[0], self.n_outputs))
        for j, block in enumerate(self.blocks):  # a loop over columns, not records
            if j in self.levels:
                out[:, block] = (x[:, j, None] == self.levels[j][None, :]) / math.sqrt(2.0)
            else:
                a, b = self.lower[j], self.upper[j]
                out[:, block.start] = (np.clip(x[:, j], a, b) - a) / (b - a) if b > a else 0.0
        return out

    def inverse(self, values01: object) -> np.ndarray:
        """Map rescaled records back (continuous columns exactly inside the public range,
        categorical columns to the level with the largest coordinate)."""
        z = _points(values01, "values01")
        if z.shape[1] != self.n_outputs:
            raise ValueError(f"values01 must have {self.n_outputs} columns, got {z.shape[1]}")
        out = np.empty((z.shape[0], self.n_inputs))
        for j, block in enumerate(self.blocks):
            if j in self.levels:
                out[:, j] = self.levels[j][np.argmax(z[:, block], axis=1)]
            else:
                out[:, j] = self.lower[j] + z[:, block.start] * (self.upper[j] - self.lower[j])
        return out

    def describe(self) -> str:
        parts = []
        for j in range(self.n_inputs):
            if j in self.levels:
                parts.append(f"column {j}: categorical, {self.levels[j].size} levels -> one-hot / sqrt(2)")
            else:
                parts.append(f"column {j}: [{self.lower[j]:g}, {self.upper[j]:g}] -> [0, 1]")
        return "; ".join(parts)


def _check_categorical(categorical: object, p: int) -> tuple[int, ...]:
    if categorical is None:
        return ()
    if isinstance(categorical, (str, bytes)) or not isinstance(categorical, Sequence | np.ndarray):
        raise TypeError(f"categorical must be a sequence of column indices or None, got {categorical!r}")
    out = []
    for c in categorical:
        if isinstance(c, bool) or not isinstance(c, Integral):
            raise TypeError(f"categorical must hold integer column indices, got {c!r}")
        if not -p <= c < p:
            raise ValueError(f"categorical column index must be in [{-p}, {p}), got {c!r}")
        out.append(int(c) % p)
    if len(set(out)) != len(out):
        raise ValueError(f"categorical must not repeat a column, got {list(categorical)!r}")
    return tuple(sorted(out))


def rescale(
    private: object, public: object, categorical: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray, Scaling]:
    """Algorithm 1, step 1: both sets to ``[0, 1]^q`` by the public set's per-column range.

    Parameters
    ----------
    private, public
        Arrays of shape ``(n_D, p)`` and ``(n_E, p)`` (numeric; categorical columns hold codes).
    categorical
        Indices of the categorical columns.

    Returns
    -------
    private01, public01, scaling
        For a continuous column ``j`` with public range ``[a_j, b_j]``:
        ``(clip(z, a_j, b_j) - a_j) / (b_j - a_j)``; private values outside the public range are
        **truncated** to it (the paper's privacy reason: the range must not depend on ``D``).
        A column that is constant in the public set maps to 0.  A categorical column with ``k``
        public levels becomes ``k`` dummy columns divided by ``sqrt(2)`` (two different levels
        are at distance 1); a private level absent from the public set maps to all zeros.
    """
    P = _points(private, "private")
    E = _points(public, "public")
    _same_width(P, E, "private", "public")
    cats = _check_categorical(categorical, E.shape[1])
    lower = np.where(np.isin(np.arange(E.shape[1]), cats), np.nan, E.min(axis=0))
    upper = np.where(np.isin(np.arange(E.shape[1]), cats), np.nan, E.max(axis=0))
    levels = {j: np.unique(E[:, j]) for j in cats}
    blocks, start = [], 0
    for j in range(E.shape[1]):
        width = levels[j].size if j in levels else 1
        blocks.append(slice(start, start + width))
        start += width
    scaling = Scaling(lower, upper, cats, levels, tuple(blocks))
    return scaling.transform(P, "private"), scaling.transform(E, "public"), scaling


# --------------------------------------------------------------------------------------
# steps 2-3: representation weights
# --------------------------------------------------------------------------------------
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


def _nearest(private: object, public: object, method: str, pname: str = "public") -> tuple[np.ndarray, np.ndarray]:
    P = _points(private, "private")
    E = _points(public, pname)
    _same_width(P, E, "private", pname)
    if method not in ("auto", "kdtree", "chunked"):
        raise ValueError(f"method must be 'auto', 'kdtree' or 'chunked', got {method!r}")
    if method == "kdtree" or (method == "auto" and E.shape[1] <= KDTREE_MAX_COLUMNS):
        return _nearest_kdtree(P, E)
    return _nearest_chunked(P, E)


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
    return (best, dist) if _check_bool(return_distance, "return_distance") else best


def representation_counts(private: object, public: object, method: str = "auto") -> np.ndarray:
    """``|D_{y_i}|``: how many private points have public point ``i`` as their nearest (length ``n_E``)."""
    E = _points(public, "public")
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
        Already rescaled arrays (see :func:`rescale`), shapes ``(n_D, p)``, ``(n_E, p)``.
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
    truncate = _check_bool(truncate, "truncate")
    P = _points(private, "private")
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
    ``counts`` and ``size`` are not validated here.
    """
    eps = check_epsilon(epsilon)
    c = counts if size is None else np.broadcast_to(counts, (size, counts.size))
    noisy = np.array(c, dtype=float) if math.isinf(eps) else laplace(c, 2.0 / eps, check_rng(rng))
    w = noisy / n_private
    return np.maximum(w, 0.0) if truncate else w


# --------------------------------------------------------------------------------------
# step 4: contrasts and M-estimation
# --------------------------------------------------------------------------------------
class Contrast:
    """A contrast function ``m(x, theta)``; :func:`m_estimate` minimises ``sum_i w_i m(x_i, theta)``.

    Subclasses implement :meth:`objective` (weights sum to 1 when called from
    :func:`m_estimate`), :meth:`initial` and optionally :meth:`gradient` and :meth:`hessian`
    (analytic derivatives, used by SciPy), or override :meth:`minimize`.  The objective must be
    convex in ``theta`` (the paper's condition A3).
    """

    name: str = "contrast"
    #: Whether negative weights are allowed (Definition 5 without truncation).
    allows_negative_weights: bool = False

    def check_points(self, points: object) -> np.ndarray:
        return _points(points, "points")

    def initial(self, points: np.ndarray, weights: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def objective(self, theta: np.ndarray, points: np.ndarray, weights: np.ndarray) -> float:
        raise NotImplementedError

    def gradient(self, theta: np.ndarray, points: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
        return None

    def hessian(self, theta: np.ndarray, points: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
        return None

    def minimize(self, points: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """SciPy: ``trust-exact`` with the analytic gradient and Hessian, or L-BFGS-B with the
        gradient, or L-BFGS-B with finite differences."""
        x0 = np.asarray(self.initial(points, weights), dtype=float)
        fun = lambda t: self.objective(t, points, weights)  # noqa: E731
        has_grad = self.gradient(x0, points, weights) is not None
        has_hess = has_grad and self.hessian(x0, points, weights) is not None
        if has_hess:
            res = optimize.minimize(
                fun, x0, method="trust-exact",
                jac=lambda t: self.gradient(t, points, weights),
                hess=lambda t: self.hessian(t, points, weights),
                options={"gtol": 1e-10, "maxiter": 500},
            )
        else:
            res = optimize.minimize(
                fun, x0, method="L-BFGS-B",
                jac=(lambda t: self.gradient(t, points, weights)) if has_grad else None,
                options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 5000},
            )
        return np.asarray(res.x, dtype=float)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class MeanContrast(Contrast):
    """Squared loss ``||x - theta||^2``: the (weighted) mean of every column."""

    name = "mean"
    allows_negative_weights = True  # convex whenever the weights sum to > 0

    def initial(self, points, weights):
        return np.zeros(points.shape[1])

    def objective(self, theta, points, weights):
        return float(weights @ np.sum((points - theta) ** 2, axis=1))

    def gradient(self, theta, points, weights):
        return -2.0 * (weights @ (points - theta))

    def hessian(self, theta, points, weights):
        return 2.0 * weights.sum() * np.eye(points.shape[1])


class MedianContrast(Contrast):
    """Absolute loss ``sum_j |x_j - theta_j|``: the (weighted) median of every column.

    Minimised exactly as a linear program per column (SciPy ``linprog``, HiGHS): minimise
    ``sum_i w_i (u_i + v_i)`` subject to ``theta + u_i - v_i = x_i``, ``u, v >= 0``.  When
    the minimiser is not unique (an interval), the solver returns a point of it.
    """

    name = "median"

    def initial(self, points, weights):
        return np.zeros(points.shape[1])

    def objective(self, theta, points, weights):
        return float(weights @ np.sum(np.abs(points - theta), axis=1))

    def minimize(self, points, weights):
        keep = weights > 0
        x, w = points[keep], weights[keep]
        n = w.size
        a_eq = sparse.hstack([sparse.csr_array(np.ones((n, 1))), sparse.eye_array(n), -sparse.eye_array(n)]).tocsr()
        c = np.concatenate([[0.0], w, w])
        bounds = [(None, None)] + [(0.0, None)] * (2 * n)
        theta = np.empty(points.shape[1])
        for j in range(points.shape[1]):  # one LP per column
            res = optimize.linprog(c, A_eq=a_eq, b_eq=x[:, j], bounds=bounds, method="highs")
            if res.status != 0:
                raise RuntimeError(f"median LP failed on column {j}: {res.message}")
            theta[j] = res.x[0]
        return theta


class LogisticContrast(Contrast):
    """Logistic negative log-likelihood; the last column (``label``) is the 0/1 outcome.

    ``m((x, y), theta) = log(1 + exp(x . theta)) - y x . theta`` (+ ``l2 / 2 ||theta||^2`` on the
    objective whose weights sum to 1).

    Parameters
    ----------
    intercept
        Prepend a column of ones to the covariates (``theta[0]`` is the intercept).  The
        paper's simulation model has no intercept.
    l2
        Ridge penalty (0: the plain MLE, which does not exist for separable weighted data; the
        optimiser then stops at a large ``theta``).
    label
        Index of the outcome column.
    """

    name = "logistic"

    def __init__(self, intercept: bool = False, l2: float = 0.0, label: int = -1) -> None:
        self.intercept = _check_bool(intercept, "intercept")
        self.l2 = check_positive(l2, "l2", allow_zero=True)
        if isinstance(label, bool) or not isinstance(label, Integral):
            raise TypeError(f"label must be an integer column index, got {label!r}")
        self.label = int(label)

    def __repr__(self) -> str:
        return f"LogisticContrast(intercept={self.intercept}, l2={self.l2:g}, label={self.label})"

    def check_points(self, points):
        z = _points(points, "points")
        if z.shape[1] < 2:
            raise ValueError(f"logistic points need covariates and a label column, got shape {z.shape}")
        if not -z.shape[1] <= self.label < z.shape[1]:
            raise ValueError(f"label must index a column of points (width {z.shape[1]}), got {self.label}")
        y = z[:, self.label]
        if not np.isin(y, (0.0, 1.0)).all():
            bad = y[~np.isin(y, (0.0, 1.0))][0]
            raise ValueError(f"the label column of logistic points must hold 0/1, got {bad!r}")
        return z

    def split(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Design matrix (with the intercept column if asked) and outcome."""
        lab = self.label % points.shape[1]
        X = np.delete(points, lab, axis=1)
        if self.intercept:
            X = np.hstack([np.ones((X.shape[0], 1)), X])
        return X, points[:, lab]

    def design(self, covariates: np.ndarray) -> np.ndarray:
        """Design matrix of covariates without a label column."""
        X = _points(covariates, "covariates")
        return np.hstack([np.ones((X.shape[0], 1)), X]) if self.intercept else X

    def initial(self, points, weights):
        return np.zeros(points.shape[1] - 1 + self.intercept)

    def objective(self, theta, points, weights):
        X, y = self.split(points)
        eta = X @ theta
        return float(weights @ (np.logaddexp(0.0, eta) - y * eta) + 0.5 * self.l2 * theta @ theta)

    def gradient(self, theta, points, weights):
        X, y = self.split(points)
        return X.T @ (weights * (special.expit(X @ theta) - y)) + self.l2 * theta

    def hessian(self, theta, points, weights):
        X, _ = self.split(points)
        s = special.expit(X @ theta)
        return (X * (weights * s * (1.0 - s))[:, None]).T @ X + self.l2 * np.eye(X.shape[1])


class CustomContrast(Contrast):
    """A user's convex contrast.

    Parameters
    ----------
    loss
        ``loss(points, theta) -> (n,)``: ``m(x_i, theta)`` for every record (vectorised).
    theta0
        Starting point; its length is the parameter dimension (default: zeros of the number of
        columns of the points).
    gradient
        Optional ``gradient(points, theta) -> (n, d)``: ``d m(x_i, theta) / d theta`` per record.
    name
        A label.
    """

    def __init__(
        self,
        loss: Callable[[np.ndarray, np.ndarray], np.ndarray],
        theta0: object = None,
        gradient: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
        name: str = "custom",
    ) -> None:
        if not callable(loss):
            raise TypeError(f"loss must be callable as loss(points, theta), got {type(loss).__name__}")
        if gradient is not None and not callable(gradient):
            raise TypeError(f"gradient must be callable or None, got {type(gradient).__name__}")
        self.loss, self.grad, self.name = loss, gradient, str(name)
        self.theta0 = None if theta0 is None else np.atleast_1d(check_real_array(theta0, "theta0")).astype(float)

    def initial(self, points, weights):
        return np.zeros(points.shape[1]) if self.theta0 is None else self.theta0.copy()

    def objective(self, theta, points, weights):
        values = np.asarray(self.loss(points, theta), dtype=float)
        if values.shape != (points.shape[0],):
            raise ValueError(f"loss must return shape ({points.shape[0]},), got {values.shape}")
        return float(weights @ values)

    def gradient(self, theta, points, weights):
        if self.grad is None:
            return None
        g = np.asarray(self.grad(points, theta), dtype=float)
        if g.shape != (points.shape[0], theta.size):
            raise ValueError(f"gradient must return shape ({points.shape[0]}, {theta.size}), got {g.shape}")
        return weights @ g


_BUILT_IN = {"mean": MeanContrast, "median": MedianContrast, "logistic": LogisticContrast}


def as_contrast(contrast: object) -> Contrast:
    """``"mean"``, ``"median"``, ``"logistic"``, a :class:`Contrast`, or a callable
    ``loss(points, theta) -> (n,)`` (wrapped in :class:`CustomContrast`, ``theta`` starting at zeros
    of the points' width)."""
    if isinstance(contrast, Contrast):
        return contrast
    if isinstance(contrast, str):
        if contrast not in _BUILT_IN:
            raise ValueError(f"contrast must be one of {list(_BUILT_IN)}, a Contrast or a callable, got {contrast!r}")
        return _BUILT_IN[contrast]()
    if callable(contrast):
        return CustomContrast(contrast)
    raise TypeError(f"contrast must be one of {list(_BUILT_IN)}, a Contrast or a callable, got {contrast!r}")


def m_estimate(points: object, weights: object, contrast: object) -> np.ndarray:
    """``argmin_theta sum_i w_i m(x_i, theta)`` with SciPy (Definition 5, eq. 4).

    The weights are divided by their sum (the minimiser does not change).  Negative weights
    are refused unless the contrast allows them (the squared loss, whose minimiser
    ``sum w x / sum w`` exists whenever ``sum w > 0``); all-zero weights (every noisy weight
    truncated) raise ``ValueError`` -- :func:`algorithm1` and :func:`algorithm2` can fall back
    to equal weights instead.

    Returns
    -------
    ``theta`` as an array of shape ``(d,)``.
    """
    c = as_contrast(contrast)
    x = c.check_points(points)
    w = check_real_array(weights, "weights")
    if w.shape != (x.shape[0],):
        raise ValueError(f"weights must have shape ({x.shape[0]},) (one per point), got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("weights must be finite")
    if (w < 0).any() and not c.allows_negative_weights:
        raise ValueError(
            f"weights must be >= 0 for the {c.name} contrast (got {int((w < 0).sum())} negative); "
            "use truncated weights (truncate=True, Definition 6)"
        )
    total = w.sum()
    if not total > 0:
        raise ValueError(f"weights must have a positive sum, got {total!r} (all noisy weights truncated to 0?)")
    theta = np.atleast_1d(np.asarray(c.minimize(x, w / total), dtype=float))
    if not np.isfinite(theta).all():
        raise RuntimeError(f"M-estimation with the {c.name} contrast did not converge to a finite theta")
    return theta


def _fit(points: np.ndarray, weights: np.ndarray, contrast: Contrast, on_zero_weights: str) -> tuple[np.ndarray, bool]:
    if not weights.sum() > 0 and on_zero_weights == "uniform":
        return m_estimate(points, np.ones(len(points)), contrast), True
    return m_estimate(points, weights, contrast), False


def _check_on_zero(value: object) -> str:
    if value not in ("raise", "uniform"):
        raise ValueError(f"on_zero_weights must be 'raise' or 'uniform', got {value!r}")
    return value  # type: ignore[return-value]


# --------------------------------------------------------------------------------------
# Algorithm 1
# --------------------------------------------------------------------------------------
def algorithm1(
    private: object,
    public: object,
    contrast: object,
    epsilon: float,
    rng: np.random.Generator | None,
    truncate: bool = True,
    *,
    categorical: Sequence[int] | None = None,
    on_zero_weights: str = "raise",
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Algorithm 1: the DP M-estimator from hybrid datasets.

    Rescale both sets by the public range (:func:`rescale`), compute the noisy weights on the
    rescaled sets (:func:`representation_weights`), and minimise the weighted contrast over the
    **original** public points (:func:`m_estimate`), so ``theta`` is on the data's own scale.

    Guarantee: ``epsilon``-DP for the private records (replace-one); ``E`` is public.

    Parameters
    ----------
    private, public
        Arrays ``(n_D, p)``, ``(n_E, p)``; for ``"logistic"`` the last column is the 0/1 label
        (it also enters the distances, as in the paper).  ``E`` should hold distinct points
        (the paper's assumption; duplicates get no weight beyond the first).
    contrast
        See :func:`as_contrast`.
    epsilon, rng, truncate
        As for :func:`representation_weights`.
    categorical
        Categorical column indices (for the rescaling).
    on_zero_weights
        ``"raise"`` (default) or ``"uniform"``: when every truncated weight is 0, fit with equal
        weights (the public-only fit; post-processing, no privacy cost).
    return_weights
        Also return the weights.
    """
    c = as_contrast(contrast)
    mode = _check_on_zero(on_zero_weights)
    p01, e01, _ = rescale(private, public, categorical)
    w = representation_weights(p01, e01, epsilon, rng, truncate)
    theta, _ = _fit(_points(public, "public"), w, c, mode)
    return (theta, w) if _check_bool(return_weights, "return_weights") else theta


def hybrid_oracle(
    private: object, public: object, contrast: object, categorical: Sequence[int] | None = None
) -> np.ndarray:
    """Algorithm 1 with noise-free weights (``epsilon = inf``): **not private**, the paper's black curve."""
    return algorithm1(private, public, contrast, math.inf, None, categorical=categorical)  # type: ignore[return-value]


def public_only(public: object, contrast: object) -> np.ndarray:
    """The unweighted fit on the public set (no privacy cost; the paper's blue line)."""
    E = _points(public, "public")
    return m_estimate(E, np.ones(E.shape[0]), contrast)


def private_fit(private: object, contrast: object) -> np.ndarray:
    """The unweighted fit on the private set: **not private**, the benchmark ``theta_hat(D)``."""
    D = _points(private, "private")
    return m_estimate(D, np.ones(D.shape[0]), contrast)


class HybridMEstimator(Estimator):
    """Algorithm 1 for scalar records (mean or median), as a toolkit :class:`Estimator`.

    Parameters
    ----------
    groups
        Exactly two groups: one private (finite epsilon) and one public (``epsilon = inf``).
    bounds
        Declared range of every record.
    contrast
        ``"mean"`` (squared loss) or ``"median"`` (absolute loss).
    truncate
        Truncated weights (Definition 6, default) or signed ones (Definition 5; ``"mean"`` only).
    clamp
        Clip records into the bounds instead of raising.

    Notes
    -----
    In one dimension the rescaling of step 1 does not change which public point is nearest
    (an increasing map, and a truncated private value is nearest to the public extreme it is
    truncated to), so the weights are computed on the raw records.  The minimisers are the
    closed forms of the two contrasts (weighted mean ``sum w y / sum w``; the lower weighted
    median, the smallest public value whose cumulative weight reaches half the total), equal to
    :func:`m_estimate`'s (tested).  When every truncated weight is 0 the estimate is the
    unweighted public mean / median (post-processing).

    Guarantee: ``epsilon``-DP for the private group under replace-one neighbours; the public
    group is public.
    """

    statistic = "mean"

    def __init__(
        self,
        groups: Sequence[Group],
        bounds: Bounds | tuple[float, float],
        contrast: str = "mean",
        truncate: bool = True,
        clamp: bool = False,
    ) -> None:
        super().__init__(groups, bounds, clamp)
        if len(self.groups) != 2 or sum(g.is_public for g in self.groups) != 1:
            raise ValueError(
                "groups must be exactly one private group and one public group (epsilon = inf), got "
                f"{[(g.name, g.epsilon) for g in self.groups]}"
            )
        if contrast not in ("mean", "median"):
            raise ValueError(f"contrast must be 'mean' or 'median', got {contrast!r}")
        self.truncate = _check_bool(truncate, "truncate")
        if contrast == "median" and not self.truncate:
            raise ValueError("the median needs non-negative weights: truncate must be True for contrast='median'")
        self.contrast = contrast
        self.statistic = contrast
        self.label = f"hybrid-{contrast}"
        self._private = 0 if not self.groups[0].is_public else 1
        self.epsilon = self.groups[self._private].epsilon

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {
            g.name: Guarantee(math.inf if g.is_public else g.epsilon, 0.0, "replace") for g in self.groups
        }

    def _estimate(self, data: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
        priv, pub = data[self._private], data[1 - self._private]
        trials = priv.shape[0]
        if (priv.strides[0] == 0 or trials == 1) and (pub.strides[0] == 0 or trials == 1):
            counts = np.broadcast_to(representation_counts(priv[0], pub[0]), pub.shape)
        else:  # different datasets per trial: one KD-tree per trial
            counts = np.stack([representation_counts(priv[t], pub[t]) for t in range(trials)])
        w = laplace(counts, 2.0 / self.epsilon, rng) / priv.shape[1]
        if self.truncate:
            w = np.maximum(w, 0.0)
        total = w.sum(axis=1)
        empty = ~(total > 0)
        if empty.any():
            w = np.where(empty[:, None], 1.0, w)
            total = w.sum(axis=1)
        if self.contrast == "mean":
            if (total <= 0).any():
                raise RuntimeError("signed weights summed to <= 0; use truncate=True")
            return (w * pub).sum(axis=1) / total
        order = np.argsort(pub, axis=1, kind="stable")
        ys = np.take_along_axis(pub, order, axis=1)
        cw = np.cumsum(np.take_along_axis(w, order, axis=1), axis=1)
        k = np.argmax(cw >= 0.5 * total[:, None] * (1 - 1e-12), axis=1)
        return ys[np.arange(trials), k]


# --------------------------------------------------------------------------------------
# Algorithm 2
# --------------------------------------------------------------------------------------
def distance(private: object, public_subset: object, method: str = "auto") -> float:
    """``d(D, E') = (1 / n_D) sum_{x in D} min_{y in E'} ||x - y||_2`` (eq. 5), by the nearest-point
    search of :func:`nearest_public`.

    The paper plots it on the rescaled sets (Figure 4); pass :func:`rescale`'s output.
    """
    return float(_nearest(private, public_subset, method, "public_subset")[1].mean())


def _logistic(contrast: object) -> LogisticContrast:
    c = as_contrast(contrast)
    if not isinstance(c, LogisticContrast):
        raise ValueError(f"this criterion is for the logistic contrast, got {c.name!r}; pass a callable criterion")
    return c


def prediction_error(
    theta: object,
    X: object,
    y: object = None,
    *,
    reference: object = None,
    contrast: LogisticContrast | None = None,
) -> np.ndarray | float:
    """The paper's prediction error for logistic regression (Section 5.1).

    ``t = || h_D(theta) - h_D(beta_hat(D)) ||_2`` with ``h_D(beta) = expit(X beta)`` over the
    ``n_D`` private covariate rows, ``beta_hat(D)`` the non-private fit on ``(X, y)`` (or the
    given ``reference``).  Not normalised by ``n_D`` (the paper's L2 norm, whose sensitivity
    argument needs it).

    Parameters
    ----------
    theta
        One coefficient vector ``(d,)`` or several ``(k, d)``.
    X
        Private covariates ``(n_D, p)`` (no label column, no intercept column).
    y
        Private 0/1 outcomes, used to fit ``beta_hat(D)`` when ``reference`` is None.
    reference
        ``beta_hat(D)`` if already fitted.
    contrast
        The :class:`LogisticContrast` (intercept, ridge) used for the fits (default: no
        intercept, no ridge).

    Returns
    -------
    A float, or an array ``(k,)``.
    """
    c = LogisticContrast() if contrast is None else _logistic(contrast)
    design = c.design(X)
    th = check_real_array(theta, "theta")
    single = th.ndim == 1
    th = np.atleast_2d(th)
    if th.ndim != 2 or th.shape[1] != design.shape[1]:
        raise ValueError(f"theta must have shape ({design.shape[1]},) or (k, {design.shape[1]}), got {np.shape(theta)}")
    if not np.isfinite(th).all():
        bad = np.argwhere(~np.isfinite(th))[0]
        where = f"theta[{bad[1]}]" if single else f"theta[{bad[0]}, {bad[1]}]"
        raise ValueError(f"theta must be finite, got {where} = {float(th[tuple(bad)])}")
    if reference is None:
        if y is None:
            raise ValueError("prediction_error needs y (to fit beta_hat(D)) or reference")
        yy = check_real_array(y, "y")
        if yy.shape != (design.shape[0],):
            raise ValueError(f"y must have shape ({design.shape[0]},), got {yy.shape}")
        ref = private_fit(np.column_stack([_points(X, "X"), yy]), LogisticContrast(c.intercept, c.l2))
        if not np.isfinite(ref).all():
            raise ValueError(f"the non-private fit beta_hat(D) on (X, y) is not finite ({ref}); pass reference")
    else:
        ref = check_real_array(reference, "reference")
        if ref.shape != (design.shape[1],):
            raise ValueError(f"reference must have shape ({design.shape[1]},), got {ref.shape}")
        if not np.isfinite(ref).all():
            j = int(np.flatnonzero(~np.isfinite(ref))[0])
            raise ValueError(f"reference must be finite, got reference[{j}] = {float(ref[j])}")
    base = special.expit(design @ ref)
    t = np.sqrt(((special.expit(th @ design.T) - base) ** 2).sum(axis=1))
    return float(t[0]) if single else t


def brier_criterion(theta: object, X: object, y: object, contrast: LogisticContrast | None = None) -> np.ndarray | float:
    """``sum_j (y_j - expit(x_j . theta))^2`` over the private records (sensitivity 1, replace-one:
    one term in ``[0, 1]`` changes).  A proper scoring rule: no reference fit is needed."""
    c = LogisticContrast() if contrast is None else _logistic(contrast)
    design = c.design(X)
    yy = check_real_array(y, "y")
    if yy.shape != (design.shape[0],):
        raise ValueError(f"y must have shape ({design.shape[0]},), got {yy.shape}")
    th = np.atleast_2d(check_real_array(theta, "theta"))
    t = ((yy - special.expit(th @ design.T)) ** 2).sum(axis=1)
    return float(t[0]) if np.ndim(theta) == 1 else t


def criterion_sensitivity_bound(n_private: int, radius: float, ridge: float) -> float:
    """Sensitivity of the paper's criterion with a ridge reference fit (replace-one):
    ``1 + R^2 / (2 ridge sqrt(n_D))``, ``R`` a bound on the norm of a design row.

    Proof in ``docs/wang-estimators.md``: the ridge fit moves by at most ``2R / (n_D ridge)``,
    the other ``n_D - 1`` coordinates of ``h_D`` by at most ``R ||delta beta|| / 4`` each, and
    the replaced record's coordinate changes ``t`` by at most 1 (the paper's argument).
    """
    n = check_integer(n_private, "n_private")
    r = check_positive(radius, "radius")
    lam = check_positive(ridge, "ridge")
    return 1.0 + r * r / (2.0 * lam * math.sqrt(n))


@dataclass
class Algorithm2Result:
    """What :func:`algorithm2` returns.

    Released (DP): ``chosen_size``, ``subset`` (public indices), ``weights`` (the chosen
    candidate's noisy weights), ``theta``; the ``order`` and every candidate's ``thetas`` and
    weights are DP too (post-processing of the ``epsilon_1`` and ``epsilon_2`` releases).
    ``noisy_criterion`` is a release only when ``criterion_released`` (selection ``"curve"`` or
    ``"paper"``); with ``"noisy_min"`` only its arg-min is released and the values are kept for
    diagnostics.  ``criterion`` (the exact ``t_i``) is **not private**: for simulations only.
    """

    subset_sizes: np.ndarray
    order: np.ndarray
    chosen_index: int
    chosen_size: int
    subset: np.ndarray
    theta: np.ndarray
    weights: np.ndarray
    thetas: np.ndarray
    criterion: np.ndarray
    noisy_criterion: np.ndarray | None
    criterion_released: bool
    criterion_sensitivity: float
    sensitivity_proven: bool
    criterion_scale: float
    selection: str
    epsilons: tuple[float, float, float]
    total_epsilon: float
    accountant: Accountant
    zero_weight_fallback: np.ndarray
    candidate_weights: list[np.ndarray] = field(repr=False, default_factory=list)

    @property
    def ledger(self) -> xr.Dataset:
        """The accountant's budgets, totals and releases as an xarray Dataset."""
        return self.accountant.to_xarray()


def _check_sizes(subset_sizes: object, n_e: int) -> np.ndarray:
    arr = np.asarray(subset_sizes)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"subset_sizes must be a non-empty 1-D sequence of integers, got {subset_sizes!r}")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(int)
        else:
            raise TypeError(f"subset_sizes must be integers, got {subset_sizes!r}")
    if arr.min() < 1 or arr.max() > n_e:
        raise ValueError(f"subset_sizes must lie in [1, n_E={n_e}], got min {arr.min()}, max {arr.max()}")
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"subset_sizes must be strictly increasing, got {arr.tolist()}")
    return arr.astype(np.intp)


def algorithm2(
    private: object,
    public: object,
    contrast: object,
    epsilons: Sequence[float],
    subset_sizes: Sequence[int],
    rng: np.random.Generator,
    *,
    categorical: Sequence[int] | None = None,
    truncate: bool = True,
    criterion: str | Callable[[np.ndarray, np.ndarray], np.ndarray] = "paper",
    criterion_sensitivity: float | None = None,
    reference_ridge: float | None = None,
    selection: str = "noisy_min",
    on_zero_weights: str = "uniform",
    accountant: Accountant | None = None,
    group: str = "private",
) -> Algorithm2Result:
    """Algorithm 2: choose the public subset to release under DP.

    1. Rescale (:func:`rescale`).
    2. Noisy weights of every public point at ``epsilon_1``; order the public points by them,
       decreasing (ties: lower index first).
    3. For every candidate size ``n_i`` (the first ``n_i`` ordered points), recompute the
       weights on that subset (every private point re-assigned to its nearest point *in the
       subset*) at ``epsilon_2 / k`` and fit ``theta_i`` (Algorithm 1).
    4. Criterion ``t_i`` of every candidate on the private data, noisy at ``epsilon_3``; the
       candidate with the smallest noisy criterion is released with its weights.

    Parameters
    ----------
    private, public, contrast, categorical, truncate
        As for :func:`algorithm1`.
    epsilons
        ``(epsilon_1, epsilon_2, epsilon_3)``, each > 0 and finite.
    subset_sizes
        Strictly increasing candidate sizes in ``[1, n_E]``.
    rng
        The random generator.
    criterion
        ``"paper"``: the prediction error of Section 5.1 (logistic contrast;
        :func:`prediction_error` on the private covariates **clipped to the public range**,
        reference ``beta_hat(D)`` fitted with the contrast's settings, plus ``reference_ridge``).
        ``"brier"``: :func:`brier_criterion` (sensitivity 1, proven).  Or a callable
        ``criterion(thetas (k, d), private (n_D, p)) -> (k,)``, with ``criterion_sensitivity``.
    criterion_sensitivity
        ``S``, the sensitivity of one criterion value under replace-one.  Default: 1 for
        ``"brier"``; for ``"paper"``, the paper's claimed 1 without ``reference_ridge`` (the claim
        ignores the change of ``beta_hat(D)``: ``sensitivity_proven`` is then False), and
        :func:`criterion_sensitivity_bound` with it.  Required for a callable.
    reference_ridge
        Ridge ``lambda`` of the reference fit of the ``"paper"`` criterion (makes the
        sensitivity provable).
    selection
        How ``epsilon_3`` is spent (``S`` the sensitivity, ``k`` the number of candidates):

        * ``"noisy_min"`` (default): ``t_i + Laplace(2 S / epsilon_3)``, release the arg-min only
          (report noisy min; the factor 2 because the ``t_i`` can move in opposite directions).
          Costs ``epsilon_3``.
        * ``"curve"``: ``t_i + Laplace(k S / epsilon_3)``, release the whole noisy curve (its L1
          sensitivity is ``k S``).  Costs ``epsilon_3``.
        * ``"paper"``: ``t_i + Laplace(S / epsilon_3)`` as written in the paper, whole curve
          released.  Costs ``k epsilon_3`` by sequential composition, and the ledger says so.
        * ``"exponential"``: the exponential mechanism with score ``-t_i`` (the paper's
          suggestion in Section 6).  Costs ``epsilon_3``.
    on_zero_weights
        ``"uniform"`` (default): a candidate whose truncated weights are all 0 is fitted with
        equal weights (post-processing; flagged in ``zero_weight_fallback``); ``"raise"``.
    accountant
        An :class:`~hybridpriv.accounting.Accountant` to record the releases on (its group
        ``group``); default: a new one with an unlimited budget, so the total is computed.
    group
        The accountant's group of the private records.

    Returns
    -------
    Algorithm2Result
        ``total_epsilon`` is the accountant's total for this call:
        ``epsilon_1 + epsilon_2 + epsilon_3`` (``epsilon_1 + epsilon_2 + k epsilon_3`` for
        ``selection="paper"``).
    """
    c = as_contrast(contrast)
    rng = check_rng(rng)
    if isinstance(epsilons, (str, bytes)) or not isinstance(epsilons, Sequence | np.ndarray) or len(epsilons) != 3:
        raise ValueError(f"epsilons must be (epsilon_1, epsilon_2, epsilon_3), got {epsilons!r}")
    eps1, eps2, eps3 = (check_epsilon(e, f"epsilons[{i}]", allow_inf=False) for i, e in enumerate(epsilons))
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    mode = _check_on_zero(on_zero_weights)
    D = c.check_points(private)
    E = c.check_points(public)
    _same_width(D, E, "private", "public")
    sizes = _check_sizes(subset_sizes, E.shape[0])
    k = sizes.size

    # criterion and its sensitivity
    proven = True
    if isinstance(criterion, str):
        if criterion not in ("paper", "brier"):
            raise ValueError(f"criterion must be 'paper', 'brier' or a callable, got {criterion!r}")
        lc = _logistic(c)
        lab = lc.label % D.shape[1]
        lo, hi = np.delete(E.min(axis=0), lab), np.delete(E.max(axis=0), lab)
        Xd = np.clip(np.delete(D, lab, axis=1), lo, hi)  # covariates clipped to the public range
        yd = D[:, lab]
        if criterion == "brier":
            if reference_ridge is not None:
                raise ValueError("reference_ridge applies to criterion='paper' only")
            crit_fn = lambda th: brier_criterion(th, Xd, yd, lc)  # noqa: E731
            default_s = 1.0
        else:
            ridge = None if reference_ridge is None else check_positive(reference_ridge, "reference_ridge")
            ref_c = LogisticContrast(lc.intercept, lc.l2 + (ridge or 0.0), lc.label)
            reference = m_estimate(np.column_stack([Xd, yd]), np.ones(len(yd)), ref_c)
            crit_fn = lambda th: prediction_error(th, Xd, reference=reference, contrast=lc)  # noqa: E731
            if ridge is None:
                default_s, proven = 1.0, False
            else:
                radius = math.sqrt(float(np.sum(np.maximum(lo**2, hi**2))) + lc.intercept)
                default_s = criterion_sensitivity_bound(D.shape[0], max(radius, 1e-300), ref_c.l2)
        s = default_s if criterion_sensitivity is None else check_positive(criterion_sensitivity, "criterion_sensitivity")
        if criterion_sensitivity is not None and criterion == "paper" and reference_ridge is None:
            proven = False
        if not proven:
            warnings.warn(
                "algorithm2: criterion='paper' without reference_ridge uses the paper's sensitivity 1, which "
                "ignores that beta_hat(D) moves with the data (docs/wang-estimators.md has a counterexample); "
                "epsilon_3 is then not a proven guarantee. Pass reference_ridge=... or criterion='brier' for one.",
                UserWarning,
                stacklevel=2,
            )
    elif callable(criterion):
        if criterion_sensitivity is None:
            raise ValueError("a callable criterion needs criterion_sensitivity (its sensitivity under replace-one)")
        s = check_positive(criterion_sensitivity, "criterion_sensitivity")
        crit_fn = lambda th: np.asarray(criterion(th, D), dtype=float)  # noqa: E731
    else:
        raise TypeError(f"criterion must be 'paper', 'brier' or a callable, got {criterion!r}")

    acc = Accountant({group: (math.inf, 0.0)}) if accountant is None else accountant
    if not isinstance(acc, Accountant):
        raise TypeError(f"accountant must be an Accountant or None, got {type(acc).__name__}")
    if group not in acc.budgets:
        raise ValueError(f"group {group!r} is not a group of the accountant ({list(acc.budgets)})")
    spent_before = acc.spent_epsilon()[group]

    # steps 1-3: rescale, order by eps1-noisy weights
    d01, e01, _ = rescale(D, E, categorical)
    w1 = representation_weights(d01, e01, eps1, rng, truncate=False)
    acc.spend(eps1, groups=[group], label="Algorithm 2 step 2: weights of all public points (ordering)")
    order = np.argsort(-w1, kind="stable")

    # step 4: candidates
    thetas, cand_w, fallback = [], [], np.zeros(k, dtype=bool)
    for i, n_i in enumerate(sizes):  # k candidates (not records)
        idx = order[:n_i]
        w = representation_weights(d01, e01[idx], eps2 / k, rng, truncate)
        acc.spend(eps2 / k, groups=[group], label=f"Algorithm 2 step 4: weights of candidate {i} (size {n_i})")
        th, fallback[i] = _fit(E[idx], w, c, mode)
        thetas.append(th)
        cand_w.append(w)
    thetas_arr = np.vstack(thetas)
    t = np.atleast_1d(np.asarray(crit_fn(thetas_arr), dtype=float))
    if t.shape != (k,) or not np.isfinite(t).all():
        raise ValueError(f"criterion must return {k} finite values (one per candidate), got {t!r}")

    # step 5-6: noisy selection
    noisy: np.ndarray | None
    if selection == "exponential":
        chosen = int(exponential_mechanism(-t, eps3, s, rng))
        noisy, scale, released = None, float("nan"), False
        acc.spend(eps3, groups=[group], label="Algorithm 2 step 5: exponential mechanism on -criterion")
    else:
        scale = {"noisy_min": 2.0 * s / eps3, "curve": k * s / eps3, "paper": s / eps3}[selection]
        noisy = laplace(t, scale, rng)
        chosen = int(np.argmin(noisy))
        released = selection != "noisy_min"
        if selection == "paper":
            for i in range(k):
                acc.spend(eps3, groups=[group], label=f"Algorithm 2 step 5 (paper): noisy criterion {i}")
        else:
            acc.spend(eps3, groups=[group], label=f"Algorithm 2 step 5: noisy criterion ({selection})")
    total = acc.spent_epsilon()[group] - spent_before
    return Algorithm2Result(
        subset_sizes=sizes,
        order=order,
        chosen_index=chosen,
        chosen_size=int(sizes[chosen]),
        subset=order[: sizes[chosen]].copy(),
        theta=thetas_arr[chosen],
        weights=cand_w[chosen],
        thetas=thetas_arr,
        criterion=t,
        noisy_criterion=noisy,
        criterion_released=released,
        criterion_sensitivity=float(s),
        sensitivity_proven=proven,
        criterion_scale=float(scale),
        selection=selection,
        epsilons=(eps1, eps2, eps3),
        total_epsilon=float(total),
        accountant=acc,
        zero_weight_fallback=fallback,
        candidate_weights=cand_w,
    )


# --------------------------------------------------------------------------------------
# Lei (2011): perturbed histogram on D alone
# --------------------------------------------------------------------------------------
def lei_m_estimator(
    private: object,
    contrast: object,
    epsilon: float,
    bins: int,
    rng: np.random.Generator,
    *,
    lower: object = None,
    upper: object = None,
    discrete: dict[int, Sequence[float]] | None = None,
    max_cells: int = 1_000_000,
    return_histogram: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lei (2011) perturbed-histogram M-estimator on the private data alone.

    The box ``[lower, upper]`` (data-independent, e.g. the public ranges; default ``[0, 1]``
    per column) is cut into ``bins`` equal cells per continuous column; a ``discrete`` column
    ``j`` takes its declared levels as cells (for the logistic contrast the label column is
    discrete with levels ``(0, 1)`` unless given).  Private values outside the box are
    truncated to it.  Every cell's count gets ``Laplace(2 / epsilon)`` noise (replace-one: one
    record leaves a cell and enters another, L1 sensitivity 2; every cell is perturbed, empty
    or not), negative counts are set to 0, and the M-estimator is fitted to the cell centres
    (the level for discrete columns) weighted by the noisy counts -- the same as replicating each
    centre its count of times.  Guarantee: ``epsilon``-DP (replace-one).

    The number of cells is ``bins^(continuous columns) x prod(levels)``; above ``max_cells`` a
    ``ValueError`` says so (the method is infeasible in high dimension, the paper's point).

    Returns
    -------
    ``theta``, or ``(theta, centres, noisy counts)`` with ``return_histogram``.
    """
    c = as_contrast(contrast)
    eps = check_epsilon(epsilon, allow_inf=True)
    rng = check_rng(rng) if math.isfinite(eps) else rng
    D = c.check_points(private)
    n, p = D.shape
    m = check_integer(bins, "bins")
    max_cells = check_integer(max_cells, "max_cells")
    lo = np.zeros(p) if lower is None else np.broadcast_to(check_real_array(lower, "lower"), (p,)).astype(float)
    hi = np.ones(p) if upper is None else np.broadcast_to(check_real_array(upper, "upper"), (p,)).astype(float)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()) or np.any(lo > hi):
        raise ValueError(f"lower and upper must be finite with lower <= upper, got {lo.tolist()} and {hi.tolist()}")
    disc: dict[int, np.ndarray] = {}
    if discrete is not None:
        if not isinstance(discrete, dict):
            raise TypeError(f"discrete must be a dict {{column: levels}}, got {type(discrete).__name__}")
        for j, lv in discrete.items():
            if isinstance(j, bool) or not isinstance(j, Integral) or not -p <= j < p:
                raise ValueError(f"discrete keys must be column indices in [{-p}, {p}), got {j!r}")
            arr = np.unique(check_real_array(lv, f"levels of discrete column {j}"))
            if arr.size == 0 or not np.isfinite(arr).all():
                raise ValueError(f"discrete column {j} needs a non-empty list of finite levels, got {lv!r}")
            disc[int(j) % p] = arr
    if isinstance(c, LogisticContrast) and c.label % p not in disc:
        disc[c.label % p] = np.array([0.0, 1.0])
    sizes = [disc[j].size if j in disc else m for j in range(p)]
    n_cells = math.prod(sizes)
    if n_cells > max_cells:
        raise ValueError(
            f"the histogram has {n_cells:.3g} cells (bins={m} per continuous column, {p} columns), over "
            f"max_cells={max_cells}: Lei's perturbed histogram is infeasible in this dimension"
        )
    cell = np.empty((n, p), dtype=np.intp)
    axes = []
    for j in range(p):  # a loop over columns
        if j in disc:
            lv = disc[j]
            # nearest declared level (a value between levels goes to the nearer one, ties to the lower)
            pos = np.clip(np.searchsorted(lv, D[:, j]), 1, max(lv.size - 1, 1))
            if lv.size == 1:
                cell[:, j] = 0
            else:
                left = lv[pos - 1]
                right = lv[np.minimum(pos, lv.size - 1)]
                cell[:, j] = np.where(D[:, j] - left <= right - D[:, j], pos - 1, pos)
            axes.append(lv)
        else:
            width = hi[j] - lo[j]
            z = (np.clip(D[:, j], lo[j], hi[j]) - lo[j]) / width if width > 0 else np.zeros(n)
            cell[:, j] = np.minimum((z * m).astype(np.intp), m - 1)  # the top edge is in the last cell
            axes.append(lo[j] + (np.arange(m) + 0.5) / m * width)
    flat = np.ravel_multi_index(tuple(cell.T), sizes)
    counts = np.bincount(flat, minlength=n_cells).astype(float)
    noisy = counts if math.isinf(eps) else laplace(counts, 2.0 / eps, rng)
    noisy = np.maximum(noisy, 0.0)
    keep = np.flatnonzero(noisy > 0)
    if keep.size == 0:
        raise ValueError("every noisy cell count was truncated to 0: the perturbed histogram is empty")
    idx = np.unravel_index(keep, sizes)
    centres = np.column_stack([axes[j][idx[j]] for j in range(p)])
    theta = m_estimate(centres, noisy[keep], c)
    if _check_bool(return_histogram, "return_histogram"):
        full_idx = np.unravel_index(np.arange(n_cells), sizes)
        return theta, np.column_stack([axes[j][full_idx[j]] for j in range(p)]), noisy
    return theta


# --------------------------------------------------------------------------------------
# CSV loader (Section 5.2 pipeline)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HybridData:
    """Arrays for the pipeline, from :func:`load_hybrid_csv`.

    Attributes
    ----------
    private, public
        Float arrays with the columns in ``columns`` order (label last); ``public`` holds the
        distinct public rows (first occurrences, in file order) when de-duplicated.
    public_all
        Every public row (for the public-only fit on the full public set).
    columns
        Column names, the label last.
    categorical
        Indices (in ``columns``) of the categorical columns, for :func:`rescale`.
    levels
        ``{column name: levels}`` of categorical columns; the code of a value is its index in
        the levels (sorted public values; a private value the public set does not have is -1).
    label
        The label column's name, or None.
    """

    private: np.ndarray
    public: np.ndarray
    public_all: np.ndarray
    columns: tuple[str, ...]
    categorical: tuple[int, ...]
    levels: dict[str, tuple[str, ...]]
    label: str | None


def _read_csv(path: object, name: str, delimiter: str) -> tuple[list[str], list[list[str]]]:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"{name} must be a path, got {type(path).__name__}")
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{name} file not found: {str(p)!r}")
    with p.open(newline="") as fh:
        rows = [r for r in csv.reader(fh, delimiter=delimiter) if r and any(x.strip() for x in r)]
    if len(rows) < 2:
        raise ValueError(f"{name} must have a header row and at least one record: {str(p)!r}")
    header = [h.strip() for h in rows[0]]
    if len(set(header)) != len(header):
        raise ValueError(f"{name} has repeated column names: {header}")
    body = rows[1:]
    for i, r in enumerate(body):
        if len(r) != len(header):
            raise ValueError(f"{name} row {i + 2} has {len(r)} fields, the header has {len(header)}")
    return header, body


def _sort_levels(values: set[str]) -> list[str]:
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)


def load_hybrid_csv(
    private_csv: str | Path,
    public_csv: str | Path,
    label: str | None = None,
    categorical: Sequence[str] = (),
    columns: Sequence[str] | None = None,
    deduplicate_public: bool = True,
    delimiter: str = ",",
) -> HybridData:
    """Load a private and a public CSV file (with headers) into arrays for the pipeline.

    The paper's Section 5.2 data (two acute myocardial infarction cohorts, Edinburgh and
    Sheffield, Kennedy et al. 1996) are not distributed with this package; with your own files,
    ``load_hybrid_csv`` -> :func:`algorithm2` (or :func:`algorithm1`) runs the same pipeline.

    Parameters
    ----------
    private_csv, public_csv
        Paths; both must contain every used column.
    label
        Outcome column (0/1, or two values coded 0/1 in sorted order), placed last so the
        logistic contrast finds it.
    categorical
        Names of categorical covariates; their values are coded by the sorted public levels.
    columns
        Covariates to use (default: every public column except the label, in file order).
    deduplicate_public
        Keep the first occurrence of repeated public rows in ``public`` (the paper removes
        replicates so weights are not ambiguous); ``public_all`` keeps them all.
    delimiter
        Field separator.
    """
    ph, pb = _read_csv(private_csv, "private_csv", delimiter)
    eh, eb = _read_csv(public_csv, "public_csv", delimiter)
    if isinstance(categorical, str) or not isinstance(categorical, Sequence):
        raise TypeError(f"categorical must be a sequence of column names, got {categorical!r}")
    if columns is None:
        cols = [h for h in eh if h != label]
    else:
        if isinstance(columns, str) or not isinstance(columns, Sequence):
            raise TypeError(f"columns must be a sequence of column names, got {columns!r}")
        cols = [str(x) for x in columns if x != label]
    if label is not None:
        cols.append(str(label))
    for name, header in (("private_csv", ph), ("public_csv", eh)):
        missing = [x for x in cols if x not in header]
        if missing:
            raise ValueError(f"{name} lacks column(s) {missing}; it has {header}")
    unknown = [x for x in categorical if x not in cols]
    if unknown:
        raise ValueError(f"categorical names column(s) {unknown} that are not used columns {cols}")
    cat_set = set(categorical) | ({label} if label is not None else set())
    levels: dict[str, tuple[str, ...]] = {}
    for col in cols:
        if col in cat_set:
            j = eh.index(col)
            levels[col] = tuple(_sort_levels({r[j].strip() for r in eb}))
    if label is not None:
        lv = levels[label]
        if len(lv) > 2:
            raise ValueError(f"label column {label!r} must have two values, the public file has {list(lv)}")

    def convert(header: list[str], body: list[list[str]], name: str) -> np.ndarray:
        out = np.empty((len(body), len(cols)))
        for k, col in enumerate(cols):
            j = header.index(col)
            raw = [r[j].strip() for r in body]
            if col in cat_set:
                code = {v: i for i, v in enumerate(levels[col])}
                if col == label:
                    bad = [v for v in raw if v not in code]
                    if bad:
                        raise ValueError(f"{name}: label column {label!r} has value {bad[0]!r} not among {list(levels[col])}")
                    if len(levels[col]) == 1 and levels[col][0] in ("0", "1"):
                        code = {levels[col][0]: int(float(levels[col][0]))}
                out[:, k] = [code.get(v, -1) for v in raw]
            else:
                try:
                    out[:, k] = [float(v) for v in raw]
                except ValueError:
                    bad = next(i for i, v in enumerate(raw) if not _is_float(v))
                    raise ValueError(
                        f"{name}: column {col!r} row {bad + 2} is not a number: {raw[bad]!r} "
                        "(mark it categorical, or clean the file)"
                    ) from None
                if not np.isfinite(out[:, k]).all():
                    raise ValueError(f"{name}: column {col!r} has a missing or infinite value")
        return out

    private = convert(ph, pb, "private_csv")
    public_all = convert(eh, eb, "public_csv")
    if _check_bool(deduplicate_public, "deduplicate_public"):
        _, first = np.unique(public_all, axis=0, return_index=True)
        public = public_all[np.sort(first)]
    else:
        public = public_all
    cat_idx = tuple(cols.index(x) for x in cols if x in set(categorical))
    return HybridData(private, public, public_all, tuple(cols), cat_idx, levels, label)


def _is_float(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True
