"""Tests of hybridpriv.families.grouped.model: the PyMC model of public knowledge and its posterior.

Fits use 300 tuning + 300 draws on 2 chains (cores=1); intervals are central 99% posterior
intervals, Monte Carlo checks use 4 standard errors.  All seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from hybridpriv.models import (
    BETA_BOUNDARY_NUDGE,
    BetaFamily,
    CustomFamily,
    GroupedDataModel,
    GroupedPosterior,
    NormalFamily,
    ReleasedMean,
)
from scipy import stats

from hybridpriv.core.data import DatasetSource
from hybridpriv.core.privacy import Bounds, Group
from hybridpriv.families.grouped import GroupedDataset, clamped_normal_moments

FIT = dict(draws=300, tune=300, chains=2, cores=1)
BOUNDS = Bounds(-10.0, 10.0)
MU, SIGMA = 3.0, 2.0
GROUPS = (
    Group("pub", 400, math.inf),
    Group("pub_nodata", 30, math.inf),
    Group("opt-in", 100, 1.0),
    Group("strict", 50, 0.5),
)


def _post(posterior: GroupedPosterior, name: str) -> np.ndarray:
    return np.asarray(posterior.idata["posterior"][name].values).ravel()


def _covers(samples: np.ndarray, truth: float, prob: float = 0.99) -> bool:
    lo, hi = np.quantile(samples, [(1 - prob) / 2, (1 + prob) / 2])
    return bool(lo <= truth <= hi)


def _normal_custom() -> CustomFamily:
    """NormalFamily's default priors on bounds [-10, 10], wrapped as a CustomFamily."""

    def priors():
        return {"mu": pm.Normal("mu", 0.0, 20.0), "sigma": pm.HalfNormal("sigma", 10.0)}

    return CustomFamily(priors, lambda mu, sigma: pm.Normal.dist(mu, sigma))


@pytest.fixture(scope="module")
def public_records() -> np.ndarray:
    return np.clip(np.random.default_rng(11).normal(MU, SIGMA, 400), BOUNDS.lower, BOUNDS.upper)


@pytest.fixture(scope="module")
def normal_posterior(public_records) -> GroupedPosterior:
    return GroupedDataModel(GROUPS, BOUNDS, "normal", public_data={"pub": public_records}).fit(seed=1, **FIT)


# ----------------------------------------------------------------------------- posteriors


def test_normal_posterior_covers_truth(normal_posterior):
    mu, sigma = _post(normal_posterior, "mu"), _post(normal_posterior, "sigma")
    assert _covers(mu, MU) and _covers(sigma, SIGMA)
    assert mu.std() < 0.2  # 400 records: posterior sd about 2 / sqrt(400) = 0.1
    summ = normal_posterior.summary()
    assert list(summ.index) == ["mu", "sigma"]
    assert (summ["r_hat"] < 1.05).all() and (summ["ess_bulk"] > 100).all()


def test_heavily_clamped_records_are_censored_observations():
    # about 7% of the records sit on the lower bound and 31% on the upper one: treating them
    # as exact values would pull mu below 2.6 and sigma below 1.3
    x = np.clip(np.random.default_rng(12).normal(MU, SIGMA, 400), 0.0, 4.0)
    post = GroupedDataModel([Group("pub", 400, math.inf)], (0, 4), "normal", public_data={"pub": x}).fit(seed=6, **FIT)
    assert _covers(_post(post, "mu"), MU) and _covers(_post(post, "sigma"), SIGMA)


def test_known_variance_fixes_sigma(public_records):
    model = GroupedDataModel(GROUPS, BOUNDS, public_data={"pub": public_records}, known_variance=SIGMA**2)
    post = model.fit(seed=2, **FIT)
    assert "sigma" not in post.idata["posterior"]
    assert post.free_params == ("mu",)
    assert {post.params(c, d)["sigma"] for c in range(2) for d in range(0, 300, 37)} == {SIGMA}
    assert _covers(_post(post, "mu"), MU)
    true_variance = clamped_normal_moments(MU, SIGMA, BOUNDS)["variance"]
    assert post.variance_posterior_mean == pytest.approx(true_variance, rel=0.02)


