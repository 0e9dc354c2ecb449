"""items_prior='mixture': the components' log pmfs against SciPy's negative binomial and zipfian, the pooled posterior
against an enumeration of every labelled row-sum vector, the pooling itself, and refusals."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy import optimize, stats

from hybridpriv.core.model import ConvergenceError
from hybridpriv.families.user_item.model_mixture import (CAP_DROP, MATCHED_EXPONENTS, MIXTURE_SHAPES, ItemsMixture,
                                                         dispersion_log_pmf, matched_exponent, power_law_log_pmf)
from hybridpriv.models import FixedItems, UserItemModel

from _support.matrices import chisquare_counts as _chisquare, labelled_row_sum_law


@pytest.mark.parametrize("a", [0.25, 1.0, 4.0, 0.7])
def test_a_components_log_pmf_is_scipys_negative_binomial_up_to_a_term_linear_in_k(a):
    """The fixed total cancels p^k: SciPy's NB(a, p) log pmf at k = 1..m minus ours is affine in k, whatever p."""
    m = 12
    k = np.arange(1, m + 1)
    ours = dispersion_log_pmf(m, a)
    np.testing.assert_allclose(np.logaddexp.reduce(ours), 0.0, atol=1e-12)  # normalised over 1..m
    for p in (0.2, 0.6):
        diff = stats.nbinom.logpmf(k, a, p) - ours
        np.testing.assert_allclose(np.diff(diff, 2), 0.0, atol=1e-9)
        np.testing.assert_allclose(np.diff(diff)[0], np.log(1 - p), atol=1e-9)  # the slope is log(1 - p): p^k cancels
    if a == 1.0:  # the exchangeable prior
        np.testing.assert_allclose(ours, np.log(np.full(m, 1 / m)), atol=1e-12)


@pytest.mark.parametrize("s", [2.0, 1.0, 3.5])
def test_a_power_law_components_log_pmf_is_scipys_zipfian(s):
    m = 12
    ours = power_law_log_pmf(m, s)
    np.testing.assert_allclose(ours, stats.zipfian.logpmf(np.arange(1, m + 1), s, m), atol=1e-12)


def _scipy_pmf(shape, value, m, mean, p=0.35):
    """A component's pmf from SciPy: NB(a, p) (its truncation to 1..m is a constant that cancels) or the zipfian
    law on 1..50 items (big enough: rows never exceed m; the truncation to 1..m is a constant too), its exponent
    for "power-law-mean" found by SciPy's root finder on SciPy's zipfian mean on 1..m."""
    if shape == "negative-binomial":
        return lambda r: np.prod(stats.nbinom.pmf(r, value, p))
    if shape == "power-law-mean":
        value = optimize.brentq(lambda s: stats.zipfian(s, m).mean() - value * mean, 0.01, 40)
    if shape == "power-law-capped":  # its cap, then its exponent by the root finder on the capped law's mean
        cap = min(m, max(2, round(value * mean)))
        s = optimize.brentq(lambda s: _capped_pmf_by_scipy(m, s, cap) @ np.arange(1, m + 1) - mean, 0.01, 40)
        pmf = _capped_pmf_by_scipy(m, s, cap)
        return lambda r: np.prod(pmf[np.asarray(r) - 1])
    return lambda r: np.prod(stats.zipfian.pmf(r, value, 50))


def _mixture_law(c, n, shapes):
    """P(h) of the equal mixture, from all m^n labelled row-sum vectors with the column sums' total, each weighted
    by the product of SciPy's pmfs of the component and kept when a matrix with margins (r, c) exists; each
    component normalised, then averaged."""
    law: Counter = Counter()
    for shape, value in shapes:
        for h, q in labelled_row_sum_law(c, n, _scipy_pmf(shape, value, len(c), sum(c) / n)).items():
            law[h] += q / len(shapes)
    return dict(law)


