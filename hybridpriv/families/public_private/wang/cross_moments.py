"""An earlier noisy release of a private cohort's cross-moments, and how it enters the model.

The published "Table 1" of a private cohort (each covariate's mean and variance, the outcome rate) cannot
show how the outcome depends on the covariates: a cohort whose coefficients differ from the public
sample's can publish the same Table 1.  The *cross-moments*

    c_j = (1 / n) sum_i y_i clip(x_ij, -B, B)        (j = 1 .. p)

(``x`` on the model's covariate scale, in a SPEC the public-standardised one, a categorical column's level code;
``y`` the 0/1 outcome) do: without the clipping they would be the covariances of the outcome with the covariates, up
to the published means and rate.  Released with Laplace
noise (:func:`release_cross_moments`) they are an epsilon-DP feature of the cohort that the model of public
knowledge can condition on (:class:`CrossMoments` in
:class:`~hybridpriv.families.public_private.wang.model.PublishedSummaries`).

Privacy: replacing one record (the family's relation: ``n`` is published) moves each ``c_j`` by at most ``2B / n``
(``y clip(x_j)`` lies in ``[-B, B]``), so the vector's L1 sensitivity is ``2 B p / n`` (:func:`cross_sensitivity`) and
Laplace noise of scale ``2 B p / (n epsilon)`` on each coordinate is epsilon-DP.

Likelihood (:func:`cross_loglik`): given the model's parameters, the published outcome rate and the released
``c_j`` are approximately jointly Normal (they share the outcome, and correlated covariates share more): with
``a = (1, clip(x))`` and ``s`` the logistic probability (``y^2 = y``), the mean is ``mu = E[s a]`` and the covariance
``(E[s a a^T] - mu mu^T) (1/n + 1/R) + diag(0, 2 b^2, .., 2 b^2)``, the expectations averaged over the model's ``R``
fixed smoothed-bootstrap covariate draws (the same ones as the outcome rate's alone, their Monte Carlo error folded in
as ``1/R``) and ``2 b^2`` the Laplace noise's variance (a Gaussian approximation of the Laplace noise).  The model's
covariates are continuous draws: a release computed on integer columns (or categorical level codes, which ``clip``
bounds in code units) differs from what the model computes by the rounding, which is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ....core.privacy import check_positive, check_real_array

__all__ = ["CROSS_CLIP", "CrossMoments", "check_records", "cross_loglik", "cross_moment_statistic", "cross_sensitivity",
           "outcome_moments", "release_cross_moments"]

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
        beyond = np.flatnonzero(np.abs(v) > reachable(self.clip, self.noise_scale))
        if beyond.size:
            raise ValueError(f"cross_moments.values[{int(beyond[0])}] = {float(v[beyond[0]])!r} "
                             f"{beyond_text(self.clip, self.noise_scale)}")


def reachable(clip: float, noise_scale: float) -> float:
    """The largest ``|value|`` a release clipped at ``clip`` with Laplace noise of ``noise_scale`` plausibly gives
    (``clip + 50`` scales: beyond it a number was mistyped or released otherwise)."""
    return clip + 50.0 * noise_scale


def beyond_text(clip: float, noise_scale: float) -> str:
    """The refusal of a released value beyond :func:`reachable`, after its name and value."""
    return (f"is beyond anything a release clipped at {clip:g} with noise scale {noise_scale:g} gives "
            "(|value| <= clip + 50 scales)")


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
    clip = check_positive(clip, "clip")
    X, y = check_records(X, y)
    scale = cross_sensitivity(X.shape[1], X.shape[0], clip) / eps
    return CrossMoments(laplace(cross_moment_statistic(X, y, clip), scale, rng), scale, clip)


def check_records(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """The private records ``(X, y)`` checked for the cross-moments' sensitivity (every covariate finite, a 0/1
    outcome per record); a refusal names the row and the rule, never a value."""
    X = check_real_array(X, "X")
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a 2-D array of records x covariates, got shape {X.shape}")
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:  # private data: the row and column, never the value
        raise ValueError(f"X row {int(bad[0, 0])} column {int(bad[0, 1])} is not a finite number (rule: every "
                         "covariate of every record is a number)")
    y = check_real_array(y, "y").ravel()
    if y.size != X.shape[0]:
        raise ValueError(f"y must hold one outcome per record of X ({X.shape[0]}), got {y.size}")
    off = np.flatnonzero((y != 0) & (y != 1))
    if off.size:
        raise ValueError(f"y row {int(off[0])} is not 0 or 1 (rule: the sensitivity 2 clip p / n needs a 0/1 outcome)")
    return X.astype(float), y.astype(float)


def outcome_moments(s: Any, x: Any, clip: float, lib: Any = np) -> tuple[Any, Any]:
    """The mean ``mu`` ``(p + 1,)`` and covariance ``C`` ``(p + 1, p + 1)`` of one record's ``(y, y clip(x_1), ..,
    y clip(x_p))`` from the outcome probabilities ``s`` ``(R,)`` at covariate draws ``x`` ``(R, p)``: with
    ``a = (1, clip(x))`` and ``y^2 = y``, ``mu = mean(s a)`` and ``C = mean(s a a^T) - mu mu^T``.  ``lib``: ``numpy``
    or ``pytensor.tensor``."""
    c = lib.clip(x, -clip, clip)
    a = lib.concatenate([lib.ones_like(c[:, :1]), c], axis=1)
    sa = s[:, None] * a
    mu = lib.mean(sa, axis=0)
    return mu, lib.dot(sa.T, a) / a.shape[0] - mu[:, None] * mu[None, :]


def cross_loglik(s: Any, x: Any, release: CrossMoments, n: int, draws: int, rate: float | None = None) -> Any:
    """The Gaussian log-likelihood (a PyTensor scalar) of ``release`` and, if given, the published outcome ``rate``,
    jointly (they share the outcome), given outcome probabilities ``s`` at the model's ``draws`` fixed covariate draws
    ``x`` for a cohort of ``n`` records: mean ``mu``, covariance ``C (1/n + 1/R) + diag(0, 2 b^2, ..)`` (see the
    module and :func:`outcome_moments`)."""
    import pymc as pm
    import pytensor.tensor as pt

    mu, C = outcome_moments(s, x, release.clip, pt)
    noise = np.r_[0.0, np.full(release.values.size, 2.0 * release.noise_scale**2)]
    keep = slice(0, None) if rate is not None else slice(1, None)
    cov = C[keep, keep] * (1.0 / n + 1.0 / draws) + np.diag(noise[keep] + 1e-12)
    observed = np.r_[rate, release.values] if rate is not None else release.values
    return pm.logp(pm.MvNormal.dist(mu[keep], cov=cov), observed)
