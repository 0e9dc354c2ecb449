"""Audit cases of the grouped and hybrid-trust estimators, and their broken variants.

Every estimator is audited group by group with :func:`~hybridpriv.testing.audit_estimator` at two
epsilon settings, on data that make it leak: other records at 0 for means (nothing else adds
randomness), tied near the upper bound for medians.  Broken variants (subclasses here; the
library is not touched): the strict group's noise at the loosest epsilon, the curator's noise
on the TCM mean at the LM group's epsilon, the LM users' local noise at the TCM group's epsilon,
and PDP Sample with ``epsilon_i`` and ``t`` swapped in its keep-probabilities.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...core.privacy import Bounds, Group
from ...estimators import (
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
from ...families.grouped.estimator import Estimator
from ..pairs import audit_estimator
from ._registry import BROKEN, CONFIDENCE, CORRECT, COVERS, SAMPLES, Run

__all__ = [
    "BOUNDS",
    "LMNoiseAtTCMEpsilon",
    "N",
    "SETTINGS",
    "SIGMA2",
    "StrictNoiseAtLoosestEpsilon",
    "SwappedKeepProbabilities",
    "TCMNoiseAtLMEpsilon",
]

N = 10  # records per group: small, so 50,000 runs of an estimator are cheap
BOUNDS = Bounds(-1.0, 1.0)
SIGMA2 = 1.0 / 3.0  # variance of Uniform(-1, 1), for the weights


def _groups(strict: float, loose: float) -> list[Group]:
    return [Group("strict", N, strict), Group("loose", N, loose), Group("public", N, math.inf)]


#: The two epsilon settings every estimator is audited at.
SETTINGS = {"eps=(0.5, 4)": (0.5, 4.0), "eps=(1, 2)": (1.0, 2.0)}
ZEROS = [np.zeros(N)] * 3  # means: other records at 0 add nothing random (a sum's worst case)
TIED = [np.full(N, 0.8)] * 3  # medians: other records tied near the upper bound
ZEROS2 = ZEROS[:2]  # hybrid-model estimators take two groups: (TCM users, LM users)


class StrictNoiseAtLoosestEpsilon(WeightedMean):
    """Broken: every private group's Laplace noise is calibrated to the loosest finite epsilon.

    The weights and the promise (``epsilon_i`` for group ``i``) are those of the correct
    estimator; the strict group gets far less noise than its epsilon needs.
    """

    def _estimate(self, data, rng):
        sums = np.stack([x.sum(axis=1) for x in data], axis=1)
        eps = self.epsilons
        loosest = eps[np.isfinite(eps)].max()
        scale = np.where(np.isinf(eps), 0.0, self.sensitivity / loosest)
        return ((sums + scale * rng.laplace(size=sums.shape)) / self.sizes) @ self.weights


class TCMNoiseAtLMEpsilon(Hybrid):
    """Broken: the curator's noise on the TCM mean is calibrated to the LM group's epsilon."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._scale_T = self.tcm_sensitivity / self.groups[1].epsilon


class LMNoiseAtTCMEpsilon(LMOnly):
    """Broken: every LM user's local noise is calibrated to the TCM group's epsilon (their local promise)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._scale_L = self.local_sensitivity / self.groups[0].epsilon


class SwappedKeepProbabilities(PDPSample):
    """Broken: keep-probabilities ``(e^t - 1)/(e^eps_i - 1)`` (eps_i and t swapped), clipped at 1.

    With ``t`` above a group's epsilon that keeps every record of the group, while the
    guarantee still promises ``min(eps_i, t) = eps_i``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        eps = self.epsilons
        finite = np.where(np.isinf(eps), 1.0, eps)
        with np.errstate(over="ignore"):
            p = np.minimum(1.0, np.expm1(self.threshold) / np.expm1(finite))
        self.keep_probabilities = np.where(np.isinf(eps), 1.0, p)
        self.expected_kept = float(np.sum(self.sizes * self.keep_probabilities))


def _estimator_run(make: Callable[[list[Group]], Estimator], eps: tuple[float, float], data) -> Run:
    est = make(_groups(*eps))
    return lambda seed: audit_estimator(est, data, samples=SAMPLES, confidence=CONFIDENCE, seed=seed)


