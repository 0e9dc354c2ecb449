"""An earlier noisy release of the private cohort's cross-moments (``mean(y clip(x_j))``) in the public-private model,
and the family's budget-spending selector that spends a share of the budget on it.

Checked against independent computations: the likelihood's mean and spread against 20,000 simulated cohorts and
their Laplace releases; the sensitivity against a brute-force search over replaced records; the release against the
DP audit; the posterior probability of the same outcome law against importance sampling from the priors in NumPy;
the SPEC's refusals name the key and the value.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from arviz_stats import ess
from scipy import special, stats

from _support.wang_same_law import independent_p_same

from hybridpriv.families.public_private.wang.cross_moments import (
    CrossMoments,
    cross_loglik,
    cross_moment_statistic,
    cross_sensitivity,
    outcome_moments,
    release_cross_moments,
)
from hybridpriv.families.public_private.wang.model import PublishedSummaries, WangPrivateModel
from hybridpriv.testing import NeighbouringPair, audit

CLIP = 1.5


@pytest.fixture(scope="module")
def public():
    rng = np.random.default_rng(21)
    X = rng.normal(0.0, 1.0, (300, 2))
    y = (rng.random(300) < special.expit(-0.3 + X @ np.array([0.8, -0.5]))).astype(float)
    return X, y


def _cohorts(rng, count, n, shift, scale, theta, lean=0.0):
    """``count`` cohorts of ``n`` records drawn directly (Gaussian covariates: an independent law, not the model's;
    ``lean``: the second covariate leans on the first by that much, so the two are correlated)."""
    x = shift + scale * rng.standard_normal((count, n, shift.size))
    x[..., 1] += lean * x[..., 0]
    y = rng.random((count, n)) < special.expit(theta[0] + x @ theta[1:])
    return x, y.astype(float)


def test_the_likelihoods_mean_and_covariance_match_simulated_releases():
    rng = np.random.default_rng(0)
    shift, scale, theta, n, b = np.array([0.3, -0.2]), np.array([1.2, 0.8]), np.array([-0.4, 1.1, -0.7]), 100, 0.05
    # correlated covariates (the second leans on the first), so that the statistics share more than the outcome
    x, y = _cohorts(rng, 20_000, n, shift, scale, theta, lean=0.6)
    released = np.concatenate([y.mean(1)[:, None], (y[:, :, None] * np.clip(x, -CLIP, CLIP)).mean(axis=1)
                               + rng.laplace(0.0, b, (20_000, 2))], axis=1)  # (rate, c_1, c_2) per cohort
    # the population moments from a million other records, by explicit formulas
    xb = _cohorts(rng, 1, 1_000_000, shift, scale, theta, lean=0.6)[0][0]
    prob = special.expit(theta[0] + xb @ theta[1:])
    a = np.column_stack([np.ones(len(xb)), np.clip(xb, -CLIP, CLIP)])
    mean = (prob[:, None] * a).mean(0)
    second = np.einsum("k,ki,kj->ij", prob, a, a) / len(xb)
    mu, C = outcome_moments(prob, xb, CLIP)
    np.testing.assert_allclose(mu, mean, rtol=1e-12)
    np.testing.assert_allclose(C, second - np.outer(mean, mean), rtol=1e-9, atol=1e-15)
    cov = C / n + np.diag([0.0, 2 * b**2, 2 * b**2])
    sd = np.sqrt(np.diag(cov))
    # 20,000 releases: the means within 4 standard errors, the sds within 3% (their standard errors are below 0.6%),
    # the correlations within 0.03 (standard error about 0.007)
    assert np.all(np.abs(released.mean(0) - mu) < 4 * sd / math.sqrt(20_000)), (released.mean(0), mu)
    np.testing.assert_allclose(released.std(0), sd, rtol=0.03)
    corr = cov / np.outer(sd, sd)
    np.testing.assert_allclose(np.corrcoef(released.T), corr, atol=0.03)
    # the statistics are visibly correlated (a likelihood of independent ones would count the outcome twice), and
    # neither the noise nor the sampling error alone would do
    assert np.abs(corr[np.triu_indices(3, 1)]).max() > 0.25, corr
    assert np.all(np.sqrt(np.diag(C)[1:] / n) < 0.9 * released.std(0)[1:])
    assert math.sqrt(2) * b < 0.9 * released.std(0)[1:].min()


def test_the_pytensor_likelihood_is_the_joint_normal_density():
    rng = np.random.default_rng(1)
    s, x = rng.random(500), rng.normal(0.0, 2.0, (500, 3))
    release = CrossMoments([0.1, -0.3, 0.05], 0.07, CLIP)
    n, draws = 250, 500
    S, Xs = pt.vector("s"), pt.matrix("x")
    c = np.clip(x, -CLIP, CLIP)
    a = np.column_stack([np.ones(500), c])
    mu = (s[:, None] * a).mean(0)
    C = (s[:, None, None] * a[:, :, None] * a[:, None, :]).mean(0) - np.outer(mu, mu)
    cov = C * (1 / n + 1 / draws) + np.diag([0.0, *[2 * 0.07**2] * 3])
    for rate in (None, 0.4):
        got = pytensor.function([S, Xs], cross_loglik(S, Xs, release, n, draws, rate))(s, x)
        keep = slice(1, None) if rate is None else slice(0, None)
        obs = release.values if rate is None else np.r_[rate, release.values]
        expected = stats.multivariate_normal.logpdf(obs, mu[keep], cov[keep, keep])
        assert got == pytest.approx(expected, rel=1e-8), rate


def test_the_sensitivity_is_the_largest_move_of_one_replaced_record():
    rng = np.random.default_rng(2)
    n, p = 12, 3
    X, y = rng.normal(0.0, 1.0, (n, p)), (rng.random(n) < 0.5).astype(float)
    base = cross_moment_statistic(X, y, CLIP)
    worst = 0.0
    grid = [-5.0, -CLIP, 0.0, CLIP, 5.0]
    for i in range(n):  # every record replaced by every point of a grid that reaches past the clip
        for row in np.array(np.meshgrid(*[grid] * p)).T.reshape(-1, p):
            for label in (0.0, 1.0):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = row, label
                worst = max(worst, np.abs(cross_moment_statistic(X2, y2, CLIP) - base).sum())
    bound = cross_sensitivity(p, n, CLIP)
    assert worst <= bound + 1e-12
    # attained: a record at -clip in every column with outcome 1 replaced by one at +clip
    X3, y3 = np.full((n, p), -CLIP), np.ones(n)
    X4 = X3.copy()
    X4[0] = CLIP
    assert np.abs(cross_moment_statistic(X4, y3, CLIP) - cross_moment_statistic(X3, y3, CLIP)).sum() == pytest.approx(bound)


def test_the_release_holds_its_epsilon_and_noise_for_one_column_fails():
    n, p, eps = 10, 3, 1.0
    X = np.full((n, p), -CLIP)
    X2 = X.copy()
    X2[0] = CLIP  # the worst replacement: every coordinate moves by 2 clip / n the same way
    y = np.ones(n)
    pair = NeighbouringPair((X, y), (X2, y), "a record moved from -clip to +clip in every column",
                            statistic=lambda out: out.sum(axis=1))

    def mech(scale_factor):
        def run(data, rng, size):
            Xd, yd = data
            return np.stack([release_cross_moments(Xd, yd, eps * scale_factor, rng, CLIP).values for _ in range(size)])
        return run

    report = audit(mech(1.0), pair, epsilon=eps, samples=40_000, seed=3)
    assert report.verdict == "pass" and report.epsilon_lower_bound > 0.3, report
    # noise calibrated as if the vector had one column's sensitivity (p times too little): the true loss is p eps
    assert audit(mech(float(p)), pair, epsilon=eps, samples=40_000, seed=4).verdict == "violation"


def test_the_release_noise_law():
    X, y = np.random.default_rng(5).normal(0.0, 1.0, (40, 2)), np.r_[np.ones(20), np.zeros(20)]
    rng = np.random.default_rng(6)
    out = np.stack([release_cross_moments(X, y, 0.5, rng).values for _ in range(20_000)])
    scale = 2 * 2.0 * 2 / (40 * 0.5)  # 2 clip p / (n epsilon), written out
    assert release_cross_moments(X, y, 0.5, rng).noise_scale == pytest.approx(scale)
    np.testing.assert_allclose(out.std(0), math.sqrt(2) * scale, rtol=0.03)
    assert np.all(np.abs(out.mean(0) - cross_moment_statistic(X, y, 2.0)) < 4 * math.sqrt(2) * scale / math.sqrt(20_000))


@pytest.mark.parametrize("kwargs, match", [
    (dict(values=[0.1, float("nan")], noise_scale=0.1), "cross_moments.values"),
    (dict(values=[0.1, 0.2], noise_scale=0.0), r"cross_moments.noise_scale must be > 0, got 0.0"),
    (dict(values=[0.1, 0.2], noise_scale=0.1, clip=-1.0), r"cross_moments.clip must be > 0, got -1.0"),
    (dict(values=[0.1, 9.0], noise_scale=0.1, clip=1.0), r"cross_moments.values\[1\] = 9.0 is beyond"),
    (dict(values=[0.1, 0.2], noise_scale=1e13), "cross_moments.noise_scale must be at most"),
])
def test_bad_releases_are_refused_naming_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CrossMoments(**kwargs)


def test_a_release_of_the_wrong_length_or_type_is_refused(public):
    with pytest.raises(ValueError, match="cross_moments has 3 values but public_X has 2 covariates"):
        WangPrivateModel(*public, PublishedSummaries(100, cross_moments=CrossMoments([0.1, 0.2, 0.3], 0.1)))
    with pytest.raises(TypeError, match="cross_moments must be a CrossMoments"):
        PublishedSummaries(100, cross_moments=[0.1, 0.2])


@pytest.mark.parametrize("call, match", [
    (lambda: release_cross_moments(np.ones(5), np.ones(5), 1.0, np.random.default_rng(0)), r"X must be a 2-D array"),
    (lambda: release_cross_moments(np.c_[[1.0, np.nan]], [0, 1], 1.0, np.random.default_rng(0)),
     r"X row 1 column 0 is not a finite number"),
    (lambda: release_cross_moments(np.ones((3, 2)), [0, 1], 1.0, np.random.default_rng(0)),
     r"y must hold one outcome per record of X \(3\), got 2"),
    (lambda: release_cross_moments(np.ones((3, 2)), [0, 1, 0.5], 1.0, np.random.default_rng(0)),
     r"y row 2 is not 0 or 1"),
    (lambda: release_cross_moments(np.ones((3, 2)), [0, 1, 1], 0.0, np.random.default_rng(0)),
     r"epsilon must be > 0, got 0.0"),
    (lambda: release_cross_moments(np.ones((3, 2)), [0, 1, 1], 1.0, np.random.default_rng(0), clip=-2),
     r"clip must be > 0, got -2"),
])
def test_bad_release_input_is_refused_naming_the_rule_not_the_value(call, match):
    with pytest.raises(ValueError, match=match) as info:
        call()
    assert "nan" not in str(info.value) and "0.5" not in str(info.value)  # a private value is never shown


def test_without_a_release_the_model_and_the_spec_record_what_they_did_before(public):
    """Pinned to the values the code before the release existed (0eaa807) gave: the model's fingerprint (fit
    checkpoints key on it), its log density at a point, and the pima example's recorded SPEC config (a selection file
    is checked against it at release) but for the plan's new key."""
    from hybridpriv.core.params import fingerprint
    from hybridpriv.spec import builtin_example_path, load_spec

    rng = np.random.default_rng(21)
    X = rng.normal(0.0, 1.0, (300, 2))
    y = (rng.random(300) < special.expit(-0.3 + X @ np.array([0.8, -0.5]))).astype(float)
    m = WangPrivateModel(X, y, PublishedSummaries(200, [0.1, -0.2], [1.1, 0.9], 0.4), rate_draws=100, seed=1)
    assert fingerprint(m) == "79b7f1e200084d4b7387e422dfa476f9504e98cf22eca08cb175b91d63c6d4d4"
    graph = m.build()
    point = {k: v + 0.1 for k, v in graph.initial_point().items()}
    assert float(graph.compile_logp()(point)) == pytest.approx(-40.61357929912935, rel=1e-12)
    config = load_spec(builtin_example_path("pima")).config()
    config.pop("source")
    # the two-stage plan's share is a real change of what select does (a selection made before it is refused at
    # release, naming evaluation.plan_share); everything else is recorded as before
    assert config["evaluation"].pop("plan_share") == 0.1
    # the chance line (2026-12-02) words a warning and changes no number: release ignores it (PRESENTATION_KEYS)
    assert config["evaluation"].pop("chance_warning") == 0.25
    assert fingerprint(config) == "dd4a763d15fda7dbefa3664e19c24e807a4b9aa93193ab3776ada448ec4186b3"


