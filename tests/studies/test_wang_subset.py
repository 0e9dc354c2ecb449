"""The quick version of the wang-subset study: structure, budget accounting, independent recomputation
of some cells, the public-only selector's blindness to D, and the paper's qualitative claim."""

import math
import warnings

import numpy as np
import pytest
from hybridpriv.studies import wang_subset
from scipy.special import expit

from hybridpriv.core.random import rng as stream_rng
from hybridpriv.families.public_private.wang import (
    Algorithm2,
    LogisticContrast,
    Section51Source,
    distance,
    hybrid_oracle,
    prediction_error,
    private_fit,
    public_only,
    rescale,
)

pytestmark = pytest.mark.slow  # end-to-end runs (minutes on 2 cores)


@pytest.fixture(scope="module")
def quick():
    return wang_subset.run(quick=True, seed=0)


def _data(ds, repeat):
    """A repeat's dataset: the engine's stream ("dataset", 0, repeat) of seed 0 (docs/reproduction-wang.md)."""
    src = Section51Source(2, ds.attrs["n_private"], ds.attrs["n_public"], ds.attrs["repeats"])
    return src.generate(0, repeat, stream_rng(0, "dataset", 0, repeat))


def test_structure(quick):
    pe = quick["prediction_error"]
    assert pe.dims == ("method", "p", "epsilon", "repeat", "subset_size")
    assert list(quick.method.values) == list(wang_subset.METHODS)
    assert list(quick.epsilon.values) == [0.5, 1.0, 3.0] and list(quick.p.values) == [2]
    assert list(quick.subset_size.values) == [10, 60, 150, 300, 600] and quick.sizes["repeat"] == 2
    assert np.isfinite(pe).all()  # p = 2: every method, Lei included, at every size
    assert quick["distance"].dims == ("p", "epsilon", "repeat", "subset_size") and np.isfinite(quick["distance"]).all()
    assert set(np.unique(quick.chosen_size)) <= set(quick.subset_size.values.tolist())
    assert np.isfinite(quick.expected_error.sel(selector=["budget_free_public", "budget_free_summaries"])).all()
    assert np.isnan(quick.expected_error.sel(selector=["algorithm2", "algorithm2_as_printed"])).all()
    assert (quick.model_max_rhat > 0.9).all() and (quick.model_min_ess > 0).all()


def test_equal_release_epsilon_and_summaries_flag(quick):
    # Algorithm 2's declaration (the accountant's eps1 + eps2 + eps3 = (0.8 + 0.2 + 1) eps) and both
    # budget-free releases' (2 eps on the weights, nothing on the choice) are the same per epsilon ...
    eps = quick.epsilon
    rel = quick.release_epsilon
    assert list(quick.selector.values) == ["algorithm2", "algorithm2_as_printed", "budget_free_public",
                                           "budget_free_summaries"]
    np.testing.assert_allclose(rel.sel(selector="algorithm2"), (2 * eps).broadcast_like(rel.sel(selector="algorithm2")),
                               rtol=1e-12)
    # as printed, the selection's Laplace(1/eps3) on each of the k = 5 criteria is charged k eps3
    np.testing.assert_allclose(rel.sel(selector="algorithm2_as_printed"),
                               ((0.8 + 0.2 + 5 * 1.0) * eps).broadcast_like(rel.sel(selector="algorithm2")), rtol=1e-12)
    # every curve of the figure charges 2 eps in all (the noisy order's eps1 included) but the candidates'
    me = quick.method_epsilon.sel(p=2)
    for m in ("dp_hybrid", "lei", "budget_free_public_curve", "budget_free_summaries_curve"):
        np.testing.assert_allclose(me.sel({"method": m}), 2 * eps, rtol=1e-12, err_msg=m)
    np.testing.assert_allclose(me.sel({"method": "algorithm2_candidates"}), (0.8 + 0.2 / 5) * eps, rtol=1e-12)
    assert (me.sel({"method": "public_only"}) == 0).all() and np.isinf(me.sel({"method": "nonprivate_hybrid"})).all()
    for sel in ("budget_free_public", "budget_free_summaries"):
        np.testing.assert_allclose(rel.sel(selector=sel), rel.sel(selector="algorithm2"), rtol=1e-12)
    # ... but only the public-only selector is at equal privacy cost: the summaries variant relies
    # on D's exact summaries, assumed published independently before this release
    flags = quick.uses_published_summaries
    assert flags.dtype == bool
    assert flags.sel(selector="budget_free_summaries").item() is True
    assert not flags.sel(selector=["algorithm2", "algorithm2_as_printed", "budget_free_public"]).any()
    assert "published independently" in quick.attrs["budget_free_summaries_model_knowledge"]
    # the public-only model's knowledge of D is its size alone
    k = wang_subset.knowledge("budget_free_public", _data(quick, 0))
    assert (k.n, k.covariate_mean, k.covariate_variance, k.outcome_rate) == (600, None, None, None)


