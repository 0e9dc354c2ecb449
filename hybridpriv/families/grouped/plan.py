"""The grouped family's two-stage plan (:mod:`hybridpriv.engine.plan`): each private group that trusts the curator
spends a share of its epsilon on a Laplace release of its mean (:class:`GroupMeansProbe`), then the estimator is
chosen at the rest."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ...core.mechanism import Mechanism
from ...core.privacy import Bounds, Group, Guarantee, check_groups

__all__ = ["GroupMeansProbe", "grouped_probe", "probed"]


def probed(groups: Sequence[Group]) -> list[int]:
    """The groups a probe releases the mean of: private, pure DP (``delta = 0``), trusting the curator (a local
    group's records never reach it)."""
    return [i for i, g in enumerate(groups) if math.isfinite(g.epsilon) and g.delta == 0 and g.trust == "central"]


class GroupMeansProbe(Mechanism):
    """The first stage of a grouped two-stage plan: each probed group's mean (:func:`probed`), ``sum(clamped
    records) / size`` (its size is public), plus Laplace noise of scale ``sum_sensitivity(relation) / (size x share
    x epsilon)``: ``share x epsilon``-DP for the group under ``relation``; the other groups are not read.

    ``release`` returns ``(trials, probed groups)``; :meth:`exact` the noiseless features."""

    data_kind: ClassVar[str] = "grouped"
    label = "probe:group-means"

    def __init__(self, groups: Sequence[Group], bounds: Bounds | tuple[float, float], relation: str = "add-remove",
                 share: float = 0.1) -> None:
        self.groups = check_groups(groups)
        self.bounds = Bounds.from_pair(bounds)
        self.relation = relation
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
            raise ValueError(f"share must be in (0, 1), got {share!r}")
        self.share = float(share)
        self.which = probed(self.groups)
        if not self.which:
            raise ValueError("no group can be probed: none is private, pure DP and trusting the curator")
        self.sensitivities = np.array([self.bounds.sum_sensitivity(relation) / self.groups[i].size for i in self.which])
        self.scales = np.array([s / (self.share * self.groups[i].epsilon) for s, i in zip(self.sensitivities,
                                                                                            self.which)])

    @property
    def privacy(self) -> dict[str, Guarantee]:
        out = {g.name: Guarantee(0.0, 0.0, self.relation, g.trust) for g in self.groups}
        for i in self.which:
            g = self.groups[i]
            out[g.name] = Guarantee(self.share * g.epsilon, 0.0, self.relation, g.trust)
        return out

    @property
    def privacy_events(self) -> dict[str, Any]:
        from ...core import events

        out = {g.name: events.epsilon_delta(0.0, 0.0) for g in self.groups}
        for j, i in enumerate(self.which):
            out[self.groups[i].name] = events.laplace(float(self.scales[j]), float(self.sensitivities[j]))
        return out

    def exact(self, data: Any) -> np.ndarray:
        """The probed groups' clamped means, noiseless."""
        values = data.values if hasattr(data, "values") else data
        return np.array([np.sum(self.bounds.clamp(np.asarray(values[i], dtype=float))) / self.groups[i].size
                         for i in self.which])

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        from ...core.validation import check_rng, check_trials
        from ...noise import laplace

        trials = check_trials(trials)
        return laplace(np.broadcast_to(self.exact(data), (trials, len(self.which))).copy(), self.scales,
                       check_rng(rng))


def grouped_probe(v: Any, share: float, candidates: Any) -> Any:
    """The probe of SPEC values ``v`` (:class:`hybridpriv.engine.plan.Probe`), or ``None`` when no group can be
    probed.  ``candidates(groups, posterior)``: the family's candidates for ``groups``; the second stage's are
    those at ``(1 - share) x epsilon`` of every probed group, by the same labels."""
    from ...engine.plan import groups_probe

    if not probed(v.groups):
        return None
    return groups_probe(GroupMeansProbe(v.groups, v.bounds, v.relation, share), v.groups, share, candidates, "the mean")
