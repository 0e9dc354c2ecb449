"""Algorithm 1 of Avent, Dubey & Korolova (2020, Appendix E) and its building blocks, on arrays.

Three DP K-means algorithms run for ``tau`` iterations from a data-independent start:

* the **TCM branch** (classic trusted-curator DP K-means, Dwork 2011) on the TCM users: every
  iteration assigns the raw points to their nearest centre (line 6), releases the cluster counts
  (line 9) and sums (line 10) with Laplace noise and moves each centre to the noisy mean;
* the **LM branch** (the paper's local-model variant): every user reports ``x + Lap^d(b_L)`` once
  (line 4); every iteration every user reports the cluster nearest to their own true point by
  K-ary randomized response (line 7) and each centre moves to the mean of the noisy reports of
  the users who reported that cluster (lines 11-12);
* the **hybrid** (Algorithm 1): both branches side by side on their own users and, at the end of
  every iteration, each centre is the PWH combination (Definition 5.3) of the two (lines 13-15).

The budget is split exactly as the pseudocode says (``m``: data range, ``d``: dimension,
``epsilon``: every user's total budget; line 2: ``b_T = (m d + 1) tau / epsilon``,
``b_L = m d (tau + 1) / epsilon``):

* line 4, once: ``x + Lap^d(b_L)``, L1 range ``m d``: ``m d / b_L = epsilon / (tau + 1)``;
* line 7, every iteration: K-ary randomized response at ``e' = epsilon/(tau+1)``: report
  probabilities ``q = e^{e'}/(K + e^{e'} - 1)`` (true cluster) and ``r = 1/(K + e^{e'} - 1)``,
  so ``log(q/r) = epsilon/(tau + 1)``; with line 4, ``tau + 1`` equal parts make ``epsilon``;
* line 9, every iteration: counts ``+ Lap(b_T)`` (histogram, L1 sensitivity 1 under
  add/remove-one): ``1/b_T``;
* line 10, every iteration: sums ``+ Lap^d(b_T)`` (one point has L1 norm ``<= m d``):
  ``m d / b_T``; lines 9 and 10 spend ``epsilon / tau`` per iteration, ``epsilon`` in all.

:func:`ledger_plan` lists these parts in the order a run spends them; the mechanisms compose it
in an :class:`~hybridpriv.accounting.Accountant` to declare their guarantee, and a recorded run
(:func:`run_kmeans` with a ledger) spends every part as it releases it.

Choices the pseudocode leaves open (post-processing of released values, no privacy cost):

* line 1, the start: given (the data's public start) or uniform in the bounds from ``rng``;
* a cluster whose (noisy or debiased) count is below 1 keeps its previous centre in that
  branch; in the hybrid such a branch gets weight 0 for that cluster; centres are clipped into
  the bounds;
* line 13 sets ``s_T^2 = 2 b_T^2``, the noise variance of the TCM *sum*; Definition 5.3's
  ``s_T^2`` is the noise variance of the TCM *mean*, ``2 b_T^2 / N_T^2``.  Read literally,
  line 13 puts a weight of about ``b_L^2 / (N_L b_T^2)`` (~1e-5 in Figure 6's setting) on the TCM
  branch.  ``pwh_noise="mean"`` (default) uses the mean's variance, ``"printed"`` line 13;
* the LM branch follows lines 11-12 (biased towards the other clusters by randomized
  response); ``debias=True`` (beyond the paper) inverts the randomized response first.

The algorithms work on ``x - lower`` in ``[0, m]^d`` (the paper's convention), so the
sensitivities hold for any bounds.  Nearest-centre search, vectorised over points: for points in
the plane (``d = 2``) and fewer than 64 centres, one compiled pass (:mod:`._kernels`) that also
turns the labels into randomized-response reports and cluster sums, with the same floating-point
operations as the NumPy path (SciPy's ``cdist``, :func:`~hybridpriv.noise.randomized_response`,
``bincount``), hence the same numbers; otherwise that NumPy path (``cKDTree`` from 64 centres).
Randomness only from the ``rng`` passed in.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from ....accounting import Accountant
from ....core.privacy import Bounds, check_epsilon, check_integer, check_real_array
from ....core.validation import check_rng
from ....noise import randomized_response, rr_debias_counts, rr_debias_sums, rr_probabilities
from . import _kernels

__all__ = [
    "KMeansResult",
    "MAX_SCALE",
    "PWH_NOISE",
    "budget_parts",
    "ledger_plan",
    "lm_means",
    "mix",
    "nearest_centre",
    "noise_scales",
    "run_kmeans",
    "wcss",
]

#: How line 13's ``s_T^2`` is read for the PWH weight (see the module docstring).
PWH_NOISE = ("mean", "printed")

#: Largest noise scale accepted: a Laplace draw is at most ~37 scales (uniforms are >= 2^-53), so
#: noisy counts and sums stay finite.
MAX_SCALE = 1e300

_KDTREE_FROM = 64  # use cKDTree from this many centres on (cdist's K x n matrix below it)
_BROADCAST_UPTO = 64  # points x centres up to which a batch searches by one broadcast over its trials


# -- building blocks --------------------------------------------------------------------------
def _compiled(x: np.ndarray) -> bool:
    """Whether the compiled kernels serve points ``x`` (``(n, d)`` or ``(T, n, d)``): ``d = 2``, float64."""
    return x.shape[-1] == _kernels.D and x.dtype == np.float64


def _nearest(x: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if x.shape[0] == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0)
    if c.shape[0] >= _KDTREE_FROM:
        dist, idx = cKDTree(c).query(x, k=1)
        return np.asarray(idx, dtype=np.intp), np.asarray(dist) ** 2
    if _compiled(x):  # the same numbers in one compiled pass (see _kernels)
        return _kernels.assign(x, c)
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


def nearest_centre(data: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of the nearest centre of every point and the squared distance to it.

    ``data`` has shape ``(n, d)``, ``centres`` ``(K, d)``; ties go to the lower index.
    """
    return _nearest(*_checked(data, centres))


