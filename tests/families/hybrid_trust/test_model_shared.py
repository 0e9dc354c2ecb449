"""The hybrid-trust model's partial pooling: a shared law with prior probability ``shared_prior``, learned from the pilots.

The posterior probability of one shared law is checked against an independent computation: the
two branches' marginal likelihoods by plain Monte Carlo over the prior (SciPy's Beta density, no
PyMC), on pilots small enough for 400,000 prior draws to pin them.  The drawn indicator is checked
by its frequency in exact prior draws, and the datasets of a shared draw by their law.
"""

from __future__ import annotations

import logging
import tomllib

import numpy as np
import pytest
from scipy import special, stats

from hybridpriv.families.hybrid_trust.model import (
    DEFAULT_SHARED_PRIOR,
    HybridTrustModel,
)
from hybridpriv.spec import SpecError, parse_spec

logging.getLogger("pymc").setLevel(logging.ERROR)

M = 1.0
# pilots away from the bounds (the model nudges records on a bound inside; the brute force does not)
SAME = (np.array([0.31, 0.42, 0.55, 0.38, 0.47, 0.60]), np.array([0.36, 0.51, 0.44, 0.29, 0.58, 0.40]))
APART = (np.array([0.11, 0.18, 0.25, 0.14, 0.20, 0.09]), np.array([0.71, 0.83, 0.78, 0.90, 0.66, 0.75]))


def _loglik(x, p, v):
    """Sum over records ``x`` of the Beta(p kappa, (1 - p) kappa) log density, kappa = 1 / v - 1, per draw of
    ``p, v``, in closed form: (a - 1) sum log x + (b - 1) sum log(1 - x) - n log B(a, b) (SciPy's logpdf per record
    took ten times as long; test_the_brute_force_likelihood_is_scipys checks the two agree)."""
    kappa = 1 / v - 1
    a, b = p * kappa, (1 - p) * kappa
    return (a - 1) * np.log(x).sum() + (b - 1) * np.log1p(-x).sum() - x.size * special.betaln(a, b)


