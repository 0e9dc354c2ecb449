"""Algorithm 1, step 4: contrast functions ``m(x, theta)`` and their weighted minimisation.

:func:`~hybridpriv.families.public_private.wang.m_estimate` minimises ``sum_i w_i m(x_i, theta)`` for a
:class:`Contrast`: ``"mean"`` (squared loss, closed form), ``"median"`` (absolute loss, a linear
program per column), ``"logistic"`` (negative log-likelihood, label last; Newton's method,
:func:`fit_logistic`) or a user's :class:`CustomContrast`.  Contrasts are
:class:`~hybridpriv.core.params.Parametrized`: their arguments are recorded in results and fingerprints.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral

import numpy as np
from scipy import linalg, optimize, sparse, special

from ....core.params import Parametrized
from ....core.privacy import check_positive, check_real_array
from ._checks import check_bool, points

__all__ = ["Contrast", "CustomContrast", "LogisticContrast", "MeanContrast", "MedianContrast", "as_contrast",
           "fit_logistic"]


class Contrast(Parametrized):
    """A contrast function ``m(x, theta)``; :func:`~hybridpriv.families.public_private.wang.m_estimate` minimises
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
        """One fit per row of ``weights`` ``(trials, n)`` (each row sums to 1): ``(trials, d)``.  ``points``:
        ``(n, p)`` shared by every row, or ``(trials, n, p)``, row ``i``'s own points."""
        own = points.ndim == 3
        return np.stack([np.atleast_1d(np.asarray(self.minimize(points[i] if own else points, w), dtype=float))
                         for i, w in enumerate(weights)])

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
        total = weights.sum(axis=1, keepdims=True)
        if points.ndim == 3:
            return np.matmul(weights[:, None, :], points)[:, 0, :] / total
        return (weights @ points) / total


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
        """Design matrix (with the intercept column if asked) and outcome; ``points`` ``(n, p)`` or a stack
        ``(B, n, p)``."""
        lab = self.label % points.shape[-1]
        X = np.delete(points, lab, axis=-1)
        if self.intercept:
            X = np.concatenate([np.ones(X.shape[:-1] + (1,)), X], axis=-1)
        return X, points[..., lab]

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
        """Newton's method from ``theta = 0`` (see :func:`fit_logistic`), falling back to SciPy
        ``trust-exact`` from 0 where the minimiser is not well determined."""
        X, y = self.split(points)
        return fit_logistic(X, y, weights, self.l2)[0]

    def minimize_rows(self, points, weights):
        """All rows' fits at once (:func:`~hybridpriv.families.public_private.wang.newton_rows.fit_logistic_rows`:
        Newton's method vectorised over the rows, each fit it refuses by :func:`fit_logistic` alone)."""
        from .newton_rows import fit_logistic_rows

        X, y = self.split(points)
        return fit_logistic_rows(X, y, weights, self.l2)[0]


#: Stop when the gradient's Euclidean norm is below this (as SciPy's ``trust-exact`` ``gtol``).
GTOL = 1e-10
_NEWTON_MAXITER = 30
_RCOND_MIN = 1e-12
_EPS = float(np.finfo(float).eps)


class _Weighted:
    """``sum_i w_i (log(1 + exp(eta_i)) - y_i eta_i) + l2 / 2 ||theta||^2`` on the rows with ``w_i > 0``
    (the others add nothing to the objective, gradient or Hessian), with ``eta = X theta`` kept
    for the last ``theta`` so the objective, gradient and Hessian at one point share one product."""

    def __init__(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float) -> None:
        keep = w > 0
        if not keep.all():
            X, y, w = X[keep], y[keep], w[keep]
        self.X, self.y, self.w, self.l2 = X, y, w, l2
        self._theta: np.ndarray | None = None

    def eta(self, theta: np.ndarray) -> np.ndarray:
        # theta is always a vector of X's width here: an elementwise test is np.array_equal without its checks
        if self._theta is None or not (theta == self._theta).all():
            self._theta, self._eta = theta.copy(), self.X @ theta
            self._s = special.expit(self._eta)
        return self._eta

    def separates(self, theta: np.ndarray) -> bool:
        """Whether ``theta`` separates the points without a ridge: then the minimum is not attained (the
        objective tends to 0 along ``theta``), so there is no MLE."""
        return self.l2 == 0 and bool(np.all((2.0 * self.y - 1.0) * self.eta(theta) > 0))

    def fun(self, theta: np.ndarray) -> float:
        eta = self.eta(theta)
        return float(self.w @ (np.logaddexp(0.0, eta) - self.y * eta) + 0.5 * self.l2 * theta @ theta)

    def jac(self, theta: np.ndarray) -> np.ndarray:
        self.eta(theta)
        return self.X.T @ (self.w * (self._s - self.y)) + self.l2 * theta

    def hess_upper(self, theta: np.ndarray) -> np.ndarray:
        """The Hessian's upper triangle (the lower is 0): ``Z^T Z`` by BLAS ``syrk`` (half the products of
        ``X^T diag(v) X``), ``Z = diag(sqrt(v)) X``, ``v = w s (1 - s)``."""
        self.eta(theta)
        s = self._s
        z = self.X * np.sqrt(self.w * s * (1.0 - s))[:, None]
        h = linalg.blas.dsyrk(1.0, z.T, trans=0, lower=0)  # z.T is Fortran-ordered: no copy
        if self.l2:
            h.flat[:: h.shape[0] + 1] += self.l2  # the diagonal (a view: no index arrays built per call)
        return h


