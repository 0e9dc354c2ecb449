"""Monte Carlo summaries with their errors: one home for every standard error the toolkit reports.

Layering as in ArviZ: :func:`mcse_mean` uses ``arviz_stats`` (effective sample size over
``chain`` and ``draw``, so autocorrelated posterior draws are not over-counted), within each stratum
when the draws come in strata; the other functions are for independent replicates (a study's trials)
and work on any dims.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

__all__ = ["Z95", "mcse_mean", "mean_with_ci", "mean_with_se", "ratio_with_se", "stratified_mcse_mean",
           "variance_with_ci"]

#: The normal 97.5% quantile (95% two-sided intervals).
Z95 = 1.959963984540054


def _n(x: xr.DataArray, dims: Sequence[str]) -> int:
    return int(np.prod([x.sizes[d] for d in dims]))


def mcse_mean(da: xr.DataArray, dims: Sequence[str] = ("chain", "draw")) -> xr.DataArray:
    """:func:`_mcse_mean`, described as what it is (not as the quantity it is the error of).

    When ``da`` has the coordinate ``stratum`` over ``(chain, draw)`` (an evaluation of a source whose draws
    come in strata, :func:`hybridpriv.core.data.strata_of`), the mean over all draws is the strata's means
    weighted by their counts ``n_j / N``, so its error is ``sqrt(sum_j (n_j / N)^2 mcse_j^2)`` with each
    ``mcse_j`` computed over the stratum's own draws (:func:`stratified_mcse_mean`).  Read as one series,
    strata laid one after another along ``draw`` look like strong autocorrelation and the error is inflated
    (a hundredfold on a three-component mixture).
    """
    dims = tuple(dims)
    if dims == ("chain", "draw") and "stratum" in da.coords and set(da["stratum"].dims) == {"chain", "draw"}:
        out = stratified_mcse_mean(da, da["stratum"])
    else:
        out = _mcse_mean(da, dims)
    out.attrs = {"description": f"Monte Carlo standard error of the mean (over {', '.join(dims)}) of: {_what(da)}"}
    return out


def _mcse_mean(da: xr.DataArray, dims: Sequence[str] = ("chain", "draw")) -> xr.DataArray:
    """Monte Carlo standard error of the mean over ``dims``.

    Over ``("chain", "draw")`` with at least 8 draws: ``arviz_stats.mcse(method="mean")`` (ESS
    based); otherwise, or where ArviZ returns a non-finite value (a constant series), the
    independent-draws formula ``sd / sqrt(n)``.
    """
    dims = tuple(dims)
    n = _n(da, dims)
    iid = da.std(dims, ddof=1) / np.sqrt(n) if n > 1 else xr.zeros_like(da.isel({d: 0 for d in dims}, drop=True))
    if dims != ("chain", "draw") or da.sizes["draw"] < 8:
        return iid
    from arviz_stats import mcse

    try:
        out = mcse(da, sample_dims=["chain", "draw"], method="mean")
    except (ValueError, TypeError, ZeroDivisionError):  # degenerate input (e.g. constant): fall back
        return iid
    return out.where(np.isfinite(out), iid)


def stratified_mcse_mean(da: xr.DataArray, strata: xr.DataArray) -> xr.DataArray:
    """Monte Carlo standard error of the mean over ``(chain, draw)`` of draws that come in strata.

    ``strata``: an integer per ``(chain, draw)``.  Each stratum's error is :func:`_mcse_mean` over its own
    draws (chain by chain when every chain holds the same number of them, as when a mixture's components are
    laid one after another in each chain; else its draws as one series), and the errors combine with the
    strata's shares of the draws: ``sqrt(sum_j (n_j / N)^2 mcse_j^2)``.
    """
    s = np.asarray(strata.transpose("chain", "draw").values)
    if s.dtype.kind not in "iu":
        raise ValueError(f"strata must hold integers, got dtype {s.dtype}")
    other = [d for d in da.dims if d not in ("chain", "draw")]
    x = da.drop_vars("stratum", errors="ignore").transpose(*other, "chain", "draw")
    if s.shape != (x.sizes["chain"], x.sizes["draw"]):
        raise ValueError(f"strata must have the (chain, draw) shape {(x.sizes['chain'], x.sizes['draw'])}, "
                         f"got {s.shape}")
    values, total = x.values, s.size
    var = np.zeros(values.shape[:-2])
    for j in np.unique(s):
        mask = s == j
        counts = mask.sum(axis=1)
        if counts.min() == counts.max():  # the same number in every chain: keep the chains
            part = values[..., mask].reshape(*values.shape[:-2], s.shape[0], int(counts[0]))
        else:
            part = values[..., mask].reshape(*values.shape[:-2], 1, int(mask.sum()))
        sub = xr.DataArray(part, dims=(*other, "chain", "draw"), coords={d: x[d] for d in other if d in x.coords})
        se = _mcse_mean(sub, ("chain", "draw"))
        var = var + (mask.sum() / total) ** 2 * np.asarray(se.values) ** 2
    return xr.DataArray(np.sqrt(var), dims=other, coords={d: x[d] for d in other if d in x.coords})


def mean_with_se(x: xr.DataArray, dims: str | Sequence[str] = "draw") -> tuple[xr.DataArray, xr.DataArray]:
    """Mean over ``dims`` (independent replicates) and its standard error."""
    dims = (dims,) if isinstance(dims, str) else tuple(dims)
    se = x.std(dims, ddof=1) / np.sqrt(_n(x, dims))
    se.attrs = {"description": f"Monte Carlo standard error (over {', '.join(dims)}) of: {_what(x)}"}
    return x.mean(dims), se


def _what(x: xr.DataArray) -> str:
    return str(x.attrs.get("description") or x.name or "the mean")


def mean_with_ci(x: xr.DataArray, dims: str | Sequence[str] = "draw") -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """Mean over ``dims`` with a normal 95% interval of the mean: ``(mean, low, high)``."""
    m, se = mean_with_se(x, dims)
    return m, m - Z95 * se, m + Z95 * se


def variance_with_ci(x: xr.DataArray, dims: Sequence[str]) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """Sample variance over ``dims`` and its asymptotic 95% interval.

    The interval uses the sample fourth central moment,
    ``Var(s^2) ~ (m4 - s^4 (n - 3)/(n - 1)) / n``, so it stays honest for heavy-tailed
    (Laplace-dominated) estimates where the chi-square interval would be too narrow.
    """
    dims = tuple(dims)
    n = _n(x, dims)
    centred = x - x.mean(dims)
    s2 = (centred**2).sum(dims) / (n - 1)
    m4 = (centred**4).mean(dims)
    se = np.sqrt(np.maximum(m4 - s2**2 * (n - 3) / (n - 1), 0.0) / n)
    return s2, s2 - Z95 * se, s2 + Z95 * se


def ratio_with_se(num: xr.DataArray, den: xr.DataArray, dim: str = "draw") -> tuple[xr.DataArray, xr.DataArray]:
    """``mean(num) / mean(den)`` over paired samples along ``dim`` and its delta-method standard error.

    The pairs share their dataset (common data), so the covariance term is kept:
    ``se(log ratio)^2 = (v_a/a^2 + v_b/b^2 - 2 c_ab/(a b)) / k``.
    """
    k = num.sizes[dim]
    a, b = num.mean(dim), den.mean(dim)
    va, vb = num.var(dim, ddof=1), den.var(dim, ddof=1)
    cab = ((num - a) * (den - b)).sum(dim) / (k - 1)
    v_log = (va / a**2 + vb / b**2 - 2 * cab / (a * b)) / k
    ratio = a / b
    ratio.attrs = {"description": f"ratio of the means of ({_what(num)}) to ({_what(den)})"}
    se = ratio * np.sqrt(np.maximum(v_log, 0.0))
    se.attrs = {"description": f"Monte Carlo standard error (delta method, over {dim}) of: {ratio.attrs['description']}"}
    return ratio, se
