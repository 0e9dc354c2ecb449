"""Validation helpers shared by the Wang modules (every message names the parameter and the value)."""

from __future__ import annotations

import numpy as np

from ....core.privacy import check_real_array

__all__ = ["check_bool", "check_on_zero", "points", "same_width"]


def points(values: object, name: str, min_rows: int = 1) -> np.ndarray:
    """A finite float array of shape (n, p) (1-D input is one column)."""
    arr = check_real_array(values, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n,) or (n, p), got {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} must hold at least {min_rows} record(s), got {arr.shape[0]}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        bad = "NaN" if np.isnan(arr).any() else "an infinite value"
        raise ValueError(f"{name} contains {bad}; remove or impute missing values before the pipeline")
    return arr


def same_width(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    """Raise unless ``a`` and ``b`` have the same number of columns."""
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{na} and {nb} must have the same number of columns, got {a.shape[1]} and {b.shape[1]}")


def check_bool(value: object, name: str) -> bool:
    """``value`` after checking it is ``True`` or ``False`` (a Python bool, as everywhere in hybridpriv)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_on_zero(value: object) -> str:
    """``on_zero_weights``: ``"raise"`` or ``"uniform"``."""
    if not isinstance(value, str) or value not in ("raise", "uniform"):
        raise ValueError(f"on_zero_weights must be 'raise' or 'uniform', got {value!r}")
    return value  # type: ignore[return-value]
