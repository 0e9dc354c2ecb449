"""The audit matrix: every DP-claiming mechanism under each relation it offers, over bounds of every shape.

An audit on bounds ``[-1, 1]`` alone cannot see an error that appears only when the bounds
exclude 0 (``PDPSample(denominator="expected", relation="replace")`` before the fix summed raw
records, so a record that was not kept added 0, outside ``[10, 20]``: an exact loss of 1.363
for a promised 0.5 at ``t = 2``).  The matrix therefore audits every grouped and hybrid-trust
estimator

* under each neighbouring relation it offers (its ``relation`` parameter),
* on bounds that straddle 0, exclude it on the positive and on the negative side, and are
  asymmetric (:data:`MATRIX_BOUNDS`),
* with the change placed in each group in turn (:func:`~hybridpriv.testing.audit_estimator`
  audits every unit with a finite promise; hybrid trust: the TCM and the LM group),

on the candidate pairs of :func:`~hybridpriv.testing.neighbouring_pairs` (a record moving from
``a`` to ``b``; an absent record against one at ``a`` and one at ``b``).  K-means (each unit)
and Wang et al.'s Algorithm 1 and Lei's histogram run over the same bounds; contribution-bounded
counts (no bounds) at two ``k``.  Broken variants: :class:`ExpectedDenominatorFromZero` (PDP
Sample as it was before commit dc0982c), and the grouped registry's broken estimators over
every bounds.  A broken case names the unit whose promise it breaks; the old PDP Sample is a
broken case only where its exact loss (:func:`pdp_sample_exact_loss`) exceeds its promise.

``MATRIX`` maps a case name to a :class:`MatrixCase`; :data:`QUICK` names the subset CI runs.
``benchmarks/audit_matrix.py`` runs the whole matrix over repeated seeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core.mechanism import Mechanism
from ..core.privacy import Group, Guarantee
from ..estimators import (
    FullLM,
    Hybrid,
    LMOnly,
    PDPSample,
    PEMedian,
    PublicMean,
    PublicMedian,
    TCMOnly,
    UniformMean,
    UniformMedian,
    WeightedMean,
    WeightedMedian,
)
from ..families.grouped.datakind import absent_value
from ..families.kmeans.algorithms import HybridKMeans, LMKMeans, PointCloud, TCMKMeans
from ..families.public_private.wang import Algorithm1, HybridDesign, HybridMEstimator, LeiHistogram
from ..families.user_item.mechanisms import ContributionBoundedCounts
from .cases.grouped import StrictNoiseAtLoosestEpsilon, SwappedKeepProbabilities, TCMNoiseAtLMEpsilon
from .core import AuditReport
from .pairs import audit_estimator

__all__ = [
    "EPSILONS",
    "ExpectedDenominatorFromZero",
    "MATRIX",
    "MATRIX_BOUNDS",
    "MatrixCase",
    "QUICK",
    "RELATIONS",
    "base_data",
    "pdp_sample_exact_loss",
    "strict_noise_loss",
]

#: Bounds that straddle 0, exclude it on the positive and on the negative side, and are asymmetric.
MATRIX_BOUNDS: dict[str, tuple[float, float]] = {
    "[-1, 1]": (-1.0, 1.0),
    "[10, 20]": (10.0, 20.0),
    "[-20, -10]": (-20.0, -10.0),
    "[-1, 5]": (-1.0, 5.0),
}
RELATIONS = ("add-remove", "replace")
#: (strict, loose) epsilons of the grouped settings; a third group is public.
EPSILONS = (0.5, 4.0)
#: Records per group: few, so that other records subsampled by PDP Sample add little randomness.
N = 4


class ExpectedDenominatorFromZero(PDPSample):
    """Broken: PDP Sample with the expected denominator as it was before commit dc0982c.

    It summed the raw kept records (a record not kept adds 0), with noise sized to
    ``bounds.sum_sensitivity(relation)`` and the promise ``min(epsilon_i, t)`` under either
    relation.  Under ``"replace"`` with bounds that exclude 0 the promise is false: 0 lies
    outside ``[a, b]``, so "kept at ``a``" vs "kept at ``b``" is not the only change that matters.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.centre = 0.0  # sums raw records
        self.sensitivity = self.bounds.sum_sensitivity(self.relation)

    @property
    def privacy(self) -> dict[str, Guarantee]:
        return {g.name: Guarantee(min(g.epsilon, self.threshold), 0.0, self.relation) for g in self.groups}