def test_beta_posterior_mean_near_truth():
    a, b, alpha, beta = -2.0, 4.0, 2.0, 5.0
    x = a + (b - a) * np.random.default_rng(5).beta(alpha, beta, 400)
    groups = [Group("pub", 400, math.inf), Group("priv", 200, 1.0)]
    post = GroupedDataModel(groups, (a, b), family="beta", public_data={"pub": x}).fit(seed=3, **FIT)
    true_mean = a + (b - a) * alpha / (alpha + beta)  # -0.2857
    pop_mean = a + (b - a) * _post(post, "m")
    assert _covers(pop_mean, true_mean)
    assert abs(pop_mean.mean() - true_mean) < 0.15  # sd of the sample mean is about 0.05
    assert _covers(_post(post, "kappa"), alpha + beta)
    ds = post.generate(0, 0, np.random.default_rng(0))
    assert ds.values[1].shape == (200,) and a <= ds.values[1].min() and ds.values[1].max() <= b


def test_beta_records_on_the_bounds_are_nudged_inside():
    fam = BetaFamily(bounds=(-2, 4))
    assert fam.to_unit(np.array([-2.0, 1.0, 4.0])).tolist() == [BETA_BOUNDARY_NUDGE, 0.5, 1 - BETA_BOUNDARY_NUDGE]
    x = np.r_[-2.0, 4.0, np.linspace(-1, 3, 8)]
    model = GroupedDataModel([Group("pub", 10, math.inf)], (-2, 4), family=fam, public_data={"pub": x}).build()
    assert np.isfinite(model.compile_logp()(model.initial_point()))


# ----------------------------------------------------------------------------- datasets


def test_generated_datasets(normal_posterior, public_records):
    post = normal_posterior
    assert isinstance(post, DatasetSource)
    assert post.shape == (2, 300)
    ds = post.generate(1, 17, np.random.default_rng(42))
    assert isinstance(ds, GroupedDataset)
    np.testing.assert_array_equal(ds.values[0], public_records)
    assert [v.shape for v in ds.values] == [(g.size,) for g in GROUPS]
    for v in ds.values[1:]:
        assert BOUNDS.lower <= v.min() and v.max() <= BOUNDS.upper
    assert ds.population == post.family.population(post.params(1, 17))
    # the simulated groups follow the parameters of that draw
    sim = np.concatenate(ds.values[1:])
    assert abs(sim.mean() - ds.population["mean"]) < 4 * math.sqrt(ds.population["variance"] / sim.size)
    # same seed, same dataset; another seed or draw, another dataset
    again = post.generate(1, 17, np.random.default_rng(42))
    for u, v in zip(ds.values, again.values):
        np.testing.assert_array_equal(u, v)
    other = post.generate(1, 17, np.random.default_rng(43))
    assert not np.array_equal(ds.values[2], other.values[2])
    np.testing.assert_array_equal(other.values[0], public_records)
    assert post.generate(0, 5, np.random.default_rng(42)).population != ds.population


def test_params_and_index_checks(normal_posterior):
    p = normal_posterior.params(0, 3)
    assert set(p) == {"mu", "sigma"}
    assert p["mu"] == float(normal_posterior.idata["posterior"]["mu"].isel(chain=0, draw=3))
    with pytest.raises(ValueError, match="draw must be in"):
        normal_posterior.params(0, 300)
    with pytest.raises(ValueError, match="chain must be in"):
        normal_posterior.params(-1, 0)
    with pytest.raises(TypeError, match="rng"):
        normal_posterior.generate(0, 0, 42)


def test_variance_posterior_mean(normal_posterior):
    post = normal_posterior
    direct = np.mean(
        [clamped_normal_moments(m, s, BOUNDS)["variance"] for m, s in zip(_post(post, "mu"), _post(post, "sigma"))]
    )
    assert post.variance_posterior_mean == pytest.approx(direct, rel=1e-12)
    assert post.variance_posterior_mean == pytest.approx(SIGMA**2, rel=0.25)


@pytest.mark.slow
def test_fit_is_reproducible(public_records):
    model = GroupedDataModel(GROUPS[:1], BOUNDS, "normal", public_data={"pub": public_records})
    kw = dict(draws=20, tune=20, chains=2, cores=1, on_unconverged="ignore")  # 20 draws: too few to converge
    a, b, c = model.fit(seed=7, **kw), model.fit(seed=7, **kw), model.fit(seed=8, **kw)
    np.testing.assert_array_equal(_post(a, "mu"), _post(b, "mu"))
    assert not np.array_equal(_post(a, "mu"), _post(c, "mu"))