@pytest.mark.slow
def test_the_pooled_posterior_is_the_equal_mixture_of_the_components_laws():
    """3,000 pooled draws per component (1,500 per chain, 2 chains, 1,000 moves apart) against the enumerated
    mixture law; and, to show the check has power, the same draws against one component's law alone."""
    c, n = [4, 3, 2, 2, 1], 6
    model = UserItemModel(c, n, items_prior="mixture")
    post = model.fit(draws=1500, tune=200, chains=2, seed=21, moves=1000)
    per_chain = 1500 * len(MIXTURE_SHAPES)
    assert post.shape == (2, per_chain)
    counts = Counter(tuple(post.histogram(ch, d).tolist()) for ch in range(2) for d in range(per_chain))
    p, states = _chisquare(_mixture_law(c, n, MIXTURE_SHAPES), counts, 2 * per_chain)
    assert states >= 4 and p > 1e-3, (p, counts)
    for one in (MIXTURE_SHAPES[0], MIXTURE_SHAPES[2]):  # a component's law alone is refused (the exchangeable law
        p_one, _ = _chisquare(_mixture_law(c, n, (one,)), counts, 2 * per_chain)  # sits too close to the mixture's
        assert p_one < 1e-6, (one, p_one)  # on a case this small, 9 histograms)


def test_the_pool_is_each_component_fitted_alone_one_after_another():
    c, n = [30, 20, 12, 9, 7, 5, 3, 2], 45
    post = UserItemModel(c, n, items_prior="mixture").fit(draws=80, tune=40, chains=2, seed=3)
    comp = post.idata["posterior"]["items_component"].values
    from hybridpriv.core.random import stream

    share = []
    for j, prior in enumerate(UserItemModel(c, n, items_prior="mixture").items_prior.components):
        seed = int(stream(3, "items-mixture", j).generate_state(1, np.uint32)[0])
        alone = UserItemModel(c, n, items_prior=FixedItems(prior.log_pmf)).fit(draws=80, tune=40, chains=2, seed=seed)
        np.testing.assert_array_equal(post._h[:, 80 * j:80 * (j + 1)], alone._h)
        assert np.all(comp[:, 80 * j:80 * (j + 1)] == j)
        assert np.all(post.strata[:, 80 * j:80 * (j + 1)] == j)  # the strata the evaluation's errors work within
        share.append(alone._h[..., 0].mean() / n)
    assert share[0] > share[1] > share[2], share  # heavier tails put more users at one item
    # convergence and the summary name every component's variables; a refusal names the component
    power = f"power law {matched_exponent(len(c), 88 / 45):.3g}"  # its own mean: the known 88 / 45 items per user
    capped = f"power law {matched_exponent(len(c), 88 / 45, 8):.3g} to 8"  # 6 x 1.96 items, above m = 8: no tail
    labels = (power, "dispersion 1", "dispersion 4", capped)
    assert set(post.convergence) == {f"{v} ({a})" for v in ("share_one_item", "max_items") for a in labels}
    assert list(post.summary().index)[:2] == [f"share_one_item ({power})", f"max_items ({power})"]
    assert f"the draws of {power}, dispersion 1, dispersion 4, {capped} one after another" in post.idata["posterior"].attrs[
        "items_prior"]
    with pytest.raises(ConvergenceError, match=r"items prior power law [0-9.]+\) did not converge"):
        UserItemModel([60, 30, 20, 15, 12, 10, 9, 8, 7, 6], 90, items_prior="mixture").fit(
            draws=4, tune=0, chains=4, seed=0, moves=1)


def test_a_mixture_posterior_pickles_and_reads_back_from_its_saved_group():
    import pickle

    import xarray as xr

    from hybridpriv.core.random import rng

    model = UserItemModel([12, 8, 5, 3, 2], 15, items_prior="mixture")
    post = model.fit(draws=30, tune=20, chains=2, seed=4)
    back = pickle.loads(pickle.dumps(post))
    saved = xr.DataTree.from_dict({"/posterior": post.idata["posterior"].to_dataset()})
    again = model.posterior_class(model, saved, 4)
    for other in (back, again):
        np.testing.assert_array_equal(other.strata, post.strata)  # the components, kept as strata
        for ch, d in ((0, 0), (1, 59), (0, 31)):
            a = post.generate(ch, d, rng(0, "dataset", ch, d)).toarray()
            np.testing.assert_array_equal(a, other.generate(ch, d, rng(0, "dataset", ch, d)).toarray())