def _checked(data: object, centres: object) -> tuple[np.ndarray, np.ndarray]:
    """``data`` ``(n, d)`` and ``centres`` ``(K, d)`` as finite float arrays sharing ``d``, ``K >= 1``."""
    x = check_real_array(data, "data")
    c = check_real_array(centres, "centres")
    if x.ndim != 2 or c.ndim != 2 or x.shape[1] != c.shape[1]:
        raise ValueError(f"data (n, d) and centres (K, d) must share d, got shapes {x.shape} and {c.shape}")
    if c.shape[0] < 1:
        raise ValueError("centres must hold at least one centre")
    if not (np.isfinite(x).all() and np.isfinite(c).all()):
        raise ValueError("data and centres must be finite (no NaN or infinity)")
    return x, c


def wcss(data: np.ndarray, centres: np.ndarray) -> float:
    """Within-cluster sum of squares ``sum_i min_k ||x_i - c_k||^2`` (Section 7's loss)."""
    return _wcss(*_checked(data, centres))


def _wcss(x: np.ndarray, c: np.ndarray, xt: np.ndarray | None = None) -> float:
    """:func:`wcss` of validated points (``xt``: transposed, if at hand); the compiled search writes
    into :func:`scratch` buffers (the same distances, summed by NumPy as before)."""
    n = x.shape[0]
    if n == 0 or not _compiled(x) or c.shape[0] >= _KDTREE_FROM:
        return float(_nearest(x, c)[1].sum())
    cp = _kernels.pad(c)
    best = scratch("wcss.best", (n,))
    xt = _kernels.transpose(x, scratch("wcss.xt", (2, n))) if xt is None else xt
    _kernels.scans(cp.shape[0])[0](xt, cp, scratch("wcss.idx", (n,), np.intp), best)
    return float(best.sum())


def _check_range(m: object) -> float:
    if isinstance(m, bool) or not isinstance(m, (int, float, np.integer, np.floating)) or not (0 < float(m) < math.inf):
        raise ValueError(f"m (data range) must be a finite number > 0, got {m!r}")
    return float(m)