def test_public_only_selector_never_sees_D(quick, monkeypatch):
    """Replace D (covariates and outcomes) and keep E: the public-only model's predictions, order and
    choice must not move; the summaries model's must (so this check can detect a leak of D)."""
    real = Section51Source.generate

    def other_D(self, chain, draw, rng):
        data = real(self, chain, draw, rng)
        alt = np.random.default_rng(12345)
        X = 1.5 * alt.standard_normal((data.n_private, 2)) + 0.7
        y = (alt.random(data.n_private) < 0.8).astype(float)
        return type(data)(np.column_stack([X, y]), data.public, columns=data.columns, label=data.label)

    base = quick.isel(repeat=[0])  # repeat 0 has the same seeds in a one-repeat run
    monkeypatch.setattr(Section51Source, "generate", other_D)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
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
        data = _data(quick, r)
        D, E, Xd = data.private, data.public, data.private[:, :2]
        ref = private_fit(D, c)
        pe = quick.prediction_error.sel(p=2, repeat=r)
        # public-only: constant, the unweighted public fit
        want = prediction_error(public_only(E, c), Xd, reference=ref)
        np.testing.assert_allclose(pe.sel({"method": "public_only"}), want, rtol=1e-9)
        # the non-private hybrid on every public point does not depend on the order (or epsilon)
        want = prediction_error(hybrid_oracle(D, E, c), Xd, reference=ref)
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
        # Algorithm 2's release and its chosen size belong to one run: its stream ("mechanism", label, 0, r);
        # algorithm2: Brier criterion and report-noisy-min; as printed: the paper's criterion and selection noise
        for eps in quick.epsilon.values:
            e1, e2, e3 = (f * eps for f in wang_subset.EPS_SPLIT)
            for label, kw in (("algorithm2", {"criterion": "brier"}), ("algorithm2_as_printed", {"selection": "paper"})):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    mech = Algorithm2(c, (e1, e2, e3), list(quick.subset_size.values), **kw)
                res = mech.run(data, stream_rng(0, "mechanism", f"{label}|{eps:g}", 0, r))
                sel = {"selector": label, "p": 2, "epsilon": eps, "repeat": r}
                assert int(quick.chosen_size.sel(sel)) == res.chosen_size
                want = np.sqrt(((expit(Xd @ res.theta) - expit(Xd @ ref)) ** 2).sum())
                assert float(quick.chosen_error.sel(sel)) == pytest.approx(want, rel=1e-9)


def test_distance_decreases_with_the_subset(quick):
    # nested subsets of one order: adding public points can only shorten every private point's nearest distance
    d = quick.distance.sel(p=2)
    assert (d.diff("subset_size") <= 1e-12).all()


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


