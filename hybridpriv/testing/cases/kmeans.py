"""Audit cases of the K-means mechanisms (Avent et al., Appendix E) and randomized response (line 7)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ... import noise as M
from ...core.mechanism import Mechanism
from ...families.kmeans.algorithms import HybridKMeans, LMKMeans, PointCloud, PublicStart, TCMKMeans
from ..core import audit
from ._registry import BROKEN, CONFIDENCE, CORRECT, COVERS, SAMPLES, Run, one

__all__: list[str] = []


# One dimension in [0, 1], K = 2 centres starting at 0.25 and 0.75, tau = 1 (one round of
# randomized response).  Honest neighbours per declared relation: add/remove-one adds a user of
# the unit at 1 (alone in cluster 1) beside one at 0; replace-one moves the unit's only user from
# 0 to 1 (from cluster 0 to cluster 1).  Each unit is audited at the promise the mechanism
# declares for it (read from ``privacy``, not restated here).
_KM_BOUNDS = (0.0, 1.0)


def _km_cloud(points: list[float], unit: str) -> PointCloud:
    return PointCloud(np.array(points)[:, None], np.full(len(points), unit == "tcm"), _KM_BOUNDS, [[0.25], [0.75]])


def _km_added(out):  # add/remove: where the added user's cluster centre went
    return out[:, 1, 0]


def _km_moved(out):  # replace: which centre the user's report moved (the RR label) and where (the noisy report)
    return np.where(out[:, 1, 0] != 0.75, 1.0 + out[:, 1, 0], out[:, 0, 0])


def _kmeans_run(make: Callable[[float], Mechanism], epsilon: float, released_at: float | None = None) -> Run:
    """Audit every unit of ``make(epsilon)``'s declaration; ``released_at``: release with ``make(released_at)`` (broken)."""
    declared = make(epsilon)
    released = make(epsilon if released_at is None else released_at)

    def run(seed):
        out = {}
        for i, (unit, g) in enumerate(declared.privacy.items()):
            add = g.relation == "add-remove"
            pair = (_km_cloud([0.0], unit), _km_cloud([0.0, 1.0] if add else [1.0], unit))
            out[unit] = audit(lambda d, rng, size: released.release(d, rng, size), pair, g.epsilon, g.delta,
                              samples=SAMPLES, confidence=CONFIDENCE, seed=np.random.SeedSequence([seed, i]),
                              statistic=_km_added if add else _km_moved)
        return out

    return run


def _rr_run(epsilon: float, used: float) -> Run:
    def mech(label, rng, size):  # K = 4 labels, one report each; 2 and 0 differ in every cell
        return M.randomized_response(np.full(size, label), 4, used, rng)

    return lambda seed: one(audit(mech, (0, 2), epsilon, samples=SAMPLES, confidence=CONFIDENCE, seed=seed))


_KMEANS_CASES: dict[str, Callable[[float], Mechanism]] = {
    "TCMKMeans": lambda eps: TCMKMeans(2, eps, 1, _KM_BOUNDS, d=1),
    "LMKMeans": lambda eps: LMKMeans(2, eps, 1, _KM_BOUNDS, d=1),
    "LMKMeans debiased": lambda eps: LMKMeans(2, eps, 1, _KM_BOUNDS, d=1, debias=True),
    "HybridKMeans": lambda eps: HybridKMeans(2, eps, 1, _KM_BOUNDS, d=1),
    "HybridKMeans printed, debiased": lambda eps: HybridKMeans(2, eps, 1, _KM_BOUNDS, d=1, pwh_noise="printed", debias=True),
}
for _eps in (1.0, 4.0):
    for _name, _make in _KMEANS_CASES.items():
        CORRECT[f"{_name} eps={_eps:g}"] = _kmeans_run(_make, _eps)
        COVERS[f"{_name} eps={_eps:g}"] = _name.split()[0]
    CORRECT[f"randomized_response k=4 eps={_eps:g}"] = _rr_run(_eps, _eps)
    COVERS[f"randomized_response k=4 eps={_eps:g}"] = "randomized_response"
    BROKEN[f"randomized_response at twice the claimed epsilon, eps={_eps:g}"] = (_rr_run(_eps, 2 * _eps), "mechanism")
# the public start alone declares epsilon = 0 for both units: its output may not depend on any point
CORRECT["PublicStart (declares 0)"] = _kmeans_run(lambda eps: PublicStart(2, _KM_BOUNDS, d=1), 0.0)
COVERS["PublicStart (declares 0)"] = "PublicStart"