def test_mixture_refusals_name_the_parameter():
    with pytest.raises(ValueError, match=r"items_prior='mixture' needs n \(the number of users\), got n in \[4, 9\]"):
        UserItemModel([4, 2, 2, 1], None, items_prior="mixture")
    with pytest.raises(ValueError, match="an ItemsMixture needs m = 4 .* got 5"):
        UserItemModel([4, 2, 2, 1], 6, items_prior=ItemsMixture(5, mean=1.5))
    with pytest.raises(ValueError, match=r"shapes must hold at least two different components, got \[\('power-law', 2\)\]"):
        ItemsMixture(4, [("power-law", 2)])
    with pytest.raises(ValueError, match="dispersion must be a finite number > 0, got -1"):
        ItemsMixture(4, [("negative-binomial", 1.0), ("negative-binomial", -1)])
    with pytest.raises(ValueError, match="power-law exponent must be a finite number > 0, got nan"):
        ItemsMixture(4, [("negative-binomial", 1.0), ("power-law", float("nan"))])
    with pytest.raises(ValueError, match=r"shapes: each component must be a pair \(shape, value\), .* got 0.25"):
        ItemsMixture(4, (0.25, 1.0))  # the old form: dispersions alone
    assert ItemsMixture(4, [("power-law", np.int64(2)), ("negative-binomial", np.float32(1))]).shapes == (
        ("power-law", 2.0), ("negative-binomial", 1.0))  # NumPy scalars are numbers
    with pytest.raises(ValueError, match=r"got \('zipf', 2\)"):
        ItemsMixture(4, [("negative-binomial", 1.0), ("zipf", 2)])
    with pytest.raises(ValueError, match="on_unconverged must be 'raise', 'warn' or 'ignore', got 'no'"):
        UserItemModel([4, 2, 2, 1], 6, items_prior="mixture").fit(draws=5, tune=0, on_unconverged="no")


@pytest.mark.parametrize("m, mean", [(66, 1.74), (100, 3.6), (20, 1.05), (8, 4.0), (300, 2.2)])
def test_the_matched_exponents_power_law_has_the_asked_mean_by_scipys_zipfian(m, mean):
    s = matched_exponent(m, mean)
    assert MATCHED_EXPONENTS[0] < s < MATCHED_EXPONENTS[1]
    np.testing.assert_allclose(stats.zipfian(s, m).mean(), mean, rtol=1e-8)
    # and the root is the only one: a little steeper is below the mean, a little flatter above
    assert stats.zipfian(s * 1.01, m).mean() < mean < stats.zipfian(s * 0.99, m).mean()


def test_the_matched_exponent_on_two_items_is_the_closed_form_and_clips_at_the_ends():
    # m = 2: mean = (1 + 2 * 2^-s) / (1 + 2^-s), so 2^-s = (mean - 1) / (2 - mean)
    for mean in (1.1, 1.25, 1.4, 1.49):
        assert matched_exponent(2, mean) == pytest.approx(np.log2((2 - mean) / (mean - 1)), rel=1e-8)
    assert matched_exponent(10, 5.5) == MATCHED_EXPONENTS[0]  # the uniform law's mean (m + 1) / 2, or above
    assert matched_exponent(10, 7.0) == MATCHED_EXPONENTS[0]
    assert matched_exponent(10, 1.0) == MATCHED_EXPONENTS[1]  # every user at one item
    assert matched_exponent(1, 1.0) == MATCHED_EXPONENTS[1]
    for bad in (float("nan"), 0.5, float("inf")):
        with pytest.raises(ValueError, match=r"mean must be a finite number >= 1 \(items per user\), got"):
            matched_exponent(10, bad)


