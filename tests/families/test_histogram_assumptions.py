"""The histogram family's declared assumptions: tilts of whole groups' categories (hand-computed moves)."""

from __future__ import annotations

import numpy as np
import pytest

from hybridpriv.core.privacy import Group
from hybridpriv.families.histogram.assumptions import TiltGroups, histogram_assumptions
from hybridpriv.families.histogram.data import CategoryCounts

GROUPS = (Group("panel", 50, float("inf")), Group("loose", 200, 2.0), Group("mid", 100, 1.0), Group("strict", 100, 0.1))
COUNTS = CategoryCounts(np.array([[20, 20, 10], [80, 80, 40], [40, 40, 20], [50, 30, 20]]))


def test_the_tilts_move_the_stated_share_of_each_group_between_its_last_and_first_category():
    panel, between = histogram_assumptions(GROUPS)
    assert (panel.name, between.name) == ("panel", "between") and panel.scale == between.scale == 1.0
    out = panel.perturb(COUNTS, 0.1).counts  # every private group: 10% of its records, last -> first
    np.testing.assert_array_equal(out, [[20, 20, 10], [100, 80, 20], [50, 40, 10], [60, 30, 10]])
    out = between.perturb(COUNTS, 0.2).counts  # strict +0.1 (10 records to the first), mid 0, loose -0.1 (20 back)
    np.testing.assert_array_equal(out, [[20, 20, 10], [60, 80, 60], [40, 40, 20], [60, 30, 10]])
    # the truth the task scores (the pooled shares) moves with the records; group sizes are kept
    assert np.array_equal(out.sum(axis=1), COUNTS.counts.sum(axis=1))


def test_a_tilt_moves_no_more_records_than_the_category_holds():
    out = TiltGroups([0.0, 1.0, 1.0, 1.0])(COUNTS, -0.9).counts  # 90% first -> last, capped at what the first holds
    np.testing.assert_array_equal(out[1:, 0], [0, 0, 0])
    np.testing.assert_array_equal(out[1:, 2], [120, 60, 70])


def test_no_assumption_without_private_groups_and_no_between_with_one():
    assert histogram_assumptions(GROUPS[:1]) == []
    assert [a.name for a in histogram_assumptions(GROUPS[:2])] == ["panel"]
    with pytest.raises(ValueError, match="CategoryCounts of 4 groups"):
        TiltGroups([0.0, 1.0, 1.0, 1.0])(CategoryCounts(np.ones((2, 3))), 0.1)
