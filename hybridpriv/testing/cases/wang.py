"""Audit cases of Wang et al.'s mechanisms: representation weights, the scalar hybrid M-estimator,
Algorithm 1, Algorithm 2, Lei's histogram and the public-only fit (replace one private record).
"""

from __future__ import annotations

import math

import numpy as np

from ... import noise as M
from ...core.mechanism import Mechanism
from ...core.privacy import Group
from ...families.public_private.wang import (
    Algorithm1,
    Algorithm2,
    HybridDesign,
    HybridMEstimator,
    LeiHistogram,
    PublicOnly,
    representation_counts,
    representation_weights,
)
from ..core import audit
from ..pairs import audit_estimator
from ._registry import BROKEN, CONFIDENCE, CORRECT, COVERS, SAMPLES, Run, one
from .grouped import BOUNDS, N

__all__: list[str] = []


# Wang et al.: the representation weights (Proposition 1, sensitivity 2 under replace-one) and Algorithm 1.
_RW_PUBLIC = np.array([[0.0], [1.0]])
_RW_PAIR = (np.array([[0.0], [0.0], [0.0]]), np.array([[1.0], [0.0], [0.0]]))  # counts (3,0) -> (2,1)


def _rw_statistic(out):  # increasing in the log-likelihood ratio (post-processing)
    c = 3 * out
    return np.clip(c[:, 0] - 2.0, 0.0, 1.0) + np.clip(1.0 - c[:, 1], 0.0, 1.0)


def _rw_run(epsilon, broken):
    def mech(d, rng, size):
        if broken:  # sensitivity 1 instead of 2
            counts = np.broadcast_to(representation_counts(d, _RW_PUBLIC), (size, 2))
            return np.maximum(M.laplace(counts, 1.0 / epsilon, rng) / d.shape[0], 0.0)
        return representation_weights(d, _RW_PUBLIC, epsilon, rng, size=size)

    return lambda seed: one(
        audit(mech, _RW_PAIR, epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed, statistic=_rw_statistic)
    )


def _hybrid_m_run(contrast, eps):
    est = HybridMEstimator([Group("private", N, eps), Group("public", N, math.inf)], BOUNDS, contrast)
    data = [np.zeros(N), np.linspace(-1.0, 1.0, N)]
    return lambda seed: audit_estimator(est, data, samples=SAMPLES, confidence=CONFIDENCE, seed=seed)


for _eps in (0.5, 2.0):
    CORRECT[f"representation_weights eps={_eps:g}"] = _rw_run(_eps, False)
    COVERS[f"representation_weights eps={_eps:g}"] = "representation_weights"
    BROKEN[f"representation_weights, sensitivity 1 instead of 2, eps={_eps:g}"] = (_rw_run(_eps, True), "mechanism")
    for _c in ("mean", "median"):
        CORRECT[f"HybridMEstimator {_c} eps={_eps:g}"] = _hybrid_m_run(_c, _eps)
        COVERS[f"HybridMEstimator {_c} eps={_eps:g}"] = "HybridMEstimator"


# Wang et al. as mechanisms on a HybridDesign (replace one private record, audited at each mechanism's
# declaration of the "private" unit): one column in [0, 1], three private records at 0, the first
# moved to 1 (public points 0 and 1: the counts go from (3, 0) to (2, 1)).  Algorithm 2 with a proven
# selection step: a criterion that sums one term in [0, 1] per private record (sensitivity 1).
_W_PUBLIC = np.array([[0.0], [1.0]])
_W_PAIR = (HybridDesign(np.zeros((3, 1)), _W_PUBLIC), HybridDesign(np.array([[1.0], [0.0], [0.0]]), _W_PUBLIC))
_W_PUBLIC3 = np.array([[0.0], [0.5], [1.0]])
_W_PAIR3 = (HybridDesign(np.zeros((4, 1)), _W_PUBLIC3), HybridDesign(np.array([[1.0], [0.0], [0.0], [0.0]]), _W_PUBLIC3))


