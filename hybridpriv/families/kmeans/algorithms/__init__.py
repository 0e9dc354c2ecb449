"""Hybrid DP K-means (Avent, Dubey & Korolova 2020, Section 7 and Appendix E) as mechanisms.

The family on the one pipeline (``evaluate(candidates, source, WCSS())`` then ``decide``):

* data: :class:`PointCloud` (points in a box, who trusts the curator, a public start);
* mechanisms (data kind ``"points"``, release: final centres ``(trials, K, d)``):
  :class:`HybridKMeans` (Algorithm 1), :class:`TCMKMeans`, :class:`LMKMeans` and the
  non-private :class:`LloydKMeans`, and :class:`PublicStart` (the public start alone, spending
  nothing); ``run(data, rng)`` gives one run's history and ledger;
* task: :class:`WCSS`; source: :class:`TrustSplitSource` (a fixed cloud, a fresh trust split and
  public start per draw); :func:`gaussian_clusters` simulates clustered points;
* building blocks on arrays: :mod:`.algorithm` (noise scales, budget parts, the ledger plan,
  nearest-centre search, one run).

Randomized response (line 7) is :func:`hybridpriv.noise.randomized_response`.
"""

from __future__ import annotations

from .algorithm import (
    PWH_NOISE,
    KMeansResult,
    budget_parts,
    ledger_plan,
    nearest_centre,
    noise_scales,
    run_kmeans,
    wcss,
)
from .data import (
    WCSS,
    PointCloud,
    TrustSplitSource,
    check_points,
    gaussian_clusters,
)
from .mechanisms import HybridKMeans, LloydKMeans, LMKMeans, PublicStart, TCMKMeans

__all__ = [
    "HybridKMeans",
    "KMeansResult",
    "LMKMeans",
    "LloydKMeans",
    "PWH_NOISE",
    "PointCloud",
    "PublicStart",
    "TCMKMeans",
    "TrustSplitSource",
    "WCSS",
    "budget_parts",
    "check_points",
    "gaussian_clusters",
    "ledger_plan",
    "nearest_centre",
    "noise_scales",
    "run_kmeans",
    "wcss",
]
