"""DP M-estimators from a private and a public dataset (Wang, Ji, Kim, Wang, Xiong & Jiang, IEEE TKDE 2018).

A trusted party holds a private dataset ``D`` (``n_D`` records) and a related public dataset
``E`` (``n_E`` records, drawn from a different distribution).  It releases an M-estimator of
``D``'s parameter by weighting every public point by the share of private points it
represents, with Laplace noise on those shares.

Layout (one module per step of the pipeline)
--------------------------------------------
* :mod:`.scaling` -- Algorithm 1, step 1: :func:`rescale` both sets to ``[0, 1]^q`` by the
  *public* per-column range (private values truncated to it; categorical columns one-hot / ``sqrt(2)``).
* :mod:`.weights` -- steps 2-3: :func:`nearest_public` (KD-tree or an exact blocked search, never
  a full distance matrix), :func:`representation_counts`, :func:`representation_weights`
  (``Laplace(2 / epsilon)`` on the counts, divided by ``n_D``, truncated at 0), :func:`distance`.
* :mod:`.contrasts` and :mod:`.mestimation` -- step 4: :func:`m_estimate` for a :class:`Contrast`
  (``"mean"``, ``"median"``, ``"logistic"`` or :class:`CustomContrast`); :func:`algorithm1` end to
  end; the baselines :func:`public_only`, :func:`hybrid_oracle`, :func:`private_fit`.
* :mod:`.criteria` -- :func:`prediction_error` (Section 5.1), :func:`brier_criterion`,
  :func:`criterion_sensitivity_bound`.
* :mod:`.algorithm2` -- :func:`algorithm2` (one run with its ledger) over a core vectorised over runs.
* :mod:`.lei` -- :func:`lei_m_estimator` (Lei 2011, perturbed histogram on ``D`` alone).
* :mod:`.design`, :mod:`.loading`, :mod:`.sources` -- the data: :class:`HybridDesign` (the
  ``"public-private"`` kind), :func:`load_hybrid_csv` (Section 5.2), :class:`Section51Source`,
  :class:`OrderedSource`.
* :mod:`.mechanisms` and :mod:`.tasks` -- the pipeline's protocols: :class:`Algorithm1`,
  :class:`Algorithm2`, :class:`LeiHistogram`, :class:`PublicOnly` (and the grouped
  :class:`HybridMEstimator`); :class:`PredictionError`, :class:`ParameterError`,
  :class:`SubsetDistance`, :class:`Released`.

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
sensitivity would be 1, but ``n_D`` would then be private; this package does not offer it.

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

from .algorithm2 import (
    SELECTIONS,
    Algorithm2Result,
    algorithm2,
    ledger_plan,
    noisy_order,
)
from .contrasts import (
    Contrast,
    CustomContrast,
    LogisticContrast,
    MeanContrast,
    MedianContrast,
    as_contrast,
)
from .criteria import (
    brier_criterion,
    criterion_sensitivity_bound,
    prediction_error,
)
from .design import HybridData, HybridDesign
from .lei import lei_m_estimator
from .loading import load_hybrid_csv
from .mechanisms import (
    Algorithm1,
    Algorithm2,
    HybridMEstimator,
    LeiHistogram,
    PublicOnly,
)
from .mestimation import (
    algorithm1,
    hybrid_oracle,
    m_estimate,
    private_fit,
    public_only,
)
from .scaling import Scaling, rescale
from .sources import OrderedSource, Section51Source, simulate_section51
from .tasks import ParameterError, PredictionError, Released, SubsetDistance
from .weights import (
    KDTREE_MAX_COLUMNS,
    TIE_ATOL,
    TIE_RTOL,
    distance,
    nearest_public,
    representation_counts,
    representation_weights,
    weights_from_counts,
)

__all__ = [
    "Algorithm1",
    "Algorithm2",
    "Algorithm2Result",
    "Contrast",
    "CustomContrast",
    "HybridData",
    "HybridDesign",
    "HybridMEstimator",
    "KDTREE_MAX_COLUMNS",
    "LeiHistogram",
    "LogisticContrast",
    "MeanContrast",
    "MedianContrast",
    "OrderedSource",
    "ParameterError",
    "PredictionError",
    "PublicOnly",
    "Released",
    "SELECTIONS",
    "Scaling",
    "Section51Source",
    "SubsetDistance",
    "TIE_ATOL",
    "TIE_RTOL",
    "algorithm1",
    "algorithm2",
    "as_contrast",
    "brier_criterion",
    "criterion_sensitivity_bound",
    "distance",
    "hybrid_oracle",
    "ledger_plan",
    "lei_m_estimator",
    "load_hybrid_csv",
    "m_estimate",
    "nearest_public",
    "noisy_order",
    "prediction_error",
    "private_fit",
    "public_only",
    "representation_counts",
    "representation_weights",
    "rescale",
    "simulate_section51",
    "weights_from_counts",
]
