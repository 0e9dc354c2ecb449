"""What the histogram family's model assumes about the private groups' categories, and how to break it.

The model (:class:`~hybridpriv.families.histogram.model.HistogramModel`) draws every group's records from one
set of category shares, learned from the public groups: the private groups answer like the panel and like
each other.  That fails when privacy preferences go with the answers.  Two departures, each a *tilt* of
whole groups: a share ``|delta| * weight`` of the group's records moved from its last category to its first
(``delta > 0``) or back (``delta < 0``), as far as the group has records there:

* ``panel``: every private group tilted by ``delta`` against the public groups;
* ``between``: the strictest private group (smallest epsilon) tilted by ``+delta/2``, the loosest by
  ``-delta/2``, the others in between.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...core.assumptions import Assumption
from ...core.params import Parametrized
from ...core.privacy import Group
from .data import CategoryCounts

__all__ = ["TiltGroups", "histogram_assumptions"]


class TiltGroups(Parametrized):
    """``data -> data``: group ``g`` moves ``round(|delta weights[g]| n_g)`` records between its last and first
    category (to the first for a positive product, to the last for a negative one), at most what it holds there."""

    def __init__(self, weights: Sequence[float]) -> None:
        self.weights = tuple(float(w) for w in weights)

    def __call__(self, data: CategoryCounts, delta: float) -> CategoryCounts:
        if not isinstance(data, CategoryCounts) or data.counts.shape[0] != len(self.weights):
            raise ValueError(f"data must be CategoryCounts of {len(self.weights)} groups")
        counts = data.counts.copy()
        for g, w in enumerate(self.weights):
            tilt = delta * w
            if tilt == 0:
                continue
            src, dst = (-1, 0) if tilt > 0 else (0, -1)
            moved = min(int(round(abs(tilt) * counts[g].sum())), int(counts[g, src]))
            counts[g, src] -= moved
            counts[g, dst] += moved
        return CategoryCounts(counts)


def histogram_assumptions(groups: Sequence[Group]) -> list[Assumption]:
    """The departures a histogram SPEC's decision is checked against (shares: scale 1)."""
    private = [k for k, g in enumerate(groups) if not g.is_public]
    out = []
    if private and len(private) < len(groups):
        out.append(Assumption("panel", "the private groups answer like the public groups",
                              "the share of each private group's records moved from its last category to its first",
                              1.0, TiltGroups([0.0 if g.is_public else 1.0 for g in groups])))
    if len(private) >= 2:
        order = sorted(private, key=lambda k: (groups[k].epsilon, k))  # strictest first
        weights = [0.0] * len(groups)
        for k, w in zip(order, np.linspace(0.5, -0.5, len(order))):
            weights[k] = float(w)
        strict, loose = groups[order[0]].name, groups[order[-1]].name
        out.append(Assumption("between", "the private groups answer alike",
                              f"the share of records the strictest group ({strict}) moves to the first category, "
                              f"minus the loosest's ({loose})", 1.0, TiltGroups(weights)))
    return out
