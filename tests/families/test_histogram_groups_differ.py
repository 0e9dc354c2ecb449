"""The histogram family when the private groups' shares may differ: the adaptive candidate, the mixture model,
the SPEC keys and the real truths whose groups differ by an attribute."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from hybridpriv.core.privacy import Group
from hybridpriv.families import family
from hybridpriv.families.histogram.mechanisms import MARGIN, AdaptiveHistograms, LaplaceHistograms
from hybridpriv.families.histogram.model import BETWEEN, SHARED_PRIOR, CategoryModel
from hybridpriv.theory import bias_aware_weights

CATS = ("a", "b", "c", "d")
P = np.array([0.4, 0.3, 0.2, 0.1])
GROUPS = (Group("panel", 400, float("inf")),) + tuple(
    Group(f"g{j}", 1500, e) for j, e in enumerate((2.0, 1.0, 0.5, 0.3, 0.2)))


def _objective(w, s, a, b):
    return float(np.sum((w - s) ** 2 * a + w ** 2 * b))


@pytest.mark.parametrize("seed", range(4))
def test_bias_aware_weights_minimise_the_stated_error(seed):
    """The closed form against a numerical constrained minimisation of the same objective."""
    rng = np.random.default_rng(seed)
    n = rng.integers(20, 2000, 5).astype(float)
    tau, s2 = rng.uniform(0, 0.5), rng.uniform(0.05, 0.25)
    noise = np.where(np.arange(5) == 0, 0.0, rng.uniform(1e-6, 1e-2, 5))
    s = n / n.sum()
    a = s2 * (tau ** 2 + 1 / n)
    w = bias_aware_weights(n, a, noise)
    res = optimize.minimize(_objective, np.full(5, 0.2), args=(s, a, noise), method="SLSQP", tol=1e-14,
                            constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}])
    assert res.success
    assert w.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(w, res.x, atol=1e-6)
    assert _objective(w, s, a, noise) <= res.fun + 1e-15


def test_bias_aware_weights_limits():
    n = np.array([100.0, 300.0, 600.0])
    s = n / n.sum()
    noise = np.array([0.0, 1e-3, 1e-2])
    # no noise: the size shares (the pooled share itself)
    np.testing.assert_allclose(bias_aware_weights(n, 0.2 * (0.04 + 1 / n), np.zeros(3)), s)
    # a vast spread: the size shares whatever the noise (an unbiased combination)
    np.testing.assert_allclose(bias_aware_weights(n, np.full(3, 1e8), noise), s, atol=1e-6)
    # one row of spreads per trial gives one row of weights per trial
    spreads = 0.2 * (np.array([0.0, 0.1, 0.5])[:, None] ** 2 + 1 / n)
    w = bias_aware_weights(n, spreads, noise)
    assert w.shape == (3, 3)
    np.testing.assert_allclose(w[1], bias_aware_weights(n, spreads[1], noise))


def _released_shares(mech, tau, draws, rng):
    """``draws`` independent releases of datasets whose groups' shares are Dirichlet(P (1/tau^2 - 1)) around P."""
    n = mech.sizes.astype(int)
    g = n.size
    q = rng.dirichlet(P * (1 / tau ** 2 - 1), size=(draws, g)) if tau > 0 else np.broadcast_to(P, (draws, g, P.size))
    counts = np.stack([[rng.multinomial(n[k], q[t, k]) for k in range(g)] for t in range(draws)]).astype(float)
    noisy = counts + rng.laplace(size=counts.shape) * mech.scales[None, :, None]
    return noisy / n[None, :, None]


def test_moment_estimate_of_the_spread_is_unbiased():
    """Monte Carlo: the mean of ``excess / slope`` over 20,000 simulated releases is ``tau^2`` within 3% (its
    standard error is under 0.5% of ``tau^2``, so a 5% bias would show)."""
    mech = AdaptiveHistograms(GROUPS, CATS)
    est = np.divide(*mech.moments(_released_shares(mech, 0.3, 20_000, np.random.default_rng(5)))[:2])
    se = est.std() / np.sqrt(est.size)
    assert se < 0.005 * 0.09
    assert abs(est.mean() - 0.09) < 0.03 * 0.09


