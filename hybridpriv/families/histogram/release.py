"""The histogram family's private data: one CSV per private group, ``DIR/<group name>.csv``.

The first column holds each record's category name (other columns are ignored; a first row that is
not a category is a header).  A public group's records come from the SPEC.  Checked: every private
group has its file, no file names an unknown group, every record is one of the SPEC's categories, and
each group's number of records equals its declared (public) size.  Refusals name the group, the file,
the row and the rule, never a record or a count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...release.data import PrivateDataError, group_files, read_rows
from .data import CategoryCounts

__all__ = ["load_histogram"]


def load_histogram(directory: str | Path, spec: Any) -> CategoryCounts:
    """The counts per (group, category) of a ``histogram`` SPEC's private data (see the module docstring)."""
    files = group_files(directory, spec.groups, spec.public_counts)
    index = {c: j for j, c in enumerate(spec.categories)}
    rows = []
    for g in spec.groups:
        path = files[g.name]
        if path is None:
            rows.append(np.asarray(spec.public_counts[g.name], dtype=np.int64))
            continue
        cells = [r[0].strip() for r in read_rows(path)]
        if cells and cells[0] not in index:
            cells = cells[1:]  # a header
        for line, cell in enumerate(cells, start=1):
            if cell not in index:
                raise PrivateDataError(f"group {g.name!r}: data row {line} of {path.name} is not one of the SPEC's "
                                       "categories (rule: every record is a public category)")
        if len(cells) != g.size:
            raise PrivateDataError(f"group {g.name!r}: {path.name} does not hold the SPEC's size = {g.size} records "
                                   "(rule: group sizes are public, the file must match)")
        rows.append(np.bincount([index[c] for c in cells], minlength=len(index)).astype(np.int64))
    return CategoryCounts(np.stack(rows))