_ESTIMATOR_CASES: dict[str, tuple[Callable[[list[Group]], Estimator], list, str]] = {
    "WeightedMean": (lambda g: WeightedMean(g, BOUNDS, SIGMA2), ZEROS, "WeightedMean"),
    "WeightedMean replace": (lambda g: WeightedMean(g, BOUNDS, SIGMA2, relation="replace"), ZEROS, "WeightedMean"),
    "WeightedMedian": (lambda g: WeightedMedian(g, BOUNDS, SIGMA2), TIED, "WeightedMedian"),
    "PDPSample kept, t=min": (lambda g: PDPSample(g, BOUNDS, "min"), ZEROS, "PDPSample"),
    "PDPSample kept, t=max": (lambda g: PDPSample(g, BOUNDS, "max"), ZEROS, "PDPSample"),
    "PDPSample kept, t=avg, replace": (lambda g: PDPSample(g, BOUNDS, "avg", relation="replace"), ZEROS, "PDPSample"),
    "PDPSample expected, t=max": (lambda g: PDPSample(g, BOUNDS, "max", denominator="expected"), ZEROS, "PDPSample"),
    "PDPSample expected, t=opt": (
        lambda g: PDPSample(g, BOUNDS, "opt", sigma2=SIGMA2, denominator="expected", mean_square=0.0),
        ZEROS,
        "PDPSample",
    ),
    "PEMedian": (lambda g: PEMedian(g, BOUNDS), TIED, "PEMedian"),
    "UniformMean": (lambda g: UniformMean(g, BOUNDS), ZEROS, "UniformMean"),
    "UniformMedian": (lambda g: UniformMedian(g, BOUNDS), TIED, "UniformMedian"),
    "PublicMean": (lambda g: PublicMean(g, BOUNDS), ZEROS, "PublicMean"),
    "PublicMedian": (lambda g: PublicMedian(g, BOUNDS), TIED, "PublicMedian"),
    "TCMOnly": (lambda g: TCMOnly(g[:2], BOUNDS), ZEROS2, "TCMOnly"),
    "TCMOnly gaussian": (lambda g: TCMOnly(g[:2], BOUNDS, noise="gaussian", delta=1e-5), ZEROS2, "TCMOnly"),
    "FullLM": (lambda g: FullLM(g[:2], BOUNDS), ZEROS2, "FullLM"),
    "FullLM gaussian": (lambda g: FullLM(g[:2], BOUNDS, noise="gaussian", delta=1e-5), ZEROS2, "FullLM"),
    "LMOnly": (lambda g: LMOnly(g[:2], BOUNDS), ZEROS2, "LMOnly"),
    "Hybrid kvh": (lambda g: Hybrid(g[:2], BOUNDS, "kvh", sigma2=SIGMA2), ZEROS2, "Hybrid"),
    "Hybrid kvh, loose group in TCM": (lambda g: Hybrid(g[1::-1], BOUNDS, "kvh", sigma2=SIGMA2), ZEROS2, "Hybrid"),
    "Hybrid pwh gaussian replace": (
        lambda g: Hybrid(g[:2], BOUNDS, "pwh", noise="gaussian", delta=1e-5, relation="replace"),
        ZEROS2,
        "Hybrid",
    ),
    "Hybrid w=0.5": (lambda g: Hybrid(g[:2], BOUNDS, 0.5), ZEROS2, "Hybrid"),
}

for _name, (_make, _data, _cls) in _ESTIMATOR_CASES.items():
    for _label, _eps in SETTINGS.items():
        CORRECT[f"{_name} {_label}"] = _estimator_run(_make, _eps, _data)
        COVERS[f"{_name} {_label}"] = _cls

for _label, _eps in SETTINGS.items():
    BROKEN[f"WeightedMean, strict group's noise at the loosest epsilon, {_label}"] = (
        _estimator_run(lambda g: StrictNoiseAtLoosestEpsilon(g, BOUNDS, SIGMA2), _eps, ZEROS),
        "strict",
    )
    BROKEN[f"Hybrid, TCM noise at the LM group's epsilon, w=0.9, {_label}"] = (
        _estimator_run(lambda g: TCMNoiseAtLMEpsilon(g[:2], BOUNDS, 0.9), _eps, ZEROS2),
        "strict",
    )
    BROKEN[f"PDPSample expected, keep-probabilities with eps_i and t swapped, t=max, {_label}"] = (
        _estimator_run(lambda g: SwappedKeepProbabilities(g, BOUNDS, "max", denominator="expected"), _eps, ZEROS),
        "strict",
    )

# the local promise: a mean of 10 reports dilutes one report's leak, so only the wide setting (0.5 vs 4) is in reach
BROKEN["LMOnly, the strict LM users' local noise at the loose TCM group's epsilon, eps=(0.5, 4)"] = (
    _estimator_run(lambda g: LMNoiseAtTCMEpsilon(g[1::-1], BOUNDS), SETTINGS["eps=(0.5, 4)"], ZEROS2),
    "strict",
)



# The two-stage plan's group means, under each relation the probe offers and with bounds that exclude 0 (where
# max(|lower|, |upper|) and the width differ): add-remove, the neighbour holds one more record at the upper bound
# (its size, public, divides the sum either way); replace, one record moves from the lower to the upper bound.
# The statistic is the strict group's released mean.
_PROBE_BOUNDS = {"[-1, 1]": BOUNDS, "[10, 20]": Bounds(10.0, 20.0)}


