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
  with that draw's weights (optionally smoothed by Gaussian noise), a fresh random trust split
  (``round(c n)`` TCM users) and the public start (the same for every dataset, or fresh uniform).

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

__all__ = ["KMeansPilotModel", "KMeansPilotPosterior", "SMOOTHING_FOLDS", "START_MODES", "cross_validated_smoothing",
           "pilot_start"]

#: How the public start (line 1 of Algorithm 1) is chosen: from the pilot, or uniform per dataset.
START_MODES = ("pilot", "uniform")
#: Lloyd iterations of the pilot start (it stops earlier once the centres no longer move).
PILOT_LLOYD_ITERATIONS = 100
#: Folds of the cross-validation behind ``smoothing="auto"`` (leave-one-out for pilots of at most this many points).
SMOOTHING_FOLDS = 20


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


class KMeansPilotPosterior(Posterior):
    """The Bayesian bootstrap's draws as a source of :class:`~hybridpriv.families.kmeans.algorithms.PointCloud` datasets.

    ``idata["posterior"]`` holds ``weights (chain, draw, pilot)`` and the summaries ``mean`` and
    ``sd`` ``(chain, draw, coordinate)``.  ``start`` is the public start shared by every dataset
    (``None`` with ``start="uniform"``: each dataset draws its own, uniform in the box).
    """

    convergence_vars = ("mean", "sd")
    data_kind = "points"
    convergence_advice = "raise draws (--draws); the draws are exact (a Bayesian bootstrap), so check the pilot"

    def __init__(self, model: KMeansPilotModel, idata: Any, seed: int = 0) -> None:
        super().__init__(model, idata, seed)
        self.weights = np.asarray(idata["posterior"]["weights"].values, dtype=float)
        self.start = pilot_start(model.pilot, model.k) if model.start == "pilot" else None

    def dataset(self, points: np.ndarray, rng: np.random.Generator):
        """``points`` as a :class:`PointCloud`: a random trust split of share ``c`` and the public start.

        The step :meth:`generate` ends with, exposed so that real points can be scored the same way.
        """
        from .algorithms import PointCloud

        m = self.model_spec
        n, d = points.shape
        trusted = np.zeros(n, dtype=bool)
        trusted[rng.permutation(n)[: m.n_trusted(n)]] = True
        init = self.start if self.start is not None else m.bounds.lower + m.bounds.width * rng.random((m.k, d))
        return PointCloud(points, trusted, m.bounds, init)

    def generate(self, chain: int, draw: int, rng: np.random.Generator):
        """``n`` users resampled from the pilot with draw ``(chain, draw)``'s weights, then :meth:`dataset`."""
        chain, draw = self._check_index(chain, draw)
        m = self.model_spec
        w = self.weights[chain, draw]
        idx = rng.choice(w.size, size=m.n, p=w / w.sum())
        points = m.pilot[idx]
        if m.smoothing > 0:
            points = m.bounds.clamp(points + m.smoothing * rng.standard_normal(points.shape))
        return self.dataset(np.asarray(points, dtype=float), rng)


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
        a smoothed bootstrap; ``0`` resamples the pilot points as they are; ``"auto"`` (default):
        :func:`cross_validated_smoothing`, the blur that turns the pilot's in-sample K-means cost into its
        cross-validated one.  The number used is ``smoothing``; ``smoothing_rule`` says which was asked for.

    Notes
    -----
    The posterior is exact (independent Dirichlet draws, Rubin's Bayesian bootstrap), so
    ``tune`` is ignored.  It puts all its mass on the pilot's points: a cluster the pilot missed
    is missing from every simulated dataset (``smoothing`` only blurs the pilot's points).
    """

    posterior_class = KMeansPilotPosterior  # what fit() returns

    def __init__(self, pilot: np.ndarray, bounds: Bounds | tuple[float, float], n: int, c: float, k: int,
                 start: str = "pilot", smoothing: float | str = "auto") -> None:
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
        if isinstance(smoothing, str) and smoothing == "auto":
            self.smoothing_rule = "auto"
            self.smoothing = cross_validated_smoothing(arr, self.k)
        else:
            if isinstance(smoothing, (bool, str)) or not isinstance(smoothing, numbers.Real) or not (
                    0 <= smoothing < math.inf):
                raise ValueError(f"smoothing must be a finite number >= 0 or 'auto', got {smoothing!r}")
            self.smoothing_rule = "given"
            self.smoothing = float(smoothing)

    def n_trusted(self, n: int) -> int:
        """``round(c n)``, the number of TCM users among ``n`` (refused unless both groups have a user)."""
        t = int(round(self.c * n))
        if not 1 <= t <= n - 1:
            raise ValueError(f"c = {self.c!r} with n = {n} users gives {t} TCM users; both groups need at least one user")
        return t

    def build(self) -> Any:
        """The PyMC model: ``weights ~ Dirichlet(1, ..., 1)`` over the pilot points, ``mean`` and ``sd`` of ``F``."""
        import pymc as pm

        x = self.pilot
        with pm.Model(coords={"pilot": np.arange(x.shape[0]), "coordinate": np.arange(x.shape[1])}) as model:
            w = pm.Dirichlet("weights", a=np.ones(x.shape[0]), dims="pilot")
            mean = pm.Deterministic("mean", w @ x, dims="coordinate")
            pm.Deterministic("sd", pm.math.sqrt(w @ (x - mean[None, :]) ** 2), dims="coordinate")
        return model

    def _sample(self, model: Any, draws: int, tune: int, chains: int, random_seed: list[int], progressbar: bool,
                **sample_kwargs: Any) -> Any:
        """Exact draws of the weights, chain ``c`` from ``numpy.random.default_rng(random_seed[c])``
        (``model`` is :meth:`build`'s, whose distribution they follow; ``tune`` is not needed)."""
        if sample_kwargs:
            raise TypeError(f"{type(self).__name__} draws exactly and takes no sampler arguments, got {sorted(sample_kwargs)}")
        x = self.pilot
        w = np.stack([np.random.default_rng(s).dirichlet(np.ones(x.shape[0]), size=draws) for s in random_seed])
        mean = w @ x
        sd = np.sqrt(np.einsum("cdp,cdpj->cdj", w, (x[None, None] - mean[:, :, None]) ** 2))
        coords = {"chain": np.arange(chains), "draw": np.arange(draws), "pilot": np.arange(x.shape[0]),
                  "coordinate": np.arange(x.shape[1])}
        ds = xr.Dataset({"weights": (("chain", "draw", "pilot"), w), "mean": (("chain", "draw", "coordinate"), mean),
                         "sd": (("chain", "draw", "coordinate"), sd)}, coords=coords,
                        attrs={"sampler": "exact Dirichlet(1, ..., 1) draws (Bayesian bootstrap)"})
        return xr.DataTree.from_dict({"posterior": ds})