@pytest.mark.parametrize("groups", [GROUPS, (Group("panel", 100, float("inf")), Group("a", 300, 1.0),
                                              Group("b", 200, 0.3), Group("c", 250, 0.05))],
                         ids=["sampling-dominated", "noise-dominated"])
def test_the_stated_mean_and_standard_error_under_equal_shares(groups):
    """Monte Carlo over 20,000 releases of equal shares: the excess of ``S`` over its stated expectation averages 0
    (within 4 s.e.), and its standard deviation is the stated standard error within 5% (a multinomial's
    covariance and Laplace's kurtosis both count: ignoring either misses by 26% or more in one setting)."""
    mech = AdaptiveHistograms(groups, CATS)
    excess, _, sd = mech.moments(_released_shares(mech, 0.0, 20_000, np.random.default_rng(8)))
    assert abs(excess.mean()) < 4 * excess.std() / np.sqrt(excess.size)
    assert excess.std() / sd.mean() == pytest.approx(1.0, abs=0.05)


def test_the_spread_test_is_conservative_and_detects_a_real_spread():
    mech = AdaptiveHistograms(GROUPS, CATS)
    rng = np.random.default_rng(6)
    alike = mech.between(_released_shares(mech, 0.0, 20_000, rng))
    assert np.mean(alike > 0) < 0.03  # 1.4% measured at MARGIN = 3 (S is skewed: more than a normal's 0.13%)
    differ = mech.between(_released_shares(mech, 0.3, 2_000, rng))
    assert np.mean(differ > 0) > 0.99
    assert np.median(differ) == pytest.approx(0.3, rel=0.1)
    # margin 0 trusts any excess: it fires about half the time under equal shares
    loose = AdaptiveHistograms(GROUPS, CATS, margin=0.0).between(_released_shares(mech, 0.0, 4_000, rng))
    assert 0.3 < np.mean(loose > 0) < 0.7


def test_adaptive_combines_the_weighted_releases():
    """The same releases as ``weighted`` (same noise from the same generator), combined by the weights at the
    estimated spread; the same guarantee."""
    weighted, adaptive = LaplaceHistograms(GROUPS, CATS, s2=0.2), AdaptiveHistograms(GROUPS, CATS, s2=0.2)
    assert adaptive.privacy == weighted.privacy
    assert adaptive.label == "adaptive" and adaptive.margin == MARGIN
    from hybridpriv.families.histogram.data import CategoryCounts

    counts = np.stack([np.round(P * g.size).astype(int) for g in GROUPS])
    counts[:, 0] += np.array([g.size for g in GROUPS]) - counts.sum(axis=1)
    out = adaptive.release(CategoryCounts(counts), np.random.default_rng(3), 7)
    noisy = counts[None] + np.random.default_rng(3).laplace(size=(7, *counts.shape)) * adaptive.scales[None, :, None]
    shares = noisy / adaptive.sizes[None, :, None]
    w = bias_aware_weights(adaptive.sizes, 0.2 * (adaptive.between(shares)[:, None] ** 2 + 1 / adaptive.sizes),
                           adaptive.noise)
    np.testing.assert_allclose(out, np.einsum("tg,tgc->tc", w, shares))
    assert adaptive.mean_and_variance(counts) is None


