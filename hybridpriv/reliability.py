"""Reliability of P(best): the diagram, and the range a calibrated P(best) would give in each bin.

:func:`reliability` bins the (truth, candidate) pairs by their reported P(best) and compares the mean
report with the share of pairs whose candidate was best.  With few pairs in a bin the share is noisy
however good the reports are: 12 pairs reported at 0.39 give a share with standard deviation
``sqrt(0.39 * 0.61 / 12) = 0.14``, so a fixed tolerance (say 10 points) fails a calibrated P(best) about
half the time there.  :func:`reliability_band` gives the range instead: it draws each truth's winner from
its own reported P(best) (one winner per truth, so the pairs of one truth are as dependent as the real
ones) many times and reads, per bin, the central ``level`` range of the share of pairs that won.  An
observed share outside it is evidence against the reports at that level, not noise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["BINS", "BIN_LABELS", "bin_label", "reliability", "reliability_band"]

#: Edges of the P(best) bins of the reliability diagram.
BINS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)
#: Their names, as the calibration study's ``bin`` coordinate writes them ("0-0.1", ..., "0.9-1").
BIN_LABELS = tuple(f"{a:g}-{b:g}" for a, b in zip(BINS[:-1], BINS[1:]))


def _bins(p: np.ndarray, bins: Sequence[float]) -> np.ndarray:
    edges = np.asarray(bins, dtype=float)
    return np.clip(np.searchsorted(edges, p, side="right") - 1, 0, edges.size - 2)


def bin_label(p: float) -> str:
    """The name of the bin (:data:`BIN_LABELS`, the last bin closed) holding the P(best) ``p``."""
    value = float(p)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"a P(best) must be in [0, 1], got {p!r}")
    return BIN_LABELS[int(_bins(np.array([value]), BINS)[0])]


def reliability(p_best, is_best, bins: Sequence[float] = BINS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reliability diagram: per bin of P(best) (the last bin closed), the mean P(best), the mean
    share of truths where the candidate was best, and the number of pairs (NaN-paired entries skipped)."""
    p, y = np.asarray(p_best, dtype=float).ravel(), np.asarray(is_best, dtype=float).ravel()
    keep = np.isfinite(p) & np.isfinite(y)
    p, y = p[keep], y[keep]
    which = _bins(p, bins)
    size = len(bins) - 1
    count = np.bincount(which, minlength=size).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        predicted = np.bincount(which, p, minlength=size) / count
        observed = np.bincount(which, y, minlength=size) / count
    return predicted, observed, count


def reliability_band(p_best, bins: Sequence[float] = BINS, level: float = 0.95, draws: int = 20_000,
                     rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per bin, the central ``level`` range of the share of pairs that win when every truth's winner is drawn
    from its reported P(best) (the reports calibrated by construction).

    Parameters
    ----------
    p_best
        ``(truths, candidates)``: each truth's P(best) over the candidates that compete (NaN for the others,
        e.g. ineligible ones); a truth's finite entries must sum to 1 (within 1e-6).  A truth with no finite
        entry is left out.
    bins, level, draws
        The bins' edges, the range's probability, and how many simulated studies.
    rng
        The draws' generator (default: seed 0, so that a summary is reproducible).

    Returns
    -------
    (low, high)
        Per bin, the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the simulated share; NaN for an
        empty bin.
    """
    p = np.asarray(p_best, dtype=float)
    if p.ndim != 2:
        raise ValueError(f"p_best must be a (truths, candidates) array, got shape {p.shape}")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 100:
        raise ValueError(f"draws must be an integer >= 100, got {draws!r}")
    p = p[np.isfinite(p).any(axis=1)]
    total = np.nansum(p, axis=1)
    wrong = (np.abs(total - 1.0) > 1e-6) | (p < 0).any(axis=1)
    if wrong.any():
        bad = int(np.flatnonzero(wrong)[0])
        raise ValueError(f"p_best: row {bad} is not a probability vector over its finite entries "
                         f"(sums to {total[bad]:.6g})")
    size = len(bins) - 1
    which = np.where(np.isfinite(p), _bins(np.nan_to_num(p), bins), size)  # ``size``: not a pair
    count = np.bincount(which.ravel(), minlength=size + 1)[:size].astype(float)
    rng = np.random.default_rng(0) if rng is None else rng
    cum = np.cumsum(np.nan_to_num(p), axis=1)
    cum[:, -1] = np.inf  # rounding never leaves a draw without a winner
    wins = np.empty((int(draws), size))
    rows = np.arange(p.shape[0])
    for start in range(0, int(draws), 1000):
        u = rng.random((min(1000, int(draws) - start), p.shape[0]))
        winner = (u[:, :, None] >= cum[None]).sum(axis=2)  # (sims, truths): the first candidate past u
        b = which[rows[None, :], winner]
        wins[start:start + u.shape[0]] = np.stack([(b == k).sum(axis=1) for k in range(size)], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = wins / count
    tail = (1.0 - float(level)) / 2.0
    # the smallest share whose simulated cdf reaches each tail: a share a calibrated P(best) gives, not a blend of two
    low, high = np.quantile(share, [tail, 1.0 - tail], axis=0, method="inverted_cdf")
    return np.where(count > 0, low, np.nan), np.where(count > 0, high, np.nan)
