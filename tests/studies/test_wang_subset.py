"""The quick version of the wang-subset study: structure, budget accounting, independent recomputation
of some cells, and the paper's qualitative claim (a U-shaped DP error curve)."""

import math

import numpy as np
import pytest

from hybridpriv.estimators.wang import (
    LogisticContrast,
    distance,
    hybrid_oracle,
    prediction_error,
    private_fit,
    public_only,
    rescale,
)
from hybridpriv.studies import wang_subset


@pytest.fixture(scope="module")
def quick():
    return wang_subset.run(quick=True, seed=0)


def _data(ds, p_index, repeat):
    """Regenerate a repeat's data from the study's documented seed scheme."""
    ss_data = np.random.SeedSequence(0, spawn_key=(p_index, repeat)).spawn(5)[0]
    return wang_subset.simulate(2, ds.attrs["n_private"], ds.attrs["n_public"], np.random.default_rng(ss_data))


def test_structure(quick):
    pe = quick["prediction_error"]
    assert pe.dims == ("method", "p", "epsilon", "repeat", "subset_size")
    assert list(quick.method.values) == list(wang_subset.METHODS)
    assert list(quick.epsilon.values) == [0.5, 1.0, 3.0] and list(quick.p.values) == [2]
    assert list(quick.subset_size.values) == [10, 60, 150, 300, 600] and quick.sizes["repeat"] == 2
    assert np.isfinite(pe).all()  # p = 2: every method, Lei included, at every size
    assert quick["distance"].dims == ("p", "epsilon", "repeat", "subset_size")
    assert set(np.unique(quick.chosen_size)) <= set(quick.subset_size.values.tolist())


def test_equal_release_epsilon_and_summaries_flag(quick):
    # Algorithm 2's accountant: eps1 + eps2 + eps3 = (0.8 + 0.2 + 1) eps; both budget-free releases
    # charge the same 2 eps to this release (all on the weights, nothing on the choice) ...
    eps = quick.epsilon
    rel = quick.release_epsilon
    assert list(quick.selector.values) == ["algorithm2", "budget_free_public", "budget_free_summaries"]
    np.testing.assert_allclose(rel.sel(selector="algorithm2"), (2 * eps).broadcast_like(rel.sel(selector="algorithm2")),
                               rtol=1e-12)
    for sel in ("budget_free_public", "budget_free_summaries"):
        np.testing.assert_allclose(rel.sel(selector=sel), rel.sel(selector="algorithm2"), rtol=1e-12)
    # ... but only the public-only selector is at equal privacy cost: the summaries variant relies
    # on D's exact summaries, assumed published independently before this release
    flags = quick.uses_published_summaries
    assert flags.dtype == bool
    assert flags.sel(selector="budget_free_summaries").item() is True
    assert not flags.sel(selector="algorithm2").item() and not flags.sel(selector="budget_free_public").item()
    assert "published independently" in quick.attrs["budget_free_summaries_model_knowledge"]
    # the public-only model's knowledge of D is its size alone
    k = wang_subset.public_knowledge(600)
    assert (k.n, k.covariate_mean, k.covariate_variance, k.outcome_rate) == (600, None, None, None)


def test_public_only_selector_never_sees_D(quick, monkeypatch):
    """Replace D (covariates and outcomes) and keep E: the public-only model's predictions, order and
    choice must not move; the summaries model's must (so this check can detect a leak of D)."""
    real = wang_subset.simulate

    def other_D(p, n_private, n_public, rng):
        sim = real(p, n_private, n_public, rng)
        alt = np.random.default_rng(12345)
        sim["Xd"] = 1.5 * alt.standard_normal(sim["Xd"].shape) + 0.7
        sim["yd"] = (alt.random(n_private) < 0.8).astype(float)
        return sim

    base = quick.isel(repeat=[0])  # repeat 0 has the same seeds in a one-repeat run
    monkeypatch.setattr(wang_subset, "simulate", other_D)
    changed = wang_subset.run(quick=True, seed=0, repeats=1)
    pub = {"selector": "budget_free_public"}
    np.testing.assert_array_equal(changed.expected_error.sel(pub), base.expected_error.sel(pub))
    np.testing.assert_array_equal(changed.chosen_size.sel(pub), base.chosen_size.sel(pub))
    summ = {"selector": "budget_free_summaries"}
    assert not np.allclose(changed.expected_error.sel(summ), base.expected_error.sel(summ))
    # D did change: the releases' errors (evaluated on D) differ
    assert not np.allclose(changed.chosen_error.sel(pub), base.chosen_error.sel(pub))


