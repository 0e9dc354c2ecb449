"""The Monte Carlo summaries of engine.stats: their values, and that an error is described as an error."""

import numpy as np
import xarray as xr

from hybridpriv.engine.stats import mcse_mean, mean_with_se, ratio_with_se


def _risk(values, dims=("chain", "draw")):
    return xr.DataArray(values, dims=dims, attrs={"description": "expected squared error given the dataset"})


def test_standard_errors_describe_themselves_not_the_quantity():
    # issue 25 finding: mse_mc_se was described as "expected squared error given the dataset"
    rng = np.random.default_rng(0)
    x = _risk(rng.normal(3.0, 1.0, (2, 400)))
    m, se = mean_with_se(x, ("chain", "draw"))
    assert m.attrs["description"] == "expected squared error given the dataset"
    assert se.attrs["description"].startswith("Monte Carlo standard error (over chain, draw) of: expected squared")
    assert abs(float(se) - float(x.std(ddof=1)) / np.sqrt(800)) < 1e-12  # sd / sqrt(n), by hand
    assert mcse_mean(x).attrs["description"].startswith("Monte Carlo standard error of the mean")
    r, r_se = ratio_with_se(x.isel(chain=0), x.isel(chain=1) + 1.0, "draw")
    assert r.attrs["description"].startswith("ratio of the means of") and "delta method" in r_se.attrs["description"]


def test_the_ratio_standard_error_covers_the_spread_over_replicates():
    # the delta-method se of mean(a)/mean(b) against the sd of the ratio over 400 independent replicates
    rng = np.random.default_rng(1)
    ratios, ses = [], []
    for _ in range(400):
        common = rng.normal(0.0, 1.0, 200)
        a = xr.DataArray(5.0 + common + rng.normal(0, 1, 200), dims="draw")
        b = xr.DataArray(4.0 + common + rng.normal(0, 1, 200), dims="draw")
        r, se = ratio_with_se(a, b)
        ratios.append(float(r))
        ses.append(float(se))
    sd = np.std(ratios, ddof=1)
    # the sd over 400 replicates is known to about 3.5% (1/sqrt(2 * 399)): the mean se must agree within 15%
    assert abs(np.mean(ses) / sd - 1.0) < 0.15, (np.mean(ses), sd)