def _bounded_criterion(thetas, private):  # each record adds min(1, |x - theta|): sensitivity 1 under replace-one
    return np.minimum(1.0, np.abs(private[None, :, 0] - thetas[:, None, 0])).sum(axis=1)


def _wang_run(mech: Mechanism, pair) -> Run:
    g = mech.privacy["private"]
    return lambda seed: {"private": audit(lambda d, rng, size: mech.release(d, rng, size), pair, g.epsilon, g.delta,
                                          samples=SAMPLES, confidence=CONFIDENCE, seed=seed,
                                          statistic=lambda out: out[:, 0])}


for _eps in (0.5, 2.0):
    for _name, _mech, _pair in (
        ("Algorithm1", Algorithm1("mean", _eps), _W_PAIR),
        ("Algorithm2", Algorithm2("mean", (0.4 * _eps, 0.2 * _eps, 0.4 * _eps), [1, 2, 3], criterion=_bounded_criterion,
                                  criterion_sensitivity=1.0), _W_PAIR3),
        ("LeiHistogram", LeiHistogram("mean", _eps, 2, lower=0.0, upper=1.0), _W_PAIR),
    ):
        CORRECT[f"{_name} eps={_eps:g}"] = _wang_run(_mech, _pair)
        COVERS[f"{_name} eps={_eps:g}"] = _name
CORRECT["PublicOnly (private records never read: epsilon 0)"] = _wang_run(PublicOnly("mean"), _W_PAIR)
COVERS["PublicOnly (private records never read: epsilon 0)"] = "PublicOnly"


def _wang_broken(declared: Mechanism, released: Mechanism, pair) -> Run:
    g = declared.privacy["private"]
    return lambda seed: {"private": audit(lambda d, rng, size: released.release(d, rng, size), pair, g.epsilon, g.delta,
                                          samples=SAMPLES, confidence=CONFIDENCE, seed=seed,
                                          statistic=lambda out: out[:, 0])}


BROKEN["Algorithm1 released at twice the declared epsilon, eps=1"] = (
    _wang_broken(Algorithm1("mean", 1.0), Algorithm1("mean", 2.0), _W_PAIR), "private")



# The public-private two-stage plan's probe: the cohort's cross-moments mean(y clip(x_j)) with Laplace noise.  The pair:
# three records with outcome 1 at -clip in both columns, the first moved to +clip in both (every coordinate moves by
# 2 clip / n the same way: the L1 worst case); the statistic sums the coordinates (it sees both).
def _cross_pair(clip: float):
    from ...families.public_private.wang import HybridDesign

    public = np.zeros((2, 3))
    base = np.array([[-clip, -clip, 1.0]] * 3)
    moved = base.copy()
    moved[0, :2] = clip
    return HybridDesign(base, public), HybridDesign(moved, public)


def _cross_run(declared, released) -> Run:
    g = declared.privacy["private"]
    pair = _cross_pair(declared.clip)
    return lambda seed: {"private": audit(lambda d, rng, size: released.release(d, rng, size), pair, g.epsilon,
                                          g.delta, samples=SAMPLES, confidence=CONFIDENCE, seed=seed,
                                          statistic=lambda out: out.sum(axis=1))}


def _cross_probe(eps: float, scale_of_one_column: bool = False):
    from ...families.public_private.plan import CrossMomentsProbe

    probe = CrossMomentsProbe(2, 3, eps, 0.5)
    if scale_of_one_column:  # broken: noise for one coordinate's sensitivity, not the vector's L1
        probe.scales = probe.scales / probe.p
    return probe


for _eps in (1.0, 4.0):  # the probe spends half: epsilon 0.5 and 2
    CORRECT[f"CrossMomentsProbe eps={0.5 * _eps:g}"] = _cross_run(_cross_probe(_eps), _cross_probe(_eps))
    COVERS[f"CrossMomentsProbe eps={0.5 * _eps:g}"] = "CrossMomentsProbe"
BROKEN["CrossMomentsProbe with one column's sensitivity, eps=1"] = (
    _cross_run(_cross_probe(2.0), _cross_probe(2.0, scale_of_one_column=True)), "private")