def _replace_noise_under_add_remove(groups, bounds, share):
    """Broken: a probe promising add-remove whose noise is calibrated to the width (replace's sensitivity): with
    bounds [10, 20] one added record moves a sum by 20, the noise covers 10."""
    from ...families.grouped.plan import GroupMeansProbe

    probe = GroupMeansProbe(groups, bounds, "add-remove", share)
    probe.scales = probe.scales * (bounds.width / bounds.sum_sensitivity("add-remove"))
    return probe


def _means_probe_run(eps: tuple[float, float], share: float, relation: str = "add-remove", bounds: Bounds = BOUNDS,
                     make=None) -> Run:
    from ...families.grouped.plan import GroupMeansProbe
    from ..core import audit

    groups = _groups(*eps)
    probe = (make or (lambda g, b, s: GroupMeansProbe(g, b, relation, s)))(groups, bounds, share)
    lo, hi = bounds.lower, bounds.upper
    base = [np.full(N, lo)] * 3
    if relation == "add-remove":
        plus = [np.append(np.full(N, lo), hi), np.full(N, lo), np.full(N, lo)]
    else:
        plus = [np.append(np.full(N - 1, lo), hi), np.full(N, lo), np.full(N, lo)]

    def mech(d, rng, size):
        return probe.release(d, rng, size)

    return lambda seed: {"strict": audit(mech, (base, plus), share * eps[0], samples=SAMPLES, confidence=CONFIDENCE,
                                         seed=seed, statistic=lambda out: out[:, 0])}


for _label, _eps in SETTINGS.items():
    for _rel in ("add-remove", "replace"):
        for _bname, _b in _PROBE_BOUNDS.items():
            _case = f"GroupMeansProbe share=0.5 {_rel} bounds={_bname} {_label}"
            CORRECT[_case] = _means_probe_run(_eps, 0.5, _rel, _b)
            COVERS[_case] = "GroupMeansProbe"
    BROKEN[f"GroupMeansProbe, replace noise under add-remove, bounds=[10, 20], {_label}"] = (
        _means_probe_run(_eps, 0.5, "add-remove", _PROBE_BOUNDS["[10, 20]"], _replace_noise_under_add_remove), "strict")


def _tcm_mean_probe_run(eps: tuple[float, float], relation: str, bounds: Bounds, noise_factor: float = 1.0) -> Run:
    """Hybrid trust's probe (:class:`~hybridpriv.families.hybrid_trust.plan.TCMMeanProbe`, share 0.5) on a TCM group
    beside a local LM group, each unit at the promise it declares: the TCM group's neighbour adds (add-remove) or moves
    (replace) one record between the bounds (``share x epsilon``); the LM group's moves one of its records between
    the bounds, which must change nothing (declared 0: it is never read)."""
    from ...families.hybrid_trust.plan import TCMMeanProbe
    from ..core import audit

    tcm, lm = Group("tcm", N, eps[0]), Group("lm", N, eps[1], 0.0, "local")
    probe = TCMMeanProbe([tcm, lm], bounds, relation, 0.5)
    probe.scales = probe.scales * noise_factor  # < 1: broken, less noise than the claim needs
    lo, hi = bounds.lower, bounds.upper
    base = [np.full(N, lo), np.full(N, lo)]
    moved = np.append(np.full(N - 1, lo), hi)
    tcm_pair = (base, [np.append(np.full(N, lo), hi) if relation == "add-remove" else moved, base[1]])
    lm_pair = (base, [base[0], moved])

    def mech(d, rng, size):
        return probe.release(d, rng, size)[:, 0]

    def run(seed):
        g = probe.privacy
        return {unit: audit(mech, pair, g[unit].epsilon, samples=SAMPLES, confidence=CONFIDENCE,
                            seed=np.random.SeedSequence([seed, k]))
                for k, (unit, pair) in enumerate((("tcm", tcm_pair), ("lm", lm_pair)))}

    return run


for _label, _eps in SETTINGS.items():
    for _rel in ("add-remove", "replace"):
        for _bname, _b in _PROBE_BOUNDS.items():
            _case = f"TCMMeanProbe share=0.5 {_rel} bounds={_bname} {_label}"
            CORRECT[_case] = _tcm_mean_probe_run(_eps, _rel, _b)
            COVERS[_case] = "TCMMeanProbe"
BROKEN["TCMMeanProbe with half its noise, add-remove, bounds=[10, 20], eps=(1, 2)"] = (
    _tcm_mean_probe_run((1.0, 2.0), "add-remove", _PROBE_BOUNDS["[10, 20]"], noise_factor=0.5), "tcm")