def test_config_grids():
    cfg = wang_subset.config(quick=False)
    assert cfg["ps"] == (2, 100) and cfg["n"] == 10_000 and cfg["repeats"] == 10
    assert cfg["sizes"][2] == tuple(range(10, 3000, 50)) and len(cfg["sizes"][100]) == 9
    assert wang_subset.config(quick=True, ps=(5,), repeats=3)["sizes"][5] == tuple(range(30, 601, 30))
    assert math.isclose(sum(wang_subset.EPS_SPLIT), 2.0)
    full = wang_subset.config(full=True)  # the paper's p = 100 grid: 100 to 9,900 by 200
    assert full["sizes"][100] == tuple(range(100, 9901, 200)) and len(full["sizes"][100]) == 50
    assert full["sizes"][2] == cfg["sizes"][2] and full["repeats"] == 10
    with pytest.raises(ValueError, match="quick and full exclude each other"):
        wang_subset.config(quick=True, full=True)


def test_claims_recomputed_from_the_dataset(quick):
    """The claims' numbers and verdicts against a direct numpy reading of the dataset."""
    rows = wang_subset.claims(quick)
    assert [r.where for r in rows] == ["Sec. 4, Fig. 4", "Sec. 5.1, Figs. 5-6", "Sec. 5.1, Figs. 5-6",
                                       "Sec. 5.1, Figs. 5-6", "Sec. 5.1, Fig. 5", "Sec. 5.1", "Sec. 5.1, Alg. 2"]
    pe = quick.prediction_error.sel(p=2).values  # (method, epsilon, repeat, size)
    m = list(quick.method.values)
    dp, npv, lei = pe[m.index("dp_hybrid")], pe[m.index("nonprivate_hybrid")], pe[m.index("lei")]
    # Fig. 4: the distance averaged over epsilon and repeats, first and last size
    d = quick.distance.sel(p=2).values.mean(axis=(0, 1))
    assert f"{d[0]:.3g} at 10 points -> {d[-1]:.3g} at 600" in rows[0].ours
    # larger epsilon, closer to the non-private hybrid: the ratio of mean curves, averaged over sizes
    ratio = (dp.mean(axis=1) / npv.mean(axis=1)).mean(axis=1)
    assert all(f"{r:.2f} (eps = {e:g})" in rows[2].ours for r, e in zip(ratio, [0.5, 1, 3]))
    assert rows[2].verdict == ("holds" if (np.diff(ratio) < 0).all() else "does not hold")
    # the best size in hindsight at the smallest epsilon, as a share of E
    best = int(quick.subset_size.values[np.argmin(dp[0].mean(axis=0))])
    assert f"{best} points ({100 * best / 600:.1f}% of E)" in rows[3].ours
    assert rows[3].verdict == ("holds" if 0.05 <= best / 600 <= 0.2 else "does not hold")
    # the oracle against Lei, both at 2 eps
    oracle = dp.mean(axis=1).min(axis=1)
    lei_m = lei[:, :, 0].mean(axis=1)
    for e, o, lei_e in zip([0.5, 1, 3], oracle, lei_m):
        assert f"eps = {e:g}: oracle {o:.3g}" in rows[4].ours and f"Lei {lei_e:.3g}" in rows[4].ours
    assert rows[4].verdict == {3: "holds", 0: "does not hold"}.get(int((oracle < lei_m).sum()), "partly")
    # Algorithm 2's release against the oracle
    a2 = quick.chosen_error.sel(selector="algorithm2", p=2).values.mean(axis=1)
    assert all(f"eps = {e:g}: {v / o:.2f} (as printed" in rows[6].ours for e, v, o in zip([0.5, 1, 3], a2, oracle))


def test_the_run_holds_blas_to_one_thread_and_gives_it_back(monkeypatch):
    """BLAS at one thread while the study runs (its fits' products are small: two threads cost twice the CPU),
    the process's own setting afterwards."""
    from threadpoolctl import threadpool_info, threadpool_limits

    seen = []
    real = wang_subset.select_subset_size

    def spy(*args, **kw):
        seen.extend(m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas")
        return real(*args, **kw)

    monkeypatch.setattr(wang_subset, "select_subset_size", spy)
    with threadpool_limits(limits=2, user_api="blas"):
        before = [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]
        wang_subset.run(quick=True, repeats=1)
        after = [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]
    assert seen and set(seen) == {1}
    assert after == before
