"""hybridpriv.theory.avent: xarray in, xarray out (through the one wrapper), and bad input named in the error."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hybridpriv.theory.avent import (
    amplified_epsilon,
    appendix_b_instance,
    c_crit,
    hybrid_mse,
    kvh_mse,
    kvh_weight,
    laplace_sum_density,
    max_kvh_improvement,
    noise_variances,
    relative_improvement,
)


# --------------------------------------------------------------------------------------
# xarray in, xarray out
# --------------------------------------------------------------------------------------
def test_xarray_in_xarray_out():
    n = xr.DataArray(np.geomspace(1e3, 1e5, 4), dims="n", coords={"n": np.geomspace(1e3, 1e5, 4)})
    c = xr.DataArray([0.005, 0.05], dims="c", coords={"c": [0.005, 0.05]})
    eps = xr.DataArray([0.1, 1.0], dims="epsilon")
    sT, sL = noise_variances("laplace", eps, 1.0, n, c)
    assert isinstance(sT, xr.DataArray) and set(sT.dims) == {"n", "c", "epsilon"}
    e = kvh_mse(n, c, 0.05, sT, sL)
    R, r = relative_improvement(e, n, c, 0.05, 0.05, sT, sL)
    assert isinstance(R, xr.DataArray) and set(R.dims) == {"n", "c", "epsilon"}
    Rn, _ = relative_improvement(
        kvh_mse(n.values[2], 0.05, 0.05, float(sT.sel(c=0.05).isel(n=2, epsilon=1)), 2.0), n.values[2], 0.05, 0.05, 0.05,
        float(sT.sel(c=0.05).isel(n=2, epsilon=1)), 2.0,
    )
    assert float(R.sel(c=0.05).isel(n=2, epsilon=1)) == pytest.approx(Rn)
    assert list(R.coords["c"].values) == [0.005, 0.05]
    with pytest.raises(TypeError, match="DataArray"):
        kvh_weight(n, np.array([0.1, 0.2]), 0.05, 1e-4, 2.0)


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call,err,match",
    [
        (lambda: hybrid_mse(0.5, 100, 0.0, 0.1, 0.1, 1e-3, 1.0), ValueError, r"c must be in \(0, 1\), got 0"),
        (lambda: hybrid_mse(0.5, 100, 1.0, 0.1, 0.1, 1e-3, 1.0), ValueError, "c must be in"),
        (lambda: hybrid_mse(1.5, 100, 0.2, 0.1, 0.1, 1e-3, 1.0), ValueError, r"w must be in \[0, 1\], got 1.5"),
        (lambda: hybrid_mse(0.5, 0, 0.2, 0.1, 0.1, 1e-3, 1.0), ValueError, "n must be in"),
        (lambda: hybrid_mse(0.5, 100, 0.2, -0.1, 0.1, 1e-3, 1.0), ValueError, "sigma_T2 must be in"),
        (lambda: hybrid_mse(0.5, 100, 0.2, 0.1, 0.1, float("nan"), 1.0), ValueError, "s_T2 must not be NaN"),
        (lambda: hybrid_mse(0.5, 100, 0.2, 0.1, 0.1, 1e-3, "1"), TypeError, "s_L2"),
        (lambda: hybrid_mse(0.5, 100, 0.2, 0.1, 0.1, 1e-3, 1.0, benchmark="x"), ValueError, "benchmark"),
        (lambda: kvh_weight([100, -1], 0.2, 0.1, 1e-3, 1.0), ValueError, "n must be in .*got -1"),
        (lambda: noise_variances("cauchy", 1.0, 1.0, 100, 0.1), ValueError, "noise must be one of"),
        (lambda: noise_variances("gaussian", 1.0, 1.0, 100, 0.1), ValueError, "needs delta"),
        (lambda: noise_variances("laplace", 1.0, 1.0, 100, 0.1, delta=1e-5), ValueError, "delta is only used"),
        (lambda: noise_variances("gaussian", 1.0, 1.0, 100, 0.1, delta=1.0), ValueError, "delta must be in"),
        (lambda: noise_variances("laplace", 0.0, 1.0, 100, 0.1), ValueError, "epsilon must be in"),
        (lambda: noise_variances("laplace", 1.0, -1.0, 100, 0.1), ValueError, "m must be in"),
        (lambda: relative_improvement(0.0, 100, 0.1, 0.1, 0.1, 1e-3, 1.0), ValueError, "mse must be in"),
        (lambda: c_crit(0.1, 0.1, 0.0), ValueError, "s_L2 must be in"),
        (lambda: amplified_epsilon(0.3, 100, 0.1, 1.0, 1e-3, 1.0, 1e-5, 1.5), ValueError, "adversarial_fraction"),
        (lambda: amplified_epsilon(0.3, 100, 0.1, 1.0, 1e-3, 1.0, 1e-5, 0.1, group="all"), ValueError, "group must be"),
        (lambda: laplace_sum_density(1.0, 2.5, 1.0), ValueError, "positive integer"),
        # extreme epsilon / m: the variance over- or underflows (was (inf, inf) / (0, 0) silently)
        (lambda: noise_variances("laplace", 1e-200, 1.0, 100, 0.5), ValueError, r"s_L2 = inf .* epsilon=1e-200, m=1"),
        (lambda: noise_variances("laplace", 1e200, 1.0, 100, 0.5), ValueError, r"s_L2 = 0 .* epsilon=1e\+200"),
        (lambda: noise_variances("laplace", 1.0, 1e300, 100, 0.5), ValueError, r"s_L2 = inf .* m=1e\+300"),
        (lambda: noise_variances("gaussian", 1e-200, 1.0, 100, 0.5, 1e-5, "classic"), ValueError, "epsilon=1e-200"),
        (lambda: noise_variances("laplace", [1.0, 1e-200], 1.0, 100, 0.5), ValueError, "s_L2 = inf .* epsilon=1e-200"),
        (lambda: noise_variances("laplace", 1.0, 1e-150, 1e10, 0.5), ValueError, r"s_T2 = .* m=1e-150, n=1e\+10"),
        (lambda: max_kvh_improvement(-1.0), ValueError, "epsilon must be in"),
        (lambda: appendix_b_instance(1.0), ValueError, "too small"),
    ],
)
def test_bad_input(call, err, match):
    with pytest.raises(err, match=match):
        call()
