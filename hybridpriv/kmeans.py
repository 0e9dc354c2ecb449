"""Hybrid DP K-means (Avent, Dubey & Korolova 2020, Section 7 and Appendix E, Algorithm 1).

Three algorithms, all run for ``tau`` iterations from the same kind of data-independent start:

* :func:`tcm_kmeans` -- the classic trusted-curator DP K-means (Dwork 2011) on the **TCM users
  only**: every iteration assigns the raw points to their nearest centre, releases the cluster
  counts and the cluster sums with Laplace noise and moves each centre to the noisy mean.
* :func:`lm_kmeans` -- the paper's local-model variant on **all users**: every user reports
  ``x + Lap^d(b_L)`` once; every iteration every user reports the cluster nearest to their own
  true point by K-ary randomized response, and the curator moves each centre to the mean of
  the noisy reports of the users who reported that cluster.
* :func:`hybrid_kmeans` -- Algorithm 1: both of the above run side by side on their own users
  (TCM users in the TCM branch, LM users in the LM branch) and, at the end of every
  iteration, each centre is the PWH combination (Definition 5.3) of the two branches' means.

The privacy budget is split exactly as the pseudocode says (line numbers of Algorithm 1;
``m`` is the data range, ``d`` the dimension, ``epsilon`` every user's total budget):

* line 2: ``b_T = (m d + 1) tau / epsilon`` and ``b_L = m d (tau + 1) / epsilon``;
* line 4: each LM user reports ``x + Lap^d(b_L)``: L1 range ``m d``, so ``m d / b_L =
  epsilon / (tau + 1)`` of that user's budget;
* line 7, every iteration: K-ary randomized response, true cluster kept with probability
  ``(e^{e'} - 1)/(K + e^{e'} - 1)`` and a uniform cluster otherwise, ``e' = epsilon/(tau+1)``:
  the report probabilities are ``q = e^{e'}/(K + e^{e'} - 1)`` (true cluster) and
  ``r = 1/(K + e^{e'} - 1)`` (each other), so ``log(q/r) = epsilon/(tau + 1)`` per iteration;
  ``tau + 1`` parts of ``epsilon/(tau+1)`` add up to ``epsilon`` for every LM user;
* line 9, every iteration: cluster counts ``+ Lap(b_T)`` (histogram, L1 sensitivity 1 under
  add/remove-one, clusters disjoint): ``1/b_T = epsilon / (tau (m d + 1))``;
* line 10, every iteration: cluster sums ``+ Lap^d(b_T)`` (one user's point has L1 norm
  ``<= m d``): ``m d / b_T = epsilon m d / (tau (m d + 1))``;  lines 9 and 10 together spend
  ``epsilon / tau`` per iteration and ``epsilon`` over the ``tau`` iterations for every TCM user.

Every part is recorded in a :class:`~hybridpriv.accounting.Accountant` (the epsilon of each
part is computed from the noise scale and sensitivity, or from ``log(q/r)``, not asserted), so
a result carries its ledger and :attr:`KMeansResult.spent_epsilon` is the total per user group.

Data domain: every coordinate lies in the declared :class:`~hybridpriv.privacy.Bounds`
``[lower, upper]`` (the same for all coordinates, e.g. the unit square); the algorithms work
on ``x - lower`` in ``[0, m]^d`` with ``m = upper - lower`` (the paper's convention), so the
sensitivities above hold for any bounds.  Points outside the bounds are an error.

Choices the pseudocode leaves open (all post-processing of released values, no privacy cost):

* line 1, initial centres: uniform in the bounds from ``rng`` (data-independent), or given;
* a cluster whose (noisy or debiased) count is below 1 keeps its previous centre in that
  branch; in the hybrid a branch with such a count gets weight 0 for that cluster;
* every centre is clipped into the bounds;
* line 13 sets ``s_T^2 = 2 b_T^2``, the variance of the noise on the TCM *sum*; Definition 5.3's
  ``s_T^2`` is the variance of the noise on the TCM *mean*, ``2 b_T^2 / N_T^2``.  Read
  literally, line 13 puts a weight of about ``b_L^2 / (N_L b_T^2)`` (``~1e-5`` in Figure 6's
  setting) on the TCM branch, so the hybrid would be the LM branch.  ``pwh_noise="mean"``
  (default) uses the mean's noise variance; ``pwh_noise="printed"`` follows line 13 literally;
* the LM branch follows lines 11-12 (raw counts and means of the users who *reported* the
  cluster, biased towards the other clusters by randomized response); ``debias=True`` (beyond
  the paper) inverts the randomized response on the counts and sums first.

Nearest-centre search is SciPy's :func:`scipy.spatial.distance.cdist` (``cKDTree`` for many
centres), vectorised over points; randomness comes only from the ``rng`` passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from .accounting import Accountant
from .mechanisms import check_rng, laplace
from .privacy import Bounds, Guarantee, check_epsilon, check_integer, check_real_array
from .theory.avent import pwh_weight  # Definition 5.3

__all__ = [
    "KMeansResult",
    "PWH_NOISE",
    "budget_parts",
    "debias_counts",
    "debias_sums",
    "hybrid_kmeans",
    "initial_centres",
    "lm_kmeans",
    "nearest_centre",
    "noise_scales",
    "randomized_response",
    "rr_probabilities",
    "split_users",
    "tcm_kmeans",
    "wcss",
]

#: How line 13's ``s_T^2`` is read for the PWH weight (see the module docstring).
PWH_NOISE = ("mean", "printed")

_KDTREE_FROM = 64  # use cKDTree from this many centres on (cdist's n x K matrix below it)


# -- validation -------------------------------------------------------------------------------

def _check_points(data: object, bounds: Bounds, name: str, d: int | None = None) -> np.ndarray:
    """``data`` as a float array of shape ``(n, d)`` inside ``bounds`` (NaN and infinities refused)."""
    arr = check_real_array(data, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n, d) (one row per user), got shape {arr.shape}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one coordinate, got shape {arr.shape}")
    if arr.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one point, got shape {arr.shape}")
    if d is not None and arr.shape[1] != d:
        raise ValueError(f"{name} must have {d} coordinate(s) per point, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return bounds.check(arr, name=name)


def _check_bounds(bounds: object) -> Bounds:
    return Bounds.from_pair(bounds)


def _check_pwh_noise(pwh_noise: object) -> str:
    if pwh_noise not in PWH_NOISE:
        raise ValueError(f"pwh_noise must be one of {PWH_NOISE}, got {pwh_noise!r}")
    return str(pwh_noise)


# -- building blocks --------------------------------------------------------------------------
def nearest_centre(data: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of the nearest centre of every point and the squared distance to it.

    ``data`` has shape ``(n, d)``, ``centres`` ``(K, d)``.  SciPy's ``cdist`` (squared
    Euclidean) with ``argmin`` for few centres, ``cKDTree`` for many; ties go to the lower index.
    """
    x = check_real_array(data, "data")
    c = check_real_array(centres, "centres")
    if x.ndim != 2 or c.ndim != 2 or x.shape[1] != c.shape[1]:
        raise ValueError(f"data (n, d) and centres (K, d) must share d, got shapes {x.shape} and {c.shape}")
    if c.shape[0] < 1:
        raise ValueError("centres must hold at least one centre")
    if x.shape[0] == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0)
    if c.shape[0] >= _KDTREE_FROM:
        dist, idx = cKDTree(c).query(x, k=1)
        return np.asarray(idx, dtype=np.intp), np.asarray(dist) ** 2
    # (K, n) layout: SciPy fills it several times faster than (n, K), and a running minimum
    # over the K rows (a loop over centres, vectorised over points) beats argmin over axis 0
    d2 = cdist(c, x, metric="sqeuclidean")
    idx = np.zeros(x.shape[0], dtype=np.intp)
    best = d2[0].copy()
    for j in range(1, c.shape[0]):
        closer = d2[j] < best  # strict: ties go to the lower index
        idx[closer] = j
        np.minimum(best, d2[j], out=best)
    return idx, best


