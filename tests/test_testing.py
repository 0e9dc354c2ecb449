"""Tests of the privacy audit itself (hybridpriv.testing): validity, power, reporting, validation.

Expected values come from the mechanisms' known privacy loss (randomized response, Laplace,
a delta-leak), never from the audit's own output.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import stats

from hybridpriv.core.privacy import Group, Guarantee
from hybridpriv.estimators import ContributionBoundedCounts, Estimator, PEMedian, WeightedMean
from hybridpriv.families.grouped.datakind import estimator_mechanism
from hybridpriv.testing import (
    AuditReport,
    NeighbouringPair,
    assert_passes,
    audit,
    audit_estimator,
    neighbouring_pair,
)


def laplace_count(scale):
    """A count released with Laplace(scale) noise: on the pair (0, 1) its privacy loss is exactly 1/scale."""

    def mech(d, rng, size):
        return d + rng.laplace(0.0, scale, size)

    return mech


def randomized_response(epsilon):
    """Report the bit truthfully with probability e^eps/(1 + e^eps): privacy loss exactly eps on (0, 1)."""
    p = math.exp(epsilon) / (1 + math.exp(epsilon))

    def mech(bit, rng, size):
        truthful = rng.random(size) < p
        return np.where(truthful, bit, 1 - bit)

    return mech


# ---------------------------------------------------------------------------------------
# validity and power on mechanisms with a known privacy loss
# ---------------------------------------------------------------------------------------
def test_laplace_bound_is_below_the_true_loss_and_close_to_it():
    rep = audit(laplace_count(1.0), (0.0, 1.0), epsilon=1.0, samples=200_000, seed=3)
    assert rep.passed
    # true loss is 1; {x > 1} has probabilities 1/2 and e^-1/2, so 100,000 held-out
    # outputs per side pin the ratio to within a few percent
    assert 0.85 < rep.epsilon_lower_bound <= 1.0
    assert rep.held_out == 100_000 and rep.samples == 200_000


def test_randomized_response_exact_loss_is_found_and_a_lower_claim_is_refuted():
    eps = 1.0
    ok = audit(randomized_response(eps), (0, 1), epsilon=eps, samples=50_000, seed=1)
    assert ok.passed and 0.9 < ok.epsilon_lower_bound <= eps
    bad = audit(randomized_response(eps), (0, 1), epsilon=0.8, samples=50_000, seed=1)
    assert bad.verdict == "violation" and bad.epsilon_lower_bound > 0.8
    # a discrete output: the event is one of the two values, seen in about 73% / 27% of the runs
    freq = sorted(np.array(bad.counts) / bad.held_out)
    np.testing.assert_allclose(freq, [1 / (1 + math.e), math.e / (1 + math.e)], atol=0.01)


def test_false_alarm_rate_of_a_tight_mechanism_is_within_the_confidence_level():
    """Randomized response attains its claim exactly; at confidence 0.8 at most 20% of audits may cry wolf."""
    runs, alpha = 300, 0.2
    alarms = sum(
        not audit(randomized_response(1.0), (0, 1), 1.0, samples=2_000, confidence=1 - alpha, seed=s, grid=4).passed
        for s in range(runs)
    )
    # Bonferroni and Clopper-Pearson are conservative: far fewer than alpha * runs; allow
    # the binomial(runs, alpha) upper tail only
    assert alarms <= stats.binom.ppf(0.999, runs, alpha)


def test_power_grows_with_the_violation_size():
    claim = 1.0
    lbs = [audit(laplace_count(1.0 / true), (0.0, 1.0), claim, samples=50_000, seed=2).epsilon_lower_bound for true in (1.0, 1.5, 3.0)]
    assert lbs[0] <= claim < lbs[1] < lbs[2]


def test_delta_absorbs_a_rare_leak_exactly_up_to_its_size():
    """On D the mechanism leaks (outputs 2) with probability 0.01, else both are Uniform(0, 1): (0, 0.01)-DP."""

    def leak(d, rng, size):
        u = rng.random(size)
        return np.where((d == 1) & (rng.random(size) < 0.01), 2.0, u)

    assert audit(leak, (1, 0), epsilon=0.1, delta=0.01, samples=40_000, seed=0).passed
    small_delta = audit(leak, (1, 0), epsilon=0.1, delta=0.002, samples=40_000, seed=0)
    assert small_delta.verdict == "violation"
    # the event holds the leak (1% of the runs on D) and almost nothing else
    assert small_delta.counts[0] >= 0.008 * small_delta.held_out and small_delta.counts[1] < 0.001 * small_delta.held_out
    # without delta the loss is infinite; 20,000 held-out outputs can show about log(200 / 7)
    pure = audit(leak, (1, 0), epsilon=2.0, samples=40_000, seed=0)
    assert pure.verdict == "violation" and pure.counts[1] <= 2  # (almost) never on D'


def test_epsilon_zero_claims_independence():
    def ignores_data(d, rng, size):
        return rng.normal(size=size)

    assert audit(ignores_data, (0.0, 1.0), epsilon=0.0, samples=20_000).passed
    assert not audit(laplace_count(1.0), (0.0, 1.0), epsilon=0.0, samples=20_000).passed


def test_reported_pair_and_direction():
    pairs = {"same (0)": (0.0, 0.0), "differs": (0.0, 1.0), "same (1)": (1.0, 1.0)}
    rep = audit(laplace_count(0.5), pairs, epsilon=1.0, samples=40_000, seed=4)
    assert rep.verdict == "violation" and rep.pair == 1 and rep.pair_label == "differs"
    assert rep.pair_labels == tuple(pairs)
    assert max(rep.bounds[0]) < 0.2 and max(rep.bounds[2]) < 0.2  # identical distributions

    def shifted_exponential(d, rng, size):
        return d + rng.exponential(1.0, size)

    # on D = 0 the outputs below 1 never happen on D' = 1: infinite loss "D vs D'"; the
    # other direction is bounded by 1 (the density ratio e^-(x) / e^-(x-1))
    fwd = audit(shifted_exponential, (0.0, 1.0), epsilon=1.5, samples=20_000)
    assert fwd.direction == "D vs D'" and fwd.verdict == "violation" and fwd.counts[1] == 0
    assert fwd.bounds[0][1] <= 1.0
    rev = audit(shifted_exponential, (1.0, 0.0), epsilon=1.5, samples=20_000)
    assert rev.direction == "D' vs D" and rev.counts[0] == 0


def test_same_seed_same_report_and_streams_differ_by_seed():
    a = audit(laplace_count(1.0), (0.0, 1.0), 1.0, samples=5_000, seed=7)
    b = audit(laplace_count(1.0), (0.0, 1.0), 1.0, samples=5_000, seed=7)
    c = audit(laplace_count(1.0), (0.0, 1.0), 1.0, samples=5_000, seed=8)
    assert a == b
    assert a.bounds != c.bounds
    ss = audit(laplace_count(1.0), (0.0, 1.0), 1.0, samples=5_000, seed=np.random.SeedSequence(7))
    assert ss == a


def test_vector_outputs_need_a_statistic():
    def vector(d, rng, size):
        return d + rng.laplace(0.0, 1.0, (size, 3))

    with pytest.raises(ValueError, match="statistic="):
        audit(vector, (0.0, 1.0), 1.0, samples=1_000)
    rep = audit(vector, (0.0, 1.0), 0.5, samples=40_000, statistic=lambda out: out[:, 0])
    assert rep.verdict == "violation"  # one coordinate already has loss 1 > 0.5


def test_batch_bounds_the_size_asked_of_the_mechanism():
    sizes = []

    def mech(d, rng, size):
        sizes.append(size)
        return d + rng.laplace(0.0, 1.0, size)

    audit(mech, (0.0, 1.0), 1.0, samples=1_000, batch=300)
    assert max(sizes) <= 300 and sum(sizes) == 2_000


def test_pairs_as_generator_list_and_neighbouring_pair():
    gen = audit(laplace_count(1.0), ((0.0, float(k)) for k in (0, 1)), 1.0, samples=2_000)
    assert gen.pair_labels == ("pair 0", "pair 1")
    lst = audit(laplace_count(1.0), [NeighbouringPair(0.0, 1.0, "count +1"), (1.0, 0.0)], 1.0, samples=2_000)
    assert lst.pair_labels == ("count +1", "pair 1")


# ---------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------
def test_report_is_frozen_and_exports():
    rep = audit(laplace_count(0.5), [(0.0, 1.0), (0.0, 0.5)], 1.0, samples=20_000)
    assert isinstance(rep, AuditReport)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.verdict = "pass"  # type: ignore[misc]
    d = rep.to_dict()
    assert json.loads(json.dumps(d))["verdict"] == "violation"
    assert d["epsilon_lower_bound"] == max(max(b) for b in d["bounds"])
    ds = rep.to_xarray()
    assert ds["epsilon_lower_bound"].dims == ("pair", "direction") and ds.sizes["pair"] == 2
    assert float(ds["epsilon_lower_bound"].max()) == rep.epsilon_lower_bound
    assert ds.attrs["verdict"] == "violation"
    assert "violation" in str(rep) and rep.event in str(rep)
    lo, hi = rep.probability_bounds
    assert 0 <= hi and lo > 0 and math.isclose(rep.epsilon_lower_bound, math.log(lo / hi))


def test_assert_passes():
    good = audit(laplace_count(1.0), (0.0, 1.0), 1.0, samples=5_000)
    bad = audit(laplace_count(0.25), (0.0, 1.0), 1.0, samples=5_000)
    assert_passes(good)
    assert_passes({"a": good})
    with pytest.raises(AssertionError, match="b: violation"):
        assert_passes({"a": good, "b": bad})
    with pytest.raises(TypeError, match="reports"):
        assert_passes({"a": 1.0})


# ---------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------
def _mech(d, rng, size):
    return d + rng.laplace(size=size)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": math.nan}, ValueError, "epsilon"),
        ({"epsilon": math.inf}, ValueError, "epsilon"),
        ({"epsilon": "1"}, TypeError, "epsilon"),
        ({"delta": 1.0}, ValueError, "delta"),
        ({"delta": -0.1}, ValueError, "delta"),
        ({"samples": 10}, ValueError, "samples"),
        ({"samples": 1000.0}, TypeError, "samples"),
        ({"confidence": 0.0}, ValueError, "confidence"),
        ({"confidence": 1.0}, ValueError, "confidence"),
        ({"confidence": 1.5}, ValueError, "confidence"),
        ({"seed": -1}, TypeError, "seed"),
        ({"grid": 1}, ValueError, "grid"),
        ({"batch": 0}, ValueError, "batch"),
        ({"statistic": 3}, TypeError, "statistic"),
        ({"pairs": []}, ValueError, "pairs"),
        ({"pairs": (0.0, 1.0, 2.0)}, ValueError, "pairs"),
        ({"pairs": [(0.0, 1.0, 2.0)]}, TypeError, "pairs"),
        ({"pairs": "ab"}, TypeError, "pairs"),
        ({"mechanism": "laplace"}, TypeError, "mechanism"),
        ({"mechanism": lambda d, rng, size: np.zeros(size + 1)}, ValueError, "mechanism must return shape"),
        ({"mechanism": lambda d, rng, size: np.full(size, np.nan)}, ValueError, "NaN"),
        ({"mechanism": lambda d, rng, size: np.array(["a"] * size)}, TypeError, "numbers"),
    ],
)
def test_invalid_arguments_raise_naming_the_parameter(kwargs, exc, match):
    args = {"mechanism": _mech, "pairs": (0.0, 1.0), "epsilon": 1.0, "samples": 1_000}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        audit(**args)


# ---------------------------------------------------------------------------------------
# personalised guarantees
# ---------------------------------------------------------------------------------------
class OneGroupUnprotected(Estimator):
    """Promises every group its epsilon but adds noise for the first group's sum only."""

    label = "leaky"

    @property
    def privacy(self):
        return {g.name: Guarantee(g.epsilon) for g in self.groups}

    def _estimate(self, data, rng):
        scale = self.bounds.sum_sensitivity() / self.groups[0].epsilon
        total = sum(x.sum(axis=1) for x in data)
        return total + scale * rng.laplace(size=total.shape)


