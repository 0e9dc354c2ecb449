"""Lei (2011): the perturbed-histogram M-estimator on the private data alone (the paper's baseline)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from ....core.privacy import check_epsilon, check_integer, check_real_array
from ....core.validation import check_rng
from ....noise import laplace
from ._checks import check_bool
from .contrasts import Contrast, LogisticContrast, as_contrast
from .mestimation import m_estimate

__all__ = ["LeiHistogramCells", "lei_cells", "lei_fit", "lei_m_estimator"]


@dataclass(frozen=True)
class LeiHistogramCells:
    """The noise-free histogram of Lei's estimator: ``counts`` per cell and the cells' ``centres``."""

    counts: np.ndarray
    centres: np.ndarray


def _bounds(values: object, name: str, p: int, default: float) -> np.ndarray:
    if values is None:
        return np.full(p, default)
    arr = check_real_array(values, name)
    try:
        return np.broadcast_to(arr, (p,)).astype(float)
    except ValueError:
        raise ValueError(f"{name} must be one number or one per column ({p}), got shape {arr.shape}") from None


def lei_cells(
    private: np.ndarray,
    contrast: Contrast,
    bins: int,
    lower: object = None,
    upper: object = None,
    discrete: dict[int, Sequence[float]] | None = None,
    max_cells: int = 1_000_000,
) -> LeiHistogramCells:
    """The cells and noise-free counts of :func:`lei_m_estimator` on validated private points."""
    n, p = private.shape
    m = check_integer(bins, "bins")
    max_cells = check_integer(max_cells, "max_cells")
    lo, hi = _bounds(lower, "lower", p, 0.0), _bounds(upper, "upper", p, 1.0)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()) or np.any(lo > hi):
        raise ValueError(f"lower and upper must be finite with lower <= upper, got {lo.tolist()} and {hi.tolist()}")
    disc: dict[int, np.ndarray] = {}
    if discrete is not None:
        if not isinstance(discrete, dict):
            raise TypeError(f"discrete must be a dict {{column: levels}}, got {type(discrete).__name__}")
        for j, lv in discrete.items():
            if isinstance(j, (bool, np.bool_)) or not isinstance(j, Integral) or not -p <= j < p:
                raise ValueError(f"discrete keys must be column indices in [{-p}, {p}), got {j!r}")
            arr = np.unique(check_real_array(lv, f"levels of discrete column {j}"))
            if arr.size == 0 or not np.isfinite(arr).all():
                raise ValueError(f"discrete column {j} needs a non-empty list of finite levels, got {lv!r}")
            disc[int(j) % p] = arr
    if isinstance(contrast, LogisticContrast) and contrast.label % p not in disc:
        disc[contrast.label % p] = np.array([0.0, 1.0])
    sizes = [disc[j].size if j in disc else m for j in range(p)]
    n_cells = math.prod(sizes)
    if n_cells > max_cells:
        raise ValueError(
            f"the histogram has {n_cells:.3g} cells (bins={m} per continuous column, {p} columns), over "
            f"max_cells={max_cells}: Lei's perturbed histogram is infeasible in this dimension"
        )
    cell = np.empty((n, p), dtype=np.intp)
    axes = []
    for j in range(p):  # a loop over columns
        if j in disc:
            lv = disc[j]
            # nearest declared level (a value between levels goes to the nearer one, ties to the lower)
            pos = np.clip(np.searchsorted(lv, private[:, j]), 1, max(lv.size - 1, 1))
            if lv.size == 1:
                cell[:, j] = 0
            else:
                left = lv[pos - 1]
                right = lv[np.minimum(pos, lv.size - 1)]
                cell[:, j] = np.where(private[:, j] - left <= right - private[:, j], pos - 1, pos)
            axes.append(lv)
        else:
            width = hi[j] - lo[j]
            z = (np.clip(private[:, j], lo[j], hi[j]) - lo[j]) / width if width > 0 else np.zeros(n)
            cell[:, j] = np.minimum((z * m).astype(np.intp), m - 1)  # the top edge is in the last cell
            axes.append(lo[j] + (np.arange(m) + 0.5) / m * width)
    flat = np.ravel_multi_index(tuple(cell.T), sizes)
    counts = np.bincount(flat, minlength=n_cells).astype(float)
    full = np.unravel_index(np.arange(n_cells), sizes)
    return LeiHistogramCells(counts, np.column_stack([axes[j][full[j]] for j in range(p)]))


def lei_fit(cells: LeiHistogramCells, noisy: np.ndarray, contrast: Contrast) -> np.ndarray:
    """The M-estimate at the cell centres weighted by the (truncated) noisy counts."""
    keep = np.flatnonzero(noisy > 0)
    if keep.size == 0:
        raise ValueError("every noisy cell count was truncated to 0: the perturbed histogram is empty")
    return m_estimate(cells.centres[keep], noisy[keep], contrast)


def lei_m_estimator(
    private: object,
    contrast: object,
    epsilon: float,
    bins: int,
    rng: np.random.Generator,
    *,
    lower: object = None,
    upper: object = None,
    discrete: dict[int, Sequence[float]] | None = None,
    max_cells: int = 1_000_000,
    return_histogram: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lei (2011) perturbed-histogram M-estimator on the private data alone.

    The box ``[lower, upper]`` (data-independent, e.g. the public ranges; default ``[0, 1]``
    per column) is cut into ``bins`` equal cells per continuous column; a ``discrete`` column
    ``j`` takes its declared levels as cells (for the logistic contrast the label column is
    discrete with levels ``(0, 1)`` unless given).  Private values outside the box are
    truncated to it.  Every cell's count gets ``Laplace(2 / epsilon)`` noise (replace-one: one
    record leaves a cell and enters another, L1 sensitivity 2; every cell is perturbed, empty
    or not), negative counts are set to 0, and the M-estimator is fitted to the cell centres
    (the level for discrete columns) weighted by the noisy counts -- the same as replicating each
    centre its count of times.  Guarantee: ``epsilon``-DP (replace-one).  The mechanism form is
    :class:`~hybridpriv.families.public_private.wang.LeiHistogram`.

    The number of cells is ``bins^(continuous columns) x prod(levels)``; above ``max_cells`` a
    ``ValueError`` says so (the method is infeasible in high dimension, the paper's point).

    Returns
    -------
    ``theta``, or ``(theta, centres, noisy counts)`` with ``return_histogram``.
    """
    c = as_contrast(contrast)
    eps = check_epsilon(epsilon, allow_inf=True)
    rng = check_rng(rng) if math.isfinite(eps) else rng
    D = c.check_points(private)
    cells = lei_cells(D, c, bins, lower, upper, discrete, max_cells)
    noisy = cells.counts if math.isinf(eps) else laplace(cells.counts, 2.0 / eps, rng)
    noisy = np.maximum(noisy, 0.0)
    theta = lei_fit(cells, noisy, c)
    if check_bool(return_histogram, "return_histogram"):
        return theta, cells.centres, noisy
    return theta