def noise_scales(epsilon: float, tau: int, m: float, d: int) -> tuple[float, float]:
    """Line 2: ``b_T = (m d + 1) tau / epsilon`` and ``b_L = m d (tau + 1) / epsilon``; ``epsilon = inf``: ``(0, 0)``."""
    eps = check_epsilon(epsilon)
    tau = check_integer(tau, "tau", 1)
    d = check_integer(d, "d", 1)
    m = _check_range(m)
    b_t, b_l = (m * d + 1) * tau / eps, m * d * (tau + 1) / eps
    if not math.isinf(eps):
        tiny = float(np.finfo(float).tiny)
        if not all(tiny <= b <= MAX_SCALE for b in (b_t, b_l)):
            raise ValueError(
                f"epsilon={epsilon!r} with m={m:g} (data range), tau={tau}, d={d} gives noise scales b_T={b_t:g}, "
                f"b_L={b_l:g}; both must lie in [{tiny:g}, {MAX_SCALE:g}] (Laplace draws of a larger scale "
                "overflow): epsilon or m is too extreme for floating point"
            )
    return b_t, b_l


def budget_parts(epsilon: float, tau: int, m: float, d: int, k: int = 2) -> dict[str, float]:
    """The epsilon of every release of Algorithm 1, computed from its noise scale and sensitivity.

    ``{"count": 1/b_T, "sum": m d/b_T, "report": m d/b_L, "rr": log(q/r)}``: per iteration for
    ``count``, ``sum`` (lines 9-10) and ``rr`` (line 7), once for ``report`` (line 4).  ``log(q/r)``
    is computed in log space (``q`` and ``r`` underflow once ``epsilon/(tau+1)`` > ~700).
    """
    b_t, b_l = noise_scales(epsilon, tau, m, d)
    eps = check_epsilon(epsilon)
    k = check_integer(k, "k", 1)
    if math.isinf(eps):
        return {"count": math.inf, "sum": math.inf, "report": math.inf, "rr": math.inf}
    eps_rr, kk = eps / (tau + 1), max(k, 2)
    log_denominator = eps_rr + math.log1p((kk - 1) * math.exp(-eps_rr))  # log(K - 1 + e^eps')
    log_q, log_r = eps_rr - log_denominator, -log_denominator
    parts = {"count": 1.0 / b_t, "sum": m * d / b_t, "report": m * d / b_l, "rr": log_q - log_r}
    bad = {key: v for key, v in parts.items() if not math.isfinite(v)}
    if bad:
        raise ValueError(f"epsilon={epsilon!r} with m={m!r}, tau={tau}, d={d} gives non-finite budget parts {bad}")
    return parts


def ledger_plan(tcm_units: tuple[str, ...] | None, lm_units: tuple[str, ...] | None, epsilon: float, tau: int,
                m: float, d: int, k: int) -> list[tuple[str, dict[str, float]]]:
    """Every release of a run in order: ``(label, {unit: epsilon})``.

    ``tcm_units`` are the units whose raw points the TCM branch reads (lines 9-10), ``lm_units``
    those who report to the LM branch (lines 4 and 7); ``None``: the run has no such branch.
    """
    parts = budget_parts(epsilon, tau, m, d, k)
    plan: list[tuple[str, dict[str, float]]] = []
    if lm_units is not None:
        plan.append(("line 4: LM reports x + Lap^d(b_L)", dict.fromkeys(lm_units, parts["report"])))
    for t in range(1, tau + 1):
        if tcm_units is not None:
            plan.append((f"iteration {t}, line 9: TCM cluster counts + Lap(b_T)", dict.fromkeys(tcm_units, parts["count"])))
            plan.append((f"iteration {t}, line 10: TCM cluster sums + Lap^d(b_T)", dict.fromkeys(tcm_units, parts["sum"])))
        if lm_units is not None:
            plan.append((f"iteration {t}, line 7: LM randomized-response cluster reports", dict.fromkeys(lm_units, parts["rr"])))
    return plan


# -- result -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class KMeansResult:
    """Runs of a K-means mechanism (one run, or a batch with a leading trial axis).

    Attributes
    ----------
    centres
        Final centres, ``(K, d)`` (a batch: ``(trials, K, d)``), inside the bounds.
    history
        Centres before the first and after every iteration, ``(tau + 1, K, d)`` (a batch:
        ``(trials, tau + 1, K, d)``).
    accountant
        The ledger of one run: every release, labelled with its line of Algorithm 1, and its
        epsilon per unit (every run of a batch spends the same).
    scales
        ``{"b_T": ..., "b_L": ...}`` (line 2).
    weights
        Hybrid only: the TCM branch's PWH weight per iteration and cluster, ``(tau, K)`` (a batch:
        ``(trials, tau, K)``).
    """

    centres: np.ndarray
    history: np.ndarray
    accountant: Accountant
    scales: dict[str, float]
    weights: np.ndarray | None = None

    @property
    def spent_epsilon(self) -> dict[str, float]:
        """Total epsilon spent per unit by one run (sum over the ledger)."""
        return self.accountant.spent_epsilon()

    def wcss(self, points: np.ndarray) -> float:
        """WCSS of ``points`` (the true points) against the final centres of a single run."""
        if self.centres.ndim != 2:
            raise ValueError("wcss needs a single run; score each run of a batch with wcss(points, centres[t])")
        return wcss(points, self.centres)


