"""Confidence intervals and the event grid of the audit (NumPy only).

One-sided Clopper-Pearson bounds (the reported bounds), Wilson score bounds (to rank candidate
events on the selection half), the quantile grid of candidate thresholds, event counts and
their readable descriptions, and the batched draw of mechanism outputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import special

__all__ = ["clopper_pearson_lower", "clopper_pearson_upper", "wilson_bounds"]


# --------------------------------------------------------------------------------------
def _cp_lower(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound of a binomial probability (level ``1 - alpha``)."""
    k = np.asarray(k)
    with np.errstate(all="ignore"):
        lo = special.betaincinv(np.maximum(k, 1), n - k + 1, alpha)
    return np.where(k > 0, lo, 0.0)


def _cp_upper(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound of a binomial probability (level ``1 - alpha``)."""
    k = np.asarray(k)
    with np.errstate(all="ignore"):
        hi = special.betaincinv(k + 1, np.maximum(n - k, 1), 1.0 - alpha)
    return np.where(k < n, hi, 1.0)


def _wilson(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Wilson score bounds (closed form): a fast stand-in for Clopper-Pearson when selecting events."""
    z = special.ndtri(1.0 - alpha)
    p = np.asarray(k, dtype=float) / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denom = 1 + z * z / n
    return np.maximum((centre - half) / denom, 0.0), np.minimum((centre + half) / denom, 1.0)


def _log_ratio_bound(k_num: np.ndarray, k_den: np.ndarray, n: int, delta: float, alpha: float, exact: bool = True):
    """``log((p_lo(k_num) - delta) / p_hi(k_den))`` (``-inf`` when ``p_lo <= delta``), and the two bounds.

    ``exact``: Clopper-Pearson bounds (the reported, valid bound); otherwise Wilson score
    bounds, used only to rank candidate events on the selection half.
    """
    if exact:
        p_lo = _cp_lower(k_num, n, alpha)
        p_hi = _cp_upper(k_den, n, alpha)
    else:
        p_lo = _wilson(k_num, n, alpha)[0]
        p_hi = _wilson(k_den, n, alpha)[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = np.where(p_lo > delta, np.log(np.maximum(p_lo - delta, 1e-300)) - np.log(p_hi), -np.inf)
    return lb, p_lo, p_hi


_TAIL_LEVELS = np.array([1e-3, 2e-3, 5e-3, 1e-2, 2e-2])


def _quantile_grid(sorted_first: np.ndarray, sorted_second: np.ndarray, grid: int) -> np.ndarray:
    """Candidate thresholds: observed values (no interpolation) at quantiles of the pooled outputs.

    ``grid`` equally spaced levels of the pooled outputs, refined in the tails, plus the
    smallest and largest output of each dataset, so that an output range reached on one
    dataset only (a difference in support) is an event.
    """
    pooled = np.concatenate([sorted_first, sorted_second])
    levels = np.linspace(0.0, 1.0, grid + 1)[1:-1]
    tails = _TAIL_LEVELS[_TAIL_LEVELS * pooled.size >= 5]
    levels = np.unique(np.concatenate([levels, tails, 1.0 - tails]))
    qs = np.quantile(pooled, levels, method="inverted_cdf")
    ends = [sorted_first[0], sorted_first[-1], sorted_second[0], sorted_second[-1]]
    return np.unique(np.concatenate([qs, ends]))


def _cumulative_counts(sorted_x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``c[j] = #{x <= g_j}`` for the extended grid ``g_0 = -inf < grid < g_{K+1} = +inf`` (``c[0] = 0``, ``c[-1] = n``)."""
    inner = np.searchsorted(sorted_x, grid, side="right")
    return np.concatenate([[0], inner, [sorted_x.size]])


def _event_counts(c: np.ndarray, j: np.ndarray, k: np.ndarray, n: int) -> np.ndarray:
    """Counts of every event: bins ``(g_j, g_k]`` then their complements."""
    b = c[k] - c[j]
    return np.concatenate([b, n - b])


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _describe_event(grid: np.ndarray, j: int, k: int, complement: bool) -> str:
    ext = np.concatenate([[-np.inf], grid, [np.inf]])
    lo, hi = ext[j], ext[k]
    last = ext.size - 1
    if not complement:
        if j == 0 and k == last:
            return "any output"
        if j == 0:
            return f"x <= {_fmt(hi)}"
        if k == last:
            return f"x > {_fmt(lo)}"
        return f"{_fmt(lo)} < x <= {_fmt(hi)}"
    if j == 0 and k == last:
        return "no output"
    if j == 0:
        return f"x > {_fmt(hi)}"
    if k == last:
        return f"x <= {_fmt(lo)}"
    return f"x <= {_fmt(lo)} or x > {_fmt(hi)}"


def _draw(mechanism: Callable, data: object, rng: np.random.Generator, samples: int, statistic, batch: int, which: str) -> np.ndarray:
    out = np.empty(samples)
    start = 0
    while start < samples:
        size = min(batch, samples - start)
        x = mechanism(data, rng, size)
        x = np.asarray(x)
        if statistic is not None:
            x = np.asarray(statistic(x))
            what = "statistic(mechanism output)"
        else:
            what = "mechanism"
        if x.shape != (size,):
            hint = "" if statistic is not None or x.ndim < 2 else "; reduce vector outputs to one number each with statistic="
            raise ValueError(f"{what} must return shape ({size},) when asked for size={size} outputs on {which}, got {x.shape}{hint}")
        if not (np.issubdtype(x.dtype, np.number) or x.dtype == bool):
            raise TypeError(f"{what} must return numbers, got dtype {x.dtype} on {which}")
        x = x.astype(float)
        if np.isnan(x).any():
            raise ValueError(f"{what} returned NaN on {which} ({int(np.isnan(x).sum())} of {size} outputs)")
        out[start : start + size] = x
        start += size
    return out




#: Public names of the interval functions.
clopper_pearson_lower = _cp_lower
clopper_pearson_upper = _cp_upper
wilson_bounds = _wilson
