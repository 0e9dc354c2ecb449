"""Shared input checks of the compiled user-item core (``hybridpriv/families/user_item/model_*.py``).

The data structures (see :mod:`hybridpriv.families.user_item.model_feasibility` for the notation): a
*matrix* is a binary users x items matrix stored CSR-like as ``(indptr, indices)`` -- ``indptr``
``int64[n + 1]``, ``indices[indptr[i]:indptr[i + 1]]`` the items of user ``i``, strictly
increasing.  The wrappers raise ``ValueError`` naming the parameter and value
(``r must ..., got VALUE``) before any compiled kernel runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

import numpy as np
from numba import njit

__all__ = ["ArrayLike", "csr_margins"]

ArrayLike = Sequence[int] | np.ndarray


def _fmt(value: object, limit: int = 80) -> str:
    text = repr(value)
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=12, separator=", ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _int_vector(x: object, name: str, min_value: int | None = 0) -> np.ndarray:
    """``x`` as a contiguous int64 vector after checking it holds integers >= ``min_value``."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of integers, got {_fmt(x)}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind in "iu":
        out = arr.astype(np.int64)
    elif arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        out = arr.astype(np.int64)
    else:
        raise ValueError(f"{name} must be a 1-D array of integers, got {_fmt(x)}")
    if min_value is not None and out.min() < min_value:
        raise ValueError(f"{name} must have entries >= {min_value}, got {_fmt(x)}")
    return np.ascontiguousarray(out)


def _int_scalar(x: object, name: str, min_value: int | None = None) -> int:
    if isinstance(x, bool) or not isinstance(x, Integral | np.integer):
        raise ValueError(f"{name} must be an integer, got {_fmt(x)}")
    v = int(x)
    if min_value is not None and v < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {v}")
    return v


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {_fmt(rng)}")
    return rng


def _check_csr(indptr: object, indices: object, writeable: bool) -> int:
    """Check a CSR pair (in place use: int64, C-contiguous, writeable); return the row count."""
    for name, arr in (("indptr", indptr), ("indices", indices)):
        if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype != np.int64:
            raise ValueError(f"{name} must be a 1-D numpy int64 array, got {_fmt(arr)}")
        if not arr.flags.c_contiguous or (writeable and not arr.flags.writeable):
            raise ValueError(f"{name} must be a C-contiguous writeable array, got {_fmt(arr)}")
    assert isinstance(indptr, np.ndarray) and isinstance(indices, np.ndarray)
    if indptr.size < 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise ValueError(f"indptr must start at 0 and be non-decreasing, got {_fmt(indptr)}")
    if indptr[-1] != indices.size:
        raise ValueError(f"indptr[-1] must equal len(indices) = {indices.size}, got {int(indptr[-1])}")
    if indices.size and indices.min() < 0:
        raise ValueError(f"indices must be >= 0, got {_fmt(indices)}")
    if not _rows_strictly_sorted(indptr, indices):
        raise ValueError(f"indices must be strictly increasing within each row, got {_fmt(indices)}")
    return indptr.size - 1


@njit(cache=True)
def _rows_strictly_sorted(indptr, indices):  # pragma: no cover - compiled
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i] + 1, indptr[i + 1]):
            if indices[p] <= indices[p - 1]:
                return False
    return True


def csr_margins(indptr: np.ndarray, indices: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column sums of a CSR binary matrix.

    Parameters
    ----------
    indptr, indices
        The matrix (see the module docstring).
    n_items
        The number of items ``m`` (columns); every index must be ``< n_items``.

    Returns
    -------
    r, c : numpy.ndarray
        ``int64`` row sums (length ``n``) and column sums (length ``m``).
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    m = _int_scalar(n_items, "n_items", 0)
    if indices.size and indices.max() >= m:
        raise ValueError(f"n_items must exceed every index ({int(indices.max())}), got {m}")
    return np.diff(indptr), np.bincount(indices, minlength=m).astype(np.int64)
