"""Small summaries shared by the studies (from :mod:`hybridpriv.engine.stats`)."""

from __future__ import annotations

from ..engine.stats import Z95, mean_with_ci, variance_with_ci

__all__ = ["Z95", "mse_with_ci", "variance_with_ci"]

#: Mean of a squared-error array with a normal 95% interval of the mean.
mse_with_ci = mean_with_ci
