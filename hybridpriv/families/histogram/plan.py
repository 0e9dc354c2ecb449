"""The histogram family's two-stage plan (:mod:`hybridpriv.engine.plan`): each private group spends a share of its
epsilon on a Laplace histogram of its counts (:class:`GroupCountsProbe`), then the mechanism is chosen at the rest.

The features are the budget-spending selector's (:func:`hybridpriv.families.histogram.heldout.pythia_histogram`):
the same counts, the same noise.  The selector re-fits the model given them; the plan instead judges, before any
budget is spent, whether choosing after them would pay, and then chooses by the plan's importance weights."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ...core.mechanism import Mechanism
from ...core.privacy import Group, Guarantee, check_groups
from .mechanisms import sensitivity

__all__ = ["GroupCountsProbe", "histogram_probe"]


class GroupCountsProbe(Mechanism):
    """The first stage of a histogram two-stage plan: every private group's counts per category, plus Laplace noise
    of scale ``Delta / (share x epsilon_g)`` per count (``Delta`` the counts' L1 sensitivity under ``relation``: 1
    for a record added or removed, 2 for one replaced): ``share x epsilon_g``-DP for group ``g``; the public groups
    are not read.

    ``release`` returns ``(trials, private groups x categories)``, group by group; :meth:`exact` the noiseless
    counts."""

    data_kind: ClassVar[str] = "category-counts"
    label = "probe:group-counts"

    def __init__(self, groups: Sequence[Group], categories: Sequence[str], relation: str = "add-remove",
                 share: float = 0.1) -> None:
        self.groups = check_groups(groups)
        self.categories = tuple(str(c) for c in categories)
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
            raise ValueError(f"share must be in (0, 1), got {share!r}")
        self.share, self.relation = float(share), relation
        self._delta = sensitivity(relation)
        self.which = [k for k, g in enumerate(self.groups) if math.isfinite(g.epsilon)]
        if not self.which:
            raise ValueError("no group can be probed: none is private")
        self.group_scales = np.array([self._delta / (self.share * self.groups[k].epsilon) for k in self.which])
        self.scales = np.repeat(self.group_scales, len(self.categories))

    @property
    def privacy(self) -> dict[str, Guarantee]:
        out = {g.name: Guarantee(0.0, 0.0, self.relation) for g in self.groups}
        for k in self.which:
            out[self.groups[k].name] = Guarantee(self.share * self.groups[k].epsilon, 0.0, self.relation)
        return out

    @property
    def privacy_events(self) -> dict[str, Any]:
        from ...core import events

        out = {g.name: events.epsilon_delta(0.0, 0.0) for g in self.groups}
        for j, k in enumerate(self.which):
            out[self.groups[k].name] = events.laplace(float(self.group_scales[j]), self._delta)
        return out

    def exact(self, data: Any) -> np.ndarray:
        """The private groups' counts, noiseless, group by group."""
        counts = np.asarray(data.counts if hasattr(data, "counts") else data, dtype=float)
        if counts.shape != (len(self.groups), len(self.categories)):
            raise ValueError(f"data must hold ({len(self.groups)} groups, {len(self.categories)} categories) "
                             f"counts, got shape {counts.shape}")
        return counts[self.which].ravel()

    def release(self, data: Any, rng: np.random.Generator, trials: int = 1) -> np.ndarray:
        from ...core.validation import check_rng, check_trials
        from ...noise import laplace

        trials = check_trials(trials)
        return laplace(np.broadcast_to(self.exact(data), (trials, self.scales.size)).copy(), self.scales,
                       check_rng(rng))


def histogram_probe(v: Any, share: float, candidates: Any) -> Any:
    """The probe of SPEC values ``v`` (:class:`hybridpriv.engine.plan.Probe`).  ``candidates(groups, posterior)``:
    the family's candidates for ``groups``; the second stage's are those at ``(1 - share) x epsilon`` of every
    private group, by the same labels."""
    from ...engine.plan import groups_probe

    return groups_probe(GroupCountsProbe(v.groups, v.categories, v.relation, share), v.groups, share, candidates,
                        "the counts")
