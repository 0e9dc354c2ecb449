"""Helpers for the tests of stored calibration runs (tests/calibration_runs): a small run shaped as calibrate's,
and the regret, silent-failure and P(best) counts several kinds' tests recount."""

import numpy as np
import xarray as xr

from hybridpriv.calibration_runs import p_best_bins


def small_run() -> xr.Dataset:
    """A small run shaped as calibrate's: two families, each lacking the other's candidates (NaN), text that
    looks like numbers ("9") or is empty, booleans and per-scope summaries (not kept)."""
    cand = ["k:1", "k:9", "estimator:weighted"]
    nan = np.nan
    return xr.Dataset(
        {"p_best": (("truth", "candidate"), [[0.25, 0.75, nan], [nan, nan, 1.0], [1 / 3, 2 / 3, nan]]),
         "realised": (("truth", "candidate"), [[2.0, 1.0, nan], [nan, nan, 0.5], [1.5, 1.25, nan]]),
         "eligible": (("truth", "candidate"), [[1.0, 1.0, nan], [nan, nan, 1.0], [0.0, 1.0, nan]]),
         "recommended": ("truth", ["9", "weighted", "1"]),
         "sensitivity_warning": ("truth", ["", "between", ""]),
         "plan_pays": ("truth", [True, False, False]),
         "regret": ("truth", [0.0, nan, 0.2]),
         "coverage": ("scope", [0.8, 0.9])},
        coords={"truth": ["user-item-0", "grouped-0", "user-item-1"], "candidate": cand, "scope": ["a", "b"]},
        attrs={"refusals": "", "minutes": np.float64(1.5)})


def final_regret(ds: xr.Dataset, floor: float) -> np.ndarray:
    """Regret with the two-stage plan carried out where it would have paid at ``floor`` (the recorded Monte Carlo
    test and printed gain, as hybridpriv.engine.plan decides)."""
    pays = ds.plan_significant.values.astype(bool) & (ds.plan_gain.values >= floor)
    return np.where(pays, ds.plan_regret.values, ds.regret.values)


def synthetic_bins(ds: xr.Dataset) -> dict[str, tuple[float, int, int]]:
    """P(best) on the synthetic truths' eligible pairs, by bin: (mean reported, best, pairs)."""
    return {b: (m, round(o * n), n) for b, (m, o, n) in p_best_bins([ds]).items()}


def one_family_run(realised, eligible, regret) -> xr.Dataset:
    cand = ["k:1", "k:2", "k:3"]
    return xr.Dataset({"realised": (("truth", "candidate"), realised), "eligible": (("truth", "candidate"), eligible),
                       "regret": ("truth", regret)},
                      coords={"truth": [f"t-{i}" for i in range(len(regret))], "candidate": cand})


def fixed_regret(ds: xr.Dataset, candidate: str) -> np.ndarray:
    """Regret (%) of always choosing ``candidate``, relative to each truth's best eligible candidate."""
    eligible = ds.eligible.values == 1
    best = np.min(np.where(eligible, ds.realised.values, np.inf), axis=1)
    return (ds.realised.values[:, [str(c) for c in ds.candidate.values].index(candidate)] / best - 1) * 100


def regret_summary(ds: xr.Dataset) -> tuple[float, float, float]:
    """The recommendation's regret (%) over the run's truths: median, mean, 90th percentile."""
    r = ds.regret.values * 100
    return float(np.median(r)), float(r.mean()), float(np.quantile(r, 0.9))


def silent_truths(ds: xr.Dataset) -> np.ndarray:
    """Per truth: regret above 25% without any warning (an assumption's, a branch's, the free candidate's or the
    chance line, p_costly >= 0.25)."""
    warned = (ds.sensitivity_warning.values != "") | (ds.p_costly_recommended.values >= 0.25)
    return (ds.regret.values > 0.25) & ~warned


def above_and_silent(ds: xr.Dataset) -> tuple[int, int]:
    """Truths whose regret exceeds 25%, and of those the silent ones (:func:`silent_truths`)."""
    return int((ds.regret.values > 0.25).sum()), int(silent_truths(ds).sum())