# -- the two branches, vectorised over a leading trial axis -----------------------------------
def _nearest_batch(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Nearest-centre labels ``(T, n)`` of points ``x`` (``(n, d)`` shared, or ``(T, n, d)``) for centres ``(T, K, d)``.

    The NumPy path's search (the iterations use :meth:`_Compiled.sums` where it applies).  One
    SciPy search per trial (:func:`_nearest`): each is a single C pass over the ``K x n``
    distances, and measured on 2 cores it beats every NumPy broadcast over the trial axis we tried
    (``(T, n, d)`` differences: 3-5x slower; per-coordinate ``(T, n)`` passes, in place: 1.1-1.3x
    slower), for 3 to 200 trials of 2,000 to 160,000 points (``benchmarks/kmeans_trials.py``).
    The labels are those of a single run, so a batch of trials assigns exactly as one trial does.
    """
    t = c.shape[0]
    if x.shape[-2] == 0:
        return np.zeros((t, 0), dtype=np.intp)
    if x.shape[-2] * c.shape[1] <= _BROADCAST_UPTO:
        # a handful of points (the audits): one broadcast over the trial axis instead of T searches;
        # the same squared distances (coordinates summed in order) and ties to the lower index
        diff = (x[None] if x.ndim == 2 else x)[:, :, None, :] - c[:, None, :, :]
        return np.argmin(np.square(diff).sum(axis=-1), axis=-1).astype(np.intp)
    return np.stack([_nearest(x if x.ndim == 2 else x[i], c[i])[0] for i in range(t)])


def _cluster_sums(x: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts ``(T, K)`` and coordinate sums ``(T, K, d)`` per label (one bincount over all trials)."""
    t, n = labels.shape
    flat = (labels + k * np.arange(t)[:, None]).ravel()
    counts = np.bincount(flat, minlength=t * k).astype(float).reshape(t, k)
    xb = np.broadcast_to(x, (t, n, x.shape[-1]))
    sums = np.stack([np.bincount(flat, weights=xb[..., j].ravel(), minlength=t * k).reshape(t, k)
                     for j in range(x.shape[-1])], axis=-1)
    return counts, sums


_SCRATCH = threading.local()


def scratch(role: str, shape: tuple[int, ...], dtype: type = np.float64) -> np.ndarray:
    """A C-contiguous buffer of ``shape`` for ``role`` (uninitialised), the same memory every time in
    this thread: for arrays of a run that never leave it (points as the kernels read them, labels,
    uniforms, line 4's reports).  At full scale a run's temporaries (~20 MB) allocated afresh cost
    more in page faults than a compiled iteration; the buffers only grow (largest use kept)."""
    pool = _SCRATCH.__dict__.setdefault("pool", {})
    size = math.prod(shape)
    buf = pool.get((role, dtype))
    if buf is None or buf.size < size:
        buf = pool[role, dtype] = np.empty(size, dtype=dtype)
    return buf[:size].reshape(shape)


class _Compiled:
    """The points of a branch (``role``: ``"tcm"`` or ``"lm"``) as the compiled kernels read them, and
    buffers reused every iteration (:func:`scratch`)."""

    def __init__(self, x: np.ndarray, role: str, xt: np.ndarray | None = None) -> None:
        n = x.shape[0]
        self.x, self.xt = x, _kernels.transpose(x, scratch(role + ".xt", (2, n))) if xt is None else xt
        self.labels, self.best = scratch(role + ".labels", (n,), np.intp), scratch(role + ".best", (n,))

    def sums(self, centres: np.ndarray, rr: tuple[np.ndarray, float] | None = None,
             values: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Counts ``(T, K)`` and sums ``(T, K, d)`` of ``values`` (default the points) per nearest centre,
        or per randomized-response report of it (``rr = (uniforms (T, n), keep probability)``):
        :func:`_nearest_batch`, :func:`~hybridpriv.noise.randomized_response` and :func:`_cluster_sums`
        compiled, per trial, the same numbers."""
        t, k = centres.shape[:2]
        counts = np.zeros((t, k), dtype=np.intp)
        sums = np.zeros((t, k, self.x.shape[-1]))
        nearest, rr_labels = _kernels.scans(1 << (k - 1).bit_length())
        for i in range(t):
            c = _kernels.pad(centres[i])
            if rr is None:
                nearest(self.xt, c, self.labels, self.best)
                _kernels.add(self.labels, self.x, counts[i], sums[i])
            else:
                rr_labels(self.xt, c, rr[0][i], rr[1], k, self.labels)
                _kernels.add(self.labels, values[i], counts[i], sums[i])  # type: ignore[index]
        return counts.astype(float), sums


def _means(counts: np.ndarray, sums: np.ndarray, previous: np.ndarray, m: float) -> tuple[np.ndarray, np.ndarray]:
    """Centres ``sums/counts`` clipped to ``[0, m]`` where ``counts >= 1``, else the previous centre."""
    ok = counts >= 1.0
    mean = sums / np.where(ok, counts, 1.0)[..., None]
    return np.where(ok[..., None], np.clip(mean, 0.0, m), previous), ok


class _Ledger:
    """Spends the planned parts in order (or only checks the order, for unrecorded runs)."""

    def __init__(self, plan: list[tuple[str, dict[str, float]]], accountant: Accountant | None) -> None:
        self.plan, self.acc, self.i = plan, accountant, 0

    def spend(self, line: str) -> None:
        label, parts = self.plan[self.i]
        if line not in label:  # the plan and the run must release in the same order
            raise RuntimeError(f"release {line!r} out of the planned order (expected {label!r})")
        self.i += 1
        if self.acc is not None:
            self.acc.spend(parts, label=label)


class _TCMBranch:
    """Lines 6, 9, 10: the curator's noisy counts and sums of the TCM users' raw points."""

    def __init__(self, x: np.ndarray, k: int, b_t: float, ledger: _Ledger, xt: np.ndarray | None = None) -> None:
        self.x, self.k, self.b_t, self.ledger = x, k, b_t, ledger
        self.compiled = _Compiled(x, "tcm", xt) if _compiled(x) and k < _KDTREE_FROM else None

    def step(self, centres: np.ndarray, m: float, rng: np.random.Generator):
        if self.compiled is not None:  # lines 6 and the exact counts and sums, compiled
            counts, sums = self.compiled.sums(centres)
        else:
            labels = _nearest_batch(self.x, centres)  # line 6: non-private assignment
            counts, sums = _cluster_sums(self.x, labels, self.k)
        if self.b_t > 0:  # b_T = 0 (epsilon = inf): exact counts and sums, spending inf
            # laplace()'s arithmetic (values + scale * standard draws) without its checks, as line 4: the
            # counts and sums are finite, and b_T <= MAX_SCALE keeps every noisy value finite
            counts = counts + self.b_t * rng.laplace(0.0, 1.0, size=counts.shape)  # line 9: Lap(b_T) on each count
            sums = sums + self.b_t * rng.laplace(0.0, 1.0, size=sums.shape)  # line 10: Lap^d(b_T) on each sum
        self.ledger.spend("line 9")
        self.ledger.spend("line 10")
        mean, ok = _means(counts, sums, centres, m)
        return mean, ok, counts


class _LMBranch:
    """Lines 4, 7, 11, 12: noisy reports once, randomized-response cluster reports every iteration."""

    def __init__(self, x: np.ndarray, k: int, b_l: float, eps_rr: float, debias: bool, ledger: _Ledger,
                 rng: np.random.Generator, trials: int, xt: np.ndarray | None = None) -> None:
        self.x, self.k, self.eps_rr, self.debias, self.ledger = x, k, eps_rr, debias, ledger
        self.keep = 1.0 - k * rr_probabilities(eps_rr, k)[1]  # randomized_response's keep probability
        self.compiled = _Compiled(x, "lm", xt) if _compiled(x) and k < _KDTREE_FROM else None
        # line 4: x + Lap^d(b_L), once; laplace()'s arithmetic (values + scale * standard draw, in place)
        # without its checks: x is checked finite and b_L <= MAX_SCALE keeps every report finite
        self.reports = self._reports(x, b_l, rng, trials)
        ledger.spend("line 4")
        if debias:  # every LM user's report summed, per trial (compiled: NumPy's order, ~10x faster on (T, n, 2))
            self.report_total = (self.reports.sum(axis=1) if self.compiled is None
                                 else _kernels.sum_rows(self.reports, np.empty((trials, x.shape[1]))))
        else:
            self.report_total = None

    def _reports(self, x: np.ndarray, b_l: float, rng: np.random.Generator, trials: int) -> np.ndarray:
        """``x + b_L Lap^d(1)`` for every trial: ``laplace(0, 1, size)`` then ``*= b_L``, ``+= x``, or the same
        doubles from the generator's uniforms in one compiled pass (:func:`._kernels.laplace_reports`)."""
        if self.compiled is not None:
            state = rng.bit_generator.state
            out = scratch("lm.reports", (trials, *x.shape))
            if _kernels.laplace_reports(rng.random(out=scratch("lm.u4", (out.size,))), x, b_l, out):
                return out
            rng.bit_generator.state = state  # a uniform was 0 (p ~ 1e-16 each), which laplace redraws: its path
        reports = rng.laplace(0.0, 1.0, size=(trials, *x.shape))
        reports *= b_l
        reports += x
        return reports

    def step(self, centres: np.ndarray, m: float, rng: np.random.Generator):
        if self.compiled is not None:  # compiled, randomized_response's uniforms drawn here
            u = rng.random(out=scratch("lm.u7", (centres.shape[0], self.x.shape[0])))  # line 7: one uniform per user, as it draws
            n_l, s_l = self.compiled.sums(centres, (u, self.keep), self.reports)
        else:
            true_labels = _nearest_batch(self.x, centres)  # each user: the cluster nearest to their own point
            reported = randomized_response(true_labels, self.k, self.eps_rr, rng)  # line 7
            n_l, s_l = _cluster_sums(self.reports, reported, self.k)  # lines 11-12 (no further privacy cost)
        self.ledger.spend("line 7")
        return lm_means(n_l, s_l, centres, m, self.k, self.eps_rr, self.x.shape[0], self.report_total)


def lm_means(n_l: np.ndarray, s_l: np.ndarray, centres: np.ndarray, m: float, k: int, eps_rr: float, n: int,
             report_total: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lines 11-12 from the LM users' reported clusters: the counts ``n_l`` ``(T, K)`` and sums ``s_l``
    ``(T, K, d)`` of the line-4 reports per reported cluster, debiased when ``report_total`` (every report
    summed, ``(T, d)``) is given and ``k > 1``, to ``(centres, moved, counts)`` (:func:`_means`).  The
    simulation and a release from the devices' answers (:mod:`hybridpriv.families.kmeans.rounds`) share it."""
    if report_total is not None and k > 1:
        n_l = rr_debias_counts(n_l, n, eps_rr, k)
        s_l = rr_debias_sums(s_l, report_total, eps_rr, k)
    mean, ok = _means(n_l, s_l, centres, m)
    return mean, ok, n_l


def _pwh(n_t: np.ndarray, n_l: np.ndarray, b_t: float, b_l: float, pwh_noise: str) -> np.ndarray:
    """Lines 13-14, Definition 5.3: ``w = s_L^2 / (s_L^2 + (1 - c) n s_T^2)`` with ``(1 - c) n = N_L``."""
    s_t2 = 2.0 * b_t**2 / (n_t**2 if pwh_noise == "mean" else 1.0)
    s_l2 = 2.0 * b_l**2
    return s_l2 / (s_l2 + n_l * s_t2)


def mix(centres: np.ndarray, tcm: tuple[np.ndarray, np.ndarray, np.ndarray], lm: tuple[np.ndarray, np.ndarray, np.ndarray],
        tau: int, m: float, d: int, pwh_noise: str) -> tuple[np.ndarray, np.ndarray]:
    """Lines 13-15: the hybrid's centres from the two branches' ``(centres, moved, counts)`` and the TCM
    branch's PWH weights ``(T, K)``.  The weight sees ``epsilon`` only through ``b_T / b_L``, so the
    epsilon-free scales (``epsilon = 1``) serve every epsilon, ``inf`` included."""
    (mu_t, ok_t, n_t), (mu_l, ok_l, n_l) = tcm, lm
    w_bt, w_bl = noise_scales(1.0, tau, m, d)
    w = _pwh(np.maximum(n_t, 1.0), np.maximum(n_l, 1.0), w_bt, w_bl, pwh_noise)  # lines 13-14
    w = np.where(ok_t & ok_l, w, np.where(ok_t, 1.0, 0.0))
    new = w[..., None] * mu_t + (1.0 - w[..., None]) * mu_l  # line 15
    return np.where((ok_t | ok_l)[..., None], np.clip(new, 0.0, m), centres), w


# -- runs -------------------------------------------------------------------------------------
def _shifted(x: np.ndarray, bounds: Bounds) -> np.ndarray:
    """``x - lower`` (the algorithms work in ``[0, m]^d``); ``x`` itself when ``lower`` is 0, the same
    doubles (``v - 0.0 == v``, signed zeros included), without a copy."""
    return x if bounds.lower == 0.0 else x - bounds.lower


def run_kmeans(
    x_tcm: np.ndarray | None,
    x_lm: np.ndarray | None,
    k: int,
    epsilon: float,
    tau: int,
    bounds: Bounds,
    rng: np.random.Generator,
    init: np.ndarray | None,
    units: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
    pwh_noise: str = "mean",
    debias: bool = False,
    record: bool = True,
    trials: int = 1,
    transposed: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> KMeansResult:
    """``trials`` independent runs on validated points (``(n, d)`` inside ``bounds``), vectorised:
    the TCM branch on ``x_tcm``, the LM branch on ``x_lm`` (``None``: no such branch), mixed by
    PWH when both run.

    ``units``: the units charged by the TCM and the LM branch (:func:`ledger_plan`); ``record``:
    keep the ledger (a run that is not recorded still checks it releases in the planned order).
    ``epsilon = inf`` runs without noise (Lloyd's algorithm for the TCM branch).  Arrays in the
    result have a leading trial axis.  ``transposed``: ``x_tcm`` and ``x_lm`` as ``(d, n)`` C-contiguous
    arrays where at hand (the compiled search reads them; used when ``bounds.lower`` is 0).
    """
    check_rng(rng)
    d = (x_tcm if x_tcm is not None else x_lm).shape[1]  # type: ignore[union-attr]
    m = bounds.width
    b_t, b_l = noise_scales(epsilon, tau, m, d)
    tcm_units, lm_units = units
    plan = ledger_plan(tcm_units if x_tcm is not None else None, lm_units if x_lm is not None else None,
                       epsilon, tau, m, d, k)
    budgets = {u: (epsilon, 0.0) for u in (*tcm_units, *lm_units)} or {"users": (math.inf, 0.0)}
    acc = Accountant(budgets)
    ledger = _Ledger(plan, acc if record else None)
    if init is None:  # line 1: uniform in the box, from the run's own generator
        centres = m * rng.random((trials, k, d))
    else:
        centres = np.broadcast_to(np.asarray(init, dtype=float) - bounds.lower, (trials, k, d))
    xt_tcm, xt_lm = transposed if bounds.lower == 0.0 else (None, None)
    tcm = None if x_tcm is None else _TCMBranch(_shifted(x_tcm, bounds), k, b_t, ledger, xt_tcm)
    lm = None if x_lm is None else _LMBranch(_shifted(x_lm, bounds), k, b_l, epsilon / (tau + 1), debias, ledger, rng,
                                             trials, xt_lm)
    history, weights = [centres], []
    for _ in range(tau):
        if lm is None:
            centres = tcm.step(centres, m, rng)[0]  # type: ignore[union-attr]
        elif tcm is None:
            centres = lm.step(centres, m, rng)[0]
        else:
            centres, w = mix(centres, tcm.step(centres, m, rng), lm.step(centres, m, rng), tau, m, d, pwh_noise)
            weights.append(w)
        history.append(centres)
    if ledger.i != len(plan):
        raise RuntimeError(f"the run made {ledger.i} of its {len(plan)} planned releases")
    h = np.stack(history, axis=1) + bounds.lower
    return KMeansResult(h[:, -1], h, acc, {"b_T": b_t, "b_L": b_l}, np.stack(weights, axis=1) if weights else None)