def pdp_sample_exact_loss(estimator: PDPSample, group: str, relation: str | None = None, points: int = 200_001) -> float:
    """Exact privacy loss of ``estimator`` (expected denominator) for one record of ``group``, by direct evaluation.

    With the other records fixed at a value that adds nothing random (the worst case), one
    record kept with probability ``p`` adds its contribution ``u`` (its value minus the
    estimator's ``centre``) to a sum released with Laplace noise of scale ``Delta/t``.  A pair of
    neighbours gives two mixtures ``(1-p) L(y) + p L(y - u)``; an absent record gives ``L(y)``.  The
    loss is the largest absolute log ratio of the two densities, evaluated on a fine grid that
    reaches far beyond the atoms (the ratio is flat there), maximised over the candidate pairs of
    ``relation`` (default: the declared one): replace: ``a`` vs ``b``; add-remove: absent vs
    ``a`` and vs ``b``.  An independent check of :func:`hybridpriv.theory.ferrando.pdp_replace_loss`
    and of the declarations, not a formula.
    """
    if estimator.denominator != "expected":
        raise ValueError(f"estimator must use denominator='expected', got {estimator.denominator!r}")
    names = [g.name for g in estimator.groups]
    if group not in names:
        raise ValueError(f"group must be one of {names}, got {group!r}")
    p = float(estimator.keep_probabilities[names.index(group)])
    relation = estimator.privacy[group].relation if relation is None else relation
    scale = estimator.sensitivity / estimator.threshold
    c = float(getattr(estimator, "centre", 0.0))
    ua, ub = estimator.bounds.lower - c, estimator.bounds.upper - c
    span = max(abs(ua), abs(ub), scale)
    y = np.linspace(-span - 60 * scale, span + 60 * scale, points)

    def log_mix(atoms: list[tuple[float, float]]) -> np.ndarray:  # log sum_j w_j L(y - u_j), without the 1/(2s)
        terms = [math.log(w) - np.abs(y - u) / scale for w, u in atoms if w > 0]
        return np.logaddexp.reduce(np.stack(terms), axis=0)

    def present(u: float) -> list[tuple[float, float]]:
        return [(1.0 - p, 0.0), (p, u)]

    if relation == "replace":
        pairs = [(present(ua), present(ub))]
    else:
        pairs = [([(1.0, 0.0)], present(ua)), ([(1.0, 0.0)], present(ub))]
    return float(max(np.max(np.abs(log_mix(d0) - log_mix(d1))) for d0, d1 in pairs))


# ---------------------------------------------------------------------------------------
# the cases
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MatrixCase:
    """One cell of the matrix: a mechanism, its base data, and the unit a broken variant breaks.

    ``run(seed, samples, confidence)`` audits every unit with a finite promise on the candidate
    pairs of :func:`~hybridpriv.testing.neighbouring_pairs`.
    """

    name: str
    family: str
    make: Callable[[], Mechanism]
    data: Callable[[Mechanism], object]
    relation: str
    bounds: str
    target: str | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def broken(self) -> bool:
        return self.target is not None

    def run(self, seed: int, samples: int = 50_000, confidence: float = 0.99) -> dict[str, AuditReport]:
        mech = self.make()
        return audit_estimator(mech, self.data(mech), samples=samples, confidence=confidence, seed=seed)


def base_data(estimator) -> list[np.ndarray]:
    """Base records that make a grouped estimator leak: every record at the quiet value, medians tied.

    Means: the absent value (:func:`~hybridpriv.families.grouped.datakind.absent_value`) or, if it is outside the
    bounds, the value of least magnitude (least randomness from subsampling).  Medians: tied at 90%
    of the way from the lower to the upper bound.
    """
    a, b = estimator.bounds.lower, estimator.bounds.upper
    if getattr(estimator, "statistic", "mean") == "median":
        value = a + 0.9 * (b - a)
    else:
        z = absent_value(estimator)
        value = float(np.clip(0.0, a, b)) if z is None else z
    return [np.full(g.size, value) for g in estimator.groups]


def _groups() -> list[Group]:
    return [Group("strict", N, EPSILONS[0]), Group("loose", N, EPSILONS[1]), Group("public", N, math.inf)]


def _s2(bounds: tuple[float, float]) -> float:
    return (bounds[1] - bounds[0]) ** 2 / 12.0  # variance of a uniform record, for the weights