def test_the_eager_candidate_is_the_same_test_at_one_standard_error():
    """``adaptive-1se``: the same releases and guarantee as ``adaptive``; Monte Carlo over 4,000 releases each, it
    takes equal shares to differ on 10-20% of them (14% measured; a normal's tail beyond 1 s.e. is 15.9%) against
    under 3% at ``MARGIN``, and detects a small spread (``tau`` 0.05) on more releases (96% against 76% measured;
    the binomial s.e. of either share is under 0.7 points)."""
    from hybridpriv.families.histogram.mechanisms import EAGER_MARGIN

    strict, eager = AdaptiveHistograms(GROUPS, CATS), AdaptiveHistograms(GROUPS, CATS, margin=EAGER_MARGIN)
    assert eager.label == "adaptive-1se" and eager.margin == 1.0 and strict.label == "adaptive"
    assert eager.privacy == strict.privacy == LaplaceHistograms(GROUPS, CATS).privacy
    rng = np.random.default_rng(11)
    alike = _released_shares(strict, 0.0, 4_000, rng)
    assert 0.10 < np.mean(eager.between(alike) > 0) < 0.20
    assert np.mean(strict.between(alike) > 0) < 0.03
    small = _released_shares(strict, 0.05, 4_000, rng)
    assert np.mean(eager.between(small) > 0) > np.mean(strict.between(small) > 0) + 0.1


def test_a_spec_builds_both_margins_under_their_labels(tmp_path):
    from hybridpriv.spec import load_spec

    path = tmp_path / "s.toml"
    path.write_text('kind = "histogram"\ncategories = ["a", "b"]\n[[groups]]\nname = "panel"\nsize = 2\n'
                    'epsilon = inf\ndata = ["a", "b"]\n[[groups]]\nname = "p"\nsize = 50\nepsilon = 1.0\n')
    cands = load_spec(path).problem().candidates(None)
    margins = {str(k): getattr(m, "margin", None) for k, m in cands.items()}
    assert margins["adaptive"] == MARGIN and margins["adaptive-1se"] == 1.0
    assert all(str(k) == m.label for k, m in cands.items())


@pytest.mark.parametrize("margin, error", [(-1.0, ValueError), (float("nan"), ValueError),
                                           (float("inf"), ValueError), ("3", TypeError), (True, TypeError)])
def test_adaptive_refuses_a_bad_margin(margin, error):
    with pytest.raises(error, match="margin"):
        AdaptiveHistograms(GROUPS, CATS, margin=margin)


# -- the model ---------------------------------------------------------------------------------------


def _model(**kw):
    public = {"panel": np.array([160, 120, 80, 40])}
    return CategoryModel(GROUPS, CATS, public, **kw)


def test_the_mixture_draws_follow_its_prior():
    """Over 2 x 4,000 exact draws: the share of 'alike' draws is Bernoulli(shared_prior) within 4 s.e., alike
    draws have no spread, and the others' spread is HalfNormal(between) (Kolmogorov-Smirnov)."""
    post = _model(between=0.3, shared_prior=0.4).fit(draws=4000, chains=2, seed=1)
    alike = post.alike.ravel()
    assert abs(alike.mean() - 0.4) < 4 * np.sqrt(0.4 * 0.6 / alike.size)
    spread = post.between.ravel()
    assert np.all(spread[alike] == 0)
    assert stats.kstest(spread[~alike], stats.halfnorm(scale=0.3).cdf).pvalue > 0.001
    [branch] = post.branches()
    assert branch.name == "alike"
    np.testing.assert_array_equal(branch.draws, post.alike)
    assert "groups_may_differ = false" in branch.advice


def test_a_private_groups_shares_spread_as_the_model_says():
    """At one draw with spread tau, a private group's simulated share of category c has variance
    ``p_c (1 - p_c) (tau^2 + (1 - tau^2) / n)`` (Dirichlet-multinomial): 6,000 datasets, chi-square interval."""
    post = _model(shared_prior=0.0).fit(draws=50, chains=1, seed=2)
    d = int(np.argmax(post.between[0]))
    tau, p = post.between[0, d], post.p[0, d] / post.p[0, d].sum()
    rng = np.random.default_rng(9)
    k, n = 1, GROUPS[1].size
    shares = np.array([post.generate(0, d, rng).counts[k] / n for _ in range(6000)])
    want = p * (1 - p) * (tau ** 2 + (1 - tau ** 2) / n)
    got = shares.var(axis=0, ddof=1)
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], shares.shape[0] - 1) / (shares.shape[0] - 1)
    assert np.all((got / want > lo) & (got / want < hi)), (got / want, lo, hi)
    assert np.all(post.generate(0, d, rng).counts[0] == [160, 120, 80, 40])  # the public counts kept


