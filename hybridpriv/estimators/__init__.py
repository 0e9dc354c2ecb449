"""The catalogue of mechanisms: every family's mechanisms and tasks under one import
(``from hybridpriv.estimators import WeightedMean``).  Each is defined in its family's package
(:mod:`hybridpriv.families.grouped.mixed`, :mod:`hybridpriv.families.hybrid_trust.mechanisms`,
:mod:`hybridpriv.families.user_item.mechanisms`, :mod:`hybridpriv.families.kmeans.algorithms`,
:mod:`hybridpriv.families.public_private.wang`, ...); this module only re-exports them.

Every estimator is a small class: its parameters in the constructor, its promise per group
in :attr:`~hybridpriv.families.grouped.estimator.Estimator.privacy`, and a vectorised ``estimate``.

========================  =========  ===================================================
label                     statistic  class
========================  =========  ===================================================
``weighted``              mean       :class:`WeightedMean` (Ferrando et al.)
``pdp-min/avg/max/opt``   mean       :class:`PDPSample` (Jorgensen et al. Sample, the seed's form)
``pdp-opt-expected``      mean       :class:`PDPSample` with the public expected count (PDP-valid)
``uniform-mean``          mean       :class:`UniformMean` (everyone at epsilon_min)
``public-mean``           mean       :class:`PublicMean` (public records only)
``weighted-median``       median     :class:`WeightedMedian` (Ferrando et al.)
``pe-median``             median     :class:`PEMedian` (Jorgensen et al. PE)
``uniform-median``        median     :class:`UniformMedian`
``public-median``         median     :class:`PublicMedian`
``k=<k>``                 counts     :class:`ContributionBoundedCounts` (Zeber & Lopatka; user-item, scored by
                                     the task :class:`ItemCounts`; not in the registry)
``tcm-only`` ...          mean       :class:`TCMOnly`, :class:`FullLM`, :class:`LMOnly`, :class:`Hybrid` (Avent et al.;
                                     two groups: trusted-curator users, local-model users; not in the registry)
``hybrid``, ``tcm`` ...   centres    :class:`HybridKMeans`, :class:`TCMKMeans`, :class:`LMKMeans`, :class:`LloydKMeans`
                                     (Avent et al. K-means on a :class:`PointCloud`, scored by :class:`WCSS`;
                                     :mod:`hybridpriv.families.kmeans.algorithms`; not in the registry)
``hybrid-m-<contrast>``   mean/median :class:`HybridMEstimator` (Wang et al. Algorithm 1 on scalar records)
``algorithm1`` ...        theta      :class:`Algorithm1`, :class:`Algorithm2`, :class:`LeiHistogram`, :class:`PublicOnly`
                                     (Wang et al. M-estimators on a :class:`HybridDesign`, scored by
                                     :class:`PredictionError`; :mod:`hybridpriv.families.public_private.wang`; not in the registry)
========================  =========  ===================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core.privacy import Bounds, Group
from ..families.grouped.baselines import PublicMean, PublicMedian, UniformMean, UniformMedian
from ..families.grouped.estimator import Estimator, resolve_sigma2
from ..families.grouped.jorgensen import THRESHOLD_RULES, PDPSample, PEMedian, pe_median_costs
from ..families.grouped.mixed import WeightedMean, WeightedMedian
from ..families.hybrid_trust.mechanisms import AVENT_NOISES, AVENT_WEIGHTS, FullLM, Hybrid, LMOnly, TCMOnly
from ..families.kmeans.algorithms import (
    WCSS,
    HybridKMeans,
    LloydKMeans,
    LMKMeans,
    PointCloud,
    TCMKMeans,
    TrustSplitSource,
)
from ..families.public_private.wang import (
    Algorithm1,
    Algorithm2,
    Algorithm2Result,
    CustomContrast,
    HybridDesign,
    HybridMEstimator,
    LeiHistogram,
    LogisticContrast,
    PredictionError,
    PublicOnly,
    algorithm1,
    algorithm2,
    hybrid_oracle,
    lei_m_estimator,
    load_hybrid_csv,
    m_estimate,
    prediction_error,
    private_fit,
    public_only,
    representation_weights,
)
from ..families.user_item.mechanisms import (
    USER_ITEM_LOSSES,
    ContributionBoundedCounts,
    ItemCounts,
    MonteCarloLoss,
    bounded_counts,
    monte_carlo_user_item_loss,
    sample_kept_entries,
)

__all__ = [
    "AVENT_NOISES",
    "AVENT_WEIGHTS",
    "Algorithm1",
    "Algorithm2",
    "Algorithm2Result",
    "ContributionBoundedCounts",
    "CustomContrast",
    "ESTIMATOR_NAMES",
    "ESTIMATOR_STATISTIC",
    "Estimator",
    "FullLM",
    "Hybrid",
    "HybridDesign",
    "HybridKMeans",
    "HybridMEstimator",
    "ItemCounts",
    "LMKMeans",
    "LMOnly",
    "LeiHistogram",
    "LloydKMeans",
    "LogisticContrast",
    "MonteCarloLoss",
    "PDPSample",
    "PEMedian",
    "PointCloud",
    "PredictionError",
    "PublicMean",
    "PublicMedian",
    "PublicOnly",
    "TCMKMeans",
    "TCMOnly",
    "THRESHOLD_RULES",
    "TrustSplitSource",
    "USER_ITEM_LOSSES",
    "UniformMean",
    "UniformMedian",
    "WCSS",
    "WeightedMean",
    "WeightedMedian",
    "algorithm1",
    "algorithm2",
    "bounded_counts",
    "default_estimators",
    "hybrid_oracle",
    "lei_m_estimator",
    "load_hybrid_csv",
    "m_estimate",
    "make_estimator",
    "monte_carlo_user_item_loss",
    "pe_median_costs",
    "prediction_error",
    "private_fit",
    "public_only",
    "representation_weights",
    "resolve_sigma2",
    "sample_kept_entries",
]

_FACTORIES: dict[str, tuple[str, Callable[..., Estimator]]] = {
    "weighted": ("mean", lambda g, b, s2, rel: WeightedMean(g, b, s2, relation=rel)),
    "pdp-min": ("mean", lambda g, b, s2, rel: PDPSample(g, b, "min", relation=rel)),
    "pdp-opt": ("mean", lambda g, b, s2, rel: PDPSample(g, b, "opt", sigma2=s2, relation=rel)),
    "pdp-avg": ("mean", lambda g, b, s2, rel: PDPSample(g, b, "avg", relation=rel)),
    "pdp-max": ("mean", lambda g, b, s2, rel: PDPSample(g, b, "max", relation=rel)),
    "pdp-opt-expected": (
        "mean",
        lambda g, b, s2, rel, m2=None: PDPSample(
            g, b, "opt", sigma2=s2, denominator="expected", mean_square=m2, relation=rel
        ),
    ),
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
    mean_square: float | None = None,
) -> Estimator:
    """Build a built-in estimator by its label (see the table above).

    ``sigma2`` (a number or a fitted model) is needed by ``weighted``, ``pdp-opt``,
    ``pdp-opt-expected`` and ``weighted-median``; ``pdp-opt-expected`` also needs
    ``mean_square`` (``mu^2``) unless ``sigma2`` is a fitted model.
    """
    if name not in _FACTORIES:
        raise ValueError(f"estimator must be one of {list(ESTIMATOR_NAMES)}, got {name!r}")
    _, factory = _FACTORIES[name]
    if name in ("weighted", "pdp-opt", "pdp-opt-expected", "weighted-median") and sigma2 is None:
        raise ValueError(f"estimator {name!r} needs sigma2 (the records' variance), got None")
    if name == "pdp-opt-expected":
        return factory(groups, bounds, sigma2, relation, mean_square)
    return factory(groups, bounds, sigma2, relation)


def default_estimators(
    groups: Sequence[Group],
    bounds: Bounds | tuple[float, float],
    statistic: str = "mean",
    sigma2: object = None,
    relation: str = "add-remove",
    mean_square: float | None = None,
) -> list[Estimator]:
    """Every built-in estimator of ``statistic`` that applies to ``groups``.

    The public-only baseline is included when a public group exists; ``pdp-opt-expected``
    when ``mean_square`` is given or ``sigma2`` is a fitted model.
    """
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    has_public = any(g.is_public for g in groups)
    has_m2 = mean_square is not None or hasattr(sigma2, "mean_square_posterior_mean")
    names = [
        n
        for n, (stat, _) in _FACTORIES.items()
        if stat == statistic and (has_public or not n.startswith("public")) and (has_m2 or n != "pdp-opt-expected")
    ]
    return [make_estimator(n, groups, bounds, sigma2, relation, mean_square) for n in names]
