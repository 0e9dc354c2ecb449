"""The K-means family's data, source and task: :class:`PointCloud`, :class:`TrustSplitSource`, :class:`WCSS`.

A :class:`PointCloud` is one dataset of the ``"points"`` kind (a registered data kind, :func:`hybridpriv.families.data_kinds`):
every user's point in a box, which users trust the curator (the TCM users; the others are LM
users), the box's bounds and a data-independent **public start** (line 1 of Algorithm 1's
initial centres).  Every candidate evaluated on the dataset starts from the same centres and sees
the same split: that is how common random numbers reach the K-means comparison (the engine
generates the dataset once per ``(chain, draw)`` and gives it to every candidate).

:class:`TrustSplitSource` keeps one fixed point cloud and makes, per draw, a fresh random trust
split (a share ``c`` of users trust the curator) and a fresh public start; :class:`WCSS` scores a
release (final centres) by the within-cluster sum of squares of all users' true points.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar

import numpy as np

from ....core.params import Parametrized
from ....core.privacy import Bounds, check_integer, check_real_array
from ....core.tasks import Task
from . import _kernels
from .algorithm import _compiled, _wcss, wcss

__all__ = ["PointCloud", "TrustSplitSource", "WCSS", "check_points", "gaussian_clusters"]


def check_points(data: object, bounds: Bounds, name: str, d: int | None = None, empty: bool = False) -> np.ndarray:
    """``data`` as a float array ``(n, d)`` of finite values inside ``bounds`` (``n >= 1`` unless ``empty``)."""
    arr = check_real_array(data, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n, d) (one row per point), got shape {arr.shape}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one coordinate, got shape {arr.shape}")
    if arr.shape[0] < 1 and not empty:
        raise ValueError(f"{name} must hold at least one point, got shape {arr.shape}")
    if d is not None and arr.shape[1] != d:
        raise ValueError(f"{name} must have {d} coordinate(s) per point, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return bounds.check(arr, name=name)


def _frozen(arr: np.ndarray) -> np.ndarray:
    """A read-only copy (an array that is already read-only is kept: sources share one cloud)."""
    if not arr.flags.writeable:
        return arr
    out = arr.copy()
    out.flags.writeable = False
    return out


def _check_centres(centres: object, d: int | None) -> np.ndarray:
    c = check_real_array(centres, "centres")
    if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1 or (d is not None and c.shape[1] != d) or not np.isfinite(c).all():
        raise ValueError(f"centres must be finite, shape (K, {d if d is not None else 'd'}), got shape {c.shape}")
    return c


@dataclass(frozen=True, eq=False)
class PointCloud:
    """One dataset of K-means users (data kind ``"points"``).

    Parameters
    ----------
    points
        Every user's point, ``(n, d)``, inside ``bounds`` (``n >= 1``).
    trusted
        Boolean mask ``(n,)``: ``True`` for users who trust the curator (TCM users), ``False``
        for local-model (LM) users.  Either group may be empty.
    bounds
        The box: every coordinate lies in ``[lower, upper]`` (a :class:`~hybridpriv.core.privacy.Bounds`
        or a pair).
    init
        The public start, ``(K, d)`` centres inside ``bounds``, chosen without looking at the
        data; every mechanism run on this dataset starts there (common random numbers).
        ``None``: each mechanism draws its own uniform start from its noise stream.
    centres
        The generating centres, ``(K', d)``, when the data were simulated from known clusters
        (the :class:`WCSS` task's truth); else ``None``.

    The arrays are stored as read-only copies.
    """

    points: np.ndarray
    trusted: np.ndarray
    bounds: Bounds
    init: np.ndarray | None = None
    centres: np.ndarray | None = None
    data_kind: ClassVar[str] = "points"

    def __post_init__(self) -> None:
        bounds = Bounds.from_pair(self.bounds)
        points = check_points(self.points, bounds, "points")
        trusted = np.asarray(self.trusted)
        if trusted.dtype != bool:
            raise TypeError(f"trusted must be a boolean mask (True: the user trusts the curator), got dtype {trusted.dtype}")
        if trusted.shape != (points.shape[0],):
            raise ValueError(f"trusted must have one entry per point, shape ({points.shape[0]},), got {trusted.shape}")
        init = None if self.init is None else check_points(self.init, bounds, "init", d=points.shape[1])
        centres = None if self.centres is None else _check_centres(self.centres, points.shape[1])
        object.__setattr__(self, "bounds", bounds)
        object.__setattr__(self, "points", _frozen(points))
        object.__setattr__(self, "trusted", _frozen(trusted))
        object.__setattr__(self, "init", None if init is None else _frozen(init))
        object.__setattr__(self, "centres", None if centres is None else _frozen(centres))

    @property
    def d(self) -> int:
        """Dimension of the points."""
        return int(self.points.shape[1])

    @functools.cached_property
    def points_t(self) -> np.ndarray | None:
        """The points transposed, ``(d, n)``, as the compiled nearest-centre search reads them (made once,
        read-only); ``None`` where that search does not serve them (``d != 2``)."""
        if not _compiled(self.points):
            return None
        out = _kernels.transpose(self.points)
        out.flags.writeable = False
        return out

    @functools.cached_property
    def n_trusted(self) -> int:
        """Number of TCM users."""
        return int(self.trusted.sum())

    def __repr__(self) -> str:
        return (f"PointCloud(n={self.points.shape[0]}, d={self.d}, trusted={self.n_trusted}, "
                f"bounds=[{self.bounds.lower:g}, {self.bounds.upper:g}], init={'given' if self.init is not None else None})")


def gaussian_clusters(centres: object, sigma: float, n_per_cluster: int, bounds: Bounds | tuple[float, float],
                      rng: np.random.Generator) -> np.ndarray:
    """``n_per_cluster`` points around each centre, ``centre + sigma * N(0, I)``, clamped into ``bounds``.

    Returns ``(K n_per_cluster, d)`` points, cluster by cluster (clamping is a visible step:
    with the centres well inside the box it moves no point).
    """
    b = Bounds.from_pair(bounds)
    c = _check_centres(centres, None)
    if isinstance(sigma, bool) or not isinstance(sigma, Real) or not 0 < float(sigma) < np.inf:
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
    n = check_integer(n_per_cluster, "n_per_cluster", 1)
    pts = c[:, None, :] + float(sigma) * rng.standard_normal((c.shape[0], n, c.shape[1]))
    return b.clamp(pts.reshape(-1, c.shape[1]))


class TrustSplitSource(Parametrized):
    """One fixed point cloud; per draw a fresh random trust split and a fresh public start.

    Draw ``(chain, draw)`` (its generator from the engine's stream ``("dataset", chain, draw)``)
    makes ``round(c n)`` users, chosen uniformly at random, the TCM users and the rest LM users,
    then draws the public start: ``k`` centres uniform in the box.  The points never change, so
    the evaluation is the risk given this point cloud, averaged over splits and starts.

    Parameters
    ----------
    points
        Every user's point, ``(n, d)``, inside ``bounds``.
    bounds
        The box of every coordinate.
    c
        Share of users who trust the curator, in ``(0, 1)``; each group keeps at least one user.
    k
        Number of centres of the public start.
    draws
        Datasets the source offers (one chain).
    centres
        The generating centres, if known (the :class:`WCSS` task's truth).
    """

    data_kind = "points"

    def __init__(self, points: np.ndarray, bounds: Bounds | tuple[float, float], c: float, k: int, draws: int,
                 centres: np.ndarray | None = None) -> None:
        self.bounds = Bounds.from_pair(bounds)
        self.points = _frozen(check_points(points, self.bounds, "points"))
        if isinstance(c, bool) or not isinstance(c, Real) or not 0.0 < float(c) < 1.0:
            raise ValueError(f"c (share of users who trust the curator) must be in (0, 1), got {c!r}")
        n = self.points.shape[0]
        self.n_trusted = int(round(float(c) * n))
        if not 1 <= self.n_trusted <= n - 1:
            raise ValueError(f"c={c!r} with n={n} users gives {self.n_trusted} TCM users; both groups need at least one user")
        self.c = float(c)
        self.k = check_integer(k, "k", 1)
        self.draws = check_integer(draws, "draws", 1)
        self.centres = None if centres is None else _frozen(_check_centres(centres, self.points.shape[1]))

    @property
    def shape(self) -> tuple[int, int]:
        return (1, self.draws)

    def generate(self, chain: int, draw: int, rng: np.random.Generator) -> PointCloud:
        n, d = self.points.shape
        trusted = np.zeros(n, dtype=bool)
        trusted[rng.permutation(n)[: self.n_trusted]] = True
        init = self.bounds.lower + self.bounds.width * rng.random((self.k, d))
        return PointCloud(self.points, trusted, self.bounds, init, self.centres)


class WCSS(Task):
    """Within-cluster sum of squares of **all** users' true points to the released centres.

    Releases have shape ``(trials, K, d)``; every user, TCM or LM, is scored on their true point.
    Truth: ``wcss_generating``, the WCSS at the generating centres, when the data know them
    (:attr:`PointCloud.centres`); else none.
    """

    data_kind = "points"
    loss_name = "WCSS"

    def truth(self, data: Any) -> dict[str, float]:
        centres = getattr(data, "centres", None)
        return {} if centres is None else {"wcss_generating": wcss(data.points, centres)}

    def loss(self, mechanism: Any, releases: np.ndarray, data: Any, truth: Any) -> np.ndarray:
        rel = check_real_array(releases, "releases")
        if rel.ndim != 3 or rel.shape[2] != data.d:
            raise ValueError(f"releases must be centres of shape (trials, K, {data.d}), got shape {rel.shape}")
        if not np.isfinite(rel).all():
            raise ValueError("releases (centres) must be finite (no NaN or infinity)")
        xt = getattr(data, "points_t", None)  # a PointCloud's points as the compiled search reads them
        return np.array([_wcss(data.points, c, xt) for c in rel])  # wcss() on validated points
