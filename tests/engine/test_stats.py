"""The Monte Carlo summaries of engine.stats: their values, and that an error is described as an error."""

import numpy as np
import xarray as xr

from hybridpriv.engine.stats import mcse_mean, mean_with_se, ratio_with_se


def _risk(values, dims=("chain", "draw")):
    return xr.DataArray(values, dims=dims, attrs={"description": "expected squared error given the dataset"})


def test_standard_errors_describe_themselves_not_the_quantity():
    # issue 25 finding: mse_mc_se was described as "expected squared error given the dataset"
    rng = np.random.default_rng(0)
    x = _risk(rng.normal(3.0, 1.0, (2, 400)))
    m, se = mean_with_se(x, ("chain", "draw"))
    assert m.attrs["description"] == "expected squared error given the dataset"
    assert se.attrs["description"].startswith("Monte Carlo standard error (over chain, draw) of: expected squared")
    assert abs(float(se) - float(x.std(ddof=1)) / np.sqrt(800)) < 1e-12  # sd / sqrt(n), by hand
    assert mcse_mean(x).attrs["description"].startswith("Monte Carlo standard error of the mean")
    r, r_se = ratio_with_se(x.isel(chain=0), x.isel(chain=1) + 1.0, "draw")
    assert r.attrs["description"].startswith("ratio of the means of") and "delta method" in r_se.attrs["description"]


def test_the_ratio_standard_error_covers_the_spread_over_replicates():
    # the delta-method se of mean(a)/mean(b) against the sd of the ratio over 400 independent replicates
    rng = np.random.default_rng(1)
    ratios, ses = [], []
    for _ in range(400):
        common = rng.normal(0.0, 1.0, 200)
        a = xr.DataArray(5.0 + common + rng.normal(0, 1, 200), dims="draw")
        b = xr.DataArray(4.0 + common + rng.normal(0, 1, 200), dims="draw")
        r, se = ratio_with_se(a, b)
        ratios.append(float(r))
        ses.append(float(se))
    sd = np.std(ratios, ddof=1)
    # the sd over 400 replicates is known to about 3.5% (1/sqrt(2 * 399)): the mean se must agree within 15%
    assert abs(np.mean(ses) / sd - 1.0) < 0.15, (np.mean(ses), sd)


def _strata_replicate(rng, chains=4, per=60, means=(1.0, 3.0, 8.0), phi=0.5):
    """Draws laid out as a pooled mixture's: in each chain, stratum 0's block, then 1's, then 2's; AR(1) within."""
    blocks, labels = [], []
    for j, mu in enumerate(means):
        e = rng.normal(0.0, 1.0, (chains, per))
        x = np.empty_like(e)
        x[:, 0] = e[:, 0] / np.sqrt(1 - phi**2)
        for t in range(1, per):
            x[:, t] = phi * x[:, t - 1] + e[:, t]
        blocks.append(mu + x)
        labels.append(np.full((chains, per), j))
    return _risk(np.concatenate(blocks, axis=1)).assign_coords(
        stratum=(("chain", "draw"), np.concatenate(labels, axis=1)))


def test_the_stratified_error_matches_the_spread_of_the_mean_over_replicates():
    # 400 independent replicates of a three-stratum pooled posterior (means 1, 3, 8 laid one after another in
    # each of 4 chains, AR(1) phi = 0.5 within): the sd of the overall mean is known to ~3.5%; the stratified
    # error must agree within 15%, while ESS over the pooled series (what mcse_mean did) is inflated many times
    from hybridpriv.engine.stats import _mcse_mean

    rng = np.random.default_rng(2)
    means, stratified, pooled = [], [], []
    for _ in range(400):
        x = _strata_replicate(rng)
        means.append(float(x.mean()))
        stratified.append(float(mcse_mean(x)))
        pooled.append(float(_mcse_mean(x.drop_vars("stratum"))))
    sd = np.std(means, ddof=1)
    # the true sd by its own derivation: each stratum's mean of 240 AR(1) draws has variance
    # (1 / (1 - phi^2)) (1 + phi) / (1 - phi) / 240 (large-sample), weighted (1/3)^2 each
    theory = np.sqrt(3 * (1 / 3) ** 2 * (1 / (1 - 0.25)) * 1.5 / 0.5 / 240)
    assert abs(sd / theory - 1.0) < 0.15, (sd, theory)
    assert abs(np.mean(stratified) / sd - 1.0) < 0.15, (np.mean(stratified), sd)
    assert np.mean(pooled) > 5 * sd, (np.mean(pooled), sd)


def test_the_stratified_error_reduces_to_the_plain_one_and_keeps_other_dims():
    from hybridpriv.engine.stats import _mcse_mean, stratified_mcse_mean

    rng = np.random.default_rng(3)
    x = _risk(rng.normal(0.0, 1.0, (3, 2, 90)), dims=("k", "chain", "draw")).assign_coords(k=[1, 2, 4])
    one = x.assign_coords(stratum=(("chain", "draw"), np.zeros((2, 90), dtype=int)))
    np.testing.assert_allclose(mcse_mean(one).values, _mcse_mean(x).values, rtol=1e-12)  # one stratum: the same
    assert mcse_mean(one).dims == ("k",) and mcse_mean(one)["k"].values.tolist() == [1, 2, 4]
    # two strata with different counts per chain: each is read as one series; by hand with the plain function
    s = np.zeros((2, 90), dtype=int)
    s[0, 60:] = 1
    s[1, 30:] = 1
    two = x.assign_coords(stratum=(("chain", "draw"), s))
    by_hand = []
    for j in (0, 1):
        vals = x.values[:, s == j]
        part = _risk(vals[:, None, :], dims=("k", "chain", "draw"))
        by_hand.append((vals.shape[1] / 180) ** 2 * _mcse_mean(part).values ** 2)
    np.testing.assert_allclose(stratified_mcse_mean(x, two["stratum"]).values, np.sqrt(sum(by_hand)), rtol=1e-12)
    np.testing.assert_allclose(mcse_mean(two).values, np.sqrt(sum(by_hand)), rtol=1e-12)


def test_strata_that_are_not_integers_or_do_not_fit_are_refused():
    import pytest

    from hybridpriv.engine.stats import stratified_mcse_mean

    x = _risk(np.zeros((2, 10)))
    with pytest.raises(ValueError, match="strata must hold integers"):
        stratified_mcse_mean(x, xr.DataArray(np.zeros((2, 10)), dims=("chain", "draw")))
    with pytest.raises(ValueError, match=r"strata must have the \(chain, draw\) shape \(2, 10\)"):
        stratified_mcse_mean(x, xr.DataArray(np.zeros((2, 9), dtype=int), dims=("chain", "draw")))
