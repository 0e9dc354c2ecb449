"""Validation shared by the Avent et al. formulas: every error names the parameter and the bad value."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ...core.privacy import check_real_array

__all__ = ["AMPLIFICATION_GROUPS", "BENCHMARKS", "CALIBRATIONS", "NOISES"]

#: Noise distributions of :func:`noise_variances`.
NOISES = ("laplace", "gaussian")
#: Gaussian calibrations: ``"classic"`` ``s = sqrt(2 ln(1.25/delta)) Delta / epsilon`` (the paper's,
#: proven for epsilon < 1), ``"analytic"`` (Balle & Wang 2018, exact, any epsilon).
CALIBRATIONS = ("classic", "analytic")
#: What the MSE is measured against: the empirical mean of all records (the paper) or the mixture mean.
BENCHMARKS = ("empirical", "population")
#: Whose amplified epsilon :func:`amplified_epsilon` returns.
AMPLIFICATION_GROUPS = ("worst", "tcm", "lm", "paper")


def _fmt_interval(lo, hi, lo_open, hi_open) -> str:
    left = "(" if lo_open else "["
    right = ")" if hi_open else "]"
    lo_s = "-inf" if lo is None else f"{lo:g}"
    hi_s = "inf" if hi is None else f"{hi:g}"
    return f"{left}{lo_s}, {hi_s}{right}"


def _arr(
    x: object,
    name: str,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    allow_inf: bool = False,
) -> np.ndarray:
    """``x`` as a float array after checking it is real, not NaN, (finite) and inside the interval."""
    a = check_real_array(x, name)
    if np.isnan(a).any():
        raise ValueError(f"{name} must not be NaN, got nan")
    if not allow_inf and np.isinf(a).any():
        raise ValueError(f"{name} must be finite, got {float(a[np.isinf(a)].flat[0]):g}")
    bad = np.zeros(a.shape, dtype=bool)
    if lo is not None:
        bad |= (a <= lo) if lo_open else (a < lo)
    if hi is not None:
        bad |= (a >= hi) if hi_open else (a > hi)
    if bad.any():
        raise ValueError(f"{name} must be in {_fmt_interval(lo, hi, lo_open, hi_open)}, got {float(a[bad].flat[0]):g}")
    return a


def _choice(value: object, name: str, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def _out(x: np.ndarray) -> float | np.ndarray:
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x



def _nc(n: object, c: object) -> tuple[np.ndarray, np.ndarray]:
    return _arr(n, "n", lo=0.0, lo_open=True), _arr(c, "c", lo=0.0, hi=1.0, lo_open=True, hi_open=True)


def _var(x: object, name: str) -> np.ndarray:
    return _arr(x, name, lo=0.0)


def _real(x: object, name: str) -> np.ndarray:
    return _arr(x, name)


def _divide(num: object, den: np.ndarray, fallback: object) -> np.ndarray:
    """``num / den`` where ``den > 0``, ``fallback`` elsewhere (no division by zero is evaluated)."""
    positive = den > 0
    return np.where(positive, num / np.where(positive, den, 1.0), fallback)



def _check_w(w: object) -> np.ndarray:
    return _arr(w, "w", lo=0.0, hi=1.0)



def _fmt_arg(value: object) -> str:
    a = np.asarray(value) if not isinstance(value, str) else None
    if a is None or a.dtype.kind not in "biuf":
        return repr(value)
    return f"{float(a):g}" if a.ndim == 0 else f"<array of shape {a.shape}>"


def _finite_result(allow_inf: bool = False):
    """Decorator: evaluate the formula with floating-point warnings off, then refuse a non-finite result.

    The Avent et al. formulas are finite for every valid input in exact arithmetic; when an input
    is so extreme (a variance of ``1e300``, ``n = 1e12`` squared, ...) that an intermediate
    overflows, the result would be ``inf`` or ``NaN``.  Instead a ``ValueError`` names every
    argument with its value.  ``allow_inf=True`` (for the functions whose ``+-inf`` is a
    documented, mathematically right answer) refuses only ``NaN``.
    """

    def decorate(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                out = fn(*args, **kwargs)
            for part in out if isinstance(out, tuple) else (out,):
                a = np.asarray(part, dtype=float)
                bad = np.isnan(a) if allow_inf else ~np.isfinite(a)
                if bad.any():
                    bound = sig.bind(*args, **kwargs)
                    bound.apply_defaults()
                    inputs = ", ".join(f"{k}={_fmt_arg(v)}" for k, v in bound.arguments.items())
                    raise ValueError(
                        f"{fn.__name__} is {float(a[bad].flat[0])} (not a finite number) for {inputs}: "
                        "an input is too extreme for floating point"
                    )
            return out

        return wrapper

    return decorate
