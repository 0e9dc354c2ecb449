"""Scoring one decision against a truth's realised risks, and summarising many: pure NumPy."""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from ..engine.sensitivity import MATTERS

__all__ = ["SILENT_REGRET", "regret_to_best", "score", "summarize"]

#: A regret above this is a failure that must not be silent: select must have warned (issue 25).
SILENT_REGRET = MATTERS  # the regret a sensitivity warning is about (hybridpriv.engine.sensitivity)


def regret_to_best(realised: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Each candidate's regret against the best eligible one on the same truth: ``realised / best - 1``, 0 for a
    candidate as good as the best (0 / 0 too), infinite where the best is 0 and the candidate is not.  The last
    axis is the candidates (one truth: ``(k,)``; truths by candidates: ``(t, k)``); a truth with no eligible
    candidate is scored against all of them, as :func:`score` does."""
    realised = np.asarray(realised, dtype=float)
    eligible = np.asarray(eligible, dtype=bool)
    pool = np.where(eligible.any(axis=-1, keepdims=True), eligible, True)
    best = np.min(np.where(pool, realised, np.inf), axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(realised == best, 0.0, np.where(best == 0, np.inf, realised / best - 1.0))


def score(expected, low, high, p_best, eligible, realised, recommended: int) -> dict[str, Any]:
    """Score one decision against the realised risks on the truth (one entry per candidate).

    Parameters
    ----------
    expected, low, high, p_best
        The decision's expected loss, 5% and 95% risk quantiles and P(best).
    eligible
        Whether the candidate meets every unit's requirement (the oracle is chosen among these,
        or among all when none is).
    realised
        The candidate's risk on the truth.
    recommended
        The index of the recommended candidate.

    Returns
    -------
    dict
        ``oracle`` (index of the lowest realised risk among the eligible; the first on a tie),
        ``regret`` (``realised[recommended] / realised[oracle] - 1``; 0 when both are 0),
        ``covered`` (bool per candidate: ``low <= realised <= high``), ``is_best`` (per candidate,
        1 / number of tied oracles, else 0; ineligible candidates 0), ``ratio``
        (``expected / realised`` per candidate).
    """
    arrays = [np.asarray(a, dtype=float) for a in (expected, low, high, p_best, realised)]
    expected, low, high, p_best, realised = arrays
    eligible = np.asarray(eligible, dtype=bool)
    k = realised.size
    for name, a in (("expected", expected), ("low", low), ("high", high), ("p_best", p_best), ("eligible", eligible)):
        if a.shape != (k,):
            raise ValueError(f"{name} must have one entry per candidate ({k}), got shape {a.shape}")
    if isinstance(recommended, bool) or not isinstance(recommended, Integral) or not 0 <= int(recommended) < k:
        raise ValueError(f"recommended must be a candidate index in [0, {k}), got {recommended!r}")
    if not np.isfinite(realised).all() or (realised < 0).any():
        raise ValueError(f"realised must be finite and >= 0, got {realised}")
    pool = eligible if eligible.any() else np.ones(k, dtype=bool)
    best_value = realised[pool].min()
    ties = pool & (realised == best_value)
    oracle = int(np.flatnonzero(ties)[0])
    regret = regret_to_best(realised, eligible)[int(recommended)]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = expected / realised
    return {"oracle": oracle, "regret": float(regret), "covered": (low <= realised) & (realised <= high),
            "is_best": ties / ties.sum(), "ratio": ratio}


def summarize(regret, covered, covered_recommended, ratio=()) -> dict[str, float]:
    """Summary of many truths: interval coverage (over the candidate x truth pairs given, NaN skipped; the study
    gives the eligible candidates' alone),
    coverage of the recommended candidate, median and 90th-percentile regret (linear quantiles),
    share of truths where the recommendation was the oracle (regret 0), share of truths whose
    select run was refused (NaN regret; ``truths`` counts the others), and the median of
    ``ratio`` (expected loss / realised risk over the pairs; finite values only)."""
    regret = np.asarray(regret, dtype=float)
    refused = float(np.mean(np.isnan(regret))) if regret.size else float("nan")
    regret = regret[~np.isnan(regret)]
    cov = np.asarray(covered, dtype=float)
    cov_rec = np.asarray(covered_recommended, dtype=float)
    nan = float("nan")
    ratio = np.asarray(ratio, dtype=float).ravel()
    ratio = ratio[np.isfinite(ratio)]
    return {"truths": float(regret.size), "refused": refused,
            "coverage": float(np.nanmean(cov)) if np.isfinite(cov).any() else nan,
            "coverage_recommended": float(np.nanmean(cov_rec)) if np.isfinite(cov_rec).any() else nan,
            "regret_median": float(np.quantile(regret, 0.5)) if regret.size else nan,
            "regret_p90": float(np.quantile(regret, 0.9)) if regret.size else nan,
            "correct": float(np.mean(regret == 0)) if regret.size else nan,
            "ratio_median": float(np.median(ratio)) if ratio.size else nan}