# ----------------------------------------------------------------------------- population moments


def _check_moments(pop: dict[str, float], x: np.ndarray) -> None:
    """``pop`` agrees with the Monte Carlo sample ``x`` within 4 standard errors."""
    n = x.size
    assert abs(pop["mean"] - x.mean()) < 4 * x.std() / math.sqrt(n)
    se_var = math.sqrt(np.var((x - x.mean()) ** 2) / n)
    assert abs(pop["variance"] - x.var()) < 4 * se_var + 1e-12
    # median: P(X < m) <= 1/2 <= P(X <= m), up to 4 binomial standard errors
    tol = 4 * 0.5 / math.sqrt(n)
    assert np.mean(x < pop["median"]) <= 0.5 + tol and np.mean(x <= pop["median"]) >= 0.5 - tol


@pytest.mark.parametrize(
    "mu, sigma, bounds",
    [(3.0, 2.0, (-10, 10)), (9.0, 4.0, (-10, 10)), (0.5, 5.0, (-1, 2)), (-3.0, 1.0, (-1, 2))],
)
def test_normal_population_vs_monte_carlo(mu, sigma, bounds):
    fam = NormalFamily(bounds=bounds)
    x = np.clip(np.random.default_rng(0).normal(mu, sigma, 200_000), *bounds)
    _check_moments(fam.population({"mu": mu, "sigma": sigma}), x)
    sim = fam.simulate({"mu": mu, "sigma": sigma}, 20_000, np.random.default_rng(1))
    assert stats.ks_2samp(sim, x[:20_000]).pvalue > 1e-3


@pytest.mark.parametrize("m, kappa, bounds", [(2 / 7, 7.0, (-2, 4)), (0.5, 0.8, (0, 1)), (0.9, 50.0, (10, 20))])
def test_beta_population_vs_monte_carlo(m, kappa, bounds):
    fam = BetaFamily(bounds=bounds)
    a, b = bounds
    x = a + (b - a) * np.random.default_rng(0).beta(m * kappa, (1 - m) * kappa, 200_000)
    _check_moments(fam.population({"m": m, "kappa": kappa}), x)
    sim = fam.simulate({"m": m, "kappa": kappa}, 20_000, np.random.default_rng(1))
    assert stats.ks_2samp(sim, x[:20_000]).pvalue > 1e-3


@pytest.mark.parametrize(
    "fam, params",
    [
        (NormalFamily(bounds=(-10, 10)), {"mu": 3.0, "sigma": 2.0}),
        (NormalFamily(bounds=(-1, 2)), {"mu": 0.5, "sigma": 5.0}),
        (NormalFamily(bounds=(-1, 2)), {"mu": 2.5, "sigma": 0.3}),
        (BetaFamily(bounds=(-2, 4)), {"m": 0.3, "kappa": 4.0}),
    ],
)
def test_pytensor_clamped_moments_match_numpy(fam, params):
    mean, var = fam.clamped_moments({k: pt.as_tensor_variable(float(v)) for k, v in params.items()})
    pop = fam.population(params)
    assert float(mean.eval()) == pytest.approx(pop["mean"], rel=1e-6, abs=1e-9)  # pytensor exp is accurate to ~1e-8
    assert float(var.eval()) == pytest.approx(pop["variance"], rel=1e-6, abs=1e-9)  # pytensor exp is accurate to ~1e-8


# ----------------------------------------------------------------------------- released means


@pytest.mark.slow
def test_released_mean_moves_mu_toward_it():
    groups = [Group("pub", 40, math.inf), Group("priv", 400, 1.0)]
    x = np.clip(np.random.default_rng(3).normal(MU, SIGMA, 40), -10, 10)
    released = 4.5  # a noisy mean of the private records, far from the public records' mean
    without = GroupedDataModel(groups, BOUNDS, "normal", public_data={"pub": x}).fit(seed=4, **FIT)
    with_rel = GroupedDataModel(
        groups, BOUNDS, "normal", public_data={"pub": x}, released_means=[ReleasedMean(released, 0.05, "priv")]
    ).fit(seed=4, **FIT)
    mu0, mu1 = _post(without, "mu").mean(), _post(with_rel, "mu").mean()
    assert abs(mu1 - released) < abs(mu0 - released) - 0.5
    assert "released_mean_0_latent" in with_rel.idata["posterior"]
    assert with_rel.free_params == ("mu", "sigma")


