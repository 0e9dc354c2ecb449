"""The hybrid-trust family's private data: the TCM users' values and the LM users' reports.

* ``DIR/<tcm name>.csv``: the TCM users' values, first column (a header row may come first); every
  value inside ``[0, m]`` and as many as the TCM group's (public) size.
* ``DIR/<lm name>-reports.csv``: one report line per LM user, as the device randomiser writes it
  (:mod:`hybridpriv.families.hybrid_trust.randomize`): ``report,epsilon,delta,noise,lower,upper``.
  Every line must have been drawn with the SPEC's LM epsilon, delta, noise and bounds ``[0, m]``, and
  there must be as many as the LM group's size.  The curator never sees an LM user's value.

Refusals name the group, the file, the row and the rule, never a value or a count.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ...release.data import PrivateDataError, data_file, read_column, read_rows
from .data import HybridReports

__all__ = ["load_hybrid_trust"]


def _groups(spec: Any):
    from .spec import _groups as groups

    return groups(spec.values)


def load_hybrid_trust(directory: str | Path, spec: Any) -> HybridReports:
    """The TCM values and LM reports of a ``hybrid-trust`` SPEC (see the module docstring)."""
    tcm, lm = _groups(spec)
    m = float(spec.m)
    path = data_file(directory, f"{tcm.name}.csv", f"group {tcm.name!r}: the TCM users' values")
    x = read_column(path, f"group {tcm.name!r}")
    if x.size != tcm.size:
        raise PrivateDataError(f"group {tcm.name!r}: {path.name} does not hold the SPEC's size = {tcm.size} values "
                               "(rule: group sizes are public, the file must match)")
    outside = np.flatnonzero((x < 0) | (x > m))
    if outside.size:
        raise PrivateDataError(f"group {tcm.name!r}: data row {int(outside[0]) + 1} of {path.name} (the first such) lies "
                               f"outside [0, {m:g}] (rule: records lie in [0, m])")
    rpath = data_file(directory, f"{lm.name}-reports.csv", f"group {lm.name!r}: the LM users' reports, from their devices")
    rows = read_rows(rpath)
    if rows and rows[0][0].strip() == "report":
        rows = rows[1:]
    want = (float(lm.epsilon), float(lm.delta), spec.noise, 0.0, m)
    reports = []
    for line, row in enumerate(rows, start=1):
        try:
            value = float(row[0])
            used = (float(row[1]), float(row[2]), row[3].strip(), float(row[4]), float(row[5]))
        except (IndexError, ValueError):
            raise PrivateDataError(f"group {lm.name!r}: data row {line} of {rpath.name} is not a report line "
                                   "(rule: report,epsilon,delta,noise,lower,upper)") from None
        if not math.isfinite(value):
            raise PrivateDataError(f"group {lm.name!r}: data row {line} of {rpath.name}: the report is not a finite number")
        if not (math.isclose(used[0], want[0]) and math.isclose(used[1], want[1]) and used[2] == want[2]
                and math.isclose(used[3], want[3], abs_tol=1e-12) and math.isclose(used[4], want[4])):
            raise PrivateDataError(f"group {lm.name!r}: data row {line} of {rpath.name} was randomised with other "
                                   f"parameters than the SPEC's (epsilon {want[0]:g}, delta {want[1]:g}, {want[2]} noise, "
                                   f"bounds [0, {m:g}]) (rule: the LM group's promise is what its devices drew)")
        reports.append(value)
    if len(reports) != lm.size:
        raise PrivateDataError(f"group {lm.name!r}: {rpath.name} does not hold the SPEC's size = {lm.size} reports "
                               "(rule: group sizes are public, the file must match)")
    return HybridReports(x, np.asarray(reports))
