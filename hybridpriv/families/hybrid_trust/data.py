"""What a hybrid-trust release reads: the TCM users' values and the LM users' already-randomised reports.

The curator holds the raw values of the users who trust it (TCM) and only the *reports* of the users who
randomise on their own device (LM): each report is ``x_i + Y_i``, drawn by the device with
:func:`hybridpriv.families.hybrid_trust.randomize.local_report` at the LM group's epsilon.  The
estimators (:mod:`hybridpriv.families.hybrid_trust.mechanisms`) release from a :class:`HybridReports` without adding
noise to the reports again (their LM part is the mean of the reports, post-processing), while in
simulation they draw the local noise themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

__all__ = ["HybridReports"]


@dataclass(frozen=True)
class HybridReports:
    """``tcm``: the TCM users' values (in the bounds); ``lm_reports``: the LM users' local reports (finite)."""

    tcm: np.ndarray
    lm_reports: np.ndarray
    data_kind: ClassVar[str] = "grouped"

    def __post_init__(self) -> None:
        for name in ("tcm", "lm_reports"):
            arr = np.array(getattr(self, name), dtype=float)
            if arr.ndim != 1 or not np.isfinite(arr).all():
                raise ValueError(f"{name} must be a 1-D array of finite numbers, got shape {arr.shape}")
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
