"""The K-means mechanisms: :class:`HybridKMeans` (Algorithm 1), :class:`TCMKMeans`, :class:`LMKMeans`
and the non-private baseline :class:`LloydKMeans`, on :class:`~hybridpriv.families.kmeans.algorithms.PointCloud` data.

Every mechanism releases the final centres, ``(trials, K, d)``; :meth:`~_KMeans.run` gives one run
with its history, ledger and (hybrid) PWH weights.  Protected units: ``"tcm"`` (the users who
trust the curator) and ``"lm"`` (the others).  Each :attr:`~_KMeans.privacy` is composed from the
run's budget parts in an :class:`~hybridpriv.accounting.Accountant`
(:func:`~hybridpriv.families.kmeans.algorithms.algorithm.ledger_plan`), not asserted:

=================  ======================================  =========================================
mechanism          ``"tcm"`` users                         ``"lm"`` users
=================  ======================================  =========================================
``TCMKMeans``      epsilon, central, add/remove-one        not read
``LMKMeans``       epsilon, local, replace-one             epsilon, local, replace-one
``HybridKMeans``   epsilon, central, add/remove-one        epsilon, local, replace-one
``LloydKMeans``    no promise (inf)                        no promise (inf)
``PublicStart``    0 (reads no point), central             0 (reads no point), local
=================  ======================================  =========================================

Central add/remove-one: the counts (L1 sensitivity 1) and sums (``m d``) change so little when a
TCM user joins or leaves.  Local replace-one: each LM user's reports (``x + Lap^d(b_L)`` and the
randomized-response clusters) are ``epsilon``-LDP for any two points of that user, against the
curator too; the number of reports is visible, so the local promise is for replace-one.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ....accounting import Accountant
from ....core.mechanism import Mechanism
from ....core.privacy import Bounds, Guarantee, check_epsilon, check_integer
from ....core.validation import check_rng, check_trials
from ....noise import rr_probabilities
from . import _kernels
from .algorithm import (
    PWH_NOISE,
    KMeansResult,
    budget_parts,
    ledger_plan,
    noise_scales,
    run_kmeans,
    scratch,
)
from .data import PointCloud

__all__ = ["BATCH_ELEMENTS", "HybridKMeans", "LMKMeans", "LloydKMeans", "PublicStart", "TCMKMeans"]

#: Largest number of (trial, point, coordinate-or-centre) elements one batch of runs holds at once.
BATCH_ELEMENTS = 2_000_000

_CENTRAL = ("add-remove", "central")
_LOCAL = ("replace", "local")


#: A branch's points: ``(points (n, d), the same transposed (d, n) or None)``, or None (no such branch).
_Group = tuple[np.ndarray, np.ndarray | None] | None


def _group(data: PointCloud, trusted: bool) -> tuple[np.ndarray, np.ndarray]:
    """The points of the TCM users (``trusted``) or of the LM users, in order, and the same transposed,
    in :func:`scratch` buffers (read by the runs of one release, never kept)."""
    n = data.n_trusted if trusted else data.points.shape[0] - data.n_trusted
    role = "split.tcm" if trusted else "split.lm"
    out, out_t = scratch(role, (n, data.d)), scratch(role + ".t", (data.d, n))
    _kernels.take_rows(data.points, data.trusted, trusted, out, out_t)  # np.compress(mask, points, axis=0), ~3x faster
    return out, out_t


def _everyone(data: PointCloud) -> tuple[np.ndarray, np.ndarray | None]:
    """Every user's points and the same transposed (kept by the data)."""
    return data.points, data.points_t