def test_cells_recomputed_independently(quick):
    c = LogisticContrast()
    for r in range(2):
        sim = _data(quick, 0, r)
        D = np.column_stack([sim["Xd"], sim["yd"]])
        E = np.column_stack([sim["Xe"], sim["ye"]])
        ref = private_fit(D, c)
        pe = quick.prediction_error.sel(p=2, repeat=r)
        # public-only: constant, the unweighted public fit
        want = prediction_error(public_only(E, c), sim["Xd"], reference=ref)
        np.testing.assert_allclose(pe.sel({"method": "public_only"}), want, rtol=1e-9)
        # the non-private hybrid on every public point does not depend on the order (or epsilon)
        want = prediction_error(hybrid_oracle(D, E, c), sim["Xd"], reference=ref)
        np.testing.assert_allclose(pe.sel({"method": "nonprivate_hybrid", "subset_size": 600}), want, rtol=1e-6)
        # d(D, E) with every public point, on the rescaled sets
        d01, e01, _ = rescale(D, E)
        np.testing.assert_allclose(quick.distance.sel(p=2, repeat=r, subset_size=600), distance(d01, e01), rtol=1e-12)
        # each budget-free release is its own curve at the chosen size
        for sel in ("budget_free_public", "budget_free_summaries"):
            for eps in quick.epsilon.values:
                n = int(quick.chosen_size.sel(selector=sel, p=2, epsilon=eps, repeat=r))
                assert float(quick.chosen_error.sel(selector=sel, p=2, epsilon=eps, repeat=r)) == float(
                    pe.sel({"method": f"{sel}_curve", "epsilon": eps, "subset_size": n}))


def test_distance_decreases_with_the_subset(quick):
    # nested subsets: adding public points can only shorten every private point's nearest distance
    d = quick.distance.sel(p=2)
    assert (d.diff("subset_size") <= 1e-12).all()


def test_simulation_setting():
    rng = np.random.default_rng(0)
    sim = wang_subset.simulate(2, 20_000, 20_000, rng)
    v = sim["Xe"].var(axis=0)
    # public variances (0.5, 1), private (1, 1), to 4 standard errors (sd of a variance: v sqrt(2/n))
    assert np.all(np.abs(v - [0.5, 1.0]) < 4 * np.array([0.5, 1.0]) * math.sqrt(2 / 20_000))
    assert np.all(np.abs(sim["Xd"].var(axis=0) - 1.0) < 4 * math.sqrt(2 / 20_000))
    assert np.all((sim["beta_d"] >= -1) & (sim["beta_d"] <= 1)) and np.all((sim["beta_e"] >= 0) & (sim["beta_e"] <= 0.5))
    big = wang_subset.simulate(100, 50, 50, rng)
    assert big["Xd"].shape == (50, 100) and big["beta_e"].shape == (100,)


def test_paper_claims_at_quick_scale(quick):
    pe = quick.prediction_error.sel(p=2).mean("repeat")
    dp = pe.sel({"method": "dp_hybrid"})
    sizes = quick.subset_size.values
    # the DP curve is U-shaped: its minimum is inside the grid at every epsilon
    for eps in quick.epsilon.values:
        k = int(np.argmin(dp.sel(epsilon=eps).values))
        assert 0 < k < len(sizes) - 1, (eps, dp.sel(epsilon=eps).values)
    # noise-free weights on every public point beat the DP weights there, and the public-only fit
    full = pe.sel(subset_size=600)
    assert (full.sel({"method": "nonprivate_hybrid"}) < full.sel({"method": "dp_hybrid"})).all()
    assert (full.sel({"method": "nonprivate_hybrid"}) < full.sel({"method": "public_only"})).all()


def test_plot(quick, tmp_path):
    path = tmp_path / "wang.png"
    wang_subset.plot(quick, path)
    assert path.stat().st_size > 10_000
    assert (tmp_path / "wang-distance.png").stat().st_size > 5_000
