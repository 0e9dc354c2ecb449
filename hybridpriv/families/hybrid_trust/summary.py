"""Monte Carlo summaries of an evaluation of the hybrid-model estimators (Avent et al.).

The paper compares every estimator with the better and the worse of two baselines, TCM-only and
Full-LM: ``R = min(MSE_TCM-only, MSE_Full-LM) / MSE`` and ``r = max(...) / MSE`` (Definitions 3.5,
5.1).  These functions read the output of :func:`hybridpriv.engine.evaluate.evaluate` or
:func:`~hybridpriv.engine.evaluate.evaluate_many` (its ``risk``: the loss given each dataset, averaged
over trials) and return the Monte Carlo MSEs and ratios with their standard errors, all from
:mod:`hybridpriv.engine.stats` (:func:`~hybridpriv.engine.stats.mean_with_se`,
:func:`~hybridpriv.engine.stats.ratio_with_se`: the candidates share their datasets, so the ratio's
error keeps the covariance).  Every extra dimension of the evaluation (a swept ``n``, ``c``,
``epsilon`` ...) is kept.

The errors treat the datasets as independent, which they are for an
:class:`~hybridpriv.families.grouped.IIDSource` (fresh records for every draw).  For the draws of a posterior
(autocorrelated within a chain) use :func:`hybridpriv.engine.stats.mcse_mean` instead.  With the task
``Statistic(target="sample")`` the loss is the paper's: the squared error against the empirical
mean of all records (Definition 2.2).
"""

from __future__ import annotations

from collections.abc import Sequence

import xarray as xr

from ...engine.stats import Z95, mean_with_se, ratio_with_se

__all__ = ["BASELINES", "improvement_summary", "mse_summary", "relative_improvements"]

#: The two baselines' labels (:class:`~hybridpriv.families.hybrid_trust.mechanisms.TCMOnly`, :class:`~.FullLM`).
BASELINES = ("tcm-only", "full-lm")
_DATASETS = ("chain", "draw")


def _risk(evaluation: object) -> tuple[xr.DataArray, str]:
    if not isinstance(evaluation, xr.Dataset) or "risk" not in evaluation:
        raise TypeError(f"evaluation must be the xarray.Dataset of hybridpriv.engine.evaluate (with risk), got "
                        f"{type(evaluation).__name__}")
    dim = str(evaluation.attrs.get("candidate_dim", "estimator"))
    risk = evaluation["risk"]
    if dim not in risk.dims or not set(_DATASETS) <= set(risk.dims):
        raise ValueError(f"evaluation['risk'] must have the dimensions {dim!r}, 'chain' and 'draw', got {risk.dims}")
    return risk, dim


def _pick(risk: xr.DataArray, dim: str, label: object, name: str) -> xr.DataArray:
    labels = [str(v) for v in risk[dim].values]
    if not isinstance(label, str) or label not in labels:
        raise ValueError(f"{name} must be a candidate of the evaluation (one of {labels}), got {label!r}")
    return risk.sel({dim: label}, drop=True).stack(dataset=_DATASETS)


def mse_summary(evaluation: xr.Dataset) -> xr.Dataset:
    """Monte Carlo MSE of every candidate with its standard error and normal 95% interval.

    Returns ``mse_mc``, ``mse_mc_se``, ``mse_mc_low``, ``mse_mc_high`` over the candidate dimension
    (and every swept dimension): the mean of ``risk`` over ``chain`` and ``draw``.
    """
    risk, _ = _risk(evaluation)
    m, se = mean_with_se(risk, _DATASETS)
    out = xr.Dataset({"mse_mc": m, "mse_mc_se": se, "mse_mc_low": m - Z95 * se, "mse_mc_high": m + Z95 * se})
    out["mse_mc"].attrs["description"] = "Monte Carlo MSE (mean loss over independent datasets)"
    return out


def relative_improvements(evaluation: xr.Dataset, hybrid: str, tcm: str = BASELINES[0],
                          full: str = BASELINES[1]) -> dict[str, xr.DataArray]:
    """Monte Carlo ``R`` and ``r`` of candidate ``hybrid``, with delta-method standard errors.

    ``R = min(MSE_T, MSE_F) / MSE``, ``r = max(MSE_T, MSE_F) / MSE`` (Definitions 3.5, 5.1); the
    better / worse baseline is the one with the smaller / larger Monte Carlo MSE (per setting).
    Returns ``{"R", "R_se", "r", "r_se"}``.
    """
    risk, dim = _risk(evaluation)
    lt, lf, lh = (_pick(risk, dim, lab, name) for lab, name in ((tcm, "tcm"), (full, "full"), (hybrid, "hybrid")))
    t_better = lt.mean("dataset") <= lf.mean("dataset")
    best = xr.where(t_better, lt, lf)
    worst = xr.where(t_better, lf, lt)
    R, R_se = ratio_with_se(best, lh, "dataset")
    r, r_se = ratio_with_se(worst, lh, "dataset")
    return {"R": R, "R_se": R_se, "r": r, "r_se": r_se}


def improvement_summary(evaluation: xr.Dataset, hybrids: Sequence[str], tcm: str = BASELINES[0],
                        full: str = BASELINES[1], squeeze: bool = False) -> xr.Dataset:
    """:func:`mse_summary` (candidate dimension renamed ``mc_estimator``) and :func:`relative_improvements`
    of every candidate in ``hybrids``: ``R_mc``, ``R_mc_se``, ``r_mc``, ``r_mc_se`` over ``estimator``
    (the hybrids), or without that dimension when ``squeeze`` and there is one hybrid.
    """
    if isinstance(hybrids, str) or not isinstance(hybrids, Sequence) or not hybrids:
        raise TypeError(f"hybrids must be a non-empty sequence of candidate labels, got {hybrids!r}")
    _, dim = _risk(evaluation)
    out = mse_summary(evaluation).rename({dim: "mc_estimator"})
    parts = [relative_improvements(evaluation, h, tcm, full) for h in hybrids]
    for key in ("R", "R_se", "r", "r_se"):
        name = key[0] + "_mc" + key[1:]
        val = xr.concat([p[key] for p in parts], dim=xr.DataArray(list(hybrids), dims="estimator"))
        out[name] = val.isel(estimator=0, drop=True) if squeeze and len(hybrids) == 1 else val
    out["R_mc"].attrs["description"] = "Monte Carlo min(MSE_TCM-only, MSE_Full-LM) / MSE (better baseline by MC)"
    out["R_mc_se"].attrs["description"] = "delta-method standard error of R_mc (paired datasets)"
    return out
