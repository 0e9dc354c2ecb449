"""hybridpriv.theory._xarray: the one xarray wrapper of the theory functions (NumPy first, xarray in -> xarray out).

Expected values are computed here with plain NumPy (outer products, explicit loops), not by the wrapper.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hybridpriv.theory._xarray import axis, xarray_aware


@xarray_aware
def _affine(x, a=2.0, b=0.0):
    """An element-wise formula (what every Avent et al. function is)."""
    return a * np.asarray(x, dtype=float) + b


@xarray_aware(n_out=2)
def _split(x, y):
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return x + y, x * y


@xarray_aware(core_dims={"sizes": ("group",)}, output_core_dims=[("group",)])
def _shares(sizes, scale=1.0):
    """A formula over a whole axis (as the Ferrando weights are): sizes / sum(sizes) along the last axis."""
    s = np.asarray(sizes, dtype=float)
    return np.asarray(scale, dtype=float)[..., None] * s / s.sum(axis=-1, keepdims=True)


@xarray_aware(core_dims={"sizes": ("group",)})
def _total(sizes, weight):
    s = np.asarray(sizes, dtype=float)
    return np.asarray(weight, dtype=float) * s.sum(axis=-1)


def test_numpy_in_numpy_out_unchanged():
    assert _affine(3.0) == 6.0
    np.testing.assert_array_equal(_affine(np.array([1.0, 2.0]), b=1.0), [3.0, 5.0])
    a, b = _split(2.0, 5.0)
    assert (float(a), float(b)) == (7.0, 10.0)
    assert _affine.numpy is _affine.__wrapped__  # the NumPy function is reachable
    assert "element-wise" in _affine.__doc__


def test_dimensions_broadcast_by_name_and_coordinates_kept():
    x = axis("n", [1.0, 10.0, 100.0])
    a = axis("c", [0.5, 2.0])
    out = _affine(x, a=a, b=1.0)
    assert isinstance(out, xr.DataArray) and set(out.dims) == {"n", "c"}
    expected = np.outer([1.0, 10.0, 100.0], [0.5, 2.0]) + 1.0  # (n, c)
    np.testing.assert_allclose(out.transpose("n", "c").values, expected)
    assert list(out.coords["c"].values) == [0.5, 2.0]
    # the same dimension on both sides is aligned, not crossed
    s, p = _split(x, x * 2)
    np.testing.assert_allclose(s.values, [3.0, 30.0, 300.0])
    np.testing.assert_allclose(p.values, [2.0, 200.0, 20000.0])
    assert s.dims == ("n",)


def test_core_dims_consume_a_named_axis():
    sizes = xr.DataArray([[1.0, 3.0], [2.0, 2.0], [5.0, 5.0]], dims=("setting", "group"))
    out = _shares(sizes.transpose("group", "setting"))  # the core dim need not be last on input
    assert isinstance(out, xr.DataArray) and out.dims == ("setting", "group")
    np.testing.assert_allclose(out.values, [[0.25, 0.75], [0.5, 0.5], [0.5, 0.5]])
    # a plain sequence of the core axis beside a DataArray of another argument
    scale = axis("scale", [1.0, 10.0])
    out = _shares([1.0, 1.0, 2.0], scale=scale)
    assert out.dims == ("scale", "group")
    np.testing.assert_allclose(out.values, [[0.25, 0.25, 0.5], [2.5, 2.5, 5.0]])
    tot = _total([1.0, 2.0, 3.0], axis("w", [1.0, 0.5]))
    assert tot.dims == ("w",)
    np.testing.assert_allclose(tot.values, [6.0, 3.0])


def test_refusals_name_the_argument():
    x = axis("n", [1.0, 2.0])
    with pytest.raises(TypeError, match="a: mix DataArrays only with scalars"):
        _affine(x, a=np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="b: mix DataArrays only with scalars"):
        _affine(x, b=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"sizes must have the dimension\(s\) \['group'\]"):
        _shares(xr.DataArray([1.0, 2.0], dims="g"))
    with pytest.raises(TypeError, match="scale: mix DataArrays"):
        _shares(xr.DataArray([1.0, 2.0], dims="group"), scale=np.ones((2, 2)))
    with pytest.raises(ValueError, match="n_out must be an integer >= 1"):
        xarray_aware(n_out=0)
    with pytest.raises(ValueError, match="one entry per output"):
        xarray_aware(n_out=2, output_core_dims=[("a",)])
    with pytest.raises(ValueError, match=r"core_dims names arguments \['nope'\]"):
        xarray_aware(core_dims={"nope": ("g",)})(lambda x: x)
    with pytest.raises(TypeError, match="core_dims"):
        xarray_aware(core_dims={"x": "group"})
    with pytest.raises(ValueError, match="must be 1-D"):
        axis("n", [[1.0]])