def wcss(data: np.ndarray, centres: np.ndarray) -> float:
    """Within-cluster sum of squares: ``sum_i min_k ||x_i - c_k||^2`` (Section 7's loss).

    Scored against the true points (all users, both groups, in the studies).
    """
    return float(nearest_centre(data, centres)[1].sum())


def noise_scales(epsilon: float, tau: int, m: float, d: int) -> tuple[float, float]:
    """Line 2 of Algorithm 1: ``b_T = (m d + 1) tau / epsilon`` and ``b_L = m d (tau + 1) / epsilon``.

    ``epsilon = inf`` gives ``(0, 0)`` (no noise).
    """
    eps = check_epsilon(epsilon)
    tau = check_integer(tau, "tau", 1)
    d = check_integer(d, "d", 1)
    if isinstance(m, bool) or not isinstance(m, (int, float, np.integer, np.floating)) or not (0 < float(m) < math.inf):
        raise ValueError(f"m (data range) must be a finite number > 0, got {m!r}")
    m = float(m)
    b_t, b_l = (m * d + 1) * tau / eps, m * d * (tau + 1) / eps
    if not math.isinf(eps):
        tiny = float(np.finfo(float).tiny)
        if not all(math.isfinite(b) and b >= tiny for b in (b_t, b_l)):
            raise ValueError(
                f"epsilon={epsilon!r} with m={m:g} (data range), tau={tau}, d={d} gives noise scales b_T={b_t:g}, "
                f"b_L={b_l:g}; both must be finite (normal) numbers > 0: epsilon or m is too extreme for floating point"
            )
    return b_t, b_l


