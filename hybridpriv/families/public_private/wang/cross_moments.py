"""An earlier noisy release of a private cohort's cross-moments, and how it enters the model.

The published "Table 1" of a private cohort (each covariate's mean and variance, the outcome rate) cannot
show how the outcome depends on the covariates: a cohort whose coefficients differ from the public
sample's can publish the same Table 1.  The *cross-moments*

    c_j = (1 / n) sum_i y_i clip(x_ij, -B, B)        (j = 1 .. p)

(``x`` on the model's covariate scale, in a SPEC the public-standardised one, ``y`` the 0/1 outcome) do: they are
the covariances of the outcome with the covariates, up to the published means and rate.  Released with Laplace
noise (:func:`release_cross_moments`) they are an epsilon-DP feature of the cohort that the model of public
knowledge can condition on (:class:`CrossMoments` in
:class:`~hybridpriv.families.public_private.wang.model.PublishedSummaries`).

Privacy: replacing one record (the family's relation: ``n`` is published) moves each ``c_j`` by at most ``2B / n``
(``y clip(x_j)`` lies in ``[-B, B]``), so the vector's L1 sensitivity is ``2 B p / n`` (:func:`cross_sensitivity`) and
Laplace noise of scale ``2 B p / (n epsilon)`` on each coordinate is epsilon-DP.

Likelihood (:func:`cross_loglik`): given the model's parameters, the released ``c_j`` is approximately
``N(mu_j, sqrt(v_j (1/n + 1/R) + 2 b^2))`` with ``mu_j = E[s(z) clip(x_j)]`` and ``v_j = E[s(z) clip(x_j)^2] - mu_j^2``
(``s`` the logistic probability, ``y^2 = y``), both averaged over the model's ``R`` fixed smoothed-bootstrap
covariate draws (the same ones as the outcome rate's, their Monte Carlo error folded in), and the Laplace noise's
variance ``2 b^2`` (a Gaussian approximation of the Laplace noise, fine once the noise is not much larger than the
sampling error or when it is, as then the release says little either way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....core.privacy import check_positive, check_real_array

__all__ = ["CROSS_CLIP", "CrossMoments", "cross_loglik", "cross_moment_statistic", "cross_moment_terms",
           "cross_sensitivity", "release_cross_moments"]

#: The default clipping bound ``B`` of the covariates (public standard deviations, in a SPEC).
CROSS_CLIP = 2.0
#: Largest noise scale or clipping bound accepted (beyond it a release carries nothing, or a number overflowed).
MAX_CROSS = 1e12


@dataclass(frozen=True)
class CrossMoments:
    """A noisy release of the cross-moments ``c_j`` (see the module): ``values`` (one per covariate, on the model's
    covariate scale), the Laplace ``noise_scale`` ``b`` of each coordinate and the clipping bound ``clip`` ``B``."""

    values: Any
    noise_scale: float
    clip: float = CROSS_CLIP

    def __post_init__(self) -> None:
        v = check_real_array(self.values, "cross_moments.values").ravel().astype(float)
        if v.size == 0 or not np.isfinite(v).all():
            bad = v[~np.isfinite(v)][0] if v.size else v
            raise ValueError(f"cross_moments.values must be a non-empty array of finite numbers, got {bad!r}")
        v.setflags(write=False)
        object.__setattr__(self, "values", v)
        for name in ("noise_scale", "clip"):
            x = check_positive(getattr(self, name), f"cross_moments.{name}")
            if x > MAX_CROSS:
                raise ValueError(f"cross_moments.{name} must be at most {MAX_CROSS:g}, got {x!r}")
            object.__setattr__(self, name, float(x))
        if (np.abs(v) > self.clip + 50 * self.noise_scale).any():
            j = int(np.argmax(np.abs(v) > self.clip + 50 * self.noise_scale))
            raise ValueError(f"cross_moments.values[{j}] = {float(v[j])!r} is beyond anything a release clipped at "
                             f"{self.clip:g} with noise scale {self.noise_scale:g} gives (|value| <= clip + 50 scales)")


def cross_sensitivity(p: int, n: int, clip: float) -> float:
    """L1 sensitivity of the ``p`` cross-moments of ``n`` records clipped at ``clip`` when one record is replaced."""
    return 2.0 * float(clip) * int(p) / int(n)


def cross_moment_statistic(X: np.ndarray, y: np.ndarray, clip: float) -> np.ndarray:
    """The cross-moments ``(1/n) sum_i y_i clip(x_ij, -clip, clip)`` of records ``(X, y)`` (no noise)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    return (y[:, None] * np.clip(X, -clip, clip)).mean(axis=0)


def release_cross_moments(X: np.ndarray, y: np.ndarray, epsilon: float, rng: np.random.Generator,
                          clip: float = CROSS_CLIP) -> CrossMoments:
    """An epsilon-DP release (replace-one) of the cross-moments of ``(X, y)``: Laplace noise of scale
    ``cross_sensitivity / epsilon`` on each coordinate.  Simulation noise (NumPy), as the calibration's budget-spending
    selector uses it; not for a release of real data."""
    from ....noise import laplace

    eps = check_positive(epsilon, "epsilon")
    X = np.asarray(X, dtype=float)
    scale = cross_sensitivity(X.shape[1], X.shape[0], clip) / eps
    return CrossMoments(laplace(cross_moment_statistic(X, y, clip), scale, rng), scale, clip)


def cross_moment_terms(s: Any, x: Any, clip: float, lib: Any = np) -> tuple[Any, Any]:
    """``(mu, v)`` per covariate from the outcome probabilities ``s`` ``(R,)`` at covariate draws ``x`` ``(R, p)``:
    ``mu_j = mean(s clip(x_j))``, ``v_j = mean(s clip(x_j)^2) - mu_j^2``.  ``lib``: ``numpy`` or ``pytensor.tensor``."""
    c = lib.clip(x, -clip, clip)
    mu = lib.mean(s[:, None] * c, axis=0)
    return mu, lib.mean(s[:, None] * c**2, axis=0) - mu**2


def cross_loglik(s: Any, x: Any, release: CrossMoments, n: int, draws: int) -> Any:
    """The Gaussian log-likelihood (a PyTensor scalar) of ``release`` given outcome probabilities ``s`` at covariate
    draws ``x`` (the model's ``draws`` fixed ones) for a cohort of ``n`` records (see the module)."""
    import pytensor.tensor as pt

    mu, v = cross_moment_terms(s, x, release.clip, pt)
    sd = pt.sqrt(pt.maximum(v, 0.0) * (1.0 / n + 1.0 / draws) + 2.0 * release.noise_scale**2)
    z = (release.values - mu) / sd
    return pt.sum(-0.5 * z**2 - pt.log(sd)) - 0.5 * release.values.size * math.log(2 * math.pi)