def test_released_means_build_for_beta_and_pooled():
    groups = [Group("pub", 20, math.inf), Group("priv", 100, 1.0)]
    x = np.linspace(0.1, 0.9, 20)
    model = GroupedDataModel(
        groups, (0, 1), family="beta", public_data={"pub": x},
        released_means=[ReleasedMean(0.4, 0.01), ReleasedMean(0.6, 0.02, "priv"), ReleasedMean(0.5, 0.1, "pub")],
    ).build()
    names = set(model.named_vars)
    # a release of only observed public records carries no information and is left out
    assert {"released_mean_0", "released_mean_1"} <= names and "released_mean_2" not in names
    logp = model.compile_logp()(model.initial_point())
    assert np.isfinite(logp)


# ----------------------------------------------------------------------------- custom family


def test_custom_family_agrees_with_normal(normal_posterior, public_records):
    normal = NormalFamily(bounds=BOUNDS)
    custom = _normal_custom().with_bounds(BOUNDS)
    for p in ({"mu": 3.0, "sigma": 2.0}, {"mu": 9.0, "sigma": 4.0}):
        # 20,000 Monte Carlo samples (CUSTOM_MC_SAMPLES): 4 standard errors
        sim = custom.simulate(p, 20_000, np.random.default_rng(0))
        _check_moments(normal.population(p), sim)
        pop_c, pop_n = custom.population(p), normal.population(p)
        assert abs(pop_c["mean"] - pop_n["mean"]) < 4 * math.sqrt(pop_n["variance"] / 20_000)
        ref = normal.simulate(p, 20_000, np.random.default_rng(1))
        assert stats.ks_2samp(sim, ref).pvalue > 1e-3
        assert sim.min() >= BOUNDS.lower and sim.max() <= BOUNDS.upper
    # reproducible through the rng, and the rng advances
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    first = custom.simulate({"mu": 0.0, "sigma": 1.0}, 10, rng_a)
    np.testing.assert_array_equal(first, custom.simulate({"mu": 0.0, "sigma": 1.0}, 10, rng_b))
    assert not np.array_equal(first, custom.simulate({"mu": 0.0, "sigma": 1.0}, 10, rng_a))

    # same model through the generic path: posteriors agree within 0.05 (posterior sd of
    # mu about 0.1, Monte Carlo error of each posterior mean about 0.005)
    post = GroupedDataModel(GROUPS, BOUNDS, family=_normal_custom(), public_data={"pub": public_records}).fit(
        seed=5, **FIT
    )
    for name in ("mu", "sigma"):
        assert abs(_post(post, name).mean() - _post(normal_posterior, name).mean()) < 0.05
    ds = post.generate(0, 0, np.random.default_rng(0))
    np.testing.assert_array_equal(ds.values[0], public_records)
    assert [v.shape for v in ds.values] == [(g.size,) for g in GROUPS]
    assert ds.population["mean"] == pytest.approx(normal.population(post.params(0, 0))["mean"], abs=0.05)


def test_custom_family_deterministic_parameter_is_recorded():
    def priors():
        log_sigma = pm.Normal("log_sigma", 0.0, 1.0)
        return {"mu": pm.Normal("mu", 0.0, 5.0), "sigma": pm.math.exp(log_sigma)}

    fam = CustomFamily(priors, lambda mu, sigma: pm.Normal.dist(mu, sigma))
    model = GroupedDataModel([Group("pub", 5, math.inf)], (-10, 10), family=fam, public_data={"pub": np.arange(5.0)})
    pm_model = model.build()
    assert "sigma" in pm_model.named_vars and model.param_names == ("mu", "sigma")


# ----------------------------------------------------------------------------- bad inputs


def _model(**kw):
    base = dict(groups=GROUPS, bounds=BOUNDS, family="normal")
    base.update(kw)
    return GroupedDataModel(**base)