class _KMeans(Mechanism):
    """Shared parameters and plumbing of the K-means mechanisms.

    Parameters
    ----------
    k
        Number of clusters (>= 1).
    epsilon
        Every user's total budget (``inf``: no noise, no promise).
    tau
        Number of iterations (>= 1).
    bounds
        The box ``[lower, upper]`` of every coordinate (the data range ``m = upper - lower``
        sets the sensitivities); the data's bounds must be the same.
    d
        Dimension of the points (the sensitivities, hence the declaration, depend on it).
    """

    data_kind: ClassVar[str] = "points"
    #: Units whose raw points the TCM branch reads, and units who report to the LM branch (None: no branch).
    _tcm_units: ClassVar[tuple[str, ...] | None] = None
    _lm_units: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, k: int, epsilon: float, tau: int, bounds: Bounds | tuple[float, float], d: int = 2) -> None:
        self.k = check_integer(k, "k", 1)
        self.epsilon = check_epsilon(epsilon)
        self.tau = check_integer(tau, "tau", 1)
        self.bounds = Bounds.from_pair(bounds)
        self.d = check_integer(d, "d", 1)
        budget_parts(self.epsilon, self.tau, self.bounds.width, self.d, self.k)  # refuses extreme epsilon / range now

    # -- the declaration -----------------------------------------------------------------
    def ledger_plan(self) -> list[tuple[str, dict[str, float]]]:
        """Every release a run makes, in order: ``(label, {unit: epsilon})``."""
        return ledger_plan(self._tcm_units, self._lm_units, self.epsilon, self.tau, self.bounds.width, self.d, self.k)

    @property
    def privacy(self) -> dict[str, Guarantee]:
        """One guarantee per unit: the plan's parts composed (basic composition) in an Accountant."""
        units = {u: _CENTRAL for u in self._tcm_units or ()} | {u: _LOCAL for u in self._lm_units or ()}
        acc = Accountant({u: (self.epsilon, 0.0) for u in units})
        for label, parts in self.ledger_plan():
            acc.spend(parts, label=label)
        eps, delta = acc.spent_epsilon(), acc.spent_delta()
        return {u: Guarantee(eps[u], delta[u], *units[u]) for u in units}

    @property
    def privacy_events(self) -> dict[str, Any]:
        """Per unit, every release of a run composed: a TCM unit ``tau`` times Laplace(``b_T``) on the counts
        (sensitivity 1) and on the sums (``m d``); a local unit Laplace(``b_L``) on its report (``m d``) once,
        then ``tau`` rounds of K-ary randomized response at ``epsilon / (tau + 1)``."""
        from ....core import events

        if np.isinf(self.epsilon):
            return {u: events.epsilon_delta(np.inf) for u in self.privacy}
        b_t, b_l = noise_scales(self.epsilon, self.tau, self.bounds.width, self.d)
        md = self.bounds.width * self.d
        out = {}
        for u in self._tcm_units or ():
            out[u] = events.repeated(events.composed([events.laplace(b_t, 1.0), events.laplace(b_t, md)]), self.tau)
        for u in self._lm_units or ():
            rr = (events.randomized_response(self.epsilon / (self.tau + 1), self.k) if self.k > 1
                  else events.epsilon_delta(0.0))
            out[u] = events.composed([events.laplace(b_l, md), events.repeated(rr, self.tau)])
        return out

    # -- running ----------------------------------------------------------------------------
    def _inputs(self, data: Any) -> tuple[_Group, _Group, np.ndarray | None]:
        """``(TCM branch points, LM branch points, public start)`` from a point cloud (see :data:`_Group`)."""
        if not isinstance(data, PointCloud):
            raise TypeError(f"data must be a PointCloud (hybridpriv.families.kmeans.algorithms), got {type(data).__name__}")
        if data.bounds != self.bounds:
            raise ValueError(f"data bounds [{data.bounds.lower:g}, {data.bounds.upper:g}] differ from the mechanism's "
                             f"bounds [{self.bounds.lower:g}, {self.bounds.upper:g}]")
        if data.d != self.d:
            raise ValueError(f"data points have d={data.d} coordinates, the mechanism was built for d={self.d}")
        if data.init is not None and data.init.shape[0] != self.k:
            raise ValueError(f"the data's public start (init) holds {data.init.shape[0]} centres, the mechanism needs k={self.k}")
        return (*self._split(data), data.init)

    def _split(self, data: PointCloud) -> tuple[_Group, _Group]:
        raise NotImplementedError

    def _run(self, tcm: _Group, lm: _Group, init, rng, record: bool, trials: int) -> KMeansResult:
        return run_kmeans(None if tcm is None else tcm[0], None if lm is None else lm[0], self.k, self.epsilon, self.tau,
                          self.bounds, rng, init, (self._tcm_units or (), self._lm_units or ()), **self._options(),
                          record=record, trials=trials,
                          transposed=(None if tcm is None else tcm[1], None if lm is None else lm[1]))

    def _options(self) -> dict[str, Any]:
        return {}

    def _check_debias(self, debias: object) -> bool:
        """``debias`` as a bool, after checking randomized response can be inverted at this epsilon."""
        if not isinstance(debias, bool):
            raise TypeError(f"debias must be True or False, got {debias!r}")
        q, r = rr_probabilities(self.epsilon / (self.tau + 1), self.k)
        if debias and self.k > 1 and not q - r >= 1e-200:  # the inverse multiplies counts by 1/(q - r)
            raise ValueError(f"epsilon={self.epsilon!r} is too small to debias randomized response over k={self.k} "
                             f"clusters (q - r = {q - r:g}); use debias=False")
        return debias

    def run(self, data: PointCloud, rng: np.random.Generator) -> KMeansResult:
        """One run on ``data`` with its history, ledger (every release and its epsilon) and weights."""
        check_rng(rng)
        res = self._run(*self._inputs(data), rng, record=True, trials=1)
        return KMeansResult(res.centres[0], res.history[0], res.accountant, res.scales,
                            None if res.weights is None else res.weights[0])

    def release(self, data: PointCloud, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """Final centres of ``trials`` independent runs on ``data``: shape ``(trials, K, d)``.

        Vectorised over trials, in batches of at most about :data:`BATCH_ELEMENTS` points x trials.
        """
        trials = check_trials(trials)
        check_rng(rng)
        tcm, lm, init = self._inputs(data)
        out = np.empty((trials, self.k, self.d))
        step = max(1, BATCH_ELEMENTS // (data.points.shape[0] * max(self.d, self.k)))
        for start in range(0, trials, step):
            size = min(step, trials - start)
            out[start : start + size] = self._run(tcm, lm, init, rng, record=False, trials=size).centres
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class TCMKMeans(_KMeans):
    """DP K-means on the TCM users' raw points only (lines 6, 9, 10 of Algorithm 1; Dwork 2011).

    Parameters as :class:`_KMeans`.  Each iteration spends ``epsilon / tau`` (counts ``1/b_T``,
    sums ``m d / b_T``).  Guarantee: ``epsilon``-DP for every TCM user, central, add/remove-one;
    LM users are not read.
    """

    label = "tcm"
    _tcm_units = ("tcm",)

    def _split(self, data: PointCloud):
        return _group(data, True), None


class LMKMeans(_KMeans):
    """K-means with local DP on all users (lines 4, 7, 11, 12 of Algorithm 1).

    Each user spends ``epsilon/(tau+1)`` on one report ``x + Lap^d(b_L)`` and ``epsilon/(tau+1)``
    per iteration on a randomized-response report of their nearest cluster.

    Parameters
    ----------
    k, epsilon, tau, bounds, d
        As :class:`TCMKMeans`.
    debias
        Invert the randomized response on the counts and sums (beyond the paper; post-processing).

    Guarantee: ``epsilon``-local DP (replace-one) for every user, TCM users included.
    """

    _lm_units = ("tcm", "lm")

    def __init__(self, k: int, epsilon: float, tau: int, bounds: Bounds | tuple[float, float], d: int = 2,
                 debias: bool = False) -> None:
        super().__init__(k, epsilon, tau, bounds, d)
        self.debias = self._check_debias(debias)
        self.label = "lm-debiased" if debias else "lm"

    def _split(self, data: PointCloud):
        return None, _everyone(data)

    def _options(self) -> dict[str, Any]:
        return {"debias": self.debias}


class HybridKMeans(_KMeans):
    """Hybrid-DP K-means, Algorithm 1 of Appendix E: TCM branch on the TCM users, LM branch on the
    LM users, centres mixed by the PWH weight after every iteration.

    Parameters
    ----------
    k, epsilon, tau, bounds, d
        As :class:`TCMKMeans`; every user of both groups gets budget ``epsilon``.
    pwh_noise
        ``"mean"`` (default): line 13's ``s_T^2`` is the noise variance of the TCM cluster mean,
        ``2 b_T^2 / N_T^2`` (Definition 5.3's meaning); ``"printed"``: ``2 b_T^2`` as printed.
    debias
        Invert the randomized response in the LM branch (beyond the paper).

    :meth:`run` returns the TCM branch's PWH weight per iteration and cluster (``weights``); the
    weight sees ``epsilon`` only through ``b_T / b_L`` (epsilon-free), so it is defined for
    ``epsilon = inf`` too.  Guarantee: ``epsilon``-DP (central, add/remove-one) for every TCM user
    and ``epsilon``-local DP (replace-one) for every LM user.
    """

    _tcm_units = ("tcm",)
    _lm_units = ("lm",)

    def __init__(self, k: int, epsilon: float, tau: int, bounds: Bounds | tuple[float, float], d: int = 2,
                 pwh_noise: str = "mean", debias: bool = False) -> None:
        super().__init__(k, epsilon, tau, bounds, d)
        if not isinstance(pwh_noise, str) or pwh_noise not in PWH_NOISE:
            raise ValueError(f"pwh_noise must be one of {PWH_NOISE}, got {pwh_noise!r}")
        self.pwh_noise, self.debias = pwh_noise, self._check_debias(debias)
        self.label = "hybrid" + ("-printed" if pwh_noise == "printed" else "") + ("-debiased" if debias else "")

    def _split(self, data: PointCloud):
        return _group(data, True), _group(data, False)

    def _options(self) -> dict[str, Any]:
        return {"pwh_noise": self.pwh_noise, "debias": self.debias}


class LloydKMeans(_KMeans):
    """Lloyd's algorithm on every user's raw point from the same start: the non-private baseline.

    Parameters as :class:`TCMKMeans` without ``epsilon``.  It declares what it is: no promise
    (``epsilon = inf``) to any unit, so a decision with privacy requirements never recommends it.
    """

    label = "lloyd"
    _tcm_units = ("tcm", "lm")

    def __init__(self, k: int, tau: int, bounds: Bounds | tuple[float, float], d: int = 2) -> None:
        super().__init__(k, np.inf, tau, bounds, d)

    def _split(self, data: PointCloud):
        return _everyone(data), None


class PublicStart(Mechanism):
    """The public start alone: line 1 of Algorithm 1 and no iteration (``tau = 0``).

    It releases the data's public start (the pilot's centres) or, without one, ``k`` centres uniform in the
    box (from ``rng``, one start per trial), and reads no user's point: it spends nothing, ``epsilon = 0``
    for both units (central for the TCM users, local for the LM users).  Every iterated candidate must beat
    it to be worth its budget: a recommendation that spends epsilon where the start alone scores as well
    is no better than this free one.

    Parameters
    ----------
    k
        Number of centres (>= 1).
    bounds
        The box ``[lower, upper]`` of every coordinate (the data's must be the same).
    d
        Dimension of the points.
    """

    data_kind: ClassVar[str] = "points"
    label = "public-start"
    #: No iteration, no unit read (the rounds of a release: none).
    tau = 0
    epsilon = 0.0
    _tcm_units: ClassVar[tuple[str, ...] | None] = None
    _lm_units: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, k: int, bounds: Bounds | tuple[float, float], d: int = 2) -> None:
        self.k = check_integer(k, "k", 1)
        self.bounds = Bounds.from_pair(bounds)
        self.d = check_integer(d, "d", 1)

    @property
    def privacy(self) -> dict[str, Guarantee]:
        """Nothing is read, so nothing is spent: ``epsilon = 0`` for each unit, under its usual relation."""
        return {"tcm": Guarantee(0.0, 0.0, *_CENTRAL), "lm": Guarantee(0.0, 0.0, *_LOCAL)}

    @property
    def privacy_events(self) -> dict[str, Any]:
        from ....core import events

        return {u: events.epsilon_delta(0.0) for u in self.privacy}

    def ledger_plan(self) -> list[tuple[str, dict[str, float]]]:
        """No release of private data: an empty plan."""
        return []

    def release(self, data: PointCloud, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        """The start ``trials`` times, ``(trials, K, d)``: the data's public start, else uniform in the box."""
        trials = check_trials(trials)
        check_rng(rng)
        if not isinstance(data, PointCloud):
            raise TypeError(f"data must be a PointCloud (hybridpriv.families.kmeans.algorithms), got {type(data).__name__}")
        if data.bounds != self.bounds or data.d != self.d:
            raise ValueError(f"data box [{data.bounds.lower:g}, {data.bounds.upper:g}]^{data.d} differs from the "
                             f"mechanism's [{self.bounds.lower:g}, {self.bounds.upper:g}]^{self.d}")
        if data.init is None:
            return self.bounds.lower + self.bounds.width * rng.random((trials, self.k, self.d))
        init = np.asarray(data.init, dtype=float)
        if init.shape != (self.k, self.d):
            raise ValueError(f"the data's public start holds {init.shape[0]} centres, the mechanism needs k={self.k}")
        return np.broadcast_to(init, (trials, self.k, self.d)).copy()

    def __repr__(self) -> str:
        return f"PublicStart(k={self.k}, bounds={self.bounds!r}, d={self.d})"
