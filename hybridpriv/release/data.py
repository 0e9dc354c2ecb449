"""Private data for a release: files in a folder, validated against what the SPEC declared public.

``grouped``: one CSV per group, ``DIR/<group name>.csv``; the first column holds the records (numbers),
other columns are ignored, and the first row may be a header (a first cell that is not a number).  A
public group whose records the SPEC already gives needs no file.  Checked: every private group has its
file, no file names an unknown group, no empty cell or NaN, every value inside the SPEC's bounds (or
clipped into them if the SPEC says ``clamp = true``), and each group's number of records equal to its
declared (public) size.

``user-item``: ``DIR/matrix.csv`` of ``user,item`` pairs, one per report (an optional header row);
``user`` is any label, ``item`` an item index ``0..m-1`` in the order of the SPEC's ``column_sums``.
Checked: item indices are integers in range, no pair repeats (the matrix is 0/1), every item's count
equals its public column sum, and the number of users lies in the SPEC's ``n`` (every user listed
reports at least one item, as the model assumes).

Every refusal is a :class:`PrivateDataError` (a ``ValueError``) naming the group or item and the file.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

__all__ = ["PrivateDataError", "load_grouped", "load_user_item"]


class PrivateDataError(ValueError):
    """The private data do not match what the SPEC declared."""


def _rows(path: Path) -> list[list[str]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return [row for row in csv.reader(f) if row and any(c.strip() for c in row)]
    except UnicodeDecodeError:
        raise PrivateDataError(f"{path} is not a text (CSV) file") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _column(path: Path, what: str) -> np.ndarray:
    rows = _rows(path)
    if rows and not _is_number(rows[0][0].strip()) and rows[0][0].strip().lower() not in ("nan", "inf", "-inf"):
        rows = rows[1:]  # header
    values = []
    for line, row in enumerate(rows, start=1):
        cell = row[0].strip()
        if cell == "":
            raise PrivateDataError(f"{what}: empty first cell in data row {line} of {path}")
        try:
            x = float(cell)
        except ValueError:
            raise PrivateDataError(f"{what}: data row {line} of {path} is not a number: {cell!r}") from None
        if math.isnan(x):
            raise PrivateDataError(f"{what}: NaN in data row {line} of {path}")
        values.append(x)
    return np.asarray(values, dtype=float)


def load_grouped(directory: str | Path, spec: Any) -> list[np.ndarray]:
    """The records of every group of a ``grouped`` SPEC, in group order (see the module docstring)."""
    d = Path(directory)
    if not d.is_dir():
        raise PrivateDataError(f"--data must be a folder, got {str(d)!r}")
    groups, bounds, clamp = spec.groups, spec.bounds, spec.clamp
    names = {g.name for g in groups}
    unknown = sorted(p.stem for p in d.glob("*.csv") if p.stem not in names)
    if unknown:
        raise PrivateDataError(f"{d} holds {unknown[0]}.csv, but the SPEC has no group {unknown[0]!r} "
                               f"(groups: {sorted(names)})")
    out = []
    for g in groups:
        path = d / f"{g.name}.csv"
        if path.is_file():
            x = _column(path, f"group {g.name!r}")
        elif g.name in spec.public_data:
            x = np.asarray(spec.public_data[g.name], dtype=float)
        else:
            raise PrivateDataError(f"group {g.name!r}: no file {path} (one CSV per group)")
        if x.size != g.size:
            raise PrivateDataError(f"group {g.name!r}: {path.name} holds {x.size} records but the SPEC declares "
                                   f"size = {g.size} (group sizes are public: they must match)")
        outside = (x < bounds.lower) | (x > bounds.upper)
        if outside.any():
            if not clamp:
                raise PrivateDataError(
                    f"group {g.name!r}: {int(outside.sum())} record(s) outside bounds [{bounds.lower:g}, "
                    f"{bounds.upper:g}] (first: {x[outside][0]:g}); the SPEC does not say clamp = true")
            x = bounds.clamp(x)
        out.append(x)
    return out


def load_user_item(directory: str | Path, spec: Any) -> sparse.csr_array:
    """The users x items matrix of a ``user-item`` SPEC from ``DIR/matrix.csv`` (see the module docstring)."""
    d = Path(directory)
    if not d.is_dir():
        raise PrivateDataError(f"--data must be a folder, got {str(d)!r}")
    path = d / "matrix.csv"
    if not path.is_file():
        raise PrivateDataError(f"no file {path} (user,item pairs)")
    c = np.asarray(spec.column_sums, dtype=np.int64)
    m = c.size
    rows = _rows(path)
    if rows and len(rows[0]) > 1 and not _is_number(rows[0][1].strip()):
        rows = rows[1:]
    users: dict[str, int] = {}
    r_idx, c_idx = [], []
    for line, row in enumerate(rows, start=1):
        if len(row) < 2:
            raise PrivateDataError(f"data row {line} of {path} must be user,item, got {row!r}")
        user, item = row[0].strip(), row[1].strip()
        try:
            j = int(item)
        except ValueError:
            raise PrivateDataError(f"data row {line} of {path}: item must be an integer index, got {item!r}") from None
        if not 0 <= j < m:
            raise PrivateDataError(f"data row {line} of {path}: item {j} outside 0..{m - 1} (the SPEC has m = {m} items)")
        r_idx.append(users.setdefault(user, len(users)))
        c_idx.append(j)
    n = len(users)
    if n == 0:
        raise PrivateDataError(f"{path} lists no user,item pair")
    mat = sparse.coo_array((np.ones(len(r_idx)), (np.asarray(r_idx), np.asarray(c_idx))), shape=(n, m)).tocsr()
    mat.sum_duplicates()
    if mat.data.size and mat.data.max() > 1:
        i = int(np.repeat(np.arange(n), np.diff(mat.indptr))[np.argmax(mat.data)])
        user = next(u for u, k in users.items() if k == i)
        raise PrivateDataError(f"{path}: user {user!r} reports item {int(mat.indices[np.argmax(mat.data)])} twice "
                               "(the matrix is 0/1)")
    counts = np.bincount(np.asarray(c_idx), minlength=m)
    bad = np.flatnonzero(counts != c)
    if bad.size:
        j = int(bad[0])
        raise PrivateDataError(f"item {j}: {path.name} has {int(counts[j])} reports but the SPEC's public "
                               f"column_sums[{j}] = {int(c[j])} (they must match)")
    lo, hi = _n_bounds(spec.n, c)
    if not lo <= n <= hi:
        raise PrivateDataError(f"{path.name} has {n} users but the SPEC declares n = "
                               f"{lo if lo == hi else f'{lo}..{hi}'}")
    return mat


def _n_bounds(n: object, c: np.ndarray) -> tuple[int, int]:
    if n is None:
        return int(c.max()), int(c.sum())
    if isinstance(n, (tuple, list)):
        return int(n[0]), int(n[1])
    return int(n), int(n)  # type: ignore[call-overload]
