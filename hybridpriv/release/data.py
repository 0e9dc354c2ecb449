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

Every refusal is a :class:`PrivateDataError` (a ``ValueError``) naming the group or item, the file, the
row and the rule it breaks, **never a private value or a private count**: not the offending record, not
how many records or users a file holds, not an item's count, not a user's label (a refusal is published
to whoever runs the command, and it is charged nothing).

:func:`data_bytes` gives each unit's data as canonical bytes, for the ledger's salted fingerprints.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

__all__ = ["PrivateDataError", "data_bytes", "load_grouped", "load_user_item"]


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
            raise PrivateDataError(f"group {g.name!r}: {path.name} does not hold the SPEC's size = {g.size} records "
                                   "(rule: group sizes are public, the file must match)")
        outside = (x < bounds.lower) | (x > bounds.upper)
        if outside.any():
            if not clamp:
                row = int(np.flatnonzero(outside)[0]) + 1
                raise PrivateDataError(
                    f"group {g.name!r}: data row {row} of {path.name} (the first such) lies outside the bounds "
                    f"[{bounds.lower:g}, {bounds.upper:g}] (rule: records lie in the SPEC's bounds; set "
                    "clamp = true to clip them)")
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
    r_idx, c_idx, lines = [], [], []
    for line, row in enumerate(rows, start=1):
        if len(row) < 2:
            raise PrivateDataError(f"data row {line} of {path}: it has fewer than two cells (rule: each row is "
                                   "user,item)")
        user, item = row[0].strip(), row[1].strip()
        try:
            j = int(item)
        except ValueError:
            raise PrivateDataError(f"data row {line} of {path}: the item is not an integer (rule: an item is its "
                                   f"index 0..{m - 1} in column_sums)") from None
        if not 0 <= j < m:
            raise PrivateDataError(f"data row {line} of {path}: the item is not an index 0..{m - 1} (rule: the SPEC "
                                   f"has m = {m} items)")
        r_idx.append(users.setdefault(user, len(users)))
        c_idx.append(j)
        lines.append(line)
    n = len(users)
    if n == 0:
        raise PrivateDataError(f"{path} lists no user,item pair (rule: the matrix has at least one report)")
    keys = np.asarray(r_idx, dtype=np.int64) * m + np.asarray(c_idx, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    repeat = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if repeat.size:
        row = min(lines[int(order[k + 1])] for k in repeat)
        raise PrivateDataError(f"data row {row} of {path}: it repeats the user,item pair of an earlier row (rule: "
                               "the matrix is 0/1, a user reports an item once)")
    mat = sparse.coo_array((np.ones(len(r_idx)), (np.asarray(r_idx), np.asarray(c_idx))), shape=(n, m)).tocsr()
    counts = np.bincount(np.asarray(c_idx), minlength=m)
    bad = np.flatnonzero(counts != c)
    if bad.size:
        j = int(bad[0])
        raise PrivateDataError(f"item {j}: the number of its reports in {path.name} differs from the SPEC's public "
                               f"column_sums[{j}] = {int(c[j])} (rule: column sums are public, the file must match)")
    lo, hi = _n_bounds(spec.n, c)
    if not lo <= n <= hi:
        raise PrivateDataError(f"the number of users in {path.name} is not the SPEC's n = "
                               f"{lo if lo == hi else f'{lo}..{hi}'} (rule: n is public, the file must match)")
    return mat


def _n_bounds(n: object, c: np.ndarray) -> tuple[int, int]:
    if n is None:
        return int(c.max()), int(c.sum())
    if isinstance(n, (tuple, list)):
        return int(n[0]), int(n[1])
    return int(n), int(n)  # type: ignore[call-overload]


def data_bytes(kind: str, data: Any, spec: Any) -> dict[str, bytes]:
    """Each unit's private data as canonical bytes (what the ledger fingerprints, salted).

    ``grouped``: per private group, its records as float64 in file order (the records of a group are
    its data; their order is part of the file).  ``user-item``: for ``"users"``, the matrix's rows as
    sorted item lists, the rows sorted (user labels and the order of the pairs do not matter).
    """
    if kind == "grouped":
        return {g.name: np.ascontiguousarray(x, dtype="<f8").tobytes()
                for g, x in zip(spec.groups, data) if not g.is_public}
    if kind == "user-item":
        mat = sparse.csr_array(data)
        rows = sorted(np.sort(mat.indices[mat.indptr[i]:mat.indptr[i + 1]]).astype("<i8").tobytes()
                      for i in range(mat.shape[0]))
        return {"users": b"".join(len(r).to_bytes(8, "little") + r for r in rows)}
    raise ValueError(f"no canonical form of {kind!r} data")
