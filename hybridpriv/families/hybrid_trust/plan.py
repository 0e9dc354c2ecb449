"""The hybrid-trust family's two-stage plan (:mod:`hybridpriv.engine.plan`): the users who trust the curator spend a
share of their epsilon on a Laplace release of their group's mean (the grouped kind's
:class:`~hybridpriv.families.grouped.plan.GroupMeansProbe`, read from a release's TCM values by
:class:`TCMMeanProbe`), then the estimator is chosen at the rest.

The LM users are not probed: their values never reach the curator, and a share of their budget would need a second
report from every device.  So the probe is what the curator can release from the TCM records alone, and ``release``
carries the plan out on one ledger; the second stage weighs the plan's own simulated datasets by the released mean
(:func:`~hybridpriv.engine.plan.choose_later`).  The budget-spending selector of the calibration study
(:func:`~hybridpriv.families.hybrid_trust.heldout.pythia_hybrid_trust`) spends on both groups' means and refits."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..grouped.plan import GroupMeansProbe, probed

__all__ = ["TCMMeanProbe", "hybrid_trust_probe"]


class TCMMeanProbe(GroupMeansProbe):
    """:class:`~hybridpriv.families.grouped.plan.GroupMeansProbe` of the TCM group (the LM group, local, is never
    read), on the model's datasets (one array per group) or a release's data (TCM values and LM reports: the TCM
    values are read)."""

    label = "probe:tcm-mean"

    def exact(self, data: Any) -> np.ndarray:
        if hasattr(data, "lm_reports"):  # a release: the TCM values beside the LM devices' reports (not read)
            data = (np.asarray(data.tcm, dtype=float), np.zeros(0))
        return super().exact(data)


def hybrid_trust_probe(v: Any, share: float, candidates: Any) -> Any:
    """The probe of SPEC values ``v`` (:class:`hybridpriv.engine.plan.Probe`), or ``None`` when the TCM group cannot be
    probed (Gaussian noise: not pure DP).  ``candidates(values, posterior)``: the family's candidates; the second
    stage's are those with the TCM group at ``(1 - share) x epsilon``, by the same labels."""
    from ...engine.plan import groups_probe
    from .spec import _groups

    groups = _groups(v)
    if not probed(groups):
        return None

    def for_groups(rest: Any, posterior: Any) -> dict[Any, Any]:
        return candidates(v.replace(tcm=v.tcm.replace(epsilon=rest[0].epsilon)), posterior)

    return groups_probe(TCMMeanProbe(groups, (0.0, v.m), v.relation, share), groups, share, for_groups, "the mean")
