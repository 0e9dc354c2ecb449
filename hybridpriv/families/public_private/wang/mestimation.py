"""Weighted M-estimation (Definition 5, eq. 4) and Algorithm 1 as functions, with its baselines.

:func:`m_estimate` is ``argmin_theta sum_i w_i m(x_i, theta)``; :func:`fit_rows` fits many weight
vectors at once (the mechanisms' releases over trials).  :func:`algorithm1` is Algorithm 1 end to
end on two arrays; :func:`hybrid_oracle`, :func:`public_only` and :func:`private_fit` are the
paper's baselines (noise-free weights, the unweighted public fit, the non-private fit on ``D``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ....core.privacy import check_real_array
from ._checks import check_bool, check_on_zero
from ._checks import points as _points
from .contrasts import Contrast, as_contrast
from .scaling import rescale
from .weights import representation_weights

__all__ = ["algorithm1", "fit_rows", "hybrid_oracle", "m_estimate", "private_fit", "public_only"]


def m_estimate(points: object, weights: object, contrast: object) -> np.ndarray:
    """``argmin_theta sum_i w_i m(x_i, theta)`` with SciPy (Definition 5, eq. 4).

    The weights are divided by their sum (the minimiser does not change).  Negative weights
    are refused unless the contrast allows them (the squared loss, whose minimiser
    ``sum w x / sum w`` exists whenever ``sum w > 0``); all-zero weights (every noisy weight
    truncated) raise ``ValueError`` -- :func:`algorithm1` and
    :func:`~hybridpriv.families.public_private.wang.algorithm2` can fall back to equal weights instead.

    Returns
    -------
    ``theta`` as an array of shape ``(d,)``.
    """
    c = as_contrast(contrast)
    x = c.check_points(points)
    w = check_real_array(weights, "weights")
    if w.shape != (x.shape[0],):
        raise ValueError(f"weights must have shape ({x.shape[0]},) (one per point), got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("weights must be finite")
    if (w < 0).any() and not c.allows_negative_weights:
        raise ValueError(
            f"weights must be >= 0 for the {c.name} contrast (got {int((w < 0).sum())} negative); "
            "use truncated weights (truncate=True, Definition 6)"
        )
    total = w.sum()
    if not total > 0:
        raise ValueError(f"weights must have a positive sum, got {total!r} (all noisy weights truncated to 0?)")
    theta = np.atleast_1d(np.asarray(c.minimize(x, w / total), dtype=float))
    if not np.isfinite(theta).all():
        raise RuntimeError(f"M-estimation with the {c.name} contrast did not converge to a finite theta")
    return theta


def fit_rows(points_: np.ndarray, weights: np.ndarray, contrast: Contrast, on_zero_weights: str = "uniform"
             ) -> tuple[np.ndarray, np.ndarray]:
    """One weighted fit per row of ``weights`` ``(trials, n)`` on validated ``points_`` ``(n, p)`` (or each row on
    its own points: ``(trials, n, p)``).

    Rows whose weights do not sum to > 0 (every noisy weight truncated) are fitted with equal
    weights (the public-only fit; post-processing) when ``on_zero_weights="uniform"``, else
    ``ValueError``.  Returns ``(thetas (trials, d), fell_back (trials,))``.
    """
    w = np.asarray(weights, dtype=float)
    total = w.sum(axis=1)
    empty = ~(total > 0)
    if empty.any():
        if on_zero_weights != "uniform":
            raise ValueError(f"weights must have a positive sum, got {total[empty][0]!r} "
                             "(all noisy weights truncated to 0?); pass on_zero_weights='uniform' to fall back")
        w = np.where(empty[:, None], 1.0, w)
        total = w.sum(axis=1)
    if (w < 0).any() and not contrast.allows_negative_weights:
        raise ValueError(f"weights must be >= 0 for the {contrast.name} contrast; use truncated weights (truncate=True)")
    thetas = np.asarray(contrast.minimize_rows(points_, w / total[:, None]), dtype=float).reshape(w.shape[0], -1)
    if not np.isfinite(thetas).all():
        raise RuntimeError(f"M-estimation with the {contrast.name} contrast did not converge to a finite theta")
    return thetas, empty


def fit_or_fall_back(points_: np.ndarray, weights: np.ndarray, contrast: Contrast, on_zero_weights: str
                     ) -> tuple[np.ndarray, bool]:
    """:func:`m_estimate`, or the equal-weights fit when every weight is 0 and ``on_zero_weights="uniform"``."""
    if not weights.sum() > 0 and on_zero_weights == "uniform":
        return m_estimate(points_, np.ones(len(points_)), contrast), True
    return m_estimate(points_, weights, contrast), False


def algorithm1(
    private: object,
    public: object,
    contrast: object,
    epsilon: float,
    rng: np.random.Generator | None,
    truncate: bool = True,
    *,
    categorical: Sequence[int] | None = None,
    on_zero_weights: str = "raise",
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Algorithm 1: the DP M-estimator from hybrid datasets.

    Rescale both sets by the public range (:func:`~hybridpriv.families.public_private.wang.rescale`), compute
    the noisy weights on the rescaled sets
    (:func:`~hybridpriv.families.public_private.wang.representation_weights`), and minimise the weighted
    contrast over the **original** public points (:func:`m_estimate`), so ``theta`` is on the
    data's own scale.  The mechanism form (a candidate for :func:`hybridpriv.engine.evaluate.evaluate`,
    on a subset of a public order) is :class:`~hybridpriv.families.public_private.wang.Algorithm1`.

    Guarantee: ``epsilon``-DP for the private records (replace-one); ``E`` is public.

    Parameters
    ----------
    private, public
        Arrays ``(n_D, p)``, ``(n_E, p)``; for ``"logistic"`` the last column is the 0/1 label
        (it also enters the distances, as in the paper).  ``E`` should hold distinct points
        (the paper's assumption; duplicates get no weight beyond the first).
    contrast
        See :func:`~hybridpriv.families.public_private.wang.as_contrast`.
    epsilon, rng, truncate
        As for :func:`~hybridpriv.families.public_private.wang.representation_weights`.
    categorical
        Categorical column indices (for the rescaling).
    on_zero_weights
        ``"raise"`` (default) or ``"uniform"``: when every truncated weight is 0, fit with equal
        weights (the public-only fit; post-processing, no privacy cost).
    return_weights
        Also return the weights.
    """
    c = as_contrast(contrast)
    mode = check_on_zero(on_zero_weights)
    p01, e01, _ = rescale(private, public, categorical)
    w = representation_weights(p01, e01, epsilon, rng, truncate)
    theta, _ = fit_or_fall_back(_points(public, "public"), w, c, mode)
    return (theta, w) if check_bool(return_weights, "return_weights") else theta


def hybrid_oracle(
    private: object, public: object, contrast: object, categorical: Sequence[int] | None = None
) -> np.ndarray:
    """Algorithm 1 with noise-free weights (``epsilon = inf``): **not private**, the paper's black curve."""
    return algorithm1(private, public, contrast, math.inf, None, categorical=categorical)  # type: ignore[return-value]


def public_only(public: object, contrast: object) -> np.ndarray:
    """The unweighted fit on the public set (no privacy cost; the paper's blue line)."""
    E = _points(public, "public")
    return m_estimate(E, np.ones(E.shape[0]), contrast)


def private_fit(private: object, contrast: object) -> np.ndarray:
    """The unweighted fit on the private set: **not private**, the benchmark ``theta_hat(D)``."""
    D = _points(private, "private")
    return m_estimate(D, np.ones(D.shape[0]), contrast)


__all__ += ["fit_or_fall_back"]