def _uniform_start_run(bounds: tuple[float, float]) -> Run:
    """No public start in the data, so it draws a uniform start in ``bounds`` (from ``rng`` only): each unit's
    user added, removed or moved between the bounds must change nothing."""
    lo, hi = bounds

    def run(seed):
        mech, out = PublicStart(3, bounds, d=1), {}
        for i, (unit, g) in enumerate(mech.privacy.items()):
            pts = ([lo], [lo, hi] if g.relation == "add-remove" else [hi])
            pair = tuple(PointCloud(np.array(p)[:, None], np.full(len(p), unit == "tcm"), bounds, None) for p in pts)
            out[unit] = audit(lambda d, rng, size: mech.release(d, rng, size), pair, g.epsilon, g.delta,
                              samples=SAMPLES, confidence=CONFIDENCE, seed=np.random.SeedSequence([seed, i]),
                              statistic=lambda o: o[:, 0, 0])
        return out

    return run


def _not_read_run(bounds: tuple[float, float], make: Callable[..., Mechanism] = TCMKMeans) -> Run:
    """TCM K-means never reads the LM users, so the selection and the release count its promise to them as
    ``NOT_READ`` (epsilon 0): an LM user added beside two TCM users (add-remove) or moved between the bounds
    (replace) must leave its release unchanged in law."""
    from ...core.privacy import NOT_READ

    lo, hi = bounds

    def run(seed):
        mech = make(2, 1.0, 1, bounds, d=1)
        out = {}
        for i, relation in enumerate(("add-remove", "replace")):
            tcm = [lo, hi]
            other = ([], [hi]) if relation == "add-remove" else ([lo], [hi])
            pair = tuple(PointCloud(np.array(tcm + p)[:, None], np.arange(2 + len(p)) < 2, bounds,
                                    [[lo + 0.25 * (hi - lo)], [lo + 0.75 * (hi - lo)]]) for p in other)
            out[f"lm ({relation})"] = audit(lambda d, rng, size: mech.release(d, rng, size), pair, NOT_READ.epsilon,
                                            NOT_READ.delta, samples=SAMPLES, confidence=CONFIDENCE,
                                            seed=np.random.SeedSequence([seed, i]), statistic=lambda o: o[:, 0, 0])
        return out

    return run


for _bounds in ((0.0, 1.0), (2.0, 3.0)):  # and bounds that exclude 0
    CORRECT[f"PublicStart uniform, k=3, bounds {_bounds} (declares 0)"] = _uniform_start_run(_bounds)
    COVERS[f"PublicStart uniform, k=3, bounds {_bounds} (declares 0)"] = "PublicStart"
    CORRECT[f"TCMKMeans never reads the LM users, bounds {_bounds}"] = _not_read_run(_bounds)
    COVERS[f"TCMKMeans never reads the LM users, bounds {_bounds}"] = "TCMKMeans"
# the same audit catches a candidate that does read them (HybridKMeans), taken as if it did not
BROKEN["HybridKMeans taken as never reading the LM users, bounds (2, 3)"] = (
    _not_read_run((2.0, 3.0), HybridKMeans), "lm (add-remove)")


class _LeakyStart(PublicStart):
    """Declares 0 but moves its second centre to the last point's cluster mean (broken: reads the data)."""

    def release(self, data, rng, trials=1):
        out = super().release(data, rng, trials)
        out[:, 1, 0] = data.points[-1, 0] * 0.5 + 0.5 * out[:, 1, 0]
        return out


BROKEN["PublicStart that reads the last point, declaring 0"] = (
    _kmeans_run(lambda eps: _LeakyStart(2, _KM_BOUNDS, d=1), 0.0), "tcm")
for _unit in ("tcm", "lm"):
    BROKEN[f"HybridKMeans released at twice the declared epsilon, {_unit} users, eps=1"] = (
        _kmeans_run(_KMEANS_CASES["HybridKMeans"], 1.0, released_at=2.0), _unit)



