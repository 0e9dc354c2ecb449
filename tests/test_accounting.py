import math

import numpy as np
import pytest

from hybridpriv.accounting import Accountant, BudgetExceededError, split_budget
from hybridpriv.core.privacy import Group
from hybridpriv.estimators import PDPSample, WeightedMean

GROUPS = [Group("pub", 10, math.inf), Group("a", 10, 1.0), Group("b", 10, 0.5, delta=1e-6)]


def test_sequential_composition_adds_up_per_group():
    acc = Accountant.for_groups(GROUPS)
    parts = split_budget(0.5, [0.8, 0.2, 1.0])  # Algorithm-2-like split of the strictest budget
    assert sum(parts) == pytest.approx(0.5)
    for k, e in enumerate(parts):
        acc.spend(e, label=f"part {k}")
    assert acc.spent_epsilon()["a"] == pytest.approx(0.5)
    assert acc.spent_epsilon()["b"] == pytest.approx(0.5)
    assert acc.remaining_epsilon()["a"] == pytest.approx(0.5)
    assert acc.remaining_epsilon()["pub"] == math.inf
    ds = acc.to_xarray()
    np.testing.assert_allclose(ds.spent_epsilon.sel(group="b"), 0.5)
    assert ds.sizes["release"] == 3


def test_overspending_is_refused_and_nothing_is_recorded():
    acc = Accountant.for_groups(GROUPS)
    acc.spend({"a": 0.7, "b": 0.3})
    with pytest.raises(BudgetExceededError, match=r"group 'b', over its budget epsilon=0.5"):
        acc.spend(0.3, label="too much")
    assert acc.spent_epsilon() == {"pub": 0.0, "a": 0.7, "b": 0.3}
    acc.spend(0.2, groups=["b"])  # exactly the rest is fine
    with pytest.raises(BudgetExceededError, match=r"delta=2e-06"):
        acc.spend(0.0, delta=2e-6, groups=["b"])


def test_estimator_guarantees_are_charged_per_group():
    acc = Accountant.for_groups(GROUPS)
    acc.spend_guarantee(WeightedMean(GROUPS, (-1, 1), 1.0).privacy, label="weighted mean")
    assert acc.spent_epsilon() == {"pub": math.inf, "a": 1.0, "b": 0.5}
    # a second release would overspend every private group
    with pytest.raises(BudgetExceededError):
        acc.spend_guarantee(WeightedMean(GROUPS, (-1, 1), 1.0).privacy)
    # the seed's PDP Sample form promises t(b-a)/Delta = 2t to everyone: over b's budget at t=0.5
    fresh = Accountant.for_groups(GROUPS)
    with pytest.raises(BudgetExceededError, match="group 'a'|group 'b'"):
        fresh.spend_guarantee(PDPSample(GROUPS, (-1, 1), 0.5).privacy)
    fresh.spend_guarantee(PDPSample(GROUPS, (-1, 1), 0.5, denominator="expected").privacy)


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: Accountant({}), ValueError, "non-empty mapping"),
        (lambda: Accountant({"a": (-1, 0)}), ValueError, r"budget epsilon of group 'a' must be > 0, got -1"),
        (lambda: Accountant({"a": (1, 1.5)}), ValueError, r"budget delta of group 'a' must be in \[0, 1\), got 1.5"),
        (lambda: Accountant({"a": (1, 0)}).spend(-0.1), ValueError, r"epsilon spent on group 'a' must be >= 0"),
        (lambda: Accountant({"a": (1, 0)}).spend(float("nan")), ValueError, r"must be >= 0, got nan"),
        (lambda: Accountant({"a": (1, 0)}).spend(0.1, groups=["z"]), ValueError, r"unknown group\(s\) \['z'\]"),
        (lambda: Accountant({"a": (1, 0)}).spend({"z": 0.1}), ValueError, r"unknown group\(s\) \['z'\]"),
        (lambda: split_budget(1.0, [0.5, 0]), ValueError, r"fractions must be a non-empty list of finite numbers > 0"),
        (lambda: split_budget(0, [1]), ValueError, r"epsilon must be > 0, got 0"),
    ],
)
def test_bad_input(call, err, match):
    with pytest.raises(err, match=match):
        call()


# -- issue 15 item 7 -----------------------------------------------------------------------------
def test_tiny_budgets_are_not_overspent_by_an_absolute_slack():
    acc = Accountant({"a": (1e-13, 0.0)})
    with pytest.raises(BudgetExceededError):
        acc.spend(1.05e-12)  # accepted before: the slack was 1e-12 absolute
    acc.spend(1e-13)  # exactly the budget is fine
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-20)


def test_budgets_and_ledger_cannot_be_changed_behind_the_accountant():
    acc = Accountant({"a": (1.0, 0.0)})
    acc.spend(0.5, label="first")
    with pytest.raises(TypeError):
        acc.budgets["a"] = (100.0, 0.0)  # read-only mapping
    with pytest.raises(AttributeError):
        acc.budgets = {"a": (100.0, 0.0)}
    with pytest.raises(AttributeError):
        acc.releases.append(None)  # a tuple
    with pytest.raises(BudgetExceededError):
        acc.spend(0.6)


def test_a_composite_spend_is_all_or_nothing():
    acc = Accountant({"a": (1.0, 0.0), "b": (1.0, 0.0)})
    acc.spend(0.2, label="before")
    with pytest.raises(BudgetExceededError):
        with acc.transaction():
            acc.spend(0.5, label="part 1")
            acc.spend({"a": 0.5}, label="part 2: over a's budget")
    assert acc.spent_epsilon() == {"a": pytest.approx(0.2), "b": pytest.approx(0.2)}
    assert [r.label for r in acc.releases] == ["before"]
    with acc.transaction():  # nested transactions commit with the outer one
        acc.spend(0.3, label="x")
        with acc.transaction():
            acc.spend(0.1, label="y")
    assert [r.label for r in acc.releases] == ["before", "x", "y"]


def test_many_small_parts_add_up_exactly_enough_to_spend_the_rest():
    # 100,000 parts of 1e-5 (K-means with many iterations): compensated totals, constant time per spend
    acc = Accountant({"a": (1.0, 0.0)})
    for _ in range(100_000):
        acc.spend(1e-5, label="round")
    assert acc.spent_epsilon()["a"] == pytest.approx(1.0, rel=1e-12)
    assert abs(acc.spent_epsilon()["a"] - math.fsum([1e-5] * 100_000)) < 1e-14
    with pytest.raises(BudgetExceededError):
        acc.spend(1e-6)
