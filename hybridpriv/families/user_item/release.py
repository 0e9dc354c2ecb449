"""The user-item family's private data: ``DIR/matrix.csv`` of ``user,item`` pairs, one per report.

An optional header row; ``user`` is any label, ``item`` an item index ``0..m-1`` in the order of the
SPEC's ``column_sums``.  Checked: item indices are integers in range, no pair repeats (the matrix is
0/1), every item's count equals its public column sum, and the number of users lies in the SPEC's
``n`` (every user listed reports at least one item, as the model assumes).  Refusals name the item,
the file, the row and the rule, never a user's label, a count or a value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from ...release.data import PrivateDataError, data_file, is_number, read_rows

__all__ = ["load_user_item"]


def load_user_item(directory: str | Path, spec: Any) -> sparse.csr_array:
    """The users x items matrix of a ``user-item`` SPEC from ``DIR/matrix.csv`` (see the module docstring)."""
    path = data_file(directory, "matrix.csv", "user,item pairs")
    c = np.asarray(spec.column_sums, dtype=np.int64)
    m = c.size
    rows = read_rows(path)
    if rows and len(rows[0]) > 1 and not is_number(rows[0][1].strip()):
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
