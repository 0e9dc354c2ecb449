"""What the grouped family's model assumes about the private groups, and how to break it.

The model of public knowledge (:class:`~hybridpriv.families.grouped.model.GroupedDataModel`) draws every
group's records from one law: the private groups look like the public panel, and like each other.  That
holds when people were put in groups at random; it fails when privacy preferences go with the values (a
wage survey's strict group earning more).  Two departures, each a location shift of whole groups (records
clipped into the bounds):

* ``panel``: every private group shifted by ``delta`` against the public groups;
* ``between``: the private groups spread over ``delta``, the strictest (smallest epsilon) ``+delta/2``, the
  loosest ``-delta/2``, the others in between.
"""

from __future__ import annotations

from collections.abc import Sequence
import numpy as np

from ...core.assumptions import Assumption
from ...core.params import Parametrized
from ...core.privacy import Bounds, Group
from .data import GroupedDataset

__all__ = ["ShiftGroups", "grouped_assumptions"]


class ShiftGroups(Parametrized):
    """``data -> data``: group ``g``'s records shifted by ``delta * weights[g]``, clipped into ``bounds``.

    The population mean moves by the pooled records' mean shift (clipping included); other population
    values (the median) are dropped, since a shift does not tell them."""

    def __init__(self, weights: Sequence[float], bounds: Bounds | tuple[float, float]) -> None:
        self.weights = tuple(float(w) for w in weights)
        self.bounds = Bounds.from_pair(bounds)

    def __call__(self, data: GroupedDataset, delta: float) -> GroupedDataset:
        if not isinstance(data, GroupedDataset) or len(data.values) != len(self.weights):
            raise ValueError(f"data must be a GroupedDataset of {len(self.weights)} groups")
        lo, hi = self.bounds.lower, self.bounds.upper
        values = tuple(np.clip(v + delta * w, lo, hi) if w else v for v, w in zip(data.values, self.weights))
        population = {}
        if "mean" in data.population:
            old, new = np.concatenate(data.values), np.concatenate(values)
            population["mean"] = float(data.population["mean"]) + float(new.mean() - old.mean())
        return GroupedDataset(values, population)


def grouped_assumptions(groups: Sequence[Group], bounds: Bounds, statistic: str, target: str) -> list[Assumption]:
    """The departures a grouped SPEC's decision is checked against (none for a median scored against the
    population median, which a shift does not tell)."""
    if statistic != "mean" and target == "population":
        return []
    private = [k for k, g in enumerate(groups) if not g.is_public]
    out = []
    if len(private) < len(groups):
        weights = [0.0 if g.is_public else 1.0 for g in groups]
        out.append(Assumption("panel", "the private groups' records follow the public groups' law",
                              "the private groups' mean minus the public groups'", bounds.width,
                              ShiftGroups(weights, bounds)))
    if len(private) >= 2:
        order = sorted(private, key=lambda k: (groups[k].epsilon, k))  # strictest first
        spread = np.linspace(0.5, -0.5, len(order))
        weights = [0.0] * len(groups)
        for k, w in zip(order, spread):
            weights[k] = float(w)
        strict, loose = groups[order[0]].name, groups[order[-1]].name
        out.append(Assumption("between", "the private groups share one law",
                              f"the strictest group's mean ({strict}) minus the loosest's ({loose})", bounds.width,
                              ShiftGroups(weights, bounds)))
    return out
