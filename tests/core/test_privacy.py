"""hybridpriv.core.privacy: groups, bounds, sensitivities and data validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hybridpriv.core.privacy import (
    Bounds,
    Group,
    Guarantee,
    check_epsilon,
    check_group_data,
    check_groups,
    check_positive,
    smallest_private_epsilon,
)

# --------------------------------------------------------------------------------------
# epsilon / positive checks
# --------------------------------------------------------------------------------------


def test_check_epsilon_accepts_and_rejects():
    assert check_epsilon(0.5) == 0.5
    assert check_epsilon(2) == 2.0 and isinstance(check_epsilon(2), float)
    assert math.isinf(check_epsilon(math.inf))
    assert check_epsilon(np.float64(0.25)) == 0.25
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got 0"):
        check_epsilon(0)
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got -0.1"):
        check_epsilon(-0.1)
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got nan"):
        check_epsilon(float("nan"))
    with pytest.raises(ValueError, match=r"epsilon must be > 0, got -inf"):
        check_epsilon(-math.inf)
    with pytest.raises(ValueError, match=r"eps_x must be finite, got inf"):
        check_epsilon(math.inf, "eps_x", allow_inf=False)
    with pytest.raises(TypeError, match=r"epsilon must be a real number, got '1'"):
        check_epsilon("1")
    with pytest.raises(TypeError, match=r"epsilon must be a real number, got True"):
        check_epsilon(True)


def test_check_positive():
    assert check_positive(3, "n") == 3.0
    assert check_positive(0, "n", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match=r"sigma2 must be > 0, got 0"):
        check_positive(0, "sigma2")
    with pytest.raises(ValueError, match=r"sigma2 must be >= 0, got -1"):
        check_positive(-1, "sigma2", allow_zero=True)
    with pytest.raises(ValueError, match=r"sigma2 must be finite, got nan"):
        check_positive(float("nan"), "sigma2")
    with pytest.raises(ValueError, match=r"sigma2 must be finite, got inf"):
        check_positive(math.inf, "sigma2")
    with pytest.raises(TypeError, match=r"sigma2 must be a real number, got None"):
        check_positive(None, "sigma2")


# --------------------------------------------------------------------------------------
# Group
# --------------------------------------------------------------------------------------


def test_group_fields_and_public_flag():
    g = Group("opt-in", np.int64(1000), 1)
    assert g.size == 1000 and type(g.size) is int
    assert g.epsilon == 1.0 and isinstance(g.epsilon, float)
    assert not g.is_public
    assert Group("pub", 5, math.inf).is_public
    assert Group("d", 3, 0.5, delta=1e-6).delta == 1e-6


@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        (dict(name="a", size=10, epsilon=0), ValueError, r"group 'a': epsilon must be > 0, got 0"),
        (dict(name="a", size=10, epsilon=-2.0), ValueError, r"group 'a': epsilon must be > 0, got -2.0"),
        (dict(name="a", size=10, epsilon=float("nan")), ValueError, r"group 'a': epsilon must be > 0, got nan"),
        (dict(name="a", size=0, epsilon=1.0), ValueError, r"group 'a': size must be >= 1 .*got 0"),
        (dict(name="a", size=-3, epsilon=1.0), ValueError, r"group 'a': size must be >= 1 .*got -3"),
        (dict(name="a", size=2.5, epsilon=1.0), TypeError, r"group 'a': size must be an integer, got 2.5"),
        (dict(name="a", size=2.0, epsilon=1.0), TypeError, r"group 'a': size must be an integer, got 2.0"),
        (dict(name="a", size=True, epsilon=1.0), TypeError, r"group 'a': size must be an integer, got True"),
        (dict(name="", size=2, epsilon=1.0), ValueError, r"group name must be a non-empty string, got ''"),
        (dict(name="a", size=2, epsilon=1.0, delta=1.0), ValueError, r"group 'a': delta must be in \[0, 1\), got 1.0"),
        (dict(name="a", size=2, epsilon=1.0, delta=-0.1), ValueError, r"group 'a': delta must be in \[0, 1\), got -0.1"),
        (dict(name="a", size=2, epsilon="1"), TypeError, r"group 'a': epsilon must be a real number, got '1'"),
    ],
)
def test_group_bad_input(kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        Group(**kwargs)


# --------------------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lo, hi, add_remove, replace",
    [(-3.0, 1.0, 3.0, 4.0), (0.0, 1.0, 1.0, 1.0), (2.0, 5.0, 5.0, 3.0), (-10.0, -4.0, 10.0, 6.0)],
)
def test_bounds_sensitivities_by_hand(lo, hi, add_remove, replace):
    b = Bounds(lo, hi)
    assert b.sum_sensitivity() == add_remove  # paper: r = max(|a|, |b|)
    assert b.sum_sensitivity("add-remove") == add_remove
    assert b.sum_sensitivity("replace") == replace  # b - a
    assert b.width == hi - lo
    assert b.midpoint == (lo + hi) / 2


@pytest.mark.parametrize(
    "lo, hi, exc, pattern",
    [
        (1.0, 0.0, ValueError, r"lower < upper, got \[1, 0\]"),
        (2.0, 2.0, ValueError, r"lower < upper, got \[2, 2\]"),
        (float("nan"), 1.0, ValueError, r"bounds lower must be finite, got nan"),
        (0.0, float("nan"), ValueError, r"bounds upper must be finite, got nan"),
        (0.0, math.inf, ValueError, r"bounds upper must be finite, got inf"),
        ("0", 1.0, TypeError, r"bounds lower must be a real number, got '0'"),
    ],
)
def test_bounds_bad_input(lo, hi, exc, pattern):
    with pytest.raises(exc, match=pattern):
        Bounds(lo, hi)


def test_bounds_from_pair_clamp_check():
    b = Bounds.from_pair((0, 2))
    assert b == Bounds(0.0, 2.0)
    assert Bounds.from_pair(b) is b
    with pytest.raises(ValueError, match=r"bounds must be a pair \(lower, upper\), got \(1, 2, 3\)"):
        Bounds.from_pair((1, 2, 3))
    with pytest.raises(TypeError, match=r"bounds must be a pair \(lower, upper\), got 'ab'"):
        Bounds.from_pair("ab")
    with pytest.raises(ValueError, match=r"relation must be one of .*got 'swap'"):
        b.sum_sensitivity("swap")
    np.testing.assert_array_equal(b.clamp([-1.0, 0.5, 3.0, math.inf]), [0.0, 0.5, 2.0, 2.0])
    with pytest.raises(ValueError, match=r"NaN"):
        b.clamp([0.5, float("nan")])
    np.testing.assert_array_equal(b.check([0.0, 2.0, 1.0]), [0.0, 2.0, 1.0])  # the bounds themselves are inside
    with pytest.raises(ValueError, match=r"x has 2 value\(s\) outside bounds \[0, 2\] \(first: -1\)"):
        b.check([-1.0, 1.0, 5.0], name="x")
    with pytest.raises(ValueError, match=r"x contains NaN"):
        b.check([float("nan")], name="x")
    with pytest.raises(ValueError, match=r"outside bounds"):
        b.check([math.inf])


def test_guarantee_str():
    assert str(Guarantee(math.inf)) == "public (no promise)"
    assert str(Guarantee(0.5)) == "epsilon=0.5 (add-remove)"
    assert str(Guarantee(1.0, 1e-6, "replace")) == "epsilon=1, delta=1e-06 (replace)"


# --------------------------------------------------------------------------------------
# groups and group data
# --------------------------------------------------------------------------------------


def test_check_groups():
    a, b = Group("a", 2, 1.0), Group("b", 3, math.inf)
    assert check_groups([a, b]) == (a, b)
    assert check_groups(a) == (a,)
    with pytest.raises(ValueError, match=r"at least one group"):
        check_groups([])
    with pytest.raises(ValueError, match=r"group names must be unique, got duplicates \['a'\]"):
        check_groups([a, Group("a", 5, 2.0)])
    with pytest.raises(TypeError, match=r"groups must hold Group objects, got 3"):
        check_groups([a, 3])
    with pytest.raises(TypeError, match=r"groups must be a sequence of Group, got dict"):
        check_groups({"a": a})


def test_smallest_private_epsilon():
    assert smallest_private_epsilon([Group("a", 1, 2.0), Group("b", 1, 0.3), Group("p", 1, math.inf)]) == 0.3
    assert math.isinf(smallest_private_epsilon([Group("p", 1, math.inf)]))


GROUPS = (Group("a", 3, 1.0), Group("pub", 2, math.inf))
BOUNDS = Bounds(0.0, 1.0)


def test_check_group_data_shapes_and_mapping():
    arrays, batched = check_group_data([[0.1, 0.2, 0.3], [0.5, 1.0]], GROUPS, BOUNDS)
    assert not batched and [a.shape for a in arrays] == [(1, 3), (1, 2)]
    arrays, batched = check_group_data({"pub": np.ones((4, 2)), "a": np.zeros((4, 3))}, GROUPS, BOUNDS)
    assert batched and [a.shape for a in arrays] == [(4, 3), (4, 2)]
    assert (arrays[0] == 0).all() and (arrays[1] == 1).all()  # mapping reordered to group order


def test_check_group_data_clamp_clips_instead_of_raising():
    arrays, _ = check_group_data([[-0.5, 0.2, 7.0], [0.5, 1.0]], GROUPS, BOUNDS, clamp=True)
    np.testing.assert_array_equal(arrays[0][0], [0.0, 0.2, 1.0])
    with pytest.raises(ValueError, match=r"data for group 'a' has 2 value\(s\) outside bounds \[0, 1\] \(first: -0.5\)"):
        check_group_data([[-0.5, 0.2, 7.0], [0.5, 1.0]], GROUPS, BOUNDS)


@pytest.mark.parametrize(
    "data, exc, pattern",
    [
        ([[0.1, np.nan, 0.3], [0.5, 1.0]], ValueError, r"data for group 'a' contains NaN"),
        ([[0.1, 0.3], [0.5, 1.0]], ValueError, r"data for group 'a' must have 3 records \(its declared size\), got 2"),
        ([[0.1, 0.2, 0.3]], ValueError, r"one array per group: expected 2, got 1"),
        ([[0.1, 0.2, 0.3], [0.5, 1.0], [0.5]], ValueError, r"one array per group: expected 2, got 3"),
        ({"a": [0.1, 0.2, 0.3]}, ValueError, r"missing \['pub'\], unknown \[\]"),
        ({"a": [0.1, 0.2, 0.3], "pub": [0.5, 1.0], "x": [1.0]}, ValueError, r"missing \[\], unknown \['x'\]"),
        (np.zeros((2, 3)), TypeError, r"data must be a sequence with one array per group"),
        ([np.zeros((2, 3)), np.zeros(2)], ValueError, r"all have a trial axis or none"),
        ([np.zeros((2, 3)), np.zeros((3, 2))], ValueError, r"share the trial axis length, got \[2, 3\]"),
        ([np.zeros((0, 3)), np.zeros((0, 2))], ValueError, r"at least one trial, got 0"),
        ([np.zeros((1, 1, 3)), np.zeros(2)], ValueError, r"data for group 'a' must have shape \(n,\) or \(trials, n\), got \(1, 1, 3\)"),
        ([["x", "y", "z"], [0.5, 1.0]], TypeError, r"data for group 'a' must be numeric"),
    ],
)
def test_check_group_data_bad_input(data, exc, pattern):
    with pytest.raises(exc, match=pattern):
        check_group_data(data, GROUPS, BOUNDS)