_OK = np.zeros(400)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(public_data={"pub": np.r_[np.nan, _OK[1:]]}), ValueError, r"public_data\['pub'\] contains NaN"),
        (dict(public_data={"pub": np.r_[np.nan, _OK[1:]]}, clamp=True), ValueError, r"public_data\['pub'\] contains"),
        (dict(public_data={"opt-in": np.zeros(100)}), ValueError, r"public_data given for group 'opt-in'.*not public"),
        (dict(public_data={"opt-in": np.zeros(100)}, clamp=True), ValueError, "not public"),
        (dict(public_data={"pub": np.zeros(399)}), ValueError, r"public_data\['pub'\] must be a 1-D array of 400"),
        (dict(public_data={"pub": np.zeros((2, 400))}), ValueError, r"public_data\['pub'\].*shape \(2, 400\)"),
        (dict(public_data={"pub": np.r_[11.0, _OK[1:]]}), ValueError, r"public_data\['pub'\] has 1 value\(s\) outside"),
        (dict(public_data={"nobody": _OK}), ValueError, "public_data names unknown group 'nobody'"),
        (dict(public_data=[_OK]), TypeError, "public_data must be a mapping"),
        (dict(public_data={"pub": ["a"] * 400}), TypeError, r"public_data\['pub'\] must be numeric"),
        (dict(known_variance=-1), ValueError, "known_variance must be > 0, got -1"),
        (dict(known_variance=0.0), ValueError, "known_variance must be > 0, got 0.0"),
        (dict(known_variance=math.nan), ValueError, "known_variance must be finite"),
        (dict(known_variance="4"), TypeError, "known_variance must be a real number"),
        (dict(family="beta", known_variance=1.0), ValueError, "known_variance is supported for family='normal' only"),
        (dict(family=_normal_custom(), known_variance=1.0), ValueError, "known_variance is supported for"),
        (dict(family="gamma"), ValueError, "family must be one of"),
        (dict(family=3), TypeError, "family must be"),
        (
            dict(released_means=[ReleasedMean(1.0, 1.0, "nobody")]),
            ValueError,
            r"released_means\[0\]\.group names unknown group 'nobody'",
        ),
        (dict(released_means=[(1.0, 1.0)]), TypeError, r"released_means\[0\] must be a ReleasedMean"),
        (
            dict(family=_normal_custom(), released_means=[ReleasedMean(1.0, 1.0)]),
            ValueError,
            r"released_means need a family with closed-form clamped moments \(normal, beta, mixture\)",
        ),
        (dict(clamp=1), TypeError, "clamp must be True or False"),
        (dict(bounds=(1, 0)), ValueError, "bounds must satisfy lower < upper"),
        (dict(family=NormalFamily(bounds=(0, 1))), ValueError, "family bounds"),
    ],
)
def test_bad_inputs(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        _model(**kwargs)


@pytest.mark.parametrize(
    "args, exc, match",
    [
        ((1.0, 0.0), ValueError, "noise_scale must be > 0, got 0.0"),
        ((1.0, -2), ValueError, "noise_scale must be > 0, got -2"),
        ((math.nan, 1.0), ValueError, "value must be finite"),
        ((math.inf, 1.0), ValueError, "value must be finite"),
        ((1.0, 1.0, 5), TypeError, "group must be a group name"),
    ],
)
def test_bad_released_mean(args, exc, match):
    with pytest.raises(exc, match=match):
        ReleasedMean(*args)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: NormalFamily(mu=(0.0, -1.0)), r"mu\[1\] must be > 0"),
        (lambda: NormalFamily(sigma_scale=0), "sigma_scale must be > 0"),
        (lambda: BetaFamily(concentration=(2.0, 0.0)), r"concentration\[1\] must be > 0"),
        (lambda: CustomFamily(lambda: {}, lambda: None, mc_samples=1), "mc_samples must be an integer >= 2"),
    ],
)
def test_bad_family_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_fit_arguments(public_records):
    model = _model(public_data={"pub": public_records})
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*63\), got -1"):
        model.fit(seed=-1)
    with pytest.raises(ValueError, match="draws must be an integer >= 1"):
        model.fit(draws=0)
    with pytest.raises(TypeError, match="random_seed"):
        model.fit(random_seed=3)


def test_clamp_true_clips_public_records():
    x = np.r_[-12.0, 11.0, np.zeros(398)]
    model = _model(public_data={"pub": x}, clamp=True)
    stored = model.public_data["pub"]
    assert stored[0] == -10.0 and stored[1] == 10.0 and not stored.flags.writeable
    assert x[0] == -12.0  # the caller's array is not modified