#: name -> (factory(groups, bounds, relation), family, offers a relation parameter)
_GROUPED: dict[str, tuple[Callable, str, bool]] = {
    "WeightedMean": (lambda g, b, r: WeightedMean(g, b, _s2(b), relation=r), "WeightedMean", True),
    "WeightedMedian": (lambda g, b, r: WeightedMedian(g, b, _s2(b), relation=r), "WeightedMedian", True),
    "PDPSample kept, t=min": (lambda g, b, r: PDPSample(g, b, "min", relation=r), "PDPSample", True),
    "PDPSample expected, t=max": (lambda g, b, r: PDPSample(g, b, "max", denominator="expected", relation=r),
                                  "PDPSample", True),
    "PDPSample expected, t=opt": (lambda g, b, r: PDPSample(g, b, "opt", sigma2=_s2(b), denominator="expected",
                                                            mean_square=0.0, relation=r), "PDPSample", True),
    "PEMedian": (lambda g, b, r: PEMedian(g, b), "PEMedian", False),
    "UniformMean": (lambda g, b, r: UniformMean(g, b, relation=r), "UniformMean", True),
    "UniformMedian": (lambda g, b, r: UniformMedian(g, b, relation=r), "UniformMedian", True),
    "PublicMean": (lambda g, b, r: PublicMean(g, b), "PublicMean", False),
    "PublicMedian": (lambda g, b, r: PublicMedian(g, b), "PublicMedian", False),
    "TCMOnly": (lambda g, b, r: TCMOnly(g[:2], b, relation=r), "TCMOnly", True),
    "FullLM": (lambda g, b, r: FullLM(g[:2], b, relation=r), "FullLM", True),
    "LMOnly": (lambda g, b, r: LMOnly(g[:2], b, relation=r), "LMOnly", True),
    "Hybrid kvh": (lambda g, b, r: Hybrid(g[:2], b, "kvh", sigma2=_s2(b), relation=r), "Hybrid", True),
    "Hybrid w=0.5, loose group in TCM": (lambda g, b, r: Hybrid(g[1::-1], b, 0.5, relation=r), "Hybrid", True),
    "HybridMEstimator mean": (lambda g, b, r: HybridMEstimator([Group("private", N, EPSILONS[0]), g[2]], b, "mean"),
                              "HybridMEstimator", False),
}

def strict_noise_loss(estimator: StrictNoiseAtLoosestEpsilon, change: float) -> float:
    """Exact loss of :class:`~hybridpriv.testing.cases.grouped.StrictNoiseAtLoosestEpsilon` for a strict record moved by ``change``.

    The release is ``const + w_s (x + L_1) / n_s + w_l L_2 / n_l`` with ``L_1, L_2`` Laplace of scale
    ``Delta / epsilon_loose`` (the public group adds no noise); the density of the sum of two
    Laplace variables of scales ``b1 != b2`` is ``(b1 e^{-|y|/b1} - b2 e^{-|y|/b2}) / (2 (b1^2 - b2^2))``,
    evaluated on a grid; the loss is the largest absolute log ratio for the shift ``w_s change / n_s``.
    """
    w, n, eps = estimator.weights, estimator.sizes, estimator.epsilons
    loosest = eps[np.isfinite(eps)].max()
    b1 = w[0] * estimator.sensitivity / loosest / n[0]
    b2 = w[1] * estimator.sensitivity / loosest / n[1]
    shift = w[0] * abs(change) / n[0]
    y = np.linspace(-60 * max(b1, b2) - shift, 60 * max(b1, b2) + shift, 400_001)

    def logf(v):
        v = np.abs(v)
        if math.isclose(b1, b2):  # Gamma-like limit: (b + |y|) e^{-|y|/b} / (4 b^2)
            return np.log(b1 + v) - v / b1
        hi, lo = max(b1, b2), min(b1, b2)  # log(hi e^{-v/hi} - lo e^{-v/lo}) without underflow
        return -v / hi + np.log(hi - lo * np.exp(v / hi - v / lo))

    return float(np.max(np.abs(logf(y) - logf(y - shift))))


def _strict_noise_target(bounds: tuple[float, float], relation: str) -> str | None:
    est = StrictNoiseAtLoosestEpsilon(_groups(), bounds, _s2(bounds), relation=relation)
    a, b = bounds
    z = absent_value(est)
    change = (b - a) if relation == "replace" or z is None else max(abs(a - z), abs(b - z))
    return "strict" if strict_noise_loss(est, change) > est.privacy["strict"].epsilon else None


#: name -> (factory, the unit it breaks, or a function (bounds, relation) -> that unit or None where it holds)
_GROUPED_BROKEN: dict[str, tuple[Callable, object]] = {
    "WeightedMean, strict group's noise at the loosest epsilon": (
        lambda g, b, r: StrictNoiseAtLoosestEpsilon(g, b, _s2(b), relation=r), _strict_noise_target),
    "Hybrid, TCM noise at the LM group's epsilon, w=0.9": (
        lambda g, b, r: TCMNoiseAtLMEpsilon(g[:2], b, 0.9, relation=r), "strict"),
    # under "replace" the declaration follows the (swapped) keep-probabilities, so it is broken only under add-remove
    "PDPSample expected, keep-probabilities with eps_i and t swapped, t=max": (
        lambda g, b, r: SwappedKeepProbabilities(g, b, "max", denominator="expected", relation=r),
        lambda bounds, relation: "strict" if relation == "add-remove" else None),
}