def test_a_mean_matched_component_takes_the_models_known_mean():
    c, n = [30, 20, 12, 9, 7, 5, 3, 2], 45  # 88 reports over 45 users: 1.96 items per user
    shapes = [("power-law-mean", 1.0), ("negative-binomial", 1.0)]
    mix = ItemsMixture(len(c), shapes, mean=88 / 45)
    s = matched_exponent(len(c), 88 / 45)
    assert mix.exponents == (s, None) and mix.label(0) == f"power law {s:.3g}"
    np.testing.assert_allclose(mix.components[0].log_pmf, stats.zipfian.logpmf(np.arange(1, 9), s, 8), atol=1e-12)
    assert "power law k^-%.3g (its own mean 1 x sum(c) / n = 1.96 items)" % s in mix.describe()
    twice = ItemsMixture(len(c), [("power-law-mean", 1.2), ("negative-binomial", 1.0)], mean=88 / 45)
    assert twice.exponents[0] == pytest.approx(matched_exponent(len(c), 1.2 * 88 / 45))
    with pytest.raises(ValueError, match="a 'power-law-mean' component needs the known mean number of items per user"):
        ItemsMixture(len(c), shapes)
    with pytest.raises(ValueError, match="power-law-mean factor must be a finite number > 0, got -1"):
        ItemsMixture(len(c), [("power-law-mean", -1), ("negative-binomial", 1.0)], mean=2.0)
    with pytest.raises(ValueError, match=r"mean must be None or a finite number >= 1 \(items per user\), got 0.5"):
        ItemsMixture(len(c), shapes, mean=0.5)
    assert UserItemModel(c, n, items_prior=mix).items_prior is mix


def _capped_pmf_by_scipy(m, s, cap):
    """The capped power law from SciPy's zipfian on 1..cap and a geometric tail beyond it: P(k) is proportional to
    zipfian(s, cap).pmf(k) for k <= cap and to zipfian(s, cap).pmf(cap) e^(-CAP_DROP (k - cap)) beyond."""
    k = np.arange(1, m + 1)
    head = stats.zipfian.pmf(np.minimum(k, cap), s, cap)
    p = np.where(k <= cap, head, head * np.exp(-CAP_DROP * (k - cap)))
    return p / p.sum()


@pytest.mark.parametrize("m, s, cap", [(30, 1.5, 12), (12, 2.0, 12), (50, 0.8, 3)])
def test_a_capped_power_laws_log_pmf_is_scipys_zipfian_with_a_geometric_tail(m, s, cap):
    np.testing.assert_allclose(np.exp(power_law_log_pmf(m, s, cap)), _capped_pmf_by_scipy(m, s, cap), atol=1e-12)
    if cap == m:  # nothing beyond the cap: the plain power law
        np.testing.assert_allclose(power_law_log_pmf(m, s, cap), power_law_log_pmf(m, s), atol=1e-12)


@pytest.mark.parametrize("m, mean, multiple", [(82, 3.43, 6.0), (40, 1.61, 6.0), (51, 6.01, 3.0), (8, 1.5, 6.0)])
def test_a_capped_component_has_the_known_mean_and_its_cap_at_the_multiple(m, mean, multiple):
    """Its exponent gives its own law (by SciPy, above) the known mean; its cap is multiple x mean in 2..m."""
    mix = ItemsMixture(m, [("power-law-capped", multiple), ("negative-binomial", 1.0)], mean=mean)
    cap, s = mix.caps[0], mix.exponents[0]
    assert cap == min(m, max(2, round(multiple * mean))) and mix.caps[1] is None and mix.exponents[1] is None
    p = _capped_pmf_by_scipy(m, s, cap)
    assert p @ np.arange(1, m + 1) == pytest.approx(mean, rel=1e-8)
    np.testing.assert_allclose(mix.components[0].log_pmf, np.log(p), atol=1e-10)
    assert mix.label(0) == f"power law {s:.3g} to {cap}"
    assert f"power law k^-{s:.3g} up to {cap} items ({multiple:g} x sum(c) / n; its own mean sum(c) / n = " \
           f"{mean:.3g} items)" in mix.describe()
    with pytest.raises(ValueError, match="a 'power-law-capped' component needs the known mean number of items"):
        ItemsMixture(m, [("power-law-capped", multiple), ("negative-binomial", 1.0)])
    with pytest.raises(ValueError, match="power-law-capped multiple must be a finite number >= 1, got 0.5"):
        ItemsMixture(m, [("power-law-capped", 0.5), ("negative-binomial", 1.0)], mean=mean)