def test_without_a_release_the_model_is_unchanged(public):
    plain = WangPrivateModel(*public, PublishedSummaries(200, outcome_rate=0.4), rate_draws=100, seed=1).build()
    names = {v.name for v in plain.potentials} | {v.name for v in plain.observed_RVs}
    assert names == {"published_rate", "public_fit"}
    cm = CrossMoments([0.1, -0.1], 0.05)
    both = WangPrivateModel(*public, PublishedSummaries(200, outcome_rate=0.4, cross_moments=cm), rate_draws=100,
                            seed=1).build()
    assert {v.name for v in both.potentials} == {"published_outcome"}


# -- the posterior probability of the same outcome law against importance sampling --------------------------------

NARROW = dict(shift_sd=0.02, log_scale_sd=0.02, rate_draws=200, seed=3)
LONG_FIT = dict(draws=2000, tune=500, chains=2, cores=1)


@pytest.mark.slow  # two PyMC fits of 2 x 2,000 draws: about a minute
@pytest.mark.parametrize("other", [False, True], ids=["cross-moments-of-the-public-law", "of-another-law"])
def test_the_same_law_probability_with_cross_moments_matches_importance_sampling(public, other):
    X, y = public
    rng = np.random.default_rng(8)
    # a cohort like the public sample, its outcome by the public law or by one with the first slope reversed
    theta = np.array([-0.3, -0.8 if other else 0.8, -0.5])
    Xp = rng.normal(0.0, 1.0, (400, 2))
    yp = (rng.random(400) < special.expit(theta[0] + Xp @ theta[1:])).astype(float)
    cm = CrossMoments(cross_moment_statistic(Xp, yp, 2.0), 0.01)
    summ = PublishedSummaries(400, outcome_rate=float(yp.mean()), cross_moments=cm)
    model = WangPrivateModel(X, y, summ, **NARROW)
    expected = independent_p_same(model, 0.5)
    post = model.fit(seed=9, **LONG_FIT)
    p_same = post.idata["posterior"]["p_same"]
    got = float(p_same.mean())
    se = float(p_same.std()) / math.sqrt(float(ess(p_same.to_dataset(name="p"))["p"]))
    assert abs(got - expected) < 4 * se + 0.01, (got, expected, se)
    # the release decides what the rate alone cannot: the reversed slope is seen, the public law's kept
    assert (expected < 0.05) if other else (expected > 0.6), expected
    if other:  # and the coefficients follow it: the first slope's posterior mean has the cohort's sign
        assert post.theta[:, 1].mean() < 0


