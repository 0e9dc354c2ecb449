"""Tests of hybridpriv.families.hybrid_trust.model: the curator's knowledge, the Bayes weight and the datasets it generates.

The closed form is checked three ways: against brute-force minimisation (SciPy) of the
draw-averaged ``hybridpriv.theory.avent.hybrid_mse``, against the heterogeneous and
homogeneous KVH weights of the theory module at point-mass posteriors, and, for a fitted
posterior, by concentration on the oracle KVH weight as pilot records accumulate.  The posterior
as a dataset source is checked against the draws PyMC stored (means, variances) and through the
engine (``evaluate``, ``decide``).  Fits use 300 tuning + 300 draws on 2 chains (cores=1); every
seed is fixed.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import xarray as xr
from hybridpriv.core.model import RHAT_FAIL, ConvergenceError, ConvergenceWarning
from hybridpriv.families.hybrid_trust.model import (
    HybridTrustModel,
    HybridTrustPosterior,
    bayes_weight_from_moments,
    fit_many,
)
from scipy import optimize, stats

from hybridpriv.core.privacy import Group
from hybridpriv.engine.decision import decide
from hybridpriv.engine.evaluate import evaluate
from hybridpriv.families.grouped import Statistic
from hybridpriv.families.hybrid_trust.mechanisms import FullLM, Hybrid, TCMOnly
from hybridpriv.theory.avent import (
    hybrid_mse,
    kvh_weight,
    kvh_weight_heterogeneous,
    noise_variances,
    pwh_weight,
)

logging.getLogger("pymc").setLevel(logging.ERROR)
FIT = dict(draws=300, tune=300, chains=2)

# settings (n, c, s_T2, s_L2) from the Laplace mechanism on [0, 2], and extreme ones
M = 2.0
SETTINGS = [
    (n, c, *noise_variances("laplace", eps, M, n, c))
    for n, c, eps in ((1000, 0.05, 1.0), (20_000, 0.005, 0.1), (300, 0.3, 5.0), (100_000, 0.05, 1.0))
] + [(50, 0.5, 0.0, 1.0), (1000, 0.01, 1e-3, 0.0)]

# truth of the concentration test: same mean, different variances on [0, 2]
T_AB, L_AB = (2.0, 2.0), (8.0, 8.0)
SIGMA_T2 = M**2 * stats.beta(*T_AB).var()
SIGMA_L2 = M**2 * stats.beta(*L_AB).var()


def _random_posterior(seed: int = 3, shape=(2, 400)) -> HybridTrustPosterior:
    rng = np.random.default_rng(seed)
    return HybridTrustPosterior.from_draws(
        sigma_T2=rng.gamma(4.0, 0.05, shape), sigma_L2=rng.gamma(2.0, 0.02, shape), gap=rng.normal(0.05, 0.1, shape)
    )


def _brute_force(post: HybridTrustPosterior, n, c, s_T2, s_L2, benchmark="empirical") -> float:
    res = optimize.minimize_scalar(
        lambda w: post.expected_mse(w, n, c, s_T2, s_L2, benchmark=benchmark), bounds=(0.0, 1.0), method="bounded",
        options={"xatol": 1e-12},
    )
    return float(res.x)


@pytest.fixture(scope="module")
def pilots():
    rng = np.random.default_rng(20240601)
    big_T, big_L = M * rng.beta(*T_AB, 2000), M * rng.beta(*L_AB, 2000)
    return big_T, big_L


@pytest.fixture(scope="module")
def joint(pilots):
    """One fit_many call: 2000 pilot records per group, and a model with no records (the prior)."""
    return fit_many([HybridTrustModel(M, pilot_T=pilots[0], pilot_L=pilots[1]), HybridTrustModel(M)], **FIT, seed=1)


@pytest.fixture(scope="module")
def concentrated(joint):
    return joint[0]


SIZES = (30, 270)


@pytest.fixture(scope="module")
def small_fit(pilots):
    return HybridTrustModel(M, homogeneous=True, pilot_T=pilots[0][:30], pilot_L=pilots[1][:30],
                            sizes=SIZES).fit(**FIT, seed=5)


# -- the closed form ---------------------------------------------------------------------


@pytest.mark.parametrize("benchmark", ["empirical", "population"])
@pytest.mark.parametrize("setting", SETTINGS)
def test_closed_form_equals_brute_force(setting, benchmark):
    post = _random_posterior()
    w = post.bayes_weight(*setting, benchmark=benchmark)
    assert 0.0 <= w <= 1.0
    assert abs(w - _brute_force(post, *setting, benchmark=benchmark)) < 1e-8


def test_closed_form_equals_brute_force_on_a_fitted_posterior(concentrated):
    for setting in SETTINGS[:3]:
        assert abs(concentrated.bayes_weight(*setting) - _brute_force(concentrated, *setting)) < 1e-8


def test_expected_mse_is_the_mse_at_the_plug_in_moments():
    # hybrid_mse is linear in sigma_T^2, sigma_L^2 and gap^2: the average over draws is the
    # MSE at E[sigma_T^2], E[sigma_L^2] and a gap of sqrt(E[gap^2])
    post = _random_posterior()
    e = post.moments
    for setting in SETTINGS:
        for w in (0.0, 0.3, 1.0):
            direct = hybrid_mse(w, setting[0], setting[1], e["sigma_T2"], e["sigma_L2"], *setting[2:],
                                np.sqrt(e["gap2"]), 0.0)
            assert post.expected_mse(w, *setting) == pytest.approx(float(direct), rel=1e-10)


@pytest.mark.parametrize("setting", SETTINGS[:4])
def test_point_mass_gives_the_kvh_weights(setting):
    n, c, s_T2, s_L2 = setting
    # heterogeneous: Definition 6.1 (means 0.3 and 0.5, so the gap is -0.2)
    post = HybridTrustPosterior.from_draws(0.04, 0.09, -0.2)
    w6 = kvh_weight_heterogeneous(n, c, 0.04, 0.09, s_T2, s_L2, 0.3, 0.5)
    assert post.bayes_weight(*setting) == pytest.approx(float(w6), rel=1e-12)
    # homogeneous: Definition 4.1
    post = HybridTrustPosterior.from_draws(0.07, 0.07)
    assert post.bayes_weight(*setting) == pytest.approx(float(kvh_weight(n, c, 0.07, s_T2, s_L2)), rel=1e-12)
    # no data variance and no gap: only the privacy error is left, which PWH balances (Def. 5.3)
    post = HybridTrustPosterior.from_draws(0.0, 0.0)
    assert post.bayes_weight(*setting) == pytest.approx(float(pwh_weight(n, c, s_T2, s_L2)), rel=1e-12)


def test_uncertain_gap_uses_the_mean_square_not_the_squared_mean():
    # gap draws +-0.2 (mean 0): the weight must see E[gap^2] = 0.04, not E[gap]^2 = 0
    n, c, s_T2, s_L2 = SETTINGS[0]
    post = HybridTrustPosterior.from_draws(np.full(400, 0.05), np.full(400, 0.05), np.tile([0.2, -0.2], 200))
    ref = kvh_weight_heterogeneous(n, c, 0.05, 0.05, s_T2, s_L2, 0.2, 0.0)
    assert post.bayes_weight(n, c, s_T2, s_L2) == pytest.approx(float(ref), rel=1e-12)
    assert abs(post.bayes_weight(n, c, s_T2, s_L2) - float(kvh_weight(n, c, 0.05, s_T2, s_L2))) > 0.1


def test_broadcasting_and_xarray():
    post = _random_posterior()
    n = np.array([1e3, 1e4, 1e5])
    s_T2, s_L2 = noise_variances("laplace", 1.0, M, n, 0.05)
    w = post.bayes_weight(n, 0.05, s_T2, s_L2)
    assert w.shape == (3,)
    for k in range(3):
        assert w[k] == pytest.approx(post.bayes_weight(float(n[k]), 0.05, float(s_T2[k]), float(s_L2[k])), rel=1e-12)
    wx = post.bayes_weight(xr.DataArray(n, dims="n"), 0.05, xr.DataArray(s_T2, dims="n"), xr.DataArray(s_L2, dims="n"))
    assert isinstance(wx, xr.DataArray) and wx.dims == ("n",)
    np.testing.assert_allclose(wx.values, w, rtol=1e-12)
    em = post.expected_mse(w, n, 0.05, s_T2, s_L2)
    assert em.shape == (3,) and isinstance(post.bayes_weight(1e3, 0.05, 1e-4, 1.0), float)


# -- the fitted model --------------------------------------------------------------------


def _kvh_per_draw(post, n, c, s_T2, s_L2):
    return kvh_weight_heterogeneous(n, c, post.sigma_T2.ravel(), post.sigma_L2.ravel(), s_T2, s_L2,
                                    post.gap.ravel(), 0.0)


def test_posterior_concentrates_on_the_oracle_kvh_weight(concentrated):
    post = concentrated
    assert post.max_rhat < 1.05
    n, c = 1000, 0.05
    s_T2, s_L2 = noise_variances("laplace", 1.0, M, n, c)
    oracle = float(kvh_weight_heterogeneous(n, c, SIGMA_T2, SIGMA_L2, s_T2, s_L2, 1.0, 1.0))
    # the truth lies in the posterior (99% intervals), which is narrow with 2000 records per group
    for name, truth in (("sigma_T2", SIGMA_T2), ("sigma_L2", SIGMA_L2), ("gap", 0.0)):
        lo, hi = np.quantile(getattr(post, name), [0.005, 0.995])
        assert lo <= truth <= hi, (name, lo, hi, truth)
    # the oracle weight lies in the posterior interval of the per-draw KVH weights, and the
    # Bayes weight is within that interval's width of it
    wd = _kvh_per_draw(post, n, c, s_T2, s_L2)
    lo, hi = np.quantile(wd, [0.005, 0.995])
    assert lo <= oracle <= hi
    w = post.bayes_weight(n, c, s_T2, s_L2)
    assert abs(w - oracle) < hi - lo < 0.1
    # its MSE at the truth is within 1% of the oracle's (the regret is second order in w - w*)
    mse = lambda x: float(hybrid_mse(x, n, c, SIGMA_T2, SIGMA_L2, s_T2, s_L2, 1.0, 1.0))  # noqa: E731
    assert mse(w) <= 1.01 * mse(oracle)
    # the prior alone is far less certain: its interval of KVH weights is several times wider
    prior = HybridTrustModel(M).prior(draws=2000, seed=0)
    plo, phi = np.quantile(_kvh_per_draw(prior, n, c, s_T2, s_L2), [0.005, 0.995])
    assert phi - plo > 5 * (hi - lo)


def test_homogeneous_fit_covers_the_pooled_variance(small_fit, pilots):
    # 60 records from two Betas with equal means: the homogeneous model sees one distribution
    # whose variance is the pooled one
    post = small_fit
    assert post.max_rhat < RHAT_FAIL
    assert np.all(post.gap == 0.0) and np.array_equal(post.sigma_T2, post.sigma_L2)
    pooled = 0.5 * (SIGMA_T2 + SIGMA_L2)
    lo, hi = np.quantile(post.sigma_T2, [0.005, 0.995])
    assert lo <= pooled <= hi
    assert set(post.idata["posterior"].data_vars) >= {"p0", "v", "sigma_T2", "gap"}


def test_prior_moments_match_their_closed_forms():
    # homogeneous prior: sigma^2 = m^2 v p (1 - p), v ~ Beta(2, 6), p ~ Beta(3, 3), independent
    model = HybridTrustModel(M, homogeneous=True, mean=(3.0, 3.0), variance_fraction=(2.0, 6.0))
    prior = model.prior(draws=4000, seed=2)
    expected = M**2 * (2 / 8) * (3 * 3 / (6 * 7))
    se = prior.sigma_T2.std() / np.sqrt(prior.sigma_T2.size)
    assert abs(prior.sigma_T2.mean() - expected) < 4 * se
    assert np.all(prior.sigma_T2 <= M**2 / 4) and np.all(prior.gap == 0)
    # heterogeneous prior: the gap is symmetric around 0 and the variances respect the bounds
    het = HybridTrustModel(M, gap_logit_sd=0.5).prior(draws=4000, seed=2)
    assert abs(het.gap.mean()) < 4 * het.gap.std() / np.sqrt(het.gap.size)
    assert np.all(np.abs(het.gap) < M) and np.all(het.sigma_T2 <= M**2 / 4) and np.all(het.sigma_L2 <= M**2 / 4)
    # a wider gap prior means a larger E[gap^2] and a weight closer to c (the unbiased weighting)
    wide = HybridTrustModel(M, gap_logit_sd=2.0).prior(draws=4000, seed=2)
    assert wide.moments["gap2"] > 4 * het.moments["gap2"]
    n, c, s_T2, s_L2 = SETTINGS[0]
    assert abs(wide.bayes_weight(n, c, s_T2, s_L2) - c) < abs(het.bayes_weight(n, c, s_T2, s_L2) - c)


def test_pilot_records_shrink_the_gap_uncertainty(concentrated):
    prior = HybridTrustModel(M).prior(draws=2000, seed=0)
    assert concentrated.moments["gap2"] < prior.moments["gap2"] / 50


def test_fixed_seeds_reproduce(small_fit, pilots):
    again = HybridTrustModel(M, homogeneous=True, pilot_T=pilots[0][:30], pilot_L=pilots[1][:30],
                             sizes=SIZES).fit(**FIT, seed=5)
    np.testing.assert_array_equal(again.sigma_T2, small_fit.sigma_T2)
    a, b = HybridTrustModel(M).prior(500, seed=7), HybridTrustModel(M).prior(500, seed=7)
    np.testing.assert_array_equal(a.gap, b.gap)
    assert not np.array_equal(a.gap, HybridTrustModel(M).prior(500, seed=8).gap)


def test_fit_many_samples_each_model_from_its_own_posterior(joint):
    import arviz_stats

    big, bare = joint
    # each posterior holds its own block under plain names, and passed the shared check on it
    for post in joint:
        names = set(post.idata["posterior"].data_vars)
        assert {"p0", "gap_logit", "v_T", "v_L", "sigma_T2", "sigma_L2", "gap"} <= names
        assert not any("::" in name for name in names)
        assert set(post.convergence) == set(post.convergence_vars) == {"p0", "gap_logit", "v_T", "v_L", "sigma_T2",
                                                                       "sigma_L2", "gap"}
    assert bare.max_rhat < RHAT_FAIL
    assert not np.array_equal(big.sigma_T2, bare.sigma_T2)

    def mcse(x):  # Monte Carlo standard error of a posterior mean
        return float(np.std(x) / np.sqrt(arviz_stats.ess(x)))

    # the block without records, sampled beside a very informative one, reproduces exact prior
    # draws (means of sigma_T^2 and of gap^2): the blocks do not interact
    prior = HybridTrustModel(M).prior(draws=4000, seed=3)
    for x, y in ((bare.sigma_T2, prior.sigma_T2), (bare.gap**2, prior.gap**2)):
        assert abs(x.mean() - y.mean()) < 4 * np.hypot(mcse(x), y.std() / np.sqrt(y.size))
    with pytest.raises(TypeError, match="non-empty sequence"):
        fit_many([])
    with pytest.raises(TypeError, match=r"models\[1\] must be a HybridTrustModel"):
        fit_many([HybridTrustModel(M), "x"])


def test_hybrid_estimator_uses_the_bayes_weight():
    post = _random_posterior()
    groups = [Group("tcm", 50, 1.0), Group("lm", 950, 1.0)]
    est = Hybrid(groups, (0.0, M), weight="bayes", posterior=post)
    assert est.w == pytest.approx(post.bayes_weight(est.n, est.c, est.s_T2, est.s_L2), rel=1e-14)
    s_T2, s_L2 = noise_variances("laplace", 1.0, M, 1000, 0.05)
    assert (est.s_T2, est.s_L2) == pytest.approx((s_T2, s_L2), rel=1e-12)


# -- refusal and bad input ---------------------------------------------------------------


def test_unconverged_posterior_is_refused_by_the_shared_check():
    rng = np.random.default_rng(0)
    stuck = np.stack([rng.gamma(5, 0.01, 300), rng.gamma(5, 0.01, 300) + 0.2])  # two chains at different values
    with pytest.raises(ConvergenceError, match="did not converge.*R-hat of sigma_T2"):
        HybridTrustPosterior.from_draws(stuck, 0.05)
    with pytest.warns(ConvergenceWarning, match="sigma_T2"):
        HybridTrustPosterior.from_draws(stuck, 0.05, on_unconverged="warn")
    bad = HybridTrustPosterior.from_draws(stuck, 0.05, on_unconverged="ignore")  # the user's explicit choice
    assert bad.max_rhat > RHAT_FAIL and bad.convergence["sigma_T2"]["r_hat"] == bad.max_rhat
    # a well-mixed one is accepted; one chain is split in halves for R-hat
    ok = HybridTrustPosterior.from_draws(rng.gamma(5, 0.01, 600), 0.05)
    assert ok.max_rhat < 1.05 and 0 < ok.bayes_weight(1000, 0.05, 1e-3, 2.0) < 1
    trend = HybridTrustPosterior.from_draws(np.linspace(0.01, 0.2, 600), 0.05, on_unconverged="ignore")
    assert trend.max_rhat > RHAT_FAIL  # a drifting single chain is caught by the split


# -- the posterior as a dataset source ---------------------------------------------------


def test_prior_draws_generate_datasets_with_the_draws_moments():
    prior = HybridTrustModel(M, sizes=(20_000, 30_000)).prior(draws=200, seed=4)
    post = prior.idata["posterior"]
    rng = np.random.default_rng(9)
    for draw in (0, 57, 199):
        data = prior.generate(0, draw, rng)
        assert [v.shape for v in data.values] == [(20_000,), (30_000,)]
        for x, g in zip(data.values, ("T", "L")):
            mu, var = float(post[f"mu_{g}"][0, draw]), float(post[f"sigma_{g}2"][0, draw])  # what PyMC drew
            assert x.min() >= 0.0 and x.max() <= M
            se_mean = np.sqrt(var / x.size)
            assert abs(x.mean() - mu) < 4 * se_mean
            m4 = np.mean((x - x.mean()) ** 4)
            assert abs(x.var(ddof=1) - var) < 4 * np.sqrt((m4 - var**2) / x.size)
        mu_T, mu_L = float(post["mu_T"][0, draw]), float(post["mu_L"][0, draw])
        assert data.population["mean"] == pytest.approx((20_000 * mu_T + 30_000 * mu_L) / 50_000, rel=1e-12)
        c = 0.4
        mix = c * float(post["sigma_T2"][0, draw]) + (1 - c) * float(post["sigma_L2"][0, draw]) + c * (1 - c) * (mu_T - mu_L) ** 2
        assert data.population["variance"] == pytest.approx(mix, rel=1e-10)
    a = prior.generate(0, 3, np.random.default_rng(1)).values[0]
    assert np.array_equal(a, prior.generate(0, 3, np.random.default_rng(1)).values[0])  # only rng is random


def test_evaluate_and_decide_take_the_fitted_posterior_as_a_source(small_fit):
    groups = [Group("tcm", SIZES[0], 1.0), Group("lm", SIZES[1], 1.0, trust="local")]
    cands = [TCMOnly(groups, (0, M)), FullLM(groups, (0, M)), Hybrid(groups, (0, M), "bayes", posterior=small_fit)]
    ev = evaluate(cands, small_fit, Statistic(), trials=4, draws=25, seed=2)
    assert ev.attrs["source"] == "HybridTrustPosterior" and ev.risk.shape == (3, 2, 25)
    post = small_fit.idata["posterior"]
    pooled = (SIZES[0] * post["mu_T"] + SIZES[1] * post["mu_L"]) / sum(SIZES)  # the population mean of each draw
    np.testing.assert_allclose(ev.truth.sel(quantity="mean").values, pooled.isel(draw=slice(0, 25)).values, rtol=1e-12)
    dec = decide(ev)
    assert str(dec.attrs["recommended"]) in {c.label for c in cands}
    with pytest.raises(ValueError, match=r"sizes=\(n_T, n_L\)"):
        HybridTrustPosterior.from_draws(0.05, 0.05).generate(0, 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="draw must be in"):
        small_fit.generate(0, 10_000, np.random.default_rng(0))


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(n=0), ValueError, "n must be > 0"),
        (dict(n=-5.0), ValueError, "n must be > 0"),
        (dict(n=np.nan), ValueError, "n must be finite"),
        (dict(c=0.0), ValueError, "c must be > 0"),
        (dict(c=1.0), ValueError, "c must be < 1"),
        (dict(c=[0.1, 1.5]), ValueError, "c must be < 1, got 1.5"),
        (dict(s_T2=-1.0), ValueError, "s_T2 must be >= 0"),
        (dict(s_L2=np.inf), ValueError, "s_L2 must be finite"),
        (dict(n="100"), TypeError, "n must be numeric"),
        (dict(c=True), TypeError, "c must be a real number"),
    ],
)
def test_bad_setting(kwargs, exc, match):
    args = dict(n=1000, c=0.05, s_T2=1e-3, s_L2=2.0) | kwargs
    post = _random_posterior()
    with pytest.raises(exc, match=match):
        post.bayes_weight(**args)
    with pytest.raises(exc, match=match):
        post.expected_mse(0.5, **args)


def test_degenerate_setting_is_refused():
    with pytest.raises(ValueError, match="does not depend on w"):
        HybridTrustPosterior.from_draws(0.0, 0.0).bayes_weight(100, 0.1, 0.0, 0.0)
    with pytest.raises(ValueError, match="w must be finite"):
        _random_posterior().expected_mse(np.nan, 100, 0.1, 1e-3, 1.0)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(sigma_T2=-0.1, sigma_L2=0.1), ValueError, "sigma_T2 must be >= 0"),
        (dict(sigma_T2=0.1, sigma_L2=[0.1, np.nan]), ValueError, "sigma_L2 must be finite"),
        (dict(sigma_T2=np.zeros((2, 3)), sigma_L2=np.zeros((2, 4))), ValueError, "must broadcast"),
        (dict(sigma_T2=np.zeros((2, 3, 4)), sigma_L2=0.1), ValueError, "scalar, 1-D"),
        (dict(sigma_T2=[], sigma_L2=0.1), ValueError, "at least one draw"),
        (dict(sigma_T2="a", sigma_L2=0.1), TypeError, "sigma_T2 must be numeric"),
    ],
)
def test_bad_draws(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        HybridTrustPosterior.from_draws(**kwargs)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(m=0.0), ValueError, "m must be > 0"),
        (dict(m=1.0, mean=(1.0, -1.0)), ValueError, r"mean\[1\] must be > 0"),
        (dict(m=1.0, variance_fraction=(1.0,)), TypeError, "variance_fraction must be a pair"),
        (dict(m=1.0, gap_logit_sd=0.0), ValueError, "gap_logit_sd must be > 0"),
        (dict(m=1.0, homogeneous=1), TypeError, "homogeneous must be True or False"),
        (dict(m=1.0, pilot_T=[0.2, 1.5]), ValueError, r"pilot_T has 1 value\(s\) outside bounds \[0, 1\]"),
        (dict(m=1.0, pilot_L=[0.2, np.nan]), ValueError, "pilot_L contains NaN"),
        (dict(m=1.0, pilot_L=[[0.2]]), ValueError, "pilot_L must be a non-empty 1-D"),
        (dict(m=1.0, pilot_L=[]), ValueError, "pilot_L must be a non-empty 1-D"),
        (dict(m=1.0, sizes=(10,)), TypeError, "sizes must be a pair"),
        (dict(m=1.0, sizes=(10, 0)), ValueError, r"sizes\[1\] must be an integer >= 1"),
        (dict(m=1.0, sizes=(2.5, 10)), TypeError, r"sizes\[0\] must be an integer"),
    ],
)
def test_bad_model(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        HybridTrustModel(**kwargs)


def test_clamp_and_bad_fit_arguments():
    model = HybridTrustModel(1.0, pilot_T=[-0.5, 0.3, 2.0], clamp=True)
    np.testing.assert_array_equal(model.pilot_T, [0.0, 0.3, 1.0])
    for kwargs, error, match in ((dict(draws=0), ValueError, "draws must be an integer >= 1"),
                                 (dict(seed=-1), ValueError, "seed must be"),
                                 (dict(chains=1.5), ValueError, "chains must be an integer"),
                                 (dict(on_unconverged="never"), ValueError, r"on_unconverged\) must be")):
        with pytest.raises(error, match=match):
            model.fit(**kwargs)
    with pytest.raises(TypeError, match="not random_seed"):
        model.fit(random_seed=3)
    with pytest.raises(ValueError, match="draws must be"):
        model.prior(draws=2)


def test_weight_formula_directly():
    # w = (c A + B) / (A + s_T2 + B): with A = 0 the weight is the PWH weight, with no noise it is c
    assert bayes_weight_from_moments(100, 0.2, 0.01, 1.0, 0.0, 0.0, 0.0) == pytest.approx(5 / 9)  # 1 / (1 + 0.8)
    assert bayes_weight_from_moments(100, 0.2, 0.0, 0.0, 0.1, 0.3, 0.01) == pytest.approx(0.2)


def test_predictive_checks_pass_on_beta_pilots_and_flag_records_piled_at_a_bound(concentrated, pilots):
    checks = concentrated.predictive_checks(seed=0, draws=200)
    names = [str(s) for s in checks.statistic.values]
    assert {"pilot_T.mean", "pilot_T.sd", "pilot_L.q90"} <= set(names)
    assert not checks.flagged.any(), dict(zip(names, checks.p_value.values))
    # a third of the TCM pilot answered exactly 0 (a clamped survey): a Beta cannot put mass there
    piled = np.r_[np.zeros(300), pilots[0][:600]]
    post = HybridTrustModel(M, pilot_T=piled, pilot_L=pilots[1][:600]).fit(**FIT, seed=2, on_unconverged="ignore")
    checks = post.predictive_checks(seed=0, draws=200)
    assert bool(checks.flagged.sel(statistic="pilot_T.share_at_lower"))
    assert HybridTrustModel(M, sizes=SIZES).prior(draws=50).predictive_checks() is None
    with pytest.raises(ValueError, match="draws must be an integer >= 2, got 0"):
        concentrated.predictive_checks(draws=0)
