"""The grouped family's private data: one CSV per group, ``DIR/<group name>.csv``.

The first column holds the records (numbers), other columns are ignored, and the first row may be a
header (a first cell that is not a number).  A public group whose records the SPEC already gives
needs no file.  Checked: every private group has its file, no file names an unknown group, no empty
cell or NaN, every value inside the SPEC's bounds (or clipped into them if the SPEC says
``clamp = true``), and each group's number of records equal to its declared (public) size.  Refusals
name the group, the file, the row and the rule, never a value or a count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...release.data import PrivateDataError, group_files, read_column

__all__ = ["load_grouped"]


def load_grouped(directory: str | Path, spec: Any) -> list[np.ndarray]:
    """The records of every group of a ``grouped`` SPEC, in group order (see the module docstring)."""
    groups, bounds, clamp = spec.groups, spec.bounds, spec.clamp
    files = group_files(directory, groups, spec.public_data)
    out = []
    for g in groups:
        path = files[g.name]
        x = read_column(path, f"group {g.name!r}") if path is not None else np.asarray(spec.public_data[g.name], dtype=float)
        where = path.name if path is not None else "the SPEC's data"
        if x.size != g.size:
            raise PrivateDataError(f"group {g.name!r}: {where} does not hold the SPEC's size = {g.size} records "
                                   "(rule: group sizes are public, the file must match)")
        outside = (x < bounds.lower) | (x > bounds.upper)
        if outside.any():
            if not clamp:
                row = int(np.flatnonzero(outside)[0]) + 1
                raise PrivateDataError(
                    f"group {g.name!r}: data row {row} of {where} (the first such) lies outside the bounds "
                    f"[{bounds.lower:g}, {bounds.upper:g}] (rule: records lie in the SPEC's bounds; set "
                    "clamp = true to clip them)")
            x = bounds.clamp(x)
        out.append(x)
    return out
