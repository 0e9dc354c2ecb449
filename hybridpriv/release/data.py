"""Private data for a release: shared readers and the refusal every loader raises.

Each family loads its own files (:meth:`hybridpriv.core.family.Family.load_private`: e.g.
``hybridpriv.families.grouped.release``, ``hybridpriv.families.user_item.release``) with the readers
here, and every refusal is a :class:`PrivateDataError` (a ``ValueError``) naming the unit (group,
item), the file, the row and the rule it breaks, **never a private value or a private count**: not the
offending record, not how many records or users a file holds, not an item's count, not a user's
label (a refusal is published to whoever runs the command, and it is charged nothing).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..core import io

__all__ = ["PrivateDataError", "data_file", "group_files", "is_number", "read_column", "read_rows"]


class PrivateDataError(ValueError):
    """The private data do not match what the SPEC declared."""


def data_file(directory: str | Path, name: str, what: str) -> Path:
    """``DIR/name`` of a release, refused (naming it and ``what`` it should hold) unless the folder and the file exist."""
    d = Path(directory)
    if not d.is_dir():
        raise PrivateDataError(f"--data must be a folder, got {str(d)!r}")
    path = d / name
    if not path.is_file():
        raise PrivateDataError(f"no file {path} ({what})")
    return path


def group_files(directory: str | Path, groups: Any, given: Any = ()) -> dict[str, Path | None]:
    """One CSV per group, ``DIR/<group name>.csv``: ``{group name: path}``, ``None`` for a group in ``given`` (its
    records are in the SPEC).  Refused: a CSV of no group, a group without its file."""
    d = Path(directory)
    if not d.is_dir():
        raise PrivateDataError(f"--data must be a folder, got {str(d)!r}")
    names = {g.name for g in groups}
    unknown = sorted(p.stem for p in d.glob("*.csv") if p.stem not in names)
    if unknown:
        raise PrivateDataError(f"{d} holds {unknown[0]}.csv, but the SPEC has no group {unknown[0]!r} "
                               f"(groups: {sorted(names)})")
    out: dict[str, Path | None] = {}
    for g in groups:
        path = d / f"{g.name}.csv"
        if path.is_file():
            out[g.name] = path
        elif g.name in given:
            out[g.name] = None
        else:
            raise PrivateDataError(f"group {g.name!r}: no file {path} (one CSV per private group)")
    return out


def read_rows(path: Path) -> list[list[str]]:
    """The non-blank rows of a private CSV file (refused, naming the file, if it is not text)."""
    if not Path(path).is_file():
        raise PrivateDataError(f"no file {path}")
    return io.read_rows(path, "the private data", PrivateDataError)


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