def _one_norm(h: np.ndarray) -> float:
    """The 1-norm of the symmetric matrix whose upper triangle is ``h`` (its lower triangle 0): ``h + h.T`` counts
    the diagonal twice, so it is set back (no ``np.triu``: this runs at every Newton step of tiny fits).  Its rows
    are summed, not its columns: ``h + h.T`` is laid out in C order where ``h + triu(h, 1).T`` was in Fortran order,
    and summing the contiguous axis adds in the same order as before (the same bits; columns differ in the last bit
    for 8 or more columns, tested)."""
    sym = h + h.T
    sym.flat[:: sym.shape[0] + 1] = h.flat[:: h.shape[0] + 1]
    return float(np.abs(sym).sum(axis=1).max())


def _newton(prob: _Weighted, theta: np.ndarray) -> np.ndarray | None:
    """Damped Newton (Cholesky, backtracking Armijo search) until ``||gradient|| < GTOL``.

    None when the minimiser is not well determined: an iterate that separates the points (no
    ridge), a Hessian that is not numerically positive definite (reciprocal condition below
    1e-12), no descent, 30 iterations, or a last step that did not shrink the gradient's norm
    100-fold (Newton converges quadratically to a minimiser; along a direction where the objective
    keeps decreasing, as under quasi-complete separation, the norm shrinks about e-fold a step).
    """
    f, g_prev = prob.fun(theta), math.inf
    for _ in range(_NEWTON_MAXITER):
        if prob.separates(theta):
            return None
        g = prob.jac(theta)
        g_norm = float(np.linalg.norm(g))
        if g_norm < GTOL:
            return theta if g_prev == math.inf or g_prev >= 100.0 * g_norm else None
        g_prev = g_norm
        h = prob.hess_upper(theta)
        c, info = linalg.lapack.dpotrf(h, lower=0, clean=0, overwrite_a=0)
        if info != 0:
            return None
        rcond, info = linalg.lapack.dpocon(c, _one_norm(h))
        if info != 0 or not rcond > _RCOND_MIN:
            return None
        step, info = linalg.lapack.dpotrs(c, -g[:, None], lower=0)
        step = step[:, 0]
        slope = float(g @ step)
        if info != 0 or not slope < 0:
            return None
        t, tol = 1.0, 8.0 * _EPS * abs(f)  # f's rounding: near the optimum the decrease is below it
        while True:
            new = theta + t * step
            f_new = prob.fun(new)
            if f_new <= f + 1e-4 * t * slope + tol:
                break
            t *= 0.5
            if t < 1e-10:
                return None
        theta, f = new, f_new
    return None


def fit_logistic(X: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float = 0.0,
                 start: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """``argmin_theta sum_i w_i (log(1 + exp(x_i . theta)) - y_i x_i . theta) + l2 / 2 ||theta||^2``.

    Newton's method from ``start`` (default 0) on the rows with positive weight, stopped when the
    gradient's norm is below ``GTOL`` (the ``gtol`` of the ``trust-exact`` fit), and accepted only
    where the minimiser is well determined (see :func:`_newton`: no iterate separating the weighted
    points without a ridge, where the MLE does not exist; the Hessian numerically positive definite;
    quadratic convergence within 30 iterations).  Otherwise SciPy ``trust-exact`` from 0 on
    all rows, with the analytic gradient and Hessian: the code this package used before Newton's
    method, unchanged (so the same numbers bit for bit), which for separable data stops at a large
    ``theta`` where the gradient is below ``GTOL``.

    Returns ``(theta, newton)``: ``newton`` is False when ``trust-exact`` gave the answer.
    """
    if np.any(np.asarray(weights) < 0):
        raise ValueError(f"logistic weights must be >= 0 (the objective is convex only then), got min "
                         f"{float(np.min(weights))!r}")
    prob = _Weighted(X, y, weights, l2)
    theta = _newton(prob, np.zeros(X.shape[1]) if start is None else np.array(start, dtype=float))
    if theta is not None and not prob.separates(theta):
        return theta, True
    return _trust_exact(X, y, weights, l2), False


def _trust_exact(X: np.ndarray, y: np.ndarray, weights: np.ndarray, l2: float) -> np.ndarray:
    eye = l2 * np.eye(X.shape[1])

    def fun(theta):
        eta = X @ theta
        return float(weights @ (np.logaddexp(0.0, eta) - y * eta) + 0.5 * l2 * theta @ theta)

    def jac(theta):
        return X.T @ (weights * (special.expit(X @ theta) - y)) + l2 * theta

    def hess(theta):
        s = special.expit(X @ theta)
        return (X * (weights * s * (1.0 - s))[:, None]).T @ X + eye

    res = optimize.minimize(fun, np.zeros(X.shape[1]), method="trust-exact", jac=jac, hess=hess,
                            options={"gtol": GTOL, "maxiter": 500})
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
