"""hybridpriv.core.data: clamped-normal moments by numerical integration, sources, truths."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from hybridpriv.core.data import DatasetSource
from hybridpriv.core.privacy import Bounds, Group
from hybridpriv.families.grouped import (
    GroupedDataset,
    IIDSource,
    clamped_normal_moments,
    normal_source,
    sample_statistic,
)

ROOT_SEED = 0xDA7A


def make_rng(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([ROOT_SEED, key]))


def quad_clamped_moments(mu: float, sigma: float, a: float, b: float) -> tuple[float, float]:
    """E[Y], Var[Y] for Y = clip(X, a, b) by numerical integration (atoms at a and b)."""
    pa = stats.norm.cdf(a, mu, sigma)
    pb = stats.norm.sf(b, mu, sigma)
    m1, _ = integrate.quad(lambda x: x * stats.norm.pdf(x, mu, sigma), a, b, epsabs=1e-13, epsrel=1e-12, limit=200)
    m2, _ = integrate.quad(lambda x: x * x * stats.norm.pdf(x, mu, sigma), a, b, epsabs=1e-13, epsrel=1e-12, limit=200)
    mean = a * pa + b * pb + m1
    second = a * a * pa + b * b * pb + m2
    return mean, second - mean * mean


@pytest.mark.parametrize(
    "mu, sigma, a, b",
    [(0.0, 1.0, -1.0, 1.0), (0.5, 2.0, -1.0, 3.0), (4.0, 1.0, -1.0, 2.0), (0.0, 5.0, -50.0, 50.0), (-2.0, 0.3, -1.0, 1.0)],
)
def test_clamped_normal_moments_by_quadrature(mu, sigma, a, b):
    m = clamped_normal_moments(mu, sigma, Bounds(a, b))
    mean, var = quad_clamped_moments(mu, sigma, a, b)
    assert m["mean"] == pytest.approx(mean, rel=1e-9, abs=1e-12)
    assert m["variance"] == pytest.approx(var, rel=1e-8, abs=1e-12)
    assert m["median"] == min(max(mu, a), b)


def test_clamped_normal_moments_monte_carlo():
    rng = make_rng(1)
    x = np.clip(rng.normal(0.7, 1.5, 400000), -1.0, 2.0)
    m = clamped_normal_moments(0.7, 1.5, Bounds(-1.0, 2.0))
    se_mean = x.std() / math.sqrt(x.size)
    assert abs(x.mean() - m["mean"]) < 4 * se_mean
    c = x - x.mean()
    se_var = math.sqrt((np.mean(c**4) - np.var(c) ** 2) / x.size)
    assert abs(np.var(x, ddof=1) - m["variance"]) < 4 * se_var
    # median of the clamped distribution: P(Y <= median) = 1/2
    assert abs(np.mean(x <= m["median"]) - 0.5) < 4 * math.sqrt(0.25 / x.size)


def test_sample_statistic_and_truth():
    values = (np.array([1.0, 5.0]), np.array([2.0, 3.0, 10.0]))
    assert sample_statistic(values, "mean") == pytest.approx(21.0 / 5)
    assert sample_statistic(values, "median") == 3.0
    assert sample_statistic((np.array([1.0, 2.0]), np.array([4.0, 8.0])), "median") == 3.0
    with pytest.raises(ValueError, match=r"statistic must be one of .*got 'mode'"):
        sample_statistic(values, "mode")
    ds = GroupedDataset(values, {"mean": 0.5, "median": 0.25})
    assert ds.truth("mean") == 0.5
    assert ds.truth("median", target="sample") == 3.0
    with pytest.raises(ValueError, match=r"no population 'median'"):
        GroupedDataset(values, {"mean": 0.5}).truth("median")
    with pytest.raises(ValueError, match=r"target must be 'population' or 'sample', got 'pop'"):
        ds.truth("mean", target="pop")


GROUPS = [Group("pub", 4, math.inf), Group("a", 30, 1.0), Group("b", 7, 0.2)]


def test_iid_source_clamps_keeps_public_values_and_is_deterministic():
    public = np.array([0.0, 1.0, -1.0, 2.0])
    src = IIDSource(GROUPS, (-1.0, 2.0), lambda rng, n: rng.normal(0.0, 3.0, n), {"mean": 0.0}, draws=5,
                    public_values={"pub": public})
    assert isinstance(src, DatasetSource)
    assert src.shape == (1, 5)
    d1 = src.generate(0, 0, make_rng(2))
    d2 = src.generate(0, 0, make_rng(2))
    d3 = src.generate(0, 1, make_rng(3))
    assert [v.shape for v in d1.values] == [(4,), (30,), (7,)]
    np.testing.assert_array_equal(d1.values[0], public)
    np.testing.assert_array_equal(d3.values[0], public)
    for v1, v2 in zip(d1.values, d2.values):
        np.testing.assert_array_equal(v1, v2)
    assert not np.array_equal(d1.values[1], d3.values[1])
    allv = np.concatenate(d1.values[1:] + d3.values[1:])
    assert allv.min() >= -1.0 and allv.max() <= 2.0
    # with sd 3 some records were clamped onto the bounds
    assert (allv == -1.0).any() and (allv == 2.0).any()
    assert d1.truth("mean") == 0.0


def test_normal_source_population_and_data():
    src = normal_source(GROUPS, (-2.0, 3.0), 0.5, 1.5, draws=3)
    assert src.population == clamped_normal_moments(0.5, 1.5, Bounds(-2.0, 3.0))
    rng = make_rng(4)
    pooled = np.concatenate([np.concatenate(src.generate(0, k, rng).values) for k in range(3000)])
    mean, var = quad_clamped_moments(0.5, 1.5, -2.0, 3.0)
    assert abs(pooled.mean() - mean) < 4 * math.sqrt(var / pooled.size)
    with pytest.raises(ValueError, match=r"sigma > 0, got mu=0.0, sigma=0.0"):
        normal_source(GROUPS, (-2.0, 3.0), 0.0, 0.0, draws=3)
    with pytest.raises(ValueError, match=r"got mu=nan"):
        normal_source(GROUPS, (-2.0, 3.0), float("nan"), 1.0, draws=3)


def test_iid_source_bad_input():
    def sampler(rng, n):
        return rng.normal(size=n)

    with pytest.raises(ValueError, match=r"draws must be an integer >= 1, got 0"):
        IIDSource(GROUPS, (0, 1), sampler, {}, draws=0)
    with pytest.raises(ValueError, match=r"draws must be an integer >= 1, got 2.5"):
        IIDSource(GROUPS, (0, 1), sampler, {}, draws=2.5)
    with pytest.raises(TypeError, match=r"sampler must be callable, got 3"):
        IIDSource(GROUPS, (0, 1), 3, {}, draws=1)
    with pytest.raises(ValueError, match=r"public_values names unknown group 'zz'"):
        IIDSource(GROUPS, (0, 1), sampler, {}, draws=1, public_values={"zz": [0.5]})
    with pytest.raises(ValueError, match=r"group 'a', which is not public \(epsilon=1\)"):
        IIDSource(GROUPS, (0, 1), sampler, {}, draws=1, public_values={"a": [0.5] * 30})
    with pytest.raises(ValueError, match=r"public_values\['pub'\] must have 4 records, got shape \(3,\)"):
        IIDSource(GROUPS, (0, 1), sampler, {}, draws=1, public_values={"pub": [0.5] * 3})
    with pytest.raises(ValueError, match=r"public_values\['pub'\] has 1 value\(s\) outside bounds"):
        IIDSource(GROUPS, (0, 1), sampler, {}, draws=1, public_values={"pub": [0.5, 0.5, 0.5, 9.0]})
    with pytest.raises(ValueError, match=r"lower < upper"):
        IIDSource(GROUPS, (1, 0), sampler, {}, draws=1)
