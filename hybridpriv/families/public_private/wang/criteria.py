"""Section 5.1's criteria: the prediction error of logistic releases, the Brier score, and the
sensitivity of the paper's criterion with a ridge reference fit (the correction of Section 5.1)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ....core.privacy import check_integer, check_positive, check_real_array
from ._checks import points
from .contrasts import LogisticContrast, as_contrast
from .mestimation import private_fit

__all__ = ["brier_criterion", "criterion_sensitivity_bound", "logistic_contrast", "prediction_error"]


def logistic_contrast(contrast: object) -> LogisticContrast:
    """``contrast`` as a :class:`LogisticContrast`, or ``ValueError`` (these criteria are for logistic fits)."""
    c = as_contrast(contrast)
    if not isinstance(c, LogisticContrast):
        raise ValueError(f"this criterion is for the logistic contrast, got {c.name!r}; pass a callable criterion")
    return c


def prediction_error(
    theta: object,
    X: object,
    y: object = None,
    *,
    reference: object = None,
    contrast: LogisticContrast | None = None,
) -> np.ndarray | float:
    """The paper's prediction error for logistic regression (Section 5.1).

    ``t = || h_D(theta) - h_D(beta_hat(D)) ||_2`` with ``h_D(beta) = expit(X beta)`` over the
    ``n_D`` private covariate rows, ``beta_hat(D)`` the non-private fit on ``(X, y)`` (or the
    given ``reference``).  Not normalised by ``n_D`` (the paper's L2 norm, whose sensitivity
    argument needs it).  :class:`~hybridpriv.families.public_private.wang.PredictionError` is the same as a
    task for :func:`hybridpriv.engine.evaluate.evaluate`.

    Parameters
    ----------
    theta
        One coefficient vector ``(d,)`` or several ``(k, d)``.
    X
        Private covariates ``(n_D, p)`` (no label column, no intercept column).
    y
        Private 0/1 outcomes, used to fit ``beta_hat(D)`` when ``reference`` is None.
    reference
        ``beta_hat(D)`` if already fitted.
    contrast
        The :class:`LogisticContrast` (intercept, ridge) used for the fits (default: no
        intercept, no ridge).

    Returns
    -------
    A float, or an array ``(k,)``.
    """
    c = LogisticContrast() if contrast is None else logistic_contrast(contrast)
    design = c.design(X)
    th = check_real_array(theta, "theta")
    single = th.ndim == 1
    th = np.atleast_2d(th)
    if th.ndim != 2 or th.shape[1] != design.shape[1]:
        raise ValueError(f"theta must have shape ({design.shape[1]},) or (k, {design.shape[1]}), got {np.shape(theta)}")
    if not np.isfinite(th).all():
        bad = np.argwhere(~np.isfinite(th))[0]
        where = f"theta[{bad[1]}]" if single else f"theta[{bad[0]}, {bad[1]}]"
        raise ValueError(f"theta must be finite, got {where} = {float(th[tuple(bad)])}")
    if reference is None:
        if y is None:
            raise ValueError("prediction_error needs y (to fit beta_hat(D)) or reference")
        yy = check_real_array(y, "y")
        if yy.shape != (design.shape[0],):
            raise ValueError(f"y must have shape ({design.shape[0]},), got {yy.shape}")
        ref = private_fit(np.column_stack([points(X, "X"), yy]), LogisticContrast(c.intercept, c.l2))
        if not np.isfinite(ref).all():
            raise ValueError(f"the non-private fit beta_hat(D) on (X, y) is not finite ({ref}); pass reference")
    else:
        ref = check_real_array(reference, "reference")
        if ref.shape != (design.shape[1],):
            raise ValueError(f"reference must have shape ({design.shape[1]},), got {ref.shape}")
        if not np.isfinite(ref).all():
            j = int(np.flatnonzero(~np.isfinite(ref))[0])
            raise ValueError(f"reference must be finite, got reference[{j}] = {float(ref[j])}")
    base = special.expit(design @ ref)
    t = np.sqrt(((special.expit(th @ design.T) - base) ** 2).sum(axis=1))
    return float(t[0]) if single else t


def brier_criterion(theta: object, X: object, y: object, contrast: LogisticContrast | None = None) -> np.ndarray | float:
    """``sum_j (y_j - expit(x_j . theta))^2`` over the private records (sensitivity 1, replace-one:
    one term in ``[0, 1]`` changes).  A proper scoring rule: no reference fit is needed."""
    c = LogisticContrast() if contrast is None else logistic_contrast(contrast)
    design = c.design(X)
    yy = check_real_array(y, "y")
    if yy.shape != (design.shape[0],):
        raise ValueError(f"y must have shape ({design.shape[0]},), got {yy.shape}")
    th = np.atleast_2d(check_real_array(theta, "theta"))
    t = ((yy - special.expit(th @ design.T)) ** 2).sum(axis=1)
    return float(t[0]) if np.ndim(theta) == 1 else t


def criterion_sensitivity_bound(n_private: int, radius: float, ridge: float) -> float:
    """Sensitivity of the paper's criterion with a ridge reference fit (replace-one):
    ``1 + R^2 / (2 ridge sqrt(n_D))``, ``R`` a bound on the norm of a design row.

    Proof in ``docs/wang-estimators.md``: the ridge fit moves by at most ``2R / (n_D ridge)``,
    the other ``n_D - 1`` coordinates of ``h_D`` by at most ``R ||delta beta|| / 4`` each, and
    the replaced record's coordinate changes ``t`` by at most 1 (the paper's argument).
    """
    n = check_integer(n_private, "n_private")
    r = check_positive(radius, "radius")
    lam = check_positive(ridge, "ridge")
    return 1.0 + r * r / (2.0 * lam * math.sqrt(n))
