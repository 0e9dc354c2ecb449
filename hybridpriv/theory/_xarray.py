"""The one xarray layer over the NumPy theory functions (xarray in, xarray out).

The layering of ``arviz-stats``: every formula in :mod:`hybridpriv.theory` is written for NumPy
(arguments broadcast as arrays, validation on the values); :func:`xarray_aware` wraps it so that
the same function, given :class:`xarray.DataArray` arguments, runs through
:func:`xarray.apply_ufunc` and returns DataArrays whose dimensions are broadcast *by name*.
Without a DataArray argument the wrapper calls the NumPy function directly (no overhead, same
return types).

Element-wise formulas (every Avent et al. risk) need no more than ``@xarray_aware``.  Formulas
that read a whole axis -- one value per privacy group, say -- name that axis per argument with
``core_dims`` (it is moved last before the NumPy function sees it) and the axes of their
results with ``output_core_dims``::

    @xarray_aware(core_dims={"sizes": ("group",), "epsilons": ("group",)},
                  output_core_dims=[("group",)])
    def mixed_mean_weights(sizes, epsilons, sigma2, sensitivity): ...

Rules: arguments that are not DataArrays are passed unchanged; they must be scalars, strings or
``None`` -- except arguments with core dimensions, which may be plain sequences holding exactly
those axes (e.g. the group sizes as a list beside a DataArray of ``sigma2``).  A NumPy array
beside DataArrays is refused (its axes have no names to broadcast by).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["axis", "xarray_aware"]


def axis(name: str, values: Sequence[float] | np.ndarray) -> xr.DataArray:
    """A grid axis: the float ``values`` as a 1-D DataArray over dimension ``name``, with itself as coordinate."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    v = np.asarray(values, dtype=float)
    if v.ndim != 1:
        raise ValueError(f"values of axis {name!r} must be 1-D, got shape {v.shape}")
    return xr.DataArray(v, dims=name, coords={name: v})


def _ndim(value: object) -> int:
    """Number of array axes of a non-DataArray argument (strings and ``None`` have none)."""
    if value is None or isinstance(value, (str, bytes)):
        return 0
    try:
        return int(np.ndim(value))
    except ValueError:  # ragged nested sequences
        return 1


def _check_dims(spec: object, what: str) -> tuple[str, ...]:
    if isinstance(spec, str) or not isinstance(spec, Sequence) or not all(isinstance(d, str) for d in spec):
        raise TypeError(f"{what} must be a sequence of dimension names, got {spec!r}")
    return tuple(spec)


def xarray_aware(
    func: Callable | None = None,
    *,
    n_out: int = 1,
    core_dims: Mapping[str, Sequence[str]] | None = None,
    output_core_dims: Sequence[Sequence[str]] | None = None,
) -> Callable:
    """Let a NumPy theory function take :class:`xarray.DataArray` arguments (see the module docstring).

    Parameters
    ----------
    func
        The NumPy function (when used as ``@xarray_aware`` without arguments).
    n_out
        How many arrays the function returns (a tuple when > 1).
    core_dims
        Argument name -> the dimensions the function consumes from that argument, in order (moved
        to the last axes); every other dimension is broadcast element-wise.
    output_core_dims
        One sequence of dimension names per output (default: none, i.e. element-wise results).

    Returns
    -------
    The wrapped function (same signature and docstring).
    """
    if not isinstance(n_out, int) or isinstance(n_out, bool) or n_out < 1:
        raise ValueError(f"n_out must be an integer >= 1, got {n_out!r}")
    cores = {str(k): _check_dims(v, f"core_dims[{k!r}]") for k, v in (core_dims or {}).items()}
    if output_core_dims is None:
        out_dims = [()] * n_out
    else:
        out_dims = [_check_dims(d, "output_core_dims entries") for d in output_core_dims]
        if len(out_dims) != n_out:
            raise ValueError(f"output_core_dims must give one entry per output ({n_out}), got {len(out_dims)}")

    def deco(f: Callable) -> Callable:
        sig = inspect.signature(f)
        unknown = [k for k in cores if k not in sig.parameters]
        if unknown:
            raise ValueError(f"core_dims names arguments {unknown} that {f.__name__} does not take")

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not any(isinstance(v, xr.DataArray) for v in (*args, *kwargs.values())):
                return f(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            names = [k for k, v in bound.arguments.items() if isinstance(v, xr.DataArray)]
            fixed = {k: v for k, v in bound.arguments.items() if k not in names}
            for k, v in fixed.items():
                if _ndim(v) > len(cores.get(k, ())):
                    raise TypeError(
                        f"{k}: mix DataArrays only with scalars (got {type(v).__name__} of shape {np.shape(v)}); "
                        "wrap it in an xarray.DataArray with named dimensions"
                    )
            for k in names:
                missing = [d for d in cores.get(k, ()) if d not in bound.arguments[k].dims]
                if missing:
                    raise ValueError(f"{k} must have the dimension(s) {missing} (it has {bound.arguments[k].dims})")

            def inner(*vals: np.ndarray) -> Any:
                res = f(**fixed, **dict(zip(names, vals)))
                if n_out == 1:
                    return np.asarray(res)
                return tuple(np.asarray(r) for r in res)

            return xr.apply_ufunc(
                inner,
                *[bound.arguments[k] for k in names],
                input_core_dims=[list(cores.get(k, ())) for k in names],
                output_core_dims=[list(d) for d in out_dims],
                dask="allowed",
            )

        wrapper.__signature__ = sig  # type: ignore[attr-defined]
        wrapper.numpy = f  # type: ignore[attr-defined]  (the NumPy function itself)
        return wrapper

    return deco(func) if func is not None else deco
