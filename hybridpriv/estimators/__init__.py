"""Estimators, one module per family.

Every estimator is a small class: its parameters in the constructor, its promise per group
in :attr:`~hybridpriv.estimators.base.Estimator.guarantee`, and a vectorised ``estimate``.

========================  =========  ===================================================
label                     statistic  class
========================  =========  ===================================================
``weighted``              mean       :class:`WeightedMean` (Ferrando et al.)
``pdp-min/avg/max/opt``   mean       :class:`PDPSample` (Jorgensen et al. Sample)
``uniform-mean``          mean       :class:`UniformMean` (everyone at epsilon_min)
``public-mean``           mean       :class:`PublicMean` (public records only)
``weighted-median``       median     :class:`WeightedMedian` (Ferrando et al.)
``pe-median``             median     :class:`PEMedian` (Jorgensen et al. PE)
``uniform-median``        median     :class:`UniformMedian`
``public-median``         median     :class:`PublicMedian`
========================  =========  ===================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..privacy import Bounds, Group
from .base import Estimator, resolve_sigma2
from .baselines import PublicMean, PublicMedian, UniformMean, UniformMedian
from .jorgensen import THRESHOLD_RULES, PDPSample, PEMedian, pe_median_costs
from .mixed import WeightedMean, WeightedMedian

__all__ = [
    "ESTIMATOR_NAMES",
    "ESTIMATOR_STATISTIC",
    "Estimator",
    "PDPSample",
    "PEMedian",
    "PublicMean",
    "PublicMedian",
    "THRESHOLD_RULES",
    "UniformMean",
    "UniformMedian",
    "WeightedMean",
    "WeightedMedian",
    "default_estimators",
    "make_estimator",
    "pe_median_costs",
    "resolve_sigma2",
]

_FACTORIES: dict[str, tuple[str, Callable[..., Estimator]]] = {
    "weighted": ("mean", lambda g, b, s2, rel: WeightedMean(g, b, s2, relation=rel)),
    "pdp-min": ("mean", lambda g, b, s2, rel: PDPSample(g, b, "min", relation=rel)),
    "pdp-opt": ("mean", lambda g, b, s2, rel: PDPSample(g, b, "opt", sigma2=s2, relation=rel)),
    "pdp-avg": ("mean", lambda g, b, s2, rel: PDPSample(g, b, "avg", relation=rel)),
    "pdp-max": ("mean", lambda g, b, s2, rel: PDPSample(g, b, "max", relation=rel)),
    "uniform-mean": ("mean", lambda g, b, s2, rel: UniformMean(g, b, relation=rel)),
    "public-mean": ("mean", lambda g, b, s2, rel: PublicMean(g, b)),
    "weighted-median": ("median", lambda g, b, s2, rel: WeightedMedian(g, b, s2, relation=rel)),
    "pe-median": ("median", lambda g, b, s2, rel: PEMedian(g, b)),
    "uniform-median": ("median", lambda g, b, s2, rel: UniformMedian(g, b, relation=rel)),
    "public-median": ("median", lambda g, b, s2, rel: PublicMedian(g, b)),
}

#: Names accepted by :func:`make_estimator` (and by SPEC files).
ESTIMATOR_NAMES = tuple(_FACTORIES)

#: The statistic each named estimator estimates.
ESTIMATOR_STATISTIC = {name: stat for name, (stat, _) in _FACTORIES.items()}


def make_estimator(
    name: str,
    groups: Sequence[Group],
    bounds: Bounds | tuple[float, float],
    sigma2: object = None,
    relation: str = "add-remove",
) -> Estimator:
    """Build a built-in estimator by its label (see the table above)."""
    if name not in _FACTORIES:
        raise ValueError(f"estimator must be one of {list(ESTIMATOR_NAMES)}, got {name!r}")
    _, factory = _FACTORIES[name]
    if name in ("weighted", "pdp-opt", "weighted-median") and sigma2 is None:
        raise ValueError(f"estimator {name!r} needs sigma2 (the records' variance), got None")
    return factory(groups, bounds, sigma2, relation)


def default_estimators(
    groups: Sequence[Group],
    bounds: Bounds | tuple[float, float],
    statistic: str = "mean",
    sigma2: object = None,
    relation: str = "add-remove",
) -> list[Estimator]:
    """Every built-in estimator of ``statistic`` that applies to ``groups``.

    The public-only baseline is included when a public group exists.
    """
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    has_public = any(g.is_public for g in groups)
    names = [n for n, (stat, _) in _FACTORIES.items() if stat == statistic and (has_public or not n.startswith("public"))]
    return [make_estimator(n, groups, bounds, sigma2, relation) for n in names]