def test_groups_that_answer_alike_carry_no_spread():
    for post in (_model(between=0.0).fit(draws=200, chains=2, seed=0),
                 _model(shared_prior=1.0).fit(draws=200, chains=2, seed=0)):
        assert "between" not in post.idata["posterior"] and post.alike is None
        assert np.all(post.between == 0) and post.branches() == []
    differ = _model(shared_prior=0.0).fit(draws=200, chains=2, seed=0)
    assert differ.alike is None and differ.branches() == [] and np.all(differ.between > 0)


def test_the_shares_draws_do_not_move_with_the_mixture():
    """``p`` is drawn first from each chain's generator: the mixture adds draws after it."""
    a = _model(between=0.0).fit(draws=30, chains=2, seed=4)
    b = _model().fit(draws=30, chains=2, seed=4)
    np.testing.assert_array_equal(a.p, b.p)


@pytest.mark.parametrize("kw, name, error", [({"between": -0.1}, "between", ValueError),
                                             ({"between": 1.5}, "between", ValueError),
                                             ({"between": True}, "between", TypeError),
                                             ({"shared_prior": 1.2}, "shared_prior", ValueError),
                                             ({"shared_prior": "half"}, "shared_prior", TypeError)])
def test_the_model_refuses_bad_mixture_parameters(kw, name, error):
    with pytest.raises(error, match=name):
        _model(**kw)


# -- SPEC and truths ---------------------------------------------------------------------------------


def test_spec_defaults_are_the_models_and_the_switch_turns_the_spread_off(tmp_path):
    from hybridpriv.families.histogram.spec import CANDIDATES, EVALUATION, MODEL
    from hybridpriv.spec import load_spec

    keys = {k.name: k.default for k in MODEL.keys}
    assert keys["between"] == BETWEEN and keys["shared_prior"] == SHARED_PRIOR and keys["groups_may_differ"] is True
    assert {k.name: k.default for k in EVALUATION.keys}["criterion"] == "regret"
    assert "adaptive" in CANDIDATES
    base = ('kind = "histogram"\ncategories = ["a", "b"]\n[[groups]]\nname = "panel"\nsize = 2\nepsilon = inf\n'
            'data = ["a", "b"]\n[[groups]]\nname = "p"\nsize = 50\nepsilon = 1.0\n')
    for extra, between, shared in (("", BETWEEN, SHARED_PRIOR),
                                   ("[model]\ngroups_may_differ = false\n", 0.0, 1.0),
                                   ("[model]\nbetween = 0.1\nshared_prior = 0.25\n", 0.1, 0.25)):
        path = tmp_path / "s.toml"
        path.write_text(base + extra)
        model = load_spec(path).problem().model
        assert (model.between, model.shared_prior) == (between, shared)


def test_real_truths_split_by_an_attribute():
    fam = family("histogram")
    assert len(fam.real_datasets) >= 3
    sizes = {"swisslabor-children": (216, 872), "mroz-children": (212, 753)}
    for name, (panel, total) in sizes.items():
        t = fam.real_truth(name, None)
        counts = {k: np.asarray(v) for k, v in t.data.items()}
        assert counts["panel"].sum() == panel and sum(c.sum() for c in counts.values()) == total
        assert t.spec["categories"] == ["0", "1", "2", "3+"]
        # the oldest third (the strictest group) has fewer children at home than the youngest
        assert counts["private-2"][0] / counts["private-2"].sum() > counts["private-0"][0] / counts["private-0"].sum()
        assert [g["epsilon"] for g in t.spec["groups"][1:]] == [1.0, 0.3, 0.05]


