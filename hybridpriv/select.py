"""Decision summaries over simulated datasets: expected loss, its uncertainty, P(best), the choice.

Layering: :func:`decide` works on an evaluation ``xarray.Dataset`` (from
:func:`hybridpriv.evaluate.evaluate`); the Monte Carlo standard errors come from
``arviz_stats`` (effective sample size over ``chain`` and ``draw``, so autocorrelated
posterior draws are not over-counted).
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

import numpy as np
import xarray as xr
from arviz_stats import mcse

__all__ = ["decide", "format_table"]


def _mcse(da: xr.DataArray) -> xr.DataArray:
    """Monte Carlo standard error of the mean over (chain, draw); iid formula when too few draws."""
    n = da.sizes["chain"] * da.sizes["draw"]
    iid = da.std(("chain", "draw"), ddof=1) / np.sqrt(n)
    if da.sizes["draw"] < 8:
        return iid
    try:
        out = mcse(da, sample_dims=["chain", "draw"], method="mean")
    except Exception:  # pragma: no cover - arviz refuses degenerate input; fall back honestly
        return iid
    out = out.where(np.isfinite(out), iid)
    return out


def decide(evaluation: xr.Dataset, interval: tuple[float, float] = (0.05, 0.95)) -> xr.Dataset:
    """Summarise an evaluation into a decision.

    Parameters
    ----------
    evaluation
        The result of :func:`hybridpriv.evaluate.evaluate` (needs ``loss`` with dims
        ``estimator, chain, draw, trial``).
    interval
        Quantiles of the per-dataset risk reported as the interval over datasets.

    Returns
    -------
    xarray.Dataset
        Per estimator: ``expected_loss`` (posterior expected loss), ``mcse`` (its Monte Carlo
        standard error), ``risk_low``/``risk_high`` (the interval over simulated datasets of the
        per-dataset risk, i.e. the loss averaged over trials), ``p_best`` (share of datasets on
        which the estimator has the lowest risk; ties shared), ``difference`` and
        ``difference_mcse`` (expected loss minus the recommended one's, paired over datasets);
        ``meets_requirements`` (its guarantee gives every group at least the epsilon the group
        requires; estimators that do not are never recommended while one that does exists);
        ``risk`` (estimator, chain, draw); attribute and scalar ``recommended``.
    """
    if not isinstance(evaluation, xr.Dataset):
        raise TypeError(
            "evaluation must be an xarray.Dataset (the output of hybridpriv.evaluate.evaluate), "
            f"got {type(evaluation).__name__}"
        )
    if "loss" not in evaluation:
        raise ValueError("evaluation must hold a 'loss' variable (the output of hybridpriv.evaluate.evaluate)")
    dims = ("estimator", "chain", "draw", "trial")
    if set(evaluation["loss"].dims) != set(dims):
        raise ValueError(f"evaluation 'loss' must have dims {dims}, got {evaluation['loss'].dims}")
    if evaluation["loss"].dtype.kind not in "iuf":
        raise TypeError(f"evaluation 'loss' must be numeric, got dtype {evaluation['loss'].dtype}")
    if not np.isfinite(evaluation["loss"].values).all():
        raise ValueError("evaluation 'loss' must be finite, got NaN or infinite values")
    if (
        isinstance(interval, (str, bytes))
        or not isinstance(interval, Sequence)
        or len(interval) != 2
        or not all(isinstance(q, Real) and not isinstance(q, bool) for q in interval)
    ):
        raise TypeError(f"interval must be a pair of quantiles (low, high), got {interval!r}")
    lo, hi = (float(q) for q in interval)
    if not (0.0 <= lo < hi <= 1.0):
        raise ValueError(f"interval must be two quantiles 0 <= low < high <= 1, got {interval!r}")
    n_sets = evaluation.sizes["chain"] * evaluation.sizes["draw"]
    if n_sets < 2:
        raise ValueError(f"decide needs at least 2 simulated datasets for a Monte Carlo error, got {n_sets}")
    risk = evaluation["loss"].mean("trial")
    expected = risk.mean(("chain", "draw"))
    meets = xr.ones_like(expected, dtype=bool)
    if "guarantee_epsilon" in evaluation and "required_epsilon" in evaluation:
        # every group gets at least the protection it asked for (small slack for rounding)
        meets = (evaluation["guarantee_epsilon"] <= evaluation["required_epsilon"] * (1 + 1e-9)).all("group")
    eligible = expected.where(meets) if bool(meets.any()) else expected
    best_label = str(eligible.idxmin("estimator").item())
    is_min = risk == risk.min("estimator")
    p_best = (is_min / is_min.sum("estimator")).mean(("chain", "draw"))
    diff = risk - risk.sel(estimator=best_label)
    q = risk.quantile([lo, hi], dim=("chain", "draw"))
    out = xr.Dataset(
        {
            "expected_loss": expected,
            "mcse": _mcse(risk),
            "risk_low": q.sel(quantile=lo, drop=True),
            "risk_high": q.sel(quantile=hi, drop=True),
            "p_best": p_best,
            "difference": diff.mean(("chain", "draw")),
            "difference_mcse": _mcse(diff).where(diff.estimator != best_label, 0.0),
            "risk": risk,
            "meets_requirements": meets,
            "recommended": best_label,
        }
    )
    out.attrs.update(evaluation.attrs)
    out.attrs["recommended"] = best_label
    out.attrs["interval"] = f"{lo:g}-{hi:g} quantiles of the per-dataset risk"
    out.attrs["recommendation_rule"] = (
        "lowest expected loss among estimators that give every group at least its required protection"
        if bool(meets.any())
        else "lowest expected loss (no estimator meets every group's requirement)"
    )
    return out


def format_table(decision: xr.Dataset) -> str:
    """A plain-text table of a decision, sorted by expected loss, for the terminal.

    Works for decisions over ``estimator`` and over ``k`` (:func:`hybridpriv.useritem.decide_k`).
    """
    dim = decision["expected_loss"].dims[0]
    order = decision["expected_loss"].sortby(decision["expected_loss"])[dim].values
    has_meets = "meets_requirements" in decision
    head = (f"{dim:<18}{'expected loss':>15}{'MC s.e.':>11}{'5%':>11}{'95%':>11}{'P(best)':>9}"
            f"{'vs best (± MC s.e.)':>24}" + ("  meets eps" if has_meets else ""))
    lines = [head, "-" * len(head)]
    for lab in order:
        r = decision.sel({dim: lab})
        mark = "  <- recommended" if str(lab) == str(decision.attrs.get("recommended")) else ""
        meets = (f"  {'yes' if bool(r['meets_requirements']) else 'NO ':<9}" if has_meets else "")
        lines.append(
            f"{str(lab):<18}{float(r.expected_loss):>15.4g}{float(r.mcse):>11.2g}{float(r.risk_low):>11.3g}"
            f"{float(r.risk_high):>11.3g}{float(r.p_best):>9.2f}"
            f"{f'{float(r.difference):+.3g} ± {float(r.difference_mcse):.2g}':>24}{meets}{mark}"
        )
    return "\n".join(lines)
