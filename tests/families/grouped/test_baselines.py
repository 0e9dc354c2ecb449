"""Plain baselines: UniformMean, UniformMedian, PublicMean, PublicMedian."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.privacy import Group, Guarantee
from hybridpriv.estimators import PublicMean, PublicMedian, UniformMean, UniformMedian

ROOT_SEED = 0xBA5E


def make_rng(key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([ROOT_SEED, key]))


GROUPS = [Group("pub", 5, math.inf), Group("a", 10, 0.8), Group("b", 15, 2.0)]
BOUNDS = (-2.0, 1.0)

# discrete records: values -2, 0, 1 with probabilities 0.2, 0.5, 0.3
VALUES = np.array([-2.0, 0.0, 1.0])
PROBS = np.array([0.2, 0.5, 0.3])
MU = -2.0 * 0.2 + 1.0 * 0.3  # -0.1
SIGMA2 = 4.0 * 0.2 + 1.0 * 0.3 - MU**2  # 1.1 - 0.01 = 1.09


def _check_var(out: np.ndarray, exact: float) -> None:
    c = out - out.mean()
    se = math.sqrt((np.mean(c**4) - np.var(c) ** 2) / out.size)
    assert abs(np.var(out, ddof=1) - exact) < 4 * se, f"MC {np.var(out, ddof=1):.6g} vs {exact:.6g}, 4SE={4 * se:.3g}"


@pytest.mark.parametrize("relation, delta", [("add-remove", 2.0), ("replace", 3.0)])
def test_uniform_mean_monte_carlo_variance(relation, delta):
    assert SIGMA2 == pytest.approx(1.09)
    est = UniformMean(GROUPS, BOUNDS, relation=relation)
    assert est.epsilon == 0.8
    rng = make_rng(1)
    trials = 100000
    data = [rng.choice(VALUES, p=PROBS, size=(trials, g.size)) for g in GROUPS]  # fresh data per trial
    out = est.estimate(data, rng)
    n = 30
    exact = (n * SIGMA2 + 2 * delta**2 / 0.8**2) / n**2
    _check_var(out, exact)
    assert abs(out.mean() - MU) < 4 * math.sqrt(exact / trials)


def test_uniform_mean_guarantee_and_public_only():
    est = UniformMean(GROUPS, BOUNDS)
    # everyone, public records included, gets epsilon_min
    assert est.privacy == {name: Guarantee(0.8, 0.0, "add-remove") for name in ("pub", "a", "b")}
    pub_only = UniformMean([Group("p", 4, math.inf), Group("q", 2, math.inf)], (0, 10))
    assert pub_only.estimate([np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 0.0])], make_rng(2)) == pytest.approx(20.0 / 6)


def test_uniform_median_interval_distribution():
    """Pooled Smith median at epsilon_min: interval j ∝ length * exp(-eps_min |j - N/2| / 2)."""
    groups = [Group("pub", 2, math.inf), Group("a", 3, 0.6), Group("b", 2, 3.0)]
    lo, hi = 0.0, 1.0
    data = [np.array([0.15, 0.8]), np.array([0.3, 0.32, 0.9]), np.array([0.05, 0.6])]
    pooled = np.sort(np.concatenate(data))
    edges = np.concatenate([[lo], pooled, [hi]])
    n = pooled.size
    probs = np.array([(edges[j + 1] - edges[j]) * math.exp(-0.6 * abs(j - n / 2) / 2) for j in range(n + 1)])
    probs /= probs.sum()
    est = UniformMedian(groups, (lo, hi))
    trials = 30000
    out = est.estimate([np.broadcast_to(x, (trials, x.size)) for x in data], make_rng(3))
    assert ((out >= lo) & (out <= hi)).all()
    counts = np.bincount(np.searchsorted(pooled, out), minlength=n + 1)
    p = stats.chisquare(counts, probs * trials).pvalue
    assert p > 1e-3, (counts, probs * trials)
    assert est.privacy["pub"] == Guarantee(0.6, 0.0, "add-remove")


def test_uniform_median_all_public_is_exact():
    est = UniformMedian([Group("p", 3, math.inf), Group("q", 2, math.inf)], (0, 10))
    assert est.estimate([np.array([9.0, 1.0, 5.0]), np.array([2.0, 7.0])], make_rng(4)) == 5.0


def test_public_mean_is_exact_pooled_public_mean_and_ignores_private():
    groups = [Group("p1", 2, math.inf), Group("a", 3, 0.5), Group("p2", 4, math.inf)]
    est = PublicMean(groups, (0, 10))
    p1, p2 = np.array([1.0, 9.0]), np.array([2.0, 2.0, 4.0, 0.0])
    out1 = est.estimate([p1, np.array([0.0, 0.0, 0.0]), p2], make_rng(5))
    out2 = est.estimate([p1, np.array([10.0, 10.0, 7.0]), p2], make_rng(6))
    assert out1 == (1.0 + 9.0 + 2.0 + 2.0 + 4.0 + 0.0) / 6  # pooled, not the mean of group means
    assert out2 == out1
    assert est.privacy == {"p1": Guarantee(math.inf), "a": Guarantee(0.0), "p2": Guarantee(math.inf)}
    batch = est.estimate([np.broadcast_to(p1, (3, 2)), np.zeros((3, 3)), np.broadcast_to(p2, (3, 4))], make_rng(5))
    np.testing.assert_array_equal(batch, np.full(3, 3.0))


def test_public_median_is_exact():
    groups = [Group("p1", 2, math.inf), Group("a", 3, 0.5), Group("p2", 3, math.inf)]
    est = PublicMedian(groups, (0, 10))
    # public records 7, 1, 3, 8, 2 -> sorted 1 2 3 7 8 -> 3
    assert est.estimate([np.array([7.0, 1.0]), np.array([9.0, 9.0, 9.0]), np.array([3.0, 8.0, 2.0])], make_rng(7)) == 3.0


@pytest.mark.parametrize("cls", [PublicMean, PublicMedian])
def test_public_estimators_need_a_public_group(cls):
    with pytest.raises(ValueError, match=rf"{cls.__name__} needs at least one public group \(epsilon=inf\), got none"):
        cls([Group("a", 3, 0.5), Group("b", 2, 1.0)], (0, 1))


@pytest.mark.parametrize("cls", [UniformMean, UniformMedian, PublicMean, PublicMedian])
def test_baselines_bad_input_and_determinism(cls):
    with pytest.raises(ValueError, match=r"lower < upper, got \[1, 0\]"):
        cls(GROUPS, (1.0, 0.0))
    with pytest.raises(ValueError, match=r"bounds upper must be finite, got nan"):
        cls(GROUPS, (0.0, float("nan")))
    with pytest.raises(TypeError, match=r"groups must hold Group objects"):
        cls([GROUPS[0], "b"], BOUNDS)
    est = cls(GROUPS, BOUNDS)
    rng = make_rng(8)
    good = [rng.choice(VALUES, size=(20, g.size)) for g in GROUPS]
    with pytest.raises(ValueError, match=r"data for group 'b' must have 15 records \(its declared size\), got 14"):
        est.estimate([good[0], good[1], good[2][:, :14]], rng)
    with pytest.raises(ValueError, match=r"data for group 'pub' contains NaN"):
        est.estimate([np.full((20, 5), np.nan), good[1], good[2]], rng)
    with pytest.raises(ValueError, match=r"data for group 'a' has 200 value\(s\) outside bounds \[-2, 1\] \(first: 5\)"):
        est.estimate([good[0], np.full((20, 10), 5.0), good[2]], rng)
    with pytest.raises(ValueError, match=r"expected 3, got 2"):
        est.estimate(good[:2], rng)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator"):
        est.estimate(good, 1)
    a = est.estimate(good, make_rng(9))
    np.testing.assert_array_equal(a, est.estimate(good, make_rng(9)))
    assert a.shape == (20,)
    if cls in (UniformMean, UniformMedian):
        with pytest.raises(ValueError, match=r"relation must be one of .*got 'nope'"):
            cls(GROUPS, BOUNDS, relation="nope")
        # clamp=True clips records into the bounds instead of raising
        wide = [good[0], np.full((20, 10), 5.0), good[2]]
        clipped = [good[0], np.full((20, 10), 1.0), good[2]]
        np.testing.assert_array_equal(cls(GROUPS, BOUNDS, clamp=True).estimate(wide, make_rng(10)),
                                      est.estimate(clipped, make_rng(10)))
