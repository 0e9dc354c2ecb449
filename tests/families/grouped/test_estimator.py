"""The mechanism protocol on the grouped estimators: release, parameters, clones, refusals."""

import math

import numpy as np
import pytest

from hybridpriv.core.privacy import MAX_BOUND, Bounds, Group
from hybridpriv.estimators import (
    PDPSample,
    PEMedian,
    PublicMean,
    UniformMean,
    UniformMedian,
    WeightedMean,
    WeightedMedian,
    default_estimators,
)
from hybridpriv.families.grouped import GroupedDataset

GROUPS = [Group("pub", 5, math.inf), Group("a", 20, 1.0), Group("b", 10, 0.3)]
BOUNDS = Bounds(-2.0, 3.0)


def _data(rng):
    return [rng.uniform(-2, 3, g.size) for g in GROUPS]


@pytest.mark.parametrize("est", default_estimators(GROUPS, BOUNDS, "mean", sigma2=1.0, mean_square=0.2)
                         + default_estimators(GROUPS, BOUNDS, "median", sigma2=1.0), ids=lambda e: e.label)
def test_release_is_trials_estimates_and_a_clone_releases_the_same(est):
    data = _data(np.random.default_rng(1))
    out = est.release(data, np.random.default_rng(7), 6)
    assert out.shape == (6,) and np.isfinite(out).all()
    # release on one dataset = estimate on the dataset broadcast over trials (the same noise)
    batch = [np.broadcast_to(x, (6, x.size)) for x in data]
    np.testing.assert_array_equal(out, est.estimate(batch, np.random.default_rng(7)))
    # a GroupedDataset works as well as its arrays
    np.testing.assert_array_equal(out, est.release(GroupedDataset(tuple(data)), np.random.default_rng(7), 6))
    clone = est.clone()
    assert type(clone) is type(est) and clone.get_params() == est.get_params() and clone.label == est.label
    np.testing.assert_array_equal(out, clone.release(data, np.random.default_rng(7), 6))
    assert set(est.privacy) == {g.name for g in GROUPS}


def test_release_refuses_trial_axes_and_bad_trials():
    est = WeightedMean(GROUPS, BOUNDS, 1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="one dataset"):
        est.release([np.zeros((2, g.size)) for g in GROUPS], rng, 2)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="trials must be an integer >= 1"):
            est.release(_data(rng), rng, bad)
    with pytest.raises(TypeError, match="trials must be an integer"):
        est.release(_data(rng), rng, 2.0)


# -- issue 15 item 6: no silent infinities --------------------------------------------------------
@pytest.mark.parametrize("build", [
    lambda g: UniformMean(g, (0, 1)),
    lambda g: PDPSample(g, (0, 1), "min"),
    lambda g: PDPSample(g, (0, 1), "min", denominator="expected"),
    lambda g: WeightedMean(g, (0, 1), 1.0),
])
def test_epsilons_so_small_the_noise_swamps_floats_are_refused_naming_epsilon(build):
    g = [Group("pub", 5, math.inf), Group("a", 5, 1e-300)]
    with pytest.raises(ValueError, match=r"epsilon|threshold"):
        build(g)
    ok = [Group("pub", 5, math.inf), Group("a", 5, 1e-6)]  # tiny but representable: accepted, finite
    out = build(ok).release([np.full(5, 0.5), np.full(5, 0.5)], np.random.default_rng(0), 4)
    assert np.isfinite(out).all()


def test_bounds_whose_squares_overflow_are_refused():
    with pytest.raises(ValueError, match=r"bounds must lie within \+-1e\+150"):
        Bounds(0, 1e300)
    b = Bounds(-MAX_BOUND, MAX_BOUND)
    assert math.isfinite((b.upper - b.lower) ** 2)


def test_medians_keep_their_statistic_and_public_groups_promise_nothing():
    assert {e.statistic for e in (PEMedian(GROUPS, BOUNDS), UniformMedian(GROUPS, BOUNDS),
                                  WeightedMedian(GROUPS, BOUNDS, 1.0))} == {"median"}
    assert PublicMean(GROUPS, BOUNDS).privacy["a"].epsilon == 0.0