def test_neighbouring_pairs_follow_the_declared_relation():
    groups = [Group("a", 3, 1.0), Group("pub", 2, math.inf)]
    base = [np.array([0.5, 0.25, -0.5]), np.array([0.0, 1.0])]
    add = neighbouring_pair(WeightedMean(groups, (-2.0, 1.0), 1.0), base, "a")
    assert add.first[0].tolist() == [0.0, 0.25, -0.5] and add.second[0].tolist() == [-2.0, 0.25, -0.5]
    assert add.first[1].tolist() == add.second[1].tolist() == [0.0, 1.0] and not add.conservative
    rep = neighbouring_pair(WeightedMean(groups, (-2.0, 1.0), 1.0, relation="replace"), base, "a", record=2)
    assert rep.first[0].tolist() == [0.5, 0.25, -2.0] and rep.second[0].tolist() == [0.5, 0.25, 1.0]
    pos = neighbouring_pair(WeightedMean(groups, (1.0, 3.0), 1.0), [np.ones(3), np.ones(2)], "a")
    assert pos.conservative and pos.first[0][0] == 1.0 and pos.second[0][0] == 3.0
    assert "conservative" in pos.label
    assert base[0].tolist() == [0.5, 0.25, -0.5]  # the base data are not modified
    pe = neighbouring_pair(PEMedian(groups, (-2.0, 1.0)), base, "pub")
    assert pe.first[1][0] == -2.0 and pe.second[1][0] == 1.0
    with pytest.raises(ValueError, match="record"):
        neighbouring_pair(PEMedian(groups, (-2.0, 1.0)), base, "a", record=3)
    with pytest.raises(ValueError, match="group"):
        neighbouring_pair(PEMedian(groups, (-2.0, 1.0)), base, "nope")