def _marginal_given_total(g, n, total):
    """P(r_1 = k | r_1 + ... + r_n = total) for n i.i.d. rows of pmf g on 1..m, by repeated convolution."""
    rest = np.zeros(total + 1)
    rest[0] = 1.0
    for _ in range(n - 1):  # the law of the other n - 1 rows' sum
        rest = np.convolve(rest, np.r_[0.0, g])[:total + 1]
    p = np.array([g[k - 1] * rest[total - k] if k <= total else 0.0 for k in range(1, g.size + 1)])
    return p / p.sum()


def test_the_known_total_tilts_a_power_law_above_the_mean_and_leaves_the_matched_one_as_it_is():
    """Why the default power law is matched (module docstring): conditioned on the known total (50 users, 80 reports,
    1.6 items each, 20 items), k^-2 (own mean 2.25) loses 60% of its tail P(r >= 5); the matched exponent keeps it."""
    m, n, total = 20, 50, 80
    k = np.arange(1, m + 1)
    steep = stats.zipfian.pmf(k, 2.0, m)
    cond = _marginal_given_total(steep, n, total)
    assert cond @ k == pytest.approx(1.6, abs=0.01) and steep @ k > 2.2
    assert cond[4:].sum() < 0.45 * steep[4:].sum()  # 0.041 against 0.108
    matched = stats.zipfian.pmf(k, matched_exponent(m, total / n), m)
    cond = _marginal_given_total(matched, n, total)
    assert cond[4:].sum() == pytest.approx(matched[4:].sum(), rel=0.05)  # 0.045 against 0.044


def test_the_mixtures_components_are_the_alternatives_the_decision_is_checked_within():
    from hybridpriv.core.data import ThinnedSource
    from hybridpriv.engine.branches import branch_check
    from hybridpriv.engine.decision import decide
    from hybridpriv.engine.evaluate import evaluate
    from hybridpriv.estimators import ContributionBoundedCounts, ItemCounts

    c, n = [30, 20, 12, 9, 7, 5, 3, 2], 45
    model = UserItemModel(c, n, items_prior="mixture")
    post = model.fit(draws=60, tune=30, chains=2, seed=5)
    branches = post.branches()
    labels = [model.items_prior.label(j) for j in range(len(MIXTURE_SHAPES))]
    assert [b.name for b in branches] == [f"items-{x.replace(' ', '-')}" for x in labels]
    for j, b in enumerate(branches):
        assert b.holds == f"the items per user follow the {model.items_prior.describe_one(j)}"
        np.testing.assert_array_equal(b.draws, post.idata["posterior"]["items_component"].values == j)
    assert "negative binomial of dispersion 4" in branches[2].holds
    # the check within each component, against the mean risk over that component's datasets by hand
    source = ThinnedSource(post, 30)
    ev = evaluate({k: ContributionBoundedCounts(k, 1.0) for k in (1, 2, 3, 5)}, source, ItemCounts(), dim="k", seed=1)
    rec = decide(ev).attrs["recommended"]
    check = branch_check(ev, branches, source.index, rec)
    risk = ev["risk"].transpose("k", "chain", "draw").values
    for j, b in enumerate(branches):
        mask = b.draws[:, source.index]
        by_hand = risk[:, mask].mean(axis=1)
        assert str(check["best"].sel(branch=b.name, side="holds").values) == str([1, 2, 3, 5][int(np.argmin(by_hand))])
        assert float(check["share"].sel(branch=b.name, side="holds")) == pytest.approx(mask.mean())
    # one prior, no strata: no alternatives
    assert UserItemModel(c, n, items_prior="exchangeable").fit(draws=30, tune=10, chains=2, seed=5).branches() == []