def _cells_probe_run(epsilon: float, share: float, released_share: float | None = None,
                     box: tuple[float, float] = _KM_BOUNDS) -> Run:
    """The K-means two-stage plan's probe (:class:`~hybridpriv.families.kmeans.plan.CellCountsProbe`), each unit at
    the promise it declares: a TCM user added in cell 1 beside one in cell 0 (add/remove-one; statistic: the noisy
    count of cell 1), the only LM user moved from cell 0 to cell 1 (replace-one; statistic: the debiased count of
    cell 1, a function of the one report), in the one-dimensional ``box`` (centres at its quarters, users at its
    ends).  ``released_share``: release at that share (broken)."""
    from ...families.kmeans.plan import CellCountsProbe

    lo, hi = box
    centres = np.array([[lo + 0.25 * (hi - lo)], [lo + 0.75 * (hi - lo)]])
    declared = CellCountsProbe(centres, 1, 1, epsilon, share)

    def run(seed):
        out = {}
        for i, (unit, g) in enumerate(declared.privacy.items()):
            if unit == "tcm":
                pts = ([[lo], [hi]], [[lo], [hi], [hi]])
                masks = ([True, False], [True, False, True])
                n_tcm = (1, 2)
            else:
                pts, masks, n_tcm = ([[lo], [lo]], [[lo], [hi]]), ([True, False], [True, False]), (1, 1)
            pair = tuple(PointCloud(np.array(p), np.array(m), box) for p, m in zip(pts, masks))
            mechs = [CellCountsProbe(centres, t, 1, epsilon, released_share or share) for t in n_tcm]
            col = 1 if unit == "tcm" else 3
            out[unit] = audit(lambda d, rng, size: mechs[int(d.trusted.sum()) - 1].release(d, rng, size)[:, col],
                              pair, g.epsilon, g.delta, samples=SAMPLES, confidence=CONFIDENCE,
                              seed=np.random.SeedSequence([seed, i]))
        return out

    return run


for _eps, _share in ((1.0, 0.5), (4.0, 0.25)):
    for _box in ((0.0, 1.0), (10.0, 20.0)):  # the cells do not read the box, but a box without 0 must not matter
        _case = f"CellCountsProbe eps={_eps:g} share={_share:g} box=[{_box[0]:g}, {_box[1]:g}]"
        CORRECT[_case] = _cells_probe_run(_eps, _share, box=_box)
        COVERS[_case] = "CellCountsProbe"
BROKEN["CellCountsProbe at twice its share, eps=4"] = (_cells_probe_run(4.0, 0.25, released_share=0.5), "tcm")


def _cells_round_run(epsilon: float, share: float, released_share: float | None = None,
                     box: tuple[float, float] = _KM_BOUNDS) -> Run:
    """The probe as ``release --plan`` carries it out: its one round
    (:class:`~hybridpriv.families.kmeans.plan_rounds.CellCountsRounds`), whose TCM counts the curator computes from
    the raw points (add/remove-one: a TCM user added in cell 1 beside one in cell 0; statistic: the noisy count of
    cell 1), in the one-dimensional ``box``.  The LM users' cells are randomized on their devices by OpenDP's
    randomized response, whose privacy map each device checks against the epsilon it spends (``device._rr``); the
    round only debiases their counts.  ``released_share``: the round computed at that share (broken)."""
    from types import SimpleNamespace

    from ...families.kmeans.plan import CellCountsProbe
    from ...families.kmeans.plan_rounds import CellCountsRounds

    lo, hi = box
    centres = np.array([[lo + 0.25 * (hi - lo)], [lo + 0.75 * (hi - lo)]])
    declared = CellCountsProbe(centres, 1, 1, epsilon, share).privacy["tcm"]
    spec = SimpleNamespace(values=SimpleNamespace(bounds=box))
    rounds = [CellCountsRounds(CellCountsProbe(centres, t, 1, epsilon, released_share or share), spec) for t in (1, 2)]
    lm = {"lm": np.array([0])}  # the LM user's (randomized) cell, the same on both datasets

    def release(points, rng, size):
        proto = rounds[len(points) - 1]
        state = proto.begin(rng)
        return np.array([proto.result(proto.step(state, {"points": points}, lm, rng))[1] for _ in range(size)])

    pair = (np.array([[lo]]), np.array([[lo], [hi]]))  # the TCM points: one in cell 0, then one added in cell 1
    return lambda seed: {"tcm": audit(release, pair, declared.epsilon, declared.delta, samples=SAMPLES,
                                      confidence=CONFIDENCE, seed=seed)}


for _box in ((0.0, 1.0), (10.0, 20.0)):
    _case = f"CellCountsRounds (the probe as released) eps=4 share=0.25 box=[{_box[0]:g}, {_box[1]:g}]"
    CORRECT[_case] = _cells_round_run(4.0, 0.25, box=_box)
    COVERS[_case] = "CellCountsProbe"
BROKEN["CellCountsRounds at twice its share, eps=4"] = (_cells_round_run(4.0, 0.25, released_share=0.5), "tcm")
