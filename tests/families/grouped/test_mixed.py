"""Ferrando et al.'s mixed estimators: WeightedMean and WeightedMedian."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.privacy import Group, Guarantee
from hybridpriv.estimators import WeightedMean, WeightedMedian

ROOT_SEED = 0x313ED


def make_rng(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([ROOT_SEED, key]))


def paper_weights(sizes, eps, sigma2, r):
    tilde = [n / sigma2 if math.isinf(e) else n * n / (n * sigma2 + 2 * r * r / (e * e)) for n, e in zip(sizes, eps)]
    return np.array(tilde) / sum(tilde)


GROUPS = [Group("pub", 6, math.inf), Group("lo", 9, 0.2), Group("hi", 5, 2.0)]
BOUNDS = (-2.0, 1.0)


def test_weighted_mean_weights_guarantee_and_scalar_output():
    est = WeightedMean(GROUPS, BOUNDS, 0.5)
    np.testing.assert_allclose(est.weights, paper_weights([6, 9, 5], [math.inf, 0.2, 2.0], 0.5, 2.0), rtol=1e-12)
    assert est.sensitivity == 2.0
    assert est.privacy == {
        "pub": Guarantee(math.inf, 0.0, "add-remove"),
        "lo": Guarantee(0.2, 0.0, "add-remove"),
        "hi": Guarantee(2.0, 0.0, "add-remove"),
    }
    assert WeightedMean(GROUPS, BOUNDS, 0.5, relation="replace").privacy["lo"] == Guarantee(0.2, 0.0, "replace")
    rng = make_rng(1)
    data = [rng.uniform(-2, 1, g.size) for g in GROUPS]
    out = est.estimate(data, rng)
    assert isinstance(out, float)
    assert -2.0 - 50 < out < 1.0 + 50  # noise can leave the bounds; just a finite number
    assert "lo: epsilon=0.2 (add-remove)" in est.describe_privacy()


def test_weighted_mean_public_only_is_exact_weighted_mean():
    groups = [Group("p1", 3, math.inf), Group("p2", 5, math.inf)]
    est = WeightedMean(groups, (0.0, 10.0), 2.0)
    data = [np.array([1.0, 2.0, 6.0]), np.array([0.0, 10.0, 5.0, 5.0, 4.0])]
    # weights n_i / N: the pooled mean (3*3 + 5*4.8)/8
    assert est.estimate(data, make_rng(2)) == pytest.approx((9.0 + 24.0) / 8.0, rel=1e-14)


def test_weighted_mean_noise_per_group_by_isolation():
    """Only group 'hi' varies across trials (others constant data): the output's variance is
    beta_hi^2 * 2 (r/eps_hi)^2 / n_hi^2 + beta_lo^2 * 2 (r/eps_lo)^2 / n_lo^2 (Laplace noise only)."""
    est = WeightedMean(GROUPS, BOUNDS, 0.5)
    w = paper_weights([6, 9, 5], [math.inf, 0.2, 2.0], 0.5, 2.0)
    trials = 100000
    data = [np.zeros((trials, g.size)) for g in GROUPS]
    out = est.estimate(data, make_rng(3))
    exact = w[1] ** 2 * 2 * (2.0 / 0.2) ** 2 / 81 + w[2] ** 2 * 2 * (2.0 / 2.0) ** 2 / 25
    c = out - out.mean()
    se = math.sqrt((np.mean(c**4) - np.var(c) ** 2) / trials)
    assert abs(np.var(out, ddof=1) - exact) < 4 * se, (np.var(out), exact, se)
    assert abs(out.mean()) < 4 * math.sqrt(exact / trials)


def test_weighted_mean_mapping_clamp_and_determinism():
    est = WeightedMean(GROUPS, BOUNDS, 0.5)
    rng = make_rng(4)
    data = {g.name: rng.uniform(-2, 1, (50, g.size)) for g in GROUPS}
    seq = [data[g.name] for g in GROUPS]
    a = est.estimate(data, make_rng(5))
    b = est.estimate(seq, make_rng(5))
    c = est.estimate(seq, make_rng(6))
    assert a.shape == (50,)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    wide = [x.copy() for x in seq]
    wide[1][:, 0] = 7.0  # outside the bounds
    with pytest.raises(ValueError, match=r"data for group 'lo' has 50 value\(s\) outside bounds \[-2, 1\] \(first: 7\)"):
        est.estimate(wide, make_rng(5))
    clipped = [x.copy() for x in wide]
    clipped[1][:, 0] = 1.0
    est_c = WeightedMean(GROUPS, BOUNDS, 0.5, clamp=True)
    np.testing.assert_array_equal(est_c.estimate(wide, make_rng(7)), est.estimate(clipped, make_rng(7)))


def test_weighted_median_all_public_is_weighted_exact_medians():
    groups = [Group("p1", 3, math.inf), Group("p2", 4, math.inf)]
    est = WeightedMedian(groups, (0.0, 10.0), 1.0)
    data = [np.array([9.0, 1.0, 2.0]), np.array([0.0, 10.0, 5.0, 3.0])]
    # medians 2 and 4 (mean of middle two), weights 3/7 and 4/7
    assert est.estimate(data, make_rng(8)) == pytest.approx(3 / 7 * 2.0 + 4 / 7 * 4.0, rel=1e-14)
    batch = [np.broadcast_to(data[0], (5, 3)), np.broadcast_to(data[1], (5, 4))]
    np.testing.assert_allclose(est.estimate(batch, make_rng(8)), np.full(5, 3 / 7 * 2.0 + 4 / 7 * 4.0), rtol=1e-14)


def test_weighted_median_private_part_follows_smith_distribution():
    """out = beta_pub * median(pub) + beta_priv * S, with S Smith's eps-DP median: recover S and
    compare its interval with the exact probabilities ∝ length * exp(-eps |j - n/2| / 2)."""
    groups = [Group("pub", 3, math.inf), Group("priv", 5, 1.0)]
    sigma2, lo, hi = 0.4, 0.0, 2.0
    est = WeightedMedian(groups, (lo, hi), sigma2)
    w = paper_weights([3, 5], [math.inf, 1.0], sigma2, 2.0)
    np.testing.assert_allclose(est.weights, w, rtol=1e-12)
    pub = np.array([0.5, 1.9, 1.2])
    priv = np.array([0.1, 0.3, 0.35, 1.0, 1.6])
    trials = 30000
    out = est.estimate([np.broadcast_to(pub, (trials, 3)), np.broadcast_to(priv, (trials, 5))], make_rng(9))
    s = (out - w[0] * 1.2) / w[1]
    assert s.min() >= lo - 1e-9 and s.max() <= hi + 1e-9
    edges = [lo, *priv, hi]
    probs = np.array([(edges[j + 1] - edges[j]) * math.exp(-1.0 * abs(j - 2.5) / 2) for j in range(6)])
    probs /= probs.sum()
    j = np.searchsorted(priv, s)
    counts = np.bincount(j, minlength=6)
    p = stats.chisquare(counts, probs * trials).pvalue
    assert p > 1e-3, (counts, probs * trials)


def test_weighted_median_guarantee_and_determinism():
    est = WeightedMedian(GROUPS, BOUNDS, 0.5)
    assert {k: g.epsilon for k, g in est.privacy.items()} == {"pub": math.inf, "lo": 0.2, "hi": 2.0}
    data = [make_rng(10).uniform(-2, 1, (20, g.size)) for g in GROUPS]
    np.testing.assert_array_equal(est.estimate(data, make_rng(11)), est.estimate(data, make_rng(11)))
    out = est.estimate(data, make_rng(11))
    assert ((out >= -2.0) & (out <= 1.0)).all()  # convex combination of values in the bounds


@pytest.mark.parametrize("cls", [WeightedMean, WeightedMedian])
def test_mixed_bad_input(cls):
    with pytest.raises(ValueError, match=r"sigma2 must be > 0, got 0"):
        cls(GROUPS, BOUNDS, 0)
    with pytest.raises(ValueError, match=r"sigma2 must be > 0, got -1.5"):
        cls(GROUPS, BOUNDS, -1.5)
    with pytest.raises(ValueError, match=r"sigma2 must be finite, got nan"):
        cls(GROUPS, BOUNDS, float("nan"))
    with pytest.raises(TypeError, match=r"sigma2 must be a real number, got None"):
        cls(GROUPS, BOUNDS, None)
    with pytest.raises(ValueError, match=r"relation must be one of .*got 'swap'"):
        cls(GROUPS, BOUNDS, 1.0, relation="swap")
    with pytest.raises(ValueError, match=r"lower < upper, got \[1, -2\]"):
        cls(GROUPS, (1.0, -2.0), 1.0)
    with pytest.raises(ValueError, match=r"lower < upper, got \[1, 1\]"):
        cls(GROUPS, (1.0, 1.0), 1.0)
    with pytest.raises(ValueError, match=r"bounds lower must be finite, got nan"):
        cls(GROUPS, (float("nan"), 1.0), 1.0)
    with pytest.raises(TypeError, match=r"clamp must be True or False, got 1"):
        cls(GROUPS, BOUNDS, 1.0, clamp=1)
    with pytest.raises(ValueError, match=r"at least one group"):
        cls([], BOUNDS, 1.0)

    est = cls(GROUPS, BOUNDS, 1.0)
    good = [np.zeros(g.size) for g in GROUPS]
    rng = make_rng(12)
    with pytest.raises(ValueError, match=r"data for group 'lo' contains NaN"):
        est.estimate([good[0], np.full(9, np.nan), good[2]], rng)
    with pytest.raises(ValueError, match=r"data for group 'hi' must have 5 records \(its declared size\), got 4"):
        est.estimate([good[0], good[1], np.zeros(4)], rng)
    with pytest.raises(ValueError, match=r"expected 3, got 2"):
        est.estimate(good[:2], rng)
    with pytest.raises(ValueError, match=r"outside bounds \[-2, 1\] \(first: 3\)"):
        est.estimate([np.full(6, 3.0), good[1], good[2]], rng)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator .*got int"):
        est.estimate(good, 0)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator .*got RandomState"):
        est.estimate(good, np.random.RandomState(0))
