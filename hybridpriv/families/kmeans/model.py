"""A model of public knowledge for hybrid-trust K-means: a Bayesian bootstrap of a public pilot sample.

What is public: some users' points (a pilot sample, e.g. an earlier survey whose answers were
published), the box every point lies in, how many users the private dataset holds (``n``) and
which share of them trust the curator (``c``).  The model says nothing about the shape of the
clusters beyond the pilot: the private users' points are drawn from an unknown distribution
``F`` on the box, and the pilot is an i.i.d. sample of ``F``.  With the non-informative
Dirichlet-process limit as the prior, the posterior of ``F`` is the **Bayesian bootstrap**
(Rubin 1981): ``F = sum_i w_i delta(x_i)`` over the pilot points ``x_i``, with weights
``w ~ Dirichlet(1, ..., 1)``.

* :class:`KMeansPilotModel` -- the knowledge (a :class:`~hybridpriv.core.model.KnowledgeModel`):
  ``build()`` is that Dirichlet in PyMC; ``fit()`` (the base class's, unchanged) draws the weights
  exactly (independent draws, no MCMC: :meth:`KMeansPilotModel._sample` uses each chain's seed),
  so R-hat and ESS only confirm what is known.
* :class:`KMeansPilotPosterior` -- the fitted model as a dataset source: draw ``(chain, draw)``
  makes a :class:`~hybridpriv.families.kmeans.algorithms.PointCloud` of ``n`` users resampled from the pilot
  with that draw's weights (by default spread about the pilot's clusters by the draw's ``spread``, a bootstrap
  of how much a start fitted to a pilot flatters it: :func:`refit_spread`; or blurred by Gaussian noise), a
  fresh trust split
  (``round(c n)`` TCM users) and the public start (the same for every dataset, or fresh uniform).

Who trusts the curator is public only as a share ``c``; whether it goes with where a user's point lies
is not (the setosa irises trust, the others do not).  With ``trust_may_follow_clusters`` (the
default) the model says so: in each draw trust follows the clusters with probability 1/2
(``trust_follows``); then a share ``trust_share ~ Uniform(0, 1)`` of the TCM users come from one
cluster (``trust_cluster``, uniform over the ``k`` clusters of :func:`pilot_start`, each user in the
cluster of the nearest centre) and the rest from all users at random.  Otherwise, and always with
``trust_may_follow_clusters = False``, the TCM users are a random share of all users.  The two
alternatives are a :class:`~hybridpriv.core.assumptions.Branch`: the selection checks its decision
within each and warns when it rests on one.

Earlier DP releases of how many users of each group lie in each of the pilot's clusters (``released_cells``,
:mod:`.cells`; what the budget-spending selector spends on) replace that branch: each group's users are then
drawn cell by cell from the shares the release leaves plausible.

Summary variables (for ``summary()`` and the convergence check): ``mean`` (the weighted mean of
each coordinate) and ``sd`` (the weighted standard deviation of each coordinate).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import xarray as xr

from ...core.privacy import Bounds, check_integer
from ...core.model import KnowledgeModel, Posterior

__all__ = ["KMeansPilotModel", "KMeansPilotPosterior", "MAX_SPREAD", "SMOOTHING_FOLDS", "SMOOTHING_RULES", "START_MODES",
           "TRUST_FOLLOWS_PRIOR", "cross_validated_smoothing", "pilot_start", "refit_spread", "trust_split"]

#: How the public start (line 1 of Algorithm 1) is chosen: from the pilot, or uniform per dataset.
START_MODES = ("pilot", "uniform")
#: Lloyd iterations of the pilot start (it stops earlier once the centres no longer move).
PILOT_LLOYD_ITERATIONS = 100
#: Folds of the cross-validation behind ``smoothing="auto"`` (leave-one-out for pilots of at most this many points).
SMOOTHING_FOLDS = 20
#: With ``trust_may_follow_clusters``: the prior probability that trust follows the clusters in a draw.
TRUST_FOLLOWS_PRIOR = 0.5
#: ``smoothing="refit"``: the largest spread factor a draw may take (a pilot of k distinct points fits itself exactly).
MAX_SPREAD = 100.0
#: The values of ``smoothing`` that are rules rather than a number.
SMOOTHING_RULES = ("refit", "auto")


def trust_split(labels: np.ndarray, n_trusted: int, share: float, cluster: int, rng: np.random.Generator) -> np.ndarray:
    """Which of the users trust the curator: ``n_trusted`` of them, a share ``share`` drawn from cluster ``cluster``.

    ``labels`` is each user's cluster.  ``min(round(share n_trusted), size of the cluster)`` TCM users are
    drawn at random from the cluster, the rest at random from all the other users; ``share = 0`` is a random
    split of all users.  Returns a boolean mask with exactly ``n_trusted`` entries set.
    """
    labels = np.asarray(labels)
    n = labels.size
    if not 0 <= n_trusted <= n:
        raise ValueError(f"n_trusted must be in [0, {n}], got {n_trusted!r}")
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], got {share!r}")
    trusted = np.zeros(n, dtype=bool)
    inside = np.flatnonzero(labels == cluster)
    first = min(int(round(share * n_trusted)), inside.size)
    if first:
        trusted[rng.choice(inside, first, replace=False)] = True
    rest = np.flatnonzero(~trusted)
    trusted[rest[rng.permutation(rest.size)[: n_trusted - first]]] = True
    return trusted


def pilot_start(pilot: np.ndarray, k: int) -> np.ndarray:
    """``k`` centres from the pilot alone (no randomness): Lloyd's algorithm from a farthest-point start.

    The first centre is the pilot point nearest the pilot's mean, each next one the pilot point
    farthest from those chosen (ties: the first in the pilot's order); then Lloyd's algorithm runs
    until the centres stop moving (at most :data:`PILOT_LLOYD_ITERATIONS` iterations).  A centre
    that loses all its points stays where it is.  Public data only: the start spends no budget.
    """
    from .algorithms import nearest_centre

    x = np.asarray(pilot, dtype=float)
    k = check_integer(k, "k", 1)
    if x.ndim != 2 or x.shape[0] < k:
        raise ValueError(f"the pilot must hold at least k = {k} points (rows), got shape {x.shape}")
    chosen = [int(np.argmin(((x - x.mean(0)) ** 2).sum(1)))]
    dist = ((x - x[chosen[0]]) ** 2).sum(1)
    for _ in range(1, k):
        chosen.append(int(np.argmax(dist)))
        dist = np.minimum(dist, ((x - x[chosen[-1]]) ** 2).sum(1))
    centres = x[chosen].copy()
    for _ in range(PILOT_LLOYD_ITERATIONS):
        labels = nearest_centre(x, centres)[0]
        new = centres.copy()
        for j in range(k):
            if (labels == j).any():
                new[j] = x[labels == j].mean(0)
        if np.array_equal(new, centres):
            break
        centres = new
    return centres


def _cost(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Each point's squared distance to its nearest centre."""
    from .algorithms import nearest_centre

    return nearest_centre(points, centres)[1]


def cross_validated_smoothing(pilot: np.ndarray, k: int) -> float:
    """The blur that makes the bootstrap's K-means costs out-of-sample ones (``smoothing="auto"``).

    The bootstrap's users *are* the pilot's points, and the public start was fitted to those very points, so the
    model sees every start's cost at its in-sample value, lower than on users the start was not fitted to (the
    calibration study: the realised cost of the public start was a median 1.31 times the model's).  Gaussian
    noise of sd ``h`` on every coordinate adds ``d h^2`` to each point's expected squared distance from a fixed
    centre; the ``h`` returned makes that the optimism the pilot itself shows, ``h = sqrt(max(cv - fit, 0) / d)``,
    where ``fit`` is the mean squared distance of the pilot's points to :func:`pilot_start` of the whole pilot and
    ``cv`` the same for each point to the start fitted without its fold (point ``i`` in fold
    ``i mod F``, ``F = min(m, SMOOTHING_FOLDS)``: leave-one-out up to :data:`SMOOTHING_FOLDS` points).  Public data
    only: it spends no budget.  Refused when a fold would leave fewer than ``k`` points to fit.
    """
    x = np.asarray(pilot, dtype=float)
    k = check_integer(k, "k", 1)
    if x.ndim != 2:
        raise ValueError(f"pilot must be an (m, d) array of points, got shape {x.shape}")
    m, d = x.shape
    folds = min(m, SMOOTHING_FOLDS)
    if m - math.ceil(m / max(folds, 1)) < k:
        raise ValueError(f"smoothing='auto' cross-validates the start on the pilot: it needs more than k = {k} pilot "
                         f"points in every fold's fit, the pilot has {m} (give smoothing a number instead)")
    fold = np.arange(m) % folds
    fit = float(_cost(x, pilot_start(x, k)).mean())
    cv = float(sum(_cost(x[fold == f], pilot_start(x[fold != f], k)).sum() for f in range(folds)) / m)
    return math.sqrt(max(cv - fit, 0.0) / d)


def refit_spread(pilot: np.ndarray, k: int, weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per posterior draw, how much more the users spread about a start fitted to a pilot than that pilot does
    (``smoothing="refit"``).

    The public start was fitted to the pilot, so the pilot sits closer to it than the users do, by an amount that
    varies from pilot to pilot.  The bootstrap sees that variation: for each draw's weights ``w`` (its ``F``), a
    pilot of ``m`` points is drawn from ``F`` (``m`` picks of the pilot's points with probabilities ``w``), a start
    is fitted to it (:func:`pilot_start`), and the draw's factor is that start's mean squared distance over ``F``
    divided by the same over its own pilot (capped at :data:`MAX_SPREAD`; 1 when both are 0).  ``weights`` is
    ``(draws, m)``; returns ``(draws,)``.  Public data only: it spends no budget.
    """
    x = np.asarray(pilot, dtype=float)
    w = np.asarray(weights, dtype=float)
    if x.ndim != 2 or w.ndim != 2 or w.shape[1] != x.shape[0]:
        raise ValueError(f"weights must be (draws, {x.shape[0] if x.ndim == 2 else '?'}) for a pilot of shape "
                         f"{x.shape}, got {w.shape}")
    m = x.shape[0]
    out = np.empty(w.shape[0])
    for b in range(w.shape[0]):
        idx = rng.choice(m, m, p=w[b] / w[b].sum())
        start = pilot_start(x[idx], k)
        inside = float(_cost(x[idx], start).mean())
        outside = float(w[b] @ _cost(x, start)) / float(w[b].sum())
        out[b] = 1.0 if outside == inside else (min(outside / inside, MAX_SPREAD) if inside > 0 else MAX_SPREAD)
    return out


class KMeansPilotPosterior(Posterior):
    """The Bayesian bootstrap's draws as a source of :class:`~hybridpriv.families.kmeans.algorithms.PointCloud` datasets.

    ``idata["posterior"]`` holds ``weights (chain, draw, pilot)``, the summaries ``mean`` and
    ``sd`` ``(chain, draw, coordinate)`` and, with ``trust_may_follow_clusters``, ``trust_follows``,
    ``trust_share`` and ``trust_cluster`` ``(chain, draw)``, and with ``smoothing="refit"`` each draw's ``spread``.
    ``start`` is the public start shared by every dataset (``None`` with ``start="uniform"``: each dataset draws its
    own, uniform in the box); :attr:`clusters` the pilot start's centres (whichever the start), the clusters trust
    may follow and users spread about.
    """

    convergence_vars = ("mean", "sd")
    data_kind = "points"
    convergence_advice = "raise draws (--draws); the draws are exact (a Bayesian bootstrap), so check the pilot"

    def __init__(self, model: KMeansPilotModel, idata: Any, seed: int = 0) -> None:
        super().__init__(model, idata, seed)
        self.weights = np.asarray(idata["posterior"]["weights"].values, dtype=float)
        self.start = pilot_start(model.pilot, model.k) if model.start == "pilot" else None
        post = idata["posterior"]
        # the pilot's clusters (the pilot start's): the ones trust may follow, and the centres users spread about
        self.clusters = self.start if self.start is not None else pilot_start(model.pilot, model.k)
        self._trust = None
        if "trust_share" in post.data_vars:
            self._trust = (np.asarray(post["trust_share"].transpose("chain", "draw").values, dtype=float),
                           np.asarray(post["trust_cluster"].transpose("chain", "draw").values, dtype=int))
        self._spread = (np.asarray(post["spread"].transpose("chain", "draw").values, dtype=float)
                        if "spread" in post.data_vars else None)
        self._cells = None
        if "cells_tcm" in post.data_vars:  # released cell counts: each group's users drawn cell by cell
            from .algorithms import nearest_centre

            cell = nearest_centre(model.pilot, self.clusters)[0]  # model.pilot_cells(), its start already fitted
            self._cells = (cell, {g: np.asarray(post[f"cells_{g}"].transpose("chain", "draw", "cell").values,
                                                dtype=float) for g in ("tcm", "lm")})

    def branches(self) -> list[Any]:
        """With ``trust_may_follow_clusters``: whether the users who trust the curator are a random share."""
        if self._trust is None:
            return []
        from ...core.assumptions import Branch

        follows = np.asarray(self.idata["posterior"]["trust_follows"].transpose("chain", "draw").values) > 0
        return [Branch("trust", "the users who trust the curator are a random share of every cluster",
                       "many of the users who trust the curator come from one cluster", ~follows,
                       advice="if you know, say so: model.trust_may_follow_clusters = false if who trusts the curator "
                              "has nothing to do with where their point lies")]

    def dataset(self, points: np.ndarray, rng: np.random.Generator, share: float = 0.0, cluster: int = 0,
                trusted: np.ndarray | None = None):
        """``points`` as a :class:`PointCloud` with the public start and ``round(c n)`` TCM users, a share ``share``
        of them from cluster ``cluster`` of the pilot start's (:func:`trust_split`; 0: a random split), or the TCM
        users ``trusted`` says (a boolean mask: drawn with the points, from released cells).

        The step :meth:`generate` ends with, exposed so that real points can be scored the same way.
        """
        from .algorithms import PointCloud, nearest_centre

        m = self.model_spec
        n, d = points.shape
        if trusted is None:
            labels = nearest_centre(points, self.clusters)[0] if share > 0 else np.zeros(n, dtype=int)
            trusted = trust_split(labels, m.n_trusted(n), share, cluster, rng)
        init = self.start if self.start is not None else m.bounds.lower + m.bounds.width * rng.random((m.k, d))
        return PointCloud(points, trusted, m.bounds, init)

    def _by_cells(self, chain: int, draw: int, w: np.ndarray, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray]:
        """With released cells: each group's users (``round(c n)`` TCM users first) spread over the cells by a
        multinomial of the draw's shares for that group (cells no pilot point lies in get none: the shares are
        renormalised over the others), each user a pilot point of its cell picked with the draw's weights.
        Returns the pilot indices and the trust mask."""
        m = self.model_spec
        cell, shares = self._cells
        n_t = m.n_trusted(m.n)
        occupied = np.bincount(cell, minlength=m.k) > 0
        idx, trusted = [], []
        for group, size in (("tcm", n_t), ("lm", m.n - n_t)):
            p = np.where(occupied, shares[group][chain, draw], 0.0)
            p = p / p.sum() if p.sum() > 0 else occupied / occupied.sum()
            for j, count in enumerate(rng.multinomial(size, p)):
                if count:
                    inside = np.flatnonzero(cell == j)
                    idx.append(rng.choice(inside, size=count, p=w[inside] / w[inside].sum()))
            trusted.append(np.full(size, group == "tcm"))
        return np.concatenate(idx), np.concatenate(trusted)

    def generate(self, chain: int, draw: int, rng: np.random.Generator):
        """``n`` users resampled from the pilot with draw ``(chain, draw)``'s weights; with ``smoothing="refit"``
        each user's offset from the nearest of :attr:`clusters` scaled by the square root of the draw's ``spread``
        (clamped into the box), else blurred by ``smoothing``; then :meth:`dataset` with the draw's trust (a
        random split unless it follows the clusters there).  With released cells each group's users are drawn
        cell by cell instead (:meth:`_by_cells`; TCM users first), which sets who trusts the curator."""
        chain, draw = self._check_index(chain, draw)
        m = self.model_spec
        w = self.weights[chain, draw]
        if self._cells is not None:
            idx, trusted = self._by_cells(chain, draw, w, rng)
        else:
            idx = rng.choice(w.size, size=m.n, p=w / w.sum())
        points = m.pilot[idx]
        if self._spread is not None:
            from .algorithms import nearest_centre

            centre = self.clusters[nearest_centre(points, self.clusters)[0]]
            points = m.bounds.clamp(centre + math.sqrt(self._spread[chain, draw]) * (points - centre))
        if m.smoothing > 0:
            points = m.bounds.clamp(points + m.smoothing * rng.standard_normal(points.shape))
        if self._cells is not None:
            return self.dataset(np.asarray(points, dtype=float), rng, trusted=trusted)
        if self._trust is None:
            return self.dataset(np.asarray(points, dtype=float), rng)
        share, cluster = self._trust
        return self.dataset(np.asarray(points, dtype=float), rng, float(share[chain, draw]), int(cluster[chain, draw]))


class KMeansPilotModel(KnowledgeModel):
    """What is public about a K-means population: a pilot sample of its points, the box, ``n``, ``c``.

    Parameters
    ----------
    pilot
        Public points ``(m, d)`` inside ``bounds`` (at least ``k`` of them).
    bounds
        The box ``[lower, upper]`` of every coordinate.
    n
        Users in the private dataset (each simulated dataset has ``n`` points).
    c
        Share of users who trust the curator, in ``(0, 1)``; ``round(c n)`` TCM users, each group
        keeps at least one.
    k
        Number of centres of the public start.
    start
        ``"pilot"`` (default): :func:`pilot_start` of the pilot, the same for every dataset;
        ``"uniform"``: a fresh start uniform in the box for every dataset.
    smoothing
        Standard deviation of Gaussian noise added to every resampled point (clamped into the box):
        a smoothed bootstrap; ``0`` resamples the pilot points as they are; ``"auto"``:
        :func:`cross_validated_smoothing`, the blur that turns the pilot's in-sample K-means cost into its
        cross-validated one; ``"refit"`` (default): no blur, each draw's users spread about the pilot's clusters
        by the draw's :func:`refit_spread` (posterior variable ``spread``), so that the pilot's optimism *and its
        uncertainty* reach the datasets.  The blur used is ``smoothing`` (0 under ``"refit"``);
        ``smoothing_rule`` says which was asked for (``"given"`` for a number).
    trust_may_follow_clusters
        ``True`` (default): public knowledge (the share ``c``) cannot rule out that who trusts the curator goes
        with where their point lies, so in half the draws a ``Uniform(0, 1)`` share of the TCM users come from
        one cluster (the module's docstring); ``False``: the user states that trust was split at random.
    released_cells
        :class:`~hybridpriv.families.kmeans.cells.ReleasedCells`, at most one per group: earlier DP counts of the
        group's users per cluster of :func:`pilot_start` (:mod:`.cells`).  Each draw then holds each group's
        shares per cell (``cells_tcm``, ``cells_lm``; a group without a release: the draw's own cell masses), and
        its datasets draw each group's users cell by cell from those shares (within a cell, by the weights), so
        who trusts the curator follows the released counts and ``trust_may_follow_clusters`` draws nothing.

    Notes
    -----
    The posterior is exact (independent Dirichlet draws, Rubin's Bayesian bootstrap), so
    ``tune`` is ignored.  It puts all its mass on the pilot's points: a cluster the pilot missed
    is missing from every simulated dataset (``smoothing`` only spreads or blurs the pilot's points).
    """

    posterior_class = KMeansPilotPosterior  # what fit() returns

    def __init__(self, pilot: np.ndarray, bounds: Bounds | tuple[float, float], n: int, c: float, k: int,
                 start: str = "pilot", smoothing: float | str = "refit", trust_may_follow_clusters: bool = True,
                 released_cells: Any = ()) -> None:
        self.bounds = Bounds.from_pair(bounds)
        from .algorithms import check_points

        arr = np.array(check_points(pilot, self.bounds, "pilot"), dtype=float)
        arr.setflags(write=False)
        self.pilot = arr
        self.n = check_integer(n, "n", 2)
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 < float(c) < 1.0:
            raise ValueError(f"c (share of users who trust the curator) must be in (0, 1), got {c!r}")
        self.c = float(c)
        self.n_trusted(self.n)
        self.k = check_integer(k, "k", 1)
        if start not in START_MODES:
            raise ValueError(f"start must be one of {START_MODES}, got {start!r}")
        if start == "pilot" and arr.shape[0] < self.k:
            raise ValueError(f"start='pilot' needs at least k = {self.k} pilot points, got {arr.shape[0]}")
        self.start = start
        if isinstance(smoothing, str) and smoothing in SMOOTHING_RULES:
            if smoothing == "refit" and arr.shape[0] < self.k:
                raise ValueError(f"smoothing='refit' fits k = {self.k} centres to the pilot: it needs at least k pilot "
                                 f"points, got {arr.shape[0]}")
            self.smoothing_rule = smoothing
            self.smoothing = cross_validated_smoothing(arr, self.k) if smoothing == "auto" else 0.0
        else:
            if isinstance(smoothing, (bool, str)) or not isinstance(smoothing, numbers.Real) or not (
                    0 <= smoothing < math.inf):
                raise ValueError(f"smoothing must be a finite number >= 0, 'refit' or 'auto', got {smoothing!r}")
            self.smoothing_rule = "given"
            self.smoothing = float(smoothing)
        if not isinstance(trust_may_follow_clusters, (bool, np.bool_)):
            raise ValueError(f"trust_may_follow_clusters must be true or false, got {trust_may_follow_clusters!r}")
        if trust_may_follow_clusters and arr.shape[0] < self.k:
            raise ValueError(f"trust_may_follow_clusters needs at least k = {self.k} pilot points to place the "
                             f"clusters, got {arr.shape[0]} (or set it false)")
        self.trust_may_follow_clusters = bool(trust_may_follow_clusters)
        self.released_cells = self._check_cells(released_cells)

    def _check_cells(self, released: Any) -> tuple[Any, ...]:
        from .cells import ReleasedCells

        out = tuple(released)
        for j, r in enumerate(out):
            if not isinstance(r, ReleasedCells):
                raise TypeError(f"released_cells[{j}] must be a ReleasedCells, got {type(r).__name__}")
            if len(r.counts) != self.k:
                raise ValueError(f"released_cells[{j}] (group {r.group!r}) has {len(r.counts)} counts; the pilot start "
                                 f"has k = {self.k} cells")
        groups = [r.group for r in out]
        if len(set(groups)) != len(groups):
            raise ValueError(f"released_cells names a group twice: {groups}")
        if out and self.pilot.shape[0] < self.k:
            raise ValueError(f"released_cells count users per cluster of the pilot start: it needs at least k = "
                             f"{self.k} pilot points, got {self.pilot.shape[0]}")
        return out

    def n_trusted(self, n: int) -> int:
        """``round(c n)``, the number of TCM users among ``n`` (refused unless both groups have a user)."""
        t = int(round(self.c * n))
        if not 1 <= t <= n - 1:
            raise ValueError(f"c = {self.c!r} with n = {n} users gives {t} TCM users; both groups need at least one user")
        return t

    def pilot_cells(self) -> np.ndarray:
        """Each pilot point's cell: the index of its nearest centre of :func:`pilot_start` (public)."""
        from .algorithms import nearest_centre

        return nearest_centre(self.pilot, pilot_start(self.pilot, self.k))[0]

    def _cell_shares(self, w: np.ndarray, gens: list[np.random.Generator]) -> dict[str, Any]:
        """With ``released_cells``: per group, ``(chain, draw, cell)`` shares of its users per cell (``cells_tcm``,
        ``cells_lm``), :func:`~hybridpriv.families.kmeans.cells.draw_cell_shares` of its release, or, for a group
        without one, the draw's own cell masses (the weights summed per cell)."""
        from .cells import CELL_GROUPS, draw_cell_shares

        released = {r.group: r for r in self.released_cells}
        onehot = np.eye(self.k)[self.pilot_cells()]  # (pilot, cell)
        out = {}
        for group in CELL_GROUPS:
            if group in released:
                shares = np.stack([draw_cell_shares(released[group], w.shape[1], g) for g in gens])
            else:
                shares = w @ onehot
            out[f"cells_{group}"] = (("chain", "draw", "cell"), shares)
        return out

    def build(self) -> Any:
        """The PyMC model: ``weights ~ Dirichlet(1, ..., 1)`` over the pilot points, ``mean`` and ``sd`` of ``F``;
        with ``trust_may_follow_clusters``, ``trust_follows ~ Bernoulli(1/2)``, ``trust_share`` (``Uniform(0, 1)``
        where trust follows, else 0) and ``trust_cluster ~ Categorical(1/k, ..., 1/k)``."""
        import pymc as pm

        x = self.pilot
        with pm.Model(coords={"pilot": np.arange(x.shape[0]), "coordinate": np.arange(x.shape[1])}) as model:
            w = pm.Dirichlet("weights", a=np.ones(x.shape[0]), dims="pilot")
            mean = pm.Deterministic("mean", w @ x, dims="coordinate")
            pm.Deterministic("sd", pm.math.sqrt(w @ (x - mean[None, :]) ** 2), dims="coordinate")
            if self.trust_may_follow_clusters and not self.released_cells:
                follows = pm.Bernoulli("trust_follows", TRUST_FOLLOWS_PRIOR)
                pm.Deterministic("trust_share", follows * pm.Uniform("trust_share_if_follows", 0.0, 1.0))
                pm.Categorical("trust_cluster", p=np.full(self.k, 1.0 / self.k))
        return model

    def _sample(self, model: Any, draws: int, tune: int, chains: int, random_seed: list[int], progressbar: bool,
                **sample_kwargs: Any) -> Any:
        """Exact draws, chain ``c`` from ``numpy.random.default_rng(random_seed[c])``: the weights, then (with
        ``trust_may_follow_clusters``) the trust variables (``model`` is :meth:`build`'s, whose distribution they
        follow; ``tune`` is not needed), then (``smoothing="refit"``) each draw's ``spread``, a function of its
        weights and a bootstrap pilot computed outside the PyMC graph (:func:`refit_spread`)."""
        if sample_kwargs:
            raise TypeError(f"{type(self).__name__} draws exactly and takes no sampler arguments, got {sorted(sample_kwargs)}")
        x = self.pilot
        gens = [np.random.default_rng(s) for s in random_seed]
        w = np.stack([g.dirichlet(np.ones(x.shape[0]), size=draws) for g in gens])
        mean = w @ x
        sd = np.sqrt(np.einsum("cdp,cdpj->cdj", w, (x[None, None] - mean[:, :, None]) ** 2))
        coords = {"chain": np.arange(chains), "draw": np.arange(draws), "pilot": np.arange(x.shape[0]),
                  "coordinate": np.arange(x.shape[1])}
        cd = ("chain", "draw")
        trust = {}
        if self.trust_may_follow_clusters and not self.released_cells:
            follows = np.stack([g.random(draws) < TRUST_FOLLOWS_PRIOR for g in gens])
            share = np.stack([g.random(draws) for g in gens])
            cluster = np.stack([g.integers(self.k, size=draws) for g in gens])
            trust = {"trust_follows": (cd, follows.astype(np.int64)), "trust_share_if_follows": (cd, share),
                     "trust_share": (cd, np.where(follows, share, 0.0)), "trust_cluster": (cd, cluster.astype(np.int64))}
        if self.smoothing_rule == "refit":  # after the trust draws, from the same generators
            trust["spread"] = (cd, np.stack([refit_spread(x, self.k, w[c], g) for c, g in enumerate(gens)]))
        if self.released_cells:  # last, from the same generators: without a release the draws above are unchanged
            coords["cell"] = np.arange(self.k)
            trust.update(self._cell_shares(w, gens))
        ds = xr.Dataset({"weights": (("chain", "draw", "pilot"), w), "mean": (("chain", "draw", "coordinate"), mean),
                         "sd": (("chain", "draw", "coordinate"), sd), **trust}, coords=coords,
                        attrs={"sampler": "exact Dirichlet(1, ..., 1) draws (Bayesian bootstrap)"
                               + (" and exact draws of the trust variables" if trust else "")})
        return xr.DataTree.from_dict({"posterior": ds})
