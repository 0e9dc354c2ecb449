"""The public-private model's mixture over "the private outcome law is the public sample's" (``shared_prior``).

The indicator is marginalised out of the likelihood of the published outcome rate and drawn afterwards, per
draw, from its posterior probability (``resolve_same_law``).  Its posterior probability is checked against an
independent computation: importance sampling of the two marginal likelihoods from the priors in NumPy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from arviz_stats import ess
from scipy import special

from _support.wang_same_law import independent_p_same

from hybridpriv.families.public_private.wang.model import (
    SHARED_PRIOR,
    PublishedSummaries,
    WangPosterior,
    WangPrivateModel,
)

FIT = dict(draws=500, tune=300, chains=2, cores=1)
#: the check against importance sampling: p_same is skewed (mostly near 0 or 1), so its bulk ESS over 500 draws
#: understated its Monte Carlo error; over 2,000 draws per chain three seeds agreed within 0.008
LONG_FIT = dict(draws=2000, tune=500, chains=2, cores=1)
N_PRIVATE = 300
# the covariates' shift and scale nearly fixed (their priors are tiny and nothing about them is published), so that
# the published rate informs the indicator and the outcome coefficients only
NARROW = dict(shift_sd=0.02, log_scale_sd=0.02, rate_draws=200, seed=3)


@pytest.fixture(scope="module")
def public():
    rng = np.random.default_rng(11)
    X = rng.normal(0.0, 1.0, (300, 2))
    y = (rng.random(300) < special.expit(-0.3 + X @ np.array([0.8, -0.5]))).astype(float)
    return X, y


def _rate_implied(model: WangPrivateModel) -> float:
    """The outcome rate the public fit implies for a cohort drawn like the public sample."""
    th = model.theta_public_hat
    return float(np.mean(special.expit(th[0] + model.rate_U @ th[1:])))


@pytest.mark.slow
@pytest.mark.parametrize("offset, pi", [(0.0, SHARED_PRIOR), (0.12, 0.3)])
def test_the_posterior_probability_of_the_same_law_matches_importance_sampling(public, offset, pi):
    probe = WangPrivateModel(*public, PublishedSummaries(N_PRIVATE, outcome_rate=0.5), **NARROW)
    rate = round(_rate_implied(probe) + offset, 4)
    model = WangPrivateModel(*public, PublishedSummaries(N_PRIVATE, outcome_rate=rate), shared_prior=pi, **NARROW)
    post = model.fit(seed=5, **LONG_FIT)
    expected = independent_p_same(model, pi)
    p_same = post.idata["posterior"]["p_same"]
    got = float(p_same.mean())
    se = float(p_same.std()) / math.sqrt(float(ess(p_same.to_dataset(name="p"))["p"]))
    # the importance-sampling estimate's own error is below 0.005 (40,000 draws of a smooth integrand)
    assert abs(got - expected) < 4 * se + 0.005, (got, expected, se)
    # the rate the public fit implies makes the same law likelier than its prior; 12 points off (2.6 sd), unlikelier
    assert (expected > 0.6) if offset == 0.0 else (expected < 0.35), expected
    # the drawn indicator is Bernoulli(p_same) draw by draw: its mean agrees within 4 binomial standard errors
    same = post.same_law
    assert abs(same.mean() - float(p_same.mean())) < 4 * math.sqrt(got * (1 - got) / same.size)


def test_a_same_law_draw_keeps_the_public_coefficients_and_a_different_one_its_own(public):
    model = WangPrivateModel(*public, PublishedSummaries(N_PRIVATE, outcome_rate=0.45), **NARROW)
    post = model.fit(seed=6, **FIT)
    p = post.idata["posterior"]
    def flat(name):
        return np.asarray(p[name].transpose("chain", "draw", ...).values).reshape(post.theta.shape[0], -1)

    same = post.same_law
    assert 0 < same.sum() < same.size
    np.testing.assert_array_equal(post.theta[same], flat("theta_public")[same])
    np.testing.assert_array_equal(post.theta[~same], flat("theta_differ")[~same])
    np.testing.assert_allclose(flat("theta_differ"), flat("theta_public") + model.coef_sd * flat("delta"), atol=1e-12)
    assert set(post.convergence) == {"shift", "log_scale", "theta", "same_law"}
    (branch,) = post.branches()  # the alternative a decision is checked within (hybridpriv.engine.branches)
    assert branch.name == "same-law" and np.array_equal(branch.draws, same.reshape(post.shape))
    # the datasets of a same-law draw follow the public coefficients: simulate() reads the resolved theta
    i = int(np.flatnonzero(same)[0])
    c, d = divmod(i, post.shape[1])
    X, y = post.simulate(c, d, np.random.default_rng(0), size=200_000)
    Z = (X - model.center) / model.sd
    th = flat("theta_public")[i]
    expected = special.expit(th[0] + Z @ th[1:]).mean()
    assert abs(y.mean() - expected) < 4 * math.sqrt(expected * (1 - expected) / y.size)


def test_reading_a_posterior_back_draws_no_second_indicator(public):
    model = WangPrivateModel(*public, PublishedSummaries(N_PRIVATE, outcome_rate=0.45), **NARROW)
    post = model.fit(seed=6, **FIT)
    again = WangPosterior(model, post.idata, post.seed)
    assert again.convergence_vars == post.convergence_vars  # the indicator is checked on a resume too
    np.testing.assert_array_equal(again.theta, post.theta)
    np.testing.assert_array_equal(again.same_law, post.same_law)
    # the raw draws resolved again with the same seed give the same indicator; another seed other ones
    raw = (post.idata["posterior"].to_dataset().drop_vars(["same_law", "p_same", "theta"])
           .rename({"theta_differ": "theta"}))
    tree = xr.DataTree.from_dict({"posterior": raw})
    np.testing.assert_array_equal(WangPosterior(model, tree, post.seed).same_law, post.same_law)
    assert not np.array_equal(WangPosterior(model, tree, post.seed + 1).same_law, post.same_law)


def test_the_two_ends_of_the_prior(public):
    summ = PublishedSummaries(N_PRIVATE, outcome_rate=0.45)
    always = WangPrivateModel(*public, summ, shared_prior=1.0, **NARROW).fit(seed=2, **FIT)
    assert "delta" not in always.idata["posterior"].data_vars and always.same_law is None
    np.testing.assert_array_equal(always.theta, np.asarray(
        always.idata["posterior"]["theta_public"].transpose("chain", "draw", ...).values).reshape(always.theta.shape))
    never = WangPrivateModel(*public, summ, shared_prior=0.0, **NARROW).fit(seed=2, **FIT)
    assert never.same_law is None and never.p_same is None and never.branches() == always.branches() == []
    assert set(never.convergence) == {"shift", "log_scale", "theta"}


def test_without_a_published_rate_the_indicator_keeps_its_prior(public):
    post = WangPrivateModel(*public, PublishedSummaries(N_PRIVATE), shared_prior=0.3, **NARROW).fit(seed=4, **FIT)
    np.testing.assert_allclose(post.p_same, 0.3)
    assert abs(post.same_law.mean() - 0.3) < 4 * math.sqrt(0.3 * 0.7 / post.same_law.size)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "half", True])
def test_a_bad_shared_prior_is_refused_by_name(public, bad):
    with pytest.raises((TypeError, ValueError), match="shared_prior"):
        WangPrivateModel(*public, PublishedSummaries(N_PRIVATE), shared_prior=bad)


def test_the_spec_default_is_the_models():
    from hybridpriv.families.public_private.spec import MODEL

    assert {k.name: k.default for k in MODEL.keys}["shared_prior"] == SHARED_PRIOR
