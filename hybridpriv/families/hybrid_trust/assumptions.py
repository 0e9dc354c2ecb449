"""What the hybrid-trust family's model assumes about the two groups, and how to break it.

The model (:class:`~hybridpriv.families.hybrid_trust.model.HybridTrustModel`) learns the gap between the
TCM and the LM group's means from their pilot records (and earlier releases): with 10-40 pilots a group,
a gap of a few percent of the range is within their noise, and the pilots may not be a random sample of
their group at all.  One departure: the LM group's records shifted by ``delta`` against the TCM group's
(clipped into ``[0, m]``), beyond every gap the posterior holds.
"""

from __future__ import annotations

from ...core.assumptions import Assumption
from ...core.privacy import Bounds
from ..grouped.assumptions import ShiftGroups

__all__ = ["hybrid_trust_assumptions"]


def hybrid_trust_assumptions(m: float) -> list[Assumption]:
    """The departures a hybrid-trust SPEC's decision is checked against (records in ``[0, m]``)."""
    return [Assumption("gap", "the groups' mean gap is what the pilots say",
                       "an extra shift of the LM group's mean against the TCM group's", float(m),
                       ShiftGroups([0.0, 1.0], Bounds(0.0, float(m))))]