def _brute_force_p_shared(pilot_T, pilot_L, pi, gap_logit_sd=0.5, draws=2_000_000, seed=0):
    """P(one shared law | pilots): pi Z_s / (pi Z_s + (1 - pi) Z_d), each Z a prior average of the likelihood."""
    rng = np.random.default_rng(seed)
    log_zs, log_zd = [], []
    for _ in range(draws // 200_000):  # in chunks of 200,000 draws
        p0, d = rng.beta(1, 1, 200_000), rng.normal(0, gap_logit_sd, 200_000)
        v_T, v_L = rng.beta(1, 1, 200_000), rng.beta(1, 1, 200_000)
        z = special.logit(p0)
        p_T, p_L = special.expit(z + d / 2), special.expit(z - d / 2)
        ll_T = _loglik(pilot_T, p_T, v_T)
        log_zs.append(special.logsumexp(ll_T + _loglik(pilot_L, p_T, v_T)))
        log_zd.append(special.logsumexp(ll_T + _loglik(pilot_L, p_L, v_L)))
    return float(special.expit(np.log(pi) - np.log1p(-pi) + special.logsumexp(log_zs) - special.logsumexp(log_zd)))


def test_the_brute_force_likelihood_is_scipys():
    """The brute force's closed-form likelihood against SciPy's Beta log density summed over the records."""
    rng = np.random.default_rng(5)
    p, v = rng.beta(1, 1, 1000), rng.beta(1, 1, 1000)
    kappa = 1 / v - 1
    for x in (*SAME, *APART):
        want = stats.beta.logpdf(x[:, None], (p * kappa)[None], ((1 - p) * kappa)[None]).sum(axis=0)
        np.testing.assert_allclose(_loglik(x, p, v), want, rtol=1e-9, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("pilots, pi", [(SAME, 0.5), (SAME, 0.2), (APART, 0.5)], ids=["same-0.5", "same-0.2", "apart"])
def test_posterior_probability_of_a_shared_law_matches_brute_force(pilots, pi):
    expected = _brute_force_p_shared(*pilots, pi)
    again = _brute_force_p_shared(*pilots, pi, seed=1)
    assert abs(expected - again) < 0.015  # the brute force's own Monte Carlo error is small
    post = HybridTrustModel(M, pilot_T=pilots[0], pilot_L=pilots[1], shared_prior=pi).fit(
        draws=1000, tune=500, chains=2, seed=3)
    drawn = post.idata["posterior"]
    p_shared = float(drawn["p_shared"].mean())  # E[P(shared | theta, pilots)] = P(shared | pilots)
    ess = min(c["ess_bulk"] for c in post.convergence.values())
    se = float(drawn["p_shared"].std()) / np.sqrt(ess)
    assert abs(p_shared - expected) < 4 * se + 0.01, (p_shared, expected, se)
    # the drawn indicator follows its probabilities, and a shared draw has one law
    shared = drawn["shared"].values.astype(bool)
    assert abs(shared.mean() - p_shared) < 4 * np.sqrt(p_shared * (1 - p_shared) / shared.size) + 4 * se
    assert np.all(post.gap[shared] == 0.0) and np.array_equal(post.sigma_L2[shared], post.sigma_T2[shared])
    assert np.all(post.gap[~shared] != 0.0)


@pytest.mark.slow
def test_same_law_pilots_shrink_the_gap_and_apart_ones_do_not():
    fits = {name: HybridTrustModel(M, pilot_T=p[0], pilot_L=p[1], shared_prior=pi).fit(draws=500, tune=500, seed=1)
            for name, p, pi in (("pooled", SAME, 0.5), ("two", SAME, 0.0), ("apart", APART, 0.5))}
    assert fits["pooled"].moments["gap2"] < 0.6 * fits["two"].moments["gap2"]
    assert float(fits["apart"].idata["posterior"]["p_shared"].mean()) < 0.1  # 6 records a group, 0.6 apart
    assert "p_shared" not in fits["two"].idata["posterior"]  # shared_prior 0: the model before, no mixture


@pytest.mark.parametrize("pi", [0.3, DEFAULT_SHARED_PRIOR])
def test_prior_draws_share_one_law_with_the_prior_probability(pi):
    prior = HybridTrustModel(M, shared_prior=pi, sizes=(400, 600)).prior(draws=4000, seed=2)
    shared = prior.idata["posterior"]["shared"].values.astype(bool)
    assert abs(shared.mean() - pi) < 4 * np.sqrt(pi * (1 - pi) / shared.size)  # sees a 5% relative bias at 4 SE
    assert np.all(prior.gap[shared] == 0.0) and np.array_equal(prior.sigma_L2[shared], prior.sigma_T2[shared])
    # a shared draw generates both groups from one law: the same mean and variance
    c, d = np.argwhere(shared)[0]
    data = prior.generate(int(c), int(d), np.random.default_rng(0))
    tcm, lm = data.values
    assert stats.ks_2samp(tcm, lm).pvalue > 1e-3


def test_the_shared_law_is_the_branch_a_decision_is_checked_within():
    prior = HybridTrustModel(M, shared_prior=0.3, sizes=(400, 600)).prior(draws=200, seed=2)
    (branch,) = prior.branches()
    assert branch.name == "shared-law" and branch.draws.shape == prior.shape
    np.testing.assert_array_equal(branch.draws, prior.idata["posterior"]["shared"].transpose("chain", "draw").values > 0)
    assert HybridTrustModel(M, shared_prior=0.0, sizes=(400, 600)).prior(draws=50, seed=2).branches() == []


@pytest.mark.slow
def test_the_indicator_is_reproducible_and_keyed_by_the_seed():
    model = HybridTrustModel(M, pilot_T=SAME[0], pilot_L=SAME[1])
    a, b, c = (model.fit(draws=200, tune=200, seed=s) for s in (4, 4, 5))
    np.testing.assert_array_equal(a.idata["posterior"]["shared"].values, b.idata["posterior"]["shared"].values)
    assert not np.array_equal(a.idata["posterior"]["shared"].values, c.idata["posterior"]["shared"].values)


@pytest.mark.parametrize("kwargs, match", [
    (dict(shared_prior=-0.1), r"shared_prior must be a probability in \[0, 1\], got -0.1"),
    (dict(shared_prior=1.5), r"shared_prior must be a probability in \[0, 1\], got 1.5"),
    (dict(shared_prior=float("nan")), "shared_prior must be finite"),
    (dict(shared_prior=0.5, homogeneous=True), "shared_prior = 0.5 contradicts homogeneous=True"),
])
def test_bad_shared_prior_is_refused_naming_it(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HybridTrustModel(M, **kwargs)


def test_homogeneous_is_a_shared_prior_of_one():
    assert HybridTrustModel(M, homogeneous=True).shared_prior == 1.0
    assert HybridTrustModel(M).shared_prior == DEFAULT_SHARED_PRIOR
    assert HybridTrustModel(M, homogeneous=True, shared_prior=1.0).free_names == ("p0", "v")


SPEC = """
kind = "hybrid-trust"
format = 2
m = 100.0
[tcm]
size = 100
epsilon = 1.0
[lm]
size = 900
epsilon = 1.0
[model]
pilot_tcm = [40.0, 50.0, 60.0]
pilot_lm = [45.0, 55.0, 65.0]
{extra}
"""


def load_spec_text(text):
    return parse_spec(tomllib.loads(text))


def test_spec_key_reaches_the_model_and_contradictions_are_refused():
    spec = load_spec_text(SPEC.format(extra="shared_prior = 0.25"))
    assert spec.problem().model.shared_prior == 0.25
    assert load_spec_text(SPEC.format(extra="")).problem().model.shared_prior == DEFAULT_SHARED_PRIOR
    with pytest.raises(SpecError, match="model.shared_prior = 0.25 contradicts model.homogeneous = true"):
        load_spec_text(SPEC.format(extra="shared_prior = 0.25\nhomogeneous = true"))
    with pytest.raises(SpecError, match="model.shared_prior"):
        load_spec_text(SPEC.format(extra="shared_prior = 1.2"))


@pytest.mark.slow
def test_models_fitted_together_draw_their_indicators_from_their_own_streams():
    import xarray as xr

    from hybridpriv.core.random import rng as stream_rng
    from hybridpriv.families.hybrid_trust.model import fit_many
    from hybridpriv.families.hybrid_trust.model_posterior import resolve_shared_law

    model = HybridTrustModel(M, pilot_T=SAME[0], pilot_L=SAME[1])
    a, b = fit_many([model, model], draws=300, tune=300, seed=2)
    for k, post in enumerate((a, b)):  # block k's indicator: its odds against stream ("shared-law", "block", k)
        drawn = post.idata["posterior"]
        u = stream_rng(2, "shared-law", "block", k).random(drawn["p_shared"].shape)
        np.testing.assert_array_equal(drawn["shared"].values, (u < drawn["p_shared"].values).astype(float))
    # the keys give other uniforms than the plain stream a single fit uses
    raw = a.idata["posterior"].to_dataset().drop_vars(["shared", "p_shared"])
    tree = xr.DataTree.from_dict({"posterior": raw})
    odds = resolve_shared_law(model, tree, 2)["posterior"]["shared"].values
    keyed = resolve_shared_law(model, tree, 2, "block", 0)["posterior"]["shared"].values
    assert not np.array_equal(odds, keyed) or np.all(a.idata["posterior"]["p_shared"].values > 1 - 1e-9)
