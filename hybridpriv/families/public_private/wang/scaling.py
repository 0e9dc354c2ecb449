"""Algorithm 1, step 1: both sets mapped to ``[0, 1]^q`` by the *public* per-column range."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from ._checks import points, same_width

__all__ = ["Scaling", "check_categorical", "rescale"]


@dataclass(frozen=True)
class Scaling:
    """The map of Algorithm 1, step 1, fitted on the public set (so it is public).

    Attributes
    ----------
    lower, upper
        Per input column, the public minimum and maximum (``nan`` for categorical columns).
    categorical
        Indices of the categorical input columns.
    levels
        ``{column: sorted public levels}`` of the categorical columns.
    blocks
        For every input column, the ``slice`` of output columns it maps to (one column for a
        continuous variable, one per level for a categorical one).
    """

    lower: np.ndarray
    upper: np.ndarray
    categorical: tuple[int, ...]
    levels: dict[int, np.ndarray]
    blocks: tuple[slice, ...]

    @property
    def n_inputs(self) -> int:
        return len(self.blocks)

    @property
    def n_outputs(self) -> int:
        return self.blocks[-1].stop

    def transform(self, values: object, name: str = "values") -> np.ndarray:
        """Map records to ``[0, 1]^q``: continuous columns ``(clip(z, a, b) - a) / (b - a)``, categorical
        columns one-hot / ``sqrt(2)`` (a level the public set does not have maps to all zeros)."""
        x = points(values, name)
        if x.shape[1] != self.n_inputs:
            raise ValueError(f"{name} must have {self.n_inputs} columns, got {x.shape[1]}")
        out = np.empty((x.shape[0], self.n_outputs))
        for j, block in enumerate(self.blocks):  # a loop over columns, not records
            if j in self.levels:
                out[:, block] = (x[:, j, None] == self.levels[j][None, :]) / math.sqrt(2.0)
            else:
                a, b = self.lower[j], self.upper[j]
                out[:, block.start] = (np.clip(x[:, j], a, b) - a) / (b - a) if b > a else 0.0
        return out

    def inverse(self, values01: object) -> np.ndarray:
        """Map rescaled records back (continuous columns exactly inside the public range,
        categorical columns to the level with the largest coordinate)."""
        z = points(values01, "values01")
        if z.shape[1] != self.n_outputs:
            raise ValueError(f"values01 must have {self.n_outputs} columns, got {z.shape[1]}")
        out = np.empty((z.shape[0], self.n_inputs))
        for j, block in enumerate(self.blocks):
            if j in self.levels:
                out[:, j] = self.levels[j][np.argmax(z[:, block], axis=1)]
            else:
                out[:, j] = self.lower[j] + z[:, block.start] * (self.upper[j] - self.lower[j])
        return out

    def describe(self) -> str:
        """One readable line per input column."""
        parts = []
        for j in range(self.n_inputs):
            if j in self.levels:
                parts.append(f"column {j}: categorical, {self.levels[j].size} levels -> one-hot / sqrt(2)")
            else:
                parts.append(f"column {j}: [{self.lower[j]:g}, {self.upper[j]:g}] -> [0, 1]")
        return "; ".join(parts)


def check_categorical(categorical: object, p: int) -> tuple[int, ...]:
    """``categorical`` as sorted, distinct column indices in ``[0, p)`` (negative indices count from the end)."""
    if categorical is None:
        return ()
    if isinstance(categorical, (str, bytes)) or not isinstance(categorical, Sequence | np.ndarray):
        raise TypeError(f"categorical must be a sequence of column indices or None, got {categorical!r}")
    out = []
    for c in categorical:
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, Integral):
            raise TypeError(f"categorical must hold integer column indices, got {c!r}")
        if not -p <= c < p:
            raise ValueError(f"categorical column index must be in [{-p}, {p}), got {c!r}")
        out.append(int(c) % p)
    if len(set(out)) != len(out):
        raise ValueError(f"categorical must not repeat a column, got {list(categorical)!r}")
    return tuple(sorted(out))


def fit_scaling(public: np.ndarray, categorical: tuple[int, ...]) -> Scaling:
    """The :class:`Scaling` of validated public points ``(n_E, p)`` with validated ``categorical``."""
    cat = np.isin(np.arange(public.shape[1]), categorical)
    lower = np.where(cat, np.nan, public.min(axis=0))
    upper = np.where(cat, np.nan, public.max(axis=0))
    levels = {j: np.unique(public[:, j]) for j in categorical}
    blocks, start = [], 0
    for j in range(public.shape[1]):
        width = levels[j].size if j in levels else 1
        blocks.append(slice(start, start + width))
        start += width
    return Scaling(lower, upper, categorical, levels, tuple(blocks))


def rescale(
    private: object, public: object, categorical: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray, Scaling]:
    """Algorithm 1, step 1: both sets to ``[0, 1]^q`` by the public set's per-column range.

    Parameters
    ----------
    private, public
        Arrays of shape ``(n_D, p)`` and ``(n_E, p)`` (numeric; categorical columns hold codes).
    categorical
        Indices of the categorical columns.

    Returns
    -------
    private01, public01, scaling
        For a continuous column ``j`` with public range ``[a_j, b_j]``:
        ``(clip(z, a_j, b_j) - a_j) / (b_j - a_j)``; private values outside the public range are
        **truncated** to it (the paper's privacy reason: the range must not depend on ``D``).
        A column that is constant in the public set maps to 0.  A categorical column with ``k``
        public levels becomes ``k`` dummy columns divided by ``sqrt(2)`` (two different levels
        are at distance 1); a private level absent from the public set maps to all zeros.
    """
    P = points(private, "private")
    E = points(public, "public")
    same_width(P, E, "private", "public")
    scaling = fit_scaling(E, check_categorical(categorical, E.shape[1]))
    return scaling.transform(P, "private"), scaling.transform(E, "public"), scaling


__all__ += ["fit_scaling"]