def _grouped_make(factory: Callable, bounds: tuple[float, float], relation: str) -> Callable[[], Mechanism]:
    return lambda: factory(_groups(), bounds, relation)


def _old_pdp_target(bounds: tuple[float, float], relation: str) -> str | None:
    """The strictest group whose promise the old PDP Sample breaks at these bounds (None: it holds here)."""
    est = ExpectedDenominatorFromZero(_groups(), bounds, "max", denominator="expected", relation=relation)
    for g in est.groups:
        if math.isfinite(g.epsilon) and pdp_sample_exact_loss(est, g.name) > est.privacy[g.name].epsilon * (1 + 1e-9):
            return g.name
    return None


def _points(bounds: tuple[float, float]) -> Callable[[Mechanism], object]:
    a, b = bounds
    w = b - a
    # one TCM and one LM user at the lower corner; public start at 1/4 and 3/4 of the box
    return lambda mech: PointCloud(np.array([[a], [a]]), np.array([True, False]), bounds,
                                   [[a + 0.25 * w], [a + 0.75 * w]])


def _design(bounds: tuple[float, float]) -> Callable[[Mechanism], object]:
    a, b = bounds
    return lambda mech: HybridDesign(np.full((3, 1), a), np.array([[a], [b]]))


def _build() -> dict[str, MatrixCase]:
    out: dict[str, MatrixCase] = {}
    for blabel, bounds in MATRIX_BOUNDS.items():
        for name, (factory, family, has_relation) in _GROUPED.items():
            for relation in RELATIONS if has_relation else ("add-remove",):
                rel = f" {relation}" if has_relation else ""
                key = f"{name}{rel} {blabel}"
                out[key] = MatrixCase(key, family, _grouped_make(factory, bounds, relation), base_data,
                                      relation, blabel)
        for name, (factory, target) in _GROUPED_BROKEN.items():
            for relation in RELATIONS:
                unit = target(bounds, relation) if callable(target) else target
                key = f"{'BROKEN' if unit else 'NOT BROKEN HERE'} {name} {relation} {blabel}"
                out[key] = MatrixCase(key, name, _grouped_make(factory, bounds, relation), base_data, relation,
                                      blabel, target=unit)
        for relation in RELATIONS:
            target = _old_pdp_target(bounds, relation)
            key = f"{'BROKEN' if target else 'NOT BROKEN HERE'} PDPSample expected before dc0982c, t=max {relation} {blabel}"
            out[key] = MatrixCase(
                key, "ExpectedDenominatorFromZero",
                _grouped_make(lambda g, b, r: ExpectedDenominatorFromZero(g, b, "max", denominator="expected", relation=r),
                              bounds, relation),
                base_data, relation, blabel, target=target, tags=("old-pdp",))
        for name, cls in (("TCMKMeans", TCMKMeans), ("LMKMeans", LMKMeans), ("HybridKMeans", HybridKMeans)):
            key = f"{name} eps=1 {blabel}"
            out[key] = MatrixCase(key, name, (lambda c=cls, bd=bounds: c(2, 1.0, 1, bd, d=1)), _points(bounds),
                                  "declared", blabel)
        for name, make in (("Algorithm1", lambda: Algorithm1("mean", 1.0)),
                           ("LeiHistogram", lambda bd=bounds: LeiHistogram("mean", 1.0, 2, lower=bd[0], upper=bd[1]))):
            key = f"{name} eps=1 {blabel}"
            out[key] = MatrixCase(key, name, make, _design(bounds), "replace", blabel)
    base = np.zeros((4, 8))
    base[0, :3] = 1
    base[1, 2:6] = 1
    for k in (1, 3):
        key = f"ContributionBoundedCounts k={k} eps=1"
        out[key] = MatrixCase(key, "ContributionBoundedCounts", (lambda k=k: ContributionBoundedCounts(k, 1.0)),
                              (lambda mech: base), "add-remove", "items 0/1")
    return out


MATRIX: dict[str, MatrixCase] = _build()

#: The subset CI runs: PDP Sample (the estimator whose promise depends on the bounds), the old
#: PDP Sample where it is broken, and the weighted mean, over every bounds and relation.
QUICK: tuple[str, ...] = tuple(
    name for name, case in MATRIX.items()
    if (case.family in ("PDPSample", "WeightedMean") and "t=opt" not in name)
    or (case.broken and "old-pdp" in case.tags)
)
