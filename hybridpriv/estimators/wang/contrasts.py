"""Algorithm 1, step 4: contrast functions ``m(x, theta)`` and their weighted minimisation.

:func:`~hybridpriv.estimators.wang.m_estimate` minimises ``sum_i w_i m(x_i, theta)`` for a
:class:`Contrast`: ``"mean"`` (squared loss, closed form), ``"median"`` (absolute loss, a linear
program per column), ``"logistic"`` (negative log-likelihood, label last; analytic gradient and
Hessian for SciPy) or a user's :class:`CustomContrast`.  Contrasts are
:class:`~hybridpriv.params.Parametrized`: their arguments are recorded in results and fingerprints.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral

import numpy as np
from scipy import optimize, sparse, special

from ...params import Parametrized
from ...privacy import check_positive, check_real_array
from ._checks import check_bool, points

__all__ = ["Contrast", "CustomContrast", "LogisticContrast", "MeanContrast", "MedianContrast", "as_contrast"]


class Contrast(Parametrized):
    """A contrast function ``m(x, theta)``; :func:`~hybridpriv.estimators.wang.m_estimate` minimises
    ``sum_i w_i m(x_i, theta)``.

    Subclasses implement :meth:`objective` (weights sum to 1 when called from ``m_estimate``),
    :meth:`initial` and optionally :meth:`gradient` and :meth:`hessian` (analytic derivatives,
    used by SciPy), or override :meth:`minimize`.  The objective must be convex in ``theta`` (the
    paper's condition A3).  :meth:`minimize_rows` fits many weight vectors at once (a loop unless
    a subclass vectorises it).
    """

    name: str = "contrast"
    #: Whether negative weights are allowed (Definition 5 without truncation).
    allows_negative_weights: bool = False

    def check_points(self, values: object) -> np.ndarray:
        """The points as a finite ``(n, p)`` float array this contrast can fit."""
        return points(values, "points")

    def n_params(self, width: int) -> int:
        """Length of ``theta`` for points with ``width`` columns."""
        return width

    def initial(self, points: np.ndarray, weights: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} must implement initial() or minimize()")

    def objective(self, theta: np.ndarray, points: np.ndarray, weights: np.ndarray) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement objective() or minimize()")

    def gradient(self, theta: np.ndarray, points: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
        return None

    def hessian(self, theta: np.ndarray, points: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
        return None

    def minimize(self, points: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """SciPy: ``trust-exact`` with the analytic gradient and Hessian, or L-BFGS-B with the
        gradient, or L-BFGS-B with finite differences."""
        x0 = np.asarray(self.initial(points, weights), dtype=float)
        fun = lambda t: self.objective(t, points, weights)  # noqa: E731
        has_grad = self.gradient(x0, points, weights) is not None
        has_hess = has_grad and self.hessian(x0, points, weights) is not None
        if has_hess:
            res = optimize.minimize(
                fun, x0, method="trust-exact",
                jac=lambda t: self.gradient(t, points, weights),
                hess=lambda t: self.hessian(t, points, weights),
                options={"gtol": 1e-10, "maxiter": 500},
            )
        else:
            res = optimize.minimize(
                fun, x0, method="L-BFGS-B",
                jac=(lambda t: self.gradient(t, points, weights)) if has_grad else None,
                options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 5000},
            )
        return np.asarray(res.x, dtype=float)

    def minimize_rows(self, points: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """One fit per row of ``weights`` ``(trials, n)`` (each row sums to 1): ``(trials, d)``."""
        return np.stack([np.atleast_1d(np.asarray(self.minimize(points, w), dtype=float)) for w in weights])

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class MeanContrast(Contrast):
    """Squared loss ``||x - theta||^2``: the (weighted) mean of every column, in closed form."""

    name = "mean"
    allows_negative_weights = True  # convex whenever the weights sum to > 0

    def initial(self, points, weights):
        return np.zeros(points.shape[1])

    def objective(self, theta, points, weights):
        return float(weights @ np.sum((points - theta) ** 2, axis=1))

    def gradient(self, theta, points, weights):
        return -2.0 * (weights @ (points - theta))

    def hessian(self, theta, points, weights):
        return 2.0 * weights.sum() * np.eye(points.shape[1])

    def minimize(self, points, weights):
        return (weights @ points) / weights.sum()

    def minimize_rows(self, points, weights):
        return (weights @ points) / weights.sum(axis=1, keepdims=True)


class MedianContrast(Contrast):
    """Absolute loss ``sum_j |x_j - theta_j|``: the (weighted) median of every column.

    Minimised exactly as a linear program per column (SciPy ``linprog``, HiGHS): minimise
    ``sum_i w_i (u_i + v_i)`` subject to ``theta + u_i - v_i = x_i``, ``u, v >= 0``.  When
    the minimiser is not unique (an interval), the solver returns a point of it.
    """

    name = "median"

    def initial(self, points, weights):
        return np.zeros(points.shape[1])

    def objective(self, theta, points, weights):
        return float(weights @ np.sum(np.abs(points - theta), axis=1))

    def minimize(self, points, weights):
        keep = weights > 0
        x, w = points[keep], weights[keep]
        n = w.size
        a_eq = sparse.hstack([sparse.csr_array(np.ones((n, 1))), sparse.eye_array(n), -sparse.eye_array(n)]).tocsr()
        c = np.concatenate([[0.0], w, w])
        bounds = [(None, None)] + [(0.0, None)] * (2 * n)
        theta = np.empty(points.shape[1])
        for j in range(points.shape[1]):  # one LP per column
            res = optimize.linprog(c, A_eq=a_eq, b_eq=x[:, j], bounds=bounds, method="highs")
            if res.status != 0:
                raise RuntimeError(f"median LP failed on column {j}: {res.message}")
            theta[j] = res.x[0]
        return theta


class LogisticContrast(Contrast):
    """Logistic negative log-likelihood; the column ``label`` (last by default) is the 0/1 outcome.

    ``m((x, y), theta) = log(1 + exp(x . theta)) - y x . theta`` (+ ``l2 / 2 ||theta||^2`` on the
    objective whose weights sum to 1).

    Parameters
    ----------
    intercept
        Prepend a column of ones to the covariates (``theta[0]`` is the intercept).  The
        paper's simulation model has no intercept.
    l2
        Ridge penalty (0: the plain MLE, which does not exist for separable weighted data; the
        optimiser then stops at a large ``theta``).
    label
        Index of the outcome column.
    """

    name = "logistic"

    def __init__(self, intercept: bool = False, l2: float = 0.0, label: int = -1) -> None:
        self.intercept = check_bool(intercept, "intercept")
        self.l2 = check_positive(l2, "l2", allow_zero=True)
        if isinstance(label, (bool, np.bool_)) or not isinstance(label, Integral):
            raise TypeError(f"label must be an integer column index, got {label!r}")
        self.label = int(label)

    def __repr__(self) -> str:
        return f"LogisticContrast(intercept={self.intercept}, l2={self.l2:g}, label={self.label})"

    def n_params(self, width: int) -> int:
        return width - 1 + self.intercept

    def outcome_column(self, width: int) -> int:
        """The outcome's column index (``>= 0``) in points with ``width`` columns."""
        if not -width <= self.label < width:
            raise ValueError(f"label must index a column of points (width {width}), got {self.label}")
        return self.label % width

    def check_points(self, values):
        z = points(values, "points")
        if z.shape[1] < 2:
            raise ValueError(f"logistic points need covariates and a label column, got shape {z.shape}")
        y = z[:, self.outcome_column(z.shape[1])]
        if not np.isin(y, (0.0, 1.0)).all():
            bad = y[~np.isin(y, (0.0, 1.0))][0]
            raise ValueError(f"the label column of logistic points must hold 0/1, got {bad!r}")
        return z

    def split(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Design matrix (with the intercept column if asked) and outcome."""
        lab = self.label % points.shape[1]
        X = np.delete(points, lab, axis=1)
        if self.intercept:
            X = np.hstack([np.ones((X.shape[0], 1)), X])
        return X, points[:, lab]

    def design(self, covariates: np.ndarray) -> np.ndarray:
        """Design matrix of covariates without a label column."""
        X = points(covariates, "covariates")
        return np.hstack([np.ones((X.shape[0], 1)), X]) if self.intercept else X

    def initial(self, points, weights):
        return np.zeros(points.shape[1] - 1 + self.intercept)

    def objective(self, theta, points, weights):
        X, y = self.split(points)
        eta = X @ theta
        return float(weights @ (np.logaddexp(0.0, eta) - y * eta) + 0.5 * self.l2 * theta @ theta)

    def gradient(self, theta, points, weights):
        X, y = self.split(points)
        return X.T @ (weights * (special.expit(X @ theta) - y)) + self.l2 * theta

    def hessian(self, theta, points, weights):
        X, _ = self.split(points)
        s = special.expit(X @ theta)
        return (X * (weights * s * (1.0 - s))[:, None]).T @ X + self.l2 * np.eye(X.shape[1])

    def minimize(self, points, weights):
        """SciPy ``trust-exact`` with the analytic gradient and Hessian (the design split once, not per call)."""
        X, y = self.split(points)
        eye = self.l2 * np.eye(X.shape[1])

        def fun(theta):
            eta = X @ theta
            return float(weights @ (np.logaddexp(0.0, eta) - y * eta) + 0.5 * self.l2 * theta @ theta)

        def jac(theta):
            return X.T @ (weights * (special.expit(X @ theta) - y)) + self.l2 * theta

        def hess(theta):
            s = special.expit(X @ theta)
            return (X * (weights * s * (1.0 - s))[:, None]).T @ X + eye

        res = optimize.minimize(fun, np.zeros(X.shape[1]), method="trust-exact", jac=jac, hess=hess,
                                options={"gtol": 1e-10, "maxiter": 500})
        return np.asarray(res.x, dtype=float)


class CustomContrast(Contrast):
    """A user's convex contrast.

    Parameters
    ----------
    loss
        ``loss(points, theta) -> (n,)``: ``m(x_i, theta)`` for every record (vectorised).
    theta0
        Starting point; its length is the parameter dimension (default: zeros of the number of
        columns of the points).
    gradient
        Optional ``gradient(points, theta) -> (n, d)``: ``d m(x_i, theta) / d theta`` per record.
    name
        A label.
    """

    def __init__(
        self,
        loss: Callable[[np.ndarray, np.ndarray], np.ndarray],
        theta0: object = None,
        gradient: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
        name: str = "custom",
    ) -> None:
        if not callable(loss):
            raise TypeError(f"loss must be callable as loss(points, theta), got {type(loss).__name__}")
        if gradient is not None and not callable(gradient):
            raise TypeError(f"gradient must be callable or None, got {type(gradient).__name__}")
        self.loss, self.grad, self.name = loss, gradient, str(name)
        self.theta0 = None if theta0 is None else np.atleast_1d(check_real_array(theta0, "theta0")).astype(float)

    def n_params(self, width: int) -> int:
        return width if self.theta0 is None else self.theta0.size

    def initial(self, points, weights):
        return np.zeros(points.shape[1]) if self.theta0 is None else self.theta0.copy()

    def objective(self, theta, points, weights):
        values = np.asarray(self.loss(points, theta), dtype=float)
        if values.shape != (points.shape[0],):
            raise ValueError(f"loss must return shape ({points.shape[0]},), got {values.shape}")
        return float(weights @ values)

    def gradient(self, theta, points, weights):
        if self.grad is None:
            return None
        g = np.asarray(self.grad(points, theta), dtype=float)
        if g.shape != (points.shape[0], theta.size):
            raise ValueError(f"gradient must return shape ({points.shape[0]}, {theta.size}), got {g.shape}")
        return weights @ g

    def __repr__(self) -> str:
        return f"CustomContrast(name={self.name!r})"


_BUILT_IN = {"mean": MeanContrast, "median": MedianContrast, "logistic": LogisticContrast}


def as_contrast(contrast: object) -> Contrast:
    """``"mean"``, ``"median"``, ``"logistic"``, a :class:`Contrast`, or a callable
    ``loss(points, theta) -> (n,)`` (wrapped in :class:`CustomContrast`, ``theta`` starting at zeros
    of the points' width)."""
    if isinstance(contrast, Contrast):
        return contrast
    if isinstance(contrast, str):
        if contrast not in _BUILT_IN:
            raise ValueError(f"contrast must be one of {list(_BUILT_IN)}, a Contrast or a callable, got {contrast!r}")
        return _BUILT_IN[contrast]()
    if callable(contrast):
        return CustomContrast(contrast)
    raise TypeError(f"contrast must be one of {list(_BUILT_IN)}, a Contrast or a callable, got {contrast!r}")
