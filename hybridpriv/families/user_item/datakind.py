"""The ``user-item`` data kind: a binary users x items matrix (SciPy CSR); add or remove one user.

Neighbouring pair for the audit: the matrix vs the matrix with a new user who holds every item.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.datakind import DataKind
from ...testing.core import NeighbouringPair

__all__ = ["USER_ITEM_DATA", "UserItemData"]


def _user_item_pairs(data: object, unit: str) -> list[NeighbouringPair]:
    import scipy.sparse as sp

    m = np.asarray(data.toarray() if sp.issparse(data) else data, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"data must be a users x items matrix, got shape {m.shape}")
    plus = np.vstack([m, np.ones((1, m.shape[1]))])
    return [NeighbouringPair(m, plus, f"{unit}: add a user who holds all {m.shape[1]} items")]


class UserItemData(DataKind):
    name = "user-item"

    def neighbouring_pairs(self, mechanism: Any, data: Any, unit: str, guarantee: Any, record: int) -> list:
        return _user_item_pairs(data, unit)

    def recognises(self, data: Any) -> bool:
        import scipy.sparse as sp

        return bool(sp.issparse(data))


USER_ITEM_DATA = UserItemData()