def test_sample_simulates_the_coins_a_release_flips():
    """PDP Sample: a simulation's binomial kept counts and a release's coin per record give the same releases (a
    generator that is not exactly numpy's takes the coin path): 20,000 releases each, every category's mean within
    4 standard errors and variance within a 99.9% chi-square interval of the other's."""
    from hybridpriv.families.histogram.data import CategoryCounts
    from hybridpriv.families.histogram.mechanisms import SampleHistogram

    class Coins(np.random.Generator):
        pass

    groups = (Group("panel", 30, float("inf")), Group("a", 400, 1.0), Group("b", 250, 0.2))
    counts = CategoryCounts(np.array([[10, 10, 5, 5], [150, 120, 80, 50], [40, 60, 100, 50]]))
    mech = SampleHistogram(groups, CATS, threshold="max")
    assert 0 < mech.keep[2] < 1
    sim = mech.release(counts, np.random.default_rng(1), 20_000)
    coins = mech.release(counts, Coins(np.random.PCG64(2)), 20_000)
    se = np.sqrt(sim.var(axis=0) / sim.shape[0] + coins.var(axis=0) / coins.shape[0])
    assert np.all(np.abs(sim.mean(axis=0) - coins.mean(axis=0)) < 4 * se)
    lo, hi = stats.f.ppf([0.0005, 0.9995], sim.shape[0] - 1, coins.shape[0] - 1)
    ratio = sim.var(axis=0, ddof=1) / coins.var(axis=0, ddof=1)
    assert np.all((ratio > lo) & (ratio < hi)), ratio


def test_the_chance_line_is_a_spec_key_that_reaches_the_printed_warning(tmp_path):
    """``evaluation.chance_warning`` reaches the problem and the decision: on one selection the warning is printed
    from a low line and not from a line above the recommendation's p_costly; bad lines are refused naming the key."""
    import dataclasses
    import re
    import warnings

    from hybridpriv.engine.decision import CHANCE_WARNING, chance_line
    from hybridpriv.spec import load_spec
    from hybridpriv.workflow import Problem, run_selection

    base = ('kind = "histogram"\ncategories = ["a", "b", "c"]\n[[groups]]\nname = "panel"\nsize = 30\nepsilon = inf\n'
            'data = ' + str(["a"] * 10 + ["b"] * 15 + ["c"] * 5).replace("'", '"') + '\n[[groups]]\nname = "p"\n'
            'size = 300\nepsilon = 1.0\n[[groups]]\nname = "q"\nsize = 200\nepsilon = 0.1\n'
            '[evaluation]\ndraws = 40\ntrials = 20\n')
    path = tmp_path / "s.toml"
    path.write_text(base)
    problem = load_spec(path).problem()
    assert problem.chance_warning == CHANCE_WARNING
    problem = dataclasses.replace(problem, assumptions=(), probe=None)
    with warnings.catch_warnings():  # the alternatives' warnings, if any, are not what this test reads
        warnings.simplefilter("ignore")
        dec = run_selection(problem, log=lambda *a: None).decision
    p = float(dec.p_costly.sel(estimator=dec.attrs["recommended"]))
    assert 0 < p < 1 and dec.attrs["chance_warning"] == CHANCE_WARNING
    for line, warns in ((p / 2, True), (min(1.0, p * 1.5 + 0.01), False)):
        path.write_text(base + f"chance_warning = {line!r}\n")
        again = dataclasses.replace(load_spec(path).problem(), assumptions=(), probe=None)
        assert again.chance_warning == line
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = run_selection(again, log=lambda *a: None).decision
        assert d.attrs["chance_warning"] == line
        assert float(d.p_costly.sel(estimator=d.attrs["recommended"])) == p  # the line changes no number
        assert chance_line(d).startswith("warning (chance)") is warns
    for bad, said in (("0", "be > 0, got 0"), ("1.5", "be <= 1, got 1.5"), ('"often"', "be a number, got 'often'")):
        path.write_text(base + f"chance_warning = {bad}\n")
        with pytest.raises(ValueError, match=rf"evaluation\.chance_warning must {re.escape(said)}"):
            load_spec(path)
    with pytest.raises(ValueError, match=r"chance_warning must be a share in \(0, 1\], got 2"):
        dataclasses.replace(problem, chance_warning=2)
    assert isinstance(problem, Problem)