def rr_probabilities(epsilon: float, k: int) -> tuple[float, float]:
    """Report probabilities of line 7's randomized response: ``(q, r)``.

    The true cluster is kept with probability ``p = (e^eps - 1)/(K + e^eps - 1)``, otherwise a
    uniform cluster (possibly the true one) is reported, so the true cluster is reported with
    ``q = p + (1 - p)/K = e^eps/(K + e^eps - 1)`` and each other cluster with
    ``r = 1/(K + e^eps - 1)``; ``q/r = e^eps``.  ``epsilon = inf``: ``(1, 0)``.
    """
    eps = check_epsilon(epsilon)
    k = check_integer(k, "k", 1)
    if k == 1:
        return 1.0, 0.0
    em1 = math.expm1(eps) if eps < 700 else math.inf
    r = 1.0 / (k + em1)
    return 1.0 - (k - 1) * r, r


def randomized_response(labels: np.ndarray, k: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """K-ary randomized response of line 7, one report per user (vectorised).

    Keeps each label with probability ``(e^eps - 1)/(K + e^eps - 1)`` and replaces it by a
    uniform label in ``0..K-1`` otherwise: ``epsilon``-local DP (see :func:`rr_probabilities`).
    """
    check_rng(rng)
    k = check_integer(k, "k", 1)
    eps = check_epsilon(epsilon)
    lab = np.asarray(labels)
    if lab.dtype.kind not in "iu":
        raise TypeError(f"labels must be integers, got dtype {lab.dtype}")
    if lab.size and (lab.min() < 0 or lab.max() >= k):
        raise ValueError(f"labels must lie in 0..{k - 1}, got values in {lab.min()}..{lab.max()}")
    q, r = rr_probabilities(eps, k)
    keep_p = 1.0 - k * r  # = (e^eps - 1)/(K + e^eps - 1)
    # one uniform per user: u < keep_p keeps the label; otherwise (u - keep_p)/(1 - keep_p) is
    # uniform on [0, 1) given u >= keep_p and picks the uniform label
    u = rng.random(lab.shape)
    if keep_p >= 1.0:
        return lab.astype(np.intp, copy=True)
    other = np.minimum(((u - keep_p) / (1.0 - keep_p) * k).astype(np.intp), k - 1)
    return np.where(u < keep_p, lab, other)


def debias_counts(reported: np.ndarray, n: float, epsilon: float, k: int) -> np.ndarray:
    """Unbiased cluster counts from randomized-response report counts (beyond the paper).

    ``E[N_k] = q n_k + r (n - n_k)``, so ``(N_k - r n)/(q - r)`` is unbiased for ``n_k``.
    """
    q, r = rr_probabilities(epsilon, k)
    return (check_real_array(reported, "reported") - r * float(n)) / (q - r)


def debias_sums(reported: np.ndarray, total: np.ndarray, epsilon: float, k: int) -> np.ndarray:
    """Unbiased cluster sums (shape ``(K, d)``) from sums over the users who reported each cluster.

    ``E[S_k] = q S_k + r (S - S_k)`` given the values, with ``S`` the sum over all users, so
    ``(S_k^reported - r S)/(q - r)`` is unbiased for ``S_k``.
    """
    q, r = rr_probabilities(epsilon, k)
    return (check_real_array(reported, "reported") - r * check_real_array(total, "total")) / (q - r)


def budget_parts(epsilon: float, tau: int, m: float, d: int, k: int = 2) -> dict[str, float]:
    """The epsilon of every release of Algorithm 1, computed from its scale and sensitivity.

    Returns ``{"count": 1/b_T, "sum": m d/b_T, "report": m d/b_L, "rr": log(q/r)}`` -- per
    iteration for ``count``, ``sum`` (TCM users, lines 9-10) and ``rr`` (LM users, line 7),
    once for ``report`` (LM users, line 4).  ``k`` only matters through ``log(q/r)``.
    """
    b_t, b_l = noise_scales(epsilon, tau, m, d)
    eps = check_epsilon(epsilon)
    if math.isinf(eps):
        return {"count": math.inf, "sum": math.inf, "report": math.inf, "rr": math.inf}
    # log(q/r) in log space: q and r = 1/(K + e^eps' - 1) underflow to 0 once eps' = eps/(tau+1) > ~700
    eps_rr, kk = eps / (tau + 1), max(int(k), 2)
    log_denominator = eps_rr + math.log1p((kk - 1) * math.exp(-eps_rr))  # log(K - 1 + e^eps')
    log_q, log_r = eps_rr - log_denominator, -log_denominator
    parts = {"count": 1.0 / b_t, "sum": m * d / b_t, "report": m * d / b_l, "rr": log_q - log_r}
    bad = {key: v for key, v in parts.items() if not math.isfinite(v)}
    if bad:
        raise ValueError(f"epsilon={epsilon!r} with m={m!r}, tau={tau}, d={d} gives non-finite budget parts {bad}")
    return parts


def initial_centres(k: int, d: int, bounds: Bounds | tuple[float, float], rng: np.random.Generator) -> np.ndarray:
    """Line 1: ``k`` centres drawn uniformly in the bounds (data-independent, no privacy cost)."""
    check_rng(rng)
    k = check_integer(k, "k", 1)
    d = check_integer(d, "d", 1)
    b = _check_bounds(bounds)
    return b.lower + b.width * rng.random((k, d))


def split_users(data: np.ndarray, c: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Split the rows of ``data`` at random into ``round(c n)`` TCM users and the rest (LM users).

    ``c`` must lie in ``(0, 1)`` and leave at least one user in each group.
    """
    check_rng(rng)
    if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)) or not 0.0 < float(c) < 1.0:
        raise ValueError(f"c (fraction of TCM users) must be in (0, 1), got {c!r}")
    x = check_real_array(data, "data")
    if x.ndim != 2:
        raise ValueError(f"data must have shape (n, d), got {x.shape}")
    n = x.shape[0]
    n_t = int(round(float(c) * n))
    if not 1 <= n_t <= n - 1:
        raise ValueError(f"c={c!r} with n={n} users gives {n_t} TCM users; both groups need at least one user")
    perm = rng.permutation(n)
    return x[perm[:n_t]], x[perm[n_t:]]


# -- result -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class KMeansResult:
    """What a DP K-means run returns.

    Attributes
    ----------
    centres
        Final centres, shape ``(K, d)``, inside the bounds.
    history
        Centres before the first and after every iteration, shape ``(tau + 1, K, d)``.
    accountant
        The ledger: every release (labelled with its line of Algorithm 1) and its epsilon per group.
    scales
        ``{"b_T": ..., "b_L": ...}`` (line 2).
    weights
        Hybrid only: the PWH weight of the TCM branch per iteration and cluster, ``(tau, K)``.
    guarantee
        What the run promises each group (``"tcm"``: central, add/remove-one; ``"lm"``: local).
    """

    centres: np.ndarray
    history: np.ndarray
    accountant: Accountant
    scales: dict[str, float]
    weights: np.ndarray | None = None
    guarantee: dict[str, Guarantee] = field(default_factory=dict)

    @property
    def spent_epsilon(self) -> dict[str, float]:
        """Total epsilon spent per user group (sum over the ledger)."""
        return self.accountant.spent_epsilon()

    def wcss(self, data: np.ndarray) -> float:
        """WCSS of ``data`` (the true points) against the final centres."""
        return wcss(data, self.centres)


# -- the two branches, one iteration each ------------------------------------------------------
def _cluster_sums(x: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts ``(K,)`` and coordinate sums ``(K, d)`` per label (bincount: vectorised over points)."""
    counts = np.bincount(labels, minlength=k).astype(float)
    sums = np.stack([np.bincount(labels, weights=x[:, j], minlength=k) for j in range(x.shape[1])], axis=1)
    return counts, sums


def _means(counts: np.ndarray, sums: np.ndarray, previous: np.ndarray, m: float) -> tuple[np.ndarray, np.ndarray]:
    """Centres ``sums/counts`` clipped to ``[0, m]`` where ``counts >= 1``, else the previous centre."""
    ok = counts >= 1.0
    mean = sums / np.where(ok, counts, 1.0)[:, None]
    return np.where(ok[:, None], np.clip(mean, 0.0, m), previous), ok


class _TCMBranch:
    """Lines 6, 9, 10: the curator's noisy counts and sums of the TCM users' raw points."""

    def __init__(self, x: np.ndarray, k: int, b_t: float, parts: dict[str, float], acc: Accountant, group: str):
        self.x, self.k, self.b_t, self.parts, self.acc, self.group = x, k, b_t, parts, acc, group

    def step(self, centres: np.ndarray, t: int, m: float, rng: np.random.Generator):
        labels, _ = nearest_centre(self.x, centres)  # line 6: non-private assignment
        counts, sums = _cluster_sums(self.x, labels, self.k)
        n_t = laplace(counts, self.b_t, rng)  # line 9: Lap(b_T) on each count
        self.acc.spend({self.group: self.parts["count"]}, label=f"iteration {t}, line 9: TCM cluster counts + Lap(b_T)")
        s_t = laplace(sums, self.b_t, rng)  # line 10: Lap^d(b_T) on each sum
        self.acc.spend({self.group: self.parts["sum"]}, label=f"iteration {t}, line 10: TCM cluster sums + Lap^d(b_T)")
        mean, ok = _means(n_t, s_t, centres, m)
        return mean, ok, n_t


class _LMBranch:
    """Lines 4, 7, 11, 12: noisy reports once, randomized-response cluster reports every iteration."""

    def __init__(self, x: np.ndarray, k: int, b_l: float, eps_rr: float, parts: dict[str, float],
                 acc: Accountant, group: str, debias: bool, rng: np.random.Generator):
        self.x, self.k, self.eps_rr, self.parts, self.acc, self.group, self.debias = x, k, eps_rr, parts, acc, group, debias
        self.reports = laplace(x, b_l, rng)  # line 4: x~ = x + Lap^d(b_L), once per user
        acc.spend({group: parts["report"]}, label="line 4: LM reports x + Lap^d(b_L)")
        self.report_total = self.reports.sum(axis=0)

    def step(self, centres: np.ndarray, t: int, m: float, rng: np.random.Generator):
        true_labels, _ = nearest_centre(self.x, centres)  # each user: cluster nearest to their own point
        reported = randomized_response(true_labels, self.k, self.eps_rr, rng)  # line 7
        self.acc.spend({self.group: self.parts["rr"]}, label=f"iteration {t}, line 7: LM randomized-response cluster reports")
        n_l, s_l = _cluster_sums(self.reports, reported, self.k)  # lines 11-12 (no further privacy cost)
        if self.debias:
            n_l = debias_counts(n_l, self.x.shape[0], self.eps_rr, self.k)
            s_l = debias_sums(s_l, self.report_total, self.eps_rr, self.k)
        mean, ok = _means(n_l, s_l, centres, m)
        return mean, ok, n_l


# -- the three algorithms ---------------------------------------------------------------------
def _setup(k, epsilon, tau, bounds, rng, d, init):
    check_rng(rng)
    k = check_integer(k, "k", 1)
    tau = check_integer(tau, "tau", 1)
    eps = check_epsilon(epsilon)
    b = _check_bounds(bounds)
    if init is None:
        centres = initial_centres(k, d, b, rng)
    else:
        centres = _check_points(init, b, "init", d=d)
        if centres.shape[0] != k:
            raise ValueError(f"init must hold k={k} centres, got {centres.shape[0]}")
    return k, tau, eps, b, centres - b.lower


def _finish(history, b: Bounds, acc, scales, weights, guarantee) -> KMeansResult:
    h = np.stack(history) + b.lower
    return KMeansResult(h[-1], h, acc, scales, weights, guarantee)


def tcm_kmeans(
    data: np.ndarray,
    k: int,
    epsilon: float,
    tau: int,
    bounds: Bounds | tuple[float, float],
    rng: np.random.Generator,
    init: np.ndarray | None = None,
) -> KMeansResult:
    """The TCM building block: DP K-means on the TCM users' raw points (lines 6, 9, 10 alone).

    Parameters
    ----------
    data
        The TCM users' points, shape ``(n_T, d)``, inside ``bounds``.
    k
        Number of clusters (>= 1).
    epsilon
        Every TCM user's total budget (``inf``: no noise, i.e. Lloyd's algorithm).
    tau
        Number of iterations (>= 1); each spends ``epsilon / tau``.
    bounds
        Range ``[lower, upper]`` of every coordinate.
    rng
        The only source of randomness.
    init
        Initial centres ``(k, d)``; default: uniform in the bounds from ``rng`` (line 1).

    Guarantee
    ---------
    ``epsilon``-DP for every TCM user under add/remove-one neighbours (central model).
    """
    b = _check_bounds(bounds)
    x = _check_points(data, b, "data")
    k, tau, eps, b, centres = _setup(k, epsilon, tau, b, rng, x.shape[1], init)
    m, d = b.width, x.shape[1]
    b_t, b_l = noise_scales(eps, tau, m, d)
    parts = budget_parts(eps, tau, m, d, k)
    acc = Accountant({"tcm": (eps, 0.0)})
    branch = _TCMBranch(x - b.lower, k, b_t, parts, acc, "tcm")
    history = [centres]
    for t in range(1, tau + 1):
        centres, _, _ = branch.step(centres, t, m, rng)
        history.append(centres)
    return _finish(history, b, acc, {"b_T": b_t, "b_L": b_l}, None, {"tcm": Guarantee(eps, 0.0, "add-remove")})


def lm_kmeans(
    data: np.ndarray,
    k: int,
    epsilon: float,
    tau: int,
    bounds: Bounds | tuple[float, float],
    rng: np.random.Generator,
    init: np.ndarray | None = None,
    debias: bool = False,
) -> KMeansResult:
    """The LM building block: K-means with local DP on all users (lines 4, 7, 11, 12 alone).

    Each user spends ``epsilon/(tau+1)`` on one report ``x + Lap^d(b_L)`` and
    ``epsilon/(tau+1)`` per iteration on a randomized-response report of their nearest cluster.
    Parameters as :func:`tcm_kmeans`; ``data`` holds every user's point; ``debias=True`` inverts
    the randomized response on the counts and sums (beyond the paper, see :func:`debias_counts`).

    Guarantee
    ---------
    ``epsilon``-local DP for every user (any two inputs).
    """
    if not isinstance(debias, bool):
        raise TypeError(f"debias must be True or False, got {debias!r}")
    b = _check_bounds(bounds)
    x = _check_points(data, b, "data")
    k, tau, eps, b, centres = _setup(k, epsilon, tau, b, rng, x.shape[1], init)
    m, d = b.width, x.shape[1]
    b_t, b_l = noise_scales(eps, tau, m, d)
    parts = budget_parts(eps, tau, m, d, k)
    acc = Accountant({"lm": (eps, 0.0)})
    branch = _LMBranch(x - b.lower, k, b_l, eps / (tau + 1), parts, acc, "lm", debias, rng)
    history = [centres]
    for t in range(1, tau + 1):
        centres, _, _ = branch.step(centres, t, m, rng)
        history.append(centres)
    return _finish(history, b, acc, {"b_T": b_t, "b_L": b_l}, None, {"lm": Guarantee(eps, 0.0, "replace")})


def _pwh(n_t: np.ndarray, n_l: np.ndarray, b_t: float, b_l: float, pwh_noise: str) -> np.ndarray:
    """Lines 13-14: the PWH weight per cluster from the released counts (>= 1 where used)."""
    n = n_t + n_l
    c = n_t / n
    s_t2 = 2.0 * b_t**2 / (n_t**2 if pwh_noise == "mean" else 1.0)
    s_l2 = 2.0 * b_l**2
    return np.asarray(pwh_weight(n, c, s_t2, s_l2), dtype=float)


def hybrid_kmeans(
    tcm_data: np.ndarray,
    lm_data: np.ndarray,
    k: int,
    epsilon: float,
    tau: int,
    bounds: Bounds | tuple[float, float],
    rng: np.random.Generator,
    init: np.ndarray | None = None,
    pwh_noise: str = "mean",
    debias: bool = False,
) -> KMeansResult:
    """Hybrid-DP K-means, Algorithm 1 of Appendix E.

    Parameters
    ----------
    tcm_data, lm_data
        The TCM users' and the LM users' points, shapes ``(n_T, d)`` and ``(n_L, d)``.
    k, epsilon, tau, bounds, rng, init
        As :func:`tcm_kmeans`; every user of both groups gets budget ``epsilon``.
    pwh_noise
        ``"mean"`` (default): line 13's ``s_T^2`` is the variance of the noise on the TCM cluster
        mean, ``2 b_T^2 / N_T^2`` (Definition 5.3's meaning); ``"printed"``: ``2 b_T^2`` as printed.
    debias
        Invert the randomized response in the LM branch (beyond the paper).

    Returns
    -------
    :class:`KMeansResult` with ``weights`` (the TCM branch's PWH weight per iteration and cluster).
    The PWH weight depends on ``epsilon`` only through ``b_T / b_L`` (``epsilon``-free), so it
    is computed from the epsilon-free scales and stays defined for ``epsilon = inf``.

    Guarantee
    ---------
    ``epsilon``-DP (central, add/remove-one) for every TCM user and ``epsilon``-local DP for
    every LM user.
    """
    if not isinstance(debias, bool):
        raise TypeError(f"debias must be True or False, got {debias!r}")
    pwh_noise = _check_pwh_noise(pwh_noise)
    b = _check_bounds(bounds)
    xt = _check_points(tcm_data, b, "tcm_data")
    xl = _check_points(lm_data, b, "lm_data", d=xt.shape[1])
    k, tau, eps, b, centres = _setup(k, epsilon, tau, b, rng, xt.shape[1], init)
    m, d = b.width, xt.shape[1]
    b_t, b_l = noise_scales(eps, tau, m, d)
    w_bt, w_bl = noise_scales(1.0, tau, m, d)  # epsilon-free scales for the weight (ratio only)
    parts = budget_parts(eps, tau, m, d, k)
    acc = Accountant({"tcm": (eps, 0.0), "lm": (eps, 0.0)})
    tcm = _TCMBranch(xt - b.lower, k, b_t, parts, acc, "tcm")
    lm = _LMBranch(xl - b.lower, k, b_l, eps / (tau + 1), parts, acc, "lm", debias, rng)  # line 4
    history, weights = [centres], []
    for t in range(1, tau + 1):
        mu_t, ok_t, n_t = tcm.step(centres, t, m, rng)  # lines 6, 9, 10
        mu_l, ok_l, n_l = lm.step(centres, t, m, rng)  # lines 7, 11, 12
        w = _pwh(np.maximum(n_t, 1.0), np.maximum(n_l, 1.0), w_bt, w_bl, pwh_noise)  # lines 13-14
        w = np.where(ok_t & ok_l, w, np.where(ok_t, 1.0, 0.0))
        new = w[:, None] * mu_t + (1.0 - w[:, None]) * mu_l  # line 15
        centres = np.where((ok_t | ok_l)[:, None], np.clip(new, 0.0, m), centres)
        history.append(centres)
        weights.append(w)
    guarantee = {"tcm": Guarantee(eps, 0.0, "add-remove"), "lm": Guarantee(eps, 0.0, "replace")}
    return _finish(history, b, acc, {"b_T": b_t, "b_L": b_l}, np.stack(weights), guarantee)