# -- the SPEC key and the budget-spending selector ------------------------------------------------------------------

def _small_spec(tmp_path, private_extra=""):
    import textwrap

    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, 40), rng.normal(5, 2, 40)
    y = (rng.random(40) < special.expit(a + 0.3 * (b - 5))).astype(int)
    y[:2] = (0, 1)
    (tmp_path / "pub.csv").write_text("a,b,y\n" + "".join(f"{u:.3f},{v:.3f},{w}\n" for u, v, w in zip(a, b, y)))
    body = textwrap.dedent(f"""
        kind = "public-private"
        public_records = "pub.csv"
        columns = {{ a = "number", b = "number" }}
        outcome = "y"
        epsilon = 1.0
        [private]
        n = 60
        outcome_rate = 0.4
        {private_extra}
        """)
    import tomllib

    from hybridpriv.spec import parse_spec

    return parse_spec(tomllib.loads(body), base_dir=tmp_path)


def test_the_spec_key_reaches_the_model_on_its_scale(tmp_path):
    from hybridpriv.families.public_private.spec import build

    spec = _small_spec(tmp_path, "cross_moments = { values = { b = -0.2, a = 0.3 }, noise_scale = 0.05 }")
    model = build(spec.values).model
    cm = model.summaries.cross_moments
    np.testing.assert_array_equal(cm.values, [0.3, -0.2])  # in the columns' order, whatever the table's
    assert (cm.noise_scale, cm.clip) == (0.05, 2.0)
    assert "cross_moments" in build(spec.values).header[1]
    assert "published_outcome" in {v.name for v in model.build().potentials}


