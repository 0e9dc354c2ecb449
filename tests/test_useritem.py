"""Choosing k: per-matrix risks over the posterior, their independence from the chunking,
and the decision over k."""

import numpy as np
import pytest
import xarray as xr

from hybridpriv.models import UserItemModel
from hybridpriv.theory import user_item_risk
from hybridpriv.useritem import decide_k, posterior_risks, risk_over_matrices

COUNTS = [30, 18, 12, 9, 7, 5, 4, 3]


@pytest.fixture(scope="module")
def fitted():
    model = UserItemModel(COUNTS, 40)
    return model, model.sample(draws=10, tune=20, chains=2, seed=3)


def test_risks_do_not_depend_on_the_chunking(fitted):
    model, idata = fitted
    one = posterior_risks(model, idata, range(1, 5), 1.0, seed=1, chunk_size=1)
    two = posterior_risks(model, idata, range(1, 5), 1.0, seed=1, chunk_size=7)
    xr.testing.assert_identical(one, two)
    assert one.dims == ("k", "chain", "draw") and one.shape == (4, 2, 10)


def test_risks_are_the_exact_risk_of_the_models_matrices(fitted):
    model, idata = fitted
    risk = posterior_risks(model, idata, [2, 3], 0.5, seed=4)
    mats = list(model.matrices_from(idata, seed=4))  # (draw, chain) order
    for i, mat in enumerate(mats):
        c, d = i % 2, i // 2
        np.testing.assert_allclose(risk.sel(chain=c, draw=d).values, user_item_risk(mat, np.array([2, 3]), 0.5))
    again = risk_over_matrices(iter(mats), (2, 10), [2, 3], 0.5)
    np.testing.assert_allclose(again.values, risk.values)


def test_monte_carlo_loss_path_runs_and_is_close_for_the_squared_loss(fitted):
    model, idata = fitted
    exact = posterior_risks(model, idata, [2], 1.0, seed=0)
    mc = posterior_risks(model, idata, [2], 1.0, loss="squared", seed=0)
    xr.testing.assert_identical(exact, mc)  # "squared" always uses the closed form
    mx = posterior_risks(model, idata, [1, 3], 1.0, loss="max", trials=50, seed=0)
    assert np.isfinite(mx).all() and (mx > 0).all()


def test_decision_over_k():
    rng = np.random.default_rng(0)
    base = np.array([5.0, 3.0, 2.0, 2.5])[:, None, None]
    risk = xr.DataArray(base + rng.normal(0, 0.05, size=(4, 2, 30)), dims=("k", "chain", "draw"),
                        coords={"k": [1, 2, 3, 4]})
    dec = decide_k(risk)
    assert dec.attrs["recommended"] == 3 and int(dec["recommended"]) == 3
    assert list(dec.k.values) == [1, 2, 3, 4]
    assert float(dec.p_best.sel(k=3)) > 0.9


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"ks": [0, 1]}, r"ks must be a non-empty sequence of integers >= 1"),
        ({"ks": [1, 1]}, r"ks must not repeat a value"),
        ({"epsilon": -1}, r"epsilon must be > 0, got -1"),
        ({"loss": "huber"}, r"loss must be one of"),
        ({"chunk_size": 0}, r"chunk_size must be an integer >= 1, got 0"),
    ],
)
def test_bad_arguments(fitted, kwargs, match):
    model, idata = fitted
    args = {"ks": [1, 2], "epsilon": 1.0} | kwargs
    with pytest.raises(ValueError, match=match):
        posterior_risks(model, idata, **args)
