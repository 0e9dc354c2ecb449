"""The K-means family's declared assumption: the users' points shifted against the pilot (hand-computed)."""

from __future__ import annotations

import numpy as np
import pytest

from hybridpriv.families.kmeans.algorithms import PointCloud
from hybridpriv.families.kmeans.assumptions import ShiftPoints, kmeans_assumptions
from hybridpriv.spec import builtin_example_path, load_spec


def test_the_shift_moves_every_point_clips_into_the_box_and_keeps_the_start_and_the_trust():
    (pilot,) = kmeans_assumptions((0.0, 2.0))
    assert pilot.name == "pilot" and pilot.scale == 2.0
    pts = np.array([[0.1, 0.5], [1.9, 1.0], [1.0, 0.05]])
    cloud = PointCloud(pts, np.array([True, False, False]), (0.0, 2.0), np.array([[0.5, 0.5], [1.5, 1.5]]),
                       centres=np.array([[0.5, 0.5]]))
    out = pilot.perturb(cloud, 0.2)
    np.testing.assert_allclose(out.points, [[0.3, 0.7], [2.0, 1.2], [1.2, 0.25]])
    np.testing.assert_array_equal(out.trusted, cloud.trusted)
    np.testing.assert_array_equal(out.init, cloud.init)
    assert out.centres is None  # they no longer generate the points
    np.testing.assert_allclose(pilot.perturb(cloud, -0.2).points, [[0.0, 0.3], [1.7, 0.8], [0.8, 0.0]])
    with pytest.raises(ValueError, match="data must be a PointCloud"):
        ShiftPoints((0.0, 1.0))(np.zeros((2, 2)), 0.1)


def test_every_kmeans_spec_declares_it():
    problem = load_spec(builtin_example_path("faithful")).problem()
    assert [a.name for a in problem.assumptions] == ["pilot"] and problem.assumptions[0].scale == 1.0