def test_audit_estimator_finds_the_one_unprotected_group():
    groups = [Group("a", 5, 1.0), Group("b", 5, 0.5), Group("pub", 5, math.inf)]
    est = OneGroupUnprotected(groups, (0.0, 1.0))
    data = [np.zeros(5)] * 3
    reports = audit_estimator(est, data, samples=20_000, seed=1)
    assert list(reports) == ["a", "b"]  # the public group promises nothing
    assert reports["a"].passed  # its noise is calibrated for it
    # b's record moves the output by 1 with noise Lap(1/1): true loss 1 > its promise 0.5
    assert reports["b"].verdict == "violation" and reports["b"].epsilon == 0.5
    assert all(r.confidence == pytest.approx(1 - 0.01 / 2) for r in reports.values())
    with pytest.raises(AssertionError, match="b: violation"):
        assert_passes(reports)
    only_a = audit_estimator(est, data, samples=2_000, groups=["a"])
    assert list(only_a) == ["a"] and only_a["a"].confidence == pytest.approx(0.99)


def test_audit_estimator_validation():
    groups = [Group("a", 2, 1.0), Group("pub", 2, math.inf)]
    est = WeightedMean(groups, (0.0, 1.0), 0.1)
    data = [np.zeros(2), np.zeros(2)]
    with pytest.raises(ValueError, match="public"):
        audit_estimator(est, data, samples=1_000, groups=["pub"])
    with pytest.raises(ValueError, match="groups"):
        audit_estimator(est, data, samples=1_000, groups=["zzz"])
    with pytest.raises(ValueError, match="trial axis"):
        audit_estimator(est, [np.zeros((3, 2)), np.zeros((3, 2))], samples=1_000)
    with pytest.raises(ValueError, match="outside bounds"):
        audit_estimator(est, [np.full(2, 5.0), np.zeros(2)], samples=1_000)
    with pytest.raises(TypeError, match="audit\\(\\)"):
        audit_estimator(lambda d, rng, size: d, np.eye(2), samples=1_000)  # not a Mechanism: use audit()
    with pytest.raises(ValueError, match="nothing to audit"):
        audit_estimator(WeightedMean([Group("pub", 2, math.inf)], (0.0, 1.0), 0.1), [np.zeros(2)], samples=1_000)
    with pytest.raises(ValueError, match="samples"):
        audit_estimator(est, data, samples=10)


