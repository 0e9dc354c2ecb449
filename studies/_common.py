"""Small summaries shared by the studies."""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["mse_with_ci", "variance_with_ci"]

Z95 = 1.959963984540054


def variance_with_ci(x: xr.DataArray, dims: tuple[str, ...]) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """Sample variance over ``dims`` and its asymptotic 95% interval.

    The interval uses the sample fourth central moment,
    ``Var(s^2) ≈ (m4 - s^4 (n - 3)/(n - 1)) / n``, so it stays honest for heavy-tailed
    (Laplace-dominated) estimates where the chi-square interval would be too narrow.
    """
    n = int(np.prod([x.sizes[d] for d in dims]))
    centred = x - x.mean(dims)
    s2 = (centred**2).sum(dims) / (n - 1)
    m4 = (centred**4).mean(dims)
    se = np.sqrt(np.maximum(m4 - s2**2 * (n - 3) / (n - 1), 0.0) / n)
    return s2, s2 - Z95 * se, s2 + Z95 * se


def mse_with_ci(loss: xr.DataArray, dims: tuple[str, ...]) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """Mean of a squared-error array over ``dims`` with a normal 95% interval of the mean."""
    n = int(np.prod([loss.sizes[d] for d in dims]))
    m = loss.mean(dims)
    se = loss.std(dims, ddof=1) / np.sqrt(n)
    return m, m - Z95 * se, m + Z95 * se
