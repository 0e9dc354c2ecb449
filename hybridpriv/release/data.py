"""Private data for a release: shared readers and the refusal every loader raises.

Each family loads its own files (:meth:`hybridpriv.core.family.Family.load_private`: e.g.
``hybridpriv.families.grouped.release``, ``hybridpriv.families.user_item.release``) with the readers
here, and every refusal is a :class:`PrivateDataError` (a ``ValueError``) naming the unit (group,
item), the file, the row and the rule it breaks, **never a private value or a private count**: not the
offending record, not how many records or users a file holds, not an item's count, not a user's
label (a refusal is published to whoever runs the command, and it is charged nothing).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

__all__ = ["PrivateDataError", "is_number", "read_column", "read_rows"]


class PrivateDataError(ValueError):
    """The private data do not match what the SPEC declared."""


def read_rows(path: Path) -> list[list[str]]:
    """The non-blank rows of a private CSV file (refused, naming the file, if it is not text)."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return [row for row in csv.reader(f) if row and any(c.strip() for c in row)]
    except UnicodeDecodeError:
        raise PrivateDataError(f"{path} is not a text (CSV) file") from None


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_column(path: Path, what: str) -> np.ndarray:
    """The first column of a private CSV file as floats (a header row skipped); ``what`` names the unit in
    refusals, which name the row and the rule, never the cell."""
    rows = read_rows(path)
    if rows and not is_number(rows[0][0].strip()) and rows[0][0].strip().lower() not in ("nan", "inf", "-inf"):
        rows = rows[1:]  # header
    values = []
    for line, row in enumerate(rows, start=1):
        cell = row[0].strip()
        if cell == "":
            raise PrivateDataError(f"{what}: data row {line} of {path}: the first cell is empty (rule: every record "
                                   "is a number)")
        try:
            x = float(cell)
        except ValueError:
            raise PrivateDataError(f"{what}: data row {line} of {path}: the first cell is not a number (rule: every "
                                   "record is a number)") from None
        if math.isnan(x):
            raise PrivateDataError(f"{what}: data row {line} of {path}: the first cell is NaN (rule: no missing "
                                   "records)")
        values.append(x)
    return np.asarray(values, dtype=float)