def test_estimator_mechanism_runs_the_estimator_vectorised():
    groups = [Group("a", 3, 1.0)]
    est = WeightedMean(groups, (0.0, 1.0), 0.1)
    mech = estimator_mechanism(est)
    out = mech([np.array([0.0, 0.5, 1.0])], np.random.default_rng(0), 7)
    assert out.shape == (7,) and np.isfinite(out).all()
    # the mean of many draws is the data mean (Laplace noise has mean 0)
    many = mech([np.array([0.0, 0.5, 1.0])], np.random.default_rng(1), 100_000)
    assert abs(many.mean() - 0.5) < 5 * (math.sqrt(2) / 3) / math.sqrt(100_000)


# ---------------------------------------------------------------------------------------
# neighbouring pairs for every data kind (hybridpriv.testing.pairs)
# ---------------------------------------------------------------------------------------
def test_add_remove_pairs_use_the_estimators_absent_value():
    """A sum of offsets from the midpoint (PDP Sample, expected denominator): absent = the midpoint, not 0."""
    from hybridpriv.estimators import PDPSample
    from hybridpriv.families.grouped.datakind import absent_value
    from hybridpriv.testing import neighbouring_pairs

    groups = [Group("a", 3, 1.0), Group("pub", 2, math.inf)]
    base = [np.full(3, 2.0), np.full(2, 2.0)]
    centred = PDPSample(groups, (-1.0, 5.0), "max", denominator="expected")
    assert absent_value(centred) == 2.0
    pairs = neighbouring_pairs(centred, base, "a")
    assert [(p.first[0][0], p.second[0][0]) for p in pairs] == [(2.0, 5.0), (2.0, -1.0)]
    raw = WeightedMean(groups, (-1.0, 5.0), 1.0)
    assert absent_value(raw) == 0.0
    assert [(p.first[0][0], p.second[0][0]) for p in neighbouring_pairs(raw, base, "a")] == [(0.0, 5.0), (0.0, -1.0)]
    assert absent_value(WeightedMean(groups, (10.0, 20.0), 1.0)) is None


