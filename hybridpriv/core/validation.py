"""Validators shared by the engine, the mechanisms and the theory formulas (declared once, in the spirit of
``sklearn.utils.validation``; every message names the parameter and the value).

* :func:`check_trials` -- a number of trials (releases per dataset), an integer >= a minimum;
* :func:`check_seed` -- a seed, an integer in ``[0, 2**63)``;
* :func:`check_rng` -- a :class:`numpy.random.Generator`;
* :func:`check_user_item_matrix` -- a binary users x items matrix as a canonical CSR array;
* :func:`check_contribution_bounds` -- a contribution bound ``k`` (or a 1-D sequence of them) in ``[1, m]``.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from scipy import sparse

__all__ = ["check_contribution_bounds", "check_rng", "check_seed", "check_trials", "check_user_item_matrix"]


def check_trials(trials: object, name: str = "trials", minimum: int = 1) -> int:
    """``trials`` as an int: ``TypeError`` unless an integer (not a bool), ``ValueError`` below ``minimum``."""
    if isinstance(trials, bool) or not isinstance(trials, Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {trials!r}")
    if trials < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {trials!r}")
    return int(trials)


def check_seed(seed: object, name: str = "seed") -> int:
    """``seed`` as an int after checking it is an integer in ``[0, 2**63)``."""
    if isinstance(seed, bool) or not isinstance(seed, Integral):
        raise TypeError(f"{name} must be an integer >= 0, got {seed!r}")
    if not 0 <= int(seed) < 2**63:
        raise ValueError(f"{name} must be an integer in [0, 2**63), got {seed!r}")
    return int(seed)


def check_rng(rng: object) -> np.random.Generator:
    """Return ``rng`` after checking it is a :class:`numpy.random.Generator`."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), got {type(rng).__name__}"
        )
    return rng


def check_user_item_matrix(matrix: object, name: str = "matrix") -> sparse.csr_array:
    """Return a binary users x items matrix as a canonical CSR array with float ones as data.

    ``matrix`` is a :mod:`scipy.sparse` matrix/array (any format) or a dense 0/1 array-like
    (booleans accepted).  Users with no items are allowed (they contribute nothing).  Raises
    ``TypeError`` for non-numeric input and ``ValueError`` for a shape other than 2-D, no
    user or no item, NaN, or a value other than 0 and 1 (duplicate sparse entries are summed
    first, so a duplicated entry counts as 2).  The result shares its index arrays with the
    input when the input already is a canonical CSR matrix; the input is never modified.
    """
    if sparse.issparse(matrix):
        if matrix.ndim != 2:  # type: ignore[union-attr]
            raise ValueError(
                f"{name} must be 2-D (users x items), got {matrix.ndim}-D with shape {matrix.shape}"  # type: ignore[union-attr]
            )
        csr = sparse.csr_array(matrix)  # a view of the arrays when already CSR
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
    else:
        if matrix is None or isinstance(matrix, (str, bytes)):
            raise TypeError(f"{name} must be a scipy.sparse matrix or a 2-D 0/1 array, got {matrix!r}")
        try:
            arr = np.asarray(matrix)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be a scipy.sparse matrix or a 2-D 0/1 array: {exc}") from None
        if not (arr.dtype == bool or np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise TypeError(f"{name} must hold numbers 0 and 1, got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise ValueError(f"{name} must be 2-D (users x items), got {arr.ndim}-D with shape {arr.shape}")
        csr = sparse.csr_array(arr)
    data = csr.data
    if not (data.dtype == bool or np.issubdtype(data.dtype, np.integer) or np.issubdtype(data.dtype, np.floating)):
        raise TypeError(f"{name} must hold numbers 0 and 1, got dtype {data.dtype}")
    n, m = csr.shape
    if n == 0 or m == 0:
        raise ValueError(f"{name} must have at least one user and one item, got shape {csr.shape}")
    if data.dtype != bool:
        if np.isnan(data).any():
            raise ValueError(f"{name} contains NaN; it must be a binary (0/1) matrix")
        bad = (data != 0) & (data != 1)
        if bad.any():
            raise ValueError(
                f"{name} must be binary (0/1), got {int(bad.sum())} other value(s) (first: {data[bad][0].item()!r})"
            )
    if not data.all():  # explicit zeros
        csr = csr.copy()
        csr.eliminate_zeros()
    return sparse.csr_array((np.ones(csr.nnz), csr.indices, csr.indptr), shape=(n, m), copy=False)


def check_contribution_bounds(k: object, m: int | None = None, name: str = "k") -> tuple[np.ndarray, bool]:
    """Validate a contribution bound: an integer or a 1-D sequence of integers, each in ``[1, m]``.

    Returns the bounds as an int64 array and whether ``k`` was a scalar.  ``m`` (the number
    of items) is the upper limit when given: keeping more than ``m`` items per user is the
    same as keeping ``m``, with more noise.
    """
    if np.ndim(k) == 0:  # type: ignore[arg-type]
        value = k.item() if isinstance(k, np.ndarray) else k
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
            raise TypeError(f"{name} must be an integer, got {k!r}")
        if m is not None and value > m:
            raise ValueError(f"{name} must be <= m (the number of items), got {name}={int(value)} with m={m}")
        if not -(2**63) < value < 2**63:
            raise ValueError(f"{name} must be an integer in [1, 2**63), got {int(value)}")
        ks = np.array([int(value)], dtype=np.int64)
        scalar = True
    else:
        if isinstance(k, (str, bytes)):
            raise TypeError(f"{name} must be an integer or a 1-D sequence of integers, got {k!r}")
        arr = np.asarray(k)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be an integer or a 1-D sequence of integers, got shape {arr.shape}")
        if arr.size == 0:
            raise ValueError(f"{name} must hold at least one value, got an empty sequence")
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype} ({arr.tolist()!r})")
        ks = arr.astype(np.int64)
        scalar = False
    if (ks < 1).any():
        bad = int(ks[ks < 1][0])
        raise ValueError(f"{name} must be >= 1, got {bad}")
    if m is not None and (ks > m).any():
        bad = int(ks[ks > m][0])
        raise ValueError(f"{name} must be <= m (the number of items), got {name}={bad} with m={m}")
    return ks, scalar
