"""Releases from a dataset's statistics (issue 13): the same numbers as the per-record formulas.

``Estimator.release`` reads :class:`~hybridpriv.families.grouped.estimator.GroupedStatistics` (group sums,
pooled records, computed once per dataset) and draws only the noise per trial.  Every built-in
is checked here against the straightforward per-record formula it replaced, with the same
generator: bit for bit where the draws are the same (all but PDP Sample's skipping branch), and
in law where they are not (:func:`~hybridpriv.noise.poisson_subsample_sums` below ``p = 1/4``
or above ``3/4``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.privacy import Bounds, Group
from hybridpriv.estimators import (
    PDPSample,
    PEMedian,
    PublicMean,
    PublicMedian,
    UniformMean,
    UniformMedian,
    WeightedMean,
    WeightedMedian,
    pe_median_costs,
)
from hybridpriv.families.grouped import GroupedDataset
from hybridpriv.families.grouped.estimator import GroupedStatistics, grouped_statistics
from hybridpriv.noise import (
    SKIP_BELOW,
    interval_exponential_mechanism,
    poisson_subsample_sums,
    sample_log_weights,
    smith_quantile,
)

GROUPS = [Group("pub", 7, math.inf), Group("a", 30, 1.0), Group("b", 12, 0.3)]
BOUNDS = Bounds(-2.0, 3.0)
T = 64


def _data(seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 3, g.size) for g in GROUPS]


def _rows(data, trials=T):
    return [np.broadcast_to(x, (trials, x.size)) for x in data]


# -- the per-record formulas the statistics path replaced (one row per trial) --------------------------
def old_weighted(est, data, rng):
    sums = np.stack([x.sum(axis=1) for x in data], axis=1)
    eps = est.epsilons
    scale = np.where(np.isinf(eps), 0.0, est.sensitivity / np.where(np.isinf(eps), 1.0, eps))
    return ((sums + scale * rng.laplace(size=sums.shape)) / est.sizes) @ est.weights


def old_uniform(est, data, rng):
    total = sum(x.sum(axis=1) for x in data)
    n = float(est.sizes.sum())
    if np.isinf(est.epsilon):
        return total / n
    return (total + est.bounds.sum_sensitivity(est.relation) / est.epsilon * rng.laplace(size=total.shape)) / n


def old_pdp(est, data, rng):
    """One coin per record and trial: ``rng.random(x.shape) < p`` (the seed's form)."""
    trials = data[0].shape[0]
    kept_sum, kept_n = np.zeros(trials), np.zeros(trials)
    if est.centre:
        data = [x - est.centre for x in data]
    for x, p in zip(data, est.keep_probabilities):
        if p >= 1.0:
            kept_sum += x.sum(axis=1)
            kept_n += x.shape[1]
        else:
            keep = rng.random(x.shape) < p
            kept_sum += np.where(keep, x, 0.0).sum(axis=1)
            kept_n += keep.sum(axis=1)
    noisy = kept_sum + est.sensitivity / est.threshold * rng.laplace(size=trials)
    if est.denominator == "expected":
        return est.centre + noisy / est.expected_kept
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(kept_n > 0, noisy / kept_n, est.bounds.midpoint)


def old_weighted_median(est, data, rng):
    medians = np.empty((data[0].shape[0], len(data)))
    for k, (g, x) in enumerate(zip(est.groups, data)):
        medians[:, k] = np.median(x, axis=1) if g.is_public else smith_quantile(x, 0.5, g.epsilon, est.bounds, rng)
    return medians @ est.weights


def old_uniform_median(est, data, rng):
    return smith_quantile(np.concatenate(data, axis=1), 0.5, est.epsilon, est.bounds, rng)


def old_pe_median(est, data, rng):
    x = np.concatenate(data, axis=1)
    order = np.argsort(x, axis=1, kind="stable")
    xs = np.take_along_axis(x, order, axis=1)
    costs = pe_median_costs(np.repeat(est.epsilons, est.sizes)[order])
    edges = np.concatenate([np.full((x.shape[0], 1), est.bounds.lower), xs, np.full((x.shape[0], 1), est.bounds.upper)], axis=1)
    assert ((np.diff(edges, axis=1) > 0) & np.isfinite(costs)).any(axis=1).all()  # continuous data: no ties
    return interval_exponential_mechanism(edges, -costs / 2.0, rng)


CASES = {
    "weighted": (WeightedMean(GROUPS, BOUNDS, 1.0), old_weighted),
    "weighted-replace": (WeightedMean(GROUPS, BOUNDS, 1.0, relation="replace"), old_weighted),
    "uniform-mean": (UniformMean(GROUPS, BOUNDS), old_uniform),
    "uniform-mean-public": (UniformMean(GROUPS[:1], BOUNDS), old_uniform),
    "public-mean": (PublicMean(GROUPS, BOUNDS), lambda e, d, r: d[0].mean(axis=1)),
    "public-median": (PublicMedian(GROUPS, BOUNDS), lambda e, d, r: np.median(d[0], axis=1)),
    "pdp-min": (PDPSample(GROUPS, BOUNDS, "min"), old_pdp),  # every record kept: no coins
    "pdp-min-expected": (PDPSample(GROUPS, BOUNDS, "min", denominator="expected"), old_pdp),
    "pdp-0.5": (PDPSample(GROUPS, BOUNDS, 0.5), old_pdp),  # b: p = 0.54, a coin per record (draws unchanged)
    "weighted-median": (WeightedMedian(GROUPS, BOUNDS, 1.0), old_weighted_median),
    "uniform-median": (UniformMedian(GROUPS, BOUNDS), old_uniform_median),
    "pe-median": (PEMedian(GROUPS, BOUNDS), old_pe_median),
}


@pytest.mark.parametrize("name", list(CASES))
def test_release_equals_the_per_record_formula_bit_for_bit(name):
    est, old = CASES[name]
    if name == "pdp-0.5":
        assert all(p >= 1 or SKIP_BELOW < p < 1 - SKIP_BELOW for p in est.keep_probabilities)
    data = _data()[:len(est.groups)]
    expected = old(est, _rows(data), np.random.default_rng(5))
    got = est.release(GroupedDataset(tuple(data)), np.random.default_rng(5), T)
    np.testing.assert_array_equal(got, expected)
    # batched data (one dataset per trial) go through the same formula
    batch = [np.random.default_rng(9).uniform(-2, 3, (T, g.size)) for g in est.groups]
    np.testing.assert_array_equal(est.estimate(batch, np.random.default_rng(6)), old(est, batch, np.random.default_rng(6)))


def test_statistics_are_computed_once_per_dataset_and_setting():
    data = GroupedDataset(tuple(_data()))
    a, b = WeightedMean(GROUPS, BOUNDS, 1.0), UniformMean(GROUPS, BOUNDS)
    a.release(data, np.random.default_rng(0), 3)
    b.release(data, np.random.default_rng(0), 3)
    assert len(data.statistics_cache) == 1  # shared by both candidates
    st = grouped_statistics(data, GROUPS, BOUNDS)
    assert st is next(iter(data.statistics_cache.values())) and st.rows == 1
    np.testing.assert_array_equal(st.sums[0], [x.sum() for x in data.values])
    assert st.sums is st.sums  # computed once
    # other bounds: validated and cached apart (and refused when the records fall outside them)
    grouped_statistics(data, GROUPS, Bounds(-5.0, 5.0))
    assert len(data.statistics_cache) == 2
    with pytest.raises(ValueError, match="outside bounds"):
        WeightedMean(GROUPS, (0.0, 3.0), 1.0).release(data, np.random.default_rng(0), 2)
    clamped = WeightedMean(GROUPS, (0.0, 3.0), 1.0, clamp=True).release(data, np.random.default_rng(0), 2)
    np.testing.assert_array_equal(clamped, WeightedMean(GROUPS, (0.0, 3.0), 1.0, clamp=True).release(
        [np.clip(x, 0.0, 3.0) for x in data.values], np.random.default_rng(0), 2))
    assert isinstance(st, GroupedStatistics) and data == GroupedDataset(data.values)  # the cache is not compared


def test_a_subclass_overriding_estimate_still_runs_its_own_formula():
    class Doubled(WeightedMean):
        def _estimate(self, data, rng):
            return 2.0 * super()._estimate(data, rng)

    data = _data()
    plain = WeightedMean(GROUPS, BOUNDS, 1.0).release(data, np.random.default_rng(3), 5)
    np.testing.assert_array_equal(Doubled(GROUPS, BOUNDS, 1.0).release(data, np.random.default_rng(3), 5), 2.0 * plain)


# -- Poisson subsampling ------------------------------------------------------------------------------
def test_poisson_subsample_sums_without_skipping_is_one_coin_per_record():
    x = np.random.default_rng(0).normal(size=(1, 25))
    for p in (0.0, 0.3, 0.7, 1.0):
        s, m = poisson_subsample_sums(x, p, 40, np.random.default_rng(4))
        if p in (0.0, 1.0):
            assert (m == 25 * p).all() and np.array_equal(s, np.full(40, x.sum() if p else 0.0))
            continue
        keep = np.random.default_rng(4).random((40, 25)) < p
        np.testing.assert_array_equal(s, np.where(keep, x, 0.0).sum(axis=1))
        np.testing.assert_array_equal(m, keep.sum(axis=1))


@pytest.mark.parametrize("p", [0.12, 0.9])
def test_skipping_draws_every_subset_with_its_bernoulli_probability(p):
    """Records 2^j: the sum names the kept subset, so the whole joint law of the 8 coins is tested
    (chi-square over the 256 subsets; the counts must agree with the decoded subsets)."""
    n, trials = 8, 60_000
    assert min(p, 1 - p) <= SKIP_BELOW
    scale = np.array([1.0, 3.0])[np.arange(trials) % 2]  # one dataset per trial: rows are used as given
    x = scale[:, None] * 2.0 ** np.arange(n)
    s, m = poisson_subsample_sums(x, p, trials, np.random.default_rng(11))
    subset = np.rint(s / scale).astype(int)
    assert np.allclose(subset * scale, s) and ((subset >= 0) & (subset < 2**n)).all()
    size = np.array([bin(k).count("1") for k in range(2**n)])
    np.testing.assert_array_equal(m, size[subset])
    probs = p ** size * (1 - p) ** (n - size)
    observed = np.bincount(subset, minlength=2**n)
    pooled = probs * trials < 5  # rare subsets pooled into one cell
    obs = np.append(observed[~pooled], observed[pooled].sum())
    exp = np.append(probs[~pooled], probs[pooled].sum()) * trials
    assert stats.chisquare(obs, exp).pvalue > 1e-4


def test_pdp_sample_skipping_has_the_law_of_one_coin_per_record():
    """Old (one coin per record) against new (skipping) on 160,000 trials each.

    A 5% bias in the kept count's mean, the released mean's mean or its variance would show as at
    least 8 standard errors (asserted from the samples), and the test fails beyond 4: a false alarm
    has probability about 6e-5 per statistic, a missed 5% bias below 1e-4.  A two-sample KS test
    on the releases must not reject at 1e-4.
    """
    groups = [Group("pub", 10, math.inf), Group("strict", 100, 0.3), Group("near", 30, 2.0)]
    est = PDPSample(groups, (0.0, 1.0), 2.2)
    p = est.keep_probabilities
    assert p[1] < SKIP_BELOW and p[2] > 1 - SKIP_BELOW  # both skipping branches
    data = [np.random.default_rng(k).uniform(0, 1, g.size) for k, g in enumerate(groups)]
    trials = 160_000
    new = est.release(data, np.random.default_rng(21), trials)
    rng = np.random.default_rng(22)
    old = np.concatenate([old_pdp(est, _rows(data, trials // 4), rng) for _ in range(4)])
    s_new, m_new = poisson_subsample_sums(data[1][None, :], float(p[1]), trials, np.random.default_rng(23))
    keep = np.random.default_rng(24).random((trials, data[1].size)) < p[1]
    m_old = keep.sum(axis=1).astype(float)

    def z(a, b):  # difference of means in standard errors, and 5% of the old mean in the same units
        se = math.sqrt(a.var() / a.size + b.var() / b.size)
        return (a.mean() - b.mean()) / se, 0.05 * abs(b.mean()) / se

    for a, b in ((m_new, m_old), (new, old)):
        dz, bias = z(a, b)
        assert bias > 8 and abs(dz) < 4, (dz, bias)
    # variances: log ratio with its delta-method standard error
    d_new, d_old = (new - new.mean()) ** 2, (old - old.mean()) ** 2
    se = math.sqrt(d_new.var() / d_new.mean() ** 2 / trials + d_old.var() / d_old.mean() ** 2 / trials)
    assert math.log(1.05) / se > 8 and abs(math.log(d_new.mean() / d_old.mean())) / se < 4
    assert stats.ks_2samp(new, old).pvalue > 1e-4
    assert np.allclose(s_new.mean(), p[1] * data[1].sum(), rtol=0.05)


def test_poisson_subsample_sums_refuses_bad_input_naming_it():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="p must be a probability"):
        poisson_subsample_sums(np.ones(3), 1.5, 2, rng)
    with pytest.raises(TypeError, match="p must be a probability"):
        poisson_subsample_sums(np.ones(3), "0.5", 2, rng)
    with pytest.raises(ValueError, match="values must have shape"):
        poisson_subsample_sums(np.ones((3, 4)), 0.1, 2, rng)
    with pytest.raises(ValueError, match="trials"):
        poisson_subsample_sums(np.ones(3), 0.1, 0, rng)
    # a vanishing probability (a large threshold) keeps nothing and never overflows the gaps
    s, m = poisson_subsample_sums(np.ones(50), 1e-300, 5, rng)
    assert (s == 0).all() and (m == 0).all()
    # many trials: skipping in blocks covers every trial to the end of the group
    s, m = poisson_subsample_sums(np.ones(2_000), 0.01, 3_000, rng)
    np.testing.assert_array_equal(s, m)
    assert abs(m.mean() - 20.0) < 0.5


# -- medians: one sort and one set of interval weights per dataset ------------------------------------
def test_smith_quantile_with_trials_draws_as_the_repeated_dataset():
    x = np.random.default_rng(2).uniform(0, 1, 15)
    tied = np.array([0.2, 0.5, 0.5, 0.5, 0.9])  # at epsilon = inf every maximising interval is empty
    for data, eps in ((x, 0.7), (x, math.inf), (tied, math.inf), (tied, 2.0)):
        want = smith_quantile(np.broadcast_to(data, (T, data.size)), 0.5, eps, (0, 1), np.random.default_rng(8))
        for given in (data, data[None, :]):
            got = smith_quantile(given, 0.5, eps, (0, 1), np.random.default_rng(8), trials=T)
            np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="data must have shape"):
        smith_quantile(np.zeros((3, 4)), 0.5, 1.0, (0, 1), np.random.default_rng(0), trials=5)
    with pytest.raises(ValueError, match="trials"):
        smith_quantile(x, 0.5, 1.0, (0, 1), np.random.default_rng(0), trials=0)


def test_interval_mechanism_broadcasts_one_row_of_edges_over_trials():
    edges = np.array([[0.0, 0.1, 0.5, 0.5, 1.0]])
    lw = np.broadcast_to([0.0, 1.0, 2.0, -1.0], (T, 4))
    want = interval_exponential_mechanism(np.broadcast_to(edges, (T, 5)), lw, np.random.default_rng(1))
    np.testing.assert_array_equal(interval_exponential_mechanism(edges, lw, np.random.default_rng(1)), want)
    with pytest.raises(ValueError, match="one more entry"):
        interval_exponential_mechanism(np.zeros((3, 5)), np.zeros((2, 4)), np.random.default_rng(1))


def test_pe_median_on_ties_is_the_per_record_formula():
    """Every feasible interval empty (20 tied public records): a point mass, drawn as before."""
    groups = [Group("pub", 20, math.inf), Group("priv", 1, 1.0)]
    est = PEMedian(groups, (0.0, 10.0))
    data = [np.full(20, 3.0), np.array([7.0])]
    np.testing.assert_array_equal(est.release(data, np.random.default_rng(5), T), 3.0)
    x = np.concatenate(_rows(data), axis=1)
    costs = pe_median_costs(np.repeat(est.epsilons, est.sizes)[np.argsort(x, axis=1, kind="stable")])
    lw = np.where(np.isfinite(costs), -costs / 2.0, -np.inf)
    k = sample_log_weights(lw, np.random.default_rng(5))
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    est.release(data, r1, T)
    sample_log_weights(lw, r2)
    assert r1.random() == r2.random() and k.shape == (T,)  # the same draws were consumed


def test_pdp_sample_skipping_draws_only_what_the_release_backend_serves():
    from hybridpriv.release import probe_noise

    est = PDPSample(GROUPS, BOUNDS, 2.0)
    assert est.keep_probabilities[2] <= SKIP_BELOW  # group b is subsampled by skipping
    calls = probe_noise(est, _data())
    assert set(calls) <= {"laplace", "random"} and calls["laplace"] == 1


def test_the_cache_leaves_the_dataset_description_unchanged():
    """Checkpoints and provenance describe a dataset: filling its statistics cache must not change that."""
    from hybridpriv.core.params import describe, fingerprint

    ds = GroupedDataset(tuple(_data()))
    before, text = fingerprint(ds), str(describe(ds))
    WeightedMean(GROUPS, BOUNDS, 1.0).release(ds, np.random.default_rng(0), trials=3)
    assert ds.statistics_cache and fingerprint(ds) == before and str(describe(ds)) == text


def test_values_by_group_name_are_never_shared_across_group_orders():
    """Two settings with the same sizes but the groups in another order must not read each other's arrays
    (a public-only estimator would otherwise release the private group's mean without noise)."""
    pub, priv = Group("pub", 100, math.inf), Group("priv", 100, 1.0)
    ds = GroupedDataset({"pub": np.zeros(100), "priv": np.ones(100)})  # type: ignore[arg-type]
    PublicMean([priv, pub], Bounds(0, 1)).release(ds, np.random.default_rng(0), trials=2)
    out = PublicMean([pub, priv], Bounds(0, 1)).release(ds, np.random.default_rng(0), trials=2)
    np.testing.assert_array_equal(out, [0.0, 0.0])
    # positional values: the cache is keyed by the groups' names and sizes
    ds = GroupedDataset((np.zeros(100), np.ones(100)))
    a = PublicMean([pub, priv], Bounds(0, 1)).release(ds, np.random.default_rng(0), trials=2)
    b = PublicMean([Group("x", 100, math.inf), Group("y", 100, 1.0)], Bounds(0, 1)).release(
        ds, np.random.default_rng(0), trials=2)
    np.testing.assert_array_equal(a, [0.0, 0.0]) and np.testing.assert_array_equal(b, [0.0, 0.0])
    assert len(ds.statistics_cache) == 2