def test_pairs_and_audit_for_user_item_points_and_designs():
    from hybridpriv.estimators import Algorithm1, HybridDesign, HybridKMeans, PointCloud
    from hybridpriv.testing import neighbouring_pairs

    m = np.zeros((3, 4))
    m[0, :2] = 1
    cbc = ContributionBoundedCounts(2, 1.0)
    (pair,) = neighbouring_pairs(cbc, m, "users")
    assert pair.first.shape == (3, 4) and pair.second.shape == (4, 4) and pair.second[-1].tolist() == [1, 1, 1, 1]
    rep = audit_estimator(cbc, m, samples=4_000)["users"]
    assert rep.epsilon == 1.0 and rep.passed and 0.0 <= rep.epsilon_lower_bound <= 1.0

    cloud = PointCloud(np.array([[10.0], [10.0]]), np.array([True, False]), (10.0, 20.0), [[12.5], [17.5]])
    km = HybridKMeans(2, 1.0, 1, (10.0, 20.0), d=1)
    add = neighbouring_pairs(km, cloud, "tcm")  # central, add/remove: a new TCM user at each corner
    assert [p.second.points[-1, 0] for p in add] == [10.0, 20.0] and all(p.second.trusted[-1] for p in add)
    (rep_lm,) = neighbouring_pairs(km, cloud, "lm")  # local, replace: the LM user moves corner to corner
    assert rep_lm.first.points[1, 0] == 10.0 and rep_lm.second.points[1, 0] == 20.0
    assert rep_lm.first.points[0, 0] == rep_lm.second.points[0, 0] == 10.0
    reports = audit_estimator(km, cloud, samples=4_000)
    assert set(reports) == {"tcm", "lm"} and all(r.passed for r in reports.values())

    design = HybridDesign(np.full((3, 1), -20.0), np.array([[-20.0], [-10.0]]))
    (dpair,) = neighbouring_pairs(Algorithm1("mean", 1.0), design, "private")
    assert dpair.first.private[0, 0] == -20.0 and dpair.second.private[0, 0] == -10.0
    assert dpair.first.private[1:].tolist() == dpair.second.private[1:].tolist()


def test_a_vector_release_is_reduced_to_the_coordinate_the_change_moves():
    """The pilot run picks the item the new user holds; a violation on that item is found."""
    from hybridpriv.testing import Coordinate
    from hybridpriv.testing.pairs import _pilot_coordinate, mechanism_sampler

    class LeakyCounts(ContributionBoundedCounts):  # noise for sensitivity 1/4 of k: a violation
        def release(self, data, rng, trials=1):
            return self.bounded_counts(data, rng, trials) + rng.laplace(0.0, 0.25 * self.k / self.epsilon, (trials, 5))

    m = np.zeros((2, 5))
    mech = LeakyCounts(1, 1.0)
    pair = NeighbouringPair(m, np.vstack([m, [0, 0, 1, 0, 0]]))
    coord = _pilot_coordinate(mechanism_sampler(mech), pair, np.random.SeedSequence(0))
    assert coord == Coordinate(2)
    assert audit(mechanism_sampler(mech), dataclasses.replace(pair, statistic=coord), 1.0, samples=10_000).verdict == "violation"