@pytest.mark.parametrize("extra, match", [
    ("cross_moments = { values = { a = 0.3 }, noise_scale = 0.05 }", r"private.cross_moments.values must give every "
     r"column \(or none\); missing \['b'\]"),
    ("cross_moments = { values = { a = 0.3, b = 0.1, c = 0.0 }, noise_scale = 0.05 }",
     r"private.cross_moments.values names 'c'"),
    ("cross_moments = { values = { a = 0.3, b = 0.1 }, noise_scale = -1 }", r"private.cross_moments.noise_scale must "
     r"be > 0, got -1"),
    ("cross_moments = { values = { a = 0.3, b = 0.1 } }", r"private.cross_moments.noise_scale is required"),
    ("cross_moments = { values = { a = 0.3, b = 40.0 }, noise_scale = 0.05 }",
     r"private.cross_moments.values.b = 40.0 is beyond"),
])
def test_bad_cross_moments_in_a_spec_are_refused_naming_the_key(tmp_path, extra, match):
    from hybridpriv.spec.schema import SpecError

    with pytest.raises(SpecError, match=match):
        _small_spec(tmp_path, extra)


def test_the_selector_spends_its_share_on_the_release_and_the_rest_on_the_candidates():
    from hybridpriv.core.random import rng
    from hybridpriv.families import family
    from hybridpriv.spec import parse_spec

    fam = family("public-private")
    truth = fam.synthetic_truth(3, rng(0, "t", 3), quick=True)
    raw, adjust = fam.pythia(truth.spec, truth.data, 0.1, np.random.default_rng(4))
    assert adjust is None
    eps, n, p = truth.spec["epsilon"], truth.spec["private"]["n"], len(truth.spec["columns"])
    spec = parse_spec(raw)
    assert spec.values.epsilon == pytest.approx(0.9 * eps)  # the candidates' share: 0.1 eps + 0.9 eps = eps
    cm = spec.values.private.cross_moments
    assert cm.noise_scale == pytest.approx(cross_sensitivity(p, n, 2.0) / (0.1 * eps))
    design = fam.truth_dataset(truth.data)
    exact = cross_moment_statistic(design.private[:, :p], design.private[:, p], 2.0)
    noise = np.array([cm.values[c] for c in truth.spec["columns"]]) - exact
    assert np.all(noise != 0) and np.all(np.abs(noise) < 20 * cm.noise_scale)
    again, _ = fam.pythia(truth.spec, truth.data, 0.1, np.random.default_rng(4))
    assert again == raw  # the same stream, the same release
    with pytest.raises(ValueError, match="share must be in"):
        fam.pythia(truth.spec, truth.data, 1.0, np.random.default_rng(4))
    with pytest.raises(ValueError, match="only the logistic contrast reads; contrast is 'mean'"):
        fam.pythia({**truth.spec, "contrast": "mean"}, truth.data, 0.1, np.random.default_rng(4))
